/*
 * chttp: ClickHouse's HTTP interface through libcurl, and its TabSeparated
 * answers. Every statement is one POST (the statement, then its data); the
 * server that answered last is asked first and the others when it cannot be
 * reached. The URL list groups servers by shard ("A1|A2,B1|B2": shard A's
 * two replicas, then shard B's), so that what must reach every shard once
 * (ch_exec_shard()) goes to one live replica of each. Finished handles are
 * kept (CH_POOL of them), so a statement reuses a live connection instead of
 * opening one. A read can also go to every shard at once (ch_scatter()),
 * one thread per shard, once the URL groups are proven to be the cluster's
 * shards (ch_direct_check()). Answers are bounded
 * (CH_MAX_ANSWER) and parsed with an explicit end, so a server answering
 * garbage gets an error, never a crash.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cluster_int.h"

static bool
db_name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 64)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* One URL of the list: [p, end). */
static int
parse_one(struct cluster *c, const char *p, size_t n, struct buf *err)
{
	struct buf base = { 0 }, shown = { 0 };
	const char *auth, *path, *q, *at, *colon, *end = p + n;
	char db[65] = "";
	int rc = -EINVAL;

	if (n >= 7 && strncmp(p, "http://", 7) == 0)
		auth = p + 7;
	else if (n >= 8 && strncmp(p, "https://", 8) == 0)
		auth = p + 8;
	else {
		buf_printf(err, "clickhouse URL '%.*s' does not start with http:// or https://",
		    (int)n, p);
		return -EINVAL;
	}
	for (path = auth; path < end && *path != '/' && *path != '?'; path++)
		;
	if (path == auth) {
		buf_printf(err, "clickhouse URL '%.*s' names no host", (int)n, p);
		return -EINVAL;
	}
	for (q = path; q < end && *q != '?'; q++)
		;
	if (q - path > 1) {
		if (!db_name_ok(path + 1, (size_t)(q - path - 1)) || (q - path - 1) > 64) {
			buf_printf(err, "clickhouse URL '%.*s': '%.*s' is not a database name "
			    "([A-Za-z0-9_], at most 64)", (int)n, p, (int)(q - path - 1), path + 1);
			return -EINVAL;
		}
		snprintf(db, sizeof(db), "%.*s", (int)(q - path - 1), path + 1);
	}
	if (q < end) {
		const char *v = q + 1;

		if ((size_t)(end - v) < 9 || strncmp(v, "database=", 9) != 0 ||
		    !db_name_ok(v + 9, (size_t)(end - v - 9))) {
			buf_printf(err, "clickhouse URL '%.*s': the only parameter understood is "
			    "database=NAME ([A-Za-z0-9_])", (int)n, p);
			return -EINVAL;
		}
		snprintf(db, sizeof(db), "%.*s", (int)(end - v - 9), v + 9);
	}
	if (*db) {
		if (c->db && strcmp(c->db, db) != 0) {
			buf_printf(err, "clickhouse URLs name two databases (%s, %s)", c->db, db);
			return -EINVAL;
		}
		if (c->db == NULL)
			c->db = xstrdup(db);
	}
	buf_add(&base, p, (size_t)(path - p));
	buf_addc(&base, '/');
	/* The password stays out of messages. */
	for (at = path; at > auth && at[-1] != '@'; at--)
		;
	if (at > auth) {
		for (colon = auth; colon < at && *colon != ':'; colon++)
			;
		buf_add(&shown, p, (size_t)(colon - p));
		buf_addc(&shown, '@');
		buf_add(&shown, at, (size_t)(path - at));
	} else
		buf_add(&shown, p, (size_t)(path - p));
	if (buf_error(&base) || buf_error(&shown)) {
		rc = -ENOMEM;
		goto out;
	}
	c->urls[c->nurls].base = buf_steal(&base, NULL);
	c->urls[c->nurls].shown = buf_steal(&shown, NULL);
	c->nurls++;
	rc = 0;
out:
	buf_free(&base);
	buf_free(&shown);
	return rc;
}

