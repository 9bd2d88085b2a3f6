/*
 * Unit tests of the eBPF sampler's HotSpot decoders
 * (collector/ebpf/runtimes/hotspot.c): method signatures as Java spells
 * them, HotSpot's compressed integers, line number tables and the scope
 * chains of compiled methods, well-formed and malformed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hotspot.h"

static void
test_signature(void **state)
{
	char ret[64], args[128];

	(void)state;
	assert_int_equal(hotspot_signature("(J)J", 4, ret, sizeof(ret), args, sizeof(args)), 0);
	assert_string_equal(ret, "long");
	assert_string_equal(args, "long");
	assert_int_equal(hotspot_signature("([Ljava/lang/String;)V", 22, ret, sizeof(ret), args,
	    sizeof(args)), 0);
	assert_string_equal(ret, "void");
	assert_string_equal(args, "java.lang.String[]");
	assert_int_equal(hotspot_signature("(I[[DLjava/util/Map;Z)[B", 24, ret, sizeof(ret), args,
	    sizeof(args)), 0);
	assert_string_equal(ret, "byte[]");
	assert_string_equal(args, "int, double[][], java.util.Map, boolean");
	assert_int_equal(hotspot_signature("()Ljava/lang/Object;", 20, ret, sizeof(ret), args,
	    sizeof(args)), 0);
	assert_string_equal(ret, "java.lang.Object");
	assert_string_equal(args, "");
	/* Malformed: no parenthesis, void argument, unterminated class, trailing bytes. */
	assert_int_equal(hotspot_signature("J)J", 3, ret, sizeof(ret), args, sizeof(args)), -EINVAL);
	assert_int_equal(hotspot_signature("(V)V", 4, ret, sizeof(ret), args, sizeof(args)), -EINVAL);
	assert_int_equal(hotspot_signature("(Ljava)V", 8, ret, sizeof(ret), args, sizeof(args)),
	    -EINVAL);
	assert_int_equal(hotspot_signature("()VV", 4, ret, sizeof(ret), args, sizeof(args)), -EINVAL);
	assert_int_equal(hotspot_signature("(J", 2, ret, sizeof(ret), args, sizeof(args)), -EINVAL);
	assert_int_equal(hotspot_signature("()[V", 4, ret, sizeof(ret), args, sizeof(args)), -EINVAL);
	/* Small buffers: truncated, NUL-terminated. */
	assert_int_equal(hotspot_signature("(Ljava/lang/String;)Ljava/lang/String;", 38, ret, 5,
	    args, 8), 0);
	assert_string_equal(ret, "java");
	assert_string_equal(args, "java.la");
}

static void
test_unsigned5(void **state)
{
	/* 7; 192 + 1 * 64 = 256; 255 + 191 * 64; a run of five large bytes. */
	const uint8_t b[] = { 7, 192, 1, 255, 191, 200, 200, 200, 200, 200, 1 };
	size_t pos = 0;

	(void)state;
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 0), 7);
	assert_int_equal(pos, 1);
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 0), 256);
	assert_int_equal(pos, 3);
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 0), 255 + 191 * 64);
	assert_int_equal(pos, 5);
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 0),
	    200 + 200LL * 64 + 200LL * 4096 + 200LL * 262144 + 200LL * 16777216);
	assert_int_equal(pos, 10);
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 0), 1);
	/* Past the end, and cut short. */
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 0), -1);
	pos = 0;
	assert_int_equal(hotspot_unsigned5(b + 1, 1, &pos, 0), -1);
}

