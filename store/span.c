/*
 * span: span ids kept per sample, never per series. A pprof sample label
 * span_id (Pyroscope's span profiles; OTLP sample links arrive as the
 * labels span_id and trace_id, api/otlp.c) is unique per request: as a
 * stack's label it would make every request a new stack entry, as a series
 * label a new series. pack.c leaves these labels out of the stacks and
 * orders a profile's samples by span, so one span's samples are one run of
 * the pack; this file writes and reads the profile's span record ('Z' key,
 * same suffix as its 'P'), which names the runs:
 *
 *   offset  size      field (varints unless said)
 *   0       1         SPAN_VERSION (2; 1: ids never bucketed, still read)
 *   1       var       nruns: distinct spans, each one run of pack samples;
 *                     the runs follow each other, after the untagged samples
 *           var       ncut: distinct spans past SPAN_MAX_PER_PROFILE; their
 *                     samples are kept, untagged
 *           var       nbad: samples whose span_id was not 1 to 16 hex digits
 *                     (or whose trace_id was not 32); kept untagged
 *           var       first: the untagged samples before the first run
 *           var       nnames, then per name: length, bytes (span_name)
 *           var       ntraces, then 16 bytes per trace id
 *           ids       span ids, ascending, binary searched: with fewer than
 *                     SPAN_BUCKETED runs 8 bytes each, little-endian; else
 *                     256 varints, how many ids have each top byte, then
 *                     each id's low 7 bytes (a byte per id saved: sorted
 *                     random ids share their top byte with their neighbours)
 *           per run   its length (samples)
 *           per run   its trace + 1 (0: none), only when ntraces > 0
 *           per run   its name + 1 (0: none), only when nnames > 0
 *
 * Beside it, the profile's span filter ('F' key, same suffix): a Bloom
 * filter of its span and trace ids, about 10 bits each (1% false positives):
 *
 *   offset  size      field
 *   0       var       nbits (a multiple of 8; 0: no span)
 *           nbits/8   the bits; an id sets SPAN_FILTER_K bits (span_filter_has)
 *
 * A lookup (store_read_spans) reads the filters of the range (a tenth of
 * the records' bytes), then the 'Z' record of each profile whose filter
 * passes and the pack of each profile that holds a wanted span, adding
 * only that span's runs: the cost follows the profiles of the range and the samples found,
 * not the samples stored. Windows hold no spans (their stacks are the
 * plain ones), so span lookups cover the raw retention.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

static uint64_t
le64_get(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
le64_put(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

int
span_id_parse(const char *s, uint64_t *id)
{
	uint64_t v = 0;
	size_t n;
	int d;

	for (n = 0; s[n]; n++) {
		if (n == 16 || (d = hex_value((unsigned char)s[n])) < 0)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	if (n == 0)
		return -EINVAL;
	*id = v;
	return 0;
}

int
span_trace_parse(const char *s, unsigned char out[16])
{
	size_t i;
	int hi, lo;

	if (strlen(s) != 32)
		return -EINVAL;
	for (i = 0; i < 16; i++) {
		if ((hi = hex_value((unsigned char)s[2 * i])) < 0 ||
		    (lo = hex_value((unsigned char)s[2 * i + 1])) < 0)
			return -EINVAL;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

void
span_keys_find(const struct profile *p, struct span_keys *k)
{
	size_t i;

	k->id = k->name = k->trace = -1;
	for (i = 1; i < p->nstrings; i++) {
		if (k->id < 0 && strcmp(p->strings[i], "span_id") == 0)
			k->id = (int64_t)i;
		else if (k->name < 0 && strcmp(p->strings[i], "span_name") == 0)
			k->name = (int64_t)i;
		else if (k->trace < 0 && strcmp(p->strings[i], "trace_id") == 0)
			k->trace = (int64_t)i;
	}
}

bool
span_key_is(const struct span_keys *k, int64_t key)
{
	return key > 0 && (key == k->id || key == k->name || key == k->trace);
}

void
span_tag_of(const struct profile *p, const struct span_keys *k, const struct pf_sample *s,
    struct span_tag *t, bool *bad)
{
	unsigned char tr[16];
	uint32_t j;

	memset(t, 0, sizeof(*t));
	*bad = false;
	if (k->id < 0 && k->trace < 0)
		return;
	for (j = 0; j < s->nlabels; j++) {
		const struct pf_label *l = &s->labels[j];

		if (l->str <= 0 || (size_t)l->str >= p->nstrings)
			continue;
		if (l->key == k->id) {
			if (span_id_parse(p->strings[l->str], &t->id) < 0) {
				*bad = true;
				t->id = 0;
			}
		} else if (l->key == k->name)
			t->name = l->str;
		else if (l->key == k->trace) {
			if (span_trace_parse(p->strings[l->str], tr) < 0)
				*bad = true;
			else
				t->trace = l->str;
		}
	}
	if (t->id == 0) {	/* a trace or name without a span tags nothing */
		t->name = 0;
		t->trace = 0;
	}
}