int
ch_parse_urls(struct cluster *c, const char *list, struct buf *err)
{
	const char *p = list, *e;
	size_t first = 0;
	int rc;

	if (list == NULL || *list == '\0') {
		buf_adds(err, "--clickhouse needs at least one URL");
		return -EINVAL;
	}
	/* ',' ends a shard, '|' a replica of it. */
	while (*p) {
		for (e = p; *e && *e != ',' && *e != '|'; e++)
			;
		if (*e == '|' && !c->replicated) {
			buf_adds(err, "'|' separates the replicas of a shard: it needs "
			    "--clickhouse-replicated (Replicated tables)");
			return -EINVAL;
		}
		if (e > p) {
			if (c->nurls == CH_MAX_URLS) {
				buf_printf(err, "at most %d clickhouse URLs", CH_MAX_URLS);
				return -EINVAL;
			}
			if ((rc = parse_one(c, p, (size_t)(e - p), err)) < 0)
				return rc;
			c->urls[c->nurls - 1].shard = c->nshards;
		} else if (*e == '|' || (*e == ',' && c->nurls > first)) {
			buf_printf(err, "clickhouse URL list '%s': an empty replica", list);
			return -EINVAL;
		}
		if (*e != '|' && c->nurls > first) {
			c->nshards++;
			first = c->nurls;
		}
		p = *e ? e + 1 : e;
	}
	if (c->nurls > first) {		/* a '|' at the end */
		buf_printf(err, "clickhouse URL list '%s': an empty replica", list);
		return -EINVAL;
	}
	if (c->nurls == 0) {
		buf_adds(err, "--clickhouse needs at least one URL");
		return -EINVAL;
	}
	if (c->db == NULL)
		c->db = xstrdup("profilefs");
	return 0;
}

void
ch_init(struct cluster *c)
{
	pthread_mutex_init(&c->h_lock, NULL);
	c->h_n = 0;
}

void
ch_free(struct cluster *c)
{
	while (c->h_n > 0)
		curl_easy_cleanup(c->h_pool[--c->h_n]);
	pthread_mutex_destroy(&c->h_lock);
}

/* An idle handle (its connections kept alive), or a new one; NULL: out of memory. */
static CURL *
handle_get(struct cluster *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->h_lock);
	if (c->h_n > 0)
		h = c->h_pool[--c->h_n];
	pthread_mutex_unlock(&c->h_lock);
	return h ? h : curl_easy_init();
}

/* Back to the pool after a statement (ok: it ended well, its connection reusable). */
static void
handle_put(struct cluster *c, CURL *h, bool ok)
{
	if (ok) {
		curl_easy_reset(h);	/* the options go; the live connections stay */
		pthread_mutex_lock(&c->h_lock);
		if (c->h_n < CH_POOL) {
			c->h_pool[c->h_n++] = h;
			h = NULL;
		}
		pthread_mutex_unlock(&c->h_lock);
	}
	if (h)
		curl_easy_cleanup(h);
}

/* An answer being received, and its bound. */
struct answer {
	struct buf	*b;
	size_t		 max;
	bool		 over;	/* it went over max */
};

static size_t
write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t n = size * nmemb;

	if ((a->over = a->b->len + n > a->max) || buf_add(a->b, ptr, n) < 0)
		return 0;	/* curl fails the transfer: CURLE_WRITE_ERROR */
	return n;
}

/* The first line of an error answer, printable, bounded. */
static void
first_line(struct buf *err, const struct buf *ans)
{
	size_t i, n = 0;

	for (i = 0; i < ans->len && n < 300 && ans->data[i] != '\n'; i++, n++)
		buf_addc(err, isprint((unsigned char)ans->data[i]) ? ans->data[i] : '?');
	if (n == 0)
		buf_adds(err, "(empty answer)");
}

/*
 * ClickHouse's codes for a connection between two of its servers that broke
 * or was left out of step (18.x reuses a pooled one a cancelled query left
 * mid-answer: "Unexpected packet Data received from client"): end of data,
 * unexpected packet from a client or a server, network error. The failed
 * server drops that connection, so the same statement asked again works. A
 * timeout (209) is not among them: asked again, a slow query waits twice.
 */
