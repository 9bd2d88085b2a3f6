/*
 * rio: opens through the worker: a regular file (its fstat returned), a
 * directory only when asked for one, a FIFO refused at once (never waited
 * on), a link at the end not followed unless asked, the size bound, a
 * deadline that abandons nothing that ends, and the pid of /proc paths. The
 * deadline against a FUSE mount whose server is stopped is an integration
 * test (hardening_ebpf.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rio.h"

static char dir[PATH_MAX];

static void
path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int
setup(void **state)
{
	char p[PATH_MAX + 32];
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/rio-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	path_in(p, sizeof(p), "file");
	if ((f = fopen(p, "w")) == NULL)
		return -1;
	fputs("twelve bytes", f);
	fclose(f);
	path_in(p, sizeof(p), "fifo");
	if (mkfifo(p, 0600) < 0)
		return -1;
	path_in(p, sizeof(p), "link");
	if (symlink("file", p) < 0)
		return -1;
	path_in(p, sizeof(p), "sub");
	return mkdir(p, 0700);
}

static int
teardown(void **state)
{
	static const char *const names[] = { "file", "fifo", "link" };
	char p[PATH_MAX + 32];
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		path_in(p, sizeof(p), names[i]);
		unlink(p);
	}
	path_in(p, sizeof(p), "sub");
	rmdir(p);
	rmdir(dir);
	return 0;
}

static void
test_open_kinds(void **state)
{
	struct rio *r = rio_create(5000LL * 1000 * 1000);
	char p[PATH_MAX + 32], got[16] = "";
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(r);
	path_in(p, sizeof(p), "file");
	fd = rio_open(r, getpid(), p, 0, 0, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 12);
	assert_false(rio_fd_remote(fd));
	assert_int_equal(read(fd, got, sizeof(got) - 1), 12);
	assert_string_equal(got, "twelve bytes");
	close(fd);
	/* Bounded: larger than max_size is refused; as large is not. */
	assert_int_equal(rio_open(r, getpid(), p, 0, 11, NULL), -EINVAL);
	fd = rio_open(r, getpid(), p, 0, 12, NULL);
	assert_true(fd >= 0);
	close(fd);
	/* A FIFO is refused at once, not waited on for a writer. */
	path_in(p, sizeof(p), "fifo");
	assert_int_equal(rio_open(r, getpid(), p, 0, 0, NULL), -EINVAL);
	/* A link at the end: not followed unless asked. */
	path_in(p, sizeof(p), "link");
	assert_int_equal(rio_open(r, getpid(), p, 0, 0, NULL), -ELOOP);
	fd = rio_open(r, getpid(), p, RIO_FOLLOW, 0, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 12);
	close(fd);
	/* A directory only when one is asked for, and then only a directory. */
	path_in(p, sizeof(p), "sub");
	assert_true(rio_open(r, getpid(), p, 0, 0, NULL) < 0);
	fd = rio_open(r, getpid(), p, RIO_DIR, 0, &st);
	assert_true(fd >= 0);
	assert_true(S_ISDIR(st.st_mode));
	close(fd);
	path_in(p, sizeof(p), "file");
	assert_true(rio_open(r, getpid(), p, RIO_DIR, 0, NULL) < 0);
	path_in(p, sizeof(p), "none");
	assert_int_equal(rio_open(r, getpid(), p, 0, 0, NULL), -ENOENT);
	assert_int_equal(rio_stuck_now(), 0);
	assert_int_equal(rio_stalls(), 0);
	rio_destroy(r);
}

static void
test_self_and_pids(void **state)
{
	struct rio *r = rio_self();
	char p[PATH_MAX + 32];
	int fd;

	(void)state;
	assert_non_null(r);
	assert_ptr_equal(rio_self(), r);	/* one per thread */
	/* Through this process's own root, as the sampler reaches others'. */
	snprintf(p, sizeof(p), "/proc/%d/root%s/file", (int)getpid(), dir);
	fd = rio_open(r, getpid(), p, 0, 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rio_path_pid(p), getpid());
	assert_int_equal(rio_path_pid("/proc/12/map_files/1-2"), 12);
	assert_int_equal(rio_path_pid("/proc/self/exe"), 0);
	assert_int_equal(rio_path_pid("/proc/12"), 0);
	assert_int_equal(rio_path_pid("/tmp/x"), 0);
	assert_int_equal(rio_path_pid("/proc/99999999999/root"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_kinds),
		cmocka_unit_test(test_self_and_pids),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
