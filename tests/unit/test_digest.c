/*
 * The stored hashes: pfhash64 keeps the values that stores written by
 * earlier builds hold, and digest128 is SHA-256's first half.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base.h"

static void
test_pfhash64_frozen(void **state)
{
	(void)state;
	/* Values of stores already on disk: these never change. */
	assert_true(pfhash64("", 0) == UINT64_C(0xf52a15e9a9b5e89b));
	assert_true(pfhash64("abc", 3) == UINT64_C(0x9413abd9f29699ae));
	assert_true(pfhash64("pprof-v1 zlib 1.2.13", 20) == UINT64_C(0xaa4bbd41de49a1e4));
	assert_true(pfhash64("abc", 3) != pfhash64("abd", 3));
}

static void
test_digest128(void **state)
{
	char d[DIGEST128_HEX + 1], e[DIGEST128_HEX + 1];

	(void)state;
	/* SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a3... */
	digest128("abc", 3, d);
	assert_string_equal(d, "ba7816bf8f01cfea414140de5dae2223");
	digest128("", 0, d);
	assert_string_equal(d, "e3b0c44298fc1c149afbf4c8996fb924");
	digest128("abd", 3, e);
	assert_int_equal(strlen(e), DIGEST128_HEX);
	assert_string_not_equal(d, e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pfhash64_frozen),
		cmocka_unit_test(test_digest128),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
