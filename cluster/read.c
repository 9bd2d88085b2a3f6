/*
 * read: the fleet's reader (struct reader of store.h): once the shipper
 * found the schema in place, the reads of the tree and the HTTP API are
 * answered by the cluster, and by the local store before. Listings and
 * hours come from the small series table, kept per generation with each
 * series' recent windows (so the lookups of a path ask ClickHouse nothing
 * new; the shipper's poll asks it ahead, read_refresh()). A merge is one
 * query (merge_sql()): the selection (service, type, labels and matchers:
 * the label sets the generation's listing selects, or through the series
 * table once per series) and the range's edges are SQL; each part of the
 * range is summed on the shards from the widest tier of per-window sums that
 * fits it, the raw rows at the edges; the profiles' counts, ids and totals
 * come from the 10-minute counts alike. A few series over a short range (one
 * host's hour) are read as their rows are stored, in RowBinary, and summed
 * here (raw_sql(), answer_raw()). Then the frames of stacks not seen before:
 * from memory, from the local store's cache (kept across restarts), else
 * from ClickHouse. Gauges are averaged per series as the local store does,
 * so sums are the same.
 *
 * When the URLs are proven to be the cluster's shards (chttp.c), each query
 * asks every shard's *_local tables at once and the shards' rows are added
 * up here (answer_resolve(), answer_accs(), the listing's sort); else it
 * goes through the Distributed tables.
 *
 * A server or shard that does not answer fails the read (-EIO, the reason
 * in the log): never a silently partial profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_int.h"

#define NS		INT64_C(1000000000)
#define WINDOW_NS	(600 * NS)
#define FRAMES_CHUNK	2000
#define CACHE_TTL_NS	(INT64_C(10) * NS)
#define RECENT_S	(3 * 3600)	/* the windows every listing brings along */
#define HD_DAYS		2	/* the windows kept for has_data: the last days' */
#define READ_ACTIVE_NS	(INT64_C(60) * NS)	/* read_refresh() renews for mounts read since */
#define RENEW_EARLY_NS	(INT64_C(2) * NS)	/* ... a listing this close to its end */

/* The 10-minute windows of a series that hold profiles, since since (s). */
struct hd_windows {
	uint64_t	 gen;
	int64_t		 at;		/* monotonic ns */
	int64_t		 since;
	int64_t		*w;		/* s, ascending */
	size_t		 n;
};

static int
fail(const char *what, const struct buf *err)
{
	log_warnx("clickhouse: %s: %s", what, err->data ? err->data : "failed");
	return -EIO;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* --- series ------------------------------------------------------------------ */

static uint64_t
series_id(const char *service, const char *type, const char *labels)
{
	struct buf k = { 0 };
	uint64_t h;

	buf_adds(&k, service);
	buf_addc(&k, '\0');
	buf_adds(&k, type);
	buf_addc(&k, '\0');
	buf_adds(&k, labels);
	h = hash_bytes(k.data, k.len);
	buf_free(&k);
	/* Never 0, distinct from local ids (small) in practice. */
	return h | UINT64_C(1) << 63;
}

static const struct series *
intern_series(struct cluster *c, const char *service, const char *type, const char *labels)
{
	uint64_t id = series_id(service, type, labels);
	struct series *s = NULL;
	int64_t i;
	int added;

	pthread_mutex_lock(&c->s_lock);
	i = intern_put(c->s_names, &id, sizeof(id), &added);
	if (i < 0)
		goto out;
	if (!added) {
		s = c->s_all[i];
		goto out;
	}
	s = xcalloc(1, sizeof(*s));
	s->id = id;
	s->service = xstrdup(service);
	s->type = xstrdup(type);
	s->labels = xstrdup(labels);
	if (labels_parse(labels, &s->ls, NULL) < 0)
		memset(&s->ls, 0, sizeof(s->ls));
	c->s_all = xgrow(c->s_all, &c->s_cap, c->s_n + 1, sizeof(*c->s_all));
	c->s_all[c->s_n++] = s;
out:
	pthread_mutex_unlock(&c->s_lock);
	return s;
}

static const struct series *
r_series_get(void *arg, uint64_t id)
{
	struct cluster *c = arg;
	const struct series *s = NULL;
	int64_t i;

	pthread_mutex_lock(&c->s_lock);
	if ((i = intern_get(c->s_names, &id, sizeof(id))) >= 0)
		s = c->s_all[i];
	pthread_mutex_unlock(&c->s_lock);
	return s;
}

static void
quote_pair(struct buf *b, const char *k, const char *v)
{
	struct buf t = { 0 };

	labels_escape(&t, k, strlen(k));
	buf_addc(&t, '=');
	labels_escape(&t, v, strlen(v));
	buf_addc(&t, '\0');
	if (buf_error(&t) == 0)
		ch_quote(b, t.data);
	buf_free(&t);
}

/*
 * One matcher as a condition on the stored labels text ("k=v,..." escaped):
 * the value is the pair's text after "k=", unescaped; a label the series
 * lacks reads as "". ClickHouse's match() is RE2, the engine matchers
 * compile with here (labels.c), so the pattern, which RE2 accepted alone,
 * is anchored as Prometheus does.
 * service_name without such a label is the service, as matchers_match().
 */
static void
where_matcher(struct buf *b, const struct matcher *m)
{
	struct buf pfx = { 0 }, re = { 0 };
	const char *neg = m->op == MATCH_NE || m->op == MATCH_NRE ? "NOT " : "";

	labels_escape(&pfx, m->key, strlen(m->key));
	buf_addc(&pfx, '=');
	buf_printf(&re, "^(?:%s)$", m->value);
	if (buf_error(&pfx) < 0 || buf_error(&re) < 0) {
		buf_free(&pfx);
		buf_free(&re);
		buf_adds(b, " AND 0");
		return;
	}
	struct buf val = { 0 };

	buf_adds(&val, "if(arrayExists(x -> startsWith(x, ");
	ch_quote(&val, pfx.data);
	buf_adds(&val, "), splitByChar(',', labels)), decodeURLComponent(substring(arrayFirst("
	    "x -> startsWith(x, ");
	ch_quote(&val, pfx.data);
	buf_printf(&val, "), splitByChar(',', labels)), %zu)), %s)", pfx.len + 1,
	    strcmp(m->key, "service_name") == 0 ? "service" : "''");
	if (buf_error(&val) < 0)
		buf_adds(b, " AND 0");
	else if (m->op == MATCH_EQ || m->op == MATCH_NE) {
		buf_printf(b, " AND %s(%s = ", neg, val.data);
		ch_quote(b, m->value);
		buf_addc(b, ')');
	} else {
		buf_printf(b, " AND %smatch(%s, ", neg, val.data);
		ch_quote(b, re.data);
		buf_addc(b, ')');
	}
	buf_free(&val);
	buf_free(&pfx);
	buf_free(&re);
}

int
read_where(const struct query *q, struct buf *b)
{
	size_t i;

	buf_adds(b, "1");
	if (q->service) {
		buf_adds(b, " AND service = ");
		ch_quote(b, q->service);
	}
	if (q->type) {
		buf_adds(b, " AND type = ");
		ch_quote(b, q->type);
	}
	for (i = 0; q->sel && i < q->sel->n; i++) {
		buf_adds(b, " AND has(splitByChar(',', labels), ");
		quote_pair(b, q->sel->pairs[i].key, q->sel->pairs[i].value);
		buf_addc(b, ')');
	}
	for (i = 0; q->match && i < q->match->n; i++)
		where_matcher(b, &q->match->m[i]);
	return buf_error(b);
}

static void
where_series(const struct series *s, struct buf *b)
{
	buf_adds(b, "service = ");
	ch_quote(b, s->service);
	buf_adds(b, " AND type = ");
	ch_quote(b, s->type);
	buf_adds(b, " AND labels = ");
	ch_quote(b, s->labels);
}

/* "AND ns >= from AND ns < to" and the days, for partition pruning. */
static void
where_range(struct buf *b, int64_t from, int64_t to)
{
	int64_t lo = from, hi = to;

	if (lo < STORE_TIME_MIN)
		lo = STORE_TIME_MIN;
	if (hi > INT64_C(4102444800) * NS)	/* 2100-01-01 */
		hi = INT64_C(4102444800) * NS;
	buf_printf(b, " AND ns >= %" PRId64 " AND ns < %" PRId64, from, to);
	if (lo < hi)
		buf_printf(b, " AND date >= toDate(%" PRId64 ") AND date <= toDate(%" PRId64 ")",
		    lo / NS, (hi - 1) / NS);
}

struct slist {
	const struct series	**s;
	size_t			 n, cap;
};

static int
series_cmp(const void *a, const void *b)
{
	const struct series *x = *(const struct series *const *)a;
	const struct series *y = *(const struct series *const *)b;
	int d;

	if ((d = strcmp(x->service, y->service)) != 0)
		return d;
	if ((d = strcmp(x->type, y->type)) != 0)
		return d;
	return strcmp(x->labels, y->labels);
}

/* The series seen in earlier answers that match, in index order. */
static int
known_series(struct cluster *c, const char *service, const char *type, struct slist *out)
{
	size_t i;

	pthread_mutex_lock(&c->s_lock);
	for (i = 0; i < c->s_n; i++) {
		const struct series *s = c->s_all[i];

		if ((service && strcmp(s->service, service) != 0) ||
		    (type && strcmp(s->type, type) != 0))
			continue;
		out->s = xgrow(out->s, &out->cap, out->n + 1, sizeof(*out->s));
		out->s[out->n++] = s;
	}
	pthread_mutex_unlock(&c->s_lock);
	if (out->n)
		qsort(out->s, out->n, sizeof(*out->s), series_cmp);
	return 0;
}

/* Whether an entry made at generation gen, at monotonic time at, still holds. */
static bool
fresh(struct cluster *c, uint64_t gen, int64_t at)
{
	return at && gen == atomic_load(&c->gen) && clock_mono_ns() - at < CACHE_TTL_NS;
}

/*
 * The cached series of service and type into out; false when the cache is
 * stale (unless any: then whatever it holds).
 */
static bool
series_cached(struct cluster *c, const char *service, const char *type, struct slist *out,
    bool any)
{
	size_t i;
	bool ok;

	pthread_mutex_lock(&c->sc_lock);
	if ((ok = any || fresh(c, c->sc_gen, c->sc_at)))
		for (i = 0; i < c->sc_n; i++) {
			const struct series *s = c->sc[i];

			if ((service && strcmp(s->service, service) != 0) ||
			    (type && strcmp(s->type, type) != 0))
				continue;
			out->s = xgrow(out->s, &out->cap, out->n + 1, sizeof(*out->s));
			out->s[out->n++] = s;
		}
	pthread_mutex_unlock(&c->sc_lock);
	return ok;
}

/* Keep the n windows w of series sid, known since since (s), made at generation gen. */
static void
hd_store(struct cluster *c, uint64_t sid, const int64_t *w, size_t n, int64_t since,
    uint64_t gen)
{
	int64_t k;
	int added;

	pthread_mutex_lock(&c->sc_lock);
	if (c->hd_idx == NULL)
		c->hd_idx = intern_create(64);
	if ((k = intern_put(c->hd_idx, &sid, sizeof(sid), &added)) >= 0) {
		size_t cap = c->hd_cap;

		if (added) {
			c->hd = xgrow(c->hd, &cap, (size_t)k + 1, sizeof(*c->hd));
			memset(&c->hd[k], 0, sizeof(c->hd[k]));
			c->hd_cap = cap;
		}
		free(c->hd[k].w);
		c->hd[k].w = n ? xmalloc(n * sizeof(*w)) : NULL;
		if (n)
			memcpy(c->hd[k].w, w, n * sizeof(*w));
		c->hd[k].n = n;
		c->hd[k].gen = gen;
		c->hd[k].at = clock_mono_ns();
		c->hd[k].since = since;
	}
	pthread_mutex_unlock(&c->sc_lock);
}

/*
 * A series an answer holds: when the cached listing lacks it, the data moved
 * on before the generation did (it is polled): the listings are asked again.
 */
static void
series_seen(struct cluster *c, const struct series *s)
{
	size_t i;

	pthread_mutex_lock(&c->sc_lock);
	for (i = 0; i < c->sc_n && c->sc[i] != s; i++)
		;
	if (c->sc_at && i == c->sc_n) {
		c->sc_at = 0;
		for (i = 0; c->hd_idx && i < intern_count(c->hd_idx); i++)
			c->hd[i].at = 0;
	}
	pthread_mutex_unlock(&c->sc_lock);
}

struct recent {
	const struct series	*s;
	int64_t			 w;	/* s */
};

/* By series, then time. */
static int
recent_cmp(const void *a, const void *b)
{
	const struct recent *x = a, *y = b;
	int d = x->s == y->s ? 0 : series_cmp(&x->s, &y->s);

	return d ? d : (x->w > y->w) - (x->w < y->w);
}

/*
 * The listing's query (local: of each shard's own tables): every series with
 * its first and last hour (k 0), and the 10-minute windows since since (s)
 * that hold profiles (k 1).
 */
static int
listing_sql(struct cluster *c, int64_t since, bool local, struct buf *sql)
{
	buf_printf(sql, "SELECT toUInt8(0) AS k, service, type, labels, toUInt32(min(hour)) AS a, "
	    "toUInt32(max(hour)) AS b FROM %1$s.series%3$s GROUP BY service, type, labels "
	    "HAVING sum(profiles) > 0 UNION ALL SELECT toUInt8(1), service, type, labels, "
	    "toUInt32(window), toUInt32(0) FROM %1$s.counts10%3$s WHERE window >= toDateTime(%2$"
	    PRId64 ") AND date >= toDate(toDateTime(%2$" PRId64 ")) GROUP BY service, type, "
	    "labels, window HAVING sum(profiles) > 0 FORMAT TabSeparated", c->db, since,
	    local ? "_local" : "");
	return buf_error(sql);
}

/*
 * The series of service and type (NULL: any) in order, from the series
 * summary table: every series is asked for at once and kept for the
 * generation, so the lookups of a path cost one small query.
 */
static int
series_query(struct cluster *c, const char *service, const char *type, struct slist *out,
    bool renew)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	struct slist all = { 0 };
	struct buf spans = { 0 };	/* int64_t first, last hour (s) per series */
	struct buf recent = { 0 };	/* struct recent */
	struct buf rows = { 0 };	/* struct recent: a series' first, last hour (s) */
	uint64_t gen = atomic_load(&c->gen);
	int64_t since;
	struct tsv t;
	uint64_t failed;
	bool busy, own, ok = false;
	int rc = 0, r;

	/*
	 * One listing asked at a time: lookups in parallel wait for its
	 * answer (when it failed, each asks again on its own, as before).
	 */
	pthread_mutex_lock(&c->sc_lock);
	failed = c->sc_failed;
	if (renew) {
		/* Asked ahead (read_refresh()): the cached one stays in use meanwhile. */
		busy = own = !c->sc_busy;
	} else {
		while (c->sc_busy && !fresh(c, c->sc_gen, c->sc_at) && failed == c->sc_failed)
			pthread_cond_wait(&c->sc_cond, &c->sc_lock);
		busy = !fresh(c, c->sc_gen, c->sc_at);
		own = busy && !c->sc_busy;
	}
	if (own)
		c->sc_busy = true;
	pthread_mutex_unlock(&c->sc_lock);
	if (renew && !own)
		return 0;	/* a lookup is asking already */
	if (!renew)
		atomic_store(&c->read_at, clock_mono_ns());
	if (!busy) {
		(void)series_cached(c, service, type, out, true);
		return 0;
	}
	gen = atomic_load(&c->gen);
	/* With every series' windows of the last hours: lookups of recent ranges ask nothing. */
	since = clock_now_ns() / NS - RECENT_S;
	since -= since % 600;
	/* Each shard's own tables at once when the URLs are the shards, else the Distributed ones. */
	if ((rc = listing_sql(c, since, true, &sql)) < 0)
		goto out;
	if ((r = ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err)) == -EAGAIN) {
		buf_reset(&sql);
		if ((rc = listing_sql(c, since, false, &sql)) < 0)
			goto out;
		r = ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	if (r < 0) {
		/*
		 * The directories stay as last seen, so a path still resolves
		 * and reading a file fails with EIO and a reason (not ENOENT).
		 */
		log_warnx("clickhouse: listing series: %s (the last known series are listed)",
		    err.data ? err.data : "failed");
		rc = known_series(c, service, type, out);
		goto out;
	}
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		const struct series *s;
		int64_t span[2];

		if (t.nf != 6 || (strcmp(t.f[0], "0") != 0 && strcmp(t.f[0], "1") != 0) ||
		    tsv_i64(t.f[4], &span[0]) < 0 || tsv_i64(t.f[5], &span[1]) < 0) {
			r = -EINVAL;
			break;
		}
		if ((s = intern_series(c, t.f[1], t.f[2], t.f[3])) == NULL) {
			r = -ENOMEM;
			break;
		}
		if (t.f[0][0] == '1') {
			struct recent rw = { s, span[0] };

			buf_add(&recent, &rw, sizeof(rw));
			continue;
		}
		{
			struct recent lo = { s, span[0] }, hi = { s, span[1] };

			buf_add(&rows, &lo, sizeof(lo));
			buf_add(&rows, &hi, sizeof(hi));
		}
	}
	tsv_free(&t);
	if (r < 0 || buf_error(&rows) || buf_error(&recent)) {
		log_warnx("clickhouse: listing series: a malformed answer");
		rc = -EIO;
		goto out;
	}
	/*
	 * In order (what each shard answered comes one after the other): a
	 * series' first and last hours over the shards, its windows once each.
	 */
	{
		struct recent *sr = (struct recent *)rows.data, *rw = (struct recent *)recent.data;
		size_t ns = rows.len / (2 * sizeof(*sr)), nr = recent.len / sizeof(*rw), i, n;

		if (ns)
			qsort(sr, ns, 2 * sizeof(*sr), recent_cmp);
		for (i = 0; i < ns; i++) {
			int64_t span[2] = { sr[2 * i].w, sr[2 * i + 1].w };

			if (all.n && all.s[all.n - 1] == sr[2 * i].s) {
				int64_t *last = (int64_t *)spans.data + 2 * (all.n - 1);

				last[0] = span[0] < last[0] ? span[0] : last[0];
				last[1] = span[1] > last[1] ? span[1] : last[1];
				continue;
			}
			all.s = xgrow(all.s, &all.cap, all.n + 1, sizeof(*all.s));
			all.s[all.n++] = sr[2 * i].s;
			buf_add(&spans, span, sizeof(span));
		}
		if (nr)
			qsort(rw, nr, sizeof(*rw), recent_cmp);
		for (i = n = 0; i < nr; i++)
			if (n == 0 || recent_cmp(&rw[n - 1], &rw[i]) != 0)
				rw[n++] = rw[i];
		recent.len = n * sizeof(*rw);
		if (buf_error(&spans)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	/* Each series' recent windows (none: none), in the listing's order. */
	{
		const struct recent *rw = (const struct recent *)recent.data;
		size_t nr = recent.len / sizeof(*rw), i, j = 0;
		struct buf w = { 0 };

		for (i = 0; i < all.n; i++) {
			buf_reset(&w);
			while (j < nr && series_cmp(&rw[j].s, &all.s[i]) < 0)
				j++;
			for (; j < nr && rw[j].s == all.s[i]; j++)
				buf_add(&w, &rw[j].w, sizeof(rw[j].w));
			if (buf_error(&w) == 0)
				hd_store(c, all.s[i]->id, (const int64_t *)w.data,
				    w.len / sizeof(int64_t), since, gen);
		}
		buf_free(&w);
	}
	pthread_mutex_lock(&c->sc_lock);
	free(c->sc);
	free(c->sc_span);
	c->sc = all.s;
	c->sc_span = (int64_t *)buf_steal(&spans, NULL);
	c->sc_n = all.n;
	c->sc_gen = gen;
	c->sc_at = clock_mono_ns();
	c->sc_ahead = renew;
	all.s = NULL;
	pthread_mutex_unlock(&c->sc_lock);
	(void)series_cached(c, service, type, out, true);
	ok = true;
out:
	pthread_mutex_lock(&c->sc_lock);
	if (own)
		c->sc_busy = false;
	c->sc_failed += !ok;
	c->sc_bad = !ok;
	pthread_cond_broadcast(&c->sc_cond);
	pthread_mutex_unlock(&c->sc_lock);
	free(all.s);
	buf_free(&rows);
	buf_free(&recent);
	buf_free(&spans);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	return rc;
}

void
read_refresh(struct cluster *c, bool first)
{
	struct slist l = { 0 };
	int64_t now = clock_mono_ns(), at;
	bool due;

	if (!first && now - atomic_load(&c->read_at) > READ_ACTIVE_NS)
		return;
	pthread_mutex_lock(&c->sc_lock);
	at = c->sc_at;
	due = !fresh(c, c->sc_gen, at) || now - at >= CACHE_TTL_NS - RENEW_EARLY_NS;
	/* After a failure, lookups ask on their own (and log it), not every poll. */
	due = due && (first || !c->sc_bad);
	pthread_mutex_unlock(&c->sc_lock);
	if (due)
		(void)series_query(c, NULL, NULL, &l, true);
	free(l.s);
}

static int
r_series(void *arg, const struct series ***out, size_t *n)
{
	struct slist l = { 0 };
	int rc;

	if ((rc = series_query(arg, NULL, NULL, &l, false)) < 0) {
		free(l.s);
		return rc;
	}
	*out = l.s ? l.s : xcalloc(1, sizeof(*l.s));
	*n = l.n;
	return 0;
}

static int
r_series_each(void *arg, const char *service, const char *type, store_series_fn fn,
    void *fnarg)
{
	struct slist l = { 0 };
	size_t i;
	int rc;

	rc = series_query(arg, service, type, &l, false);
	for (i = 0; rc == 0 && i < l.n; i++)
		rc = fn(fnarg, l.s[i]);
	free(l.s);
	return rc;
}

static int
r_hours(void *arg, uint64_t sid, int64_t **out, size_t *n)
{
	struct cluster *c = arg;
	const struct series *s = r_series_get(c, sid);
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	int64_t *arr = NULL;
	size_t cnt = 0, cap = 0, i, k;
	struct tsv t;
	int rc = 0, r, local;

	*out = NULL;
	*n = 0;
	if (s == NULL)
		return -ENOENT;
	/* Each shard's own table at once when the URLs are the shards: their hours merged here. */
	for (local = 1, r = -EAGAIN; local >= 0 && r == -EAGAIN; local--) {
		buf_reset(&sql);
		buf_printf(&sql, "SELECT intDiv(toUInt32(hour), 3600) AS h FROM %s.series%s WHERE ",
		    c->db, local ? "_local" : "");
		where_series(s, &sql);
		buf_adds(&sql, " GROUP BY h HAVING sum(profiles) > 0 FORMAT TabSeparated");
		if ((rc = buf_error(&sql)) < 0)
			goto out;
		r = local ? ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err) :
		    ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	if (r < 0) {
		rc = fail("listing hours", &err);
		goto out;
	}
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		int64_t h;

		if (t.nf != 1 || tsv_i64(t.f[0], &h) < 0) {
			r = -EINVAL;
			break;
		}
		arr = xgrow(arr, &cap, cnt + 1, sizeof(*arr));
		arr[cnt++] = h;
	}
	tsv_free(&t);
	if (r < 0) {
		free(arr);
		log_warnx("clickhouse: listing hours: a malformed answer");
		rc = -EIO;
		goto out;
	}
	/* Ascending, once each (an hour's profiles may be on several shards). */
	if (cnt)
		qsort(arr, cnt, sizeof(*arr), cmp_i64);
	for (i = k = 0; i < cnt; i++)
		if (k == 0 || arr[k - 1] != arr[i])
			arr[k++] = arr[i];
	*out = arr ? arr : xcalloc(1, sizeof(*arr));
	*n = k;
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	return rc;
}

