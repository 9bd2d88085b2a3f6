/*
 * test_window: the compact encoding (store/pack.c) and the pre-aggregated
 * windows (store/store.c, store/query.c) on a real RocksDB store in a
 * temporary directory. Every merge of random ranges (unaligned, aligned on
 * windows, across days, out-of-order and equal timestamps) is compared with
 * merging the raw profiles one by one with pprof's rules, before and after
 * the compactor ran, after back-dated profiles, and after simulated crashes
 * (stale windows left behind a marker; windows lost with their markers kept).
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <rocksdb/c.h>

#include "base.h"
#include "pack.h"
#include "pprof.h"
#include "store.h"
#include "util.h"

#define NS	INT64_C(1000000000)
#define MIN	(60 * NS)
#define HOUR	(3600 * NS)
#define DAY	(24 * HOUR)
#define T0	(INT64_C(1795305600) * NS)	/* 2026-11-22T00:00:00Z */

struct fixture {
	char		 dir[64];
	struct store	*st;
	uint64_t	 seed;
};

static uint64_t
rnd(struct fixture *f)
{
	/* xorshift64*: reproducible from the seed printed on failure */
	f->seed ^= f->seed >> 12;
	f->seed ^= f->seed << 25;
	f->seed ^= f->seed >> 27;
	return f->seed * UINT64_C(2685821657736338717);
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct buf err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/profilefs-window.XXXXXX");
	if (mkdtemp(f->dir) == NULL || store_open(f->dir, &f->st, &err) != 0)
		return -1;
	f->seed = 0x9e3779b97f4a7c15ULL;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	store_close(f->st);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void
reopen(struct fixture *f)
{
	struct buf err = { 0 };

	store_close(f->st);
	f->st = NULL;
	if (store_open(f->dir, &f->st, &err) != 0)
		fail_msg("reopen: %s", err.data);
	buf_free(&err);
}

/*
 * A random profile: a few stacks over 6 functions, some with a label; heap
 * (a gauge column and a counter column) or cpu, or cpu with other sample
 * types (not mergeable with the rest) when odd is set.
 */
static struct profile *
random_profile(struct fixture *f, bool heap, bool odd)
{
	struct profile *p = heap ? tp_new("space", "bytes", 512 * 1024,
	    "alloc_space/bytes,inuse_space/bytes") : odd ?
	    tp_new("cpu", "nanoseconds", 10000000, "wall/nanoseconds") :
	    tp_new("cpu", "nanoseconds", 10000000, "samples/count,cpu/nanoseconds");
	uint32_t fn[6], loc[6], m = tp_mapping(p, 0x400000, 0x800000, 0, "/bin/app", "b1");
	size_t i, n = 1 + rnd(f) % 6;
	static const char *names[] = { "main.main", "main.work", "runtime.mallocgc",
	    "net/http.(*conn).serve", "main.parse", "syscall.read" };

	for (i = 0; i < 6; i++) {
		fn[i] = tp_func(p, names[i], "x.go", (int64_t)i);
		loc[i] = tp_loc(p, m, 0x400100 + 16 * i, (int)fn[i], -1);
	}
	for (i = 0; i < n; i++) {
		int64_t v[2] = { (int64_t)(rnd(f) % 1000) + 1, (int64_t)(rnd(f) % 5000) - 100 };
		int a = (int)(rnd(f) % 6), b = (int)(rnd(f) % 6);

		if (rnd(f) % 4 == 0)
			tp_sample(p, v, (int)loc[a], (int)loc[b], -1, "handler", "/x", NULL);
		else
			tp_sample(p, v, (int)loc[a], (int)loc[b], (int)loc[0], -1, NULL);
	}
	p->time_nanos = 0;
	p->duration_nanos = 10 * NS;
	return p;
}

static void
put_random(struct fixture *f, const char *type, const char *labels, int64_t t, bool odd)
{
	struct profile *p = random_profile(f, strcmp(type, "heap") == 0, odd);
	struct labelset ls;
	struct store_input in = { .service = "win", .type = type, .labels = &ls,
	    .created_at = t, .source = "ingest" };
	struct buf err = { 0 };

	assert_int_equal(labels_parse(labels, &ls, NULL), 0);
	if (store_put_profile(f->st, &in, p, NULL, &err) != 0)
		fail_msg("put: %s", err.data);
	labels_clear(&ls);
	profile_free(p);
	buf_free(&err);
}

/* The reference: raw profiles decoded one by one, merged as query.c promises. */
struct ref {
	struct merge	*by_sig[4];
	struct merge	*sub[4];
	struct buf	 sig[4];
	size_t		 n[4], nsig;
	bool		 gauge[4];
	size_t		 nprofiles;
};

static int
ref_cb(void *arg, const struct store_ref *r, const void *data, size_t len)
{
	struct ref *x = arg;
	struct profile *p = NULL;
	struct buf sig = { 0 };
	size_t i, t;

	(void)r;
	assert_int_equal(profile_decode(data, len, &p, NULL), 0);
	assert_int_equal(profile_signature(p, &sig), 0);
	for (i = 0; i < x->nsig; i++)
		if (x->sig[i].len == sig.len && memcmp(x->sig[i].data, sig.data, sig.len) == 0)
			break;
	if (i == x->nsig) {
		assert_true(i < 4);
		buf_add(&x->sig[i], sig.data, sig.len);
		x->by_sig[i] = merge_create();
		for (t = 0; t < p->nsample_types; t++)
			if (profile_type_is_gauge(profile_str(p, p->sample_types[t].type)))
				x->gauge[i] = true;
		x->nsig++;
	}
	x->n[i]++;
	x->nprofiles++;
	if (x->gauge[i]) {
		if (x->sub[i] == NULL)
			x->sub[i] = merge_create();
		assert_int_equal(merge_add(x->sub[i], p, NULL), 0);
	} else {
		assert_int_equal(merge_add(x->by_sig[i], p, NULL), 0);
	}
	profile_free(p);
	buf_free(&sig);
	return 0;
}

/* End of one series: its gauge snapshots become their mean. */
static void
ref_series_end(struct ref *x)
{
	struct profile *mean;
	size_t i;

	for (i = 0; i < x->nsig; i++) {
		if (x->sub[i] == NULL)
			continue;
		assert_int_equal(merge_finish(x->sub[i], true, &mean), 0);
		assert_int_equal(merge_add(x->by_sig[i], mean, NULL), 0);
		profile_free(mean);
		merge_free(x->sub[i]);
		x->sub[i] = NULL;
	}
}

/* query_merge against the reference for (type, selector, [from, to)). */
static void
check_range(struct fixture *f, const char *type, const char *sel, int64_t from, int64_t to)
{
	struct labelset ls = { .n = 0 };
	struct query q = { .service = "win", .type = type, .from = from, .to = to };
	struct query_result res;
	const struct series **all;
	struct ref x;
	struct profile *want = NULL;
	size_t n, i, best = 0, t;

	memset(&x, 0, sizeof(x));
	if (sel) {
		assert_int_equal(labels_parse(sel, &ls, NULL), 0);
		q.sel = &ls;
	}
	assert_int_equal(store_series(f->st, &all, &n), 0);
	for (i = 0; i < n; i++) {
		if (!query_match(&q, all[i]))
			continue;
		assert_int_equal(store_scan(f->st, all[i]->id, from, to, true, ref_cb, &x), 0);
		ref_series_end(&x);
	}
	free(all);
	for (i = 1; i < x.nsig; i++)
		if (x.n[i] > x.n[best])
			best = i;
	if (x.nsig)
		assert_int_equal(merge_finish(x.by_sig[best], false, &want), 0);

	assert_int_equal(query_merge(f->st, &q, &res), 0);
	if (res.nrefs != x.nprofiles)
		fail_msg("range %lld..%lld: %zu profiles listed, %zu stored",
		    (long long)(from - T0), (long long)(to - T0), res.nrefs, x.nprofiles);
	if (want == NULL) {
		assert_null(res.merged);
	} else {
		assert_non_null(res.merged);
		assert_int_equal(res.nmerged, x.n[best]);
		assert_int_equal(res.nskipped, x.nprofiles - x.n[best]);
		assert_int_equal(res.merged->nsample_types, want->nsample_types);
		for (t = 0; t < want->nsample_types; t++)
			if (profile_total(res.merged, t) != profile_total(want, t))
				fail_msg("range %lld..%lld sel %s type %zu: %lld, want %lld",
				    (long long)(from - T0), (long long)(to - T0), sel ? sel : "all",
				    t, (long long)profile_total(res.merged, t),
				    (long long)profile_total(want, t));
		assert_true(res.merged->duration_nanos == want->duration_nanos);
		assert_true(res.merged->period == want->period);
	}
	/* Per-profile totals (timelines) stay those of each profile. */
	for (i = 0; i + 1 < res.nrefs; i++)
		assert_true(res.refs[i].time <= res.refs[i + 1].time);
	/* merged_only: the same merge without the listing. */
	{
		struct query_result mo;

		q.merged_only = true;
		assert_int_equal(query_merge(f->st, &q, &mo), 0);
		assert_int_equal(mo.nrefs, 0);
		assert_int_equal(mo.nmerged, res.nmerged);
		assert_int_equal(mo.merged == NULL, res.merged == NULL);
		for (t = 0; res.merged && t < res.merged->nsample_types; t++)
			assert_true(profile_total(mo.merged, t) == profile_total(res.merged, t));
		query_result_free(&mo);
		/* totals_only: the same listing and totals, merged's sample types alone. */
		q.merged_only = false;
		q.totals_only = true;
		assert_int_equal(query_merge(f->st, &q, &mo), 0);
		assert_int_equal(mo.nrefs, res.nrefs);
		assert_int_equal(mo.nskipped, res.nskipped);
		assert_int_equal(mo.merged == NULL, res.merged == NULL);
		if (res.merged) {
			assert_int_equal(mo.merged->nsample_types, res.merged->nsample_types);
			assert_int_equal(mo.merged->nsamples, 0);
		}
		for (i = 0; i < res.nrefs; i++) {
			assert_true(mo.refs[i].id == res.refs[i].id);
			assert_true((mo.totals_at[i] == SIZE_MAX) == (res.totals_at[i] == SIZE_MAX));
			for (t = 0; res.merged && mo.totals_at[i] != SIZE_MAX &&
			    t < res.merged->nsample_types; t++)
				assert_true(mo.totals[mo.totals_at[i] + t] ==
				    res.totals[res.totals_at[i] + t]);
		}
		query_result_free(&mo);
	}
	query_result_free(&res);
	profile_free(want);
	for (i = 0; i < x.nsig; i++) {
		merge_free(x.by_sig[i]);
		buf_free(&x.sig[i]);
	}
	labels_clear(&ls);
}

/* Random ranges, window-aligned ranges and the presets' shapes. */
static void
check_many(struct fixture *f, int n)
{
	static const char *sels[] = { NULL, "pod=a", "pod=b" };
	static const int64_t lens[] = { 10 * MIN, HOUR, DAY };
	int i;

	for (i = 0; i < n; i++) {
		int64_t a = T0 - HOUR + (int64_t)(rnd(f) % (uint64_t)(4 * DAY));
		int64_t b = a + (int64_t)(rnd(f) % (uint64_t)(3 * DAY)) + 1;
		int64_t l = lens[rnd(f) % 3];
		const char *sel = sels[rnd(f) % 3];
		const char *type = rnd(f) % 3 ? "cpu" : "heap";

		check_range(f, type, sel, a, b);
		/* Aligned on windows, and the edges of a window. */
		check_range(f, type, sel, a - a % l, b - b % l + l);
		check_range(f, type, sel, a - a % l, a - a % l + l);
	}
	check_range(f, "cpu", NULL, INT64_MIN, INT64_MAX);
	check_range(f, "heap", "pod=a", INT64_MIN, INT64_MAX);
}

/* Three days of profiles, out of order, some at equal times and on edges. */
static void
fill(struct fixture *f, int n, int64_t span)
{
	static const char *pods[] = { "pod=a", "pod=b" };
	int i;

	for (i = 0; i < n; i++) {
		int64_t t = T0 + (int64_t)(rnd(f) % (uint64_t)span);

		if (i % 17 == 0)
			t -= t % (10 * MIN);	/* exactly on a window edge */
		if (i % 23 == 0)
			t = T0 + DAY;		/* equal timestamps at midnight */
		put_random(f, "cpu", pods[i % 2], t, i % 41 == 5);
		if (i % 3 == 0)
			put_random(f, "heap", pods[(i / 3) % 2], t + 1, false);
	}
}

static void
test_windows_exact(void **state)
{
	struct fixture *f = *state;
	uint64_t days = 0;

	fill(f, 300, 3 * DAY);
	check_many(f, 15);		/* every window marked: raw reads */
	assert_int_equal(store_compact(f->st, &days), 0);
	check_many(f, 25);		/* clean windows */
	/* Back-dated and out-of-order profiles mark their windows again. */
	fill(f, 40, 3 * DAY);
	check_many(f, 15);
	assert_int_equal(store_compact(f->st, &days), 0);
	check_many(f, 15);
	reopen(f);
	check_many(f, 10);
	assert_int_equal(store_compact(f->st, &days), 0);
	assert_int_equal(days, 0);	/* nothing left to do */
}

static void
db_open(struct fixture *f, rocksdb_t **db, rocksdb_options_t **opts)
{
	char *err = NULL;

	store_close(f->st);
	f->st = NULL;
	*opts = rocksdb_options_create();
	*db = rocksdb_open(*opts, f->dir, &err);
	assert_null(err);
}

static void
db_close(rocksdb_t *db, rocksdb_options_t *opts)
{
	rocksdb_close(db);
	rocksdb_options_destroy(opts);
}

/*
 * Crash states: (1) a window left stale while its marker stays (the
 * compactor had not run): reads ignore the window, the compactor fixes it;
 * (2) every window lost, every marker present: rebuilt from raw profiles.
 */
static void
test_rebuild_after_crash(void **state)
{
	struct fixture *f = *state;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	rocksdb_t *db;
	struct buf keys = { 0 }, wv = { 0 };
	char *err = NULL;
	size_t i, nw = 0;
	uint64_t days;

	fill(f, 200, 2 * DAY);
	assert_int_equal(store_compact(f->st, &days), 0);
	check_many(f, 5);

	/* (1) Every level-0 window gets the content of the first one, marked dirty. */
	db_open(f, &db, &opts);
	wo = rocksdb_writeoptions_create();
	ro = rocksdb_readoptions_create();
	it = rocksdb_create_iterator(db, ro);
	for (rocksdb_iter_seek(it, "W", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);

		if (k[0] != 'W')
			break;
		if (kl == 18 && k[9] == 0) {
			if (wv.len == 0)
				buf_add(&wv, v, vl);
			buf_add(&keys, k, kl);
			nw++;
		}
	}
	rocksdb_iter_destroy(it);
	assert_true(nw > 10);
	for (i = 0; i < nw; i++) {
		const char *k = keys.data + 18 * i;
		char d[25];

		rocksdb_put(db, wo, k, 18, wv.data, wv.len, &err);
		assert_null(err);
		d[0] = 'D';
		memcpy(d + 1, k + 1, 8);
		memcpy(d + 9, k + 10, 8);
		memset(d + 17, 0xee, 8);
		rocksdb_put(db, wo, d, 25, "", 0, &err);
		assert_null(err);
	}
	db_close(db, opts);
	reopen(f);
	check_many(f, 8);
	assert_int_equal(store_compact(f->st, &days), 0);
	check_many(f, 8);

	/* (2) Every window lost; markers for every raw profile. */
	db_open(f, &db, &opts);
	{
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();

		rocksdb_writebatch_delete_range(wb, "W", 1, "X", 1);
		rocksdb_write(db, wo, wb, &err);
		rocksdb_writebatch_destroy(wb);
		assert_null(err);
	}
	it = rocksdb_create_iterator(db, ro);
	for (rocksdb_iter_seek(it, "P", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		unsigned char d[25];
		uint64_t tv = 0;
		int64_t t;
		int j;

		if (k[0] != 'P' || kl != 25)
			break;
		for (j = 0; j < 8; j++)
			tv = tv << 8 | (unsigned char)k[9 + j];
		t = (int64_t)(tv ^ (UINT64_C(1) << 63));
		t = t - ((t % (10 * MIN)) + 10 * MIN) % (10 * MIN);
		tv = (uint64_t)t ^ (UINT64_C(1) << 63);
		d[0] = 'D';
		memcpy(d + 1, k + 1, 8);
		for (j = 7; j >= 0; j--, tv >>= 8)
			d[9 + j] = (unsigned char)tv;
		memcpy(d + 17, k + 17, 8);
		rocksdb_put(db, wo, (char *)d, 25, "", 0, &err);
		assert_null(err);
	}
	rocksdb_iter_destroy(it);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_readoptions_destroy(ro);
	db_close(db, opts);
	reopen(f);
	check_many(f, 5);
	assert_int_equal(store_compact(f->st, &days), 0);
	check_many(f, 8);
	buf_free(&keys);
	buf_free(&wv);
}

/* Times at int64's ends and around the windows' domain: read raw, sums exact. */
static void
test_extreme_times(void **state)
{
	struct fixture *f = *state;
	static const int64_t ts[] = { INT64_MIN, INT64_MIN + 1, -(INT64_C(1) << 62) - 1,
	    -(INT64_C(1) << 62) + DAY, -1, 0, T0, (INT64_C(1) << 62) - DAY,
	    (INT64_C(1) << 62) + 5, INT64_MAX - 1, INT64_MAX };
	uint64_t days;
	size_t i;

	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		put_random(f, "cpu", i % 2 ? "pod=a" : "pod=b", ts[i], false);
	check_range(f, "cpu", NULL, INT64_MIN, INT64_MAX);
	assert_int_equal(store_compact(f->st, &days), 0);
	check_range(f, "cpu", NULL, INT64_MIN, INT64_MAX);
	check_range(f, "cpu", "pod=a", INT64_MIN, 0);
	check_range(f, "cpu", NULL, -1, INT64_MAX);
	check_range(f, "cpu", NULL, T0 - DAY, T0 + DAY);
	check_range(f, "cpu", NULL, INT64_MIN + 1, INT64_MAX - 1);
	assert_int_equal(store_expire(f->st, 0, NULL), 0);
	check_range(f, "cpu", NULL, INT64_MIN, INT64_MAX);
}

/* A merge's totals, profiles (those windows stand for included) and merged count. */
struct outcome {
	int64_t		 totals[4];
	size_t		 ntypes;
	uint64_t	 profiles, merged, past;
};

static void
merge_outcome(struct fixture *f, const char *type, const char *sel, int64_t from, int64_t to,
    struct outcome *o)
{
	struct labelset ls = { .n = 0 };
	struct query q = { .service = "win", .type = type, .from = from, .to = to };
	struct query_result res;
	size_t i;

	memset(o, 0, sizeof(*o));
	if (sel) {
		assert_int_equal(labels_parse(sel, &ls, NULL), 0);
		q.sel = &ls;
	}
	assert_int_equal(query_merge(f->st, &q, &res), 0);
	for (i = 0; i < res.nrefs; i++) {
		o->profiles += res.refs[i].summary ? res.refs[i].summary : 1;
		o->past += res.refs[i].summary;
		if (i + 1 < res.nrefs)
			assert_true(res.refs[i].time <= res.refs[i + 1].time);
	}
	o->merged = res.nmerged;
	for (i = 0; res.merged && i < res.merged->nsample_types && i < 4; i++)
		o->totals[i] = profile_total(res.merged, i);
	o->ntypes = res.merged ? res.merged->nsample_types : 0;
	query_result_free(&res);
	labels_clear(&ls);
}

static int64_t
ceil10(int64_t t)
{
	int64_t w = 10 * MIN, f = t / w * w - (t % w < 0 ? w : 0);

	return f == t ? t : f + w;
}

/*
 * Windows kept past the raw retention: once the raw profiles before the cut
 * are gone, every range still merges what it held, with its edges rounded
 * to 10 minutes before the cut (a window counts when its start lies in the
 * range), and exactly after it; counts include the profiles windows stand
 * for; hours and "has data" see the past.
 */
static void
test_past_retention(void **state)
{
	struct fixture *f = *state;
	static const char *sels[] = { NULL, "pod=a", "pod=b" };
	int64_t cut = T0 + DAY + 17 * MIN + 5 * NS, c10 = T0 + DAY + 10 * MIN;
	enum { N = 40 };
	int64_t from[N], to[N], *hours;
	struct outcome want[N], got;
	const char *sel[N], *type[N];
	const struct series **all;
	uint64_t days, n = 0;
	size_t i, ns, nh;

	fill(f, 300, 3 * DAY);
	assert_int_equal(store_compact(f->st, &days), 0);
	for (i = 0; i < N; i++) {
		int64_t a = T0 - HOUR + (int64_t)(rnd(f) % (uint64_t)(4 * DAY));
		int64_t b = a + (int64_t)(rnd(f) % (uint64_t)(2 * DAY)) + 1;

		if (i == 0) {
			a = INT64_MIN;
			b = INT64_MAX;
		} else if (i == 1) {
			a = T0 + 3 * MIN;
			b = c10 - 7 * MIN;	/* wholly past */
		}
		from[i] = a;
		to[i] = b;
		sel[i] = sels[rnd(f) % 3];
		type[i] = rnd(f) % 3 ? "cpu" : "heap";
		/* What the windows hold: before the cut, profiles by their window's start. */
		merge_outcome(f, type[i], sel[i], a < c10 && a > INT64_MIN ? ceil10(a) : a,
		    b <= c10 ? ceil10(b) : b, &want[i]);
	}
	/* Raw before the cut go; windows stay (kept longer). */
	assert_int_equal(store_expire_tiers(f->st, cut, T0 - DAY, &n), 0);
	assert_true(n > 0);
	for (int round = 0; round < 2; round++) {
		for (i = 0; i < N; i++) {
			merge_outcome(f, type[i], sel[i], from[i], to[i], &got);
			if (got.profiles != want[i].profiles || got.merged != want[i].merged ||
			    got.ntypes != want[i].ntypes ||
			    memcmp(got.totals, want[i].totals, sizeof(got.totals)) != 0)
				fail_msg("range %zu (%lld..%lld %s %s): %llu profiles %llu merged "
				    "total0 %lld, want %llu %llu %lld", i, (long long)(from[i] - T0),
				    (long long)(to[i] - T0), type[i], sel[i] ? sel[i] : "all",
				    (unsigned long long)got.profiles, (unsigned long long)got.merged,
				    (long long)got.totals[0], (unsigned long long)want[i].profiles,
				    (unsigned long long)want[i].merged, (long long)want[i].totals[0]);
			if (to[i] <= c10)
				assert_int_equal(got.past, got.profiles);
		}
		reopen(f);	/* and after a restart */
	}
	/* The first day is still listed and has data; a range before it has none. */
	assert_int_equal(store_series(f->st, &all, &ns), 0);
	for (i = 0; i < ns; i++) {
		assert_true(store_has_data(f->st, all[i]->id, T0, c10));
		assert_false(store_has_data(f->st, all[i]->id, T0 - DAY, T0 - HOUR));
		assert_true(store_has_data(f->st, all[i]->id, c10, c10 + DAY));
		assert_int_equal(store_hours(f->st, all[i]->id, &hours, &nh), 0);
		assert_true(nh > 10);
		assert_true(hours[0] >= T0 / HOUR && hours[0] < c10 / HOUR);
		for (size_t j = 1; j < nh; j++)
			assert_true(hours[j] > hours[j - 1]);
		free(hours);
	}
	free(all);
	/* The windows' own retention ends it. */
	assert_int_equal(store_expire_tiers(f->st, cut, cut, &n), 0);
	merge_outcome(f, "cpu", NULL, T0, c10, &got);
	assert_int_equal(got.profiles, 0);
	merge_outcome(f, "cpu", NULL, INT64_MIN, INT64_MAX, &got);
	merge_outcome(f, "cpu", NULL, c10, INT64_MAX, &want[0]);
	assert_int_equal(got.profiles, want[0].profiles);
	assert_int_equal(got.past, 0);
}

/* Packs of real profiles: pprof's sums survive; reloaded symbols keep their ids. */
/*
 * A pack of the previous version (2: values as they are) and the same pack
 * in the current one (3: values as multiples of a divisor per type) sum
 * alike; a divisor of 0, or values that overflow once multiplied, are refused.
 */
static void
test_pack_versions(void **state)
{
	/* One group: count 1, time 0, types (1,2) (3,4), period type 3/4, period
	 * 10 ms (z), no times, no filters, no comments; then v3's divisors. */
	static const unsigned char head[] = { 1, 0, 2, 1, 2, 3, 4, 3, 4,
	    0x80, 0xda, 0xc4, 0x09, 0, 0, 0, 0, 0, 0, 0, 0 };
	/* Two samples: stack 0 (1, 10 ms), stack 2 (3, 30 ms). */
	static const unsigned char v2s[] = { 2, 0, 2, 0x80, 0xda, 0xc4, 0x09, 4, 6,
	    0x80, 0x8e, 0xce, 0x1c };
	static const unsigned char v3s[] = { 2, 0, 2, 2, 4, 6, 6 };
	static const unsigned char huge[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	    0x80, 0x40 };	/* z 2^61 */
	unsigned char v2[64], v3[64];
	size_t l2 = 0, l3 = 0, nt, d1;
	int64_t tot[8];
	struct agg *a = agg_create(), *b = agg_create(), *c = agg_create();

	(void)state;
	v2[l2++] = 2;
	v2[l2++] = 1;
	memcpy(v2 + l2, head, sizeof(head));
	l2 += sizeof(head);
	memcpy(v2 + l2, v2s, sizeof(v2s));
	l2 += sizeof(v2s);
	v3[l3++] = 3;
	v3[l3++] = 1;
	memcpy(v3 + l3, head, sizeof(head));
	l3 += sizeof(head);
	d1 = l3;
	v3[l3++] = 1;			/* samples: divisor 1 */
	v3[l3++] = 0x80;		/* cpu: divisor 10 ms */
	v3[l3++] = 0xad;
	v3[l3++] = 0xe2;
	v3[l3++] = 0x04;
	memcpy(v3 + l3, v3s, sizeof(v3s));
	l3 += sizeof(v3s);
	assert_int_equal(agg_add(a, v2, l2, NULL), 0);
	assert_int_equal(agg_add(b, v3, l3, NULL), 0);
	assert_int_equal(agg_totals(a, 0, tot, 8, &nt), 0);
	assert_int_equal(nt, 2);
	assert_true(tot[0] == 4 && tot[1] == 40000000);
	assert_int_equal(agg_totals(b, 0, tot, 8, &nt), 0);
	assert_true(tot[0] == 4 && tot[1] == 40000000);
	assert_int_equal(pack_totals(v3, l3, tot, 8, &nt), 0);
	assert_true(tot[0] == 4 && tot[1] == 40000000);
	v3[d1] = 0;			/* a divisor of 0 */
	assert_int_equal(agg_add(c, v3, l3, NULL), -EINVAL);
	v3[d1] = 1;
	memcpy(v3 + l3 - 1, huge, sizeof(huge));	/* 2^61 ticks of 10 ms */
	assert_int_equal(agg_add(c, v3, l3 - 1 + sizeof(huge), NULL), -EINVAL);
	assert_int_equal(agg_ngroups(c), 0);
	agg_free(a);
	agg_free(b);
	agg_free(c);
}

static void
test_pack_roundtrip(void **state)
{
	size_t nf, i, t;
	char **files = real_files(&nf);

	(void)state;
	for (i = 0; files && i < nf; i++) {
		struct buf raw = { 0 }, val = { 0 }, news = { 0 };
		struct symtab *s1 = symtab_create(), *s2 = symtab_create();
		struct profile *p = NULL, *q = NULL, *r = NULL;
		struct agg *a = agg_create();
		const struct sym_new *e;
		size_t k, n;

		if (read_real(files[i], &raw) < 0 || profile_decode(raw.data, raw.len, &p, NULL) < 0 ||
		    p->nsample_types == 0 || p->nsample_types > 64) {
			profile_free(p);
			buf_free(&raw);
			symtab_free(s1);
			symtab_free(s2);
			agg_free(a);
			continue;
		}
		assert_int_equal(pack_profile(s1, p, 42, &val, &news, NULL), 0);
		/* No span ids: values as they are (version 2). */
		assert_int_equal((unsigned char)val.data[0], PACK_VERSION_PLAIN);
		/* Every entry is new once, in id order per kind. */
		e = (const struct sym_new *)news.data;
		n = news.len / sizeof(*e);
		for (k = 0; k < SYM_NKINDS; k++) {
			size_t j, cnt = 0;

			for (j = 0; j < n; j++)
				cnt += e[j].kind == k;
			assert_int_equal(cnt, symtab_count(s1, (int)k));
		}
		/* Reload in id order per kind, with a hole where an entry never became durable. */
		for (k = 0; k < SYM_NKINDS; k++) {
			uint32_t id;

			for (id = 0; id < symtab_count(s1, (int)k); id++) {
				size_t l;
				const void *d = symtab_entry(s1, (int)k, id, &l);

				assert_non_null(d);
				assert_int_equal(symtab_load(s2, (int)k, id, d, l), 0);
			}
		}
		assert_int_equal(agg_add(a, val.data, val.len, NULL), 0);
		assert_int_equal(agg_ngroups(a), 1);
		assert_int_equal(agg_count(a, 0), 1);
		assert_true(agg_first_time(a, 0) == 42);
		assert_int_equal(agg_profile(a, s1, 0, false, &q), 0);
		assert_int_equal(agg_profile(a, s2, 0, false, &r), 0);
		for (t = 0; t < p->nsample_types; t++) {
			assert_true(profile_total(q, t) == profile_total(p, t));
			assert_true(profile_total(r, t) == profile_total(p, t));
		}
		assert_true(q->period == p->period && q->duration_nanos == p->duration_nanos &&
		    q->time_nanos == p->time_nanos);
		if (p->nmappings)
			assert_string_equal(profile_str(q, q->mappings[0].filename),
			    profile_str(p, p->mappings[0].filename));
		/*
		 * Until the batch is written the entries are repeated; once it is,
		 * a second pack of the same profile adds no symbol; sums double.
		 */
		buf_reset(&val);
		{
			struct buf again = { 0 };

			assert_int_equal(pack_profile(s1, p, 7, &val, &again, NULL), 0);
			assert_int_equal(again.len, news.len);
			buf_free(&again);
		}
		symtab_durable(s1, (const struct sym_new *)news.data, n);
		buf_reset(&news);
		buf_reset(&val);
		assert_int_equal(pack_profile(s1, p, 7, &val, &news, NULL), 0);
		assert_int_equal(news.len, 0);
		assert_int_equal(agg_add(a, val.data, val.len, NULL), 0);
		assert_int_equal(agg_count(a, 0), 2);
		assert_true(agg_first_time(a, 0) == 7);
		profile_free(q);
		assert_int_equal(agg_profile(a, s1, 0, false, &q), 0);
		for (t = 0; t < p->nsample_types; t++)
			assert_true(profile_total(q, t) == profile_add(profile_total(p, t),
			    profile_total(p, t)));
		/* Truncated packs are refused whole. */
		for (k = 1; k < val.len; k += 1 + val.len / 16) {
			struct agg *b = agg_create();

			assert_int_equal(agg_add(b, val.data, k, NULL), -EINVAL);
			assert_int_equal(agg_ngroups(b), 0);
			agg_free(b);
		}
		profile_free(p);
		profile_free(q);
		profile_free(r);
		agg_free(a);
		symtab_free(s1);
		symtab_free(s2);
		buf_free(&raw);
		buf_free(&val);
		buf_free(&news);
	}
	free_files(files);
}

/* Holes: ids whose entries never became durable match nothing. */
static void
test_symtab_holes(void **state)
{
	struct symtab *t = symtab_create();
	size_t l;

	(void)state;
	assert_int_equal(symtab_load(t, SYM_STR, 0, "a", 1), 0);
	assert_int_equal(symtab_load(t, SYM_STR, 3, "d", 1), 0);
	assert_int_equal(symtab_count(t, SYM_STR), 4);
	assert_null(symtab_entry(t, SYM_STR, 1, &l));
	assert_non_null(symtab_entry(t, SYM_STR, 3, &l));
	assert_int_equal(symtab_load(t, SYM_STR, 2, "c", 1), -EINVAL);	/* out of order */
	assert_int_equal(symtab_load(t, SYM_STR, 4, "a", 1), -EINVAL);	/* duplicate */
	symtab_free(t);
}

/* Runs of entries: loaded in order, overlaps skipped, malformed ones refused. */
static void
test_symtab_runs(void **state)
{
	/* Entries "b", "cc", "d" (varint length, bytes). */
	static const unsigned char run[] = { 1, 'b', 2, 'c', 'c', 1, 'd' };
	struct symtab *t = symtab_create();
	const char *d;
	size_t l;

	(void)state;
	assert_int_equal(symtab_load(t, SYM_FN, 0, "a", 1), 0);
	assert_int_equal(symtab_load_run(t, SYM_FN, 1, 3, run, sizeof(run)), 0);
	assert_int_equal(symtab_count(t, SYM_FN), 4);
	assert_non_null(d = symtab_entry(t, SYM_FN, 2, &l));
	assert_int_equal(l, 2);
	assert_memory_equal(d, "cc", 2);
	/* The same entries again from id 2 (another profile's run): only "e" is new. */
	{
		static const unsigned char again[] = { 2, 'c', 'c', 1, 'd', 1, 'e' };

		assert_int_equal(symtab_load_run(t, SYM_FN, 2, 3, again, sizeof(again)), 0);
	}
	assert_int_equal(symtab_count(t, SYM_FN), 5);
	assert_non_null(d = symtab_entry(t, SYM_FN, 4, &l));
	assert_memory_equal(d, "e", 1);
	/* A run past the end leaves holes, like single entries. */
	assert_int_equal(symtab_load_run(t, SYM_FN, 7, 1, (const unsigned char[]){ 1, 'f' }, 2),
	    0);
	assert_null(symtab_entry(t, SYM_FN, 6, &l));
	assert_non_null(symtab_entry(t, SYM_FN, 7, &l));
	/* Cut short, trailing bytes, a length past the end, no entries, ids past 2^32. */
	assert_int_equal(symtab_load_run(t, SYM_STR, 0, 3, run, sizeof(run) - 1), -EINVAL);
	assert_int_equal(symtab_load_run(t, SYM_STR, 0, 2, run, sizeof(run)), -EINVAL);
	assert_int_equal(symtab_load_run(t, SYM_STR, 0, 1, (const unsigned char[]){ 9, 'x' }, 2),
	    -EINVAL);
	assert_int_equal(symtab_load_run(t, SYM_STR, 0, 0, run, 0), -EINVAL);
	assert_int_equal(symtab_load_run(t, SYM_STR, UINT32_MAX, 2, run, 5), -EINVAL);
	assert_int_equal(symtab_load_run(t, SYM_NKINDS, 0, 1, run, 2), -EINVAL);
	symtab_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symtab_holes),
		cmocka_unit_test(test_symtab_runs),
		cmocka_unit_test(test_pack_versions),
		cmocka_unit_test(test_pack_roundtrip),
		cmocka_unit_test_setup_teardown(test_windows_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_after_crash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extreme_times, setup, teardown),
		cmocka_unit_test_setup_teardown(test_past_retention, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
