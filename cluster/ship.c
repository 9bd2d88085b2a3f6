/*
 * ship: the schema, and the shipper thread that empties the store's outbox
 * into ClickHouse.
 *
 * Schema, version 2 (one database, on every server given; <t>_local is a
 * table on each shard, <t> the Distributed table over the cluster):
 *
 *   profiles_local   one row per profile: when (date, time, ns), whose
 *                    (host, id, gid = hash of host and id), its series
 *                    (service, type, labels with host=), its group (sig: as
 *                    profile_signature(), sigh: 64 bits of its digest, hdr:
 *                    codec_header()), period, which types are gauges,
 *                    totals, and its values vals[] (ntypes per sample, the
 *                    samples in the order of their stacks' digests) with
 *                    the digest of each value's stack in stacks[].
 *                    MergeTree, a partition per day (retention: ALTER TABLE
 *                    ... DROP PARTITION), 256 rows per granule.
 *   tiers            sums of value per (window, signature, gauge series,
 *                    stack, value index): samples10 and samples1h per series
 *                    (10-minute and hourly windows, for selections),
 *                    fleet1m, fleet10 and fleet1h without labels (for reads
 *                    of every label set); SummingMergeTree, each kept by its
 *                    materialized view that sums every inserted batch
 *   counts10_local   per (series, 10-minute window, signature, header,
 *                    period): profiles, the wrapping sum of their gids and
 *                    of their offsets in the window (one profile's own
 *                    when the count is 1) and their totals; kept alike
 *   series_local     profiles per (series, hour): listings and hours
 *   stacks_local     frames (codec_stack()) by hash, ReplacingMergeTree, a
 *                    partition per month: every month re-ships what it uses
 *   spans_local      the samples of span profiles (store/span.c): one row per
 *                    (profile, span id, stack) of a profile whose samples
 *                    name spans: when, whose (host, gid, batch: the
 *                    profile's, so its rows go to the profile's shard), its
 *                    series, hdr and period (codec_header()), the span id,
 *                    its trace (32 hex digits, '': none), the stack's
 *                    address and its values (ntypes). At most
 *                    SPAN_ROWS_MAX rows per profile (the rest counted).
 *                    MergeTree, a partition per day (retention drops it
 *                    with the profiles'), sorted by span id.
 *   settings_local   the cluster's settings (name, value, when, by which
 *                    host), the latest row of a name wins; on every server
 *
 * The daemon creates what is missing at start (spans_local came after the
 * other tables of schema 2: it is added to a database of schema 2 made
 * before it, which holds no spans). Tables of an earlier build
 * with ClickHouse's default granules (8192 rows) are used as they are, and
 * logged (old_granules()): docs/clickhouse.md tells how to remake them. A database of schema 1
 * (before the tiers) or of an earlier build is refused with a message
 * naming what to do, never mixed: its tables lack what the reads ask for.
 *
 * A stack's address (hash) is digest128() of its frames: 32 hex digits of
 * SHA-256, so no pushed label can make one stack's row stand for another's.
 * stacks_local sorts by the frames' hash too, so a row that does not match
 * its address (written by hand) never replaces the true one when ClickHouse
 * merges, and readers check the address of every row they use. Databases of
 * earlier builds keyed stacks by a 64-bit hash (hash UInt64): they are
 * refused with a message rather than mixed.
 *
 * A single server needs no cluster: given one URL, no --clickhouse-cluster,
 * and a server whose remote_servers has no cluster 'profilefs' (Debian's
 * default config), the tables over every shard are Merge tables over the
 * server's own *_local ones (alone), and batches are inserted into those.
 * Once the server has the cluster, the Merge tables (which hold nothing)
 * are remade as Distributed ones; the other way, Distributed tables of a
 * cluster the server no longer has are refused with what to do, as their
 * directories may hold rows not yet sent to the other shards.
 *
 * With --clickhouse-replicated every *_local table is the Replicated variant
 * of its engine (cluster_engine()), in ZooKeeper under
 * /clickhouse/tables/{shard}/<db>.<table> as replica {replica}: the servers'
 * macros name both. The Distributed tables write a batch to one replica of
 * its shard (remote_servers' internal_replication) and read one live replica
 * of each shard; ClickHouse copies the rest. The schema is made on every
 * replica that answers, and on the others when they come back.
 *
 * Reads sum with GROUP BY, so rows a SummingMergeTree has not merged yet count
 * exactly once. Each profile is one row, so a batch that may have reached
 * ClickHouse before an error (a lost answer, a crash) is checked by gid and
 * only what is missing is sent again: nothing twice, nothing lost. With
 * replicas the check asks every replica that answers, and a batch none of
 * them holds is sent again byte for byte (struct batch's held), so a replica
 * that took it but is down or behind drops the copy when ClickHouse
 * deduplicates the block. A daemon that restarts builds its first batch
 * afresh: only the check covers that one.
 */
#define _GNU_SOURCE	/* pthread_setname_np */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cluster_int.h"

/*
 * Profiles (and, c->batch_rows, samples) per INSERT at most. Each INSERT is
 * a part in every table and view's table, each part a file per column,
 * merged later: on 18.16 an INSERT costs ClickHouse some 30-150 ms of CPU
 * beyond its rows (files made, views' queries planned, merges), so a
 * backlog goes in few large ones.
 */
#define BATCH_PROFILES		20000
#define BACKOFF_MIN_NS		(INT64_C(500) * 1000000)
#define BACKOFF_MAX_NS		(INT64_C(8) * 1000000000)
#define IDLE_NS			(INT64_C(200) * 1000000)
#define SMALL_PROFILES		(BATCH_PROFILES / 10)
#define FLUSH_NS		(INT64_C(1000) * 1000000)
/* Stacks whose address and shipping the shipper keeps (shipped.c, 64 bytes each). */
#define SHIPPED_STACKS_MAX	(1 << 17)
#define POLL_NS			INT64_C(1000000000)
#define EXPIRE_NS		(INT64_C(3600) * 1000000000)
#define CATCH_UP_NS		(INT64_C(10) * 1000000000)
#define CHECK_NS		(INT64_C(60) * 1000000000)
#define CHECK_STACKS		256
/*
 * Rows per granule (index mark) of profiles_local, whose rows are big (a
 * profile's arrays): ClickHouse reads whole granules, and its default of
 * 8192 rows made one host's hour read 8192 profiles' arrays. stacks_local
 * keeps the default: no read of it was measured to gain.
 */
#define PROFILES_GRANULE	"256"
/* Rows of spans_local one profile may make (a row per span and stack). */
#define SPAN_ROWS_MAX		65536

/*
 * A statement of the schema: head (and tail) are formats of the database
 * (%1$s) and the cluster (%2$s). With a kind, the table is one of the
 * *_local ones: head is its CREATE TABLE up to ENGINE, whose clause
 * cluster_engine() makes from kind, and tail what follows it.
 */
struct ddl {
	const char	*head;
	const char	*table;
	const char	*kind;
	const char	*tail;
	const char	*key;	/* a table over every shard's `table`, by this key */
};

