/*
 * test_base: the utilities of base/ that have no test of their own: the
 * duration parser every flag, the targets file and last-<n> ranges use, the
 * clocks, array growth, and the byte buffer's sticky error and limit.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_buf_sticky_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
