/*
 * read: what reads the stored data: listings (T records), a stored profile
 * as pprof (P and I records, with the size of the file remembered), the
 * hours a series holds, and one series' range as a sum of packs with its
 * listing (through window.c). The functions here run under db_lock, taken
 * by the entry points of store.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store_int.h"

/*
 * The span record of profile ref, its runs into *sr (none: sr->nrun 0);
 * *zv holds the record (rocksdb_free()), which sr points into. A record
 * that cannot be read leaves the profile without its span labels.
 */
static int
span_runs_get(struct store *st, const struct store_ref *ref, char **zv, struct span_runs *sr)
{
	unsigned char key[25];
	char *dberr = NULL;
	size_t zl = 0;
	int rc;

	memset(sr, 0, sizeof(*sr));
	key[0] = 'Z';
	be64_put(key + 1, ref->series);
	be64_put(key + 9, time_enc(ref->time));
	be64_put(key + 17, ref->id);
	*zv = rocksdb_get(st->db, st->ropts, (char *)key, sizeof(key), &zl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (*zv == NULL)
		return 0;
	if ((rc = span_runs_read(*zv, zl, sr)) == -EINVAL) {
		log_warnx("store: profile %016llx: its span record is corrupt; read without "
		    "its span labels", (unsigned long long)ref->id);
		rc = 0;
	}
	return rc;
}

/*
 * A packed profile as pprof (gzipped when gzip is set) into out. With ref,
 * a profile whose samples named spans gets them back (span.c keeps them
 * outside the pack): its samples as stored, each with its span's labels.
 */
static int
unpack_pprof(struct store *st, uint64_t sid, const void *v, size_t vl, bool gzip,
    const struct store_ref *ref, struct buf *out)
{
	struct agg *a = NULL;
	struct profile *p = NULL;
	struct series_state *ss;
	struct span_runs sr = { 0 };
	char *zv = NULL;
	int rc;

	if (ref && (rc = span_runs_get(st, ref, &zv, &sr)) < 0)
		goto out;
	if (sr.nrun) {
		if ((ss = series_state_lock(st, sid, &rc)) != NULL) {
			rc = pack_rows_profile(v, vl, ss->sym, &sr, &p);
			pthread_mutex_unlock(&ss->sym_lock);
		}
	} else {
		if ((a = agg_create()) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = agg_add(a, v, vl, NULL)) < 0 || agg_ngroups(a) != 1) {
			rc = rc < 0 ? rc : -EINVAL;
			goto out;
		}
		if ((ss = series_state_lock(st, sid, &rc)) != NULL) {
			rc = agg_profile(a, ss->sym, 0, false, &p);
			pthread_mutex_unlock(&ss->sym_lock);
		}
	}
	if (rc == 0)
		rc = profile_encode(p, gzip, out);
out:
	agg_free(a);
	profile_free(p);
	span_runs_free(&sr);
	rocksdb_free(zv);
	return rc;
}

