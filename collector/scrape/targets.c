/*
 * targets: reading the scraper's targets file (format in targets.h). The
 * semantics follow Prometheus file_sd and Grafana Alloy's pyroscope.scrape:
 * the service is the "service_name" label, else the target's host:port; every
 * other label, plus instance=<host:port>, is a series label; labels starting
 * with "__" are dropped (Prometheus's internal labels). Unknown keys and
 * duplicate keys are errors, so a typo does not silently scrape with defaults.
 *
 * jansson decodes the file and reports syntax errors with their line. It
 * keeps no positions in the tree it returns, so an error found afterwards
 * (a bad duration, an unknown key) finds its line by walking the text beside
 * the tree: jansson keeps object members in file order, and the text is
 * known to be valid JSON, so only token boundaries need finding.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "targets.h"

const struct scrape_profile targets_profiles[] = {
	{ "cpu",		"/debug/pprof/profile",		"cpu",		SK_CPU },
	{ "heap",		"/debug/pprof/heap",		"heap",		SK_CUMULATIVE },
	{ "allocs",		"/debug/pprof/allocs",		"allocs",	SK_CUMULATIVE },
	{ "block",		"/debug/pprof/block",		"block",	SK_CUMULATIVE },
	{ "mutex",		"/debug/pprof/mutex",		"mutex",	SK_CUMULATIVE },
	{ "goroutine",		"/debug/pprof/goroutine",	"goroutine",	SK_SNAPSHOT },
	{ "threadcreate",	"/debug/pprof/threadcreate",	"threadcreate",	SK_SNAPSHOT },
	{ "delta_heap",		"/debug/pprof/delta_heap",	"heap",		SK_DELTA },
	{ "delta_block",	"/debug/pprof/delta_block",	"block",	SK_DELTA },
	{ "delta_mutex",	"/debug/pprof/delta_mutex",	"mutex",	SK_DELTA },
	{ NULL, NULL, NULL, 0 }
};

static const char *const default_profiles[] = { "cpu", "heap", "goroutine", NULL };

/* The file being read, for error messages. */
struct doc {
	const char	*text;
	size_t		 len;
	const json_t	*root;
	struct buf	*err;
};

/*
 * A place in the document an error points to: the value `in` itself
 * (key NULL, idx NOIDX), the value of member `key` of the object `in`, or
 * element `idx` of the array `in`. Scalars are not named by pointer since
 * jansson shares one true, false and null.
 */
struct at {
	const json_t	*in;
	const char	*key;
	size_t		 idx;
};

#define NOIDX		SIZE_MAX
#define AT(j)		((struct at){ (j), NULL, NOIDX })
#define AT_KEY(o, k)	((struct at){ (o), (k), NOIDX })
#define AT_IDX(a, i)	((struct at){ (a), NULL, (i) })

struct scan {
	const char	*p, *end;
};

static void
scan_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' ||
	    *s->p == '\n'))
		s->p++;
}

/* Past one character the walk knows is there ('{', ':', ','...). */
static void
scan_step(struct scan *s)
{
	if (s->p < s->end)
		s->p++;
}

/* Past a string, from its opening quote. */
static void
scan_string(struct scan *s)
{
	scan_step(s);
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\')
			scan_step(s);
		scan_step(s);
	}
	scan_step(s);
}

/* Past a number, true, false or null. */
static void
scan_scalar(struct scan *s)
{
	while (s->p < s->end && !strchr(",]} \t\r\n", *s->p))
		s->p++;
}

static void
scan_comma(struct scan *s)
{
	scan_ws(s);
	if (s->p < s->end && *s->p == ',')
		s->p++;
}

/*
 * Walk the text of v, which starts at s->p. The start of the place `at` if it
 * is inside v, else NULL with s->p past v. Recursion is bounded by jansson's
 * nesting limit, which the text passed.
 */
