/*
 * querier: Grafana's Pyroscope data source served from the store, the
 * Connect service querier.v1.QuerierService of api/proto (connect.c does the
 * protocol). Every answer reads through the reader the server was given
 * (the store's or, with --clickhouse, the fleet's) and merges with the same
 * query_merge() as the tree's merged.pb.gz, so long ranges come from the
 * store's pre-aggregated windows; each method asks only for what it reads
 * (a flame graph no listing, a series no merged samples). The merge
 * methods' replies are kept (qcache.h) until their range's data changes.
 * Methods not served answer 501.
 *
 * Profile types are Pyroscope's five-part ids
 * "<name>:<sample_type>:<sample_unit>:<period_type>:<period_unit>": a table
 * maps the store's types (cpu, heap, ...) to the ids Go's profiles give;
 * another type is named after itself, with the sample types of its newest
 * profile. The service is the label service_name, the type's name __name__
 * and its id __profile_type__; times are Unix milliseconds.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "connect.h"
#include "qcache.h"
#include "query.h"
#include "render.h"
#include "querier/v1/querier.pb-c.h"
#include "types/v1/types.pb-c.h"

#define PTYPE_MAX		16	/* profile type ids of one store type */
#define FLAME_DEFAULT_NODES	8192
#define FLAME_MAX_NODES		(1u << 20)
#define SERIES_MAX_POINTS	100000	/* steps of one SelectSeries */
#define MS			INT64_C(1000000)

struct ptype_map {
	const char	*type;		/* the store's */
	const char	*name, *sample_type, *sample_unit, *period_type, *period_unit;
};

/* Go's runtime profiles, as Pyroscope names them. */
static const struct ptype_map ptype_table[] = {
	{ "cpu", "process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds" },
	{ "cpu", "process_cpu", "samples", "count", "cpu", "nanoseconds" },
	{ "heap", "memory", "inuse_space", "bytes", "space", "bytes" },
	{ "heap", "memory", "inuse_objects", "count", "space", "bytes" },
	{ "heap", "memory", "alloc_space", "bytes", "space", "bytes" },
	{ "heap", "memory", "alloc_objects", "count", "space", "bytes" },
	{ "allocs", "memory", "alloc_space", "bytes", "space", "bytes" },
	{ "allocs", "memory", "alloc_objects", "count", "space", "bytes" },
	{ "goroutine", "goroutines", "goroutine", "count", "goroutine", "count" },
	{ "mutex", "mutex", "contentions", "count", "contentions", "count" },
	{ "mutex", "mutex", "delay", "nanoseconds", "contentions", "count" },
	{ "block", "block", "contentions", "count", "contentions", "count" },
	{ "block", "block", "delay", "nanoseconds", "contentions", "count" },
};
#define NTABLE	(sizeof(ptype_table) / sizeof(ptype_table[0]))

/* One profile type id, split. */
struct ptype {
	char	id[5 * 72];
	char	name[72], sample_type[72], sample_unit[72], period_type[72], period_unit[72];
};

static void
ptype_set(struct ptype *p, const char *name, const char *st, const char *su, const char *pt,
    const char *pu)
{
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->sample_type, sizeof(p->sample_type), "%s", st);
	snprintf(p->sample_unit, sizeof(p->sample_unit), "%s", su);
	snprintf(p->period_type, sizeof(p->period_type), "%s", pt);
	snprintf(p->period_unit, sizeof(p->period_unit), "%s", pu);
	snprintf(p->id, sizeof(p->id), "%s:%s:%s:%s:%s", p->name, p->sample_type, p->sample_unit,
	    p->period_type, p->period_unit);
}

/* "a:b:c:d:e" into p; -EINVAL with the reason. */
static int
ptype_parse(const char *id, struct ptype *p, struct buf *err)
{
	char part[5][72];
	const char *s = id, *c;
	int i;

	for (i = 0; i < 5; i++) {
		c = i < 4 ? strchr(s, ':') : s + strlen(s);
		if (c == NULL || (size_t)(c - s) >= sizeof(part[0]) || c == s) {
			buf_printf(err, "profile type \"%.200s\" is not "
			    "<name>:<sample_type>:<sample_unit>:<period_type>:<period_unit> "
			    "(e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds)", id);
			return -EINVAL;
		}
		memcpy(part[i], s, (size_t)(c - s));
		part[i][c - s] = '\0';
		s = c + 1;
	}
	ptype_set(p, part[0], part[1], part[2], part[3], part[4]);
	return 0;
}

/*
 * The ids of store type `type`: the table's, else those of its newest
 * profile's sample types in [from, to) (one profile read). *n may be 0.
 */
static int
ptypes_of(const struct reader *rd, const char *type, int64_t from, int64_t to,
    struct cancel *cancel, struct ptype *out, size_t *n)
{
	struct query q = { .type = type, .from = from, .to = to, .cancel = cancel };
	struct query_result res;
	struct store_ref ref;
	struct profile *p = NULL;
	struct buf gz = { 0 };
	size_t i;
	int rc;

	*n = 0;
	for (i = 0; i < NTABLE; i++)
		if (strcmp(ptype_table[i].type, type) == 0 && *n < PTYPE_MAX)
			ptype_set(&out[(*n)++], ptype_table[i].name, ptype_table[i].sample_type,
			    ptype_table[i].sample_unit, ptype_table[i].period_type,
			    ptype_table[i].period_unit);
	if (*n)
		return 0;
	if ((rc = reader_list(rd, &q, &res)) < 0)
		return rc;
	for (i = res.nrefs; i-- > 0 && p == NULL && cancel_check(cancel) == 0;) {
		if (res.refs[i].summary)
			continue;
		buf_reset(&gz);
		if (reader_get(rd, res.refs[i].id, &ref, &gz) == 0)
			(void)profile_decode(gz.data, gz.len, &p, NULL);
	}
	query_result_free(&res);
	buf_free(&gz);
	for (i = 0; p && i < p->nsample_types && *n < PTYPE_MAX; i++)
		ptype_set(&out[(*n)++], type, profile_str(p, p->sample_types[i].type),
		    profile_str(p, p->sample_types[i].unit), profile_str(p, p->period_type.type),
		    profile_str(p, p->period_type.unit));
	profile_free(p);
	return 0;
}

/* The store types whose profiles the id's name stands for, best first. */
static size_t
ptype_store_types(const struct ptype *p, const char **out, size_t max)
{
	size_t i, j, n = 0;

	for (i = 0; i < NTABLE && n < max; i++) {
		if (strcmp(ptype_table[i].name, p->name) != 0 ||
		    strcmp(ptype_table[i].sample_type, p->sample_type) != 0)
			continue;
		for (j = 0; j < n && strcmp(out[j], ptype_table[i].type) != 0; j++)
			;
		if (j == n)
			out[n++] = ptype_table[i].type;
	}
	if (n == 0 && max)
		out[n++] = p->name;	/* a type outside the table is named after itself */
	return n;
}

/* --- selections ------------------------------------------------------------ */

/* Times of a request (ms, 0: unbounded) as a query's range (ns). */
static int
range_of(int64_t start, int64_t end, int64_t *from, int64_t *to, struct buf *err)
{
	*from = start > 0 && start < INT64_MAX / MS ? start * MS : INT64_MIN;
	*to = end > 0 && end < INT64_MAX / MS ? end * MS : INT64_MAX;
	if (*from >= *to && end > 0) {
		buf_printf(err, "end (%lld) is not after start (%lld)", (long long)end,
		    (long long)start);
		return -EINVAL;
	}
	return 0;
}

/*
 * Whether series s seen as profile type pt satisfies ms: its labels,
 * service_name, __name__ and __profile_type__.
 */
static bool
series_matches(const struct matchers *ms, const struct series *s, const struct ptype *pt)
{
	struct labelset aug;
	size_t i;

	aug.n = 0;
	for (i = 0; i < s->ls.n && aug.n < LABELS_MAX - 3; i++)
		aug.pairs[aug.n++] = s->ls.pairs[i];
	aug.pairs[aug.n++] = (struct label){ (char *)"__name__", (char *)pt->name };
	aug.pairs[aug.n++] = (struct label){ (char *)"__profile_type__", (char *)pt->id };
	return matchers_match(ms, s->service, &aug);
}

/*
 * A merge request's selection: the profile type and the selector become a
 * query; the pseudo-labels are checked here, the rest the store checks.
 * *q points into sel (and sel->store): valid until selection_free().
 */