/* --- listings ------------------------------------------------------------------ */

static int
add_series_id(struct query_result *res, uint64_t id)
{
	size_t i;

	for (i = 0; i < res->nseries; i++)
		if (res->series[i] == id)
			return 0;
	res->series = xreallocarray(res->series, res->nseries + 1, sizeof(*res->series));
	res->series[res->nseries++] = id;
	return 0;
}

/* Whether s (n bytes) is a stack's address: DIGEST128_HEX lowercase hex digits. */
static bool
is_digest(const char *s, size_t n)
{
	size_t i;

	if (n != DIGEST128_HEX)
		return false;
	/* Exactly n bytes: the raw rows' addresses follow each other unseparated. */
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/*
 * Parse "['<digest>','<digest>']" (at most max) into out, DIGEST128_HEX bytes
 * each; -EINVAL on anything else.
 */
static int
parse_digests(const char *s, struct buf *out, size_t *n, size_t max)
{
	const char *p = s;

	*n = 0;
	if (*p++ != '[')
		return -EINVAL;
	if (*p == ']')
		return p[1] ? -EINVAL : 0;
	for (;;) {
		if (*p != '\'' || strnlen(p + 1, DIGEST128_HEX + 1) <= DIGEST128_HEX ||
		    !is_digest(p + 1, DIGEST128_HEX) || p[DIGEST128_HEX + 1] != '\'')
			return -EINVAL;
		buf_add(out, p + 1, DIGEST128_HEX);
		(*n)++;
		p += DIGEST128_HEX + 2;
		if (*p == ']')
			return p[1] ? -EINVAL : buf_error(out);
		if (*p != ',' || *n >= max)
			return -EINVAL;
		p++;
	}
}

/* The profiles of (where) in q's range, in time order (profiles/, listings). */
static int
run_listing(struct cluster *c, const char *where, const struct query *q,
    struct query_result *res)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	size_t cap = 0, i;
	struct tsv t;
	int rc = 0, r, local;

	/*
	 * Each shard's own table at once when the URLs are the shards (a read
	 * of the Distributed table waits on whichever replica its server
	 * picks, frozen or not): their rows put in order and cut here.
	 */
	for (local = 1, r = -EAGAIN; local >= 0 && r == -EAGAIN; local--) {
		buf_reset(&sql);
		buf_printf(&sql, "SELECT gid, ns, service, type, labels FROM %s.profiles%s "
		    "PREWHERE %s", c->db, local ? "_local" : "", where);
		where_range(&sql, q->from, q->to);
		buf_adds(&sql, " ORDER BY ns, gid");
		if (q->limit)
			buf_printf(&sql, " LIMIT %zu", q->limit);
		buf_adds(&sql, " FORMAT TabSeparated");
		if ((rc = buf_error(&sql)) < 0)
			goto out;
		r = local ? ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err) :
		    ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	if (r < 0) {
		rc = fail("listing profiles", &err);
		goto out;
	}
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		struct store_ref ref;
		const struct series *s;

		if ((rc = cancel_check(q->cancel)) < 0)
			break;
		memset(&ref, 0, sizeof(ref));
		if (t.nf != 5 || tsv_u64(t.f[0], &ref.id) < 0 || tsv_i64(t.f[1], &ref.time) < 0) {
			r = -EINVAL;
			break;
		}
		if ((s = intern_series(c, t.f[2], t.f[3], t.f[4])) == NULL) {
			r = -ENOMEM;
			break;
		}
		ref.series = s->id;
		snprintf(ref.type, sizeof(ref.type), "%s", s->type);
		if (res->nrefs == cap)
			res->refs = xgrow(res->refs, &cap, res->nrefs + 1, sizeof(*res->refs));
		res->refs[res->nrefs++] = ref;
	}
	tsv_free(&t);
	if (rc < 0)
		goto out;	/* past --query-cpu-limit, or its client gone */
	if (r < 0) {
		log_warnx("clickhouse: listing profiles: a malformed answer");
		rc = -EIO;
	}
	/* The shards' rows, each in order: in order as a whole, cut to the limit. */
	if (res->nrefs > 1)
		/* By time, then id: ORDER BY ns, gid. */
		qsort(res->refs, res->nrefs, sizeof(*res->refs), store_ref_cmp);
	if (q->limit && res->nrefs > q->limit)
		res->nrefs = q->limit;
	for (i = 0; i < res->nrefs; i++)
		add_series_id(res, res->refs[i].series);
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	return rc;
}

