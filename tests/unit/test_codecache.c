/*
 * codecache: the runtimes' cache of code objects (collector/ebpf/runtimes/
 * codecache.c): an entry found again by address, dropped and claimed anew;
 * a table emptied as a whole at 3/4 full; line tables kept until the bound
 * of rows held, their bytes given back when dropped or forgotten, and
 * found by position; reads of this process's own memory through the
 * worker, refused at address 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecache.h"

struct tentry {
	struct cc_entry	 e;
	uint64_t	 word;		/* what the runtime checks */
};

static const struct codecache_conf conf = {
	.entry_size = sizeof(struct tentry), .slots = 16, .addr_shift = 3,
	.mem_max = 64, .deadline_ns = 2000LL * 1000 * 1000,
};

static void
test_entries(void **state)
{
	struct codecache *cc = codecache_create(&conf);
	struct cc_table t = { 0 };
	struct cc_entry *e;
	struct tentry *te;

	(void)state;
	assert_non_null(cc);
	assert_null(codecache_find(cc, &t, 0x1000));
	e = codecache_slot(cc, &t, 0x1000);
	assert_non_null(e);
	assert_int_equal(e->addr, 0);
	e = codecache_claim(cc, &t, e, 0x1000);
	te = (struct tentry *)e;
	te->word = 7;
	assert_non_null(e->name = strdup("f"));
	assert_ptr_equal(codecache_find(cc, &t, 0x1000), e);
	assert_ptr_equal(codecache_slot(cc, &t, 0x1000), e);
	assert_int_equal(t.used, 1);
	/* Another object at the address: dropped, the slot free again. */
	codecache_drop(cc, &t, e);
	assert_int_equal(e->addr, 0);
	assert_null(e->name);
	assert_int_equal(te->word, 0);
	assert_int_equal(t.used, 0);
	assert_null(codecache_find(cc, &t, 0x1000));
	codecache_forget(cc, &t);
	assert_null(t.slots);
	codecache_destroy(cc);
}

static void
test_full(void **state)
{
	struct codecache *cc = codecache_create(&conf);
	struct cc_table t = { 0 };
	struct cc_entry *e;
	uint64_t a;

	(void)state;
	assert_non_null(cc);
	for (a = 1; a <= 12; a++) {
		e = codecache_claim(cc, &t, codecache_slot(cc, &t, a * 8), a * 8);
		assert_non_null(e->file = strdup("x.py"));
	}
	assert_int_equal(t.used, 12);
	/* 3/4 of 16: the next one empties the table first. */
	e = codecache_claim(cc, &t, codecache_slot(cc, &t, 13 * 8), 13 * 8);
	assert_int_equal(e->addr, 13 * 8);
	assert_int_equal(t.used, 1);
	assert_null(codecache_find(cc, &t, 8));
	assert_ptr_equal(codecache_find(cc, &t, 13 * 8), e);
	codecache_forget(cc, &t);
	codecache_destroy(cc);
}

static void
test_lines(void **state)
{
	struct codecache *cc = codecache_create(&conf);
	struct codecache_stats st;
	struct cc_table t = { 0 };
	struct cc_entry *a, *b;

	(void)state;
	assert_non_null(cc);
	a = codecache_claim(cc, &t, codecache_slot(cc, &t, 0x100), 0x100);
	b = codecache_claim(cc, &t, codecache_slot(cc, &t, 0x200), 0x200);
	assert_false(codecache_lines_full(cc, &t));
	assert_int_equal(codecache_lines_keep(cc, &t, a, calloc(6, 8), 6, 8), 0);
	assert_int_equal(a->lines, CC_LINES_READ);
	/* 48 + 24 > 64: refused, freed, to try again. */
	assert_int_equal(codecache_lines_keep(cc, &t, b, calloc(3, 8), 3, 8), -ENOMEM);
	assert_int_equal(b->lines, CC_LINES_NOT_READ);
	assert_null(b->rows);
	assert_int_equal(codecache_lines_keep(cc, &t, b, calloc(2, 8), 2, 8), 0);
	assert_true(codecache_lines_full(cc, &t));
	codecache_get_stats(cc, &st);
	assert_int_equal(st.lines_bytes, 64);
	assert_int_equal(st.lines_decoded, 2);
	codecache_drop(cc, &t, a);
	codecache_get_stats(cc, &st);
	assert_int_equal(st.lines_bytes, 16);
	codecache_forget(cc, &t);
	codecache_get_stats(cc, &st);
	assert_int_equal(st.lines_bytes, 0);
	codecache_destroy(cc);
}

static void
test_lines_find(void **state)
{
	static const struct { uint32_t end; int32_t line; } rows[] = {
		{ 4, 10 }, { 9, 0 }, { 20, 12 },
	};

	(void)state;
	assert_int_equal(codecache_lines_find(rows, 3, sizeof(rows[0]), 0), 0);
	assert_int_equal(codecache_lines_find(rows, 3, sizeof(rows[0]), 3), 0);
	assert_int_equal(codecache_lines_find(rows, 3, sizeof(rows[0]), 4), 1);
	assert_int_equal(codecache_lines_find(rows, 3, sizeof(rows[0]), 19), 2);
	assert_int_equal(codecache_lines_find(rows, 3, sizeof(rows[0]), 20), 3);
	assert_int_equal(codecache_lines_find(rows, 0, sizeof(rows[0]), 0), 0);
}

static void
test_read(void **state)
{
	static const char src[] = "code object";
	struct codecache *cc = codecache_create(&conf);
	char dst[sizeof(src)];

	(void)state;
	assert_non_null(cc);
	assert_int_equal(codecache_read(cc, getpid(), (uint64_t)(uintptr_t)src, dst,
	    sizeof(dst)), 0);
	assert_string_equal(dst, src);
	assert_int_equal(codecache_read(cc, getpid(), 0, dst, sizeof(dst)), -EFAULT);
	codecache_destroy(cc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_lines_find),
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