struct selection {
	struct ptype	 pt;
	struct matchers	 all, store;
	const char	*service;
	bool		 none;		/* a pseudo-label matcher excludes the type */
	const struct span_sel *spans;	/* SelectMergeSpanProfile: these spans' samples */
};

static void
selection_free(struct selection *sel)
{
	/* store borrows all's matchers */
	sel->store.n = 0;
	matchers_clear(&sel->all);
}

static int
selection_parse(const char *ptype, const char *selector, struct selection *sel,
    struct buf *err)
{
	size_t i;
	int rc;

	memset(sel, 0, sizeof(*sel));
	if (ptype == NULL || ptype[0] == '\0') {
		buf_adds(err, "profile_typeID is required (one of ProfileTypes' ids)");
		return -EINVAL;
	}
	if ((rc = ptype_parse(ptype, &sel->pt, err)) < 0)
		return rc;
	if ((rc = matchers_parse_prom(selector ? selector : "", &sel->all, err)) < 0)
		return rc;
	for (i = 0; i < sel->all.n; i++) {
		const struct matcher *m = &sel->all.m[i];

		if (strcmp(m->key, "__name__") == 0) {
			if (!matcher_match(m, sel->pt.name))
				sel->none = true;
		} else if (strcmp(m->key, "__profile_type__") == 0) {
			if (!matcher_match(m, sel->pt.id))
				sel->none = true;
		} else {
			if (m->op == MATCH_EQ && strcmp(m->key, "service_name") == 0)
				sel->service = m->value;
			sel->store.m[sel->store.n++] = *m;
		}
	}
	return 0;
}

/* What a method needs of a merge: each leaves out what costs and is not read. */
enum merge_need {
	NEED_MERGED,	/* the merged profile (flame graphs, pprof): no listing */
	NEED_TOTALS,	/* the listing's per-profile totals and merged's sample types */
};

/*
 * Merge sel over [from, to) into res, trying the store types of the id in
 * turn until one has series; *ty is the index of the id's sample type in
 * res->merged, -1 when nothing matched (res->merged NULL then too). need
 * says what of res is read (query.merged_only, query.totals_only): the
 * listing costs a record per profile, the merged samples a merge.
 */
static int
selection_merge(struct http_req *r, const struct selection *sel, int64_t from, int64_t to,
    enum merge_need need, struct query_result *res, int *ty)
{
	const char *types[4];
	size_t nt = ptype_store_types(&sel->pt, types, 4), i;
	struct query q = { .service = sel->service, .sel = NULL, .match = &sel->store,
	    .from = from, .to = to, .merged_only = need == NEED_MERGED,
	    .totals_only = need == NEED_TOTALS, .cancel = &r->cancel, .spans = sel->spans };
	int rc;

	memset(res, 0, sizeof(*res));
	*ty = -1;
	if (sel->none)
		return 0;
	for (i = 0; i < nt; i++) {
		q.type = types[i];
		if ((rc = query_merge_timed(r->srv->rd, &q, "http", res)) < 0)
			return rc;
		if (res->nseries)
			break;
		query_result_free(res);
		memset(res, 0, sizeof(*res));
	}
	if (res->merged) {
		kaddr_hide(res->merged);	/* never served (query.h) */
		*ty = render_type_index(res->merged, sel->pt.sample_type);
	}
	return 0;
}

/* --- flame graphs ---------------------------------------------------------- */

struct i64v {
	int64_t	*v;
	size_t	 n, cap;
};

