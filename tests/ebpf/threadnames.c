/*
 * The multi-threaded program of tests/integration/ebpf_java.sh: threads that
 * rename themselves (prctl PR_SET_NAME, as the JVM's and Chromium's do) spin
 * for the milliseconds given, while the main thread (the thread group leader)
 * exits first with pthread_exit: the process lives on in its threads, with no
 * /proc/PID/exe, then exits.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static long ms;
static volatile uint64_t sink;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *
worker(void *arg)
{
	int64_t end = now_ms() + ms;
	uint64_t s = 0;

	prctl(PR_SET_NAME, (unsigned long)arg, 0, 0, 0);
	while (now_ms() < end)
		for (int i = 0; i < 100000; i++)
			s += (uint64_t)i * 31 ^ (s >> 3);
	sink = s;
	return NULL;
}

int
main(int argc, char **argv)
{
	static char *names[] = { "Monitor Deflati", "ThreadPoolForeg" };
	pthread_t t;

	ms = argc > 1 ? atol(argv[1]) : 3000;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, worker, names[i]) != 0)
			return 1;
	pthread_exit(NULL);
}
