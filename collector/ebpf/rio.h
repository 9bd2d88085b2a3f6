/*
 * rio: opening files on another process's behalf (through /proc/PID/root
 * or /proc/PID/map_files) without ever blocking the caller on it. A path a
 * process controls may cross a filesystem whose server never answers (a
 * FUSE mount of its own, a dead NFS server) and even the lookup of a name
 * there waits in the kernel for good. Opens run on a worker thread and the
 * caller waits at most a deadline (more while the worker is runnable: a busy
 * host, see memread_thread_runnable); an open past it is abandoned with its
 * worker (which closes what it opened and ends by itself if the call ever
 * returns), the process's paths are never opened again, and a new worker
 * takes the next opens. Past a few abandoned workers, no path of any
 * process is opened any more.
 *
 * What rio_open returns is a file on a local filesystem (not FUSE, not a
 * network filesystem: checked with fstatfs on the worker), so that reading
 * it afterwards on the caller's thread cannot block for good either.
 *
 * Not thread-safe: one opener belongs to one thread (rio_self: the caller's).
 */
#ifndef PROFILEFS_RIO_H
#define PROFILEFS_RIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define RIO_DEADLINE_NS		(2000LL * 1000000)	/* of one open */
#define RIO_MAX_STUCK		4	/* abandoned workers before opens stop */
#define RIO_STARVED_MAX		5	/* deadlines an open waits whose worker is runnable */

/* rio_open's how */
#define RIO_FOLLOW	0x01	/* follow a link in the last component (map_files) */
#define RIO_DIR		0x02	/* a directory (else a regular file) */
#define RIO_AS_OWNER	0x04	/* with the file credentials of pid's owner (owner.h) */
#define RIO_PUBLIC	0x08	/* with RIO_AS_OWNER: where those cannot be taken, only a
				   file all may read in directories all may search */

struct rio;

/* deadline_ns: the longest an open may take. NULL on allocation failure. */
struct rio	*rio_create(int64_t deadline_ns);
/* Stops the worker; an abandoned one is left to end by itself. */
void		 rio_destroy(struct rio *r);
/*
 * The calling thread's opener (RIO_DEADLINE_NS), made at its first use and
 * destroyed when the thread ends; NULL on allocation failure (rio_open of
 * NULL is -ENOMEM).
 */
struct rio	*rio_self(void);
/*
 * Open path (at most PATH_MAX) for reading on behalf of process pid (0: of
 * none; its stalls then stop opens for no process but those of pid 0),
 * within the deadline, as how says (RIO_*). Returns the descriptor (the
 * caller's to close) with its fstat in *st (may be NULL), or -errno:
 * -ETIMEDOUT when the open did not end in time or pid's opens stalled
 * before, -EREMOTE when the file is on FUSE or a network filesystem,
 * -EINVAL when it is not a regular file (a directory with RIO_DIR) or is
 * larger than max_size (0: any size), -EACCES when the owner could not.
 */
int		 rio_open(struct rio *r, pid_t pid, const char *path, int how, off_t max_size,
		    struct stat *st);
/* The pid of a path "/proc/PID/..."; 0 for another path. */
pid_t		 rio_path_pid(const char *path);
/* Whether the file open on fd is on FUSE or a network filesystem (may block: a worker's). */
bool		 rio_fd_remote(int fd);
/* Workers of any opener still stuck in an abandoned open. */
int		 rio_stuck_now(void);
/* Opens abandoned since start, in the whole process. */
uint64_t	 rio_stalls(void);

#endif
