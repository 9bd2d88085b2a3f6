/*
 * For tests/integration/ebpf_malloc.sh and scripts/bench-ebpf.sh: keep()
 * holds 64 MiB in 32 blocks of 2 MiB, renewing one block (free, malloc)
 * per round; churn() allocates 64 blocks of 1 to 31 KiB through malloc,
 * calloc, posix_memalign and malloc+realloc, and frees them all. Usage:
 * mallocs SECONDS [SLEEP_US]: rounds for SECONDS, SLEEP_US (default 10000)
 * between rounds, after fill() has allocated all of keep's blocks. With
 * MALLOCS_GO=FILE, waits for FILE to exist first (until the profiler has
 * probed it; in either mode). Prints the bytes keep and churn allocate per
 * round, then at the end the rounds run. mallocs -bench SECONDS: churn only, no sleep;
 * prints the allocation calls per second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEEP_N		32
#define KEEP_SIZE	(2u << 20)
#define CHURN_N		64

static void *kept[KEEP_N];

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t
churn_size(int i)
{
	return 1024 + (size_t)((i * 7919) % 31) * 1024;
}

__attribute__((noinline)) static void
keep(int k)
{
	free(kept[k]);
	kept[k] = malloc(KEEP_SIZE);
	if (kept[k] == NULL)
		abort();
	((volatile char *)kept[k])[0] = 1;
}

__attribute__((noinline)) static void
fill(void)
{
	int k;

	for (k = 0; k < KEEP_N; k++)
		keep(k);
}

/* Allocation calls made: malloc, calloc, posix_memalign, realloc, free counted alike. */
__attribute__((noinline)) static unsigned
churn(void)
{
	void *a[CHURN_N], *p;
	unsigned calls = 0;
	size_t sz;
	int i;

	for (i = 0; i < CHURN_N; i++) {
		sz = churn_size(i);
		switch (i % 4) {
		case 0:
			a[i] = calloc(1, sz);
			break;
		case 1:
			if (posix_memalign(&a[i], 64, sz) != 0)
				a[i] = NULL;
			break;
		case 2:
			p = malloc(sz / 2);
			a[i] = realloc(p, sz);
			calls++;
			break;
		default:
			a[i] = malloc(sz);
		}
		if (a[i] == NULL)
			abort();
		((volatile char *)a[i])[sz - 1] = 1;
		calls++;
	}
	for (i = 0; i < CHURN_N; i++)
		free(a[i]);
	return calls + CHURN_N;
}

static size_t
churn_bytes(void)
{
	size_t b = 0;
	int i;

	for (i = 0; i < CHURN_N; i++)
		b += churn_size(i) + (i % 4 == 2 ? churn_size(i) / 2 : 0);
	return b;
}

int
main(int argc, char **argv)
{
	double secs, end, t0;
	unsigned long rounds = 0, calls = 0;
	useconds_t sleep_us = 10000;
	const char *go = getenv("MALLOCS_GO");
	int k;

	while (go && *go && access(go, F_OK) != 0)
		usleep(10000);
	if (argc > 2 && strcmp(argv[1], "-bench") == 0) {
		secs = atof(argv[2]);
		t0 = now();
		end = t0 + secs;
		while (now() < end)
			for (k = 0; k < 100; k++)
				calls += churn();
		printf("calls_per_sec %.0f\n", (double)calls / (now() - t0));
		return 0;
	}
	secs = argc > 1 ? atof(argv[1]) : 10;
	if (argc > 2)
		sleep_us = (useconds_t)atoi(argv[2]);
	printf("keep_bytes_per_round %u churn_bytes_per_round %zu\n", KEEP_SIZE, churn_bytes());
	fflush(stdout);
	end = now() + secs;
	fill();
	while (now() < end) {
		keep((int)(rounds % KEEP_N));
		churn();
		rounds++;
		usleep(sleep_us);
	}
	printf("rounds %lu\n", rounds);
	return 0;
}
