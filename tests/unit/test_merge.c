/*
 * test_merge: pprof/merge.c against pprof's merge rules (shared/PPROF.md):
 * identity of functions, mappings, locations and samples, dropped zero
 * samples, header rules, gauge averaging, scaled adds and the diff form. Also
 * the hash table and arena the merge is built on (intern.c, arena.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base.h"
#include "util.h"

static struct profile *
merge2(const struct profile *a, const struct profile *b, bool avg)
{
	struct merge *m = merge_create();
	struct buf err = { 0 };
	struct profile *out = NULL;

	assert_non_null(m);
	if (merge_add(m, a, &err) != 0 || (b && merge_add(m, b, &err) != 0))
		fail_msg("merge_add: %s", err.data);
	assert_int_equal(merge_count(m), b ? 2 : 1);
	assert_int_equal(merge_finish(m, avg, &out), 0);
	merge_free(m);
	buf_free(&err);
	return out;
}

/* The merged profile must itself be valid: encode, decode, compare totals. */
static void
check_valid(const struct profile *p)
{
	struct profile *q = tp_reload(p);
	size_t t;

	assert_non_null(q);
	assert_int_equal(q->nsamples, p->nsamples);
	for (t = 0; t < p->nsample_types; t++)
		assert_true(profile_total(q, t) == profile_total(p, t));
	profile_free(q);
}

/* A small CPU profile: main -> foo -> bar in a mapped binary. */
static struct profile *
cpu_profile(uint64_t base, int64_t scale)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 10000000,
	    "samples/count,cpu/nanoseconds");
	uint32_t m = tp_mapping(p, base, base + 0x10000, 0, "/bin/app", "abc123");
	uint32_t fmain = tp_func(p, "main", "main.go", 1);
	uint32_t ffoo = tp_func(p, "foo", "main.go", 10);
	uint32_t fbar = tp_func(p, "bar", "bar.go", 20);
	uint32_t lmain = tp_loc(p, m, base + 0x100, (int)fmain, -1);
	uint32_t lfoo = tp_loc(p, m, base + 0x200, (int)ffoo, -1);
	uint32_t lbar = tp_loc(p, m, base + 0x300, (int)fbar, -1);

	tp_sample(p, (int64_t[]){ 1 * scale, 10 * scale }, (int)lbar, (int)lfoo, (int)lmain, -1,
	    NULL);
	tp_sample(p, (int64_t[]){ 2 * scale, 20 * scale }, (int)lfoo, (int)lmain, -1, NULL);
	tp_sample(p, (int64_t[]){ 4 * scale, 40 * scale }, (int)lmain, -1, NULL);
	p->time_nanos = 1000;
	p->duration_nanos = 10;
	return p;
}

static void
test_identical_doubles(void **state)
{
	struct profile *a = cpu_profile(0x400000, 1), *m;
	size_t i;

	(void)state;
	m = merge2(a, a, false);
	assert_int_equal(m->nsamples, a->nsamples);
	assert_int_equal(m->nlocations, a->nlocations);
	assert_int_equal(m->nfunctions, a->nfunctions);
	assert_int_equal(m->nmappings, 1);
	for (i = 0; i < m->nsamples; i++) {
		assert_true(m->samples[i].values[0] == 2 * a->samples[i].values[0]);
		assert_true(m->samples[i].values[1] == 2 * a->samples[i].values[1]);
	}
	assert_true(profile_total(m, 1) == 140);
	assert_true(m->duration_nanos == 20);
	check_valid(m);
	profile_free(m);
	profile_free(a);
}

/* First-seen order: the first profile's first sample and its locations come first. */
static void
test_renumbered_first_seen(void **state)
{
	struct profile *a = cpu_profile(0x400000, 1), *m;

	(void)state;
	m = merge2(a, NULL, false);
	assert_int_equal(m->nsamples, 3);
	assert_int_equal(m->samples[0].locs[0], 0);
	assert_int_equal(m->samples[0].locs[1], 1);
	assert_int_equal(m->samples[0].locs[2], 2);
	assert_string_equal(loc_name(m, 0), "bar");
	assert_string_equal(loc_name(m, 2), "main");
	assert_string_equal(m->strings[0], "");
	profile_free(m);
	profile_free(a);
}

/* ASLR: the same binary at another address is the same mapping. */
static void
test_mapping_relocated(void **state)
{
	struct profile *a = cpu_profile(0x400000, 1), *b = cpu_profile(0x7f0000000000, 1), *m;

	(void)state;
	m = merge2(a, b, false);
	assert_int_equal(m->nmappings, 1);
	assert_int_equal(m->nlocations, 3);
	assert_int_equal(m->nsamples, 3);
	assert_true(profile_total(m, 0) == 14);
	/* Addresses stay relative to the (first) mapping's start. */
	assert_true(m->mappings[0].start == 0x400000);
	assert_true(m->locations[0].address == 0x400300);
	assert_int_equal(m->locations[0].mapping, 1);
	check_valid(m);
	profile_free(m);
	/* The other way round the merged addresses follow b's mapping. */
	m = merge2(b, a, false);
	assert_true(m->mappings[0].start == 0x7f0000000000);
	assert_true(m->locations[0].address == 0x7f0000000300);
	profile_free(m);
	profile_free(a);
	profile_free(b);
}

