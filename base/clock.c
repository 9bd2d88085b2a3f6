/*
 * clock: the clocks every module reads, in nanoseconds, the one parser of
 * durations ("30s", "1m30s", "500ms", "7d") for flags, the scrape targets
 * file and the tree's last-<n><unit> ranges, and the one parser of ISO 8601
 * times for the tree's ranges and the HTTP API's parameters. Calendar
 * arithmetic is done here rather than with timegm() so that no time zone
 * state is touched and every date is validated as Go's time.Parse does.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base.h"

int64_t
clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Nanoseconds in the unit at *p (advanced past it), 0 if none is there. */
static int64_t
unit_ns(const char **p)
{
	static const struct {
		const char	*name;
		int64_t		 ns;
	} units[] = {
		/* Two-letter units first: "ms" is not minutes. */
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", INT64_C(1000000000) }, { "m", INT64_C(60000000000) },
		{ "h", INT64_C(3600000000000) }, { "d", INT64_C(86400000000000) },
		{ "w", INT64_C(604800000000000) },
	};
	size_t i, n;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		n = strlen(units[i].name);
		if (strncmp(*p, units[i].name, n) == 0) {
			*p += n;
			return units[i].ns;
		}
	}
	return 0;
}

int
clock_parse_duration(const char *s, int64_t max_ns, int64_t *ns)
{
	const char *p = s;
	int64_t total = 0;

	if (*p == '\0')
		return -EINVAL;
	while (*p) {
		int64_t whole = 0, frac = 0, fscale = 1, unit, v;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++)
			if (__builtin_mul_overflow(whole, 10, &whole) ||
			    __builtin_add_overflow(whole, *p - '0', &whole))
				return -EINVAL;
		if (*p == '.') {
			for (p++; *p >= '0' && *p <= '9'; p++)
				if (fscale < INT64_C(1000000000000)) {
					frac = frac * 10 + (*p - '0');
					fscale *= 10;
				}
		}
		if ((unit = unit_ns(&p)) == 0)
			return -EINVAL;	/* a unit is required: "30" is not 30 of anything */
		if (__builtin_mul_overflow(whole, unit, &v) ||
		    __builtin_add_overflow(v, (int64_t)((double)frac / (double)fscale *
		    (double)unit), &v) || __builtin_add_overflow(total, v, &total) ||
		    total > max_ns)
			return -EINVAL;
	}
	if (total <= 0)
		return -EINVAL;
	*ns = total;
	return 0;
}

#define NS_PER_SEC	INT64_C(1000000000)

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void
clock_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static unsigned
month_days(int64_t y, unsigned m)
{
	static const unsigned md[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : md[m - 1];
}

int
clock_civil_ns(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t se,
    int64_t frac, int64_t *ns)
{
	int64_t secs;

	if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, (unsigned)mo) ||
	    h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 59 || frac < 0 ||
	    frac >= NS_PER_SEC)
		return -EINVAL;
	secs = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se;
	/* Times are int64 nanoseconds (1677..2262): keep the time and a day after it inside. */
	if (secs <= INT64_MIN / NS_PER_SEC || secs >= INT64_MAX / NS_PER_SEC - 86400)
		return -EINVAL;
	*ns = secs * NS_PER_SEC + frac;
	return 0;
}

/* n digits at s as a number; -1 unless all are digits. */
static int64_t
digits(const char *s, int n)
{
	int64_t v = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int
clock_parse_iso(const char *s, size_t len, unsigned flags, int64_t *ns, int64_t *unit)
{
	int64_t y, mo, d, h = 0, mi = 0, se = 0, frac = 0, scale = NS_PER_SEC, u = 86400 * NS_PER_SEC;
	size_t i;
	bool colons;

	/* 2006-01-02 */
	if (len < 10 || s[4] != '-' || s[7] != '-' || (y = digits(s, 4)) < 0 ||
	    (mo = digits(s + 5, 2)) < 0 || (d = digits(s + 8, 2)) < 0)
		return -EINVAL;
	i = 10;
	/* T15[:04[:05]] (extended form) or T15[04[05]] (basic form), not mixed */
	if (i < len && s[i] != 'Z') {
		if (len < 13 || s[10] != 'T' || (h = digits(s + 11, 2)) < 0)
			return -EINVAL;
		u = 3600 * NS_PER_SEC;
		i = 13;
	}
	colons = i < len && s[i] == ':';
	if (u == 3600 * NS_PER_SEC && i < len && s[i] != 'Z') {
		i += colons;
		if (len < i + 2 || (mi = digits(s + i, 2)) < 0)
			return -EINVAL;
		u = 60 * NS_PER_SEC;
		i += 2;
	}
	if (u == 60 * NS_PER_SEC && i < len && s[i] != 'Z') {
		if (colons && s[i++] != ':')
			return -EINVAL;
		if (len < i + 2 || (se = digits(s + i, 2)) < 0)
			return -EINVAL;
		u = NS_PER_SEC;
		i += 2;
	}
	/* .999999999 and Z, when the caller takes them */
	if (i < len && (flags & CLOCK_ISO_FRACTION) && (s[i] == '.' || s[i] == ',')) {
		size_t nd = 0;

		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, nd++) {
			if (nd >= 9)
				return -EINVAL;
			scale /= 10;
			frac += (s[i] - '0') * scale;
		}
		if (nd == 0)
			return -EINVAL;
		u = 1;
	}
	/* All times are UTC: a trailing Z says so, at any precision. */
	if (i + 1 == len && s[i] == 'Z')
		i++;
	if (i != len || clock_civil_ns(y, mo, d, h, mi, se, frac, ns) < 0)
		return -EINVAL;
	if (unit)
		*unit = u;
	return 0;
}
