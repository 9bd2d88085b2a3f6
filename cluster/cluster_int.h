/*
 * cluster_int: what the files of cluster/ share. chttp.c talks to ClickHouse's
 * HTTP interface and parses its TabSeparated answers; codec.c turns stacks
 * and profile headers into the strings stored in ClickHouse and back;
 * ship.c creates the schema and ships the outbox (RowBinary), shipped.c
 * keeps what it need not encode again; read.c is the fleet's
 * reader (cluster_reader()), answering from the cluster.
 */
#ifndef PROFILEFS_CLUSTER_INT_H
#define PROFILEFS_CLUSTER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "cluster.h"
#include "pprof.h"
#include "store.h"

#define CH_MAX_URLS		64
#define CH_MAX_ANSWER		((size_t)256 << 20)	/* bytes of one answer */
#define CH_MIN_MAJOR		18			/* 18.16: Debian 12's */
#define CH_MIN_MINOR		16
#define CH_POOL			8			/* idle curl multi handles (and their connections) kept */
#define CH_HEDGE_MS		1500			/* a read's second server is asked after */

struct ch_url {
	char	*base;		/* scheme://[user:pass@]host:port/ */
	char	*shown;		/* the same without the password, for messages */
	size_t	 shard;		/* which group of --clickhouse (0, 1, ...) */
	bool	 schema;	/* the schema was made there (replicated: one may be down) */
	bool	 granules_told;	/* its tables' old granules were logged (ship.c) */
	bool	 views_told;	/* its views that all sum the profiles were logged (ship.c) */
	/*
	 * Which shard of the remote_servers cluster the server is (the one
	 * shard with is_local rows in system.clusters: 1, 2, ...), learned by ship.c when
	 * it makes the schema there; 0: not known (not asked yet, not
	 * reached, or not exactly one shard of the cluster).
	 */
	_Atomic size_t	 shard_num;
	_Atomic size_t	 cluster_shards;	/* the shards its remote_servers lists */
	_Atomic bool	 slow;		/* it lost a hedged read (said in the log) */
};

struct hd_windows;

struct cluster {
	struct store		*st;
	struct ch_url		 urls[CH_MAX_URLS];
	size_t			 nurls;
	size_t			 nshards;	/* groups of urls: replicas of one shard */
	bool			 replicated;	/* Replicated*MergeTree tables */
	_Atomic size_t		 cur;		/* the URL that answered last */
	/*
	 * Reads may ask each shard's *_local tables directly (ch_scatter()):
	 * the URL groups are proven to be the cluster's shards, each once
	 * (ch_direct_check()). Else they go through the Distributed tables.
	 */
	_Atomic bool		 direct;
	_Atomic size_t		 sh_last[CH_MAX_URLS];	/* per group: 1 + the URL that answered last */
	char			*db;		/* database */
	char			*name;		/* remote_servers cluster */
	bool			 name_given;	/* --clickhouse-cluster was given */
	/*
	 * One server, no cluster of that name in its remote_servers, and
	 * none asked for by name (ship.c): the tables of every shard are
	 * Merge tables over its own *_local ones, inserts go to those.
	 */
	bool			 alone;
	char			*host;
	uint64_t		 max_backlog;
	size_t			 batch_rows;
	bool			 reads;
	int64_t			 retention;	/* ns, the cluster's (settings.c); 0: keep everything */
	int64_t			 set_retention;	/* ns, --clickhouse-retention; < 0: not given */
	int64_t			 local_retention;	/* ns, this host's --retention, for messages */
	int64_t			 retention_shown;	/* what was logged: -1 nothing, 0 none, ns + 1 */

	pthread_t		 thread;
	bool			 running;
	pthread_mutex_t		 lock;		/* protects stop, status, below */
	pthread_cond_t		 cond;
	bool			 stop;
	char			 status[512];	/* "ok" or why not */
	_Atomic bool		 ready;		/* schema in place */
	_Atomic uint64_t	 shipped, batches, failures, dropped;

	int64_t			 hedge_ms;	/* a read's second server asked after; 0: never */
	/* chttp.c: idle curl multi handles, their connections kept alive for the next statement */
	pthread_mutex_t		 h_lock;	/* protects h_pool, h_n */
	void			*h_pool[CH_POOL];
	size_t			 h_n;

