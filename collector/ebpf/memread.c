/*
 * memread: other processes' memory read on a worker thread with a deadline
 * (see memread.h; the worker is jobthread.c's).
 *
 * The worker owns the buffer it reads into (its job), so that a read
 * abandoned by the caller never writes into the caller's memory; the
 * caller copies the bytes out once the worker says it is done. An
 * abandoned worker is kept by its reader until its read returns (reap), to
 * read that process again, or frees itself when the reader is gone.
 */
#define _GNU_SOURCE	/* process_vm_readv */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base.h"
#include "jobthread.h"
#include "memread.h"

/* A read: the worker's (jobthread_job). */
struct mrjob {
	pid_t		 pid;
	struct iovec	 remote[MEMREAD_MAX_IOV];
	size_t		 n, total;
	ssize_t		 got;		/* bytes, or -errno */
	uint8_t		 buf[MEMREAD_MAX_BYTES];
};

/* Abandoned workers whose read has not returned, in the whole process. */
static atomic_int stuck_now;

static void
read_job(void *arg)
{
	struct mrjob *j = arg;
	struct iovec l = { j->buf, j->total };
	ssize_t got = process_vm_readv(j->pid, &l, 1, j->remote, j->n, 0);

	j->got = got < 0 ? -errno : got;
}

static const struct jobthread_kind read_kind = {
	.job_size = sizeof(struct mrjob), .run = read_job, .undo = NULL, .stuck = &stuck_now,
};

struct memreader {
	struct jobthread *w;		/* NULL: started at the next read */
	int64_t		 deadline_ns;
	pid_t		 stuck[MEMREAD_MAX_STUCK];	/* processes whose reads stalled */
	struct jobthread *stuckw[MEMREAD_MAX_STUCK];	/* and the workers left to them */
	unsigned	 nstuck;
	uint64_t	 stalls;		/* reads abandoned since creation */
};

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

	while (i < r->nstuck) {
		if (!jobthread_ended(r->stuckw[i])) {
			i++;
			continue;
		}
		log_info("ebpf: the stalled read of pid %d's memory ended: reading it again",
		    (int)r->stuck[i]);
		jobthread_stop(r->stuckw[i]);
		r->nstuck--;
		r->stuck[i] = r->stuck[r->nstuck];
		r->stuckw[i] = r->stuckw[r->nstuck];
	}
}

void
memread_destroy(struct memreader *r)
{
	unsigned i;

	if (r == NULL)
		return;
	for (i = 0; i < r->nstuck; i++)
		jobthread_stop(r->stuckw[i]);	/* freed, or frees itself when its read ends */
	jobthread_stop(r->w);
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
	return jobthread_runnable(tid);
}

ssize_t
memread_readv(struct memreader *r, pid_t pid, const struct iovec *local,
    const struct iovec *remote, size_t n)
{
	struct mrjob *j;
	size_t i, total = 0, at;
	ssize_t got;

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
	if (r->w == NULL && (r->w = jobthread_start(&read_kind)) == NULL)
		return -ENOMEM;
	j = jobthread_job(r->w);
	j->pid = pid;
	memcpy(j->remote, remote, n * sizeof(*remote));
	j->n = n;
	j->total = total;
	if (jobthread_run(r->w, r->deadline_ns, MEMREAD_STARVED_MAX) < 0) {
		/* Left to its read; reap() frees it should the read ever end. */
		r->stuckw[r->nstuck] = r->w;
		r->stuck[r->nstuck++] = pid;
		r->w = NULL;
		r->stalls++;
		log_warnx("ebpf: reading the memory of pid %d did not end in %lld ms (a file on "
		    "a filesystem that does not answer?): not reading it again until it ends%s",
		    (int)pid,
		    (long long)(r->deadline_ns / 1000000), r->nstuck >= MEMREAD_MAX_STUCK ?
		    "; too many stalled reads: no process's memory is read any more" : "");
		return -ETIMEDOUT;
	}
	got = j->got;
	for (i = 0, at = 0; got > 0 && i < n && at < (size_t)got; i++) {
		size_t k = local[i].iov_len < (size_t)got - at ? local[i].iov_len : (size_t)got - at;

		memcpy(local[i].iov_base, j->buf + at, k);
		at += k;
	}
	return got;
}
