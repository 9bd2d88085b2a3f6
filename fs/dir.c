/*
 * dir: the directory listings of the tree, and whether a directory exists.
 * A directory exists while some series under it holds a profile (in the
 * directory's range, for a range), so what retention emptied disappears.
 * Listings come from the store's series index and hour index, never from
 * reading profiles; files still being written into ingest/ are listed where
 * they are (ingest.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"
#include "fs_int.h"
#include "views.h"

/* The start of unix hour h in ns, saturated at int64's ends. */
static int64_t
hour_ns(int64_t h)
{
	int64_t ns;

	if (__builtin_mul_overflow(h, INT64_C(3600000000000), &ns))
		return h < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}

/* Whether series sid holds any data (between from and to): profiles, or windows past retention. */
static bool
series_has_data(struct fsctx *fs, uint64_t sid, int64_t from, int64_t to)
{
	return reader_has_data(fs->rd, sid, from, to);
}

struct exists_arg {
	struct fsctx		*fs;
	const struct query	*q;
	const struct range	*r;
};

static int
exists_cb(void *arg, const struct series *s)
{
	struct exists_arg *a = arg;

	/* A series whose profiles retention deleted does not count. */
	return query_match(a->q, s) && series_has_data(a->fs, s->id,
	    a->r ? a->r->from : INT64_MIN, a->r ? a->r->to : INT64_MAX);
}

bool
dir_exists(struct fsctx *fs, const char *service, const char *type, const char *selector,
    const struct range *r)
{
	struct query_sel sel;
	struct query q;
	struct exists_arg a = { .fs = fs, .q = &q, .r = r };
	bool found;

	memset(&q, 0, sizeof(q));
	memset(&sel, 0, sizeof(sel));
	if (selector && query_sel_parse(selector, &sel, NULL) < 0) {
		query_sel_free(&sel);
		return false;
	}
	q.service = service;
	q.type = type;
	if (selector)
		query_sel_apply(&sel, &q);
	/* The store's index by service and type: no copy of it per lookup. */
	found = reader_series_each(fs->rd, service, type, exists_cb, &a) == 1;
	query_sel_free(&sel);
	return found;
}

struct newest_arg {
	struct fsctx		*fs;
	const struct query	*q;
	int64_t			 newest;
};

static int
newest_cb(void *arg, const struct series *s)
{
	struct newest_arg *a = arg;
	int64_t t;

	if (query_match(a->q, s) && reader_newest(a->fs->rd, s->id, &t) == 0 && t > a->newest)
		a->newest = t;
	return 0;
}

int64_t
dir_newest(struct fsctx *fs, const char *service, const char *type, const char *selector)
{
	struct query_sel sel;
	struct query q;
	struct newest_arg a = { .fs = fs, .q = &q, .newest = 0 };

	memset(&q, 0, sizeof(q));
	memset(&sel, 0, sizeof(sel));
	if (selector && query_sel_parse(selector, &sel, NULL) < 0) {
		query_sel_free(&sel);
		return 0;
	}
	q.service = service;
	q.type = type;
	if (selector)
		query_sel_apply(&sel, &q);
	reader_series_each(fs->rd, service, type, newest_cb, &a);
	query_sel_free(&sel);
	return a.newest;
}

/* --- content ------------------------------------------------------------ */

/* Append s to names (NUL-separated) unless it is the last entry: callers give sorted input. */
static void
add_unique(struct buf *names, const char *s)
{
	size_t n = strlen(s);

	if (names->len >= n + 1 && memcmp(names->data + names->len - n - 1, s, n + 1) == 0 &&
	    (names->len == n + 1 || names->data[names->len - n - 2] == '\0'))
		return;
	buf_add(names, s, n + 1);
}

static void
add_name(struct buf *names, const char *s)
{
	buf_add(names, s, strlen(s) + 1);
}

/*
 * A service or label set as the tree lists it: ':' written %3A, since go tool
 * pprof, scp and rsync read "host:path" in a name (instance=host:6060/...).
 * Lookups unescape it like any %XX. Returns tmp's text.
 */
static const char *
colon_free(struct buf *tmp, const char *s)
{
	buf_reset(tmp);
	for (; *s; s++) {
		if (*s == ':')
			buf_adds(tmp, "%3A");
		else
			buf_addc(tmp, *s);
	}
	buf_reserve(tmp, 0);
	return tmp->data ? tmp->data : "";
}

