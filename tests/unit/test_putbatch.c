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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch),
	};

	return cmocka_run_group_tests_name("putbatch", tests, NULL, NULL);
}
