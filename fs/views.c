/*
 * views: routing of range-directory file names to renderers, and the cached
 * merge each of them starts from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "fs.h"
#include "views.h"

/* How long a merge of a range that moves with the clock is reused. */
#define RELATIVE_MAX_AGE	(INT64_C(1500) * 1000000)

void
views_time(int64_t ns, char *out, size_t n)
{
	time_t secs;
	struct tm tm;
	long nsec;

	if (ns == INT64_MIN || ns == INT64_MAX) {
		snprintf(out, n, "%s", ns == INT64_MIN ? "-inf" : "+inf");
		return;
	}
	secs = (time_t)(ns >= 0 ? ns / 1000000000 : (ns - 999999999) / 1000000000);
	nsec = (long)(ns - (int64_t)secs * 1000000000);
	gmtime_r(&secs, &tm);
	snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, nsec);
}

struct merge_arg {
	struct fsctx	*fs;
	const char	*service, *type, *selector;
	const struct range *r;
};

static void
free_result(void *v)
{
	query_result_free(v);
	free(v);
}

static int
fill_merge(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct merge_arg *a = varg;
	struct query_result *res;
	struct labelset sel;
	struct query q;
	int rc;

	if ((res = calloc(1, sizeof(*res))) == NULL)
		return -ENOMEM;
	if (labels_parse(a->selector, &sel, NULL) < 0) {
		free(res);
		return -ENOENT;
	}
	memset(&q, 0, sizeof(q));
	q.service = a->service;
	q.type = a->type;
	q.sel = &sel;
	q.from = a->r->from;
	q.to = a->r->to;
	rc = query_merge(a->fs->st, &q, res);
	labels_clear(&sel);
	if (rc < 0) {
		free(res);
		return rc;
	}
	*val = res;
	*free_fn = free_result;
	/* Charge roughly what the merged profile holds. */
	*size = sizeof(*res) + res->nrefs * sizeof(*res->refs) +
	    (res->merged ? res->merged->nsamples * 64 + res->merged->nlocations * 48 +
	    res->merged->nstrings * 32 : 0);
	return res->nrefs == 0 ? -ENOENT : 0;
}

int
views_merge(struct fsctx *fs, const char *service, const char *type,
    const char *selector, const struct range *r, struct cache_entry **out)
{
	struct merge_arg a = { fs, service, type, selector, r };
	struct buf key = { 0 };
	int rc;

	if (r->relative)
		rc = buf_printf(&key, "%s\x1f%s\x1f%s\x1f%s", service, type, selector, r->name);
	else
		rc = buf_printf(&key, "%s\x1f%s\x1f%s\x1f%lld..%lld", service, type, selector,
		    (long long)r->from, (long long)r->to);
	if (rc < 0)
		return rc;
	rc = cache_get(fs->merges, key.data, store_generation(fs->st),
	    r->relative ? RELATIVE_MAX_AGE : 0, fill_merge, &a, out);
	buf_free(&key);
	return rc;
}

void
views_merge_release(struct fsctx *fs, struct cache_entry *e)
{
	cache_release(fs->merges, e);
}

/* --- merged.pb.gz and meta.json ------------------------------------------ */

static int
render_merged(const struct view_in *in, struct buf *out)
{
	if (in->cur->merged == NULL)
		return -ENOENT;
	return profile_encode(in->cur->merged, true, out);
}

static void
json_str(struct buf *b, const char *s)
{
	buf_addc(b, '"');
	buf_add_json(b, s, strlen(s));
	buf_addc(b, '"');
}

