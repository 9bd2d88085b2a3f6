/*
 * store_int: the store's private header, shared by the files of store/ and
 * by no other layer (SQLite's btreeInt.h pattern). It holds struct store and
 * the per-series state, the RocksDB key layout, the window constants and
 * the functions one file of the store calls in another:
 *
 *   store.c      open, close, the data directory, naming rules; the public
 *                entry points that take db_lock around a job's function
 *   series.c     the series index (st_lock)
 *   symtab.c     symbol tables in memory (symtab.h) and their 'Y' records
 *                (sym_lock)
 *   write.c      the write path: one synced batch per profile; generations
 *   window.c     the 10-minute, hourly and daily windows: reading ranges
 *                through them, reading and writing one window
 *   compact.c    the compactor thread and its locks (cp_run, cp_cond)
 *   read.c       listings, stored profiles, hours, T records
 *   retention.c  retention and the disk cap: the retention thread (rt_lock)
 *   outbox.c     the outbox ('O' keys) of profiles to ship to a fleet
 *   delete.c     deletion of profiles and series on request
 *   reader.c     the store's own reader (store_reader(), store.h)
 *   query.c      range queries: listing and merging (store.h)
 *   pack.c       the compact encoding of profiles and windows (pack.h)
 *
 * Lock order: cp_run before db_lock, db_lock before sym_lock, cache_lock before
 * db_lock, db_lock before inc_lock (docs/ARCHITECTURE.md lists every nesting).
 *
 * Keys: one byte of kind, then fields (integers big-endian, so keys sort
 * numerically):
 *
 *   kind  offset  size  field            value
 *   'S'   1       8     sid              service \0 type \0 labels
 *   'N'   1       var   service \0 type \0 labels
 *                                        sid:8
 *   'P'   1       8     sid              the profile value (below)
 *         9       8     time
 *         17      8     id
 *   'I'   1       8     id               sid:8 time:8 [size:8]; size: of the
 *                                        file store_get() makes, once one was
 *                                        made (top byte: the tag of size_tag())
 *   'H'   1       8     sid              "" (the hour holds data)
 *         9       8     hour
 *   'T'   1       8     sid              ntypes, z total per type (varints),
 *         9       8     time             sighash:8
 *         17      8     id
 *   'Y'   1       8     space            a symbol entry (pack.h); space is the
 *         9       1     kind             smallest sid of the series' service:
 *         10      4     id               its series share one symbol table
 *        [14      4     n]               n >= 2: a run, entries id .. id+n-1,
 *                                        each as varint length, bytes (runs
 *                                        of one batch may overlap; earlier
 *                                        releases read only 14-byte keys)
 *   'D'   1       8     sid              time:8: profile id is not in the
 *         9       8     w10              windows of w10 yet; "": rebuild w10
 *         17      8     id               from raw profiles
 *   'W'   1       8     sid              a pack of every profile of the window
 *         9       1     level
 *         10      8     start
 *   'V'   -       -     -                "2": profile values are packs
 *   'Q'   -       -     -                sid:8, the next series id: ids are
 *                                        never reused (a series emptied by
 *                                        retention is removed at the next open)
 *   'O'   1       8     id               "": profile id is not shipped yet
 *                                        (only with store_queue_enable();
 *                                        outbox.c)
 *   'L'   1       8     sid              time:8, then gzipped pprof: the last
 *                                        snapshot of totals pushed to the
 *                                        series (write.c, "Snapshots of
 *                                        totals"), the base of the next one's
 *                                        increase; one per series, gone with it
 *   'Z'   1       8     sid              the span record of profile id
 *         9       8     time             (span.c): its samples' span ids;
 *         17      8     id               only for profiles that name spans
 *   'F'   1       8     sid              the span filter of profile id (span.c):
 *         9       8     time             a Bloom filter of its span and trace
 *         17      8     id               ids, beside its 'Z'
 *   'C'   1       var   key              bytes another layer caches (cache.c:
 *                                        the fleet's stack frames by address);
 *                                        'C' alone: the bytes put, u64
 *
 *   time is nanoseconds since the epoch, stored as (uint64)time ^ 2^63 so that
 *   negative times sort first; hour is floor(time / 3600 s), same encoding;
 *   w10 and start are window starts in ns, same encoding. Levels 0, 1, 2 are
 *   windows of 10 min, 1 h and 1 day, aligned on the epoch (UTC). T records
 *   give listings and per-profile totals without reading samples; sighash
 *   is the hash of the profile's signature (profile_signature()).
 *   Several profiles with the same time differ by id, so all are kept.
 *
 * Profile value:
 *   offset  size  field
 *   0       1     format version: 3 (PACK_VERSION, a one-group pack of
 *                 pack.h whose values are divided: profiles naming spans)
 *                 or 2 (PACK_VERSION_PLAIN, values as they are: the rest);
 *                 1 in data dirs of earlier releases, converted on open
 *   1       n-1   v1: the profile as gzipped pprof
 */