	/* read.c: series seen in answers, never freed before cluster_stop() */
	pthread_mutex_t		 s_lock;	/* protects the series table */
	struct intern		*s_names;	/* service \0 type \0 labels -> index */
	struct series		**s_all;
	size_t			 s_n, s_cap;
	/*
	 * cluster_reader(): the local store's data until the shipper first
	 * finds the schema in place (reads_on), the cluster's from then on.
	 */
	struct reader		 reader;
	_Atomic bool		 reads_on;
	/*
	 * The data's generation: bumped when the shipper sees the cluster's
	 * profile count change (polled every second), so cached views stay
	 * valid while nothing arrives.
	 */
	_Atomic uint64_t	 gen;
	/*
	 * read.c: what the tree's lookups ask most, kept for a generation
	 * (and CACHE_TTL at most): every series, and per series the
	 * 10-minute windows of the last days that hold profiles.
	 */
	pthread_mutex_t		 sc_lock;	/* protects sc_*, hd_* */
	pthread_cond_t		 sc_cond;	/* signalled when sc_busy clears */
	bool			 sc_busy;	/* a listing is being asked: the others wait for it */
	uint64_t		 sc_failed;	/* listings that failed */
	bool			 sc_bad;	/* the last listing asked failed */
	bool			 sc_ahead;	/* the listing was asked ahead (read_refresh()) */
	const struct series	**sc;
	int64_t			*sc_span;	/* first, last hour (s) with profiles */
	size_t			 sc_n;
	uint64_t		 sc_gen;
	int64_t			 sc_at;		/* monotonic ns; 0: none */
	_Atomic int64_t		 read_at;	/* monotonic ns of the last lookup or merge */
	struct intern		*hd_idx;	/* series id -> hd_* index */
	struct hd_windows	*hd;
	size_t			 hd_cap;
	/* read.c: frames by stack hash (content-addressed, never stale) */
	pthread_mutex_t		 f_lock;	/* protects the frames cache */
	struct intern		*f_idx;
	struct intern		*f_series;	/* series ids whose stacks came with a merge */
	char			**f_text;
	size_t			*f_len;
	size_t			 f_cap, f_bytes;
};

/*
 * The schema's version (ship.c), and the expressions its materialized views
 * and the deletion's cancelling rows (delete.c) share, over a row of
 * profiles_local ARRAY JOIN its stacks and values (CH_ARRAY_JOIN: the stacks
 * array holds a stack per value, so no array is copied per row): the digest
 * of a signature (sigh), a value's stack and index, the series
 * hash when the value is a gauge (gsid, else 0: gauges average per series),
 * then V (the value's aggregate); per group of profiles, their count (S: 1
 * or -1 each), the wrapping sum of gids and the sum of offsets into the
 * 10-minute window (the one profile's gid and time when the count is 1)
 * and the totals.
 */
#define CH_SCHEMA_VERSION	2
#define CH_VI			"toUInt8((k - 1) %% ntypes)"
#define CH_ARRAY_JOIN		"ARRAY JOIN stacks AS stack, vals AS val, arrayEnumerate(vals) AS k"
#define CH_SAMPLE_COLS(V)	"sigh, stack, " CH_VI " AS vi, if(bitAnd(bitShiftRight(gauges, " CH_VI "), 1) = 1, " \
	"cityHash64(service, type, labels), toUInt64(0)) AS gsid, " V
#define CH_COUNT_COLS(S)	"sum(toInt64(" S ")) AS profiles, sum(toUInt64(" S " * gid)) AS gids, " \
	"sum(toInt64(" S " * (ns - intDiv(toUInt32(time), 600) * 600000000000))) AS offs, " \
	"tupleElement(sumMap(arrayMap(x -> toUInt8(x - 1), arrayEnumerate(totals)), " \
	"arrayMap(x -> " S " * x, totals)), 1) AS `totalsMap.vi`, " \
	"tupleElement(sumMap(arrayMap(x -> toUInt8(x - 1), arrayEnumerate(totals)), " \
	"arrayMap(x -> " S " * x, totals)), 2) AS `totalsMap.value`"
#define CH_COUNT_KEY		"date, window, service, type, labels, sig, sigh, hdr, period"

/*
 * The sums of the samples per window (tiers): per series (labels) for
 * selections, and over the fleet (no labels; gauges still per series) for
 * reads of every label set. A merge reads each part of its range from the
 * widest tier that covers it.
 */
