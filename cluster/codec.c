/*
 * codec: the strings a fleet keeps in ClickHouse for what pprof holds in
 * tables of ids. A stack (with the sample's labels) becomes one string,
 * stored once under its hash; a group's header (period and sample types)
 * another. Both are rebuilt into a profile through the merge's builder side,
 * which deduplicates functions, mappings and locations as pprof's merge does.
 *
 * Stack text, separators being bytes that escaped strings never hold:
 *   location ('\x1e' between locations, leaf first):
 *     address(hex) \x1f folded(0|1) \x1f mapping \x1f mapfile \x1f buildid
 *     then per line: \x1f name \x1f system_name \x1f filename \x1f start_line \x1f line \x1f column
 *   mapping: "" for none, else start,limit,offset,flags (hex; flags: has_functions 1,
 *     has_filenames 2, has_line_numbers 4, has_inline_frames 8)
 *   then, if the sample has labels: \x1d and per label ('\x1e' between):
 *     key \x1f str \x1f num \x1f num_unit
 * Header text: period_type \x1f period_unit \x1f default_type, then per sample
 *   type \x1f type \x1f unit.
 * Strings are written with bytes below 0x20, '%' and 0x7f as %XX. In a stack,
 * a mapping equal to the previous location's, and a system name equal to the
 * name, are written as the single byte 0x1c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

#define CODEC_MAX_LINES		256
#define CODEC_MAX_LOCS		4096
#define CODEC_MAX_LABELS	64

/* Runs of plain bytes are copied whole: names and files rarely hold any to escape. */
static void
esc(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *run = s;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch == '%' || ch == 0x7f) {
			char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };

			buf_add(b, run, (size_t)(s - run));
			buf_add(b, e, sizeof(e));
			run = s + 1;
		}
	}
	buf_add(b, run, (size_t)(s - run));
}

/*
 * Location li; in a stack's text (prev_mapping: the previous location's, or
 * UINT32_MAX), a mapping equal to the previous one and a system name equal
 * to the name are written SAME, which no escaped string holds.
 */
#define SAME	"\x1c"

static int
location(const struct profile *p, uint32_t li, uint32_t prev_mapping, bool compact,
    struct buf *out)
{
	const struct pf_location *l;
	uint32_t j;

	if (li >= p->nlocations)
		return -EINVAL;
	l = &p->locations[li];
	buf_printf(out, "%" PRIx64 "\x1f%d\x1f", l->address, l->is_folded ? 1 : 0);
	if (compact && l->mapping && l->mapping == prev_mapping)
		buf_adds(out, SAME "\x1f\x1f");
	else if (l->mapping && l->mapping <= p->nmappings) {
		const struct pf_mapping *m = &p->mappings[l->mapping - 1];

		buf_printf(out, "%" PRIx64 ",%" PRIx64 ",%" PRIx64 ",%x\x1f", m->start,
		    m->limit, m->offset, (m->has_functions ? 1 : 0) |
		    (m->has_filenames ? 2 : 0) | (m->has_line_numbers ? 4 : 0) |
		    (m->has_inline_frames ? 8 : 0));
		esc(out, profile_str(p, m->filename));
		buf_addc(out, '\x1f');
		esc(out, profile_str(p, m->build_id));
	} else
		buf_adds(out, "\x1f\x1f");
	for (j = 0; j < l->nlines; j++) {
		const struct pf_line *ln = &l->lines[j];
		const struct pf_function *f = ln->function < p->nfunctions ?
		    &p->functions[ln->function] : NULL;

		buf_addc(out, '\x1f');
		esc(out, f ? profile_str(p, f->name) : "");
		buf_addc(out, '\x1f');
		if (compact && f && f->system_name == f->name && f->name)
			buf_adds(out, SAME);
		else
			esc(out, f ? profile_str(p, f->system_name) : "");
		buf_addc(out, '\x1f');
		esc(out, f ? profile_str(p, f->filename) : "");
		buf_printf(out, "\x1f%" PRId64 "\x1f%" PRId64 "\x1f%" PRId64,
		    f ? f->start_line : 0, ln->line, ln->column);
	}
	return buf_error(out);
}

int
codec_location(const struct profile *p, uint32_t li, struct buf *out)
{
	return location(p, li, UINT32_MAX, false, out);
}

int
codec_labels(const struct profile *p, const struct pf_sample *s, struct buf *out)
{
	uint32_t i;

	if (s->nlabels == 0)
		return 0;
	buf_addc(out, '\x1d');
	for (i = 0; i < s->nlabels; i++) {
		const struct pf_label *lb = &s->labels[i];

		if (i)
			buf_addc(out, '\x1e');
		esc(out, profile_str(p, lb->key));
		buf_addc(out, '\x1f');
		esc(out, lb->str ? profile_str(p, lb->str) : "");
		buf_printf(out, "\x1f%" PRId64 "\x1f", lb->num);
		esc(out, profile_str(p, lb->num_unit));
	}
	return buf_error(out);
}

