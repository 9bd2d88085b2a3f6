/*
 * test_store: the RocksDB store (store/store.c) in a temporary directory, and
 * the range queries on it (store/query.c): keys ordered by time within a
 * series, several profiles at one timestamp all kept, ranges half-open,
 * hours, reopening keeps everything, bad input refused with a reason and
 * nothing stored; ids and names as users see them.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include <rocksdb/c.h>
#include <zlib.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "util.h"

#define NS	INT64_C(1000000000)
#define HOUR	(3600 * NS)
#define T0	(INT64_C(1795305600) * NS)	/* 2026-11-22T00:00:00Z */

struct fixture {
	char		 dir[64];
	struct store	*st;
	struct buf	 cpu;		/* google-pprof/sample.cpu, gzipped */
	struct buf	 heap;		/* pyroscope/heap.pb, plain */
};

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A small valid profile built by hand when the real files are missing. */
static void
fallback_profile(struct buf *out, const char *types)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 1, types);
	uint32_t f = tp_func(p, "main", "main.go", 1);

	tp_sample(p, (int64_t[]){ 7, 7, 7, 7 }, (int)tp_loc(p, 0, 1, (int)f, -1), -1, NULL);
	assert_int_equal(profile_encode(p, true, out), 0);
	profile_free(p);
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct buf err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/profilefs-unit.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	if (store_open(f->dir, &f->st, &err) != 0) {
		fprintf(stderr, "store_open: %s\n", err.data);
		return -1;
	}
	if (read_real("google-pprof/sample.cpu", &f->cpu) < 0) {
		buf_reset(&f->cpu);
		fallback_profile(&f->cpu, "samples/count,cpu/nanoseconds");
	}
	if (read_real("pyroscope/heap.pb", &f->heap) < 0) {
		buf_reset(&f->heap);
		fallback_profile(&f->heap,
		    "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes");
	}
	buf_free(&err);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	store_close(f->st);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	buf_free(&f->cpu);
	buf_free(&f->heap);
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

static struct store_ref
put(struct fixture *f, const struct buf *data, const char *svc, const char *type,
    const char *labels, int64_t t)
{
	struct store_input in = { .service = svc, .type = type, .created_at = t,
	    .source = "ingest" };
	struct labelset ls = { .n = 0 };
	struct store_ref ref;
	struct buf err = { 0 };

	if (labels)
		assert_int_equal(labels_parse(labels, &ls, NULL), 0);
	in.labels = labels ? &ls : NULL;
	if (store_put(f->st, &in, data->data, data->len, &ref, &err) != 0)
		fail_msg("store_put: %s", err.data);
	labels_clear(&ls);
	buf_free(&err);
	return ref;
}

struct scan {
	struct store_ref refs[64];
	size_t		 n;
	bool		 had_data;
	size_t		 stop_after;	/* 0: never */
};

static int
scan_cb(void *arg, const struct store_ref *ref, const void *data, size_t len)
{
	struct scan *s = arg;

	if (s->n < 64)
		s->refs[s->n] = *ref;
	s->n++;
	if (data && len > 2 && ((const unsigned char *)data)[0] == 0x1f)
		s->had_data = true;
	return s->stop_after && s->n == s->stop_after ? 99 : 0;
}

static size_t
count(struct fixture *f, uint64_t sid, int64_t from, int64_t to)
{
	struct scan s = { .n = 0 };

	assert_int_equal(store_scan(f->st, sid, from, to, false, scan_cb, &s), 0);
	return s.n;
}

static void
test_put_get(void **state)
{
	struct fixture *f = *state;
	struct store_ref r, g;
	struct buf out = { 0 };
	struct profile *p = NULL;

	r = put(f, &f->cpu, "checkout", "cpu", "region=eu", T0);
	assert_true(r.id > 0);
	assert_true(r.time == T0);
	assert_string_equal(r.type, "cpu");
	assert_int_equal(store_get(f->st, r.id, &g, &out), 0);
	assert_true(g.id == r.id && g.series == r.series && g.time == T0);
	assert_string_equal(g.type, "cpu");
	/* Stored compactly, served as gzipped pprof with the original's sums. */
	assert_true((unsigned char)out.data[0] == 0x1f && (unsigned char)out.data[1] == 0x8b);
	{
		struct profile *a = NULL, *b = NULL;
		size_t t;

		assert_int_equal(profile_decode(out.data, out.len, &a, NULL), 0);
		assert_int_equal(profile_decode(f->cpu.data, f->cpu.len, &b, NULL), 0);
		assert_int_equal(a->nsample_types, b->nsample_types);
		for (t = 0; t < a->nsample_types; t++)
			assert_true(profile_total(a, t) == profile_total(b, t));
		assert_true(a->period == b->period && a->time_nanos == b->time_nanos &&
		    a->duration_nanos == b->duration_nanos);
		profile_free(a);
		profile_free(b);
	}
	buf_reset(&out);
	/* A plain upload is stored gzipped, decoding to the same profile. */
	r = put(f, &f->heap, "checkout", "heap", NULL, T0);
	assert_int_equal(store_get(f->st, r.id, &g, &out), 0);
	assert_true((unsigned char)out.data[0] == 0x1f && (unsigned char)out.data[1] == 0x8b);
	assert_int_equal(profile_decode(out.data, out.len, &p, NULL), 0);
	{
		struct profile *q = NULL;

		assert_int_equal(profile_decode(f->heap.data, f->heap.len, &q, NULL), 0);
		/* Samples of equal stacks may be one now; every sum is the same. */
		assert_true(p->nsamples <= q->nsamples);
		for (size_t t = 0; t < q->nsample_types; t++)
			assert_true(profile_total(p, t) == profile_total(q, t));
		profile_free(q);
	}
	profile_free(p);
	/* Unknown ids. */
	assert_int_equal(store_get(f->st, 999999, &g, &out), -ENOENT);
	assert_int_equal(store_get(f->st, 0, &g, NULL), -ENOENT);
	buf_free(&out);
}

