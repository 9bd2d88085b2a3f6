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
#include <assert.h>
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
	struct buf	 lbuf;		/* scratch: a sample's merged locations */
	bool		 files_first;	/* built (merge_begin): "[kernel]" and the like last */
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
	buf_free(&m->lbuf);
	free(m);
}

int64_t
merge_period(const struct merge *m)
{
	return m->period;
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
	int64_t			*lc;
};

/* --- the builder: objects in the merge's own indexes ------------------- */

int64_t
merge_string(struct merge *m, const char *s)
{
	return intern_put(m->strs, s, strlen(s), NULL);
}

bool
merge_string_is(const struct merge *m, int64_t i, const char *s)
{
	const char *k;
	size_t len;

	if (i < 0 || (size_t)i >= intern_count(m->strs))
		return false;
	k = intern_key(m->strs, (size_t)i, &len);
	return strncmp(k, s, len) == 0 && s[len] == '\0';
}

int64_t
merge_function(struct merge *m, const struct pf_function *f)
{
	struct pf_function *d;
	int added;
	int64_t k;

	k = intern_put(m->funcs, f, sizeof(*f), &added);
	if (k >= 0 && added) {
		if ((d = vec_push(&m->fn, 1)) == NULL)
			return -ENOMEM;
		*d = *f;
	}
	return k;
}

int64_t
merge_mapping(struct merge *m, const struct pf_mapping *mp)
{
	/* pprof's identity: size (page-rounded), offset, then build id or file name. */
	struct { uint64_t size, offset; int64_t id; int64_t kind; } key;
	struct pf_mapping *d;
	int added;
	int64_t k;

	memset(&key, 0, sizeof(key));
	key.size = mp->limit - mp->start;
	key.size = (key.size + 0xfff) & ~(uint64_t)0xfff;
	key.offset = mp->offset;
	if (mp->build_id > 0) {
		key.id = mp->build_id;
		key.kind = 1;
	} else if (mp->filename > 0) {
		key.id = mp->filename;
		key.kind = 2;
	}
	k = intern_put(m->maps, &key, sizeof(key), &added);
	if (k >= 0 && added) {
		if ((d = vec_push(&m->mp, 1)) == NULL)
			return -ENOMEM;
		*d = *mp;
	}
	return k;
}

/* The start of merged mapping k (its first occurrence's). */
static uint64_t
mapping_start(const struct merge *m, int64_t k)
{
	return ((const struct pf_mapping *)m->mp.p)[k].start;
}