static int
i64v_add(struct i64v *a, int64_t x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		int64_t *v = realloc(a->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

/*
 * The flamebearer form of tree t: names, and per level the nodes left to
 * right, `width` values each: with a base (diff), x, total, self of the
 * base, then of the current profile, then the name; else x, total, self,
 * name (x relative to the previous node's end on the level). Nodes below the
 * max_nodes largest are summed into one "other" per parent.
 */
struct flame_out {
	char		**names;
	size_t		  nnames;
	struct i64v	 *levels;
	size_t		  nlevels;
	int64_t		  max_self;
};

static void
flame_out_free(struct flame_out *f)
{
	size_t i;

	for (i = 0; i < f->nnames; i++)
		free(f->names[i]);
	free(f->names);
	for (i = 0; i < f->nlevels; i++)
		free(f->levels[i].v);
	free(f->levels);
}

/* The k-th largest of v[0..n) (k from 0), reordering v: quickselect, linear on average. */
static int64_t
kth_largest(int64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2], t;
		size_t lt = lo, i = lo, gt = hi + 1;

		/* Three ways: larger | equal | smaller than the pivot. */
		while (i < gt) {
			if (v[i] > pivot) {
				t = v[lt], v[lt++] = v[i], v[i++] = t;
			} else if (v[i] < pivot) {
				t = v[--gt], v[gt] = v[i], v[i] = t;
			} else
				i++;
		}
		if (k < lt)
			hi = lt - 1;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
	return v[k];
}

struct frame {
	uint32_t	 node;		/* UINT32_MAX: an "other" node */
	size_t		 depth;
	int64_t		 xb, xc;	/* absolute start, base and current */
	int64_t		 ob, oc;	/* "other": its values */
};

static int
level_push(struct flame_out *f, size_t depth, bool diff, int64_t *endb, int64_t *endc,
    int64_t xb, int64_t tb, int64_t sb, int64_t xc, int64_t tc, int64_t sc, int64_t name)
{
	struct i64v *l;
	int rc = 0;

	if (depth >= f->nlevels) {
		struct i64v *n = realloc(f->levels, (depth + 1) * sizeof(*n));

		if (n == NULL)
			return -ENOMEM;
		memset(&n[f->nlevels], 0, (depth + 1 - f->nlevels) * sizeof(*n));
		f->levels = n;
		f->nlevels = depth + 1;
	}
	l = &f->levels[depth];
	if (diff) {
		rc |= i64v_add(l, xb - endb[depth]);
		rc |= i64v_add(l, tb);
		rc |= i64v_add(l, sb);
	}
	rc |= i64v_add(l, xc - endc[depth]);
	rc |= i64v_add(l, tc);
	rc |= i64v_add(l, sc);
	rc |= i64v_add(l, name);
	endb[depth] = xb + tb;
	endc[depth] = xc + tc;
	if (sc > f->max_self)
		f->max_self = sc;
	if (diff && sb > f->max_self)
		f->max_self = sb;
	return rc ? -ENOMEM : 0;
}

static int
flame_build(const struct render_tree *t, size_t max_nodes, struct flame_out *f)
{
	bool diff = t->has_base;
	int64_t thr = INT64_MIN, *tot = NULL, *endb = NULL, *endc = NULL;
	size_t ties = SIZE_MAX;
	int64_t name_other = -1;
	struct frame *stack = NULL;
	size_t sp = 0, i, nname;
	uint32_t *name_of = NULL;
	int rc = -ENOMEM;

	memset(f, 0, sizeof(*f));
	if (t->n == 0)
		return 0;
	/* The threshold keeping at most max_nodes nodes (and the "other" ones). */
	if (t->n - 1 > max_nodes && max_nodes > 0) {
		if ((tot = malloc((t->n - 1) * sizeof(*tot))) == NULL)
			goto out;
		for (i = 1; i < t->n; i++)
			tot[i - 1] = diff && t->base[i] > t->cur[i] ? t->base[i] : t->cur[i];
		if ((thr = kth_largest(tot, t->n - 1, max_nodes - 1)) < 1)
			thr = 1;
		/* Nodes equal to the threshold fill what the larger ones leave. */
		ties = max_nodes;
		for (i = 0; i < t->n - 1 && ties > 0; i++)
			if (tot[i] > thr)
				ties--;
	}
	/*
	 * Names as used: name ids of the tree to indexes of names[]. A tree cut
	 * to its node limit has more names than nodes (frames summed into one
	 * keep their names interned): sized by the names.
	 */
	nname = intern_count(t->names);
	if (nname < t->n)
		nname = t->n;
	if ((name_of = malloc(nname * sizeof(*name_of))) == NULL)
		goto out;
	for (i = 0; i < nname; i++)
		name_of[i] = UINT32_MAX;
	if ((f->names = malloc(sizeof(*f->names))) == NULL)
		goto out;
	if ((f->names[0] = strdup("total")) == NULL)
		goto out;
	f->nnames = 1;
	if ((stack = malloc((2 * t->n + 2) * sizeof(*stack))) == NULL ||
	    (endb = calloc(t->n + 1, sizeof(*endb))) == NULL ||
	    (endc = calloc(t->n + 1, sizeof(*endc))) == NULL)
		goto out;
	stack[sp++] = (struct frame){ .node = 0 };
	while (sp) {
		struct frame fr = stack[--sp];
		int64_t name, tb, sb, tc, sc, xb, xc, ob = 0, oc = 0;
		uint32_t k, kb, ke;
		size_t top;

		if (fr.node == UINT32_MAX) {
			if (name_other < 0) {
				char **nn = realloc(f->names, (f->nnames + 1) * sizeof(*nn));

				if (nn == NULL)
					goto out;
				f->names = nn;
				if ((f->names[f->nnames] = strdup("other")) == NULL)
					goto out;
				name_other = (int64_t)f->nnames++;
			}
			if (level_push(f, fr.depth, diff, endb, endc, fr.xb, fr.ob, fr.ob,
			    fr.xc, fr.oc, fr.oc, name_other) < 0)
				goto out;
			continue;
		}
		tb = diff ? t->base[fr.node] : 0;
		sb = diff ? t->base_self[fr.node] : 0;
		tc = t->cur[fr.node];
		sc = t->cur_self[fr.node];
		if (fr.node == 0)
			name = 0;
		else {
			uint32_t nid = t->name[fr.node];

			if (name_of[nid] == UINT32_MAX) {
				char **nn = realloc(f->names, (f->nnames + 1) * sizeof(*nn));

				if (nn == NULL)
					goto out;
				f->names = nn;
				if ((f->names[f->nnames] = strdup(render_tree_name(t, fr.node))) == NULL)
					goto out;
				name_of[nid] = (uint32_t)f->nnames++;
			}
			name = name_of[nid];
		}
		if (level_push(f, fr.depth, diff, endb, endc, fr.xb, tb, sb, fr.xc, tc, sc,
		    name) < 0)
			goto out;
		/* Children pushed in reverse so the first is popped first. */
		kb = t->kid_start[fr.node];
		ke = t->kid_start[fr.node + 1];
		/* Children from the node's start, left to right, then "other"; self last. */
		xb = fr.xb;
		xc = fr.xc;
		top = sp;
		for (k = kb; k < ke; k++) {
			uint32_t c = t->kids[k];
			int64_t v = diff && t->base[c] > t->cur[c] ? t->base[c] : t->cur[c];

			if (v < thr || (v == thr && ties == 0)) {
				ob += diff ? t->base[c] : 0;
				oc += t->cur[c];
				continue;
			}
			if (v == thr && ties != SIZE_MAX)
				ties--;
			stack[sp++] = (struct frame){ .node = c, .depth = fr.depth + 1, .xb = xb,
			    .xc = xc };
			xb += diff ? t->base[c] : 0;
			xc += t->cur[c];
		}
		if (ob || oc)
			stack[sp++] = (struct frame){ .node = UINT32_MAX, .depth = fr.depth + 1,
			    .xb = xb, .xc = xc, .ob = ob, .oc = oc };
		/* reverse what this node pushed */
		for (i = 0; i < (sp - top) / 2; i++) {
			struct frame tmp = stack[top + i];

			stack[top + i] = stack[sp - 1 - i];
			stack[sp - 1 - i] = tmp;
		}
	}
	rc = 0;
out:
	free(tot);
	free(name_of);
	free(stack);
	free(endb);
	free(endc);
	if (rc < 0)
		flame_out_free(f);
	return rc;
}

/* --- the label methods: series × their profile types ----------------------- */

#define SELECTORS_MAX	64

/* The profile types of each store type seen, looked up once per request. */
struct type_cache {
	const char	*type[32];
	struct ptype	 pt[32][PTYPE_MAX];
	size_t		 n[32];
	size_t		 ntypes;
};

static const struct ptype *
type_cache_get(struct type_cache *tc, const struct reader *rd, const char *type,
    int64_t from, int64_t to, struct cancel *cancel, size_t *n)
{
	size_t i;

	for (i = 0; i < tc->ntypes; i++)
		if (strcmp(tc->type[i], type) == 0) {
			*n = tc->n[i];
			return tc->pt[i];
		}
	if (tc->ntypes == 32 || ptypes_of(rd, type, from, to, cancel, tc->pt[tc->ntypes],
	    &tc->n[tc->ntypes]) < 0) {
		*n = 0;
		return NULL;
	}
	tc->type[tc->ntypes] = type;
	*n = tc->n[tc->ntypes];
	return tc->pt[tc->ntypes++];
}

/*
 * The selectors of a label request, parsed; "" for none. -EINVAL after
 * replying. Their regexes together hold at most MATCHERS_RE_MEM_MAX of the
 * budget, as one selector's do.
 */
static int
selectors_parse(struct http_req *r, char **sels, size_t nsels, struct matchers *out, size_t *n)
{
	struct buf err = { 0 };
	size_t i, mem = 0;
	int rc;

	*n = 0;
	if (nsels > SELECTORS_MAX) {
		http_reply_error(r, 400, "more than %d matchers", SELECTORS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < nsels; i++) {
		if ((rc = matchers_parse_prom(sels[i], &out[i], &err)) < 0) {
			if (rc == -ENOMEM)
				http_add_header(r, "Retry-After", "1");
			http_reply_error(r, rc == -ENOMEM ? 503 : 400, "bad selector \"%.200s\": %s",
			    sels[i], err.data ? err.data : "");
			buf_free(&err);
			goto fail;
		}
		(*n)++;
		if ((mem += matchers_re_mem(&out[i])) > MATCHERS_RE_MEM_MAX) {
			http_reply_error(r, 400, "the selectors' regular expressions would take more "
			    "than %zu MiB together (at selector %zu): use fewer or simpler ones",
			    (size_t)MATCHERS_RE_MEM_MAX >> 20, i + 1);
			goto fail;
		}
	}
	return 0;
fail:
	while (*n > 0)
		matchers_clear(&out[--*n]);
	return -EINVAL;
}

/* Called per (series, profile type) that some selector selects. */
typedef int (*select_fn)(void *arg, const struct series *s, const struct ptype *pt);

static int
select_each(struct http_req *r, const struct matchers *ms, size_t nms, int64_t from, int64_t to,
    select_fn fn, void *arg)
{
	const struct reader *rd = r->srv->rd;
	struct type_cache *tc;
	const struct series **all;
	size_t nall, i, j, k, npt;
	int rc;

	if ((tc = calloc(1, sizeof(*tc))) == NULL)
		return -ENOMEM;
	if ((rc = reader_series(rd, &all, &nall)) < 0) {
		free(tc);
		return rc;
	}
	for (i = 0; i < nall && rc == 0; i++) {
		const struct ptype *pt;

		if ((from != INT64_MIN || to != INT64_MAX) &&
		    !reader_has_data(rd, all[i]->id, from, to))
			continue;
		pt = type_cache_get(tc, rd, all[i]->type, from, to, &r->cancel, &npt);
		for (j = 0; j < npt && rc == 0; j++) {
			/* A selector's regexes may take a while on long values: look between them. */
			if ((rc = cancel_check(&r->cancel)) < 0)
				break;
			for (k = 0; k < nms; k++)
				if (series_matches(&ms[k], all[i], &pt[j]) ||
				    (rc = cancel_check(&r->cancel)) < 0)
					break;
			if (rc == 0 && (nms == 0 || k < nms))
				rc = fn(arg, all[i], &pt[j]);
		}
	}
	free(all);
	free(tc);
	return rc;
}

/* A sorted set of strings (names, values). */
struct strset {
	char	**v;
	size_t	  n, cap;
};

static int
strset_add(struct strset *s, const char *x)
{
	size_t lo = 0, hi = s->n, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if ((c = strcmp(s->v[mid], x)) == 0)
			return 0;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	memmove(&s->v[lo + 1], &s->v[lo], (s->n - lo) * sizeof(*s->v));
	if ((s->v[lo] = strdup(x)) == NULL) {
		memmove(&s->v[lo], &s->v[lo + 1], (s->n - lo) * sizeof(*s->v));
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

static void
strset_free(struct strset *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* --- ProfileTypes ---------------------------------------------------------- */

struct pt_acc {
	struct strset	 ids;
	struct ptype	*pts;
	size_t		 n, cap;
};

static int
pt_collect(void *arg, const struct series *s, const struct ptype *pt)
{
	struct pt_acc *a = arg;
	size_t before = a->ids.n;
	int rc;

	(void)s;
	if ((rc = strset_add(&a->ids, pt->id)) < 0 || a->ids.n == before)
		return rc;
	a->pts = xgrow(a->pts, &a->cap, a->n + 1, sizeof(*a->pts));
	a->pts[a->n++] = *pt;
	return 0;
}

static int
pt_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ptype *)a)->id, ((const struct ptype *)b)->id);
}

static void
m_profile_types(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__ProfileTypesRequest *q = (Querier__V1__ProfileTypesRequest *)req;
	Querier__V1__ProfileTypesResponse resp = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
	struct pt_acc a = { 0 };
	struct buf err = { 0 };
	int64_t from, to;
	size_t i;
	int rc;

	if (range_of(q->start, q->end, &from, &to, &err) < 0) {
		http_reply_error(r, 400, "%s", http_why(&err, "end is not after start"));
		buf_free(&err);
		return;
	}
	if ((rc = select_each(r, NULL, 0, from, to, pt_collect, &a)) < 0) {
		http_reply_store_error(r, rc, "cannot list the profile types", NULL);
		goto out;
	}
	if (a.n)
		qsort(a.pts, a.n, sizeof(*a.pts), pt_cmp);
	resp.profile_types = xcalloc(a.n ? a.n : 1, sizeof(*resp.profile_types));
	for (i = 0; i < a.n; i++) {
		Types__V1__ProfileType *t = xcalloc(1, sizeof(*t));

		types__v1__profile_type__init(t);
		t->id = a.pts[i].id;
		t->name = a.pts[i].name;
		t->sample_type = a.pts[i].sample_type;
		t->sample_unit = a.pts[i].sample_unit;
		t->period_type = a.pts[i].period_type;
		t->period_unit = a.pts[i].period_unit;
		resp.profile_types[resp.n_profile_types++] = t;
	}
	connect_reply(r, &resp.base);
	for (i = 0; i < resp.n_profile_types; i++)
		free(resp.profile_types[i]);
	free(resp.profile_types);
out:
	strset_free(&a.ids);
	free(a.pts);
	buf_free(&err);
}

/* --- LabelNames, LabelValues, Series -------------------------------------- */

struct names_acc {
	struct strset	 set;
	const char	*name;		/* LabelValues: whose values */
};

static int
names_collect(void *arg, const struct series *s, const struct ptype *pt)
{
	struct names_acc *a = arg;
	size_t i;
	int rc = 0;

	(void)pt;
	rc = strset_add(&a->set, "service_name");
	if (rc == 0)
		rc = strset_add(&a->set, "__name__");
	if (rc == 0)
		rc = strset_add(&a->set, "__profile_type__");
	for (i = 0; i < s->ls.n && rc == 0; i++)
		rc = strset_add(&a->set, s->ls.pairs[i].key);
	return rc;
}

/* The value series s shows for label name, NULL if it has none. */
static const char *
label_value(const struct series *s, const struct ptype *pt, const char *name)
{
	size_t i;

	for (i = 0; i < s->ls.n; i++)
		if (strcmp(s->ls.pairs[i].key, name) == 0)
			return s->ls.pairs[i].value;
	if (strcmp(name, "service_name") == 0)
		return s->service;
	if (strcmp(name, "__name__") == 0)
		return pt->name;
	if (strcmp(name, "__profile_type__") == 0)
		return pt->id;
	return NULL;
}

static int
values_collect(void *arg, const struct series *s, const struct ptype *pt)
{
	struct names_acc *a = arg;
	const char *v = label_value(s, pt, a->name);

	return v && v[0] ? strset_add(&a->set, v) : 0;
}

static void
reply_names(struct http_req *r, const struct strset *set, bool values)
{
	if (values) {
		Types__V1__LabelValuesResponse resp = TYPES__V1__LABEL_VALUES_RESPONSE__INIT;

		resp.names = set->v;
		resp.n_names = set->n;
		connect_reply(r, &resp.base);
	} else {
		Types__V1__LabelNamesResponse resp = TYPES__V1__LABEL_NAMES_RESPONSE__INIT;

		resp.names = set->v;
		resp.n_names = set->n;
		connect_reply(r, &resp.base);
	}
}

static void
label_method(struct http_req *r, char **sels, size_t nsels, int64_t start, int64_t end,
    const char *name, select_fn fn)
{
	struct matchers *ms;
	struct names_acc a = { .name = name };
	struct buf err = { 0 };
	int64_t from, to;
	size_t n = 0, i;
	int rc;

	if (range_of(start, end, &from, &to, &err) < 0) {
		http_reply_error(r, 400, "%s", http_why(&err, "end is not after start"));
		buf_free(&err);
		return;
	}
	if ((ms = calloc(SELECTORS_MAX, sizeof(*ms))) == NULL) {
		http_reply_error(r, 500, "out of memory");
		return;
	}
	if (selectors_parse(r, sels, nsels, ms, &n) == 0) {
		if ((rc = select_each(r, ms, n, from, to, fn, &a)) < 0)
			http_reply_store_error(r, rc, "cannot list the labels", NULL);
		else
			reply_names(r, &a.set, name != NULL);
	}
	for (i = 0; i < n; i++)
		matchers_clear(&ms[i]);
	free(ms);
	strset_free(&a.set);
}

static void
m_label_names(struct http_req *r, ProtobufCMessage *req)
{
	Types__V1__LabelNamesRequest *q = (Types__V1__LabelNamesRequest *)req;

	label_method(r, q->matchers, q->n_matchers, q->start, q->end, NULL, names_collect);
}

static void
m_label_values(struct http_req *r, ProtobufCMessage *req)
{
	Types__V1__LabelValuesRequest *q = (Types__V1__LabelValuesRequest *)req;

	if (q->name == NULL || q->name[0] == '\0') {
		http_reply_error(r, 400, "name is required (the label whose values to list)");
		return;
	}
	label_method(r, q->matchers, q->n_matchers, q->start, q->end, q->name, values_collect);
}

struct series_acc {
	struct strset	 seen;		/* label sets, as text */
	char		**names;	/* label_names, or all */
	size_t		  nnames;
	Types__V1__Labels **sets;
	size_t		  n, cap;
};

static int
series_add_pair(Types__V1__Labels *l, const char *k, const char *v)
{
	Types__V1__LabelPair *p = calloc(1, sizeof(*p));
	Types__V1__LabelPair **n = realloc(l->labels, (l->n_labels + 1) * sizeof(*n));

	if (n)
		l->labels = n;
	if (p == NULL || n == NULL) {
		free(p);
		return -ENOMEM;
	}
	types__v1__label_pair__init(p);
	p->name = strdup(k);
	p->value = strdup(v);
	l->labels[l->n_labels++] = p;
	return p->name && p->value ? 0 : -ENOMEM;
}

static bool
wanted(const struct series_acc *a, const char *k)
{
	size_t i;

	if (a->nnames == 0)
		return true;
	for (i = 0; i < a->nnames; i++)
		if (strcmp(a->names[i], k) == 0)
			return true;
	return false;
}

static int
series_collect(void *arg, const struct series *s, const struct ptype *pt)
{
	struct series_acc *a = arg;
	Types__V1__Labels *l;
	struct buf key = { 0 };
	size_t before = a->seen.n, i;
	int rc = 0;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return -ENOMEM;
	types__v1__labels__init(l);
	if (wanted(a, "__name__"))
		rc |= series_add_pair(l, "__name__", pt->name);
	if (wanted(a, "__profile_type__"))
		rc |= series_add_pair(l, "__profile_type__", pt->id);
	if (wanted(a, "service_name") && label_value(s, pt, "service_name") == s->service)
		rc |= series_add_pair(l, "service_name", s->service);
	for (i = 0; i < s->ls.n; i++)
		if (wanted(a, s->ls.pairs[i].key))
			rc |= series_add_pair(l, s->ls.pairs[i].key, s->ls.pairs[i].value);
	for (i = 0; i < l->n_labels; i++)
		buf_printf(&key, "%s\x1f%s\x1e", l->labels[i]->name, l->labels[i]->value);
	buf_reserve(&key, 0);
	if (rc == 0 && (rc = buf_error(&key)) == 0)
		rc = strset_add(&a->seen, key.data);
	buf_free(&key);
	if (rc < 0 || a->seen.n == before) {
		protobuf_c_message_free_unpacked(&l->base, NULL);
		return rc < 0 ? -ENOMEM : 0;
	}
	a->sets = xgrow(a->sets, &a->cap, a->n + 1, sizeof(*a->sets));
	a->sets[a->n++] = l;
	return 0;
}

static void
m_series(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__SeriesRequest *q = (Querier__V1__SeriesRequest *)req;
	Querier__V1__SeriesResponse resp = QUERIER__V1__SERIES_RESPONSE__INIT;
	struct series_acc a = { .names = q->label_names, .nnames = q->n_label_names };
	struct matchers *ms;
	struct buf err = { 0 };
	int64_t from, to;
	size_t n = 0, i;
	int rc;

	if (range_of(q->start, q->end, &from, &to, &err) < 0) {
		http_reply_error(r, 400, "%s", http_why(&err, "end is not after start"));
		buf_free(&err);
		return;
	}
	if ((ms = calloc(SELECTORS_MAX, sizeof(*ms))) == NULL) {
		http_reply_error(r, 500, "out of memory");
		return;
	}
	if (selectors_parse(r, q->matchers, q->n_matchers, ms, &n) == 0) {
		if ((rc = select_each(r, ms, n, from, to, series_collect, &a)) < 0)
			http_reply_store_error(r, rc, "cannot list the series", NULL);
		else {
			resp.labels_set = a.sets;
			resp.n_labels_set = a.n;
			connect_reply(r, &resp.base);
		}
	}
	for (i = 0; i < n; i++)
		matchers_clear(&ms[i]);
	free(ms);
	for (i = 0; i < a.n; i++)
		protobuf_c_message_free_unpacked(&a.sets[i]->base, NULL);
	free(a.sets);
	strset_free(&a.seen);
}

/* --- merges ---------------------------------------------------------------- */

/*
 * A merge request's common part: parse, merge (need: as selection_merge()).
 * On failure it has replied and returns -1; res is filled either way (free it).
 */
static int
merge_request_spans(struct http_req *r, const char *ptype, const char *selector,
    int64_t start, int64_t end, const struct span_sel *spans, enum merge_need need,
    struct query_result *res, int *ty)
{
	struct selection sel;
	struct buf err = { 0 };
	int64_t from, to;
	int rc;

	memset(res, 0, sizeof(*res));
	*ty = -1;
	if ((rc = range_of(start, end, &from, &to, &err)) < 0 ||
	    (rc = selection_parse(ptype, selector, &sel, &err)) < 0) {
		if (rc == -ENOMEM)
			http_add_header(r, "Retry-After", "1");
		http_reply_error(r, rc == -ENOMEM ? 503 : 400, "%s",
		    err.data ? err.data : "bad request");
		buf_free(&err);
		return -1;
	}
	sel.spans = spans;
	rc = selection_merge(r, &sel, from, to, need, res, ty);
	selection_free(&sel);
	if (rc == -ENOTSUP) {
		http_reply_error(r, 501, "span profiles are not served by this reader");
		return -1;
	}
	if (rc < 0) {
		http_reply_store_error(r, rc, "cannot merge", NULL);
		return -1;
	}
	return 0;
}

static int
merge_request(struct http_req *r, const char *ptype, const char *selector, int64_t start,
    int64_t end, enum merge_need need, struct query_result *res, int *ty)
{
	return merge_request_spans(r, ptype, selector, start, end, NULL, need, res, ty);
}

static size_t
nodes_of(int64_t max_nodes)
{
	if (max_nodes <= 0)
		return FLAME_DEFAULT_NODES;
	return max_nodes > (int64_t)FLAME_MAX_NODES ? FLAME_MAX_NODES : (size_t)max_nodes;
}

/* Fill a FlameGraph or FlameGraphDiff's names and levels from f (borrowed). */
static Querier__V1__Level **
levels_of(const struct flame_out *f)
{
	Querier__V1__Level **lv = xcalloc(f->nlevels ? f->nlevels : 1, sizeof(*lv));
	size_t i;

	for (i = 0; i < f->nlevels; i++) {
		lv[i] = xcalloc(1, sizeof(**lv));
		querier__v1__level__init(lv[i]);
		lv[i]->values = f->levels[i].v;
		lv[i]->n_values = f->levels[i].n;
	}
	return lv;
}

static void
levels_free(Querier__V1__Level **lv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(lv[i]);
	free(lv);
}

/*
 * The merge of a selection as one pprof profile of the selected sample type
 * into body (empty when nothing was selected, as Pyroscope answers). On
 * failure it has replied and returns -1.
 */
static int
merged_pprof(struct http_req *r, const char *ptype, const char *selector, int64_t start,
    int64_t end, struct buf *body)
{
	struct query_result res;
	size_t keep;
	int ty, rc = 0;

	if (merge_request(r, ptype, selector, start, end, NEED_MERGED, &res, &ty) < 0) {
		rc = -1;
		goto out;
	}
	if (ty < 0)
		goto out;
	keep = (size_t)ty;
	profile_keep_types(res.merged, &keep, 1);
	if ((rc = profile_encode(res.merged, false, body)) < 0) {
		http_reply_error(r, 500, "cannot encode the profile: %s", strerror(-rc));
		rc = -1;
	}
out:
	query_result_free(&res);
	return rc;
}

static size_t
varint_len(uint64_t v)
{
	unsigned char tmp[VARINT_MAX];

	return varint_put(tmp, v);
}

/* Append a length-delimited field's key and length (protobuf wire type 2). */
static void
put_len_field(struct buf *b, unsigned field, size_t len)
{
	buf_add_varint(b, (uint64_t)field << 3 | 2);
	buf_add_varint(b, len);
}

/*
 * PROFILE_FORMAT_PPROF: the profile SelectMergeProfile answers, wrapped as
 * SelectMergeStacktracesResponse.pprof (5) -> PprofProfile.profile (1). The
 * wrapping is written by hand around the encoded profile so that it is not
 * decoded and encoded again.
 */
static void
stacktraces_pprof(struct http_req *r, const Querier__V1__SelectMergeStacktracesRequest *q)
{
	struct buf prof = { 0 }, body = { 0 };
	size_t inner;

	if (merged_pprof(r, q->profile_typeid, q->label_selector, q->start, q->end, &prof) < 0)
		goto out;
	if (buf_error(&prof) < 0) {
		http_reply_error(r, 500, "out of memory for the reply");
		goto out;
	}
	inner = 1 + varint_len(prof.len) + prof.len;
	put_len_field(&body, 5, inner);
	put_len_field(&body, 1, prof.len);
	buf_add(&body, prof.data ? prof.data : "", prof.len);
	if (buf_error(&body) < 0) {
		http_reply_error(r, 500, "out of memory for the reply");
		goto out;
	}
	connect_reply_packed(r, &querier__v1__select_merge_stacktraces_response__descriptor,
	    &body);
out:
	buf_free(&prof);
	buf_free(&body);
}

/*
 * Sample type ty of a merge as Pyroscope's serialized tree (render/pytree.c)
 * of at most max_nodes nodes: -1 once a 503 is the reply.
 */
static int
tree_fill(struct http_req *r, const struct query_result *res, int ty, int64_t max_nodes,
    struct render_tree *t, struct buf *tree)
{
	int rc;

	if (ty >= 0 && ((rc = render_tree_build(t, res->merged, (size_t)ty, NULL, 0)) < 0 ||
	    (rc = pytree_encode(t, nodes_of(max_nodes), tree)) < 0)) {
		http_reply_error(r, 503, "cannot build the tree: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/*
 * Sample type ty of a merge as a flame graph of at most max_nodes nodes, in
 * fg (its levels freed by the caller with levels_free()): -1 once a 503 is
 * the reply.
 */
static int
flame_fill(struct http_req *r, const struct query_result *res, int ty, int64_t max_nodes,
    struct render_tree *t, struct flame_out *f, Querier__V1__FlameGraph *fg)
{
	int rc;

	if (ty < 0)
		return 0;
	if ((rc = render_tree_build(t, res->merged, (size_t)ty, NULL, 0)) < 0 ||
	    (rc = flame_build(t, nodes_of(max_nodes), f)) < 0) {
		http_reply_error(r, 503, "cannot build the flame graph: %s", strerror(-rc));
		return -1;
	}
	fg->names = f->names;
	fg->n_names = f->nnames;
	fg->levels = levels_of(f);
	fg->n_levels = f->nlevels;
	fg->total = t->n ? t->cur[0] : 0;
	fg->max_self = f->max_self;
	return 0;
}

/*
 * PROFILE_FORMAT_TREE: Pyroscope's serialized tree (render/pytree.c) of the
 * same tree the flame graph draws, in SelectMergeStacktracesResponse.tree.
 */
static void
stacktraces_tree(struct http_req *r, const Querier__V1__SelectMergeStacktracesRequest *q)
{
	Querier__V1__SelectMergeStacktracesResponse resp =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	struct render_tree t = { 0 };
	struct query_result res;
	struct buf tree = { 0 };
	int ty;

	if (merge_request(r, q->profile_typeid, q->label_selector, q->start, q->end, NEED_MERGED,
	    &res, &ty) < 0)
		goto out;
	if (tree_fill(r, &res, ty, q->max_nodes, &t, &tree) < 0)
		goto out;
	resp.tree.data = (uint8_t *)tree.data;
	resp.tree.len = tree.len;
	connect_reply(r, &resp.base);
out:
	buf_free(&tree);
	render_tree_free(&t);
	query_result_free(&res);
}

static void
m_select_merge_stacktraces(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__SelectMergeStacktracesRequest *q =
	    (Querier__V1__SelectMergeStacktracesRequest *)req;
	Querier__V1__SelectMergeStacktracesResponse resp =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	struct render_tree t = { 0 };
	struct flame_out f = { 0 };
	struct query_result res;
	int ty;

	switch (q->format) {
	case QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_UNSPECIFIED:
	case QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_FLAMEGRAPH:
		break;
	case QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE:
		stacktraces_tree(r, q);
		return;
	case QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF:
		stacktraces_pprof(r, q);
		return;
	default:
		http_reply_error(r, 501, "format %d is not served: FLAMEGRAPH, TREE and PPROF are",
		    q->format);
		return;
	}
	if (merge_request(r, q->profile_typeid, q->label_selector, q->start, q->end, NEED_MERGED,
	    &res, &ty) < 0)
		goto out;
	if (flame_fill(r, &res, ty, q->max_nodes, &t, &f, &fg) < 0)
		goto out;
	resp.flamegraph = &fg;
	connect_reply(r, &resp.base);
	levels_free(fg.levels, fg.n_levels);
out:
	flame_out_free(&f);
	render_tree_free(&t);
	query_result_free(&res);
}

/*
 * Pyroscope's span profiles: the flame graph of the samples tagged with the
 * given span ids (16 hex digits each, as Tempo sends them; 32 hex digits
 * name a trace instead), over the range, at most max_nodes nodes. Span ids
 * are per sample (store/span.c), so this reads only the profiles holding
 * them.
 */
static void
m_select_merge_span_profile(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__SelectMergeSpanProfileRequest *q =
	    (Querier__V1__SelectMergeSpanProfileRequest *)req;
	Querier__V1__SelectMergeSpanProfileResponse resp =
	    QUERIER__V1__SELECT_MERGE_SPAN_PROFILE_RESPONSE__INIT;
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	struct render_tree t = { 0 };
	struct flame_out f = { 0 };
	struct query_result res = { 0 };
	struct span_sel sel = { 0 };
	struct buf tree = { 0 };
	uint64_t *ids = NULL;
	unsigned char (*traces)[16] = NULL;
	size_t i;
	int ty;

	if (q->format != QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_UNSPECIFIED &&
	    q->format != QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_FLAMEGRAPH &&
	    q->format != QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE) {
		http_reply_error(r, 501, "format %d is not served: FLAMEGRAPH and TREE are",
		    q->format);
		return;
	}
	if (q->n_span_selector == 0) {
		http_reply_error(r, 400, "span_selector is required: one or more span ids "
		    "(16 hex digits)");
		return;
	}
	if (q->n_span_selector > SPAN_SEL_MAX) {
		http_reply_error(r, 400, "span_selector names %zu spans, at most %d are allowed",
		    q->n_span_selector, SPAN_SEL_MAX);
		return;
	}
	ids = xcalloc(q->n_span_selector, sizeof(*ids));
	traces = xcalloc(q->n_span_selector, sizeof(*traces));
	for (i = 0; i < q->n_span_selector; i++) {
		const char *s = q->span_selector[i];

		if (strlen(s) == 32 && span_trace_parse(s, traces[sel.ntraces]) == 0)
			sel.ntraces++;
		else if (span_id_parse(s, &ids[sel.nids]) == 0)
			sel.nids++;
		else {
			http_reply_error(r, 400, "span_selector[%zu] \"%.64s\" is not a span id "
			    "(1 to 16 hex digits) nor a trace id (32 hex digits)", i, s);
			goto out;
		}
	}
	sel.ids = ids;
	sel.traces = (const unsigned char (*)[16])traces;
	if (merge_request_spans(r, q->profile_typeid, q->label_selector, q->start, q->end,
	    &sel, NEED_MERGED, &res, &ty) < 0)
		goto out;
	{
		/* The message has no field for it: what the range's span data lacks (store.h). */
		char v[24];

		snprintf(v, sizeof(v), "%llu", (unsigned long long)res.spans.cut);
		http_add_header(r, "X-Profilefs-Spans-Cut", v);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)res.spans.refused);
		http_add_header(r, "X-Profilefs-Span-Ids-Refused", v);
	}
	if (q->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE) {
		if (tree_fill(r, &res, ty, q->max_nodes, &t, &tree) < 0)
			goto out;
		resp.tree.data = (uint8_t *)tree.data;
		resp.tree.len = tree.len;
		connect_reply(r, &resp.base);
		goto out;
	}
	if (flame_fill(r, &res, ty, q->max_nodes, &t, &f, &fg) < 0)
		goto out;
	resp.flamegraph = &fg;
	connect_reply(r, &resp.base);
	levels_free(fg.levels, fg.n_levels);
out:
	free(ids);
	free(traces);
	buf_free(&tree);
	flame_out_free(&f);
	render_tree_free(&t);
	query_result_free(&res);
}

static void
m_select_merge_profile(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__SelectMergeProfileRequest *q = (Querier__V1__SelectMergeProfileRequest *)req;
	struct buf body = { 0 };

	if (merged_pprof(r, q->profile_typeid, q->label_selector, q->start, q->end, &body) == 0)
		connect_reply_packed(r, &perftools__profiles__profile__descriptor, &body);
	buf_free(&body);
}

static void
m_diff(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__DiffRequest *q = (Querier__V1__DiffRequest *)req;
	Querier__V1__DiffResponse resp = QUERIER__V1__DIFF_RESPONSE__INIT;
	Querier__V1__FlameGraphDiff fg = QUERIER__V1__FLAME_GRAPH_DIFF__INIT;
	Querier__V1__SelectMergeStacktracesRequest *lq = q->left, *rq = q->right;
	struct query_result lres, rres;
	struct render_tree t = { 0 };
	struct flame_out f = { 0 };
	int lty = -1, rty = -1, rc;

	memset(&lres, 0, sizeof(lres));
	memset(&rres, 0, sizeof(rres));
	if (lq == NULL || rq == NULL) {
		http_reply_error(r, 400, "a diff needs both left and right");
		return;
	}
	if (merge_request(r, lq->profile_typeid, lq->label_selector, lq->start, lq->end,
	    NEED_MERGED, &lres, &lty) < 0 ||
	    merge_request(r, rq->profile_typeid, rq->label_selector, rq->start, rq->end,
	    NEED_MERGED, &rres, &rty) < 0)
		goto out;
	if (lty >= 0 || rty >= 0) {
		/* An empty side is an empty profile of the other's shape. */
		const struct profile *cur = rty >= 0 ? rres.merged : lres.merged;
		const struct profile *base = lty >= 0 ? lres.merged : rres.merged;
		size_t cty = (size_t)(rty >= 0 ? rty : lty), bty = (size_t)(lty >= 0 ? lty : rty);

		if ((rc = render_tree_build(&t, cur, cty, base, bty)) < 0) {
			http_reply_error(r, 503, "cannot build the diff: %s", strerror(-rc));
			goto out;
		}
		if (rty < 0)
			memset(t.cur, 0, t.n * sizeof(*t.cur)), memset(t.cur_self, 0,
			    t.n * sizeof(*t.cur_self));
		if (lty < 0)
			memset(t.base, 0, t.n * sizeof(*t.base)), memset(t.base_self, 0,
			    t.n * sizeof(*t.base_self));
		if ((rc = flame_build(&t, nodes_of(rq->max_nodes ? rq->max_nodes : lq->max_nodes),
		    &f)) < 0) {
			http_reply_error(r, 503, "cannot build the diff: %s", strerror(-rc));
			goto out;
		}
		fg.names = f.names;
		fg.n_names = f.nnames;
		fg.levels = levels_of(&f);
		fg.n_levels = f.nlevels;
		fg.leftticks = t.n ? t.base[0] : 0;
		fg.rightticks = t.n ? t.cur[0] : 0;
		fg.total = fg.leftticks + fg.rightticks;
		fg.max_self = f.max_self;
	}
	resp.flamegraph = &fg;
	connect_reply(r, &resp.base);
	levels_free(fg.levels, fg.n_levels);
out:
	flame_out_free(&f);
	render_tree_free(&t);
	query_result_free(&lres);
	query_result_free(&rres);
}

/* --- SelectSeries ---------------------------------------------------------- */

/* One group of series: its label text and per-step sums and profile counts. */
struct sgroup {
	char		*key;		/* "k\x1fv\x1e..." of the group_by labels */
	const struct series *first;
	double		*sum;
	uint64_t	*count;
	double		 total;
};

static int
sgroup_cmp_total(const void *a, const void *b)
{
	const struct sgroup *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int
sgroup_cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct sgroup *)a)->key, ((const struct sgroup *)b)->key);
}

