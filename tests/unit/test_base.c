/*
 * test_base: the utilities of base/ that have no test of their own: the
 * duration parser every flag, the targets file and last-<n> ranges use, the
 * clocks, array growth, the byte buffer's sticky error and limit, and the
 * memory budget that buffers and arenas reserve from.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base.h"

#define S	INT64_C(1000000000)
#define YEAR	(INT64_C(365) * 86400 * S)

static void
test_durations(void **state)
{
	int64_t ns;

	(void)state;
	assert_int_equal(clock_parse_duration("15s", YEAR, &ns), 0);
	assert_true(ns == 15 * S);
	assert_int_equal(clock_parse_duration("1m30s", YEAR, &ns), 0);
	assert_true(ns == 90 * S);
	assert_int_equal(clock_parse_duration("500ms", YEAR, &ns), 0);
	assert_true(ns == 500000000);
	assert_int_equal(clock_parse_duration("1.5h", YEAR, &ns), 0);
	assert_true(ns == 5400 * S);
	assert_int_equal(clock_parse_duration("30d", YEAR, &ns), 0);
	assert_true(ns == 30 * 86400 * S);
	assert_int_equal(clock_parse_duration("2w", YEAR, &ns), 0);
	assert_true(ns == 14 * 86400 * S);
	assert_int_equal(clock_parse_duration("7us", YEAR, &ns), 0);
	assert_true(ns == 7000);
	/* A unit is required; nothing negative, empty, unknown or past the bound. */
	assert_int_equal(clock_parse_duration("15", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("s", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("-1s", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("10x", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("0s", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("1s ", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("99999999d", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("366d", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("99999999999999999999s", YEAR, &ns), -EINVAL);
	assert_int_equal(clock_parse_duration("9223372036854775807h", INT64_MAX, &ns), -EINVAL);
}

static void
test_clocks(void **state)
{
	int64_t a = clock_mono_ns(), b = clock_mono_ns(), now = clock_now_ns();

	(void)state;
	assert_true(b >= a);
	/* After 2020-01-01 and before 2200: the realtime clock is in ns. */
	assert_true(now > INT64_C(1577836800) * S);
	assert_true(now < INT64_C(7258118400) * S);
}

static void
test_grow(void **state)
{
	uint32_t *v = NULL;
	size_t cap = 0, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		v = xgrow(v, &cap, i + 1, sizeof(*v));
		assert_true(cap >= i + 1);
		v[i] = (uint32_t)i;
	}
	for (i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	/* Already large enough: nothing moves. */
	assert_ptr_equal(xgrow(v, &cap, 10, sizeof(*v)), v);
	free(v);
}

static void
test_buf_sticky_error(void **state)
{
	struct buf b = { .max = 10 };

	(void)state;
	assert_int_equal(buf_adds(&b, "0123456789"), 0);
	assert_int_equal(buf_error(&b), 0);
	/* One byte past max fails, and so does everything after, however small. */
	assert_int_equal(buf_addc(&b, 'x'), -EFBIG);
	assert_int_equal(buf_adds(&b, ""), -EFBIG);
	assert_int_equal(buf_printf(&b, "%d", 1), -EFBIG);
	assert_int_equal(buf_error(&b), -EFBIG);
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "0123456789");
	/* reset clears the error and keeps the limit. */
	buf_reset(&b);
	assert_int_equal(buf_error(&b), 0);
	assert_int_equal(buf_adds(&b, "abc"), 0);
	assert_int_equal(buf_add(&b, "0123456789", 10), -EFBIG);
	buf_free(&b);
	assert_int_equal(buf_error(&b), 0);
	/* An impossible size is an error too, not a wrapped length. */
	assert_int_equal(buf_reserve(&b, SIZE_MAX), -ENOMEM);
	assert_int_equal(buf_error(&b), -ENOMEM);
	buf_free(&b);
}

/* buf_add_fixed writes what printf's "%.Nf" writes, but for exact ties. */
static void
test_fixed(void **state)
{
	static const double vals[] = { 0, 1, -1, 0.004, 0.006, 12.3456, -12.3456, 99.999,
	    1180.0, 431.25, 1e14, -7.5e-7, 123456789.987654, 0.1 + 0.2, 3.14159 };
	struct buf a = { 0 }, b = { 0 };
	size_t i;
	int dec;

	(void)state;
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		for (dec = 0; dec <= 4; dec++) {
			buf_reset(&a);
			buf_reset(&b);
			buf_add_fixed(&a, vals[i], dec);
			buf_printf(&b, "%.*f", dec, vals[i]);
			if (strcmp(b.data, "-0") == 0 || strncmp(b.data, "-0.", 3u) == 0) {
				/* "-0.00": a negative that rounds to zero is written 0 */
				assert_string_equal(a.data, b.data + 1);
				continue;
			}
			assert_string_equal(a.data, b.data);
		}
	buf_reset(&a);
	buf_add_fixed(&a, 1e300, 2);
	buf_add_i64(&a, INT64_MIN);
	buf_addc(&a, ' ');
	buf_add_i64(&a, 0);
	buf_addc(&a, ' ');
	buf_add_i64(&a, 42);
	buf_reset(&b);
	buf_printf(&b, "%.2f%" PRId64 " 0 42", 1e300, INT64_MIN);
	assert_string_equal(a.data, b.data);
	buf_free(&a);
	buf_free(&b);
}

static void
test_budget(void **state)
{
	struct buf big = { 0 }, small = { 0 }, held = { 0 };
	struct arena *a;
	size_t base, used, peak;
	uint64_t refused, refused0;

	(void)state;
	budget_set_limit(64u << 20);
	budget_stats(&base, NULL, &refused0);
	/* Reservations within the limit succeed and are given back exactly. */
	assert_int_equal(budget_reserve(1u << 20), 0);
	budget_stats(&used, &peak, NULL);
	assert_int_equal(used, base + (1u << 20));
	assert_true(peak >= used);
	budget_release(1u << 20);
	budget_stats(&used, NULL, NULL);
	assert_int_equal(used, base);
	/* Past the limit: refused and counted; nothing is taken. */
	assert_int_equal(budget_reserve(65u << 20), -ENOMEM);
	budget_stats(&used, NULL, &refused);
	assert_int_equal(used, base);
	assert_int_equal(refused, refused0 + 1);
	/* A buffer grows within the budget and fails past it, stickily. */
	assert_int_equal(buf_reserve(&big, 32u << 20), 0);
	budget_stats(&used, NULL, NULL);
	assert_true(used >= base + (32u << 20));
	assert_int_equal(buf_reserve(&big, 80u << 20), -ENOMEM);
	assert_int_equal(buf_error(&big), -ENOMEM);
	/* Small buffers are counted but never refused: paths and messages still work. */
	assert_int_equal(buf_reserve(&held, 31u << 20), 0);
	assert_int_equal(budget_reserve(2u << 20), -ENOMEM);
	assert_int_equal(buf_adds(&small, "a path or a reason"), 0);
	/* An arena chunk past the budget is NULL, as for an allocation failure. */
	assert_non_null(a = arena_create());
	assert_null(arena_alloc(a, 8u << 20));
	/*
	 * A refusal calls nobody back: it says memory is short, and wakes a
	 * waiter for pressure, who gives back at its safe point.
	 */
	assert_true(budget_pressed());
	{
		uint64_t seen = 0;
		_Atomic bool stop = false;

		assert_true(budget_wait_pressure(&seen, S, &stop));
		assert_true(seen > 0);
	}
	buf_free(&held);
	assert_non_null(arena_alloc(a, 8u << 20));
	arena_destroy(a);
	buf_free(&big);
	buf_free(&small);
	buf_free(&held);
	budget_stats(&used, NULL, NULL);
	assert_int_equal(used, base);
	/* Arenas reserve near what they hand out: a few bytes cost a small chunk. */
	assert_non_null(a = arena_create());
	assert_non_null(arena_alloc(a, 10));
	budget_stats(&used, NULL, NULL);
	assert_true(used - base <= 4096);
	arena_destroy(a);
	/* Waiting for room that is free returns at once; for more than the limit, never. */
	assert_int_equal(budget_wait(1u << 20, S), 0);
	assert_int_equal(budget_wait(65u << 20, S), -ENOMEM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_buf_sticky_error),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
