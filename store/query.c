/*
 * query: range queries over the store. A merge sums each series' packs
 * (windows and raw profiles) by stack id, turns each series' sum into one
 * pprof profile and merges those: memory and time follow the distinct
 * stacks and the number of windows, not the number of profiles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

bool
query_match(const struct query *q, const struct series *s)
{
	if (q->service && strcmp(q->service, s->service) != 0)
		return false;
	if (q->type && strcmp(q->type, s->type) != 0)
		return false;
	if (q->sel && !labels_match(q->sel, &s->ls))
		return false;
	return q->match == NULL || matchers_match(q->match, s->service, &s->ls);
}

static int
add_series(struct query_result *res, uint64_t sid)
{
	uint64_t *n = realloc(res->series, (res->nseries + 1) * sizeof(*n));

	if (n == NULL)
		return -ENOMEM;
	res->series = n;
	res->series[res->nseries++] = sid;
	return 0;
}

static int
add_ref(struct query_result *res, const struct store_ref *r)
{
	struct store_ref *n;

	if ((res->nrefs & (res->nrefs - 1)) == 0) {
		n = realloc(res->refs, (res->nrefs ? res->nrefs * 2 : 1) * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		res->refs = n;
	}
	res->refs[res->nrefs++] = *r;
	return 0;
}

int
query_skip_add(struct query_result *res, uint64_t id, const char *reason)
{
	struct query_skip *n = realloc(res->skipped, (res->nskipped + 1) * sizeof(*n));

	if (n == NULL)
		return -ENOMEM;
	res->skipped = n;
	n = &res->skipped[res->nskipped++];
	n->id = id;
	snprintf(n->reason, sizeof(n->reason), "%s", reason);
	return 0;
}

int
store_ref_cmp(const void *a, const void *b)
{
	const struct store_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

struct match_arg {
	const struct query	*q;
	struct query_result	*res;
};

static int
match_cb(void *arg, const struct series *s)
{
	struct match_arg *a = arg;
	int rc;

	if ((rc = cancel_check(a->q->cancel)) < 0)
		return rc;
	return query_match(a->q, s) ? add_series(a->res, s->id) : 0;
}

/*
 * The ids of the series q selects into res->series, in index order. Only
 * the ids are taken under the index lock: the scans that follow may be long.
 */
static int
match_series(struct store *st, const struct query *q, struct query_result *res)
{
	struct match_arg a = { .q = q, .res = res };

	return store_series_each(st, q->service, q->type, match_cb, &a);
}

static int
list_cb(void *arg, const struct store_ref *ref, const void *data, size_t len)
{
	(void)data;
	(void)len;
	return add_ref(arg, ref);
}

int
query_list(struct store *st, const struct query *q, struct query_result *res)
{
	size_t i;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = match_series(st, q, res);
	for (i = 0; i < res->nseries && rc == 0; i++)
		if ((rc = cancel_check(q->cancel)) == 0)
			rc = store_scan(st, res->series[i], q->from, q->to, false, list_cb, res);
	if (rc == 0) {
		if (res->nrefs)	/* refs is NULL when empty: not for qsort */
			qsort(res->refs, res->nrefs, sizeof(*res->refs), store_ref_cmp);
		if (q->limit && res->nrefs > q->limit)
			res->nrefs = q->limit;
	}
	return rc;
}

/*
 * A merge reads each series as a sum of packs (pre-aggregated windows plus
 * raw profiles at the edges, store_read_series()), so its cost follows the
 * number of windows, not of profiles. Within a series the sums are by group
 * of mergeable profiles (signature); across series the groups with equal
 * signatures are one group, and the largest (by profiles) is merged. Gauges
 * (inuse_*, goroutines) are averaged over the snapshots of each series, then
 * summed across series, so `all` over three pods is the fleet's mean
 * footprint, not one pod's.
 */