/* A series of the answer and its group (SIZE_MAX: not known yet). */
struct series_group {
	uint64_t	 sid;
	size_t		 g;
};

static int
series_group_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct series_group *)a)->sid;
	uint64_t y = ((const struct series_group *)b)->sid;

	return x < y ? -1 : x > y;
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
m_select_series(struct http_req *r, ProtobufCMessage *req)
{
	Querier__V1__SelectSeriesRequest *q = (Querier__V1__SelectSeriesRequest *)req;
	Querier__V1__SelectSeriesResponse resp = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
	struct sgroup *g = NULL;
	struct query_result res;
	struct ptype pt;
	struct buf key = { 0 }, err = { 0 };
	struct series_group *sg = NULL;
	uint64_t *skip = NULL;
	size_t ng = 0, gcap = 0, nsteps, i, j, k, nsg = 0, nskip = 0;
	int64_t from, to, step_ns;
	bool avg;
	int ty;

	memset(&res, 0, sizeof(res));
	if (!(q->step > 0) || !isfinite(q->step) || q->step > 1e9) {
		http_reply_error(r, 400, "step must be a positive number of seconds");
		return;
	}
	if (q->start <= 0 || q->end <= q->start) {
		http_reply_error(r, 400, "start and end (ms) are required, end after start");
		return;
	}
	step_ns = (int64_t)(q->step * 1e9);
	if (step_ns < MS)
		step_ns = MS;
	/* Steps aligned to multiples of the step since the epoch, as Pyroscope's. */
	from = q->start * MS / step_ns * step_ns;
	to = q->end * MS;
	nsteps = (size_t)((to - from + step_ns - 1) / step_ns);
	if (nsteps > SERIES_MAX_POINTS) {
		http_reply_error(r, 400, "%zu steps of %g s: more than %d points; use a longer step",
		    nsteps, q->step, SERIES_MAX_POINTS);
		return;
	}
	if (q->n_group_by > LABELS_MAX) {
		http_reply_error(r, 400, "more than %d group_by labels", LABELS_MAX);
		return;
	}
	if (merge_request(r, q->profile_typeid, q->label_selector, q->start, q->end, NEED_TOTALS,
	    &res, &ty) < 0)
		goto out;
	(void)ptype_parse(q->profile_typeid, &pt, &err);
	avg = q->aggregation == TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE ||
	    profile_type_is_gauge(pt.sample_type);
	/* The ids left out of the merge, sorted; each series' group, found once. */
	if (ty >= 0 && res.nskipped) {
		skip = xcalloc(res.nskipped, sizeof(*skip));
		for (i = 0; i < res.nskipped; i++)
			skip[nskip++] = res.skipped[i].id;
		qsort(skip, nskip, sizeof(*skip), u64_cmp);
	}
	if (ty >= 0 && res.nseries) {
		sg = xcalloc(res.nseries, sizeof(*sg));
		for (i = 0; i < res.nseries; i++)
			sg[nsg++] = (struct series_group){ .sid = res.series[i], .g = SIZE_MAX };
		qsort(sg, nsg, sizeof(*sg), series_group_cmp);
	}
	for (i = 0; ty >= 0 && i < res.nrefs; i++) {
		const struct store_ref *ref = &res.refs[i];
		struct series_group *sgi, want = { .sid = ref->series };
		const struct series *s;
		size_t at = res.totals_at ? res.totals_at[i] : SIZE_MAX, step;

		if (at == SIZE_MAX || ref->time < from || ref->time >= to)
			continue;
		if (ref->id != 0 && nskip &&
		    bsearch(&ref->id, skip, nskip, sizeof(*skip), u64_cmp) != NULL)
			continue;	/* left out of the merge: out of the series too */
		sgi = nsg ? bsearch(&want, sg, nsg, sizeof(*sg), series_group_cmp) : NULL;
		if (sgi && sgi->g != SIZE_MAX) {
			j = sgi->g;
			goto add;
		}
		if ((s = reader_series_get(r->srv->rd, ref->series)) == NULL)
			continue;
		buf_reset(&key);
		buf_reserve(&key, 0);
		for (k = 0; k < q->n_group_by; k++) {
			const char *v = label_value(s, &pt, q->group_by[k]);

			if (v)
				buf_printf(&key, "%s\x1f%s\x1e", q->group_by[k], v);
		}
		if (buf_error(&key) < 0)
			goto oom;
		for (j = 0; j < ng && strcmp(g[j].key, key.data) != 0; j++)
			;
		if (j == ng) {
			g = xgrow(g, &gcap, ng + 1, sizeof(*g));
			memset(&g[ng], 0, sizeof(g[ng]));
			g[ng].first = s;
			if ((g[ng].key = strdup(key.data)) == NULL ||
			    (g[ng].sum = calloc(nsteps, sizeof(double))) == NULL ||
			    (g[ng].count = calloc(nsteps, sizeof(uint64_t))) == NULL) {
				ng++;
				goto oom;
			}
			ng++;
		}
		if (sgi)
			sgi->g = j;
add:
		step = (size_t)((ref->time - from) / step_ns);
		g[j].sum[step] += (double)res.totals[at + (size_t)ty];
		g[j].count[step] += ref->summary ? ref->summary : 1;
	}
	for (j = 0; j < ng; j++) {
		g[j].total = 0;
		for (i = 0; i < nsteps; i++) {
			if (avg && g[j].count[i])
				g[j].sum[i] /= (double)g[j].count[i];
			g[j].total += g[j].sum[i];
		}
	}
	if (ng)
		qsort(g, ng, sizeof(*g), sgroup_cmp_total);
	if (q->limit > 0 && (size_t)q->limit < ng) {
		for (j = (size_t)q->limit; j < ng; j++) {
			free(g[j].key);
			free(g[j].sum);
			free(g[j].count);
		}
		ng = (size_t)q->limit;
	}
	if (ng)
		qsort(g, ng, sizeof(*g), sgroup_cmp_key);
	resp.series = xcalloc(ng ? ng : 1, sizeof(*resp.series));
	for (j = 0; j < ng; j++) {
		Types__V1__Series *s = xcalloc(1, sizeof(*s));
		size_t np = 0;

		types__v1__series__init(s);
		resp.series[resp.n_series++] = s;
		for (k = 0; k < q->n_group_by; k++) {
			const char *v = label_value(g[j].first, &pt, q->group_by[k]);

			if (v && series_add_pair((Types__V1__Labels *)(void *)s, q->group_by[k],
			    v) < 0)
				goto oom_reply;
		}
		for (i = 0; i < nsteps; i++)
			np += g[j].count[i] != 0;
		s->points = xcalloc(np ? np : 1, sizeof(*s->points));
		for (i = 0; i < nsteps; i++) {
			Types__V1__Point *p;

			if (g[j].count[i] == 0)
				continue;
			p = xcalloc(1, sizeof(*p));
			types__v1__point__init(p);
			p->value = g[j].sum[i];
			p->timestamp = (from + (int64_t)i * step_ns) / MS;
			s->points[s->n_points++] = p;
		}
	}
	connect_reply(r, &resp.base);
	goto free_resp;
oom_reply:
	http_reply_error(r, 503, "out of memory for the series");
free_resp:
	for (j = 0; j < resp.n_series; j++)
		protobuf_c_message_free_unpacked(&resp.series[j]->base, NULL);
	free(resp.series);
	goto out;
oom:
	http_reply_error(r, 503, "out of memory for the series");
out:
	for (j = 0; j < ng; j++) {
		free(g[j].key);
		free(g[j].sum);
		free(g[j].count);
	}
	free(g);
	free(sg);
	free(skip);
	buf_free(&key);
	buf_free(&err);
	query_result_free(&res);
}

