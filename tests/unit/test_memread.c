/*
 * memread: reads of a process's memory through the worker (this process's
 * own and a child's): whole, cut at an unreadable range, refused when too
 * large; and the deadline leaves a read that does not end (a child stopped
 * while a FUSE page is read is an integration test, hardening_ebpf.sh);
 * a thread that spins is runnable (waits for a CPU, not stalled), one that
 * sleeps is not.
 */
#define _GNU_SOURCE	/* gettid */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memread.h"

static char pattern[8192];

static void
test_read_self(void **state)
{
	struct memreader *r = memread_create(2000LL * 1000 * 1000);
	char a[100], b[300];
	struct iovec l[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct iovec rv[2] = { { pattern + 10, sizeof(a) }, { pattern + 4000, sizeof(b) } };
	size_t i;

	(void)state;
	assert_non_null(r);
	for (i = 0; i < sizeof(pattern); i++)
		pattern[i] = (char)(i * 7);
	assert_int_equal(memread_readv(r, getpid(), l, rv, 2), sizeof(a) + sizeof(b));
	assert_memory_equal(a, pattern + 10, sizeof(a));
	assert_memory_equal(b, pattern + 4000, sizeof(b));
	/* Twice: the same worker. */
	memset(a, 0, sizeof(a));
	assert_int_equal(memread_readv(r, getpid(), l, rv, 1), sizeof(a));
	assert_memory_equal(a, pattern + 10, sizeof(a));
	assert_int_equal(memread_stalls(r), 0);
	memread_destroy(r);
}

static void
test_read_cut(void **state)
{
	struct memreader *r = memread_create(2000LL * 1000 * 1000);
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	char a[64], b[64];
	struct iovec l[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct iovec rv[2];

	(void)state;
	assert_non_null(r);
	assert_true(m != MAP_FAILED);
	memset(m, 'x', (size_t)pg);
	assert_int_equal(munmap(m + pg, (size_t)pg), 0);
	rv[0].iov_base = m;
	rv[0].iov_len = sizeof(a);
	rv[1].iov_base = m + pg;	/* unmapped */
	rv[1].iov_len = sizeof(b);
	memset(b, 'b', sizeof(b));
	assert_int_equal(memread_readv(r, getpid(), l, rv, 2), sizeof(a));
	assert_int_equal(a[0], 'x');
	assert_int_equal(b[0], 'b');	/* untouched */
	assert_int_equal(memread_readv(r, getpid(), l + 1, rv + 1, 1), -EFAULT);
	munmap(m, (size_t)pg);
	memread_destroy(r);
}

static void
test_read_bounds(void **state)
{
	struct memreader *r = memread_create(2000LL * 1000 * 1000);
	char *big = malloc(MEMREAD_MAX_BYTES + 1);
	struct iovec l = { big, MEMREAD_MAX_BYTES + 1 }, rv = { big, MEMREAD_MAX_BYTES + 1 };
	struct iovec l2 = { big, 8 }, rv2 = { big, 16 };

	(void)state;
	assert_non_null(r);
	assert_non_null(big);
	assert_int_equal(memread_readv(r, getpid(), &l, &rv, 1), -EINVAL);
	assert_int_equal(memread_readv(r, getpid(), &l2, &rv2, 1), -EINVAL);	/* lengths differ */
	assert_int_equal(memread_readv(r, getpid(), &l2, &l2, MEMREAD_MAX_IOV + 1), -EINVAL);
	assert_int_equal(memread_readv(r, getpid(), &l2, &l2, 0), 0);
	free(big);
	memread_destroy(r);
}

/* A child's memory; once it is gone, an error, not a wait. */
static void
test_read_child(void **state)
{
	struct memreader *r = memread_create(2000LL * 1000 * 1000);
	char got[16] = "";
	struct iovec l = { got, 6 }, rv = { pattern, 6 };
	pid_t pid;

	(void)state;
	assert_non_null(r);
	memcpy(pattern, "child", 6);
	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(memread_readv(r, pid, &l, &rv, 1), 6);
	assert_string_equal(got, "child");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(memread_readv(r, pid, &l, &rv, 1), -ESRCH);
	memread_destroy(r);
}

static atomic_int spin_tid, spin_stop;

static void *
spin_main(void *arg)
{
	(void)arg;
	atomic_store(&spin_tid, (int)gettid());
	while (!atomic_load(&spin_stop))
		;
	return NULL;
}

static void *
sleep_main(void *arg)
{
	(void)arg;
	atomic_store(&spin_tid, (int)gettid());
	while (!atomic_load(&spin_stop))
		usleep(1000);
	return NULL;
}

static void
test_thread_runnable(void **state)
{
	pthread_t t;
	int i, runnable = 0;

	(void)state;
	atomic_store(&spin_tid, 0);
	atomic_store(&spin_stop, 0);
	assert_int_equal(pthread_create(&t, NULL, spin_main, NULL), 0);
	while (atomic_load(&spin_tid) == 0)
		usleep(100);
	/* A spinning thread is running or waiting for a CPU: 'R' every time. */
	for (i = 0; i < 20; i++)
		runnable += memread_thread_runnable(atomic_load(&spin_tid));
	atomic_store(&spin_stop, 1);
	pthread_join(t, NULL);
	assert_int_equal(runnable, 20);

	atomic_store(&spin_tid, 0);
	atomic_store(&spin_stop, 0);
	assert_int_equal(pthread_create(&t, NULL, sleep_main, NULL), 0);
	while (atomic_load(&spin_tid) == 0)
		usleep(100);
	/* A thread asleep most of the time: not runnable at least once. */
	runnable = 0;
	for (i = 0; i < 20; i++) {
		runnable += memread_thread_runnable(atomic_load(&spin_tid));
		usleep(300);
	}
	atomic_store(&spin_stop, 1);
	pthread_join(t, NULL);
	assert_true(runnable < 20);
	assert_false(memread_thread_runnable(0));
	assert_false(memread_thread_runnable(999999999));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_read_cut),
		cmocka_unit_test(test_read_bounds),
		cmocka_unit_test(test_read_child),
		cmocka_unit_test(test_thread_runnable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