static int where_selected(struct cluster *c, const struct query *q, struct buf *b,
    size_t *nknown, struct slist *sel);

static int
r_list(void *arg, const struct query *q, struct query_result *res)
{
	struct cluster *c = arg;
	struct buf where = { 0 };
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = where_selected(c, q, &where, NULL, NULL)) == 0)
		rc = run_listing(c, where.data, q, res);
	buf_free(&where);
	if (rc < 0)
		query_result_free(res);
	return rc;
}

/* --- merges -------------------------------------------------------------------- */

/* One series' part of one merged group: its stacks' sums in the shared types. */
struct series_sums {
	const struct series	*s;
	size_t			 g;		/* the group */
	uint64_t		 count;		/* its profiles in this series */
	struct intern		*stacks;	/* hash -> index */
	struct buf		 vals;		/* int64_t[shared types] per stack */
};

static struct series_sums *
series_sums_of(struct series_sums **arr, size_t *n, const struct series *s, size_t g)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*arr)[i].s == s && (*arr)[i].g == g)
			return &(*arr)[i];
	*arr = xreallocarray(*arr, *n + 1, sizeof(**arr));
	memset(&(*arr)[*n], 0, sizeof(**arr));
	(*arr)[*n].s = s;
	(*arr)[*n].g = g;
	(*arr)[*n].stacks = intern_create(256);
	return &(*arr)[(*n)++];
}

static int64_t
ceil_div(int64_t a, int64_t b)
{
	return a / b + (a % b > 0);
}

/* Frames of stacks seen before (checked), by address: a stack's text never changes. */
#define FRAMES_CACHE_BYTES	((size_t)64 << 20)

static void
frames_cache_clear(struct cluster *c)
{
	size_t i;

	for (i = 0; c->f_idx && i < intern_count(c->f_idx); i++)
		free(c->f_text[i]);
	intern_destroy(c->f_idx);
	intern_destroy(c->f_series);
	c->f_series = NULL;
	free(c->f_text);
	free(c->f_len);
	c->f_idx = NULL;
	c->f_text = NULL;
	c->f_len = NULL;
	c->f_cap = c->f_bytes = 0;
}

static void
frames_cache_put(struct cluster *c, const char *h, const char *text, size_t len)
{
	int64_t k;
	int added;

	pthread_mutex_lock(&c->f_lock);
	if (c->f_bytes + len > FRAMES_CACHE_BYTES)
		frames_cache_clear(c);	/* all at once: simple, and rare */
	if (c->f_idx == NULL)
		c->f_idx = intern_create(1024);	/* NULL past the memory budget: not kept */
	if (c->f_idx != NULL && (k = intern_put(c->f_idx, h, DIGEST128_HEX, &added)) >= 0 &&
	    added) {
		size_t cap = c->f_cap;

		c->f_text = xgrow(c->f_text, &cap, (size_t)k + 1, sizeof(*c->f_text));
		c->f_len = xgrow(c->f_len, &c->f_cap, (size_t)k + 1, sizeof(*c->f_len));
		c->f_text[k] = xmalloc(len + 1);
		memcpy(c->f_text[k], text, len);
		c->f_text[k][len] = '\0';
		c->f_len[k] = len;
		c->f_bytes += len;
	}
	pthread_mutex_unlock(&c->f_lock);
}

/*
 * The series whose stacks came with a merge since the cache was last
 * cleared: a merge of only those asks for the few stacks it has not seen,
 * the others bring their frames along (merge_sql()).
 */
static bool
frames_known(struct cluster *c, const struct slist *sel)
{
	size_t i;
	bool yes = true;

	pthread_mutex_lock(&c->f_lock);
	for (i = 0; i < sel->n && yes; i++)
		yes = c->f_series && intern_get(c->f_series, &sel->s[i]->id,
		    sizeof(sel->s[i]->id)) >= 0;
	pthread_mutex_unlock(&c->f_lock);
	return yes;
}

static void
frames_mark(struct cluster *c, const struct slist *sel)
{
	size_t i;

	pthread_mutex_lock(&c->f_lock);
	if (c->f_series == NULL)
		c->f_series = intern_create(64);
	/* Past the memory budget nothing is marked: a later merge asks again. */
	for (i = 0; c->f_series != NULL && i < sel->n; i++)
		intern_put(c->f_series, &sel->s[i]->id, sizeof(sel->s[i]->id), NULL);
	pthread_mutex_unlock(&c->f_lock);
}

/*
 * A row of frames that came with a merge (kind 3 of merge_sql()): kept in
 * the cache when it matches its address (every row is checked, as
 * fetch_frames() does). -EINVAL when the address is not one.
 */
static int
answer_frames(struct cluster *c, const struct tsv *t)
{
	char d[DIGEST128_HEX + 1];

	if (!is_digest(t->f[12], t->len[12]))
		return -EINVAL;
	digest128(t->f[5], t->len[5], d);
	if (memcmp(d, t->f[12], DIGEST128_HEX) != 0) {
		log_warnx("clickhouse: a row of %s.stacks does not match its address %s (its "
		    "frames hash to %s): ignored", c->db, t->f[12], d);
		metrics_add("profilefs_clickhouse_bad_stacks_total", NULL, 1);
		return 0;
	}
	frames_cache_put(c, t->f[12], t->f[5], t->len[5]);
	if (c->st) {
		struct store_kv kv = { t->f[12], DIGEST128_HEX, t->f[5], t->len[5] };

		(void)store_cache_put(c->st, &kv, 1);	/* kept for a restart, at best */
	}
	return 0;
}

/* The rows of the n addresses h from the stacks (local: each shard's own table). */
static int
frames_sql(struct cluster *c, const char **h, size_t n, bool local, struct buf *sql)
{
	size_t j;

	buf_printf(sql, "SELECT DISTINCT hash, frames FROM %s.stacks%s WHERE hash IN (", c->db,
	    local ? "_local" : "");
	for (j = 0; j < n; j++)
		buf_printf(sql, "%s'%.*s'", j ? "," : "", DIGEST128_HEX, h[j]);
	buf_adds(sql, ") FORMAT TabSeparated");
	return buf_error(sql);
}

/*
 * The frames of every stack in all (keyed by address), into frames (parallel
 * to all's indexes). Only a row whose frames have the address it is stored
 * under is used: any other (a forged or damaged row) is logged and skipped.
 */
static int
fetch_frames(struct cluster *c, struct intern *all, char **frames, size_t *flen)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	size_t n = intern_count(all), i, j, nmiss = 0, kcap = 0;
	const char **miss = xcalloc(n + 1, sizeof(*miss));
	int rc = 0, r;

	pthread_mutex_lock(&c->f_lock);
	for (i = 0; i < n; i++) {
		const char *h;
		size_t kl;
		int64_t k;

		h = intern_key(all, i, &kl);
		if (c->f_idx && (k = intern_get(c->f_idx, h, kl)) >= 0) {
			frames[i] = xmalloc(c->f_len[k] + 1);
			memcpy(frames[i], c->f_text[k], c->f_len[k] + 1);
			flen[i] = c->f_len[k];
		} else
			miss[nmiss++] = h;
	}
	pthread_mutex_unlock(&c->f_lock);
	/*
	 * Then the local store's cache: rows checked against their address
	 * when they came from ClickHouse, kept on this host's disk since
	 * (RocksDB's block checksums tell a damaged one).
	 */
	for (i = 0, j = 0; c->st && i < nmiss; i++) {
		char *v;
		size_t vl;
		int64_t k = intern_get(all, miss[i], DIGEST128_HEX);

		if (k < 0 || store_cache_get(c->st, miss[i], DIGEST128_HEX, &v, &vl) < 0) {
			miss[j++] = miss[i];
			continue;
		}
		frames[k] = xreallocarray(v, vl + 1, 1);	/* rocksdb's copy, NUL-terminated */
		frames[k][vl] = '\0';
		flen[k] = vl;
		frames_cache_put(c, miss[i], frames[k], vl);
	}
	if (c->st) {
		metrics_add("profilefs_clickhouse_stacks_read_total", "from=\"disk\"",
		    (double)(nmiss - j));
		nmiss = j;
	}
	metrics_add("profilefs_clickhouse_stacks_read_total", "from=\"clickhouse\"",
	    (double)nmiss);
	for (i = 0; i < nmiss && rc == 0; i += FRAMES_CHUNK) {
		struct store_kv *kv = NULL;
		size_t nkv = 0;
		struct tsv t;

		buf_reset(&sql);
		buf_reset(&ans);
		/*
		 * Every row of an address: one may be forged, another true.
		 * Each shard's own table at once when the URLs are the shards.
		 */
		j = nmiss - i < FRAMES_CHUNK ? nmiss - i : FRAMES_CHUNK;
		if ((rc = frames_sql(c, miss + i, j, true, &sql)) < 0)
			break;
		if ((rc = ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err)) == -EAGAIN) {
			buf_reset(&sql);
			if ((rc = frames_sql(c, miss + i, j, false, &sql)) < 0)
				break;
			rc = ch_exec(c, sql.data, NULL, &ans, &err, NULL);
		}
		if (rc < 0) {
			rc = fail("reading stacks", &err);
			break;
		}
		tsv_init(&t, &ans);
		while ((r = tsv_next(&t)) > 0) {
			char d[DIGEST128_HEX + 1];
			int64_t k;

			if (t.nf != 2 || !is_digest(t.f[0], t.len[0]) ||
			    (k = intern_get(all, t.f[0], DIGEST128_HEX)) < 0) {
				r = -EINVAL;
				break;
			}
			/* Every row is checked: a forged one is told even beside the true one. */
			digest128(t.f[1], t.len[1], d);
			if (memcmp(d, t.f[0], DIGEST128_HEX) != 0) {
				log_warnx("clickhouse: a row of %s.stacks does not match its address "
				    "%s (its frames hash to %s): ignored", c->db, t.f[0], d);
				metrics_add("profilefs_clickhouse_bad_stacks_total", NULL, 1);
				continue;
			}
			if (frames[k] != NULL)
				continue;
			frames[k] = xmalloc(t.len[1] + 1);
			memcpy(frames[k], t.f[1], t.len[1] + 1);
			flen[k] = t.len[1];
			frames_cache_put(c, t.f[0], t.f[1], t.len[1]);
			if (c->st) {
				kv = xgrow(kv, &kcap, nkv + 1, sizeof(*kv));
				kv[nkv].key = intern_key(all, (size_t)k, NULL);
				kv[nkv].klen = DIGEST128_HEX;
				kv[nkv].val = frames[k];
				kv[nkv++].vlen = flen[k];
			}
		}
		tsv_free(&t);
		if (r < 0) {
			log_warnx("clickhouse: reading stacks: a malformed answer");
			rc = -EIO;
		} else if (nkv > 0 && (r = store_cache_put(c->st, kv, nkv)) < 0 && r != -ENOSPC)
			log_warnx("clickhouse: the stacks read could not be kept in the local "
			    "store's cache (the next start asks for them again)");
		free(kv);
		kcap = 0;
	}
	for (i = 0; rc == 0 && i < n; i++)
		if (frames[i] == NULL) {
			log_warnx("clickhouse: a stack of the merge is missing from %s.stacks (or "
			    "no row of it matches its address)", c->db);
			rc = -EIO;
		}
	free(miss);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	return rc;
}

static int
build_merged(const char *hdr, int64_t period, struct series_sums *accs, size_t nacc,
    struct intern *all, char **frames, size_t *flen, struct profile **out)
{
	struct merge *m = merge_create();
	struct codec_memo *cm = codec_memo_create();
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	int64_t v[PROFILE_MAX_SAMPLE_TYPES];
	size_t nt = 0, i, k, t;
	int rc;

	if (m == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = codec_begin(m, hdr, period, &nt, gauge)) < 0) {
		log_warnx("clickhouse: a group's header is malformed");
		rc = -EIO;
		goto out;
	}
	for (i = 0; i < nacc && rc == 0; i++) {
		struct series_sums *a = &accs[i];
		int64_t n = (int64_t)a->count;

		for (k = 0; k < intern_count(a->stacks) && rc == 0; k++) {
			size_t kl;
			const void *key = intern_key(a->stacks, k, &kl);
			int64_t g = intern_get(all, key, kl);

			memcpy(v, (int64_t *)a->vals.data + k * nt, nt * sizeof(int64_t));
			for (t = 0; t < nt; t++) {
				int64_t qq, r, ar;

				if (!gauge[t] || n <= 1)
					continue;
				/* The local store's rounding: half away from zero. */
				qq = v[t] / n;
				r = v[t] % n;
				ar = r < 0 ? -r : r;
				v[t] = ar >= n - ar ? qq + (r < 0 ? -1 : 1) : qq;
			}
			if (g < 0 || (rc = codec_add(m, cm, frames[g], flen[g], v, nt)) == -EINVAL) {
				log_warnx("clickhouse: a stored stack is malformed");
				rc = -EIO;
			}
		}
	}
	if (rc == 0)
		rc = merge_finish(m, false, out);
out:
	codec_memo_free(cm);
	merge_free(m);
	return rc;
}