static void
test_lines(void **state)
{
	/*
	 * bci 0 line 3 (escaped: 0xff, bci +0 -> 0, line +3 -> 6), bci 4 line 5
	 * ((4 << 3) | 2), bci 9 line 7 ((5 << 3) | 2), then the end.
	 */
	const uint8_t t[] = { 0xff, 0, 6, (4 << 3) | 2, (5 << 3) | 2, 0, 0x55 };

	(void)state;
	assert_int_equal(hotspot_line(t, sizeof(t), 0, 0), 3);
	assert_int_equal(hotspot_line(t, sizeof(t), 3, 0), 3);
	assert_int_equal(hotspot_line(t, sizeof(t), 4, 0), 5);
	assert_int_equal(hotspot_line(t, sizeof(t), 8, 0), 5);
	assert_int_equal(hotspot_line(t, sizeof(t), 100, 0), 7);
	assert_int_equal(hotspot_line(t, sizeof(t), -1, 0), 3);
	/* No table, a cut one, a negative bci delta: no line past what decodes. */
	assert_int_equal(hotspot_line(t, 0, 5, 0), 0);
	assert_int_equal(hotspot_line(t, 2, 5, 0), 0);
	{
		const uint8_t neg[] = { (2 << 3) | 1, 0xff, 5, 0, 0 };

		assert_int_equal(hotspot_line(neg, sizeof(neg), 10, 0), 1);
	}
}

static void
test_scopes(void **state)
{
	/*
	 * Scopes data: offset 0 unused (serialized null); at 1 the outermost
	 * scope (sender 0, method 1, bci 14 + 1); at 4 the one inlined into it
	 * (sender 1, method 2, bci 3 + 1); at 7 the innermost (sender 4,
	 * method 3, bci 0 + 1).
	 */
	const uint8_t sc[] = { 0, 0, 1, 15, 1, 2, 4, 4, 3, 1 };
	const uint64_t meta[] = { 0x1000, 0x2000, 0x3000 };
	uint64_t out[8];
	int64_t bcis[8];

	(void)state;
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 3, 7, out, bcis, 8, 0), 3);
	assert_int_equal(out[0], 0x3000);
	assert_int_equal(bcis[0], 0);
	assert_int_equal(out[1], 0x2000);
	assert_int_equal(bcis[1], 3);
	assert_int_equal(out[2], 0x1000);
	assert_int_equal(bcis[2], 14);
	/* At most max; a method index past the metadata; an offset past the data. */
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 3, 7, out, bcis, 2, 0), 2);
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 2, 7, out, bcis, 8, 0), 0);
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 3, 10, out, bcis, 8, 0), 0);
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 3, 0, out, bcis, 8, 0), 0);
	{
		/* A sender that points forward (a loop) ends the chain. */
		const uint8_t loop[] = { 0, 1, 1, 1 };

		assert_int_equal(hotspot_scopes(loop, sizeof(loop), meta, 3, 1, out, bcis, 8, 0), 0);
	}
}

/* JDK 21's streams: every byte one more, the byte 0 excluded (UNSIGNED5's X = 1). */
static void
test_excluded(void **state)
{
	/* 7 -> 8; 191 + 1 * 64 -> { 192, 2 }; a 0 byte is no integer. */
	const uint8_t b[] = { 8, 192, 2, 0 };
	/* The scopes of test_scopes, each byte one more (offsets as before). */
	const uint8_t sc[] = { 0, 1, 2, 16, 2, 3, 5, 5, 4, 2 };
	/* bci 0 line 3 (escaped), bci 4 line 5, then the end. */
	const uint8_t t[] = { 0xff, 1, 7, (4 << 3) | 2, 0 };
	const uint64_t meta[] = { 0x1000, 0x2000, 0x3000 };
	uint64_t out[8];
	int64_t bcis[8];
	size_t pos = 0;

	(void)state;
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 1), 7);
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 1), 191 + 64);
	assert_int_equal(pos, 3);
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 1), -1);
	pos = 0;
	assert_int_equal(hotspot_unsigned5(b, sizeof(b), &pos, 2), -1);
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 3, 7, out, bcis, 8, 1), 3);
	assert_int_equal(out[0], 0x3000);
	assert_int_equal(bcis[0], 0);
	assert_int_equal(out[2], 0x1000);
	assert_int_equal(bcis[2], 14);
	/* Read as JDK 17's, the chain makes no sense. */
	assert_int_equal(hotspot_scopes(sc, sizeof(sc), meta, 3, 7, out, bcis, 8, 0), 0);
	assert_int_equal(hotspot_line(t, sizeof(t), 0, 1), 3);
	assert_int_equal(hotspot_line(t, sizeof(t), 5, 1), 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signature),
		cmocka_unit_test(test_unsigned5),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_scopes),
		cmocka_unit_test(test_excluded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
