/*
 * memread: other processes' memory read on a worker thread with a deadline
 * (see memread.h).
 *
 * The worker owns the buffer it reads into, so that a read abandoned by the
 * caller never writes into the caller's memory; the caller copies the bytes
 * out once the worker says it is done. One mutex per worker protects its
 * job; an abandoned worker whose read returns is freed by its reader (reap),
 * or frees itself when the reader is gone.
 *
 * A read takes microseconds; the hand-over costs more (two wake-ups). So
 * each side is woken only when it sleeps (idle, waiting), and is signalled
 * after the mutex is released, so that the woken thread does not block on
 * it at once; a condition variable each way. (Spinning a while for the
 * other side instead was tried: reads do not come close enough together
 * for it to pay.)
 */
#define _GNU_SOURCE	/* process_vm_readv, pthread_condattr_setclock */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "memread.h"

struct mrworker {
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 job_cv;	/* a job, or quit: for the worker */
	pthread_cond_t	 done_cv;	/* the job's end: for the caller */
	/* protected by mu */
	bool		 job, done;
	bool		 abandoned, quit;
	bool		 orphaned;	/* abandoned, and its reader gone: frees itself */
	bool		 idle;		/* the worker sleeps on job_cv */
	bool		 waiting;	/* the caller sleeps on done_cv */
	bool		 taken;		/* the worker took the job (it had the CPU) */
	pid_t		 tid;		/* the worker's thread id, set as it starts */
	pid_t		 pid;
	struct iovec	 remote[MEMREAD_MAX_IOV];
	size_t		 n, total;
	ssize_t		 got;		/* bytes, or -errno */
	uint8_t		*buf;		/* MEMREAD_MAX_BYTES, the worker's */
};

/* Abandoned workers whose read has not returned, in the whole process. */
static atomic_int stuck_now;

struct memreader {
	struct mrworker	*w;		/* NULL: started at the next read */
	int64_t		 deadline_ns;
	pid_t		 stuck[MEMREAD_MAX_STUCK];	/* processes whose reads stalled */
	struct mrworker	*stuckw[MEMREAD_MAX_STUCK];	/* and the workers left to them */
	unsigned	 nstuck;
	uint64_t	 stalls;		/* reads abandoned since creation */
};

static void
worker_free(struct mrworker *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->job_cv);
	pthread_cond_destroy(&w->done_cv);
	free(w->buf);
	free(w);
}