static const struct ddl schema[] = {
	{ "CREATE DATABASE IF NOT EXISTS %1$s", NULL, NULL, NULL, NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.profiles_local (date Date, time DateTime, ns Int64, "
	    "host String, id UInt64, gid UInt64, batch UInt64, service String, type String, "
	    "labels String, sig String, sigh UInt64, hdr String, period Int64, ntypes UInt8, "
	    "gauges UInt64, totals Array(Int64), stacks Array(FixedString(32)), vals Array(Int64))",
	    "profiles_local", "MergeTree",
	    "PARTITION BY date ORDER BY (service, type, labels, ns, gid) "
	    "SETTINGS index_granularity = " PROFILES_GRANULE, NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.counts10_local (date Date, window DateTime, "
	    "service String, type String, labels String, sig String, sigh UInt64, hdr String, "
	    "period Int64, profiles Int64, gids UInt64, offs Int64, "
	    "totalsMap Nested(vi UInt8, value Int64))", "counts10_local", "SummingMergeTree",
	    "PARTITION BY date ORDER BY (service, type, labels, window, sig, sigh, hdr, period)",
	    NULL },
	{ "CREATE MATERIALIZED VIEW IF NOT EXISTS %1$s.counts10_mv TO %1$s.counts10_local AS "
	    "SELECT date, toDateTime(intDiv(toUInt32(time), 600) * 600) AS window, service, "
	    "type, labels, sig, sigh, hdr, period, " CH_COUNT_COLS("1") " FROM %1$s.profiles_local "
	    "GROUP BY " CH_COUNT_KEY, NULL, NULL, NULL, NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.series_local (date Date, hour DateTime, "
	    "service String, type String, labels String, profiles Int64)", "series_local",
	    "SummingMergeTree", "PARTITION BY date ORDER BY (service, type, labels, hour)", NULL },
	{ "CREATE MATERIALIZED VIEW IF NOT EXISTS %1$s.series_mv TO %1$s.series_local AS "
	    "SELECT date, toStartOfHour(time) AS hour, service, type, labels, "
	    "sum(toInt64(1)) AS profiles FROM %1$s.profiles_local "
	    "GROUP BY date, hour, service, type, labels", NULL, NULL, NULL, NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.stacks_local (date Date, hash FixedString(32), "
	    "frames String)", "stacks_local", "ReplacingMergeTree",
	    "PARTITION BY toYYYYMM(date) PRIMARY KEY hash ORDER BY (hash, sipHash64(frames))",
	    NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.spans_local (date Date, time DateTime, ns Int64, "
	    "host String, gid UInt64, batch UInt64, service String, type String, labels String, "
	    "hdr String, period Int64, span UInt64, trace String, stack FixedString(32), "
	    "vals Array(Int64))", "spans_local", "MergeTree",
	    "PARTITION BY date ORDER BY (service, type, span, ns)", NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.settings_local (name String, value String, "
	    "set_at DateTime, set_by String)", "settings_local", "ReplacingMergeTree(set_at)",
	    "ORDER BY name", NULL },
	{ "CREATE TABLE IF NOT EXISTS %1$s.profiles AS %1$s.profiles_local", "profiles_local", NULL,
	    NULL, "batch" },
	{ "CREATE TABLE IF NOT EXISTS %1$s.counts10 AS %1$s.counts10_local", "counts10_local", NULL,
	    NULL, "rand()" },
	{ "CREATE TABLE IF NOT EXISTS %1$s.series AS %1$s.series_local", "series_local", NULL,
	    NULL, "rand()" },
	{ "CREATE TABLE IF NOT EXISTS %1$s.stacks AS %1$s.stacks_local", "stacks_local", NULL,
	    NULL, "sipHash64(hash)" },
	{ "CREATE TABLE IF NOT EXISTS %1$s.spans AS %1$s.spans_local", "spans_local", NULL,
	    NULL, "batch" },
};

/*
 * Two views read every sample of a batch (ARRAY JOIN, a GROUP BY over each
 * value): samples10's and fleet1m's. The others sum what an earlier view
 * made of the same block (a view over a view: ClickHouse passes a view's
 * output block to the views that select from it, not to those of its TO
 * table, so rows inserted into a *_local table by hand, such as the
 * deletion's cancelling rows, go to that table alone). Integer sums of
 * sums: the same rows as summing the profiles, at a fraction of the rows
 * (measured on 18.16: 5 views over the samples 4.4 s of CPU for 3,600
 * profiles of 305 samples, this chain 2.7 s). An earlier view must come
 * first in the list.
 */
const struct ch_tier ch_tiers[CH_NTIERS] = {
	{ "samples10", 600, true, -1 },
	{ "samples1h", 3600, true, 0 },
	{ "fleet1m", 60, false, -1 },
	{ "fleet10", 600, false, 0 },
	{ "fleet1h", 3600, false, 3 },
};

int
ch_tier_select(struct buf *b, const char *db, size_t t, const char *v)
{
	const struct ch_tier *ti = &ch_tiers[t];

	buf_printf(b, "SELECT date, toDateTime(intDiv(toUInt32(time), %d) * %d) AS window, "
	    "service, type, %s", ti->width, ti->width, ti->labels ? "labels, " : "");
	/* The shared expressions hold %% for printf. */
	buf_printf(b, CH_SAMPLE_COLS("%s"), v);
	buf_printf(b, " FROM %s.profiles_local " CH_ARRAY_JOIN, db);
	return buf_error(b);
}

/*
 * " ENGINE = ..." of the table over every shard's `local` table: Distributed
 * over the cluster, or, alone, a Merge table over the server's own.
 */
static int
all_engine(const struct cluster *c, const char *local, const char *key, struct buf *out)
{
	if (c->alone)
		return buf_printf(out, " ENGINE = Merge(%s, '^%s$')", c->db, local);
	return buf_printf(out, " ENGINE = Distributed(%s, %s, %s, %s)", c->name, c->db, local,
	    key);
}

/* The statements that make tier t (its table, view, Distributed table). */
static int
tier_schema(struct cluster *c, size_t i, size_t t, struct buf *err)
{
	const struct ch_tier *ti = &ch_tiers[t];
	const char *lab = ti->labels ? "labels, " : "";
	struct buf sql = { 0 }, tab = { 0 };
	int rc;

	buf_printf(&sql, "CREATE TABLE IF NOT EXISTS %s.%s_local (date Date, window DateTime, "
	    "service String, type String, %ssigh UInt64, stack FixedString(32), vi UInt8, "
	    "gsid UInt64, value Int64) ENGINE = ", c->db, ti->name,
	    ti->labels ? "labels String, " : "");
	buf_printf(&tab, "%s_local", ti->name);
	buf_addc(&tab, '\0');
	if ((rc = buf_error(&tab)) < 0)
		goto out;
	cluster_engine(c, "SummingMergeTree(value)", tab.data, &sql);
	buf_printf(&sql, " PARTITION BY date ORDER BY (service, type, %swindow, sigh, gsid, stack, vi)",
	    lab);
	if ((rc = buf_error(&sql)) < 0 || (rc = ch_exec_on(c, i, sql.data, NULL, err, NULL)) < 0)
		goto out;
	/* Summed per inserted batch already: the parts stay small before merges. */
	buf_reset(&sql);
	buf_printf(&sql, "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.%s_mv TO %s.%s_local AS ",
	    c->db, ti->name, c->db, ti->name);
	if (ti->from < 0)
		ch_tier_select(&sql, c->db, t, "sum(val) AS value");
	else
		buf_printf(&sql, "SELECT date, toDateTime(intDiv(toUInt32(window), %d) * %d) AS "
		    "window, service, type, %ssigh, stack, vi, gsid, sum(value) AS value FROM %s.%s_mv",
		    ti->width, ti->width, lab, c->db, ch_tiers[ti->from].name);
	buf_printf(&sql, " GROUP BY date, window, service, type, %ssigh, gsid, stack, vi", lab);
	if ((rc = buf_error(&sql)) < 0 || (rc = ch_exec_on(c, i, sql.data, NULL, err, NULL)) < 0)
		goto out;
	buf_reset(&sql);
	buf_printf(&sql, "CREATE TABLE IF NOT EXISTS %1$s.%2$s AS %1$s.%2$s_local", c->db,
	    ti->name);
	all_engine(c, tab.data, "rand()", &sql);
	if ((rc = buf_error(&sql)) == 0)
		rc = ch_exec_on(c, i, sql.data, NULL, err, NULL);
out:
	buf_free(&tab);
	buf_free(&sql);
	return rc;
}

int
cluster_engine(const struct cluster *c, const char *kind, const char *table, struct buf *out)
{
	const char *args = strchr(kind, '(');
	size_t n = args ? (size_t)(args - kind) : strlen(kind);

	if (!c->replicated)
		return buf_adds(out, kind);
	/* ReplicatedX('/clickhouse/tables/{shard}/db.table', '{replica}'[, args]) */
	buf_printf(out, "Replicated%.*s('/clickhouse/tables/{shard}/%s.%s', '{replica}'", (int)n,
	    kind, c->db, table);
	if (args && args[1] != ')')
		buf_printf(out, ", %s", args + 1);
	else
		buf_addc(out, ')');
	return buf_error(out);
}

/* Statement k of the schema into sql. */
static int
ddl_format(const struct cluster *c, size_t k, struct buf *sql)
{
	const struct ddl *d = &schema[k];

	buf_printf(sql, d->head, c->db, c->name);
	if (d->key)
		all_engine(c, d->table, d->key, sql);
	if (d->kind) {
		buf_adds(sql, " ENGINE = ");
		cluster_engine(c, d->kind, d->table, sql);
		buf_addc(sql, ' ');
		buf_printf(sql, d->tail, c->db, c->name);
	}
	return buf_error(sql);
}

static void
set_status(struct cluster *c, const char *s)
{
	bool changed;

	pthread_mutex_lock(&c->lock);
	changed = strcmp(c->status, s) != 0;
	snprintf(c->status, sizeof(c->status), "%s", s);
	pthread_mutex_unlock(&c->lock);
	if (changed) {
		if (strcmp(s, "ok") == 0)
			log_info("clickhouse: connected (%s, database %s, %s%s)",
			    c->urls[atomic_load(&c->cur)].shown, c->db,
			    c->alone ? "one server, no cluster " : "cluster ", c->name);
		else
			log_warnx("clickhouse: %s", s);
	}
	metrics_set("profilefs_clickhouse_up", NULL, strcmp(s, "ok") == 0);
}

/*
 * profiles_local of server i made by an earlier build with ClickHouse's
 * default granules (8192 rows): correct, but a read of one host's hour
 * reads far more than it needs. Told once per server, with the way to
 * remake it.
 */
static void
old_granules(struct cluster *c, size_t i)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	const char *p, *want = PROFILES_GRANULE;

	if (!c->urls[i].granules_told) {
		buf_printf(&sql, "SHOW CREATE TABLE %s.profiles_local", c->db);
		if (buf_error(&sql) || ch_exec_on(c, i, sql.data, &ans, &err, NULL) < 0 ||
		    buf_addc(&ans, '\0') < 0 || ans.len < 8 || strncmp(ans.data, "CREATE", 6) != 0)
			goto out;	/* not there: nothing to tell */
		/* Without the setting, the table has ClickHouse's default. */
		if ((p = strstr(ans.data, "index_granularity = ")) == NULL)
			p = "8192";
		else
			p += strlen("index_granularity = ");
		if (strncmp(p, want, strlen(want)) == 0 && !isdigit((unsigned char)p[strlen(want)]))
			goto out;
		log_warnx("clickhouse: %s: %s.profiles_local was made by an earlier build "
		    "(index_granularity = %.*s): reads stay exact but read more than they need; "
		    "docs/clickhouse.md (Upgrading a database made by an earlier build) tells how to remake it",
		    c->urls[i].shown, c->db, (int)strspn(p, "0123456789"), p);
		c->urls[i].granules_told = true;
	}
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
}

/*
 * Views of server i made by an earlier build, when every tier's view summed
 * the profiles' samples (ARRAY JOIN): exact, but ClickHouse reads every
 * sample five times per batch instead of twice (ch_tiers). Told once per
 * server, with the way to remake them.
 */
static void
old_views(struct cluster *c, size_t i)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	size_t t, n = 0;

	if (c->urls[i].views_told)
		return;
	buf_adds(&sql, "SELECT name FROM system.tables WHERE database = ");
	ch_quote(&sql, c->db);
	buf_adds(&sql, " AND name IN (");
	for (t = 0; t < CH_NTIERS; t++)
		if (ch_tiers[t].from >= 0)
			buf_printf(&sql, "%s'%s_mv'", n++ ? ", " : "", ch_tiers[t].name);
	buf_adds(&sql, ") AND position(create_table_query, 'ARRAY JOIN') > 0 "
	    "ORDER BY name FORMAT TabSeparated");
	if (buf_error(&sql) || ch_exec_on(c, i, sql.data, &ans, &err, NULL) < 0 ||
	    buf_addc(&ans, '\0') < 0 || ans.len < 2)
		goto out;
	for (t = 0; t + 1 < ans.len; t++)
		if (ans.data[t] == '\n')
			ans.data[t] = t + 2 < ans.len ? ' ' : '\0';
	log_warnx("clickhouse: %s: the views %s of %s were made by an earlier build (each sums "
	    "every sample of a batch): sums stay exact, ClickHouse spends more CPU per profile; "
	    "docs/clickhouse.md (Upgrading a database made by an earlier build) tells how to "
	    "remake them", c->urls[i].shown, ans.data, c->db);
	c->urls[i].views_told = true;
out:
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
}

/* Whether name is one of the tables over every shard that the schema makes. */
static bool
all_table(const char *name)
{
	size_t k, n;

	for (k = 0; k < sizeof(schema) / sizeof(schema[0]); k++)
		if (schema[k].key && (n = strlen(name)) + 6 == strlen(schema[k].table) &&
		    strncmp(schema[k].table, name, n) == 0)
			return true;
	for (k = 0; k < CH_NTIERS; k++)
		if (strcmp(ch_tiers[k].name, name) == 0)
			return true;
	return false;
}

/*
 * The tables over every shard on server i, if there: Merge tables (made
 * alone) are dropped once the server has the cluster, to be made again as
 * Distributed ones (they hold nothing); Distributed tables on a server now
 * alone are refused, as rows inserted into them may wait in their
 * directories for shards that are no longer configured.
 */
static int
all_tables_fit(struct cluster *c, size_t i, struct buf *err)
{
	struct buf sql = { 0 }, ans = { 0 };
	struct tsv t;
	int rc;

	buf_adds(&sql, "SELECT name, engine FROM system.tables WHERE database = ");
	ch_quote(&sql, c->db);
	buf_adds(&sql, " AND engine IN ('Merge', 'Distributed') FORMAT TabSeparated");
	if ((rc = buf_error(&sql)) < 0 || (rc = ch_exec_on(c, i, sql.data, &ans, err, NULL)) < 0)
		goto out;
	tsv_init(&t, &ans);
	while (rc == 0 && tsv_next(&t) > 0) {
		if (t.nf != 2 || !all_table(t.f[0]))
			continue;	/* not one of ours */
		if (c->alone && strcmp(t.f[1], "Distributed") == 0) {
			buf_printf(err, "%s has no cluster '%s' in its remote_servers, but "
			    "its database %s holds Distributed tables over it (%s): put the "
			    "cluster back in its config, or, once nothing waits in them to be "
			    "sent, drop the Distributed tables of %s (a single server's are made "
			    "again as Merge tables over its own)", c->urls[i].shown, c->name,
			    c->db, t.f[0], c->db);
			rc = -EPROTO;
		} else if (!c->alone && strcmp(t.f[1], "Merge") == 0) {
			buf_reset(&sql);
			buf_printf(&sql, "DROP TABLE IF EXISTS %s.%s", c->db, t.f[0]);
			if ((rc = buf_error(&sql)) == 0 &&
			    (rc = ch_exec_on(c, i, sql.data, NULL, err, NULL)) == 0)
				log_info("clickhouse: %s: %s.%s, a single server's Merge table, is "
				    "made again as a Distributed one over cluster '%s'",
				    c->urls[i].shown, c->db, t.f[0], c->name);
		}
	}
	tsv_free(&t);
out:
	buf_free(&sql);
	buf_free(&ans);
	return rc;
}

/*
 * Server i: check its version, the cluster, what its database holds, and
 * create the schema there. *reached: false when it could not be reached
 * (not an answer with an error).
 */
static int
server_schema(struct cluster *c, size_t i, struct buf *err, bool *reached)
{
	struct buf ans = { 0 }, sql = { 0 };
	unsigned major = 0, minor = 0;
	bool refused = false, alone;
	size_t k;
	int rc, n;

	*reached = true;
	if ((rc = ch_exec_on(c, i, "SELECT version()", &ans, err, &refused)) < 0) {
		*reached = refused;
		goto out;
	}
	buf_addc(&ans, '\0');
	n = 0;
	if (sscanf(ans.data, "%u.%u.%*u%n", &major, &minor, &n) != 2 || n == 0 ||
	    (ans.data[n] != '\n' && ans.data[n] != '.')) {
		buf_printf(err, "%s does not answer like ClickHouse (SELECT version() gave "
		    "'%.40s')", c->urls[i].shown, ans.data);
		rc = -EPROTO;
		goto out;
	}
	if (major < CH_MIN_MAJOR || (major == CH_MIN_MAJOR && minor < CH_MIN_MINOR)) {
		buf_printf(err, "%s runs ClickHouse %u.%u; at least %d.%d is needed",
		    c->urls[i].shown, major, minor, CH_MIN_MAJOR, CH_MIN_MINOR);
		rc = -EPROTO;
		goto out;
	}
	buf_reset(&sql);
	buf_adds(&sql, "SELECT count() FROM system.clusters WHERE cluster = ");
	ch_quote(&sql, c->name);
	buf_reset(&ans);
	if ((rc = ch_exec_on(c, i, sql.data, &ans, err, NULL)) < 0)
		goto out;
	if (ans.len < 2 || ans.data[0] < '0' || ans.data[0] > '9') {
		buf_printf(err, "%s did not say which clusters it has (%.60s)", c->urls[i].shown,
		    ans.len ? ans.data : "");
		rc = -EPROTO;
		goto out;
	}
	alone = ans.data[0] == '0' && ans.data[1] == '\n';
	if (alone && (c->nurls > 1 || c->replicated || c->name_given)) {
		buf_printf(err, "%s has no cluster '%s' in its remote_servers (%s; a single "
		    "server needs none: give it alone, without --clickhouse-cluster and "
		    "--clickhouse-replicated)", c->urls[i].shown, c->name,
		    c->nurls > 1 ? "several servers are given: their Distributed tables need it" :
		    c->replicated ? "--clickhouse-replicated needs it" :
		    "--clickhouse-cluster names it");
		rc = -EPROTO;
		goto out;
	}
	if (alone != c->alone) {
		if (alone)
			log_info("clickhouse: %s has no cluster '%s' in its remote_servers: one "
			    "server alone, its tables read through Merge tables (no Distributed "
			    "ones); add the cluster to its config to have shards", c->urls[i].shown,
			    c->name);
		else if (c->urls[i].schema)
			log_info("clickhouse: %s now has cluster '%s': Distributed tables from "
			    "here on", c->urls[i].shown, c->name);
		c->alone = alone;
	}
	if ((rc = all_tables_fit(c, i, err)) < 0)
		goto out;
	/*
	 * Which shard of the cluster the server is, for reads that ask each
	 * shard directly (ch_scatter()): the one shard with is_local rows (18.16
	 * marks every replica of the shard that holds the server), and how
	 * many shards its remote_servers lists. Anything else (no such shard,
	 * or a server in two) leaves it unknown: reads go through the
	 * Distributed tables.
	 */
	buf_reset(&sql);
	buf_adds(&sql, "SELECT uniqExactIf(shard_num, is_local), anyIf(shard_num, is_local), "
	    "uniqExact(shard_num) FROM system.clusters WHERE cluster = ");
	ch_quote(&sql, c->name);
	buf_adds(&sql, " FORMAT TabSeparated");
	buf_reset(&ans);
	/* Alone, the server is the one shard: reads ask its own tables. */
	if (alone)
		buf_adds(&ans, "1\t1\t1\n");
	else if ((rc = ch_exec_on(c, i, sql.data, &ans, err, NULL)) < 0)
		goto out;
	if ((rc = buf_error(&ans)) < 0)
		goto out;
	{
		struct tsv t;
		uint64_t nlocal = 0, num = 0, nsh = 0;

		tsv_init(&t, &ans);
		if (tsv_next(&t) != 1 || t.nf != 3 || tsv_u64(t.f[0], &nlocal) < 0 ||
		    tsv_u64(t.f[1], &num) < 0 || tsv_u64(t.f[2], &nsh) < 0 || nlocal != 1 ||
		    num == 0 || num > nsh)
			num = nsh = 0;
		tsv_free(&t);
		/* A server that is now another shard: no read shard by shard until checked again. */
		if (atomic_load(&c->urls[i].shard_num) != num ||
		    atomic_load(&c->urls[i].cluster_shards) != nsh) {
			atomic_store(&c->direct, false);
			atomic_store(&c->urls[i].cluster_shards, (size_t)nsh);
			atomic_store(&c->urls[i].shard_num, (size_t)num);
		}
	}
	/* A database of an earlier build: 64-bit stack hashes, refused. */
	buf_reset(&sql);
	buf_adds(&sql, "SELECT type FROM system.columns WHERE database = ");
	ch_quote(&sql, c->db);
	buf_adds(&sql, " AND table = 'stacks_local' AND name = 'hash'");
	buf_reset(&ans);
	if ((rc = ch_exec_on(c, i, sql.data, &ans, err, NULL)) < 0)
		goto out;
	if (ans.len >= 6 && memcmp(ans.data, "UInt64", 6) == 0) {
		buf_printf(err, "database %s on %s holds the schema of an earlier profilefs "
		    "(stacks keyed by a 64-bit hash, which pushed data can forge); drop it "
		    "(DROP DATABASE %s ON CLUSTER %s) or give another database in the URL",
		    c->db, c->urls[i].shown, c->db, c->name);
		rc = -EPROTO;
		goto out;
	}
	/* Replicated tables or not: the database's are what it holds. */
	buf_reset(&sql);
	buf_adds(&sql, "SELECT engine FROM system.tables WHERE database = ");
	ch_quote(&sql, c->db);
	buf_adds(&sql, " AND name = 'profiles_local'");
	buf_reset(&ans);
	if ((rc = ch_exec_on(c, i, sql.data, &ans, err, NULL)) < 0)
		goto out;
	if (ans.len > 1 && (strncmp(ans.data, "Replicated", 10) == 0) != c->replicated) {
		buf_printf(err, "database %s on %s holds %sreplicated tables (%.*s) but "
		    "--clickhouse-replicated is %s; give another database in the URL",
		    c->db, c->urls[i].shown, c->replicated ? "non-" : "",
		    (int)strcspn(ans.data, "\n"), ans.data, c->replicated ? "given" : "not given");
		rc = -EPROTO;
		goto out;
	}
	/* Schema 1 (no per-window headers, totals, hourly sums): refused. */
	buf_reset(&sql);
	buf_adds(&sql, "SELECT countIf(name = 'gauges'), count() FROM system.columns "
	    "WHERE database = ");
	ch_quote(&sql, c->db);
	buf_adds(&sql, " AND table = 'profiles_local' FORMAT TabSeparated");
	buf_reset(&ans);
	if ((rc = ch_exec_on(c, i, sql.data, &ans, err, NULL)) < 0)
		goto out;
	if (ans.len >= 3 && ans.data[0] == '0' && ans.data[1] == '\t' && ans.data[2] != '0') {
		buf_printf(err, "database %s on %s holds schema 1 of profilefs (this build "
		    "writes schema %d: per-window headers and totals, hourly sums); drop it "
		    "(DROP DATABASE %s ON CLUSTER %s) or give another database in the URL",
		    c->db, c->urls[i].shown, CH_SCHEMA_VERSION, c->db, c->name);
		rc = -EPROTO;
		goto out;
	}
	for (k = 0; k < sizeof(schema) / sizeof(schema[0]); k++) {
		buf_reset(&sql);
		if ((rc = ddl_format(c, k, &sql)) < 0 ||
		    (rc = ch_exec_on(c, i, sql.data, NULL, err, NULL)) < 0)
			goto out;
	}
	for (k = 0; k < CH_NTIERS; k++)
		if ((rc = tier_schema(c, i, k, err)) < 0)
			goto out;
	old_granules(c, i);
	old_views(c, i);
	c->urls[i].schema = true;
out:
	buf_free(&ans);
	buf_free(&sql);
	return rc;
}

/*
 * Check the servers and create the schema on each. Without replicas every
 * server must answer; with them, a server that cannot be reached is left
 * for later (schema_catch_up()) as long as a replica of its shard took the
 * schema.
 */
static int
connect_schema(struct cluster *c, struct buf *err)
{
	struct buf one = { 0 }, down = { 0 };
	bool reached, up[CH_MAX_URLS] = { false };
	size_t i, g;
	int rc = 0;

	for (i = 0; i < c->nurls && rc == 0; i++) {
		buf_reset(&one);
		if ((rc = server_schema(c, i, &one, &reached)) == 0)
			up[c->urls[i].shard] = true;
		else if (!c->replicated || reached)
			buf_add(err, one.data, one.len);
		else {
			buf_printf(&down, "%s%s", down.len ? "; " : "", one.data ? one.data : "");
			rc = 0;
		}
	}
	for (g = 0; g < c->nshards && rc == 0; g++)
		if (!up[g]) {
			buf_add(err, down.data, down.len);	/* why each of its replicas failed */
			rc = -EIO;
		}
	if (rc == 0 && down.len)
		log_warnx("clickhouse: replicas down, their shards served by the others: %s",
		    down.data);
	if (rc == 0)
		ch_direct_check(c);
	buf_free(&one);
	buf_free(&down);
	if (rc < 0)
		return rc;
	/* Once per start: a reconnect does not undo a newer setting made elsewhere. */
	if (c->set_retention >= 0) {
		if ((rc = settings_put_retention(c, err)) < 0)
			return rc;
		c->set_retention = -1;
	}
	return 0;
}

/* Replicas that were down when the schema was made: made now if they answer. */
static void
schema_catch_up(struct cluster *c)
{
	struct buf err = { 0 };
	bool reached;
	size_t i;

	for (i = 0; i < c->nurls; i++) {
		if (c->urls[i].schema)
			continue;
		buf_reset(&err);
		if (server_schema(c, i, &err, &reached) == 0) {
			log_info("clickhouse: replica %s is back: schema in place",
			    c->urls[i].shown);
			ch_direct_check(c);
		}
		else if (reached)
			log_warnx("clickhouse: replica %s: %s", c->urls[i].shown, err.data);
	}
	buf_free(&err);
}

/* --- building a batch ------------------------------------------------------ */

struct batch {
	struct cluster	*c;
	struct buf	 rows;		/* profiles, RowBinary */
	struct buf	 stacks;	/* stacks, RowBinary */
	struct intern	*seen;		/* stack addresses (hex) whose frames are in this batch */
	struct shipped	*shipped;	/* stack keys to addresses, and which were shipped */
	struct buf	 keys;		/* stack keys (2 x uint64_t) not shipped before this batch */
	size_t		 nstacks;	/* frames in stacks */
	uint64_t	*ids, *gids;
	size_t		 n, cap, nrows;
	uint64_t	 first;
	int		 month;
	int		 shipped_month;	/* the month of the last batch shipped (0: none) */
	struct buf	 dates;		/* "'YYYY-MM-DD'," of the batch */
	uint64_t	 gone;
	uint64_t	 encoded;	/* stacks whose text was written, since start */
	uint64_t	 known;		/* stacks whose address came from the shipped set */
	/*
	 * The batch was sent and may have arrived: it is checked, then sent
	 * again as it was, byte for byte, so that a replica that took it
	 * (ReplicatedMergeTree keeps the digests of the blocks it took) drops
	 * the copy even when the check read a replica that had not caught up.
	 */
	bool		 held;
	/*
	 * Built ahead, while the batch before it was being inserted (a
	 * backlog): it follows that batch's profiles in the outbox and leaves
	 * out the frames that batch carries (inflight, its seen set, during
	 * the build only). Used only if that batch went in and nothing made
	 * the shipped set forget since (epoch); else built again.
	 */
	bool		 ready;
	uint32_t	 epoch;
	struct intern	*inflight;
	struct buf	 st, tmp;	/* scratch */
	/* Profiles with spans to read once the outbox walk is over (struct span_todo). */
	struct buf	 todo, todo_str;
	struct buf	 spans;		/* spans_local rows, RowBinary */
	uint64_t	 span_rows, span_cut;
};

/* A profile of the batch whose span record is read after the walk (ship_spans()). */
struct span_todo {
	struct store_ref ref;
	uint64_t	 gid;
	uint16_t	 day;
	size_t		 lab;		/* offsets in todo_str: labels, service, type */
	size_t		 svc, type;
};

static uint64_t
gid_of(const char *host, uint64_t id)
{
	struct buf b = { 0 };
	uint64_t h;

	buf_adds(&b, host);
	buf_addc(&b, '\0');
	buf_add(&b, &id, sizeof(id));
	h = hash_bytes(b.data, b.len);
	buf_free(&b);
	return h;
}

static int
add_id(struct batch *b, uint64_t id, uint64_t gid)
{
	if (b->n == b->cap) {
		b->ids = xreallocarray(b->ids, b->cap ? b->cap * 2 : 256, sizeof(*b->ids));
		b->gids = xreallocarray(b->gids, b->cap ? b->cap * 2 : 256, sizeof(*b->gids));
		b->cap = b->cap ? b->cap * 2 : 256;
	}
	b->ids[b->n] = id;
	b->gids[b->n++] = gid;
	return 0;
}

/* A signature's digest (sigh): 64 bits of its digest128(), the same on every host. */
static uint64_t
sig_digest(const char *sig, size_t len)
{
	char h[DIGEST128_HEX + 1];

	digest128(sig, len, h);
	h[16] = '\0';
	return strtoull(h, NULL, 16);
}

struct sorted_sample {
	const char	*h;		/* DIGEST128_HEX bytes */
	size_t		 i;
};

static int
digest_cmp(const void *a, const void *b)
{
	const struct sorted_sample *x = a, *y = b;
	int d = memcmp(x->h, y->h, DIGEST128_HEX);

	return d ? d : (x->i > y->i) - (x->i < y->i);
}

/*
 * RowBinary, as ClickHouse reads it: integers little-endian, strings and
 * arrays after their length as a LEB128 varint.
 */
static void
rb_put(struct buf *b, uint64_t v, size_t n)
{
	unsigned char x[8];
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	buf_add(b, x, n);
}

static void
rb_putstr(struct buf *b, const char *s, size_t n)
{
	buf_add_varint(b, n);
	buf_add(b, s, n);
}

/*
 * One profile's row, and the frames of its stacks not shipped yet. A
 * stack's address is the digest of its text (its frames and labels), the
 * very bytes a reader checks; the text is written only for a stack whose
 * address the shipped set does not know, and shipped only when it is new
 * to this batch and not shipped already.
 */
static int
add_profile(struct batch *b, const struct store_ref *ref, const struct series *s,
    const struct profile *p, uint64_t gid, int month, uint16_t day)
{
	struct cluster *c = b->c;
	struct labelset ls;
	struct buf lab = { 0 }, *st = &b->st, *tmp = &b->tmp;
	struct sorted_sample *order = NULL;
	struct stackkey sk;
	char *hexes = NULL;
	uint64_t gauges;
	int64_t secs = ref->time / 1000000000 - (ref->time % 1000000000 < 0);
	size_t i, k;
	int rc, added;

	memset(&ls, 0, sizeof(ls));
	if ((rc = stackkey_begin(&sk, p, shipped_key(b->shipped))) < 0)
		return rc;
	if ((rc = labels_parse(s->labels, &ls, NULL)) < 0)
		goto out;
	for (i = 0; i < ls.n && strcmp(ls.pairs[i].key, "host") != 0; i++)
		;
	if (i == ls.n && (rc = labels_add(&ls, "host", c->host, NULL)) < 0)
		goto out;
	if ((rc = labels_format(&ls, &lab)) < 0 || (rc = buf_reserve(&lab, 0)) < 0)
		goto out;
	/* date, time, ns, host, id, gid, batch, service, type, labels */
	rb_put(&b->rows, day, 2);
	rb_put(&b->rows, (uint64_t)(secs < 0 ? 0 : secs > UINT32_MAX ? UINT32_MAX : secs), 4);
	rb_put(&b->rows, (uint64_t)ref->time, 8);
	rb_putstr(&b->rows, c->host, strlen(c->host));
	rb_put(&b->rows, ref->id, 8);
	rb_put(&b->rows, gid, 8);
	rb_put(&b->rows, gid_of(c->host, b->first), 8);
	rb_putstr(&b->rows, s->service, strlen(s->service));
	rb_putstr(&b->rows, s->type, strlen(s->type));
	rb_putstr(&b->rows, lab.data ? lab.data : "", lab.len);
	/* sig, sigh, hdr, period, ntypes, gauges, totals */
	buf_reset(tmp);
	if ((rc = profile_signature(p, tmp)) < 0 || (rc = buf_error(tmp)) < 0)
		goto out;
	rb_putstr(&b->rows, tmp->data ? tmp->data : "", tmp->len);
	rb_put(&b->rows, sig_digest(tmp->data ? tmp->data : "", tmp->len), 8);
	buf_reset(tmp);
	if ((rc = codec_header(p, tmp)) < 0)
		goto out;
	rb_putstr(&b->rows, tmp->data ? tmp->data : "", tmp->len);
	gauges = 0;
	for (k = 0; k < p->nsample_types && k < 64; k++)
		if (profile_type_is_gauge(profile_str(p, p->sample_types[k].type)))
			gauges |= UINT64_C(1) << k;
	rb_put(&b->rows, (uint64_t)p->period, 8);
	rb_put(&b->rows, p->nsample_types, 1);
	rb_put(&b->rows, gauges, 8);
	buf_add_varint(&b->rows, p->nsample_types);
	for (k = 0; k < p->nsample_types; k++)
		rb_put(&b->rows, (uint64_t)profile_total(p, k), 8);
	/*
	 * Samples in the order of their digests: a host's next profile holds
	 * mostly the same stacks, so its arrays repeat the last ones' runs and
	 * compress.
	 */
	order = xcalloc(p->nsamples + 1, sizeof(*order));
	hexes = xcalloc(p->nsamples + 1, DIGEST128_HEX);
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *sm = &p->samples[i];
		char *h = hexes + i * DIGEST128_HEX, full[DIGEST128_HEX + 1];
		const char *known;
		uint64_t key[2];
		bool is_shipped, have_text = false;

		order[i].h = h;
		order[i].i = i;
		if ((rc = stackkey_stack(&sk, sm, key)) < 0)
			goto out;
		if ((known = shipped_get(b->shipped, key, &is_shipped)) != NULL) {
			memcpy(h, known, DIGEST128_HEX);
			b->known++;
			if (is_shipped)
				continue;	/* neither written nor sent again */
		} else {
			buf_reset(st);
			if ((rc = codec_stack(p, sm, st)) < 0 || (rc = buf_error(st)) < 0)
				goto out;
			digest128(st->data ? st->data : "", st->len, full);
			memcpy(h, full, DIGEST128_HEX);
			shipped_put(b->shipped, key, h);
			have_text = true;
			b->encoded++;
		}
		if (intern_put(b->seen, h, DIGEST128_HEX, &added) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		/*
		 * Marked shipped once the batch is in, whether its frames were
		 * written for this key or for another with the same address.
		 */
		buf_add(&b->keys, key, sizeof(key));
		if (!added)
			continue;
		/* Its frames are in the batch in flight, which this one follows. */
		if (b->inflight && intern_get(b->inflight, h, DIGEST128_HEX) >= 0)
			continue;
		if (!have_text) {
			/* Known, not shipped (a failed batch, a new month): its text once more. */
			buf_reset(st);
			if ((rc = codec_stack(p, sm, st)) < 0 || (rc = buf_error(st)) < 0)
				goto out;
			b->encoded++;
		}
		/* date, hash, frames */
		rb_put(&b->stacks, day, 2);
		buf_add(&b->stacks, h, DIGEST128_HEX);
		rb_putstr(&b->stacks, st->data ? st->data : "", st->len);
		b->nstacks++;
	}
	if (p->nsamples)
		qsort(order, p->nsamples, sizeof(*order), digest_cmp);
	/* stacks: an address per value; vals: ntypes per sample */
	buf_add_varint(&b->rows, p->nsamples * p->nsample_types);
	for (i = 0; i < p->nsamples; i++)
		for (k = 0; k < p->nsample_types; k++)
			buf_add(&b->rows, order[i].h, DIGEST128_HEX);
	buf_add_varint(&b->rows, p->nsamples * p->nsample_types);
	for (i = 0; i < p->nsamples; i++)
		for (k = 0; k < p->nsample_types; k++)
			rb_put(&b->rows, (uint64_t)p->samples[order[i].i].values[k], 8);
	b->nrows += p->nsamples;
	b->month = month;
	{
		struct span_todo td;

		memset(&td, 0, sizeof(td));
		td.ref = *ref;
		td.gid = gid;
		td.day = day;
		td.lab = b->todo_str.len;
		buf_add(&b->todo_str, lab.data ? lab.data : "", lab.len + 1);
		td.svc = b->todo_str.len;
		buf_add(&b->todo_str, s->service, strlen(s->service) + 1);
		td.type = b->todo_str.len;
		buf_add(&b->todo_str, s->type, strlen(s->type) + 1);
		buf_add(&b->todo, &td, sizeof(td));
	}
	rc = buf_error(&b->rows) ? buf_error(&b->rows) :
	    buf_error(&b->stacks) ? buf_error(&b->stacks) :
	    buf_error(&b->todo) ? buf_error(&b->todo) :
	    buf_error(&b->todo_str) ? buf_error(&b->todo_str) : buf_error(&b->keys);
out:
	stackkey_end(&sk);
	free(order);
	free(hexes);
	labels_clear(&ls);
	buf_free(&lab);
	return rc;
}

static int
batch_cb(void *arg, const struct store_ref *ref, const struct series *s, const void *data,
    size_t len)
{
	struct batch *b = arg;
	struct cluster *c = b->c;
	struct profile *p = NULL;
	struct buf err = { 0 };
	char date[40];
	struct tm tm;
	time_t t = (time_t)(ref->time / 1000000000 - (ref->time % 1000000000 < 0));
	uint64_t gid = gid_of(c->host, ref->id);
	int rc;

	if (b->nrows >= c->batch_rows || b->n >= BATCH_PROFILES)
		return 1;
	if (b->n == 0)
		b->first = ref->id;
	if (data == NULL) {
		/* Removed locally (retention, size cap) before it could be shipped. */
		b->gone++;
		return add_id(b, ref->id, 0);
	}
	if ((rc = profile_decode(data, len, &p, &err)) < 0) {
		log_warnx("clickhouse: profile %016" PRIx64 " cannot be read back (%s); not shipped",
		    ref->id, err.data ? err.data : strerror(-rc));
		buf_free(&err);
		b->gone++;
		return add_id(b, ref->id, 0);
	}
	gmtime_r(&t, &tm);
	snprintf(date, sizeof(date), "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
	    tm.tm_mday);
	if (b->month && b->month != tm.tm_year * 12 + tm.tm_mon) {
		profile_free(p);
		return 1;	/* stacks of one month per batch */
	}
	/*
	 * stacks_local has a partition per month, dropped whole by retention:
	 * a month's profiles ship again, into its own partition, every stack
	 * they use.
	 */
	if (b->month == 0 && b->shipped_month && b->shipped_month != tm.tm_year * 12 + tm.tm_mon)
		shipped_forget(b->shipped);
	rc = add_profile(b, ref, s, p, gid, tm.tm_year * 12 + tm.tm_mon,
	    (uint16_t)(t < 0 ? 0 : t / 86400 > UINT16_MAX ? UINT16_MAX : t / 86400));
	profile_free(p);
	if (rc < 0)
		return rc;
	if (b->dates.len == 0 || strstr(b->dates.data, date) == NULL)
		buf_printf(&b->dates, "%s'%s'", b->dates.len ? "," : "", date);
	return add_id(b, ref->id, gid);
}

static void
batch_reset(struct batch *b)
{
	buf_reset(&b->rows);
	buf_reset(&b->stacks);
	buf_reset(&b->keys);
	buf_reset(&b->todo);
	buf_reset(&b->todo_str);
	buf_reset(&b->spans);
	b->nstacks = 0;
	buf_reset(&b->dates);
	intern_destroy(b->seen);
	b->seen = intern_create(1024);
	b->n = b->nrows = 0;
	b->gone = 0;
	b->month = 0;
	b->held = false;
	b->ready = false;
	b->inflight = NULL;
}

/*
 * The batch may have reached ClickHouse (an error after sending, a crash):
 * drop from it the profiles that did. Rebuilt from the outbox without them.
 */
static int
batch_present(struct cluster *c, struct batch *b, struct intern **present, struct buf *err)
{
	struct buf sql = { 0 }, ans = { 0 };
	const char *sep;
	struct tsv t;
	size_t i;
	int rc, r;

	*present = NULL;
	if (b->dates.len == 0)
		return 0;
	buf_printf(&sql, "SELECT gid FROM %s.%s WHERE date IN (%s) AND gid IN (", c->db,
	    c->replicated ? "profiles_local" : "profiles", b->dates.data);
	for (i = 0, sep = ""; i < b->n; i++)
		if (b->gids[i]) {
			buf_printf(&sql, "%s%" PRIu64, sep, b->gids[i]);
			sep = ",";
		}
	buf_adds(&sql, ") FORMAT TabSeparated");
	if ((rc = buf_error(&sql)) < 0)
		goto out;
	if (c->replicated) {
		/*
		 * Every replica that answers: the one that took the batch may
		 * not have passed it on yet. Each shard must have one.
		 */
		bool answered[CH_MAX_URLS] = { false }, refused;

		for (i = 0; i < c->nurls; i++) {
			size_t len0 = ans.len;

			if (ch_exec_on(c, i, sql.data, &ans, err, &refused) == 0) {
				answered[c->urls[i].shard] = true;
				continue;
			}
			ans.len = len0;
			if (refused) {
				rc = -EIO;
				goto out;
			}
			buf_adds(err, "; ");
		}
		for (i = 0; i < c->nshards; i++)
			if (!answered[i]) {
				rc = -EIO;
				goto out;
			}
		buf_reset(err);
	} else if ((rc = ch_exec(c, sql.data, NULL, &ans, err, NULL)) < 0)
		goto out;
	*present = intern_create(64);
	tsv_init(&t, &ans);
	while ((r = tsv_next(&t)) > 0) {
		uint64_t g;

		if (t.nf != 1 || tsv_u64(t.f[0], &g) < 0) {
			r = -EINVAL;
			break;
		}
		intern_put(*present, &g, sizeof(g), NULL);
	}
	tsv_free(&t);
	if (r < 0) {
		buf_adds(err, "the check of a batch got a malformed answer");
		rc = -EPROTO;
	}
out:
	buf_free(&sql);
	buf_free(&ans);
	return rc;
}

/* Statement sql with data: through the Distributed table (ClickHouse picks the shard). */
static int
insert_rows(struct cluster *c, const char *table, const char *cols, const struct buf *data,
    struct buf *err, bool *refused)
{
	struct buf sql = { 0 };
	int rc;

	buf_printf(&sql, "INSERT INTO %s.%s%s (%s) FORMAT RowBinary", c->db, table,
	    c->alone ? "_local" : "", cols);
	if ((rc = buf_error(&sql)) == 0)
		rc = ch_exec(c, sql.data, data, NULL, err, refused);
	buf_free(&sql);
	return rc;
}

static int
insert(struct cluster *c, struct batch *b, struct buf *err, bool *refused)
{
	struct buf sql = { 0 };
	int rc = 0;

	if (b->stacks.len) {
		buf_printf(&sql, "INSERT INTO %s.stacks%s (date, hash, frames) FORMAT RowBinary",
		    c->db, c->alone ? "_local" : "");
		rc = ch_exec(c, sql.data, &b->stacks, NULL, err, refused);
	}
	/* Before the profiles: a profile found shipped (batch_present()) has its spans. */
	if (rc == 0 && b->spans.len)
		rc = insert_rows(c, "spans", "date, time, ns, host, gid, batch, service, type, "
		    "labels, hdr, period, span, trace, stack, vals", &b->spans, err, refused);
	if (rc == 0 && b->rows.len)
		rc = insert_rows(c, "profiles", "date, time, ns, host, id, gid, batch, service, "
		    "type, labels, sig, sigh, hdr, period, ntypes, gauges, totals, stacks, vals",
		    &b->rows, err, refused);
	buf_free(&sql);
	return rc;
}

/*
 * Keep at most max_backlog profiles queued: the oldest go (and are
 * counted). True when it dropped some.
 */
static int
drop_cb(void *arg, const struct store_ref *ref, const struct series *s, const void *data,
    size_t len)
{
	struct batch *b = arg;

	(void)s;
	(void)data;
	(void)len;
	return add_id(b, ref->id, 0);
}

static bool
enforce_backlog(struct cluster *c, struct batch *b)
{
	uint64_t n = store_queue_length(c->st);

	if (n <= c->max_backlog)
		return false;
	n -= c->max_backlog;
	batch_reset(b);
	if (store_queue_each(c->st, 0, n > 100000 ? 100000 : (size_t)n, drop_cb, b) >= 0 &&
	    store_queue_remove(c->st, b->ids, b->n) == 0) {
		atomic_fetch_add(&c->dropped, b->n);
		metrics_add("profilefs_clickhouse_dropped_profiles_total", NULL, (double)b->n);
		log_warnx("clickhouse: the backlog is over %" PRIu64 " profiles: the %zu oldest "
		    "will not be shipped", c->max_backlog, b->n);
	}
	batch_reset(b);
	return true;
}

/* Wait up to ns or until stopped; true when stopped. */
static bool
nap(struct cluster *c, int64_t ns)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ns / 1000000000);
	ts.tv_nsec += (long)(ns % 1000000000);
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->lock);
	while (!c->stop && pthread_cond_timedwait(&c->cond, &c->lock, &ts) == 0)
		;
	stop = c->stop;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

/* The span being written by span_cb(), and its profile's. */
struct span_ctx {
	struct batch		*b;
	const struct span_todo	*td;
	size_t			 rows;
};

/* One span of a profile: a row of spans_local per stack. */
static int
span_cb(void *arg, uint64_t span, const unsigned char *trace, const struct profile *p)
{
	struct span_ctx *x = arg;
	struct batch *b = x->b;
	const struct span_todo *td = x->td;
	const char *str = b->todo_str.data;
	struct buf *st = &b->st, *hdr = &b->tmp;
	int64_t secs = td->ref.time / 1000000000 - (td->ref.time % 1000000000 < 0);
	char h[DIGEST128_HEX + 1], tr[33];
	size_t i, k;
	int rc;

	if (trace)
		for (i = 0; i < 16; i++)
			snprintf(tr + 2 * i, 3, "%02x", trace[i]);
	buf_reset(hdr);
	if ((rc = codec_header(p, hdr)) < 0 || (rc = buf_error(hdr)) < 0)
		return rc;
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *sm = &p->samples[i];

		if (x->rows >= SPAN_ROWS_MAX) {
			b->span_cut++;
			continue;
		}
		buf_reset(st);
		if ((rc = codec_stack(p, sm, st)) < 0 || (rc = buf_error(st)) < 0)
			return rc;
		digest128(st->data ? st->data : "", st->len, h);
		/* date, time, ns, host, gid, batch, service, type, labels, hdr, period */
		rb_put(&b->spans, td->day, 2);
		rb_put(&b->spans, (uint64_t)(secs < 0 ? 0 : secs > UINT32_MAX ? UINT32_MAX : secs), 4);
		rb_put(&b->spans, (uint64_t)td->ref.time, 8);
		rb_putstr(&b->spans, b->c->host, strlen(b->c->host));
		rb_put(&b->spans, td->gid, 8);
		rb_put(&b->spans, gid_of(b->c->host, b->first), 8);
		rb_putstr(&b->spans, str + td->svc, strlen(str + td->svc));
		rb_putstr(&b->spans, str + td->type, strlen(str + td->type));
		rb_putstr(&b->spans, str + td->lab, strlen(str + td->lab));
		rb_putstr(&b->spans, hdr->data ? hdr->data : "", hdr->len);
		rb_put(&b->spans, (uint64_t)p->period, 8);
		/* span, trace, stack, vals */
		rb_put(&b->spans, span, 8);
		rb_putstr(&b->spans, tr, trace ? 32 : 0);
		buf_add(&b->spans, h, DIGEST128_HEX);
		buf_add_varint(&b->spans, p->nsample_types);
		for (k = 0; k < p->nsample_types; k++)
			rb_put(&b->spans, (uint64_t)sm->values[k], 8);
		x->rows++;
		b->span_rows++;
	}
	return buf_error(&b->spans);
}

/*
 * The spans of the batch's profiles, read from their span records once
 * the walk of the outbox is over (it holds the store's lock). Their stacks
 * are the profiles' own, shipped with them (the same addresses).
 */
static int
ship_spans(struct batch *b)
{
	const struct span_todo *td = (const struct span_todo *)b->todo.data;
	size_t i, n = b->todo.len / sizeof(*td);
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		struct span_ctx x = { b, &td[i], 0 };

		rc = store_span_groups(b->c->st, &td[i].ref, SPAN_ROWS_MAX, span_cb, &x);
		if (rc == -EINVAL) {
			log_warnx("clickhouse: profile %016" PRIx64 ": its span record is corrupt; "
			    "shipped without spans", td[i].ref.id);
			rc = 0;
		}
	}
	return rc;
}