/*
 * The record of the ns pack samples tagged tags[] (in pack order, runs of
 * one span contiguous and ascending, untagged first) appended to out;
 * nothing when no sample is tagged and nothing was refused.
 */
int
span_encode(const struct profile *p, const struct span_tag *tags, size_t ns, size_t ncut,
    size_t nbad, struct buf *out)
{
	uint32_t *nameof = NULL, *traceof = NULL;	/* p string -> slot + 1 */
	struct buf names = { 0 }, traces = { 0 }, ids = { 0 }, lens = { 0 }, tcol = { 0 },
	    ncol = { 0 };
	unsigned char tr[16], le[8];
	size_t i, j, nruns = 0, nnames = 0, ntraces = 0, first, bucket[256] = { 0 };
	int rc = 0;

	for (i = 0; i < ns && tags[i].id == 0; i++)
		;
	if (i == ns && ncut == 0 && nbad == 0)
		return 0;
	if ((nameof = calloc(p->nstrings + 1, sizeof(*nameof))) == NULL ||
	    (traceof = calloc(p->nstrings + 1, sizeof(*traceof))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	first = i;
	for (; i < ns && rc == 0; i = j) {
		uint64_t nm = 0, trc = 0;

		for (j = i + 1; j < ns && tags[j].id == tags[i].id; j++)
			;
		if (tags[i].name > 0 && (size_t)tags[i].name < p->nstrings) {
			if (nameof[tags[i].name] == 0 && nnames < SPAN_MAX_NAMES) {
				const char *s = p->strings[tags[i].name];
				size_t sl = strlen(s) < 256 ? strlen(s) : 256;

				nameof[tags[i].name] = (uint32_t)++nnames;
				rc |= buf_add_varint(&names, sl);
				rc |= buf_add(&names, s, sl);
			}
			nm = nameof[tags[i].name];
		}
		if (tags[i].trace > 0 && (size_t)tags[i].trace < p->nstrings &&
		    span_trace_parse(p->strings[tags[i].trace], tr) == 0) {
			if (traceof[tags[i].trace] == 0) {
				traceof[tags[i].trace] = (uint32_t)++ntraces;
				rc |= buf_add(&traces, tr, 16);
			}
			trc = traceof[tags[i].trace];
		}
		le64_put(le, tags[i].id);
		rc |= buf_add(&ids, le, 8);
		bucket[tags[i].id >> 56]++;
		rc |= buf_add_varint(&lens, j - i);
		rc |= buf_add_varint(&tcol, trc);
		rc |= buf_add_varint(&ncol, nm);
		nruns++;
	}
	rc |= buf_addc(out, SPAN_VERSION);
	rc |= buf_add_varint(out, nruns);
	rc |= buf_add_varint(out, ncut);
	rc |= buf_add_varint(out, nbad);
	rc |= buf_add_varint(out, first);
	rc |= buf_add_varint(out, nnames);
	rc |= buf_add(out, names.data, names.len);
	rc |= buf_add_varint(out, ntraces);
	rc |= buf_add(out, traces.data, traces.len);
	if (nruns < SPAN_BUCKETED) {
		rc |= buf_add(out, ids.data, ids.len);
	} else {
		/* The top byte of each id as a count per value, then 7 bytes each. */
		for (i = 0; i < 256; i++)
			rc |= buf_add_varint(out, bucket[i]);
		for (i = 0; i < nruns; i++)
			rc |= buf_add(out, ids.data + 8 * i, 7);
	}
	rc |= buf_add(out, lens.data, lens.len);
	if (ntraces)
		rc |= buf_add(out, tcol.data, tcol.len);
	if (nnames)
		rc |= buf_add(out, ncol.data, ncol.len);
out:
	free(nameof);
	free(traceof);
	buf_free(&names);
	buf_free(&traces);
	buf_free(&ids);
	buf_free(&lens);
	buf_free(&tcol);
	buf_free(&ncol);
	return rc ? -ENOMEM : 0;
}

/* A record read: pointers into its value. */
struct span_rec {
	size_t			 nruns, ncut, nbad, first, ntraces, nnames;
	const unsigned char	*names;		/* nnames of length, bytes */
	const unsigned char	*traces;	/* 16 * ntraces */
	const unsigned char	*ids;		/* idw * nruns */
	size_t			 idw;		/* 8, or 7 when bucketed by top byte */
	uint32_t		 off[257];	/* bucketed: the first id of each top byte */
	const unsigned char	*runs, *end;
};

/* The low 56 bits of a bucketed id. */
static uint64_t
le56_get(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 6; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The bucket (top byte) of id i of a bucketed record. */
static size_t
rec_bucket(const struct span_rec *r, size_t i)
{
	size_t lo = 0, hi = 256;

	while (hi - lo > 1) {	/* the last b with off[b] <= i */
		size_t mid = lo + (hi - lo) / 2;

		if (r->off[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t
rec_id(const struct span_rec *r, size_t i)
{
	if (r->idw == 8)
		return le64_get(r->ids + 8 * i);
	return (uint64_t)rec_bucket(r, i) << 56 | le56_get(r->ids + 7 * i);
}

/* Whether record r holds span id, by binary search (in its bucket). */
static bool
rec_has(const struct span_rec *r, uint64_t id)
{
	size_t lo = 0, hi = r->nruns, end;

	if (r->idw == 7) {
		lo = r->off[id >> 56];
		hi = r->off[(id >> 56) + 1];
	}
	end = hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rec_id(r, mid) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < end && rec_id(r, lo) == id;
}

static int
rec_read(const void *val, size_t len, struct span_rec *r)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t v, nn, i, sum = 0;
	int ver;

	memset(r, 0, sizeof(*r));
	if (len < 1 || (*p != SPAN_VERSION && *p != 1))	/* 1: ids never bucketed */
		return -EINVAL;
	ver = *p++;
#define GET(x) do { if (varint_get(&p, end, &v) < 0) return -EINVAL; (x) = v; } while (0)
	GET(r->nruns);
	GET(r->ncut);
	GET(r->nbad);
	GET(r->first);
	GET(nn);
	r->nnames = nn;
	r->names = p;
	for (i = 0; i < nn; i++) {
		GET(v);
		if (v > (uint64_t)(end - p))
			return -EINVAL;
		p += v;
	}
	GET(r->ntraces);
#undef GET
	if (r->ntraces > (size_t)(end - p) / 16)
		return -EINVAL;
	r->traces = p;
	p += 16 * r->ntraces;
	r->idw = 8;
	if (ver >= 2 && r->nruns >= SPAN_BUCKETED) {
		r->idw = 7;
		for (i = 0; i < 256; i++) {
			if (varint_get(&p, end, &v) < 0 || v > r->nruns - sum)
				return -EINVAL;
			r->off[i] = (uint32_t)sum;
			sum += v;
		}
		if (sum != r->nruns)
			return -EINVAL;
		r->off[256] = (uint32_t)sum;
	}
	if (r->nruns > (size_t)(end - p) / r->idw)
		return -EINVAL;
	r->ids = p;
	p += r->idw * r->nruns;
	r->runs = p;
	r->end = end;
	return 0;
}

static bool
sel_has_id(const struct span_sel *sel, uint64_t id)
{
	size_t i;

	for (i = 0; i < sel->nids; i++)
		if (sel->ids[i] == id)
			return true;
	return false;
}

/*
 * The pack sample ranges (start, length pairs, ascending) of the spans sel
 * wants in record val into *rg (grown with realloc; *nrg pairs). 0 with
 * none found; -EINVAL for a malformed record.
 */
int
span_ranges(const void *val, size_t len, const struct span_sel *sel, uint32_t **rg,
    size_t *nrg, size_t *cap)
{
	struct span_rec r;
	const unsigned char *p, *tp;
	uint64_t n, trc = 0, at;
	size_t i, k, want_tr = 0;
	bool *trw = NULL, any = false;
	int rc;

	*nrg = 0;
	if ((rc = rec_read(val, len, &r)) < 0)
		return rc;
	if (r.nruns == 0)
		return 0;
	/* Ids: each a binary search, when no trace is asked (runs not walked then). */
	if (sel->ntraces == 0 && sel->nids <= 64) {
		for (k = 0; k < sel->nids && !any; k++)
			any = rec_has(&r, sel->ids[k]);
		if (!any)
			return 0;
	}
	if (sel->ntraces && r.ntraces) {
		if ((trw = calloc(r.ntraces + 1, sizeof(*trw))) == NULL)
			return -ENOMEM;
		for (i = 0; i < r.ntraces; i++)
			for (k = 0; k < sel->ntraces; k++)
				if (memcmp(r.traces + 16 * i, sel->traces[k], 16) == 0) {
					trw[i + 1] = true;
					want_tr++;
				}
	}
	if (sel->nids == 0 && want_tr == 0)
		goto out;
	/* The trace column follows the lengths: found by walking them once. */
	tp = r.runs;
	for (i = 0; trw && i < r.nruns; i++)
		if (varint_get(&tp, r.end, &n) < 0) {
			rc = -EINVAL;
			goto out;
		}
	p = r.runs;
	at = r.first;
	for (i = 0; i < r.nruns; i++) {
		if (varint_get(&p, r.end, &n) < 0 || n > UINT32_MAX || at + n > UINT32_MAX ||
		    (trw && (varint_get(&tp, r.end, &trc) < 0 || trc > r.ntraces))) {
			rc = -EINVAL;
			goto out;
		}
		if (sel_has_id(sel, rec_id(&r, i)) || (trw && trw[trc])) {
			if (*nrg == *cap) {
				size_t nc = *cap ? *cap * 2 : 16;
				uint32_t *nr = realloc(*rg, nc * 2 * sizeof(*nr));

				if (nr == NULL) {
					rc = -ENOMEM;
					goto out;
				}
				*rg = nr;
				*cap = nc;
			}
			(*rg)[2 * *nrg] = (uint32_t)at;
			(*rg)[2 * *nrg + 1] = (uint32_t)n;
			(*nrg)++;
		}
		at += n;
	}
out:
	free(trw);
	return rc;
}

/* What a record says was cut or refused, for a marker in the answer. */
int
span_counts(const void *val, size_t len, size_t *nruns, size_t *ncut, size_t *nbad)
{
	struct span_rec r;
	int rc;

	if ((rc = rec_read(val, len, &r)) < 0)
		return rc;
	*nruns = r.nruns;
	*ncut = r.ncut;
	*nbad = r.nbad;
	return 0;
}

/*
 * The runs of record val, each with its span, trace and name, into *out
 * (span_runs_free() frees; names and traces point into val, which must
 * outlive it): what a profile read back whole needs to give each sample
 * its labels again. -EINVAL for a malformed record.
 */
int
span_runs_read(const void *val, size_t len, struct span_runs *out)
{
	struct span_rec r;
	const unsigned char *p, *tp, *np, *q;
	uint64_t n, trc, nm, at, v;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = rec_read(val, len, &r)) < 0)
		return rc;
	if (r.nruns == 0)
		return 0;
	out->run = calloc(r.nruns, sizeof(*out->run));
	out->name = calloc(r.nnames + 1, sizeof(*out->name));
	out->name_len = calloc(r.nnames + 1, sizeof(*out->name_len));
	if (out->run == NULL || out->name == NULL || out->name_len == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (q = r.names, i = 0; i < r.nnames; i++) {
		if (varint_get(&q, r.end, &v) < 0 || v > (uint64_t)(r.end - q)) {
			rc = -EINVAL;
			goto out;
		}
		out->name[i] = (const char *)q;
		out->name_len[i] = (size_t)v;
		q += v;
	}
	out->nnames = r.nnames;
	out->traces = r.traces;
	out->ntraces = r.ntraces;
	/* The columns one after the other: lengths, traces (if any), names (if any). */
	tp = r.runs;
	for (i = 0; i < r.nruns; i++)
		if (varint_get(&tp, r.end, &n) < 0) {
			rc = -EINVAL;
			goto out;
		}
	np = tp;
	for (i = 0; r.ntraces && i < r.nruns; i++)
		if (varint_get(&np, r.end, &n) < 0) {
			rc = -EINVAL;
			goto out;
		}
	p = r.runs;
	at = r.first;
	for (i = 0; i < r.nruns; i++) {
		trc = nm = 0;
		if (varint_get(&p, r.end, &n) < 0 || n > UINT32_MAX || at + n > UINT32_MAX ||
		    (r.ntraces && (varint_get(&tp, r.end, &trc) < 0 || trc > r.ntraces)) ||
		    (r.nnames && (varint_get(&np, r.end, &nm) < 0 || nm > r.nnames))) {
			rc = -EINVAL;
			goto out;
		}
		out->run[i].id = rec_id(&r, i);
		out->run[i].start = (uint32_t)at;
		out->run[i].len = (uint32_t)n;
		out->run[i].trace = (uint32_t)trc;
		out->run[i].name = (uint32_t)nm;
		at += n;
	}
	out->nrun = r.nruns;
out:
	if (rc < 0)
		span_runs_free(out);
	return rc;
}

void
span_runs_free(struct span_runs *sr)
{
	free(sr->run);
	free(sr->name);
	free(sr->name_len);
	memset(sr, 0, sizeof(*sr));
}

/* --- span filters ------------------------------------------------------ */

#define SPAN_FILTER_K	6

static uint64_t
fmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* What a trace id hashes as among the span ids of a filter. */
static uint64_t
trace_key(const unsigned char *t)
{
	return fmix(le64_get(t) ^ fmix(le64_get(t + 8) ^ 0x7472616365ull));
}

static void
filter_set(unsigned char *bits, uint64_t nbits, uint64_t key)
{
	uint64_t h = fmix(key), h2 = (h >> 32) | 1;
	int i;

	for (i = 0; i < SPAN_FILTER_K; i++, h += h2)
		bits[(h % nbits) / 8] |= (unsigned char)(1u << (h % nbits % 8));
}

static bool
filter_has(const unsigned char *bits, uint64_t nbits, uint64_t key)
{
	uint64_t h = fmix(key), h2 = (h >> 32) | 1;
	int i;

	if (nbits == 0)
		return false;
	for (i = 0; i < SPAN_FILTER_K; i++, h += h2)
		if (!(bits[(h % nbits) / 8] & (1u << (h % nbits % 8))))
			return false;
	return true;
}

int
span_filter(const void *rec, size_t len, struct buf *out)
{
	struct span_rec r;
	unsigned char *bits;
	uint64_t nbits;
	size_t i;
	int rc;

	if ((rc = rec_read(rec, len, &r)) < 0)
		return rc;
	nbits = ((uint64_t)(r.nruns + r.ntraces) * 10 + 7) / 8 * 8;
	if ((rc = buf_add_varint(out, nbits)) < 0 || nbits == 0)
		return rc;
	if ((rc = buf_reserve(out, nbits / 8)) < 0)
		return rc;
	bits = (unsigned char *)out->data + out->len;
	memset(bits, 0, nbits / 8);
	for (i = 0; i < r.nruns; i++)
		filter_set(bits, nbits, rec_id(&r, i));
	for (i = 0; i < r.ntraces; i++)
		filter_set(bits, nbits, trace_key(r.traces + 16 * i));
	out->len += nbits / 8;
	out->data[out->len] = '\0';
	return 0;
}

/* Whether filter val may hold a span or trace of sel (true when unsure). */
static bool
filter_passes(const void *val, size_t len, const struct span_sel *sel)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t nbits;
	size_t i;

	if (varint_get(&p, end, &nbits) < 0 || nbits % 8 || nbits / 8 > (uint64_t)(end - p))
		return true;	/* malformed: the record decides */
	for (i = 0; i < sel->nids; i++)
		if (filter_has(p, nbits, sel->ids[i]))
			return true;
	for (i = 0; i < sel->ntraces; i++)
		if (filter_has(p, nbits, trace_key(sel->traces[i])))
			return true;
	return false;
}

/*
 * Whether a profile whose filter val does not pass may still have marks
 * (span_marks) for store_read_spans() to count: its record must then be
 * read. A record with cut spans names SPAN_MAX_PER_PROFILE of them, so its
 * filter has at least 10 bits for each; one with no span at all exists
 * only for its refused ids. A profile with some spans and refused ids in
 * between is not read, and not counted, when it holds none of those asked.
 */
static bool
filter_may_mark(const void *val, size_t len)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t nbits;

	if (varint_get(&p, end, &nbits) < 0)
		return true;
	return nbits == 0 || nbits >= (uint64_t)SPAN_MAX_PER_PROFILE * 10;
}

static void
marks_add(struct span_marks *m, const void *zv, size_t zl)
{
	size_t nruns, ncut, nbad;

	if (m == NULL || span_counts(zv, zl, &nruns, &ncut, &nbad) < 0)
		return;
	m->profiles_cut += ncut > 0;
	m->cut += ncut;
	m->profiles_refused += nbad > 0;
	m->refused += nbad;
}

/* What store_read_spans() reads in one profile. */
static int
read_one(struct store *st, rocksdb_readoptions_t *ro, const unsigned char *zkey,
    const void *zv, size_t zl, const struct span_sel *sel, struct agg *a,
    struct store_ref *r, store_meta_fn fn, store_bad_fn bad, void *arg, uint32_t **rg,
    size_t *cap)
{
	unsigned char key[25];
	struct store_meta m;
	char *pv = NULL, *tv = NULL, *dberr = NULL;
	size_t nrg = 0, pl = 0, tl = 0;
	int rc;

	if ((rc = span_ranges(zv, zl, sel, rg, &nrg, cap)) < 0) {
		if (rc == -EINVAL && bad)
			return bad(arg, r, "its span record is corrupt");
		return rc == -EINVAL ? 0 : rc;
	}
	if (nrg == 0)
		return 0;
	memcpy(key, zkey, sizeof(key));
	key[0] = 'P';
	pv = rocksdb_get(st->db, ro, (char *)key, sizeof(key), &pl, &dberr);
	if (dberr || pv == NULL) {
		rc = dberr ? -EIO : 0;	/* deleted meanwhile: nothing */
		goto out;
	}
	memset(&m, 0, sizeof(m));
	if (agg_add_ranges(a, pv, pl, *rg, nrg, m.totals, STORE_MAX_TYPES, &m.ntypes) < 0) {
		rc = bad ? bad(arg, r, "stored pack is truncated or corrupt") : 0;
		goto out;
	}
	if (fn) {
		key[0] = 'T';
		tv = rocksdb_get(st->db, ro, (char *)key, sizeof(key), &tl, &dberr);
		if (dberr == NULL && tv) {
			struct store_meta tm;

			if (meta_decode((const unsigned char *)tv, tl, &tm) == 0)
				m.sighash = tm.sighash;
		}
		rc = fn(arg, r, &m);
	}
out:
	free(dberr);
	rocksdb_free(pv);
	rocksdb_free(tv);
	return rc;
}

int
store_read_spans_locked(struct store *st, uint64_t sid, int64_t from, int64_t to,
    const struct span_sel *sel, struct agg *a, struct span_marks *marks, store_meta_fn fn,
    store_bad_fn bad, void *arg)
{
	const rocksdb_snapshot_t *snap;
	const struct series *s = store_series_get(st, sid);
	unsigned char lo[17], hi[17];
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	struct store_ref r;
	uint32_t *rg = NULL;
	size_t cap = 0;
	int rc = 0;

	if (from >= to || sel == NULL || (sel->nids == 0 && sel->ntraces == 0))
		return 0;
	snap = rocksdb_create_snapshot(st->db);
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(ro, snap);
	lo[0] = hi[0] = 'F';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid);
	be64_put(lo + 9, time_enc(from));
	be64_put(hi + 9, time_enc(to));
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	memset(&r, 0, sizeof(r));
	r.series = sid;
	if (s)
		snprintf(r.type, sizeof(r.type), "%s", s->type);
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl, zl = 0;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;
		unsigned char zk[25];
		char *zv, *dberr = NULL;
		bool pass;

		if (kl != 25)
			continue;
		v = rocksdb_iter_value(it, &vl);
		pass = filter_passes(v, vl, sel);
		if (!pass && (marks == NULL || !filter_may_mark(v, vl)))
			continue;
		memcpy(zk, k, sizeof(zk));
		zk[0] = 'Z';
		zv = rocksdb_get(st->db, ro, (char *)zk, sizeof(zk), &zl, &dberr);
		if (dberr) {
			free(dberr);
			rc = -EIO;
			break;
		}
		if (zv == NULL)
			continue;
		marks_add(marks, zv, zl);
		if (!pass) {
			rocksdb_free(zv);
			continue;
		}
		r.time = time_dec(be64_get(k + 9));
		r.id = be64_get(k + 17);
		rc = read_one(st, ro, zk, zv, zl, sel, a, &r, fn, bad, arg, &rg, &cap);
		rocksdb_free(zv);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(st->db, snap);
	free(rg);
	return rc;
}

/* --- span groups, for the shipper ------------------------------------------ */

/*
 * The samples of each span of profile ref (its 'Z' record's runs, at most
 * max), each run summed into a profile of its own through the series'
 * symbols (under the store's read lock): fn hears the span id, its trace (NULL: none) and that profile
 * (valid during the call). A profile without spans calls nothing. The
 * shipper sends these beside the profile (cluster/ship.c): the samples the
 * pack keeps per span, with the stacks the profile itself ships.
 */
int
store_span_groups(struct store *st, const struct store_ref *ref, size_t max,
    store_span_fn fn, void *arg)
{
	unsigned char key[25];
	struct span_rec r;
	char *zv = NULL, *pv = NULL, *dberr = NULL;
	const unsigned char *p, *tp;
	size_t zl = 0, pl = 0, i;
	uint64_t at, n, trc = 0;
	int rc = 0;

	pthread_rwlock_rdlock(&st->db_lock);
	key[0] = 'Z';
	be64_put(key + 1, ref->series);
	be64_put(key + 9, time_enc(ref->time));
	be64_put(key + 17, ref->id);
	zv = rocksdb_get(st->db, st->ropts, (char *)key, sizeof(key), &zl, &dberr);
	if (dberr == NULL && zv) {
		key[0] = 'P';
		pv = rocksdb_get(st->db, st->ropts, (char *)key, sizeof(key), &pl, &dberr);
	}
	if (dberr) {
		rc = -EIO;
		goto out;
	}
	if (zv == NULL || pv == NULL)
		goto out;	/* no spans, or deleted meanwhile */
	if ((rc = rec_read(zv, zl, &r)) < 0)
		goto out;
	/* The trace column follows the lengths. */
	tp = r.runs;
	for (i = 0; r.ntraces && i < r.nruns; i++)
		if (varint_get(&tp, r.end, &n) < 0) {
			rc = -EINVAL;
			goto out;
		}
	p = r.runs;
	at = r.first;
	for (i = 0; i < r.nruns && i < max && rc == 0; i++) {
		struct series_state *ss;
		struct profile *sp = NULL;
		struct agg *a;
		int64_t totals[STORE_MAX_TYPES];
		size_t nt = 0;
		uint32_t rg[2];

		if (varint_get(&p, r.end, &n) < 0 || n > UINT32_MAX || at + n > UINT32_MAX ||
		    (r.ntraces && (varint_get(&tp, r.end, &trc) < 0 || trc > r.ntraces))) {
			rc = -EINVAL;
			break;
		}
		rg[0] = (uint32_t)at;
		rg[1] = (uint32_t)n;
		at += n;
		if ((a = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = agg_add_ranges(a, pv, pl, rg, 1, totals, STORE_MAX_TYPES, &nt)) == 0 &&
		    agg_ngroups(a) == 1 && (ss = series_state_lock(st, ref->series, &rc)) != NULL) {
			rc = agg_profile(a, ss->sym, 0, false, &sp);
			pthread_mutex_unlock(&ss->sym_lock);
		}
		agg_free(a);
		if (rc == 0 && sp)
			rc = fn(arg, rec_id(&r, i),
			    trc ? r.traces + 16 * (trc - 1) : NULL, sp);
		profile_free(sp);
	}
out:
	pthread_rwlock_unlock(&st->db_lock);
	free(dberr);
	rocksdb_free(zv);
	rocksdb_free(pv);
	return rc;
}
