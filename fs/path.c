/*
 * path: pure parsing of the tree's names, kept apart from the FUSE handlers
 * so it can be unit-tested without a mount.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "path.h"

#define NS	INT64_C(1000000000)

const char *const path_presets[] = {
	"last-5m", "last-15m", "last-1h", "last-6h", "last-24h", "last-7d", "all", NULL
};

/*
 * Append t, to the precision of unit, in ISO 8601's basic form (no ':', so
 * the name works unquoted with pprof, scp and rsync) to out.
 */
static void
format_time(int64_t t, int64_t unit, char *out, size_t outsz)
{
	time_t secs = (time_t)(t / NS);
	struct tm tm;
	size_t n = strlen(out);

	gmtime_r(&secs, &tm);
	strftime(out + n, outsz - n, unit >= 86400 * NS ? "%Y-%m-%d" : unit >= 3600 * NS ?
	    "%Y-%m-%dT%H" : unit >= 60 * NS ? "%Y-%m-%dT%H%M" : "%Y-%m-%dT%H%M%S", &tm);
}

int
path_range(const char *name, int64_t now, struct range *r)
{
	size_t len = strlen(name);
	const char *dots;
	int64_t t, unit, t2, unit2;

	memset(r, 0, sizeof(*r));
	if (len == 0 || len >= sizeof(r->name))
		return -EINVAL;
	memcpy(r->name, name, len + 1);
	if (strcmp(name, "all") == 0) {
		r->from = INT64_MIN;
		r->to = INT64_MAX;
		return 0;
	}
	if (strncmp(name, "last-", 5) == 0) {
		int64_t d;

		/* last-<duration>: "last-90m", "last-1h30m"; at most a century. */
		if (!(name[5] >= '1' && name[5] <= '9') ||
		    clock_parse_duration(name + 5, 100 * INT64_C(365) * 86400 * NS, &d) < 0)
			return -EINVAL;
		/*
		 * Exactly d long, up to now inclusive: the window ends a second
		 * ahead, so a profile stamped by a clock a little ahead counts.
		 */
		r->to = now + NS;
		r->from = r->to - d;
		r->relative = true;
		return 0;
	}
	if ((dots = strstr(name, "..")) != NULL) {
		if (clock_parse_iso(name, (size_t)(dots - name), 0, &t, &unit) < 0 || unit > 60 * NS ||
		    clock_parse_iso(dots + 2, strlen(dots + 2), 0, &t2, &unit2) < 0 || unit2 > 60 * NS)
			return -EINVAL;
		if (t2 <= t)
			return -EINVAL;
		r->from = t;
		r->to = t2;
		/* Named as the tree lists it: the colon-free form, no 'Z'. */
		r->name[0] = '\0';
		format_time(t, unit, r->name, sizeof(r->name));
		strcat(r->name, "..");
		format_time(t2, unit2, r->name, sizeof(r->name));
		return 0;
	}
	if (clock_parse_iso(name, len, 0, &t, &unit) < 0 || unit < 60 * NS)
		return -EINVAL;
	r->from = t;
	r->to = t + unit;
	r->name[0] = '\0';
	format_time(t, unit, r->name, sizeof(r->name));
	return 0;
}

/* path_selector(), with why it is not a selector appended to err (NULL: not wanted). */
static int
selector_parse(const char *seg, char *out, size_t outsz, struct buf *err)
{
	struct labelset ls;
	struct buf b = { 0 };
	int rc;

	if (strcmp(seg, "all") == 0) {
		out[0] = '\0';
		return 0;
	}
	if (strchr(seg, '=') == NULL && !matchers_has_ops(seg)) {
		if (err)
			buf_printf(err, "no '=' in it");
		return -EINVAL;
	}
	if (matchers_has_ops(seg)) {
		/* Matchers: kept in the order given, re-escaped canonically. */
		struct matchers ms;

		if ((rc = matchers_parse_path(seg, &ms, err)) < 0)
			return rc;
		rc = matchers_format(&ms, &b);
		matchers_clear(&ms);
	} else {
		if ((rc = labels_parse(seg, &ls, err)) < 0)
			return rc;
		rc = labels_format(&ls, &b);
		labels_clear(&ls);
	}
	if (rc == 0 && (b.len == 0 || b.len >= outsz)) {
		if (err)
			buf_printf(err, b.len == 0 ? "no label in it" : "longer than %zu bytes",
			    outsz - 1);
		rc = -EINVAL;
	}
	if (rc == 0)
		memcpy(out, b.data, b.len + 1);
	buf_free(&b);
	return rc;
}