int
codec_stack(const struct profile *p, const struct pf_sample *s, struct buf *out)
{
	uint32_t i;
	int rc;

	for (i = 0; i < s->nlocs; i++) {
		if (i)
			buf_addc(out, '\x1e');
		if ((rc = location(p, s->locs[i], i && s->locs[i - 1] < p->nlocations ?
		    p->locations[s->locs[i - 1]].mapping : UINT32_MAX, true, out)) < 0)
			return rc;
	}
	return codec_labels(p, s, out);
}

int
codec_header(const struct profile *p, struct buf *out)
{
	size_t i;

	esc(out, profile_str(p, p->period_type.type));
	buf_addc(out, '\x1f');
	esc(out, profile_str(p, p->period_type.unit));
	buf_addc(out, '\x1f');
	esc(out, profile_str(p, p->default_sample_type));
	for (i = 0; i < p->nsample_types; i++) {
		buf_addc(out, '\x1f');
		esc(out, profile_str(p, p->sample_types[i].type));
		buf_addc(out, '\x1f');
		esc(out, profile_str(p, p->sample_types[i].unit));
	}
	return buf_error(out);
}

/* --- reading back ---------------------------------------------------------- */

/* Split [p, end) at sep into at most max fields; -EINVAL past max. */
static int
split(const char *p, const char *end, char sep, const char **f, size_t *fl, size_t max,
    size_t *n)
{
	const char *s = p;

	*n = 0;
	for (;; p++) {
		if (p == end || *p == sep) {
			if (*n == max)
				return -EINVAL;
			f[*n] = s;
			fl[(*n)++] = (size_t)(p - s);
			if (p == end)
				return 0;
			s = p + 1;
		}
	}
}

/* Unescape one field into a NUL-terminated string in b (reset first). */
static int
unesc(struct buf *b, const char *s, size_t n)
{
	buf_reset(b);
	return buf_add_pct_decoded(b, s, n, PCT_NUL_OK);
}

static int64_t
str_of(struct merge *m, struct buf *tmp, const char *s, size_t n)
{
	if (unesc(tmp, s, n) < 0)
		return -EINVAL;
	return merge_string(m, tmp->data);
}

static int
num(const char *s, size_t n, int64_t *v, int base)
{
	char tmp[40], *e;

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	*v = base == 16 ? (int64_t)strtoull(tmp, &e, 16) : strtoll(tmp, &e, 10);
	return *e || errno ? -EINVAL : 0;
}

/* The previous location's mapping while a stack is read back. */
struct prevmap {
	int64_t		 mapping;	/* merge index + 1, 0: none */
	uint64_t	 map_start;
	bool		 set;
};

static int
add_location(struct merge *m, struct buf *tmp, const char *p, size_t n, struct prevmap *pm,
    int64_t *out)
{
	const char *f[5 + 6 * CODEC_MAX_LINES], *mf[4];
	size_t fl[5 + 6 * CODEC_MAX_LINES], mfl[4], nf, nm, k;
	struct pf_line lines[CODEC_MAX_LINES];
	struct pf_mapping mp;
	int64_t addr, folded, v[4], idx, mapping = 0;
	uint64_t map_start = 0;

	if (split(p, p + n, '\x1f', f, fl, sizeof(f) / sizeof(f[0]), &nf) < 0 || nf < 5 ||
	    (nf - 5) % 6 != 0 || num(f[0], fl[0], &addr, 16) < 0 ||
	    num(f[1], fl[1], &folded, 10) < 0)
		return -EINVAL;
	if (fl[2] == 1 && f[2][0] == SAME[0]) {
		if (!pm->set)
			return -EINVAL;
		mapping = pm->mapping;
		map_start = pm->map_start;
	} else if (fl[2]) {
		memset(&mp, 0, sizeof(mp));
		if (split(f[2], f[2] + fl[2], ',', mf, mfl, 4, &nm) < 0 || nm != 4)
			return -EINVAL;
		for (k = 0; k < 4; k++)
			if (num(mf[k], mfl[k], &v[k], 16) < 0)
				return -EINVAL;
		mp.start = (uint64_t)v[0];
		mp.limit = (uint64_t)v[1];
		mp.offset = (uint64_t)v[2];
		mp.has_functions = v[3] & 1;
		mp.has_filenames = v[3] & 2;
		mp.has_line_numbers = v[3] & 4;
		mp.has_inline_frames = v[3] & 8;
		if ((mp.filename = str_of(m, tmp, f[3], fl[3])) < 0 ||
		    (mp.build_id = str_of(m, tmp, f[4], fl[4])) < 0 ||
		    (idx = merge_mapping(m, &mp)) < 0)
			return -EINVAL;
		mapping = idx + 1;
		map_start = mp.start;
	}
	for (k = 0; k < (nf - 5) / 6; k++) {
		const char **g = f + 5 + 6 * k;
		const size_t *gl = fl + 5 + 6 * k;
		struct pf_function fn;

		memset(&fn, 0, sizeof(fn));
		if ((fn.name = str_of(m, tmp, g[0], gl[0])) < 0 ||
		    (gl[1] == 1 && g[1][0] == SAME[0] ? (fn.system_name = fn.name) < 0 :
		    (fn.system_name = str_of(m, tmp, g[1], gl[1])) < 0) ||
		    (fn.filename = str_of(m, tmp, g[2], gl[2])) < 0 ||
		    num(g[3], gl[3], &fn.start_line, 10) < 0 ||
		    num(g[4], gl[4], &lines[k].line, 10) < 0 ||
		    num(g[5], gl[5], &lines[k].column, 10) < 0 ||
		    (idx = merge_function(m, &fn)) < 0)
			return -EINVAL;
		lines[k].function = (uint32_t)idx;
	}
	pm->mapping = mapping;
	pm->map_start = map_start;
	pm->set = true;
	idx = merge_location(m, (uint32_t)mapping, map_start, (uint64_t)addr, folded != 0, lines,
	    (nf - 5) / 6);
	if (idx < 0)
		return (int)idx;
	*out = idx;
	return 0;
}

