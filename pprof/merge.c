/*
 * merge: pprof's merge, streaming. Each added profile is folded into hash
 * tables of distinct strings, functions, mappings, locations and samples
 * (intern.c), using pprof's identity rules:
 *   function  (name, system name, file name, start line)
 *   mapping   (size rounded up to 4 KiB, file offset, build id or else file name)
 *   location  (mapping, address relative to the mapping's start, lines, is_folded)
 *   sample    (locations, string labels and numeric labels with units, sorted)
 * Identical samples sum their values; input samples whose values are all zero
 * are dropped. Merged ids are renumbered in first-seen order. The caller keeps
 * ownership of what it adds; nothing of it is referenced after merge_add().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"

struct mloc {
	uint32_t	 mapping;	/* index + 1, 0 none */
	uint32_t	 line_off, nlines;
	uint64_t	 address;
	bool		 is_folded;
};

struct msample {
	uint32_t	 loc_off, nlocs;
	uint32_t	 lab_off, nlabels;
};

/* A growable array of fixed-size elements. */
struct vec {
	void	*p;
	size_t	 n, cap, esz;
};

static void *
vec_push(struct vec *v, size_t k)
{
	void *q;

	v->p = xgrow(v->p, &v->cap, v->n + k, v->esz);
	q = (char *)v->p + v->n * v->esz;
	v->n += k;
	return q;
}


/* Element i of v; NULL while nothing was pushed (arena_memdup takes NULL, 0). */
static const void *
vec_at(const struct vec *v, size_t i)
{
	return v->p ? (const char *)v->p + i * v->esz : NULL;
}

struct merge {
	struct buf	 sig;
	size_t		 count;
	size_t		 ntypes;
	struct intern	*strs, *funcs, *maps, *locs, *samples;
	struct vec	 fn, mp, lc, ln, sm, sloc, slab, vals, cmt;
	struct pf_valuetype *types;
	struct pf_valuetype period_type;
	int64_t		 period, time_nanos, duration_nanos;
	int64_t		 drop_frames, keep_frames, default_sample_type, doc_url;
	struct buf	 key;		/* scratch: location keys */
	struct buf	 skey;		/* scratch: sample keys */
};

struct merge *
merge_create(void)
{
	struct merge *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->strs = intern_create(1024);
	m->funcs = intern_create(1024);
	m->maps = intern_create(16);
	m->locs = intern_create(1024);
	m->samples = intern_create(1024);
	if (!m->strs || !m->funcs || !m->maps || !m->locs || !m->samples) {
		merge_free(m);
		return NULL;
	}
	m->fn.esz = sizeof(struct pf_function);
	m->mp.esz = sizeof(struct pf_mapping);
	m->lc.esz = sizeof(struct mloc);
	m->ln.esz = sizeof(struct pf_line);
	m->sm.esz = sizeof(struct msample);
	m->sloc.esz = sizeof(uint32_t);
	m->slab.esz = sizeof(struct pf_label);
	m->vals.esz = sizeof(int64_t);
	m->cmt.esz = sizeof(int64_t);
	/* The empty string is index 0, as pprof requires. */
	if (intern_put(m->strs, "", 0, NULL) < 0) {
		merge_free(m);
		return NULL;
	}
	return m;
}

void
merge_free(struct merge *m)
{
	if (m == NULL)
		return;
	intern_destroy(m->strs);
	intern_destroy(m->funcs);
	intern_destroy(m->maps);
	intern_destroy(m->locs);
	intern_destroy(m->samples);
	free(m->fn.p);
	free(m->mp.p);
	free(m->lc.p);
	free(m->ln.p);
	free(m->sm.p);
	free(m->sloc.p);
	free(m->slab.p);
	free(m->vals.p);
	free(m->cmt.p);
	free(m->types);
	buf_free(&m->sig);
	buf_free(&m->key);
	buf_free(&m->skey);
	free(m);
}

size_t
merge_count(const struct merge *m)
{
	return m->count;
}

/* Per-add state: input index -> merged index, filled lazily. */
struct addctx {
	struct merge		*m;
	const struct profile	*p;
	int64_t			*str;		/* -1 until interned */
	int64_t			*fn;		/* -1 until interned */
	int64_t			*mp;
	int64_t			*mpdelta;
	int64_t			*lc;
};

static int64_t
map_str(struct addctx *c, int64_t i)
{
	const char *s;

	if (i <= 0 || (size_t)i >= c->p->nstrings)
		return 0;
	if (c->str[i] < 0) {
		s = c->p->strings[i];
		c->str[i] = intern_put(c->m->strs, s, strlen(s), NULL);
	}
	return c->str[i];
}