#ifndef PROFILEFS_STORE_INT_H
#define PROFILEFS_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rocksdb/c.h>

#include "base.h"
#include "pack.h"
#include "store.h"

#define VALUE_V1	1
#define NS_10M		(INT64_C(600) * 1000000000)
#define NS_1H		(INT64_C(3600) * 1000000000)
#define NS_1D		(INT64_C(86400) * 1000000000)
#define STORE_CHANGES	1024		/* see note_change */
/*
 * A service's symbol table is freed after SYM_IDLE_NS unused (looked for
 * every SYM_SWEEP_NS by the compactor thread), after SYM_IDLE_PRESSED_NS
 * when the memory budget runs short.
 */
#define SYM_IDLE_NS		(INT64_C(600) * 1000000000)
#define SYM_IDLE_PRESSED_NS	(INT64_C(5) * 1000000000)
#define SYM_SWEEP_NS		(INT64_C(60) * 1000000000)
/*
 * After a full disk, storing resumes once this much is free on the data
 * directory's file system: less would fill it again at the next flush or
 * compaction. The refusals and the log name it.
 */
#define STORE_RESUME_FREE	(16u << 20)

/* Window lengths by level: 10 minutes, 1 hour, 1 day (window.c). */
extern const int64_t win_len[3];

/*
 * Windows cover [WIN_MIN, WIN_MAX) (about the years 1823 to 2116), whole
 * days far from int64's ends, so no window arithmetic overflows. Profiles
 * outside get no marker and are always read raw.
 */
#define WIN_MIN		(-(INT64_C(1) << 62) / NS_1D * NS_1D)
#define WIN_MAX		((INT64_C(1) << 62) / NS_1D * NS_1D)

/* Private per-series state, parallel to series[]. */
struct series_state {
	pthread_mutex_t		 sym_lock;	/* protects sym */
	struct symtab		*sym;		/* loaded on first use */
	/*
	 * Symbols are shared by every series of a service (label sets of one
	 * binary): they live with the service's first series, space.
	 */
	uint64_t		 space;
	bool			 empty;		/* retention deleted all it held */
	int64_t			 sym_used;	/* clock_mono_ns() of sym's last use; sym_lock */
};