/* The services holding data. */
static int
list_root(struct fsctx *fs, struct buf *names)
{
	const char **svc;
	struct buf esc = { 0 }, tmp = { 0 };
	size_t n, i;
	int rc;

	add_name(names, "README.txt");
	if (fs->targets_json != NULL)
		add_name(names, ".targets.json");
	add_name(names, "ingest");
	if ((rc = query_services(fs->rd, true, &svc, &n)) < 0)
		return rc;
	for (i = 0; i < n; i++) {
		buf_reset(&esc);
		labels_escape(&esc, svc[i], strlen(svc[i]));
		add_unique(names, colon_free(&tmp, esc.data));
	}
	buf_free(&esc);
	buf_free(&tmp);
	free(svc);
	return 0;
}

struct list_arg {
	struct fsctx		*fs;
	const struct fspath	*fp;
	struct buf		*names;
};

static int
list_series_cb(void *arg, const struct series *s)
{
	struct list_arg *a = arg;
	struct buf tmp = { 0 };

	if (!series_has_data(a->fs, s->id, INT64_MIN, INT64_MAX))
		return 0;
	if (a->fp->node == NODE_SERVICE)
		add_unique(a->names, s->type);
	else if (s->labels[0])
		add_unique(a->names, colon_free(&tmp, s->labels));
	buf_free(&tmp);
	return 0;
}