static int64_t
map_fn(struct addctx *c, uint32_t i)
{
	struct pf_function f, *d;
	int added;
	int64_t k;

	if (c->fn[i] >= 0)
		return c->fn[i];
	f.name = map_str(c, c->p->functions[i].name);
	f.system_name = map_str(c, c->p->functions[i].system_name);
	f.filename = map_str(c, c->p->functions[i].filename);
	f.start_line = c->p->functions[i].start_line;
	if (f.name < 0 || f.system_name < 0 || f.filename < 0)
		return -ENOMEM;
	k = intern_put(c->m->funcs, &f, sizeof(f), &added);
	if (k >= 0 && added) {
		if ((d = vec_push(&c->m->fn, 1)) == NULL)
			return -ENOMEM;
		*d = f;
	}
	return c->fn[i] = k;
}

static int64_t
map_mapping(struct addctx *c, uint32_t i)
{
	const struct pf_mapping *s = &c->p->mappings[i];
	struct { uint64_t size, offset; int64_t id; int64_t kind; } key;
	struct pf_mapping *d;
	int added;
	int64_t k;

	if (c->mp[i] >= 0)
		return c->mp[i];
	memset(&key, 0, sizeof(key));
	key.size = s->limit - s->start;
	key.size = (key.size + 0xfff) & ~(uint64_t)0xfff;
	key.offset = s->offset;
	if (s->build_id > 0 && profile_str(c->p, s->build_id)[0]) {
		key.id = map_str(c, s->build_id);
		key.kind = 1;
	} else if (s->filename > 0 && profile_str(c->p, s->filename)[0]) {
		key.id = map_str(c, s->filename);
		key.kind = 2;
	}
	if (key.id < 0)
		return -ENOMEM;
	k = intern_put(c->m->maps, &key, sizeof(key), &added);
	if (k < 0)
		return k;
	if (added) {
		if ((d = vec_push(&c->m->mp, 1)) == NULL)
			return -ENOMEM;
		*d = *s;
		d->filename = map_str(c, s->filename);
		d->build_id = map_str(c, s->build_id);
	}
	d = (struct pf_mapping *)c->m->mp.p + k;
	c->mpdelta[i] = (int64_t)(d->start - s->start);
	return c->mp[i] = k;
}

static int64_t
map_loc(struct addctx *c, uint32_t i)
{
	const struct pf_location *s = &c->p->locations[i];
	struct merge *m = c->m;
	struct mloc *d;
	uint32_t mapping = 0, j;
	uint64_t rel = s->address;
	int64_t k, mi, fi;
	int added, rc;

	if (c->lc[i] >= 0)
		return c->lc[i];
	if (s->mapping) {
		if ((mi = map_mapping(c, s->mapping - 1)) < 0)
			return mi;
		mapping = (uint32_t)mi + 1;
		rel = s->address - c->p->mappings[s->mapping - 1].start;
	}
	buf_reset(&m->key);
	if ((rc = buf_add(&m->key, &mapping, sizeof(mapping))) < 0 ||
	    (rc = buf_add(&m->key, &rel, sizeof(rel))) < 0 ||
	    (rc = buf_addc(&m->key, s->is_folded)) < 0)
		return rc;
	for (j = 0; j < s->nlines; j++) {
		struct pf_line ln = s->lines[j];

		if (ln.function != PF_NONE) {
			if ((fi = map_fn(c, ln.function)) < 0)
				return fi;
			ln.function = (uint32_t)fi;
		}
		if ((rc = buf_add(&m->key, &ln.function, sizeof(ln.function))) < 0 ||
		    (rc = buf_add(&m->key, &ln.line, sizeof(ln.line))) < 0 ||
		    (rc = buf_add(&m->key, &ln.column, sizeof(ln.column))) < 0)
			return rc;
	}
	k = intern_put(m->locs, m->key.data, m->key.len, &added);
	if (k < 0)
		return k;
	if (added) {
		struct pf_line *lines;

		if ((d = vec_push(&m->lc, 1)) == NULL)
			return -ENOMEM;
		d->mapping = mapping;
		d->address = mapping ? (uint64_t)((int64_t)s->address + c->mpdelta[s->mapping - 1])
		    : s->address;
		d->is_folded = s->is_folded;
		d->nlines = s->nlines;
		d->line_off = (uint32_t)m->ln.n;
		if (s->nlines && (lines = vec_push(&m->ln, s->nlines)) == NULL)
			return -ENOMEM;
		for (j = 0; j < s->nlines; j++) {
			lines = (struct pf_line *)m->ln.p + d->line_off + j;
			*lines = s->lines[j];
			if (lines->function != PF_NONE)
				lines->function = (uint32_t)c->fn[s->lines[j].function];
		}
	}
	return c->lc[i] = k;
}

