/*
 * targets: reading the scraper's targets file (format in targets.h). The
 * semantics follow Prometheus file_sd and Grafana Alloy's pyroscope.scrape:
 * the service is the "service_name" label, else the target's host:port; every
 * other label, plus instance=<host:port>, is a series label; labels starting
 * with "__" are dropped (Prometheus's internal labels). Unknown keys are
 * errors, so a typo does not silently scrape with defaults.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "json.h"
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

static int
bad(struct buf *err, const struct json *j, const char *fmt, const char *arg)
{
	if (err) {
		buf_reset(err);
		buf_printf(err, "line %d: ", j ? j->line : 1);
		buf_printf(err, fmt, arg);
	}
	return -EINVAL;
}

/* host:port or [v6]:port, nothing that could change the URL's meaning. */
static bool
valid_instance(const char *s)
{
	const char *colon = strrchr(s, ':'), *c;
	long port;
	char *end;

	if (colon == NULL || colon == s || colon[1] == '\0' || strlen(s) > 255)
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
duration_field(const struct json *g, const char *name, int64_t def, int64_t *out,
    struct buf *err)
{
	const struct json *j = json_get(g, name);

	*out = def;
	if (j == NULL)
		return 0;
	if (j->type != JSON_STRING || clock_parse_duration(j->str, TARGETS_MAX_DURATION, out) < 0 || *out <= 0)
		return bad(err, j, "\"%s\" must be a duration such as \"15s\" or \"1m\"", name);
	return 0;
}

static int
add_spec(struct target_list *l, size_t *cap, struct target_spec *ts)
{
	if (l->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct target_spec *v = realloc(l->v, ncap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		l->v = v;
		*cap = ncap;
	}
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

/* One {"targets": [...], ...} group. */
static int
parse_group(const struct json *g, struct target_list *l, size_t *cap, struct buf *err)
{
	static const char *const known[] = { "targets", "labels", "interval", "profiles",
	    "scheme", "path_prefix", "timeout", NULL };
	const struct json *targets, *labels, *profiles, *e, *t, *pj;
	const struct scrape_profile *plist[32];
	const char *scheme = "http", *prefix = "", *service_label = NULL;
	struct labelset base = { .n = 0 };
	struct buf tmp = { 0 }, lerr = { 0 };
	int64_t interval, timeout;
	size_t np = 0, i, k;
	int rc = 0;

	if (g->type != JSON_OBJECT)
		return bad(err, g, "each element must be an object with \"targets\", not %s",
		    json_type_name(g->type));
	for (e = g->child; e; e = e->next) {
		for (k = 0; known[k] && strcmp(known[k], e->key) != 0; k++)
			;
		if (known[k] == NULL)
			return bad(err, e, "unknown key \"%s\"", e->key);
	}
	if ((targets = json_get(g, "targets")) == NULL)
		return bad(err, g, "group has no \"%s\" list", "targets");
	if (targets->type != JSON_ARRAY)
		return bad(err, targets, "\"targets\" must be an array of \"host:port\" strings%s", "");
	if ((rc = duration_field(g, "interval", TARGETS_DEFAULT_INTERVAL, &interval, err)) < 0 ||
	    (rc = duration_field(g, "timeout", TARGETS_DEFAULT_TIMEOUT, &timeout, err)) < 0)
		return rc;
	if (interval < TARGETS_MIN_INTERVAL)
		return bad(err, json_get(g, "interval"), "\"interval\" must be at least %s", "2s");
	if (timeout > interval)
		timeout = interval;
	if ((e = json_get(g, "scheme")) != NULL) {
		if (e->type != JSON_STRING || (strcmp(e->str, "http") != 0 &&
		    strcmp(e->str, "https") != 0))
			return bad(err, e, "\"scheme\" must be \"http\" or \"https\"%s", "");
		scheme = e->str;
	}
	if ((e = json_get(g, "path_prefix")) != NULL) {
		if (e->type != JSON_STRING || (e->str[0] && e->str[0] != '/') ||
		    strpbrk(e->str, "?# \t\r\n\\\"") || strlen(e->str) > 512)
			return bad(err, e, "\"path_prefix\" must be empty or a path starting "
			    "with '/'%s", "");
		prefix = e->str;
		/* "/x/" + "/debug/pprof": no double slash. */
	}
	if ((profiles = json_get(g, "profiles")) != NULL) {
		if (profiles->type != JSON_ARRAY || profiles->child == NULL)
			return bad(err, profiles, "\"profiles\" must be a non-empty array of names%s", "");
		for (pj = profiles->child; pj; pj = pj->next) {
			const struct scrape_profile *sp;

			if (pj->type != JSON_STRING)
				return bad(err, pj, "profile names are strings, not %s",
				    json_type_name(pj->type));
			if ((sp = profile_find(pj->str)) == NULL)
				return bad(err, pj, "unknown profile \"%s\" (known: cpu, heap, allocs, "
				    "block, mutex, goroutine, threadcreate, delta_heap, delta_block, "
				    "delta_mutex)", pj->str);
			for (i = 0; i < np; i++)
				if (plist[i] == sp)
					return bad(err, pj, "profile \"%s\" listed twice", pj->str);
			if (np == sizeof(plist) / sizeof(plist[0]))
				return bad(err, pj, "too many profiles%s", "");
			plist[np++] = sp;
		}
	} else {
		for (i = 0; default_profiles[i]; i++)
			plist[np++] = profile_find(default_profiles[i]);
	}
	if ((labels = json_get(g, "labels")) != NULL) {
		if (labels->type != JSON_OBJECT)
			return bad(err, labels, "\"labels\" must be an object of strings%s", "");
		for (e = labels->child; e; e = e->next) {
			if (e->type != JSON_STRING) {
				rc = bad(err, e, "label \"%s\" must be a string", e->key);
				goto out;
			}
			if (!valid_label_name(e->key)) {
				rc = bad(err, e, "bad label name \"%s\" (want [a-zA-Z_][a-zA-Z0-9_]*)",
				    e->key);
				goto out;
			}
			if (strcmp(e->key, "service_name") == 0) {
				if (store_check_service(e->str, &lerr) < 0) {
					rc = bad(err, e, "service_name: %s", lerr.data);
					goto out;
				}
				service_label = e->str;
				continue;
			}
			if (strncmp(e->key, "__", 2) == 0)
				continue;
			buf_reset(&lerr);
			if (labels_add(&base, e->key, e->str, &lerr) < 0) {
				rc = bad(err, e, "label: %s", lerr.data ? lerr.data : "invalid");
				goto out;
			}
		}
	}
	for (t = targets->child; t; t = t->next) {
		if (t->type != JSON_STRING || !valid_instance(t->str)) {
			rc = bad(err, t, "target %s: want \"host:port\"",
			    t->type == JSON_STRING ? t->str : json_type_name(t->type));
			goto out;
		}
		/* Without service_name the target names the service. */
		if (service_label == NULL && store_check_service(t->str, NULL) < 0) {
			rc = bad(err, t, "target %s cannot name a service: set \"service_name\"",
			    t->str);
			goto out;
		}
		for (k = 0; k < np; k++) {
			const struct scrape_profile *sp = plist[k];
			struct target_spec ts = { 0 };
			size_t j;

			if (l->n >= TARGETS_MAX_SPECS) {
				rc = bad(err, t, "too many targets (at most %s target-profile pairs)",
				    "10000");
				goto out;
			}
			for (j = 0; j < base.n; j++)
				labels_add(&ts.labels, base.pairs[j].key, base.pairs[j].value, NULL);
			if (json_get(labels, "instance") == NULL &&
			    labels_add(&ts.labels, "instance", t->str, NULL) < 0) {
				labels_clear(&ts.labels);
				rc = bad(err, t, "target %s: too many labels", t->str);
				goto out;
			}
			ts.profile = sp;
			ts.interval = interval;
			ts.timeout = sp->kind == SK_CPU ? timeout + interval - 1000000000 : timeout;
			ts.instance = strdup(t->str);
			ts.service = strdup(service_label ? service_label : t->str);
			buf_reset(&tmp);
			buf_printf(&tmp, "%s://%s%.*s%s", scheme, t->str,
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
			    (rc = add_spec(l, cap, &ts)) < 0) {
				spec_free(&ts);
				rc = -ENOMEM;
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

int
targets_parse(const char *text, size_t len, struct target_list *out, struct buf *err)
{
	struct target_list l = { 0 };
	struct json *root = NULL;
	const struct json *g;
	size_t cap = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = json_parse(text, len, &root, err)) < 0)
		return rc;
	if (root->type != JSON_ARRAY) {
		rc = bad(err, root, "the file must hold a JSON array of target groups, not %s",
		    json_type_name(root->type));
		goto out;
	}
	for (g = root->child; g && rc == 0; g = g->next)
		rc = parse_group(g, &l, &cap, err);
	/* The same URL twice would scrape twice into one series. */
	if (rc == 0) {
		struct intern *seen = intern_create(l.n + 1);
		size_t i;
		int added;

		if (seen == NULL)
			rc = -ENOMEM;
		for (i = 0; i < l.n && rc == 0; i++) {
			if (intern_put(seen, l.v[i].url, strlen(l.v[i].url), &added) < 0)
				rc = -ENOMEM;
			else if (!added)
				rc = bad(err, NULL, "%s is listed twice", l.v[i].url);
		}
		intern_destroy(seen);
	}
out:
	json_free(root);
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
