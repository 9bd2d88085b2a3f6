/*
 * clock: the clocks every module reads, in nanoseconds, and the one parser
 * of durations ("30s", "1m30s", "500ms", "7d") for flags, the scrape targets
 * file and the tree's last-<n><unit> ranges.
 */
#include <errno.h>
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
