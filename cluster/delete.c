/*
 * delete: deletion in the fleet, the fleet's reader's delete ops once reads
 * go to the cluster (read.c; before that, the store's own deletion). This
 * host's copy leaves the store (store_delete_*()) and the fleet's leaves
 * ClickHouse: a series goes from every shard's local tables (profiles,
 * the per-series sums, counts10, series) with ALTER TABLE ... DELETE, and from
 * the fleet-wide sums (no labels to find it by) through rows that cancel its
 * profiles. One profile (by gid) leaves the per-window sums through rows that cancel it (its
 * samples negated, a count of -1: the Summing tables add them), then its row
 * goes with ALTER TABLE ... DELETE. Mutations run in the background in
 * ClickHouse: each call waits (bounded) until the servers report them done,
 * so the answer to the caller is the fleet's state. Stacks are shared by
 * content and stay.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "cluster_int.h"

#define MUTATION_WAIT_NS	(INT64_C(60) * 1000000000)

/* Until server i has no mutation of the database pending (bounded). */
static int
wait_mutations(struct cluster *c, size_t i, struct buf *err)
{
	struct buf sql = { 0 }, ans = { 0 };
	int64_t end = clock_mono_ns() + MUTATION_WAIT_NS;
	struct timespec ts = { 0, 100 * 1000000 };
	int rc = -ETIMEDOUT;

	buf_printf(&sql, "SELECT count() FROM system.mutations WHERE database = '%s' AND "
	    "NOT is_done FORMAT TabSeparated", c->db);
	while (clock_mono_ns() < end) {
		buf_reset(&ans);
		if (ch_exec_on(c, i, sql.data, &ans, err, NULL) < 0) {
			rc = -EIO;
			break;
		}
		if (ans.len && ans.data[0] == '0') {
			rc = 0;
			break;
		}
		nanosleep(&ts, NULL);
	}
	if (rc == -ETIMEDOUT && err)
		buf_printf(err, "the deletion is still running on %s", c->urls[i].shown);
	buf_free(&sql);
	buf_free(&ans);
	return rc;
}

/*
 * Run each statement of sqls on every shard, then wait: on one live
 * replica of it (the first statement finds which; ClickHouse copies
 * inserts and mutations of Replicated tables to the others).
 */
static int
on_every_server(struct cluster *c, const struct buf *sqls, size_t n, struct buf *err)
{
	size_t g, i = 0, j;
	int rc = 0;

	for (g = 0; g < c->nshards; g++) {
		if (n && ch_exec_shard(c, g, sqls[0].data, NULL, NULL, err, NULL, &i) < 0)
			rc = -EIO;
		for (j = 1; j < n && rc == 0; j++)
			if (ch_exec_on(c, i, sqls[j].data, NULL, err, NULL) < 0)
				rc = -EIO;
		if (rc == 0)
			rc = wait_mutations(c, i, err);
		if (rc < 0)
			break;
	}
	atomic_fetch_add(&c->gen, 1);	/* cached views are stale */
	return rc;
}

/*
 * The statements that cancel, in the summary tables, the profiles of
 * profiles_local that match cond (on the server they run on), into sqls
 * (from *n on; at most CH_NTIERS + 2 of them).
 */
static void
cancel_sqls(struct cluster *c, const char *cond, struct buf *sqls, size_t *n)
{
	size_t t;

	for (t = 0; t < CH_NTIERS; t++) {
		struct buf *b = &sqls[(*n)++];

		buf_printf(b, "INSERT INTO %s.%s_local (date, window, service, type, %ssigh, stack, "
		    "vi, gsid, value) ", c->db, ch_tiers[t].name, ch_tiers[t].labels ? "labels, " : "");
		ch_tier_select(b, c->db, t, "-val AS value");
		buf_printf(b, " PREWHERE %s", cond);
	}
	buf_printf(&sqls[(*n)++], "INSERT INTO %1$s.counts10_local (date, window, service, type, "
	    "labels, sig, sigh, hdr, period, profiles, gids, offs, totalsMap.vi, totalsMap.value) "
	    "SELECT date, toDateTime(intDiv(toUInt32(time), 600) * 600) AS window, service, type, "
	    "labels, sig, sigh, hdr, period, " CH_COUNT_COLS("-1") " FROM %1$s.profiles_local "
	    "WHERE %2$s GROUP BY " CH_COUNT_KEY, c->db, cond);
	buf_printf(&sqls[(*n)++], "INSERT INTO %s.series_local (date, hour, service, type, labels, "
	    "profiles) SELECT date, toStartOfHour(time) AS hour, service, type, labels, "
	    "sum(toInt64(-1)) FROM %s.profiles_local WHERE %s GROUP BY date, hour, service, type, "
	    "labels", c->db, c->db, cond);
}

/*
 * Every profile of series s (as the fleet lists it) from every server: the
 * summary tables without labels get rows that cancel them, the others and
 * the profiles lose them.
 */
