/*
 * memread: reading other processes' memory (process_vm_readv) without ever
 * blocking the sampler on it. A page of another process may be a file's on
 * a filesystem whose server never answers (FUSE, a dead NFS server): the
 * read then waits in the kernel for good. Reads run on a worker thread and
 * the caller waits at most a deadline (more while the worker is runnable,
 * waiting for a CPU on a busy host, not for its read: up to
 * MEMREAD_STARVED_MAX deadlines); a read past it is abandoned with its
 * worker, the process is not read again while that read lasts (should it
 * ever end, a page slow to come in rather than a filesystem that never
 * answers, the process is read again), and a new worker takes the next
 * reads. Past a few abandoned workers still in their read, no process is
 * read any more.
 *
 * Not thread-safe: one reader belongs to one thread (the sampler's).
 */
#ifndef PROFILEFS_MEMREAD_H
#define PROFILEFS_MEMREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define MEMREAD_MAX_BYTES	(512u << 10)	/* of one read */
#define MEMREAD_MAX_IOV		128
#define MEMREAD_MAX_STUCK	4		/* abandoned workers before reads stop */
#define MEMREAD_STARVED_MAX	10		/* deadlines a read waits whose worker is runnable */

struct memreader;

/* deadline_ns: the longest a read may take. NULL on allocation failure. */
struct memreader *memread_create(int64_t deadline_ns);
/* Stops the worker; an abandoned one is left to end by itself. */
void		 memread_destroy(struct memreader *r);
/*
 * process_vm_readv(pid, local, remote) within the deadline: local[i] and
 * remote[i] of equal lengths, n of each (at most MEMREAD_MAX_IOV, at most
 * MEMREAD_MAX_BYTES in all). Returns the bytes read (fewer when a remote
 * range could not be read), -ETIMEDOUT when the read did not end in time or
 * pid's reads stalled before, or another -errno.
 */
ssize_t		 memread_readv(struct memreader *r, pid_t pid, const struct iovec *local,
		    const struct iovec *remote, size_t n);
/*
 * Whether thread tid of this process waits for a CPU, not for its I/O: it
 * is runnable ('R' in /proc/self/task/TID/stat). On a host whose CPUs are
 * all busy a worker can wait a deadline for its turn; one stalled in the
 * kernel on a filesystem that does not answer sleeps ('D', 'S'). Used by
 * rio.c's openers too.
 */
bool		 memread_thread_runnable(pid_t tid);
/* Workers of any reader still stuck in an abandoned read. */
int		 memread_stuck_now(void);
/* Reads abandoned since start (each a process whose memory did not answer). */
uint64_t	 memread_stalls(const struct memreader *r);

#endif