/* Mapping identity: size rounded to 4 KiB, offset, build id else file name. */
static void
test_mapping_identity(void **state)
{
	static const struct {
		uint64_t start, limit, off;
		const char *file, *bid;
		bool same;
	} cases[] = {
		{ 0x1000, 0x11000, 0, "/bin/app", "abc123", true },	/* moved */
		{ 0x0, 0xf800, 0, "/bin/app", "abc123", true },	/* same size rounded up */
		{ 0x0, 0x10800, 0, "/bin/app", "abc123", false },	/* rounds to 0x11000 */
		{ 0x0, 0x12000, 0, "/bin/app", "abc123", false },	/* size differs */
		{ 0x0, 0x10000, 0x1000, "/bin/app", "abc123", false },	/* offset differs */
		{ 0x0, 0x10000, 0, "/other/name", "abc123", true },	/* build id wins */
		{ 0x0, 0x10000, 0, "/bin/app", "def456", false },	/* build id differs */
		{ 0x0, 0x10000, 0, "/bin/app", "", false },		/* file vs build id */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct profile *a = tp_new("cpu", "ns", 1, "cpu/ns");
		struct profile *b = tp_new("cpu", "ns", 1, "cpu/ns");
		struct profile *m;
		uint32_t ma = tp_mapping(a, 0, 0x10000, 0, "/bin/app", "abc123");
		uint32_t mb = tp_mapping(b, cases[i].start, cases[i].limit, cases[i].off,
		    cases[i].file, cases[i].bid);
		uint32_t fa = tp_func(a, "f", "f.c", 1), fb = tp_func(b, "f", "f.c", 1);

		tp_sample(a, (int64_t[]){ 1 }, (int)tp_loc(a, ma, 0x40, (int)fa, -1), -1, NULL);
		tp_sample(b, (int64_t[]){ 2 }, (int)tp_loc(b, mb, cases[i].start + 0x40, (int)fb,
		    -1), -1, NULL);
		m = merge2(a, b, false);
		if ((m->nmappings == 1) != cases[i].same)
			fail_msg("case %zu: %zu mappings", i, m->nmappings);
		assert_int_equal(m->nsamples, cases[i].same ? 1 : 2);
		profile_free(m);
		profile_free(a);
		profile_free(b);
	}
	/* Without build id or file name every mapping is one fake mapping. */
	{
		struct profile *a = tp_new("cpu", "ns", 1, "cpu/ns");
		struct profile *m;
		uint32_t m1 = tp_mapping(a, 0x1000, 0x2000, 0, "", "");
		uint32_t m2 = tp_mapping(a, 0x9000, 0xa000, 0, "", "");

		tp_sample(a, (int64_t[]){ 1 }, (int)tp_loc(a, m1, 0x1010, -1), -1, NULL);
		tp_sample(a, (int64_t[]){ 2 }, (int)tp_loc(a, m2, 0x9010, -1), -1, NULL);
		m = merge2(a, NULL, false);
		assert_int_equal(m->nmappings, 1);
		assert_int_equal(m->nlocations, 1);
		assert_int_equal(m->nsamples, 1);
		assert_true(m->samples[0].values[0] == 3);
		profile_free(m);
		profile_free(a);
	}
}

/* pprof takes the first profile's first mapping first: it is the main binary. */
static void
test_mapping_main_first(void **state)
{
	struct profile *a = tp_new("cpu", "ns", 1, "cpu/ns"), *m;
	uint32_t mainbin = tp_mapping(a, 0x400000, 0x500000, 0, "/bin/app", "");
	uint32_t libc = tp_mapping(a, 0x7f0000, 0x800000, 0, "/lib/libc.so.6", "");
	uint32_t f = tp_func(a, "memcpy", "", 0), g = tp_func(a, "main", "", 0);
	uint32_t lc = tp_loc(a, libc, 0x7f0100, (int)f, -1);
	uint32_t lm = tp_loc(a, mainbin, 0x400100, (int)g, -1);

	(void)state;
	/* The leaf is in libc, so libc is seen first while walking samples. */
	tp_sample(a, (int64_t[]){ 5 }, (int)lc, (int)lm, -1, NULL);
	m = merge2(a, NULL, false);
	assert_int_equal(m->nmappings, 2);
	assert_string_equal(profile_str(m, m->mappings[0].filename), "/bin/app");
	check_valid(m);
	profile_free(m);
	profile_free(a);
}

/* Location identity: lines (function, line), is_folded, mapping, relative address. */
static void
test_location_identity(void **state)
{
	struct profile *a = tp_new("cpu", "ns", 1, "cpu/ns"), *m;
	uint32_t map = tp_mapping(a, 0x1000, 0x9000, 0, "/bin/x", "");
	uint32_t f = tp_func(a, "f", "f.c", 1), g = tp_func(a, "g", "f.c", 1);
	uint32_t l1 = tp_loc(a, map, 0x1100, (int)f, -1);
	uint32_t l2 = tp_loc(a, map, 0x1100, (int)f, -1);		/* same as l1 */
	uint32_t l3 = tp_loc(a, map, 0x1100, (int)g, (int)f, -1);	/* g inlined */
	uint32_t l4 = tp_loc(a, map, 0x1200, (int)f, -1);		/* other address */
	uint32_t l5 = tp_loc(a, 0, 0x1100, (int)f, -1);		/* no mapping */
	uint32_t l6 = tp_loc(a, map, 0x1100, (int)f, -1);

	(void)state;
	a->locations[l6].is_folded = true;
	tp_sample(a, (int64_t[]){ 1 }, (int)l1, -1, NULL);
	tp_sample(a, (int64_t[]){ 2 }, (int)l2, -1, NULL);
	tp_sample(a, (int64_t[]){ 4 }, (int)l3, -1, NULL);
	tp_sample(a, (int64_t[]){ 8 }, (int)l4, -1, NULL);
	tp_sample(a, (int64_t[]){ 16 }, (int)l5, -1, NULL);
	tp_sample(a, (int64_t[]){ 32 }, (int)l6, -1, NULL);
	m = merge2(a, NULL, false);
	assert_int_equal(m->nlocations, 5);
	assert_int_equal(m->nsamples, 5);
	assert_true(m->samples[0].values[0] == 3);
	assert_int_equal(m->locations[1].nlines, 2);
	assert_string_equal(profile_str(m, m->functions[m->locations[1].lines[0].function].name),
	    "g");
	assert_int_equal(m->locations[3].mapping, 0);
	assert_true(m->locations[4].is_folded);
	check_valid(m);
	profile_free(m);
	profile_free(a);
}