/* --- dispatch -------------------------------------------------------------- */

typedef void (*method_fn)(struct http_req *r, ProtobufCMessage *req);
/* The end of the range a request reads (ns), for the reply cache. */
typedef int64_t (*upto_fn)(const ProtobufCMessage *req);

static int64_t
upto_ms(int64_t end)
{
	return end > 0 && end < INT64_MAX / MS ? end * MS : INT64_MAX;
}

static int64_t
upto_stacktraces(const ProtobufCMessage *req)
{
	return upto_ms(((const Querier__V1__SelectMergeStacktracesRequest *)req)->end);
}

static int64_t
upto_profile(const ProtobufCMessage *req)
{
	return upto_ms(((const Querier__V1__SelectMergeProfileRequest *)req)->end);
}

static int64_t
upto_series(const ProtobufCMessage *req)
{
	return upto_ms(((const Querier__V1__SelectSeriesRequest *)req)->end);
}

static int64_t
upto_diff(const ProtobufCMessage *req)
{
	const Querier__V1__DiffRequest *q = (const Querier__V1__DiffRequest *)req;
	int64_t l = q->left ? upto_ms(q->left->end) : INT64_MAX;
	int64_t r = q->right ? upto_ms(q->right->end) : INT64_MAX;

	return l > r ? l : r;
}

