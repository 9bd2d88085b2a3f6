/*
 * fakejava: a program named "java" that is no JVM: it catches SIGQUIT, maps
 * LIB if given (a library it names libjvm.so), and runs in anonymous
 * executable memory (as JIT code does), so that the sampler tries to ask
 * it for its perf map. Exits after SECONDS. Usage: java SECONDS [LIB]
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t quits;

static void
on_quit(int sig)
{
	(void)sig;
	quits++;
}

int
main(int argc, char **argv)
{
	static const unsigned char loop[] = { 0xeb, 0xfe };	/* jmp . */
	void (*fn)(void);
	void *code;

	signal(SIGQUIT, on_quit);
	if (argc > 2 && dlopen(argv[2], RTLD_NOW) == NULL)
		return 2;
	alarm(argc > 1 ? (unsigned)atoi(argv[1]) : 8);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, loop, sizeof(loop));
	fn = (void (*)(void))code;
	fn();
	return 0;
}