/* Function identity: (name, system name, file name, start line). */
static void
test_function_identity(void **state)
{
	struct profile *a = tp_new("cpu", "ns", 1, "cpu/ns"), *m;
	uint32_t f1 = tp_func(a, "f", "f.c", 1), f2 = tp_func(a, "f", "f.c", 1);
	uint32_t f3 = tp_func(a, "f", "g.c", 1), f4 = tp_func(a, "f", "f.c", 2);

	(void)state;
	tp_sample(a, (int64_t[]){ 1 }, (int)tp_loc(a, 0, 1, (int)f1, -1), -1, NULL);
	tp_sample(a, (int64_t[]){ 1 }, (int)tp_loc(a, 0, 1, (int)f2, -1), -1, NULL);
	tp_sample(a, (int64_t[]){ 1 }, (int)tp_loc(a, 0, 1, (int)f3, -1), -1, NULL);
	tp_sample(a, (int64_t[]){ 1 }, (int)tp_loc(a, 0, 1, (int)f4, -1), -1, NULL);
	m = merge2(a, NULL, false);
	assert_int_equal(m->nfunctions, 3);
	assert_int_equal(m->nlocations, 3);
	assert_int_equal(m->nsamples, 3);
	assert_true(m->samples[0].values[0] == 2);
	profile_free(m);
	profile_free(a);
}

/* Sample identity includes labels: values apart, order of labels irrelevant. */
static void
test_sample_labels(void **state)
{
	struct profile *a = tp_new("cpu", "ns", 1, "cpu/ns"), *m;
	uint32_t f = tp_func(a, "f", "f.c", 1);
	uint32_t l = tp_loc(a, 0, 1, (int)f, -1);
	struct pf_sample *s;

	(void)state;
	tp_sample(a, (int64_t[]){ 1 }, (int)l, -1, "thread", "1", "pod", "a", NULL);
	tp_sample(a, (int64_t[]){ 2 }, (int)l, -1, "pod", "a", "thread", "1", NULL);
	tp_sample(a, (int64_t[]){ 4 }, (int)l, -1, "thread", "2", "pod", "a", NULL);
	tp_sample(a, (int64_t[]){ 8 }, (int)l, -1, NULL);
	s = tp_sample(a, (int64_t[]){ 16 }, (int)l, -1, NULL);
	tp_numlabel(a, s, "bytes", 64, "bytes");
	s = tp_sample(a, (int64_t[]){ 32 }, (int)l, -1, NULL);
	tp_numlabel(a, s, "bytes", 64, "bytes");
	s = tp_sample(a, (int64_t[]){ 64 }, (int)l, -1, NULL);
	tp_numlabel(a, s, "bytes", 128, "bytes");
	s = tp_sample(a, (int64_t[]){ 128 }, (int)l, -1, NULL);
	tp_numlabel(a, s, "bytes", 64, "kilobytes");
	m = merge2(a, NULL, false);
	assert_int_equal(m->nlocations, 1);
	assert_int_equal(m->nsamples, 6);
	assert_true(m->samples[0].values[0] == 3);
	assert_true(m->samples[1].values[0] == 4);
	assert_true(m->samples[2].values[0] == 8);
	assert_true(m->samples[3].values[0] == 48);
	assert_true(m->samples[4].values[0] == 64);
	assert_true(m->samples[5].values[0] == 128);
	assert_true(total_labelled(m, 0, "thread", "1") == 3);
	assert_true(total_labelled(m, 0, "thread", "2") == 4);
	check_valid(m);
	profile_free(m);
	profile_free(a);
}

/* Samples whose values are all zero are dropped; zero in one column is not. */
static void
test_zero_samples_dropped(void **state)
{
	struct profile *a = tp_new("cpu", "ns", 1, "samples/count,cpu/ns"), *m;
	uint32_t f = tp_func(a, "f", "f.c", 1), g = tp_func(a, "g", "g.c", 1);
	uint32_t lf = tp_loc(a, 0, 1, (int)f, -1), lg = tp_loc(a, 0, 2, (int)g, -1);

	(void)state;
	tp_sample(a, (int64_t[]){ 0, 0 }, (int)lg, -1, NULL);
	tp_sample(a, (int64_t[]){ 0, 5 }, (int)lf, -1, NULL);
	tp_sample(a, (int64_t[]){ 0, 0 }, (int)lf, (int)lg, -1, NULL);
	m = merge2(a, NULL, false);
	assert_int_equal(m->nsamples, 1);
	assert_true(m->samples[0].values[1] == 5);
	/* The dropped sample's locations are not referenced. */
	assert_string_equal(loc_name(m, m->samples[0].locs[0]), "f");
	profile_free(m);
	profile_free(a);
}

/* pprof re-merges when summing made a sample zero: it is dropped too. */
static void
test_zero_after_sum_dropped(void **state)
{
	struct profile *a = cpu_profile(0x400000, 1), *b = cpu_profile(0x400000, -1);
	struct profile *c = tp_new("cpu", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	struct profile *m;
	uint32_t f = tp_func(c, "other", "o.go", 1);

	(void)state;
	tp_sample(c, (int64_t[]){ 1, 1 }, (int)tp_loc(c, 0, 5, (int)f, -1), -1, NULL);
	{
		struct merge *mg = merge_create();

		assert_int_equal(merge_add(mg, a, NULL), 0);
		assert_int_equal(merge_add(mg, b, NULL), 0);
		assert_int_equal(merge_add(mg, c, NULL), 0);
		assert_int_equal(merge_finish(mg, false, &m), 0);
		merge_free(mg);
	}
	assert_int_equal(m->nsamples, 1);
	assert_true(m->samples[0].values[0] == 1);
	check_valid(m);
	profile_free(m);
	profile_free(a);
	profile_free(b);
	profile_free(c);
}

/* Header: earliest nonzero time, summed duration, largest period, first of the rest. */
static void
test_header_rules(void **state)
{
	struct profile *p[3];
	struct merge *mg = merge_create();
	struct profile *m;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		uint32_t f;

		p[i] = tp_new("cpu", "nanoseconds", 0, "cpu/nanoseconds");
		f = tp_func(p[i], "f", "", 0);
		tp_sample(p[i], (int64_t[]){ 1 }, (int)tp_loc(p[i], 0, 1, (int)f, -1), -1, NULL);
	}
	p[0]->time_nanos = 0;
	p[1]->time_nanos = 300;
	p[2]->time_nanos = 200;
	p[0]->duration_nanos = 5;
	p[1]->duration_nanos = 6;
	p[2]->duration_nanos = 7;
	p[0]->period = 10;
	p[1]->period = 30;
	p[2]->period = 20;
	p[0]->drop_frames = tp_str(p[0], "runtime\\..*");
	p[1]->drop_frames = tp_str(p[1], "other");
	p[1]->keep_frames = tp_str(p[1], "keep1");
	p[0]->comments[p[0]->ncomments++] = tp_str(p[0], "c1");
	p[1]->comments[p[1]->ncomments++] = tp_str(p[1], "c2");
	p[1]->comments[p[1]->ncomments++] = tp_str(p[1], "c1");
	p[2]->comments[p[2]->ncomments++] = tp_str(p[2], "c3");
	p[2]->comments[p[2]->ncomments++] = tp_str(p[2], "c2");
	p[1]->default_sample_type = tp_str(p[1], "cpu");
	p[1]->doc_url = tp_str(p[1], "https://a");
	p[2]->doc_url = tp_str(p[2], "https://b");
	for (i = 0; i < 3; i++)
		assert_int_equal(merge_add(mg, p[i], NULL), 0);
	assert_int_equal(merge_finish(mg, false, &m), 0);
	assert_true(m->time_nanos == 200);
	assert_true(m->duration_nanos == 18);
	assert_true(m->period == 30);
	assert_string_equal(profile_str(m, m->drop_frames), "runtime\\..*");
	assert_string_equal(profile_str(m, m->keep_frames), "");	/* from the first */
	assert_int_equal(m->ncomments, 3);
	assert_string_equal(profile_str(m, m->comments[0]), "c1");
	assert_string_equal(profile_str(m, m->comments[1]), "c2");
	assert_string_equal(profile_str(m, m->comments[2]), "c3");
	assert_string_equal(profile_str(m, m->default_sample_type), "cpu");
	assert_string_equal(profile_str(m, m->doc_url), "https://a");
	assert_string_equal(profile_str(m, m->period_type.type), "cpu");
	assert_int_equal(m->nsamples, 1);
	assert_true(m->samples[0].values[0] == 3);
	check_valid(m);
	profile_free(m);
	merge_free(mg);
	for (i = 0; i < 3; i++)
		profile_free(p[i]);
}