/* A service's types, or a type's label sets (after "all"), from that service's or type's series only. */
static int
list_service_type(struct fsctx *fs, const struct fspath *fp, struct buf *names)
{
	struct list_arg a = { fs, fp, names };
	int rc;

	if (fp->node == NODE_TYPE)
		add_unique(names, "all");
	if ((rc = reader_series_each(fs->rd, fp->service,
	    fp->node == NODE_TYPE ? fp->type : NULL, list_series_cb, &a)) < 0)
		return rc;
	if (names->len == 0 || (fp->node == NODE_TYPE && names->len == 4 &&
	    !dir_exists(fs, fp->service, fp->type, NULL, NULL)))
		return -ENOENT;
	return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The presets, days and hours holding data for a selector. */
static int
list_selector(struct fsctx *fs, const struct fspath *fp, struct buf *names)
{
	const struct series **all;
	int64_t now = clock_now_ns(), *hours = NULL;
	struct buf hs = { 0 };
	struct query_sel sel;
	struct query q = { .service = fp->service, .type = fp->type };
	struct range r;
	size_t n, nh, i, j;
	int rc;

	if (!dir_exists(fs, fp->service, fp->type, fp->selector, NULL))
		return -ENOENT;
	for (i = 0; path_presets[i]; i++) {
		path_range(path_presets[i], now, &r);
		if (dir_exists(fs, fp->service, fp->type, fp->selector, &r))
			add_name(names, path_presets[i]);
	}
	/* Days and hours that hold data, from the hour index of each series. */
	if ((rc = reader_series(fs->rd, &all, &n)) < 0)
		return rc;
	if ((rc = query_sel_parse(fp->selector, &sel, NULL)) < 0) {
		query_sel_free(&sel);
		free(all);
		return rc;
	}
	query_sel_apply(&sel, &q);
	for (i = 0; i < n; i++) {
		if (!query_match(&q, all[i]) || reader_hours(fs->rd, all[i]->id, &hours, &nh) < 0)
			continue;
		/* The hour index may name hours retention emptied. */
		for (j = 0; j < nh; j++)
			if (series_has_data(fs, all[i]->id, hour_ns(hours[j]), hour_ns(hours[j] + 1)))
				buf_add(&hs, &hours[j], sizeof(hours[j]));
		free(hours);
	}
	query_sel_free(&sel);
	free(all);
	/* Each day once, then each hour. */
	nh = hs.len / sizeof(int64_t);
	hours = (int64_t *)hs.data;
	if (nh)
		qsort(hours, nh, sizeof(*hours), cmp_i64);
	for (int pass = 0; pass < 2; pass++) {
		char name[64], prev[64] = "";

		for (i = 0; i < nh; i++) {
			time_t secs = (time_t)(hours[i] * 3600);
			struct tm tm;

			gmtime_r(&secs, &tm);
			strftime(name, sizeof(name), pass == 0 ? "%Y-%m-%d" : "%Y-%m-%dT%H", &tm);
			if (strcmp(name, prev) != 0)
				add_name(names, name);
			snprintf(prev, sizeof(prev), "%s", name);
		}
	}
	buf_free(&hs);
	return 0;
}

/* Each stored profile of the range, by its time and id. */
static int
list_profiles(struct fsctx *fs, const struct fspath *fp, struct buf *names)
{
	struct query_result res;
	struct query_sel sel;
	struct query q = { .service = fp->service, .type = fp->type,
	    .from = fp->range.from, .to = fp->range.to };
	char name[128];
	size_t i;
	int rc;

	if ((rc = query_sel_parse(fp->selector, &sel, NULL)) < 0) {
		query_sel_free(&sel);
		return rc;
	}
	query_sel_apply(&sel, &q);
	rc = reader_list(fs->rd, &q, &res);
	query_sel_free(&sel);
	if (rc < 0)
		return rc;
	/* Empty where only windows past the raw retention hold the range's data. */
	if (res.nrefs == 0 && !dir_exists(fs, fp->service, fp->type, fp->selector, &fp->range))
		rc = -ENOENT;
	for (i = 0; i < res.nrefs; i++) {
		path_profile_name(res.refs[i].time, res.refs[i].id, name, sizeof(name));
		add_name(names, name);
	}
	query_result_free(&res);
	return rc;
}

/*
 * vs/: any base works on lookup; listed are the likely ones: the presets
 * holding data for this selector, and the other label sets of the type over
 * the same range.
 */
static int
list_vs(struct fsctx *fs, const struct fspath *fp, struct buf *names)
{
	const struct series **all;
	struct buf esc = { 0 };
	int64_t now = clock_now_ns();
	struct range r;
	size_t n, i;
	int rc;

	if (!dir_exists(fs, fp->service, fp->type, fp->selector, &fp->range))
		return -ENOENT;
	for (i = 0; path_presets[i]; i++) {
		path_range(path_presets[i], now, &r);
		if (strcmp(path_presets[i], fp->range.name) != 0 &&
		    dir_exists(fs, fp->service, fp->type, fp->selector, &r))
			add_name(names, path_presets[i]);
	}
	if ((rc = reader_series(fs->rd, &all, &n)) < 0)
		return rc;
	if (fp->selector[0]) {
		/* Bare "all" here is the range: every label set is all@<range>. */
		buf_printf(&esc, "all@%s", fp->range.name);
		add_unique(names, esc.data);
	}
	for (i = 0; i < n; i++)
		if (strcmp(all[i]->service, fp->service) == 0 &&
		    strcmp(all[i]->type, fp->type) == 0 && all[i]->labels[0] &&
		    strcmp(all[i]->labels, fp->selector) != 0 &&
		    (series_has_data(fs, all[i]->id, fp->range.from, fp->range.to) ||
		    dir_exists(fs, fp->service, fp->type, all[i]->labels, &fp->range)))
			add_unique(names, colon_free(&esc, all[i]->labels));
	free(all);
	buf_free(&esc);
	return 0;
}

int
dir_list(struct fsctx *fs, const char *path, const struct fspath *fp, struct buf *names)
{
	switch (fp->node) {
	case NODE_ROOT:
		return list_root(fs, names);
	case NODE_INGEST:
		if (fp->ingest_depth == 1)
			add_name(names, "errors.txt");
		ingest_list(fs, path, names);
		return 0;
	case NODE_SERVICE:
	case NODE_TYPE:
		return list_service_type(fs, fp, names);
	case NODE_SELECTOR:
		return list_selector(fs, fp, names);
	case NODE_RANGE:
		if (!dir_exists(fs, fp->service, fp->type, fp->selector, &fp->range))
			return -ENOENT;
		add_name(names, "profiles");
		return views_list(fs, fp, names);
	case NODE_PROFILES:
		return list_profiles(fs, fp, names);
	case NODE_VS:
		return list_vs(fs, fp, names);
	case NODE_VS_BASE:
		return views_list_vs(fs, fp, names);
	default:
		return -ENOTDIR;
	}
}