struct store {
	rocksdb_t		*db;
	rocksdb_options_t	*opts;
	rocksdb_block_based_table_options_t *bopts;
	rocksdb_writeoptions_t	*wsync;
	rocksdb_writeoptions_t	*wasync;	/* derived data */
	rocksdb_readoptions_t	*ropts;
	/*
	 * db_lock: held for reading by every use of db, for writing only to
	 * reopen it after a full disk (full set: writes refused until then).
	 */
	pthread_rwlock_t	 db_lock;
	_Atomic bool		 full;
	pthread_rwlock_t	 st_lock;	/* protects the fields below */
	struct series		**series;	/* by sid order of creation */
	struct series		**sorted;	/* by service, type, labels */
	struct series_state		**state;	/* parallel to series[] */
	size_t			 nseries, capseries;
	size_t			 max_series;	/* per service, 0: no limit */
	size_t			 max_services;	/* 0: no limit */
	size_t			 nservices;	/* distinct services in series[] */
	int64_t			 sym_swept;	/* clock_mono_ns() of the last symtab_sweep() */
	struct intern		*names;		/* N key -> index in series[] */
	uint64_t		 next_sid;
	_Atomic uint64_t	 next_id;
	_Atomic uint64_t	 gen;
	/*
	 * Which times the changes since a generation touched: a stack of
	 * (first generation, earliest time touched from it on), times rising
	 * (see note_change). ch_lock also orders generations.
	 */
	pthread_mutex_t		 ch_lock;
	struct change {
		uint64_t	 gen;
		int64_t		 tmin;
	}			 changes[STORE_CHANGES];
	size_t			 nchanges;
	_Atomic uint64_t	 n_put, n_rejected, n_bytes;
	_Atomic uint64_t	 n_span_cut, n_span_refused;	/* span_marks of puts */
	/* compactor thread; rt_lock protects cp_stop; cp_kick is read without it */
	pthread_t		 cp_thread;
	bool			 cp_running, cp_stop, cp_kick;
	pthread_cond_t		 cp_cond;
	_Atomic uint64_t	 n_compacted;
	_Atomic uint64_t	 n_pending;	/* days of the last pass */
	/* retention thread; rt_lock protects rt_stop */
	pthread_t		 rt_thread;
	bool			 rt_running;
	int64_t			 rt_keep, rt_keep_windows;
	uint64_t		 rt_max_disk;
	char			*dir;
	pthread_mutex_t		 rt_lock;
	/* one compaction pass at a time: two would apply the same markers twice */
	pthread_mutex_t		 cp_run;
	pthread_cond_t		 rt_cond;
	bool			 rt_stop;
	/* the cache ('C' keys), see cache.c; cache_lock orders its puts */
	pthread_mutex_t		 cache_lock;
	_Atomic uint64_t	 cache_max;
	/*
	 * inc_lock orders the puts of snapshots of totals: each reads its
	 * series' 'L' record and writes the next (write.c)
	 */
	pthread_mutex_t		 inc_lock;
	/* the outbox ('O' keys), see outbox.c */
	_Atomic bool		 q_on;
	_Atomic uint64_t	 q_len;
	struct reader		 reader;	/* store_reader(): constant once open */
};