static void
test_incompatible_refused(void **state)
{
	struct profile *a = cpu_profile(0x1000, 1);
	struct profile *b = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds,samples/count");
	struct profile *c = tp_new("wall", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	struct merge *mg = merge_create();
	struct buf err = { 0 };
	struct profile *m;

	(void)state;
	assert_int_equal(merge_add(mg, a, &err), 0);
	assert_int_equal(merge_add(mg, b, &err), -EINVAL);
	assert_non_null(strstr(err.data, "incompatible"));
	assert_non_null(strstr(err.data, "samples/count"));
	buf_reset(&err);
	assert_int_equal(merge_add(mg, c, &err), -EINVAL);
	assert_non_null(strstr(err.data, "wall"));
	/* The merge is unaffected. */
	assert_int_equal(merge_count(mg), 1);
	assert_int_equal(merge_finish(mg, false, &m), 0);
	assert_true(profile_total(m, 1) == 70);
	profile_free(m);
	merge_free(mg);
	profile_free(a);
	profile_free(b);
	profile_free(c);
	buf_free(&err);
}

static struct profile *
heap_profile(int64_t inuse, int64_t alloc)
{
	struct profile *p = tp_new("space", "bytes", 524288,
	    "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes");
	uint32_t f = tp_func(p, "alloc", "a.go", 1);

	tp_sample(p, (int64_t[]){ alloc, alloc * 8, inuse, inuse * 8 },
	    (int)tp_loc(p, 0, 1, (int)f, -1), -1, NULL);
	return p;
}

/* Gauges (inuse_*) are averaged over the snapshots, counters (alloc_*) summed. */
static void
test_gauge_average(void **state)
{
	struct profile *p[4], *m;
	struct merge *mg = merge_create();
	size_t i;

	(void)state;
	p[0] = heap_profile(10, 100);
	p[1] = heap_profile(20, 100);
	p[2] = heap_profile(30, 100);
	p[3] = heap_profile(41, 100);
	for (i = 0; i < 4; i++)
		assert_int_equal(merge_add(mg, p[i], NULL), 0);
	assert_int_equal(merge_finish(mg, true, &m), 0);
	assert_true(m->samples[0].values[0] == 400);
	assert_true(m->samples[0].values[1] == 3200);
	assert_true(m->samples[0].values[2] == 25);	/* 101 / 4 = 25.25 */
	assert_true(m->samples[0].values[3] == 202);	/* 808 / 4 = 202 */
	profile_free(m);
	/* Without averaging everything is summed. */
	assert_int_equal(merge_finish(mg, false, &m), 0);
	assert_true(m->samples[0].values[2] == 101);
	profile_free(m);
	merge_free(mg);
	/* Rounding half away from zero, negative values too. */
	m = merge2(p[0], p[1], true);	/* (10 + 20) / 2 */
	assert_true(m->samples[0].values[2] == 15);
	profile_free(m);
	profile_free(p[0]);
	profile_free(p[1]);
	p[0] = heap_profile(1, 1);
	p[1] = heap_profile(2, 1);
	m = merge2(p[0], p[1], true);
	assert_true(m->samples[0].values[2] == 2);	/* 1.5 -> 2 */
	profile_free(m);
	profile_free(p[0]);
	profile_free(p[1]);
	p[0] = heap_profile(-1, 1);
	p[1] = heap_profile(-2, 1);
	m = merge2(p[0], p[1], true);
	assert_true(m->samples[0].values[2] == -2);	/* -1.5 -> -2 */
	profile_free(m);
	/* One snapshot is its own average. */
	m = merge2(p[0], NULL, true);
	assert_true(m->samples[0].values[2] == -1);
	profile_free(m);
	profile_free(p[0]);
	profile_free(p[1]);
	profile_free(p[2]);
	profile_free(p[3]);
}

/* Values at the int64 limits wrap as in Go's pprof instead of trapping. */
static void
test_extreme_values(void **state)
{
	struct profile *a = heap_profile(0, 0), *b = heap_profile(0, 0), *m;

	(void)state;
	a->samples[0].values[3] = INT64_MAX;
	b->samples[0].values[3] = 1;
	b->samples[0].values[0] = 1;
	a->duration_nanos = INT64_MAX;
	b->duration_nanos = 1;
	m = merge2(a, b, false);
	assert_true(m->samples[0].values[3] == INT64_MIN);
	assert_true(profile_total(m, 3) == INT64_MIN);
	assert_true(m->duration_nanos == INT64_MIN);
	profile_free(m);
	/* Averaging rounds at the extremes too. */
	b->samples[0].values[3] = 0;
	m = merge2(a, b, true);
	assert_true(m->samples[0].values[3] == INT64_C(4611686018427387904));
	profile_free(m);
	a->samples[0].values[3] = INT64_MIN;
	m = merge2(a, b, true);
	assert_true(m->samples[0].values[3] == INT64_MIN / 2);
	profile_free(m);
	/* Scaling INT64_MIN by -1 (a diff) wraps. */
	assert_int_equal(profile_diff(b, a, &m, NULL), 0);
	assert_true(total_labelled(m, 3, "pprof::base", "true") == INT64_MIN);
	profile_free(m);
	profile_free(a);
	profile_free(b);
}

static void
test_add_scaled(void **state)
{
	struct profile *a = cpu_profile(0x1000, 1), *m;
	struct merge *mg = merge_create();

	(void)state;
	assert_int_equal(merge_add_scaled(mg, a, 3, NULL, NULL, NULL), 0);
	assert_int_equal(merge_add_scaled(mg, a, 2, "run", "second", NULL), 0);
	assert_int_equal(merge_finish(mg, false, &m), 0);
	assert_int_equal(m->nsamples, 6);
	assert_true(profile_total(m, 1) == 5 * 70);
	assert_true(total_labelled(m, 1, "run", "second") == 140);
	assert_true(total_labelled(m, 1, "run", NULL) == 210);
	check_valid(m);
	profile_free(m);
	merge_free(mg);
	profile_free(a);
}

/* pprof's diff form: base negated, labelled pprof::base=true, merged with cur. */
static void
test_diff(void **state)
{
	struct profile *cur = cpu_profile(0x1000, 3), *base = cpu_profile(0x5000, 1), *d = NULL;
	struct profile *other = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds");
	struct buf err = { 0 };
	size_t i, t;

	(void)state;
	assert_int_equal(profile_diff(cur, base, &d, &err), 0);
	assert_int_equal(d->nsamples, 6);
	assert_int_equal(d->nlocations, 3);
	for (t = 0; t < 2; t++) {
		assert_true(profile_total(d, t) == profile_total(cur, t) - profile_total(base, t));
		assert_true(total_labelled(d, t, "pprof::base", "true") == -profile_total(base, t));
		assert_true(total_labelled(d, t, "pprof::base", NULL) == profile_total(cur, t));
	}
	for (i = 0; i < d->nsamples; i++) {
		const struct pf_sample *s = &d->samples[i];
		bool based = s->nlabels == 1 &&
		    strcmp(profile_str(d, s->labels[0].key), "pprof::base") == 0 &&
		    strcmp(profile_str(d, s->labels[0].str), "true") == 0;

		assert_true(s->nlabels <= 1);
		assert_true(based ? s->values[0] < 0 : s->values[0] > 0);
	}
	check_valid(d);
	profile_free(d);
	/* A profile against itself: all kept apart, sum zero. */
	assert_int_equal(profile_diff(base, base, &d, &err), 0);
	assert_int_equal(d->nsamples, 6);
	assert_true(profile_total(d, 1) == 0);
	profile_free(d);
	/* Incompatible profiles: refused with a reason. */
	assert_int_equal(profile_diff(cur, other, &d, &err), -EINVAL);
	assert_null(d);
	assert_true(err.len > 0);
	profile_free(cur);
	profile_free(base);
	profile_free(other);
	buf_free(&err);
}

/* --- real profiles -------------------------------------------------------- */

static const char *const many[] = {
	"parca/many-1644509272337470000.pb.gz", "parca/many-1644509275338070000.pb.gz",
	"parca/many-1644509278338696000.pb.gz", "parca/many-1644509281339135000.pb.gz",
};

/*
 * The four snapshots of one process merge into per-type sums, and into what
 * go tool pprof -proto makes of them (testdata/many-merged-by-pprof.pb.gz,
 * made with `go tool pprof -proto many-*.pb.gz`): same totals, samples,
 * locations and functions.
 */
static void
test_real_many(void **state)
{
	struct profile *p[4], *m, *ref = NULL;
	struct merge *mg = merge_create();
	struct buf b = { 0 };
	int64_t want[4] = { 0 };
	size_t i, t;

	(void)state;
	if (real_dir() == NULL)
		skip();
	for (i = 0; i < 4; i++) {
		assert_non_null(p[i] = load_real(many[i]));
		for (t = 0; t < 4; t++)
			want[t] += profile_total(p[i], t);
		assert_int_equal(merge_add(mg, p[i], NULL), 0);
	}
	assert_int_equal(merge_finish(mg, false, &m), 0);
	for (t = 0; t < 4; t++)
		assert_true(profile_total(m, t) == want[t]);
	assert_true(m->nsamples <= p[0]->nsamples + p[1]->nsamples + p[2]->nsamples +
	    p[3]->nsamples);
	assert_true(m->time_nanos == p[0]->time_nanos);
	check_valid(m);
	if (buf_read_file(&b, "tests/unit/testdata/many-merged-by-pprof.pb.gz", 1 << 20) == 0) {
		assert_int_equal(profile_decode(b.data, b.len, &ref, NULL), 0);
		for (t = 0; t < 4; t++)
			assert_true(profile_total(ref, t) == want[t]);
		assert_int_equal(m->nsamples, ref->nsamples);
		assert_int_equal(m->nlocations, ref->nlocations);
		assert_int_equal(m->nfunctions, ref->nfunctions);
		assert_int_equal(m->nmappings, ref->nmappings);
		if (m->nmappings)
			assert_string_equal(profile_str(m, m->mappings[0].filename),
			    profile_str(ref, ref->mappings[0].filename));
		assert_string_equal(loc_name(m, m->samples[0].locs[0]),
		    loc_name(ref, ref->samples[0].locs[0]));
		assert_true(m->time_nanos == ref->time_nanos);
		assert_true(m->period == ref->period);
		profile_free(ref);
	} else
		print_message("tests/unit/testdata not found: pprof comparison skipped\n");
	profile_free(m);
	merge_free(mg);
	buf_free(&b);
	for (i = 0; i < 4; i++)
		profile_free(p[i]);
}

/* Other merges pprof made (tests/unit/testdata/README.md): the same result. */
static void
test_real_vs_pprof(void **state)
{
	static const struct { const char *ref, *in[3]; } cases[] = {
		{ "cpu-sample+stripped-merged-by-pprof.pb.gz",
		    { "google-pprof/sample.cpu", "parca/normal-cpu.stripped.pprof" } },
		{ "heap-pyroscope+parca-merged-by-pprof.pb.gz",
		    { "pyroscope/heap.pb", "parca/alloc_space_delta.pb.gz" } },
		{ "profile-with-labels-twice-merged-by-pprof.pb.gz",
		    { "parca/profile-with-labels.pb.gz", "parca/profile-with-labels.pb.gz" } },
	};
	size_t c, i, t;

	(void)state;
	if (real_dir() == NULL)
		skip();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct merge *mg = merge_create();
		struct profile *m, *ref = NULL;
		struct buf b = { 0 };
		char path[256];

		for (i = 0; cases[c].in[i]; i++) {
			struct profile *p = load_real(cases[c].in[i]);

			assert_non_null(p);
			assert_int_equal(merge_add(mg, p, NULL), 0);
			profile_free(p);
		}
		assert_int_equal(merge_finish(mg, false, &m), 0);
		snprintf(path, sizeof(path), "tests/unit/testdata/%s", cases[c].ref);
		if (buf_read_file(&b, path, 1 << 22) < 0) {
			print_message("%s not found: skipped\n", path);
		} else {
			assert_int_equal(profile_decode(b.data, b.len, &ref, NULL), 0);
			for (t = 0; t < m->nsample_types; t++)
				assert_true(profile_total(m, t) == profile_total(ref, t));
			assert_int_equal(m->nsamples, ref->nsamples);
			assert_int_equal(m->nlocations, ref->nlocations);
			assert_int_equal(m->nfunctions, ref->nfunctions);
			assert_int_equal(m->nmappings, ref->nmappings);
			assert_string_equal(profile_str(m, m->mappings[0].filename),
			    profile_str(ref, ref->mappings[0].filename));
			assert_true(m->time_nanos == ref->time_nanos);
			assert_true(m->duration_nanos == ref->duration_nanos);
			assert_true(m->period == ref->period);
			profile_free(ref);
		}
		profile_free(m);
		merge_free(mg);
		buf_free(&b);
	}
}

