/*
 * syscalls: a test program that spends its time in the kernel (reads from
 * /dev/zero, writes to /dev/null). Usage: syscalls MILLISECONDS
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[65536];

int
main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 5000;
	struct timespec a, b;
	int z = open("/dev/zero", O_RDONLY), n = open("/dev/null", O_WRONLY);

	if (z < 0 || n < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000; i++) {
			if (read(z, buf, sizeof(buf)) < 0 || write(n, buf, sizeof(buf)) < 0)
				return 1;
			getppid();
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
	return 0;
}