/* --- stats ---------------------------------------------------------------- */

/*
 * The time of the first (or last) profile listed in the UTC hour h, in ms;
 * the hour's start (end) when it lists none (it holds only windows past the
 * raw retention). Reads the hour's index entries, no profile.
 */
#define HOUR_NS		(INT64_C(3600000) * MS)
static int64_t
hour_edge_ms(const struct reader *rd, int64_t h, bool last, struct cancel *cancel)
{
	/* The store's times are int64 ns: the last hour may end past INT64_MAX. */
	int64_t from = h * HOUR_NS, to = h < INT64_MAX / HOUR_NS ? from + HOUR_NS : INT64_MAX;
	struct query q = { .from = from, .to = to, .cancel = cancel };
	struct query_result res;
	int64_t ms = last ? (to - 1) / MS : from / MS;

	memset(&res, 0, sizeof(res));
	if (reader_list(rd, &q, &res) == 0 && res.nrefs > 0)
		ms = res.refs[last ? res.nrefs - 1 : 0].time / MS;
	query_result_free(&res);
	return ms;
}

/*
 * GetProfileStats from the series index and each series' hours, which the
 * store keeps apart from the profiles: the oldest and newest hours holding
 * data, then their first and last profile from those two hours' index. As
 * Pyroscope answers, no data is data_ingested false with the oldest time
 * INT64_MAX and the newest INT64_MIN.
 */