struct ch_tier {
	const char	*name;		/* <name>_local, <name> (Distributed) */
	int		 width;		/* s */
	bool		 labels;	/* per series */
	int		 from;		/* its view sums tier `from`'s view; -1: the profiles */
};
#define CH_NTIERS	5
extern const struct ch_tier ch_tiers[CH_NTIERS];
/* The columns of a tier's rows from profiles_local (tier t, V as above). */
int	ch_tier_select(struct buf *b, const char *db, size_t t, const char *v);

/* --- chttp.c --- */
/* The pool of connections: ch_init() before any statement, ch_free() after the last. */
void	ch_init(struct cluster *c);
void	ch_free(struct cluster *c);
/* Parse "URL[,URL...]" into c (urls, db). -EINVAL and the reason. */
int	ch_parse_urls(struct cluster *c, const char *list, struct buf *err);
/*
 * Run one statement (sql, then data if not NULL) on the servers, the one
 * that answered last first, the others if it cannot be reached. The answer
 * goes to out (optional; bounded by CH_MAX_ANSWER). -EIO with the reason
 * in err when no server answers or ClickHouse refuses the statement
 * (*refused set then, optional: the server answered with an error).
 */
int	ch_exec(struct cluster *c, const char *sql, const struct buf *data, struct buf *out,
	    struct buf *err, bool *refused);
/* A query as ch_exec(), its answer bounded by max: -EFBIG over it (max < CH_MAX_ANSWER). */
int	ch_read(struct cluster *c, const char *sql, size_t max, struct buf *out, struct buf *err);
/* The same on URL i only (schema creation on every server). */
int	ch_exec_on(struct cluster *c, size_t i, const char *sql, struct buf *out, struct buf *err,
	    bool *refused);
/*
 * The same on one replica of shard g: its URLs in their order, the next
 * when one cannot be reached (a refusal is not retried elsewhere). *used
 * (optional): the URL that answered. Without replicas, URL g itself.
 */
int	ch_exec_shard(struct cluster *c, size_t g, const char *sql, const struct buf *data,
	    struct buf *out, struct buf *err, bool *refused, size_t *used);
/*
 * Whether the URL groups are the shards of the remote_servers cluster,
 * each exactly once, by what the servers told of themselves (shard_num,
 * cluster_shards): every group has a server that said which shard it is,
 * all of a group's said the same, no two groups the same, and every
 * server counts as many shards as there are groups. Sets c->direct, and
 * logs when it changes.
 */
void	ch_direct_check(struct cluster *c);
/*
 * Run sql (a query of *_local tables) on every shard at once, one replica
 * each: the first of its group's URLs that is known to be that shard and
 * answers. The answers (TabSeparated rows) are appended to out one after
 * the other, in shard order. -EAGAIN (nothing appended, nothing logged)
 * when c->direct is not set or a shard has no such replica that answers:
 * the caller asks the Distributed tables instead; -EIO with the reason in
 * err when a server refuses the statement; -EFBIG when the answers are
 * over max bytes (max < CH_MAX_ANSWER).
 */
int	ch_scatter(struct cluster *c, const char *sql, size_t max, struct buf *out,
	    struct buf *err);
/* Append s quoted as a ClickHouse string literal ('...'). */
int	ch_quote(struct buf *b, const char *s);
/* Append s escaped for a TabSeparated field. */
int	ch_tsv(struct buf *b, const char *s, size_t n);

/*
 * A TabSeparated answer, row by row: tsv_next() makes the next row's fields
 * (unescaped, NUL-terminated, in the reader's own storage) available as
 * f[0..nf-1]; 0 at the end, 1 for a row, -EINVAL for a malformed one.
 */
#define TSV_MAX_FIELDS	20
struct tsv {
	const char	*p, *end;
	struct buf	 row;
	char		*f[TSV_MAX_FIELDS];
	size_t		 len[TSV_MAX_FIELDS];
	size_t		 nf;
};
void	tsv_init(struct tsv *t, const struct buf *b);
int	tsv_next(struct tsv *t);
void	tsv_free(struct tsv *t);
/*
 * A RowBinary answer, field by field: integers little-endian, strings and
 * arrays after their length as a LEB128 varint. Every read checks the bytes
 * left: -EINVAL past the end, or for a count of elem-byte items (elem > 0)
 * over what remains. rb_str() and rb_bytes() point into the answer.
 */
