/*
 * offcpu_host: the two programs of the off-CPU host test
 * (tests/integration/ebpf_offcpu_host.sh).
 *
 *   offcpu_host storm SECONDS [THREADS]
 * A hostile local user: THREADS (default 300) threads that switch out as
 * fast as they can for SECONDS: pairs of threads bouncing a byte through
 * two pipes, threads in sched_yield and in nanosleep(0), and threads that
 * create a thread that exits at once and join it, over and over (each new
 * thread is a new tid to the profiler). Each thread, spawned ones too,
 * measures its time off CPU (CLOCK_MONOTONIC minus CLOCK_THREAD_CPUTIME_ID
 * from its start to its end); their sum is off_ns. Prints what they did:
 *   storm threads=N pingpong=N yields=N sleeps=N spawned=N off_ns=N
 *
 *   offcpu_host nap COUNT MS
 * A process that mostly sleeps: ct_loop calls ct_wait COUNT times, each a
 * sleep of MS ms. Prints its own figures: its CPU time and its switches
 * out as the kernel counted them (getrusage: voluntary + involuntary):
 *   nap naps=N cpu_us=N switches=N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int64_t end_ns;
static uint64_t n_pingpong, n_yields, n_sleeps, n_spawned;
static int64_t off_ns;		/* the threads' wall minus CPU time, added up */

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
over(void)
{
	return now_ns() >= end_ns;
}

static int64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's time off CPU since w0 (wall) and c0 (its CPU), added to off_ns. */
static void
off_add(int64_t w0, int64_t c0)
{
	int64_t off = (now_ns() - w0) - (thread_cpu_ns() - c0);

	__atomic_add_fetch(&off_ns, off, __ATOMIC_RELAXED);
}

/* One side of a ping-pong pair: fds[0] read from, fds[1] written to. */
struct side {
	int	 rd, wr;
	int	 first;
};

static void *
pingpong(void *arg)
{
	struct side *s = arg;
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();
	uint64_t n = 0;
	char c = 'x';

	if (s->first && write(s->wr, &c, 1) != 1)
		return NULL;
	for (;;) {
		if (read(s->rd, &c, 1) != 1)
			break;
		n++;
		if (over()) {
			close(s->wr);	/* the other side's read ends */
			break;
		}
		if (write(s->wr, &c, 1) != 1)
			break;
	}
	__atomic_add_fetch(&n_pingpong, n, __ATOMIC_RELAXED);
	off_add(w0, c0);
	return NULL;
}

static void *
yielder(void *arg)
{
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();
	uint64_t n = 0;

	(void)arg;
	while (!over()) {
		sched_yield();
		n++;
	}
	__atomic_add_fetch(&n_yields, n, __ATOMIC_RELAXED);
	off_add(w0, c0);
	return NULL;
}

static void *
sleeper0(void *arg)
{
	struct timespec zero = { 0, 0 };
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();
	uint64_t n = 0;

	(void)arg;
	while (!over()) {
		nanosleep(&zero, NULL);
		n++;
	}
	__atomic_add_fetch(&n_sleeps, n, __ATOMIC_RELAXED);
	off_add(w0, c0);
	return NULL;
}

static void *
nothing(void *arg)
{
	off_add(now_ns(), thread_cpu_ns());	/* (its waits after this are not in its figure) */
	return arg;
}

static void *
spawner(void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();
	uint64_t n = 0;

	(void)arg;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	while (!over()) {
		if (pthread_create(&t, &a, nothing, NULL) != 0)
			continue;
		pthread_join(t, NULL);
		n++;
	}
	pthread_attr_destroy(&a);
	__atomic_add_fetch(&n_spawned, n, __ATOMIC_RELAXED);
	off_add(w0, c0);
	return NULL;
}

static int
storm(int secs, int nthreads)
{
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	struct side *sides = calloc((size_t)nthreads, sizeof(*sides));
	pthread_attr_t a;
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();
	int i, n = 0, np = nthreads / 3;

	if (t == NULL || sides == NULL)
		return 1;
	np -= np % 2;
	end_ns = now_ns() + secs * 1000000000LL;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	/* A third in ping-pong pairs, then yielders, zero sleeps and spawners in turn. */
	for (i = 0; i + 1 < np; i += 2) {
		int ab[2], ba[2];

		if (pipe(ab) != 0 || pipe(ba) != 0) {
			perror("pipe");
			break;
		}
		sides[i] = (struct side){ .rd = ba[0], .wr = ab[1], .first = 1 };
		sides[i + 1] = (struct side){ .rd = ab[0], .wr = ba[1], .first = 0 };
		if (pthread_create(&t[n], &a, pingpong, &sides[i]) == 0)
			n++;
		if (pthread_create(&t[n], &a, pingpong, &sides[i + 1]) == 0)
			n++;
	}
	for (i = n; i < nthreads; i++) {
		void *(*fn)(void *) = i % 3 == 0 ? yielder : i % 3 == 1 ? sleeper0 : spawner;

		if (pthread_create(&t[n], &a, fn, NULL) == 0)
			n++;
	}
	pthread_attr_destroy(&a);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	off_add(w0, c0);
	printf("storm threads=%d pingpong=%llu yields=%llu sleeps=%llu spawned=%llu off_ns=%lld\n",
	    n, (unsigned long long)n_pingpong, (unsigned long long)n_yields,
	    (unsigned long long)n_sleeps, (unsigned long long)n_spawned, (long long)off_ns);
	free(t);
	free(sides);
	return 0;
}

__attribute__((noinline)) static void
ct_wait(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	__asm__ volatile("" ::: "memory");	/* not a tail call: ct_wait stays on the stack */
}

__attribute__((noinline)) static int
ct_loop(int count, long ms)
{
	int i;

	for (i = 0; i < count; i++)
		ct_wait(ms);
	return i;
}

static int
nap(int count, long ms)
{
	struct rusage ru;
	int n = ct_loop(count, ms);

	getrusage(RUSAGE_SELF, &ru);
	printf("nap naps=%d cpu_us=%lld switches=%ld\n", n,
	    (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec, ru.ru_nvcsw + ru.ru_nivcsw);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "storm") == 0)
		return storm(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 300);
	if (argc >= 4 && strcmp(argv[1], "nap") == 0)
		return nap(atoi(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: offcpu_host storm SECONDS [THREADS] | nap COUNT MS\n");
	return 2;
}