/*
 * None of the batch's profiles arrived, but its span rows, sent before
 * them, may have: then they are not sent again (each would count twice).
 * Replicated tables drop a block sent again byte for byte themselves.
 */
static int
spans_present(struct cluster *c, struct batch *b, struct buf *err)
{
	struct buf sql = { 0 }, ans = { 0 };
	const char *sep;
	uint64_t n = 0;
	size_t i;
	int rc;

	if (c->replicated || b->spans.len == 0 || b->dates.len == 0)
		return 0;
	buf_printf(&sql, "SELECT count() FROM %s.spans WHERE date IN (%s) AND gid IN (", c->db,
	    b->dates.data);
	for (i = 0, sep = ""; i < b->n; i++)
		if (b->gids[i]) {
			buf_printf(&sql, "%s%" PRIu64, sep, b->gids[i]);
			sep = ",";
		}
	buf_adds(&sql, ") FORMAT TabSeparated");
	if ((rc = buf_error(&sql)) < 0 || (rc = ch_exec(c, sql.data, NULL, &ans, err, NULL)) < 0)
		goto out;
	buf_addc(&ans, '\0');
	n = strtoull(ans.data ? ans.data : "0", NULL, 10);
	if (n >= b->span_rows) {
		log_info("clickhouse: the %" PRIu64 " span rows of an interrupted batch had arrived",
		    n);
		buf_reset(&b->spans);
	} else if (n)
		log_warnx("clickhouse: %" PRIu64 " of the %" PRIu64 " span rows of an interrupted "
		    "batch had arrived: all are sent again (those count twice in span queries)",
		    n, b->span_rows);
out:
	buf_free(&sql);
	buf_free(&ans);
	return rc;
}

