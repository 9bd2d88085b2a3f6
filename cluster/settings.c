/*
 * settings: the cluster's own settings, one value for the whole fleet, kept
 * in ClickHouse (settings_local on every server; the newest row of a name
 * wins). Today one: the retention of what ClickHouse holds. Each daemon's
 * --retention is its local store's; the fleet's data is kept as long as the
 * cluster says, whichever daemon drops old partitions, so a daemon with a
 * short local retention no longer empties every host's history.
 *
 * --clickhouse-retention writes the setting (give it to one daemon, or the
 * same value to every one: the last written wins). With no setting at all,
 * ClickHouse keeps everything.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

#define NS	INT64_C(1000000000)

/* "30d", "12h", "90m" or seconds, for messages. */
static void
dur_format(int64_t ns, char *out, size_t n)
{
	int64_t s = ns / NS;

	if (s == 0)
		snprintf(out, n, "none (keep everything)");
	else if (s % 86400 == 0)
		snprintf(out, n, "%" PRId64 "d", s / 86400);
	else if (s % 3600 == 0)
		snprintf(out, n, "%" PRId64 "h", s / 3600);
	else if (s % 60 == 0)
		snprintf(out, n, "%" PRId64 "m", s / 60);
	else
		snprintf(out, n, "%" PRId64 "s", s);
}

int
settings_put_retention(struct cluster *c, struct buf *err)
{
	struct buf sql = { 0 };
	char d[48];
	size_t i;
	int rc = 0;

	buf_printf(&sql, "INSERT INTO %s.settings_local (name, value, set_at, set_by) VALUES "
	    "('retention', '%" PRId64 "', now(), ", c->db, c->set_retention / NS);
	ch_quote(&sql, c->host);
	buf_addc(&sql, ')');
	if ((rc = buf_error(&sql)) < 0)
		goto out;
	/* On every shard (a replica passes it on to the others). */
	for (i = 0; i < c->nshards; i++)
		if ((rc = ch_exec_shard(c, i, sql.data, NULL, NULL, err, NULL, NULL)) < 0)
			goto out;
	dur_format(c->set_retention, d, sizeof(d));
	log_info("clickhouse: the cluster's retention is now %s (--clickhouse-retention)", d);
out:
	buf_free(&sql);
	return rc;
}

void
settings_retention(struct cluster *c)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	char best_at[32] = "", by[LABEL_MAX_LEN + 1] = "", d[48], l[48];
	int64_t best = -1;
	bool answered = false;
	size_t i;

	buf_printf(&sql, "SELECT toString(set_at), value, set_by FROM %s.settings_local "
	    "WHERE name = 'retention' ORDER BY set_at DESC LIMIT 1 FORMAT TabSeparated", c->db);
	for (i = 0; i < c->nurls; i++) {
		struct tsv t;
		int64_t v;

		buf_reset(&ans);
		if (ch_exec_on(c, i, sql.data, &ans, &err, NULL) < 0)
			continue;
		answered = true;
		tsv_init(&t, &ans);
		/* 'YYYY-MM-DD hh:mm:ss' sorts as text; the newest row of every server wins. */
		if (tsv_next(&t) > 0 && t.nf == 3 && t.len[0] < sizeof(best_at) &&
		    tsv_i64(t.f[1], &v) == 0 && v >= 0 && v <= INT64_MAX / NS &&
		    strcmp(t.f[0], best_at) > 0) {
			snprintf(best_at, sizeof(best_at), "%s", t.f[0]);
			snprintf(by, sizeof(by), "%s", t.f[2]);
			best = v * NS;
		}
		tsv_free(&t);
	}
	/* Replicated: the setting is on every replica, one answer is enough. */
	if (err.len && best < 0 && !(c->replicated && answered)) {
		log_warnx("clickhouse: reading the cluster's retention: %s", err.data);
		goto out;	/* keep what was known */
	}
	if (best < 0) {
		if (c->retention_shown != 0)
			log_info("clickhouse: the cluster has no retention setting: ClickHouse keeps "
			    "every day (set one with --clickhouse-retention)%s",
			    c->local_retention ? "; --retention applies to this host's local store" :
			    "");
		c->retention = 0;
		c->retention_shown = 0;
		goto out;
	}
	c->retention = best;
	if (c->retention_shown != best + 1) {
		dur_format(best, d, sizeof(d));
		if (c->local_retention && c->local_retention != best) {
			dur_format(c->local_retention, l, sizeof(l));
			log_info("clickhouse: the cluster's retention %s (set by %s at %s UTC) applies "
			    "to ClickHouse; this host's --retention %s applies to its local store only",
			    d, by, best_at, l);
		} else
			log_info("clickhouse: the cluster's retention is %s (set by %s at %s UTC)", d,
			    by, best_at);
		c->retention_shown = best + 1;
	}
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
}
