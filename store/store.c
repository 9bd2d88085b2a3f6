/*
 * store: the RocksDB database and its series index. This file and delete.c
 * are the only ones that include RocksDB. Profiles are validated (decoded) before anything is
 * written, and each profile is written in one synced batch, so an
 * acknowledged profile survives a crash and a refused one leaves no trace.
 *
 * Profiles are kept in the compact form of pack.h: symbols once per service
 * ('Y'), samples as (stack id, values). Merges of aligned windows of 10 min,
 * 1 h and 1 day ('W') are derived data: every profile's batch also writes a
 * dirty marker ('D') for its 10-minute window, and the compactor thread
 * adds the marked profiles to their 10-minute, hourly and daily windows and
 * deletes those markers in one batch. A read uses a window only when no marker lies inside it, and the
 * raw profiles otherwise, all from one snapshot: reads are exact whatever
 * the compactor has done, and a crash at any point leaves markers to redo.
 *
 * Key layout (all integers big-endian so keys sort numerically):
 *
 *   'S' | sid:8                         -> service \0 type \0 labels
 *   'N' | service \0 type \0 labels     -> sid:8
 *   'P' | sid:8 | time:8 | id:8         -> profile value (below)
 *   'I' | id:8                          -> sid:8 | time:8 [| size:8]
 *                                          size: of the file store_get() makes,
 *                                          once one was made (top byte: SIZE_TAG)
 *   'H' | sid:8 | hour:8                -> "" (the hour holds data)
 *   'T' | sid:8 | time:8 | id:8         -> ntypes, z total per type (varints), sighash:8
 *   'Y' | space:8 | kind:1 | id:4       -> a symbol entry (pack.h); space is the
 *                                          smallest sid of the series' service:
 *                                          its series share one symbol table
 *   'D' | sid:8 | w10:8 | id:8          -> time:8: profile id is not in the windows
 *                                          of w10 yet; "": rebuild w10 from raw
 *   'W' | sid:8 | level:1 | start:8     -> a pack of every profile of the window
 *   'V'                                 -> "2": profile values are packs
 *   'Q'                                 -> sid:8, the next series id: ids are
 *                                          never reused (a series emptied by
 *                                          retention is removed at the next open)
 *   'O' | id:8                          -> "": profile id is not shipped yet
 *                                          (only with store_queue_enable(); see
 *                                          the outbox below)
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
 *   0       1     format version: 2 (PACK_VERSION, a one-group pack of
 *                 pack.h); 1 in data dirs of earlier releases, converted
 *                 on open
 *   1       n-1   v1: the profile as gzipped pprof
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>
#include <time.h>

#include <rocksdb/c.h>
#include <zlib.h>

#include "base.h"
#include "pack.h"
#include "storeint.h"

#define VALUE_V1	1
#define NS_10M		(INT64_C(600) * 1000000000)
#define NS_1H		(INT64_C(3600) * 1000000000)
#define NS_1D		(INT64_C(86400) * 1000000000)
#define STORE_CHANGES	1024		/* see note_change */

static const int64_t win_len[3] = { NS_10M, NS_1H, NS_1D };

/*
 * Windows cover [WIN_MIN, WIN_MAX) (about the years 1823 to 2116), whole
 * days far from int64's ends, so no window arithmetic overflows. Profiles
 * outside get no marker and are always read raw.
 */
#define WIN_MIN		(-(INT64_C(1) << 62) / NS_1D * NS_1D)
#define WIN_MAX		((INT64_C(1) << 62) / NS_1D * NS_1D)

static int batch_profile(struct store *st, rocksdb_writebatch_t *wb, uint64_t sid,
    int64_t time, uint64_t id, const struct profile *p, struct buf *news, size_t *vlen);
static void batch_done(struct store *st, uint64_t sid, const struct buf *news);
static void *compact_main(void *arg);
static int store_write_error(struct store *st, char *dberr, struct buf *err);
static void note_change(struct store *st, int64_t t);
static bool series_holds_data(struct store *st, uint64_t sid);
static bool key_in(struct store *st, uint64_t sid, int level, int64_t lo, int64_t hi);

/* Private per-series state, parallel to series[]. */
struct sstate {
	pthread_mutex_t		 sym_lock;	/* protects sym */
	struct symtab		*sym;		/* loaded on first use */
	/*
	 * Symbols are shared by every series of a service (label sets of one
	 * binary): they live with the service's first series, space.
	 */
	uint64_t		 space;
	bool			 empty;		/* retention deleted all it held */
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
	struct sstate		**state;	/* parallel to series[] */
	size_t			 nseries, capseries;
	size_t			 max_series;	/* per service, 0: no limit */
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
	/* the outbox ('O' keys) and the remote reader, see the end of this file */
	_Atomic bool		 q_on;
	_Atomic uint64_t	 q_len;
	const struct store_remote *_Atomic remote;
};

static void
be64_put(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static uint64_t
be64_get(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint64_t
time_enc(int64_t t)
{
	return (uint64_t)t ^ (UINT64_C(1) << 63);
}

static int64_t
time_dec(uint64_t v)
{
	return (int64_t)(v ^ (UINT64_C(1) << 63));
}

static int64_t
floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

void
store_id_format(uint64_t id, char out[17])
{
	int i;

	for (i = 15; i >= 0; i--) {
		out[i] = hex_digit((unsigned)id, false);
		id >>= 4;
	}
	out[16] = '\0';
}

int
store_id_parse(const char *s, uint64_t *id)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		int h = hex_value(s[i]);

		/* Ids are written in lower case: another spelling names nothing. */
		if (h < 0 || (s[i] >= 'A' && s[i] <= 'F'))
			return -EINVAL;
		v = v << 4 | (uint64_t)h;
	}
	if (s[16] != '\0')
		return -EINVAL;
	*id = v;
	return 0;
}

int
store_check_type(const char *type, struct buf *err)
{
	size_t i, n = strlen(type);

	if (n == 0 || n > TYPE_MAX_LEN) {
		if (err)
			buf_printf(err, "profile type must be 1 to %d characters", TYPE_MAX_LEN);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		char c = type[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
		    c == '-' || c == '.')) {
			if (err)
				buf_printf(err, "profile type \"%s\": use lower-case letters, digits, '_', '-', '.'",
				    type);
			return -EINVAL;
		}
	}
	if (strcmp(type, "auto") == 0 || type[0] == '.') {
		if (err)
			buf_printf(err, "\"%s\" is not a profile type", type);
		return -EINVAL;
	}
	return 0;
}

int
store_check_service(const char *service, struct buf *err)
{
	size_t i, n = strlen(service);

	if (n == 0 || n > SERVICE_MAX_LEN) {
		if (err)
			buf_printf(err, "service name must be 1 to %d bytes", SERVICE_MAX_LEN);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)service[i];

		if (c < 0x20 || c == 0x7f || c == '/') {
			if (err)
				buf_adds(err, "service name must not contain '/' or control characters");
			return -EINVAL;
		}
	}
	if (store_service_reserved(service)) {
		if (err)
			buf_printf(err, "\"%s\" is reserved and cannot be a service name", service);
		return -EINVAL;
	}
	return 0;
}

static bool
has_type(const struct profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nsample_types; i++)
		if (strcmp(profile_str(p, p->sample_types[i].type), name) == 0)
			return true;
	return false;
}

bool
store_service_reserved(const char *service)
{
	/* The tree's own top-level names, and every dot name (".", "..", ".targets.json"). */
	return service[0] == '.' || strcmp(service, "ingest") == 0 ||
	    strcmp(service, "README.txt") == 0;
}

/* profefe's types first (its API lists them in this order), then the others inferred. */
const char *const store_types[] = {
	"cpu", "heap", "block", "mutex", "goroutine", "threadcreate", "other",
	"allocs", "wall", NULL
};

bool
store_type_known(const char *type)
{
	size_t i;

	for (i = 0; store_types[i]; i++)
		if (strcmp(type, store_types[i]) == 0)
			return true;
	return false;
}

const char *
store_infer_type(const struct profile *p)
{
	const char *pt = profile_str(p, p->period_type.type);
	const char *dflt = p->nsample_types ?
	    profile_str(p, p->sample_types[profile_default_type(p)].type) : "";

	if (has_type(p, "alloc_space") || has_type(p, "alloc_objects"))
		return strncmp(dflt, "alloc_", 6) == 0 ? "allocs" : "heap";
	/* pprof-nodejs names its heap columns objects/count and space/bytes. */
	if (has_type(p, "inuse_space") || has_type(p, "inuse_objects") ||
	    (has_type(p, "objects") && has_type(p, "space")))
		return "heap";
	if (has_type(p, "contentions") || has_type(p, "delay"))
		return strcmp(pt, "mutex") == 0 ? "mutex" : "block";
	if (has_type(p, "goroutine") || has_type(p, "goroutines"))
		return "goroutine";
	if (has_type(p, "threadcreate"))
		return "threadcreate";
	if (has_type(p, "wall") || has_type(p, "time") || strcmp(pt, "wall") == 0 ||
	    strcmp(pt, "wallclock") == 0)
		return "wall";
	if (has_type(p, "cpu") || strcmp(pt, "cpu") == 0)
		return "cpu";
	if (p->nsample_types == 1 && has_type(p, "samples"))
		return "cpu";
	if (has_type(p, "alloc_size") || has_type(p, "alloc-size"))
		return "allocs";
	return "other";
}

/* --- series index ------------------------------------------------------- */

static struct buf *
name_key(struct buf *k, const char *service, const char *type, const char *labels)
{
	buf_reset(k);
	if (buf_addc(k, 'N') < 0 || buf_add(k, service, strlen(service) + 1) < 0 ||
	    buf_add(k, type, strlen(type) + 1) < 0 || buf_adds(k, labels) < 0)
		return NULL;
	return k;
}

/* Order of the index: service, then type, then labels (NULL: any). */
static int
series_order(const struct series *x, const char *service, const char *type,
    const char *labels)
{
	int c;

	if ((c = strcmp(x->service, service)) != 0 || type == NULL)
		return c;
	if ((c = strcmp(x->type, type)) != 0 || labels == NULL)
		return c;
	return strcmp(x->labels, labels);
}

/*
 * The first position in sorted[] whose series is not ordered before
 * (service, type, labels); type and labels may be NULL to find the first of
 * a service or of a (service, type). Caller holds st_lock.
 */