int
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
			if (unpack_pprof(st, sid, v, vl, true, NULL, &pb) < 0) {
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

/*
 * The tag of a remembered size: the bytes store_get() makes depend on this
 * code and on zlib's, so a size from another build of either is not used.
 * v2: a profile naming spans is read back with its span labels; a v1 size
 * still holds for a profile without (no span record): no need to decode
 * every stored profile again after an upgrade.
 */
static uint64_t tag_of_sizes, tag_of_sizes_v1;
static pthread_once_t tag_once = PTHREAD_ONCE_INIT;

static uint64_t
tag_for(const char *version)
{
	char what[96];
	uint64_t h;

	snprintf(what, sizeof(what), "%s zlib %s", version, zlibVersion());
	h = pfhash64(what, strlen(what));
	return (h >> 56 | 1) << 56;	/* never 0: 0 would be no tag */
}

static void
tag_make(void)
{
	tag_of_sizes = tag_for("pprof-v2");
	tag_of_sizes_v1 = tag_for("pprof-v1");
}

static uint64_t
size_tag(void)
{
	pthread_once(&tag_once, tag_make);
	return tag_of_sizes;
}

/* Whether profile ref has a span record (its file changed with v2). */
static bool
has_span_record(struct store *st, const struct store_ref *ref)
{
	unsigned char key[25];
	rocksdb_pinnableslice_t *ps;
	char *dberr = NULL;
	bool yes;

	key[0] = 'Z';
	be64_put(key + 1, ref->series);
	be64_put(key + 9, time_enc(ref->time));
	be64_put(key + 17, ref->id);
	ps = rocksdb_get_pinned(st->db, st->ropts, (char *)key, sizeof(key), &dberr);
	yes = dberr != NULL || ps != NULL;	/* unsure: made again */
	free(dberr);
	rocksdb_pinnableslice_destroy(ps);
	return yes;
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

		if ((z & 0xff00000000000000ULL) == size_tag() ||
		    ((z & 0xff00000000000000ULL) == tag_of_sizes_v1 && !has_span_record(st, ref)))
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

/* The 'P' key of ref (25 bytes). */
static void
pkey_of(const struct store_ref *ref, unsigned char *pkey)
{
	pkey[0] = 'P';
	be64_put(pkey + 1, ref->series);
	be64_put(pkey + 9, time_enc(ref->time));
	be64_put(pkey + 17, ref->id);
}

/* The 'P' value of ref (malloc'd, *vl bytes), or NULL with *rc -EIO or -ENOENT. */
static char *
value_get(struct store *st, const struct store_ref *ref, size_t *vl, int *rc)
{
	unsigned char pkey[25];
	char *dberr = NULL, *v;

	pkey_of(ref, pkey);
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

int
store_get_locked(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out,
    bool gzip, bool spans)
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
		rc = unpack_pprof(st, ref->series, v, vl, gzip, spans ? ref : NULL, out);
	free(v);
	if (rc == 0 && gzip && out && out->err == 0 && size != out->len - len0)
		index_set_size(st, ref, out->len - len0);
	return rc;
}

int
store_get_size(struct store *st, uint64_t id, struct store_ref *ref, uint64_t *size)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = index_get(st, id, ref, size);
	if (rc == 0) {
		/*
		 * Its data, not only its index record (retention deletes both),
		 * and how long it is: read in place, not copied (du stats every
		 * profile of a week once per range that holds it).
		 */
		unsigned char pkey[25];
		rocksdb_pinnableslice_t *ps;
		char *dberr = NULL;
		size_t vl = 0;

		pkey_of(ref, pkey);
		ps = rocksdb_get_pinned(st->db, st->ropts, (char *)pkey, sizeof(pkey), &dberr);
		if (dberr)
			rc = -EIO;
		else if (ps == NULL || rocksdb_pinnableslice_value(ps, &vl) == NULL || vl < 1)
			rc = -ENOENT;
		free(dberr);
		rocksdb_pinnableslice_destroy(ps);
		ref->stored = rc == 0 ? vl : 0;
	}
	pthread_rwlock_unlock(&st->db_lock);
	if (rc == 0 && *size == UINT64_MAX)
		rc = -ENODATA;
	return rc;
}

/* Decode a T record. */
int
meta_decode(const unsigned char *v, size_t vl, struct store_meta *m)
{
	const unsigned char *p = v, *end = v + vl;
	size_t i;

	memset(m, 0, sizeof(*m));
	if (vl < 9)
		return -EINVAL;
	end -= 8;
	for (i = 0; p < end; i++) {
		uint64_t x;

		if (varint_get(&p, end, &x) < 0)
			return -EINVAL;
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

int
store_read_series_locked(struct store *st, uint64_t sid, int64_t from, int64_t to, struct agg *a,
    store_meta_fn fn, store_bad_fn bad, void *arg)
{
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(st->db);
	struct range_read c = { .st = st, .sid = sid, .a = a, .bad = bad, .arg = arg };
	unsigned char lo[17], hi[17];
	rocksdb_readoptions_t *dro;
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

	/*
	 * The markers of the range: windows not to trust. The compactor
	 * deletes markers as it goes, so their range is mostly tombstones until
	 * RocksDB compacts them away: the bound stops the seek at the range's
	 * end instead of skipping the next series' tombstones too.
	 */
	lo[0] = hi[0] = 'D';
	be64_put(lo + 9, time_enc(floor_div(from, NS_1D) * NS_1D));
	be64_put(hi + 9, time_enc(to));
	dro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(dro, snap);
	rocksdb_readoptions_set_iterate_upper_bound(dro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, dro);
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
	rocksdb_readoptions_destroy(dro);
	if (rc == 0)
		rc = read_cover(&c, from, to, 2);
out:
	rocksdb_readoptions_destroy(c.ro);
	rocksdb_release_snapshot(st->db, snap);
	free(c.dirty);
	buf_free(&c.err);
	return rc;
}

/*
 * Put before the n hours of arr (ascending, from the H records) the hours
 * that only windows past the raw retention still hold.
 */
static int
past_hours(struct store *st, uint64_t sid, int64_t **arr, size_t *n)
{
	struct range_read c = { .st = st, .ro = st->ropts, .sid = sid };
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
		h = floor_div(time_dec(be64_get(k + 10)), NS_1H);
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
bool
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
bool
has_data_locked(struct store *st, uint64_t sid, int64_t from, int64_t to)
{
	struct range_read c = { .st = st, .ro = st->ropts, .sid = sid };
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

int
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