static int
label_cmp(const void *a, const void *b)
{
	const struct pf_label *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->str != y->str)
		return x->str < y->str ? -1 : 1;
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	if (x->num_unit != y->num_unit)
		return x->num_unit < y->num_unit ? -1 : 1;
	return 0;
}

static int
add_sample(struct addctx *c, const struct pf_sample *s, int64_t scale,
    const struct pf_label *extra)
{
	struct merge *m = c->m;
	struct pf_label labs[64], *lp = labs;
	uint32_t j, nl = 0, nlabels = s->nlabels + (extra ? 1 : 0);
	struct msample *d;
	int64_t k, li, *v;
	size_t t;
	int added, rc = 0;
	bool zero = true;

	for (t = 0; t < m->ntypes; t++)
		if (s->values[t] != 0)
			zero = false;
	if (zero)
		return 0;
	if (nlabels > 64 && (lp = malloc(nlabels * sizeof(*lp))) == NULL)
		return -ENOMEM;
	buf_reset(&m->skey);
	if ((rc = buf_add(&m->skey, &s->nlocs, sizeof(s->nlocs))) < 0)
		goto out;
	for (j = 0; j < s->nlocs; j++) {
		uint32_t l32;

		if ((li = map_loc(c, s->locs[j])) < 0) {
			rc = (int)li;
			goto out;
		}
		l32 = (uint32_t)li;
		if ((rc = buf_add(&m->skey, &l32, sizeof(l32))) < 0)
			goto out;
	}
	for (j = 0; j < s->nlabels; j++) {
		lp[nl].key = map_str(c, s->labels[j].key);
		lp[nl].str = map_str(c, s->labels[j].str);
		lp[nl].num = s->labels[j].str ? 0 : s->labels[j].num;
		lp[nl].num_unit = s->labels[j].str ? 0 : map_str(c, s->labels[j].num_unit);
		if (lp[nl].key < 0 || lp[nl].str < 0 || lp[nl].num_unit < 0) {
			rc = -ENOMEM;
			goto out;
		}
		nl++;
	}
	if (extra)
		lp[nl++] = *extra;
	qsort(lp, nl, sizeof(*lp), label_cmp);
	if ((rc = buf_add(&m->skey, lp, nl * sizeof(*lp))) < 0)
		goto out;
	if ((k = intern_put(m->samples, m->skey.data, m->skey.len, &added)) < 0) {
		rc = (int)k;
		goto out;
	}
	if (added) {
		uint32_t *locs;
		struct pf_label *labels;

		if ((d = vec_push(&m->sm, 1)) == NULL ||
		    (v = vec_push(&m->vals, m->ntypes)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		memset(v, 0, m->ntypes * sizeof(*v));
		d->nlocs = s->nlocs;
		d->loc_off = (uint32_t)m->sloc.n;
		d->nlabels = nl;
		d->lab_off = (uint32_t)m->slab.n;
		if ((s->nlocs && (locs = vec_push(&m->sloc, s->nlocs)) == NULL) ||
		    (nl && (labels = vec_push(&m->slab, nl)) == NULL)) {
			rc = -ENOMEM;
			goto out;
		}
		/* Either array is still NULL when nothing was pushed to it. */
		if (s->nlocs)
			memcpy((uint32_t *)m->sloc.p + d->loc_off,
			    m->skey.data + sizeof(uint32_t), s->nlocs * sizeof(uint32_t));
		if (nl)
			memcpy((struct pf_label *)m->slab.p + d->lab_off, lp, nl * sizeof(*lp));
	}
	v = (int64_t *)m->vals.p + (size_t)k * m->ntypes;
	for (t = 0; t < m->ntypes; t++)
		v[t] = profile_add(v[t], (int64_t)((uint64_t)s->values[t] * (uint64_t)scale));
out:
	if (lp != labs)
		free(lp);
	return rc;
}

int
merge_add_scaled(struct merge *m, const struct profile *p, int64_t scale,
    const char *label_key, const char *label_val, struct buf *err)
{
	struct addctx c = { .m = m, .p = p };
	struct pf_label extra, *ep = NULL;
	struct buf sig = { 0 };
	size_t i, n;
	int rc = 0;

	if ((rc = profile_signature(p, &sig)) < 0)
		goto out;
	if (m->count == 0) {
		buf_reset(&m->sig);
		if ((rc = buf_add(&m->sig, sig.data, sig.len)) < 0)
			goto out;
	} else if (sig.len != m->sig.len || memcmp(sig.data, m->sig.data, sig.len) != 0) {
		if (err) {
			buf_adds(err, "incompatible sample types: ");
			for (i = 0; i < sig.len; i++)
				buf_addc(err, sig.data[i] == '\x1f' ? ' ' : sig.data[i]);
			buf_adds(err, " vs ");
			for (i = 0; i < m->sig.len; i++)
				buf_addc(err, m->sig.data[i] == '\x1f' ? ' ' : m->sig.data[i]);
		}
		rc = -EINVAL;
		goto out;
	}

	n = p->nstrings + p->nfunctions + 2 * p->nmappings + p->nlocations;
	if ((c.str = malloc((n + 1) * sizeof(int64_t))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(c.str, 0xff, (n + 1) * sizeof(int64_t));	/* all -1 */
	c.fn = c.str + p->nstrings;
	c.mp = c.fn + p->nfunctions;
	c.mpdelta = c.mp + p->nmappings;
	c.lc = c.mpdelta + p->nmappings;

	if (m->count == 0) {
		m->ntypes = p->nsample_types;
		free(m->types);	/* left by an earlier add that failed */
		if ((m->types = calloc(m->ntypes + 1, sizeof(*m->types))) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		for (i = 0; i < m->ntypes; i++) {
			m->types[i].type = map_str(&c, p->sample_types[i].type);
			m->types[i].unit = map_str(&c, p->sample_types[i].unit);
		}
		m->period_type.type = map_str(&c, p->period_type.type);
		m->period_type.unit = map_str(&c, p->period_type.unit);
		m->drop_frames = map_str(&c, p->drop_frames);
		m->keep_frames = map_str(&c, p->keep_frames);
	}
	if (m->default_sample_type == 0)
		m->default_sample_type = map_str(&c, p->default_sample_type);
	if (m->doc_url == 0)
		m->doc_url = map_str(&c, p->doc_url);
	if (p->time_nanos && (m->time_nanos == 0 || p->time_nanos < m->time_nanos))
		m->time_nanos = p->time_nanos;
	m->duration_nanos = profile_add(m->duration_nanos, p->duration_nanos);
	if (p->period > m->period)
		m->period = p->period;
	for (i = 0; i < p->ncomments; i++) {
		int64_t s = map_str(&c, p->comments[i]), *cp;
		size_t j;

		for (j = 0; j < m->cmt.n; j++)
			if (((int64_t *)m->cmt.p)[j] == s)
				break;
		if (j == m->cmt.n && s > 0) {
			if ((cp = vec_push(&m->cmt, 1)) == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			*cp = s;
		}
	}
	if (label_key) {
		extra.key = intern_put(m->strs, label_key, strlen(label_key), NULL);
		extra.str = intern_put(m->strs, label_val, strlen(label_val), NULL);
		extra.num = 0;
		extra.num_unit = 0;
		ep = &extra;
	}
	/* pprof takes the first mapping first: the main binary stays mapping 1. */
	if (m->mp.n == 0 && p->nmappings > 0) {
		int64_t k = map_mapping(&c, 0);

		if (k < 0)
			rc = (int)k;
	}
	for (i = 0; i < p->nsamples && rc == 0; i++)
		rc = add_sample(&c, &p->samples[i], scale, ep);
	if (rc == 0)
		m->count++;
out:
	if (rc == -ENOMEM && err)
		buf_adds(err, "out of memory while merging");
	free(c.str);
	buf_free(&sig);
	return rc;
}

int
merge_add(struct merge *m, const struct profile *p, struct buf *err)
{
	return merge_add_scaled(m, p, 1, NULL, NULL, err);
}

int
merge_finish(struct merge *m, bool average_gauges, struct profile **out)
{
	struct profile *p;
	struct arena *a;
	size_t i, t, len;
	bool gauge[PROFILE_MAX_SAMPLE_TYPES] = { false };

	*out = NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL || (p->arena = arena_create()) == NULL) {
		free(p);
		return -ENOMEM;
	}
	a = p->arena;
	p->nstrings = intern_count(m->strs);
	p->nsample_types = m->ntypes;
	p->nfunctions = m->fn.n;
	p->nmappings = m->mp.n;
	p->nlocations = m->lc.n;
	p->nsamples = m->sm.n;
	p->ncomments = m->cmt.n;
	p->strings = arena_alloc(a, (p->nstrings + 1) * sizeof(char *));
	p->sample_types = arena_memdup(a, m->types ? (void *)m->types : (void *)"",
	    m->types ? m->ntypes * sizeof(*m->types) : 0);
	p->functions = arena_memdup(a, m->fn.p ? m->fn.p : "", m->fn.n * m->fn.esz);
	p->mappings = arena_memdup(a, m->mp.p ? m->mp.p : "", m->mp.n * m->mp.esz);
	p->comments = arena_memdup(a, m->cmt.p ? m->cmt.p : "", m->cmt.n * m->cmt.esz);
	p->locations = arena_alloc(a, (p->nlocations + 1) * sizeof(*p->locations));
	p->samples = arena_alloc(a, (p->nsamples + 1) * sizeof(*p->samples));
	if (!p->strings || !p->sample_types || !p->functions || !p->mappings ||
	    !p->comments || !p->locations || !p->samples)
		goto nomem;
	for (i = 0; i < p->nstrings; i++)
		p->strings[i] = intern_key(m->strs, i, &len);	/* NUL-terminated copies */
	/* The strings live in the intern table: move them into the arena. */
	for (i = 0; i < p->nstrings; i++) {
		intern_key(m->strs, i, &len);
		if ((p->strings[i] = arena_memdup(a, p->strings[i], len)) == NULL)
			goto nomem;
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct mloc *s = (struct mloc *)m->lc.p + i;
		struct pf_location *d = &p->locations[i];

		d->mapping = s->mapping;
		d->address = s->address;
		d->is_folded = s->is_folded;
		d->nlines = s->nlines;
		d->lines = arena_memdup(a, vec_at(&m->ln, s->line_off),
		    s->nlines * sizeof(struct pf_line));
		if (d->lines == NULL)
			goto nomem;
	}
	for (t = 0; t < m->ntypes && t < PROFILE_MAX_SAMPLE_TYPES; t++)
		gauge[t] = average_gauges && m->count > 1 &&
		    profile_type_is_gauge(p->strings[m->types[t].type]);
	p->nsamples = 0;
	for (i = 0; i < m->sm.n; i++) {
		const struct msample *s = (struct msample *)m->sm.p + i;
		const int64_t *sv = (int64_t *)m->vals.p + i * m->ntypes;
		struct pf_sample *d;

		/* Summing made it zero: dropped, as pprof's merge re-merges to do. */
		for (t = 0; t < m->ntypes && sv[t] == 0; t++)
			;
		if (t == m->ntypes)
			continue;
		d = &p->samples[p->nsamples++];
		d->nlocs = s->nlocs;
		d->nlabels = s->nlabels;
		d->locs = arena_memdup(a, vec_at(&m->sloc, s->loc_off),
		    s->nlocs * sizeof(uint32_t));
		d->labels = arena_memdup(a, vec_at(&m->slab, s->lab_off),
		    s->nlabels * sizeof(struct pf_label));
		d->values = arena_memdup(a, (int64_t *)m->vals.p + i * m->ntypes,
		    m->ntypes * sizeof(int64_t));
		if (!d->locs || !d->labels || !d->values)
			goto nomem;
		for (t = 0; t < m->ntypes && t < PROFILE_MAX_SAMPLE_TYPES; t++) {
			if (!gauge[t])
				continue;
			/* Round half away from zero, without overflow at the extremes. */
			int64_t v = d->values[t], n = (int64_t)m->count;
			int64_t q = v / n, r = v % n, ar = r < 0 ? -r : r;

			d->values[t] = ar >= n - ar ? q + (r < 0 ? -1 : 1) : q;
		}
	}
	p->period_type = m->period_type;
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	p->drop_frames = m->drop_frames;
	p->keep_frames = m->keep_frames;
	p->default_sample_type = m->default_sample_type;
	p->doc_url = m->doc_url;
	*out = p;
	return 0;
nomem:
	profile_free(p);
	return -ENOMEM;
}

int
profile_diff(const struct profile *cur, const struct profile *base,
    struct profile **out, struct buf *err)
{
	struct merge *m;
	int rc;

	*out = NULL;
	if ((m = merge_create()) == NULL)
		return -ENOMEM;
	/* Current first, as pprof -diff_base does: its header and main binary lead. */
	if ((rc = merge_add(m, cur, err)) == 0 &&
	    (rc = merge_add_scaled(m, base, -1, "pprof::base", "true", err)) == 0)
		rc = merge_finish(m, false, out);
	merge_free(m);
	return rc;
}