/* A location read: the merge's index, and the mapping the next one may name SAME. */
struct memo_loc {
	int64_t		idx;
	struct prevmap	pm;
};

struct codec_memo {
	struct intern	*keys;		/* the mapping followed (SAME) or -1, its start, the text */
	struct buf	 locs;		/* struct memo_loc, by the key's index */
	struct buf	 key;
	bool		 off;		/* out of memory once: not used again */
};

struct codec_memo *
codec_memo_create(void)
{
	struct codec_memo *cm = xcalloc(1, sizeof(*cm));

	if ((cm->keys = intern_create(1024)) == NULL) {
		free(cm);
		return NULL;
	}
	return cm;
}

void
codec_memo_free(struct codec_memo *cm)
{
	if (cm == NULL)
		return;
	intern_destroy(cm->keys);
	buf_free(&cm->locs);
	buf_free(&cm->key);
	free(cm);
}

/* Whether the location text [p, p + n) names its mapping SAME (the third field). */
static bool
names_same(const char *p, size_t n)
{
	const char *end = p + n, *q;
	int k;

	for (k = 0; k < 2; k++) {
		if ((q = memchr(p, '\x1f', (size_t)(end - p))) == NULL)
			return false;
		p = q + 1;
	}
	return end - p >= 1 && p[0] == SAME[0] && (end - p == 1 || p[1] == '\x1f');
}

/* add_location() through cm: a text read before (after the same mapping) is not read again. */
static int
memo_location(struct merge *m, struct codec_memo *cm, struct buf *tmp, const char *p,
    size_t n, struct prevmap *pm, int64_t *out)
{
	struct memo_loc ml;
	struct prevmap tag = { -1, 0, false };
	int64_t i;
	int added, rc;

	/* Only a speed-up: without memory for it, each text is read as without. */
	if (cm == NULL || cm->off)
		return add_location(m, tmp, p, n, pm, out);
	if (names_same(p, n)) {
		if (!pm->set)
			return -EINVAL;
		tag = *pm;
	}
	buf_reset(&cm->key);
	buf_add(&cm->key, &tag.mapping, sizeof(tag.mapping));
	buf_add(&cm->key, &tag.map_start, sizeof(tag.map_start));
	buf_add(&cm->key, p, n);
	/* A key is its entry's index in locs: a new one the next, an old one below. */
	if (buf_error(&cm->key) || (i = intern_put(cm->keys, cm->key.data, cm->key.len,
	    &added)) < 0 || (added ? (size_t)i != cm->locs.len / sizeof(ml) :
	    (size_t)i >= cm->locs.len / sizeof(ml))) {
		cm->off = true;
		return add_location(m, tmp, p, n, pm, out);
	}
	if (!added) {
		ml = ((const struct memo_loc *)cm->locs.data)[i];
		if (ml.idx < 0)
			return (int)ml.idx;
		*pm = ml.pm;
		*out = ml.idx;
		return 0;
	}
	/* Malformed text is remembered as its error. */
	rc = add_location(m, tmp, p, n, pm, out);
	ml.idx = rc < 0 ? rc : *out;
	ml.pm = *pm;
	if (buf_add(&cm->locs, &ml, sizeof(ml)) < 0)
		cm->off = true;	/* the key has no entry: the memo is not used again */
	return rc;
}