static bool
broken_between_servers(const struct buf *ans)
{
	static const char *const codes[] = { "32", "101", "102", "210" };
	const char *p = ans->data;
	size_t k, n;

	if (p == NULL || ans->len < 8 || strncmp(p, "Code: ", 6) != 0)
		return false;
	p += 6;
	/* "Code: 101, e.displayText() = ..." (18.x) or "Code: 101. DB::..." (21.x on). */
	for (k = 0; k < sizeof(codes) / sizeof(codes[0]); k++) {
		n = strlen(codes[k]);
		if ((size_t)(p - ans->data) + n < ans->len && strncmp(p, codes[k], n) == 0 &&
		    (p[n] == ',' || p[n] == '.'))
			return true;
	}
	return false;
}

/*
 * -EHOSTUNREACH: not reached (try another); -EIO: answered with an error
 * (-EAGAIN: an error of a broken connection between servers, for a read);
 * -EFBIG: the answer is over max (when under CH_MAX_ANSWER; else -EIO);
 * -ECONNRESET: an INSERT sent without an answer, which may have arrived.
 * Sent again elsewhere at once it could count twice, unless the tables
 * are Replicated: they drop a block they already took, so a replicated
 * cluster's INSERT goes on to the next server (-EHOSTUNREACH).
 */
static int
exec_once(struct cluster *c, size_t i, const char *sql, const struct buf *data, struct buf *out,
    struct buf *err, bool insert, size_t max)
{
	struct buf body = { 0 }, ans = { 0 }, url = { 0 };
	struct answer wa = { &ans, max, false };
	struct curl_slist *hdrs = NULL;
	char cerr[CURL_ERROR_SIZE] = "";
	long status = 0;
	int64_t t0;
	CURL *h;
	CURLcode cc;
	int rc = 0;

	buf_adds(&body, sql);
	buf_addc(&body, '\n');
	if (data)
		buf_add(&body, data->data, data->len);
	buf_printf(&url, "%s?%s", c->urls[i].base, insert ? "insert_distributed_sync=1" :
	    "max_query_size=33554432&skip_unavailable_shards=0");
	if (buf_error(&body) || buf_error(&url)) {
		rc = -ENOMEM;
		goto out;
	}
	if ((h = handle_get(c)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	hdrs = curl_slist_append(hdrs, "Content-Type: text/plain");
	curl_easy_setopt(h, CURLOPT_URL, url.data);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &wa);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	t0 = clock_mono_ns();
	cc = curl_easy_perform(h);
	log_debug("clickhouse: %.60s...: %zu bytes in, %zu out, %.1f ms", sql, body.len, ans.len,
	    (double)(clock_mono_ns() - t0) / 1e6);
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	handle_put(c, h, cc == CURLE_OK);
	curl_slist_free_all(hdrs);
	if (cc != CURLE_OK) {
		buf_printf(err, "%s: %s", c->urls[i].shown, *cerr ? cerr : curl_easy_strerror(cc));
		if (cc == CURLE_WRITE_ERROR)
			rc = wa.over && max < CH_MAX_ANSWER ? -EFBIG : -EIO;
		else if (insert && !c->replicated && cc != CURLE_COULDNT_CONNECT &&
		    cc != CURLE_COULDNT_RESOLVE_HOST)
			rc = -ECONNRESET;
		else
			rc = -EHOSTUNREACH;
		if (cc == CURLE_WRITE_ERROR)
			buf_printf(err, " (answer over %zu bytes)", max);
		goto out;
	}
	if (status != 200) {
		buf_printf(err, "%s: HTTP %ld: ", c->urls[i].shown, status);
		first_line(err, &ans);
		rc = !insert && broken_between_servers(&ans) ? -EAGAIN : -EIO;
		goto out;
	}
	if (out && (rc = buf_add(out, ans.data, ans.len)) < 0)
		goto out;
out:
	buf_free(&body);
	buf_free(&ans);
	buf_free(&url);
	return rc;
}

/*
 * One statement on server i. A read (SELECT) that failed on a connection
 * between servers is asked once more: it changes nothing, and the cluster
 * is sound; only that one connection was not.
 */
static int
exec_url(struct cluster *c, size_t i, const char *sql, const struct buf *data, struct buf *out,
    struct buf *err, bool insert, size_t max)
{
	size_t elen = err->len, olen = out ? out->len : 0;
	int rc = exec_once(c, i, sql, data, out, err, insert, max);

