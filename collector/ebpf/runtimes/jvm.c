/*
 * jvm: the HotSpot JVM seen by the eBPF sampler (see runtime.h): asking a
 * JVM to write its perf map, and the worker thread that does it so the
 * sampler never waits for a JVM. Reading the map is symbolize.c's.
 *
 * The HotSpot attach mechanism, as the JVM implements it on Linux:
 *   - a JVM listens on the unix socket /tmp/.java_pid<NSPID> (its own /tmp,
 *     its own pid) once its attach listener runs;
 *   - otherwise the listener is started by a file .attach_pid<NSPID> in the
 *     JVM's working directory or /tmp, owned by the JVM's user, and SIGQUIT;
 *   - a request is "1\0" (protocol), the command "jcmd\0" and exactly three
 *     arguments, each NUL-terminated ("Compiler.perfmap\0\0\0"); the JVM
 *     answers "<status>\n<output>" and closes. Status 0 is success.
 * The JVM checks that the peer runs as its user or root. We ask only a
 * process that maps libjvm.so, reach its /tmp through /proc/PID/root
 * without following a link at "tmp" (a directory of its user, or root's
 * with the sticky bit and open to all, as /tmp is), create the trigger file
 * there without following links and with the JVM owner's credentials
 * (owner.h: never a file its owner could not have made, wherever its mount
 * namespace points its /tmp), talk only to a listener that SO_PEERCRED says
 * is the JVM itself, and send SIGQUIT only to a process that catches it (a
 * JVM run with -Xrs does not, and would die of it).
 */
#define _GNU_SOURCE	/* struct ucred, O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "owner.h"
#include "rio.h"
#include "runtime.h"

/* --- the HotSpot attach mechanism ---------------------------------------- */

#define JVM_STARTING_S	30	/* younger, a JVM without a SIGQUIT handler is starting */

static int64_t
now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

/* Whether pid catches SIGQUIT (SigCgt in /proc/PID/status). */
static bool
catches_sigquit(pid_t pid)
{
	char path[64], line[256];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "SigCgt:", 7) == 0) {
			unsigned long long m = strtoull(line + 7, NULL, 16);

			yes = (m >> (SIGQUIT - 1)) & 1;
			break;
		}
	}
	fclose(f);
	return yes;
}

/*
 * The JVM's /tmp as a directory fd: its root through /proc (the magic link),
 * then "tmp" without following a link (a link there would be resolved from
 * our root, not the JVM's). Owned by root or the JVM's user, else refused.
 */
int
runtime_tmpdir(pid_t pid, uid_t uid)
{
	char path[64];
	struct stat st;
	int fd;

	/*
	 * Opened off this thread, and only on a local filesystem (rio.h): the
	 * process may have put a mount that never answers on its /tmp.
	 */
	snprintf(path, sizeof(path), "/proc/%d/root/tmp", (int)pid);
	if ((fd = rio_open(rio_self(), pid, path, RIO_DIR, 0, &st)) < 0)
		return fd;
	/* Its user's, or a /tmp: root's, sticky, open to all (not /etc bound there). */
	if ((st.st_uid != uid && !(st.st_uid == 0 &&
	    (st.st_mode & (S_ISVTX | S_IWOTH | S_IXOTH)) == (S_ISVTX | S_IWOTH | S_IXOTH)))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * How long pid has run, in seconds (/proc/PID/stat's start time against the
 * boot clock), or -1 when it cannot be read (gone).
 */
double
runtime_proc_age_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	struct timespec now;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* After the command's closing parenthesis: state is field 3, start time 22. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &start) != 1 ||
	    clock_gettime(CLOCK_BOOTTIME, &now) < 0)
		return -1;
	return (double)now.tv_sec + now.tv_nsec / 1e9 - (double)start / sysconf(_SC_CLK_TCK);
}

/* Whether pid maps libjvm.so: a JVM, not a program named java. */
static bool
maps_libjvm(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (!yes && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		yes = n >= 10 && strcmp(line + n - 10, "/libjvm.so") == 0;
	}
	free(line);
	fclose(f);
	return yes;
}

/*
 * Connect to the socket name in dirfd: a socket there (not a link), whose
 * listener is the process pid itself (SO_PEERCRED), running as uid or root.
 */
