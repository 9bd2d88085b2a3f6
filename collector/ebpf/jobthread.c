/*
 * jobthread: a job on a worker thread with a deadline (see jobthread.h).
 *
 * One mutex per worker protects its state; the job itself is touched by
 * the caller only while the worker has none (before has_job is set, after
 * done is seen), by the worker only while it has one. An abandoned worker
 * whose job returns is freed by its caller (jobthread_stop after
 * jobthread_ended), or frees itself when its caller let it go (orphaned).
 *
 * A job takes microseconds; the hand-over costs more (two wake-ups). So
 * each side is woken only when it sleeps (idle, waiting), and is signalled
 * after the mutex is released, so that the woken thread does not block on
 * it at once; a condition variable each way. (Spinning a while for the
 * other side instead was tried: jobs do not come close enough together for
 * it to pay.)
 */
#define _GNU_SOURCE	/* gettid, pthread_condattr_setclock */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "jobthread.h"

struct jobthread {
	const struct jobthread_kind *kind;
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 job_cv;	/* a job, or quit: for the worker */
	pthread_cond_t	 done_cv;	/* the job's end: for the caller */
	/* protected by mu */
	bool		 has_job, done;
	bool		 abandoned, quit;
	bool		 orphaned;	/* abandoned, and let go by its caller: frees itself */
	bool		 idle;		/* the worker sleeps on job_cv */
	bool		 waiting;	/* the caller sleeps on done_cv */
	bool		 taken;		/* the worker took the job (it had the CPU) */
	pid_t		 tid;		/* the worker's thread id, set as it starts */
	void		*job;		/* kind->job_size bytes */
};

static void
thread_free(struct jobthread *t)
{
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->job_cv);
	pthread_cond_destroy(&t->done_cv);
	free(t->job);
	free(t);
}

static void *
thread_main(void *arg)
{
	struct jobthread *t = arg;
	atomic_int *stuck;
	bool wake, orphaned;

	pthread_mutex_lock(&t->mu);
	t->tid = gettid();
	pthread_mutex_unlock(&t->mu);
	for (;;) {
		pthread_mutex_lock(&t->mu);
		while (!t->has_job && !t->quit) {
			t->idle = true;
			pthread_cond_wait(&t->job_cv, &t->mu);
			t->idle = false;
		}
		if (t->quit)
			break;
		t->taken = true;
		pthread_mutex_unlock(&t->mu);
		t->kind->run(t->job);
		pthread_mutex_lock(&t->mu);
		if (t->abandoned) {
			/* The job is the worker's alone now: undone before its end is told. */
			pthread_mutex_unlock(&t->mu);
			if (t->kind->undo)
				t->kind->undo(t->job);
			pthread_mutex_lock(&t->mu);
			t->has_job = false;
			t->done = true;
			orphaned = t->orphaned;
			stuck = t->kind->stuck;
			pthread_mutex_unlock(&t->mu);
			/* Else its caller frees it, having seen it done. */
			if (orphaned)
				thread_free(t);
			if (stuck)
				atomic_fetch_sub(stuck, 1);
			return NULL;
		}
		/* Done under the mutex: the caller cannot abandon t any more. */
		t->has_job = false;
		t->done = true;
		wake = t->waiting;
		pthread_mutex_unlock(&t->mu);
		if (wake)
			pthread_cond_signal(&t->done_cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

struct jobthread *
jobthread_start(const struct jobthread_kind *k)
{
	struct jobthread *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;

	if (t == NULL || (t->job = calloc(1, k->job_size ? k->job_size : 1)) == NULL) {
		free(t);
		return NULL;
	}
	t->kind = k;
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->job_cv, NULL);
	pthread_cond_init(&t->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&t->thread, NULL, thread_main, t) != 0) {
		thread_free(t);
		return NULL;
	}
	return t;
}

void *
jobthread_job(struct jobthread *t)
{
	return t->job;
}

static void
until_set(struct timespec *until, int64_t ns)
{
	until->tv_sec = ns / 1000000000;
	until->tv_nsec = ns % 1000000000;
}

int
jobthread_run(struct jobthread *t, int64_t deadline_ns, int starved_max)
{
	struct timespec until;
	int64_t t0 = clock_mono_ns();
	bool wake;
	int rc = 0;

	until_set(&until, t0 + deadline_ns);
	pthread_mutex_lock(&t->mu);
	t->taken = false;
	t->done = false;
	t->has_job = true;
	wake = t->idle;
	pthread_mutex_unlock(&t->mu);
	if (wake)
		pthread_cond_signal(&t->job_cv);
	pthread_mutex_lock(&t->mu);
	while (!t->done && rc == 0) {
		t->waiting = true;
		rc = pthread_cond_timedwait(&t->done_cv, &t->mu, &until);
		t->waiting = false;
		/*
		 * Past the deadline, a worker that has not had the CPU to take
		 * the job, or that is runnable in it, is not stalled: a busy
		 * host. It gets more time, up to starved_max deadlines.
		 */
		if (rc == ETIMEDOUT && !t->done &&
		    clock_mono_ns() - t0 < starved_max * deadline_ns &&
		    (!t->taken || jobthread_runnable(t->tid))) {
			until_set(&until, clock_mono_ns() + deadline_ns);
			rc = 0;
		}
	}
	if (!t->done) {
		pthread_t thr = t->thread;

		t->abandoned = true;
		if (t->kind->stuck)
			atomic_fetch_add(t->kind->stuck, 1);
		pthread_mutex_unlock(&t->mu);
		pthread_detach(thr);
		return -ETIMEDOUT;
	}
	pthread_mutex_unlock(&t->mu);
	return 0;
}

bool
jobthread_ended(struct jobthread *t)
{
	bool done;

	pthread_mutex_lock(&t->mu);
	done = t->done;
	pthread_mutex_unlock(&t->mu);
	return done;
}

void
jobthread_stop(struct jobthread *t)
{
	bool ended;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!t->abandoned) {
		t->quit = true;
		pthread_cond_signal(&t->job_cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
		thread_free(t);
		return;
	}
	ended = t->done;
	t->orphaned = !ended;
	pthread_mutex_unlock(&t->mu);
	if (ended)
		thread_free(t);
}

bool
jobthread_runnable(pid_t tid)
{
	char path[64], buf[256], *e;
	ssize_t n;
	int fd;

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "tid (comm) S ...": the comm may hold spaces and parentheses. */
	if ((e = strrchr(buf, ')')) == NULL || e[1] != ' ')
		return false;
	return e[2] == 'R';
}
