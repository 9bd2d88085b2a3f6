/*
 * budget: one memory budget for the whole process. Everything whose size
 * outside input decides -- struct buf growth (request bodies, ingest files,
 * gunzipped profiles, rendered files) and arena chunks (decoding, merging) --
 * reserves its bytes here before allocating them and gives them back when it
 * frees them, so a burst of large or hostile inputs is refused with an error
 * (EAGAIN to a file system caller, 503 over HTTP) instead of growing the
 * daemon until the kernel kills it.
 *
 * Small fixed-size allocations (x* in alloc.c) are not counted: they are
 * bounded by what the budgeted allocations let in.
 *
 * The budget only counts: a reservation never calls out of this file, so
 * growing a buffer under any lock is safe. Those who hold memory they could
 * give back (caches, idle tables) ask budget_pressed() at their own safe
 * points -- when they insert, and on a periodic tick that
 * budget_wait_pressure() wakes early when a reservation is refused -- and
 * evict there, as Redis evicts before a command rather than inside malloc.
 *
 * The counters are atomics; waiters for room sleep on bg_cond under
 * bg_lock, waiters for pressure on bg_pcond under bg_lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

#define DEFAULT_MIN	((size_t)1 << 30)	/* at least 1 GiB ... */
#define DEFAULT_MAX	((size_t)4 << 30)	/* ... at most 4 GiB, else a quarter of RAM */
/* Pressure: a reservation refused (or waited for) this recently, or this full. */
#define PRESSURE_NS	(INT64_C(2) * 1000000000)
#define PRESSURE_FILL(lim)	((lim) - (lim) / 8)

static atomic_size_t bg_used, bg_peak, bg_limit;
static atomic_uint_fast64_t bg_refused;
static pthread_once_t bg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t bg_pcond = PTHREAD_COND_INITIALIZER;
static atomic_int bg_waiters;
static atomic_uint_fast64_t bg_pressures;	/* times room was short */
static _Atomic int64_t bg_pressed_ns;		/* clock_mono_ns() of the last */

static void
budget_init(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	size_t def = DEFAULT_MIN;

	if (pages > 0 && psize > 0 && (size_t)pages / 4 > DEFAULT_MIN / (size_t)psize) {
		def = (size_t)pages / 4 * (size_t)psize;
		if (def > DEFAULT_MAX)
			def = DEFAULT_MAX;
	}
	if (atomic_load(&bg_limit) == 0)
		atomic_store(&bg_limit, def);
}

void
budget_set_limit(size_t bytes)
{
	pthread_once(&bg_once, budget_init);
	if (bytes)
		atomic_store(&bg_limit, bytes);
}

size_t
budget_limit(void)
{
	pthread_once(&bg_once, budget_init);
	return atomic_load(&bg_limit);
}

/* Room was short: wake whoever evicts at its safe point. */
static void
pressure_note(void)
{
	atomic_store(&bg_pressed_ns, clock_mono_ns());
	atomic_fetch_add(&bg_pressures, 1);
	pthread_mutex_lock(&bg_lock);
	pthread_cond_broadcast(&bg_pcond);
	pthread_mutex_unlock(&bg_lock);
}

bool
budget_pressed(void)
{
	int64_t t = atomic_load(&bg_pressed_ns);

	pthread_once(&bg_once, budget_init);
	if (t != 0 && clock_mono_ns() - t < PRESSURE_NS)
		return true;
	return atomic_load(&bg_used) > PRESSURE_FILL(atomic_load(&bg_limit));
}

bool
budget_wait_pressure(uint64_t *seen, int64_t timeout_ns, const _Atomic bool *stop)
{
	struct timespec ts;
	int64_t ns;

	pthread_once(&bg_once, budget_init);
	pthread_mutex_lock(&bg_lock);
	if (atomic_load(&bg_pressures) == *seen && !atomic_load(stop)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ns = ts.tv_nsec + timeout_ns % 1000000000;
		ts.tv_sec += timeout_ns / 1000000000 + ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		pthread_cond_timedwait(&bg_pcond, &bg_lock, &ts);
	}
	*seen = atomic_load(&bg_pressures);
	pthread_mutex_unlock(&bg_lock);
	return budget_pressed();
}

void
budget_wake_pressure(void)
{
	pthread_mutex_lock(&bg_lock);
	pthread_cond_broadcast(&bg_pcond);
	pthread_mutex_unlock(&bg_lock);
}

/* Add n to the count if it stays within the limit. */
static bool
try_add(size_t n)
{
	size_t cur = atomic_load(&bg_used), lim = atomic_load(&bg_limit), peak;

	do {
		if (n > lim || cur > lim - n)
			return false;
	} while (!atomic_compare_exchange_weak(&bg_used, &cur, cur + n));
	peak = atomic_load(&bg_peak);
	while (cur + n > peak && !atomic_compare_exchange_weak(&bg_peak, &peak, cur + n))
		;
	return true;
}

int
budget_reserve(size_t n)
{
	pthread_once(&bg_once, budget_init);
	if (n == 0 || try_add(n))
		return 0;
	atomic_fetch_add(&bg_refused, 1);
	pressure_note();
	return -ENOMEM;
}

void
budget_charge(size_t n)
{
	size_t cur, peak;

	pthread_once(&bg_once, budget_init);
	cur = atomic_fetch_add(&bg_used, n) + n;
	peak = atomic_load(&bg_peak);
	while (cur > peak && !atomic_compare_exchange_weak(&bg_peak, &peak, cur))
		;
}

void
budget_release(size_t n)
{
	size_t cur = atomic_load(&bg_used);

	if (n == 0)
		return;
	/* Never below zero, even if a caller gives back more than it took. */
	while (!atomic_compare_exchange_weak(&bg_used, &cur, cur > n ? cur - n : 0))
		;
	if (atomic_load(&bg_waiters) == 0)
		return;
	pthread_mutex_lock(&bg_lock);
	pthread_cond_broadcast(&bg_cond);
	pthread_mutex_unlock(&bg_lock);
}

int
budget_wait(size_t n, int64_t timeout_ns)
{
	struct timespec ts;
	int64_t deadline = clock_now_ns() + timeout_ns;
	int rc = 0;

	pthread_once(&bg_once, budget_init);
	if (n > atomic_load(&bg_limit))
		return -ENOMEM;
	if (atomic_load(&bg_used) > atomic_load(&bg_limit) - n)
		pressure_note();
	pthread_mutex_lock(&bg_lock);
	atomic_fetch_add(&bg_waiters, 1);
	while (atomic_load(&bg_used) > atomic_load(&bg_limit) - n) {
		if (clock_now_ns() >= deadline) {
			rc = -ENOMEM;
			break;
		}
		/* Wake at least every 100 ms in case a release raced the wait. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&bg_cond, &bg_lock, &ts);
	}
	atomic_fetch_sub(&bg_waiters, 1);
	pthread_mutex_unlock(&bg_lock);
	if (rc < 0)
		atomic_fetch_add(&bg_refused, 1);
	return rc;
}

void
budget_stats(size_t *used, size_t *peak, uint64_t *refused)
{
	pthread_once(&bg_once, budget_init);
	if (used)
		*used = atomic_load(&bg_used);
	if (peak)
		*peak = atomic_load(&bg_peak);
	if (refused)
		*refused = atomic_load(&bg_refused);
}