/* profile_diff gives what go tool pprof -proto -diff_base=BASE CUR gives. */
static void
test_real_diff_vs_pprof(void **state)
{
	static const struct { const char *ref, *base, *cur; } cases[] = {
		{ "diff-stripped-vs-sample-by-pprof.pb.gz", "google-pprof/sample.cpu",
		    "parca/normal-cpu.stripped.pprof" },
		{ "diff-alloc-vs-many1-by-pprof.pb.gz", "parca/many-1644509272337470000.pb.gz",
		    "parca/alloc_space_delta.pb.gz" },
	};
	size_t c, t;

	(void)state;
	if (real_dir() == NULL)
		skip();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct profile *base = load_real(cases[c].base), *cur = load_real(cases[c].cur);
		struct profile *d = NULL, *ref = NULL;
		struct buf b = { 0 };
		char path[256];

		assert_non_null(base);
		assert_non_null(cur);
		assert_int_equal(profile_diff(cur, base, &d, NULL), 0);
		snprintf(path, sizeof(path), "tests/unit/testdata/%s", cases[c].ref);
		if (buf_read_file(&b, path, 1 << 22) == 0) {
			assert_int_equal(profile_decode(b.data, b.len, &ref, NULL), 0);
			for (t = 0; t < d->nsample_types; t++) {
				assert_true(profile_total(d, t) == profile_total(ref, t));
				assert_true(total_labelled(d, t, "pprof::base", "true") ==
				    total_labelled(ref, t, "pprof::base", "true"));
			}
			assert_int_equal(d->nsamples, ref->nsamples);
			assert_int_equal(d->nlocations, ref->nlocations);
			assert_int_equal(d->nfunctions, ref->nfunctions);
			assert_int_equal(d->nmappings, ref->nmappings);
			assert_string_equal(profile_str(d, d->mappings[0].filename),
			    profile_str(ref, ref->mappings[0].filename));
			assert_true(d->time_nanos == ref->time_nanos);
			profile_free(ref);
		} else
			print_message("%s not found: skipped\n", path);
		profile_free(d);
		profile_free(base);
		profile_free(cur);
		buf_free(&b);
	}
}