/* An INSERT on a thread of its own (insert_ahead()). */
struct sender {
	struct cluster	*c;
	struct batch	*b;
	struct buf	 err;
	bool		 refused;
	int		 rc;
};

static void *
sender_main(void *arg)
{
	struct sender *s = arg;
	struct timespec ts;

	pthread_setname_np(pthread_self(), "pf-ship-send");
	s->rc = insert(s->c, s->b, &s->err, &s->refused);
	/* The thread ends with the INSERT: its CPU is counted here, not in /proc. */
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		metrics_add("profilefs_clickhouse_sender_cpu_seconds_total", NULL,
		    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	return NULL;
}

/*
 * Insert b while next is built from the profiles that follow it in the
 * outbox: the daemon's CPU for a batch (reading the profiles back,
 * encoding them) and ClickHouse's for the one before overlap. next is
 * ready only if b went in. *forgot: the build made the shipped set
 * forget (a new month): b's stacks must not be marked shipped then.
 */
static int
insert_ahead(struct cluster *c, struct batch *b, struct batch *next, struct buf *err,
    bool *refused, bool *forgot)
{
	struct sender s = { .c = c, .b = b };
	pthread_t t;
	uint32_t e0 = shipped_epoch(b->shipped);
	int rc;

	batch_reset(next);
	next->encoded = next->known = next->span_rows = next->span_cut = 0;
	if (pthread_create(&t, NULL, sender_main, &s) != 0)
		return insert(c, b, err, refused);
	next->shipped_month = b->month ? b->month : b->shipped_month;
	next->inflight = b->seen;
	shipped_tick(next->shipped);
	rc = store_queue_each(c->st, b->ids[b->n - 1], BATCH_PROFILES, batch_cb, next);
	if (rc >= 0)
		rc = ship_spans(next);
	next->inflight = NULL;
	pthread_join(t, NULL);
	next->epoch = shipped_epoch(b->shipped);
	*forgot = next->epoch != e0;
	next->ready = rc >= 0 && s.rc == 0 && next->n > 0;
	if (!next->ready) {
		batch_reset(next);
		next->encoded = next->known = next->span_rows = next->span_cut = 0;
	}
	if (s.rc < 0) {
		buf_add(err, s.err.data, s.err.len);
		*refused = s.refused;
	}
	buf_free(&s.err);
	return s.rc;
}

/*
 * One batch: built (unless built ahead), checked if it may be there
 * already, sent, unqueued. With a backlog, the next batch is built while
 * this one is sent (next, optional).
 */
static int
ship_once(struct cluster *c, struct batch *b, struct batch *next, bool *uncertain,
    struct buf *err, bool *refused)
{
	struct intern *present = NULL;
	bool forgot = false;
	size_t i, k;
	int rc;

	if (b->ready)
		b->ready = false;
	else if (!b->held) {
		batch_reset(b);
		shipped_tick(b->shipped);
		if ((rc = store_queue_each(c->st, 0, BATCH_PROFILES, batch_cb, b)) < 0) {
			buf_printf(err, "reading the outbox: %s", strerror(-rc));
			return rc;
		}
		if ((rc = ship_spans(b)) < 0) {
			buf_printf(err, "reading the spans of the outbox: %s", strerror(-rc));
			return rc;
		}
	}
	if (b->n == 0)
		return 0;
	if (*uncertain) {
		if ((rc = batch_present(c, b, &present, err)) < 0)
			return rc;
		for (i = k = 0; i < b->n; i++)
			if (b->gids[i] && intern_get(present, &b->gids[i], sizeof(uint64_t)) >= 0)
				b->ids[k++] = b->ids[i];
		intern_destroy(present);
		if (k) {
			/* Already in ClickHouse: unqueue them, the rest goes next round. */
			log_info("clickhouse: %zu profiles of an interrupted batch had arrived", k);
			b->held = false;
			if ((rc = store_queue_remove(c->st, b->ids, k)) < 0)
				return rc;
			atomic_fetch_add(&c->shipped, k);
			metrics_add("profilefs_clickhouse_shipped_profiles_total", NULL, (double)k);
			return (int)k;
		}
		*uncertain = false;
		if ((rc = spans_present(c, b, err)) < 0)
			return rc;
	}
	if (next && (b->n >= SMALL_PROFILES || b->nrows >= c->batch_rows / 10))
		rc = insert_ahead(c, b, next, err, refused, &forgot);
	else
		rc = insert(c, b, err, refused);
	if (rc < 0) {
		*uncertain = true;
		b->held = true;
		return rc;
	}
	b->held = false;
	for (i = 0; !forgot && i + 2 * sizeof(uint64_t) <= b->keys.len; i += 2 * sizeof(uint64_t)) {
		uint64_t key[2];

		memcpy(key, b->keys.data + i, sizeof(key));
		shipped_mark(b->shipped, key);
	}
	if (b->month)
		b->shipped_month = b->month;
	if ((rc = store_queue_remove(c->st, b->ids, b->n)) < 0) {
		*uncertain = true;
		buf_adds(err, "cannot unqueue what was shipped");
		return rc;
	}
	if (b->gone) {
		atomic_fetch_add(&c->dropped, b->gone);
		metrics_add("profilefs_clickhouse_dropped_profiles_total", NULL, (double)b->gone);
		log_warnx("clickhouse: %" PRIu64 " queued profiles were removed locally before "
		    "they could be shipped", b->gone);
	}
	atomic_fetch_add(&c->shipped, b->n - b->gone);
	atomic_fetch_add(&c->batches, 1);
	metrics_add("profilefs_clickhouse_batches_total", NULL, 1);
	metrics_add("profilefs_clickhouse_shipped_profiles_total", NULL, (double)(b->n - b->gone));
	metrics_add("profilefs_clickhouse_shipped_samples_total", NULL, (double)b->nrows);
	metrics_add("profilefs_clickhouse_stacks_total", "how=\"encoded\"", (double)b->encoded);
	metrics_add("profilefs_clickhouse_stacks_total", "how=\"known\"", (double)b->known);
	metrics_add("profilefs_clickhouse_stacks_shipped_total", NULL, (double)b->nstacks);
	metrics_add("profilefs_clickhouse_span_rows_total", NULL, (double)b->span_rows);
	if (b->span_cut)
		log_warnx("clickhouse: %" PRIu64 " span samples were past %d rows per profile: "
		    "not shipped as spans (their profiles are whole)", b->span_cut, SPAN_ROWS_MAX);
	b->encoded = b->known = 0;
	b->span_rows = b->span_cut = 0;
	return (int)b->n;
}

/*
 * Retention in ClickHouse: drop, on every server, the day partitions wholly
 * older than the cut, and the stacks' month partitions wholly older than it
 * (a month's stacks are shipped again by every month that uses them).
 */
static void
expire(struct cluster *c)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 }, tiers = { 0 };
	int64_t cut = clock_now_ns() - c->retention;
	time_t ct = (time_t)(cut / 1000000000);
	char day[16], month[16];
	struct tm tm;
	size_t i;

	for (i = 0; i < CH_NTIERS; i++)
		buf_printf(&tiers, "%s'%s_local'", i ? ", " : "", ch_tiers[i].name);
	gmtime_r(&ct, &tm);
	/* Partitions before these hold nothing at or after the cut. */
	snprintf(day, sizeof(day), "%04d-%02d-%02d", (tm.tm_year + 1900) % 10000,
	    (tm.tm_mon + 1) % 100, tm.tm_mday % 100);
	snprintf(month, sizeof(month), "%04d%02d", (tm.tm_year + 1900) % 10000,
	    (tm.tm_mon + 1) % 100);
	for (i = 0; i < c->nurls; i++) {
		struct tsv t;
		int r;

		buf_reset(&sql);
		buf_reset(&ans);
		buf_printf(&sql, "SELECT DISTINCT table, partition FROM system.parts WHERE "
		    "database = '%s' AND active AND ((table IN ('profiles_local', "
		    "'spans_local', 'counts10_local', 'series_local', %s) AND partition < '%s') OR "
		    "(table = 'stacks_local' AND partition < '%s')) FORMAT TabSeparated",
		    c->db, tiers.data, day, month);
		if (ch_exec_on(c, i, sql.data, &ans, &err, NULL) < 0)
			continue;
		tsv_init(&t, &ans);
		while ((r = tsv_next(&t)) > 0) {
			if (t.nf != 2 || strspn(t.f[1], "0123456789-") != t.len[1] ||
			    strspn(t.f[0], "abcdefghijklmnopqrstuvwxyz0123456789_") != t.len[0])
				break;
			buf_reset(&sql);
			buf_printf(&sql, "ALTER TABLE %s.%s DROP PARTITION %s%s%s", c->db, t.f[0],
			    strcmp(t.f[0], "stacks_local") ? "'" : "", t.f[1],
			    strcmp(t.f[0], "stacks_local") ? "'" : "");
			if (ch_exec_on(c, i, sql.data, NULL, &err, NULL) == 0)
				log_info("clickhouse: retention: dropped %s %s on %s", t.f[0], t.f[1],
				    c->urls[i].shown);
		}
		tsv_free(&t);
	}
	if (err.len)
		log_warnx("clickhouse: retention: %s", err.data);
	buf_free(&tiers);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
}

