/*
 * test_cancel: a request's cancel (base/cancel.c): nothing cancels a NULL or
 * unstarted one, the CPU deadline counts the thread's CPU time only (not
 * time asleep), a peer that closed its socket is seen, and the reason stays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base.h"

static void
test_never(void **state)
{
	struct cancel c;

	(void)state;
	assert_int_equal(cancel_check(NULL), 0);
	memset(&c, 0, sizeof(c));
	assert_int_equal(cancel_check(&c), 0);
	assert_int_equal(cancel_cpu_ns(NULL), 0);
	cancel_start(&c, 0, -1);	/* no limit, no socket */
	assert_int_equal(cancel_check(&c), 0);
}

static void
test_cpu_deadline(void **state)
{
	struct cancel c;
	struct timespec ts = { 0, 60 * 1000000 };
	volatile uint64_t x = 0;
	int rc = 0;

	(void)state;
	cancel_start(&c, 20 * 1000000, -1);	/* 20 ms of CPU */
	/* Asleep, the thread uses no CPU: still going. */
	nanosleep(&ts, NULL);
	assert_int_equal(cancel_check(&c), 0);
	while (rc == 0) {
		x += 1;
		rc = cancel_check(&c);
	}
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(cancel_cpu_ns(&c) >= 20 * 1000000);
	assert_int_equal(cancel_check(&c), -ETIMEDOUT);	/* sticky */
}

static void
test_client_gone(void **state)
{
	struct cancel c;
	struct timespec ts = { 0, 20 * 1000000 };
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cancel_start(&c, 0, sv[0]);
	nanosleep(&ts, NULL);
	assert_int_equal(cancel_check(&c), 0);	/* the peer is there */
	/* Unread data from a peer that is still there does not cancel. */
	assert_int_equal(write(sv[1], "x", 1), 1);
	nanosleep(&ts, NULL);
	assert_int_equal(cancel_check(&c), 0);
	close(sv[1]);
	nanosleep(&ts, NULL);
	assert_int_equal(cancel_check(&c), -ECONNRESET);
	assert_int_equal(cancel_check(&c), -ECONNRESET);
	close(sv[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never),
		cmocka_unit_test(test_cpu_deadline),
		cmocka_unit_test(test_client_gone),
	};

	return cmocka_run_group_tests_name("cancel", tests, NULL, NULL);
}
