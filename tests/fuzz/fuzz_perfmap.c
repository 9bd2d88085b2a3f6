/*
 * fuzz_perfmap: the reader of JIT perf maps (/tmp/perf-PID.map: "START SIZE
 * name" lines in hex; collector/ebpf/symbolize.c), a file any process may
 * write for the sampler to read. The input is written to a file of this
 * user's and loaded with perfmap_load(); lookups at the addresses the input
 * names, and next to them, give a name (NUL-terminated, from the map) or
 * nothing, and the latest line covering an address wins.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_perfmap: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static char path[] = "/tmp/fuzz_perfmap.XXXXXX";
static int fd = -1;

static void
cleanup(void)
{
	unlink(path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *m;
	const char *name, *p, *nl, *end = (const char *)data + size;
	unsigned long long a;
	char num[24];
	size_t n;

	if (fd < 0) {
		if ((fd = mkstemp(path)) < 0)
			return 0;
		atexit(cleanup);
	}
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return 0;
	if ((m = perfmap_load(path, getuid())) == NULL)
		return 0;
	/* Each line's start, and the addresses around it. */
	for (p = (const char *)data; p < end;
	    p = (nl = memchr(p, '\n', (size_t)(end - p))) != NULL ? nl + 1 : end) {
		/* The input is not NUL-terminated: the scan stops at its end. */
		for (n = 0; p + n < end && n < sizeof(num) - 1 &&
		    strchr("0123456789abcdefABCDEFx", p[n]) != NULL && p[n] != '\0'; n++)
			;
		if (n == 0)
			continue;
		memcpy(num, p, n);
		num[n] = '\0';
		a = strtoull(num, NULL, 16);
		for (int d = -1; d <= 1; d++)
			if ((name = perfmap_lookup(m, a + (unsigned long long)d)) != NULL)
				CHECK(strlen(name) <= size);
	}
	perfmap_free(m);
	return 0;
}
