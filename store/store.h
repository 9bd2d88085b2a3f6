/*
 * store: everything fs/, api/ and the producers (collector/) know of storage. Profiles live in an
 * embedded RocksDB database, one key per profile, grouped by series
 * (service, type, label set) and ordered by time within a series, so a range
 * query reads only the keys it needs. The key layout is in store_int.h.
 *
 * Thread-safety: every function may be called from any thread; the series
 * index is protected by st_lock inside the store.
 *
 * This is the one header of store/ that other layers include: the store
 * (store.c and the files store_int.h lists) and range queries (query.c). It exposes neither RocksDB nor
 * protobuf-c; profiles cross it as pprof.h's decoded model.
 */
#ifndef PROFILEFS_STORE_H
#define PROFILEFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"

struct store;

#define SERVICE_MAX_LEN		200
#define TYPE_MAX_LEN		64

/* One series. Strings are owned by the store and live as long as it does. */
struct series {
	uint64_t	 id;
	const char	*service;	/* unescaped */
	const char	*type;
	const char	*labels;	/* canonical escaped text, "" for none */
	struct labelset	 ls;		/* parsed labels */
};

/* Open (creating if missing) the database in dir. -errno with a reason in err. */
int	store_open(const char *dir, struct store **out, struct buf *err);
/* Flush and close; NULL is a no-op. */
void	store_close(struct store *st);

/* What a producer says about a profile it hands to store_put(). */
struct store_input {
	const char	*service;
	const char	*type;		/* NULL or "auto": inferred from the sample types */
	const struct labelset *labels;	/* may be NULL */
	int64_t		 created_at;	/* ns since the epoch, 0: use the profile's time_nanos, else now */
	const char	*source;	/* "ingest", "http", "pyroscope", "scrape", "ebpf" */
	size_t		 max_decoded;	/* bytes once gunzipped, 0: PROFILE_MAX_DECODED */
};

struct store_ref {
	uint64_t	 id;
	uint64_t	 series;
	int64_t		 time;		/* ns since the epoch */
	char		 type[TYPE_MAX_LEN + 1];
	/*
	 * 0: a stored profile. n > 0 (merges only): a 10-minute window past the
	 * raw retention standing for the n profiles it summed (id 0; time: the
	 * window's start); see store_expire_tiers().
	 */
	uint64_t	 summary;
	/*
	 * Bytes its value takes in the database, before RocksDB compresses
	 * its blocks (store_get_size() only; 0 elsewhere).
	 */
	uint64_t	 stored;
};

/* qsort() order of struct store_refs: by time, then id (the order listings and merges read in). */
int	store_ref_cmp(const void *a, const void *b);

/*
 * Validate and store one profile (pprof, gzipped or not), durably: when this
 * returns 0 the profile survives a crash. *ref (optional output) says where it
 * went. -EINVAL with the reason in err for input that is not a valid profile or
 * has a bad service, type or label, -EFBIG for one over in->max_decoded once
 * gunzipped; nothing is stored then. The body is gunzipped once.
 *
 * The store counts every attempt in the metrics registry, labelled with
 * in->source: profilefs_ingested_profiles_total{source,outcome} (outcome ok,
 * invalid, too_large or error), profilefs_ingested_bytes_total{source} (bytes
 * as received) and profilefs_ingest_duration_seconds{source}. Producers count
 * only what never reaches the store.
 */
int	store_put(struct store *st, const struct store_input *in, const void *data,
	    size_t len, struct store_ref *ref, struct buf *err);
/* The same for a profile already decoded (the eBPF sampler builds its own). */
int	store_put_profile(struct store *st, const struct store_input *in,
	    const struct profile *p, struct store_ref *ref, struct buf *err);
/*
 * Store the n decoded profiles p[i] (with in[i]) in one synced batch: all of
 * them or, on any error, none (the reason in err names the first refused).
 * refs (optional output) gets n refs. Each is counted as store_put() does.
 */
int	store_put_profiles(struct store *st, const struct store_input *in,
	    const struct profile *const *p, size_t n, struct store_ref *refs,
	    struct buf *err);