/*
 * A new generation when the cluster's profile count moved (or cannot be
 * read); false when it could not.
 */
static bool
poll_count(struct cluster *c, uint64_t *last)
{
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	uint64_t n = 0, one = 0;
	struct tsv t;
	bool got;
	int r;

	/*
	 * Each shard's own table when the URLs are the shards (a replica
	 * frozen costs the hedge delay, not the Distributed table's wait on
	 * it), the counts summed; else through the Distributed table.
	 */
	buf_printf(&sql, "SELECT count() FROM %s.profiles_local FORMAT TabSeparated", c->db);
	if ((r = ch_scatter(c, sql.data, CH_MAX_ANSWER, &ans, &err)) == -EAGAIN) {
		buf_reset(&sql);
		buf_printf(&sql, "SELECT count() FROM %s.profiles FORMAT TabSeparated", c->db);
		r = ch_exec(c, sql.data, NULL, &ans, &err, NULL);
	}
	got = r == 0;
	tsv_init(&t, &ans);
	while (got && (r = tsv_next(&t)) != 0) {
		got = r == 1 && t.nf == 1 && tsv_u64(t.f[0], &one) == 0;
		n += one;
	}
	tsv_free(&t);
	if (!got || n != *last)
		atomic_fetch_add(&c->gen, 1);
	/*
	 * The count the reads' listings now follow (set once the generation
	 * moved): how far behind the cluster a mount may be, for up to a poll.
	 */
	if (got)
		metrics_set("profilefs_clickhouse_profiles", NULL, (double)n);
	*last = n;
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
	return got;
}