/* Every real file merged with itself doubles; averaged, gauges stay as they were. */
static void
test_real_self_merge(void **state)
{
	char **files;
	size_t n, i, t;

	(void)state;
	if (real_dir() == NULL)
		skip();
	files = real_files(&n);
	for (i = 0; i < n; i++) {
		struct profile *p, *m, *avg;

		if (strstr(files[i], "dotnet"))
			continue;
		assert_non_null(p = load_real(files[i]));
		m = merge2(p, p, false);
		avg = merge2(p, p, true);
		for (t = 0; t < p->nsample_types; t++) {
			const char *ty = profile_str(p, p->sample_types[t].type);

			if (profile_total(m, t) != 2 * profile_total(p, t))
				fail_msg("%s: type %s: %lld != 2 * %lld", files[i], ty,
				    (long long)profile_total(m, t), (long long)profile_total(p, t));
			if (profile_type_is_gauge(ty))
				assert_true(profile_total(avg, t) == profile_total(p, t));
			else
				assert_true(profile_total(avg, t) == 2 * profile_total(p, t));
		}
		assert_true(m->nsamples <= p->nsamples);
		check_valid(m);
		profile_free(m);
		profile_free(avg);
		profile_free(p);
	}
	free_files(files);
}

/* parca/diff.pb.gz is pprof's own diff of heap profiles: base and current apart. */
static void
test_real_diff_form(void **state)
{
	struct profile *p, *cur, *base, *d;
	size_t t;

	(void)state;
	if (real_dir() == NULL)
		skip();
	assert_non_null(p = load_real("parca/diff.pb.gz"));
	/* Re-merging pprof's diff keeps base samples apart from current ones. */
	d = merge2(p, NULL, false);
	for (t = 0; t < p->nsample_types; t++) {
		assert_true(profile_total(d, t) == profile_total(p, t));
		assert_true(total_labelled(d, t, "pprof::base", "true") ==
		    total_labelled(p, t, "pprof::base", "true"));
	}
	profile_free(d);
	/* Our diff of two real snapshots. */
	assert_non_null(cur = load_real(many[3]));
	assert_non_null(base = load_real(many[0]));
	assert_int_equal(profile_diff(cur, base, &d, NULL), 0);
	for (t = 0; t < 4; t++) {
		assert_true(profile_total(d, t) == profile_total(cur, t) - profile_total(base, t));
		assert_true(total_labelled(d, t, "pprof::base", "true") == -profile_total(base, t));
	}
	check_valid(d);
	profile_free(d);
	profile_free(cur);
	profile_free(base);
	profile_free(p);
}