static const char *
scan_find(struct scan *s, const json_t *v, const struct at *at)
{
	const char *r, *key;
	json_t *m;
	size_t i;

	scan_ws(s);
	if (v == at->in && at->key == NULL && at->idx == NOIDX)
		return s->p;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		scan_step(s);
		json_object_foreach((json_t *)v, key, m) {
			scan_ws(s);
			scan_string(s);
			scan_ws(s);
			scan_step(s);
			scan_ws(s);
			if (v == at->in && at->key && strcmp(key, at->key) == 0)
				return s->p;
			if ((r = scan_find(s, m, at)) != NULL)
				return r;
			scan_comma(s);
		}
		scan_ws(s);
		scan_step(s);
		return NULL;
	case JSON_ARRAY:
		scan_step(s);
		json_array_foreach(v, i, m) {
			scan_ws(s);
			if (v == at->in && i == at->idx)
				return s->p;
			if ((r = scan_find(s, m, at)) != NULL)
				return r;
			scan_comma(s);
		}
		scan_ws(s);
		scan_step(s);
		return NULL;
	case JSON_STRING:
		scan_string(s);
		return NULL;
	default:
		scan_scalar(s);
		return NULL;
	}
}

/* The line (from 1) of the place `at`; 1 if it is not in the document. */
static int
doc_line(const struct doc *d, struct at at)
{
	struct scan s = { d->text, d->text + d->len };
	const char *p, *q;
	int line = 1;

	if (d->root == NULL || at.in == NULL || (p = scan_find(&s, d->root, &at)) == NULL)
		return 1;
	for (q = d->text; q < p; q++)
		line += *q == '\n';
	return line;
}

