/*
 * log: timestamped lines on stderr. One write(2) per line so lines from
 * several threads do not interleave. Messages quote names that outside input
 * chooses (ingest file names, services, labels), so control characters in a
 * message are written as \xNN: a newline in a file name cannot forge a line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

int log_verbose;

/* Copy msg into out (room n > 0) with control characters escaped; the length. */
static size_t
escape(char *out, size_t n, const char *msg)
{
	const unsigned char *m = (const unsigned char *)msg;
	size_t k = 0;

	for (; *m && k + 1 < n; m++) {
		if (*m < 0x20 || *m == 0x7f) {
			if (k + 5 > n)
				break;
			out[k++] = '\\';
			out[k++] = 'x';
			out[k++] = hex_digit(*m >> 4, false);
			out[k++] = hex_digit(*m, false);
		} else
			out[k++] = (char)*m;
	}
	out[k] = '\0';
	return k;
}

static void
log_emit(const char *level, int errnum, const char *fmt, va_list ap)
{
	char line[2048], msg[1536];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int k;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%SZ ", &tm);
	k = snprintf(line + n, sizeof(line) - n, "profilefs: %s", level);
	if (k > 0)
		n += (size_t)k;
	if (n < sizeof(line)) {
		vsnprintf(msg, sizeof(msg), fmt, ap);
		n += escape(line + n, sizeof(line) - n, msg);
	}
	if (errnum && n < sizeof(line)) {
		k = snprintf(line + n, sizeof(line) - n, ": %s", strerror(errnum));
		if (k > 0)
			n = n + (size_t)k < sizeof(line) ? n + (size_t)k : sizeof(line) - 1;
	}
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}

void
log_warn(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	log_emit("warning: ", e, fmt, ap);
	va_end(ap);
	errno = e;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("warning: ", 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("", 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_emit("debug: ", 0, fmt, ap);
	va_end(ap);
}

void
log_errx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("error: ", 0, fmt, ap);
	va_end(ap);
}

void
log_fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("fatal: ", 0, fmt, ap);
	va_end(ap);
	exit(1);
}
