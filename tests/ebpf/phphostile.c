/*
 * phphostile: a process the eBPF sampler takes for PHP 8.2 (built as a file
 * named php8.2, it holds the version string and exports executor_globals
 * and execute_ex) whose executor structures are crafted: frame chains that
 * loop, pointers into nothing, a function whose name claims 2^40 bytes, a
 * 16 MiB file name, names of NUL, control and non-UTF-8 bytes, a line of
 * 2^32 - 1, and a deep chain of functions freed and made again at the same
 * addresses with other names. Spins in execute_ex for as many seconds as
 * its last argument says, switching between them every 20 ms. The sampler
 * must stay up, bounded, and name what it names cut.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef PHP_VER
#define PHP_VER		"8.2.99"	/* -DPHP_VER='"8.1.0"': a version the sampler does not know */
#endif

__attribute__((used)) const char php_powered[] = "X-Powered-By: PHP/" PHP_VER;
__attribute__((visibility("default"))) uint8_t executor_globals[4096];

#define EG_CURRENT	0x1e8
#define FN_SIZE		0x100
#define CHURN		200

struct ex {
	uint64_t	 opline, call, ret, func, this_v;
	uint32_t	 this_ti, this_u2;
	uint64_t	 prev, pad[4];
};

static void
put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, sizeof(v));
}

/* A zend_string claiming len bytes, of which have are there (filled with c). */
static uint8_t *
zstr(uint64_t len, size_t have, int c)
{
	uint8_t *s = calloc(1, 24 + have + 1);

	if (s == NULL)
		exit(1);
	put64(s, 16, len);
	memset(s + 24, c, have);
	return s;
}

static uint8_t *
fn(uint8_t type, void *name, void *scope, void *file, uint32_t line)
{
	uint8_t *f = calloc(1, FN_SIZE);

	if (f == NULL)
		exit(1);
	f[0] = type;
	put64(f, 8, (uintptr_t)name);
	put64(f, 16, (uintptr_t)scope);
	put64(f, 0x98, (uintptr_t)file);
	memcpy(f + 0xa0, &line, sizeof(line));
	return f;
}

static void
set_current(void *ex)
{
	__atomic_store_n((uint64_t *)(executor_globals + EG_CURRENT), (uintptr_t)ex,
	    __ATOMIC_RELEASE);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The executor's loop, as the sampler knows it by name: burns until t_end. */
__attribute__((noinline, visibility("default"))) uint64_t
execute_ex(double t_end)
{
	volatile uint64_t x = 0;

	while (now() < t_end)
		for (int i = 0; i < 10000; i++)
			x += (uint64_t)i * i;
	return x;
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[argc - 1]) : 5, t_end = now() + secs;
	static struct ex loop[2], bad, deep[CHURN];
	uint8_t *huge, *bigfile, *weird, *cls, *loopfn, *churn[CHURN];
	uint64_t gen = 0, sum = 0;
	int mode = 0, k;

	huge = zstr(1ULL << 40, 600, 'n');		/* its length a lie: 600 bytes there */
	bigfile = zstr(16u << 20, 16u << 20, 'f');	/* 16 MiB, all there */
	weird = zstr(64, 64, 0);
	for (k = 0; k < 64; k++)
		weird[24 + k] = (uint8_t)(k % 4 == 0 ? 0xff : k % 4 == 1 ? 0x01 : k % 4 == 2 ? 0xc3 : 0);
	cls = calloc(1, 64);
	if (cls == NULL)
		return 1;
	put64(cls, 8, (uintptr_t)weird);
	loopfn = fn(2, huge, cls, bigfile, 0xffffffffu);
	/* Two frames, each the other's caller. */
	loop[0].func = loop[1].func = (uintptr_t)loopfn;
	loop[0].prev = (uintptr_t)&loop[1];
	loop[1].prev = (uintptr_t)&loop[0];
	loop[0].opline = 0xdeadbeef000ULL;
	loop[0].this_ti = loop[1].this_ti = 1u << 17;
	memset(churn, 0, sizeof(churn));
	while (now() < t_end) {
		switch (mode++ % 4) {
		case 0:
			set_current(&loop[0]);
			break;
		case 1:
			/* A function and a caller that are nowhere. */
			bad.func = 0xdead0000ULL;
			bad.prev = 0x10;
			set_current(&bad);
			break;
		case 2:
			set_current((void *)0x1000);
			break;
		case 3:
			/* Functions freed and made again, at the same addresses or not, other names. */
			set_current(NULL);
			for (k = 0; k < CHURN; k++) {
				char nm[32];
				int len = snprintf(nm, sizeof(nm), "churn_%llu_%d",
				    (unsigned long long)gen, k);
				uint8_t *name = zstr((uint64_t)len, (size_t)len, 'c');

				memcpy(name + 24, nm, (size_t)len);
				if (churn[k]) {
					uint8_t *old;

					memcpy(&old, churn[k] + 8, sizeof(old));
					free(old);
					free(churn[k]);
				}
				churn[k] = fn(2, name, NULL, weird, (uint32_t)k);
				deep[k].func = (uintptr_t)churn[k];
				deep[k].prev = k + 1 < CHURN ? (uintptr_t)&deep[k + 1] : 0;
			}
			gen++;
			set_current(&deep[0]);
			break;
		}
		sum += execute_ex(now() + 0.02);
	}
	printf("%llu\n", (unsigned long long)(sum & 1));
	return 0;
}