	if (rc == -EAGAIN && strncmp(sql, "SELECT", 6) == 0) {
		log_warnx("clickhouse: %s; asking once more", err->data ? err->data + elen : "?");
		err->len = elen;
		if (err->data)
			err->data[elen] = '\0';
		if (out)
			out->len = olen;
		rc = exec_once(c, i, sql, data, out, err, insert, max);
	}
	return rc == -EAGAIN ? -EIO : rc;
}

int
ch_exec_on(struct cluster *c, size_t i, const char *sql, struct buf *out, struct buf *err,
    bool *refused)
{
	int rc = exec_url(c, i, sql, NULL, out, err, false, CH_MAX_ANSWER);

	if (refused)
		*refused = rc == -EIO;
	return rc == -EHOSTUNREACH ? -EIO : rc;
}

int
ch_exec_shard(struct cluster *c, size_t g, const char *sql, const struct buf *data,
    struct buf *out, struct buf *err, bool *refused, size_t *used)
{
	size_t i, len0 = out ? out->len : 0, tried = 0;
	int rc = -EHOSTUNREACH;

	if (refused)
		*refused = false;
	for (i = 0; i < c->nurls; i++) {
		if (c->urls[i].shard != g)
			continue;
		if (tried++)
			buf_adds(err, "; ");
		if (out)
			out->len = len0;
		rc = exec_url(c, i, sql, data, out, err, strncmp(sql, "INSERT", 6) == 0,
		    CH_MAX_ANSWER);
		if (rc != -EHOSTUNREACH) {
			if (rc == -EIO && refused)
				*refused = true;
			if (rc == 0) {
				buf_reset(err);
				if (used)
					*used = i;
			}
			return rc;
		}
	}
	if (tried == 0)
		buf_printf(err, "no server for shard %zu", g + 1);
	return -EIO;
}

/* ch_exec() with answers bounded by max. */
static int
exec_any(struct cluster *c, const char *sql, const struct buf *data, size_t max,
    struct buf *out, struct buf *err, bool *refused)
{
	size_t k, first = atomic_load(&c->cur), i;
	size_t len0 = out ? out->len : 0;
	int rc = -EIO;

