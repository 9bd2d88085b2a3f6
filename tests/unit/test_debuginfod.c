/*
 * test_debuginfod: the parts of collector/ebpf/debuginfod.c that need no
 * server: the server list, the validation of an answer, and the cache
 * directory (files found by build id, links refused, negative answers,
 * leftovers removed and the oldest files evicted past the cap at start).
 * The fetching itself is tests/integration/ebpf_debuginfod.sh's (a real
 * debuginfod server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "debuginfod.h"

static void
test_parse_urls(void **state)
{
	const char *bad;
	char *out;

	(void)state;
	assert_int_equal(dbginfod_parse_urls("http://a:8002/, https://b.example/x//", &out, &bad), 0);
	assert_string_equal(out, "http://a:8002\nhttps://b.example/x\n");
	free(out);
	/* DEBUGINFOD_URLS separates with spaces. */
	assert_int_equal(dbginfod_parse_urls("  https://debuginfod.debian.net http://c ", &out,
	    &bad), 0);
	assert_string_equal(out, "https://debuginfod.debian.net\nhttp://c\n");
	free(out);
	assert_int_equal(dbginfod_parse_urls("", &out, &bad), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(dbginfod_parse_urls("ftp://x", &out, &bad), -EINVAL);
	assert_null(out);
	assert_non_null(bad);
	assert_int_equal(dbginfod_parse_urls("http://a,file:///etc", &out, &bad), -EINVAL);
	assert_int_equal(dbginfod_parse_urls("http://", &out, &bad), -EINVAL);
	assert_int_equal(dbginfod_parse_urls("http://a\x01b", &out, &bad), -EINVAL);
}

static void
test_validate(void **state)
{
	char id[41], other[41];
	const char *why;
	int fd, txt;
	char path[] = "/tmp/test_debuginfod.XXXXXX";

	(void)state;
	/* This test program: an ELF file with a build id (Debian's gcc links one in). */
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(dbginfod_build_id(fd, id), 0);
	assert_true(strlen(id) >= 2 && strspn(id, "0123456789abcdef") == strlen(id));
	assert_int_equal(dbginfod_validate(fd, id, 1ull << 40, &why), 0);
	assert_int_equal(dbginfod_validate(fd, id, 100, &why), -EFBIG);
	assert_string_equal(why, "too big");
	snprintf(other, sizeof(other), "%s", id);
	other[0] = other[0] == '0' ? '1' : '0';
	assert_int_equal(dbginfod_validate(fd, other, 1ull << 40, &why), -ENOEXEC);
	assert_string_equal(why, "another build id");
	close(fd);
	txt = mkstemp(path);
	assert_true(txt >= 0);
	assert_int_equal(write(txt, "<html>404</html>", 16), 16);
	assert_int_equal(dbginfod_validate(txt, id, 1ull << 40, &why), -ENOEXEC);
	assert_string_equal(why, "not an ELF file");
	close(txt);
	unlink(path);
}

static void
put_file(const char *dir, const char *name, size_t size, time_t age)
{
	char path[512];
	struct timeval tv[2];
	char *b = calloc(1, size + 1);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(b);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(b, 1, size, f), size);
	fclose(f);
	free(b);
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= age;
	tv[1] = tv[0];
	assert_int_equal(utimes(path, tv), 0);
}

#define HEX_A	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HEX_C	"cccccccccccccccccccccccccccccccccccccccc"
#define HEX_D	"dddddddddddddddddddddddddddddddddddddddd"

static void
test_cache(void **state)
{
	char data[] = "/tmp/test_debuginfod.XXXXXX", dir[256], path[512];
	struct dbginfod *d;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(data));
	snprintf(dir, sizeof(dir), "%s/debuginfo", data);
	assert_int_equal(mkdir(dir, 0700), 0);
	put_file(dir, HEX_A ".debug", 3000, 100);	/* the oldest: evicted */
	put_file(dir, HEX_B ".debug", 3000, 10);
	put_file(dir, ".tmp-" HEX_C, 10, 0);		/* a download cut by a crash */
	put_file(dir, HEX_C ".none", 0, 0);
	snprintf(path, sizeof(path), "%s/" HEX_D ".debug", dir);
	assert_int_equal(symlink("/proc/self/exe", path), 0);

	assert_int_equal(dbginfod_create("", data, 4000, &d), 0);
	snprintf(path, sizeof(path), "%s/" HEX_A ".debug", dir);
	assert_int_equal(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/.tmp-" HEX_C, dir);
	assert_int_equal(stat(path, &st), -1);

	assert_int_equal(dbginfod_lookup(d, HEX_B, true, &fd), DBGINFOD_READY);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dbginfod_lookup(d, HEX_A, true, &fd), DBGINFOD_NONE);
	assert_int_equal(fd, -1);
	assert_int_equal(dbginfod_lookup(d, HEX_C, true, &fd), DBGINFOD_NONE);
	/* A link in the cache is not followed, whatever it points at. */
	assert_int_equal(dbginfod_lookup(d, HEX_D, true, &fd), DBGINFOD_NONE);
	assert_int_equal(fd, -1);
	/* Names are made of hex build ids only. */
	assert_int_equal(dbginfod_lookup(d, "../../etc/passwd", true, &fd), DBGINFOD_NONE);
	assert_int_equal(dbginfod_lookup(d, "ABCD", true, &fd), DBGINFOD_NONE);
	assert_int_equal(dbginfod_lookup(d, "abc", true, &fd), DBGINFOD_NONE);
	assert_int_equal(dbginfod_generation(d), 0);
	dbginfod_destroy(d);

	snprintf(path, sizeof(path), "%s/" HEX_B ".debug", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" HEX_C ".none", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" HEX_D ".debug", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rmdir(data), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_urls),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
