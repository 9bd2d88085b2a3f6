/*
 * views: routing of range-directory file names to renderers, and the cached
 * merge each of them starts from. The renderers proper are in render.h; the
 * functions here pick the sample type, build the stack tree and the titles,
 * and handle the missing or incomparable base of a diff by saying so in the
 * output (a diff without a base is the current range alone).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cache.h"
#include "fs.h"
#include "render.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"
#include "views.h"

static bool previous_range(const struct range *r, struct range *out);

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
	/* Floor division without overflow near int64's ends. */
	secs = (time_t)(ns / 1000000000);
	nsec = (long)(ns % 1000000000);
	if (nsec < 0) {
		nsec += 1000000000;
		secs--;
	}
	gmtime_r(&secs, &tm);
	snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, nsec);
}

void
views_span(int64_t from, int64_t to, char *out, size_t n)
{
	char f[64], t[64];
	time_t a = (time_t)(from / 1000000000), b = (time_t)(to / 1000000000);
	struct tm ta, tb;

	/* Floor to the second, as views_time(). */
	a -= from % 1000000000 < 0;
	b -= to % 1000000000 < 0;
	gmtime_r(&a, &ta);
	gmtime_r(&b, &tb);
	strftime(f, sizeof(f), "%Y-%m-%d %H:%M:%S", &ta);
	strftime(t, sizeof(t), ta.tm_year == tb.tm_year && ta.tm_yday == tb.tm_yday ?
	    "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tb);
	snprintf(out, n, "%s to %s UTC", f, t);
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
	struct query_sel sel;
	struct query q;
	int rc;

	if ((res = calloc(1, sizeof(*res))) == NULL)
		return -ENOMEM;
	if (query_sel_parse(a->selector, &sel, NULL) < 0) {
		query_sel_free(&sel);
		free(res);
		return -ENOENT;
	}
	memset(&q, 0, sizeof(q));
	q.service = a->service;
	q.type = a->type;
	query_sel_apply(&sel, &q);
	q.from = a->r->from;
	q.to = a->r->to;
	rc = query_merge_timed(a->fs->rd, &q, "fs", res);
	query_sel_free(&sel);
	/* Tests count these lines: a listing must merge each range once. */
	log_debug("views: merge %s/%s/%s/%s: %zu profiles", a->service, a->type,
	    a->selector[0] ? a->selector : "all", a->r->name, rc == 0 ? res->nrefs : 0);
	if (rc < 0) {
		free(res);
		return rc;
	}
	*val = res;
	*free_fn = free_result;
	/* Charge what the result holds: the merged profile's arena is all of it. */
	*size = sizeof(*res) + res->nrefs * (sizeof(*res->refs) + sizeof(*res->totals_at)) +
	    res->nskipped * sizeof(*res->skipped) + res->nseries * sizeof(*res->series) +
	    (res->merged ? sizeof(*res->merged) + arena_used(res->merged->arena) : 0);
	return res->nrefs == 0 ? -ENOENT : 0;
}

/* Append the merges' cache key of (service, type, selector, range). */
static int
merge_key(struct buf *key, const char *service, const char *type, const char *selector,
    const struct range *r)
{
	if (r->relative)
		return buf_printf(key, "%s\x1f%s\x1f%s\x1f%s", service, type, selector, r->name);
	return buf_printf(key, "%s\x1f%s\x1f%s\x1f%lld..%lld", service, type, selector,
	    (long long)r->from, (long long)r->to);
}

int
views_merge(struct fsctx *fs, const char *service, const char *type,
    const char *selector, const struct range *r, struct cache_entry **out)
{
	struct merge_arg a = { fs, service, type, selector, r };
	struct buf key = { 0 };
	int rc;

	if ((rc = merge_key(&key, service, type, selector, r)) < 0)
		return rc;
	rc = cache_get_scoped(fs->merges, key.data, reader_generation(fs->rd), r->to,
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

/* A time as the tree names it, as a JSON string. */
static json_t *
json_when(int64_t ns)
{
	char t[64];

	views_time(ns, t, sizeof(t));
	return json_string(t);
}

/*
 * Profiles of a result: those stored, and those windows past the raw
 * retention stand for (*past, optional: how many of them that is).
 */
static uint64_t
views_profiles(const struct query_result *r, uint64_t *past)
{
	uint64_t n = 0, p = 0;
	size_t i;

	for (i = 0; i < r->nrefs; i++) {
		p += r->refs[i].summary;
		n += r->refs[i].summary ? 0 : 1;
	}
	if (past)
		*past = p;
	return n + p;
}

/* "diff_base" of a range's meta.json: what diff.pb.gz and diff.svg compare against. */
static json_t *
meta_diff_base(const struct view_in *in)
{
	struct range prev;

	if (!previous_range(&in->fp->range, &prev))
		return json_null();
	return json_pack("{s:o,s:o}", "from", json_when(prev.from),
	    "to", json_when(in->fp->range.from));
}

/* vs/<base>/meta.json: "base" and "diff" added to doc. 0 or -ENOMEM. */
static int
meta_vs(const struct view_in *in, json_t *doc)
{
	const struct query_result *br = in->base;
	const struct profile *p = in->cur->merged, *bp = br ? br->merged : NULL;
	json_t *diff;
	const char *tname;
	int bi = -1;
	size_t ty;

	if (json_object_set_new(doc, "base", json_pack("{s:o,s:{s:o,s:o,s:o},s:I,s:I,s:I}",
	    "selector", jsonw_str(in->fp->base_selector[0] ? in->fp->base_selector : "all"),
	    "range", "name", jsonw_str(in->fp->base_range.name),
	    "from", json_when(in->fp->base_range.from), "to", json_when(in->fp->base_range.to),
	    "profiles", (json_int_t)(br ? views_profiles(br, NULL) : 0),
	    "merged", (json_int_t)(br ? br->nmerged : 0),
	    "left_out", (json_int_t)(br ? br->nskipped : 0))) < 0)
		return -ENOMEM;
	if (p == NULL || p->nsample_types == 0)
		return json_object_set_new(doc, "diff", json_null()) < 0 ? -ENOMEM : 0;
	ty = profile_default_type(p);
	tname = profile_str(p, p->sample_types[ty].type);
	if (bp)
		bi = render_type_index(bp, tname);
	if (bi >= 0)
		diff = json_pack("{s:o,s:b,s:I,s:I,s:I}", "sample_type", jsonw_str(tname),
		    "comparable", 1, "current_total", (json_int_t)profile_total(p, ty),
		    "base_total", (json_int_t)profile_total(bp, (size_t)bi),
		    "delta", (json_int_t)(profile_total(p, ty) - profile_total(bp, (size_t)bi)));
	else
		diff = json_pack("{s:o,s:b,s:I,s:s}", "sample_type", jsonw_str(tname),
		    "comparable", 0, "current_total", (json_int_t)profile_total(p, ty),
		    "note", bp ? "the base's sample types differ" : "the base holds no profiles");
	return json_object_set_new(doc, "diff", diff) < 0 ? -ENOMEM : 0;
}

/*
 * The fields of meta.json after "merged", in order; names in profiles and
 * label values may hold any bytes, so they go through jsonw_str().
 */
static int
meta_body(const struct view_in *in, json_t *doc)
{
	const struct query_result *r = in->cur;
	const struct profile *m = r->merged;
	json_t *a;
	char idh[17];
	size_t i;

	if (r->nrefs && json_object_update_new(doc, json_pack("{s:o,s:o}",
	    "first", json_when(r->refs[0].time),
	    "last", json_when(r->refs[r->nrefs - 1].time))) < 0)
		return -ENOMEM;
	if (json_object_set_new(doc, "sample_types", a = json_array()) < 0)
		return -ENOMEM;
	for (i = 0; m && i < m->nsample_types; i++) {
		const char *ty = profile_str(m, m->sample_types[i].type);

		if (json_array_append_new(a, json_pack("{s:o,s:o,s:I,s:s}",
		    "type", jsonw_str(ty), "unit", jsonw_str(profile_str(m, m->sample_types[i].unit)),
		    "total", (json_int_t)profile_total(m, i),
		    "aggregation", profile_type_is_gauge(ty) ? "average" : "sum")) < 0)
			return -ENOMEM;
	}
	if (m && json_object_update_new(doc, json_pack("{s:o,s:{s:o,s:o},s:I,s:I}",
	    "default_sample_type",
	    jsonw_str(profile_str(m, m->sample_types[profile_default_type(m)].type)),
	    "period_type", "type", jsonw_str(profile_str(m, m->period_type.type)),
	    "unit", jsonw_str(profile_str(m, m->period_type.unit)),
	    "period", (json_int_t)m->period, "samples", (json_int_t)m->nsamples)) < 0)
		return -ENOMEM;
	if (json_object_set_new(doc, "series", a = json_array()) < 0)
		return -ENOMEM;
	for (i = 0; i < r->nseries; i++) {
		const struct series *s = reader_series_get(in->fs->rd, r->series[i]);

		if (s && json_array_append_new(a, jsonw_str(s->labels)) < 0)
			return -ENOMEM;
	}
	if (json_object_set_new(doc, "ids", a = json_array()) < 0)
		return -ENOMEM;
	for (i = 0; i < r->nrefs; i++) {
		if (r->refs[i].summary)
			continue;	/* past retention: only in the windows */
		store_id_format(r->refs[i].id, idh);
		if (json_array_append_new(a, json_string(idh)) < 0)
			return -ENOMEM;
	}
	if (json_object_set_new(doc, "left_out", a = json_array()) < 0)
		return -ENOMEM;
	for (i = 0; i < r->nskipped; i++) {
		store_id_format(r->skipped[i].id, idh);
		if (json_array_append_new(a, json_pack("{s:s,s:o}", "id", idh,
		    "reason", jsonw_str(r->skipped[i].reason))) < 0)
			return -ENOMEM;
	}
	if (in->fp->node == NODE_VS_VIEW)
		return meta_vs(in, doc);
	return json_object_set_new(doc, "diff_base", meta_diff_base(in)) < 0 ? -ENOMEM : 0;
}

/* "series": the label sets the selector matched ("" for none), as stored. */
static int
meta_series(const struct view_in *in, json_t *doc)
{
	const struct query_result *r = in->cur;
	json_t *a = json_array();
	size_t i;

	if (a == NULL || json_object_set_new(doc, "series", a) < 0)
		return -ENOMEM;
	for (i = 0; i < r->nseries; i++) {
		const struct series *s = reader_series_get(in->fs->rd, r->series[i]);

		if (s && json_array_append_new(a, jsonw_str(s->labels)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * "spans" of a span selector's range: what the span data of its profiles
 * lacks (store.h, struct span_marks), so a span missing from merged.pb.gz
 * may be told from one never sent. Absent for other selectors.
 */
static int
meta_spans(const struct view_in *in, json_t *doc)
{
	const struct span_marks *m = &in->cur->spans;
	struct query_sel sel;
	bool spans;

	if (query_sel_parse(in->fp->selector, &sel, NULL) < 0) {
		query_sel_free(&sel);
		return 0;
	}
	spans = sel.has_spans;
	query_sel_free(&sel);
	if (!spans)
		return 0;
	return json_object_set_new(doc, "spans", json_pack("{s:I,s:I,s:I,s:I}",
	    "profiles_with_cut_spans", (json_int_t)m->profiles_cut,
	    "spans_cut", (json_int_t)m->cut,
	    "profiles_with_refused_ids", (json_int_t)m->profiles_refused,
	    "ids_refused", (json_int_t)m->refused)) < 0 ? -ENOMEM : 0;
}

static int
render_meta(const struct view_in *in, struct buf *b)
{
	const struct query_result *r = in->cur;
	uint64_t past, n = views_profiles(r, &past);
	json_t *doc;
	int rc;

	doc = json_pack("{s:o,s:o,s:o,s:{s:o,s:o,s:o},s:I,s:I,s:I}",
	    "service", jsonw_str(in->fp->service),
	    "type", jsonw_str(in->fp->type),
	    "selector", jsonw_str(in->fp->selector[0] ? in->fp->selector : "all"),
	    "range", "name", jsonw_str(in->fp->range.name),
	    "from", json_when(in->fp->range.from), "to", json_when(in->fp->range.to),
	    "profiles", (json_int_t)n, "merged", (json_int_t)r->nmerged,
	    "past_retention", (json_int_t)past);
	rc = doc ? meta_body(in, doc) : -ENOMEM;
	if (rc == 0)
		rc = meta_series(in, doc);
	if (rc == 0)
		rc = meta_spans(in, doc);
	if (rc == 0)
		rc = jsonw_dump(b, doc, JSON_INDENT(2));
	if (rc == 0)
		rc = buf_addc(b, '\n');
	json_decref(doc);
	return rc;
}

/* --- flame graphs, folded, top, diffs, timeline ---------------------------- */

/* "checkout / cpu / all / last-1h" */
static void
add_where(struct buf *b, const struct fspath *fp)
{
	buf_printf(b, "%s / %s / %s / %s", fp->service, fp->type,
	    fp->selector[0] ? fp->selector : "all", fp->range.name);
}

/* What the diff of in compares against, for titles and notes. */
static void
add_base_name(struct buf *b, const struct view_in *in)
{
	char span[160];

	if (in->fp->node == NODE_VS_VIEW) {
		buf_printf(b, "%s@%s", in->fp->base_selector[0] ? in->fp->base_selector : "all",
		    in->fp->base_range.name);
		return;
	}
	struct range prev;

	if (!previous_range(&in->fp->range, &prev)) {
		buf_adds(b, "the range before (none: the range is unbounded)");
		return;
	}
	views_span(prev.from, in->fp->range.from, span, sizeof(span));
	buf_printf(b, "the range before (%s)", span);
}

/* "cpu (nanoseconds), total 1.25 s" */
static void
add_type_total(struct buf *b, const struct profile *p, size_t ty)
{
	const char *unit = profile_str(p, p->sample_types[ty].unit);

	buf_printf(b, "%s (%s), total ", profile_str(p, p->sample_types[ty].type), unit);
	render_value(b, profile_total(p, ty), unit);
}

/* The sample type a flamegraph file name asks for; -ENOENT if p has none such. */
static int
flame_type(const struct profile *p, const char *name, size_t *ty)
{
	char want[64];
	size_t n = strlen(name);
	int i;

	if (strcmp(name, "flamegraph.svg") == 0) {
		*ty = profile_default_type(p);
		return p->nsample_types ? 0 : -ENOENT;
	}
	if (n <= 15 || n - 15 >= sizeof(want) || strncmp(name, "flamegraph.", 11) != 0 ||
	    strcmp(name + n - 4, ".svg") != 0)
		return -ENOENT;
	memcpy(want, name + 11, n - 15);
	want[n - 15] = '\0';
	if ((i = render_type_index(p, want)) < 0)
		return -ENOENT;
	*ty = (size_t)i;
	return 0;
}

/*
 * The stack tree of the range's merged profile for sample type ty, without
 * a base: flamegraph.svg, folded.txt, top.txt and diff.svg without a base
 * start from the same one, so an `ls -l` or a read of each builds it once.
 * Kept in the merges' cache beside the merge it comes from (same scope,
 * charged what it holds).
 */
struct tree_arg {
	const struct profile	*p;
	size_t			 ty;
};

static void
free_tree(void *v)
{
	render_tree_free(v);
	free(v);
}

static int
fill_tree(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct tree_arg *a = varg;
	struct render_tree *t;
	int rc;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	if ((rc = render_tree_build(t, a->p, a->ty, NULL, 0)) < 0) {
		free(t);
		return rc;
	}
	*val = t;
	*size = render_tree_bytes(t);
	*free_fn = free_tree;
	return 0;
}

/*
 * The key of what a range's file derives from its merge ("what" already in
 * key): the merge's own key and its birth, so that it never outlives that
 * merge into a newer one.
 */
static int
derived_key(struct buf *key, const struct view_in *in)
{
	const struct fspath *fp = in->fp;
	int rc;

	if ((rc = merge_key(key, fp->service, fp->type, fp->selector, &fp->range)) < 0)
		return rc;
	/* A tree without kernel addresses is another tree (views_render()). */
	return buf_printf(key, "\x1f%lld%s", (long long)in->cur_born, in->hidden ? "\x1fk" : "");
}

/* The cached tree of in's merged profile for type ty; cache_release() it. */
static int
views_tree(const struct view_in *in, size_t ty, struct cache_entry **ce)
{
	struct tree_arg a = { in->cur->merged, ty };
	struct buf key = { 0 };
	int rc;

	*ce = NULL;
	if ((rc = buf_printf(&key, "tree%zu\x1f", ty)) == 0 && (rc = derived_key(&key, in)) == 0)
		rc = cache_get_scoped(in->fs->merges, key.data, reader_generation(in->fs->rd),
		    in->fp->range.to, in->fp->range.relative ? RELATIVE_MAX_AGE : 0, fill_tree,
		    &a, ce);
	buf_free(&key);
	return rc;
}

static int
render_flame(const struct view_in *in, struct buf *out)
{
	const struct profile *p = in->cur->merged;
	struct cache_entry *ce;
	struct flame_opts o = { 0 };
	struct buf title = { 0 };
	size_t ty;
	int rc;

	if (p == NULL || (rc = flame_type(p, in->name, &ty)) < 0)
		return -ENOENT;
	if ((rc = views_tree(in, ty, &ce)) < 0) {
		cache_release(in->fs->merges, ce);
		return rc;
	}
	add_where(&title, in->fp);
	buf_adds(&title, ": ");
	add_type_total(&title, p, ty);
	o.title = title.data ? title.data : "";
	o.unit = profile_str(p, p->sample_types[ty].unit);
	o.type = profile_str(p, p->sample_types[ty].type);
	rc = flame_render(ce->val, &o, out);
	cache_release(in->fs->merges, ce);
	buf_free(&title);
	return rc;
}

static int
render_folded(const struct view_in *in, struct buf *out)
{
	const struct profile *p = in->cur->merged;
	struct cache_entry *ce;
	int rc;

	if (p == NULL || p->nsample_types == 0)
		return -ENOENT;
	if ((rc = views_tree(in, profile_default_type(p), &ce)) < 0) {
		cache_release(in->fs->merges, ce);
		return rc;
	}
	rc = folded_render(ce->val, out);
	cache_release(in->fs->merges, ce);
	return rc;
}

/*
 * The base of a diff, when it can be compared with the current profile:
 * *bty is the base's index of the current default type. Otherwise NULL and
 * the reason in why.
 */
static const struct profile *
diff_base(const struct view_in *in, size_t ty, size_t *bty, struct buf *why)
{
	const struct profile *p = in->cur->merged, *b;
	struct buf s1 = { 0 }, s2 = { 0 };
	int i;

	b = in->base ? in->base->merged : NULL;
	if (b == NULL) {
		buf_adds(why, "no base: ");
		add_base_name(why, in);
		buf_adds(why, " holds no profiles");
		return NULL;
	}
	profile_signature(p, &s1);
	profile_signature(b, &s2);
	i = render_type_index(b, profile_str(p, p->sample_types[ty].type));
	if (i < 0 || s1.len != s2.len || memcmp(s1.data, s2.data, s1.len) != 0) {
		buf_adds(why, "no comparable base: the sample types of ");
		add_base_name(why, in);
		buf_adds(why, " differ from this range's");
		b = NULL;
	} else
		*bty = (size_t)i;
	buf_free(&s1);
	buf_free(&s2);
	return b;
}

static int
render_top(const struct view_in *in, struct buf *out)
{
	const struct profile *p = in->cur->merged, *b = NULL;
	const bool diff = in->fp->node == NODE_VS_VIEW;
	const bool norm = strcmp(in->name, "top.absolute.txt") != 0;
	struct cache_entry *ce;
	struct render_tree t;
	struct buf title = { 0 }, why = { 0 };
	size_t ty, bty = 0;
	int rc;

	if (p == NULL || p->nsample_types == 0)
		return -ENOENT;
	ty = profile_default_type(p);
	add_where(&title, in->fp);
	buf_adds(&title, ": ");
	add_type_total(&title, p, ty);
	if (diff) {
		buf_adds(&title, "\nChange against ");
		add_base_name(&title, in);
		buf_adds(&title, norm ? ", normalized (top.absolute.txt: absolute values)" :
		    ", absolute values (top.txt: normalized)");
		if ((b = diff_base(in, ty, &bty, &why)) == NULL)
			buf_printf(&title, "\n%s; showing this range alone",
			    why.data ? why.data : "no comparable base");
	}
	if (b == NULL) {
		if ((rc = views_tree(in, ty, &ce)) == 0)
			rc = top_render(ce->val, title.data, profile_str(p,
			    p->sample_types[ty].unit), out);
		cache_release(in->fs->merges, ce);
	} else if (b && (rc = render_tree_build(&t, p, ty, b, bty)) == 0) {
		rc = (norm ? top_render_normalized : top_render)(&t, title.data,
		    profile_str(p, p->sample_types[ty].unit), out);
		render_tree_free(&t);
	}
	buf_free(&title);
	buf_free(&why);
	return rc;
}

/* A shallow copy of p with one more comment, for "no base" diffs. */
static int
encode_with_comment(const struct profile *p, const char *comment, struct buf *out)
{
	struct profile c = *p;
	const char **strs = malloc((p->nstrings + 1) * sizeof(*strs));
	int64_t *cms = malloc((p->ncomments + 1) * sizeof(*cms));
	int rc = -ENOMEM;

	if (strs && cms) {
		memcpy(strs, p->strings, p->nstrings * sizeof(*strs));
		/* NULL: the reason's buffer was refused by the memory budget. */
		strs[p->nstrings] = comment ? comment : "no comparable base";
		if (p->ncomments)
			memcpy(cms, p->comments, p->ncomments * sizeof(*cms));
		cms[p->ncomments] = (int64_t)p->nstrings;
		c.strings = strs;
		c.nstrings = p->nstrings + 1;
		c.comments = cms;
		c.ncomments = p->ncomments + 1;
		rc = profile_encode(&c, true, out);
	}
	free(strs);
	free(cms);
	return rc;
}

static int
render_diff_pb(const struct view_in *in, struct buf *out)
{
	const struct profile *p = in->cur->merged, *b;
	struct profile *d = NULL;
	struct buf why = { 0 }, err = { 0 };
	size_t ty, bty;
	int rc;

	if (p == NULL || p->nsample_types == 0)
		return -ENOENT;
	ty = profile_default_type(p);
	if ((b = diff_base(in, ty, &bty, &why)) == NULL) {
		rc = encode_with_comment(p, why.data, out);
		goto out;
	}
	if ((rc = profile_diff(p, b, &d, &err)) < 0) {
		if (rc == -ENOMEM)
			goto out;
		buf_reset(&why);
		buf_printf(&why, "no comparable base: %s", err.data ? err.data : "");
		rc = encode_with_comment(p, why.data, out);
		goto out;
	}
	rc = profile_encode(d, true, out);
out:
	profile_free(d);
	buf_free(&why);
	buf_free(&err);
	return rc;
}

static int
render_diff_svg(const struct view_in *in, struct buf *out)
{
	const struct profile *p = in->cur->merged, *b;
	struct cache_entry *ce;
	struct render_tree t;
	struct flame_opts o = { 0 };
	struct buf title = { 0 }, note = { 0 };
	size_t ty, bty = 0;
	int rc;

	if (p == NULL || p->nsample_types == 0)
		return -ENOENT;
	ty = profile_default_type(p);
	b = diff_base(in, ty, &bty, &note);
	add_where(&title, in->fp);
	buf_adds(&title, " vs ");
	add_base_name(&title, in);
	buf_printf(&title, ": %s", profile_str(p, p->sample_types[ty].type));
	o.normalized = strcmp(in->name, "diff.absolute.svg") != 0;
	if (b)
		buf_adds(&title, o.normalized ? ", normalized" : ", absolute");
	o.unit = profile_str(p, p->sample_types[ty].unit);
	o.type = profile_str(p, p->sample_types[ty].type);
	if (b) {
		buf_adds(&note, "before ");
		render_value(&note, profile_total(b, bty), o.unit);
		buf_adds(&note, ", after ");
		render_value(&note, profile_total(p, ty), o.unit);
		if (o.normalized)
			buf_adds(&note, "; normalized: each frame's share of its side's total "
			    "compared; widths: after; red: larger share, blue: smaller; "
			    "diff.absolute.svg compares absolute values");
		else
			buf_adds(&note, "; absolute values compared; widths: after; red grew, "
			    "blue shrank; diff.svg compares shares");
		o.diff = true;
	} else
		buf_adds(&note, "; showing this range alone");
	o.title = title.data;
	o.note = note.data;
	if (b == NULL) {
		if ((rc = views_tree(in, ty, &ce)) == 0)
			rc = flame_render(ce->val, &o, out);
		cache_release(in->fs->merges, ce);
	} else if (b && (rc = render_tree_build(&t, p, ty, b, bty)) == 0) {
		rc = flame_render(&t, &o, out);
		render_tree_free(&t);
	}
	buf_free(&title);
	buf_free(&note);
	return rc;
}

/* The timeline of a range, cached beside the merges (csv and svg share it). */
struct tl_arg {
	struct fsctx		*fs;
	const struct query_result *cur;
	const char		*type;	/* the sample type counted */
	size_t			 type_index;	/* its index in the merged profiles */
	int64_t			 from, to;
	struct timeline		*tl;
	struct buf		 err;
};

static void
free_timeline(void *v)
{
	timeline_free(v);
	free(v);
}

static int
fill_timeline(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct tl_arg *a = varg;
	size_t i;
	int rc;

	if ((a->tl = calloc(1, sizeof(*a->tl))) == NULL)
		return -ENOMEM;
	if ((rc = timeline_init(a->tl, a->from, a->to, profile_type_is_gauge(a->type))) < 0) {
		free(a->tl);
		return rc;
	}
	/* The merge kept each profile's totals: no second pass over the data. */
	for (i = 0; i < a->cur->nrefs; i++) {
		const struct store_ref *ref = &a->cur->refs[i];
		size_t j, at = a->cur->totals_at ? a->cur->totals_at[i] : SIZE_MAX;

		if (at == SIZE_MAX)
			continue;
		for (j = 0; j < a->cur->nskipped; j++)
			if (a->cur->skipped[j].id == ref->id)
				break;
		if (j < a->cur->nskipped)
			continue;	/* left out of the merge: left out here too */
		timeline_add_n(a->tl, ref->time, a->cur->totals[at + a->type_index],
		    ref->summary ? (uint32_t)(ref->summary < UINT32_MAX ? ref->summary :
		    UINT32_MAX) : 1);
	}
	*val = a->tl;
	*size = sizeof(*a->tl) + a->tl->nsteps * (sizeof(int64_t) + sizeof(uint32_t));
	*free_fn = free_timeline;
	return rc;
}

static int
render_timeline(const struct view_in *in, struct buf *out)
{
	const struct query_result *r = in->cur;
	const struct profile *p = r->merged;
	struct tl_arg a = { .fs = in->fs, .cur = r };
	struct cache_entry *ce = NULL;
	struct buf key = { 0 }, title = { 0 };
	size_t ty;
	int rc;

	if (p == NULL || p->nsample_types == 0 || r->nrefs == 0)
		return -ENOENT;
	ty = profile_default_type(p);
	a.type = profile_str(p, p->sample_types[ty].type);
	a.type_index = ty;
	/* An unbounded range spans its data. */
	a.from = in->fp->range.from == INT64_MIN ? r->refs[0].time : in->fp->range.from;
	a.to = in->fp->range.to == INT64_MAX ? r->refs[r->nrefs - 1].time + 1 : in->fp->range.to;
	if ((rc = buf_printf(&key, "timeline\x1f")) < 0 || (rc = derived_key(&key, in)) < 0) {
		buf_free(&key);
		return rc;
	}
	rc = cache_get_scoped(in->fs->merges, key.data, reader_generation(in->fs->rd),
	    in->fp->range.to, in->fp->range.relative ? RELATIVE_MAX_AGE : 0, fill_timeline,
	    &a, &ce);
	buf_free(&a.err);
	if (rc == 0) {
		if (strcmp(in->name, "timeline.csv") == 0)
			rc = timeline_csv(ce->val, a.type, profile_str(p, p->sample_types[ty].unit),
			    out);
		else {
			add_where(&title, in->fp);
			rc = timeline_svg(ce->val, title.data, a.type,
			    profile_str(p, p->sample_types[ty].unit), out);
		}
	}
	if (ce)
		cache_release(in->fs->merges, ce);
	buf_free(&key);
	buf_free(&title);
	return rc;
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
	{ "flamegraph.svg",	render_flame,		false },
	{ "folded.txt",		render_folded,		false },
	{ "top.txt",		render_top,		false },
	{ "diff.pb.gz",		render_diff_pb,		true },
	{ "diff.svg",		render_diff_svg,	true },
	{ "diff.absolute.svg",	render_diff_svg,	true },
	{ "timeline.svg",	render_timeline,	false },
	{ "timeline.csv",	render_timeline,	false },
	{ NULL, NULL, false }
};

/* flamegraph.<sample_type>.svg: one per sample type, routed by prefix. */
static const struct view_def typed_flame = { "flamegraph.*.svg", render_flame, false };

static const struct view_def vs_views[] = {
	{ "diff.pb.gz",		render_diff_pb,		true },
	{ "diff.svg",		render_diff_svg,	true },
	{ "diff.absolute.svg",	render_diff_svg,	true },
	{ "top.txt",		render_top,		true },
	{ "top.absolute.txt",	render_top,		true },
	{ "meta.json",		render_meta,		true },
	{ NULL, NULL, false }
};

/* The range just before r, of the same length; false when r has no start. */
static bool
previous_range(const struct range *r, struct range *out)
{
	int64_t len;

	if (r->from == INT64_MIN || r->to == INT64_MAX)
		return false;
	memset(out, 0, sizeof(*out));
	out->to = r->from;
	if (__builtin_sub_overflow(r->to, r->from, &len) ||
	    __builtin_sub_overflow(r->from, len, &out->from))
		return false;
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
	struct query_result hcur, hbase;
	struct profile *hc = NULL, *hb = NULL;
	struct view_in in;
	struct range br;
	render_fn fn = NULL;
	int rc, brc;
	size_t i;

	for (i = 0; tab[i].name; i++)
		if (strcmp(tab[i].name, fp->view) == 0)
			v = &tab[i];
	if (v == NULL && tab == range_views && strncmp(fp->view, "flamegraph.", 11) == 0)
		v = &typed_flame;
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
	in.cur_born = cur->born;
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
	/*
	 * A caller who may not see kernel addresses reads views of copies
	 * without them (query.h); the merges stay whole in the cache.
	 */
	if (fp->hide_kernel && in.cur->merged) {
		if ((rc = kaddr_hidden_copy(in.cur->merged, &hc)) < 0)
			goto out;
		if (hc) {
			hcur = *in.cur;
			hcur.merged = hc;
			in.cur = &hcur;
			in.hidden = true;
		}
	}
	if (fp->hide_kernel && in.base && in.base->merged) {
		if ((rc = kaddr_hidden_copy(in.base->merged, &hb)) < 0)
			goto out;
		if (hb) {
			hbase = *in.base;
			hbase.merged = hb;
			in.base = &hbase;
		}
	}
	rc = fn(&in, out);
out:
	kaddr_copy_free(hc);
	kaddr_copy_free(hb);
	if (base)
		views_merge_release(fs, base);
	if (cur)
		views_merge_release(fs, cur);
	return rc;
}

struct typed_arg {
	struct fsctx		*fs;
	const struct fspath	*fp;
};

static void
free_typed(void *v)
{
	buf_free(v);
	free(v);
}

/* The names of the typed flame graphs of a range (NUL-separated), from its merge. */
static int
fill_typed(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct typed_arg *a = varg;
	struct buf *out = xcalloc(1, sizeof(*out));
	struct cache_entry *ce = NULL;
	size_t i;
	int rc;

	*val = out;
	*free_fn = free_typed;
	rc = views_merge(a->fs, a->fp->service, a->fp->type, a->fp->selector, &a->fp->range, &ce);
	if (rc == 0) {
		const struct query_result *r = ce->val;
		const struct profile *p = r->merged;

		for (i = 0; p && i < p->nsample_types; i++) {
			const char *ty = profile_str(p, p->sample_types[i].type);

			if (i == profile_default_type(p) || ty[0] == '\0' || strchr(ty, '/') ||
			    strlen(ty) > 40)
				continue;
			buf_printf(out, "flamegraph.%s.svg", ty);
			buf_addc(out, '\0');
		}
		rc = buf_error(out);
	}
	if (ce)
		views_merge_release(a->fs, ce);
	*size = sizeof(*out) + out->cap;
	/* Kept: the names, a range without data; not a passing shortage. */
	return rc == 0 || rc == -ENOENT ? rc : -ENOMEM;
}

int
views_list(struct fsctx *fs, const struct fspath *fp, struct buf *out)
{
	struct typed_arg a = { fs, fp };
	struct cache_entry *ce = NULL;
	struct buf key = { 0 };
	size_t i;

	for (i = 0; range_views[i].name; i++)
		buf_add(out, range_views[i].name, strlen(range_views[i].name) + 1);
	/*
	 * The typed flame graphs need the sample types: the merge's (cached,
	 * and needed by the listed files anyway). Their names are remembered
	 * with the sizes, which outlive the merges: a second du or find over a
	 * week lists some 550 ranges without merging them again.
	 */
	buf_addc(&key, '\x02');
	if (merge_key(&key, fp->service, fp->type, fp->selector, &fp->range) < 0) {
		buf_free(&key);
		return 0;
	}
	cache_get_scoped(fs->sizes, key.data, reader_generation(fs->rd), fp->range.to,
	    fp->range.relative ? RELATIVE_MAX_AGE : 0, fill_typed, &a, &ce);
	if (ce && ce->rc == 0) {
		const struct buf *typed = ce->val;

		buf_add(out, typed->data, typed->len);
	}
	if (ce)
		cache_release(fs->sizes, ce);
	buf_free(&key);
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