/* The best group's header restricted to the shared types, in their order. */
static char *
shared_header(const char *hdr, const size_t *keep, size_t nt)
{
	const char *f[3 + 2 * PROFILE_MAX_SAMPLE_TYPES];
	size_t fl[3 + 2 * PROFILE_MAX_SAMPLE_TYPES], nf, k;
	struct buf b = { 0 };

	nf = mgroup_sig_parts(hdr, strlen(hdr), f, fl, sizeof(f) / sizeof(f[0]));
	if (nf < 5 || (nf - 3) % 2 != 0)
		return NULL;
	buf_add(&b, hdr, (size_t)(f[2] + fl[2] - hdr));
	for (k = 0; k < nt; k++) {
		if (3 + 2 * keep[k] + 1 >= nf) {
			buf_free(&b);
			return NULL;
		}
		buf_addc(&b, '\x1f');
		buf_add(&b, f[3 + 2 * keep[k]], fl[3 + 2 * keep[k]]);
		buf_addc(&b, '\x1f');
		buf_add(&b, f[4 + 2 * keep[k]], fl[4 + 2 * keep[k]]);
	}
	buf_addc(&b, '\0');
	if (buf_error(&b)) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

/*
 * A merge's range in the tables that answer it. The sums: each tier of the
 * ladder (the per-series tiers for a selection of label sets, the
 * fleet-wide ones for all of them) covers the part of the range its windows
 * fit in and the next tier's do not ([lo, hi) of level k minus level k + 1),
 * the raw rows cover what is left at the edges. The profiles (counts,
 * totals, ids): the 10-minute counts inside, the raw rows outside.
 */
#define LEVELS_MAX	3
/* Series times seconds read from the raw rows alone (merge_sql()): two series-hours. */
#define RAW_SERIES_S	(2 * 3600)
#define TIME_END_NS	(INT64_C(4102444800) * NS)	/* 2100-01-01 */

struct spans {
	int64_t	from, to;			/* ns */
	size_t	tier[LEVELS_MAX], n;		/* ch_tiers, narrowest first */
	int64_t	lo[LEVELS_MAX], hi[LEVELS_MAX];	/* s; lo == hi: empty */
	int64_t	clo, chi;			/* s, the 10-minute counts' */
};

static void
spans_of(const struct query *q, bool fleet, struct spans *sp)
{
	size_t t, k;

	memset(sp, 0, sizeof(*sp));
	sp->from = q->from < STORE_TIME_MIN ? STORE_TIME_MIN : q->from;
	sp->to = q->to > TIME_END_NS ? TIME_END_NS : q->to;
	if (sp->to < sp->from)
		sp->to = sp->from;
	for (t = 0; t < CH_NTIERS && sp->n < LEVELS_MAX; t++)
		if (ch_tiers[t].labels != fleet)
			sp->tier[sp->n++] = t;
	for (k = 0; k < sp->n; k++) {
		int64_t w = ch_tiers[sp->tier[k]].width;

		if (k == 0) {
			sp->lo[0] = ceil_div(sp->from, w * NS) * w;
			sp->hi[0] = floor_div(sp->to, w * NS) * w;
		} else {
			sp->lo[k] = ceil_div(sp->lo[k - 1], w) * w;
			sp->hi[k] = floor_div(sp->hi[k - 1], w) * w;
		}
		if (sp->lo[k] >= sp->hi[k]) {
			for (; k < sp->n; k++)
				sp->lo[k] = sp->hi[k] = 0;
			break;
		}
	}
	sp->clo = ceil_div(sp->from, WINDOW_NS) * 600;
	sp->chi = floor_div(sp->to, WINDOW_NS) * 600;
	if (sp->clo >= sp->chi)
		sp->clo = sp->chi = 0;
}

/* " AND window in [lo, hi) [or [lo2, hi2)]" with the days, for partition pruning. */
static void
where_windows(struct buf *b, int64_t lo, int64_t hi, int64_t lo2, int64_t hi2)
{
	buf_printf(b, " AND ((window >= toDateTime(%" PRId64 ") AND window < toDateTime(%" PRId64
	    "))", lo, hi);
	if (lo2 < hi2)
		buf_printf(b, " OR (window >= toDateTime(%" PRId64 ") AND window < toDateTime(%"
		    PRId64 "))", lo2, hi2);
	buf_printf(b, ") AND date >= toDate(toDateTime(%" PRId64 ")) AND date <= "
	    "toDate(toDateTime(%" PRId64 "))", lo, (lo2 < hi2 ? hi2 : hi) - 1);
}

/* The raw rows of the range outside [lo, hi) (s). */
static void
where_raw(struct buf *b, const struct spans *sp, int64_t lo, int64_t hi)
{
	where_range(b, sp->from, sp->to);
	if (lo < hi)
		buf_printf(b, " AND NOT (ns >= %" PRId64 " AND ns < %" PRId64 ")", lo * NS, hi * NS);
}

/*
 * The series of q's selection by the listing kept for this generation (the
 * one the lookups of the same read saw), as literals of the sort key's
 * prefix: service = ... AND type = ... AND labels IN (...), or the three
 * as tuples when service or type is open. 1: written, the series into
 * sel (optional; its s freed by the caller); 0: the listing is not fresh,
 * too many series match, or one of them has labels it could not parse
 * (ClickHouse evaluates the selection then).
 */
#define KNOWN_MAX	256

static int
where_known(struct cluster *c, const struct query *q, struct buf *b, size_t *nknown,
    struct slist *sel)
{
	struct slist l = { 0 };
	size_t i, n = 0;
	int rc = 0;

	if (!series_cached(c, q->service, q->type, &l, false))
		goto out;
	for (i = 0; i < l.n; i++) {
		const struct series *s = l.s[i];

		if (s->labels[0] && s->ls.n == 0)
			goto out;	/* not parsed: query_match() cannot say */
		if (!query_match(q, s))
			continue;
		if (++n > KNOWN_MAX)
			goto out;
		l.s[n - 1] = s;
	}
	*nknown = n;
	if (n == 0) {
		buf_adds(b, "0");
		rc = 1;
		goto out;
	}
	if (q->service && q->type) {
		/* The plainest form for the index: equalities, then one column's set. */
		buf_adds(b, "service = ");
		ch_quote(b, q->service);
		buf_adds(b, " AND type = ");
		ch_quote(b, q->type);
		buf_adds(b, " AND labels IN (");
		for (i = 0; i < n; i++) {
			buf_adds(b, i ? ", " : "");
			ch_quote(b, l.s[i]->labels);
		}
		buf_addc(b, ')');
	} else {
		buf_adds(b, "(service, type, labels) IN (");
		for (i = 0; i < n; i++) {
			buf_adds(b, i ? ", (" : "(");
			ch_quote(b, l.s[i]->service);
			buf_adds(b, ", ");
			ch_quote(b, l.s[i]->type);
			buf_adds(b, ", ");
			ch_quote(b, l.s[i]->labels);
			buf_addc(b, ')');
		}
		buf_addc(b, ')');
	}
	rc = buf_error(b) < 0 ? buf_error(b) : 1;
out:
	if (rc == 1 && sel) {
		sel->s = l.s;
		sel->n = n;
		l.s = NULL;
	}
	free(l.s);
	return rc;
}

/*
 * The selection of q for the big tables: service and type as they are (the
 * sort key's prefix); the labels by the listing kept for the generation
 * (where_known()), else through the small series table of the same shard
 * (matchers evaluated once per series, not once per row). *nknown
 * (optional): how many series the listing says it selects, SIZE_MAX when
 * it was not asked; sel (optional): which, then.
 */
static int
where_selected(struct cluster *c, const struct query *q, struct buf *b, size_t *nknown,
    struct slist *sel)
{
	struct buf all = { 0 };
	size_t nk = SIZE_MAX;
	int rc;

	if (nknown)
		*nknown = SIZE_MAX;
	if ((!q->sel || q->sel->n == 0) && (!q->match || q->match->n == 0))
		return read_where(q, b);
	if ((rc = where_known(c, q, b, &nk, sel)) != 0) {
		if (nknown && rc > 0)
			*nknown = nk;
		return rc < 0 ? rc : 0;
	}
	if ((rc = read_where(q, &all)) < 0) {
		buf_free(&all);
		return rc;
	}
	buf_adds(b, "1");
	if (q->service) {
		buf_adds(b, " AND service = ");
		ch_quote(b, q->service);
	}
	if (q->type) {
		buf_adds(b, " AND type = ");
		ch_quote(b, q->type);
	}
	buf_printf(b, " AND (service, type, labels) IN (SELECT service, type, labels FROM "
	    "%s.series_local WHERE %s GROUP BY service, type, labels)", c->db, all.data);
	buf_free(&all);
	return buf_error(b);
}

#define K_EMPTY		"toInt64(0), toInt64(0), toUInt64(0), "
#define K_NOARRAYS	"emptyArrayUInt8(), emptyArrayInt64()"
#define K_TOTALS	"tupleElement(sumMap(totalsMap.vi, totalsMap.value), 1), " \
	"tupleElement(sumMap(totalsMap.vi, totalsMap.value), 2)"
#define K_RAWTOTALS	"tupleElement(sumMap(arrayMap(x -> toUInt8(x - 1), " \
	"arrayEnumerate(totals)), totals), 1), tupleElement(sumMap(arrayMap(x -> toUInt8(x - 1), " \
	"arrayEnumerate(totals)), totals), 2)"
#define K_SUMS		"SELECT toUInt8(0), '', '', '', '', '', toInt64(vi), sv, toInt64(0), " \
	"gsid, sigh, toUInt64(0), toString(stack), " K_NOARRAYS " FROM (SELECT "

/*
 * The one query of a merge, its rows of four kinds in the columns: kind,
 * service, type, labels, sig, hdr, a, b, c, u1, u2, u3, stack, totals'
 * indexes, totals.
 *   0 a sum: a value index, b value, u1 gauge series, u2 signature digest,
 *     stack (per tier, aggregated on the shards);
 *   1 profiles of a series, a signature and a 10-minute window (or a
 *     minute at the edges): a time, b count, c the offsets' sum, u1 the
 *     gids' sum, u2 signature digest, u3 series hash, totals;
 *   2 a series and signature in the range: the strings, a period, u2, u3;
 *   3 a stack's frames (in hdr) and address (stack);
 *   4 kinds 1 and 2 in one row, the period (as text) in stack: the raw
 *     rows of a merge of raw rows alone, read once instead of twice.
 */
static int
merge_sql(struct cluster *c, const char *cond, const struct spans *sp, bool frames,
    bool local, struct buf *sql)
{
	struct buf span = { 0 }, raw = { 0 };
	const char *sfx = local ? "_local" : "";
	size_t k;
	int rc;

	where_raw(&raw, sp, sp->clo, sp->chi);
	if (sp->clo < sp->chi) {
		where_windows(&span, sp->clo, sp->chi, 0, 0);
		buf_printf(sql, "SELECT toUInt8(1), '', '', '', '', '', "
		    "toInt64(toUInt32(window)) * 1000000000, sum(profiles) AS n, sum(offs), "
		    "sum(gids), sigh, cityHash64(service, type, labels), '', " K_TOTALS
		    " FROM %1$s.counts10%4$s PREWHERE %2$s%3$s GROUP BY service, type, labels, window, sigh "
		    "HAVING n > 0 UNION ALL "
		    "SELECT toUInt8(2), service, type, labels, sig, hdr, max(period), " K_EMPTY
		    "sigh, cityHash64(service, type, labels), '', " K_NOARRAYS " FROM "
		    "%1$s.counts10%4$s PREWHERE %2$s%3$s GROUP BY service, type, labels, sig, sigh, hdr "
		    "HAVING sum(profiles) > 0 UNION ALL ", c->db, cond, span.data, sfx);
	}
	if (sp->clo == sp->chi && (sp->n == 0 || sp->lo[0] == sp->hi[0]))
		buf_printf(sql, "SELECT toUInt8(4), service, type, labels, any(sig), any(hdr), "
		    "intDiv(ns, 60000000000) * 60000000000 AS m, toInt64(count()), sum(ns - m), "
		    "sum(gid), sigh, cityHash64(service, type, labels), toString(max(period)), "
		    K_RAWTOTALS " FROM %1$s.profiles%4$s PREWHERE %2$s%3$s GROUP BY service, type, "
		    "labels, m, sigh", c->db, cond, raw.data, sfx);
	else
		buf_printf(sql, "SELECT toUInt8(1), '', '', '', '', '', intDiv(ns, 60000000000) * "
		    "60000000000 AS m, toInt64(count()), sum(ns - m), sum(gid), sigh, "
		    "cityHash64(service, type, labels), '', " K_RAWTOTALS " FROM %1$s.profiles%4$s "
		    "PREWHERE %2$s%3$s GROUP BY service, type, labels, m, sigh UNION ALL "
		    "SELECT toUInt8(2), service, type, labels, sig, hdr, max(period), " K_EMPTY
		    "sigh, cityHash64(service, type, labels), '', " K_NOARRAYS " FROM "
		    "%1$s.profiles%4$s PREWHERE %2$s%3$s GROUP BY service, type, labels, sig, sigh, hdr",
		    c->db, cond, raw.data, sfx);
	/*
	 * The sums: the raw rows outside the narrowest tier (PREWHERE: the
	 * rows are chosen before ARRAY JOIN, not after), then each tier.
	 */
	buf_reset(&raw);
	where_raw(&raw, sp, sp->lo[0], sp->hi[0]);
	buf_printf(sql, " UNION ALL " K_SUMS CH_SAMPLE_COLS("sum(val) AS sv") " FROM "
	    "%s.profiles%s " CH_ARRAY_JOIN " PREWHERE %s%s GROUP BY gsid, sigh, stack, vi)", c->db,
	    sfx, cond, raw.data);
	for (k = 0; k < sp->n && sp->lo[k] < sp->hi[k]; k++) {
		bool top = k + 1 == sp->n || sp->lo[k + 1] == sp->hi[k + 1];

		buf_reset(&span);
		if (top)
			where_windows(&span, sp->lo[k], sp->hi[k], 0, 0);
		else if (sp->lo[k] < sp->lo[k + 1] || sp->hi[k + 1] < sp->hi[k])
			where_windows(&span, sp->lo[k], sp->lo[k + 1], sp->hi[k + 1], sp->hi[k]);
		else
			continue;	/* the next tier covers it all */
		buf_printf(sql, " UNION ALL " K_SUMS "gsid, sigh, stack, vi, sum(value) AS sv "
		    "FROM %s.%s%s PREWHERE %s%s GROUP BY gsid, sigh, stack, vi)", c->db,
		    ch_tiers[sp->tier[k]].name, sfx, cond, span.data);
	}
	if (frames) {
		/* The raw rows' stacks, gathered once and sent to the stacks' shards. */
		buf_reset(&raw);
		where_raw(&raw, sp, 0, 0);
		buf_printf(sql, " UNION ALL SELECT toUInt8(3), '', '', '', '', frames, "
		    "toInt64(0), " K_EMPTY "toUInt64(0), toUInt64(0), toString(hash), " K_NOARRAYS
		    " FROM "
		    "(SELECT DISTINCT hash, frames FROM %1$s.stacks%4$s WHERE hash %5$sIN "
		    "(SELECT arrayJoin(stacks) FROM %1$s.profiles%4$s PREWHERE %2$s%3$s))", c->db,
		    cond, raw.data, sfx, local ? "" : "GLOBAL ");
	}
	buf_adds(sql, " FORMAT TabSeparated");
	rc = buf_error(sql);
	buf_free(&span);
	buf_free(&raw);
	return rc;
}

/*
 * The rows of a merge of raw rows alone, each profile's as it is stored, in
 * RowBinary (answer_raw() reads them): service, type, labels, sig, hdr, ns,
 * gid, sigh, the series hash, period, totals, ntypes, gauges, stacks, vals.
 * The sums (kind 0) and the refs and groups (kinds 1 and 2) are made of them
 * here.
 */
static int
raw_sql(struct cluster *c, const char *cond, const struct spans *sp, bool local,
    struct buf *sql)
{
	struct buf raw = { 0 };
	int rc;

	where_raw(&raw, sp, 0, 0);
	buf_printf(sql, "SELECT service, type, labels, sig, hdr, ns, gid, sigh, "
	    "cityHash64(service, type, labels), period, totals, ntypes, gauges, stacks, vals "
	    "FROM %s.profiles%s PREWHERE %s%s FORMAT RowBinary", c->db, local ? "_local" : "",
	    cond, raw.data);
	rc = buf_error(&raw) ? buf_error(&raw) : buf_error(sql);
	buf_free(&raw);
	return rc;
}

/* A merge's query: sums made in ClickHouse (with the frames of the raw rows' stacks), or the rows. */
enum merge_kind { SUMS, FRAMES, RAW_ROWS };
/* The bytes of raw rows asked at most: past them, the sums are asked. */
#define RAW_MAX_ANSWER	((size_t)8 << 20)

/*
 * Ask the merge's query of kind k into ans: each shard's own tables at
 * once when the URLs are the shards, else the Distributed ones. -EFBIG:
 * raw rows over RAW_MAX_ANSWER (nothing logged).
 */
static int
merge_query(struct cluster *c, const char *cond, const struct spans *sp, enum merge_kind k,
    struct buf *ans, struct buf *err)
{
	struct buf sql = { 0 };
	size_t max = k == RAW_ROWS ? RAW_MAX_ANSWER : CH_MAX_ANSWER;
	int rc;

	rc = k == RAW_ROWS ? raw_sql(c, cond, sp, true, &sql) :
	    merge_sql(c, cond, sp, k == FRAMES, true, &sql);
	if (rc == 0 && (rc = ch_scatter(c, sql.data, max, ans, err)) == -EAGAIN) {
		buf_reset(&sql);
		rc = k == RAW_ROWS ? raw_sql(c, cond, sp, false, &sql) :
		    merge_sql(c, cond, sp, k == FRAMES, false, &sql);
		if (rc == 0)
			rc = ch_read(c, sql.data, max, ans, err);
	}
	buf_free(&sql);
	return rc;
}

/*
 * Profiles of a series, a signature and a window (or one profile) of the
 * answer. Rows of one key from several shards are added up (answer_resolve())
 * before time and id are told: until then time is the window's start, id
 * the sum of the gids and offs the sum of the offsets into the window.
 */
struct mref {
	uint64_t	sid, sigh;
	size_t		g;		/* its group */
	int64_t		time;
	uint64_t	id;		/* 0 for several */
	int64_t		n;		/* profiles */
	int64_t		offs;
	size_t		at;		/* its totals in the answer's, SIZE_MAX: none */
	const struct series *s;
};

/* A sum of the answer, kept until the groups are chosen. */
struct msum {
	uint64_t	gsid, sigh;
	int64_t		value;
	uint64_t	vi;
	char		stack[DIGEST128_HEX];
};

/* A group of the answer: its signature (owned), digest, header and period. */
struct mgrp {
	char		*sig, *hdr;
	uint64_t	 sigh;
	int64_t		 period;
	size_t		 ntypes;
};

struct manswer {
	struct mref	*refs;
	size_t		 nrefs, refcap;
	struct buf	 sums;		/* struct msum */
	struct mgrp	*grps;
	struct mgroup	*groups;	/* parallel to grps */
	size_t		 ng;
	struct intern	*sids;		/* series hash -> index of ser */
	const struct series **ser;
	size_t		 sercap;
	struct buf	 tk, tv;	/* int64_t: the totals of the refs, as answered */
	struct intern	*sum_idx;	/* raw rows: struct msum's key -> its index in sums, */
	size_t		 sum_base;	/* ... from this one on */
	struct buf	 totals;	/* int64_t, per ref in its group's types */
};

static void
manswer_free(struct manswer *a)
{
	size_t i;

	for (i = 0; i < a->ng; i++) {
		free(a->grps[i].sig);
		free(a->grps[i].hdr);
	}
	free(a->grps);
	free(a->groups);
	free(a->refs);
	free(a->ser);
	intern_destroy(a->sids);
	intern_destroy(a->sum_idx);
	buf_free(&a->sums);
	buf_free(&a->tk);
	buf_free(&a->tv);
	buf_free(&a->totals);
}

static size_t
header_types(const char *hdr)
{
	const char *f[3 + 2 * PROFILE_MAX_SAMPLE_TYPES];
	size_t fl[3 + 2 * PROFILE_MAX_SAMPLE_TYPES], nf;

	nf = mgroup_sig_parts(hdr, strlen(hdr), f, fl, sizeof(f) / sizeof(f[0]));
	return nf < 5 || (nf - 3) % 2 != 0 ? 0 : (nf - 3) / 2;
}

/* Ref r, its nk totals appended to tk and tv from byte k0 on (kept until its group is known). */
static int
ref_add(struct manswer *a, struct mref *r, size_t k0, size_t nk)
{
	r->at = k0 / sizeof(int64_t);	/* into tk and tv until resolved */
	r->g = nk;			/* their count, likewise */
	if (a->nrefs == a->refcap)
		a->refs = xgrow(a->refs, &a->refcap, a->nrefs + 1, sizeof(*a->refs));
	a->refs[a->nrefs++] = *r;
	return 0;
}

/* A row of kind 1. */
static int
answer_ref(struct manswer *a, struct tsv *t)
{
	struct mref r;
	int64_t offs;
	size_t nk = 0, nv = 0, k0 = a->tk.len;

	memset(&r, 0, sizeof(r));
	if (tsv_i64(t->f[6], &r.time) < 0 || tsv_i64(t->f[7], &r.n) < 0 ||
	    tsv_i64(t->f[8], &offs) < 0 || tsv_u64(t->f[9], &r.id) < 0 ||
	    tsv_u64(t->f[10], &r.sigh) < 0 || tsv_u64(t->f[11], &r.sid) < 0 || r.n <= 0 ||
	    tsv_nums(t->f[13], &a->tk, &nk, PROFILE_MAX_SAMPLE_TYPES, true) < 0 ||
	    tsv_nums(t->f[14], &a->tv, &nv, PROFILE_MAX_SAMPLE_TYPES, false) < 0 || nk != nv)
		return -EINVAL;
	r.offs = offs;
	return ref_add(a, &r, k0, nk);
}

/* A series and a group: str: service, type, labels, sig, hdr. */
static int
group_add(struct cluster *c, struct manswer *a, const char *const *str, int64_t period,
    uint64_t sigh, uint64_t sid)
{
	const struct series *s;
	int64_t k;
	size_t g;
	int added;

	if ((s = intern_series(c, str[0], str[1], str[2])) == NULL ||
	    (k = intern_put(a->sids, &sid, sizeof(sid), &added)) < 0)
		return -ENOMEM;
	if (added) {
		a->ser = xgrow(a->ser, &a->sercap, (size_t)k + 1, sizeof(*a->ser));
		a->ser[k] = s;
		series_seen(c, s);
	}
	for (g = 0; g < a->ng && a->grps[g].sigh != sigh; g++)
		;
	if (g == a->ng) {
		size_t nt = header_types(str[4]);

		if (nt == 0)
			return -EINVAL;
		a->grps = xreallocarray(a->grps, a->ng + 1, sizeof(*a->grps));
		a->groups = xreallocarray(a->groups, a->ng + 1, sizeof(*a->groups));
		memset(&a->grps[g], 0, sizeof(a->grps[g]));
		memset(&a->groups[g], 0, sizeof(a->groups[g]));
		a->grps[g].sig = xstrdup(str[3]);
		a->grps[g].hdr = xstrdup(str[4]);
		a->grps[g].sigh = sigh;
		a->grps[g].ntypes = nt;
		a->groups[g].sig = a->grps[g].sig;
		a->groups[g].siglen = strlen(a->grps[g].sig);
		a->ng++;
	} else if (strcmp(a->grps[g].sig, str[3]) != 0)
		return -EINVAL;	/* two signatures of one digest */
	if (period > a->grps[g].period)
		a->grps[g].period = period;
	return 0;
}

/* A row of kind 2 (or 4): a series and a group, its period in field pf. */
static int
answer_group(struct cluster *c, struct manswer *a, struct tsv *t, size_t pf)
{
	int64_t period;
	uint64_t sid, sigh;

	if (tsv_i64(t->f[pf], &period) < 0 || tsv_u64(t->f[10], &sigh) < 0 ||
	    tsv_u64(t->f[11], &sid) < 0)
		return -EINVAL;
	return group_add(c, a, (const char *const *)t->f + 1, period, sigh, sid);
}

static int
answer_sum(struct manswer *a, struct tsv *t)
{
	struct msum s;
	int64_t vi;

	memset(&s, 0, sizeof(s));
	if (tsv_i64(t->f[6], &vi) < 0 || vi < 0 || tsv_i64(t->f[7], &s.value) < 0 ||
	    tsv_u64(t->f[9], &s.gsid) < 0 || tsv_u64(t->f[10], &s.sigh) < 0 ||
	    !is_digest(t->f[12], t->len[12]))
		return -EINVAL;
	s.vi = (uint64_t)vi;
	memcpy(s.stack, t->f[12], DIGEST128_HEX);
	return buf_add(&a->sums, &s, sizeof(s));
}

static int
mref_key_cmp(const void *x, const void *y)
{
	const struct mref *a = x, *b = y;

	if (a->sid != b->sid)
		return a->sid < b->sid ? -1 : 1;
	if (a->sigh != b->sigh)
		return a->sigh < b->sigh ? -1 : 1;
	return (a->time > b->time) - (a->time < b->time);
}

/*
 * n values of a raw row (ntypes per sample, each with its stack's address)
 * into the sums, as kind 0 has them: per gauge series (or none), signature,
 * value index and stack.
 */
static int
samples_add(struct manswer *a, uint8_t ntypes, uint64_t gauges, uint64_t sigh, uint64_t sid,
    const unsigned char *stacks, const unsigned char *vals, size_t n)
{
	size_t k;

	if (a->sum_idx == NULL) {
		if ((a->sum_idx = intern_create(1024)) == NULL)
			return -ENOMEM;
		a->sum_base = a->sums.len / sizeof(struct msum);
	}
	for (k = 0; k < n; k++) {
		const char *st = (const char *)stacks + k * DIGEST128_HEX;
		struct msum m;
		int64_t i;
		int added;

		/* An address becomes SQL (fetch_frames()): hex digits only. */
		if (!is_digest(st, DIGEST128_HEX))
			return -EINVAL;
		memset(&m, 0, sizeof(m));
		m.vi = k % ntypes;
		m.gsid = m.vi < 64 && (gauges >> m.vi & 1) ? sid : 0;
		m.sigh = sigh;
		memcpy(m.stack, st, DIGEST128_HEX);
		/* The key: all but the value, which is 0 in m. */
		if ((i = intern_put(a->sum_idx, &m, sizeof(m), &added)) < 0)
			return -ENOMEM;
		if (added && buf_add(&a->sums, &m, sizeof(m)) < 0)
			return -ENOMEM;
		((struct msum *)a->sums.data)[a->sum_base + (size_t)i].value +=
		    (int64_t)rb_le64(vals + k * 8);
	}
	return 0;
}

/*
 * The answer of raw_sql(): each profile's row becomes a group (kind 2), a
 * ref of its own minute with a count of 1 (kind 1) and its samples summed
 * by stack (kind 0). -EINVAL for a row cut short or out of bounds.
 */
static int
answer_raw(struct cluster *c, struct manswer *a, const struct buf *ans)
{
	struct rowbin r;
	struct raw_row row;
	struct buf strs = { 0 };
	int rc = 0, more;

	rb_init(&r, ans);
	while (rc == 0 && (more = raw_row_next(&r, &row)) != 0) {
		const char *str[5];
		size_t off[5], k, k0;
		struct mref ref;

		/* Times a store keeps: no arithmetic on them overflows. */
		if (more < 0 || row.ns < STORE_TIME_MIN || row.ns > TIME_END_NS) {
			rc = -EINVAL;
			break;
		}
		buf_reset(&strs);
		for (k = 0; k < 5; k++) {
			off[k] = strs.len;
			buf_add(&strs, row.str[k], row.len[k]);
			buf_addc(&strs, '\0');
		}
		if ((rc = buf_error(&strs)) < 0)
			break;
		for (k = 0; k < 5; k++)
			str[k] = strs.data + off[k];
		if ((rc = group_add(c, a, str, row.period, row.sigh, row.sid)) < 0)
			break;
		k0 = a->tk.len;
		for (k = 0; k < row.ntotals; k++) {
			int64_t i = (int64_t)k, v = (int64_t)rb_le64(row.totals + k * 8);

			buf_add(&a->tk, &i, sizeof(i));
			buf_add(&a->tv, &v, sizeof(v));
		}
		if ((rc = buf_error(&a->tk) ? buf_error(&a->tk) : buf_error(&a->tv)) < 0)
			break;
		memset(&ref, 0, sizeof(ref));
		ref.time = floor_div(row.ns, 60 * NS) * 60 * NS;
		ref.n = 1;
		ref.offs = row.ns - ref.time;
		ref.id = row.gid;
		ref.sigh = row.sigh;
		ref.sid = row.sid;
		if ((rc = ref_add(a, &ref, k0, row.ntotals)) == 0)
			rc = samples_add(a, row.ntypes, row.gauges, row.sigh, row.sid, row.stacks,
			    row.vals, row.nvals);
	}
	buf_free(&strs);
	return rc;
}

/*
 * Each ref's series and group, its totals in its group's types, the groups'
 * counts; the rows of one series, signature and window that shards answered
 * apart added up into one, then its time and id told (one profile exactly:
 * its gid and time are the sums). -EINVAL for a ref of a series or group
 * the answer does not name.
 */
static int
answer_resolve(struct manswer *a)
{
	const int64_t *tk = (const int64_t *)a->tk.data, *tv = (const int64_t *)a->tv.data;
	size_t i, j, g, nk, k0, n;
	int64_t si;

	for (i = 0; i < a->nrefs; i++) {
		struct mref *r = &a->refs[i];

		nk = r->g;
		k0 = r->at;
		for (g = 0; g < a->ng && a->grps[g].sigh != r->sigh; g++)
			;
		if (g == a->ng || (si = intern_get(a->sids, &r->sid, sizeof(r->sid))) < 0)
			return -EINVAL;
		r->s = a->ser[si];
		r->g = g;
		r->at = a->totals.len / sizeof(int64_t);
		for (j = 0; j < a->grps[g].ntypes; j++) {
			int64_t v = 0;
			size_t x;

			for (x = k0; x < k0 + nk; x++)
				if (tk[x] == (int64_t)j)
					v += tv[x];
			buf_add(&a->totals, &v, sizeof(v));
		}
	}
	if (buf_error(&a->totals))
		return buf_error(&a->totals);
	if (a->nrefs > 1)
		qsort(a->refs, a->nrefs, sizeof(*a->refs), mref_key_cmp);
	for (i = n = 0; i < a->nrefs; i++) {
		struct mref *r = &a->refs[i], *to = n ? &a->refs[n - 1] : NULL;

		if (to && mref_key_cmp(to, r) == 0) {
			int64_t *tt = (int64_t *)a->totals.data;

			to->n += r->n;
			to->id += r->id;	/* wrapping, as ClickHouse's sum */
			to->offs += r->offs;
			for (j = 0; j < a->grps[r->g].ntypes; j++)
				tt[to->at + j] += tt[r->at + j];
			continue;
		}
		a->refs[n++] = *r;
	}
	a->nrefs = n;
	for (i = 0; i < a->nrefs; i++) {
		struct mref *r = &a->refs[i];

		a->groups[r->g].count += (uint64_t)r->n;
		r->time += r->n == 1 ? r->offs : r->offs / r->n;
		if (r->n > 1)
			r->id = 0;
	}
	return 0;
}

static int
mref_cmp(const void *x, const void *y)
{
	const struct mref *a = x, *b = y;

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return (a->sid > b->sid) - (a->sid < b->sid);
}

/* The sums of the merged groups, per (gauge series or none, group), in accs. */
static int
answer_accs(struct manswer *a, size_t ntypes, struct series_sums **accs, size_t *nacc,
    struct intern *all)
{
	const struct msum *s = (const struct msum *)a->sums.data;
	size_t n = a->sums.len / sizeof(*s), i, g, j;

	for (i = 0; i < n; i++) {
		const struct series *ser = NULL;
		struct series_sums *acc;
		int64_t k, si;
		int added;

		for (g = 0; g < a->ng && a->grps[g].sigh != s[i].sigh; g++)
			;
		if (g == a->ng || !a->groups[g].inc)
			continue;	/* no profile of it in the range, or left out */
		for (j = 0; j < ntypes && a->groups[g].keep[j] != s[i].vi; j++)
			;
		if (j == ntypes)
			continue;	/* a type not shared by every merged group */
		if (s[i].gsid) {
			if ((si = intern_get(a->sids, &s[i].gsid, sizeof(s[i].gsid))) < 0)
				continue;	/* no profile of its series in the range */
			ser = a->ser[si];
		}
		acc = series_sums_of(accs, nacc, ser, g);
		if ((k = intern_put(acc->stacks, s[i].stack, DIGEST128_HEX, &added)) < 0 ||
		    intern_put(all, s[i].stack, DIGEST128_HEX, NULL) < 0)
			return -ENOMEM;
		if (added && buf_reserve(&acc->vals, ntypes * sizeof(int64_t)) == 0) {
			memset(acc->vals.data + acc->vals.len, 0, ntypes * sizeof(int64_t));
			acc->vals.len += ntypes * sizeof(int64_t);
		}
		if (buf_error(&acc->vals))
			return -ENOMEM;
		((int64_t *)acc->vals.data)[(size_t)k * ntypes + j] += s[i].value;
	}
	return 0;
}

static int
r_merge(void *arg, const struct query *q, struct query_result *res)
{
	struct cluster *c = arg;
	struct manswer a = { 0 };
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 }, cond = { 0 };
	struct series_sums *accs = NULL;
	struct intern *all = NULL;
	struct slist sel = { 0 };
	bool fold = false, raw = false;
	char **frames = NULL, *shdr = NULL;
	struct mgroup_shared sh;
	struct spans sp;
	struct tsv t;
	size_t *flen = NULL, *grp = NULL, *at = NULL;
	size_t nacc = 0, i, best, nknown;
	uint64_t nmerged = 0;
	int64_t period = 0;
	int rc, r;

	memset(res, 0, sizeof(*res));
	atomic_store(&c->read_at, clock_mono_ns());
	spans_of(q, (!q->sel || q->sel->n == 0) && (!q->match || q->match->n == 0), &sp);
	if ((rc = where_selected(c, q, &cond, &nknown, &sel)) < 0)
		goto out;
	/*
	 * A few series over a short range: their raw rows alone. ClickHouse's
	 * cost of a small merge is in preparing each part of the query, not in
	 * reading the rows: the rows themselves (one part, no GROUP BY) are
	 * summed here, unless their answer is over RAW_MAX_ANSWER; then three
	 * parts summed there, with the frames of stacks (unless these series
	 * were merged before) in the same answer, one round trip instead of two.
	 */
	if (nknown != SIZE_MAX && (sp.to - sp.from) / NS * (int64_t)nknown <= RAW_SERIES_S) {
		memset(sp.lo, 0, sizeof(sp.lo));
		memset(sp.hi, 0, sizeof(sp.hi));
		sp.clo = sp.chi = 0;
		if ((rc = merge_query(c, cond.data, &sp, RAW_ROWS, &ans, &err)) != -EFBIG) {
			raw = true;
			goto asked;
		}
		buf_reset(&ans);
		buf_reset(&err);
		fold = nknown > 0 && !frames_known(c, &sel);
	}
	rc = merge_query(c, cond.data, &sp, fold ? FRAMES : SUMS, &ans, &err);
asked:
	if (rc < 0) {
		rc = fail("merging", &err);
		goto out;
	}
	if ((a.sids = intern_create(256)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	tsv_init(&t, &ans);
	r = raw ? answer_raw(c, &a, &ans) : 0;
	while (!raw && (r = tsv_next(&t)) > 0) {
		if ((rc = cancel_check(q->cancel)) < 0)
			break;
		if (t.f[0][0] < '0' || t.f[0][0] > '4' || t.f[0][1] || t.nf != 15) {
			r = -EINVAL;
			break;
		}
		switch (t.f[0][0]) {
		case '0': r = answer_sum(&a, &t); break;
		case '1': r = answer_ref(&a, &t); break;
		case '2': r = answer_group(c, &a, &t, 6); break;
		case '3': r = answer_frames(c, &t); break;
		default:
			if ((r = answer_group(c, &a, &t, 12)) == 0)
				r = answer_ref(&a, &t);
		}
		if (r < 0)
			break;
	}
	tsv_free(&t);
	buf_free(&ans);
	if (rc < 0)
		goto out;	/* past --query-cpu-limit, or its client gone */
	if (r < 0 || (r = answer_resolve(&a)) < 0) {
		log_warnx("clickhouse: merging: a malformed answer");
		rc = r == -ENOMEM ? r : -EIO;
		goto out;
	}
	if (fold)
		frames_mark(c, &sel);
	if (a.nrefs == 0)
		goto out;
	best = mgroup_choose(a.groups, a.ng, &sh);
	for (i = 0; i < a.ng; i++)
		if (a.groups[i].inc) {
			nmerged += a.groups[i].count;
			if (a.grps[i].period > period)
				period = a.grps[i].period;
		}
	/* Time order, as every reader lists; the left-out profiles told by id. */
	qsort(a.refs, a.nrefs, sizeof(*a.refs), mref_cmp);
	res->refs = xcalloc(a.nrefs, sizeof(*res->refs));
	grp = xcalloc(a.nrefs + 1, sizeof(*grp));
	at = xcalloc(a.nrefs + 1, sizeof(*at));
	for (i = 0; i < a.nrefs; i++) {
		const struct mref *m = &a.refs[i];
		struct store_ref *ref = &res->refs[i];
		char why[320];

		ref->id = m->id;
		ref->series = m->s->id;
		ref->time = m->time;
		ref->summary = m->id ? 0 : (uint64_t)m->n;
		snprintf(ref->type, sizeof(ref->type), "%s", m->s->type);
		add_series_id(res, m->s->id);
		grp[i] = m->g;
		at[i] = m->at;
		res->nrefs = i + 1;
		if (a.groups[m->g].inc) {
			series_sums_of(&accs, &nacc, m->s, m->g)->count += (uint64_t)m->n;
			continue;
		}
		if (!m->id) {
			at[i] = SIZE_MAX;	/* no id to list; out of the timeline too */
			continue;
		}
		mgroup_why(&a.groups[m->g], &sh, why, sizeof(why));
		if ((rc = query_skip_add(res, m->id, why)) < 0)
			goto out;
	}
	if ((shdr = shared_header(a.grps[best].hdr, a.groups[best].keep, sh.n - 1)) == NULL) {
		log_warnx("clickhouse: a group's header is malformed");
		rc = -EIO;
		goto out;
	}
	all = intern_create(1024);
	if ((rc = answer_accs(&a, sh.n - 1, &accs, &nacc, all)) < 0)
		goto out;
	frames = xcalloc(intern_count(all) + 1, sizeof(*frames));
	flen = xcalloc(intern_count(all) + 1, sizeof(*flen));
	if ((rc = cancel_check(q->cancel)) < 0 || (rc = fetch_frames(c, all, frames, flen)) < 0 ||
	    (rc = cancel_check(q->cancel)) < 0)
		goto out;
	if ((rc = build_merged(shdr, period, accs, nacc, all, frames, flen, &res->merged)) < 0)
		goto out;
	if ((rc = mgroup_totals(a.groups, &sh, grp, at, res->nrefs, &a.totals)) < 0)
		goto out;
	res->nmerged = (size_t)nmerged;
	res->totals = (int64_t *)buf_steal(&a.totals, NULL);
	res->totals_at = at;
	at = NULL;
out:
	for (i = 0; frames && i < intern_count(all); i++)
		free(frames[i]);
	free(frames);
	free(flen);
	for (i = 0; i < nacc; i++) {
		intern_destroy(accs[i].stacks);
		buf_free(&accs[i].vals);
	}
	free(accs);
	intern_destroy(all);
	free(sel.s);
	free(grp);
	free(at);
	free(shdr);
	manswer_free(&a);
	buf_free(&cond);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	if (rc < 0)
		query_result_free(res);
	return rc;
}

/*
 * A merge of span samples (q->spans): the rows of spans_local that the
 * selection, the range and the span or trace ids select, summed per stack
 * address on the shards, then built as every merge is, from the frames of
 * those stacks. The sample types (hdr) most stacks share are merged; the
 * profiles of other types are listed as left out. The profiles are listed
 * with the totals of their samples of those spans, as the local store does.
 * Each step checks q->cancel, as the store's span reads do: a read past
 * --query-cpu-limit (its client gone) stops with its -ETIMEDOUT
 * (-ECONNRESET), which the API answers with 503 (499).
 */
#define SPAN_REFS_MAX	100000

static int
span_where(const struct span_sel *sp, struct buf *b)
{
	size_t i;

	buf_adds(b, "(0");
	if (sp->nids) {
		buf_adds(b, " OR span IN (");
		for (i = 0; i < sp->nids; i++)
			buf_printf(b, "%s%" PRIu64, i ? ", " : "", sp->ids[i]);
		buf_addc(b, ')');
	}
	if (sp->ntraces) {
		buf_adds(b, " OR trace IN (");
		for (i = 0; i < sp->ntraces; i++) {
			size_t k;

			buf_adds(b, i ? ", '" : "'");
			for (k = 0; k < 16; k++)
				buf_printf(b, "%02x", sp->traces[i][k]);
			buf_addc(b, '\'');
		}
		buf_addc(b, ')');
	}
	buf_addc(b, ')');
	return buf_error(b);
}

static int
r_merge_spans(struct cluster *c, const struct query *q, struct query_result *res)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 }, cond = { 0 }, hdrs = { 0 },
	    vals = { 0 }, stacks = { 0 }, totals = { 0 }, one = { 0 };
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	struct intern *all = intern_create(1024), *hset = intern_create(8);
	struct merge *m = NULL;
	struct codec_memo *cm = NULL;
	size_t *hcount = NULL, hcap = 0, best = 0, nt = 0, ns, i, nv;
	size_t *at = NULL, nref = 0;
	char **frames = NULL;
	size_t *flen = NULL;
	int64_t period = 0, best_period = 0;
	const char *best_hdr = NULL;
	struct tsv t;
	int rc, r;

	memset(res, 0, sizeof(*res));
	atomic_store(&c->read_at, clock_mono_ns());
	if ((rc = where_selected(c, q, &cond, NULL, NULL)) < 0)
		goto out;
	buf_printf(&cond, " AND ns >= %" PRId64 " AND ns < %" PRId64 " AND ", q->from, q->to);
	if ((rc = span_where(q->spans, &cond)) < 0)
		goto out;
	/* The sums per stack, per sample types. */
	buf_printf(&sql, "SELECT hdr, max(period), stack, sumForEach(vals) FROM %s.spans WHERE %s "
	    "GROUP BY hdr, stack FORMAT TabSeparated", c->db, cond.data);
	if ((rc = buf_error(&sql)) < 0 || (rc = cancel_check(q->cancel)) < 0)
		goto out;
	if (ch_exec(c, sql.data, NULL, &ans, &err, NULL) < 0) {
		rc = fail("merging spans", &err);
		goto out;
	}
	/* First pass: the sample types (hdr) with the most stacks. */
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		int64_t k;
		int added;

		if ((rc = cancel_check(q->cancel)) < 0)
			break;

		if (t.nf != 4 || (k = intern_put(hset, t.f[0], t.len[0], &added)) < 0) {
			r = -EINVAL;
			break;
		}
		hcount = xgrow(hcount, &hcap, (size_t)k + 1, sizeof(*hcount));
		if (added)
			hcount[k] = 0;
		if (++hcount[k] > hcount[best] || (size_t)k == best) {
			best = (size_t)k;
			buf_reset(&hdrs);
			buf_add(&hdrs, t.f[0], t.len[0]);
		}
	}
	tsv_free(&t);
	if (rc < 0)
		goto out;	/* past --query-cpu-limit, or its client gone */
	if (r < 0 || buf_error(&hdrs)) {
		log_warnx("clickhouse: merging spans: a malformed answer");
		rc = r == -ENOMEM || buf_error(&hdrs) ? -ENOMEM : -EIO;
		goto out;
	}
	if (intern_count(hset) == 0)
		goto out;	/* no sample of those spans in the range */
	best_hdr = hdrs.data ? hdrs.data : "";
	/* Second pass: the chosen types' stacks and sums. */
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		if (t.len[0] != hdrs.len || memcmp(t.f[0], best_hdr, hdrs.len) != 0)
			continue;
		if ((rc = cancel_check(q->cancel)) < 0)
			break;
		buf_reset(&one);
		if (tsv_i64(t.f[1], &period) < 0 || !is_digest(t.f[2], t.len[2]) ||
		    tsv_nums(t.f[3], &one, &nv, PROFILE_MAX_SAMPLE_TYPES, false) < 0 ||
		    nv == 0 || (nt && nv != nt)) {
			r = -EINVAL;
			break;
		}
		nt = nv;
		if (period > best_period)
			best_period = period;
		if (intern_put(all, t.f[2], DIGEST128_HEX, NULL) < 0) {
			r = -ENOMEM;
			break;
		}
		buf_add(&stacks, t.f[2], DIGEST128_HEX);
		buf_add(&vals, one.data, nt * sizeof(int64_t));
	}
	tsv_free(&t);
	if (rc < 0)
		goto out;
	if (r < 0 || buf_error(&stacks) || buf_error(&vals)) {
		log_warnx("clickhouse: merging spans: a malformed answer");
		rc = r == -ENOMEM || buf_error(&stacks) || buf_error(&vals) ? -ENOMEM : -EIO;
		goto out;
	}
	ns = stacks.len / DIGEST128_HEX;
	frames = xcalloc(intern_count(all) + 1, sizeof(*frames));
	flen = xcalloc(intern_count(all) + 1, sizeof(*flen));
	if ((rc = cancel_check(q->cancel)) < 0 || (rc = fetch_frames(c, all, frames, flen)) < 0 ||
	    (rc = cancel_check(q->cancel)) < 0)
		goto out;
	if ((m = merge_create()) == NULL || codec_begin(m, best_hdr, best_period, &nv, gauge) < 0 ||
	    nv != nt) {
		log_warnx("clickhouse: merging spans: a malformed header");
		rc = m ? -EIO : -ENOMEM;
		goto out;
	}
	cm = codec_memo_create();	/* NULL: read without */
	for (i = 0; i < ns && rc == 0; i++) {
		int64_t k = intern_get(all, stacks.data + i * DIGEST128_HEX, DIGEST128_HEX);

		if ((rc = cancel_check(q->cancel)) < 0)
			break;
		if (k < 0 || (rc = codec_add(m, cm, frames[k], flen[k],
		    (int64_t *)vals.data + i * nt, nt)) == -EINVAL) {
			log_warnx("clickhouse: a stored stack is malformed");
			rc = -EIO;
		}
	}
	if (rc < 0 || (rc = merge_finish(m, false, &res->merged)) < 0)
		goto out;
	/* The profiles, time order, with the totals of their samples of those spans. */
	buf_reset(&sql);
	buf_reset(&ans);
	buf_printf(&sql, "SELECT gid, min(ns) AS t, service, type, labels, hdr, sumForEach(vals) "
	    "FROM %s.spans WHERE %s GROUP BY gid, service, type, labels, hdr ORDER BY t, gid "
	    "LIMIT %d FORMAT TabSeparated", c->db, cond.data, SPAN_REFS_MAX);
	if ((rc = buf_error(&sql)) < 0 || (rc = cancel_check(q->cancel)) < 0)
		goto out;
	if (ch_exec(c, sql.data, NULL, &ans, &err, NULL) < 0) {
		rc = fail("listing the profiles of spans", &err);
		goto out;
	}
	res->refs = xcalloc(SPAN_REFS_MAX + 1, sizeof(*res->refs));
	at = xcalloc(SPAN_REFS_MAX + 1, sizeof(*at));
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0 && nref < SPAN_REFS_MAX) {
		struct store_ref *ref = &res->refs[nref];
		const struct series *s;

		if ((rc = cancel_check(q->cancel)) < 0)
			break;

		buf_reset(&one);
		if (t.nf != 7 || tsv_u64(t.f[0], &ref->id) < 0 || tsv_i64(t.f[1], &ref->time) < 0 ||
		    tsv_nums(t.f[6], &one, &nv, PROFILE_MAX_SAMPLE_TYPES, false) < 0 ||
		    (s = intern_series(c, t.f[2], t.f[3], t.f[4])) == NULL) {
			r = -EINVAL;
			break;
		}
		ref->series = s->id;
		snprintf(ref->type, sizeof(ref->type), "%s", s->type);
		add_series_id(res, s->id);
		if (t.len[5] != hdrs.len || memcmp(t.f[5], best_hdr, hdrs.len) != 0 || nv != nt) {
			at[nref] = SIZE_MAX;
			if ((r = query_skip_add(res, ref->id, "its sample types differ from "
			    "those of the merged samples")) < 0)
				break;
		} else {
			at[nref] = totals.len / sizeof(int64_t);
			buf_add(&totals, one.data, nt * sizeof(int64_t));
			res->nmerged++;
		}
		nref++;
	}
	tsv_free(&t);
	res->nrefs = nref;
	if (rc < 0)
		goto out;
	if (r < 0 || buf_error(&totals)) {
		log_warnx("clickhouse: listing the profiles of spans: a malformed answer");
		rc = r == -ENOMEM || buf_error(&totals) ? -ENOMEM : -EIO;
		goto out;
	}
	res->totals = (int64_t *)buf_steal(&totals, NULL);
	res->totals_at = at;
	at = NULL;