static void
m_get_profile_stats(struct http_req *r, ProtobufCMessage *req)
{
	Types__V1__GetProfileStatsResponse resp = TYPES__V1__GET_PROFILE_STATS_RESPONSE__INIT;
	const struct reader *rd = r->srv->rd;
	const struct series **all = NULL;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	size_t nall = 0, i;
	int rc;

	(void)req;
	if ((rc = reader_series(rd, &all, &nall)) < 0) {
		http_reply_store_error(r, rc, "cannot list the series", NULL);
		return;
	}
	for (i = 0; i < nall; i++) {
		int64_t *hours = NULL;
		size_t nh = 0;

		if ((rc = reader_hours(rd, all[i]->id, &hours, &nh)) < 0) {
			free(all);
			http_reply_store_error(r, rc, "cannot read the hours of a series", NULL);
			return;
		}
		if (nh > 0) {
			lo = hours[0] < lo ? hours[0] : lo;
			hi = hours[nh - 1] > hi ? hours[nh - 1] : hi;
		}
		free(hours);
	}
	free(all);
	resp.data_ingested = lo <= hi;
	resp.oldest_profile_time = resp.data_ingested ? hour_edge_ms(rd, lo, false, &r->cancel) :
	    INT64_MAX;
	resp.newest_profile_time = resp.data_ingested ? hour_edge_ms(rd, hi, true, &r->cancel) :
	    INT64_MIN;
	connect_reply(r, &resp.base);
}