	if (refused)
		*refused = false;
	for (k = 0; k < c->nurls; k++) {
		i = (first + k) % c->nurls;
		if (k > 0)
			buf_adds(err, "; ");
		if (out)
			out->len = len0;
		rc = exec_url(c, i, sql, data, out, err, strncmp(sql, "INSERT", 6) == 0, max);
		if (rc != -EHOSTUNREACH) {
			if (rc == -EIO && refused)
				*refused = true;
			if (rc == 0) {
				atomic_store(&c->cur, i);
				buf_reset(err);
			}
			return rc;
		}
	}
	return -EIO;
}

int
ch_exec(struct cluster *c, const char *sql, const struct buf *data, struct buf *out,
    struct buf *err, bool *refused)
{
	return exec_any(c, sql, data, CH_MAX_ANSWER, out, err, refused);
}

int
ch_read(struct cluster *c, const char *sql, size_t max, struct buf *out, struct buf *err)
{
	return exec_any(c, sql, NULL, max, out, err, NULL);
}

void
ch_direct_check(struct cluster *c)
{
	size_t num[CH_MAX_URLS] = { 0 }, i, g, h, sn;
	bool ok = c->nshards > 0, was;

	for (i = 0; i < c->nurls; i++) {
		if ((sn = atomic_load(&c->urls[i].shard_num)) == 0)
			continue;
		g = c->urls[i].shard;
		if (atomic_load(&c->urls[i].cluster_shards) != c->nshards ||
		    (num[g] && num[g] != sn))
			ok = false;
		num[g] = sn;
	}
	for (g = 0; g < c->nshards && ok; g++) {
		if (num[g] == 0)
			ok = false;
		for (h = 0; h < g && ok; h++)
			if (num[h] == num[g])
				ok = false;
	}
	was = atomic_exchange(&c->direct, ok);
	if (was != ok && ok)
		log_info("clickhouse: the URLs are the %zu shard%s of cluster %s: reads ask each "
		    "shard's tables directly", c->nshards, c->nshards == 1 ? "" : "s", c->name);
	else if (was != ok)
		log_info("clickhouse: reads go through the Distributed tables");
}

/* One shard's part of ch_scatter(). */
struct scatter_job {
	struct cluster	*c;
	size_t		 g;
	const char	*sql;
	size_t		 max;
	struct buf	 out, err;
	int		 rc;
	pthread_t	 thread;
	bool		 started;
};

/*
 * Shard g's proven replicas: the one that answered last, then the others in
 * their order, the next when one cannot be reached.
 */
static int
scatter_one(struct scatter_job *j)
{
	struct cluster *c = j->c;
	size_t last = atomic_load(&c->sh_last[j->g]), k, i;
	int rc;

	for (k = 0; k <= c->nurls; k++) {
		i = k == 0 ? last - 1 : k - 1;
		if ((k == 0 && last == 0) || (k > 0 && i == last - 1) ||
		    c->urls[i].shard != j->g || atomic_load(&c->urls[i].shard_num) == 0)
			continue;
		buf_reset(&j->out);
		rc = exec_url(c, i, j->sql, NULL, &j->out, &j->err, false, j->max);
		if (rc != -EHOSTUNREACH) {
			if (rc == 0)
				atomic_store(&c->sh_last[j->g], i + 1);
			return rc;
		}
		buf_adds(&j->err, "; ");
	}
	return -EAGAIN;
}

static void *
scatter_main(void *arg)
{
	struct scatter_job *j = arg;

	j->rc = scatter_one(j);
	return NULL;
}

int
ch_scatter(struct cluster *c, const char *sql, size_t max, struct buf *out, struct buf *err)
{
	struct scatter_job *jobs;
	size_t g, total;
	int rc = 0;

	if (!atomic_load(&c->direct))
		return -EAGAIN;
	jobs = xcalloc(c->nshards, sizeof(*jobs));
	for (g = 0; g < c->nshards; g++) {
		jobs[g].c = c;
		jobs[g].g = g;
		jobs[g].sql = sql;
		jobs[g].max = max;
	}
	/* The others on threads of their own, the first on this one. */
	for (g = 1; g < c->nshards; g++)
		jobs[g].started = pthread_create(&jobs[g].thread, NULL, scatter_main,
		    &jobs[g]) == 0;
	for (g = 0; g < c->nshards; g++) {
		if (g == 0 || !jobs[g].started)
			scatter_main(&jobs[g]);
		else
			pthread_join(jobs[g].thread, NULL);
	}
	/* A refusal is told; a shard with no proven replica that answers: not direct. */
	for (g = 0; g < c->nshards && rc == 0; g++)
		if (jobs[g].rc == -EHOSTUNREACH || jobs[g].rc == -EAGAIN)
			rc = -EAGAIN;
	for (g = 0; g < c->nshards && rc == 0; g++)
		if (jobs[g].rc < 0) {
			buf_add(err, jobs[g].err.data, jobs[g].err.len);
			rc = jobs[g].rc == -ENOMEM || jobs[g].rc == -EFBIG ? jobs[g].rc : -EIO;
		}
	/* Every shard's part under max, the whole too. */
	for (g = 0, total = 0; g < c->nshards && rc == 0; g++)
		total += jobs[g].out.len;
	if (rc == 0 && total > max) {
		buf_printf(err, "the shards' answers are over %zu bytes", max);
		rc = -EFBIG;
	}
	for (g = 0; g < c->nshards && rc == 0; g++)
		rc = buf_add(out, jobs[g].out.data, jobs[g].out.len);
	for (g = 0; g < c->nshards; g++) {
		buf_free(&jobs[g].out);
		buf_free(&jobs[g].err);
	}
	free(jobs);
	return rc;
}

int
ch_quote(struct buf *b, const char *s)
{
	buf_addc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			buf_addc(b, '\\');
		buf_addc(b, *s);
	}
	return buf_addc(b, '\'');
}

