/*
 * chttp: ClickHouse's HTTP interface through libcurl, and its TabSeparated
 * answers. Every statement is one POST (the statement, then its data); the
 * server that answered last is asked first and the others when it cannot be
 * reached. The URL list groups servers by shard ("A1|A2,B1|B2": shard A's
 * two replicas, then shard B's), so that what must reach every shard once
 * (ch_exec_shard()) goes to one live replica of each. A read that the
 * server asked does not answer within the hedge delay (--clickhouse-hedge)
 * is asked of the next one too, and the first whole answer wins (run()):
 * a frozen server costs a read that delay, not curl's 60 s. Transfers run
 * on curl multi handles, which keep their connections; idle ones are kept
 * (CH_POOL of them), so a statement reuses a live connection instead of
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
	metrics_describe("profilefs_clickhouse_hedged_reads_total", "counter",
	    "reads asked of a second server because the first gave no answer within "
	    "--clickhouse-hedge, by which answered first (first, second)");
}

void
ch_free(struct cluster *c)
{
	while (c->h_n > 0)
		curl_multi_cleanup(c->h_pool[--c->h_n]);
	pthread_mutex_destroy(&c->h_lock);
}

/*
 * An idle multi handle, or a new one; NULL: out of memory. The connections
 * live in a multi handle's cache (the easy handles of its transfers come and
 * go), so a pooled one keeps them alive for the next statement.
 */
static CURLM *
multi_get(struct cluster *c)
{
	CURLM *m = NULL;

	pthread_mutex_lock(&c->h_lock);
	if (c->h_n > 0)
		m = c->h_pool[--c->h_n];
	pthread_mutex_unlock(&c->h_lock);
	return m ? m : curl_multi_init();
}

