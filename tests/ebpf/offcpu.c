/*
 * offcpu: a program that waits in three known ways, for the off-CPU test
 * (tests/integration/ebpf_offcpu.sh). Three threads each block ROUNDS times:
 * wait_mutex on a mutex that hold_mutex keeps locked for a while, wait_sleep
 * in nanosleep, wait_pipe in a read of a pipe that feed_pipe writes one byte
 * to now and then. Each measures the time its waits took (CLOCK_MONOTONIC
 * around the blocking call) and the totals are printed as
 *   mutex_ns=N sleep_ns=N pipe_ns=N
 * warm_up comes first: a few short sleeps, so that the profiler has seen
 * the process (and loaded what it needs to walk its stacks) before the
 * waits that count.
 *
 * Usage: offcpu [ROUNDS]   (default 20; each round about 100 ms)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS	100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held;		/* hold_mutex has the lock */
static pthread_barrier_t done;		/* wait_mutex had it in turn */
static int rounds = 20;
static int pfd[2];
static int64_t mutex_ns, sleep_ns, pipe_ns;

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noinline)) static void
hold_mutex(void)
{
	pthread_mutex_lock(&lock);
	pthread_barrier_wait(&held);
	nap(WAIT_MS);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static int64_t
wait_mutex(void)
{
	int64_t t0 = now_ns();

	pthread_mutex_lock(&lock);
	t0 = now_ns() - t0;
	pthread_mutex_unlock(&lock);
	return t0;
}

__attribute__((noinline)) static int64_t
wait_sleep(void)
{
	struct timespec ts = { 0, WAIT_MS * 1000000L };
	int64_t t0 = now_ns();

	nanosleep(&ts, NULL);
	return now_ns() - t0;
}

__attribute__((noinline)) static int64_t
wait_pipe(void)
{
	int64_t t0 = now_ns();
	char c;

	if (read(pfd[0], &c, 1) != 1)
		exit(1);
	return now_ns() - t0;
}

__attribute__((noinline)) static void
feed_pipe(void)
{
	nap(WAIT_MS);
	if (write(pfd[1], "x", 1) != 1)
		exit(1);
}

static void *
holder(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < rounds; i++) {
		hold_mutex();
		pthread_barrier_wait(&done);
	}
	return NULL;
}

static void *
mutex_waiter(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < rounds; i++) {
		pthread_barrier_wait(&held);
		mutex_ns += wait_mutex();
		pthread_barrier_wait(&done);
	}
	return NULL;
}

static void *
sleeper(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < rounds; i++)
		sleep_ns += wait_sleep();
	return NULL;
}

static void *
reader(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < rounds; i++)
		pipe_ns += wait_pipe();
	return NULL;
}

static void *
feeder(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < rounds; i++)
		feed_pipe();
	return NULL;
}

__attribute__((noinline)) static void
warm_up(void)
{
	int i;

	for (i = 0; i < 10; i++)
		nap(50);
}

int
main(int argc, char **argv)
{
	void *(*fn[])(void *) = { holder, mutex_waiter, sleeper, reader, feeder };
	pthread_t t[5];
	size_t i;

	if (argc > 1 && (rounds = atoi(argv[1])) < 1)
		return 2;
	if (pipe(pfd) != 0 || pthread_barrier_init(&held, NULL, 2) != 0 ||
	    pthread_barrier_init(&done, NULL, 2) != 0)
		return 1;
	warm_up();
	for (i = 0; i < 5; i++)
		if (pthread_create(&t[i], NULL, fn[i], NULL) != 0)
			return 1;
	for (i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	printf("mutex_ns=%lld sleep_ns=%lld pipe_ns=%lld\n", (long long)mutex_ns,
	    (long long)sleep_ns, (long long)pipe_ns);
	return 0;
}