static int
attach_connect(int dirfd, const char *name, pid_t pid, uid_t uid, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct stat st;
	int fd, n;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (st.st_uid != uid && st.st_uid != 0)
		return -EPERM;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	/* Whatever the name led to, the other end must be the JVM. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || cr.pid != pid ||
	    (cr.uid != uid && cr.uid != 0)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * Create the trigger file in the JVM's /tmp (dirfd) as the JVM's owner
 * (owner.h), on this thread: 1 made (remove it afterwards), 0 there
 * already, or -errno (-EPERM when its credentials cannot be taken).
 */
static int
attach_trigger(int dirfd, const char *name, pid_t pid, uid_t uid)
{
	struct owner w;
	struct stat st;
	int fd, rc;

	if ((rc = owner_begin(&w, (unsigned)pid)) < 0)
		return rc;
	if (!w.switched) {
		owner_end(&w);
		return -EPERM;
	}
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK, 0600);
	rc = fd < 0 ? (errno == EEXIST ? 0 : -errno) : 1;
	owner_end(&w);
	if (fd >= 0) {
		/* Its owner: the one the JVM checks (its fs uid may differ from its uid). */
		if (fstat(fd, &st) == 0 && st.st_uid != uid)
			rc = -EPERM;
		close(fd);
		if (rc < 0)
			(void)unlinkat(dirfd, name, 0);
	}
	return rc;
}

int
runtime_jvm_perfmap(pid_t pid, pid_t nspid, uid_t uid, int timeout_ms)
{
	static const char req[] = "1\0jcmd\0Compiler.perfmap\0\0";	/* + the final NUL */
	char sock[32], trig[32], reply[256];
	int64_t deadline = now_ms() + timeout_ms;
	int fd = -1, dirfd, made = 0, rc;
	struct stat st;
	size_t got = 0;
	ssize_t n;

	snprintf(sock, sizeof(sock), ".java_pid%d", (int)nspid);
	snprintf(trig, sizeof(trig), ".attach_pid%d", (int)nspid);
	if ((dirfd = runtime_tmpdir(pid, uid)) < 0)
		return dirfd;

	fd = attach_connect(dirfd, sock, pid, uid, timeout_ms);
	if (fd == -ENOENT || fd == -ECONNREFUSED) {
		/* No listener yet: start it. */
		char ppath[64];

		snprintf(ppath, sizeof(ppath), "/proc/%d", (int)pid);
		if (stat(ppath, &st) < 0) {
			rc = -errno;
			goto out;
		}
		if (st.st_uid != uid) {
			rc = -ESRCH;	/* not the process we were asked about */
			goto out;
		}
		if (!maps_libjvm(pid)) {
			rc = -ENOTSUP;
			goto out;
		}
		/*
		 * A JVM catches SIGQUIT once its signal dispatcher runs, a
		 * moment after its first compiled code: a young one is asked
		 * again later. An older one runs with -Xrs and would die of it.
		 */
		if (!catches_sigquit(pid)) {
			double age = runtime_proc_age_s(pid);

			rc = age < 0 ? -ESRCH : age < JVM_STARTING_S ? -EAGAIN : -ENOTSUP;
			goto out;
		}
		if ((made = attach_trigger(dirfd, trig, pid, uid)) < 0) {
			rc = made;
			goto out;
		}
		if (kill(pid, SIGQUIT) < 0) {
			rc = -errno;
			goto out;
		}
		do {
			struct timespec ts = { 0, 20 * 1000000 };

			nanosleep(&ts, NULL);
			fd = attach_connect(dirfd, sock, pid, uid, timeout_ms);
		} while ((fd == -ENOENT || fd == -ECONNREFUSED) && now_ms() < deadline);
	}
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	if (write(fd, req, sizeof(req)) != (ssize_t)sizeof(req)) {
		rc = errno ? -errno : -EIO;
		goto out;
	}
	/* "<status>\n<output>": only the status matters; the output is bounded. */
	while (got < sizeof(reply) - 1 && now_ms() < deadline) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)(deadline - now_ms());

		if (poll(&pfd, 1, left > 0 ? left : 0) <= 0)
			break;
		n = read(fd, reply + got, sizeof(reply) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(reply, '\n', got))
			break;
	}
	reply[got] = '\0';
	if (got == 0 || !memchr(reply, '\n', got)) {
		rc = -ETIMEDOUT;
		goto out;
	}
	rc = reply[0] == '0' && reply[1] == '\n' ? 0 : -EPROTO;
	if (rc < 0)
		log_debug("ebpf: jvm %d: Compiler.perfmap: %.*s", (int)pid,
		    (int)strcspn(reply, "\n"), reply);