/* Back to the pool once no transfer is left in it. */
static void
multi_put(struct cluster *c, CURLM *m)
{
	pthread_mutex_lock(&c->h_lock);
	if (c->h_n < CH_POOL) {
		c->h_pool[c->h_n++] = m;
		m = NULL;
	}
	pthread_mutex_unlock(&c->h_lock);
	if (m)
		curl_multi_cleanup(m);
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

/* What a statement's run (run()) shares with each of its transfers. */
struct stmt {
	struct cluster		*c;
	const char		*sql;
	const struct buf	*data;
	bool			 insert;
	size_t			 max;
};

/* One transfer of a statement to URL url. */
struct xfer {
	size_t			 url;
	CURL			*h;		/* NULL: not running */
	struct curl_slist	*hdrs;
	struct buf		 body, ans, target, err;
	struct answer		 wa;
	char			 cerr[CURL_ERROR_SIZE];
	int64_t			 t0;
	bool			 again;		/* asked once more already */
};

static void
xfer_stop(CURLM *m, struct xfer *x)
{
	if (x->h) {
		curl_multi_remove_handle(m, x->h);
		curl_easy_cleanup(x->h);	/* a cut transfer's connection is closed */
		x->h = NULL;
	}
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
}

static void
xfer_free(CURLM *m, struct xfer *x)
{
	xfer_stop(m, x);
	buf_free(&x->body);
	buf_free(&x->ans);
	buf_free(&x->target);
	buf_free(&x->err);
}

/* Start the statement's transfer to URL i in x (added to m). -ENOMEM. */
static int
xfer_start(const struct stmt *s, CURLM *m, struct xfer *x, size_t i)
{
	struct cluster *c = s->c;

	x->url = i;
	buf_reset(&x->body);
	buf_reset(&x->ans);
	buf_reset(&x->target);
	buf_reset(&x->err);
	x->cerr[0] = '\0';
	buf_adds(&x->body, s->sql);
	buf_addc(&x->body, '\n');
	if (s->data)
		buf_add(&x->body, s->data->data, s->data->len);
	/*
	 * An INSERT runs the materialized views of its table in parallel
	 * (parallel_view_processing): its answer, which the shipper waits for
	 * before the next batch, comes sooner on several cores.
	 */
	buf_printf(&x->target, "%s?%s", c->urls[i].base, s->insert ?
	    "insert_distributed_sync=1&parallel_view_processing=1" :
	    "max_query_size=33554432&skip_unavailable_shards=0");
	x->wa = (struct answer){ &x->ans, s->max, false };
	if (buf_error(&x->body) || buf_error(&x->target) || (x->h = curl_easy_init()) == NULL)
		return -ENOMEM;
	x->hdrs = curl_slist_append(NULL, "Content-Type: text/plain");
	curl_easy_setopt(x->h, CURLOPT_URL, x->target.data);
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->h, CURLOPT_POST, 1L);
	curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body.data);
	curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body.len);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, &x->wa);
	curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->cerr);
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, 60000L);
	curl_easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
	x->t0 = clock_mono_ns();
	if (curl_multi_add_handle(m, x->h) != CURLM_OK) {
		curl_easy_cleanup(x->h);
		x->h = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * The transfer x ended with cc: 0 (the answer in x->ans), or
 * -EHOSTUNREACH: not reached (try another); -EIO: answered with an error
 * (-EAGAIN: an error of a broken connection between servers, for a read);
 * -EFBIG: the answer is over max (when under CH_MAX_ANSWER; else -EIO);
 * -ECONNRESET: an INSERT sent without an answer, which may have arrived.
 * Sent again elsewhere at once it could count twice, unless the tables
 * are Replicated: they drop a block they already took, so a replicated
 * cluster's INSERT goes on to the next server (-EHOSTUNREACH).
 * The reason in x->err.
 */
static int
xfer_done(const struct stmt *s, CURLM *m, struct xfer *x, CURLcode cc)
{
	struct cluster *c = s->c;
	long status = 0;

	log_debug("clickhouse: %.60s...: %zu bytes in, %zu out, %.1f ms", s->sql, x->body.len,
	    x->ans.len, (double)(clock_mono_ns() - x->t0) / 1e6);
	if (cc == CURLE_OK)
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	xfer_stop(m, x);
	if (cc != CURLE_OK) {
		buf_printf(&x->err, "%s: %s", c->urls[x->url].shown, *x->cerr ? x->cerr :
		    curl_easy_strerror(cc));
		if (cc == CURLE_WRITE_ERROR)
			buf_printf(&x->err, " (answer over %zu bytes)", s->max);
		if (cc == CURLE_WRITE_ERROR)
			return x->wa.over && s->max < CH_MAX_ANSWER ? -EFBIG : -EIO;
		if (s->insert && !c->replicated && cc != CURLE_COULDNT_CONNECT &&
		    cc != CURLE_COULDNT_RESOLVE_HOST)
			return -ECONNRESET;
		return -EHOSTUNREACH;
	}
	if (status != 200) {
		buf_printf(&x->err, "%s: HTTP %ld: ", c->urls[x->url].shown, status);
		first_line(&x->err, &x->ans);
		return !s->insert && broken_between_servers(&x->ans) ? -EAGAIN : -EIO;
	}
	return 0;
}

/*
 * A server that gave no answer within the hedge delay and lost to another
 * is said once in the log, and once again when it answers first again.
 */
static void
note_slow(struct cluster *c, size_t slow, size_t won)
{
	if (!atomic_exchange(&c->urls[slow].slow, true))
		log_warnx("clickhouse: %s gave no answer to a read within %lld ms; %s answered "
		    "it (reads ask %s first from now on)", c->urls[slow].shown,
		    (long long)c->hedge_ms, c->urls[won].shown, c->urls[won].shown);
}

/*
 * One statement on the servers cand[0..n), in that order: the next when one
 * cannot be reached, at once. A read (SELECT) that failed on a connection
 * between servers is asked once more of the same server: it changes
 * nothing, and the cluster is sound; only that one connection was not. A
 * read is hedged (hedge): when the servers asked have given no answer
 * within c->hedge_ms, the next is asked too (two at a time at most), and
 * the first whole answer wins; the other transfer is cut. A stopped or
 * frozen server (its kernel still takes connections) so costs a read the
 * hedge delay, not curl's timeout. Writes are never sent twice.
 *
 * insert: an INSERT (sent once to a server, its answer never guessed). The
 * winner's answer is appended to out (optional) and its URL put in
 * *used (optional); the result is the first that is not -EHOSTUNREACH (0, -EIO,
 * -EFBIG, -ECONNRESET, -ENOMEM), else -EHOSTUNREACH; the reasons of the
 * failures before it in err, "; " between them.
 */
static int
run(struct cluster *c, const size_t *cand, size_t n, const char *sql, const struct buf *data,
    bool insert, struct buf *out, struct buf *err, size_t max, size_t *used)
{
	struct stmt s = { c, sql, data, insert, max };
	bool hedge = strncmp(sql, "SELECT", 6) == 0 && data == NULL && c->hedge_ms > 0 && n > 1;
	struct xfer *x;
	size_t next = 0, inflight = 0, k, errs = 0, first_url = 0;
	int64_t hedge_at = 0, now, wait_ms;
	int rc = -EHOSTUNREACH, r, running, queued;
	bool done = false, hedged = false;
	CURLMsg *msg;
	CURLM *m;

	if (n == 0)
		return -EHOSTUNREACH;
	if ((m = multi_get(c)) == NULL)
		return -ENOMEM;
	x = xcalloc(n, sizeof(*x));
	while (!done) {
		/* Start the next server: nothing in flight, or a hedge that is due. */
		now = clock_mono_ns();
		if (next < n && (inflight == 0 || (hedge && inflight < 2 && now >= hedge_at))) {
			if (inflight > 0) {
				hedged = true;
				log_debug("clickhouse: no answer from %s within %lld ms: asking %s too",
				    c->urls[first_url].shown, (long long)c->hedge_ms,
				    c->urls[cand[next]].shown);
			} else
				first_url = cand[next];
			if ((r = xfer_start(&s, m, &x[next], cand[next])) < 0) {
				rc = r;
				break;
			}
			next++;
			inflight++;
			hedge_at = now + (int64_t)c->hedge_ms * 1000000;
		}
		curl_multi_perform(m, &running);
		while (!done && (msg = curl_multi_info_read(m, &queued)) != NULL) {
			struct xfer *t = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
			r = xfer_done(&s, m, t, msg->data.result);
			inflight--;
			if (r == -EAGAIN && !t->again && strncmp(sql, "SELECT", 6) == 0) {
				log_warnx("clickhouse: %s; asking once more", t->err.data);
				t->again = true;
				if ((r = xfer_start(&s, m, t, t->url)) < 0) {
					rc = r;
					done = true;
					break;
				}
				inflight++;
				continue;
			}
			if (r == -EAGAIN)
				r = -EIO;
			if (r != 0 && t->err.len)
				buf_printf(err, "%s%s", errs++ ? "; " : "", t->err.data);
			if (r == -EHOSTUNREACH)
				continue;	/* the next starts at the top of the loop */
			rc = r;
			done = true;
			if (r == 0) {
				if (out && (rc = buf_add(out, t->ans.data, t->ans.len)) < 0)
					break;
				if (used)
					*used = t->url;
				if (hedged) {
					metrics_add("profilefs_clickhouse_hedged_reads_total",
					    t->url == first_url ? "won=\"first\"" : "won=\"second\"", 1);
					if (t->url != first_url)
						note_slow(c, first_url, t->url);
				}
				if (atomic_exchange(&c->urls[t->url].slow, false))
					log_info("clickhouse: %s answers reads again", c->urls[t->url].shown);
			}
		}
		if (done || (inflight == 0 && next >= n))
			break;
		if (inflight == 0)
			continue;
		wait_ms = 1000;
		if (hedge && inflight < 2 && next < n) {
			wait_ms = (hedge_at - clock_mono_ns()) / 1000000;
			wait_ms = wait_ms < 0 ? 0 : wait_ms > 1000 ? 1000 : wait_ms;
		}
		curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL);
	}
	/* The losers are cut; their connections go with them, the winner's stays pooled. */
	for (k = 0; k < n; k++)
		xfer_free(m, &x[k]);
	free(x);
	multi_put(c, m);
	return rc;
}

