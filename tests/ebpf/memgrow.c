/*
 * memgrow.c: the program of tests/integration/ebpf_memory.sh, built
 * -O2 -fomit-frame-pointer (its stacks are walked with the unwind tables).
 * After a warm-up (a little memory touched, then a pause: the daemon loads
 * its tables meanwhile), each of ROUNDS rounds maps fresh anonymous memory
 * and writes every page of it once: 300 MB in grow_a, 100 MB in grow_b,
 * both reached from main through run; then unmaps it, so the next round's
 * pages are new again. It prints what it touched.
 *
 * usage: memgrow [ROUNDS [PAUSE_MS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MB	(1024UL * 1024)

static volatile unsigned long sink;

/* Map n bytes of new anonymous memory and write each page once. */
static __attribute__((noinline)) char *
touch_new(size_t n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i;

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	/* No transparent huge pages: one fault per base page, as the test counts. */
	madvise(p, n, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i += (size_t)page)
		p[i] = (char)i;
	sink += (unsigned long)p[n / 2];
	return p;
}

static __attribute__((noinline)) char *
grow_a(void)
{
	char *p = touch_new(300 * MB);

	__asm__ volatile("" ::: "memory");	/* not a tail call: grow_a stays on the stack */
	return p;
}

static __attribute__((noinline)) char *
grow_b(void)
{
	char *p = touch_new(100 * MB);

	__asm__ volatile("" ::: "memory");
	return p;
}

static __attribute__((noinline)) void
run(int rounds)
{
	int r;

	for (r = 0; r < rounds; r++) {
		char *a = grow_a(), *b = grow_b();

		munmap(a, 300 * MB);
		munmap(b, 100 * MB);
	}
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	int pause_ms = argc > 2 ? atoi(argv[2]) : 2000;
	char *w;

	/* The warm-up: the daemon sees the process and loads its unwind tables. */
	w = touch_new(32 * MB);
	munmap(w, 32 * MB);
	usleep((useconds_t)pause_ms * 1000);
	run(rounds);
	printf("touched grow_a=%lu MB grow_b=%lu MB in %d rounds\n", 300UL * rounds,
	    100UL * rounds, rounds);
	fflush(stdout);
	/* Alive while the last samples are read (their mappings name the frames). */
	usleep(500 * 1000);
	return 0;
}
