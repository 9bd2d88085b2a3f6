/*
 * errlog: the mount's recent refusals, readable from inside the mount as
 * ingest/errors.txt. A file dropped into ingest/ that was not stored, a
 * directory there that cannot be one, and a name in the tree that is not
 * well formed (last-1hr, a FROM..TO that ends before it starts, a selector
 * that does not parse) fail in the caller's shell with a bare errno; the
 * reason, which only the daemon knows, is kept here and logged. A user in
 * another shell, or of a daemon under systemd, reads it where they are.
 *
 * Bounded: the newest ERRLOG_MAX notes, each cut to fixed sizes. The
 * kernel repeats a lookup (and cp stats a name before creating it), so a
 * note equal to the newest one is counted, not added, and counted only
 * once a second. A refused file is always logged; a malformed name, which
 * any reader can make by the thousand, is logged at most LOG_BURST times per
 * LOG_WINDOW, and the next line logged says some were not.
 *
 * Names are noted only when their form is wrong, never for a well-formed
 * name with no data (a range with nothing in it is ENOENT, and a shell that
 * probes names is not an error). Locking: el_lock protects everything here.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "fs_int.h"

#define ERRLOG_MAX	100
#define LOG_BURST	20
#define LOG_WINDOW_NS	(INT64_C(10) * 1000000000)
#define REPEAT_NS	(INT64_C(1000) * 1000000)

struct note {
	int64_t		 when;		/* realtime ns, of the first */
	int64_t		 mono;		/* mono ns, of the last repeat */
	unsigned	 count;
	char		 msg[768];
};

static pthread_mutex_t el_lock = PTHREAD_MUTEX_INITIALIZER;
static struct note el_ring[ERRLOG_MAX];	/* protected by el_lock */
static size_t el_next, el_used;		/* protected by el_lock */
static int64_t el_window;		/* mono ns the log window began */
static unsigned el_logged, el_dropped;	/* lines in the window, not logged since */
static bool el_pointed;			/* the log said where the notes are */

static void
note(bool limited, const char *fmt, va_list ap)
{
	struct note *n, *last;
	char msg[sizeof(n->msg)];
	int64_t mono = clock_mono_ns();
	unsigned dropped = 0;
	bool log = false, point = false;

	vsnprintf(msg, sizeof(msg), fmt, ap);

	pthread_mutex_lock(&el_lock);
	last = el_used ? &el_ring[(el_next + ERRLOG_MAX - 1) % ERRLOG_MAX] : NULL;
	if (last != NULL && strcmp(last->msg, msg) == 0) {
		/* The same again: the kernel's own repeats (within a second) are one. */
		if (mono - last->mono >= REPEAT_NS)
			last->count++;
		last->mono = mono;
		pthread_mutex_unlock(&el_lock);
		return;
	}
	n = &el_ring[el_next];
	el_next = (el_next + 1) % ERRLOG_MAX;
	if (el_used < ERRLOG_MAX)
		el_used++;
	n->when = clock_now_ns();
	n->mono = mono;
	n->count = 1;
	memcpy(n->msg, msg, sizeof(n->msg));
	if (mono - el_window >= LOG_WINDOW_NS) {
		el_window = mono;
		el_logged = 0;
	}
	if (!limited || el_logged < LOG_BURST) {
		el_logged += limited;
		log = true;
		dropped = el_dropped;
		el_dropped = 0;
		point = !el_pointed;
		el_pointed = true;
	} else {
		el_dropped++;
	}
	pthread_mutex_unlock(&el_lock);

	if (!log)
		return;
	log_warnx("%s%s%s", msg,
	    point ? " (this and later reasons: ingest/errors.txt in the mount)" : "",
	    dropped ? "; more were not logged, see ingest/errors.txt" : "");
}

void
errlog_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note(false, fmt, ap);
	va_end(ap);
}

void
errlog_note_name(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note(true, fmt, ap);
	va_end(ap);
}

int
errlog_render(struct buf *out)
{
	size_t i, first;
	char when[32];

	buf_printf(out, "# Why profilefs refused a file or a name lately, newest last"
	    " (at most %d),\n# as the daemon's log says it.\n", ERRLOG_MAX);
	pthread_mutex_lock(&el_lock);
	first = (el_next + ERRLOG_MAX - el_used) % ERRLOG_MAX;
	for (i = 0; i < el_used; i++) {
		const struct note *n = &el_ring[(first + i) % ERRLOG_MAX];
		time_t secs = (time_t)(n->when / 1000000000);
		struct tm tm;

		gmtime_r(&secs, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		buf_printf(out, "%s  %s", when, n->msg);
		if (n->count > 1)
			buf_printf(out, " (%u times)", n->count);
		buf_addc(out, '\n');
	}
	pthread_mutex_unlock(&el_lock);
	return buf_error(out);
}