int64_t
merge_location(struct merge *m, uint32_t mapping, uint64_t map_start, uint64_t address,
    bool is_folded, const struct pf_line *lines, size_t nlines)
{
	/* Identity: mapping, address relative to it, folding, and the lines. */
	uint64_t rel = mapping ? address - map_start : address;
	struct pf_line *dl;
	struct mloc *d;
	int64_t k;
	size_t j;
	int added;

	buf_reset(&m->key);
	buf_add(&m->key, &mapping, sizeof(mapping));
	buf_add(&m->key, &rel, sizeof(rel));
	buf_addc(&m->key, is_folded);
	for (j = 0; j < nlines; j++) {
		buf_add(&m->key, &lines[j].function, sizeof(lines[j].function));
		buf_add(&m->key, &lines[j].line, sizeof(lines[j].line));
		buf_add(&m->key, &lines[j].column, sizeof(lines[j].column));
	}
	if (buf_error(&m->key) < 0)
		return buf_error(&m->key);
	k = intern_put(m->locs, m->key.data, m->key.len, &added);
	if (k < 0 || !added)
		return k;
	if ((d = vec_push(&m->lc, 1)) == NULL)
		return -ENOMEM;
	d->mapping = mapping;
	/* Addresses move with the mapping the merge kept for this identity. */
	d->address = mapping ? mapping_start(m, mapping - 1) + rel : address;
	d->is_folded = is_folded;
	d->nlines = (uint32_t)nlines;
	d->line_off = (uint32_t)m->ln.n;
	if (nlines) {
		if ((dl = vec_push(&m->ln, nlines)) == NULL)
			return -ENOMEM;
		memcpy(dl, lines, nlines * sizeof(*lines));
	}
	return k;
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

int
merge_sample(struct merge *m, const uint32_t *locs, size_t nlocs, struct pf_label *labels,
    size_t nlabels, const int64_t *values)
{
	uint32_t n32 = (uint32_t)nlocs;
	struct msample *d;
	int64_t k, *v;
	size_t t;
	int added;

	/* Begun (merge_begin) or first profile added: the value columns are known. */
	assert(m->count > 0 || m->types != NULL);
	assert(nlocs <= UINT32_MAX && nlabels <= UINT32_MAX);
	for (t = 0; t < m->ntypes && values[t] == 0; t++)
		;
	if (t == m->ntypes)
		return 0;
	/* Identity: the stack and the set of labels, in any order. */
	qsort(labels, nlabels, sizeof(*labels), label_cmp);
	buf_reset(&m->skey);
	buf_add(&m->skey, &n32, sizeof(n32));
	buf_add(&m->skey, locs, nlocs * sizeof(*locs));
	buf_add(&m->skey, labels, nlabels * sizeof(*labels));
	if (buf_error(&m->skey) < 0)
		return buf_error(&m->skey);
	if ((k = intern_put(m->samples, m->skey.data, m->skey.len, &added)) < 0)
		return (int)k;
	if (added) {
		if ((d = vec_push(&m->sm, 1)) == NULL ||
		    (v = vec_push(&m->vals, m->ntypes)) == NULL)
			return -ENOMEM;
		memset(v, 0, m->ntypes * sizeof(*v));
		d->nlocs = n32;
		d->loc_off = (uint32_t)m->sloc.n;
		d->nlabels = (uint32_t)nlabels;
		d->lab_off = (uint32_t)m->slab.n;
		if (nlocs)
			memcpy(vec_push(&m->sloc, nlocs), locs, nlocs * sizeof(*locs));
		if (nlabels)
			memcpy(vec_push(&m->slab, nlabels), labels, nlabels * sizeof(*labels));
	}
	v = (int64_t *)m->vals.p + (size_t)k * m->ntypes;
	for (t = 0; t < m->ntypes; t++)
		v[t] = profile_add(v[t], values[t]);
	return 0;
}

int
merge_begin(struct merge *m, const struct merge_header *h)
{
	size_t i;

	assert(m->count == 0 && h->ntypes <= PROFILE_MAX_SAMPLE_TYPES);
	m->ntypes = h->ntypes;
	m->types = xcalloc(m->ntypes + 1, sizeof(*m->types));
	/* The signature profile_signature() would give, so merge_add() may follow. */
	buf_printf(&m->sig, "%s/%s", h->period_type, h->period_unit);
	for (i = 0; i < m->ntypes; i++) {
		m->types[i].type = merge_string(m, h->types[i]);
		m->types[i].unit = merge_string(m, h->units[i]);
		buf_printf(&m->sig, "\x1f%s/%s", h->types[i], h->units[i]);
	}
	m->period_type.type = merge_string(m, h->period_type);
	m->period_type.unit = merge_string(m, h->period_unit);
	m->period = h->period;
	m->time_nanos = h->time_nanos;
	m->duration_nanos = h->duration_nanos;
	m->files_first = true;
	m->count = 1;
	return buf_error(&m->sig);
}

/* --- adding profiles: their indexes mapped to the merge's, lazily -------- */

static int64_t
map_str(struct addctx *c, int64_t i)
{
	if (i <= 0 || (size_t)i >= c->p->nstrings)
		return 0;
	if (c->str[i] < 0)
		c->str[i] = merge_string(c->m, c->p->strings[i]);
	return c->str[i];
}

static int64_t
map_fn(struct addctx *c, uint32_t i)
{
	struct pf_function f;

	if (c->fn[i] >= 0)
		return c->fn[i];
	f.name = map_str(c, c->p->functions[i].name);
	f.system_name = map_str(c, c->p->functions[i].system_name);
	f.filename = map_str(c, c->p->functions[i].filename);
	f.start_line = c->p->functions[i].start_line;
	if (f.name < 0 || f.system_name < 0 || f.filename < 0)
		return -ENOMEM;
	return c->fn[i] = merge_function(c->m, &f);
}

static int64_t
map_mapping(struct addctx *c, uint32_t i)
{
	const struct pf_mapping *s = &c->p->mappings[i];
	struct pf_mapping d = *s;
	int64_t k;

	if (c->mp[i] >= 0)
		return c->mp[i];
	d.filename = map_str(c, s->filename);
	d.build_id = map_str(c, s->build_id);
	if (d.filename < 0 || d.build_id < 0)
		return -ENOMEM;
	if ((k = merge_mapping(c->m, &d)) < 0)
		return k;
	return c->mp[i] = k;
}

static int64_t
map_loc(struct addctx *c, uint32_t i)
{
	const struct pf_location *s = &c->p->locations[i];
	struct pf_line lines[64], *lp = lines;
	uint32_t mapping = 0, j;
	uint64_t map_start = 0;
	int64_t k, mi, fi;

	if (c->lc[i] >= 0)
		return c->lc[i];
	if (s->mapping) {
		if ((mi = map_mapping(c, s->mapping - 1)) < 0)
			return mi;
		mapping = (uint32_t)mi + 1;
		map_start = c->p->mappings[s->mapping - 1].start;
	}
	if (s->nlines > 64)
		lp = xreallocarray(NULL, s->nlines, sizeof(*lp));
	for (j = 0; j < s->nlines; j++) {
		lp[j] = s->lines[j];
		if (lp[j].function != PF_NONE) {
			if ((fi = map_fn(c, lp[j].function)) < 0) {
				k = fi;
				goto out;
			}
			lp[j].function = (uint32_t)fi;
		}
	}
	k = merge_location(c->m, mapping, map_start, s->address, s->is_folded, lp, s->nlines);
	if (k >= 0)
		c->lc[i] = k;
out:
	if (lp != lines)
		free(lp);
	return k;
}

static int
add_sample(struct addctx *c, const struct pf_sample *s, int64_t scale,
    const struct pf_label *extra)
{
	struct merge *m = c->m;
	struct pf_label labs[64], *lp = labs;
	int64_t vals[PROFILE_MAX_SAMPLE_TYPES], li;
	uint32_t j, nl = 0, nlabels = s->nlabels + (extra ? 1 : 0);
	uint32_t *locs;
	size_t t;
	int rc = 0;
	bool zero = true;

	/* Equal signatures: every sample of p has exactly the merge's columns. */
	assert(m->ntypes == c->p->nsample_types && m->ntypes <= PROFILE_MAX_SAMPLE_TYPES);
	for (t = 0; t < m->ntypes; t++) {
		vals[t] = (int64_t)((uint64_t)s->values[t] * (uint64_t)scale);
		if (s->values[t] != 0)
			zero = false;
	}
	if (zero)
		return 0;
	if (nlabels > 64)
		lp = xreallocarray(NULL, nlabels, sizeof(*lp));
	buf_reset(&m->lbuf);
	if ((rc = buf_reserve(&m->lbuf, s->nlocs * sizeof(uint32_t))) < 0)
		goto out;
	locs = (uint32_t *)(void *)m->lbuf.data;
	for (j = 0; j < s->nlocs; j++) {
		if ((li = map_loc(c, s->locs[j])) < 0) {
			rc = (int)li;
			goto out;
		}
		locs[j] = (uint32_t)li;
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
	rc = merge_sample(m, locs, s->nlocs, lp, nl, vals);
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

	n = p->nstrings + p->nfunctions + p->nmappings + p->nlocations;
	if ((c.str = malloc((n + 1) * sizeof(int64_t))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(c.str, 0xff, (n + 1) * sizeof(int64_t));	/* all -1 */
	c.fn = c.str + p->nstrings;
	c.mp = c.fn + p->nfunctions;
	c.lc = c.mp + p->nmappings;

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
	uint32_t *order = NULL;
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
	if (m->files_first && p->nmappings) {
		/*
		 * pprof takes the first mapping for the main binary: a built
		 * profile met its mappings in sample order (the kernel's often
		 * first), so file mappings go before "[kernel]", "[vdso]", ...
		 */
		const struct pf_mapping *src = m->mp.p;
		size_t j = 0;

		order = arena_alloc(a, p->nmappings * sizeof(*order));
		if (order == NULL)
			goto nomem;
		for (int pass = 0; pass < 2; pass++)
			for (i = 0; i < p->nmappings; i++)
				if ((p->strings[src[i].filename][0] == '[') == (pass == 1)) {
					order[i] = (uint32_t)j;
					p->mappings[j++] = src[i];
				}
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct mloc *s = (struct mloc *)m->lc.p + i;
		struct pf_location *d = &p->locations[i];

		d->mapping = s->mapping && order ? order[s->mapping - 1] + 1 : s->mapping;
		d->address = s->address;
		d->is_folded = s->is_folded;
		d->nlines = s->nlines;
		d->lines = arena_memdup(a, vec_at(&m->ln, s->line_off),
		    s->nlines * sizeof(struct pf_line));
		if (d->lines == NULL)
			goto nomem;
		if (order && d->nlines && d->mapping)
			p->mappings[d->mapping - 1].has_functions = true;
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