static int
fleet_delete_series(struct cluster *c, const struct series *s, struct buf *err)
{
	struct buf sqls[CH_NTIERS + 7], cond = { 0 };
	size_t j, n = 0, t;
	int rc;

	memset(sqls, 0, sizeof(sqls));
	buf_adds(&cond, "service = ");
	ch_quote(&cond, s->service);
	buf_adds(&cond, " AND type = ");
	ch_quote(&cond, s->type);
	buf_adds(&cond, " AND labels = ");
	ch_quote(&cond, s->labels);
	for (t = 0; t < CH_NTIERS; t++) {
		struct buf *b = &sqls[n++];

		if (ch_tiers[t].labels) {
			buf_printf(b, "ALTER TABLE %s.%s_local DELETE WHERE %s", c->db,
			    ch_tiers[t].name, cond.data);
			continue;
		}
		buf_printf(b, "INSERT INTO %s.%s_local (date, window, service, type, sigh, stack, "
		    "vi, gsid, value) ", c->db, ch_tiers[t].name);
		ch_tier_select(b, c->db, t, "-val AS value");
		buf_printf(b, " PREWHERE %s", cond.data);
	}
	buf_printf(&sqls[n++], "ALTER TABLE %s.counts10_local DELETE WHERE %s", c->db, cond.data);
	buf_printf(&sqls[n++], "ALTER TABLE %s.series_local DELETE WHERE %s", c->db, cond.data);
	buf_printf(&sqls[n++], "ALTER TABLE %s.spans_local DELETE WHERE %s", c->db, cond.data);
	buf_printf(&sqls[n++], "ALTER TABLE %s.profiles_local DELETE WHERE %s", c->db, cond.data);
	rc = buf_error(&cond);
	for (j = 0; j < n && rc == 0; j++)
		rc = buf_error(&sqls[j]);
	if (rc == 0)
		rc = on_every_server(c, sqls, n, err);
	for (j = 0; j < n; j++)
		buf_free(&sqls[j]);
	buf_free(&cond);
	if (rc == 0)
		log_info("clickhouse: deleted %s/%s {%s}", s->service, s->type, s->labels);
	return rc;
}

/*
 * Profile gid from every server; *local_id: which profile of this host's
 * store it was (0: another host's). -ENOENT, -EIO with err.
 */
static int
fleet_delete_profile(struct cluster *c, uint64_t gid, uint64_t *local_id, struct buf *err)
{
	struct buf sql = { 0 }, ans = { 0 }, sqls[CH_NTIERS + 4], cond = { 0 };
	struct tsv t;
	uint64_t id = 0;
	bool found = false, mine = false;
	size_t j, n = 0;
	int rc;

	*local_id = 0;
	buf_printf(&sql, "SELECT host, id FROM %s.profiles WHERE gid = %" PRIu64
	    " LIMIT 1 FORMAT TabSeparated", c->db, gid);
	if (ch_exec(c, sql.data, NULL, &ans, err, NULL) < 0) {
		buf_free(&sql);
		return -EIO;
	}
	tsv_init(&t, &ans);
	if (tsv_next(&t) == 1 && t.nf == 2 && tsv_u64(t.f[1], &id) == 0) {
		found = true;
		mine = strcmp(t.f[0], c->host) == 0;
	}
	tsv_free(&t);
	buf_free(&sql);
	buf_free(&ans);
	if (!found)
		return -ENOENT;
	memset(sqls, 0, sizeof(sqls));
	/* The same rows as the materialized views make, cancelling them. */
	buf_printf(&cond, "gid = %" PRIu64, gid);
	cancel_sqls(c, cond.data, sqls, &n);
	buf_printf(&sqls[n++], "ALTER TABLE %s.spans_local DELETE WHERE %s", c->db, cond.data);
	buf_printf(&sqls[n++], "ALTER TABLE %s.profiles_local DELETE WHERE %s", c->db, cond.data);
	rc = 0;
	for (j = 0; j < n && rc == 0; j++)
		rc = buf_error(&sqls[j]);
	if (rc == 0)
		rc = on_every_server(c, sqls, n, err);
	for (j = 0; j < n; j++)
		buf_free(&sqls[j]);
	buf_free(&cond);
	if (rc == 0 && mine)
		*local_id = id;
	if (rc == 0)
		log_info("clickhouse: deleted profile %016" PRIx64, gid);
	return rc;
}

int
delete_profile(struct cluster *c, uint64_t gid, struct store_ref *ref, struct buf *err)
{
	uint64_t local = 0;
	int rc;

	/* The id is the fleet's; this host's copy goes too. */
	if ((rc = fleet_delete_profile(c, gid, &local, err)) < 0)
		return rc;
	if (local && (rc = store_delete_profile(c->st, local, NULL, NULL)) < 0 && rc != -ENOENT)
		log_warnx("clickhouse: profile %llu was deleted in the fleet but not here: %s",
		    (unsigned long long)local, strerror(-rc));
	if (ref) {
		memset(ref, 0, sizeof(*ref));
		ref->id = gid;
	}
	return 0;
}

struct collect_arg {
	const struct query	*q;
	const struct series	**s;
	size_t			 n, cap;
};

static int
collect(void *arg, const struct series *s)
{
	struct collect_arg *a = arg;

	if (!query_match(a->q, s))
		return 0;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->s = xreallocarray(a->s, a->cap, sizeof(*a->s));
	}
	a->s[a->n++] = s;
	return 0;
}

int
delete_series(struct cluster *c, const struct query *q, uint64_t *nseries,
    uint64_t *nprofiles, struct buf *err)
{
	struct collect_arg ca = { .q = q };
	uint64_t ns = 0, nr = 0;
	size_t i;
	int rc;

	if ((rc = store_delete_series(c->st, q, &ns, nprofiles, err)) < 0)
		return rc;
	/* The fleet's series (this host's among them) go there. */
	rc = reader_series_each(cluster_reader(c), q->service, q->type, collect, &ca);
	for (i = 0; i < ca.n && rc == 0; i++)
		if ((rc = fleet_delete_series(c, ca.s[i], err)) == 0)
			nr++;
	free(ca.s);
	if (nseries)
		*nseries = nr > ns ? nr : ns;
	return rc;
}
