/*
 * longname: spins in a function whose symbol name is very long (see
 * longname_gen.py, linked in) for SECONDS, then exits. Usage: longname SECONDS
 */
#include <stdlib.h>
#include <unistd.h>

void	spin_entry(void);

int
main(int argc, char **argv)
{
	alarm(argc > 1 ? (unsigned)atoi(argv[1]) : 3);
	spin_entry();
	return 0;
}
