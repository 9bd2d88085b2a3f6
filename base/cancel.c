/*
 * cancel: when a query's work should stop before its end. Two reasons: it
 * has used its CPU time (the clock of the thread that started it, so time
 * spent waiting for the store or a lock is not counted), or its client has
 * gone (the peer closed the socket: poll() reports POLLRDHUP or POLLHUP).
 * The long loops of the store's queries and of the views' handlers call
 * cancel_check() at each step; it reads the clocks and the socket at most
 * every CANCEL_PERIOD_NS of wall time, so a step costs a vDSO clock read.
 * What to answer, and to whom, is the caller's: this module only tells.
 *
 * A struct cancel belongs to one request; it is checked from the thread
 * that runs the request (the thread's CPU clock is taken at the start, so
 * a check from another thread would still read the right clock).
 */
#define _GNU_SOURCE	/* POLLRDHUP */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base.h"

#define CANCEL_PERIOD_NS	(INT64_C(10) * 1000000)	/* look every 10 ms at most */

static int64_t
cpu_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
cancel_start(struct cancel *c, int64_t cpu_limit_ns, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->cpu_limit_ns = cpu_limit_ns;
	if (pthread_getcpuclockid(pthread_self(), &c->clock) != 0)
		c->clock = CLOCK_THREAD_CPUTIME_ID;
	c->cpu_start_ns = cpu_ns(c->clock);
	c->last_ns = clock_mono_ns();
	c->on = true;
}

int64_t
cancel_cpu_ns(const struct cancel *c)
{
	return c && c->on ? cpu_ns(c->clock) - c->cpu_start_ns : 0;
}

int
cancel_check(struct cancel *c)
{
	struct pollfd pfd;
	int64_t now;

	if (c == NULL || !c->on || c->why)
		return c && c->on ? c->why : 0;
	now = clock_mono_ns();
	if (now - c->last_ns < CANCEL_PERIOD_NS)
		return 0;
	c->last_ns = now;
	if (c->cpu_limit_ns > 0 && cpu_ns(c->clock) - c->cpu_start_ns > c->cpu_limit_ns)
		return c->why = -ETIMEDOUT;
	if (c->fd >= 0) {
		pfd.fd = c->fd;
		pfd.events = POLLRDHUP;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return c->why = -ECONNRESET;
	}
	return 0;
}
