/*
 * test_delete: deletion in the store (store/delete.c) on a real RocksDB in a
 * temporary directory. After deleting one profile, a merge over ranges that
 * compacted windows serve holds exactly the others' sums, before and after
 * the compactor rebuilt the windows and across a reopen; deleting series by
 * service, type and selector takes them out of every merge and listing; the
 * names producers may give are checked (names.c).
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
#define MIN	(60 * NS)
#define DAY	(86400 * NS)
#define T0	(INT64_C(1795305600) * NS)	/* 2026-11-22T00:00:00Z */

struct fixture {
	char		 dir[64];
	struct store	*st;
};

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

	snprintf(f->dir, sizeof(f->dir), "/tmp/profilefs-unit.XXXXXX");
	if (mkdtemp(f->dir) == NULL || store_open(f->dir, &f->st, &err) != 0)
		return -1;
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
	free(f);
	return 0;
}

/* A CPU profile of one sample of value v at a function named name. */
static uint64_t
put(struct fixture *f, const char *svc, const char *labels, int64_t t, int64_t v)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	uint32_t fn = tp_func(p, "main.work", "main.go", 1);
	struct store_input in = { .service = svc, .type = "cpu", .created_at = t,
	    .source = "ingest" };
	struct labelset ls = { .n = 0 };
	struct store_ref ref;
	struct buf b = { 0 }, err = { 0 };

	tp_sample(p, (int64_t[]){ 1, v }, (int)tp_loc(p, 0, 1, (int)fn, -1), -1, NULL);
	assert_int_equal(profile_encode(p, true, &b), 0);
	if (labels)
		assert_int_equal(labels_parse(labels, &ls, NULL), 0);
	in.labels = labels ? &ls : NULL;
	if (store_put(f->st, &in, b.data, b.len, &ref, &err) != 0)
		fail_msg("store_put: %s", err.data);
	labels_clear(&ls);
	buf_free(&b);
	buf_free(&err);
	profile_free(p);
	return ref.id;
}

/* The cpu total of service svc over [from, to), 0 when empty; *n: profiles merged. */
static int64_t
total(struct fixture *f, const char *svc, int64_t from, int64_t to, size_t *n)
{
	struct query q = { .service = svc, .type = "cpu", .from = from, .to = to };
	struct query_result res;
	int64_t v = 0;

	assert_int_equal(query_merge(f->st, &q, &res), 0);
	if (res.merged)
		v = profile_total(res.merged, 1);
	if (n)
		*n = res.nmerged;
	query_result_free(&res);
	return v;
}

static void
test_delete_profile(void **state)
{
	struct fixture *f = *state;
	struct store_ref ref;
	struct buf err = { 0 };
	uint64_t ids[6];
	size_t i, n;

	for (i = 0; i < 6; i++)
		ids[i] = put(f, "svc", i % 2 ? "pod=a" : "pod=b", T0 + (int64_t)i * 7 * MIN,
		    (int64_t)(1 << i));
	assert_int_equal(store_compact(f->st, NULL), 0);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, &n), 63);
	assert_int_equal(n, 6);
	/* The third profile (value 4) sits in a window the day's merge used. */
	assert_int_equal(store_delete_profile(f->st, ids[2], &ref, &err), 0);
	assert_int_equal(ref.id, ids[2]);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, &n), 59);
	assert_int_equal(n, 5);
	assert_int_equal(total(f, "svc", INT64_MIN, INT64_MAX, NULL), 59);
	/* Once the compactor rebuilt the windows, still exact. */
	assert_int_equal(store_compact(f->st, NULL), 0);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, NULL), 59);
	assert_int_equal(total(f, "svc", T0 + 10 * MIN, T0 + 20 * MIN, NULL), 0);
	assert_int_equal(total(f, "svc", T0 + 20 * MIN, T0 + 30 * MIN, NULL), 24);
	/* Gone for good: again -ENOENT, and after a reopen. */
	assert_int_equal(store_delete_profile(f->st, ids[2], NULL, NULL), -ENOENT);
	assert_int_equal(store_get(f->st, ids[2], &ref, &err), -ENOENT);
	store_close(f->st);
	assert_int_equal(store_open(f->dir, &f->st, &err), 0);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, &n), 59);
	assert_int_equal(n, 5);
	assert_int_equal(store_delete_profile(f->st, UINT64_C(999999), NULL, NULL), -ENOENT);
	buf_free(&err);
}

