/*
 * httpparse: parameter parsers of the HTTP API (see httpparse.h). Dates and
 * calendar arithmetic are base's (clock.c), the one parser of ISO 8601 times.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "httpparse.h"

#define NS_PER_SEC	INT64_C(1000000000)

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Trim [*s, *e) of spaces at both ends. */
static void
trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

/* Go's url.QueryUnescape of [s, e) into out (reset first); no NUL. */
static int
query_unescape(struct buf *out, const char *s, const char *e)
{
	buf_reset(out);
	return buf_add_pct_decoded(out, s, (size_t)(e - s), PCT_PLUS_SPACE);
}

int
httpparse_labels(const char *s, struct labelset *ls, struct buf *err)
{
	struct buf k = { 0 }, v = { 0 };
	const char *p = s, *end, *eq, *ks, *ke, *vs, *ve;
	int rc = 0;

	while (*p && rc == 0) {
		if ((end = strchr(p, ',')) == NULL)
			end = p + strlen(p);
		if ((eq = memchr(p, '=', (size_t)(end - p))) == NULL)
			eq = end;
		ks = p;
		ke = eq;
		vs = eq < end ? eq + 1 : end;
		ve = end;
		trim(&ks, &ke);
		trim(&vs, &ve);
		if ((rc = query_unescape(&k, ks, ke)) < 0 || (rc = query_unescape(&v, vs, ve)) < 0) {
			if (rc == -EINVAL && err)
				buf_printf(err, "bad %%XX escape in label \"%.*s\"", (int)(end - p), p);
			break;
		}
		if (k.len > 0)
			rc = labels_add(ls, k.data, v.data ? v.data : "", err);
		p = *end ? end + 1 : end;
	}
	buf_free(&k);
	buf_free(&v);
	return rc;
}

int
httpparse_time(const char *s, int64_t *ns)
{
	int64_t unit;

	/* 2006-01-02T15:04:05[.999999999][Z]: down to the second at least. */
	if (clock_parse_iso(s, strlen(s), CLOCK_ISO_FRACTION, ns, &unit) < 0 || unit > NS_PER_SEC)
		return -EINVAL;
	return 0;
}

/* Seconds in one Pyroscope offset unit, 0 if unknown (attime's getUnitMultiplier). */
static int64_t
unit_secs(const char *u, size_t n)
{
	if (n == 0)
		return 0;
	if (u[0] == 's')
		return 1;
	if ((n >= 3 && strncmp(u, "mon", 3) == 0) || u[0] == 'M')
		return 3600 * 24 * 30;
	if (u[0] == 'm')
		return 60;
	if (u[0] == 'h')
		return 3600;
	if (u[0] == 'd')
		return 3600 * 24;
	if (u[0] == 'w')
		return 3600 * 24 * 7;
	if (u[0] == 'y')
		return 3600 * 24 * 365;
	return 0;
}

int
httpparse_attime(const char *in, int64_t now_ns, int64_t *ns)
{
	char s[64];
	const char *p;
	size_t n = 0, i;
	int64_t v = 0, off = 0, sign = 1;

	/* Pyroscope drops spaces, '_' and ',' before anything else. */
	for (p = in; *p; p++) {
		if (*p == ' ' || *p == '_' || *p == ',' || is_space(*p))
			continue;
		if (n + 1 >= sizeof(s))
			return -EINVAL;
		s[n++] = *p;
	}
	s[n] = '\0';
	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n && is_digit(s[i]); i++)
		;
	if (i == n) {
		if (n > 19)
			return -EINVAL;
		v = 0;
		for (i = 0; i < n; i++) {
			if (v > (INT64_MAX - (s[i] - '0')) / 10)
				return -EINVAL;
			v = v * 10 + (s[i] - '0');
		}
		if (n == 8) {
			int64_t y = v / 10000, mo = v / 100 % 100, d = v % 100;

			if (y > 1900 && clock_civil_ns(y, mo, d, 0, 0, 0, 0, ns) == 0)
				return 0;
		}
		switch (n) {
		case 13:
			if (v > INT64_MAX / 1000000)
				return -EINVAL;
			*ns = v * 1000000;
			return 0;
		case 16:
			if (v > INT64_MAX / 1000)
				return -EINVAL;
			*ns = v * 1000;
			return 0;
		case 19:
			*ns = v;
			return 0;
		default:
			if (v > INT64_MAX / NS_PER_SEC)
				return -EINVAL;
			*ns = v * NS_PER_SEC;
			return 0;
		}
	}
	/* [now](+|-)(<n><unit>)+ */
	p = s;
	if (strncmp(p, "now", 3) == 0)
		p += 3;
	if (*p == '\0') {
		*ns = now_ns;
		return 0;
	}
	if (*p != '-' && *p != '+')
		return -EINVAL;
	sign = *p == '-' ? -1 : 1;
	p++;
	if (*p == '\0')
		return -EINVAL;
	while (*p) {
		const char *u;
		int64_t num = 0, mul;

		if (!is_digit(*p))
			return -EINVAL;
		for (; is_digit(*p); p++) {
			if (num > 1000000000)
				return -EINVAL;
			num = num * 10 + (*p - '0');
		}
		for (u = p; *p && !is_digit(*p); p++)
			;
		if ((mul = unit_secs(u, (size_t)(p - u))) == 0)
			return -EINVAL;
		off += num * mul;
		if (off > INT64_MAX / NS_PER_SEC / 2)
			return -EINVAL;
	}
	*ns = now_ns + sign * off * NS_PER_SEC;
	return 0;
}

