/*
 * delta: the change between two consecutive scrapes of a cumulative profile
 * (Go's heap/allocs alloc_*, block and mutex contentions/delay), so that a
 * range sums what happened in it rather than running totals.
 *
 * Samples of the two profiles are matched by identity, not by id (ids are
 * renumbered on every scrape): the stack as (address, function name, file,
 * line) per frame, leaf first, plus the labels sorted. Counter columns become
 * cur - prev; gauge columns (inuse_*, profile_type_is_gauge()) keep cur's value,
 * the snapshot they are. The result is built through merge, so it owns all its
 * memory and samples left all-zero are dropped. Restart detection (a counter
 * going down) is here too: the caller then starts over with cur as the base.
 *
 * The store uses the same between two pushed snapshots of totals (a Go heap
 * profile without a duration, profile_is_snapshot()): profile_increase, where
 * one stack going down is that stack's counter resetting (its whole value
 * counts, as Prometheus's increase()) and only a total going down is a new
 * process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"

struct dctx {
	const struct profile	*p;
	struct intern		*locs;		/* location identity -> global index */
	int64_t			*locmap;	/* per location of p: global index or -1 */
	struct buf		 key;		/* scratch */
};

static int
loc_global(struct dctx *c, uint32_t i, int64_t *out)
{
	const struct profile *p = c->p;
	const struct pf_location *l;
	uint32_t j;
	int64_t g;
	int rc;

	if (i >= p->nlocations)
		return -EINVAL;
	if (c->locmap[i] >= 0) {
		*out = c->locmap[i];
		return 0;
	}
	l = &p->locations[i];
	buf_reset(&c->key);
	if ((rc = buf_add(&c->key, &l->address, sizeof(l->address))) < 0)
		return rc;
	for (j = 0; j < l->nlines; j++) {
		const struct pf_line *ln = &l->lines[j];
		const char *name = "", *file = "";

		if (ln->function != PF_NONE && ln->function < p->nfunctions) {
			name = profile_str(p, p->functions[ln->function].name);
			file = profile_str(p, p->functions[ln->function].filename);
		}
		if ((rc = buf_add(&c->key, name, strlen(name) + 1)) < 0 ||
		    (rc = buf_add(&c->key, file, strlen(file) + 1)) < 0 ||
		    (rc = buf_add(&c->key, &ln->line, sizeof(ln->line))) < 0)
			return rc;
	}
	if ((g = intern_put(c->locs, c->key.data, c->key.len, NULL)) < 0)
		return (int)g;
	c->locmap[i] = g;
	*out = g;
	return 0;
}