out:
	for (i = 0; frames && i < intern_count(all); i++)
		free(frames[i]);
	free(frames);
	free(flen);
	free(hcount);
	free(at);
	intern_destroy(all);
	intern_destroy(hset);
	codec_memo_free(cm);
	merge_free(m);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	buf_free(&cond);
	buf_free(&hdrs);
	buf_free(&vals);
	buf_free(&stacks);
	buf_free(&totals);
	buf_free(&one);
	if (rc < 0)
		query_result_free(res);
	return rc;
}

/*
 * One stored profile of any host (profiles/, GET /api/0/profiles/<id>): its
 * row, the frames of its stacks, rebuilt as gzipped pprof. Its samples of
 * spans (its rows of the spans table, ship.c) are taken out of its stacks'
 * sums and added apart with their labels span_id and trace_id again, as the
 * store reads a profile back (span names are not shipped).
 */
#define GET_MAX_STACKS	(1u << 22)
#define GET_MAX_SPAN_ROWS	65536	/* ship.c's SPAN_ROWS_MAX */

/* A row of the spans table of the profile read. */
struct get_span {
	uint64_t	 span;
	char		 trace[33];	/* "" for none */
	int64_t		 k;		/* the stack's index in the profile's */
	size_t		 at;		/* its values in vals, nt of them */
};

