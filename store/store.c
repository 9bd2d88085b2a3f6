/*
 * store: the RocksDB database and its series index. This file is the only one
 * that includes RocksDB. Profiles are validated (decoded) before anything is
 * written, and each profile is written in one synced batch, so an
 * acknowledged profile survives a crash and a refused one leaves no trace.
 *
 * Key layout (all integers big-endian so keys sort numerically):
 *
 *   'S' | sid:8                         -> service \0 type \0 labels
 *   'N' | service \0 type \0 labels     -> sid:8
 *   'P' | sid:8 | time:8 | id:8         -> profile value (below)
 *   'I' | id:8                          -> sid:8 | time:8
 *   'H' | sid:8 | hour:8                -> "" (the hour holds data)
 *
 *   time is nanoseconds since the epoch, stored as (uint64)time ^ 2^63 so that
 *   negative times sort first; hour is floor(time / 3600 s), same encoding.
 *   Several profiles with the same time differ by id, so all are kept.
 *
 * Profile value:
 *   offset  size  field
 *   0       1     format version, 1
 *   1       n-1   the profile as gzipped pprof (the client's own gzip stream
 *                 if it sent one, else gzipped here); what profiles/ serves
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rocksdb/c.h>

#include "base.h"
#include "store.h"

#define VALUE_V1	1

struct store {
	rocksdb_t		*db;
	rocksdb_options_t	*opts;
	rocksdb_writeoptions_t	*wsync;
	rocksdb_readoptions_t	*ropts;
	pthread_rwlock_t	 st_lock;	/* protects the fields below */
	struct series		**series;	/* by sid order of creation */
	size_t			 nseries, capseries;
	struct intern		*names;		/* N key -> index in series[] */
	uint64_t		 next_sid;
	_Atomic uint64_t	 next_id;
	_Atomic uint64_t	 gen;
	_Atomic uint64_t	 n_put, n_rejected, n_bytes;
	/* retention thread; rt_lock protects rt_stop */
	pthread_t		 rt_thread;
	bool			 rt_running;
	int64_t			 rt_keep;
	pthread_mutex_t		 rt_lock;
	pthread_cond_t		 rt_cond;
	bool			 rt_stop;
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
		char c = s[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -EINVAL;
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
	if (has_type(p, "inuse_space") || has_type(p, "inuse_objects"))
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

/* Add a series to memory. Caller holds st_lock for writing. */
static int
series_add(struct store *st, uint64_t sid, const char *service, const char *type,
    const char *labels)
{
	struct series *s, **ns;
	struct buf k = { 0 };
	int64_t idx;

	if (st->nseries == st->capseries) {
		size_t ncap = st->capseries ? st->capseries * 2 : 16;

		if ((ns = realloc(st->series, ncap * sizeof(*ns))) == NULL)
			return -ENOMEM;
		st->series = ns;
		st->capseries = ncap;
	}
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
		*sid = s->id;
		goto out;
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

		be64_put(sidv, *sid);
		rocksdb_writebatch_put(wb, (char *)skey, sizeof(skey), v.data, v.len);
		rocksdb_writebatch_put(wb, k.data, k.len, (char *)sidv, 8);
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

static int
series_cmp(const void *a, const void *b)
{
	const struct series *x = *(struct series *const *)a, *y = *(struct series *const *)b;
	int c;

	if ((c = strcmp(x->service, y->service)) != 0)
		return c;
	if ((c = strcmp(x->type, y->type)) != 0)
		return c;
	return strcmp(x->labels, y->labels);
}

int
store_series(struct store *st, const struct series ***out, size_t *n)
{
	const struct series **arr;

	pthread_rwlock_rdlock(&st->st_lock);
	arr = malloc((st->nseries + 1) * sizeof(*arr));
	if (arr == NULL) {
		pthread_rwlock_unlock(&st->st_lock);
		return -ENOMEM;
	}
	if (st->nseries)	/* st->series is NULL in an empty store */
		memcpy(arr, st->series, st->nseries * sizeof(*arr));
	*n = st->nseries;
	pthread_rwlock_unlock(&st->st_lock);
	qsort(arr, *n, sizeof(*arr), series_cmp);
	*out = arr;
	return 0;
}

const struct series *
store_series_get(struct store *st, uint64_t id)
{
	const struct series *s = NULL;
	size_t i;

	pthread_rwlock_rdlock(&st->st_lock);
	/* Series ids are handed out in order, so usually series[id] is it. */
	if (id < st->nseries && st->series[id]->id == id)
		s = st->series[id];
	for (i = 0; s == NULL && i < st->nseries; i++)
		if (st->series[i]->id == id)
			s = st->series[i];
	pthread_rwlock_unlock(&st->st_lock);
	return s;
}

/* --- open / close ------------------------------------------------------- */

static int
store_load(struct store *st, struct buf *err)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	unsigned char k[9];
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
		rc = series_add(st, be64_get((const unsigned char *)key + 1), copy, type, labels);
		free(copy);
		if (rc < 0)
			break;
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

int
store_open(const char *dir, struct store **out, struct buf *err)
{
	struct store *st;
	char *dberr = NULL;
	int rc;

	*out = NULL;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		if (err)
			buf_printf(err, "cannot create data directory %s: %s", dir, strerror(errno));
		return rc;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	pthread_rwlock_init(&st->st_lock, NULL);
	pthread_mutex_init(&st->rt_lock, NULL);
	pthread_cond_init(&st->rt_cond, NULL);
	st->names = intern_create(64);
	st->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(st->opts, 1);
	/* Values are gzipped already: compressing them again is wasted work. */
	rocksdb_options_set_compression(st->opts, rocksdb_no_compression);
	rocksdb_options_increase_parallelism(st->opts, 2);
	rocksdb_options_set_max_open_files(st->opts, 512);
	rocksdb_options_set_keep_log_file_num(st->opts, 3);
	st->wsync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wsync, 1);
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
	if ((rc = store_load(st, err)) < 0) {
		store_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

void
store_close(struct store *st)
{
	size_t i;

	if (st == NULL)
		return;
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
	if (st->ropts)
		rocksdb_readoptions_destroy(st->ropts);
	for (i = 0; i < st->nseries; i++) {
		free((char *)st->series[i]->service);
		free((char *)st->series[i]->type);
		free((char *)st->series[i]->labels);
		labels_clear(&st->series[i]->ls);
		free(st->series[i]);
	}
	free(st->series);
	intern_destroy(st->names);
	pthread_rwlock_destroy(&st->st_lock);
	pthread_mutex_destroy(&st->rt_lock);
	pthread_cond_destroy(&st->rt_cond);
	free(st);
}

/* --- writing ------------------------------------------------------------ */

static int
put_common(struct store *st, const struct store_input *in, const struct profile *p,
    const void *gz, size_t gzlen, struct store_ref *ref, struct buf *err)
{
	const char *type = in->type;
	struct buf labels = { 0 }, val = { 0 };
	unsigned char pkey[25], ikey[9], ival[16], hkey[17];
	rocksdb_writebatch_t *wb;
	struct store_ref r;
	char *dberr = NULL;
	int rc;

	memset(&r, 0, sizeof(r));
	if ((rc = store_check_service(in->service ? in->service : "", err)) < 0)
		goto out;
	if (type == NULL || strcmp(type, "auto") == 0)
		type = store_infer_type(p);
	else if ((rc = store_check_type(type, err)) < 0)
		goto out;
	if (p->nsample_types == 0) {
		if (err)
			buf_adds(err, "profile has no sample types");
		rc = -EINVAL;
		goto out;
	}
	if (in->labels && (rc = labels_format(in->labels, &labels)) < 0)
		goto out;
	if ((rc = buf_reserve(&labels, 0)) < 0)
		goto out;
	r.time = in->created_at ? in->created_at : p->time_nanos ? p->time_nanos : clock_now_ns();
	snprintf(r.type, sizeof(r.type), "%s", type);
	if ((rc = series_get_or_create(st, in->service, type, labels.data, &r.series, err)) < 0)
		goto out;
	r.id = atomic_fetch_add(&st->next_id, 1);

	if ((rc = buf_addc(&val, VALUE_V1)) < 0 || (rc = buf_add(&val, gz, gzlen)) < 0)
		goto out;
	pkey[0] = 'P';
	be64_put(pkey + 1, r.series);
	be64_put(pkey + 9, time_enc(r.time));
	be64_put(pkey + 17, r.id);
	ikey[0] = 'I';
	be64_put(ikey + 1, r.id);
	be64_put(ival, r.series);
	be64_put(ival + 8, time_enc(r.time));
	hkey[0] = 'H';
	be64_put(hkey + 1, r.series);
	be64_put(hkey + 9, time_enc(floordiv(r.time, INT64_C(3600000000000))));

	wb = rocksdb_writebatch_create();
	rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), val.data, val.len);
	rocksdb_writebatch_put(wb, (char *)ikey, sizeof(ikey), (char *)ival, sizeof(ival));
	rocksdb_writebatch_put(wb, (char *)hkey, sizeof(hkey), "", 0);
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	rocksdb_writebatch_destroy(wb);
	if (dberr) {
		if (err)
			buf_printf(err, "database write failed: %s", dberr);
		free(dberr);
		rc = -EIO;
		goto out;
	}
	atomic_fetch_add(&st->n_put, 1);
	atomic_fetch_add(&st->n_bytes, gzlen);
	atomic_fetch_add(&st->gen, 1);
	if (ref)
		*ref = r;
out:
	if (rc < 0)
		atomic_fetch_add(&st->n_rejected, 1);
	buf_free(&labels);
	buf_free(&val);
	return rc;
}

int
store_put(struct store *st, const struct store_input *in, const void *data, size_t len,
    struct store_ref *ref, struct buf *err)
{
	const unsigned char *d = data;
	struct profile *p = NULL;
	struct buf gz = { 0 };
	int rc;

	if ((rc = profile_decode(data, len, &p, err)) < 0) {
		atomic_fetch_add(&st->n_rejected, 1);
		return rc;
	}
	if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
		rc = put_common(st, in, p, data, len, ref, err);
	} else if ((rc = profile_gzip(data, len, &gz)) == 0) {
		rc = put_common(st, in, p, gz.data, gz.len, ref, err);
	}
	profile_free(p);
	buf_free(&gz);
	return rc;
}

