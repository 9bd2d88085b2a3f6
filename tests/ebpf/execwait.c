/*
 * tests/integration/ebpf_offcpu.sh: waits SECS in a function of its own,
 * then execs the command after it. The wait is this program's: its off-CPU
 * stack is drained after the exec, and must be named from this image, under
 * this program's service, not the next one's.
 *
 * Usage: execwait SECS COMMAND [ARG...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void
before_exec(double secs)
{
	struct timespec ts;

	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0)
		;
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: execwait SECS COMMAND [ARG...]\n");
		return 2;
	}
	before_exec(atof(argv[1]));
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
