/*
 * unwind: test programs for the eBPF sampler's table walker, meant to be
 * built -O2 -fomit-frame-pointer (no frame pointer to follow anywhere).
 * Usage: unwind MODE MILLISECONDS
 *   deep    main -> descend x150 -> deep_leaf (a CPU loop): 150 frames of recursion
 *   signal  main -> sig_wait; SIGPROF every 5 ms of CPU runs on_signal -> sig_leaf,
 *           which loops on: handler frames above the signal trampoline
 *   vdso    main -> vdso_caller -> clock_gettime in the vdso, in a loop
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define DEPTH	150

static volatile unsigned long sink;
static volatile sig_atomic_t stop;

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static void
deep_leaf(long until)
{
	unsigned long x = 1;

	do {
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	} while (now_ms() < until);
}

/* Not a tail call: the addition after the call keeps every frame. */
__attribute__((noinline)) static int
descend(int n, long until)
{
	if (n == 0) {
		deep_leaf(until);
		return 0;
	}
	return descend(n - 1, until) + (int)(sink & 1) + 1;
}

__attribute__((noinline)) static void
sig_leaf(void)
{
	unsigned long x = sink;

	/* Most of the process's CPU time is spent here, inside the handler. */
	for (int i = 0; i < 3000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void
on_signal(int sig)
{
	(void)sig;
	sig_leaf();
	sink++;
}

__attribute__((noinline)) static void
sig_wait(long until)
{
	unsigned long x = 1;

	while (now_ms() < until) {
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

__attribute__((noinline)) static void
vdso_caller(long until)
{
	struct timespec ts;

	do {
		for (int i = 0; i < 1000; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			sink += (unsigned long)ts.tv_nsec;
		}
	} while (now_ms() < until);
}

int
main(int argc, char **argv)
{
	long ms = argc > 2 ? atol(argv[2]) : 3000, until = now_ms() + ms;

	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "deep") == 0) {
		sink = (unsigned long)descend(DEPTH, until);
	} else if (strcmp(argv[1], "signal") == 0) {
		struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGPROF, &sa, NULL);
		setitimer(ITIMER_PROF, &it, NULL);
		sig_wait(until);
	} else if (strcmp(argv[1], "vdso") == 0) {
		vdso_caller(until);
	} else {
		return 2;
	}
	return 0;
}