int
store_put_profile(struct store *st, const struct store_input *in, const struct profile *p,
    struct store_ref *ref, struct buf *err)
{
	struct buf gz = { 0 };
	int rc;

	if ((rc = profile_encode(p, true, &gz)) == 0)
		rc = put_common(st, in, p, gz.data, gz.len, ref, err);
	buf_free(&gz);
	return rc;
}

uint64_t
store_generation(const struct store *st)
{
	return atomic_load(&((struct store *)st)->gen);
}

/* --- reading ------------------------------------------------------------ */

int
store_scan(struct store *st, uint64_t sid, int64_t from, int64_t to, bool with_data,
    store_scan_fn fn, void *arg)
{
	unsigned char lo[17], hi[17];
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	const struct series *s = store_series_get(st, sid);
	struct store_ref r;
	int rc = 0;

	if (from >= to)
		return 0;
	lo[0] = hi[0] = 'P';
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

		if (kl != 25 || k[0] != 'P')
			break;
		r.time = time_dec(be64_get(k + 9));
		r.id = be64_get(k + 17);
		if (with_data) {
			v = rocksdb_iter_value(it, &vl);
			if (vl < 1 || v[0] != VALUE_V1) {
				log_warnx("store: profile %016llx has an unknown value format, skipped",
				    (unsigned long long)r.id);
				continue;
			}
			v++;
			vl--;
		}
		if ((rc = fn(arg, &r, v, vl)) != 0)
			break;
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

int
store_get(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out)
{
	unsigned char ikey[9], pkey[25];
	char *dberr = NULL, *v;
	const struct series *s;
	size_t vl;
	int rc = 0;

	ikey[0] = 'I';
	be64_put(ikey + 1, id);
	v = rocksdb_get(st->db, st->ropts, (char *)ikey, sizeof(ikey), &vl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (v == NULL || vl != 16) {
		free(v);
		return -ENOENT;
	}
	memset(ref, 0, sizeof(*ref));
	ref->id = id;
	ref->series = be64_get((unsigned char *)v);
	ref->time = time_dec(be64_get((unsigned char *)v + 8));
	free(v);
	if ((s = store_series_get(st, ref->series)) != NULL)
		snprintf(ref->type, sizeof(ref->type), "%s", s->type);
	pkey[0] = 'P';
	be64_put(pkey + 1, ref->series);
	be64_put(pkey + 9, time_enc(ref->time));
	be64_put(pkey + 17, id);
	v = rocksdb_get(st->db, st->ropts, (char *)pkey, sizeof(pkey), &vl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (v == NULL || vl < 1 || v[0] != VALUE_V1)
		rc = -ENOENT;
	else if (out)
		rc = buf_add(out, v + 1, vl - 1);
	free(v);
	return rc;
}

int
store_hours(struct store *st, uint64_t sid, int64_t **out, size_t *n)
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
	if (rc < 0) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = cnt;
	return 0;
}

void
store_get_stats(struct store *st, struct store_stats *s)
{
	uint64_t v = 0;

	s->profiles = atomic_load(&st->n_put);
	s->rejected = atomic_load(&st->n_rejected);
	s->bytes = atomic_load(&st->n_bytes);
	pthread_rwlock_rdlock(&st->st_lock);
	s->series = st->nseries;
	pthread_rwlock_unlock(&st->st_lock);
	s->disk_bytes = 0;
	if (rocksdb_property_int(st->db, "rocksdb.total-sst-files-size", &v) == 0)
		s->disk_bytes += v;
	if (rocksdb_property_int(st->db, "rocksdb.cur-size-all-mem-tables", &v) == 0)
		s->disk_bytes += v;
}

/* --- retention ---------------------------------------------------------- */

int
store_expire(struct store *st, int64_t before, uint64_t *n)
{
	const struct series **all;
	uint64_t count = 0;
	size_t ns, i;
	int rc;

	if ((rc = store_series(st, &all, &ns)) < 0)
		return rc;
	for (i = 0; i < ns && rc == 0; i++) {
		unsigned char lo[17], hi[17], hlo[17], hhi[17], ikey[9];
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
		rocksdb_iterator_t *it;
		char *dberr = NULL;
		uint64_t here = 0;

		lo[0] = hi[0] = 'P';
		be64_put(lo + 1, all[i]->id);
		be64_put(hi + 1, all[i]->id);
		be64_put(lo + 9, time_enc(INT64_MIN));
		be64_put(hi + 9, time_enc(before));
		rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
		it = rocksdb_create_iterator(st->db, ro);
		/* Keys only: each profile's id names its 'I' record. */
		for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
		    rocksdb_iter_next(it)) {
			size_t kl;
			const char *k = rocksdb_iter_key(it, &kl);

			if (kl != 25)
				continue;
			ikey[0] = 'I';
			memcpy(ikey + 1, k + 17, 8);
			rocksdb_writebatch_delete(wb, k, kl);
			rocksdb_writebatch_delete(wb, (char *)ikey, sizeof(ikey));
			here++;
		}
		rocksdb_iter_destroy(it);
		/* Hours wholly before the cut no longer hold data. */
		hlo[0] = hhi[0] = 'H';
		be64_put(hlo + 1, all[i]->id);
		be64_put(hhi + 1, all[i]->id);
		be64_put(hlo + 9, time_enc(INT64_MIN));
		be64_put(hhi + 9, time_enc(floordiv(before, INT64_C(3600000000000))));
		rocksdb_writebatch_delete_range(wb, (char *)hlo, sizeof(hlo), (char *)hhi,
		    sizeof(hhi));
		if (here)
			rocksdb_write(st->db, st->wsync, wb, &dberr);
		rocksdb_writebatch_destroy(wb);
		rocksdb_readoptions_destroy(ro);
		if (dberr) {
			log_warnx("store: retention: %s", dberr);
			free(dberr);
			rc = -EIO;
		}
		count += here;
	}
	free(all);
	if (count)
		atomic_fetch_add(&st->gen, 1);
	if (n)
		*n = count;
	return rc;
}

static void *
retention_main(void *arg)
{
	struct store *st = arg;
	struct timespec ts;
	uint64_t n;

	pthread_mutex_lock(&st->rt_lock);
	while (!st->rt_stop) {
		pthread_mutex_unlock(&st->rt_lock);
		if (store_expire(st, clock_now_ns() - st->rt_keep, &n) == 0 && n)
			log_info("retention: deleted %llu profiles older than %lld s",
			    (unsigned long long)n, (long long)(st->rt_keep / 1000000000));
		pthread_mutex_lock(&st->rt_lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 60;
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
	if (keep_ns <= 0 || st->rt_running)
		return 0;
	st->rt_keep = keep_ns;
	if (pthread_create(&st->rt_thread, NULL, retention_main, st) != 0)
		return -errno;
	st->rt_running = true;
	return 0;
}