/*
 * The rows of profile id in the spans table whose stack the profile holds
 * (all: its stacks, interned; first: the sample of each): each taken out of
 * that sample's values in pv (ns samples of nt values), into *out (*n rows,
 * their values in *sv). A row of an unknown stack or of other sample types
 * is left out: the profile's sums stay exact.
 */
static int
get_spans(struct cluster *c, uint64_t id, struct intern *all, const size_t *first, int64_t *pv,
    size_t nt, struct get_span **out, size_t *n, struct buf *sv)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 }, one = { 0 };
	size_t cap = 0, nv, j;
	struct tsv t;
	int rc = 0, r;

	*out = NULL;
	*n = 0;
	buf_printf(&sql, "SELECT span, trace, stack, vals FROM %s.spans WHERE gid = %" PRIu64
	    " LIMIT %d FORMAT TabSeparated", c->db, id, GET_MAX_SPAN_ROWS);
	if ((rc = buf_error(&sql)) < 0)
		goto out;
	if (ch_exec(c, sql.data, NULL, &ans, &err, NULL) < 0) {
		rc = fail("reading a profile's spans", &err);
		goto out;
	}
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		struct get_span g;
		int64_t *v;

		memset(&g, 0, sizeof(g));
		buf_reset(&one);
		if (t.nf != 4 || tsv_u64(t.f[0], &g.span) < 0 || (t.len[1] != 0 && t.len[1] != 32) ||
		    !is_digest(t.f[2], t.len[2]) ||
		    tsv_nums(t.f[3], &one, &nv, PROFILE_MAX_SAMPLE_TYPES, false) < 0) {
			r = -EINVAL;
			break;
		}
		if (nv != nt || (g.k = intern_get(all, t.f[2], DIGEST128_HEX)) < 0)
			continue;
		memcpy(g.trace, t.f[1], t.len[1]);
		g.at = sv->len / sizeof(int64_t);
		v = pv + first[g.k] * nt;
		for (j = 0; j < nt; j++)
			v[j] -= ((const int64_t *)one.data)[j];
		buf_add(sv, one.data, nt * sizeof(int64_t));
		if (*n == cap)
			*out = xgrow(*out, &cap, *n + 1, sizeof(**out));
		(*out)[(*n)++] = g;
	}
	tsv_free(&t);
	if (r < 0 || buf_error(sv)) {
		log_warnx("clickhouse: reading a profile's spans: a malformed answer");
		rc = r == -EINVAL ? -EIO : -ENOMEM;
	}
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	buf_free(&one);
	return rc;
}

