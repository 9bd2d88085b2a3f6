/*
 * spin: a CPU-bound test program for the eBPF sampler whose own functions
 * form a known stack, main -> outer -> inner. Built with frame pointers.
 * Usage: spin MILLISECONDS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static void
inner(long until)
{
	unsigned long x = 1;

	/* Check the clock rarely: almost all time is spent in this loop. */
	do {
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	} while (now_ms() < until);
}

__attribute__((noinline)) static void
outer(long until)
{
	inner(until);
	sink++;
}

int
main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 5000;

	outer(now_ms() + ms);
	return 0;
}