/* Position of series id in series[], or -1. Caller holds st_lock. */
static ssize_t
series_pos(const struct store *st, uint64_t id)
{
	size_t lo = 0, hi = st->nseries, mid;

	/* series[] is in id order (handed out rising, loaded in key order). */
	if (id < st->nseries && st->series[id]->id == id)
		return (ssize_t)id;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (st->series[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < st->nseries && st->series[lo]->id == id ? (ssize_t)lo : -1;
}

static size_t
series_lower(const struct store *st, const char *service, const char *type,
    const char *labels)
{
	size_t lo = 0, hi = st->nseries, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (series_order(st->sorted[mid], service, type, labels) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Add a series to memory. Caller holds st_lock for writing. */
static int
series_add(struct store *st, uint64_t sid, const char *service, const char *type,
    const char *labels)
{
	struct series *s, **ns;
	struct sstate **nst;
	struct buf k = { 0 };
	size_t pos;
	int64_t idx;

	if (st->nseries == st->capseries) {
		size_t ncap = st->capseries ? st->capseries * 2 : 16;

		if ((ns = realloc(st->series, ncap * sizeof(*ns))) == NULL)
			return -ENOMEM;
		st->series = ns;
		if ((ns = realloc(st->sorted, ncap * sizeof(*ns))) == NULL)
			return -ENOMEM;
		st->sorted = ns;
		if ((nst = realloc(st->state, ncap * sizeof(*nst))) == NULL)
			return -ENOMEM;
		st->state = nst;
		st->capseries = ncap;
	}
	if ((st->state[st->nseries] = calloc(1, sizeof(struct sstate))) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&st->state[st->nseries]->sym_lock, NULL);
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->id = sid;
	s->service = strdup(service);
	s->type = strdup(type);
	s->labels = strdup(labels);
	if (!s->service || !s->type || !s->labels || labels_parse(labels, &s->ls, NULL) < 0 ||
	    name_key(&k, service, type, labels) == NULL ||
	    (idx = intern_put(st->names, k.data, k.len, NULL)) < 0) {
		buf_free(&k);
		free((char *)s->service);
		free((char *)s->type);
		free((char *)s->labels);
		labels_clear(&s->ls);
		free(s);
		return -ENOMEM;
	}
	buf_free(&k);
	/* Insertion keeps sorted[] ordered: series are few and created rarely. */
	pos = series_lower(st, service, type, labels);
	memmove(st->sorted + pos + 1, st->sorted + pos, (st->nseries - pos) * sizeof(*ns));
	st->sorted[pos] = s;
	/* The smallest id of the service: fixed once set, ids only grow. */
	st->state[st->nseries]->space = sid;
	for (pos = series_lower(st, service, NULL, NULL); pos < st->nseries + 1 &&
	    strcmp(st->sorted[pos]->service, service) == 0; pos++)
		if (st->sorted[pos]->id < st->state[st->nseries]->space)
			st->state[st->nseries]->space = st->sorted[pos]->id;
	st->series[st->nseries++] = s;
	if (sid >= st->next_sid)
		st->next_sid = sid + 1;
	return 0;
}

static struct series *
series_find(struct store *st, const char *service, const char *type, const char *labels)
{
	struct buf k = { 0 };
	int64_t idx = -1;

	if (name_key(&k, service, type, labels))
		idx = intern_get(st->names, k.data, k.len);
	buf_free(&k);
	return idx < 0 ? NULL : st->series[idx];
}

/* The series for (service, type, labels), created (durably) if new. */
static int
series_get_or_create(struct store *st, const char *service, const char *type,
    const char *labels, uint64_t *sid, struct buf *err)
{
	struct buf k = { 0 }, v = { 0 };
	unsigned char skey[9];
	struct series *s;
	char *dberr = NULL;
	int rc = 0;

	pthread_rwlock_rdlock(&st->st_lock);
	s = series_find(st, service, type, labels);
	pthread_rwlock_unlock(&st->st_lock);
	if (s) {
		*sid = s->id;
		return 0;
	}
	pthread_rwlock_wrlock(&st->st_lock);
	if ((s = series_find(st, service, type, labels)) != NULL) {
		ssize_t pos = series_pos(st, s->id);

		if (pos >= 0)
			st->state[pos]->empty = false;
		*sid = s->id;
		goto out;
	}
	{
		/*
		 * A producer that puts a request id or a timestamp in a label
		 * makes a series per profile; every listing walks the series.
		 */
		size_t pos = series_lower(st, service, NULL, NULL), nsvc = 0;

		size_t end = pos, live = 0;

		while (end < st->nseries && strcmp(st->sorted[end]->service, service) == 0)
			end++;
		nsvc = end - pos;
		if (st->max_series && nsvc >= st->max_series) {
			/* Series retention emptied do not count. */
			for (; pos < end; pos++) {
				ssize_t at = series_pos(st, st->sorted[pos]->id);

				live += at < 0 || !st->state[at]->empty;
			}
			nsvc = live;
		}
		if (st->max_series && nsvc >= st->max_series) {
			if (err)
				buf_printf(err, "service %s already has %zu label sets, the limit "
				    "(--max-series): leave ids and times out of labels", service,
				    nsvc);
			rc = -EINVAL;
			goto out;
		}
	}
	*sid = st->next_sid;
	skey[0] = 'S';
	be64_put(skey + 1, *sid);
	if (name_key(&k, service, type, labels) == NULL ||
	    buf_add(&v, service, strlen(service) + 1) < 0 ||
	    buf_add(&v, type, strlen(type) + 1) < 0 || buf_adds(&v, labels) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	{
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
		unsigned char sidv[8];

		unsigned char nextv[8];

		be64_put(sidv, *sid);
		be64_put(nextv, *sid + 1);
		rocksdb_writebatch_put(wb, (char *)skey, sizeof(skey), v.data, v.len);
		rocksdb_writebatch_put(wb, k.data, k.len, (char *)sidv, 8);
		rocksdb_writebatch_put(wb, "Q", 1, (char *)nextv, 8);
		rocksdb_write(st->db, st->wsync, wb, &dberr);
		rocksdb_writebatch_destroy(wb);
	}
	if (dberr) {
		if (err)
			buf_printf(err, "database write failed: %s", dberr);
		free(dberr);
		rc = -EIO;
		goto out;
	}
	rc = series_add(st, *sid, service, type, labels);
out:
	pthread_rwlock_unlock(&st->st_lock);
	buf_free(&k);
	buf_free(&v);
	return rc;
}

void
store_set_max_series(struct store *st, size_t n)
{
	pthread_rwlock_wrlock(&st->st_lock);
	st->max_series = n;
	pthread_rwlock_unlock(&st->st_lock);
}

int
store_series(struct store *st, const struct series ***out, size_t *n)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	const struct series **arr;

	if (rm)
		return rm->series(rm->arg, out, n);
	pthread_rwlock_rdlock(&st->st_lock);
	arr = malloc((st->nseries + 1) * sizeof(*arr));
	if (arr == NULL) {
		pthread_rwlock_unlock(&st->st_lock);
		return -ENOMEM;
	}
	if (st->nseries)	/* st->sorted is NULL in an empty store */
		memcpy(arr, st->sorted, st->nseries * sizeof(*arr));
	*n = st->nseries;
	pthread_rwlock_unlock(&st->st_lock);
	*out = arr;
	return 0;
}

int
store_series_each(struct store *st, const char *service, const char *type,
    store_series_fn fn, void *arg)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	const struct series *small[64], **m = small, **nm;
	size_t i, n = 0, cap = 64;
	int rc = 0;

	if (rm)
		return rm->series_each(rm->arg, service, type, fn, arg);
	/*
	 * The matches are taken under the index lock and fn runs without it,
	 * so fn may use the store freely (series never move nor go away).
	 */
	pthread_rwlock_rdlock(&st->st_lock);
	i = service ? series_lower(st, service, type, NULL) : 0;
	for (; i < st->nseries && rc == 0; i++) {
		const struct series *s = st->sorted[i];

		if (service && series_order(s, service, type, NULL) != 0)
			break;
		if (type && strcmp(s->type, type) != 0)
			continue;
		if (n == cap) {
			cap *= 2;
			if ((nm = malloc(cap * sizeof(*nm))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			memcpy(nm, m, n * sizeof(*nm));
			if (m != small)
				free(m);
			m = nm;
		}
		m[n++] = s;
	}
	pthread_rwlock_unlock(&st->st_lock);
	for (i = 0; i < n && rc == 0; i++)
		rc = fn(arg, m[i]);
	if (m != small)
		free(m);
	return rc;
}

static const struct series *series_local(struct store *st, uint64_t id);

const struct series *
store_series_get(struct store *st, uint64_t id)
{
	const struct store_remote *rm = atomic_load(&st->remote);

	return rm ? rm->series_get(rm->arg, id) : series_local(st, id);
}

/* store_series_get() of this store's own index, whatever the reads go to. */
static const struct series *
series_local(struct store *st, uint64_t id)
{
	const struct series *s = NULL;
	ssize_t i;

	pthread_rwlock_rdlock(&st->st_lock);
	if ((i = series_pos(st, id)) >= 0)
		s = st->series[i];
	pthread_rwlock_unlock(&st->st_lock);
	return s;
}

/* --- open / close ------------------------------------------------------- */

static int
store_load(struct store *st, struct buf *err)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	rocksdb_writebatch_t *gone = rocksdb_writebatch_create();
	struct buf nk = { 0 };
	unsigned char k[9];
	size_t ngone = 0;
	uint64_t sid;
	int rc = 0;

	for (rocksdb_iter_seek(it, "S", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *key = rocksdb_iter_key(it, &kl);
		const char *val = rocksdb_iter_value(it, &vl);
		const char *type, *labels;
		char *copy;

		if (kl != 9 || key[0] != 'S')
			break;
		/* service \0 type \0 labels */
		if ((copy = malloc(vl + 1)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		memcpy(copy, val, vl);
		copy[vl] = '\0';
		type = memchr(copy, '\0', vl) ? copy + strlen(copy) + 1 : NULL;
		labels = type && type < copy + vl ? type + strlen(type) + 1 : NULL;
		if (labels == NULL || labels > copy + vl) {
			log_warnx("store: skipping corrupt series record %llu",
			    (unsigned long long)be64_get((const unsigned char *)key + 1));
			free(copy);
			continue;
		}
		sid = be64_get((const unsigned char *)key + 1);
		if (!series_holds_data(st, sid)) {
			/* Emptied by retention: its records go (its id is never reused). */
			if (name_key(&nk, copy, type, labels) != NULL) {
				rocksdb_writebatch_delete(gone, key, kl);
				rocksdb_writebatch_delete(gone, nk.data, nk.len);
				ngone++;
			}
			buf_reset(&nk);
			if (sid >= st->next_sid)
				st->next_sid = sid + 1;
			free(copy);
			continue;
		}
		rc = series_add(st, sid, copy, type, labels);
		free(copy);
		if (rc < 0)
			break;
	}
	if (rc == 0 && ngone) {
		char *dberr = NULL;

		rocksdb_write(st->db, st->wsync, gone, &dberr);
		if (dberr) {
			log_warnx("store: removing %zu empty series: %s", ngone, dberr);
			free(dberr);
		} else {
			log_info("store: removed %zu series that retention had emptied", ngone);
		}
	}
	rocksdb_writebatch_destroy(gone);
	buf_free(&nk);
	{
		char *dberr = NULL, *v;
		size_t vl;

		v = rocksdb_get(st->db, st->ropts, "Q", 1, &vl, &dberr);
		if (v && vl == 8 && be64_get((unsigned char *)v) > st->next_sid)
			st->next_sid = be64_get((unsigned char *)v);
		free(v);
		free(dberr);
	}
	/* The next profile id follows the largest one stored. */
	k[0] = 'J';
	rocksdb_iter_seek_for_prev(it, (char *)k, 1);
	if (rocksdb_iter_valid(it)) {
		size_t kl;
		const char *key = rocksdb_iter_key(it, &kl);

		if (kl == 9 && key[0] == 'I')
			st->next_id = be64_get((const unsigned char *)key + 1) + 1;
	}
	if (st->next_id == 0)
		st->next_id = 1;
	rocksdb_iter_destroy(it);
	if (rc < 0 && err)
		buf_adds(err, "out of memory loading the series index");
	return rc;
}

/*
 * Data dirs of earlier releases hold gzipped pprof values (version 1):
 * convert each to a pack with its T record and marker, a batch of profiles
 * at a time (each batch synced: a crash resumes where it stopped), then
 * note the format in 'V' so that later opens skip the scan.
 */
static int
store_migrate(struct store *st, struct buf *err)
{
	rocksdb_iterator_t *it;
	rocksdb_writebatch_t *wb;
	struct buf news = { 0 };
	char *dberr = NULL, *v;
	uint64_t done = 0, bad = 0;
	size_t vl, inbatch = 0;
	int rc = 0;

	v = rocksdb_get(st->db, st->ropts, "V", 1, &vl, &dberr);
	if (dberr) {
		if (err)
			buf_printf(err, "cannot read the database: %s", dberr);
		free(dberr);
		return -EIO;
	}
	free(v);
	if (v)
		return 0;
	it = rocksdb_create_iterator(st->db, st->ropts);
	wb = rocksdb_writebatch_create();
	for (rocksdb_iter_seek(it, "P", 1); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *val = rocksdb_iter_value(it, &vl);
		struct profile *p = NULL;
		size_t plen;

		if (kl != 25 || k[0] != 'P')
			break;
		if (vl < 1 || val[0] != VALUE_V1)
			continue;
		if (profile_decode(val + 1, vl - 1, &p, NULL) < 0) {
			bad++;	/* kept as it is: listed, left out of merges with a reason */
			continue;
		}
		buf_reset(&news);
		rc = batch_profile(st, wb, be64_get(k + 1), time_dec(be64_get(k + 9)),
		    be64_get(k + 17), p, &news, &plen);
		profile_free(p);
		if (rc == 0)
			batch_done(st, be64_get(k + 1), &news);	/* written below, or nothing is */
		if (rc == 0 && ++inbatch == 256) {
			rocksdb_write(st->db, st->wsync, wb, &dberr);
			rocksdb_writebatch_clear(wb);
			done += inbatch;
			inbatch = 0;
			if (dberr)
				break;
		}
	}
	if (rc == 0 && dberr == NULL) {
		rocksdb_writebatch_put(wb, "V", 1, "2", 1);
		rocksdb_write(st->db, st->wsync, wb, &dberr);
		done += inbatch;
	}
	rocksdb_writebatch_destroy(wb);
	rocksdb_iter_destroy(it);
	buf_free(&news);
	if (dberr) {
		if (err)
			buf_printf(err, "converting the data directory failed: %s", dberr);
		free(dberr);
		return -EIO;
	}
	if (rc < 0) {
		if (err)
			buf_adds(err, "converting the data directory failed (out of memory)");
		return rc;
	}
	if (done)
		log_info("store: converted %llu profiles to the compact format%s",
		    (unsigned long long)done, bad ? " (some could not be decoded)" : "");
	return 0;
}

bool
store_time_sane(int64_t t, int64_t now)
{
	return t >= STORE_TIME_MIN && t <= now + INT64_C(86400) * 1000000000;
}

/*
 * The data directory: created 0700 if missing, kept private if it exists
 * (profiles name functions, files and labels that are not every local
 * user's business), and refused when it already holds files that are not
 * a database: --data pointed at the wrong place must not fill, say, a home
 * directory with RocksDB's files.
 */
static int
data_dir_check(const char *dir, struct buf *err)
{
	struct dirent *e;
	struct stat sb;
	bool empty = true, db = false;
	DIR *d;
	int rc;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno != EEXIST || stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		rc = errno == EEXIST ? -ENOTDIR : -errno;
		if (err)
			buf_printf(err, "cannot create data directory %s: %s", dir, strerror(-rc));
		return rc;
	}
	if ((d = opendir(dir)) == NULL) {
		rc = -errno;
		if (err)
			buf_printf(err, "cannot read data directory %s: %s", dir, strerror(errno));
		return rc;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, "lost+found") == 0)
			continue;
		empty = false;
		if (strcmp(e->d_name, "CURRENT") == 0 || strcmp(e->d_name, "IDENTITY") == 0)
			db = true;
	}
	closedir(d);
	if (!empty && !db) {
		if (err)
			buf_printf(err, "data directory %s is not empty and holds no profilefs "
			    "database: give --data a new or empty directory", dir);
		return -EEXIST;
	}
	if ((sb.st_mode & 077) && sb.st_uid == geteuid() && chmod(dir, 0700) == 0)
		log_info("data directory %s: access for other users removed (now 0700)", dir);
	return 0;
}

int
store_open(const char *dir, struct store **out, struct buf *err)
{
	struct store *st;
	char *dberr = NULL;
	int rc;

	*out = NULL;
	if ((rc = data_dir_check(dir, err)) < 0)
		return rc;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	pthread_rwlock_init(&st->st_lock, NULL);
	pthread_rwlock_init(&st->db_lock, NULL);
	pthread_mutex_init(&st->rt_lock, NULL);
	pthread_mutex_init(&st->ch_lock, NULL);
	pthread_mutex_init(&st->cp_run, NULL);
	pthread_cond_init(&st->rt_cond, NULL);
	st->names = intern_create(64);
	st->max_series = STORE_MAX_SERIES;
	if ((st->dir = strdup(dir)) == NULL) {
		store_close(st);
		return -ENOMEM;
	}
	st->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(st->opts, 1);
	/*
	 * Packs are varints of ids and values: zstd over 64 KiB blocks finds
	 * what repeats from one profile to the next (Debian's librocksdb links
	 * libzstd). Fresh tables (flushes, upper levels) use the cheaper lz4 so
	 * that ingest does not pay zstd's price; the bottom level holds most.
	 */
	rocksdb_options_set_compression(st->opts, rocksdb_lz4_compression);
	rocksdb_options_set_bottommost_compression(st->opts, rocksdb_zstd_compression);
	st->bopts = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_size(st->bopts, 64 << 10);
	rocksdb_options_set_block_based_table_factory(st->opts, st->bopts);
	rocksdb_options_increase_parallelism(st->opts, 2);
	rocksdb_options_set_max_open_files(st->opts, 512);
	rocksdb_options_set_keep_log_file_num(st->opts, 3);
	/*
	 * RocksDB's text LOG only gets its header: on a full file system a
	 * failed LOG write makes RocksDB 7.8 abort at its next message (an
	 * assertion in WritableFileWriter), while the store reports errors itself.
	 */
	rocksdb_options_set_info_log_level(st->opts, 5 /* HEADER_LEVEL */);
	st->wsync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wsync, 1);
	st->wasync = rocksdb_writeoptions_create();
	st->ropts = rocksdb_readoptions_create();
	st->db = rocksdb_open(st->opts, dir, &dberr);
	if (st->db == NULL) {
		if (err) {
			if (dberr && strstr(dberr, "lock"))
				buf_printf(err, "data directory %s is in use by another process "
				    "(is another profilefs running on it?): %s", dir, dberr);
			else
				buf_printf(err, "cannot open the database in %s: %s", dir,
				    dberr ? dberr : "unknown error");
		}
		free(dberr);
		store_close(st);
		return -EIO;
	}
	if ((rc = store_load(st, err)) < 0 || (rc = store_migrate(st, err)) < 0) {
		store_close(st);
		return rc;
	}
	pthread_cond_init(&st->cp_cond, NULL);
	if (pthread_create(&st->cp_thread, NULL, compact_main, st) != 0) {
		rc = -errno;
		if (err)
			buf_adds(err, "cannot start the compaction thread");
		store_close(st);
		return rc;
	}
	st->cp_running = true;
	*out = st;
	return 0;
}

void
store_close(struct store *st)
{
	size_t i;

	if (st == NULL)
		return;
	if (st->cp_running) {
		pthread_mutex_lock(&st->rt_lock);
		st->cp_stop = true;
		pthread_cond_broadcast(&st->cp_cond);
		pthread_mutex_unlock(&st->rt_lock);
		pthread_join(st->cp_thread, NULL);
		pthread_cond_destroy(&st->cp_cond);
	}
	if (st->rt_running) {
		pthread_mutex_lock(&st->rt_lock);
		st->rt_stop = true;
		pthread_cond_signal(&st->rt_cond);
		pthread_mutex_unlock(&st->rt_lock);
		pthread_join(st->rt_thread, NULL);
	}
	if (st->db) {
		char *dberr = NULL;
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();

		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(st->db, fo, &dberr);
		rocksdb_flushoptions_destroy(fo);
		if (dberr) {
			log_warnx("store: flush on close failed: %s", dberr);
			free(dberr);
		}
		rocksdb_close(st->db);
	}
	if (st->opts)
		rocksdb_options_destroy(st->opts);
	if (st->wsync)
		rocksdb_writeoptions_destroy(st->wsync);
	if (st->wasync)
		rocksdb_writeoptions_destroy(st->wasync);
	if (st->bopts)
		rocksdb_block_based_options_destroy(st->bopts);
	if (st->ropts)
		rocksdb_readoptions_destroy(st->ropts);
	for (i = 0; i < st->nseries; i++) {
		free((char *)st->series[i]->service);
		free((char *)st->series[i]->type);
		free((char *)st->series[i]->labels);
		labels_clear(&st->series[i]->ls);
		free(st->series[i]);
	}
	for (i = 0; i < st->nseries; i++) {
		symtab_free(st->state[i]->sym);
		pthread_mutex_destroy(&st->state[i]->sym_lock);
		free(st->state[i]);
	}
	free(st->series);
	free(st->sorted);
	free(st->state);
	intern_destroy(st->names);
	pthread_rwlock_destroy(&st->st_lock);
	pthread_rwlock_destroy(&st->db_lock);
	pthread_mutex_destroy(&st->rt_lock);
	pthread_mutex_destroy(&st->ch_lock);
	pthread_mutex_destroy(&st->cp_run);
	pthread_cond_destroy(&st->rt_cond);
	free(st->dir);
	free(st);
}

/* --- symbols ------------------------------------------------------------ */

/* Fill t with the 'Y' records of series sid. */
static int
symtab_read(struct store *st, uint64_t sid, struct symtab *t)
{
	unsigned char lo[9], hi[9];
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	int rc = 0;

	lo[0] = hi[0] = 'Y';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid + 1);
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);

		if (kl != 14 || k[9] >= SYM_NKINDS)
			continue;
		rc = symtab_load(t, k[9], (uint32_t)be64_get(k + 6) & UINT32_MAX, v, vl);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

/*
 * The state holding series sid's symbols, loaded, with its sym_lock held.
 * Lock order: db_lock (read, held by the caller), then sym_lock.
 */
static struct sstate *
sstate_lock(struct store *st, uint64_t sid, int *rc)
{
	struct sstate *ss = NULL;
	ssize_t pos;

	*rc = 0;
	pthread_rwlock_rdlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0 &&
	    (pos = series_pos(st, st->state[pos]->space)) >= 0)
		ss = st->state[pos];
	pthread_rwlock_unlock(&st->st_lock);
	if (ss == NULL) {
		*rc = -ENOENT;
		return NULL;
	}
	pthread_mutex_lock(&ss->sym_lock);
	if (ss->sym == NULL) {
		if ((ss->sym = symtab_create()) == NULL)
			*rc = -ENOMEM;
		else	/* the caller holds db_lock: always taken before sym_lock */
			*rc = symtab_read(st, ss->space, ss->sym);
		if (*rc < 0 && ss->sym) {
			log_warnx("store: the symbols of series %llu cannot be loaded",
			    (unsigned long long)sid);
			symtab_free(ss->sym);
			ss->sym = NULL;
		}
		if (*rc < 0) {
			pthread_mutex_unlock(&ss->sym_lock);
			return NULL;
		}
	}
	return ss;
}

const struct symtab *
store_symtab_acquire(struct store *st, uint64_t sid, int *rc)
{
	struct sstate *ss;

	pthread_rwlock_rdlock(&st->db_lock);
	if ((ss = sstate_lock(st, sid, rc)) == NULL)
		pthread_rwlock_unlock(&st->db_lock);
	return ss ? ss->sym : NULL;
}

void
store_symtab_release(struct store *st, uint64_t sid)
{
	struct sstate *ss = NULL;
	ssize_t pos;

	pthread_rwlock_rdlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0 &&
	    (pos = series_pos(st, st->state[pos]->space)) >= 0)
		ss = st->state[pos];
	pthread_rwlock_unlock(&st->st_lock);
	if (ss)
		pthread_mutex_unlock(&ss->sym_lock);
	pthread_rwlock_unlock(&st->db_lock);
}