int
path_selector(const char *seg, char *out, size_t outsz)
{
	return selector_parse(seg, out, outsz, NULL);
}

void
path_profile_name(int64_t time, uint64_t id, char *out, size_t outsz)
{
	/* Floor division without overflow: INT64_MIN is a valid time too. */
	time_t secs = (time_t)(time / NS);
	long nsec = (long)(time % NS);
	struct tm tm;
	char idh[17];

	if (nsec < 0) {
		nsec += NS;
		secs--;
	}
	gmtime_r(&secs, &tm);
	store_id_format(id, idh);
	snprintf(out, outsz, "%04d-%02d-%02dT%02d%02d%02d.%09ldZ-%s.pb.gz",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, nsec, idh);
}

/* Copy the next segment of *p into seg; 0 at the end of the path. */
static int
next_seg(const char **p, char *seg, size_t segsz)
{
	const char *s = *p, *e;
	size_t n;

	while (*s == '/')
		s++;
	if (*s == '\0')
		return 0;
	e = strchr(s, '/');
	if (e == NULL)
		e = s + strlen(s);
	n = (size_t)(e - s);
	if (n >= segsz)
		return -ENAMETOOLONG;
	memcpy(seg, s, n);
	seg[n] = '\0';
	*p = e;
	return 1;
}

/*
 * Under ingest/<service>/<type>/ a name with '=' is a label set, unless it
 * ends like a profile file (cpu,env=a.pb.gz is a file name, not labels).
 */
static bool
looks_like_file(const char *seg)
{
	static const char *const ext[] = { ".pb", ".gz", ".pprof", ".prof", ".pb.gz", NULL };
	size_t n = strlen(seg), i, k;

	for (i = 0; ext[i]; i++) {
		k = strlen(ext[i]);
		if (n > k && strcmp(seg + n - k, ext[i]) == 0)
			return true;
	}
	return false;
}

static int
parse_ingest(const char *p, struct fspath *o)
{
	char seg[1024];
	struct buf b = { 0 };
	int rc;

	o->node = NODE_INGEST;
	o->ingest_depth = 1;
	/* service */
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (strcmp(seg, "errors.txt") == 0) {
		o->node = NODE_ERRORS;
		return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
	}
	rc = labels_unescape(&b, seg, strlen(seg));
	/* A profile file here means the service or type was left out. */
	if (rc < 0 || b.len == 0 || looks_like_file(seg) ||
	    store_check_service_name(b.data, NULL) < 0 || b.len >= sizeof(o->service)) {
		buf_free(&b);
		return -ENOENT;
	}
	memcpy(o->service, b.data, b.len + 1);
	buf_free(&b);
	o->ingest_depth = 2;
	/* type */
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (looks_like_file(seg) || store_check_known_type(seg, NULL) < 0)
		return -ENOENT;
	snprintf(o->type, sizeof(o->type), "%s", seg);
	o->ingest_depth = 3;
	/* labels directory or file */
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (strchr(seg, '=') != NULL && !looks_like_file(seg)) {
		struct labelset ls;

		if (labels_parse(seg, &ls, NULL) < 0)
			return -ENOENT;
		labels_clear(&ls);
		snprintf(o->ingest_labels, sizeof(o->ingest_labels), "%s", seg);
		o->ingest_depth = 4;
		if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
			return rc < 0 ? -ENOENT : 0;
	}
	if (strlen(seg) >= sizeof(o->file))
		return -ENOENT;
	memcpy(o->file, seg, strlen(seg) + 1);
	o->node = NODE_INGEST_FILE;
	/* Nothing may follow a file. */
	if (next_seg(&p, seg, sizeof(seg)) != 0)
		return -ENOENT;
	return 0;
}

int
path_ingest_why(const char *path, struct buf *why)
{
	char seg[1024];
	struct labelset ls;
	int i;

	/* ingest, service, type, then what may be a label set */
	for (i = 0; i < 4; i++)
		if (next_seg(&path, seg, sizeof(seg)) != 1)
			return 0;
	if (strchr(seg, '=') == NULL || looks_like_file(seg))
		return 0;
	if (labels_parse(seg, &ls, why) == 0) {
		labels_clear(&ls);
		return 0;
	}
	return -EINVAL;
}