/*
 * Frames ClickHouse lost (a table truncated, a shard's disk replaced) that
 * the shipped set still counts as there: every CHECK_NS a sample of the
 * addresses it counts as shipped is looked up, and if any is missing
 * nothing counts as shipped any more (each stack ships again with the next
 * profile that uses it). A check that fails to ask decides nothing.
 */
static void
check_shipped(struct cluster *c, struct batch *b, size_t *start)
{
	char (*hex)[DIGEST128_HEX] = xcalloc(CHECK_STACKS, DIGEST128_HEX);
	struct buf sql = { 0 }, ans = { 0 }, err = { 0 };
	uint64_t found = 0;
	struct tsv t;
	size_t i, n;

	n = shipped_sample(b->shipped, CHECK_STACKS, *start, hex);
	*start += 4096;
	if (n == 0)
		goto out;
	buf_printf(&sql, "SELECT uniqExact(hash) FROM %s.stacks%s WHERE hash IN (", c->db,
	    c->alone ? "_local" : "");
	for (i = 0; i < n; i++)
		buf_printf(&sql, "%s'%.*s'", i ? "," : "", DIGEST128_HEX, hex[i]);
	buf_adds(&sql, ") FORMAT TabSeparated");
	if (buf_error(&sql) || ch_exec(c, sql.data, NULL, &ans, &err, NULL) < 0)
		goto out;
	tsv_init(&t, &ans);
	if (tsv_next(&t) == 1 && t.nf == 1 && tsv_u64(t.f[0], &found) == 0 && found < n) {
		log_warnx("clickhouse: %" PRIu64 " of %zu stacks shipped before are not in "
		    "ClickHouse any more: each is shipped again with the next profile that uses it",
		    (uint64_t)n - found, n);
		shipped_forget(b->shipped);
	}
	tsv_free(&t);
out:
	free(hex);
	buf_free(&sql);
	buf_free(&ans);
	buf_free(&err);
}