/* Increases on every successful put: cached views compare it. */
uint64_t store_generation(const struct store *st);
/*
 * Whether a change after generation gen touched data at or before time upto
 * (ns): content made from profiles up to upto at generation gen is current
 * unless so. May answer true when unsure, never false wrongly.
 */
bool	store_changed_since(struct store *st, uint64_t gen, int64_t upto);

/*
 * A snapshot of the series index, sorted by service, type, labels. The
 * array is malloc'd (free() it); the series it points to are the store's.
 */
int	store_series(struct store *st, const struct series ***out, size_t *n);
/*
 * Call fn for each series of service (NULL: every service) and type (NULL:
 * every type), in the order of store_series(), without copying the index: a
 * lookup costs log(series) plus the matches. The matches are collected under
 * st_lock and fn runs without it, so it may use the store freely. A nonzero
 * return from fn stops the walk and is returned.
 */
typedef int (*store_series_fn)(void *arg, const struct series *s);
int	store_series_each(struct store *st, const char *service, const char *type,
	    store_series_fn fn, void *arg);
/* The series with this id, or NULL. */
const struct series *store_series_get(struct store *st, uint64_t id);

/*
 * Call fn for each profile of series sid with from <= time < to, in time
 * order. With with_data, data is the profile as gzipped pprof, valid during
 * the call; without, only the listing is read. A nonzero return from fn
 * stops the scan and is returned.
 */
typedef int (*store_scan_fn)(void *arg, const struct store_ref *ref,
    const void *data, size_t len);
int	store_scan(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    bool with_data, store_scan_fn fn, void *arg);
/*
 * The stored profile with this id: gzipped bytes into out, *ref filled.
 * -ENOENT if none. Its samples carry the span labels (span_id, span_name,
 * trace_id) they were stored with (span.c keeps them outside the pack).
 */
int	store_get(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out);
/*
 * The size of what store_get() gives for id, without decoding the profile:
 * remembered once a store_get() made it. -ENODATA while it is not known
 * (*ref is filled, its stored bytes too), -ENOENT if there is no such profile.
 */
int	store_get_size(struct store *st, uint64_t id, struct store_ref *ref, uint64_t *size);
/*
 * The UTC hours (unix time / 3600) that hold profiles of series sid, ascending,
 * malloc'd into *out (free()); hours past the raw retention that windows
 * still hold (--retention-aggregates) come first.
 */
int	store_hours(struct store *st, uint64_t sid, int64_t **out, size_t *n);
/* Whether series sid holds data in [from, to): a profile, or a window past retention. */
bool	store_has_data(struct store *st, uint64_t sid, int64_t from, int64_t to);
/*
 * The time of series sid's newest data (its last profile, or the end of its
 * last window past retention) in *t: two seeks, no scan. -ENOENT if none.
 */
int	store_newest(struct store *st, uint64_t sid, int64_t *t);

/*
 * Retention. store_expire() deletes every profile older than `before` (ns
 * since the epoch; rounded down to 10 minutes, see store_expire_tiers()) and says how many in *n (optional). store_set_retention()
 * runs it every minute for profiles older than keep_ns, on a thread the store
 * owns until store_close(); 0 keeps everything (the default).
 */
int	store_expire(struct store *st, int64_t before, uint64_t *n);
/*
 * The same per tier: raw profiles older than before, pre-aggregated windows
 * wholly older than wbefore. Deletes by key ranges. The raw cut is rounded
 * down to 10 minutes (within the windows' domain; store_expire() too), so a
 * window is all raw or all past it. When windows are kept longer (wbefore <
 * before), what lies before the cut is served from the 10-minute windows: a
 * window counts in a range when its start does (the range's edges round up
 * to 10 minutes there), and merges list it as one ref standing for the
 * profiles it summed (store_ref.summary).
 */