static int
render_meta(const struct view_in *in, struct buf *b)
{
	const struct query_result *r = in->cur;
	const struct profile *m = r->merged;
	char t[64], idh[17];
	size_t i;

	buf_adds(b, "{\n  \"service\": ");
	json_str(b, in->fp->service);
	buf_adds(b, ",\n  \"type\": ");
	json_str(b, in->fp->type);
	buf_adds(b, ",\n  \"selector\": ");
	json_str(b, in->fp->selector[0] ? in->fp->selector : "all");
	buf_adds(b, ",\n  \"range\": {\"name\": ");
	json_str(b, in->fp->range.name);
	views_time(in->fp->range.from, t, sizeof(t));
	buf_adds(b, ", \"from\": ");
	json_str(b, t);
	views_time(in->fp->range.to, t, sizeof(t));
	buf_adds(b, ", \"to\": ");
	json_str(b, t);
	buf_printf(b, "},\n  \"profiles\": %zu,\n  \"merged\": %zu,\n", r->nrefs, r->nmerged);
	if (r->nrefs) {
		views_time(r->refs[0].time, t, sizeof(t));
		buf_adds(b, "  \"first\": ");
		json_str(b, t);
		views_time(r->refs[r->nrefs - 1].time, t, sizeof(t));
		buf_adds(b, ",\n  \"last\": ");
		json_str(b, t);
		buf_adds(b, ",\n");
	}
	buf_adds(b, "  \"sample_types\": [");
	for (i = 0; m && i < m->nsample_types; i++) {
		const char *ty = profile_str(m, m->sample_types[i].type);

		buf_adds(b, i ? ",\n    " : "\n    ");
		buf_adds(b, "{\"type\": ");
		json_str(b, ty);
		buf_adds(b, ", \"unit\": ");
		json_str(b, profile_str(m, m->sample_types[i].unit));
		buf_printf(b, ", \"total\": %lld, \"aggregation\": \"%s\"}",
		    (long long)profile_total(m, i),
		    profile_type_is_gauge(ty) ? "average" : "sum");
	}
	buf_adds(b, m && m->nsample_types ? "\n  ],\n" : "],\n");
	if (m) {
		buf_adds(b, "  \"default_sample_type\": ");
		json_str(b, profile_str(m, m->sample_types[profile_default_type(m)].type));
		buf_adds(b, ",\n  \"period_type\": {\"type\": ");
		json_str(b, profile_str(m, m->period_type.type));
		buf_adds(b, ", \"unit\": ");
		json_str(b, profile_str(m, m->period_type.unit));
		buf_printf(b, "},\n  \"period\": %lld,\n  \"samples\": %zu,\n",
		    (long long)m->period, m->nsamples);
	}
	buf_adds(b, "  \"series\": [");
	for (i = 0; i < r->nseries; i++) {
		const struct series *s = store_series_get(in->fs->st, r->series[i]);

		if (s == NULL)
			continue;
		buf_adds(b, i ? ", " : "");
		json_str(b, s->labels[0] ? s->labels : "");
	}
	buf_adds(b, "],\n  \"ids\": [");
	for (i = 0; i < r->nrefs; i++) {
		store_id_format(r->refs[i].id, idh);
		buf_adds(b, i ? ", " : "");
		json_str(b, idh);
	}
	buf_adds(b, "],\n  \"left_out\": [");
	for (i = 0; i < r->nskipped; i++) {
		store_id_format(r->skipped[i].id, idh);
		buf_adds(b, i ? ",\n    " : "\n    ");
		buf_adds(b, "{\"id\": ");
		json_str(b, idh);
		buf_adds(b, ", \"reason\": ");
		json_str(b, r->skipped[i].reason);
		buf_adds(b, "}");
	}
	buf_adds(b, r->nskipped ? "\n  ]" : "]");
	if (in->base || in->fp->node == NODE_VS_VIEW) {
		/* Only for vs/: describe the comparison. */
	}
	return buf_adds(b, "\n}\n");
}

/* --- routing ------------------------------------------------------------ */

typedef int (*render_fn)(const struct view_in *, struct buf *);

struct view_def {
	const char	*name;
	render_fn	 fn;
	bool		 needs_base;	/* a diff: also merges the base range */
};

static const struct view_def range_views[] = {
	{ "merged.pb.gz",	render_merged,		false },
	{ "meta.json",		render_meta,		false },
	{ NULL, NULL, false }
};

static const struct view_def vs_views[] = {
	{ NULL, NULL, false }
};

/* The range just before r, of the same length; false when r has no start. */
static bool
previous_range(const struct range *r, struct range *out)
{
	if (r->from == INT64_MIN || r->to == INT64_MAX)
		return false;
	memset(out, 0, sizeof(*out));
	out->to = r->from;
	out->from = r->from - (r->to - r->from);
	out->relative = r->relative;
	snprintf(out->name, sizeof(out->name), "before-%.50s", r->name);
	return true;
}

int
views_render(struct fsctx *fs, const struct fspath *fp, struct buf *out)
{
	const struct view_def *tab = fp->node == NODE_VS_VIEW ? vs_views : range_views;
	const struct view_def *v = NULL;
	struct cache_entry *cur = NULL, *base = NULL;
	struct view_in in;
	struct range br;
	render_fn fn = NULL;
	int rc, brc;
	size_t i;

	for (i = 0; tab[i].name; i++)
		if (strcmp(tab[i].name, fp->view) == 0)
			v = &tab[i];
	if (v)
		fn = v->fn;
	else
		return -ENOENT;

	if ((rc = views_merge(fs, fp->service, fp->type, fp->selector, &fp->range, &cur)) < 0)
		goto out;
	memset(&in, 0, sizeof(in));
	in.fs = fs;
	in.fp = fp;
	in.name = fp->view;
	in.cur = cur->val;
	if (v && v->needs_base) {
		if (fp->node == NODE_VS_VIEW) {
			brc = views_merge(fs, fp->service, fp->type, fp->base_selector,
			    &fp->base_range, &base);
		} else if (previous_range(&fp->range, &br)) {
			brc = views_merge(fs, fp->service, fp->type, fp->selector, &br, &base);
		} else
			brc = -ENOENT;
		if (brc == 0)
			in.base = base->val;
		else if (brc != -ENOENT) {
			rc = brc;
			goto out;
		}
	}
	rc = fn(&in, out);
out:
	if (base)
		views_merge_release(fs, base);
	if (cur)
		views_merge_release(fs, cur);
	return rc;
}

int
views_list(struct fsctx *fs, const struct fspath *fp, struct buf *out)
{
	size_t i;

	(void)fs;
	(void)fp;
	for (i = 0; range_views[i].name; i++)
		buf_add(out, range_views[i].name, strlen(range_views[i].name) + 1);
	return 0;
}

int
views_list_vs(struct fsctx *fs, const struct fspath *fp, struct buf *out)
{
	size_t i;

	(void)fs;
	(void)fp;
	for (i = 0; vs_views[i].name; i++)
		buf_add(out, vs_views[i].name, strlen(vs_views[i].name) + 1);
	return 0;
}
