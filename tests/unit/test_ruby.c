/*
 * Unit tests of the eBPF sampler's Ruby support: the executable and the
 * service a Ruby command line names (collector/ebpf/runtimes/runtime.c),
 * and an iseq's line table as the VM keeps it, succinct index table or
 * plain positions (collector/ebpf/runtimes/ruby.c). The succinct tables
 * are built here the way the VM builds them (7-bit ranks of the first 54
 * positions, nine words to a 64-bit word; then 512-position blocks of a
 * rank, seven 9-bit ranks of their 64-bit words and the bits).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ruby.h"
#include "runtime.h"

#define SVC(lit, out) runtime_service(RUNTIME_RUBY, (lit), sizeof(lit) - 1, (out), sizeof(out))

static void
test_by_exe(void **state)
{
	(void)state;
	assert_int_equal(runtime_by_exe("ruby"), RUNTIME_RUBY);
	assert_int_equal(runtime_by_exe("ruby3.1"), RUNTIME_RUBY);
	assert_int_equal(runtime_by_exe("ruby-prof"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe("rubyx"), RUNTIME_NONE);
}

static void
test_service(void **state)
{
	char out[64];

	(void)state;
	assert_true(SVC("ruby\0/srv/app/worker.rb\0", out));
	assert_string_equal(out, "worker");
	assert_true(SVC("ruby3.1\0-w\0-I\0lib\0-rjson\0-r\0set\0app.rb\0-x\0", out));
	assert_string_equal(out, "app");
	assert_true(SVC("ruby\0--disable=gems\0/usr/bin/rake\0test\0", out));
	assert_string_equal(out, "rake");
	assert_true(SVC("ruby\0--\0-odd.rb\0", out));
	assert_string_equal(out, "-odd");
	assert_false(SVC("ruby\0-e\0puts 1\0", out));
	assert_false(SVC("ruby\0-we\0puts 1\0", out));
	assert_false(SVC("ruby\0-\0", out));
	assert_false(SVC("ruby\0-C\0", out));
	assert_false(SVC("ruby\0", out));
}

/* The VM's succinct table of the sorted positions pos[0..n), for iseq_size positions. */
static uint8_t *
succ_build(const uint32_t *pos, uint32_t n, uint32_t iseq_size, size_t *len)
{
	size_t imm = (iseq_size < 54 ? iseq_size + 8 : 54) / 9;
	size_t blocks = iseq_size < 54 ? 0 : (iseq_size - 54 + 511) / 512;
	size_t sz = blocks ? 48 + blocks * 80 : imm * 8, b;
	uint8_t *t = calloc(1, sz ? sz : 1);
	uint32_t x, k = 0, rank = 0;

	assert_non_null(t);
	for (x = 0; x < iseq_size && x < 54; x++) {
		uint64_t w;

		while (k < n && pos[k] <= x)
			k++, rank++;
		memcpy(&w, t + (x / 9) * 8, 8);
		w |= (uint64_t)rank << ((x % 9) * 7);
		memcpy(t + (x / 9) * 8, &w, 8);
	}
	for (b = 0; b < blocks; b++) {
		uint8_t *blk = t + 48 + b * 80;
		uint64_t small = 0, bits[8] = { 0 };
		uint32_t r = rank, si, inblk = 0;

		memcpy(blk, &r, 4);
		for (si = 0; si < 8; si++) {
			if (si > 0)
				small |= (uint64_t)inblk << ((si - 1) * 9);
			for (x = 0; x < 64; x++) {
				uint32_t p = 54 + (uint32_t)b * 512 + si * 64 + x;

				while (k < n && pos[k] < p)
					k++;
				if (k < n && pos[k] == p) {
					bits[si] |= 1ULL << x;
					inblk++;
					rank++;
				}
			}
		}
		memcpy(blk + 8, &small, 8);
		memcpy(blk + 16, bits, sizeof(bits));
	}
	*len = sz;
	return t;
}

static void
check_same(uint32_t iseq_size, const uint32_t *pos, const int32_t *lines, uint32_t n)
{
	struct rbrow *a, *b;
	uint32_t na, nb, x;
	size_t len;
	uint8_t *t = succ_build(pos, n, iseq_size, &len);

	assert_int_equal(ruby_succ_decode(t, len, iseq_size, lines, n, &a, &na), 0);
	assert_int_equal(ruby_positions_decode(pos, lines, n, iseq_size, &b, &nb), 0);
	for (x = 0; x < iseq_size; x++)
		assert_int_equal(ruby_rows_lookup(a, na, x), ruby_rows_lookup(b, nb, x));
	assert_int_equal(ruby_rows_lookup(a, na, iseq_size), 0);
	free(a);
	free(b);
	/* A table shorter than the iseq needs is refused. */
	if (len > 8) {
		assert_int_equal(ruby_succ_decode(t, len - 8, iseq_size, lines, n, &a, &na), -EINVAL);
		assert_null(a);
	}
	free(t);
}

static void
test_lines(void **state)
{
	static const uint32_t pos[] = { 0, 2, 5, 9 };
	static const int32_t lines[] = { 10, 11, 11, 14 };
	struct rbrow *r;
	uint32_t nr, *big, k;
	int32_t *bl;

	(void)state;
	assert_int_equal(ruby_positions_decode(pos, lines, 4, 12, &r, &nr), 0);
	assert_int_equal(ruby_rows_lookup(r, nr, 0), 10);
	assert_int_equal(ruby_rows_lookup(r, nr, 1), 10);
	assert_int_equal(ruby_rows_lookup(r, nr, 2), 11);
	assert_int_equal(ruby_rows_lookup(r, nr, 8), 11);
	assert_int_equal(ruby_rows_lookup(r, nr, 9), 14);
	assert_int_equal(ruby_rows_lookup(r, nr, 11), 14);
	assert_int_equal(ruby_rows_lookup(r, nr, 12), 0);
	assert_int_equal(nr, 3);	/* 11 twice: one row */
	free(r);
	/* Not ascending: refused. */
	assert_int_equal(ruby_positions_decode((const uint32_t[]){ 0, 4, 4 }, lines, 3, 9, &r,
	    &nr), -EINVAL);

	check_same(12, pos, lines, 4);
	check_same(54, pos, lines, 4);
	/* Past the immediate part: positions in several blocks and words. */
	big = malloc(3000 * sizeof(*big));
	bl = malloc(3000 * sizeof(*bl));
	assert_non_null(big);
	assert_non_null(bl);
	for (k = 0; k < 3000; k++) {
		big[k] = k * 3 + (k % 7 == 0);
		bl[k] = (int32_t)(100 + k / 4);
	}
	big[0] = 0;
	check_same(3 * 3000 + 5, big, bl, 3000);
	check_same(600, big, bl, 150);
	free(big);
	free(bl);
}

static void
test_is_vm(void **state)
{
	(void)state;
	assert_true(ruby_is_vm("rb_vm_exec"));
	assert_true(ruby_is_vm("rb_vm_exec.cold"));
	assert_false(ruby_is_vm("rb_vm_exec_x"));
	assert_false(ruby_is_vm(NULL));
	assert_true(ruby_is_core("vm_exec_core"));
	assert_false(ruby_is_core("rb_vm_exec"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_exe),
		cmocka_unit_test(test_service),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_is_vm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