int	store_expire_tiers(struct store *st, int64_t before, int64_t wbefore, uint64_t *n);
int	store_set_retention(struct store *st, int64_t keep_ns);
/*
 * All limits at once, enforced by the same thread (call once): raw profiles
 * older than keep_raw, windows older than keep_windows (0 or shorter: as
 * keep_raw), and max_disk bytes of data dir (0: no cap), over which the
 * oldest hour of data goes first, every 5 seconds.
 */
int	store_set_limits(struct store *st, int64_t keep_raw, int64_t keep_windows,
	    uint64_t max_disk);

/*
 * Rebuild now the pre-aggregated windows that new profiles made stale (a
 * thread of the store does it within about a second of each put; tests and
 * benchmarks call it to wait for it). *ndays (optional): days rebuilt.
 */
int	store_compact(struct store *st, uint64_t *ndays);
/*
 * RocksDB's full compaction of the database, now: the size its data takes
 * once settled in the bottom level (zstd), for benchmarks that measure bytes
 * on disk. Blocks readers and writers meanwhile.
 */
void	store_settle(struct store *st);

/*
 * Deletion of this store's data (delete.c), durable when it returns 0;
 * every merge, window and cached view made afterwards leaves the data out.
 * store_delete_profile(): one stored profile (*ref, optional: where it
 * was), -ENOENT if none. store_delete_series(): every series q matches
 * (service, type, selector; its time range is ignored) with all it holds;
 * *nseries and *nprofiles (optional) say how many went. fs/ and the HTTP
 * API delete through their reader (reader_delete_*() below), which may
 * delete elsewhere too.
 */
struct query;
int	store_delete_profile(struct store *st, uint64_t id, struct store_ref *ref,
	    struct buf *err);
int	store_delete_series(struct store *st, const struct query *q, uint64_t *nseries,
	    uint64_t *nprofiles, struct buf *err);
/* --- the outbox (outbox.c) ---
 *
 * With a fleet (--clickhouse), every profile stored is also queued for
 * shipping: its batch writes an outbox key, so what store_put() acknowledged
 * is queued durably. store_queue_enable() turns that on (and counts what a
 * previous run left queued into *pending, optional); store_queue_each()
 * calls fn for up to max queued profiles with an id above `after` (0: from
 * the oldest), oldest first, with the local series and the pprof, not
 * gzipped (valid during the call). A profile that retention removed comes with s
 * and data NULL. A nonzero return of fn stops the walk and is returned.
 * store_queue_remove() deletes the outbox keys of shipped profiles (synced).
 */
typedef int (*store_queue_fn)(void *arg, const struct store_ref *ref,
    const struct series *s, const void *data, size_t len);
int	store_queue_enable(struct store *st, uint64_t *pending);
int	store_queue_each(struct store *st, uint64_t after, size_t max, store_queue_fn fn,
	    void *arg);
int	store_queue_remove(struct store *st, const uint64_t *ids, size_t n);
uint64_t store_queue_length(struct store *st);
/*
 * The samples of each span of a stored profile (store/span.c), each span's
 * summed into a profile of its own: fn gets the span id, its trace id (16
 * bytes, NULL: none) and that profile (valid during the call; fn must not
 * call the store). At most max spans; nothing for a profile without spans.
 */
typedef int (*store_span_fn)(void *arg, uint64_t span, const unsigned char *trace,
    const struct profile *p);
int	store_span_groups(struct store *st, const struct store_ref *ref, size_t max,
	    store_span_fn fn, void *arg);

/*
 * A cache another layer keeps in the store's database: bytes by key (1 to
 * 256 bytes), never listed, shipped or expired with profiles (the fleet's
 * stack frames by address, which never change). store_cache_get(): 0 with
 * *val (free() it) and *vlen, -ENOENT when absent, -EIO. store_cache_put()
 * writes n pairs in one batch (not synced: a cache); once the bytes put
 * would pass the cap (STORE_CACHE_MAX, store_set_cache_max(); at most an
 * eighth of --max-disk), the whole cache is dropped first. It counts in the
 * data dir's size.
 */
#define STORE_CACHE_MAX		((uint64_t)256 << 20)
struct store_kv {
	const void	*key;
	size_t		 klen;
	const void	*val;
	size_t		 vlen;
};
int	store_cache_get(struct store *st, const void *key, size_t klen, char **val,
	    size_t *vlen);