/* --- intern and arena ----------------------------------------------------- */

static void
test_intern(void **state)
{
	struct intern *t = intern_create(4);
	char key[32];
	size_t len;
	int added, i;

	(void)state;
	assert_non_null(t);
	assert_int_equal(intern_put(t, "", 0, &added), 0);
	assert_int_equal(added, 1);
	assert_int_equal(intern_put(t, "", 0, &added), 0);
	assert_int_equal(added, 0);
	for (i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_true(intern_put(t, key, strlen(key), &added) == i + 1);
		assert_int_equal(added, 1);
	}
	assert_int_equal(intern_count(t), 100001);
	for (i = 0; i < 100000; i += 997) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_true(intern_get(t, key, strlen(key)) == i + 1);
		assert_true(intern_put(t, key, strlen(key), NULL) == i + 1);
		assert_memory_equal(intern_key(t, (size_t)i + 1, &len), key, strlen(key));
		assert_int_equal(len, strlen(key));
	}
	assert_true(intern_get(t, "nope", 4) == -1);
	/* Binary keys with NULs; prefixes are different keys. */
	assert_true(intern_put(t, "a\0b", 3, NULL) == 100001);
	assert_true(intern_put(t, "a\0", 2, NULL) == 100002);
	assert_true(intern_get(t, "a\0b", 3) == 100001);
	assert_true(hash_bytes("abc", 3) == hash_bytes("abc", 3));
	assert_true(hash_bytes("abc", 3) != hash_bytes("abd", 3));
	intern_destroy(t);
	intern_destroy(NULL);
}

static void
test_arena(void **state)
{
	struct arena *a = arena_create();
	char *p, *big;
	size_t i;

	(void)state;
	for (i = 0; i < 10000; i++) {
		p = arena_alloc(a, i % 37);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		memset(p, 0xab, i % 37);
	}
	big = arena_alloc(a, 10 << 20);
	assert_non_null(big);
	memset(big, 1, 10 << 20);
	/* Small allocations continue after a big one. */
	p = arena_alloc(a, 8);
	assert_non_null(p);
	p = arena_memdup(a, "abc", 3);
	assert_string_equal(p, "abc");
	p = arena_calloc(a, 100, 8);
	for (i = 0; i < 800; i++)
		assert_int_equal(p[i], 0);
	assert_null(arena_calloc(a, SIZE_MAX / 2, 4));
	assert_null(arena_alloc(a, SIZE_MAX - 10));
	assert_true(arena_used(a) >= (10u << 20));
	arena_destroy(a);
	arena_destroy(NULL);
}

/*
 * The builder side (the eBPF sampler's): the same library mapped at two
 * bases is one mapping with addresses moved to it, equal stacks add up,
 * file mappings come before "[kernel]", and the profile round-trips.
 */
static void
test_builder(void **state)
{
	static const char *const types[] = { "samples", "cpu" };
	static const char *const units[] = { "count", "nanoseconds" };
	struct merge_header h = { .types = types, .units = units, .ntypes = 2,
	    .period_type = "cpu", .period_unit = "nanoseconds", .period = 10000000 };
	struct merge *m = merge_create();
	struct profile *p, *q;
	struct buf enc = { 0 }, err = { 0 };
	struct pf_mapping k = { .start = 0xffffffff81000000, .limit = 0xffffffff82000000 };
	struct pf_mapping lib1 = { .start = 0x7f0000000000, .limit = 0x7f0000100000 };
	struct pf_mapping lib2 = { .start = 0x7f5500000000, .limit = 0x7f5500100000 };
	struct pf_function fn = { 0 };
	struct pf_line ln = { .function = PF_NONE };
	struct pf_label lab[1];
	int64_t mk, m1, m2, f, l0, l1, l2, v[2] = { 1, 10000000 };
	uint32_t st[2];

	(void)state;
	assert_non_null(m);
	assert_int_equal(merge_begin(m, &h), 0);
	k.filename = merge_string(m, "[kernel]");
	lib1.filename = lib2.filename = merge_string(m, "/usr/lib/libc.so.6");
	lib1.build_id = lib2.build_id = merge_string(m, "abcd");
	assert_true((mk = merge_mapping(m, &k)) >= 0);
	assert_true((m1 = merge_mapping(m, &lib1)) >= 0);
	assert_true((m2 = merge_mapping(m, &lib2)) >= 0);
	assert_int_equal(m1, m2);
	fn.name = fn.system_name = merge_string(m, "memcpy");
	assert_true((f = merge_function(m, &fn)) >= 0);
	ln.function = (uint32_t)f;
	l0 = merge_location(m, (uint32_t)mk + 1, k.start, 0xffffffff81000100, false, NULL, 0);
	l1 = merge_location(m, (uint32_t)m1 + 1, lib1.start, lib1.start + 0x1234, false, &ln, 1);
	/* The same function at the same offset in the second process: one location. */
	l2 = merge_location(m, (uint32_t)m2 + 1, lib2.start, lib2.start + 0x1234, false, &ln, 1);
	assert_true(l0 >= 0 && l1 >= 0);
	assert_int_equal(l1, l2);
	st[0] = (uint32_t)l0;
	st[1] = (uint32_t)l1;
	lab[0] = (struct pf_label){ .key = merge_string(m, "pid"), .num = 7 };
	assert_int_equal(merge_sample(m, st, 2, lab, 1, v), 0);
	lab[0] = (struct pf_label){ .key = merge_string(m, "pid"), .num = 7 };
	assert_int_equal(merge_sample(m, st, 2, lab, 1, v), 0);
	assert_int_equal(merge_finish(m, false, &p), 0);
	merge_free(m);

	assert_int_equal(p->nsamples, 1);
	assert_true(p->samples[0].values[0] == 2 && p->samples[0].values[1] == 20000000);
	assert_int_equal(p->nmappings, 2);
	assert_string_equal(profile_str(p, p->mappings[0].filename), "/usr/lib/libc.so.6");
	assert_string_equal(profile_str(p, p->mappings[1].filename), "[kernel]");
	assert_true(p->mappings[0].has_functions);
	assert_false(p->mappings[1].has_functions);
	assert_int_equal(p->locations[p->samples[0].locs[1]].mapping, 1);
	assert_true(p->locations[p->samples[0].locs[1]].address == lib1.start + 0x1234);
	/* A valid pprof: it encodes and decodes to the same totals. */
	assert_int_equal(profile_encode(p, false, &enc), 0);
	assert_int_equal(profile_decode(enc.data, enc.len, &q, &err), 0);
	assert_true(profile_total(q, 1) == 20000000);
	profile_free(q);
	profile_free(p);
	buf_free(&enc);
	buf_free(&err);
}