int
ch_exec_on(struct cluster *c, size_t i, const char *sql, struct buf *out, struct buf *err,
    bool *refused)
{
	int rc = run(c, &i, 1, sql, NULL, false, out, err, CH_MAX_ANSWER, NULL);

	if (refused)
		*refused = rc == -EIO;
	return rc == -EHOSTUNREACH ? -EIO : rc;
}

int
ch_exec_shard(struct cluster *c, size_t g, const char *sql, const struct buf *data,
    struct buf *out, struct buf *err, bool *refused, size_t *used)
{
	size_t cand[CH_MAX_URLS], n = 0, i;
	int rc;

	if (refused)
		*refused = false;
	for (i = 0; i < c->nurls; i++)
		if (c->urls[i].shard == g)
			cand[n++] = i;
	if (n == 0) {
		buf_printf(err, "no server for shard %zu", g + 1);
		return -EIO;
	}
	rc = run(c, cand, n, sql, data, strncmp(sql, "INSERT", 6) == 0, out, err, CH_MAX_ANSWER,
	    used);
	if (rc == -EIO && refused)
		*refused = true;
	if (rc == 0)
		buf_reset(err);
	return rc == -EHOSTUNREACH ? -EIO : rc;
}

/* ch_exec() with answers bounded by max: every server, the one that answered last first. */
static int
exec_any(struct cluster *c, const char *sql, const struct buf *data, size_t max,
    struct buf *out, struct buf *err, bool *refused)
{
	size_t cand[CH_MAX_URLS] = { 0 }, first = atomic_load(&c->cur), k, used = first;
	int rc;

	if (refused)
		*refused = false;
	for (k = 0; k < c->nurls; k++)
		cand[k] = (first + k) % c->nurls;
	rc = run(c, cand, c->nurls, sql, data, strncmp(sql, "INSERT", 6) == 0, out, err, max,
	    &used);
	if (rc == -EIO && refused)
		*refused = true;
	if (rc == 0) {
		atomic_store(&c->cur, used);
		buf_reset(err);
	}
	return rc == -EHOSTUNREACH ? -EIO : rc;
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
 * their order, the next when one cannot be reached (or, for a read, when
 * the one asked gives no answer within the hedge delay).
 */
static int
scatter_one(struct scatter_job *j)
{
	struct cluster *c = j->c;
	size_t last = atomic_load(&c->sh_last[j->g]), cand[CH_MAX_URLS], n = 0, i, used = 0;
	int rc;

	if (last > 0 && atomic_load(&c->urls[last - 1].shard_num) != 0 &&
	    c->urls[last - 1].shard == j->g)
		cand[n++] = last - 1;
	for (i = 0; i < c->nurls; i++)
		if (i + 1 != last && c->urls[i].shard == j->g &&
		    atomic_load(&c->urls[i].shard_num) != 0)
			cand[n++] = i;
	buf_reset(&j->out);
	rc = run(c, cand, n, j->sql, NULL, false, &j->out, &j->err, j->max, &used);
	if (rc == 0)
		atomic_store(&c->sh_last[j->g], used + 1);
	return rc == -EHOSTUNREACH ? -EAGAIN : rc;
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