int	store_cache_put(struct store *st, const struct store_kv *kv, size_t n);
void	store_set_cache_max(struct store *st, uint64_t bytes);

/* Statistics for metrics and meta files. */
struct store_stats {
	uint64_t	 profiles;	/* stored since open, by all sources */
	uint64_t	 rejected;
	uint64_t	 bytes;
	uint64_t	 series;
	uint64_t	 disk_bytes;	/* live SST + WAL size as RocksDB estimates it */
	uint64_t	 windows_pending; /* series-days the last compaction pass rebuilt: 0, caught up */
	/* Span data a profile could not keep (its samples stay, untagged): */
	uint64_t	 span_ids_cut;	/* spans past the SPAN_MAX_PER_PROFILE a profile tags */
	uint64_t	 span_ids_refused; /* samples whose span or trace id was not accepted */
};
void	store_get_stats(struct store *st, struct store_stats *s);

/*
 * Times a profile may have: from 2000-01-01 to a day past now (ns). A
 * profile's own time_nanos outside is ignored by store_put() (the time of
 * reception is used); producers refuse a client's explicit time outside.
 */
#define STORE_TIME_MIN		(INT64_C(946684800) * 1000000000)
bool	store_time_sane(int64_t t, int64_t now);

/*
 * Label sets (series) one service may have across its types: a new one past
 * the limit is refused (-EINVAL with the reason). 0: no limit.
 */
#define STORE_MAX_SERIES	2000
void	store_set_max_series(struct store *st, size_t n);
/*
 * Services the store may hold: a new one past the limit is refused (-EINVAL
 * with the reason); services whose data retention deleted do not count.
 * 0: no limit.
 */
#define STORE_MAX_SERVICES	2000
void	store_set_max_services(struct store *st, size_t n);

/* The types store_infer_type() gives (NULL-terminated), and whether t is one. */
extern const char *const store_types[];
bool	store_type_known(const char *type);
/* Whether a name is the tree's own (ingest, README.txt, dot names): no service may take it. */
bool	store_service_reserved(const char *service);
/* The type a profile's sample types suggest ("cpu", "heap", ...). */
const char *store_infer_type(const struct profile *p);
/* Whether a type name is acceptable ([a-z0-9_.-], 1..64 bytes). -EINVAL with a reason. */
int	store_check_type(const char *type, struct buf *err);
int	store_check_service(const char *service, struct buf *err);

/*
 * The names producers may give (names.c); the tree reads whatever is stored.
 * store_check_known_type(): a known type or "auto". store_check_profile_type():
 * whether p's sample types fit type (a CPU profile is not heap; "other" and
 * profiles of unknown sample types fit anything). store_check_service_name():
 * Pyroscope's rule for application names ([A-Za-z0-9_.-], 1 to
 * SERVICE_MAX_LEN), not reserved. Each is 0 or -EINVAL with the reason in err.
 */
int	store_check_known_type(const char *type, struct buf *err);
int	store_check_profile_type(const char *type, const struct profile *p, struct buf *err);
int	store_check_service_name(const char *service, struct buf *err);
/* Format a profile id for users (16 hex digits) and parse it back (-EINVAL). */
void	store_id_format(uint64_t id, char out[17]);
int	store_id_parse(const char *s, uint64_t *id);

/* --- range queries (query.c) ---
 *
 * query: the profiles of (service, type, label selector, time range), listed
 * or merged. Shared by the filesystem's views and the HTTP API so that both
 * give the same answer for the same question.
 
 */

/*
 * A span selector: the samples tagged with one of the span ids (the pprof
 * label span_id, 1 to 16 hex digits, as a number) or belonging to one of
 * the traces (16 bytes; OTLP links, the label trace_id). Span ids belong to
 * samples, never to series (store/span.c).
 */