int
ch_tsv(struct buf *b, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (s[i]) {
		case '\\': buf_adds(b, "\\\\"); break;
		case '\t': buf_adds(b, "\\t"); break;
		case '\n': buf_adds(b, "\\n"); break;
		case '\0': buf_adds(b, "\\0"); break;
		default: buf_addc(b, s[i]);
		}
	}
	return buf_error(b);
}

void
tsv_init(struct tsv *t, const struct buf *b)
{
	memset(t, 0, sizeof(*t));
	t->p = b->data ? b->data : "";
	t->end = t->p + b->len;
}

int
tsv_next(struct tsv *t)
{
	size_t starts[TSV_MAX_FIELDS], i;
	const char *p = t->p, *run;

	if (p >= t->end)
		return 0;
	buf_reset(&t->row);
	t->nf = 0;
	starts[t->nf++] = 0;
	/* Runs of plain bytes are copied at once: answers are megabytes of frames. */
	for (run = p; p < t->end; p++) {
		if (*p != '\t' && *p != '\n' && *p != '\\')
			continue;
		if (p > run)
			buf_add(&t->row, run, (size_t)(p - run));
		run = p + 1;
		if (*p == '\n')
			break;
		if (*p == '\t') {
			if (t->nf == TSV_MAX_FIELDS)
				return -EINVAL;
			buf_addc(&t->row, '\0');
			starts[t->nf++] = t->row.len;
			continue;
		}
		if (++p >= t->end)
			return -EINVAL;
		run = p + 1;
		switch (*p) {
		case 't': buf_addc(&t->row, '\t'); break;
		case 'n': buf_addc(&t->row, '\n'); break;
		case '0': buf_addc(&t->row, '\0'); break;
		case 'r': buf_addc(&t->row, '\r'); break;
		case 'b': buf_addc(&t->row, '\b'); break;
		case 'f': buf_addc(&t->row, '\f'); break;
		default: buf_addc(&t->row, *p);
		}
	}
	if (p >= t->end)
		return -EINVAL;	/* every row ends in a newline: a cut answer */
	t->p = p + 1;
	if (buf_addc(&t->row, '\0') < 0)
		return buf_error(&t->row);
	for (i = 0; i < t->nf; i++) {
		t->f[i] = t->row.data + starts[i];
		t->len[i] = (i + 1 < t->nf ? starts[i + 1] - 1 : t->row.len - 1) - starts[i];
	}
	return 1;
}

void
tsv_free(struct tsv *t)
{
	buf_free(&t->row);
}

void
rb_init(struct rowbin *r, const struct buf *b)
{
	r->p = (const unsigned char *)(b->data ? b->data : "");
	r->end = r->p + b->len;
}

bool
rb_done(const struct rowbin *r)
{
	return r->p >= r->end;
}

int
rb_bytes(struct rowbin *r, size_t n, const unsigned char **p)
{
	if ((size_t)(r->end - r->p) < n)
		return -EINVAL;
	*p = r->p;
	r->p += n;
	return 0;
}

int
rb_u8(struct rowbin *r, uint8_t *v)
{
	const unsigned char *p;

	if (rb_bytes(r, 1, &p) < 0)
		return -EINVAL;
	*v = p[0];
	return 0;
}