static int
bad(const struct doc *d, struct at at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
bad(const struct doc *d, struct at at, const char *fmt, ...)
{
	va_list ap;

	if (d->err) {
		buf_reset(d->err);
		buf_printf(d->err, "line %d: ", doc_line(d, at));
		va_start(ap, fmt);
		buf_vprintf(d->err, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *
type_name(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:	return "object";
	case JSON_ARRAY:	return "array";
	case JSON_STRING:	return "string";
	case JSON_INTEGER:
	case JSON_REAL:		return "number";
	case JSON_TRUE:
	case JSON_FALSE:	return "boolean";
	case JSON_NULL:		return "null";
	}
	return "value";
}

/* host:port or [v6]:port, nothing that could change the URL's meaning. */
static bool
valid_instance(const char *s)
{
	const char *colon = strrchr(s, ':'), *c;
	long port;
	char *end;

	/* Digits only: strtol() alone would take " 1" or "+1", and the space into the URL. */
	if (colon == NULL || colon == s || colon[1] < '0' || colon[1] > '9' || strlen(s) > 255)
		return false;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return false;
	if (s[0] == '[') {
		if (colon[-1] != ']')
			return false;
		for (c = s + 1; c < colon - 1; c++)
			if (!strchr("0123456789abcdefABCDEF:.", *c))
				return false;
		return true;
	}
	for (c = s; c < colon; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' || *c == '_'))
			return false;
	return true;
}

static bool
valid_label_name(const char *s)
{
	const char *c;

	if (*s == '\0')
		return false;
	for (c = s; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
		    (c != s && *c >= '0' && *c <= '9')))
			return false;
	return true;
}

static const struct scrape_profile *
profile_find(const char *name)
{
	const struct scrape_profile *p;

	for (p = targets_profiles; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static int
duration_field(const struct doc *d, const json_t *g, const char *name, int64_t def,
    int64_t *out)
{
	const json_t *j = json_object_get(g, name);

	*out = def;
	if (j == NULL)
		return 0;
	if (!json_is_string(j) ||
	    clock_parse_duration(json_string_value(j), TARGETS_MAX_DURATION, out) < 0 || *out <= 0)
		return bad(d, AT_KEY(g, name), "\"%s\" must be a duration such as \"15s\" or \"1m\"",
		    name);
	return 0;
}

static int
add_spec(struct target_list *l, size_t *cap, struct target_spec *ts)
{
	l->v = xgrow(l->v, cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = *ts;
	return 0;
}

static void
spec_free(struct target_spec *ts)
{
	free(ts->key);
	free(ts->url);
	free(ts->instance);
	free(ts->service);
	labels_clear(&ts->labels);
}

/*
 * One {"targets": [...], ...} group: its specs appended to l; seen holds the
 * URLs of every group so far (the same URL twice would scrape twice into one
 * series).
 */
static int
parse_group(const struct doc *d, const json_t *g, struct target_list *l, size_t *cap,
    struct intern *seen)
{
	static const char *const known[] = { "targets", "labels", "interval", "profiles",
	    "scheme", "path_prefix", "timeout", NULL };
	const json_t *targets, *labels, *profiles, *e, *t, *pj;
	const struct scrape_profile *plist[32];
	const char *scheme = "http", *prefix = "", *service_label = NULL, *key;
	struct labelset base = { .n = 0 };
	struct buf tmp = { 0 }, lerr = { 0 };
	int64_t interval, timeout;
	size_t np = 0, i, k, ti;
	int rc = 0, added;

	if (!json_is_object(g))
		return bad(d, AT(g), "each element must be an object with \"targets\", not %s",
		    type_name(g));
	json_object_foreach((json_t *)g, key, e) {
		for (k = 0; known[k] && strcmp(known[k], key) != 0; k++)
			;
		if (known[k] == NULL)
			return bad(d, AT_KEY(g, key), "unknown key \"%s\"", key);
	}
	if ((targets = json_object_get(g, "targets")) == NULL)
		return bad(d, AT(g), "group has no \"targets\" list");
	if (!json_is_array(targets))
		return bad(d, AT_KEY(g, "targets"),
		    "\"targets\" must be an array of \"host:port\" strings");
	if ((rc = duration_field(d, g, "interval", TARGETS_DEFAULT_INTERVAL, &interval)) < 0 ||
	    (rc = duration_field(d, g, "timeout", TARGETS_DEFAULT_TIMEOUT, &timeout)) < 0)
		return rc;
	if (interval < TARGETS_MIN_INTERVAL)
		return bad(d, AT_KEY(g, "interval"), "\"interval\" must be at least 2s");
	if (timeout > interval)
		timeout = interval;
	if ((e = json_object_get(g, "scheme")) != NULL) {
		if (!json_is_string(e) || (strcmp(json_string_value(e), "http") != 0 &&
		    strcmp(json_string_value(e), "https") != 0))
			return bad(d, AT_KEY(g, "scheme"), "\"scheme\" must be \"http\" or \"https\"");
		scheme = json_string_value(e);
	}
	if ((e = json_object_get(g, "path_prefix")) != NULL) {
		const char *pp = json_string_value(e);

		/* NULL if not a string; "/x/" + "/debug/pprof" gets no double slash below. */
		if (pp == NULL || (pp[0] && pp[0] != '/') || strpbrk(pp, "?# \t\r\n\\\"") ||
		    strlen(pp) > 512)
			return bad(d, AT_KEY(g, "path_prefix"),
			    "\"path_prefix\" must be empty or a path starting with '/'");
		prefix = pp;
	}
	if ((profiles = json_object_get(g, "profiles")) != NULL) {
		if (!json_is_array(profiles) || json_array_size(profiles) == 0)
			return bad(d, AT_KEY(g, "profiles"),
			    "\"profiles\" must be a non-empty array of names");
		json_array_foreach(profiles, i, pj) {
			const struct scrape_profile *sp;
			const char *name = json_string_value(pj);

			if (name == NULL)
				return bad(d, AT_IDX(profiles, i), "profile names are strings, not %s",
				    type_name(pj));
			if ((sp = profile_find(name)) == NULL)
				return bad(d, AT_IDX(profiles, i), "unknown profile \"%s\" (known: cpu, "
				    "heap, allocs, block, mutex, goroutine, threadcreate, delta_heap, "
				    "delta_block, delta_mutex)", name);
			for (k = 0; k < np; k++)
				if (plist[k] == sp)
					return bad(d, AT_IDX(profiles, i), "profile \"%s\" listed twice",
					    name);
			if (np == sizeof(plist) / sizeof(plist[0]))
				return bad(d, AT_IDX(profiles, i), "too many profiles");
			plist[np++] = sp;
		}
	} else {
		for (k = 0; default_profiles[k]; k++)
			plist[np++] = profile_find(default_profiles[k]);
	}
	if ((labels = json_object_get(g, "labels")) != NULL) {
		if (!json_is_object(labels))
			return bad(d, AT_KEY(g, "labels"), "\"labels\" must be an object of strings");
		json_object_foreach((json_t *)labels, key, e) {
			const char *v = json_string_value(e);

			if (v == NULL) {
				rc = bad(d, AT_KEY(labels, key), "label \"%s\" must be a string", key);
				goto out;
			}
			if (!valid_label_name(key)) {
				rc = bad(d, AT_KEY(labels, key),
				    "bad label name \"%s\" (want [a-zA-Z_][a-zA-Z0-9_]*)", key);
				goto out;
			}
			if (strcmp(key, "service_name") == 0) {
				if (store_check_service(v, &lerr) < 0) {
					rc = bad(d, AT_KEY(labels, key), "service_name: %s", lerr.data);
					goto out;
				}
				service_label = v;
				continue;
			}
			if (strncmp(key, "__", 2) == 0)
				continue;
			buf_reset(&lerr);
			if (labels_add(&base, key, v, &lerr) < 0) {
				rc = bad(d, AT_KEY(labels, key), "label: %s",
				    lerr.data ? lerr.data : "invalid");
				goto out;
			}
		}
	}
	json_array_foreach(targets, ti, t) {
		const char *inst = json_string_value(t);

		if (inst == NULL || !valid_instance(inst)) {
			rc = bad(d, AT_IDX(targets, ti), "target %s: want \"host:port\"",
			    inst ? inst : type_name(t));
			goto out;
		}
		/* Without service_name the target names the service. */
		if (service_label == NULL && store_check_service(inst, NULL) < 0) {
			rc = bad(d, AT_IDX(targets, ti),
			    "target %s cannot name a service: set \"service_name\"", inst);
			goto out;
		}
		for (k = 0; k < np; k++) {
			const struct scrape_profile *sp = plist[k];
			struct target_spec ts = { 0 };
			size_t j;

			if (l->n >= TARGETS_MAX_SPECS) {
				rc = bad(d, AT_IDX(targets, ti),
				    "too many targets (at most %d target-profile pairs)",
				    TARGETS_MAX_SPECS);
				goto out;
			}
			for (j = 0; j < base.n; j++)
				labels_add(&ts.labels, base.pairs[j].key, base.pairs[j].value, NULL);
			if (json_object_get(labels, "instance") == NULL &&
			    labels_add(&ts.labels, "instance", inst, NULL) < 0) {
				labels_clear(&ts.labels);
				rc = bad(d, AT_IDX(targets, ti), "target %s: too many labels", inst);
				goto out;
			}
			ts.profile = sp;
			ts.interval = interval;
			ts.timeout = sp->kind == SK_CPU ? timeout + interval - 1000000000 : timeout;
			ts.instance = xstrdup(inst);
			ts.service = xstrdup(service_label ? service_label : inst);
			buf_reset(&tmp);
			buf_printf(&tmp, "%s://%s%.*s%s", scheme, inst,
			    (int)(strlen(prefix) - (prefix[0] && prefix[strlen(prefix) - 1] == '/')),
			    prefix, sp->path);
			if (sp->kind == SK_CPU)
				buf_printf(&tmp, "?seconds=%lld",
				    (long long)((interval - 1000000000) / 1000000000));
			ts.url = buf_steal(&tmp, NULL);
			buf_printf(&tmp, "%s|%s|%s|%lld|%lld|", ts.url, sp->type,
			    ts.service ? ts.service : "", (long long)interval, (long long)timeout);
			labels_format(&ts.labels, &tmp);
			ts.key = buf_steal(&tmp, NULL);
			if (!ts.instance || !ts.service || !ts.url || !ts.key ||
			    intern_put(seen, ts.url, strlen(ts.url), &added) < 0 ||
			    (added && add_spec(l, cap, &ts) < 0)) {
				spec_free(&ts);
				rc = -ENOMEM;
				goto out;
			}
			if (!added) {
				rc = bad(d, AT_IDX(targets, ti), "%s is listed twice", ts.url);
				spec_free(&ts);
				goto out;
			}
		}
	}
out:
	labels_clear(&base);
	buf_free(&tmp);
	buf_free(&lerr);
	return rc;
}

/*
 * A syntax error as jansson reports it, with its line and, for the mistake
 * hand-edited files make most, a plainer word.
 */
static int
syntax_error(const struct doc *d, const json_error_t *je)
{
	size_t pos = (size_t)je->position, i;
	bool blank = true;

	if (d->err == NULL)
		return -EINVAL;
	buf_reset(d->err);
	for (i = 0; i < d->len && blank; i++)
		blank = strchr(" \t\r\n", d->text[i]) != NULL && d->text[i] != '\0';
	if (blank) {
		buf_printf(d->err, "line %d: the file is empty; it must hold a JSON array of "
		    "target groups", je->line > 0 ? je->line : 1);
		return -EINVAL;
	}
	/* jansson's position is past the offending token: "]" or "}" after a ','. */
	if (json_error_code(je) == json_error_invalid_syntax && pos >= 2 && pos <= d->len &&
	    (d->text[pos - 1] == ']' || d->text[pos - 1] == '}')) {
		for (i = pos - 1; i > 0 && strchr(" \t\r\n", d->text[i - 1]) &&
		    d->text[i - 1] != '\0'; i--)
			;
		if (i > 0 && d->text[i - 1] == ',') {
			buf_printf(d->err, "line %d: trailing comma before '%c'", je->line,
			    d->text[pos - 1]);
			return -EINVAL;
		}
	}
	buf_printf(d->err, "line %d: %s", je->line > 0 ? je->line : 1, je->text);
	return -EINVAL;
}

int
targets_parse(const char *text, size_t len, struct target_list *out, struct buf *err)
{
	struct target_list l = { 0 };
	struct doc d = { text, len, NULL, err };
	struct intern *seen = NULL;
	json_error_t je;
	json_t *root, *g;
	size_t cap = 0, i;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	/* A byte order mark, as some editors write: not JSON, but harmless. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		d.text += 3;
		d.len -= 3;
	}
	/* Any value at the top, so that "{...}" gets the message below. */
	root = json_loadb(d.text, d.len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root == NULL)
		return json_error_code(&je) == json_error_out_of_memory ? -ENOMEM :
		    syntax_error(&d, &je);
	d.root = root;
	if (!json_is_array(root)) {
		rc = bad(&d, AT(root), "the file must hold a JSON array of target groups, not %s",
		    type_name(root));
		goto out;
	}
	if ((seen = intern_create(64)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach(root, i, g)
		if ((rc = parse_group(&d, g, &l, &cap, seen)) < 0)
			break;
out:
	intern_destroy(seen);
	json_decref(root);
	if (rc < 0)
		targets_free(&l);
	else
		*out = l;
	return rc;
}

int
targets_load(const char *path, struct target_list *out, struct buf *err)
{
	struct buf text = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = buf_read_file(&text, path, TARGETS_FILE_MAX)) < 0) {
		if (err) {
			buf_reset(err);
			if (rc == -EFBIG)
				buf_printf(err, "larger than %u bytes", TARGETS_FILE_MAX);
			else
				buf_printf(err, "%s", strerror(-rc));
		}
		return rc;
	}
	rc = targets_parse(text.data ? text.data : "", text.len, out, err);
	buf_free(&text);
	return rc;
}

void
targets_free(struct target_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		spec_free(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}