/* vs/<base>: a range, selector@range or a selector. */
static int
parse_base(const char *seg, int64_t now, struct fspath *o)
{
	const char *at = strrchr(seg, '@');
	char sel[1024];

	if (at) {
		size_t n = (size_t)(at - seg);

		if (n >= sizeof(sel))
			return -ENOENT;
		memcpy(sel, seg, n);
		sel[n] = '\0';
		if (path_selector(sel, o->base_selector, sizeof(o->base_selector)) == 0 &&
		    path_range(at + 1, now, &o->base_range) == 0)
			return 0;
		/* '@' is not escaped in values: "user=a@b" is a selector alone. */
	}
	if (path_range(seg, now, &o->base_range) == 0) {
		snprintf(o->base_selector, sizeof(o->base_selector), "%s", o->selector);
		return 0;
	}
	if (path_selector(seg, o->base_selector, sizeof(o->base_selector)) < 0)
		return -ENOENT;
	o->base_range = o->range;
	return 0;
}

bool
path_in_ingest(const char *path)
{
	char seg[8];

	return next_seg(&path, seg, sizeof(seg)) == 1 && strcmp(seg, "ingest") == 0 &&
	    *path == '/';
}

int
path_parse(const char *path, int64_t now, struct fspath *o)
{
	const char *p = path;
	char seg[1024];
	struct buf b = { 0 };
	int rc;

	memset(o, 0, sizeof(*o));
	o->node = NODE_ROOT;
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (strcmp(seg, "README.txt") == 0) {
		o->node = NODE_README;
		return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
	}
	if (strcmp(seg, ".targets.json") == 0) {
		o->node = NODE_TARGETS;
		return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
	}
	if (strcmp(seg, "ingest") == 0)
		return parse_ingest(p, o);

	/* service */
	rc = labels_unescape(&b, seg, strlen(seg));
	if (rc < 0 || b.len == 0 || b.len >= sizeof(o->service) ||
	    store_check_service(b.data, NULL) < 0) {
		buf_free(&b);
		return -ENOENT;
	}
	memcpy(o->service, b.data, b.len + 1);
	buf_free(&b);
	o->node = NODE_SERVICE;
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (store_check_type(seg, NULL) < 0)
		return -ENOENT;
	snprintf(o->type, sizeof(o->type), "%s", seg);
	o->node = NODE_TYPE;
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (path_selector(seg, o->selector, sizeof(o->selector)) < 0)
		return -ENOENT;
	o->node = NODE_SELECTOR;
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (path_range(seg, now, &o->range) < 0)
		return -ENOENT;
	o->node = NODE_RANGE;
	if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
		return rc < 0 ? -ENOENT : 0;
	if (strcmp(seg, "profiles") == 0) {
		o->node = NODE_PROFILES;
		if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
			return rc < 0 ? -ENOENT : 0;
		/* <time>-<16 hex>.pb.gz */
		size_t n = strlen(seg);
		char idh[17];

		if (n < 16 + 6 + 1 || strcmp(seg + n - 6, ".pb.gz") != 0)
			return -ENOENT;
		memcpy(idh, seg + n - 6 - 16, 16);
		idh[16] = '\0';
		if (store_id_parse(idh, &o->profile_id) < 0)
			return -ENOENT;
		/* The colon form names of earlier versions: 2026-11-22T10:05:03.… */
		if (n > 19 && seg[10] == 'T' && seg[13] == ':' && seg[16] == ':') {
			memmove(seg + 16, seg + 17, n - 16);
			memmove(seg + 13, seg + 14, n - 14);
		}
		snprintf(o->view, sizeof(o->view), "%.63s", seg);
		o->node = NODE_PROFILE;
		return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
	}
	/*
	 * vs/<base> is a symbolic link to the directory .vs/<base> (not
	 * listed): ls vs/ shows the bases, and du, find and grep -r, which do
	 * not follow links, do not make every diff of every base.
	 */
	if (strcmp(seg, "vs") == 0 || strcmp(seg, ".vs") == 0) {
		bool link = seg[0] == 'v';

		o->node = NODE_VS;
		if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
			return rc < 0 ? -ENOENT : 0;
		if (parse_base(seg, now, o) < 0)
			return -ENOENT;
		if (link) {
			o->node = NODE_VS_LINK;
			return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
		}
		o->node = NODE_VS_BASE;
		if ((rc = next_seg(&p, seg, sizeof(seg))) <= 0)
			return rc < 0 ? -ENOENT : 0;
		if (strlen(seg) >= sizeof(o->view))
			return -ENOENT;
		memcpy(o->view, seg, strlen(seg) + 1);
		o->node = NODE_VS_VIEW;
		return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
	}
	if (strlen(seg) >= sizeof(o->view))
		return -ENOENT;
	memcpy(o->view, seg, strlen(seg) + 1);
	o->node = NODE_VIEW;
	return next_seg(&p, seg, sizeof(seg)) == 0 ? 0 : -ENOENT;
}