static void
test_delete_series(void **state)
{
	struct fixture *f = *state;
	struct labelset sel;
	struct query q = { .service = "svc", .type = "cpu" };
	uint64_t ns = 0, np = 0;
	size_t i;

	for (i = 0; i < 4; i++) {
		put(f, "svc", "pod=a,zone=x", T0 + (int64_t)i * MIN, 1);
		put(f, "svc", "pod=b", T0 + (int64_t)i * MIN, 10);
		put(f, "other", NULL, T0 + (int64_t)i * MIN, 100);
	}
	assert_int_equal(store_compact(f->st, NULL), 0);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, NULL), 44);
	/* A selector: the series whose labels include pod=a. */
	assert_int_equal(labels_parse("pod=a", &sel, NULL), 0);
	q.sel = &sel;
	assert_int_equal(store_delete_series(f->st, &q, &ns, &np, NULL), 0);
	labels_clear(&sel);
	assert_int_equal(ns, 1);
	assert_int_equal(np, 4);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, NULL), 40);
	/* A whole service; the other stays. */
	q.sel = NULL;
	q.type = NULL;
	assert_int_equal(store_delete_series(f->st, &q, &ns, &np, NULL), 0);
	assert_int_equal(np, 4);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, NULL), 0);
	assert_int_equal(total(f, "other", T0, T0 + DAY, NULL), 400);
	assert_int_equal(store_compact(f->st, NULL), 0);
	assert_int_equal(total(f, "svc", INT64_MIN, INT64_MAX, NULL), 0);
	/* A new profile under the deleted name starts afresh. */
	put(f, "svc", "pod=b", T0, 5);
	assert_int_equal(total(f, "svc", T0, T0 + DAY, NULL), 5);
}

static void
test_names(void **state)
{
	struct buf err = { 0 };

	(void)state;
	assert_int_equal(store_check_service_name("checkout", NULL), 0);
	assert_int_equal(store_check_service_name("shop.api-2_x", NULL), 0);
	assert_int_equal(store_check_service_name("check out", &err), -EINVAL);
	assert_int_equal(store_check_service_name("checkoutenv=prod", &err), -EINVAL);
	assert_non_null(strstr(err.data, "-g"));
	assert_int_equal(store_check_service_name("ingest", NULL), -EINVAL);
	assert_int_equal(store_check_service_name("", NULL), -EINVAL);
	buf_reset(&err);
	assert_int_equal(store_check_known_type("auto", NULL), 0);
	assert_int_equal(store_check_known_type("heap", NULL), 0);
	assert_int_equal(store_check_known_type("cpuu", &err), -EINVAL);
	assert_non_null(strstr(err.data, "cpu heap"));
	buf_free(&err);
}

static void
test_profile_type(void **state)
{
	struct profile *cpu = tp_new("cpu", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	struct profile *heap = tp_new("space", "bytes", 1,
	    "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes");
	struct profile *odd = tp_new("x", "y", 1, "frobs/count");
	struct buf err = { 0 };

	(void)state;
	assert_int_equal(store_check_profile_type("cpu", cpu, NULL), 0);
	assert_int_equal(store_check_profile_type("wall", cpu, NULL), 0);
	assert_int_equal(store_check_profile_type("heap", cpu, &err), -EINVAL);
	assert_non_null(strstr(err.data, "cpu profile, not heap"));
	assert_int_equal(store_check_profile_type("heap", heap, NULL), 0);
	assert_int_equal(store_check_profile_type("allocs", heap, NULL), 0);
	assert_int_equal(store_check_profile_type("cpu", heap, NULL), -EINVAL);
	assert_int_equal(store_check_profile_type("other", heap, NULL), 0);
	assert_int_equal(store_check_profile_type("mutex", odd, NULL), 0);
	profile_free(cpu);
	profile_free(heap);
	profile_free(odd);
	buf_free(&err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delete_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_series, setup, teardown),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_profile_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
