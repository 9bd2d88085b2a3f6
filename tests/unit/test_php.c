/*
 * test_php: the pure parts of collector/ebpf/runtimes/php.c: the version
 * found in a binary's read-only data, and the executor loop's name.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "php.h"

static void
test_version(void **state)
{
	static const char data[] = "\0\0abc\0X-Powered-By: PHP/8.2.36\0more";
	static const char v84[] = "X-Powered-By: PHP/8.4.0-dev";
	int major = 0, minor = 0;

	(void)state;
	assert_int_equal(php_version_find(data, sizeof(data), &major, &minor), 0);
	assert_int_equal(major, 8);
	assert_int_equal(minor, 2);
	assert_int_equal(php_version_find(v84, strlen(v84), &major, &minor), 0);
	assert_int_equal(minor, 4);
}

static void
test_version_bad(void **state)
{
	static const char *const bad[] = {
		"no version here", "X-Powered-By: PHP/", "X-Powered-By: PHP/8",
		"X-Powered-By: PHP/8.", "X-Powered-By: PHP/8.2", "X-Powered-By: PHP/x.2.1",
		"X-Powered-By: PHP/123456.2.1",
	};
	int major, minor;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(php_version_find(bad[i], strlen(bad[i]), &major, &minor), -ENOENT);
	/* Cut by the length given, not by a NUL. */
	assert_int_equal(php_version_find("X-Powered-By: PHP/8.2.1", 21, &major, &minor), -ENOENT);
}

static void
test_is_vm(void **state)
{
	(void)state;
	assert_true(php_is_vm("execute_ex"));
	assert_true(php_is_vm("execute_ex.cold"));
	assert_false(php_is_vm("execute_ex2"));
	assert_false(php_is_vm("zend_execute"));
	assert_false(php_is_vm(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_version_bad),
		cmocka_unit_test(test_is_vm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