struct span_sel {
	const uint64_t		*ids;
	size_t			 nids;
	const unsigned char	(*traces)[16];
	size_t			 ntraces;
};
/* Parse a span id (1..16 hex digits) or a trace id (32): -EINVAL. */
int	span_id_parse(const char *s, uint64_t *id);
int	span_trace_parse(const char *s, unsigned char out[16]);
/* Spans a selector may name at once. */
#define SPAN_SEL_MAX	1024

struct query {
	const char		*service;	/* NULL: every service */
	const char		*type;		/* NULL: every type */
	const struct labelset	*sel;		/* NULL or empty: all label sets */
	const struct matchers	*match;		/* NULL or empty: no more conditions (base.h) */
	int64_t			 from, to;	/* ns, from <= time < to */
	size_t			 limit;		/* 0: no limit (list only) */
	/*
	 * Merge only: the caller wants merged (and nmerged) alone, so the
	 * store reads no listing (refs, totals and the profiles of groups left
	 * out stay empty; undecodable ones may still be in skipped). A reader
	 * may ignore it and fill them anyway.
	 */
	bool			 merged_only;
	/*
	 * Totals only: the caller reads the listing's per-profile totals and
	 * merged's sample types, not its samples, so merged may hold none (a
	 * merge of none of the profiles' samples costs nothing). A reader may
	 * ignore it and merge them anyway.
	 */
	bool			 totals_only;
	/*
	 * When to give up (base.h): the request's CPU deadline or its client
	 * gone; list and merge then end with its -ETIMEDOUT or -ECONNRESET.
	 * NULL: never. Checked between series and between the profiles merged.
	 */
	struct cancel		*cancel;
	/*
	 * Merge only: NULL, every sample; else only the samples of these
	 * spans (raw profiles: span data lives as long as they do). A reader
	 * without span data answers -ENOTSUP.
	 */
	const struct span_sel	*spans;
};

/*
 * What the span data of some profiles lacks (span.c): spans past the
 * 65,536 a profile may tag, and samples whose span or trace id was not
 * accepted; both kept as untagged samples, which no span selects. A span
 * merge counts them over its range, so an answer that misses a span says
 * why it may have.
 */
struct span_marks {
	uint64_t	 profiles_cut;		/* profiles some of whose spans were cut */
	uint64_t	 cut;			/* spans cut */
	uint64_t	 profiles_refused;	/* profiles with refused ids */
	uint64_t	 refused;		/* samples whose id was refused */
};

struct query_skip {
	uint64_t	 id;
	char		 reason[240];
};

struct query_result {
	struct store_ref	*refs;		/* every profile found, time order */
	size_t			 nrefs;
	struct profile		*merged;	/* NULL when nothing could be merged */
	size_t			 nmerged;	/* profiles in merged */
	struct query_skip	*skipped;	/* profiles left out of merged, and why */
	size_t			 nskipped;
	uint64_t		*series;	/* ids of the series that matched */
	size_t			 nseries;
	/*
	 * query_merge only: the per-sample-type totals of refs[i] start at
	 * totals[totals_at[i]] (SIZE_MAX: not decodable), so per-profile
	 * figures (timelines) need no second pass over the data.
	 */
	int64_t			*totals;
	size_t			*totals_at;
	/* query_merge with spans only: what the range's span data lacks (zero: nothing). */
	struct span_marks	 spans;
};

/* Whether series s is selected by q (service, type, labels and matchers). */
bool	query_match(const struct query *q, const struct series *s);
/* List the profiles of q in time order (no data read). Fills refs, series. */
int	query_list(struct store *st, const struct query *q, struct query_result *res);
/*
 * Merge the profiles of q: the largest group of mergeable profiles, with
 * gauges averaged over its snapshots; the others are listed in skipped.
 * res->merged stays NULL (and 0 is returned) when the range is empty.
 */
int	query_merge(struct store *st, const struct query *q, struct query_result *res);
void	query_result_free(struct query_result *res);
/*
 * Add a profile left out of a merge, and why (cut to the reason's size),
 * to res->skipped: for every reader's merges. -ENOMEM.
 */
int	query_skip_add(struct query_result *res, uint64_t id, const char *reason);

