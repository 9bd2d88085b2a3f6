/*
 * test_base: the utilities of base/ that have no test of their own: the
 * duration parser every flag, the targets file and last-<n> ranges use, the
 * clocks, the one ISO 8601 parser, %XX decoding, varints and floor_div,
 * array growth, the byte buffer's sticky error and limit, and the memory
 * budget that buffers and arenas reserve from.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
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

/* clock_parse_iso: every form, the unit it names, and what it refuses. */
static void
test_iso_times(void **state)
{
	int64_t ns, unit;

	(void)state;
	assert_int_equal(clock_parse_iso("2026-11-26", 10, 0, &ns, &unit), 0);
	assert_int_equal(ns, INT64_C(1795651200) * S);
	assert_int_equal(unit, 86400 * S);
	assert_int_equal(clock_parse_iso("2026-11-26T01", 13, 0, &ns, &unit), 0);
	assert_int_equal(unit, 3600 * S);
	assert_int_equal(clock_parse_iso("2026-11-26T01:02", 16, 0, &ns, &unit), 0);
	assert_int_equal(unit, 60 * S);
	assert_int_equal(clock_parse_iso("2026-11-26T01:02:03", 19, 0, &ns, &unit), 0);
	assert_int_equal(ns, (INT64_C(1795651200) + 3723) * S);
	assert_int_equal(unit, S);
	/* A fraction and a Z only when the caller takes them, and only after seconds. */
	assert_int_equal(clock_parse_iso("2026-11-26T01:02:03.5Z", 22, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26T01:02:03.5Z", 22, CLOCK_ISO_FRACTION, &ns,
	    &unit), 0);
	assert_int_equal(ns, (INT64_C(1795651200) + 3723) * S + S / 2);
	assert_int_equal(unit, 1);
	assert_int_equal(clock_parse_iso("2026-11-26T01:02:03,123456789", 29, CLOCK_ISO_FRACTION,
	    &ns, NULL), 0);
	assert_int_equal(ns % S, 123456789);
	assert_int_equal(clock_parse_iso("2026-11-26T01:02:03.1234567891", 30, CLOCK_ISO_FRACTION,
	    &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26T01:02:03.", 20, CLOCK_ISO_FRACTION, &ns,
	    NULL), -EINVAL);
	/* A trailing Z at any precision; the basic form (no ':'), not mixed. */
	assert_int_equal(clock_parse_iso("2026-11-26Z", 11, 0, &ns, &unit), 0);
	assert_int_equal(unit, 86400 * INT64_C(1000000000));
	assert_int_equal(clock_parse_iso("2026-11-26T0102", 15, 0, &ns, &unit), 0);
	assert_int_equal(unit, 60 * INT64_C(1000000000));
	assert_int_equal(clock_parse_iso("2026-11-26T010203Z", 18, 0, &ns, &unit), 0);
	assert_int_equal(unit, INT64_C(1000000000));
	assert_int_equal(clock_parse_iso("2026-11-26T010203.5Z", 20, CLOCK_ISO_FRACTION, &ns,
	    &unit), 0);
	assert_int_equal(clock_parse_iso("2026-11-26T01:0203", 18, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26T0102:03", 18, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26TZ", 12, 0, &ns, NULL), -EINVAL);
	/* The length bounds the text: a longer string is not read past it. */
	assert_int_equal(clock_parse_iso("2026-11-26..2026-11-27", 10, 0, &ns, &unit), 0);
	assert_int_equal(unit, 86400 * S);
	/* Calendar checks, as Go's time.Parse makes them. */
	assert_int_equal(clock_parse_iso("2026-02-29", 10, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2024-02-29", 10, 0, &ns, NULL), 0);
	assert_int_equal(clock_parse_iso("2026-13-01", 10, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26T24", 13, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26T23:60", 16, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-11-26 01", 13, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("2026-1-26", 9, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("+026-11-26", 10, 0, &ns, NULL), -EINVAL);
	/* Inside int64 nanoseconds, with a day to spare. */
	assert_int_equal(clock_parse_iso("1677-09-21", 10, 0, &ns, NULL), -EINVAL);
	assert_int_equal(clock_parse_iso("1677-09-22", 10, 0, &ns, NULL), 0);
	assert_int_equal(clock_parse_iso("2262-04-10", 10, 0, &ns, NULL), 0);
	assert_int_equal(clock_parse_iso("2262-04-11", 10, 0, &ns, NULL), -EINVAL);
}

/* pct_decode: strict, '+' as a space, %00 allowed, lenient; in place. */
static void
test_pct_decode(void **state)
{
	struct buf b = { 0 };
	char s[32];

	(void)state;
	assert_int_equal(buf_add_pct_decoded(&b, "a%2Fb%2cc+d", 11, 0), 0);
	assert_string_equal(b.data, "a/b,c+d");
	buf_reset(&b);
	assert_int_equal(buf_add_pct_decoded(&b, "a%2Fb%2cc+d", 11, PCT_PLUS_SPACE), 0);
	assert_string_equal(b.data, "a/b,c d");
	buf_reset(&b);
	assert_int_equal(buf_add_pct_decoded(&b, "%4", 2, 0), -EINVAL);
	assert_int_equal(buf_add_pct_decoded(&b, "%G0", 3, 0), -EINVAL);
	assert_int_equal(buf_add_pct_decoded(&b, "%00", 3, 0), -EINVAL);
	/* The length bounds the escape: "%41" cut to two bytes is a cut escape. */
	assert_int_equal(buf_add_pct_decoded(&b, "%41", 2, 0), -EINVAL);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_add_pct_decoded(&b, "x%00y", 5, PCT_NUL_OK), 0);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "x\0y", 3);
	buf_free(&b);
	snprintf(s, sizeof(s), "%s", "%41%4%00+%zz%62");
	assert_int_equal(pct_decode(s, s, strlen(s), PCT_LENIENT | PCT_PLUS_SPACE), 11);
	assert_memory_equal(s, "A%4%00 %zzb", 11);
}

/* base64: RFC 4648's vectors, both alphabets, padding optional, bad characters refused. */
static void
test_base64(void **state)
{
	static const char *const vec[][2] = { { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" },
	    { "foo", "Zm9v" }, { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
	    { "foobar", "Zm9vYmFy" } };
	unsigned char bin[256];
	struct buf b = { 0 }, d = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		buf_reset(&b);
		assert_int_equal(buf_add_base64(&b, vec[i][0], strlen(vec[i][0])), 0);
		assert_int_equal(b.len, strlen(vec[i][1]));
		assert_memory_equal(b.data ? b.data : "", vec[i][1], b.len);
		buf_reset(&d);
		assert_int_equal(buf_add_base64_decoded(&d, vec[i][1], strlen(vec[i][1])), 0);
		assert_int_equal(d.len, strlen(vec[i][0]));
		assert_memory_equal(d.data, vec[i][0], d.len);
	}
	/* Every byte value, through both alphabets, with and without padding. */
	for (i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(255 - i);
	buf_reset(&b);
	assert_int_equal(buf_add_base64(&b, bin, sizeof(bin) - 1), 0);
	for (i = 0; i < b.len; i++)
		b.data[i] = b.data[i] == '+' ? '-' : b.data[i] == '/' ? '_' : b.data[i];
	while (b.len && b.data[b.len - 1] == '=')
		b.data[--b.len] = '\0';
	buf_reset(&d);
	assert_int_equal(buf_add_base64_decoded(&d, b.data, b.len), 0);
	assert_int_equal(d.len, sizeof(bin) - 1);
	assert_memory_equal(d.data, bin, d.len);
	buf_reset(&d);
	assert_int_equal(buf_add_base64_decoded(&d, "Zm9v!", 5), -EINVAL);
	assert_int_equal(buf_add_base64_decoded(&d, "Zm 9v", 5), -EINVAL);
	buf_free(&b);
	buf_free(&d);
}

/* Varints: protobuf's encoding, round trips, and cut or overlong input refused. */
static void
test_varints(void **state)
{
	static const uint64_t v[] = { 0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX };
	unsigned char b[VARINT_MAX + 1];
	const unsigned char *p;
	uint64_t got;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = varint_put(b, v[i]);
		assert_true(n >= 1 && n <= VARINT_MAX);
		p = b;
		assert_int_equal(varint_get(&p, b + n, &got), 0);
		assert_true(got == v[i]);
		assert_ptr_equal(p, b + n);
		p = b;
		if (n > 1)
			assert_int_equal(varint_get(&p, b + n - 1, &got), -EINVAL);
	}
	n = varint_put(b, 300);
	assert_int_equal(n, 2);
	assert_int_equal(b[0], 0xac);
	assert_int_equal(b[1], 0x02);
	memset(b, 0xff, sizeof(b));
	p = b;
	assert_int_equal(varint_get(&p, b + sizeof(b), &got), -EINVAL);
}

static void
test_floor_div(void **state)
{
	(void)state;
	assert_int_equal(floor_div(7, 2), 3);
	assert_int_equal(floor_div(-7, 2), -4);
	assert_int_equal(floor_div(-8, 2), -4);
	assert_int_equal(floor_div(0, 5), 0);
	assert_int_equal(floor_div(-1, 600), -1);
	assert_int_equal(floor_div(INT64_MIN, S), INT64_MIN / S - 1);
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
		cmocka_unit_test(test_iso_times),
		cmocka_unit_test(test_pct_decode),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_floor_div),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_buf_sticky_error),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