struct member {
	size_t		 series;	/* index in res->series */
	size_t		 g;		/* group in that series' agg */
};

struct group {
	struct buf	 sig;
	uint64_t	 hash;
	uint64_t	 count;
	struct member	*mem;
	size_t		 nmem;
};

struct pmeta {
	uint64_t	 id, hash;
	bool		 bad;
	bool		 summary;	/* a window past retention: no id to list */
};

struct merge_listing {
	struct query_result	*res;
	struct group		*groups;
	size_t			 ngroups;
	struct buf		 metas;		/* struct pmeta per listed profile */
	struct buf		 totals;	/* int64_t per sample type per profile */
	struct buf		 at;		/* size_t per ref: offset in totals */
};

static int
meta_cb(void *arg, const struct store_ref *ref, const struct store_meta *m)
{
	struct merge_listing *c = arg;
	struct pmeta pm = { .id = ref->id, .hash = m->sighash, .summary = ref->summary > 0 };
	size_t at = m->ntypes ? c->totals.len / sizeof(int64_t) : SIZE_MAX;
	int rc;

	if ((rc = add_ref(c->res, ref)) < 0 ||
	    (rc = buf_add(&c->totals, m->totals, m->ntypes * sizeof(int64_t))) < 0 ||
	    (rc = buf_add(&c->at, &at, sizeof(at))) < 0)
		return rc;
	return buf_add(&c->metas, &pm, sizeof(pm));
}

static int
bad_cb(void *arg, const struct store_ref *ref, const char *why)
{
	struct merge_listing *c = arg;
	struct pmeta *pm = (struct pmeta *)c->metas.data;
	size_t i, n = c->metas.len / sizeof(*pm);

	for (i = n; i-- > 0;)
		if (pm[i].id == ref->id) {
			pm[i].bad = true;
			break;
		}
	return query_skip_add(c->res, ref->id, why);
}

