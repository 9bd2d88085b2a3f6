/*
 * jobthread: the worker with a deadline that memread.c and rio.c share
 * (collector/ebpf/jobthread.c): jobs run one after another on one worker;
 * a job that does not end (a read of a pipe nobody writes) is abandoned at
 * the deadline and counted stuck; when it ends after all, its undo runs
 * and it is no longer stuck, kept by the caller (jobthread_ended) or freed
 * by itself when let go.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

#include "jobthread.h"

struct tjob {
	int		 fd;		/* read one byte from it; -1: none */
	int		 in, out;
	int		*undone;	/* the caller's, set by undo */
};

static atomic_int stuck;
static atomic_int undos;

static void
tjob_run(void *arg)
{
	struct tjob *j = arg;
	char c;

	if (j->fd >= 0 && read(j->fd, &c, 1) != 1)
		j->out = -1;
	else
		j->out = j->in * 2;
}

static void
tjob_undo(void *arg)
{
	(void)arg;
	atomic_fetch_add(&undos, 1);
}

static const struct jobthread_kind kind = {
	.job_size = sizeof(struct tjob), .run = tjob_run, .undo = tjob_undo, .stuck = &stuck,
};

static void
test_jobs(void **state)
{
	struct jobthread *t = jobthread_start(&kind);
	struct tjob *j;
	int i;

	(void)state;
	assert_non_null(t);
	for (i = 0; i < 100; i++) {
		j = jobthread_job(t);
		j->fd = -1;
		j->in = i;
		assert_int_equal(jobthread_run(t, 2000LL * 1000 * 1000, 5), 0);
		assert_int_equal(j->out, 2 * i);
	}
	jobthread_stop(t);
	assert_int_equal(atomic_load(&undos), 0);
}

/* Abandon a job reading p[0]; kept: the caller learns when it ended. */
static void
test_abandoned(void **state)
{
	struct jobthread *t = jobthread_start(&kind);
	struct tjob *j;
	int p[2], i;

	(void)state;
	assert_non_null(t);
	assert_int_equal(pipe(p), 0);
	j = jobthread_job(t);
	j->fd = p[0];
	assert_int_equal(jobthread_run(t, 50LL * 1000 * 1000, 1), -ETIMEDOUT);
	assert_int_equal(atomic_load(&stuck), 1);
	assert_false(jobthread_ended(t));
	assert_int_equal(write(p[1], "x", 1), 1);
	for (i = 0; i < 1000 && !jobthread_ended(t); i++)
		usleep(2000);
	assert_true(jobthread_ended(t));
	assert_int_equal(atomic_load(&undos), 1);
	for (i = 0; i < 1000 && atomic_load(&stuck) != 0; i++)
		usleep(2000);
	assert_int_equal(atomic_load(&stuck), 0);
	jobthread_stop(t);
	close(p[0]);
	close(p[1]);
}

/* Abandoned and let go at once: it frees itself when its job ends. */
static void
test_let_go(void **state)
{
	struct jobthread *t = jobthread_start(&kind);
	struct tjob *j;
	int p[2], i;

	(void)state;
	atomic_store(&undos, 0);
	assert_non_null(t);
	assert_int_equal(pipe(p), 0);
	j = jobthread_job(t);
	j->fd = p[0];
	assert_int_equal(jobthread_run(t, 50LL * 1000 * 1000, 1), -ETIMEDOUT);
	jobthread_stop(t);
	assert_int_equal(atomic_load(&stuck), 1);
	assert_int_equal(write(p[1], "x", 1), 1);
	for (i = 0; i < 1000 && atomic_load(&stuck) != 0; i++)
		usleep(2000);
	assert_int_equal(atomic_load(&stuck), 0);
	assert_int_equal(atomic_load(&undos), 1);
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_abandoned),
		cmocka_unit_test(test_let_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
