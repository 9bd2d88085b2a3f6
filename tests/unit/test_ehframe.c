/*
 * test_ehframe: function bounds from .eh_frame_hdr (collector/ebpf/ehframe.c)
 * against binutils' own reading of the FDEs (`readelf --debug-dump=frames`)
 * for Debian's glibc: every FDE readelf lists is found, with its very
 * bounds, and the table is sorted. A file without .eh_frame_hdr, and bytes
 * that are not ELF, give -ENOENT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ehframe.h"

#define LIBC	"/lib/x86_64-linux-gnu/libc.so.6"

static void
test_libc(void **state)
{
	struct ehrange *r = NULL;
	const struct ehrange *x;
	size_t n = 0, i, seen = 0, found = 0;
	char line[512], cmd[256];
	FILE *p;
	Elf *e;
	int fd;

	(void)state;
	if ((fd = open(LIBC, O_RDONLY)) < 0)
		skip();
	elf_version(EV_CURRENT);
	assert_non_null(e = elf_begin(fd, ELF_C_READ_MMAP, NULL));
	assert_int_equal(ehframe_ranges(e, &r, &n), 0);
	assert_true(n > 1000);
	for (i = 1; i < n; i++)
		assert_true(r[i - 1].start <= r[i].start && r[i].start < r[i].end);
	snprintf(cmd, sizeof(cmd), "readelf -W --debug-dump=frames %s 2>/dev/null", LIBC);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, b;
		char *pc = strstr(line, " FDE ");

		if (pc == NULL || (pc = strstr(pc, "pc=")) == NULL ||
		    sscanf(pc, "pc=%llx..%llx", &a, &b) != 2)
			continue;
		seen++;
		x = ehframe_find(r, n, a);
		if (x != NULL && x->start == a && x->end == b && ehframe_find(r, n, b - 1) == x)
			found++;
		else
			fprintf(stderr, "FDE %llx..%llx: %s\n", a, b, x ? "other bounds" : "not found");
	}
	pclose(p);
	printf("%s: %zu FDEs from .eh_frame_hdr, readelf lists %zu, %zu of them found\n", LIBC, n,
	    seen, found);
	assert_true(seen > 1000);
	assert_int_equal(found, seen);
	assert_null(ehframe_find(r, n, 0));
	free(r);
	elf_end(e);
	close(fd);
}

static void
test_not_elf(void **state)
{
	static char junk[] = "\x7f" "ELF not really an ELF file at all, just bytes";
	struct ehrange *r = (struct ehrange *)junk;
	size_t n = 7;
	Elf *e;

	(void)state;
	elf_version(EV_CURRENT);
	assert_non_null(e = elf_memory(junk, sizeof(junk)));
	assert_int_equal(ehframe_ranges(e, &r, &n), -ENOENT);
	assert_null(r);
	assert_int_equal(n, 0);
	elf_end(e);
	assert_null(ehframe_find(NULL, 0, 0x1000));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_not_elf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