/*
 * The merge-group policy (mgroup.c): the largest group merges with those of
 * its period type that share sample types with it, on the shared types, in
 * the largest group's order; the others are left out with a reason; the
 * per-profile totals of merged groups are reordered into the shared types.
 */
static void
test_mgroup(void **state)
{
	/* period type, then type/unit per sample type, 0x1f-separated */
	static const char *sigs[] = {
		"cpu/nanoseconds\x1fsamples/count\x1f" "cpu/nanoseconds",	/* 3 profiles */
		"cpu/nanoseconds\x1f" "cpu/nanoseconds",			/* 2 */
		"space/bytes\x1finuse_space/bytes",			/* 4: another period */
		"cpu/nanoseconds\x1fwall/nanoseconds",			/* 1: shares nothing */
	};
	uint64_t counts[] = { 3, 2, 4, 1 };
	struct mgroup g[4];
	struct mgroup_shared sh;
	struct buf totals = { 0 };
	int64_t rows[] = { 10, 20, 30, 40 };	/* a profile of group 0, one of group 1, ... */
	size_t at[] = { 0, 2, 3, SIZE_MAX }, grp[] = { 0, 1, 2, 3 }, i, best;
	char why[320];

	(void)state;
	memset(g, 0, sizeof(g));
	for (i = 0; i < 4; i++) {
		g[i].sig = sigs[i];
		g[i].siglen = strlen(sigs[i]);
		g[i].count = counts[i];
	}
	best = mgroup_choose(g, 4, &sh);
	assert_int_equal(best, 2);		/* the largest, alone of its period type */
	assert_true(g[2].inc);
	assert_false(g[0].inc);
	assert_int_equal(sh.n, 2);

	/* Without the heap group, the two CPU groups merge on cpu/nanoseconds. */
	best = mgroup_choose(g, 2, &sh);
	assert_int_equal(best, 0);
	assert_true(g[0].inc && g[1].inc);
	assert_int_equal(sh.n, 2);
	assert_int_equal(sh.len[1], strlen("cpu/nanoseconds"));
	assert_memory_equal(sh.part[1], "cpu/nanoseconds", sh.len[1]);
	assert_int_equal(g[0].keep[0], 1);
	assert_int_equal(g[1].keep[0], 0);

	/* With the wall group: it shares no type and is left out, and says why. */
	g[2].count = 0;
	best = mgroup_choose(g, 4, &sh);
	assert_int_equal(best, 0);
	assert_false(g[3].inc);
	assert_false(g[2].inc);
	mgroup_why(&g[3], &sh, why, sizeof(why));
	assert_string_equal(why, "sample types [wall/nanoseconds] share none with the merged "
	    "profiles' [cpu/nanoseconds] (or the period type differs)");

	/* Group 0's row (samples, cpu) becomes (cpu); group 1's is already so. */
	assert_int_equal(buf_add(&totals, rows, sizeof(rows)), 0);
	assert_int_equal(mgroup_totals(g, &sh, grp, at, 4, &totals), 0);
	assert_int_equal(((int64_t *)totals.data)[at[0]], 20);
	assert_int_equal(at[1], 2);
	assert_int_equal(((int64_t *)totals.data)[at[1]], 30);
	assert_int_equal(at[2], 3);		/* not merged: its own row stays */
	assert_int_equal(at[3], SIZE_MAX);
	/* A row past the end is refused. */
	at[0] = 0;
	at[1] = 9;
	assert_int_equal(mgroup_totals(g, &sh, grp, at, 4, &totals), -EIO);
	buf_free(&totals);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical_doubles),
		cmocka_unit_test(test_renumbered_first_seen),
		cmocka_unit_test(test_mapping_relocated),
		cmocka_unit_test(test_builder),
		cmocka_unit_test(test_mapping_identity),
		cmocka_unit_test(test_mapping_main_first),
		cmocka_unit_test(test_location_identity),
		cmocka_unit_test(test_function_identity),
		cmocka_unit_test(test_sample_labels),
		cmocka_unit_test(test_zero_samples_dropped),
		cmocka_unit_test(test_zero_after_sum_dropped),
		cmocka_unit_test(test_header_rules),
		cmocka_unit_test(test_incompatible_refused),
		cmocka_unit_test(test_gauge_average),
		cmocka_unit_test(test_extreme_values),
		cmocka_unit_test(test_add_scaled),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_real_many),
		cmocka_unit_test(test_real_vs_pprof),
		cmocka_unit_test(test_real_diff_vs_pprof),
		cmocka_unit_test(test_real_self_merge),
		cmocka_unit_test(test_real_diff_form),
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_mgroup),
	};

	return cmocka_run_group_tests_name("merge", tests, NULL, NULL);
}