int
httpparse_appname(const char *s, struct buf *app, struct labelset *ls, struct buf *err)
{
	const char *brace = strchr(s, '{'), *ns = s, *ne, *p, *end, *comma, *eq;
	const char *ks, *ke, *vs, *ve;
	struct buf k = { 0 }, v = { 0 };
	int rc = 0;

	ne = brace ? brace : s + strlen(s);
	trim(&ns, &ne);
	if (ns == ne) {
		if (err)
			buf_adds(err, "name has no application name (write app{k=v,...})");
		return -EINVAL;
	}
	if (memchr(ns, '}', (size_t)(ne - ns)) != NULL) {
		if (err)
			buf_adds(err, "name has a '}' without '{'");
		return -EINVAL;
	}
	if ((rc = buf_add(app, ns, (size_t)(ne - ns))) < 0)
		return rc;
	if (brace == NULL)
		return 0;
	p = brace + 1;
	end = strchr(p, '}');
	if (end == NULL || strchr(end + 1, '{') || strchr(end + 1, '}')) {
		if (err)
			buf_adds(err, "name has unbalanced braces (write app{k=v,...})");
		return -EINVAL;
	}
	for (ks = end + 1; *ks; ks++) {
		if (!is_space(*ks)) {
			if (err)
				buf_adds(err, "name has text after its closing '}'");
			return -EINVAL;
		}
	}
	while (p < end && rc == 0) {
		if ((comma = memchr(p, ',', (size_t)(end - p))) == NULL)
			comma = end;
		ks = p;
		ke = comma;
		trim(&ks, &ke);
		if (ks == ke) {		/* "{}" or a trailing comma */
			p = comma < end ? comma + 1 : end;
			continue;
		}
		if ((eq = memchr(ks, '=', (size_t)(ke - ks))) == NULL) {
			if (err)
				buf_printf(err, "label \"%.*s\" in name has no '='", (int)(ke - ks), ks);
			rc = -EINVAL;
			break;
		}
		vs = eq + 1;
		ve = ke;
		ke = eq;
		trim(&ks, &ke);
		trim(&vs, &ve);
		buf_reset(&k);
		buf_reset(&v);
		if ((rc = buf_add(&k, ks, (size_t)(ke - ks))) < 0 ||
		    (rc = buf_add(&v, vs, (size_t)(ve - vs))) < 0)
			break;
		if (k.len == 0) {
			if (err)
				buf_adds(err, "label with an empty key in name");
			rc = -EINVAL;
			break;
		}
		rc = labels_add(ls, k.data, v.data ? v.data : "", err);
		p = comma < end ? comma + 1 : end;
	}
	buf_free(&k);
	buf_free(&v);
	return rc;
}

int
httpparse_listen(const char *s, char *host, size_t hostlen, char *port, size_t portlen,
    struct buf *err)
{
	const char *hs, *he, *ps, *p;
	long pv = 0;

	if (s[0] == '[') {
		hs = s + 1;
		if ((he = strchr(hs, ']')) == NULL || he[1] != ':') {
			if (err)
				buf_printf(err, "\"%s\": write an IPv6 address as [ADDR]:PORT", s);
			return -EINVAL;
		}
		ps = he + 2;
	} else {
		hs = s;
		if ((he = strrchr(s, ':')) == NULL) {
			if (err)
				buf_printf(err, "\"%s\": give HOST:PORT, e.g. 127.0.0.1:10100", s);
			return -EINVAL;
		}
		if (memchr(hs, ':', (size_t)(he - hs)) != NULL) {
			if (err)
				buf_printf(err, "\"%s\": write an IPv6 address as [ADDR]:PORT", s);
			return -EINVAL;
		}
		ps = he + 1;
	}
	if (he == hs) {
		if (err)
			buf_printf(err, "\"%s\": give a host to bind, e.g. 127.0.0.1 or 0.0.0.0", s);
		return -EINVAL;
	}
	if (*ps == '\0') {
		if (err)
			buf_printf(err, "\"%s\": missing port", s);
		return -EINVAL;
	}
	for (p = ps; *p; p++) {
		if (!is_digit(*p) || p - ps >= 5) {
			if (err)
				buf_printf(err, "\"%s\": the port must be a number 0..65535", s);
			return -EINVAL;
		}
		pv = pv * 10 + (*p - '0');
	}
	if (pv > 65535) {
		if (err)
			buf_printf(err, "\"%s\": the port must be a number 0..65535", s);
		return -EINVAL;
	}
	if ((size_t)(he - hs) + 1 > hostlen || strlen(ps) + 1 > portlen) {
		if (err)
			buf_printf(err, "\"%s\": host name too long", s);
		return -EINVAL;
	}
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	memcpy(port, ps, strlen(ps) + 1);
	return 0;
}

void
httpparse_format_time(int64_t ns, char out[40])
{
	int64_t secs = ns / NS_PER_SEC, frac = ns % NS_PER_SEC, days, y, sod;
	unsigned m, d;
	char f[16];
	int n;

	if (frac < 0) {
		frac += NS_PER_SEC;
		secs--;
	}
	days = secs / 86400;
	sod = secs % 86400;
	if (sod < 0) {
		sod += 86400;
		days--;
	}
	clock_civil_from_days(days, &y, &m, &d);
	f[0] = '\0';
	if (frac) {
		n = snprintf(f, sizeof(f), ".%09lld", (long long)frac);
		while (n > 1 && f[n - 1] == '0')
			f[--n] = '\0';
	}
	snprintf(out, 40, "%04lld-%02u-%02uT%02lld:%02lld:%02lld%sZ", (long long)y, m, d,
	    (long long)(sod / 3600), (long long)(sod / 60 % 60), (long long)(sod % 60), f);
}