static void
test_series(void **state)
{
	struct fixture *f = *state;
	const struct series **all;
	struct store_ref a, b, c, d;
	size_t n;

	a = put(f, &f->cpu, "web", "cpu", "zone=b,app=x", T0);
	b = put(f, &f->cpu, "web", "cpu", "app=x,zone=b", T0 + 1);	/* same set */
	c = put(f, &f->cpu, "web", "cpu", "app=y", T0);
	d = put(f, &f->cpu, "api", "cpu", NULL, T0);
	assert_true(a.series == b.series);
	assert_true(a.series != c.series && a.series != d.series && c.series != d.series);
	assert_int_equal(store_series(f->st, &all, &n), 0);
	assert_int_equal(n, 3);
	/* Sorted by service, type, labels; labels in canonical text. */
	assert_string_equal(all[0]->service, "api");
	assert_string_equal(all[0]->labels, "");
	assert_string_equal(all[1]->labels, "app=x,zone=b");
	assert_int_equal(all[1]->ls.n, 2);
	assert_string_equal(all[2]->labels, "app=y");
	assert_true(store_series_get(f->st, a.series) == all[1]);
	assert_null(store_series_get(f->st, 12345));
	free(all);
	/* A service name with a space and non-ASCII bytes is fine. */
	put(f, &f->cpu, "my svc \xc3\xa9", "cpu", "k=v w", T0);
	assert_int_equal(store_series(f->st, &all, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(all[1]->service, "my svc \xc3\xa9");
	assert_string_equal(all[1]->labels, "k=v%20w");
	free(all);
}

/* What content made at a generation for data up to a time may keep. */
static void
test_changed_since(void **state)
{
	struct fixture *f = *state;
	uint64_t g0, g1, g2;
	int i;

	put(f, &f->cpu, "svc", "cpu", NULL, T0 + 10 * HOUR);
	g0 = store_generation(f->st);
	assert_false(store_changed_since(f->st, g0, INT64_MAX));
	/* Later profiles leave earlier ranges alone... */
	put(f, &f->cpu, "svc", "cpu", NULL, T0 + 11 * HOUR);
	put(f, &f->cpu, "svc", "cpu", NULL, T0 + 12 * HOUR);
	assert_false(store_changed_since(f->st, g0, T0 + 10 * HOUR));
	assert_true(store_changed_since(f->st, g0, T0 + 11 * HOUR));
	assert_true(store_changed_since(f->st, g0, INT64_MAX));
	g1 = store_generation(f->st);
	/* ... a back-dated one does not, for any generation before it. */
	put(f, &f->cpu, "svc", "cpu", NULL, T0 + 5 * HOUR);
	assert_true(store_changed_since(f->st, g0, T0 + 6 * HOUR));
	assert_true(store_changed_since(f->st, g1, T0 + 6 * HOUR));
	assert_false(store_changed_since(f->st, g1, T0 + 4 * HOUR));
	g2 = store_generation(f->st);
	assert_false(store_changed_since(f->st, g2, T0));
	/* More changes than the log holds: answers may only grow more careful. */
	for (i = 0; i < 1100; i++)
		put(f, &f->cpu, "svc", "cpu", NULL, T0 + 20 * HOUR + i);
	assert_false(store_changed_since(f->st, g2, T0 + 19 * HOUR));
	assert_true(store_changed_since(f->st, g2, T0 + 20 * HOUR));
	assert_true(store_changed_since(f->st, g0, T0 + 6 * HOUR));
	/* Retention removes the past: everything before it may have changed. */
	g2 = store_generation(f->st);
	assert_int_equal(store_expire(f->st, T0 + 6 * HOUR, NULL), 0);
	assert_true(store_changed_since(f->st, g2, T0 - HOUR));
}

/* A series retention empties stops counting at once and is removed at the next open. */
static void
test_empty_series_removed(void **state)
{
	struct fixture *f = *state;
	const struct series **all;
	struct store_ref a, b, c;
	struct store_input in = { .service = "svc", .type = "cpu",
	    .created_at = T0 + 4 * 24 * HOUR, .source = "ingest" };
	struct labelset ls = { .n = 0 };
	struct buf err = { 0 };
	size_t n;

	uint64_t days = 1;
	int i;

	a = put(f, &f->cpu, "svc", "cpu", "pod=a", T0);
	b = put(f, &f->cpu, "svc", "cpu", "pod=b", T0 + 5 * 24 * HOUR);
	store_set_max_series(f->st, 2);
	/* Windows built first, so that none is made after the cut. */
	for (i = 0; i < 10 && days > 0; i++)
		assert_int_equal(store_compact(f->st, &days), 0);
	/* Past the cut by days: no window of pod=a overlaps what is kept. */
	assert_int_equal(store_expire(f->st, T0 + 3 * 24 * HOUR, NULL), 0);
	/* pod=a holds nothing now: a third label set fits under a limit of 2. */
	assert_int_equal(labels_parse("pod=c", &ls, NULL), 0);
	in.labels = &ls;
	assert_int_equal(store_put(f->st, &in, f->cpu.data, f->cpu.len, &c, &err), 0);
	labels_clear(&ls);
	buf_free(&err);
	reopen(f);
	assert_int_equal(store_series(f->st, &all, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(all[0]->labels, "pod=b");
	assert_string_equal(all[1]->labels, "pod=c");
	free(all);
	assert_null(store_series_get(f->st, a.series));
	assert_non_null(store_series_get(f->st, b.series));
	/* The label set comes back under a new id: ids are never reused. */
	a = put(f, &f->cpu, "svc", "cpu", "pod=a", T0 + 4 * 24 * HOUR);
	assert_true(a.series > c.series);
	assert_int_equal(count(f, a.series, INT64_MIN, INT64_MAX), 1);
	assert_int_equal(count(f, b.series, INT64_MIN, INT64_MAX), 1);
}

/*
 * --max-services: a new service past the limit is refused with the reason;
 * existing services still take profiles, and a service retention emptied
 * stops counting.
 */
static void
test_max_services(void **state)
{
	struct fixture *f = *state;
	struct labelset ls = { .n = 0 };
	struct store_input in = { .service = "third", .type = "cpu", .labels = &ls,
	    .created_at = T0 + 4 * 24 * HOUR, .source = "ingest" };
	struct store_ref r;
	struct buf err = { 0 };
	uint64_t days = 1;
	int i;

	put(f, &f->cpu, "first", "cpu", "", T0);
	put(f, &f->cpu, "second", "cpu", "", T0 + 5 * 24 * HOUR);
	store_set_max_services(f->st, 2);
	assert_int_equal(store_put(f->st, &in, f->cpu.data, f->cpu.len, &r, &err), -EINVAL);
	assert_non_null(strstr(err.data, "--max-services"));
	buf_free(&err);
	/* An existing service, a new label set of it: both fine. */
	put(f, &f->cpu, "second", "cpu", "pod=a", T0 + 5 * 24 * HOUR);
	for (i = 0; i < 10 && days > 0; i++)
		assert_int_equal(store_compact(f->st, &days), 0);
	assert_int_equal(store_expire(f->st, T0 + 3 * 24 * HOUR, NULL), 0);
	/* "first" holds nothing now: a third service fits. */
	assert_int_equal(store_put(f->st, &in, f->cpu.data, f->cpu.len, &r, &err), 0);
	buf_free(&err);
}

static void
test_same_timestamp_all_kept(void **state)
{
	struct fixture *f = *state;
	struct store_ref r[5];
	struct scan s = { .n = 0 };
	size_t i;

	for (i = 0; i < 5; i++)
		r[i] = put(f, &f->cpu, "svc", "cpu", NULL, T0 + 42);
	for (i = 1; i < 5; i++)
		assert_true(r[i].id != r[i - 1].id);
	assert_int_equal(store_scan(f->st, r[0].series, T0, T0 + HOUR, true, scan_cb, &s), 0);
	assert_int_equal(s.n, 5);
	assert_true(s.had_data);
	/* Same time: in id order. */
	for (i = 0; i < 5; i++) {
		assert_true(s.refs[i].id == r[i].id);
		assert_true(s.refs[i].time == T0 + 42);
	}
}

static void
test_scan_order_and_bounds(void **state)
{
	struct fixture *f = *state;
	static const int64_t times[] = { 5, -3, 100, 0, 7, 6, 99, 1 };
	struct scan s = { .n = 0 };
	uint64_t sid, other;
	size_t i;

	for (i = 0; i < 8; i++)
		sid = put(f, &f->cpu, "svc", "cpu", "a=1", T0 + times[i] * NS).series;
	/* Another series in between must not show up. */
	other = put(f, &f->cpu, "svc", "cpu", "a=2", T0 + 5 * NS).series;
	put(f, &f->cpu, "svd", "cpu", "a=1", T0 + 5 * NS);
	assert_int_equal(store_scan(f->st, sid, INT64_MIN, INT64_MAX, false, scan_cb, &s), 0);
	assert_int_equal(s.n, 8);
	assert_false(s.had_data);
	for (i = 1; i < 8; i++)
		assert_true(s.refs[i - 1].time <= s.refs[i].time);
	assert_true(s.refs[0].time == T0 - 3 * NS);
	assert_true(s.refs[7].time == T0 + 100 * NS);
	/* from <= t < to */
	assert_int_equal(count(f, sid, T0, T0 + 7 * NS), 4);		/* 0 1 5 6 */
	assert_int_equal(count(f, sid, T0 + 5 * NS, T0 + 5 * NS + 1), 1);
	assert_int_equal(count(f, sid, T0 + 7 * NS, T0 + 7 * NS), 0);	/* empty range */
	assert_int_equal(count(f, sid, T0 + 8 * NS, T0 + 7 * NS), 0);	/* reversed */
	assert_int_equal(count(f, sid, T0 - 3 * NS, T0 - 3 * NS + 1), 1);
	assert_int_equal(count(f, sid, T0 + 101 * NS, INT64_MAX), 0);
	assert_int_equal(count(f, other, INT64_MIN, INT64_MAX), 1);
	assert_int_equal(count(f, 9999, INT64_MIN, INT64_MAX), 0);
	/* A nonzero return stops the scan and is returned. */
	s.n = 0;
	s.stop_after = 3;
	assert_int_equal(store_scan(f->st, sid, INT64_MIN, INT64_MAX, false, scan_cb, &s), 99);
	assert_int_equal(s.n, 3);
}

static void
test_hours(void **state)
{
	struct fixture *f = *state;
	int64_t *h = NULL;
	size_t n = 0;
	uint64_t sid;

	sid = put(f, &f->cpu, "svc", "cpu", NULL, T0 + 10 * HOUR + 5).series;
	put(f, &f->cpu, "svc", "cpu", NULL, T0 + 10 * HOUR + 59 * 60 * NS);
	put(f, &f->cpu, "svc", "cpu", NULL, T0 + 12 * HOUR);
	put(f, &f->cpu, "svc", "cpu", NULL, -1);		/* 1969-12-31T23:59:59.999 */
	put(f, &f->cpu, "other", "cpu", NULL, T0 + 11 * HOUR);
	assert_int_equal(store_hours(f->st, sid, &h, &n), 0);
	assert_int_equal(n, 3);
	assert_true(h[0] == -1);			/* floor, not truncation */
	assert_true(h[1] == T0 / HOUR + 10);
	assert_true(h[2] == T0 / HOUR + 12);
	free(h);
}

static void
test_reopen_keeps_everything(void **state)
{
	struct fixture *f = *state;
	struct store_ref a, b, c, g;
	const struct series **all;
	struct buf out = { 0 };
	size_t n;

	a = put(f, &f->cpu, "svc", "cpu", "k=v", T0);
	b = put(f, &f->heap, "svc", "heap", NULL, T0 + NS);
	reopen(f);
	assert_int_equal(store_series(f->st, &all, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(all[0]->type, "cpu");
	assert_string_equal(all[0]->labels, "k=v");
	assert_int_equal(all[0]->ls.n, 1);
	free(all);
	assert_int_equal(store_get(f->st, a.id, &g, &out), 0);
	assert_true(g.time == T0 && g.series == a.series);
	assert_int_equal(store_get(f->st, b.id, &g, NULL), 0);
	assert_int_equal(count(f, a.series, INT64_MIN, INT64_MAX), 1);
	/* New ids and series do not collide with the old ones. */
	c = put(f, &f->cpu, "svc", "cpu", "k=w", T0);
	assert_true(c.id > b.id);
	assert_true(c.series != a.series && c.series != b.series);
	assert_true(put(f, &f->cpu, "svc", "cpu", "k=v", T0).series == a.series);
	reopen(f);
	assert_int_equal(count(f, a.series, INT64_MIN, INT64_MAX), 2);
	assert_int_equal(count(f, c.series, INT64_MIN, INT64_MAX), 1);
	buf_free(&out);
}

static void
expect_refused(struct fixture *f, const void *data, size_t len, const char *svc,
    const char *type, const char *why)
{
	struct store_input in = { .service = svc, .type = type, .created_at = T0 };
	struct store_stats before, after;
	const struct series **all;
	struct store_ref ref;
	struct buf err = { 0 };
	size_t nbefore, n;
	int rc;

	store_get_stats(f->st, &before);
	assert_int_equal(store_series(f->st, &all, &nbefore), 0);
	free(all);
	rc = store_put(f->st, &in, data, len, &ref, &err);
	if (rc != -EINVAL && rc != -EFBIG)
		fail_msg("put of bad input (%s): rc %d", why, rc);
	if (err.data == NULL || strstr(err.data, why) == NULL)
		fail_msg("reason \"%s\" lacks \"%s\"", err.data ? err.data : "", why);
	store_get_stats(f->st, &after);
	assert_true(after.profiles == before.profiles);
	assert_true(after.rejected == before.rejected + 1);
	assert_int_equal(store_series(f->st, &all, &n), 0);
	assert_int_equal(n, nbefore);
	free(all);
	buf_free(&err);
}

static void
test_bad_input_refused(void **state)
{
	struct fixture *f = *state;
	struct store_ref good;
	unsigned char junk[1000];
	struct buf tmp = { 0 };
	size_t i;
	uint64_t gen;

	good = put(f, &f->cpu, "svc", "cpu", NULL, T0);
	gen = store_generation(f->st);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	expect_refused(f, junk, sizeof(junk), "svc", "cpu", "not a pprof profile");
	expect_refused(f, "", 0, "svc", "cpu", "empty");
	if ((unsigned char)f->cpu.data[0] == 0x1f)
		expect_refused(f, f->cpu.data, f->cpu.len / 2, "svc", "cpu", "truncated");
	/* A profile with an out-of-range string index. */
	{
		struct profile *p = tp_new("cpu", "ns", 1, "cpu/ns");
		uint32_t fn = tp_func(p, "f", "", 0);

		tp_sample(p, (int64_t[]){ 1 }, (int)tp_loc(p, 0, 1, (int)fn, -1), -1, NULL);
		p->functions[0].filename = 500;
		assert_int_equal(profile_encode(p, true, &tmp), 0);
		expect_refused(f, tmp.data, tmp.len, "svc", "cpu", "string index 500");
		profile_free(p);
	}
	/* Valid profiles with bad names. */
	expect_refused(f, f->cpu.data, f->cpu.len, "", "cpu", "service");
	expect_refused(f, f->cpu.data, f->cpu.len, "ingest", "cpu", "reserved");
	expect_refused(f, f->cpu.data, f->cpu.len, ".hidden", "cpu", "reserved");
	expect_refused(f, f->cpu.data, f->cpu.len, "a/b", "cpu", "'/'");
	expect_refused(f, f->cpu.data, f->cpu.len, "a\nb", "cpu", "control");
	expect_refused(f, f->cpu.data, f->cpu.len, "svc", "CPU", "lower-case");
	expect_refused(f, f->cpu.data, f->cpu.len, "svc", "a/b", "lower-case");
	expect_refused(f, f->cpu.data, f->cpu.len, "svc", "", "1 to");
	/* A profile without sample types. */
	{
		struct profile *p = tp_new("cpu", "ns", 1, "cpu/ns");

		p->nsample_types = 0;
		buf_reset(&tmp);
		assert_int_equal(profile_encode(p, false, &tmp), 0);
		expect_refused(f, tmp.data, tmp.len, "svc", "cpu", "no sample types");
		profile_free(p);
	}
	/* Nothing changed. */
	assert_true(store_generation(f->st) == gen);
	assert_int_equal(count(f, good.series, INT64_MIN, INT64_MAX), 1);
	buf_free(&tmp);
}

/* A profile with these sample types and nothing else, built as the sampler builds its own. */
static struct profile *
typed_profile(const char *const *types, const char *const *units, size_t n,
    const char *period_type)
{
	struct merge_header h = { .types = types, .units = units, .ntypes = n,
	    .period_type = period_type, .period_unit = units[0], .period = 1 };
	struct merge *m = merge_create();
	struct profile *p = NULL;

	assert_non_null(m);
	assert_int_equal(merge_begin(m, &h), 0);
	assert_int_equal(merge_finish(m, false, &p), 0);
	merge_free(m);
	return p;
}

#define NS_PER_DAY	(INT64_C(86400) * 1000000000)

/*
 * A CPU profile of n spans (ids 1..n, one sample of 10 ms each, over 3
 * stacks), plus one sample whose span_id is not hex and one untagged.
 */
static struct profile *
span_profile_ids(size_t n, uint64_t mul)
{
	static const char *const types[] = { "samples", "cpu" };
	static const char *const units[] = { "count", "nanoseconds" };
	struct merge_header h = { .types = types, .units = units, .ntypes = 2,
	    .period_type = "cpu", .period_unit = "nanoseconds", .period = 10000000 };
	struct merge *m = merge_create();
	struct profile *p = NULL;
	uint32_t locs[3];
	int64_t v[2] = { 1, 10000000 };
	size_t i;
	char id[32];

	assert_non_null(m);
	assert_int_equal(merge_begin(m, &h), 0);
	for (i = 0; i < 3; i++) {
		struct pf_function fn = { 0 };
		struct pf_line ln = { 0 };
		char name[32];
		int64_t fi;

		snprintf(name, sizeof(name), "main.work%zu", i);
		fn.name = fn.system_name = merge_string(m, name);
		assert_true((fi = merge_function(m, &fn)) >= 0);
		ln.function = (uint32_t)fi;
		locs[i] = (uint32_t)merge_location(m, 0, 0, 0x1000 + i, false, &ln, 1);
	}
	for (i = 0; i <= n + 1; i++) {
		struct pf_label l[2];
		size_t nl = 0;

		memset(l, 0, sizeof(l));
		if (i < n)
			snprintf(id, sizeof(id), "%016" PRIx64, (uint64_t)(i + 1) * mul);
		if (i <= n) {
			l[0].key = merge_string(m, "span_id");
			l[0].str = merge_string(m, i < n ? id : "not-hex!");
			l[1].key = merge_string(m, "span_name");
			l[1].str = merge_string(m, "GET /x");
			nl = 2;
		}
		assert_int_equal(merge_sample(m, locs, 1 + i % 3, l, nl, v), 0);
	}
	assert_int_equal(merge_finish(m, false, &p), 0);
	merge_free(m);
	return p;
}

static struct profile *
span_profile(size_t n)
{
	return span_profile_ids(n, 1);
}

/* cpu/nanoseconds of series (svc, cpu) over all time for these span ids. */
static int64_t
span_total(struct fixture *f, const char *svc, const uint64_t *ids, size_t n)
{
	struct span_sel sel = { .ids = ids, .nids = n };
	struct query q = { .service = svc, .type = "cpu", .from = STORE_TIME_MIN,
	    .to = INT64_MAX, .spans = &sel };
	struct query_result res;
	int64_t t;

	assert_int_equal(query_merge(f->st, &q, &res), 0);
	t = res.merged ? profile_total(res.merged, 1) : 0;
	query_result_free(&res);
	return t;
}

/*
 * Span ids per sample: found by id alone, never a series; past
 * SPAN_MAX_PER_PROFILE (65,536) spans the rest stay untagged; ids that are
 * not hex tag nothing; deletion takes them along.
 */
static void
test_spans(void **state)
{
	struct fixture *f = *state;
	struct store_input in = { .service = "spans", .type = "cpu", .source = "ingest",
	    .created_at = STORE_TIME_MIN + 1000 };
	const struct series **all;
	struct profile *p = span_profile(70000);
	struct store_ref ref;
	struct buf err = { 0 };
	uint64_t ids[3] = { 1, 65536, 65537 }, nser = 0, nprof = 0;
	struct query dq = { .service = "spans" };
	size_t n, i, spans = 0;

	assert_int_equal(store_put_profile(f->st, &in, p, &ref, &err), 0);
	assert_int_equal(span_total(f, "spans", &ids[0], 1), 10000000);
	assert_int_equal(span_total(f, "spans", &ids[1], 1), 10000000);
	/* ids sort; the 65,537th distinct one is past the cap: cut, untagged */
	assert_int_equal(span_total(f, "spans", &ids[2], 1), 0);
	assert_int_equal(span_total(f, "spans", ids, 3), 20000000);
	/* the plain merge keeps every sample: 70,000 spans, a bad id, one untagged */
	assert_int_equal(span_total(f, "spans", NULL, 0), 0);
	{
		struct query q = { .service = "spans", .type = "cpu", .from = STORE_TIME_MIN,
		    .to = INT64_MAX };
		struct query_result res;

		assert_int_equal(query_merge(f->st, &q, &res), 0);
		assert_non_null(res.merged);
		assert_int_equal(profile_total(res.merged, 1), (int64_t)70002 * 10000000);
		query_result_free(&res);
	}
	assert_int_equal(store_series(f->st, &all, &n), 0);
	for (i = 0; i < n; i++)
		if (strstr(all[i]->labels, "span") != NULL)
			spans++;
	free(all);
	assert_int_equal(spans, 0);
	/* A span id as a series label is refused with the reason. */
	{
		struct labelset ls = { .n = 0 };

		assert_int_equal(labels_parse("span_id=0a", &ls, NULL), 0);
		in.labels = &ls;
		buf_reset(&err);
		assert_int_equal(store_put_profile(f->st, &in, p, NULL, &err), -EINVAL);
		assert_non_null(strstr(err.data, "not a series label"));
		labels_clear(&ls);
		in.labels = NULL;
	}
	/* Deleted with its profile; gone after a reopen too. */
	assert_int_equal(store_delete_series(f->st, &dq, &nser, &nprof, NULL), 0);
	assert_int_equal(nprof, 1);
	reopen(f);
	assert_int_equal(span_total(f, "spans", ids, 2), 0);
	/* Retention takes span records and filters with their profiles. */
	assert_int_equal(store_put_profile(f->st, &in, p, &ref, &err), 0);
	assert_int_equal(span_total(f, "spans", ids, 1), 10000000);
	assert_int_equal(store_expire(f->st, in.created_at + NS_PER_DAY, NULL), 0);
	assert_int_equal(span_total(f, "spans", ids, 1), 0);
	profile_free(p);
	buf_free(&err);
}

/*
 * Ids spread over every top byte (a record of many spans keeps their top
 * byte as a count per value, span.c): each found, a neighbour absent; the
 * nanoseconds (stored as multiples of the period) come back whole; the
 * profile read back whole has each sample's span_id and span_name again.
 */
static void
test_spans_spread(void **state)
{
	struct fixture *f = *state;
	struct store_input in = { .service = "spread", .type = "cpu", .source = "ingest",
	    .created_at = STORE_TIME_MIN + 1000 };
	const uint64_t mul = UINT64_C(0x9e3779b97f4a7c15);
	struct profile *p = span_profile_ids(3000, mul);
	struct buf err = { 0 };
	struct store_ref ref;
	uint64_t ids[4];
	size_t i;

	assert_int_equal(store_put_profile(f->st, &in, p, &ref, &err), 0);
	for (i = 0; i < 3000; i += 97) {
		ids[0] = (uint64_t)(i + 1) * mul;
		assert_int_equal(span_total(f, "spread", ids, 1), 10000000);
		ids[0] ^= 1;	/* same top byte, not stored */
		assert_int_equal(span_total(f, "spread", ids, 1), 0);
	}
	ids[0] = mul;
	ids[1] = 3000 * mul;
	ids[2] = 1;
	ids[3] = UINT64_MAX;
	assert_int_equal(span_total(f, "spread", ids, 4), 20000000);
	reopen(f);
	assert_int_equal(span_total(f, "spread", ids, 4), 20000000);
	/* Read back whole: each sample with the span it was stored with. */
	{
		struct store_ref g;
		struct buf out = { 0 };
		struct profile *back = NULL;
		uint64_t inv = mul, id;
		size_t tagged = 0, untagged = 0, j;

		for (i = 0; i < 5; i++)	/* mul's inverse mod 2^64 (Newton) */
			inv *= 2 - mul * inv;
		assert_int_equal(store_get(f->st, ref.id, &g, &out), 0);
		assert_int_equal(profile_decode(out.data, out.len, &back, NULL), 0);
		assert_int_equal(back->nsamples, 3002);
		for (i = 0; i < back->nsamples; i++) {
			const struct pf_sample *s = &back->samples[i];
			const char *sid = NULL, *name = NULL;

			for (j = 0; j < s->nlabels; j++) {
				const char *k = profile_str(back, s->labels[j].key);

				if (strcmp(k, "span_id") == 0)
					sid = profile_str(back, s->labels[j].str);
				else if (strcmp(k, "span_name") == 0)
					name = profile_str(back, s->labels[j].str);
			}
			assert_int_equal(s->values[1], 10000000);
			if (sid == NULL) {
				assert_null(name);	/* the id refused, the untagged one */
				untagged++;
				continue;
			}
			assert_int_equal(strlen(sid), 16);
			id = strtoull(sid, NULL, 16) * inv;	/* i + 1 of span_profile_ids() */
			assert_true(id >= 1 && id <= 3000);
			assert_int_equal(s->nlocs, 1 + (id - 1) % 3);
			assert_non_null(name);
			assert_string_equal(name, "GET /x");
			tagged++;
		}
		assert_int_equal(tagged, 3000);
		assert_int_equal(untagged, 2);
		profile_free(back);
		buf_free(&out);
	}
	profile_free(p);
	buf_free(&err);
}

/* Types as users name them, for the sample types other runtimes use. */
static void
test_type_names(void **state)
{
	static const char *const node_heap[] = { "objects", "space" };
	static const char *const node_heap_u[] = { "count", "bytes" };
	static const char *const node_wall[] = { "samples", "wall" };
	static const char *const node_wall_u[] = { "count", "microseconds" };
	static const char *const java_wall[] = { "wall" };
	static const char *const java_wall_u[] = { "nanoseconds" };
	struct profile *p;

	(void)state;
	p = typed_profile(node_heap, node_heap_u, 2, "space");
	assert_string_equal(store_infer_type(p), "heap");
	profile_free(p);
	p = typed_profile(node_wall, node_wall_u, 2, "wall");
	assert_string_equal(store_infer_type(p), "wall");
	profile_free(p);
	p = typed_profile(java_wall, java_wall_u, 1, "wall");
	assert_string_equal(store_infer_type(p), "wall");
	profile_free(p);
}

static void
test_type_inference(void **state)
{
	struct fixture *f = *state;
	static const struct { const char *file, *type; } cases[] = {
		{ "google-pprof/sample.cpu", "cpu" },
		{ "google-pprof/go.nomappings.crash", "heap" },	/* default: inuse_space */
		{ "pyroscope/heap.pb", "heap" },
		{ "parca/fgprof.pb.gz", "wall" },
		{ "pprof-rs/profile-cpu-example.pb", "cpu" },
		{ "pyroscope/nodejs-heap.pb.gz", "heap" },
		{ "pyroscope/profile_java", "cpu" },
		{ "parca/node-profile.pb.gz", "cpu" },
	};
	struct buf b = { 0 };
	size_t i;

	if (real_dir() == NULL)
		skip();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct profile *p = load_real(cases[i].file);
		struct store_ref r;

		assert_non_null(p);
		if (strcmp(store_infer_type(p), cases[i].type) != 0)
			fail_msg("%s: inferred %s, want %s", cases[i].file, store_infer_type(p),
			    cases[i].type);
		assert_int_equal(read_real(cases[i].file, &b), 0);
		r = put(f, &b, "svc", "auto", NULL, T0);
		assert_string_equal(r.type, cases[i].type);
		r = put(f, &b, "svc2", NULL, NULL, T0);
		assert_string_equal(r.type, cases[i].type);
		profile_free(p);
	}
	buf_free(&b);
}

/* Every real file is stored (type inferred) except the one pprof refuses. */
static void
test_real_files_stored(void **state)
{
	struct fixture *f = *state;
	struct store_stats st;
	struct buf b = { 0 }, err = { 0 };
	char **files;
	size_t n, i, stored = 0;

	if (real_dir() == NULL)
		skip();
	files = real_files(&n);
	for (i = 0; i < n; i++) {
		struct store_input in = { .service = "real", .type = "auto", .created_at = T0 };
		struct store_ref r;
		int rc;

		assert_int_equal(read_real(files[i], &b), 0);
		buf_reset(&err);
		rc = store_put(f->st, &in, b.data, b.len, &r, &err);
		if (strstr(files[i], "dotnet-pprof-3")) {
			assert_int_equal(rc, -EINVAL);
			assert_non_null(strstr(err.data, "id 0"));
		} else if (rc != 0)
			fail_msg("%s: %s", files[i], err.data);
		else
			stored++;
	}
	store_get_stats(f->st, &st);
	assert_true(st.profiles == stored);
	assert_true(st.rejected == 1);
	assert_int_equal(stored, n - 1);
	free_files(files);
	buf_free(&b);
	buf_free(&err);
}

/* The profile's own time when the client gives none, else the time of receipt. */
static void
test_time_source(void **state)
{
	struct fixture *f = *state;
	struct profile *p = tp_new("cpu", "ns", 1, "cpu/ns");
	uint32_t fn = tp_func(p, "f", "", 0);
	struct store_input in = { .service = "svc", .type = "cpu" };
	struct store_ref r;
	struct buf b = { 0 };
	int64_t now = (int64_t)time(NULL) * NS;

	tp_sample(p, (int64_t[]){ 1 }, (int)tp_loc(p, 0, 1, (int)fn, -1), -1, NULL);
	p->time_nanos = T0 + 77;
	assert_int_equal(profile_encode(p, true, &b), 0);
	assert_int_equal(store_put(f->st, &in, b.data, b.len, &r, NULL), 0);
	assert_true(r.time == T0 + 77);
	in.created_at = T0 + 5;
	assert_int_equal(store_put(f->st, &in, b.data, b.len, &r, NULL), 0);
	assert_true(r.time == T0 + 5);
	in.created_at = 0;
	p->time_nanos = 0;
	buf_reset(&b);
	assert_int_equal(profile_encode(p, false, &b), 0);
	assert_int_equal(store_put(f->st, &in, b.data, b.len, &r, NULL), 0);
	assert_true(r.time >= now - 60 * NS && r.time <= now + 60 * NS);
	/* store_put_profile takes a decoded profile. */
	assert_int_equal(store_put_profile(f->st, &in, p, &r, NULL), 0);
	assert_int_equal(store_get(f->st, r.id, &r, NULL), 0);
	profile_free(p);
	buf_free(&b);
}

static void
be64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* Whether the database holds key k with value v (v NULL: any value). */
static bool
db_has(rocksdb_t *db, const void *k, size_t kl, const void *v, size_t vl)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *err = NULL, *got;
	size_t gl;
	bool ok;

	got = rocksdb_get(db, ro, k, kl, &gl, &err);
	ok = got != NULL && err == NULL && (v == NULL || (gl == vl && memcmp(got, v, vl) == 0));
	free(got);
	free(err);
	rocksdb_readoptions_destroy(ro);
	return ok;
}

static void
db_put(rocksdb_t *db, const void *k, size_t kl, const void *v, size_t vl)
{
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	char *err = NULL;

	rocksdb_put(db, wo, k, kl, v, vl, &err);
	assert_null(err);
	rocksdb_writeoptions_destroy(wo);
}

/*
 * The sizes of profiles/ files remembered by an earlier build (tag
 * "pprof-v1", before span labels came back with a profile read whole) still
 * hold for profiles without spans; a profile with spans is made again.
 */
static void
test_sizes_v1(void **state)
{
	struct fixture *f = *state;
	struct store_input in = { .service = "sz", .type = "cpu", .source = "ingest",
	    .created_at = T0 + 7 };
	struct store_ref plain = put(f, &f->cpu, "sz", "cpu", "a=1", T0 + 5), spans, g;
	struct profile *p = span_profile(3);
	struct buf err = { 0 }, out = { 0 };
	uint64_t size, lens[2], tag;
	const struct store_ref *refs[2] = { &plain, &spans };
	rocksdb_options_t *opts;
	rocksdb_readoptions_t *ro;
	rocksdb_t *db;
	char what[96], *dberr = NULL;
	size_t i;

	assert_int_equal(store_put_profile(f->st, &in, p, &spans, &err), 0);
	for (i = 0; i < 2; i++) {
		buf_reset(&out);
		assert_int_equal(store_get(f->st, refs[i]->id, &g, &out), 0);
		lens[i] = out.len;
		assert_int_equal(store_get_size(f->st, refs[i]->id, &g, &size), 0);
		assert_int_equal(size, lens[i]);
	}
	/* The 'I' records as the earlier build tagged them. */
	snprintf(what, sizeof(what), "pprof-v1 zlib %s", zlibVersion());
	tag = (pfhash64(what, strlen(what)) >> 56 | 1) << 56;
	store_close(f->st);
	f->st = NULL;
	opts = rocksdb_options_create();
	ro = rocksdb_readoptions_create();
	db = rocksdb_open(opts, f->dir, &dberr);
	assert_null(dberr);
	for (i = 0; i < 2; i++) {
		unsigned char ik[9];
		size_t vl;
		char *v;

		ik[0] = 'I';
		be64(ik + 1, refs[i]->id);
		v = rocksdb_get(db, ro, (char *)ik, sizeof(ik), &vl, &dberr);
		assert_null(dberr);
		assert_non_null(v);
		assert_int_equal(vl, 24);
		be64((unsigned char *)v + 16, tag | lens[i]);
		db_put(db, ik, sizeof(ik), v, vl);
		free(v);
	}
	rocksdb_close(db);
	rocksdb_readoptions_destroy(ro);
	rocksdb_options_destroy(opts);
	reopen(f);
	assert_int_equal(store_get_size(f->st, plain.id, &g, &size), 0);
	assert_int_equal(size, lens[0]);
	assert_int_equal(store_get_size(f->st, spans.id, &g, &size), -ENODATA);
	profile_free(p);
	buf_free(&err);
	buf_free(&out);
}

/*
 * The key layout written down in store.c, read with RocksDB directly; then
 * stored values that no longer decode are skipped with a reason by queries.
 */
static void
test_key_layout(void **state)
{
	struct fixture *f = *state;
	struct store_ref r = put(f, &f->cpu, "svc", "cpu", "a=1", T0 + 5);
	unsigned char sk[9], pk[25], ik[9], iv[16], hk[17], nv[8];
	const char nk[] = "Nsvc\0cpu\0a=1", sv[] = "svc\0cpu\0a=1";
	uint64_t tenc = (uint64_t)(T0 + 5) ^ (UINT64_C(1) << 63);
	rocksdb_options_t *opts;
	rocksdb_t *db;
	char *err = NULL;
	struct query q = { .service = "svc", .from = T0, .to = T0 + HOUR };
	struct query_result res;
	struct store_ref r2;

	store_close(f->st);
	f->st = NULL;
	opts = rocksdb_options_create();
	db = rocksdb_open(opts, f->dir, &err);
	assert_null(err);
	sk[0] = 'S';
	be64(sk + 1, r.series);
	assert_true(db_has(db, sk, sizeof(sk), sv, sizeof(sv) - 1));
	be64(nv, r.series);
	assert_true(db_has(db, nk, sizeof(nk) - 1, nv, 8));
	pk[0] = 'P';
	be64(pk + 1, r.series);
	be64(pk + 9, tenc);
	be64(pk + 17, r.id);
	assert_true(db_has(db, pk, sizeof(pk), NULL, 0));
	ik[0] = 'I';
	be64(ik + 1, r.id);
	be64(iv, r.series);
	be64(iv + 8, tenc);
	assert_true(db_has(db, ik, sizeof(ik), iv, sizeof(iv)));
	hk[0] = 'H';
	be64(hk + 1, r.series);
	be64(hk + 9, (uint64_t)((T0 + 5) / HOUR) ^ (UINT64_C(1) << 63));
	assert_true(db_has(db, hk, sizeof(hk), "", 0));
	/* T: totals, one sample type per column, then the signature hash. */
	pk[0] = 'T';
	assert_true(db_has(db, pk, sizeof(pk), NULL, 0));
	/*
	 * A stored value that does not decode (listed by its T record), and
	 * one without a T record (not listed).
	 */
	pk[0] = 'P';
	be64(pk + 9, tenc + 1);
	be64(pk + 17, 999);
	db_put(db, pk, sizeof(pk), "\002garbage", 8);
	pk[0] = 'T';
	db_put(db, pk, sizeof(pk), "\001\002\0\0\0\0\0\0\0\0", 10);
	pk[0] = 'P';
	be64(ik + 1, 999);
	be64(iv + 8, tenc + 1);
	db_put(db, ik, sizeof(ik), iv, sizeof(iv));
	be64(pk + 9, tenc + 2);
	be64(pk + 17, 1000);
	db_put(db, pk, sizeof(pk), "\002future", 7);
	rocksdb_close(db);
	rocksdb_options_destroy(opts);
	reopen(f);
	assert_int_equal(query_merge(f->st, &q, &res), 0);
	assert_int_equal(res.nrefs, 2);		/* the one without T is not listed */
	assert_int_equal(res.nmerged, 1);
	assert_int_equal(res.nskipped, 1);
	assert_true(res.skipped[0].id == 999);
	assert_non_null(strstr(res.skipped[0].reason, "cannot be decoded"));
	query_result_free(&res);
	/* New ids follow the largest stored one. */
	r2 = put(f, &f->cpu, "svc", "cpu", "a=1", T0);
	assert_true(r2.id > 999);
}

struct putter {
	struct fixture	*f;
	int		 n;
	char		 labels[16];
	uint64_t	 ids[16];
	int		 failed;
};

static void *
putter_run(void *arg)
{
	struct putter *pt = arg;
	struct labelset ls;
	int i;

	if (labels_parse(pt->labels, &ls, NULL) < 0)
		return NULL;
	for (i = 0; i < pt->n; i++) {
		struct store_input in = { .service = "conc", .type = "cpu", .labels = &ls,
		    .created_at = T0 + i };
		struct store_ref r;

		if (store_put(pt->f->st, &in, pt->f->cpu.data, pt->f->cpu.len, &r, NULL) != 0)
			pt->failed++;
		else
			pt->ids[i] = r.id;
	}
	labels_clear(&ls);
	return NULL;
}

/* Puts from several threads: new series created once, every id distinct. */
static void
test_concurrent_puts(void **state)
{
	struct fixture *f = *state;
	struct putter pt[4];
	pthread_t th[4];
	const struct series **all;
	size_t n, i, j, k;

	for (i = 0; i < 4; i++) {
		memset(&pt[i], 0, sizeof(pt[i]));
		pt[i].f = f;
		pt[i].n = 8;
		snprintf(pt[i].labels, sizeof(pt[i].labels), "t=%zu", i % 2);
		assert_int_equal(pthread_create(&th[i], NULL, putter_run, &pt[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(store_series(f->st, &all, &n), 0);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_int_equal(count(f, all[i]->id, INT64_MIN, INT64_MAX), 16);
	free(all);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pt[i].failed, 0);
		for (j = 0; j < 8; j++)
			for (k = 0; k < 4 * 8; k++)
				if (k != i * 8 + j)
					assert_true(pt[k / 8].ids[k % 8] != pt[i].ids[j]);
	}
}

static void
test_ids_and_names(void **state)
{
	char s[17];
	uint64_t id;

	(void)state;
	store_id_format(0x1234abcdULL, s);
	assert_string_equal(s, "000000001234abcd");
	assert_int_equal(store_id_parse(s, &id), 0);
	assert_true(id == 0x1234abcdULL);
	store_id_format(UINT64_MAX, s);
	assert_string_equal(s, "ffffffffffffffff");
	assert_int_equal(store_id_parse(s, &id), 0);
	assert_true(id == UINT64_MAX);
	assert_int_equal(store_id_parse("000000001234ABCD", &id), -EINVAL);
	assert_int_equal(store_id_parse("1234abcd", &id), -EINVAL);
	assert_int_equal(store_id_parse("000000001234abcd0", &id), -EINVAL);
	assert_int_equal(store_id_parse("", &id), -EINVAL);
	assert_int_equal(store_id_parse("00000000123 abcd", &id), -EINVAL);
	assert_int_equal(store_check_type("cpu", NULL), 0);
	assert_int_equal(store_check_type("go.heap_v2-x", NULL), 0);
	assert_int_equal(store_check_type("auto", NULL), -EINVAL);
	assert_int_equal(store_check_type(".x", NULL), -EINVAL);
	assert_int_equal(store_check_type("Cpu", NULL), -EINVAL);
	assert_int_equal(store_check_service("checkout", NULL), 0);
	assert_int_equal(store_check_service("README.txt", NULL), -EINVAL);
	assert_int_equal(store_check_service("..", NULL), -EINVAL);
}

/* --- queries -------------------------------------------------------------- */

static void
test_query_merge(void **state)
{
	struct fixture *f = *state;
	struct query q = { .service = "svc", .type = "cpu", .from = T0, .to = T0 + HOUR };
	struct query_result res;
	struct profile *one = NULL;
	struct store_ref odd;
	struct buf wall = { 0 };
	size_t t;

	assert_int_equal(profile_decode(f->cpu.data, f->cpu.len, &one, NULL), 0);
	put(f, &f->cpu, "svc", "cpu", "pod=a", T0 + 1);
	put(f, &f->cpu, "svc", "cpu", "pod=b", T0 + 2);
	put(f, &f->cpu, "svc", "cpu", "pod=a", T0 + 3);
	/*
	 * An incompatible profile stored under the same type: a wall-clock one
	 * fits cpu/ (a heap profile is refused there) but does not merge.
	 */
	fallback_profile(&wall, "wall/nanoseconds");
	odd = put(f, &wall, "svc", "cpu", "pod=a", T0 + 4);
	buf_free(&wall);
	put(f, &f->cpu, "svc", "cpu", "pod=a", T0 + 2 * HOUR);	/* outside */
	put(f, &f->cpu, "other", "cpu", "pod=a", T0 + 5);	/* other service */
	assert_int_equal(query_merge(f->st, &q, &res), 0);
	assert_int_equal(res.nrefs, 4);
	for (t = 1; t < res.nrefs; t++)
		assert_true(res.refs[t - 1].time <= res.refs[t].time);
	assert_int_equal(res.nseries, 2);
	assert_non_null(res.merged);
	assert_int_equal(res.nmerged, 3);
	assert_int_equal(res.nskipped, 1);
	assert_true(res.skipped[0].id == odd.id);
	assert_non_null(strstr(res.skipped[0].reason, "sample types"));
	for (t = 0; t < one->nsample_types; t++)
		assert_true(profile_total(res.merged, t) == 3 * profile_total(one, t));
	query_result_free(&res);
	/* A selector narrows the series. */
	{
		struct labelset sel;

		assert_int_equal(labels_parse("pod=b", &sel, NULL), 0);
		q.sel = &sel;
		assert_int_equal(query_merge(f->st, &q, &res), 0);
		assert_int_equal(res.nmerged, 1);
		assert_int_equal(res.nskipped, 0);
		assert_true(profile_total(res.merged, 0) == profile_total(one, 0));
		query_result_free(&res);
		labels_clear(&sel);
		q.sel = NULL;
	}
	/* query_list sees the same profiles without reading them. */
	assert_int_equal(query_list(f->st, &q, &res), 0);
	assert_int_equal(res.nrefs, 4);
	query_result_free(&res);
	q.limit = 2;
	assert_int_equal(query_list(f->st, &q, &res), 0);
	assert_int_equal(res.nrefs, 2);
	query_result_free(&res);
	/* An empty range: nothing merged, no error. */
	q.from = T0 - 2 * HOUR;
	q.to = T0 - HOUR;
	assert_int_equal(query_merge(f->st, &q, &res), 0);
	assert_null(res.merged);
	assert_int_equal(res.nrefs, 0);
	query_result_free(&res);
	assert_int_equal(query_list(f->st, &q, &res), 0);
	assert_int_equal(res.nrefs, 0);
	query_result_free(&res);
	profile_free(one);
}

/*
 * Gauges are averaged over the snapshots of a range, counters summed; a Go
 * heap profile without a duration is a snapshot of totals, whose counters
 * count their increase within the series (the same one twice: once).
 */
static void
test_query_gauges(void **state)
{
	struct fixture *f = *state;
	struct query q = { .service = "svc", .type = "heap", .from = INT64_MIN, .to = INT64_MAX };
	struct store_input in = { .service = "deltas", .type = "heap", .source = "ingest" };
	struct query_result res;
	struct profile *one = NULL;
	struct buf err = { 0 };
	size_t t, k;
	int64_t times;

	assert_int_equal(profile_decode(f->heap.data, f->heap.len, &one, NULL), 0);
	assert_true(profile_is_snapshot(one));
	put(f, &f->heap, "svc", "heap", NULL, T0);
	put(f, &f->heap, "svc", "heap", NULL, T0 + 10 * NS);
	/* The same profile with a duration is a delta: summed as it is. */
	one->duration_nanos = 10 * NS;
	for (k = 0; k < 2; k++) {
		in.created_at = T0 + (int64_t)k * 10 * NS;
		if (store_put_profile(f->st, &in, one, NULL, &err) != 0)
			fail_msg("store_put_profile: %s", err.data);
	}
	for (k = 0; k < 2; k++) {
		q.service = k == 0 ? "svc" : "deltas";
		times = k == 0 ? 1 : 2;
		assert_int_equal(query_merge(f->st, &q, &res), 0);
		assert_int_equal(res.nmerged, 2);
		for (t = 0; t < one->nsample_types; t++) {
			const char *ty = profile_str(one, one->sample_types[t].type);
			int64_t want = profile_type_is_gauge(ty) ? profile_total(one, t) :
			    times * profile_total(one, t);

			if (profile_total(res.merged, t) != want)
				fail_msg("%s %s: %lld, want %lld", q.service, ty,
				    (long long)profile_total(res.merged, t), (long long)want);
		}
		query_result_free(&res);
	}
	profile_free(one);
	buf_free(&err);
}

/*
 * A string longer than STR_MAX_STORED bytes (a 1 MiB function name, file
 * name, label value) is stored cut and marked, by store_put() and
 * store_put_profile() alike; the stored profile stays small.
 */
static void
test_long_strings_cut(void **state)
{
	struct fixture *f = *state;
	struct query q = { .service = "longnames", .type = "cpu", .from = INT64_MIN,
	    .to = INT64_MAX };
	struct store_input in = { .service = "longnames", .type = "cpu", .created_at = T0,
	    .source = "ingest" };
	const size_t mark = sizeof(STR_CUT_MARK) - 1;
	struct buf big = { 0 }, enc = { 0 }, err = { 0 };
	struct query_result res;
	struct profile *p;
	const char *name;
	size_t i, k;
	int pass;

	for (i = 0; i < (1u << 20) / 3; i++)
		buf_adds(&big, "\xe2\x82\xac");	/* never cut in the middle of one */
	p = tp_new("cpu", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	tp_sample(p, (int64_t[]){ 1, 10 }, (int)tp_loc(p, 0, 1, (int)tp_func(p, big.data,
	    big.data + 3, 1), -1), -1, "long", big.data + 6, NULL);
	assert_int_equal(profile_encode(p, true, &enc), 0);
	for (pass = 0; pass < 2; pass++) {
		if (pass == 0)
			assert_int_equal(store_put(f->st, &in, enc.data, enc.len, NULL, &err), 0);
		else
			assert_int_equal(store_put_profile(f->st, &in, p, NULL, &err), 0);
		assert_int_equal(query_merge(f->st, &q, &res), 0);
		assert_int_equal(res.nmerged, (size_t)pass + 1);
		assert_int_equal(res.merged->nfunctions, 1);
		for (i = 0; i < 2; i++) {
			name = profile_str(res.merged, i == 0 ? res.merged->functions[0].name :
			    res.merged->functions[0].filename);
			k = strlen(name);
			assert_true(k <= STR_MAX_STORED && k > STR_MAX_STORED - mark - 3);
			assert_string_equal(name + k - mark, STR_CUT_MARK);
			assert_memory_equal(name, big.data + 3 * i, k - mark);
			assert_true(utf8_valid(name, k));
		}
		name = profile_str(res.merged, res.merged->samples[0].labels[0].str);
		assert_true(strlen(name) <= STR_MAX_STORED);
		assert_string_equal(name + strlen(name) - mark, STR_CUT_MARK);
		buf_reset(&enc);
		assert_int_equal(profile_encode(res.merged, true, &enc), 0);
		print_message("stored merged profile with 1 MiB strings cut: %zu bytes gzipped\n",
		    enc.len);
		query_result_free(&res);
	}
	profile_free(p);
	buf_free(&big);
	buf_free(&enc);
	buf_free(&err);
}

/* A query selects series by service, type and label selector. */
static void
test_query_match(void **state)
{
	struct series s = { .service = "svc", .type = "cpu", .labels = "a=1,b=2" };
	struct query q = { 0 };
	struct labelset sel;

	(void)state;
	assert_int_equal(labels_parse("a=1,b=2", &s.ls, NULL), 0);
	assert_true(query_match(&q, &s));
	q.service = "svc";
	q.type = "cpu";
	assert_true(query_match(&q, &s));
	q.type = "heap";
	assert_false(query_match(&q, &s));
	q.type = "cpu";
	assert_int_equal(labels_parse("b=2", &sel, NULL), 0);
	q.sel = &sel;
	assert_true(query_match(&q, &s));
	labels_clear(&sel);
	assert_int_equal(labels_parse("b=3", &sel, NULL), 0);
	assert_false(query_match(&q, &s));
	labels_clear(&sel);
	labels_clear(&s.ls);
}

/* The cache another layer keeps in the store: by key, across a reopen, dropped whole past its cap. */
static void
test_store_cache(void **state)
{
	struct fixture *f = *state;
	char big[300], *v;
	size_t vl;
	struct store_kv kv[2] = {
		{ "k1", 2, "frames one", 10 },
		{ "k2", 2, "frames two", 10 },
	};

	assert_int_equal(store_cache_get(f->st, "k1", 2, &v, &vl), -ENOENT);
	assert_int_equal(store_cache_put(f->st, kv, 2), 0);
	assert_int_equal(store_cache_get(f->st, "k2", 2, &v, &vl), 0);
	assert_int_equal(vl, 10);
	assert_memory_equal(v, "frames two", 10);
	free(v);
	/* Keys of 1 to 256 bytes. */
	memset(big, 'x', sizeof(big));
	kv[0].key = big;
	kv[0].klen = sizeof(big);
	assert_int_equal(store_cache_put(f->st, kv, 1), -EINVAL);
	assert_int_equal(store_cache_get(f->st, big, sizeof(big), &v, &vl), -EINVAL);
	assert_int_equal(store_cache_get(f->st, "", 0, &v, &vl), -EINVAL);
	/* Kept across a reopen; the series do not see it. */
	reopen(f);
	{
		const struct series **ser;
		size_t n;

		assert_int_equal(store_series(f->st, &ser, &n), 0);
		assert_int_equal(n, 0);
		free(ser);
	}
	assert_int_equal(store_cache_get(f->st, "k1", 2, &v, &vl), 0);
	assert_memory_equal(v, "frames one", 10);
	free(v);
	/* Past the cap, all that was put before is dropped, the new kept. */
	store_set_cache_max(f->st, 30);	/* 24 bytes put, 14 more */
	kv[0].key = "k3";
	kv[0].klen = 2;
	kv[0].val = "frames three";
	kv[0].vlen = 12;
	assert_int_equal(store_cache_put(f->st, kv, 1), 0);
	assert_int_equal(store_cache_get(f->st, "k1", 2, &v, &vl), -ENOENT);
	assert_int_equal(store_cache_get(f->st, "k2", 2, &v, &vl), -ENOENT);
	assert_int_equal(store_cache_get(f->st, "k3", 2, &v, &vl), 0);
	free(v);
	/* More than the whole cap in one put: not kept, nothing dropped. */
	kv[0].key = "k4";
	kv[0].val = big;
	kv[0].vlen = sizeof(big);
	assert_int_equal(store_cache_put(f->st, kv, 1), 0);
	assert_int_equal(store_cache_get(f->st, "k4", 2, &v, &vl), -ENOENT);
	assert_int_equal(store_cache_get(f->st, "k3", 2, &v, &vl), 0);
	free(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed_since, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_series_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_services, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_timestamp_all_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_order_and_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_keeps_everything, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spans_spread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sizes_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_type_inference, setup, teardown),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test_setup_teardown(test_real_files_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_time_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_puts, setup, teardown),
		cmocka_unit_test(test_ids_and_names),
		cmocka_unit_test_setup_teardown(test_query_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_gauges, setup, teardown),
		cmocka_unit_test(test_query_match),
		cmocka_unit_test_setup_teardown(test_long_strings_cut, setup, teardown),
	};

	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
