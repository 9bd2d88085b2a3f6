/*
 * The daemon's stop, watched (stopwatch.h).
 */
#define _GNU_SOURCE	/* sem_clockwait */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "stopwatch.h"

static sem_t		 sem;		/* posted by a stop signal, or by the end */
static pthread_t	 serving, thr;
static bool		 running;
static atomic_bool	 ended;
static atomic_int	 first_sig;
static atomic_bool	 watching;	/* the watch was started (signal or step) */
static _Atomic(const char *) step;

void
stopwatch_signal(int sig)
{
	int none = 0;

	(void)atomic_compare_exchange_strong(&first_sig, &none, sig);
	atomic_store(&watching, true);
	(void)sem_post(&sem);
}

void
stopwatch_step(const char *s)
{
	atomic_store(&step, s);
	/* A stop with no signal (the mount taken away from outside) is watched too. */
	if (running && !atomic_exchange(&watching, true))
		(void)sem_post(&sem);
}

/* One /proc/self/task/TID file's first line, without its newline, into out. */
static void
task_line(const char *tid, const char *name, char *out, size_t n)
{
	char path[64];
	ssize_t len;
	int fd;

	snprintf(out, n, "?");
	snprintf(path, sizeof(path), "/proc/self/task/%s/%s", tid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	len = read(fd, out, n - 1);
	close(fd);
	if (len <= 0) {
		snprintf(out, n, "?");
		return;
	}
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* What each thread waits on: enough to tell which step holds the stop. */
static void
log_threads(void)
{
	struct dirent *d;
	char comm[32], wchan[64], state[256], *p, c;
	DIR *dir;

	if ((dir = opendir("/proc/self/task")) == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		task_line(d->d_name, "comm", comm, sizeof(comm));
		task_line(d->d_name, "wchan", wchan, sizeof(wchan));
		task_line(d->d_name, "stat", state, sizeof(state));
		/* The state letter follows the name's closing parenthesis. */
		p = strrchr(state, ')');
		c = p && p[1] == ' ' && p[2] ? p[2] : '?';
		log_warnx("stop: thread %s (%s): state %c, %s %s", d->d_name, comm, c,
		    c == 'R' ? "running" : "waiting in", c == 'R' ? "" :
		    wchan[0] && strcmp(wchan, "0") ? wchan : "user space");
	}
	closedir(dir);
}

static void *
watch_main(void *arg)
{
	int64_t t0, elapsed, kicked = 0;
	struct timespec until;
	bool warned = false;
	const char *s;

	(void)arg;
	while (sem_wait(&sem) != 0)
		if (errno != EINTR)
			return NULL;
	t0 = clock_mono_ns();
	while (!atomic_load(&ended)) {
		int64_t t = clock_mono_ns() + 250 * 1000000LL;

		until.tv_sec = t / 1000000000;
		until.tv_nsec = t % 1000000000;
		/* Woken early by the end (or by a signal sent again): look at once. */
		if (sem_clockwait(&sem, CLOCK_MONOTONIC, &until) != 0 && errno != ETIMEDOUT &&
		    errno != EINTR) {
			log_warnx("stop: the watch's wait failed (%s): a stop that hangs is not "
			    "ended", strerror(errno));
			break;
		}
		if (atomic_load(&ended))
			break;
		elapsed = clock_mono_ns() - t0;
		s = atomic_load(&step);
		if (s == NULL && elapsed >= STOPWATCH_KICK_NS * (kicked + 1)) {
			kicked++;
			log_info("stop: the filesystem has not stopped serving %lld s after signal %d: "
			    "signalling it again", (long long)(elapsed / 1000000000),
			    atomic_load(&first_sig));
			pthread_kill(serving, SIGTERM);
		}
		if (elapsed >= STOPWATCH_DEADLINE_NS) {
			/*
			 * No stdio flush: a thread held in the kernel may hold a
			 * stream's lock. Each log line was one write already.
			 */
			log_warnx("stop: %s did not end within %lld s: exiting without it "
			    "(what was acknowledged is in the store's log)", s ? s :
			    "ending the filesystem's requests",
			    (long long)(STOPWATCH_DEADLINE_NS / 1000000000));
			_exit(1);
		}
		if (!warned && elapsed >= STOPWATCH_WARN_NS) {
			warned = true;
			log_warnx("stop: still %s %lld s after the stop began", s ? s :
			    "ending the filesystem's requests",
			    (long long)(elapsed / 1000000000));
			log_threads();
		}
	}
	return NULL;
}

int
stopwatch_start(pthread_t serving_thread)
{
	int rc;

	if (sem_init(&sem, 0, 0) != 0)
		return -errno;
	serving = serving_thread;
	if ((rc = pthread_create(&thr, NULL, watch_main, NULL)) != 0) {
		sem_destroy(&sem);
		return -rc;
	}
	running = true;
	return 0;
}

void
stopwatch_end(void)
{
	if (!running)
		return;
	atomic_store(&ended, true);
	(void)sem_post(&sem);
	pthread_join(thr, NULL);
	sem_destroy(&sem);
	running = false;
}