static void *
worker_main(void *arg)
{
	struct mrworker *w = arg;
	struct iovec l;
	ssize_t got;
	bool wake;

	pthread_mutex_lock(&w->mu);
	w->tid = gettid();
	pthread_mutex_unlock(&w->mu);
	for (;;) {
		pthread_mutex_lock(&w->mu);
		while (!w->job && !w->quit) {
			w->idle = true;
			pthread_cond_wait(&w->job_cv, &w->mu);
			w->idle = false;
		}
		if (w->quit)
			break;
		l.iov_base = w->buf;
		l.iov_len = w->total;
		w->taken = true;
		pthread_mutex_unlock(&w->mu);
		got = process_vm_readv(w->pid, &l, 1, w->remote, w->n, 0);
		pthread_mutex_lock(&w->mu);
		w->got = got < 0 ? -errno : got;
		w->job = false;
		w->done = true;
		if (w->abandoned) {
			/* Its reader frees it (and reads the process again), unless gone. */
			bool orphaned = w->orphaned;

			pthread_mutex_unlock(&w->mu);
			if (orphaned)
				worker_free(w);
			atomic_fetch_sub(&stuck_now, 1);
			return NULL;
		}
		/* Done under the mutex: the caller cannot abandon w any more. */
		wake = w->waiting;
		pthread_mutex_unlock(&w->mu);
		if (wake)
			pthread_cond_signal(&w->done_cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static struct mrworker *
worker_start(void)
{
	struct mrworker *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	if (w == NULL || (w->buf = malloc(MEMREAD_MAX_BYTES)) == NULL) {
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->job_cv, NULL);
	pthread_cond_init(&w->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		worker_free(w);
		return NULL;
	}
	return w;
}

struct memreader *
memread_create(int64_t deadline_ns)
{
	struct memreader *r = calloc(1, sizeof(*r));

	if (r)
		r->deadline_ns = deadline_ns;
	return r;
}

/*
 * Abandoned workers whose read ended after all (a page that took long to
 * come in, not a filesystem that never answers): freed, and their process
 * is read again.
 */
static void
reap(struct memreader *r)
{
	unsigned i = 0;
	bool done;

	while (i < r->nstuck) {
		struct mrworker *w = r->stuckw[i];

		pthread_mutex_lock(&w->mu);
		done = w->done;
		pthread_mutex_unlock(&w->mu);
		if (!done) {
			i++;
			continue;
		}
		log_info("ebpf: the stalled read of pid %d's memory ended: reading it again",
		    (int)r->stuck[i]);
		worker_free(w);
		r->nstuck--;
		r->stuck[i] = r->stuck[r->nstuck];
		r->stuckw[i] = r->stuckw[r->nstuck];
	}
}

void
memread_destroy(struct memreader *r)
{
	unsigned i;
	bool done;

	if (r == NULL)
		return;
	for (i = 0; i < r->nstuck; i++) {
		struct mrworker *w = r->stuckw[i];

		pthread_mutex_lock(&w->mu);
		done = w->done;
		w->orphaned = !done;
		pthread_mutex_unlock(&w->mu);
		if (done)
			worker_free(w);
	}
	if (r->w) {
		pthread_mutex_lock(&r->w->mu);
		r->w->quit = true;
		pthread_cond_signal(&r->w->job_cv);
		pthread_mutex_unlock(&r->w->mu);
		pthread_join(r->w->thread, NULL);
		worker_free(r->w);
	}
	free(r);
}

int
memread_stuck_now(void)
{
	return atomic_load(&stuck_now);
}

uint64_t
memread_stalls(const struct memreader *r)
{
	return r ? r->stalls : 0;
}

bool
memread_thread_runnable(pid_t tid)
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

ssize_t
memread_readv(struct memreader *r, pid_t pid, const struct iovec *local,
    const struct iovec *remote, size_t n)
{
	struct mrworker *w;
	struct timespec until;
	int64_t t, t0;
	size_t i, total = 0, at;
	ssize_t got;
	bool wake;
	int rc = 0;

	if (n == 0)
		return 0;
	if (n > MEMREAD_MAX_IOV)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (local[i].iov_len != remote[i].iov_len || remote[i].iov_len > MEMREAD_MAX_BYTES)
			return -EINVAL;
		total += remote[i].iov_len;
	}
	if (total > MEMREAD_MAX_BYTES)
		return -E2BIG;
	if (r->nstuck > 0)
		reap(r);
	if (r->nstuck >= MEMREAD_MAX_STUCK)
		return -ETIMEDOUT;
	for (i = 0; i < r->nstuck; i++)
		if (r->stuck[i] == pid)
			return -ETIMEDOUT;
	if (r->w == NULL && (r->w = worker_start()) == NULL)
		return -ENOMEM;
	w = r->w;
	t0 = clock_mono_ns();
	t = t0 + r->deadline_ns;
	until.tv_sec = t / 1000000000;
	until.tv_nsec = t % 1000000000;
	pthread_mutex_lock(&w->mu);
	w->pid = pid;
	w->taken = false;
	memcpy(w->remote, remote, n * sizeof(*remote));
	w->n = n;
	w->total = total;
	w->done = false;
	w->job = true;
	wake = w->idle;
	pthread_mutex_unlock(&w->mu);
	if (wake)
		pthread_cond_signal(&w->job_cv);
	pthread_mutex_lock(&w->mu);
	while (!w->done && rc == 0) {
		w->waiting = true;
		rc = pthread_cond_timedwait(&w->done_cv, &w->mu, &until);
		w->waiting = false;
		/*
		 * Past the deadline, a worker that has not had the CPU to take
		 * the job, or that is runnable in it, is not stalled: a busy
		 * host. It gets more time, up to MEMREAD_STARVED_MAX deadlines.
		 */
		if (rc == ETIMEDOUT && !w->done &&
		    clock_mono_ns() - t0 < MEMREAD_STARVED_MAX * r->deadline_ns &&
		    (!w->taken || memread_thread_runnable(w->tid))) {
			t = clock_mono_ns() + r->deadline_ns;
			until.tv_sec = t / 1000000000;
			until.tv_nsec = t % 1000000000;
			rc = 0;
		}
	}
	if (!w->done) {
		/* Left to its read; reap() frees it should the read ever end. */
		pthread_t thr = w->thread;

		w->abandoned = true;
		atomic_fetch_add(&stuck_now, 1);
		pthread_mutex_unlock(&w->mu);
		pthread_detach(thr);
		r->w = NULL;
		r->stuckw[r->nstuck] = w;
		r->stuck[r->nstuck++] = pid;
		r->stalls++;
		log_warnx("ebpf: reading the memory of pid %d did not end in %lld ms (a file on "
		    "a filesystem that does not answer?): not reading it again until it ends%s",
		    (int)pid,
		    (long long)(r->deadline_ns / 1000000), r->nstuck >= MEMREAD_MAX_STUCK ?
		    "; too many stalled reads: no process's memory is read any more" : "");
		return -ETIMEDOUT;
	}
	got = w->got;
	for (i = 0, at = 0; got > 0 && i < n && at < (size_t)got; i++) {
		size_t k = local[i].iov_len < (size_t)got - at ? local[i].iov_len : (size_t)got - at;

		memcpy(local[i].iov_base, w->buf + at, k);
		at += k;
	}
	pthread_mutex_unlock(&w->mu);
	return got;
}
