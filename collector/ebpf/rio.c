/*
 * rio: other processes' paths opened on a worker thread with a deadline
 * (see rio.h; the worker is jobthread.c's, as memread's). The worker owns
 * its job (a copy of the path) and its result (the descriptor), so that an
 * open abandoned by the caller never touches the caller's memory; an
 * abandoned worker is let go at once: it closes what it opened and frees
 * itself when (if ever) the open returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base.h"
#include "jobthread.h"
#include "owner.h"
#include "rio.h"

/* An open: the worker's (jobthread_job). */
struct riojob {
	pid_t		 pid;
	char		 path[PATH_MAX];
	int		 how;
	off_t		 max_size;
	int		 got;		/* descriptor, or -errno */
	struct stat	 st;
};

/* Abandoned workers whose open has not returned, and opens abandoned, in the whole process. */
static atomic_int stuck_now;
static atomic_ullong stalls;

struct rio {
	struct jobthread *w;		/* NULL: started at the next open */
	int64_t		 deadline_ns;
	pid_t		 stuck[RIO_MAX_STUCK];	/* processes whose opens stalled */
	unsigned	 nstuck;
};

bool
rio_fd_remote(int fd)
{
	/* f_type of FUSE and the network and cluster filesystems (linux/magic.h and theirs). */
	static const unsigned long remote[] = {
		0x65735546,	/* fuse, fuseblk */
		0x6969,		/* nfs */
		0x517b,		/* smb */
		0xff534d42,	/* cifs */
		0xfe534d42,	/* smb2 */
		0x01021997,	/* 9p */
		0x00c36400,	/* ceph */
		0x5346414f,	/* afs */
		0x6b414653,	/* kafs */
		0x73757245,	/* coda */
		0x564c,		/* ncp */
		0x0bd00bd0,	/* lustre */
		0x01161970,	/* gfs2 */
		0x7461636f,	/* ocfs2 */
		0x20030528,	/* orangefs */
	};
	struct statfs sf;
	size_t i;

	if (fstatfs(fd, &sf) < 0)
		return true;
	for (i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		if ((unsigned long)(unsigned int)sf.f_type == remote[i])
			return true;
	return false;
}

pid_t
rio_path_pid(const char *path)
{
	unsigned long long pid = 0;
	const char *c;

	if (strncmp(path, "/proc/", 6) != 0)
		return 0;
	for (c = path + 6; *c >= '0' && *c <= '9' && pid <= INT_MAX; c++)
		pid = pid * 10 + (unsigned)(*c - '0');
	if (c == path + 6 || *c != '/' || pid == 0 || pid > INT_MAX)
		return 0;
	return (pid_t)pid;
}

/* Whether path is a file everyone may read in directories everyone may search. */
static bool
public_file(const char *path)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IROTH))
		return false;
	snprintf(dir, sizeof(dir), "%s", path);
	while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (stat(dir, &st) < 0 || !(st.st_mode & S_IXOTH))
			return false;
		if (strcmp(dir, "/proc") == 0)
			break;	/* /proc/PID/root: the process's own root, not ours */
	}
	return true;
}

/* The job, on the worker: a descriptor or -errno. */
static int
open_job(pid_t pid, const char *path, int how, off_t max_size, struct stat *st)
{
	struct owner w;
	int fd, rc;

	memset(&w, 0, sizeof(w));
	if ((how & RIO_AS_OWNER) && pid > 0 && (rc = owner_begin(&w, (unsigned)pid)) < 0)
		return rc;
	if ((how & RIO_AS_OWNER) && w.public_only && (!(how & RIO_PUBLIC) || !public_file(path))) {
		owner_end(&w);
		return -EACCES;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (how & RIO_FOLLOW ? 0 : O_NOFOLLOW) |
	    (how & RIO_DIR ? O_DIRECTORY : 0));
	rc = fd < 0 ? -errno : 0;
	owner_end(&w);
	if (fd < 0)
		return rc;
	if (fstat(fd, st) < 0)
		rc = -errno;
	else if ((how & RIO_DIR) ? !S_ISDIR(st->st_mode) : (!S_ISREG(st->st_mode) ||
	    (max_size > 0 && st->st_size > max_size)))
		rc = -EINVAL;
	else if (rio_fd_remote(fd))
		rc = -EREMOTE;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

static void
open_run(void *arg)
{
	struct riojob *j = arg;

	memset(&j->st, 0, sizeof(j->st));
	j->got = open_job(j->pid, j->path, j->how, j->max_size, &j->st);
}

/* An abandoned open that returned after all: what it opened is nobody's. */
static void
open_undo(void *arg)
{
	struct riojob *j = arg;

	if (j->got >= 0)
		close(j->got);
}

static const struct jobthread_kind open_kind = {
	.job_size = sizeof(struct riojob), .run = open_run, .undo = open_undo,
	.stuck = &stuck_now,
};

struct rio *
rio_create(int64_t deadline_ns)
{
	struct rio *r = calloc(1, sizeof(*r));

	if (r)
		r->deadline_ns = deadline_ns;
	return r;
}

void
rio_destroy(struct rio *r)
{
	if (r == NULL)
		return;
	jobthread_stop(r->w);
	free(r);
}

static pthread_key_t self_key;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void
self_end(void *r)
{
	rio_destroy(r);
}

static void
self_init(void)
{
	(void)pthread_key_create(&self_key, self_end);
}

struct rio *
rio_self(void)
{
	struct rio *r;

	(void)pthread_once(&self_once, self_init);
	if ((r = pthread_getspecific(self_key)) == NULL &&
	    (r = rio_create(RIO_DEADLINE_NS)) != NULL && pthread_setspecific(self_key, r) != 0) {
		rio_destroy(r);
		r = NULL;
	}
	return r;
}

int
rio_stuck_now(void)
{
	return atomic_load(&stuck_now);
}

uint64_t
rio_stalls(void)
{
	return atomic_load(&stalls);
}

int
rio_open(struct rio *r, pid_t pid, const char *path, int how, off_t max_size, struct stat *st)
{
	struct riojob *j;
	size_t i;
	int got;

	if (r == NULL)
		return -ENOMEM;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (r->nstuck >= RIO_MAX_STUCK)
		return -ETIMEDOUT;
	for (i = 0; i < r->nstuck; i++)
		if (r->stuck[i] == pid)
			return -ETIMEDOUT;
	if (r->w == NULL && (r->w = jobthread_start(&open_kind)) == NULL)
		return -ENOMEM;
	j = jobthread_job(r->w);
	j->pid = pid;
	snprintf(j->path, sizeof(j->path), "%s", path);
	j->how = how;
	j->max_size = max_size;
	if (jobthread_run(r->w, r->deadline_ns, RIO_STARVED_MAX) < 0) {
		/* Left to its open; it closes the file and frees itself should it ever end. */
		jobthread_stop(r->w);
		r->w = NULL;
		atomic_fetch_add(&stalls, 1);
		r->stuck[r->nstuck++] = pid;
		log_warnx("ebpf: opening %s for pid %d did not end in %lld ms (a filesystem that "
		    "does not answer?): not opening its files again%s", path, (int)pid,
		    (long long)(r->deadline_ns / 1000000), r->nstuck >= RIO_MAX_STUCK ?
		    "; too many stalled opens: no process's files are opened any more" : "");
		return -ETIMEDOUT;
	}
	got = j->got;
	if (st)
		*st = j->st;
	return got;
}
