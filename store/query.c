/*
 * query: range queries over the store. A merge decodes each stored profile
 * once, folds it into the merge of its signature group and frees it, so
 * memory stays bounded by the merged result, not by the number of inputs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

bool
query_match(const struct query *q, const struct series *s)
{
	if (q->service && strcmp(q->service, s->service) != 0)
		return false;
	if (q->type && strcmp(q->type, s->type) != 0)
		return false;
	return q->sel == NULL || labels_match(q->sel, &s->ls);
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

static int
add_skip(struct query_result *res, uint64_t id, const char *reason)
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

static int
ref_cmp(const void *a, const void *b)
{
	const struct store_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
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
	const struct series **all;
	size_t n, i;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = store_series(st, &all, &n)) < 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		if (!query_match(q, all[i]))
			continue;
		if ((rc = add_series(res, all[i]->id)) == 0)
			rc = store_scan(st, all[i]->id, q->from, q->to, false, list_cb, res);
	}
	free(all);
	if (rc == 0) {
		if (res->nrefs)	/* refs is NULL when empty: not for qsort */
			qsort(res->refs, res->nrefs, sizeof(*res->refs), ref_cmp);
		if (q->limit && res->nrefs > q->limit)
			res->nrefs = q->limit;
	}
	return rc;
}

/*
 * One group of mutually mergeable profiles. Counters go straight into m.
 * Gauges (inuse_*, goroutines) are averaged over the snapshots of each
 * series, then summed across series, so `all` over three pods is the
 * fleet's mean footprint, not one pod's: the scan visits one series at a
 * time, and sub collects the current series (sub_series) until it changes.
 */
struct group {
	struct buf	 sig;
	struct merge	*m;
	struct merge	*sub;
	uint64_t	 sub_series;
	bool		 gauge;
	uint64_t	*ids;
	size_t		 nids;
};

/* Fold the pending series of g (its mean snapshot) into the group's merge. */
static int
group_flush(struct group *g)
{
	struct profile *mean = NULL;
	int rc;

	if (g->sub == NULL)
		return 0;
	if ((rc = merge_finish(g->sub, true, &mean)) == 0)
		rc = merge_add(g->m, mean, NULL);
	profile_free(mean);
	merge_free(g->sub);
	g->sub = NULL;
	return rc;
}

struct mctx {
	struct query_result	*res;
	struct group		*groups;
	size_t			 ngroups;
	struct buf		 sig, err;
	struct buf		 totals;	/* int64_t per sample type per profile */
	struct buf		 at;		/* size_t per ref: offset in totals */
};

/* Record where ref res->nrefs - 1's totals are (SIZE_MAX: none). */
static int
add_totals(struct mctx *c, const struct profile *p)
{
	size_t at = SIZE_MAX, i;
	int64_t t;
	int rc;

	if (p) {
		at = c->totals.len / sizeof(int64_t);
		for (i = 0; i < p->nsample_types; i++) {
			t = profile_total(p, i);
			if ((rc = buf_add(&c->totals, &t, sizeof(t))) < 0)
				return rc;
		}
	}
	return buf_add(&c->at, &at, sizeof(at));
}