void *
ship_main(void *arg)
{
	struct cluster *c = arg;
	struct batch b = { .c = c }, next = { .c = c };
	struct buf err = { 0 };
	int64_t backoff = BACKOFF_MIN_NS;
	bool uncertain = true, refused, installed = false;
	int64_t polled = 0, expired = 0, caught_up = 0, checked;
	uint64_t count = 0, before;
	size_t check_start = 0;
	int rc;

	b.seen = intern_create(1024);
	b.shipped = shipped_create(SHIPPED_STACKS_MAX);
	next.seen = intern_create(1024);
	next.shipped = b.shipped;
	checked = clock_mono_ns();
	for (;;) {
		buf_reset(&err);
		if (!atomic_load(&c->ready)) {
			if ((rc = connect_schema(c, &err)) < 0) {
				set_status(c, err.data ? err.data : "cannot reach ClickHouse");
				metrics_set("profilefs_clickhouse_backlog_profiles", NULL,
				    (double)store_queue_length(c->st));
				if (nap(c, backoff))
					break;
				backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
				continue;
			}
			atomic_store(&c->ready, true);
			/* The schema was made again: tables may be new and empty. */
			shipped_forget(b.shipped);
			if (c->reads && !installed) {
				/*
				 * The count first: the generation the first reads
				 * see is the one they keep (not one that the first
				 * poll moves, asking their listings again).
				 */
				polled = clock_mono_ns();
				poll_count(c, &count);
				atomic_store(&c->reads_on, true);
				installed = true;
				/* The tree's first lookups find the listing in place. */
				read_refresh(c, true);
			}
			/* "connected" is logged once reads go to the cluster. */
			set_status(c, "ok");
		}
		if (enforce_backlog(c, &b) ||
		    (next.ready && shipped_epoch(b.shipped) != next.epoch))
			batch_reset(&next);	/* its profiles or its stacks are not what it holds */
		if (next.ready) {
			struct batch x = b;

			b = next;
			next = x;
		}
		metrics_set("profilefs_clickhouse_backlog_profiles", NULL,
		    (double)store_queue_length(c->st));
		refused = false;
		rc = ship_once(c, &b, &next, &uncertain, &err, &refused);
		if (rc < 0) {
			batch_reset(&next);
			atomic_fetch_add(&c->failures, 1);
			metrics_add("profilefs_clickhouse_failures_total", NULL, 1);
			set_status(c, err.data ? err.data : strerror(-rc));
			/* A refused statement may mean a dropped table: make the schema again. */
			if (refused)
				atomic_store(&c->ready, false);
			if (nap(c, backoff))
				break;
			backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
			continue;
		}
		backoff = BACKOFF_MIN_NS;
		set_status(c, "ok");
		if (clock_mono_ns() - polled >= POLL_NS) {
			polled = clock_mono_ns();
			before = count;
			/* Fewer profiles than before: data went (deleted, or lost). */
			if (poll_count(c, &count) && count < before) {
				log_info("clickhouse: the cluster's profiles went from %" PRIu64
				    " to %" PRIu64 ": stacks shipped before are shipped again with "
				    "the next profiles that use them", before, count);
				shipped_forget(b.shipped);
			}
			if (c->reads)
				read_refresh(c, false);
		}
		if (clock_mono_ns() - checked >= CHECK_NS) {
			checked = clock_mono_ns();
			check_shipped(c, &b, &check_start);
		}
		if (c->replicated && clock_mono_ns() - caught_up >= CATCH_UP_NS) {
			caught_up = clock_mono_ns();
			schema_catch_up(c);
		}
		if (expired == 0 || clock_mono_ns() - expired >= EXPIRE_NS) {
			expired = clock_mono_ns();
			settings_retention(c);
			if (c->retention)
				expire(c);
		}
		if (rc == 0 && nap(c, IDLE_NS))
			break;
		/*
		 * A small batch: the next waits to grow for a second. Every
		 * INSERT is a part in each table and each materialized view's
		 * table, merged later: many small ones cost ClickHouse more
		 * CPU than their rows, and compress worse.
		 */
		if (rc > 0 && b.n < SMALL_PROFILES && b.nrows < c->batch_rows / 10 &&
		    nap(c, FLUSH_NS))
			break;
		pthread_mutex_lock(&c->lock);
		rc = c->stop;
		pthread_mutex_unlock(&c->lock);
		if (rc)
			break;
	}
	batch_reset(&b);
	intern_destroy(b.seen);
	batch_reset(&next);
	intern_destroy(next.seen);
	buf_free(&next.rows);
	buf_free(&next.stacks);
	buf_free(&next.keys);
	buf_free(&next.todo);
	buf_free(&next.todo_str);
	buf_free(&next.spans);
	buf_free(&next.st);
	buf_free(&next.tmp);
	buf_free(&next.dates);
	free(next.ids);
	free(next.gids);
	shipped_free(b.shipped);
	buf_free(&b.rows);
	buf_free(&b.stacks);
	buf_free(&b.keys);
	buf_free(&b.todo);
	buf_free(&b.todo_str);
	buf_free(&b.spans);
	buf_free(&b.st);
	buf_free(&b.tmp);
	buf_free(&b.dates);
	free(b.ids);
	free(b.gids);
	buf_free(&err);
	return NULL;
}