/* Stack text st (len bytes) with the labels of span row g added, into b. */
static int
span_text(const char *st, size_t len, const struct get_span *g, struct buf *b)
{
	const char *lab = memchr(st, '\x1d', len);
	size_t nlab = 0, i;

	buf_reset(b);
	buf_add(b, st, len);
	for (i = lab ? (size_t)(lab - st) : len; lab && i < len; i++)
		nlab += st[i] == '\x1e';
	/* codec_add() takes 64 labels (CODEC_MAX_LABELS): a stack near it stays as it is. */
	if (lab == NULL || nlab + 1 + 2 <= 64) {
		buf_addc(b, lab ? '\x1e' : '\x1d');
		buf_printf(b, "span_id\x1f%016" PRIx64 "\x1f" "0\x1f", g->span);
		if (g->trace[0])
			buf_printf(b, "\x1etrace_id\x1f%s\x1f" "0\x1f", g->trace);
	}
	return buf_error(b);
}

static int
r_get(void *arg, uint64_t id, struct store_ref *ref, struct buf *out)
{
	struct cluster *c = arg;
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 }, stacks = { 0 }, vals = { 0 },
	    svals = { 0 }, text = { 0 };
	struct get_span *sp = NULL;
	size_t *first = NULL, nsp = 0;
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	struct intern *all = intern_create(256);
	struct merge *m = NULL;
	struct codec_memo *cm = NULL;
	struct profile *p = NULL;
	const struct series *s;
	char **frames = NULL;
	size_t *flen = NULL, ns = 0, nv = 0, nt = 0, i;
	int64_t period;
	struct tsv t;
	int rc = 0, r, local;

	/* Each shard's own table when the URLs are the shards: one of them holds it. */
	for (local = 1, r = -EAGAIN; local >= 0 && r == -EAGAIN; local--) {
		buf_reset(&sql);
		buf_printf(&sql, "SELECT ns, service, type, labels, hdr, period, stacks, vals FROM "
		    "%s.profiles%s WHERE gid = %" PRIu64 " LIMIT 1 FORMAT TabSeparated", c->db,
		    local ? "_local" : "", id);
		if ((rc = buf_error(&sql)) < 0)
			goto out;
		r = local ? ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err) :
		    ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	if (r < 0) {
		rc = fail("reading a profile", &err);
		goto out;
	}
	tsv_init(&t, &ans);
	if ((rc = tsv_next(&t)) == 0) {
		rc = -ENOENT;
		tsv_free(&t);
		goto out;
	}
	memset(ref, 0, sizeof(*ref));
	if (rc < 0 || t.nf != 8 || tsv_i64(t.f[0], &ref->time) < 0 ||
	    tsv_i64(t.f[5], &period) < 0 ||
	    parse_digests(t.f[6], &stacks, &ns, (size_t)GET_MAX_STACKS * 8) < 0 ||
	    tsv_nums(t.f[7], &vals, &nv, (size_t)GET_MAX_STACKS * 8, false) < 0 ||
	    (s = intern_series(c, t.f[1], t.f[2], t.f[3])) == NULL ||
	    (m = merge_create()) == NULL || codec_begin(m, t.f[4], period, &nt, gauge) < 0 ||
	    nt == 0 || nv != ns || ns % nt != 0) {
		tsv_free(&t);
		log_warnx("clickhouse: reading a profile: a malformed answer");
		rc = -EIO;
		goto out;
	}
	tsv_free(&t);
	ref->id = id;
	ref->series = s->id;
	snprintf(ref->type, sizeof(ref->type), "%s", s->type);
	/* A stack per value: sample i's is the stack of its first value. */
	for (i = 0; i < ns / nt; i++)
		memmove(stacks.data + i * DIGEST128_HEX, stacks.data + i * nt * DIGEST128_HEX,
		    DIGEST128_HEX);
	ns /= nt;
	first = xcalloc(ns + 1, sizeof(*first));
	for (i = 0; i < ns; i++) {
		int added = 0;
		int64_t k = intern_put(all, stacks.data + i * DIGEST128_HEX, DIGEST128_HEX, &added);

		if (k < 0) {
			rc = -ENOMEM;
			goto out;
		}
		if (added)
			first[k] = i;
	}
	if ((rc = get_spans(c, id, all, first, (int64_t *)vals.data, nt, &sp, &nsp, &svals)) < 0)
		goto out;
	frames = xcalloc(intern_count(all) + 1, sizeof(*frames));
	flen = xcalloc(intern_count(all) + 1, sizeof(*flen));
	if ((rc = fetch_frames(c, all, frames, flen)) < 0)
		goto out;
	cm = codec_memo_create();	/* NULL: read without */
	for (i = 0; i < ns && rc == 0; i++) {
		int64_t k = intern_get(all, stacks.data + i * DIGEST128_HEX, DIGEST128_HEX);

		if (k < 0 || (rc = codec_add(m, cm, frames[k], flen[k],
		    (int64_t *)vals.data + i * nt, nt)) == -EINVAL) {
			log_warnx("clickhouse: a stored stack is malformed");
			rc = -EIO;
		}
	}
	for (i = 0; i < nsp && rc == 0; i++) {
		const struct get_span *g = &sp[i];

		if ((rc = span_text(frames[g->k], flen[g->k], g, &text)) == 0 &&
		    (rc = codec_add(m, cm, text.data, text.len,
		    (int64_t *)svals.data + g->at, nt)) == -EINVAL) {
			log_warnx("clickhouse: a stored stack is malformed");
			rc = -EIO;
		}
	}
	if (rc == 0 && (rc = merge_finish(m, false, &p)) == 0) {
		p->time_nanos = ref->time;
		rc = profile_encode(p, true, out);
	}