struct rowbin {
	const unsigned char	*p, *end;
};
void	rb_init(struct rowbin *r, const struct buf *b);
bool	rb_done(const struct rowbin *r);
int	rb_bytes(struct rowbin *r, size_t n, const unsigned char **p);
int	rb_u8(struct rowbin *r, uint8_t *v);
int	rb_u64(struct rowbin *r, uint64_t *v);
int	rb_i64(struct rowbin *r, int64_t *v);
int	rb_count(struct rowbin *r, size_t elem, size_t *n);
int	rb_str(struct rowbin *r, const char **s, size_t *n);
uint64_t rb_le64(const unsigned char *p);
/*
 * One profile's row as the merge of raw rows asks for it (read.c's
 * raw_sql()): service, type, labels, sig, hdr (no NUL in them), ns, gid,
 * sigh, the series hash, period, totals, ntypes, gauges, stacks (addresses
 * of DIGEST128_HEX bytes, one per value) and vals (ntypes per sample),
 * pointing into the answer. raw_row_next(): 1, 0 at the end, -EINVAL for a
 * row cut short or whose counts disagree.
 */
struct raw_row {
	const char		*str[5];
	size_t			 len[5];
	int64_t			 ns, period;
	uint64_t		 gid, sigh, sid, gauges;
	uint8_t			 ntypes;
	size_t			 ntotals, nvals;
	const unsigned char	*totals, *stacks, *vals;	/* int64 LE; addresses; int64 LE */
};
int	raw_row_next(struct rowbin *r, struct raw_row *row);
/* Parse a decimal field; -EINVAL when it is not one. */
int	tsv_i64(const char *s, int64_t *v);
int	tsv_u64(const char *s, uint64_t *v);
/*
 * Parse a ClickHouse array of integers ("[1,2,3]") into out (int64_t each,
 * appended), *n of them, at most max; -EINVAL when it is not one.
 */
int	tsv_nums(const char *s, struct buf *out, size_t *n, size_t max, bool is_unsigned);

/* --- codec.c --- */
/*
 * A sample's stack and labels as one string (the `frames` stored once per
 * hash): locations leaf first, each with its mapping and lines, then the
 * sample's labels. Strings are %-escaped so the separators stay unique.
 */
int	codec_stack(const struct profile *p, const struct pf_sample *s, struct buf *out);
/* Its parts: location li of p, and the sample's labels (nothing without). */
int	codec_location(const struct profile *p, uint32_t li, struct buf *out);
int	codec_labels(const struct profile *p, const struct pf_sample *s, struct buf *out);
/* The header of a group of profiles: period type, default type, sample types. */
int	codec_header(const struct profile *p, struct buf *out);
/*
 * What codec_add() keeps for one merge: each location's text (with the
 * mapping it follows) to the merge's location, so a frame that many stacks
 * share is read once.
 */
struct codec_memo;
struct codec_memo *codec_memo_create(void);
void	codec_memo_free(struct codec_memo *cm);
/*
 * Add the stack of text (codec_stack()) to m, whose header came from
 * codec_begin(), with values (ntypes of them; all zero: nothing is added);
 * cm: m's memo (optional). -EINVAL for text that is not such a stack.
 */
int	codec_add(struct merge *m, struct codec_memo *cm, const char *text, size_t len,
	    const int64_t *values, size_t ntypes);
/*
 * merge_begin() from a codec_header() text; *ntypes: its sample types,
 * gauge[0..ntypes-1]: which are gauges (PROFILE_MAX_SAMPLE_TYPES entries).
 */
int	codec_begin(struct merge *m, const char *hdr, int64_t period, size_t *ntypes,
	    bool *gauge);

/*
 * --- shipped.c: what the shipper need not encode again. A stack's key is a
 * keyed hash (SipHash-1-3, 128 bits) of what codec_stack() would write of
 * it, made from the decoded profile's tables without writing any text;
 * struct shipped maps keys to the stacks' addresses (digest128() of their
 * text) and says which this host has shipped. Used by the shipper thread only.
 */
