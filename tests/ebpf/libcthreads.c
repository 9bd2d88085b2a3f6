/*
 * The workload of tests/integration/rt_libc.sh: a thread spinning in a
 * named function, one sorting with qsort (libc's hidden functions between
 * qsort and the comparison), and the main thread spinning, for the seconds
 * given: every stack starts at libc's thread or process entry (built
 * without frame pointers: the sampler walks libc with its unwind tables).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double secs;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long
spin_until(double end)
{
	volatile unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
	return x;
}

__attribute__((noinline)) static void *
worker_spin(void *arg)
{
	(void)arg;
	spin_until(now() + secs);
	return NULL;
}

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) static void *
worker_sort(void *arg)
{
	static int v[4096];
	double end = now() + secs;
	unsigned r = 1;
	int i;

	(void)arg;
	while (now() < end) {
		for (i = 0; i < 4096; i++)
			v[i] = (int)(r = r * 1103515245u + 12345u);
		qsort(v, 4096, sizeof(v[0]), cmp_int);
	}
	return NULL;
}

__attribute__((noinline)) static void
main_spin(void)
{
	spin_until(now() + secs);
}

int
main(int argc, char **argv)
{
	pthread_t t[2];
	int i;

	secs = argc > 1 ? atof(argv[1]) : 5;
	if (pthread_create(&t[0], NULL, worker_spin, NULL) != 0 ||
	    pthread_create(&t[1], NULL, worker_sort, NULL) != 0)
		return 1;
	main_spin();
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