out:
	for (i = 0; frames && i < intern_count(all); i++)
		free(frames[i]);
	free(frames);
	free(flen);
	intern_destroy(all);
	codec_memo_free(cm);
	merge_free(m);
	profile_free(p);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	buf_free(&stacks);
	buf_free(&vals);
	buf_free(&svals);
	buf_free(&text);
	free(sp);
	free(first);
	return rc;
}

static uint64_t
r_generation(void *arg)
{
	struct cluster *c = arg;

	/* Other hosts' data arrives without local puts: the shipper watches for it. */
	return atomic_load(&c->gen);
}

/* --- the reader ------------------------------------------------------------ */

/* Whether reads go to the cluster yet (its schema was found once). */
static bool
on(struct cluster *c)
{
	return atomic_load(&c->reads_on);
}

static int
c_series(void *arg, const struct series ***out, size_t *n)
{
	struct cluster *c = arg;

	return on(c) ? r_series(c, out, n) : store_series(c->st, out, n);
}

static int
c_series_each(void *arg, const char *service, const char *type, store_series_fn fn,
    void *fnarg)
{
	struct cluster *c = arg;

	return on(c) ? r_series_each(c, service, type, fn, fnarg) :
	    store_series_each(c->st, service, type, fn, fnarg);
}

static const struct series *
c_series_get(void *arg, uint64_t id)
{
	struct cluster *c = arg;

	return on(c) ? r_series_get(c, id) : store_series_get(c->st, id);
}

static int
c_hours(void *arg, uint64_t sid, int64_t **out, size_t *n)
{
	struct cluster *c = arg;

	return on(c) ? r_hours(c, sid, out, n) : store_hours(c->st, sid, out, n);
}

/*
 * Whether [from, to) holds a window of the series' cached windows wholly (1),
 * none of them meets it (0), or only partly (-1: ask); -ENOENT when the
 * cache cannot say.
 */
static int
hd_cached(struct cluster *c, uint64_t sid, int64_t from, int64_t to, int64_t *since)
{
	int64_t k;
	size_t i;
	int rc = -ENOENT;

	*since = INT64_MAX;

	pthread_mutex_lock(&c->sc_lock);
	/* The hours the series listing holds it in: a range holding them all, or none. */
	for (i = 0; fresh(c, c->sc_gen, c->sc_at) && i < c->sc_n; i++)
		if (c->sc[i]->id == sid) {
			int64_t lo = c->sc_span[2 * i] * NS, hi = (c->sc_span[2 * i + 1] + 3600) * NS;

			if (to <= lo || from >= hi || (from <= lo && to >= hi)) {
				pthread_mutex_unlock(&c->sc_lock);
				return from <= lo && to >= hi;
			}
			break;
		}
	if (c->hd_idx && (k = intern_get(c->hd_idx, &sid, sizeof(sid))) >= 0 &&
	    fresh(c, c->hd[k].gen, c->hd[k].at)) {
		const struct hd_windows *h = &c->hd[k];

		*since = h->since * NS;
		/* Nothing before the windows kept is known: then only a yes holds. */
		rc = from >= h->since * NS ? 0 : -1;
		for (i = 0; i < h->n && rc != 1; i++) {
			int64_t lo = h->w[i] * NS, hi = lo + WINDOW_NS;

			if (lo >= from && hi <= to)
				rc = 1;
			else if (lo < to && hi > from)
				rc = -1;
		}
	}
	pthread_mutex_unlock(&c->sc_lock);
	return rc;
}

/* The start (s) of the windows hd_fetch() asks for: the last days'. */
static int64_t
hd_since(void)
{
	int64_t since = clock_now_ns() / NS - HD_DAYS * 86400;

	return since - since % 86400;
}

/*
 * Ask for the windows of series s since the last days and keep them (each
 * shard's own table at once when the URLs are the shards: their windows
 * merged here).
 */
static void
hd_fetch(struct cluster *c, const struct series *s)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 }, w = { 0 };
	uint64_t gen = atomic_load(&c->gen);
	int64_t since = hd_since(), *v;
	struct tsv t;
	size_t i, n;
	int r, local;

	for (local = 1, r = -EAGAIN; local >= 0 && r == -EAGAIN; local--) {
		buf_reset(&sql);
		buf_printf(&sql, "SELECT toUInt32(window) AS w FROM %s.counts10%s WHERE ", c->db,
		    local ? "_local" : "");
		where_series(s, &sql);
		buf_printf(&sql, " AND date >= toDate(toDateTime(%" PRId64 ")) GROUP BY w HAVING "
		    "sum(profiles) > 0 FORMAT TabSeparated", since);
		if (buf_error(&sql))
			goto out;
		r = local ? ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err) :
		    ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	if (r < 0)
		goto out;
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		int64_t x;

		if (t.nf != 1 || tsv_i64(t.f[0], &x) < 0) {
			r = -EINVAL;
			break;
		}
		buf_add(&w, &x, sizeof(x));
	}
	tsv_free(&t);
	if (r < 0 || buf_error(&w))
		goto out;
	/* Ascending, once each (a window's profiles may be on several shards). */
	v = (int64_t *)w.data;
	n = w.len / sizeof(*v);
	if (n)
		qsort(v, n, sizeof(*v), cmp_i64);
	for (i = 0, w.len = 0; i < n; i++)
		if (w.len == 0 || v[w.len / sizeof(*v) - 1] != v[i])
			v[w.len / sizeof(*v)] = v[i], w.len += sizeof(*v);
	hd_store(c, s->id, (const int64_t *)w.data, w.len / sizeof(int64_t), since, gen);
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	buf_free(&w);
}

/*
 * Whether series sid has a profile in [from, to): from its cached windows
 * when one lies wholly inside or none meets the range, else one row looked
 * up by the sort key. A cluster that cannot say counts a series seen before
 * as holding data, so its directories resolve and its files fail with EIO.
 */
static bool
r_has_data(struct cluster *c, uint64_t sid, int64_t from, int64_t to)
{
	const struct series *s = r_series_get(c, sid);
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	int64_t since;
	bool yes = true;
	int rc, r, local;

	if (s == NULL)
		return false;
	/*
	 * Not known, or only since the listing's recent windows while the
	 * range starts before them: the last days' windows, once for the
	 * series, instead of a query per range (the hours of a listing).
	 */
	if ((rc = hd_cached(c, sid, from, to, &since)) == -ENOENT ||
	    (rc == -1 && from < since && since > hd_since() * NS)) {
		hd_fetch(c, s);
		rc = hd_cached(c, sid, from, to, &since);
	}
	if (rc == 0 || rc == 1)
		return rc == 1;
	/* Each shard's own table when the URLs are the shards: any row of any says yes. */
	for (local = 1, r = -EAGAIN; local >= 0 && r == -EAGAIN; local--) {
		buf_reset(&sql);
		buf_printf(&sql, "SELECT ns FROM %s.profiles%s WHERE ", c->db,
		    local ? "_local" : "");
		where_series(s, &sql);
		where_range(&sql, from, to);
		buf_adds(&sql, " LIMIT 1 FORMAT TabSeparated");
		if ((r = buf_error(&sql)) < 0)
			break;
		r = local ? ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err) :
		    ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	if (r == 0)
		yes = ans.len > 0;
	else
		log_warnx("clickhouse: looking for data: %s", err.data ? err.data : "failed");
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	return yes;
}

static bool
c_has_data(void *arg, uint64_t sid, int64_t from, int64_t to)
{
	struct cluster *c = arg;

	return on(c) ? r_has_data(c, sid, from, to) : store_has_data(c->st, sid, from, to);
}

static int
c_get(void *arg, uint64_t id, struct store_ref *ref, struct buf *out)
{
	struct cluster *c = arg;

	return on(c) ? r_get(c, id, ref, out) : store_get(c->st, id, ref, out);
}

static int
c_get_size(void *arg, uint64_t id, struct store_ref *ref, uint64_t *size)
{
	struct cluster *c = arg;

	if (on(c)) {
		memset(ref, 0, sizeof(*ref));
		return -ENODATA;	/* made by reader_get(), from the cluster */
	}
	return store_get_size(c->st, id, ref, size);
}

static int
c_list(void *arg, const struct query *q, struct query_result *res)
{
	struct cluster *c = arg;

	return on(c) ? r_list(c, q, res) : query_list(c->st, q, res);
}

static int
c_merge(void *arg, const struct query *q, struct query_result *res)
{
	struct cluster *c = arg;

	/* Span samples: the spans table the shippers fill (ship.c). */
	if (on(c) && q->spans)
		return r_merge_spans(c, q, res);
	return on(c) ? r_merge(c, q, res) : query_merge(c->st, q, res);
}

/*
 * The local generation, and once reads go to the cluster one more (the
 * switch changes every answer) plus the cluster's own clock: other hosts'
 * data arrives without local puts. It never decreases.
 */
static uint64_t
c_generation(void *arg)
{
	struct cluster *c = arg;
	uint64_t g = store_generation(c->st);

	return on(c) ? g + 1 + r_generation(c) : g;
}

static bool
c_changed_since(void *arg, uint64_t gen, int64_t upto)
{
	struct cluster *c = arg;

	/* The cluster's answers: the times of their changes are not known here. */
	if (on(c))
		return gen != c_generation(c);
	return store_changed_since(c->st, gen, upto);
}

/* Deletion: in the fleet once reads go there, where the ids users see are its. */
static int
c_delete_profile(void *arg, uint64_t id, struct store_ref *ref, struct buf *err)
{
	struct cluster *c = arg;

	return on(c) ? delete_profile(c, id, ref, err) : store_delete_profile(c->st, id, ref, err);
}

static int
c_delete_series(void *arg, const struct query *q, uint64_t *nseries, uint64_t *nprofiles,
    struct buf *err)
{
	struct cluster *c = arg;

	return on(c) ? delete_series(c, q, nseries, nprofiles, err) :
	    store_delete_series(c->st, q, nseries, nprofiles, err);
}

/*
 * A lookup missed: a listing asked ahead may predate the name (data that
 * arrived since, before the poll saw the count move), so it is asked again,
 * as a lookup would have asked it. Once per listing asked ahead.
 */
static bool
c_missed(void *arg)
{
	struct cluster *c = arg;
	bool again;

	if (!on(c))
		return false;
	pthread_mutex_lock(&c->sc_lock);
	if ((again = c->sc_ahead && !c->sc_busy && fresh(c, c->sc_gen, c->sc_at))) {
		c->sc_at = 0;
		c->sc_ahead = false;
	}
	pthread_mutex_unlock(&c->sc_lock);
	return again;
}

const struct reader *
cluster_reader(struct cluster *c)
{
	return &c->reader;
}

void
read_init(struct cluster *c)
{
	pthread_mutex_init(&c->s_lock, NULL);
	pthread_mutex_init(&c->f_lock, NULL);
	pthread_mutex_init(&c->sc_lock, NULL);
	pthread_cond_init(&c->sc_cond, NULL);
	c->s_names = intern_create(256);
	c->reader = (struct reader){
		.arg = c,
		.series = c_series,
		.series_each = c_series_each,
		.series_get = c_series_get,
		.hours = c_hours,
		.has_data = c_has_data,
		.get = c_get,
		.get_size = c_get_size,
		.list = c_list,
		.merge = c_merge,
		.generation = c_generation,
		.changed_since = c_changed_since,
		.delete_profile = c_delete_profile,
		.delete_series = c_delete_series,
		.missed = c_missed,
	};
}

void
read_free(struct cluster *c)
{
	size_t i;

	for (i = 0; i < c->s_n; i++) {
		struct series *s = c->s_all[i];

		free((char *)s->service);
		free((char *)s->type);
		free((char *)s->labels);
		labels_clear(&s->ls);
		free(s);
	}
	free(c->s_all);
	intern_destroy(c->s_names);
	pthread_mutex_destroy(&c->s_lock);
	frames_cache_clear(c);
	pthread_mutex_destroy(&c->f_lock);
	free(c->sc);
	free(c->sc_span);
	for (i = 0; c->hd_idx && i < intern_count(c->hd_idx); i++)
		free(c->hd[i].w);
	free(c->hd);
	intern_destroy(c->hd_idx);
	pthread_mutex_destroy(&c->sc_lock);
	pthread_cond_destroy(&c->sc_cond);
}