static int
label_cmp(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

/* The identity of sample s of c->p into out (reset first). */
static int
sample_key(struct dctx *c, const struct pf_sample *s, struct buf *out)
{
	const struct profile *p = c->p;
	struct buf lab = { 0 };
	const char **ls = NULL;
	size_t *off = NULL;
	uint32_t j;
	int64_t g;
	int rc = 0;

	buf_reset(out);
	if ((rc = buf_add(out, &s->nlocs, sizeof(s->nlocs))) < 0)
		goto out;
	for (j = 0; j < s->nlocs; j++) {
		if ((rc = loc_global(c, s->locs[j], &g)) < 0 ||
		    (rc = buf_add(out, &g, sizeof(g))) < 0)
			goto out;
	}
	if (s->nlabels == 0)
		goto out;
	/* Labels as "key\x1fstr\x1fnum\x1funit" texts, sorted. */
	if ((off = calloc(s->nlabels, sizeof(*off))) == NULL ||
	    (ls = calloc(s->nlabels, sizeof(*ls))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (j = 0; j < s->nlabels; j++) {
		const struct pf_label *l = &s->labels[j];

		off[j] = lab.len;
		if ((rc = buf_printf(&lab, "%s\x1f%s\x1f%lld\x1f%s", profile_str(p, l->key),
		    profile_str(p, l->str), l->str ? 0LL : (long long)l->num,
		    l->str ? "" : profile_str(p, l->num_unit))) < 0 ||
		    (rc = buf_addc(&lab, '\0')) < 0)
			goto out;
	}
	for (j = 0; j < s->nlabels; j++)
		ls[j] = lab.data + off[j];
	qsort(ls, s->nlabels, sizeof(*ls), label_cmp);
	for (j = 0; j < s->nlabels && rc == 0; j++)
		rc = buf_add(out, ls[j], strlen(ls[j]) + 1);
out:
	free(off);
	free(ls);
	buf_free(&lab);
	return rc;
}

/* Add every value of p's samples, by identity, into the sums of keys. */
static int
sum_samples(struct dctx *c, struct intern *keys, int64_t **sums, size_t *cap,
    size_t nt, int64_t *first)
{
	const struct profile *p = c->p;
	struct buf k = { 0 };
	size_t i, t;
	int64_t idx;
	int added, rc = 0;

	for (i = 0; i < p->nsamples; i++) {
		if ((rc = sample_key(c, &p->samples[i], &k)) < 0)
			break;
		if ((idx = intern_put(keys, k.data, k.len, &added)) < 0) {
			rc = (int)idx;
			break;
		}
		if ((size_t)idx >= *cap) {
			size_t old = *cap;

			*sums = xgrow(*sums, cap, (size_t)idx + 1, nt * sizeof(int64_t));
			memset(*sums + old * nt, 0, (*cap - old) * nt * sizeof(int64_t));
		}
		if (added && first)
			first[idx] = (int64_t)i;
		for (t = 0; t < nt; t++)
			(*sums)[(size_t)idx * nt + t] = profile_add((*sums)[(size_t)idx * nt + t],
			    p->samples[i].values[t]);
	}
	buf_free(&k);
	return rc;
}

/*
 * cur - prev (see profile_delta and profile_increase): with increase, a
 * stack whose counter went down counts its whole value, as increase() does
 * for a counter that reset; without, that is a restart (-ERANGE).
 */
static int
delta_run(const struct profile *cur, const struct profile *prev, bool increase,
    struct profile **out, struct buf *err)
{
	struct dctx c = { 0 };
	struct intern *pkeys = NULL, *ckeys = NULL;
	struct buf sig1 = { 0 }, sig2 = { 0 };
	struct profile view;
	struct pf_sample *smp = NULL;
	struct merge *m = NULL;
	int64_t *psum = NULL, *csum = NULL, *first = NULL, *vals = NULL, idx;
	size_t pcap = 0, ccap = 0, nt = cur->nsample_types, i, t, n = 0;
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	int rc;

	*out = NULL;
	if ((rc = profile_signature(cur, &sig1)) < 0 ||
	    (rc = profile_signature(prev, &sig2)) < 0)
		goto out;
	if (sig1.len != sig2.len || memcmp(sig1.data, sig2.data, sig1.len) != 0 ||
	    nt > PROFILE_MAX_SAMPLE_TYPES) {
		if (err)
			buf_adds(err, increase ? "sample types changed between snapshots" :
			    "sample types changed between scrapes");
		rc = -EINVAL;
		goto out;
	}
	for (t = 0; t < nt; t++)
		gauge[t] = profile_type_is_gauge(profile_str(cur, cur->sample_types[t].type));

	if ((c.locs = intern_create(1024)) == NULL || (pkeys = intern_create(1024)) == NULL ||
	    (ckeys = intern_create(1024)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* prev, then cur, through the same location table. */
	c.p = prev;
	if ((c.locmap = malloc((prev->nlocations + 1) * sizeof(int64_t))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(c.locmap, 0xff, (prev->nlocations + 1) * sizeof(int64_t));
	if ((rc = sum_samples(&c, pkeys, &psum, &pcap, nt, NULL)) < 0)
		goto out;
	free(c.locmap);
	c.p = cur;
	if ((c.locmap = malloc((cur->nlocations + 1) * sizeof(int64_t))) == NULL ||
	    (first = malloc((cur->nsamples + 1) * sizeof(int64_t))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(c.locmap, 0xff, (cur->nlocations + 1) * sizeof(int64_t));
	if ((rc = sum_samples(&c, ckeys, &csum, &ccap, nt, first)) < 0)
		goto out;

	n = intern_count(ckeys);
	if ((smp = calloc(n + 1, sizeof(*smp))) == NULL ||
	    (vals = calloc(n * nt + 1, sizeof(int64_t))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct pf_sample *s = &cur->samples[first[i]];
		const void *key;
		size_t klen;
		const int64_t *pv = NULL;

		key = intern_key(ckeys, i, &klen);
		if ((idx = intern_get(pkeys, key, klen)) >= 0)
			pv = psum + (size_t)idx * nt;
		for (t = 0; t < nt; t++) {
			int64_t d = csum[i * nt + t];

			if (!gauge[t] && pv) {
				if (d < pv[t] && increase) {
					vals[i * nt + t] = d;
					continue;
				}
				if (d < pv[t]) {
					if (err)
						buf_printf(err, "%s went down: the process restarted",
						    profile_str(cur, cur->sample_types[t].type));
					rc = -ERANGE;
					goto out;
				}
				d -= pv[t];
			}
			vals[i * nt + t] = d;
		}
		smp[i] = *s;
		smp[i].values = vals + i * nt;
	}
	/* Totals going down also mean a restart, even when no stack matched. */
	for (t = 0; t < nt; t++) {
		if (!gauge[t] && profile_total(cur, t) < profile_total(prev, t)) {
			if (err)
				buf_printf(err, "total %s went down: the process restarted",
				    profile_str(cur, cur->sample_types[t].type));
			rc = -ERANGE;
			goto out;
		}
	}

	view = *cur;
	view.samples = smp;
	view.nsamples = n;
	if (cur->time_nanos && prev->time_nanos && cur->time_nanos > prev->time_nanos)
		view.duration_nanos = cur->time_nanos - prev->time_nanos;
	if ((m = merge_create()) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = merge_add(m, &view, err)) == 0)
		rc = merge_finish(m, false, out);
out:
	if (rc == -ENOMEM && err)
		buf_adds(err, "out of memory computing a delta");
	merge_free(m);
	free(smp);
	free(vals);
	free(first);
	free(psum);
	free(csum);
	free(c.locmap);
	buf_free(&c.key);
	buf_free(&sig1);
	buf_free(&sig2);
	intern_destroy(c.locs);
	intern_destroy(pkeys);
	intern_destroy(ckeys);
	return rc;
}

int
profile_delta(const struct profile *cur, const struct profile *prev,
    struct profile **out, struct buf *err)
{
	return delta_run(cur, prev, false, out, err);
}

int
profile_increase(const struct profile *cur, const struct profile *prev,
    struct profile **out, struct buf *err)
{
	return delta_run(cur, prev, true, out, err);
}

bool
profile_is_snapshot(const struct profile *p)
{
	size_t t;

	if (p->duration_nanos != 0)
		return false;
	for (t = 0; t < p->nsample_types; t++) {
		const char *ty = profile_str(p, p->sample_types[t].type);

		if (strcmp(ty, "alloc_objects") == 0 || strcmp(ty, "alloc_space") == 0)
			return true;
	}
	return false;
}
