/*
 * dbgspin: a CPU-bound program for the symbol tests of the eBPF sampler
 * (tests/integration/ebpf_debuginfod.sh), built with -g and then stripped in
 * several ways. Its functions are static, so a stripped copy's .dynsym does
 * not name them: only a debug file or MiniDebugInfo can (-DEXPORTED and
 * -rdynamic put them in .dynsym instead). -DHOT=name and -DOUTER=name give
 * each copy names (and so a build id) of its own.
 * Usage: dbgspin MILLISECONDS
 */
#include <stdlib.h>
#include <time.h>

#ifndef HOT
#define HOT	dbgspin_hot
#endif
#ifndef OUTER
#define OUTER	dbgspin_outer
#endif

#ifdef EXPORTED
#define LINKAGE	__attribute__((visibility("default")))
void	HOT(long);
void	OUTER(long);
#else
#define LINKAGE	static
#endif

static volatile unsigned long sink;

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) LINKAGE void
HOT(long until)
{
	unsigned long x = 1;

	do {
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	} while (now_ms() < until);
}

__attribute__((noinline)) LINKAGE void
OUTER(long until)
{
	HOT(until);
	sink++;
}

int
main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 5000;

	OUTER(now_ms() + ms);
	return 0;
}
