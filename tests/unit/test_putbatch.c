/*
 * test_putbatch: store_put_profiles(), the batch put OTLP requests use, on a
 * real RocksDB store in a temporary directory: every profile of a batch is
 * stored (several in one series, sharing new symbols, each read back whole)
 * or, when one of them is refused, none is and the reason names it.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "util.h"

#define NS	INT64_C(1000000000)
#define T0	(INT64_C(1795305600) * NS)	/* 2026-11-22T00:00:00Z */

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A one-sample CPU profile whose leaf is function fn, valued v. */
static struct profile *
one(const char *fn, int64_t v)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 10000000, "cpu/nanoseconds");
	uint32_t f = tp_func(p, fn, "main.go", 1);

	tp_sample(p, (int64_t[]){ v }, (int)tp_loc(p, 0, 0x1000, (int)f, -1), -1, NULL);
	return p;
}

static void
test_batch(void **state)
{
	char dir[64] = "/tmp/profilefs-unit.XXXXXX";
	struct store *st = NULL;
	struct store_stats s0, s1;
	struct store_input in[3];
	struct store_ref refs[3], r;
	struct labelset ls = { .n = 0 };
	struct profile *p[3], *back;
	struct buf err = { 0 }, out = { 0 };
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(store_open(dir, &st, &err), 0);
	assert_int_equal(labels_add(&ls, "pod", "a", NULL), 0);
	p[0] = one("main.alpha", 10);
	p[1] = one("main.beta", 20);
	p[2] = one("main.gamma", 30);
	memset(in, 0, sizeof(in));
	for (i = 0; i < 3; i++) {
		in[i].service = i == 2 ? "other" : "svc";
		in[i].labels = &ls;
		in[i].created_at = T0 + (int64_t)i * 600 * NS;
		in[i].source = "otlp";
	}

	/* All three, two of them in one series with symbols new to it. */
	store_get_stats(st, &s0);
	assert_int_equal(store_put_profiles(st, in, (const struct profile *const *)p, 3, refs,
	    &err), 0);
	store_get_stats(st, &s1);
	assert_int_equal(s1.profiles, s0.profiles + 3);
	assert_int_equal(refs[0].series, refs[1].series);
	assert_true(refs[2].series != refs[0].series);
	for (i = 0; i < 3; i++) {
		assert_true(refs[i].time == in[i].created_at);
		buf_reset(&out);
		assert_int_equal(store_get(st, refs[i].id, &r, &out), 0);
		assert_true(r.series == refs[i].series);
		assert_int_equal(profile_decode(out.data, out.len, &back, NULL), 0);
		assert_true(profile_total(back, 0) == 10 * (int64_t)(i + 1));
		assert_string_equal(profile_str(back,
		    back->functions[back->locations[back->samples[0].locs[0]].lines[0].function].name),
		    i == 0 ? "main.alpha" : i == 1 ? "main.beta" : "main.gamma");
		profile_free(back);
	}

	/* One refused (a bad service): none stored, the reason given. */
	in[1].service = "a/b";
	buf_reset(&err);
	assert_int_equal(store_put_profiles(st, in, (const struct profile *const *)p, 3, NULL,
	    &err), -EINVAL);
	assert_non_null(strstr(err.data, "service"));
	store_get_stats(st, &s0);
	assert_int_equal(s0.profiles, s1.profiles);

	/* An empty batch stores nothing and succeeds. */
	assert_int_equal(store_put_profiles(st, in, (const struct profile *const *)p, 0, NULL,
	    &err), 0);

	for (i = 0; i < 3; i++)
		profile_free(p[i]);
	labels_clear(&ls);
	buf_free(&err);
	buf_free(&out);
	store_close(st);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Functions fn<lo> .. fn<lo + n - 1>, one sample each valued its number. */
static struct profile *
many(int lo, int n)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 10000000, "cpu/nanoseconds");
	char name[32];
	int i;

	for (i = lo; i < lo + n; i++) {
		snprintf(name, sizeof(name), "main.fn%d", i);
		tp_sample(p, (int64_t[]){ i }, (int)tp_loc(p, 0, 0x1000 + (uint64_t)i * 16,
		    (int)tp_func(p, name, "main.go", i), -1), -1, NULL);
	}
	return p;
}

