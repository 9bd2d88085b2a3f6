/*
 * jit: a stand-in for a JIT compiler. It copies a small spin loop into
 * anonymous executable memory, names it in /tmp/perf-PID.map as a JIT
 * does (an earlier, stale name for the same address first: the latest
 * line must win) and runs it. Usage: jit MILLISECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* push %rbp; mov %rsp,%rbp; 1: dec %rdi; jnz 1b; pop %rbp; ret */
static const unsigned char code[] = {
	0x55, 0x48, 0x89, 0xe5, 0x48, 0xff, 0xcf, 0x75, 0xfb, 0x5d, 0xc3
};

int
main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 5000;
	void (*fn)(long);
	struct timespec a, b;
	char path[64];
	unsigned char *mem;
	FILE *f;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if ((f = fopen(path, "w")) == NULL)
		return 1;
	fprintf(f, "%lx %zx stale_jit_name\n", (unsigned long)mem, sizeof(code));
	fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)mem, sizeof(code));
	fclose(f);
	fn = (void (*)(long))(void *)mem;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		fn(50000000);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
	unlink(path);
	return 0;
}