static int
merge_cb(void *arg, const struct store_ref *ref, const void *data, size_t len)
{
	struct mctx *c = arg;
	struct profile *p = NULL;
	struct group *g = NULL;
	uint64_t *ids;
	size_t i;
	int rc;

	if ((rc = add_ref(c->res, ref)) < 0)
		return rc;
	buf_reset(&c->err);
	if ((rc = profile_decode(data, len, &p, &c->err)) < 0) {
		char why[200];

		if (rc == -ENOMEM || (rc = add_totals(c, NULL)) < 0)
			return rc;
		snprintf(why, sizeof(why), "stored profile cannot be decoded: %s",
		    c->err.data ? c->err.data : "");
		return add_skip(c->res, ref->id, why);
	}
	if ((rc = add_totals(c, p)) < 0)
		goto out;
	buf_reset(&c->sig);
	if ((rc = profile_signature(p, &c->sig)) < 0)
		goto out;
	for (i = 0; i < c->ngroups; i++) {
		if (c->groups[i].sig.len == c->sig.len &&
		    memcmp(c->groups[i].sig.data, c->sig.data, c->sig.len) == 0) {
			g = &c->groups[i];
			break;
		}
	}
	if (g == NULL) {
		struct group *ng = realloc(c->groups, (c->ngroups + 1) * sizeof(*ng));

		if (ng == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		c->groups = ng;
		g = &c->groups[c->ngroups];
		memset(g, 0, sizeof(*g));
		for (i = 0; i < p->nsample_types; i++)
			if (profile_type_is_gauge(profile_str(p, p->sample_types[i].type)))
				g->gauge = true;
		if ((g->m = merge_create()) == NULL ||
		    (rc = buf_add(&g->sig, c->sig.data, c->sig.len)) < 0) {
			merge_free(g->m);
			buf_free(&g->sig);
			rc = -ENOMEM;
			goto out;
		}
		c->ngroups++;
	}
	if ((ids = realloc(g->ids, (g->nids + 1) * sizeof(*ids))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	g->ids = ids;
	g->ids[g->nids++] = ref->id;
	if (!g->gauge) {
		rc = merge_add(g->m, p, NULL);
		goto out;
	}
	if (g->sub && g->sub_series != ref->series && (rc = group_flush(g)) < 0)
		goto out;
	if (g->sub == NULL) {
		if ((g->sub = merge_create()) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		g->sub_series = ref->series;
	}
	rc = merge_add(g->sub, p, NULL);
out:
	profile_free(p);
	return rc;
}

/* "cpu/nanoseconds samples/count" from a signature (period type dropped). */
static void
sig_types(const struct buf *sig, char *out, size_t n)
{
	const char *s = sig->data ? memchr(sig->data, '\x1f', sig->len) : NULL;
	size_t i = 0;

	if (s == NULL) {
		snprintf(out, n, "(none)");
		return;
	}
	for (s++; s < sig->data + sig->len && i + 1 < n; s++)
		out[i++] = *s == '\x1f' ? ' ' : *s;
	out[i] = '\0';
}

/* Sort refs by time and carry their totals along; res takes the totals. */
static int
sort_with_totals(struct query_result *res, struct mctx *c)
{
	struct { struct store_ref ref; size_t at; } *tmp;
	const size_t *at = (const size_t *)c->at.data;
	size_t i;

	if (c->at.len != res->nrefs * sizeof(size_t))
		return -EINVAL;	/* a ref without totals: an internal error */
	if ((tmp = malloc(res->nrefs * sizeof(*tmp))) == NULL ||
	    (res->totals_at = malloc(res->nrefs * sizeof(size_t))) == NULL) {
		free(tmp);
		return -ENOMEM;
	}
	for (i = 0; i < res->nrefs; i++) {
		tmp[i].ref = res->refs[i];
		tmp[i].at = at[i];
	}
	/* ref is the first member: ref_cmp orders the pairs by it. */
	qsort(tmp, res->nrefs, sizeof(*tmp), ref_cmp);
	for (i = 0; i < res->nrefs; i++) {
		res->refs[i] = tmp[i].ref;
		res->totals_at[i] = tmp[i].at;
	}
	free(tmp);
	res->totals = (int64_t *)buf_steal(&c->totals, NULL);
	return 0;
}

int
query_merge(struct store *st, const struct query *q, struct query_result *res)
{
	const struct series **all;
	struct mctx c = { .res = res };
	size_t n, i, j, best = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = store_series(st, &all, &n)) < 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		if (!query_match(q, all[i]))
			continue;
		if ((rc = add_series(res, all[i]->id)) == 0)
			rc = store_scan(st, all[i]->id, q->from, q->to, true, merge_cb, &c);
	}
	free(all);
	if (rc == 0 && c.ngroups) {
		char want[120], got[120], why[320];

		for (i = 1; i < c.ngroups; i++)
			if (c.groups[i].nids > c.groups[best].nids)
				best = i;
		sig_types(&c.groups[best].sig, want, sizeof(want));
		for (i = 0; i < c.ngroups && rc == 0; i++) {
			if (i == best)
				continue;
			sig_types(&c.groups[i].sig, got, sizeof(got));
			snprintf(why, sizeof(why),
			    "sample types [%s] differ from the merged profiles' [%s]", got, want);
			for (j = 0; j < c.groups[i].nids && rc == 0; j++)
				rc = add_skip(res, c.groups[i].ids[j], why);
		}
		if (rc == 0)
			rc = group_flush(&c.groups[best]);
		if (rc == 0 && merge_count(c.groups[best].m) > 0) {
			/* Gauges were averaged per series already: sum them now. */
			rc = merge_finish(c.groups[best].m, false, &res->merged);
			res->nmerged = c.groups[best].nids;
		}
	}
	for (i = 0; i < c.ngroups; i++) {
		merge_free(c.groups[i].sub);
		merge_free(c.groups[i].m);
		buf_free(&c.groups[i].sig);
		free(c.groups[i].ids);
	}
	free(c.groups);
	buf_free(&c.sig);
	buf_free(&c.err);
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
