/*
 * jobthread: one job at a time run on a worker thread, its caller waiting
 * for it at most a deadline: what memread.c (reads of another process's
 * memory) and rio.c (opens of another process's files) share. Such a call
 * may wait in the kernel for good (a page or a path on a FUSE or network
 * filesystem whose server does not answer); the caller must not.
 *
 * The job lives in the worker (jobthread_job), so that a job abandoned by
 * its caller never writes into the caller's memory: the caller fills it,
 * runs it, and copies the result out. Past the deadline the caller gets
 * -ETIMEDOUT and the worker is abandoned to its job: the caller takes no
 * more jobs to it, and either keeps it to learn when the job ended
 * (jobthread_ended, then jobthread_stop frees it) or lets it go at once
 * (jobthread_stop: it frees itself when the job ends, having undone what
 * the job made). A worker runnable past the deadline (waiting for a CPU on
 * a busy host, not for its call) is given more time, up to starved_max
 * deadlines in all. What to do with a caller's abandoned workers (refuse a
 * process, log, count) is the caller's business.
 *
 * A worker belongs to one thread (its caller's) until abandoned; its kind
 * is shared by all workers and must outlive them.
 */
#ifndef PROFILEFS_JOBTHREAD_H
#define PROFILEFS_JOBTHREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct jobthread_kind {
	size_t		 job_size;	/* bytes of a job (zeroed at the start) */
	/* On the worker, no lock held: do the job, leaving the result in it. */
	void		(*run)(void *job);
	/* On the worker, after an abandoned job ended (NULL: nothing): undo what it made. */
	void		(*undo)(void *job);
	/* Workers of this kind in an abandoned job now, in the whole process (NULL: none kept). */
	atomic_int	*stuck;
};

struct jobthread;

/* A new worker of kind k, its thread started. NULL on failure. */
struct jobthread *jobthread_start(const struct jobthread_kind *k);
/* The job of t: the caller's to fill before jobthread_run and to read after it returns 0. */
void		*jobthread_job(struct jobthread *t);
/*
 * Run t's job, waiting at most deadline_ns (up to starved_max deadlines
 * while the worker waits for a CPU). 0: done, the result in the job.
 * -ETIMEDOUT: abandoned (see above); then only jobthread_ended and
 * jobthread_stop may be called on t.
 */
int		 jobthread_run(struct jobthread *t, int64_t deadline_ns, int starved_max);
/* Whether abandoned t's job has ended since: jobthread_stop frees it at once. */
bool		 jobthread_ended(struct jobthread *t);
/*
 * Done with t (NULL: nothing). A worker not abandoned is stopped and
 * freed; an abandoned one is freed if its job ended, else it frees itself
 * when the job ends.
 */
void		 jobthread_stop(struct jobthread *t);
/*
 * Whether thread tid of this process waits for a CPU, not for its I/O: it
 * is runnable ('R' in /proc/self/task/TID/stat). A worker stalled in the
 * kernel on a filesystem that does not answer sleeps ('D', 'S').
 */
bool		 jobthread_runnable(pid_t tid);

#endif