static inline void
be64_put(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static inline uint64_t
be64_get(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t
time_enc(int64_t t)
{
	return (uint64_t)t ^ (UINT64_C(1) << 63);
}

static inline int64_t
time_dec(uint64_t v)
{
	return (int64_t)(v ^ (UINT64_C(1) << 63));
}

#define STORE_MAX_TYPES	64

/* One T record: a profile's totals and the hash of its signature. */
struct store_meta {
	int64_t		 totals[STORE_MAX_TYPES];
	size_t		 ntypes;
	uint64_t	 sighash;
};

typedef int (*store_meta_fn)(void *arg, const struct store_ref *ref,
    const struct store_meta *m);

/*
 * Add every profile of series sid with from <= time < to into a (windows
 * that fit, raw profiles elsewhere), and call fn (optional) for each of them
 * in time order with its T record. Both views come from one snapshot.
 * Raw profiles that cannot be read are passed to bad (optional) and left
 * out of a. A nonzero return of a callback stops the read and is returned.
 */
typedef int (*store_bad_fn)(void *arg, const struct store_ref *ref, const char *why);
int	store_read_series(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    struct agg *a, store_meta_fn fn, store_bad_fn bad, void *arg);

/*
 * The same for a span selection (span.c): the profiles of the range that
 * hold one of its spans, each with only those samples in a, and fn called
 * with their totals.
 */
int	store_read_spans(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    const struct span_sel *sel, struct agg *a, struct span_marks *marks,
	    store_meta_fn fn, store_bad_fn bad, void *arg);
int	store_read_spans_locked(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    const struct span_sel *sel, struct agg *a, struct span_marks *marks,
	    store_meta_fn fn, store_bad_fn bad, void *arg);
int	span_ranges(const void *val, size_t len, const struct span_sel *sel, uint32_t **rg,
	    size_t *nrg, size_t *cap);
/*
 * The symbol table of series sid, locked (sym_lock) until
 * store_symtab_release(); NULL with *rc set on failure.
 */
const struct symtab *store_symtab_acquire(struct store *st, uint64_t sid, int *rc);
void	store_symtab_release(struct store *st, uint64_t sid);

/* The hash stored in T records for a signature (profile_signature()'s text). */
uint64_t store_sighash(const void *sig, size_t len);

/* --- reading ranges through windows (window.c) --- */

struct range_read {
	struct store		*st;
	rocksdb_readoptions_t	*ro;		/* on the snapshot */
	uint64_t		 sid;
	struct agg		*a;
	store_bad_fn		 bad;
	void			*arg;
	int64_t			*dirty;		/* sorted starts of marked 10-min windows */
	size_t			 ndirty;
	/*
	 * Before acut the raw profiles are gone (retention) and only the
	 * 10-minute windows hold the data: a window counts when its start lies
	 * in the range read. INT64_MIN when nothing is past retention.
	 */
	int64_t			 acut;
	struct buf		 err;
};

/* --- between the store's files --- */

/* store.c */
int	store_recover(struct store *st);

/* reader.c: fill st->reader (at open). */
void	store_reader_init(struct store *st);

/* series.c: the index; callers hold st_lock where said. */
struct buf *name_key(struct buf *k, const char *service, const char *type, const char *labels);
ssize_t	series_pos(const struct store *st, uint64_t id);
int	series_add(struct store *st, uint64_t sid, const char *service, const char *type,
	    const char *labels);
int	series_get_or_create(struct store *st, const char *service, const char *type,
	    const char *labels, uint64_t *sid, struct buf *err);
const struct series *series_local(struct store *st, uint64_t id);

/* symtab.c */
struct series_state *series_state_lock(struct store *st, uint64_t sid, int *rc);
/* symtab.c: free idle symbol tables when due (the compactor thread, idle). */
void	symtab_sweep_due(struct store *st);

/* write.c */
int	batch_profile(struct store *st, rocksdb_writebatch_t *wb, uint64_t sid, int64_t time,
	    uint64_t id, const struct profile *p, struct buf *news, size_t *vlen,
	    struct span_marks *marks);
void	batch_done(struct store *st, uint64_t sid, const struct buf *news);
void	note_change(struct store *st, int64_t t);
int	store_write_error(struct store *st, char *dberr, struct buf *err);

/* window.c */
int	read_raw(struct range_read *c, int64_t from, int64_t to);
int	read_cover(struct range_read *c, int64_t from, int64_t to, int level);
int	series_bounds(struct range_read *c, int64_t *first, int64_t *last);
int	past_windows(struct range_read *c, int64_t from, int64_t to, store_meta_fn fn, void *arg);
int	window_get(struct store *st, rocksdb_readoptions_t *ro, uint64_t sid, int level,
	    int64_t w, struct agg *a);
int	window_put(rocksdb_writebatch_t *wb, uint64_t sid, int level, int64_t w,
	    const struct agg *a);

/* compact.c */
void	compact_kick(struct store *st);
/* window.c: the value of key k (NULL if none) added to a; -EINVAL if it does not decode. */
int	value_add(struct store *st, rocksdb_readoptions_t *ro, const unsigned char *k, size_t kl,
	    struct agg *a);
void	*compact_main(void *arg);

/* read.c: the *_locked functions run with db_lock held for reading (store.c takes it). */
int	store_scan_locked(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    bool with_data, store_scan_fn fn, void *arg);
/*
 * With spans, a profile whose samples named spans is read back with their
 * labels (span.c); without, its stacks as the pack holds them (the shipper:
 * it sends the spans apart).
 */
int	store_get_locked(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out,
	    bool gzip, bool spans);
int	store_read_series_locked(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    struct agg *a, store_meta_fn fn, store_bad_fn bad, void *arg);
bool	key_in(struct store *st, uint64_t sid, int level, int64_t lo, int64_t hi);
bool	has_data_locked(struct store *st, uint64_t sid, int64_t from, int64_t to);
/* Decode a T record (-EINVAL for one that is not: stored values are input too). */
int	meta_decode(const unsigned char *v, size_t vl, struct store_meta *m);
int	store_hours_locked(struct store *st, uint64_t sid, int64_t **out, size_t *n);

/* retention.c */
bool	series_holds_data(struct store *st, uint64_t sid);
/*
 * Series sid may hold nothing any more (retention, deletion): if so it no
 * longer counts against the limits, and its records go at the next open.
 */
void	note_empty(struct store *st, uint64_t sid);
int	store_expire_tiers_locked(struct store *st, int64_t before, int64_t wbefore, uint64_t *n);

/* outbox.c */
int	store_queue_each_locked(struct store *st, uint64_t after, size_t max, store_queue_fn fn,
	    void *arg);

#endif