uint64_t
store_sighash(const void *sig, size_t len)
{
	return hash_bytes(sig, len);
}

/*
 * Add to wb everything that stores profile p as (sid, time, id): its pack,
 * the new symbols, its T record and its window's dirty marker. *news gets
 * the symbols to mark durable once wb is written.
 */
static int
batch_profile(struct store *st, rocksdb_writebatch_t *wb, uint64_t sid, int64_t time,
    uint64_t id, const struct profile *p, struct buf *news, size_t *vlen)
{
	unsigned char pkey[25], ykey[14], dkey[25], tmark[8];
	struct buf val = { 0 }, tv = { 0 }, sig = { 0 };
	const struct sym_new *e;
	struct sstate *ss;
	uint64_t h;
	size_t i, n;
	int rc;

	if ((ss = sstate_lock(st, sid, &rc)) == NULL)
		return rc;
	if ((rc = pack_profile(ss->sym, p, time, &val, news)) < 0)
		goto unlock;
	/* The batch copies keys and values: the lock covers only the table. */
	ykey[0] = 'Y';
	be64_put(ykey + 1, ss->space);
	e = (const struct sym_new *)news->data;
	n = news->len / sizeof(*e);
	for (i = 0; i < n; i++) {
		const void *d;
		size_t dl;

		ykey[9] = e[i].kind;
		ykey[10] = (unsigned char)(e[i].id >> 24);
		ykey[11] = (unsigned char)(e[i].id >> 16);
		ykey[12] = (unsigned char)(e[i].id >> 8);
		ykey[13] = (unsigned char)e[i].id;
		if ((d = symtab_entry(ss->sym, e[i].kind, e[i].id, &dl)) == NULL) {
			rc = -EINVAL;
			goto unlock;
		}
		rocksdb_writebatch_put(wb, (char *)ykey, sizeof(ykey), d, dl);
	}
unlock:
	pthread_mutex_unlock(&ss->sym_lock);
	if (rc < 0)
		goto out;
	pkey[0] = 'P';
	be64_put(pkey + 1, sid);
	be64_put(pkey + 9, time_enc(time));
	be64_put(pkey + 17, id);
	rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), val.data, val.len);
	/* T: totals and signature hash */
	if ((rc = profile_signature(p, &sig)) < 0)
		goto out;
	h = store_sighash(sig.data, sig.len);
	{
		unsigned char tmp[10];
		size_t k;

		for (i = 0; i <= p->nsample_types && i <= STORE_MAX_TYPES && rc == 0; i++) {
			uint64_t v = i == 0 ? p->nsample_types :
			    (uint64_t)profile_total(p, i - 1) << 1 ^
			    (uint64_t)(profile_total(p, i - 1) >> 63);

			for (k = 0; v >= 0x80; v >>= 7)
				tmp[k++] = (unsigned char)(v | 0x80);
			tmp[k++] = (unsigned char)v;
			rc = buf_add(&tv, tmp, k);
		}
		be64_put(tmp, h);
		if (rc == 0)
			rc = buf_add(&tv, tmp, 8);
	}
	if (rc < 0)
		goto out;
	pkey[0] = 'T';
	rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), tv.data, tv.len);
	if (time >= WIN_MIN && time < WIN_MAX) {
		dkey[0] = 'D';
		be64_put(dkey + 1, sid);
		be64_put(dkey + 9, time_enc(floordiv(time, NS_10M) * NS_10M));
		be64_put(dkey + 17, id);
		/* The marker's value is the profile's time: the compactor finds it by key. */
		be64_put(tmark, time_enc(time));
		rocksdb_writebatch_put(wb, (char *)dkey, sizeof(dkey), (char *)tmark, 8);
	}
	*vlen = val.len;
out:
	buf_free(&val);
	buf_free(&tv);
	buf_free(&sig);
	return rc;
}

/* After wb was written: its symbols need not be written again. */
static void
batch_done(struct store *st, uint64_t sid, const struct buf *news)
{
	struct sstate *ss;
	int rc;

	if (news->len == 0 || (ss = sstate_lock(st, sid, &rc)) == NULL)
		return;
	symtab_durable(ss->sym, (const struct sym_new *)news->data,
	    news->len / sizeof(struct sym_new));
	pthread_mutex_unlock(&ss->sym_lock);
}

