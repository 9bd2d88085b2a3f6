/*
 * secret: spins in pf_secret_inner for SECONDS; built, its symbols moved to a
 * separate debug file, stripped. Usage: secret SECONDS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void
pf_secret_inner(time_t until)
{
	unsigned long x = 1;

	do {
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	} while (time(NULL) < until);
}

int
main(int argc, char **argv)
{
	pf_secret_inner(time(NULL) + (argc > 1 ? atoi(argv[1]) : 3));
	return 0;
}