/* --- the module ------------------------------------------------------------- */

int
cluster_start(struct store *st, const struct cluster_config *cfg, struct cluster **out,
    struct buf *err)
{
	struct cluster *c = xcalloc(1, sizeof(*c));
	char hn[256];
	int rc;

	*out = NULL;
	c->st = st;
	/* Before any thread uses libcurl (the shipper, readers on FUSE threads). */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ch_init(c);
	c->replicated = cfg->replicated;
	if ((rc = ch_parse_urls(c, cfg->urls, err)) < 0)
		goto fail;
	c->name = xstrdup(cfg->cluster ? cfg->cluster : "profilefs");
	c->name_given = cfg->cluster != NULL;
	if (cfg->host)
		c->host = xstrdup(cfg->host);
	else {
		if (gethostname(hn, sizeof(hn)) < 0)
			snprintf(hn, sizeof(hn), "localhost");
		hn[sizeof(hn) - 1] = '\0';
		c->host = xstrdup(hn);
	}
	if (*c->host == '\0' || strlen(c->host) > LABEL_MAX_LEN) {
		buf_adds(err, "the host name is empty or too long for a label");
		rc = -EINVAL;
		goto fail;
	}
	c->max_backlog = cfg->max_backlog ? cfg->max_backlog : 1000000;
	c->batch_rows = cfg->batch_rows ? cfg->batch_rows : 1000000;
	c->hedge_ms = cfg->hedge_ms == 0 ? CH_HEDGE_MS : cfg->hedge_ms < 0 ? 0 : cfg->hedge_ms;
	c->reads = !cfg->no_reads;
	c->local_retention = cfg->retention > 0 ? cfg->retention : 0;
	c->set_retention = cfg->set_retention;
	c->retention_shown = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	snprintf(c->status, sizeof(c->status), "connecting");
	metrics_describe("profilefs_clickhouse_up", "gauge",
	    "1 when the ClickHouse cluster is reachable and has the schema");
	metrics_describe("profilefs_clickhouse_backlog_profiles", "gauge",
	    "profiles stored locally and not shipped to ClickHouse yet");
	metrics_describe("profilefs_clickhouse_shipped_profiles_total", "counter",
	    "profiles shipped to ClickHouse");
	metrics_describe("profilefs_clickhouse_shipped_samples_total", "counter",
	    "samples shipped to ClickHouse");
	metrics_describe("profilefs_clickhouse_span_rows_total", "counter",
	    "rows of span samples (span id, stack) shipped to ClickHouse's spans table");
	metrics_describe("profilefs_clickhouse_bad_stacks_total", "counter",
	    "rows of the stacks table whose frames do not match their address (ignored)");
	metrics_describe("profilefs_clickhouse_stacks_read_total", "counter",
	    "stacks whose frames a read needed, by where they came from (this host's data dir "
	    "or ClickHouse)");
	metrics_describe("profilefs_clickhouse_stacks_total", "counter",
	    "stacks of shipped profiles, by how the shipper found their address: encoded (their "
	    "text written and hashed) or known (from the stacks it keeps, no text written)");
	metrics_describe("profilefs_clickhouse_stacks_shipped_total", "counter",
	    "stacks whose frames were sent to ClickHouse");
	metrics_describe("profilefs_clickhouse_failures_total", "counter",
	    "failed attempts to ship a batch (retried)");
	metrics_describe("profilefs_clickhouse_batches_total", "counter",
	    "batches of profiles shipped (an INSERT each)");
	metrics_describe("profilefs_clickhouse_sender_cpu_seconds_total", "counter",
	    "CPU of the threads that sent a batch while the shipper built the next one");
	metrics_describe("profilefs_clickhouse_dropped_profiles_total", "counter",
	    "queued profiles never shipped (backlog over its bound, or removed locally)");
	metrics_set("profilefs_clickhouse_up", NULL, 0);
	metrics_add("profilefs_clickhouse_shipped_profiles_total", NULL, 0);
	metrics_add("profilefs_clickhouse_failures_total", NULL, 0);
	metrics_add("profilefs_clickhouse_batches_total", NULL, 0);
	metrics_add("profilefs_clickhouse_sender_cpu_seconds_total", NULL, 0);
	metrics_add("profilefs_clickhouse_dropped_profiles_total", NULL, 0);
	read_init(c);
	{
		uint64_t pending = 0;

		store_queue_enable(st, &pending);
		if (pending)
			log_info("clickhouse: %" PRIu64 " profiles from an earlier run to ship",
			    pending);
		metrics_set("profilefs_clickhouse_backlog_profiles", NULL, (double)pending);
	}
	if ((rc = -pthread_create(&c->thread, NULL, ship_main, c)) < 0) {
		buf_adds(err, "cannot start the shipper thread");
		goto fail;
	}
	/* Named, so top -H and the benchmarks tell its CPU apart. */
	pthread_setname_np(c->thread, "pf-ship");
	c->running = true;
	*out = c;
	return 0;
fail:
	cluster_stop(c);
	return rc;
}

void
cluster_stop(struct cluster *c)
{
	size_t i;

	if (c == NULL)
		return;
	if (c->running) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
	}
	read_free(c);
	ch_free(c);
	for (i = 0; i < c->nurls; i++) {
		free(c->urls[i].base);
		free(c->urls[i].shown);
	}
	free(c->db);
	free(c->name);
	free(c->host);
	free(c);
}

bool
cluster_status(struct cluster *c, struct buf *out)
{
	bool up;

	pthread_mutex_lock(&c->lock);
	up = strcmp(c->status, "ok") == 0;
	buf_printf(out, "clickhouse: %s; backlog %" PRIu64 " profiles, shipped %" PRIu64
	    ", dropped %" PRIu64, c->status, store_queue_length(c->st), atomic_load(&c->shipped),
	    atomic_load(&c->dropped));
	pthread_mutex_unlock(&c->lock);
	return up;
}