/* Wake the compactor: new markers wait. */
static void
compact_kick(struct store *st)
{
	/* A kick already pending covers this put (a stale read only costs a kick). */
	if (__atomic_load_n(&st->cp_kick, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&st->rt_lock);
	__atomic_store_n(&st->cp_kick, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&st->cp_cond);
	pthread_mutex_unlock(&st->rt_lock);
}

/* --- writing ------------------------------------------------------------ */

static int
put_locked(struct store *st, const struct store_input *in, const struct profile *p,
    struct store_ref *ref, struct buf *err)
{
	int64_t now;
	const char *type = in->type;
	struct buf labels = { 0 }, news = { 0 };
	unsigned char ikey[9], ival[16], hkey[17];
	rocksdb_writebatch_t *wb = NULL;
	struct store_ref r;
	char *dberr = NULL;
	size_t vlen = 0;
	int rc;

	memset(&r, 0, sizeof(r));
	if ((rc = store_check_service(in->service ? in->service : "", err)) < 0)
		goto out;
	if (type == NULL || strcmp(type, "auto") == 0)
		type = store_infer_type(p);
	else if ((rc = store_check_type(type, err)) < 0 ||
	    (rc = store_check_known_type(type, err)) < 0 ||
	    (rc = store_check_profile_type(type, p, err)) < 0)
		goto out;
	if (p->nsample_types == 0 || p->nsample_types > STORE_MAX_TYPES) {
		if (err)
			buf_printf(err, p->nsample_types ? "profile has %zu sample types (at most %d "
			    "are stored)" : "profile has no sample types", p->nsample_types,
			    STORE_MAX_TYPES);
		rc = -EINVAL;
		goto out;
	}
	if (in->labels && (rc = labels_format(in->labels, &labels)) < 0)
		goto out;
	if ((rc = buf_reserve(&labels, 0)) < 0)
		goto out;
	now = clock_now_ns();
	/*
	 * A profile's own time that no clock could have written (0001, 2262)
	 * would sit where no range shows it and retention never reaches: it
	 * counts as absent, and the time of reception is used.
	 */
	if (p->time_nanos && !in->created_at && !store_time_sane(p->time_nanos, now))
		log_info("store: %s/%s: the profile's time %lld ns is out of range; stored at "
		    "its time of reception", in->service, type, (long long)p->time_nanos);
	r.time = in->created_at ? in->created_at :
	    p->time_nanos && store_time_sane(p->time_nanos, now) ? p->time_nanos : now;
	snprintf(r.type, sizeof(r.type), "%s", type);
	if ((rc = series_get_or_create(st, in->service, type, labels.data, &r.series, err)) < 0)
		goto out;
	r.id = atomic_fetch_add(&st->next_id, 1);

	wb = rocksdb_writebatch_create();
	if ((rc = batch_profile(st, wb, r.series, r.time, r.id, p, &news, &vlen)) < 0) {
		if (err)
			buf_adds(err, rc == -ENOMEM ? "out of memory" : "profile cannot be encoded");
		goto out;
	}
	ikey[0] = 'I';
	be64_put(ikey + 1, r.id);
	be64_put(ival, r.series);
	be64_put(ival + 8, time_enc(r.time));
	hkey[0] = 'H';
	be64_put(hkey + 1, r.series);
	be64_put(hkey + 9, time_enc(floordiv(r.time, NS_1H)));
	rocksdb_writebatch_put(wb, (char *)ikey, sizeof(ikey), (char *)ival, sizeof(ival));
	rocksdb_writebatch_put(wb, (char *)hkey, sizeof(hkey), "", 0);
	if (atomic_load(&st->q_on)) {
		ikey[0] = 'O';	/* same id as the I key: in the same batch */
		rocksdb_writebatch_put(wb, (char *)ikey, sizeof(ikey), "", 0);
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	if (dberr) {
		rc = store_write_error(st, dberr, err);
		goto out;
	}
	batch_done(st, r.series, &news);
	if (atomic_load(&st->q_on))
		atomic_fetch_add(&st->q_len, 1);
	atomic_fetch_add(&st->n_put, 1);
	atomic_fetch_add(&st->n_bytes, vlen);
	note_change(st, r.time);
	compact_kick(st);
	if (ref)
		*ref = r;
out:
	if (wb)
		rocksdb_writebatch_destroy(wb);
	if (rc < 0)
		atomic_fetch_add(&st->n_rejected, 1);
	buf_free(&labels);
	buf_free(&news);
	return rc;
}

/* Puts share the database with each other; a reopen after a full disk waits. */
static int
put_common(struct store *st, const struct store_input *in, const struct profile *p,
    struct store_ref *ref, struct buf *err)
{
	int rc;

	if (atomic_load(&st->full)) {
		if (err)
			buf_adds(err, "the data directory's file system is full; "
			    "storing resumes once space is freed");
		atomic_fetch_add(&st->n_rejected, 1);
		return -ENOSPC;
	}
	pthread_rwlock_rdlock(&st->db_lock);
	rc = put_locked(st, in, p, ref, err);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

/* Count one attempt of in->source in the metrics (see store.h). */
static void
count_put(const struct store_input *in, int rc, size_t len, int64_t t0)
{
	const char *src = in->source ? in->source : "other";
	const char *outcome = rc == 0 ? "ok" : rc == -EINVAL ? "invalid" :
	    rc == -EFBIG ? "too_large" : "error";
	char l[128];

	snprintf(l, sizeof(l), "source=\"%s\"", src);
	metrics_observe("profilefs_ingest_duration_seconds", l,
	    (double)(clock_mono_ns() - t0) / 1e9);
	if (rc == 0)
		metrics_add("profilefs_ingested_bytes_total", l, (double)len);
	snprintf(l, sizeof(l), "source=\"%s\",outcome=\"%s\"", src, outcome);
	metrics_add("profilefs_ingested_profiles_total", l, 1);
}

int
store_put(struct store *st, const struct store_input *in, const void *data, size_t len,
    struct store_ref *ref, struct buf *err)
{
	const unsigned char *d = data;
	size_t limit = in->max_decoded ? in->max_decoded : PROFILE_MAX_DECODED;
	struct profile *p = NULL;
	struct buf plain = { 0 };
	int64_t t0 = clock_mono_ns();
	bool gzipped = len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
	const void *pd = data;
	size_t pl = len;
	int rc;

	/* Gunzipped once: measured against the limit, then decoded. */
	if (gzipped) {
		if ((rc = profile_gunzip(data, len, &plain, err)) < 0)
			goto out;
		pd = plain.data ? plain.data : "";
		pl = plain.len;
	}
	if (pl > limit) {
		if (err)
			buf_printf(err, "the profile is %zu bytes unzipped, over the limit of %zu bytes",
			    pl, limit);
		rc = -EFBIG;
		goto out;
	}
	if (gzipped && pl == 0) {
		if (err)
			buf_adds(err, "gzip data holds nothing: not a pprof profile");
		rc = -EINVAL;
		goto out;
	}
	if ((rc = profile_decode(pd, pl, &p, err)) < 0)
		goto out;
	rc = put_common(st, in, p, ref, err);
out:
	if (rc < 0 && p == NULL)
		atomic_fetch_add(&st->n_rejected, 1);
	count_put(in, rc, len, t0);
	profile_free(p);
	buf_free(&plain);
	return rc;
}

int
store_put_profile(struct store *st, const struct store_input *in, const struct profile *p,
    struct store_ref *ref, struct buf *err)
{
	int64_t t0 = clock_mono_ns();
	int rc;

	rc = put_common(st, in, p, ref, err);
	count_put(in, rc, 0, t0);
	return rc;
}

/*
 * A change to the data at time t (INT64_MIN: at any time) makes a new
 * generation. Entries whose earliest time is at or after t now stand for
 * generations whose changes reach back to t: they fold into one. Times rise
 * along the stack, so the entry holding generation g+1 tells the earliest
 * time any change after g touched. A full stack folds two entries, which
 * only makes an answer earlier (safe: a reader rebuilds).
 */
static void
note_change(struct store *st, int64_t t)
{
	uint64_t g;

	pthread_mutex_lock(&st->ch_lock);
	g = atomic_fetch_add(&st->gen, 1) + 1;
	while (st->nchanges > 0 && st->changes[st->nchanges - 1].tmin >= t)
		g = st->changes[--st->nchanges].gen;
	if (st->nchanges == STORE_CHANGES) {
		/*
		 * Full: the neighbours closest in time fold into one, which
		 * answers for both with the earlier time (safe, and off by
		 * the least).
		 */
		size_t i, best = 0;
		uint64_t gap, min = UINT64_MAX;

		for (i = 0; i + 1 < st->nchanges; i++) {
			gap = (uint64_t)st->changes[i + 1].tmin - (uint64_t)st->changes[i].tmin;
			if (gap < min) {
				min = gap;
				best = i;
			}
		}
		memmove(&st->changes[best + 1], &st->changes[best + 2],
		    (st->nchanges - best - 2) * sizeof(st->changes[0]));
		st->nchanges--;
	}
	st->changes[st->nchanges].gen = g;
	st->changes[st->nchanges].tmin = t;
	st->nchanges++;
	pthread_mutex_unlock(&st->ch_lock);
}

bool
store_changed_since(struct store *st, uint64_t gen, int64_t upto)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	size_t lo = 0, hi;
	bool changed;

	/* Reads served elsewhere: the times of their changes are not known here. */
	if (rm)
		return gen != store_generation(st);
	pthread_mutex_lock(&st->ch_lock);
	if (gen >= atomic_load(&st->gen)) {
		pthread_mutex_unlock(&st->ch_lock);
		return false;
	}
	/* The last entry starting at or before gen + 1. */
	hi = st->nchanges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->changes[mid].gen <= gen + 1)
			lo = mid + 1;
		else
			hi = mid;
	}
	changed = st->nchanges == 0 || st->changes[lo ? lo - 1 : 0].tmin <= upto;
	pthread_mutex_unlock(&st->ch_lock);
	return changed;
}

uint64_t
store_generation(const struct store *st)
{
	const struct store_remote *rm = atomic_load(&((struct store *)st)->remote);
	uint64_t g = atomic_load(&((struct store *)st)->gen);

	/* Remote data changes without local puts: the remote adds its own clock. */
	return rm ? g + rm->generation(rm->arg) : g;
}

/* --- reading ------------------------------------------------------------ */

/*
 * A write failed: -ENOSPC when the file system is full (RocksDB then refuses
 * writes until it recovers, reads go on), -EIO otherwise. Frees dberr.
 */
static int
store_write_error(struct store *st, char *dberr, struct buf *err)
{
	bool full = strstr(dberr, "No space left") || strstr(dberr, "NoSpace") ||
	    strstr(dberr, "no space");

	/* RocksDB must not be written again until it is reopened. */
	if (full && !atomic_exchange(&st->full, true))
		log_warnx("store: the data directory's file system is full: writes are refused "
		    "until space is freed");
	if (err)
		buf_printf(err, full ? "the data directory's file system is full: %s" :
		    "database write failed: %s", dberr);
	free(dberr);
	return full ? -ENOSPC : -EIO;
}

/* A packed profile as pprof (gzipped when gzip is set) into out. */
static int
unpack_pprof(struct store *st, uint64_t sid, const void *v, size_t vl, bool gzip,
    struct buf *out)
{
	struct agg *a = agg_create();
	struct profile *p = NULL;
	struct sstate *ss;
	int rc;

	if (a == NULL)
		return -ENOMEM;
	if ((rc = agg_add(a, v, vl, NULL)) < 0 || agg_ngroups(a) != 1) {
		agg_free(a);
		return rc < 0 ? rc : -EINVAL;
	}
	if ((ss = sstate_lock(st, sid, &rc)) != NULL) {
		rc = agg_profile(a, ss->sym, 0, false, &p);
		pthread_mutex_unlock(&ss->sym_lock);
	}
	agg_free(a);
	if (rc == 0)
		rc = profile_encode(p, gzip, out);
	profile_free(p);
	return rc;
}

static int
store_scan_locked(struct store *st, uint64_t sid, int64_t from, int64_t to, bool with_data,
    store_scan_fn fn, void *arg)
{
	unsigned char lo[17], hi[17];
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	const struct series *s = store_series_get(st, sid);
	struct buf pb = { 0 };
	struct store_ref r;
	int rc = 0;

	if (from >= to)
		return 0;
	/* T records list the profiles without reading their samples. */
	lo[0] = hi[0] = with_data ? 'P' : 'T';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid);
	be64_put(lo + 9, time_enc(from));
	be64_put(hi + 9, time_enc(to));
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	memset(&r, 0, sizeof(r));
	r.series = sid;
	if (s)
		snprintf(r.type, sizeof(r.type), "%s", s->type);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl, vl = 0;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v = NULL;

		if (kl != 25)
			break;
		r.time = time_dec(be64_get(k + 9));
		r.id = be64_get(k + 17);
		if (with_data) {
			v = rocksdb_iter_value(it, &vl);
			buf_reset(&pb);
			if (unpack_pprof(st, sid, v, vl, true, &pb) < 0) {
				log_warnx("store: profile %016llx cannot be read back, skipped",
				    (unsigned long long)r.id);
				continue;
			}
			v = pb.data;
			vl = pb.len;
		}
		if ((rc = fn(arg, &r, v, vl)) != 0)
			break;
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	buf_free(&pb);
	return rc;
}

