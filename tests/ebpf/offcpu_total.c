/*
 * offcpu_total: a program that knows how long each of its threads was off
 * CPU, for the off-CPU totals test (tests/integration/ebpf_offcpu_total.sh).
 *
 * exec_wait comes first, as the process starts: a sleep of 3 s, before
 * the profiler can have read the process's mappings. Then busy_ms computes
 * for BUSY_MS (default 500) ms of CPU time, and a thread (first_thread)
 * sleeps FIRST_MS in first_wait: a wait from the process's first second,
 * by a worker started then. Then a sleeper
 * thread (sleeper) sleeps in nap, over and over, for lengths from 0.2 ms
 * (below the profiler's threshold) to 50 ms, and NSPIN spinner threads
 * (spinner) compute without a pause, one more of them than there are CPUs,
 * so that the scheduler preempts them and they wait for a CPU. Each thread
 * measures, from its start to its end, its wall time (CLOCK_MONOTONIC) and
 * its CPU time (CLOCK_THREAD_CPUTIME_ID): wall minus CPU is the time it
 * was off CPU. The sleeper also adds up its sleeps as timed around each
 * call. One line per thread:
 *   thread tid=N role=sleeper|spinner wall_ns=N cpu_ns=N off_ns=N timed_ns=N
 * and first_ns=N for the first wait.
 *
 * Usage: offcpu_total SECONDS [BUSY_MS]   (built with -DBUILD_TAG='"..."': a build id of its own)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FIRST_MS	2500
#define NSPIN_MAX	64

struct result {
	long		 tid;
	const char	*role;
	int64_t		 wall, cpu, timed;
};

#ifdef BUILD_TAG
/* A build of its own (another build id): no profiler has seen this binary before. */
__attribute__((used)) static const char build_tag[] = BUILD_TAG;
#endif

static int64_t run_ns;
static volatile uint64_t sink;

static int64_t
clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleep us microseconds; the time it took, as timed around the call. */
__attribute__((noinline)) static int64_t
nap(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	int64_t t0 = clock_ns(CLOCK_MONOTONIC);

	while (nanosleep(&ts, &ts) != 0)
		;
	return clock_ns(CLOCK_MONOTONIC) - t0;
}

/* A wait at once, as the process starts: before the profiler can have read it. */
__attribute__((noinline)) static void
exec_wait(void)
{
	nap(3000 * 1000L);
	sink++;
}

/* Compute for ms milliseconds of CPU time, without waiting. */
__attribute__((noinline)) static void
busy_ms(int ms)
{
	int64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);

	while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0 < ms * 1000000LL)
		sink = sink * 31 + 7;
}

__attribute__((noinline)) static int64_t
first_wait(void)
{
	int64_t t = nap(FIRST_MS * 1000L);

	sink++;		/* not a tail call: first_wait stays on the stack */
	return t;
}

/* A worker started in the process's first second: its first wait. */
__attribute__((noinline)) static void *
first_thread(void *arg)
{
	*(int64_t *)arg = first_wait();
	return NULL;
}

__attribute__((noinline)) static void *
sleeper(void *arg)
{
	static const long lens[] = { 200, 700, 3000, 12000, 50000, 400, 1500 };
	struct result *r = arg;
	int64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	unsigned i = 0;

	r->tid = syscall(SYS_gettid);
	r->role = "sleeper";
	while (clock_ns(CLOCK_MONOTONIC) - t0 < run_ns)
		r->timed += nap(lens[i++ % (sizeof(lens) / sizeof(lens[0]))]);
	r->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	r->wall = clock_ns(CLOCK_MONOTONIC) - t0;
	return NULL;
}

__attribute__((noinline)) static void
spin_some(void)
{
	uint64_t x = sink;
	int i;

	for (i = 0; i < 100000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) static void *
spinner(void *arg)
{
	struct result *r = arg;
	int64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	r->tid = syscall(SYS_gettid);
	r->role = "spinner";
	while (clock_ns(CLOCK_MONOTONIC) - t0 < run_ns)
		spin_some();
	r->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	r->wall = clock_ns(CLOCK_MONOTONIC) - t0;
	return NULL;
}

int
main(int argc, char **argv)
{
	struct result res[NSPIN_MAX + 1] = { 0 };
	pthread_t t[NSPIN_MAX + 1];
	int64_t first;
	long ncpu;
	int i, n;

	exec_wait();
	busy_ms(argc > 2 ? atoi(argv[2]) : 500);
	pthread_create(&t[0], NULL, first_thread, &first);
	pthread_join(t[0], NULL);
	run_ns = (argc > 1 ? atoi(argv[1]) : 10) * 1000000000LL;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	n = (int)(ncpu < 1 ? 2 : ncpu + 1 > NSPIN_MAX ? NSPIN_MAX : ncpu + 1);
	pthread_create(&t[0], NULL, sleeper, &res[0]);
	for (i = 1; i <= n; i++)
		pthread_create(&t[i], NULL, spinner, &res[i]);
	for (i = 0; i <= n; i++)
		pthread_join(t[i], NULL);
	printf("first_ns=%lld\n", (long long)first);
	for (i = 0; i <= n; i++)
		printf("thread tid=%ld role=%s wall_ns=%lld cpu_ns=%lld off_ns=%lld timed_ns=%lld\n",
		    res[i].tid, res[i].role, (long long)res[i].wall, (long long)res[i].cpu,
		    (long long)(res[i].wall - res[i].cpu), (long long)res[i].timed);
	return 0;
}
