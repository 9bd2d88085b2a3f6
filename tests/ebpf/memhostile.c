/*
 * A local user's program against --ebpf-malloc and --ebpf-memory
 * (tests/integration/hardening_malloc.sh). Modes:
 *   hold SECS     allocate a little and sleep: one of many processes a
 *                 selector matches;
 *   storm SECS    as fast as it can, from 4 threads: malloc/free of random
 *                 sizes (most kept a while: the kernel's table of live
 *                 blocks fills), private anonymous mmap/munmap of random
 *                 sizes with every seventh page touched (page faults on
 *                 fresh memory). Prints its calls a second.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double secs;
static volatile unsigned long calls[4];

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *
storm(void *arg)
{
	unsigned long id = (unsigned long)arg, x = 88172645463325252ULL ^ id;
	void *keep[4096] = { 0 };
	double end = now() + secs;
	unsigned long n = 0;

	while (now() < end) {
		for (int i = 0; i < 256; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t k = x % 4096, sz = 1 + (x >> 20) % (id == 0 ? 65536 : 512);
			free(keep[k]);
			keep[k] = malloc(sz);
			if (keep[k] != NULL)
				memset(keep[k], 1, sz < 64 ? sz : 64);
			n++;
			if (i % 16 == 0) {
				size_t len = 4096 * (1 + (x >> 40) % 512);
				char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (p != MAP_FAILED) {
					for (size_t o = 0; o < len; o += 4096 * 7)
						p[o] = 1;
					munmap(p, len);
				}
				n++;
			}
		}
		calls[id] = n;
	}
	for (int k = 0; k < 4096; k++)
		free(keep[k]);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t t[4];
	double t0;

	if (argc != 3) {
		fprintf(stderr, "usage: memhostile hold|storm SECS\n");
		return 2;
	}
	secs = atof(argv[2]);
	if (strcmp(argv[1], "hold") == 0) {
		char *volatile p = malloc(1000);

		if (p != NULL)
			p[0] = 1;
		sleep((unsigned)secs);
		free(p);
		return 0;
	}
	t0 = now();
	for (unsigned long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, storm, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("%.0f\n", (calls[0] + calls[1] + calls[2] + calls[3]) / (now() - t0));
	return 0;
}