void	sip128(const uint64_t key[2], const void *data, size_t n, uint64_t out[2]);
/* One profile's memo: each string and location hashed once. */
struct stackkey {
	const struct profile	*p;
	uint64_t		 key[2];
	uint64_t		(*strh)[2];	/* per string */
	uint64_t		(*loch)[2];	/* per location */
	unsigned char		*done;		/* strings', then locations' */
	struct buf		 tmp, st;
};
/* Start on p (which must outlive k) with the table's key; -ENOMEM. */
int	stackkey_begin(struct stackkey *k, const struct profile *p, const uint64_t key[2]);
void	stackkey_end(struct stackkey *k);
/* The key of sample s's stack and labels; -EINVAL where codec_stack() fails too. */
int	stackkey_stack(struct stackkey *k, const struct pf_sample *s, uint64_t out[2]);

/*
 * A stack counts as shipped for this long after it was: frames ClickHouse
 * lost that no check noticed are shipped again within it.
 */
#define SHIPPED_TTL_S	(24 * 3600)
struct shipped;
/* At most max entries (64 bytes each); its random key drawn now. */
struct shipped	*shipped_create(size_t max);
void	 shipped_free(struct shipped *t);
/* Read the clock the lookups and puts that follow use (once per batch). */
void	 shipped_tick(struct shipped *t);
/* The key stackkey_begin() takes. */
const uint64_t *shipped_key(const struct shipped *t);
/* Stack key's address (DIGEST128_HEX bytes, valid until the next put), NULL if not known. */
const char *shipped_get(struct shipped *t, const uint64_t key[2], bool *is_shipped);
/* Learn a key's address (not shipped yet); may replace the least recently used. */
void	 shipped_put(struct shipped *t, const uint64_t key[2], const char hex[DIGEST128_HEX]);
/* The key's frames are in ClickHouse now (an INSERT of them succeeded). */
void	 shipped_mark(struct shipped *t, const uint64_t key[2]);
/* Nothing counts as shipped any more (addresses stay known). */
void	 shipped_forget(struct shipped *t);
/* Changes with every shipped_forget(): what was built before may count stacks wrongly. */
uint32_t shipped_epoch(const struct shipped *t);
size_t	 shipped_count(const struct shipped *t);
/* Up to max addresses that count as shipped, from slot start on (wrapping). */
size_t	 shipped_sample(const struct shipped *t, size_t max, size_t start,
	    char (*hex)[DIGEST128_HEX]);

/* --- settings.c: the cluster's settings --- */
/* Write --clickhouse-retention on every server; -errno with the reason in err. */
int	settings_put_retention(struct cluster *c, struct buf *err);
/* Read the cluster's retention into c->retention (0: none), logging changes. */
void	settings_retention(struct cluster *c);
/*
 * --- delete.c: deletion in the fleet, the reader's delete ops (read.c)
 * once reads go to the cluster. They have the contracts of
 * store_delete_profile() and store_delete_series() over the fleet's data:
 * delete_profile() takes a gid (the ids the fleet's reader shows) and also
 * deletes this host's copy from the store; delete_series() deletes the
 * matching series from the store and from every server.
 */
int	delete_profile(struct cluster *c, uint64_t gid, struct store_ref *ref, struct buf *err);
int	delete_series(struct cluster *c, const struct query *q, uint64_t *nseries,
	    uint64_t *nprofiles, struct buf *err);

/*
 * --- ship.c: the ENGINE clause of a table of the schema, appended to out:
 * kind as a plain engine ("MergeTree", "SummingMergeTree(value)",
 * "ReplacingMergeTree(set_at)"), or with replicated its Replicated variant
 * in ZooKeeper: ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/
 * <db>.<table>', '{replica}', value). Every *_local table goes through it.
 */
int	cluster_engine(const struct cluster *c, const char *kind, const char *table,
	    struct buf *out);

/* --- ship.c / read.c --- */
void	*ship_main(void *arg);
void	 read_init(struct cluster *c);
void	 read_free(struct cluster *c);
/*
 * The shipper's poll (every second), and once when reads first go to the
 * cluster (first): the series listing asked ahead, so the lookups of a path
 * find it ready, when its generation moved or its time is nearly up, for
 * a mount read in the last minute (or first).
 */
void	 read_refresh(struct cluster *c, bool first);
/* The condition on service, type and label selector of q, appended ("1" for none). */
int	 read_where(const struct query *q, struct buf *b);

#endif