int
store_scan(struct store *st, uint64_t sid, int64_t from, int64_t to, bool with_data,
    store_scan_fn fn, void *arg)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	int rc;

	if (rm)
		return with_data ? -ENOTSUP : rm->scan(rm->arg, sid, from, to, fn, arg);
	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_scan_locked(st, sid, from, to, with_data, fn, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

/*
 * The tag of a remembered size: the bytes store_get() makes depend on this
 * code and on zlib's, so a size from another build of either is not used.
 */
static uint64_t tag_of_sizes;
static pthread_once_t tag_once = PTHREAD_ONCE_INIT;

static void
tag_make(void)
{
	char what[96];
	uint64_t h;

	snprintf(what, sizeof(what), "pprof-v1 zlib %s", zlibVersion());
	h = hash_bytes(what, strlen(what));
	tag_of_sizes = (h >> 56 | 1) << 56;	/* never 0: 0 would be no tag */
}

static uint64_t
size_tag(void)
{
	pthread_once(&tag_once, tag_make);
	return tag_of_sizes;
}

/* Read the 'I' record of id: *ref, and *size when remembered (else UINT64_MAX). */
static int
index_get(struct store *st, uint64_t id, struct store_ref *ref, uint64_t *size)
{
	unsigned char ikey[9];
	char *dberr = NULL, *v;
	const struct series *s;
	size_t vl;

	ikey[0] = 'I';
	be64_put(ikey + 1, id);
	v = rocksdb_get(st->db, st->ropts, (char *)ikey, sizeof(ikey), &vl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (v == NULL || (vl != 16 && vl != 24)) {
		free(v);
		return -ENOENT;
	}
	memset(ref, 0, sizeof(*ref));
	ref->id = id;
	ref->series = be64_get((unsigned char *)v);
	ref->time = time_dec(be64_get((unsigned char *)v + 8));
	*size = UINT64_MAX;
	if (vl == 24) {
		uint64_t z = be64_get((unsigned char *)v + 16);

		if ((z & 0xff00000000000000ULL) == size_tag())
			*size = z & 0x00ffffffffffffffULL;
	}
	free(v);
	if ((s = series_local(st, ref->series)) != NULL)
		snprintf(ref->type, sizeof(ref->type), "%s", s->type);
	return 0;
}

/* Remember the size of the file made for ref (derived data: not synced). */
static void
index_set_size(struct store *st, const struct store_ref *ref, uint64_t size)
{
	unsigned char ikey[9], ival[24];
	char *dberr = NULL;

	if (size >= (1ULL << 56))
		return;
	ikey[0] = 'I';
	be64_put(ikey + 1, ref->id);
	be64_put(ival, ref->series);
	be64_put(ival + 8, time_enc(ref->time));
	be64_put(ival + 16, size_tag() | size);
	rocksdb_put(st->db, st->wasync, (char *)ikey, sizeof(ikey), (char *)ival, sizeof(ival),
	    &dberr);
	free(dberr);	/* a size not remembered is made again */
}

/* The 'P' value of ref (malloc'd, *vl bytes), or NULL with *rc -EIO or -ENOENT. */
static char *
value_get(struct store *st, const struct store_ref *ref, size_t *vl, int *rc)
{
	unsigned char pkey[25];
	char *dberr = NULL, *v;

	pkey[0] = 'P';
	be64_put(pkey + 1, ref->series);
	be64_put(pkey + 9, time_enc(ref->time));
	be64_put(pkey + 17, ref->id);
	v = rocksdb_get(st->db, st->ropts, (char *)pkey, sizeof(pkey), vl, &dberr);
	if (dberr) {
		free(dberr);
		free(v);
		*rc = -EIO;
		return NULL;
	}
	if (v != NULL && *vl < 1) {
		free(v);
		v = NULL;
	}
	*rc = v ? 0 : -ENOENT;
	return v;
}

static int
store_get_locked(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out,
    bool gzip)
{
	char *v;
	uint64_t size;
	size_t vl, len0 = out ? out->len : 0;
	int rc = 0;

	if ((rc = index_get(st, id, ref, &size)) < 0)
		return rc;
	if ((v = value_get(st, ref, &vl, &rc)) == NULL)
		return rc;
	if (out && v[0] == VALUE_V1)	/* one the conversion could not decode */
		rc = buf_add(out, v + 1, vl - 1);
	else if (out)
		rc = unpack_pprof(st, ref->series, v, vl, gzip, out);
	free(v);
	if (rc == 0 && gzip && out && out->err == 0 && size != out->len - len0)
		index_set_size(st, ref, out->len - len0);
	return rc;
}

int
store_get_size(struct store *st, uint64_t id, struct store_ref *ref, uint64_t *size)
{
	int rc;

	if (atomic_load(&st->remote)) {
		memset(ref, 0, sizeof(*ref));
		return -ENODATA;	/* made by store_get(), from the cluster */
	}
	pthread_rwlock_rdlock(&st->db_lock);
	rc = index_get(st, id, ref, size);
	if (rc == 0 && *size != UINT64_MAX) {
		/* Its data, not only its index record (retention deletes both). */
		size_t vl;

		free(value_get(st, ref, &vl, &rc));
	}
	pthread_rwlock_unlock(&st->db_lock);
	if (rc == 0 && *size == UINT64_MAX)
		rc = -ENODATA;
	return rc;
}

int
store_get(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	int rc;

	if (rm)
		return rm->get(rm->arg, id, ref, out);
	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_get_locked(st, id, ref, out, true);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

/* --- reading ranges through windows ------------------------------------- */

struct rctx {
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

static int past_windows(struct rctx *c, int64_t from, int64_t to, store_meta_fn fn,
    void *arg);

/* Whether a marker lies in [w, w + len). */
static bool
is_dirty(const struct rctx *c, int64_t w, int64_t len)
{
	size_t lo = 0, hi = c->ndirty, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->dirty[mid] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ndirty && c->dirty[lo] - w < len;
}

/* Add the raw profiles of [from, to). */
static int
read_raw(struct rctx *c, int64_t from, int64_t to)
{
	unsigned char lo[17], hi[17];
	rocksdb_iterator_t *it;
	int rc = 0;

	if (from >= to)
		return 0;
	if (from < c->acut) {
		if ((rc = past_windows(c, from, to < c->acut ? to : c->acut, NULL, NULL)) != 0)
			return rc;
		if ((from = c->acut) >= to)
			return 0;
	}
	lo[0] = hi[0] = 'P';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid);
	be64_put(lo + 9, time_enc(from));
	be64_put(hi + 9, time_enc(to));
	it = rocksdb_create_iterator(c->st->db, c->ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;

		if (kl != 25 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		v = rocksdb_iter_value(it, &vl);
		buf_reset(&c->err);
		if ((rc = agg_add(c->a, v, vl, &c->err)) == -EINVAL && c->bad) {
			struct store_ref r = { .id = be64_get(k + 17), .series = c->sid,
			    .time = time_dec(be64_get(k + 9)) };
			char why[200];

			snprintf(why, sizeof(why), "stored profile cannot be decoded: %s",
			    c->err.data ? c->err.data : "");
			rc = c->bad(c->arg, &r, why);
		}
		if (rc != 0)
			break;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/*
 * Add [from, to) using windows of `level` and finer where they are clean,
 * raw profiles elsewhere: cost grows with log(to - from).
 */
static int
read_cover(struct rctx *c, int64_t from, int64_t to, int level)
{
	unsigned char lo[18], hi[18];
	rocksdb_iterator_t *it;
	int64_t len, s, e, w;
	size_t i;
	int rc = 0;

	if (from >= to)
		return 0;
	if (level < 0)
		return read_raw(c, from, to);
	len = win_len[level];
	s = floordiv(from, len) * len;
	if (s < from)
		s += len;
	e = floordiv(to, len) * len;
	if (s >= e)
		return read_cover(c, from, to, level - 1);
	if ((rc = read_cover(c, from, s, level - 1)) != 0)
		return rc;
	/* The windows stored in [s, e): the clean ones count as they are. */
	lo[0] = hi[0] = 'W';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid);
	lo[9] = hi[9] = (unsigned char)level;
	be64_put(lo + 10, time_enc(s));
	be64_put(hi + 10, time_enc(e));
	it = rocksdb_create_iterator(c->st->db, c->ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;

		if (kl != 18 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		w = time_dec(be64_get(k + 10));
		if (is_dirty(c, w, len))
			continue;
		v = rocksdb_iter_value(it, &vl);
		buf_reset(&c->err);
		if ((rc = agg_add(c->a, v, vl, &c->err)) < 0)
			log_warnx("store: window of series %llu at level %d is corrupt (%s)",
			    (unsigned long long)c->sid, level, c->err.data ? c->err.data : "");
	}
	rocksdb_iter_destroy(it);
	if (rc != 0)
		return rc;
	/* Marked windows: one level finer (each marked span once). */
	for (i = 0, w = INT64_MIN; i < c->ndirty && rc == 0; i++) {
		int64_t d = floordiv(c->dirty[i], len) * len;

		if (d < s || d >= e || d == w)
			continue;
		w = d;
		rc = read_cover(c, d, d + len, level - 1);
	}
	if (rc == 0)
		rc = read_cover(c, e, to, level - 1);
	return rc;
}

/* The first and last time of series sid's profiles (in the snapshot); -ENOENT if none. */
static int
series_extent(struct rctx *c, int64_t *first, int64_t *last)
{
	unsigned char lo[9], hi[9];
	rocksdb_iterator_t *it = rocksdb_create_iterator(c->st->db, c->ro);
	size_t kl;
	const unsigned char *k;
	int rc = -ENOENT;

	lo[0] = hi[0] = 'T';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid + 1);
	rocksdb_iter_seek(it, (char *)lo, sizeof(lo));
	if (rocksdb_iter_valid(it) && (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) &&
	    kl == 25 && memcmp(k, lo, 9) == 0) {
		*first = time_dec(be64_get(k + 9));
		rocksdb_iter_seek_for_prev(it, (char *)hi, sizeof(hi));
		if (rocksdb_iter_valid(it) &&
		    (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) && kl == 25 &&
		    memcmp(k, lo, 9) == 0) {
			*last = time_dec(be64_get(k + 9));
			rc = 0;
		}
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/* The start of series sid's first (or last) window of `level`; -ENOENT if none. */
static int
window_edge(struct rctx *c, int level, bool last, int64_t *w)
{
	unsigned char k0[10], k1[10];
	rocksdb_iterator_t *it = rocksdb_create_iterator(c->st->db, c->ro);
	const unsigned char *k;
	size_t kl;
	int rc = -ENOENT;

	k0[0] = k1[0] = 'W';
	be64_put(k0 + 1, c->sid);
	be64_put(k1 + 1, c->sid);
	k0[9] = (unsigned char)level;
	k1[9] = (unsigned char)(level + 1);
	if (last)
		rocksdb_iter_seek_for_prev(it, (char *)k1, sizeof(k1));
	else
		rocksdb_iter_seek(it, (char *)k0, sizeof(k0));
	if (rocksdb_iter_valid(it) && (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) &&
	    kl == 18 && memcmp(k, k0, sizeof(k0)) == 0) {
		*w = time_dec(be64_get(k + 10));
		rc = 0;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/*
 * The span of series sid's data: its raw profiles, and before them the
 * 10-minute windows that outlived them (--retention-aggregates); sets
 * c->acut. -ENOENT if it holds neither.
 */
static int
series_bounds(struct rctx *c, int64_t *first, int64_t *last)
{
	int64_t w0, w1;
	bool raw = series_extent(c, first, last) == 0;

	c->acut = INT64_MIN;
	if (window_edge(c, 0, false, &w0) < 0)
		return raw ? 0 : -ENOENT;
	if (raw) {
		/* Windows lie in [WIN_MIN, WIN_MAX): the cut is too. */
		c->acut = *first < WIN_MIN ? INT64_MIN : *first >= WIN_MAX ? WIN_MAX :
		    floordiv(*first, NS_10M) * NS_10M;
		if (w0 < c->acut)
			*first = w0;
		return 0;
	}
	if (window_edge(c, 0, true, &w1) < 0)
		return -ENOENT;
	c->acut = INT64_MAX;
	*first = w0;
	*last = w1 + NS_10M - 1;
	return 0;
}

/*
 * The 10-minute windows past the raw retention that start in [from, to):
 * added to c->a, or with fn, listed (a ref per window and group, standing
 * for the profiles it summed).
 */
static int
past_windows(struct rctx *c, int64_t from, int64_t to, store_meta_fn fn, void *arg)
{
	const struct series *s = series_local(c->st, c->sid);
	unsigned char lo[18], hi[18];
	rocksdb_iterator_t *it;
	struct buf sig = { 0 };
	int rc = 0;

	if (from < WIN_MIN)
		from = WIN_MIN;
	if (to > WIN_MAX)
		to = WIN_MAX;
	if (from >= to)
		return 0;
	lo[0] = hi[0] = 'W';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid);
	lo[9] = hi[9] = 0;
	be64_put(lo + 10, time_enc(from));
	be64_put(hi + 10, time_enc(to));
	it = rocksdb_create_iterator(c->st->db, c->ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl, g;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;
		struct sstate *ss;
		struct agg *one;

		if (kl != 18 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		v = rocksdb_iter_value(it, &vl);
		buf_reset(&c->err);
		if (fn == NULL) {
			if ((rc = agg_add(c->a, v, vl, &c->err)) == -EINVAL) {
				log_warnx("store: window of series %llu is corrupt (%s)",
				    (unsigned long long)c->sid, c->err.data ? c->err.data : "");
				rc = 0;
			}
			continue;
		}
		if ((one = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = agg_add(one, v, vl, &c->err)) < 0 ||
		    (ss = sstate_lock(c->st, c->sid, &rc)) == NULL) {
			agg_free(one);
			if (rc == -EINVAL)
				rc = 0;		/* corrupt: left out, as the merge does */
			continue;
		}
		for (g = 0; g < agg_ngroups(one) && rc == 0; g++) {
			/* At the window's start, which the range holds. */
			struct store_ref r = { .series = c->sid, .summary = agg_count(one, g),
			    .time = time_dec(be64_get(k + 10)) };
			struct store_meta m = { 0 };

			if (s)
				snprintf(r.type, sizeof(r.type), "%s", s->type);
			buf_reset(&sig);
			if ((rc = agg_signature(one, ss->sym, g, &sig)) < 0 ||
			    (rc = agg_totals(one, g, m.totals, STORE_MAX_TYPES, &m.ntypes)) < 0)
				break;
			m.sighash = store_sighash(sig.data, sig.len);
			rc = fn(arg, &r, &m);
		}
		pthread_mutex_unlock(&ss->sym_lock);
		agg_free(one);
	}
	rocksdb_iter_destroy(it);
	buf_free(&sig);
	return rc;
}

/* Decode a T record. */
static int
meta_decode(const unsigned char *v, size_t vl, struct store_meta *m)
{
	const unsigned char *p = v, *end = v + vl;
	size_t i;

	memset(m, 0, sizeof(*m));
	if (vl < 9)
		return -EINVAL;
	end -= 8;
	for (i = 0; p < end; i++) {
		uint64_t x = 0;
		int sh = 0;

		while (p < end && sh < 64) {
			x |= (uint64_t)(*p & 0x7f) << sh;
			sh += 7;
			if (!(*p++ & 0x80))
				break;
		}
		if (i == 0) {
			if (x > STORE_MAX_TYPES)
				return -EINVAL;
			m->ntypes = (size_t)x;
		} else if (i <= m->ntypes) {
			m->totals[i - 1] = (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
		}
	}
	m->sighash = be64_get(end);
	return i == m->ntypes + 1 ? 0 : -EINVAL;
}

static int
store_read_series_locked(struct store *st, uint64_t sid, int64_t from, int64_t to, struct agg *a,
    store_meta_fn fn, store_bad_fn bad, void *arg)
{
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(st->db);
	struct rctx c = { .st = st, .sid = sid, .a = a, .bad = bad, .arg = arg };
	unsigned char lo[17], hi[17];
	rocksdb_iterator_t *it;
	const struct series *s = store_series_get(st, sid);
	struct store_ref r;
	struct store_meta m;
	int64_t first, last, wfrom, wto, *nd;
	size_t cap = 0;
	int rc = 0;

	c.ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(c.ro, snap);
	if (from >= to || series_bounds(&c, &first, &last) < 0)
		goto out;
	/* Nothing lies outside the data: "all" costs what the data spans. */
	if (from < first)
		from = first;
	if (last < INT64_MAX && to > last + 1)
		to = last + 1;
	if (from >= to)
		goto out;

	/* The listing, from T records. */
	memset(&r, 0, sizeof(r));
	r.series = sid;
	if (s)
		snprintf(r.type, sizeof(r.type), "%s", s->type);
	lo[0] = hi[0] = 'T';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid);
	be64_put(lo + 9, time_enc(from));
	be64_put(hi + 9, time_enc(to));
	it = rocksdb_create_iterator(st->db, c.ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); fn && rocksdb_iter_valid(it) &&
	    rc == 0; rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const unsigned char *v;

		if (kl != 25 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		v = (const unsigned char *)rocksdb_iter_value(it, &vl);
		r.time = time_dec(be64_get(k + 9));
		r.id = be64_get(k + 17);
		if (meta_decode(v, vl, &m) < 0)
			memset(&m, 0, sizeof(m));
		rc = fn(arg, &r, &m);
	}
	rocksdb_iter_destroy(it);
	if (rc == 0 && fn && from < c.acut)
		rc = past_windows(&c, from, to < c.acut ? to : c.acut, fn, arg);
	if (rc != 0)
		goto out;

	/* Outside the windows' domain: raw profiles only. */
	wfrom = from < WIN_MIN ? WIN_MIN : from > WIN_MAX ? WIN_MAX : from;
	wto = to > WIN_MAX ? WIN_MAX : to < WIN_MIN ? WIN_MIN : to;
	if ((rc = read_raw(&c, from, wfrom < to ? wfrom : to)) != 0 ||
	    (rc = read_raw(&c, wto > from ? wto : from, to)) != 0 || wfrom >= wto)
		goto out;
	from = wfrom;
	to = wto;

	/* The markers of the range: windows not to trust. */
	lo[0] = hi[0] = 'D';
	be64_put(lo + 9, time_enc(floordiv(from, NS_1D) * NS_1D));
	be64_put(hi + 9, time_enc(to));
	it = rocksdb_create_iterator(st->db, c.ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		int64_t w;

		if (kl != 25 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		w = time_dec(be64_get(k + 9));
		if (c.ndirty && c.dirty[c.ndirty - 1] == w)
			continue;
		if (c.ndirty == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nd = realloc(c.dirty, cap * sizeof(*nd))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			c.dirty = nd;
		}
		c.dirty[c.ndirty++] = w;
	}
	rocksdb_iter_destroy(it);
	if (rc == 0)
		rc = read_cover(&c, from, to, 2);
out:
	rocksdb_readoptions_destroy(c.ro);
	rocksdb_release_snapshot(st->db, snap);
	free(c.dirty);
	buf_free(&c.err);
	return rc;
}

int
store_read_series(struct store *st, uint64_t sid, int64_t from, int64_t to, struct agg *a,
    store_meta_fn fn, store_bad_fn bad, void *arg)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_read_series_locked(st, sid, from, to, a, fn, bad, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

/* --- the compactor ------------------------------------------------------ */

/* The pack of window (sid, level, w) from the snapshot, appended to a. */
static int
window_get(struct store *st, rocksdb_readoptions_t *ro, uint64_t sid, int level, int64_t w,
    struct agg *a)
{
	unsigned char k[18];
	char *dberr = NULL, *v;
	size_t vl;
	int rc = 0;

	k[0] = 'W';
	be64_put(k + 1, sid);
	k[9] = (unsigned char)level;
	be64_put(k + 10, time_enc(w));
	v = rocksdb_get(st->db, ro, (char *)k, sizeof(k), &vl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (v)
		rc = agg_add(a, v, vl, NULL);
	free(v);
	return rc;
}

/* Put (or delete, when empty) window (sid, level, w) = a into wb. */
static int
window_put(rocksdb_writebatch_t *wb, uint64_t sid, int level, int64_t w, const struct agg *a)
{
	unsigned char k[18];
	struct buf v = { 0 };
	int rc = 0;

	k[0] = 'W';
	be64_put(k + 1, sid);
	k[9] = (unsigned char)level;
	be64_put(k + 10, time_enc(w));
	if (agg_ngroups(a) == 0) {
		rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
		return 0;
	}
	if ((rc = agg_encode(a, &v)) == 0)
		rocksdb_writebatch_put(wb, (char *)k, sizeof(k), v.data, v.len);
	buf_free(&v);
	return rc;
}

/* A raw profile that cannot be read stays out of the windows, as of reads. */
static int
skip_bad(void *arg, const struct store_ref *ref, const char *why)
{
	(void)arg;
	log_warnx("store: profile %016llx left out of the windows: %s",
	    (unsigned long long)ref->id, why);
	return 0;
}

/* A dirty marker as the compactor collects it. */
struct mark {
	unsigned char	 key[25];
	bool		 has_time;	/* no time: rebuild the window from raw profiles */
	int64_t		 time;
};

/* The value of key k (NULL if none) added to a; -EINVAL if it does not decode. */
static int
add_value(struct store *st, rocksdb_readoptions_t *ro, const unsigned char *k, size_t kl,
    struct agg *a)
{
	char *dberr = NULL, *v;
	size_t vl;
	int rc = 0;

	v = rocksdb_get(st->db, ro, (const char *)k, kl, &vl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (v)
		rc = agg_add(a, v, vl, NULL);
	free(v);
	return rc;
}

/*
 * Bring the windows of one day of one series up to date with its markers
 * ms[0..n) (seen in the snapshot ro), and delete those markers in the same
 * batch. Invariant: a window holds exactly the profiles of its span that
 * have no marker. So a marker with a time adds its profile to the 10-minute
 * window, its hour and its day (cost: the windows, not the day's profiles);
 * a marker without one (or a window that does not decode) has the window
 * rebuilt from the raw profiles, and its hour and day from their parts.
 */
static int
compact_day(struct store *st, rocksdb_readoptions_t *ro, uint64_t sid, int64_t day,
    const struct mark *ms, size_t n)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	struct buf enc10[6 * 24], enc1h[24], delta10[6 * 24];
	bool touched[6 * 24] = { false }, rebuild[6 * 24] = { false }, rebuilt1h[24] = { false };
	bool touched1h[24] = { false }, rebuilt_day = false;
	struct agg *a = NULL, *d;
	struct rctx c = { .st = st, .ro = ro, .sid = sid, .bad = skip_bad,
	    .acut = INT64_MIN };
	unsigned char pk[25];
	char *dberr = NULL;
	size_t i, j, slot;
	int rc = 0;

	memset(enc10, 0, sizeof(enc10));
	memset(enc1h, 0, sizeof(enc1h));
	memset(delta10, 0, sizeof(delta10));
	/* The profiles each marked 10-minute window gains. */
	for (i = 0; i < n && rc == 0; i = j) {
		int64_t w = time_dec(be64_get(ms[i].key + 9));

		slot = (size_t)((w - day) / NS_10M);
		for (j = i; j < n && memcmp(ms[j].key + 9, ms[i].key + 9, 8) == 0; j++)
			;
		if (slot >= 6 * 24)
			continue;
		touched[slot] = touched1h[slot / 6] = true;
		if ((d = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		for (; i < j && rc == 0; i++) {
			if (!ms[i].has_time) {
				rebuild[slot] = true;
				continue;
			}
			pk[0] = 'P';
			memcpy(pk + 1, ms[i].key + 1, 8);
			be64_put(pk + 9, time_enc(ms[i].time));
			memcpy(pk + 17, ms[i].key + 17, 8);
			/* Gone (retention) or unreadable: reads leave it out too. */
			if ((rc = add_value(st, ro, pk, sizeof(pk), d)) == -EINVAL)
				rc = 0;
		}
		if (rc == 0)
			rc = agg_encode(d, &delta10[slot]);
		agg_free(d);
	}
	for (slot = 0; slot < 6 * 24 && rc == 0; slot++) {
		int64_t w = day + (int64_t)slot * NS_10M;

		if (!touched[slot])
			continue;
		if ((c.a = a = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (!rebuild[slot] && window_get(st, ro, sid, 0, w, a) < 0) {
			agg_free(a);	/* a window that does not decode: from raw */
			if ((c.a = a = agg_create()) == NULL) {
				rc = -ENOMEM;
				break;
			}
			rebuild[slot] = true;
		}
		rc = rebuild[slot] ? read_raw(&c, w, w + NS_10M) :
		    agg_add(a, delta10[slot].data, delta10[slot].len, NULL);
		if (rc == 0 && (rc = window_put(wb, sid, 0, w, a)) == 0)
			rc = agg_encode(a, &enc10[slot]);
		if (rebuild[slot])
			rebuilt1h[slot / 6] = true;
		agg_free(a);
		a = NULL;
	}
	/* Hours: their deltas, or their six parts when one was rebuilt. */
	for (i = 0; i < 24 && rc == 0; i++) {
		int64_t h = day + (int64_t)i * NS_1H;

		if (!touched1h[i])
			continue;
		if ((a = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (!rebuilt1h[i] && window_get(st, ro, sid, 1, h, a) < 0) {
			agg_free(a);
			if ((a = agg_create()) == NULL) {
				rc = -ENOMEM;
				break;
			}
			rebuilt1h[i] = true;
		}
		for (j = 0; j < 6 && rc == 0; j++) {
			slot = i * 6 + j;
			if (rebuilt1h[i])
				rc = touched[slot] ? agg_add(a, enc10[slot].data, enc10[slot].len, NULL) :
				    window_get(st, ro, sid, 0, h + (int64_t)j * NS_10M, a);
			else if (touched[slot])
				rc = agg_add(a, delta10[slot].data, delta10[slot].len, NULL);
		}
		if (rc == 0 && (rc = window_put(wb, sid, 1, h, a)) == 0)
			rc = agg_encode(a, &enc1h[i]);
		if (rebuilt1h[i])
			rebuilt_day = true;
		agg_free(a);
		a = NULL;
	}
	/* The day likewise. */
	if (rc == 0 && (a = agg_create()) == NULL)
		rc = -ENOMEM;
	if (rc == 0 && !rebuilt_day && window_get(st, ro, sid, 2, day, a) < 0) {
		agg_free(a);
		if ((a = agg_create()) == NULL)
			rc = -ENOMEM;
		rebuilt_day = true;
	}
	for (i = 0; i < 24 && rc == 0; i++) {
		if (rebuilt_day)
			rc = touched1h[i] ? agg_add(a, enc1h[i].data, enc1h[i].len, NULL) :
			    window_get(st, ro, sid, 1, day + (int64_t)i * NS_1H, a);
		else
			for (j = 0; j < 6 && rc == 0; j++)
				if (touched[i * 6 + j])
					rc = agg_add(a, delta10[i * 6 + j].data,
					    delta10[i * 6 + j].len, NULL);
	}
	if (rc == 0)
		rc = window_put(wb, sid, 2, day, a);
	agg_free(a);
	for (i = 0; rc == 0 && i < n; i++)
		rocksdb_writebatch_delete(wb, (const char *)ms[i].key, 25);
	/* Derived data: not synced; a crash keeps the markers and redoes it. */
	if (rc == 0) {
		rocksdb_write(st->db, st->wasync, wb, &dberr);
		if (dberr)
			rc = store_write_error(st, dberr, NULL);
	}
	rocksdb_writebatch_destroy(wb);
	for (i = 0; i < 6 * 24; i++) {
		buf_free(&enc10[i]);
		buf_free(&delta10[i]);
	}
	for (i = 0; i < 24; i++)
		buf_free(&enc1h[i]);
	return rc;
}

static int
store_compact_locked(struct store *st, uint64_t *ndays)
{
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(st->db);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	struct buf marks = { 0 };
	uint64_t cur_sid = 0, days = 0;
	int64_t cur_day = 0;
	int rc = 0;

	rocksdb_readoptions_set_snapshot(ro, snap);
	it = rocksdb_create_iterator(st->db, ro);
	/* Markers sort by series then window: one day of one series at a time. */
	for (rocksdb_iter_seek(it, "D", 1);; rocksdb_iter_next(it)) {
		const unsigned char *k = NULL;
		size_t kl = 0, vl;
		uint64_t sid = 0;
		int64_t day = 0;
		bool valid = rocksdb_iter_valid(it);
		struct mark m;

		if (valid) {
			k = (const unsigned char *)rocksdb_iter_key(it, &kl);
			valid = kl == 25 && k[0] == 'D';
		}
		if (valid) {
			sid = be64_get(k + 1);
			day = floordiv(time_dec(be64_get(k + 9)), NS_1D) * NS_1D;
		}
		if (marks.len && (!valid || sid != cur_sid || day != cur_day)) {
			rc = compact_day(st, ro, cur_sid, cur_day, (const struct mark *)marks.data,
			    marks.len / sizeof(struct mark));
			if (rc < 0)
				break;
			days++;
			buf_reset(&marks);
			atomic_fetch_add(&st->n_compacted, 1);
		}
		if (!valid)
			break;
		memset(&m, 0, sizeof(m));
		memcpy(m.key, k, 25);
		{
			const unsigned char *v = (const unsigned char *)rocksdb_iter_value(it, &vl);

			if (vl == 8) {
				m.has_time = true;
				m.time = time_dec(be64_get(v));
			}
		}
		if ((rc = buf_add(&marks, &m, sizeof(m))) < 0)
			break;
		cur_sid = sid;
		cur_day = day;
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(st->db, snap);
	buf_free(&marks);
	if (ndays)
		*ndays = days;
	atomic_store(&st->n_pending, days);
	return rc;
}

int
store_compact(struct store *st, uint64_t *ndays)
{
	int rc;

	pthread_mutex_lock(&st->cp_run);
	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_compact_locked(st, ndays);
	pthread_rwlock_unlock(&st->db_lock);
	pthread_mutex_unlock(&st->cp_run);
	return rc;
}

/*
 * After a full disk: once the file system has room again, reopen the
 * database (RocksDB refuses writes after a failed one until then). Readers
 * wait during the reopen; -EAGAIN while there is still no room.
 */
static int
store_recover(struct store *st)
{
	struct statvfs sv;
	char *dberr = NULL;
	int tries;

	if (statvfs(st->dir, &sv) < 0 || (uint64_t)sv.f_bavail * sv.f_frsize < (16u << 20))
		return -EAGAIN;
	pthread_rwlock_wrlock(&st->db_lock);
	rocksdb_close(st->db);
	for (tries = 0; (st->db = rocksdb_open(st->opts, st->dir, &dberr)) == NULL; tries++) {
		if (tries == 60)
			log_fatalx("store: cannot reopen the database after a full disk: %s", dberr);
		free(dberr);
		dberr = NULL;
		sleep(1);
	}
	atomic_store(&st->full, false);
	pthread_rwlock_unlock(&st->db_lock);
	log_info("store: the file system has room again: storing resumes");
	return 0;
}

static void *
compact_main(void *arg)
{
	struct store *st = arg;
	struct timespec ts;
	uint64_t n = 0;

	pthread_mutex_lock(&st->rt_lock);
	while (!st->cp_stop) {
		__atomic_store_n(&st->cp_kick, false, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&st->rt_lock);
		if (atomic_load(&st->full))
			n = store_recover(st) < 0;	/* look again in a second */
		else if (store_compact(st, &n) < 0) {
			log_warnx("store: compaction failed; retrying in a second");
			n = 1;
		}
		pthread_mutex_lock(&st->rt_lock);
		/* Batch what arrives within two seconds; idle otherwise. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		while (!st->cp_stop && pthread_cond_timedwait(&st->cp_cond, &st->rt_lock, &ts) == 0)
			;
		/* A pass that found work goes again: the next says it caught up. */
		while (!st->cp_stop && !__atomic_load_n(&st->cp_kick, __ATOMIC_RELAXED) && n == 0)
			pthread_cond_wait(&st->cp_cond, &st->rt_lock);
	}
	pthread_mutex_unlock(&st->rt_lock);
	return NULL;
}

/*
 * Put before the n hours of arr (ascending, from the H records) the hours
 * that only windows past the raw retention still hold.
 */
static int
past_hours(struct store *st, uint64_t sid, int64_t **arr, size_t *n)
{
	struct rctx c = { .st = st, .ro = st->ropts, .sid = sid };
	unsigned char lo[18], hi[18];
	rocksdb_iterator_t *it;
	struct buf past = { 0 };
	int64_t first, last, h, *na;
	size_t np;
	int rc = 0;

	if (series_bounds(&c, &first, &last) < 0 || c.acut == INT64_MIN)
		return 0;
	lo[0] = hi[0] = 'W';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid);
	lo[9] = hi[9] = 1;
	be64_put(lo + 10, time_enc(WIN_MIN));
	be64_put(hi + 10, time_enc(c.acut < WIN_MAX ? c.acut : WIN_MAX));
	it = rocksdb_create_iterator(st->db, st->ropts);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);

		if (kl != 18 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		h = floordiv(time_dec(be64_get(k + 10)), NS_1H);
		if (*n == 0 || h < (*arr)[0])
			rc = buf_add(&past, &h, sizeof(h));
	}
	rocksdb_iter_destroy(it);
	np = past.len / sizeof(int64_t);
	if (rc == 0 && np) {
		if ((na = realloc(*arr, (*n + np) * sizeof(*na))) == NULL) {
			rc = -ENOMEM;
		} else {
			memmove(na + np, na, *n * sizeof(*na));
			memcpy(na, past.data, np * sizeof(*na));
			*arr = na;
			*n += np;
		}
	}
	buf_free(&past);
	return rc;
}

/* Whether a key 'T'|sid|t|id (level < 0) or 'W'|sid|level|t has lo <= t < hi. */
static bool
key_in(struct store *st, uint64_t sid, int level, int64_t lo, int64_t hi)
{
	unsigned char k0[18];
	size_t n = level < 0 ? 9 : 10, kl;
	rocksdb_iterator_t *it;
	const unsigned char *k;
	bool any = false;

	if (lo >= hi)
		return false;
	k0[0] = level < 0 ? 'T' : 'W';
	be64_put(k0 + 1, sid);
	k0[9] = (unsigned char)level;
	be64_put(k0 + n, time_enc(lo));
	it = rocksdb_create_iterator(st->db, st->ropts);
	rocksdb_iter_seek(it, (char *)k0, n + 8);
	if (rocksdb_iter_valid(it) && (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) &&
	    kl == (level < 0 ? 25 : 18) && memcmp(k, k0, n) == 0)
		any = time_dec(be64_get(k + n)) < hi;
	rocksdb_iter_destroy(it);
	return any;
}

/* Whether series sid holds data in [from, to): a raw profile or a window past retention. */
static bool
has_data_locked(struct store *st, uint64_t sid, int64_t from, int64_t to)
{
	struct rctx c = { .st = st, .ro = st->ropts, .sid = sid };
	int64_t first, last;

	/* A profile: one seek, the common answer. */
	if (key_in(st, sid, -1, from, to))
		return true;
	if (from >= to || series_bounds(&c, &first, &last) < 0)
		return false;
	if (from < WIN_MIN)
		from = WIN_MIN;
	return key_in(st, sid, 0, from, to < c.acut ? to : c.acut);
}

static int
stop_first(void *arg, const struct store_ref *ref, const void *data, size_t len)
{
	(void)arg;
	(void)ref;
	(void)data;
	(void)len;
	return 1;
}

bool
store_has_data(struct store *st, uint64_t sid, int64_t from, int64_t to)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	bool any;

	if (rm)
		return rm->scan(rm->arg, sid, from, to, stop_first, NULL) == 1;
	pthread_rwlock_rdlock(&st->db_lock);
	any = has_data_locked(st, sid, from, to);
	pthread_rwlock_unlock(&st->db_lock);
	return any;
}

static int
store_hours_locked(struct store *st, uint64_t sid, int64_t **out, size_t *n)
{
	unsigned char lo[9], hi[9];
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	int64_t *arr = NULL, *na;
	size_t cnt = 0, cap = 0;
	int rc = 0;

	lo[0] = hi[0] = 'H';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid + 1);
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);

		if (kl != 17)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 32;
			if ((na = realloc(arr, cap * sizeof(*arr))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			arr = na;
		}
		arr[cnt++] = time_dec(be64_get(k + 9));
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	if (rc == 0)
		rc = past_hours(st, sid, &arr, &cnt);
	if (rc < 0) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = cnt;
	return 0;
}

int
store_hours(struct store *st, uint64_t sid, int64_t **out, size_t *n)
{
	const struct store_remote *rm = atomic_load(&st->remote);
	int rc;

	if (rm)
		return rm->hours(rm->arg, sid, out, n);
	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_hours_locked(st, sid, out, n);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

static void
store_get_stats_locked(struct store *st, struct store_stats *s)
{
	uint64_t v = 0;

	s->profiles = atomic_load(&st->n_put);
	s->rejected = atomic_load(&st->n_rejected);
	s->bytes = atomic_load(&st->n_bytes);
	pthread_rwlock_rdlock(&st->st_lock);
	s->series = st->nseries;
	pthread_rwlock_unlock(&st->st_lock);
	s->windows_pending = atomic_load(&st->n_pending);
	s->disk_bytes = 0;
	if (rocksdb_property_int(st->db, "rocksdb.total-sst-files-size", &v) == 0)
		s->disk_bytes += v;
	if (rocksdb_property_int(st->db, "rocksdb.cur-size-all-mem-tables", &v) == 0)
		s->disk_bytes += v;
}

void
store_get_stats(struct store *st, struct store_stats *s)
{
	pthread_rwlock_rdlock(&st->db_lock);
	store_get_stats_locked(st, s);
	pthread_rwlock_unlock(&st->db_lock);
}

/* --- retention ---------------------------------------------------------- */

/* Delete [prefix|sid|lo, prefix|sid|hi) in wb; keys of (1 + 8 + 8) bytes. */
static void
delete_span(rocksdb_writebatch_t *wb, char prefix, uint64_t sid, int64_t lo, int64_t hi)
{
	unsigned char a[17], b[17];

	a[0] = b[0] = (unsigned char)prefix;
	be64_put(a + 1, sid);
	be64_put(b + 1, sid);
	be64_put(a + 9, time_enc(lo));
	be64_put(b + 9, time_enc(hi));
	rocksdb_writebatch_delete_range(wb, (char *)a, sizeof(a), (char *)b, sizeof(b));
}

/*
 * Delete the raw profiles of series sid older than `before` (and windows
 * wholly older than wbefore) by key ranges; only the expired T records are
 * read, for the ids of their I records. *n: profiles deleted.
 */
/* Whether series sid holds any profile or window. */
static bool
series_holds_data(struct store *st, uint64_t sid)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	static const char kinds[] = { 'P', 'W' };
	unsigned char k[9];
	bool any = false;
	size_t i;

	for (i = 0; i < sizeof(kinds) && !any; i++) {
		k[0] = (unsigned char)kinds[i];
		be64_put(k + 1, sid);
		rocksdb_iter_seek(it, (char *)k, sizeof(k));
		if (rocksdb_iter_valid(it)) {
			size_t kl;
			const char *key = rocksdb_iter_key(it, &kl);

			any = kl >= sizeof(k) && memcmp(key, k, sizeof(k)) == 0;
		}
	}
	rocksdb_iter_destroy(it);
	return any;
}

/*
 * Retention emptied series sid: it no longer counts against the series
 * limit, and its records go at the next open (not now: a put may be
 * writing to it).
 */
static void
note_empty(struct store *st, uint64_t sid)
{
	ssize_t pos;

	if (series_holds_data(st, sid))
		return;
	pthread_rwlock_wrlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0)
		st->state[pos]->empty = true;
	pthread_rwlock_unlock(&st->st_lock);
}

static int
expire_series(struct store *st, uint64_t sid, int64_t before, int64_t wbefore, uint64_t *n,
    bool *wgone)
{
	unsigned char lo[17], hi[17], ikey[9], w0[18], w1[18];
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_iterator_t *it;
	char *dberr = NULL;
	uint64_t here = 0;
	int l, rc = 0;

	/*
	 * The raw cut falls on a 10-minute boundary, so each window is either
	 * all raw or all past it (served from windows kept longer), never half.
	 */
	if (before > WIN_MIN && before < WIN_MAX)
		before = floordiv(before, NS_10M) * NS_10M;
	lo[0] = hi[0] = 'T';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid);
	be64_put(lo + 9, time_enc(INT64_MIN));
	be64_put(hi + 9, time_enc(before));
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (kl != 25)
			continue;
		ikey[0] = 'I';
		memcpy(ikey + 1, k + 17, 8);
		rocksdb_writebatch_delete(wb, (char *)ikey, sizeof(ikey));
		here++;
	}
	rocksdb_iter_destroy(it);
	if (here) {
		delete_span(wb, 'P', sid, INT64_MIN, before);
		delete_span(wb, 'T', sid, INT64_MIN, before);
		/* Markers of expired spans: their windows keep what they hold. */
		delete_span(wb, 'D', sid, INT64_MIN, before < WIN_MIN ? WIN_MIN : before > WIN_MAX ?
		    WIN_MAX : floordiv(before, NS_10M) * NS_10M);
		/* Hours wholly before the cut no longer hold data. */
		delete_span(wb, 'H', sid, INT64_MIN, floordiv(before, NS_1H));
	}
	if (wbefore > WIN_MAX)
		wbefore = WIN_MAX;
	/* Windows that go now (some may be all that is left of their span). */
	if (wbefore > WIN_MIN + NS_10M && key_in(st, sid, 0, WIN_MIN, wbefore - NS_10M + 1))
		*wgone = true;
	for (l = 0; l < 3 && wbefore > WIN_MIN; l++) {
		w0[0] = w1[0] = 'W';
		be64_put(w0 + 1, sid);
		be64_put(w1 + 1, sid);
		w0[9] = w1[9] = (unsigned char)l;
		be64_put(w0 + 10, time_enc(INT64_MIN));
		/* windows [w, w + len) with w + len <= wbefore */
		be64_put(w1 + 10, time_enc(wbefore - win_len[l] + 1));
		rocksdb_writebatch_delete_range(wb, (char *)w0, sizeof(w0), (char *)w1, sizeof(w1));
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	if (dberr) {
		log_warnx("store: retention: %s", dberr);
		free(dberr);
		rc = -EIO;
	} else if (here || wbefore > WIN_MIN) {
		note_empty(st, sid);
	}
	*n += here;
	return rc;
}

int
store_expire(struct store *st, int64_t before, uint64_t *n)
{
	return store_expire_tiers(st, before, before, n);
}

static int
store_expire_tiers_locked(struct store *st, int64_t before, int64_t wbefore, uint64_t *n)
{
	const struct series **all;
	uint64_t count = 0;
	bool wgone = false;
	size_t ns, i;
	int rc;

	if ((rc = store_series(st, &all, &ns)) < 0)
		return rc;
	for (i = 0; i < ns && rc == 0; i++)
		rc = expire_series(st, all[i]->id, before, wbefore, &count, &wgone);
	free(all);
	if (count || wgone)
		note_change(st, INT64_MIN);	/* ranges past and present lose data */
	if (n)
		*n = count;
	return rc;
}

int
store_expire_tiers(struct store *st, int64_t before, int64_t wbefore, uint64_t *n)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_expire_tiers_locked(st, before, wbefore, n);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

/*
 * Bytes of the database files in the data directory: tables, write-ahead
 * logs, manifests; RocksDB's own text logs (LOG*) are not data.
 */
static uint64_t
dir_bytes(const char *dir)
{
	char path[4096];
	struct dirent *e;
	struct stat sb;
	uint64_t n = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && strncmp(e->d_name, "LOG", 3) != 0 &&
		    stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			n += (uint64_t)sb.st_blocks * 512;
	}
	closedir(d);
	return n;
}

/* The times of the oldest and newest data (raw or windows) of any series; -ENOENT if none. */
static int
oldest_time(struct store *st, int64_t *t, int64_t *newest)
{
	const struct series **all;
	size_t n, i;
	int rc = -ENOENT;

	if (store_series(st, &all, &n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct rctx c = { .st = st, .ro = st->ropts, .sid = all[i]->id };
		int64_t first, last;

		if (series_bounds(&c, &first, &last) < 0)
			continue;
		if (rc < 0 || first < *t)
			*t = first;
		if (rc < 0 || last > *newest)
			*newest = last;
		rc = 0;
	}
	free(all);
	return rc;
}

/*
 * --max-disk: while the data dir is over the cap, delete the oldest hour of
 * data of every series (raw and windows) and compact, so the files shrink.
 */
static void
enforce_max_disk(struct store *st)
{
	uint64_t size = dir_bytes(st->dir), n, total = 0;
	int64_t t = 0, newest = 0, cut = INT64_MIN;
	int rounds = 0;

	pthread_rwlock_rdlock(&st->db_lock);
	while (size > st->rt_max_disk && rounds++ < 10000 && oldest_time(st, &t, &newest) == 0) {
		/* Hours, within the windows' domain; a profile at a time outside, alone. */
		cut = t >= WIN_MIN && t < WIN_MAX ? (floordiv(t, NS_1H) + 1) * NS_1H :
		    t < INT64_MAX ? t + 1 : t;
		/* The newest hour stays: a cap below it would delete all that arrives. */
		if (newest >= WIN_MIN && newest < WIN_MAX ? cut > floordiv(newest, NS_1H) * NS_1H :
		    cut > newest) {
			log_warnx("retention: --max-disk %llu bytes is below what the newest hour "
			    "of data takes (%llu bytes)", (unsigned long long)st->rt_max_disk,
			    (unsigned long long)size);
			break;
		}
		if (store_expire_tiers(st, cut, cut, &n) < 0)
			break;
		total += n;
		rocksdb_compact_range(st->db, NULL, 0, NULL, 0);
		size = dir_bytes(st->dir);
	}
	pthread_rwlock_unlock(&st->db_lock);
	if (total)
		log_info("retention: --max-disk: deleted %llu profiles (data before %lld s); "
		    "%llu bytes on disk", (unsigned long long)total, (long long)(cut / 1000000000),
		    (unsigned long long)size);
}

static void *
retention_main(void *arg)
{
	struct store *st = arg;
	struct timespec ts;
	uint64_t n;
	int64_t now, wkeep;

	pthread_mutex_lock(&st->rt_lock);
	while (!st->rt_stop) {
		pthread_mutex_unlock(&st->rt_lock);
		now = clock_now_ns();
		wkeep = st->rt_keep_windows > st->rt_keep ? st->rt_keep_windows : st->rt_keep;
		/* Windows outliving the raw profiles take in what is pending first. */
		if (st->rt_keep && wkeep > st->rt_keep)
			store_compact(st, NULL);
		if (st->rt_keep && store_expire_tiers(st, now - st->rt_keep, now - wkeep, &n) == 0 &&
		    n)
			log_info("retention: deleted %llu profiles older than %lld s",
			    (unsigned long long)n, (long long)(st->rt_keep / 1000000000));
		if (st->rt_max_disk)
			enforce_max_disk(st);
		pthread_mutex_lock(&st->rt_lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		/* The size cap is checked more often than ages change. */
		ts.tv_sec += st->rt_max_disk ? 5 : 60;
		while (!st->rt_stop &&
		    pthread_cond_timedwait(&st->rt_cond, &st->rt_lock, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&st->rt_lock);
	return NULL;
}

int
store_set_retention(struct store *st, int64_t keep_ns)
{
	return store_set_limits(st, keep_ns, 0, 0);
}

int
store_set_limits(struct store *st, int64_t keep_raw, int64_t keep_windows, uint64_t max_disk)
{
	if ((keep_raw <= 0 && max_disk == 0) || st->rt_running)
		return 0;
	st->rt_keep = keep_raw > 0 ? keep_raw : 0;
	st->rt_keep_windows = keep_windows > 0 ? keep_windows : 0;
	st->rt_max_disk = max_disk;
	if (pthread_create(&st->rt_thread, NULL, retention_main, st) != 0)
		return -errno;
	st->rt_running = true;
	return 0;
}

/* --- the outbox and the remote reader ----------------------------------- *
 *
 * A fleet (--clickhouse) ships every acknowledged profile elsewhere. The
 * outbox is the set of 'O' keys: each is written in the profile's own synced
 * batch, so a profile acknowledged is a profile queued, and the shipper
 * deletes the keys of what the other side acknowledged. What reads go to is
 * a store_remote the fleet's module installs (store.h).
 */

int
store_queue_enable(struct store *st, uint64_t *pending)
{
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	uint64_t n = 0;

	pthread_rwlock_rdlock(&st->db_lock);
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, "P", 1);
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, "O", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it))
		n++;
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	atomic_store(&st->q_len, n);
	atomic_store(&st->q_on, true);
	pthread_rwlock_unlock(&st->db_lock);
	if (pending)
		*pending = n;
	return 0;
}

uint64_t
store_queue_length(struct store *st)
{
	return atomic_load(&st->q_len);
}

static int
store_queue_each_locked(struct store *st, uint64_t after, size_t max, store_queue_fn fn,
    void *arg)
{
	unsigned char lo[9];
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	struct buf gz = { 0 };
	size_t n = 0;
	int rc = 0;

	lo[0] = 'O';
	be64_put(lo + 1, after == UINT64_MAX ? after : after + 1);
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, "P", 1);
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo));
	    rocksdb_iter_valid(it) && n < max && rc == 0; rocksdb_iter_next(it), n++) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const struct series *s;
		struct store_ref ref;
		int grc;

		if (kl != 9)
			continue;
		buf_reset(&gz);
		memset(&ref, 0, sizeof(ref));
		ref.id = be64_get(k + 1);
		grc = store_get_locked(st, ref.id, &ref, &gz, false);
		s = grc == 0 ? series_local(st, ref.series) : NULL;
		if (grc == -EIO) {
			rc = -EIO;
			break;
		}
		/* Gone (retention, the size cap): fn hears of it with no data. */
		rc = fn(arg, &ref, s, s ? gz.data : NULL, s ? gz.len : 0);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	buf_free(&gz);
	return rc;
}

int
store_queue_each(struct store *st, uint64_t after, size_t max, store_queue_fn fn, void *arg)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_queue_each_locked(st, after, max, fn, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

int
store_queue_remove(struct store *st, const uint64_t *ids, size_t n)
{
	rocksdb_writebatch_t *wb;
	unsigned char k[9];
	char *dberr = NULL;
	size_t i;
	int rc = 0;

	if (n == 0)
		return 0;
	pthread_rwlock_rdlock(&st->db_lock);
	wb = rocksdb_writebatch_create();
	k[0] = 'O';
	for (i = 0; i < n; i++) {
		be64_put(k + 1, ids[i]);
		rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	rocksdb_writebatch_destroy(wb);
	pthread_rwlock_unlock(&st->db_lock);
	if (dberr) {
		log_warnx("store: outbox: %s", dberr);
		free(dberr);
		rc = -EIO;
	} else {
		uint64_t cur = atomic_load(&st->q_len);

		while (!atomic_compare_exchange_weak(&st->q_len, &cur, cur > n ? cur - n : 0))
			;
	}
	return rc;
}

void
store_set_remote(struct store *st, const struct store_remote *rm)
{
	atomic_store(&st->remote, rm);
	atomic_fetch_add(&st->gen, 1);
}

const struct store_remote *
store_remote_get(struct store *st)
{
	return atomic_load(&st->remote);
}

/* --- what delete.c uses of the store (storeint.h) ------------------------ */

rocksdb_t *
store_db(struct store *st)
{
	return st->db;
}

void
store_write_begin(struct store *st)
{
	/* The compactor must not write windows read before the deletion. */
	pthread_mutex_lock(&st->cp_run);
	pthread_rwlock_rdlock(&st->db_lock);
}

void
store_write_end(struct store *st)
{
	pthread_rwlock_unlock(&st->db_lock);
	pthread_mutex_unlock(&st->cp_run);
}

int
store_write_batch(struct store *st, rocksdb_writebatch_t *wb, struct buf *err)
{
	char *dberr = NULL;

	if (atomic_load(&st->full)) {
		if (err)
			buf_adds(err, "the data directory's file system is full");
		return -ENOSPC;
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	return dberr ? store_write_error(st, dberr, err) : 0;
}

void
store_note_deleted(struct store *st, uint64_t sid, int64_t tmin, uint64_t unqueued)
{
	uint64_t cur = atomic_load(&st->q_len);

	/* Clamped as in store_queue_remove(): the shipper may count it too. */
	while (unqueued && !atomic_compare_exchange_weak(&st->q_len, &cur,
	    cur > unqueued ? cur - unqueued : 0))
		;
	note_change(st, tmin);
	note_empty(st, sid);
	compact_kick(st);
}

int
store_local_series(struct store *st, const struct series ***out, size_t *n)
{
	const struct series **arr;

	pthread_rwlock_rdlock(&st->st_lock);
	if ((arr = malloc((st->nseries + 1) * sizeof(*arr))) != NULL) {
		if (st->nseries)
			memcpy(arr, st->sorted, st->nseries * sizeof(*arr));
		*n = st->nseries;
	}
	pthread_rwlock_unlock(&st->st_lock);
	*out = arr;
	return arr ? 0 : -ENOMEM;
}