/* --- why a name is not well formed ------------------------------------- */

#define RANGE_FORMS	"ranges are last-<n><s|m|h|d> (last-90m, last-1h30m), all, a day " \
	"(2026-11-22), an hour (2026-11-22T10), a minute (2026-11-22T1005) or FROM..TO " \
	"(2026-11-22T1000..2026-11-22T103015), in UTC"
#define SELECTOR_FORMS	"a selector is all, k=v[,k=v...] or Prometheus matchers " \
	"k!=v, k=~re, k!~re, with %%, /, ',' and '=' in values written %%XX"

/* Why name is not a range, appended to why. */
static void
range_why(const char *name, int64_t now, struct buf *why)
{
	const char *dots = strstr(name, "..");
	int64_t t, unit, t2, unit2;

	if (dots != NULL &&
	    clock_parse_iso(name, (size_t)(dots - name), 0, &t, &unit) == 0 &&
	    clock_parse_iso(dots + 2, strlen(dots + 2), 0, &t2, &unit2) == 0) {
		if (unit > 60 * NS || unit2 > 60 * NS)
			buf_printf(why, "\"%s\": FROM and TO of FROM..TO are minutes or "
			    "seconds (2026-11-22T1000..2026-11-22T103015)", name);
		else
			buf_printf(why, "\"%s\": TO is not after FROM", name);
		return;
	}
	(void)now;
	if (strncmp(name, "last-", 5) == 0)
		buf_printf(why, "\"%s\" is not a range: after last- comes a number and a unit "
		    "s, m, h or d (last-90m, last-1h30m)", name);
	else
		buf_printf(why, "\"%s\" is not a range: " RANGE_FORMS, name);
}

int
path_why(const char *path, int64_t now, struct buf *why)
{
	const char *p = path;
	char seg[1024], sel[1024];
	struct buf b = { 0 }, err = { 0 };
	struct range r;
	int depth, rc = 0;

	for (depth = 0; rc == 0; depth++) {
		int n = next_seg(&p, seg, sizeof(seg));

		if (n < 0) {
			buf_printf(why, "a name is longer than %zu bytes", sizeof(seg) - 1);
			return -EINVAL;
		}
		if (n == 0)
			break;
		buf_reset(&err);
		switch (depth) {
		case 0:		/* service */
			if (strcmp(seg, "ingest") == 0 || strcmp(seg, "README.txt") == 0 ||
			    strcmp(seg, ".targets.json") == 0)
				goto out;
			buf_reset(&b);
			if (labels_unescape(&b, seg, strlen(seg)) < 0) {
				buf_printf(why, "\"%s\" is not a service name: a %% not followed "
				    "by two hex digits", seg);
				rc = -EINVAL;
			} else if (b.len == 0 || store_check_service(b.data, &err) < 0) {
				buf_printf(why, "\"%s\" is not a service name%s%s", seg,
				    err.data ? ": " : "", err.data ? err.data : "");
				rc = -EINVAL;
			}
			break;
		case 1:		/* type */
			if (store_check_type(seg, &err) < 0) {
				buf_printf(why, "\"%s\" is not a type%s%s", seg,
				    err.data ? ": " : "", err.data ? err.data : "");
				rc = -EINVAL;
			}
			break;
		case 2:		/* selector */
			if (selector_parse(seg, sel, sizeof(sel), &err) < 0) {
				buf_printf(why, "\"%s\" is not a label selector: %s; " SELECTOR_FORMS,
				    seg, err.data ? err.data : "malformed");
				rc = -EINVAL;
			}
			break;
		case 3:		/* range */
			if (path_range(seg, now, &r) < 0) {
				range_why(seg, now, why);
				rc = -EINVAL;
			}
			break;
		case 4:		/* vs/ and .vs/ take a base next; other names are files */
			if (strcmp(seg, "vs") != 0 && strcmp(seg, ".vs") != 0)
				goto out;
			break;
		case 5: {	/* the base of vs/ */
			struct fspath o;

			memset(&o, 0, sizeof(o));
			if (parse_base(seg, now, &o) < 0) {
				buf_printf(why, "\"%s\" is not a base to compare with: a range, a "
				    "selector, or selector@range; ", seg);
				range_why(strrchr(seg, '@') ? strrchr(seg, '@') + 1 : seg, now, why);
				rc = -EINVAL;
			}
			goto out;
		}
		}
	}
out:
	buf_free(&b);
	buf_free(&err);
	return rc;
}