uint64_t
rb_le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int
rb_u64(struct rowbin *r, uint64_t *v)
{
	const unsigned char *p;

	if (rb_bytes(r, 8, &p) < 0)
		return -EINVAL;
	*v = rb_le64(p);
	return 0;
}

int
rb_i64(struct rowbin *r, int64_t *v)
{
	uint64_t u;

	if (rb_u64(r, &u) < 0)
		return -EINVAL;
	*v = (int64_t)u;
	return 0;
}

int
rb_count(struct rowbin *r, size_t elem, size_t *n)
{
	uint64_t v;

	if (varint_get(&r->p, r->end, &v) < 0 ||
	    (elem > 0 && v > (uint64_t)(r->end - r->p) / elem))
		return -EINVAL;
	*n = (size_t)v;
	return 0;
}

int
rb_str(struct rowbin *r, const char **s, size_t *n)
{
	const unsigned char *p;

	if (rb_count(r, 1, n) < 0 || rb_bytes(r, *n, &p) < 0)
		return -EINVAL;
	*s = (const char *)p;
	return 0;
}

int
raw_row_next(struct rowbin *r, struct raw_row *row)
{
	size_t k, nst;

	if (rb_done(r))
		return 0;
	memset(row, 0, sizeof(*row));
	for (k = 0; k < 5; k++)
		if (rb_str(r, &row->str[k], &row->len[k]) < 0 ||
		    memchr(row->str[k], '\0', row->len[k]) != NULL)
			return -EINVAL;
	if (rb_i64(r, &row->ns) < 0 || rb_u64(r, &row->gid) < 0 || rb_u64(r, &row->sigh) < 0 ||
	    rb_u64(r, &row->sid) < 0 || rb_i64(r, &row->period) < 0 ||
	    rb_count(r, 8, &row->ntotals) < 0 || row->ntotals > PROFILE_MAX_SAMPLE_TYPES ||
	    rb_bytes(r, row->ntotals * 8, &row->totals) < 0 || rb_u8(r, &row->ntypes) < 0 ||
	    row->ntypes == 0 || row->ntypes > PROFILE_MAX_SAMPLE_TYPES ||
	    rb_u64(r, &row->gauges) < 0 || rb_count(r, DIGEST128_HEX, &nst) < 0 ||
	    rb_bytes(r, nst * DIGEST128_HEX, &row->stacks) < 0 ||
	    rb_count(r, 8, &row->nvals) < 0 || rb_bytes(r, row->nvals * 8, &row->vals) < 0 ||
	    nst != row->nvals || row->nvals % row->ntypes != 0)
		return -EINVAL;
	return 1;
}

int
tsv_i64(const char *s, int64_t *v)
{
	char *e;
	long long x;

	errno = 0;
	x = strtoll(s, &e, 10);
	if (e == s || *e || errno)
		return -EINVAL;
	*v = x;
	return 0;
}

int
tsv_u64(const char *s, uint64_t *v)
{
	char *e;
	unsigned long long x;

	if (*s == '-')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &e, 10);
	if (e == s || *e || errno)
		return -EINVAL;
	*v = x;
	return 0;
}

/*
 * Parse "[1,-2,3]" (at most max numbers; unsigned: as uint64) into out;
 * -EINVAL on anything else.
 */
int
tsv_nums(const char *s, struct buf *out, size_t *n, size_t max, bool is_unsigned)
{
	const char *p = s;
	char *e = NULL;

	*n = 0;
	if (*p++ != '[')
		return -EINVAL;
	if (*p == ']')
		return p[1] ? -EINVAL : 0;
	for (;;) {
		int64_t v;

		errno = 0;
		if (is_unsigned)
			v = *p == '-' ? (errno = EINVAL, 0) : (int64_t)strtoull(p, &e, 10);
		else
			v = strtoll(p, &e, 10);
		if (e == p || errno)
			return -EINVAL;
		buf_add(out, &v, sizeof(v));
		(*n)++;
		if (*e == ']')
			return e[1] ? -EINVAL : buf_error(out);
		if (*e != ',' || *n >= max)
			return -EINVAL;
		p = e + 1;
	}
}