static const struct method {
	const char				*name;
	const ProtobufCMessageDescriptor	*req;
	method_fn				 fn;	/* NULL: 501 */
	upto_fn					 upto;	/* NULL: its replies are not cached */
	const ProtobufCMessageDescriptor	*resp;	/* with upto */
} methods[] = {
	{ "ProfileTypes", &querier__v1__profile_types_request__descriptor, m_profile_types,
	    NULL, NULL },
	{ "LabelNames", &types__v1__label_names_request__descriptor, m_label_names, NULL, NULL },
	{ "LabelValues", &types__v1__label_values_request__descriptor, m_label_values, NULL,
	    NULL },
	{ "Series", &querier__v1__series_request__descriptor, m_series, NULL, NULL },
	{ "SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
	    m_select_merge_stacktraces, upto_stacktraces,
	    &querier__v1__select_merge_stacktraces_response__descriptor },
	{ "SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor,
	    m_select_merge_profile, upto_profile, &perftools__profiles__profile__descriptor },
	{ "SelectSeries", &querier__v1__select_series_request__descriptor, m_select_series,
	    upto_series, &querier__v1__select_series_response__descriptor },
	{ "Diff", &querier__v1__diff_request__descriptor, m_diff, upto_diff,
	    &querier__v1__diff_response__descriptor },
	{ "SelectMergeSpanProfile", &querier__v1__select_merge_span_profile_request__descriptor,
	    m_select_merge_span_profile, NULL, NULL },
	{ "SelectHeatmap", NULL, NULL, NULL, NULL },
	{ "GetProfileStats", &types__v1__get_profile_stats_request__descriptor,
	    m_get_profile_stats, NULL, NULL },
	{ "AnalyzeQuery", NULL, NULL, NULL, NULL },
};

/*
 * Run a merge method through the reply cache: the key is the method and
 * the request re-encoded as protobuf, the value the reply in protobuf (so a
 * question asked in JSON and in protobuf is answered once, each reply in its
 * encoding); the generation is read before the work, so a profile stored
 * meanwhile makes the entry stale at once.
 */
static void
call_cached(struct http_req *r, const struct method *m, ProtobufCMessage *req)
{
	const struct reader *rd = r->srv->rd;
	struct buf key = { 0 }, body = { 0 }, cap = { 0 };
	size_t n = protobuf_c_message_get_packed_size(req), at;
	uint64_t gen;

	buf_adds(&key, m->name);
	buf_addc(&key, '\0');
	at = key.len;
	if (buf_reserve(&key, n + 1) < 0) {
		m->fn(r, req);
		goto out;
	}
	key.len = at + protobuf_c_message_pack(req, (uint8_t *)key.data + at);
	if (qcache_get(r->srv->qcache, rd, key.data, key.len, &body) == 0) {
		connect_reply_packed(r, m->resp, &body);
		goto out;
	}
	gen = reader_generation(rd);
	r->capture = &cap;
	m->fn(r, req);
	r->capture = NULL;
	if (r->captured && r->status == 200)
		qcache_put(r->srv->qcache, key.data, key.len, gen, m->upto(req), cap.data,
		    cap.len);
out:
	buf_free(&key);
	buf_free(&body);
	buf_free(&cap);
}

void
querier_handle(struct http_req *r)
{
	const char *name = r->path + strlen("/querier.v1.QuerierService/");
	ProtobufCMessage *req;
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].name, name) == 0)
			break;
	if (i == sizeof(methods) / sizeof(methods[0])) {
		http_reply_error(r, 404, "no method %.100s in querier.v1.QuerierService", name);
		return;
	}
	if (methods[i].fn == NULL) {
		http_reply_error(r, 501, "querier.v1.QuerierService/%s is not implemented by "
		    "profilefs", name);
		return;
	}
	if (connect_decode(r, methods[i].req, &req) < 0)
		return;
	if (methods[i].upto && r->srv->qcache)
		call_cached(r, &methods[i], req);
	else
		methods[i].fn(r, req);
	connect_free(req);
}