out:
	if (fd >= 0)
		close(fd);
	if (made > 0)
		(void)unlinkat(dirfd, trig, 0);
	close(dirfd);
	return rc;
}

/* --- the attach worker --------------------------------------------------- */

#define ATTACH_QUEUE	16

struct attach_req {
	pid_t	 pid, nspid;
	uid_t	 uid;
};

struct runtime_attach {
	pthread_mutex_t	 lock;
	pthread_cond_t	 cond;
	pthread_t	 thread;
	bool		 stop;			/* protected by lock */
	struct attach_req q[ATTACH_QUEUE];	/* protected by lock */
	size_t		 nq;			/* protected by lock */
	pid_t		 busy;			/* protected by lock: the pid being asked */
	int		 timeout_ms;
};

static void *
attach_main(void *arg)
{
	struct runtime_attach *ra = arg;

	pthread_mutex_lock(&ra->lock);
	for (;;) {
		struct attach_req r;
		int rc;

		while (!ra->stop && ra->nq == 0)
			pthread_cond_wait(&ra->cond, &ra->lock);
		if (ra->stop)
			break;
		r = ra->q[0];
		memmove(ra->q, ra->q + 1, (ra->nq - 1) * sizeof(ra->q[0]));
		ra->nq--;
		ra->busy = r.pid;
		pthread_mutex_unlock(&ra->lock);
		rc = runtime_jvm_perfmap(r.pid, r.nspid, r.uid, ra->timeout_ms);
		if (rc == -EAGAIN)
			log_debug("ebpf: jvm %d: still starting (no SIGQUIT handler yet): asked again later",
			    (int)r.pid);
		else if (rc < 0)
			log_debug("ebpf: jvm %d: no perf map: %s", (int)r.pid, strerror(-rc));
		else
			log_debug("ebpf: jvm %d: perf map written", (int)r.pid);
		pthread_mutex_lock(&ra->lock);
		ra->busy = 0;
	}
	pthread_mutex_unlock(&ra->lock);
	return NULL;
}

struct runtime_attach *
runtime_attach_create(int timeout_ms)
{
	struct runtime_attach *ra = calloc(1, sizeof(*ra));

	if (ra == NULL)
		return NULL;
	ra->timeout_ms = timeout_ms;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->cond, NULL);
	if (pthread_create(&ra->thread, NULL, attach_main, ra) != 0) {
		pthread_cond_destroy(&ra->cond);
		pthread_mutex_destroy(&ra->lock);
		free(ra);
		return NULL;
	}
	return ra;
}

void
runtime_attach_destroy(struct runtime_attach *ra)
{
	if (ra == NULL)
		return;
	pthread_mutex_lock(&ra->lock);
	ra->stop = true;
	pthread_cond_signal(&ra->cond);
	pthread_mutex_unlock(&ra->lock);
	pthread_join(ra->thread, NULL);
	pthread_cond_destroy(&ra->cond);
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}

bool
runtime_attach_request(struct runtime_attach *ra, pid_t pid, pid_t nspid, uid_t uid)
{
	bool queued = false;
	size_t i;

	if (ra == NULL)
		return false;
	pthread_mutex_lock(&ra->lock);
	for (i = 0; i < ra->nq; i++)
		if (ra->q[i].pid == pid)
			break;
	if (i == ra->nq && ra->busy != pid && ra->nq < ATTACH_QUEUE) {
		ra->q[ra->nq++] = (struct attach_req){ pid, nspid, uid };
		pthread_cond_signal(&ra->cond);
		queued = true;
	}
	pthread_mutex_unlock(&ra->lock);
	return queued;
}