/* Profile ref r read back: n samples, fn<lo + k> valued lo + k. */
static void
check_many(struct store *st, const struct store_ref *r, int lo, int n)
{
	struct store_ref got;
	struct profile *back;
	struct buf out = { 0 };
	char name[32];
	int64_t sum = 0;
	size_t i;

	assert_int_equal(store_get(st, r->id, &got, &out), 0);
	assert_int_equal(profile_decode(out.data, out.len, &back, NULL), 0);
	assert_int_equal(back->nsamples, n);
	for (i = 0; i < back->nsamples; i++) {
		const struct pf_sample *s = &back->samples[i];
		const char *fn = profile_str(back,
		    back->functions[back->locations[s->locs[0]].lines[0].function].name);

		snprintf(name, sizeof(name), "main.fn%lld", (long long)s->values[0]);
		assert_string_equal(fn, name);
		assert_true(s->values[0] >= lo && s->values[0] < lo + n);
		sum += s->values[0];
	}
	assert_true(sum == (int64_t)n * lo + (int64_t)n * (n - 1) / 2);
	profile_free(back);
	buf_free(&out);
}

/*
 * A profile's new symbols go as runs (one record per kind and stretch of
 * ids): two series of one service in one batch, sharing entries neither
 * had before (their runs overlap), and entries of a refused batch used
 * later (out of id order), all read back whole after the store reopens.
 */
static void
test_symbol_runs(void **state)
{
	char dir[64] = "/tmp/profilefs-unit.XXXXXX";
	struct store *st = NULL;
	struct store_input in[2];
	struct store_ref refs[2], one_ref;
	struct labelset la = { .n = 0 }, lb = { .n = 0 };
	struct profile *p[2], *q;
	struct buf err = { 0 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(store_open(dir, &st, &err), 0);
	assert_int_equal(labels_add(&la, "pod", "a", NULL), 0);
	assert_int_equal(labels_add(&lb, "pod", "b", NULL), 0);
	memset(in, 0, sizeof(in));
	in[0].service = in[1].service = "svc";
	in[0].labels = &la;
	in[1].labels = &lb;
	in[0].created_at = in[1].created_at = T0;
	in[0].source = in[1].source = "otlp";

	/* Refused: fn0..fn19 are in the table, never written. */
	q = many(0, 20);
	p[0] = q;
	p[1] = q;
	in[1].service = "a/b";
	assert_int_equal(store_put_profiles(st, in, (const struct profile *const *)p, 2, NULL,
	    &err), -EINVAL);
	profile_free(q);
	in[1].service = "svc";

	/* fn40..fn79 new, then fn10..fn19 again; the second: fn60..fn99. */
	p[0] = many(10, 50);
	p[1] = many(60, 40);
	in[0].created_at = T0 + 600 * NS;
	assert_int_equal(store_put_profiles(st, in, (const struct profile *const *)p, 2, refs,
	    &err), 0);
	/* Then a profile of entries all known: no run at all. */
	q = many(30, 20);
	assert_int_equal(store_put_profile(st, &in[0], q, &one_ref, &err), 0);
	check_many(st, &refs[0], 10, 50);
	check_many(st, &refs[1], 60, 40);
	check_many(st, &one_ref, 30, 20);
	store_close(st);

	/* The symbols loaded again from their records. */
	st = NULL;
	assert_int_equal(store_open(dir, &st, &err), 0);
	check_many(st, &refs[0], 10, 50);
	check_many(st, &refs[1], 60, 40);
	check_many(st, &one_ref, 30, 20);

	profile_free(p[0]);
	profile_free(p[1]);
	profile_free(q);
	labels_clear(&la);
	labels_clear(&lb);
	buf_free(&err);
	store_close(st);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_symbol_runs),
	};

	return cmocka_run_group_tests_name("putbatch", tests, NULL, NULL);
}