/* File the groups of series i's agg under the store-wide groups. */
static int
file_groups(struct store *st, struct merge_listing *c, size_t i, const struct agg *a)
{
	const struct symtab *t;
	struct buf sig = { 0 };
	struct group *gr;
	struct member *nm;
	size_t g, k;
	int rc = 0;

	if (agg_ngroups(a) == 0)
		return 0;
	if ((t = store_symtab_acquire(st, c->res->series[i], &rc)) == NULL)
		return rc;
	for (g = 0; g < agg_ngroups(a) && rc == 0; g++) {
		buf_reset(&sig);
		if ((rc = agg_signature(a, t, g, &sig)) < 0)
			break;
		for (k = 0; k < c->ngroups; k++)
			if (c->groups[k].sig.len == sig.len &&
			    memcmp(c->groups[k].sig.data, sig.data, sig.len) == 0)
				break;
		if (k == c->ngroups) {
			if ((gr = realloc(c->groups, (k + 1) * sizeof(*gr))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			c->groups = gr;
			memset(&gr[k], 0, sizeof(gr[k]));
			c->ngroups++;
			if ((rc = buf_add(&gr[k].sig, sig.data, sig.len)) < 0)
				break;
			gr[k].hash = store_sighash(sig.data, sig.len);
		}
		gr = &c->groups[k];
		if ((nm = realloc(gr->mem, (gr->nmem + 1) * sizeof(*nm))) == NULL) {
			rc = -ENOMEM;
			break;
		}
		gr->mem = nm;
		gr->mem[gr->nmem].series = i;
		gr->mem[gr->nmem++].g = g;
		gr->count += agg_count(a, g);
	}
	store_symtab_release(st, c->res->series[i]);
	buf_free(&sig);
	return rc;
}

/*
 * Merge the groups chosen in mg: each series' share as pprof (gauges
 * averaged), summed. With types_only the first share alone, without its
 * samples: the merged sample types, for a caller reading totals.
 */
static int
merge_groups(struct store *st, struct merge_listing *c, const struct mgroup *mg,
    const struct mgroup_shared *sh, struct agg **aggs, bool types_only,
    struct cancel *cancel, struct profile **out)
{
	struct merge *m = merge_create();
	const struct group *gr;
	const struct symtab *t;
	struct profile *p;
	size_t g, k;
	int rc = 0;

	if (m == NULL)
		return -ENOMEM;
	for (g = 0; g < c->ngroups && rc == 0; g++) {
		if (!mg[g].inc)
			continue;
		gr = &c->groups[g];
		for (k = 0; k < gr->nmem && rc == 0; k++) {
			uint64_t sid = c->res->series[gr->mem[k].series];

			if ((rc = cancel_check(cancel)) < 0)
				break;
			if ((t = store_symtab_acquire(st, sid, &rc)) == NULL)
				break;
			rc = agg_profile(aggs[gr->mem[k].series], t, gr->mem[k].g, true, &p);
			store_symtab_release(st, sid);
			if (rc == 0) {
				if (p->nsample_types != sh->n - 1)
					profile_keep_types(p, mg[g].keep, sh->n - 1);
				if (types_only)
					p->nsamples = 0;	/* in p's arena: freed with it */
				rc = merge_add(m, p, NULL);
			}
			profile_free(p);
			if (types_only && rc == 0)
				goto done;
		}
	}
done:
	if (rc == 0 && merge_count(m) > 0)
		rc = merge_finish(m, false, out);
	merge_free(m);
	return rc;
}

/* A ref's place in the time order: sorted small, then the refs moved once. */
struct ref_key {
	int64_t		 time;
	uint64_t	 id;
	size_t		 i;
};

static int
ref_key_cmp(const void *a, const void *b)
{
	const struct ref_key *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;	/* stable: windows past retention share id 0 */
}

/*
 * Sort refs by time and carry their totals along; res takes the totals.
 * The refs come as a sorted run per series: already in order with one
 * series, else sorted by key (time, id), then each ref moved once, in place.
 */
static int
sort_with_totals(struct query_result *res, struct merge_listing *c)
{
	const size_t *at = (const size_t *)c->at.data;
	struct ref_key *key;
	size_t i;
	bool sorted = true;

	if (c->at.len != res->nrefs * sizeof(size_t))
		return -EINVAL;	/* a ref without totals: an internal error */
	if ((res->totals_at = malloc(res->nrefs * sizeof(size_t))) == NULL)
		return -ENOMEM;
	for (i = 1; i < res->nrefs && sorted; i++)
		sorted = store_ref_cmp(&res->refs[i - 1], &res->refs[i]) <= 0;
	if (sorted) {
		memcpy(res->totals_at, at, res->nrefs * sizeof(size_t));
		res->totals = (int64_t *)buf_steal(&c->totals, NULL);
		return 0;
	}
	if ((key = malloc(res->nrefs * sizeof(*key))) == NULL) {
		free(res->totals_at);
		res->totals_at = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < res->nrefs; i++)
		key[i] = (struct ref_key){ res->refs[i].time, res->refs[i].id, i };
	qsort(key, res->nrefs, sizeof(*key), ref_key_cmp);
	for (i = 0; i < res->nrefs; i++)
		res->totals_at[i] = at[key[i].i];
	/* refs[j] = the old refs[key[j].i], in place, a cycle at a time (SIZE_MAX: placed). */
	for (i = 0; i < res->nrefs; i++) {
		struct store_ref tmp;
		size_t j = i, k;

		if (key[i].i == SIZE_MAX || key[i].i == i)
			continue;
		tmp = res->refs[i];
		while ((k = key[j].i) != i) {
			res->refs[j] = res->refs[k];
			key[j].i = SIZE_MAX;
			j = k;
		}
		res->refs[j] = tmp;
		key[j].i = SIZE_MAX;
	}
	free(key);
	res->totals = (int64_t *)buf_steal(&c->totals, NULL);
	return 0;
}

int
query_merge(struct store *st, const struct query *q, struct query_result *res)
{
	struct merge_listing c = { .res = res };
	struct agg **aggs = NULL;
	struct mgroup_shared sh;
	uint64_t nmerged = 0;
	size_t i, j, n;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = match_series(st, q, res);
	if (rc == 0 && (aggs = calloc(res->nseries + 1, sizeof(*aggs))) == NULL)
		rc = -ENOMEM;
	for (i = 0; i < res->nseries && rc == 0; i++) {
		if ((rc = cancel_check(q->cancel)) < 0)
			break;
		if ((aggs[i] = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (q->spans)
			rc = store_read_spans(st, res->series[i], q->from, q->to, q->spans,
			    aggs[i], &res->spans, q->merged_only ? NULL : meta_cb, bad_cb, &c);
		else
			rc = store_read_series(st, res->series[i], q->from, q->to, aggs[i],
			    q->merged_only ? NULL : meta_cb, bad_cb, &c);
		if (rc == 0)
			rc = file_groups(st, &c, i, aggs[i]);
	}
	if (rc == 0 && c.ngroups) {
		const struct pmeta *pm = (const struct pmeta *)c.metas.data;
		struct mgroup *mg = xcalloc(c.ngroups, sizeof(*mg));
		size_t *grp;
		char why[320];

		n = c.metas.len / sizeof(*pm);
		for (i = 0; i < c.ngroups; i++) {
			mg[i].sig = c.groups[i].sig.data;
			mg[i].siglen = c.groups[i].sig.len;
			mg[i].count = c.groups[i].count;
		}
		mgroup_choose(mg, c.ngroups, &sh);
		/* Each listed profile's group (none for those that did not decode). */
		grp = xcalloc(n + 1, sizeof(*grp));
		for (j = 0; j < n; j++) {
			grp[j] = SIZE_MAX;
			for (i = 0; i < c.ngroups && !pm[j].bad; i++)
				if (pm[j].hash == c.groups[i].hash) {
					grp[j] = i;
					break;
				}
		}
		for (i = 0; i < c.ngroups && rc == 0; i++) {
			if (mg[i].inc) {
				nmerged += c.groups[i].count;
				continue;
			}
			mgroup_why(&mg[i], &sh, why, sizeof(why));
			for (j = 0; j < n && rc == 0; j++) {
				if (pm[j].bad || pm[j].hash != c.groups[i].hash)
					continue;
				if (pm[j].summary)	/* no id to list; out of the timeline too */
					((size_t *)c.at.data)[j] = SIZE_MAX;
				else
					rc = query_skip_add(res, pm[j].id, why);
			}
		}
		if (rc == 0)
			rc = mgroup_totals(mg, &sh, grp, (size_t *)c.at.data, n, &c.totals);
		if (rc == 0 && (rc = merge_groups(st, &c, mg, &sh, aggs, q->totals_only,
		    q->cancel, &res->merged)) == 0 &&
		    res->merged)
			res->nmerged = (size_t)nmerged;
		free(grp);
		free(mg);
	}
	for (i = 0; aggs && i < res->nseries; i++)
		agg_free(aggs[i]);
	free(aggs);
	for (i = 0; i < c.ngroups; i++) {
		buf_free(&c.groups[i].sig);
		free(c.groups[i].mem);
	}
	free(c.groups);
	buf_free(&c.metas);
	if (rc == 0 && res->nrefs)
		rc = sort_with_totals(res, &c);
	buf_free(&c.totals);
	buf_free(&c.at);
	if (rc != 0)
		query_result_free(res);
	return rc;
}

void
query_result_free(struct query_result *res)
{
	free(res->refs);
	free(res->skipped);
	free(res->series);
	free(res->totals);
	free(res->totals_at);
	profile_free(res->merged);
	memset(res, 0, sizeof(*res));
}