int
codec_add(struct merge *m, struct codec_memo *cm, const char *text, size_t len,
    const int64_t *values, size_t ntypes)
{
	const char *end = text + len, *lab = memchr(text, '\x1d', len);
	const char *end_locs = lab ? lab : end;
	static const size_t maxl = CODEC_MAX_LOCS;
	const char **lf = NULL;
	size_t *ll = NULL, nl = 0, k, nlab = 0;
	uint32_t *locs = NULL;
	struct pf_label labels[CODEC_MAX_LABELS];
	struct buf tmp = { 0 };
	struct prevmap pm = { 0 };
	int64_t idx = 0;
	int rc = -EINVAL;

	/* As merge_sample(): all-zero values add nothing, not even their frames. */
	for (k = 0; k < ntypes && values[k] == 0; k++)
		;
	if (k == ntypes)
		return 0;
	lf = malloc(maxl * sizeof(*lf));
	ll = malloc(maxl * sizeof(*ll));
	locs = malloc(maxl * sizeof(*locs));
	if (lf == NULL || ll == NULL || locs == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (end_locs > text && split(text, end_locs, '\x1e', lf, ll, maxl, &nl) < 0)
		goto out;
	for (k = 0; k < nl; k++) {
		if ((rc = memo_location(m, cm, &tmp, lf[k], ll[k], &pm, &idx)) < 0)
			goto out;
		locs[k] = (uint32_t)idx;
	}
	rc = -EINVAL;
	if (lab) {
		const char *lbf[CODEC_MAX_LABELS], *g[4];
		size_t lbl[CODEC_MAX_LABELS], gl[4], ng;

		if (split(lab + 1, end, '\x1e', lbf, lbl, CODEC_MAX_LABELS, &nlab) < 0)
			goto out;
		for (k = 0; k < nlab; k++) {
			memset(&labels[k], 0, sizeof(labels[k]));
			if (split(lbf[k], lbf[k] + lbl[k], '\x1f', g, gl, 4, &ng) < 0 || ng != 4 ||
			    (labels[k].key = str_of(m, &tmp, g[0], gl[0])) < 0 ||
			    (labels[k].str = str_of(m, &tmp, g[1], gl[1])) < 0 ||
			    num(g[2], gl[2], &labels[k].num, 10) < 0 ||
			    (labels[k].num_unit = str_of(m, &tmp, g[3], gl[3])) < 0)
				goto out;
		}
	}
	rc = merge_sample(m, locs, nl, labels, nlab, values);
out:
	free(lf);
	free(ll);
	free(locs);
	buf_free(&tmp);
	return rc;
}

int
codec_begin(struct merge *m, const char *hdr, int64_t period, size_t *ntypes, bool *gauge)
{
	const char *f[3 + 2 * PROFILE_MAX_SAMPLE_TYPES];
	size_t fl[3 + 2 * PROFILE_MAX_SAMPLE_TYPES], nf, k, nt;
	const char *types[PROFILE_MAX_SAMPLE_TYPES], *units[PROFILE_MAX_SAMPLE_TYPES];
	struct buf s[3 + 2 * PROFILE_MAX_SAMPLE_TYPES];
	struct merge_header h;
	int rc = -EINVAL;

	memset(s, 0, sizeof(s));
	if (split(hdr, hdr + strlen(hdr), '\x1f', f, fl, sizeof(f) / sizeof(f[0]), &nf) < 0 ||
	    nf < 5 || (nf - 3) % 2 != 0)
		return -EINVAL;
	for (k = 0; k < nf; k++)
		if (unesc(&s[k], f[k], fl[k]) < 0)
			goto out;
	nt = (nf - 3) / 2;
	for (k = 0; k < nt; k++) {
		types[k] = s[3 + 2 * k].data;
		units[k] = s[4 + 2 * k].data;
		gauge[k] = profile_type_is_gauge(types[k]);
	}
	memset(&h, 0, sizeof(h));
	h.types = types;
	h.units = units;
	h.ntypes = nt;
	h.period_type = s[0].data;
	h.period_unit = s[1].data;
	h.period = period;
	if ((rc = merge_begin(m, &h)) == 0 && *s[2].data)
		merge_string(m, s[2].data);
	*ntypes = nt;
out:
	for (k = 0; k < sizeof(s) / sizeof(s[0]); k++)
		buf_free(&s[k]);
	return rc;
}