/* --- readers (reader.c) ---
 *
 * Where fs/ and the HTTP API read: the series index, the hours of a series,
 * whether a range holds data, a stored profile, listings and merges, and
 * the generation their caches compare. The store offers its own reader
 * (store_reader()); the fleet's module offers another (cluster.h), and the
 * program picks one at start and hands it to both views, as SQLite picks a
 * VFS at open. Each operation has the contract of the store call of the
 * same name (store_series(), ..., query_list(), query_merge(),
 * store_generation(), store_changed_since()); series a reader returns live
 * as long as the reader. Writes always go to the store.
 *
 * Deletion goes through the reader too, as reads do: the ids and series
 * users see are the reader's. delete_profile() and delete_series() have
 * the contracts of store_delete_profile() and store_delete_series() over
 * the reader's data (the store's reader deletes in the store; a fleet's
 * deletes in the store and in the fleet). They are optional:
 * reader_delete_*() answer -EROFS with the reason where a reader has none.
 */
struct reader {
	void	*arg;
	int	(*series)(void *arg, const struct series ***out, size_t *n);
	int	(*series_each)(void *arg, const char *service, const char *type,
		    store_series_fn fn, void *fnarg);
	const struct series *(*series_get)(void *arg, uint64_t id);
	int	(*hours)(void *arg, uint64_t sid, int64_t **out, size_t *n);
	bool	(*has_data)(void *arg, uint64_t sid, int64_t from, int64_t to);
	int	(*get)(void *arg, uint64_t id, struct store_ref *ref, struct buf *out);
	int	(*get_size)(void *arg, uint64_t id, struct store_ref *ref, uint64_t *size);
	int	(*list)(void *arg, const struct query *q, struct query_result *res);
	int	(*merge)(void *arg, const struct query *q, struct query_result *res);
	uint64_t (*generation)(void *arg);
	bool	(*changed_since)(void *arg, uint64_t gen, int64_t upto);
	int	(*delete_profile)(void *arg, uint64_t id, struct store_ref *ref,
		    struct buf *err);
	int	(*delete_series)(void *arg, const struct query *q, uint64_t *nseries,
		    uint64_t *nprofiles, struct buf *err);
	/* Optional (NULL: never): see reader_missed(). */
	bool	(*missed)(void *arg);
	/* Optional (NULL: -ENOTSUP): see store_newest(). */
	int	(*newest)(void *arg, uint64_t sid, int64_t *t);
};

/* The store's own reader: its RocksDB data. Lives as long as st. */
const struct reader *store_reader(struct store *st);

int	reader_series(const struct reader *r, const struct series ***out, size_t *n);
int	reader_series_each(const struct reader *r, const char *service, const char *type,
	    store_series_fn fn, void *arg);
const struct series *reader_series_get(const struct reader *r, uint64_t id);
int	reader_hours(const struct reader *r, uint64_t sid, int64_t **out, size_t *n);
bool	reader_has_data(const struct reader *r, uint64_t sid, int64_t from, int64_t to);
int	reader_newest(const struct reader *r, uint64_t sid, int64_t *t);
int	reader_get(const struct reader *r, uint64_t id, struct store_ref *ref, struct buf *out);
int	reader_get_size(const struct reader *r, uint64_t id, struct store_ref *ref,
	    uint64_t *size);
int	reader_list(const struct reader *r, const struct query *q, struct query_result *res);
int	reader_merge(const struct reader *r, const struct query *q, struct query_result *res);
uint64_t reader_generation(const struct reader *r);
bool	reader_changed_since(const struct reader *r, uint64_t gen, int64_t upto);
int	reader_delete_profile(const struct reader *r, uint64_t id, struct store_ref *ref,
	    struct buf *err);
int	reader_delete_series(const struct reader *r, const struct query *q, uint64_t *nseries,
	    uint64_t *nprofiles, struct buf *err);
/*
 * A lookup did not find its name in what the reader lists. True when the
 * reader's listing may predate it (one it asked ahead, not for a lookup) and
 * will be asked again: look once more.
 */
bool	reader_missed(const struct reader *r);

#endif
