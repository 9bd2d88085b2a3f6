/*
 * pack: the compact (stack id, values) form of profiles and windows, and
 * the entries of the symbol table (symtab.h) a new profile adds; the
 * layouts are in pack.h. This file knows nothing of RocksDB: the store's
 * other files persist the entries and packs it is handed.
 *
 * String, mapping and function references inside entries and packs are
 * id + 1, with 0 for "none" (the empty string, no mapping, no function), so
 * pprof's index-0 conventions need no stored entry.
 */
#define _GNU_SOURCE	/* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pack.h"

/* --- varints ------------------------------------------------------------- */

static int
put_z(struct buf *b, int64_t v)
{
	return buf_add_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Write v at *p (room checked by the caller: VARINT_MAX bytes at most). */
static inline void
raw_u(unsigned char **p, uint64_t v)
{
	*p += varint_put(*p, v);
}

static inline void
raw_z(unsigned char **p, int64_t v)
{
	raw_u(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

struct rd {
	const unsigned char	*p, *end;
	bool			 bad;
	int			 ver;	/* the pack's PACK_VERSION byte */
};

static uint64_t
get_u(struct rd *r)
{
	uint64_t v;

	if (varint_get(&r->p, r->end, &v) < 0) {
		r->bad = true;
		return 0;
	}
	return v;
}

static int64_t
get_z(struct rd *r)
{
	uint64_t v = get_u(r);

	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A count that must fit in what remains (each item takes >= min_bytes). */
static size_t
get_n(struct rd *r, size_t min_bytes)
{
	uint64_t v = get_u(r);

	if (v > (uint64_t)(r->end - r->p) / (min_bytes ? min_bytes : 1)) {
		r->bad = true;
		return 0;
	}
	return (size_t)v;
}

/* A sample value: its stored multiple times the column's divisor. */
static int64_t
get_val(struct rd *r, int64_t div)
{
	int64_t v = get_z(r), x;

	if (__builtin_mul_overflow(v, div, &x)) {
		r->bad = true;
		return 0;
	}
	return x;
}

static uint32_t
get_ref(struct rd *r)
{
	uint64_t v = get_u(r);

	if (v > UINT32_MAX) {
		r->bad = true;
		return 0;
	}
	return (uint32_t)v;
}

/* Both versions are written: 3 for span-tagged profiles, 2 for the rest. */
static bool
pack_version_ok(int ver)
{
	return ver == PACK_VERSION_PLAIN || ver == PACK_VERSION;
}

/* The greatest common divisor of the magnitudes, 1 for none or past INT64_MAX. */
static uint64_t
gcd_add(uint64_t g, int64_t v)
{
	uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v, t;

	while (a) {
		t = g % a;
		g = a;
		a = t;
	}
	return g;
}

static int64_t
gcd_div(uint64_t g)
{
	return g == 0 || g > INT64_MAX ? 1 : (int64_t)g;
}

static uint32_t
le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t
le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* --- packing one profile ------------------------------------------------ */

struct pctx {
	struct symtab		*t;
	const struct profile	*p;
	struct buf		*news;
	int64_t			*str, *fn, *mp, *lc;	/* local index -> ref or id, -1 unset */
	struct buf		 e;			/* scratch entry */
	struct buf		 sk;			/* scratch stack key */
	struct span_keys	 spk;			/* labels kept out of stacks */
};

/* Queue entry (kind, id) for writing if it is not durable yet. */
static int
note(struct pctx *c, int kind, uint32_t id)
{
	struct symkind *k = &c->t->k[kind];
	struct sym_new n = { .kind = (uint8_t)kind, .id = id };

	if (k->durable[id] || k->stamp[id] == c->t->epoch)
		return 0;
	k->stamp[id] = c->t->epoch;
	return buf_add(c->news, &n, sizeof(n));
}

static int
intern_entry(struct pctx *c, int kind, const void *data, size_t len, uint32_t *id)
{
	int rc = kind_put(c->t, kind, TAG_REAL, data, len, id);

	return rc < 0 ? rc : note(c, kind, *id);
}

/* The reference (id + 1, 0: "") of local string i. */
static int64_t
ref_str(struct pctx *c, int64_t i)
{
	const char *s;
	uint32_t id;
	int rc;

	if (i <= 0 || (size_t)i >= c->p->nstrings)
		return 0;
	if (c->str[i] < 0) {
		s = c->p->strings[i];
		if (s[0] == '\0')
			return c->str[i] = 0;
		if ((rc = intern_entry(c, SYM_STR, s, strlen(s), &id)) < 0)
			return rc;
		c->str[i] = (int64_t)id + 1;
	}
	return c->str[i];
}

static int
add32(struct buf *b, uint32_t v)
{
	return buf_add(b, &v, 4);
}

static int
add64(struct buf *b, uint64_t v)
{
	return buf_add(b, &v, 8);
}

static int64_t
ref_fn(struct pctx *c, uint32_t i)
{
	const struct pf_function *f = &c->p->functions[i];
	int64_t n, s, fl;
	uint32_t id;
	int rc;

	if (c->fn[i] >= 0)
		return c->fn[i];
	if ((n = ref_str(c, f->name)) < 0 || (s = ref_str(c, f->system_name)) < 0 ||
	    (fl = ref_str(c, f->filename)) < 0)
		return -ENOMEM;
	buf_reset(&c->e);
	if ((rc = add32(&c->e, (uint32_t)n)) < 0 || (rc = add32(&c->e, (uint32_t)s)) < 0 ||
	    (rc = add32(&c->e, (uint32_t)fl)) < 0 ||
	    (rc = add64(&c->e, (uint64_t)f->start_line)) < 0 ||
	    (rc = intern_entry(c, SYM_FN, c->e.data, c->e.len, &id)) < 0)
		return rc;
	return c->fn[i] = (int64_t)id + 1;
}

static int64_t
ref_map(struct pctx *c, uint32_t i)
{
	const struct pf_mapping *m = &c->p->mappings[i];
	int64_t fl, bid;
	uint32_t id;
	unsigned char flags;
	int rc;

	if (c->mp[i] >= 0)
		return c->mp[i];
	if ((fl = ref_str(c, m->filename)) < 0 || (bid = ref_str(c, m->build_id)) < 0)
		return -ENOMEM;
	flags = (unsigned char)(m->has_functions | m->has_filenames << 1 |
	    m->has_line_numbers << 2 | m->has_inline_frames << 3);
	buf_reset(&c->e);
	if ((rc = add64(&c->e, m->start)) < 0 || (rc = add64(&c->e, m->limit)) < 0 ||
	    (rc = add64(&c->e, m->offset)) < 0 || (rc = add32(&c->e, (uint32_t)fl)) < 0 ||
	    (rc = add32(&c->e, (uint32_t)bid)) < 0 || (rc = buf_addc(&c->e, (char)flags)) < 0 ||
	    (rc = intern_entry(c, SYM_MAP, c->e.data, c->e.len, &id)) < 0)
		return rc;
	return c->mp[i] = (int64_t)id + 1;
}

static int64_t
ref_loc(struct pctx *c, uint32_t i)
{
	const struct pf_location *l = &c->p->locations[i];
	int64_t m = 0, *fns, fns_small[16];
	uint32_t id, j;
	int rc;

	if (c->lc[i] >= 0)
		return c->lc[i];
	if (l->mapping && (m = ref_map(c, l->mapping - 1)) < 0)
		return m;
	/* Functions first: the scratch entry is shared. */
	if (l->nlines <= 16)
		fns = fns_small;
	else if ((fns = calloc(l->nlines + 1, sizeof(*fns))) == NULL)
		return -ENOMEM;
	for (j = 0; j < l->nlines; j++) {
		if (l->lines[j].function != PF_NONE &&
		    (fns[j] = ref_fn(c, l->lines[j].function)) < 0) {
			rc = (int)fns[j];
			if (fns != fns_small)
				free(fns);
			return rc;
		}
	}
	buf_reset(&c->e);
	rc = add32(&c->e, (uint32_t)m);
	if (rc == 0)
		rc = add64(&c->e, l->address);
	if (rc == 0)
		rc = buf_addc(&c->e, (char)l->is_folded);
	for (j = 0; rc == 0 && j < l->nlines; j++) {
		if ((rc = add32(&c->e, (uint32_t)fns[j])) == 0 &&
		    (rc = add64(&c->e, (uint64_t)l->lines[j].line)) == 0)
			rc = add64(&c->e, (uint64_t)l->lines[j].column);
	}
	if (fns != fns_small)
		free(fns);
	if (rc < 0 || (rc = intern_entry(c, SYM_LOC, c->e.data, c->e.len, &id)) < 0)
		return rc;
	return c->lc[i] = id;
}

static int64_t
ref_stack(struct pctx *c, const struct pf_sample *s)
{
	struct buf *k = &c->sk;
	uint32_t id, j, l32;
	int64_t li, a, b, u;
	int rc;

	/* Room for the whole key at once: 4 + 4 per location + 20 per label. */
	buf_reset(k);
	if ((rc = buf_reserve(k, 4 + 4 * (size_t)s->nlocs + 20 * (size_t)s->nlabels)) < 0)
		return rc;
	memcpy(k->data, &s->nlocs, 4);
	k->len = 4;
	for (j = 0; j < s->nlocs; j++) {
		if ((li = ref_loc(c, s->locs[j])) < 0)
			return li;
		l32 = (uint32_t)li;
		memcpy(k->data + k->len, &l32, 4);
		k->len += 4;
	}
	k->data[k->len] = '\0';	/* the buffer's invariant */
	for (j = 0; rc == 0 && j < s->nlabels; j++) {
		const struct pf_label *l = &s->labels[j];

		if (span_key_is(&c->spk, l->key))
			continue;	/* per sample, in the span record (span.c) */
		if ((a = ref_str(c, l->key)) < 0 || (b = ref_str(c, l->str)) < 0 ||
		    (u = ref_str(c, l->num_unit)) < 0) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = add32(k, (uint32_t)a)) == 0 && (rc = add32(k, (uint32_t)b)) == 0 &&
		    (rc = add64(k, (uint64_t)l->num)) == 0)
			rc = add32(k, (uint32_t)u);
	}
	if (rc == 0)
		rc = intern_entry(c, SYM_STACK, k->data, k->len, &id);
	return rc < 0 ? rc : (int64_t)id;
}

struct psample {
	uint32_t		 stack;
	const int64_t		*values;
	struct span_tag		 span;
};

/* By span (untagged first: one run per span), then stack. */
static int
psample_cmp(const void *a, const void *b)
{
	const struct psample *x = a, *y = b;

	if (x->span.id != y->span.id)
		return x->span.id < y->span.id ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The header of one group; every string as a reference. */
struct ghdr {
	uint64_t	 count;
	int64_t		 first_time;
	uint32_t	 ntypes;
	uint32_t	*types;		/* type, unit per sample type */
	uint32_t	 ptype, punit;
	int64_t		 period, time_nanos, duration;
	uint32_t	 drop, keep, dflt, doc;
	uint32_t	 mainmap;	/* the first mapping (+1): pprof lists it first */
	uint32_t	*cmts;
	size_t		 ncmts;
	int64_t		*div;		/* per type: the values' common divisor (v3) */
};

static int
hdr_encode(struct buf *b, const struct ghdr *h)
{
	size_t i;
	int rc = 0;

	rc |= buf_add_varint(b, h->count);
	rc |= put_z(b, h->first_time);
	rc |= buf_add_varint(b, h->ntypes);
	for (i = 0; i < 2 * (size_t)h->ntypes; i++)
		rc |= buf_add_varint(b, h->types[i]);
	rc |= buf_add_varint(b, h->ptype);
	rc |= buf_add_varint(b, h->punit);
	rc |= put_z(b, h->period);
	rc |= put_z(b, h->time_nanos);
	rc |= put_z(b, h->duration);
	rc |= buf_add_varint(b, h->drop);
	rc |= buf_add_varint(b, h->keep);
	rc |= buf_add_varint(b, h->dflt);
	rc |= buf_add_varint(b, h->doc);
	rc |= buf_add_varint(b, h->mainmap);
	rc |= buf_add_varint(b, h->ncmts);
	for (i = 0; i < h->ncmts; i++)
		rc |= buf_add_varint(b, h->cmts[i]);
	for (i = 0; h->div != NULL && i < h->ntypes; i++)
		rc |= buf_add_varint(b, (uint64_t)h->div[i]);
	return rc ? -ENOMEM : 0;
}

int
pack_profile(struct symtab *t, const struct profile *p, int64_t time, struct buf *val,
    struct buf *news, struct buf *spans)
{
	struct pctx c = { .t = t, .p = p, .news = news };
	struct psample *ps = NULL;
	struct span_tag *tags = NULL;
	size_t nbad = 0, ncut = 0, ntagged = 0;
	struct ghdr h;
	uint32_t types[128], cmts[64], prev = 0;
	int64_t divs[64];
	size_t i, j, n, ns = 0;
	int64_t r;
	int rc = 0;

	if (p->nsample_types == 0 || p->nsample_types > 64)
		return -EINVAL;
	if (++t->epoch == 0) {	/* stamps from 2^32 packs ago: forget them */
		for (i = 0; i < SYM_NKINDS; i++)
			if (t->k[i].stamp)
				memset(t->k[i].stamp, 0, t->k[i].cap * sizeof(uint32_t));
		t->epoch = 1;
	}
	n = p->nstrings + p->nfunctions + p->nmappings + p->nlocations;
	if ((c.str = malloc((n + 1) * sizeof(int64_t))) == NULL)
		return -ENOMEM;
	memset(c.str, 0xff, (n + 1) * sizeof(int64_t));
	c.fn = c.str + p->nstrings;
	c.mp = c.fn + p->nfunctions;
	c.lc = c.mp + p->nmappings;

	memset(&h, 0, sizeof(h));
	h.count = 1;
	h.first_time = time;
	h.ntypes = (uint32_t)p->nsample_types;
	h.types = types;
	for (i = 0; i < p->nsample_types; i++) {
		if ((r = ref_str(&c, p->sample_types[i].type)) < 0)
			goto nomem;
		types[2 * i] = (uint32_t)r;
		if ((r = ref_str(&c, p->sample_types[i].unit)) < 0)
			goto nomem;
		types[2 * i + 1] = (uint32_t)r;
	}
#define REF(dst, s) do { if ((r = ref_str(&c, (s))) < 0) goto nomem; (dst) = (uint32_t)r; } while (0)
	REF(h.ptype, p->period_type.type);
	REF(h.punit, p->period_type.unit);
	REF(h.drop, p->drop_frames);
	REF(h.keep, p->keep_frames);
	REF(h.dflt, p->default_sample_type);
	REF(h.doc, p->doc_url);
	h.cmts = cmts;
	for (i = 0; i < p->ncomments && h.ncmts < 64; i++) {
		REF(cmts[h.ncmts], p->comments[i]);
		if (cmts[h.ncmts])
			h.ncmts++;
	}
#undef REF
	if (p->nmappings) {
		if ((r = ref_map(&c, 0)) < 0)
			goto nomem;
		h.mainmap = (uint32_t)r;
	}
	h.period = p->period;
	h.time_nanos = p->time_nanos;
	h.duration = p->duration_nanos;

	if ((ps = malloc((p->nsamples + 1) * sizeof(*ps))) == NULL)
		goto nomem;
	span_keys_find(p, &c.spk);
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		/* All-zero samples add nothing to any sum: pprof's merge drops them too. */
		for (j = 0; j < p->nsample_types && s->values[j] == 0; j++)
			;
		if (j == p->nsample_types)
			continue;
		if ((r = ref_stack(&c, s)) < 0) {
			rc = (int)r;
			goto out;
		}
		ps[ns].stack = (uint32_t)r;
		ps[ns].values = s->values;
		{
			bool bad;

			span_tag_of(p, &c.spk, s, &ps[ns].span, &bad);
			nbad += bad;
			ntagged += ps[ns].span.id != 0;
		}
		ns++;
	}
	qsort(ps, ns, sizeof(*ps), psample_cmp);
	if (ntagged) {
		uint64_t prev_id = 0;
		size_t d = 0;

		/* Past the cap the spans are cut (their samples stay, untagged). */
		for (i = 0; i < ns; i++) {
			uint64_t id = ps[i].span.id;

			if (id == 0)
				continue;
			if (id != prev_id && ++d > SPAN_MAX_PER_PROFILE)
				ncut++;
			prev_id = id;
			if (d > SPAN_MAX_PER_PROFILE)
				memset(&ps[i].span, 0, sizeof(ps[i].span));
		}
		if (ncut)
			qsort(ps, ns, sizeof(*ps), psample_cmp);
	}
	if (spans && (ntagged || nbad)) {
		if ((tags = malloc((ns + 1) * sizeof(*tags))) == NULL)
			goto nomem;
		for (i = 0; i < ns; i++)
			tags[i] = ps[i].span;
		if ((rc = span_encode(p, tags, ns, ncut, nbad, spans)) < 0)
			goto out;
	}
	/*
	 * A profile whose samples name spans keeps every (span, stack) pair as
	 * a row, so its values are stored as multiples of their column's common
	 * divisor (CPU: the period), which roughly halves those rows (version
	 * 3). Other profiles stay version 2, values as they are: there the
	 * divided values compress worse (a week of CPU profiles in
	 * bench-scale.sh, 0.49 -> 0.70 bytes per sample).
	 */
	h.div = NULL;
	for (j = 0; ntagged && j < p->nsample_types; j++) {
		uint64_t g = 0;

		for (i = 0; i < ns && g != 1; i++)
			g = gcd_add(g, ps[i].values[j]);
		divs[j] = gcd_div(g);
		if (divs[j] != 1)
			h.div = divs;
	}
	if ((rc = buf_addc(val, h.div ? PACK_VERSION : PACK_VERSION_PLAIN)) < 0 ||
	    (rc = buf_add_varint(val, 1)) < 0 || (rc = hdr_encode(val, &h)) < 0 || (rc = buf_add_varint(val, ns)) < 0)
		goto out;
	/* Samples straight into reserved room: the hot loop of every put. */
	if ((rc = buf_reserve(val, ns * 10 * (1 + p->nsample_types))) < 0)
		goto out;
	{
		unsigned char *w = (unsigned char *)val->data + val->len, *w0 = w;

		for (i = 0; i < ns; i++) {
			raw_z(&w, (int64_t)ps[i].stack - (int64_t)prev);
			prev = ps[i].stack;
			for (j = 0; j < p->nsample_types; j++)
				raw_z(&w, h.div ? ps[i].values[j] / divs[j] : ps[i].values[j]);
		}
		val->len += (size_t)(w - w0);
		val->data[val->len] = '\0';
	}
	goto out;
nomem:
	rc = -ENOMEM;
out:
	free(c.str);
	free(ps);
	free(tags);
	buf_free(&c.e);
	buf_free(&c.sk);
	return rc;
}

/* --- aggregates --------------------------------------------------------- */

struct agroup {
	struct ghdr	 h;
	uint32_t	*slot;		/* stack id -> index + 1 in stacks[], 0: none */
	size_t		 nslot;
	uint32_t	*stacks;
	size_t		 nst, capst;
	int64_t		*vals;		/* nst * h.ntypes */
};

struct agg {
	struct agroup	*g;
	size_t		 ng;
};

struct agg *
agg_create(void)
{
	return calloc(1, sizeof(struct agg));
}

void
agg_free(struct agg *a)
{
	size_t i;

	if (a == NULL)
		return;
	for (i = 0; i < a->ng; i++) {
		free(a->g[i].h.types);
		free(a->g[i].h.cmts);
		free(a->g[i].slot);
		free(a->g[i].stacks);
		free(a->g[i].vals);
	}
	free(a->g);
	free(a);
}

size_t
agg_ngroups(const struct agg *a)
{
	return a->ng;
}

uint64_t
agg_count(const struct agg *a, size_t g)
{
	return a->g[g].h.count;
}

int64_t
agg_first_time(const struct agg *a, size_t g)
{
	return a->g[g].h.first_time;
}

int
agg_totals(const struct agg *a, size_t g, int64_t *totals, size_t max, size_t *ntypes)
{
	const struct agroup *gr = &a->g[g];
	size_t i, t;

	if (gr->h.ntypes > max)
		return -EINVAL;
	memset(totals, 0, gr->h.ntypes * sizeof(*totals));
	for (i = 0; i < gr->nst; i++)
		for (t = 0; t < gr->h.ntypes; t++)
			totals[t] = profile_add(totals[t], gr->vals[i * gr->h.ntypes + t]);
	*ntypes = gr->h.ntypes;
	return 0;
}

/* Read a header into h; its arrays point into types/cmts (caller's). */
static void
hdr_read(struct rd *r, struct ghdr *h, uint32_t *types, uint32_t *cmts, int64_t *div)
{
	uint64_t d;
	size_t i;

	memset(h, 0, sizeof(*h));
	h->count = get_u(r);
	h->first_time = get_z(r);
	h->ntypes = (uint32_t)get_n(r, 2);
	if (h->ntypes == 0 || h->ntypes > 64) {
		r->bad = true;
		return;
	}
	h->types = types;
	for (i = 0; i < 2 * (size_t)h->ntypes; i++)
		types[i] = get_ref(r);
	h->ptype = get_ref(r);
	h->punit = get_ref(r);
	h->period = get_z(r);
	h->time_nanos = get_z(r);
	h->duration = get_z(r);
	h->drop = get_ref(r);
	h->keep = get_ref(r);
	h->dflt = get_ref(r);
	h->doc = get_ref(r);
	h->mainmap = get_ref(r);
	h->ncmts = get_n(r, 1);
	if (h->ncmts > 64) {
		r->bad = true;
		return;
	}
	h->cmts = cmts;
	for (i = 0; i < h->ncmts; i++)
		cmts[i] = get_ref(r);
	h->div = div;
	for (i = 0; i < h->ntypes; i++) {
		d = r->ver >= PACK_VERSION ? get_u(r) : 1;
		if (d == 0 || d > INT64_MAX)
			r->bad = true;
		div[i] = d == 0 || d > INT64_MAX ? 1 : (int64_t)d;
	}
}

/*
 * A profile's pack holds one group (r just past its version byte): its
 * header read into h, the number of its samples returned; r->bad if the
 * pack is not one group.
 */
static size_t
group_open(struct rd *r, struct ghdr *h, uint32_t *types, uint32_t *cmts, int64_t *div)
{
	if (get_n(r, 4) != 1) {
		r->bad = true;
		return 0;
	}
	hdr_read(r, h, types, cmts, div);
	return get_n(r, 1 + h->ntypes);
}

static bool
same_sig(const struct ghdr *x, const struct ghdr *y)
{
	return x->ntypes == y->ntypes && x->ptype == y->ptype && x->punit == y->punit &&
	    memcmp(x->types, y->types, 2 * (size_t)x->ntypes * sizeof(uint32_t)) == 0;
}

/* Fold header h into group g's, with merge.c's rules. */
static int
hdr_fold(struct agroup *g, const struct ghdr *h)
{
	size_t i, j;
	uint32_t *nc;

	if (h->first_time < g->h.first_time)
		g->h.first_time = h->first_time;
	g->h.count += h->count;
	if (h->time_nanos && (g->h.time_nanos == 0 || h->time_nanos < g->h.time_nanos))
		g->h.time_nanos = h->time_nanos;
	g->h.duration = profile_add(g->h.duration, h->duration);
	if (h->period > g->h.period)
		g->h.period = h->period;
	if (g->h.dflt == 0)
		g->h.dflt = h->dflt;
	if (g->h.doc == 0)
		g->h.doc = h->doc;
	if (g->h.mainmap == 0)
		g->h.mainmap = h->mainmap;
	for (i = 0; i < h->ncmts; i++) {
		for (j = 0; j < g->h.ncmts && g->h.cmts[j] != h->cmts[i]; j++)
			;
		if (j < g->h.ncmts || g->h.ncmts >= 64)
			continue;
		if ((nc = realloc(g->h.cmts, (g->h.ncmts + 1) * sizeof(*nc))) == NULL)
			return -ENOMEM;
		g->h.cmts = nc;
		g->h.cmts[g->h.ncmts++] = h->cmts[i];
	}
	return 0;
}

static struct agroup *
group_find(struct agg *a, const struct ghdr *h, int *rc)
{
	struct agroup *g, *ng;
	size_t i;

	*rc = 0;
	for (i = 0; i < a->ng; i++) {
		if (same_sig(&a->g[i].h, h)) {
			if ((*rc = hdr_fold(&a->g[i], h)) < 0)
				return NULL;
			return &a->g[i];
		}
	}
	if ((ng = realloc(a->g, (a->ng + 1) * sizeof(*ng))) == NULL)
		goto nomem;
	a->g = ng;
	g = &a->g[a->ng];
	memset(g, 0, sizeof(*g));
	/* The first profile's period type and frame filters, as merge.c keeps. */
	g->h.ntypes = h->ntypes;
	g->h.ptype = h->ptype;
	g->h.punit = h->punit;
	g->h.drop = h->drop;
	g->h.keep = h->keep;
	g->h.first_time = h->first_time;
	if ((g->h.types = malloc(2 * (size_t)h->ntypes * sizeof(uint32_t))) == NULL)
		goto nomem;
	memcpy(g->h.types, h->types, 2 * (size_t)h->ntypes * sizeof(uint32_t));
	a->ng++;
	if ((*rc = hdr_fold(g, h)) < 0)
		return NULL;
	return g;
nomem:
	*rc = -ENOMEM;
	return NULL;
}

/* The values of stack id s in g, created as zeros. */
static int64_t *
group_slot(struct agroup *g, uint32_t s)
{
	size_t nt = g->h.ntypes;

	if (s >= g->nslot) {
		size_t n = g->nslot ? g->nslot : 256;
		uint32_t *ns;

		while (n <= s)
			n *= 2;
		if ((ns = realloc(g->slot, n * sizeof(*ns))) == NULL)
			return NULL;
		memset(ns + g->nslot, 0, (n - g->nslot) * sizeof(*ns));
		g->slot = ns;
		g->nslot = n;
	}
	if (g->slot[s] == 0) {
		if (g->nst == g->capst) {
			size_t n = g->capst ? g->capst * 2 : 256;
			uint32_t *st;
			int64_t *v;

			if ((st = realloc(g->stacks, n * sizeof(*st))) == NULL)
				return NULL;
			g->stacks = st;
			if ((v = realloc(g->vals, n * nt * sizeof(*v))) == NULL)
				return NULL;
			g->vals = v;
			g->capst = n;
		}
		g->stacks[g->nst] = s;
		memset(g->vals + g->nst * nt, 0, nt * sizeof(int64_t));
		g->slot[s] = (uint32_t)++g->nst;
	}
	return g->vals + (size_t)(g->slot[s] - 1) * nt;
}

/* Whether a pack parses to its end. */
static int
pack_check(const void *val, size_t len)
{
	struct rd r = { .p = val, .end = (const unsigned char *)val + len,
	    .ver = len ? *(const unsigned char *)val : 0 };
	uint32_t types[128], cmts[64];
	int64_t div[64];
	struct ghdr h;
	size_t ng, i, ns, t;
	int64_t stack;

	r.p++;
	ng = get_n(&r, 4);
	for (i = 0; i < ng && !r.bad; i++) {
		hdr_read(&r, &h, types, cmts, div);
		ns = get_n(&r, 1 + h.ntypes);
		for (stack = 0; ns-- > 0 && !r.bad;) {
			stack += get_z(&r);
			if (stack < 0 || stack >= UINT32_MAX)
				r.bad = true;
			for (t = 0; t < h.ntypes; t++)
				get_val(&r, h.div[t]);
		}
	}
	return r.bad || r.p != r.end ? -EINVAL : 0;
}

int
agg_add(struct agg *a, const void *val, size_t len, struct buf *err)
{
	struct rd r = { .p = val, .end = (const unsigned char *)val + len,
	    .ver = len ? *(const unsigned char *)val : 0 };
	uint32_t types[128], cmts[64];
	int64_t div[64];
	struct ghdr h;
	struct agroup *g;
	size_t ng, i, ns, t;
	int64_t stack = 0, *v;
	int rc = 0;

	if (len < 1 || !pack_version_ok(r.ver)) {
		if (err)
			buf_printf(err, "unknown stored format %d", len ? r.p[0] : -1);
		return -EINVAL;
	}
	/* Checked whole before anything is added: a bad pack adds nothing. */
	if ((rc = pack_check(val, len)) < 0) {
		if (err)
			buf_adds(err, "stored pack is truncated or corrupt");
		return rc;
	}
	r.p++;
	ng = get_n(&r, 4);
	for (i = 0; i < ng && !r.bad; i++) {
		hdr_read(&r, &h, types, cmts, div);
		ns = get_n(&r, 1 + h.ntypes);
		if (r.bad)
			break;
		if ((g = group_find(a, &h, &rc)) == NULL)
			return rc;
		for (stack = 0; ns-- > 0 && !r.bad;) {
			stack += get_z(&r);
			if (stack < 0 || stack >= UINT32_MAX) {
				r.bad = true;
				break;
			}
			if ((v = group_slot(g, (uint32_t)stack)) == NULL)
				return -ENOMEM;
			for (t = 0; t < h.ntypes; t++)
				v[t] = profile_add(v[t], get_val(&r, h.div[t]));
		}
	}
	if (r.bad || r.p != r.end) {
		if (err)
			buf_adds(err, "stored pack is truncated or corrupt");
		return -EINVAL;
	}
	return 0;
}

int
agg_add_ranges(struct agg *a, const void *val, size_t len, const uint32_t *rg, size_t n,
    int64_t *totals, size_t max, size_t *ntypes)
{
	struct rd r = { .p = val, .end = (const unsigned char *)val + len,
	    .ver = len ? *(const unsigned char *)val : 0 };
	uint32_t types[128], cmts[64];
	int64_t div[64];
	struct ghdr h;
	struct agroup *g;
	size_t ns, i, t, k = 0;
	int64_t stack = 0, *v, x;
	int rc = 0;

	if (len < 1 || !pack_version_ok(r.ver) || pack_check(val, len) < 0)
		return -EINVAL;
	r.p++;
	ns = group_open(&r, &h, types, cmts, div);
	if (r.bad || h.ntypes > max)
		return -EINVAL;
	*ntypes = h.ntypes;
	memset(totals, 0, h.ntypes * sizeof(*totals));
	if ((g = group_find(a, &h, &rc)) == NULL)
		return rc;
	for (i = 0; i < ns && !r.bad; i++) {
		bool in;

		stack += get_z(&r);
		if (stack < 0 || stack >= UINT32_MAX)
			return -EINVAL;
		while (k < n && i >= (size_t)rg[2 * k] + rg[2 * k + 1])
			k++;
		in = k < n && i >= rg[2 * k];
		v = in ? group_slot(g, (uint32_t)stack) : NULL;
		if (in && v == NULL)
			return -ENOMEM;
		for (t = 0; t < h.ntypes; t++) {
			x = get_val(&r, h.div[t]);
			if (in) {
				v[t] = profile_add(v[t], x);
				totals[t] = profile_add(totals[t], x);
			}
		}
		if (k == n)
			break;	/* past the last range: the rest is not read */
	}
	return r.bad ? -EINVAL : 0;
}

static int
idx_cmp(const void *a, const void *b, void *arg)
{
	const uint32_t *stacks = arg;
	uint32_t x = stacks[*(const uint32_t *)a], y = stacks[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

/* Indexes of g's stacks in stack id order (caller frees). */
static uint32_t *
group_order(const struct agroup *g)
{
	uint32_t *ord = malloc((g->nst + 1) * sizeof(*ord));
	size_t i;

	if (ord == NULL)
		return NULL;
	for (i = 0; i < g->nst; i++)
		ord[i] = (uint32_t)i;
	/* The slot table is dense: walking it gives the order without sorting. */
	if (g->nslot <= 4 * g->nst + 1024) {
		size_t n = 0;

		for (i = 0; i < g->nslot; i++)
			if (g->slot[i])
				ord[n++] = g->slot[i] - 1;
		return ord;
	}
	qsort_r(ord, g->nst, sizeof(*ord), idx_cmp, g->stacks);
	return ord;
}

int
agg_encode(const struct agg *a, struct buf *out)
{
	size_t i, k, t, ns;
	int rc;

	if ((rc = buf_addc(out, PACK_VERSION_PLAIN)) < 0 || (rc = buf_add_varint(out, a->ng)) < 0)
		return rc;
	for (i = 0; i < a->ng; i++) {
		const struct agroup *g = &a->g[i];
		size_t nt = g->h.ntypes;
		uint32_t *ord, prev = 0;
		struct ghdr h = g->h;

		h.div = NULL;	/* merged packs hold no spans: version 2 */
		if ((rc = hdr_encode(out, &h)) < 0)
			return rc;
		if ((ord = group_order(g)) == NULL)
			return -ENOMEM;
		for (ns = 0, k = 0; k < g->nst; k++) {
			const int64_t *v = g->vals + (size_t)ord[k] * nt;

			for (t = 0; t < nt && v[t] == 0; t++)
				;
			ns += t < nt;
		}
		rc = buf_add_varint(out, ns);
		for (k = 0; k < g->nst && rc == 0; k++) {
			const int64_t *v = g->vals + (size_t)ord[k] * nt;

			for (t = 0; t < nt && v[t] == 0; t++)
				;
			if (t == nt)
				continue;	/* summed to zero: nothing to keep */
			rc = put_z(out, (int64_t)g->stacks[ord[k]] - (int64_t)prev);
			prev = g->stacks[ord[k]];
			for (t = 0; t < nt && rc == 0; t++)
				rc = put_z(out, v[t]);
		}
		free(ord);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The string of reference ref ("" for 0 or a bad one). */
static const char *
sym_str(const struct symtab *t, uint32_t ref, size_t *len)
{
	const char *s;

	*len = 0;
	if (ref == 0 || (s = symtab_entry(t, SYM_STR, ref - 1, len)) == NULL)
		return "";
	return s;
}

int
agg_signature(const struct agg *a, const struct symtab *t, size_t g, struct buf *out)
{
	const struct ghdr *h = &a->g[g].h;
	size_t i, l1, l2;
	const char *s1, *s2;
	int rc;

	s1 = sym_str(t, h->ptype, &l1);
	s2 = sym_str(t, h->punit, &l2);
	rc = buf_printf(out, "%.*s/%.*s", (int)l1, s1, (int)l2, s2);
	for (i = 0; rc == 0 && i < h->ntypes; i++) {
		s1 = sym_str(t, h->types[2 * i], &l1);
		s2 = sym_str(t, h->types[2 * i + 1], &l2);
		rc = buf_printf(out, "\x1f%.*s/%.*s", (int)l1, s1, (int)l2, s2);
	}
	return rc;
}

/* --- back to pprof ------------------------------------------------------ */

struct pprof_rebuild {
	const struct symtab	*t;
	struct profile		*p;
	uint32_t		*str, *fn, *mp, *lc;	/* symtab id -> local index + 1 */
	size_t			 nstr, nfn, nmp, nlc;
	size_t			 capstr, capfn, capmp, caplc;
	bool			 bad;
};

/* Push one element of size esz to an arena-less growable array. */
static void *
grow(void **arr, size_t *n, size_t *cap, size_t esz)
{
	void *na;

	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;

		if ((na = realloc(*arr, nc * esz)) == NULL)
			return NULL;
		*arr = na;
		*cap = nc;
	}
	return (char *)*arr + (*n)++ * esz;
}

struct ubufs {
	const char		**strs;
	struct pf_function	*fns;
	struct pf_mapping	*mps;
	struct pf_location	*lcs;
};

/* Local string index of reference ref. */
static int64_t
u_str(struct pprof_rebuild *c, struct ubufs *b, uint32_t ref)
{
	const char *s, **d;
	size_t len;

	if (ref == 0)
		return 0;
	if (ref - 1 >= symtab_count(c->t, SYM_STR) ||
	    (s = symtab_entry(c->t, SYM_STR, ref - 1, &len)) == NULL) {
		c->bad = true;
		return 0;
	}
	if (c->str[ref - 1])
		return c->str[ref - 1];
	if ((d = grow((void **)&b->strs, &c->nstr, &c->capstr, sizeof(*d))) == NULL) {
		c->bad = true;
		return 0;
	}
	if ((*d = arena_alloc(c->p->arena, len + 1)) == NULL) {
		c->bad = true;
		return 0;
	}
	memcpy((char *)*d, s, len);
	((char *)*d)[len] = '\0';
	c->str[ref - 1] = (uint32_t)(c->nstr - 1);
	return (int64_t)(c->nstr - 1);
}

static uint32_t
u_fn(struct pprof_rebuild *c, struct ubufs *b, uint32_t ref)
{
	const unsigned char *e;
	struct pf_function *f;
	size_t len;

	if (ref == 0)
		return PF_NONE;
	if ((e = symtab_entry(c->t, SYM_FN, ref - 1, &len)) == NULL || len != 20) {
		c->bad = true;
		return PF_NONE;
	}
	if (c->fn[ref - 1])
		return c->fn[ref - 1] - 1;
	if ((f = grow((void **)&b->fns, &c->nfn, &c->capfn, sizeof(*f))) == NULL) {
		c->bad = true;
		return PF_NONE;
	}
	f->name = u_str(c, b, le32(e));
	f->system_name = u_str(c, b, le32(e + 4));
	f->filename = u_str(c, b, le32(e + 8));
	f->start_line = (int64_t)le64(e + 12);
	c->fn[ref - 1] = (uint32_t)c->nfn;
	return (uint32_t)(c->nfn - 1);
}

static uint32_t
u_map(struct pprof_rebuild *c, struct ubufs *b, uint32_t ref)
{
	const unsigned char *e;
	struct pf_mapping *m;
	size_t len;
	int64_t fl, bid;

	if (ref == 0)
		return 0;
	if ((e = symtab_entry(c->t, SYM_MAP, ref - 1, &len)) == NULL || len != 33) {
		c->bad = true;
		return 0;
	}
	if (c->mp[ref - 1])
		return c->mp[ref - 1];
	fl = u_str(c, b, le32(e + 24));
	bid = u_str(c, b, le32(e + 28));
	if ((m = grow((void **)&b->mps, &c->nmp, &c->capmp, sizeof(*m))) == NULL) {
		c->bad = true;
		return 0;
	}
	memset(m, 0, sizeof(*m));
	m->start = le64(e);
	m->limit = le64(e + 8);
	m->offset = le64(e + 16);
	m->filename = fl;
	m->build_id = bid;
	m->has_functions = e[32] & 1;
	m->has_filenames = e[32] >> 1 & 1;
	m->has_line_numbers = e[32] >> 2 & 1;
	m->has_inline_frames = e[32] >> 3 & 1;
	c->mp[ref - 1] = (uint32_t)c->nmp;
	return (uint32_t)c->nmp;	/* index + 1 */
}

static uint32_t
u_loc(struct pprof_rebuild *c, struct ubufs *b, uint32_t id)
{
	const unsigned char *e;
	struct pf_location *l, tmp;
	size_t len, j;

	if ((e = symtab_entry(c->t, SYM_LOC, id, &len)) == NULL || len < 13 ||
	    (len - 13) % 20 != 0) {
		c->bad = true;
		return 0;
	}
	if (c->lc[id])
		return c->lc[id] - 1;
	memset(&tmp, 0, sizeof(tmp));
	tmp.mapping = u_map(c, b, le32(e));
	tmp.address = le64(e + 4);
	tmp.is_folded = e[12] != 0;
	tmp.nlines = (uint32_t)((len - 13) / 20);
	if (tmp.nlines && (tmp.lines = arena_alloc(c->p->arena,
	    tmp.nlines * sizeof(*tmp.lines))) == NULL) {
		c->bad = true;
		return 0;
	}
	for (j = 0; j < tmp.nlines; j++) {
		const unsigned char *ln = e + 13 + 20 * j;

		tmp.lines[j].function = u_fn(c, b, le32(ln));
		tmp.lines[j].line = (int64_t)le64(ln + 4);
		tmp.lines[j].column = (int64_t)le64(ln + 12);
	}
	if ((l = grow((void **)&b->lcs, &c->nlc, &c->caplc, sizeof(*l))) == NULL) {
		c->bad = true;
		return 0;
	}
	*l = tmp;
	c->lc[id] = (uint32_t)c->nlc;
	return (uint32_t)(c->nlc - 1);
}

/*
 * Fill sample s from stack id; allocations in the profile's arena, with
 * room for extra labels past the stack's own.
 */
static void
u_sample(struct pprof_rebuild *c, struct ubufs *b, uint32_t id, struct pf_sample *s,
    size_t extra)
{
	const unsigned char *e;
	size_t len, j, nl;
	uint32_t nlocs;

	if ((e = symtab_entry(c->t, SYM_STACK, id, &len)) == NULL || len < 4) {
		c->bad = true;
		return;
	}
	nlocs = le32(e);
	if ((size_t)nlocs > (len - 4) / 4 || (len - 4 - 4 * (size_t)nlocs) % 20 != 0) {
		c->bad = true;
		return;
	}
	nl = (len - 4 - 4 * (size_t)nlocs) / 20;
	s->nlocs = nlocs;
	s->nlabels = (uint32_t)nl;
	s->locs = arena_alloc(c->p->arena, (nlocs + 1) * sizeof(uint32_t));
	s->labels = arena_alloc(c->p->arena, (nl + extra + 1) * sizeof(struct pf_label));
	if (s->locs == NULL || s->labels == NULL) {
		c->bad = true;
		return;
	}
	for (j = 0; j < nlocs; j++)
		s->locs[j] = u_loc(c, b, le32(e + 4 + 4 * j));
	for (j = 0; j < nl; j++) {
		const unsigned char *l = e + 4 + 4 * (size_t)nlocs + 20 * j;

		s->labels[j].key = u_str(c, b, le32(l));
		s->labels[j].str = u_str(c, b, le32(l + 4));
		s->labels[j].num = (int64_t)le64(l + 8);
		s->labels[j].num_unit = u_str(c, b, le32(l + 16));
	}
}

/* A string of the profile being built that no symbol table holds. */
static int64_t
u_own(struct pprof_rebuild *c, struct ubufs *b, const char *s, size_t len)
{
	const char **d;
	char *m;

	if ((d = grow((void **)&b->strs, &c->nstr, &c->capstr, sizeof(*d))) == NULL ||
	    (m = arena_alloc(c->p->arena, len + 1)) == NULL) {
		c->bad = true;
		return 0;
	}
	memcpy(m, s, len);
	m[len] = '\0';
	*d = m;
	return (int64_t)(c->nstr - 1);
}

/*
 * Begin the profile of header h in c and b (room for nsamples samples):
 * its sample types and the header's fields. rebuild_free() frees c and b
 * whatever this returns.
 */
static int
rebuild_open(struct pprof_rebuild *c, struct ubufs *b, const struct symtab *t,
    const struct ghdr *h, size_t nsamples)
{
	struct profile *p;
	size_t i, nt = h->ntypes;

	memset(c, 0, sizeof(*c));
	memset(b, 0, sizeof(*b));
	c->t = t;
	if ((p = calloc(1, sizeof(*p))) == NULL || (p->arena = arena_create()) == NULL) {
		free(p);
		return -ENOMEM;
	}
	c->p = p;
	c->str = calloc(symtab_count(t, SYM_STR) + 1, sizeof(uint32_t));
	c->fn = calloc(symtab_count(t, SYM_FN) + 1, sizeof(uint32_t));
	c->mp = calloc(symtab_count(t, SYM_MAP) + 1, sizeof(uint32_t));
	c->lc = calloc(symtab_count(t, SYM_LOC) + 1, sizeof(uint32_t));
	if (!c->str || !c->fn || !c->mp || !c->lc ||
	    grow((void **)&b->strs, &c->nstr, &c->capstr, sizeof(char *)) == NULL)
		return -ENOMEM;
	b->strs[0] = "";
	p->nsample_types = nt;
	if ((p->sample_types = arena_alloc(p->arena, nt * sizeof(*p->sample_types))) == NULL ||
	    (p->samples = arena_alloc(p->arena, (nsamples + 1) * sizeof(*p->samples))) == NULL)
		return -ENOMEM;
	for (i = 0; i < nt; i++) {
		p->sample_types[i].type = u_str(c, b, h->types[2 * i]);
		p->sample_types[i].unit = u_str(c, b, h->types[2 * i + 1]);
	}
	p->period_type.type = u_str(c, b, h->ptype);
	p->period_type.unit = u_str(c, b, h->punit);
	p->drop_frames = u_str(c, b, h->drop);
	p->keep_frames = u_str(c, b, h->keep);
	p->default_sample_type = u_str(c, b, h->dflt);
	p->doc_url = u_str(c, b, h->doc);
	p->period = h->period;
	p->time_nanos = h->time_nanos;
	p->duration_nanos = h->duration;
	p->ncomments = h->ncmts;
	if ((p->comments = arena_alloc(p->arena, (h->ncmts + 1) * sizeof(int64_t))) == NULL)
		return -ENOMEM;
	for (i = 0; i < h->ncmts; i++)
		p->comments[i] = u_str(c, b, h->cmts[i]);
	u_map(c, b, h->mainmap);
	return c->bad ? -EINVAL : 0;
}

/* The profile begun in c, its first ns samples filled, into *out. */
static int
rebuild_close(struct pprof_rebuild *c, struct ubufs *b, size_t ns, struct profile **out)
{
	struct profile *p = c->p;

	if (c->bad)
		return -EINVAL;
	p->nsamples = ns;
	p->nstrings = c->nstr;
	p->nfunctions = c->nfn;
	p->nmappings = c->nmp;
	p->nlocations = c->nlc;
	if ((p->strings = arena_memdup(p->arena, b->strs, c->nstr * sizeof(char *))) == NULL ||
	    (p->functions = arena_memdup(p->arena, b->fns ? (void *)b->fns : "",
	    c->nfn * sizeof(*b->fns))) == NULL ||
	    (p->mappings = arena_memdup(p->arena, b->mps ? (void *)b->mps : "",
	    c->nmp * sizeof(*b->mps))) == NULL ||
	    (p->locations = arena_memdup(p->arena, b->lcs ? (void *)b->lcs : "",
	    c->nlc * sizeof(*b->lcs))) == NULL)
		return -ENOMEM;
	*out = p;
	c->p = NULL;
	return 0;
}

static void
rebuild_free(struct pprof_rebuild *c, struct ubufs *b)
{
	profile_free(c->p);
	free(c->str);
	free(c->fn);
	free(c->mp);
	free(c->lc);
	free(b->strs);
	free(b->fns);
	free(b->mps);
	free(b->lcs);
	memset(c, 0, sizeof(*c));
	memset(b, 0, sizeof(*b));
}

int
agg_profile(const struct agg *a, const struct symtab *t, size_t gi, bool average_gauges,
    struct profile **out)
{
	const struct agroup *g = &a->g[gi];
	size_t nt = g->h.ntypes, i, k, ns = 0;
	struct pprof_rebuild c;
	struct ubufs b;
	struct profile *p;
	bool gauge[64];
	uint32_t *ord = NULL;
	int rc;

	*out = NULL;
	if ((rc = rebuild_open(&c, &b, t, &g->h, g->nst)) < 0)
		goto out;
	if ((ord = group_order(g)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	p = c.p;
	for (i = 0; i < nt; i++)
		gauge[i] = average_gauges && g->h.count > 1 &&
		    profile_type_is_gauge(b.strs[p->sample_types[i].type]);
	for (k = 0; k < g->nst && !c.bad; k++) {
		const int64_t *v = g->vals + (size_t)ord[k] * nt;
		struct pf_sample *s = &p->samples[ns];

		for (i = 0; i < nt && v[i] == 0; i++)
			;
		if (i == nt)
			continue;
		memset(s, 0, sizeof(*s));
		u_sample(&c, &b, g->stacks[ord[k]], s, 0);
		if ((s->values = arena_memdup(p->arena, v, nt * sizeof(int64_t))) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		for (i = 0; i < nt; i++) {
			int64_t q, r, ar, n = (int64_t)g->h.count;

			if (!gauge[i])
				continue;
			/* merge_finish's rounding: half away from zero. */
			q = s->values[i] / n;
			r = s->values[i] % n;
			ar = r < 0 ? -r : r;
			s->values[i] = ar >= n - ar ? q + (r < 0 ? -1 : 1) : q;
		}
		ns++;
	}
	rc = rebuild_close(&c, &b, ns, out);
out:
	rebuild_free(&c, &b);
	free(ord);
	return rc;
}

/* Append label key=str to sample s (room made by u_sample's extra). */
static void
label_add(struct pf_sample *s, int64_t key, int64_t str)
{
	struct pf_label *l = &s->labels[s->nlabels++];

	memset(l, 0, sizeof(*l));
	l->key = key;
	l->str = str;
}

int
pack_rows_profile(const void *val, size_t len, const struct symtab *t,
    const struct span_runs *sr, struct profile **out)
{
	struct rd r = { .p = val, .end = (const unsigned char *)val + len,
	    .ver = len ? *(const unsigned char *)val : 0 };
	uint32_t types[128], cmts[64];
	int64_t div[64], stack = 0, kid = 0, kname = 0, ktrace = 0, sid = 0;
	int64_t *trs = NULL, *nms = NULL;	/* string of each trace, name + 1; 0: not yet */
	struct pprof_rebuild c;
	struct ubufs b;
	struct ghdr h;
	size_t ns, i, j, k = 0, kcur = SIZE_MAX;
	char hex[40];
	int rc;

	*out = NULL;
	memset(&c, 0, sizeof(c));
	memset(&b, 0, sizeof(b));
	if (len < 1 || !pack_version_ok(r.ver) || pack_check(val, len) < 0)
		return -EINVAL;
	r.p++;
	ns = group_open(&r, &h, types, cmts, div);
	if (r.bad)
		return -EINVAL;
	if ((trs = calloc(sr->ntraces + 1, sizeof(*trs))) == NULL ||
	    (nms = calloc(sr->nnames + 1, sizeof(*nms))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = rebuild_open(&c, &b, t, &h, ns)) < 0)
		goto out;
	for (i = 0; i < ns && !c.bad; i++) {
		struct pf_sample *s = &c.p->samples[i];
		const struct span_run *sp;
		int64_t *v;

		stack += get_z(&r);
		if (r.bad || stack < 0 || stack >= UINT32_MAX) {
			rc = -EINVAL;
			goto out;
		}
		if ((v = arena_alloc(c.p->arena, h.ntypes * sizeof(*v))) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		for (j = 0; j < h.ntypes; j++)
			v[j] = get_val(&r, h.div[j]);
		while (k < sr->nrun && i >= (size_t)sr->run[k].start + sr->run[k].len)
			k++;
		sp = k < sr->nrun && i >= sr->run[k].start ? &sr->run[k] : NULL;
		memset(s, 0, sizeof(*s));
		u_sample(&c, &b, (uint32_t)stack, s, sp ? 3 : 0);
		s->values = v;
		if (sp == NULL || c.bad)
			continue;
		/* Each string once: a span's id per run, names and traces per record. */
		if (k != kcur) {
			snprintf(hex, sizeof(hex), "%016" PRIx64, sp->id);
			sid = u_own(&c, &b, hex, 16);
			kcur = k;
		}
		if (kid == 0)
			kid = u_own(&c, &b, "span_id", 7);
		label_add(s, kid, sid);
		if (sp->name && sp->name <= sr->nnames && sr->name_len[sp->name - 1]) {
			if (kname == 0)
				kname = u_own(&c, &b, "span_name", 9);
			if (nms[sp->name] == 0)
				nms[sp->name] = u_own(&c, &b, sr->name[sp->name - 1],
				    sr->name_len[sp->name - 1]);
			label_add(s, kname, nms[sp->name]);
		}
		if (sp->trace && sp->trace <= sr->ntraces) {
			if (ktrace == 0)
				ktrace = u_own(&c, &b, "trace_id", 8);
			if (trs[sp->trace] == 0) {
				const unsigned char *tr = sr->traces + 16 * (size_t)(sp->trace - 1);

				for (j = 0; j < 16; j++)
					snprintf(hex + 2 * j, 3, "%02x", tr[j]);
				trs[sp->trace] = u_own(&c, &b, hex, 32);
			}
			label_add(s, ktrace, trs[sp->trace]);
		}
	}
	if (rc == 0 && (r.bad || r.p != r.end))
		rc = -EINVAL;
	if (rc == 0)
		rc = rebuild_close(&c, &b, ns, out);
out:
	rebuild_free(&c, &b);
	free(trs);
	free(nms);
	return rc;
}

int
pack_totals(const void *val, size_t len, int64_t *totals, size_t max, size_t *ntypes)
{
	struct rd r = { .p = val, .end = (const unsigned char *)val + len,
	    .ver = len ? *(const unsigned char *)val : 0 };
	uint32_t types[128], cmts[64];
	int64_t div[64];
	struct ghdr h;
	size_t ns, t;

	if (len < 1 || !pack_version_ok(r.ver))
		return -EINVAL;
	r.p++;
	ns = group_open(&r, &h, types, cmts, div);
	if (r.bad || h.ntypes > max)
		return -EINVAL;
	memset(totals, 0, h.ntypes * sizeof(*totals));
	while (ns-- > 0 && !r.bad) {
		get_z(&r);
		for (t = 0; t < h.ntypes; t++)
			totals[t] = profile_add(totals[t], get_val(&r, h.div[t]));
	}
	*ntypes = h.ntypes;
	return r.bad ? -EINVAL : 0;
}
