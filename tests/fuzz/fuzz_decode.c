/*
 * fuzz_decode: profile_decode() on arbitrary bytes (a profile dropped into
 * ingest/, posted over HTTP or scraped). Bad input must be refused with
 * -EINVAL/-EFBIG and a reason; a profile that decodes must survive what the
 * rest of profilefs does with it: encode and decode again to the same
 * content, merge with itself (plain and averaged), diff against itself, and
 * the small queries (default type, signature, totals, type inference).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "base.h"
#include "store.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_decode: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

/* Totals with wrapping arithmetic: the harness itself must not overflow. */
static uint64_t
wrap_total(const struct profile *p, size_t t)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++)
		sum += (uint64_t)p->samples[i].values[t];
	return sum;
}

/* p is changed and restored (mappings moved). */
static void
check_merge(struct profile *p)
{
	struct merge *m = merge_create();
	struct profile *out = NULL;
	struct buf err = { 0 }, enc = { 0 };
	struct profile *back = NULL;
	size_t t;

	CHECK(m != NULL);
	CHECK(merge_add(m, p, &err) == 0);
	CHECK(merge_add(m, p, &err) == 0);
	CHECK(merge_finish(m, false, &out) == 0);
	CHECK(out->nsample_types == p->nsample_types);
	CHECK(out->nsamples <= p->nsamples);
	for (t = 0; t < p->nsample_types; t++)
		CHECK(wrap_total(out, t) == 2 * wrap_total(p, t));
	CHECK(profile_encode(out, true, &enc) == 0);
	CHECK(profile_decode(enc.data, enc.len, &back, &err) == 0);
	CHECK(back->nsamples == out->nsamples);
	profile_free(back);
	profile_free(out);
	CHECK(merge_finish(m, true, &out) == 0);
	profile_free(out);
	merge_free(m);
	/*
	 * The same profile loaded elsewhere (ASLR: every mapping and the
	 * addresses in it moved) merges into the same locations and samples.
	 */
	{
		struct profile *one = NULL, *two = NULL;
		uint64_t delta = 0x7f0000001000ull;
		size_t i;

		m = merge_create();
		CHECK(merge_add(m, p, &err) == 0);
		CHECK(merge_finish(m, false, &one) == 0);
		for (i = 0; i < p->nmappings; i++) {
			p->mappings[i].start += delta;
			p->mappings[i].limit += delta;
		}
		for (i = 0; i < p->nlocations; i++)
			if (p->locations[i].mapping)
				p->locations[i].address += delta;
		CHECK(merge_add(m, p, &err) == 0);
		CHECK(merge_finish(m, false, &two) == 0);
		CHECK(two->nlocations == one->nlocations);
		CHECK(two->nmappings == one->nmappings);
		/* Fewer only where doubling wrapped a value to zero (INT64_MIN). */
		CHECK(two->nsamples <= one->nsamples);
		for (i = 0; i < p->nmappings; i++) {
			p->mappings[i].start -= delta;
			p->mappings[i].limit -= delta;
		}
		for (i = 0; i < p->nlocations; i++)
			if (p->locations[i].mapping)
				p->locations[i].address -= delta;
		profile_free(one);
		profile_free(two);
		merge_free(m);
	}
	CHECK(profile_diff(p, p, &out, &err) == 0);
	for (t = 0; t < p->nsample_types; t++)
		CHECK(wrap_total(out, t) == 0);
	profile_free(out);
	buf_free(&err);
	buf_free(&enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *q = NULL;
	struct buf err = { 0 }, enc = { 0 }, sig = { 0 };
	size_t t;
	int rc;

	rc = profile_decode(data, size, &p, &err);
	if (rc < 0) {
		CHECK(rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
		CHECK(p == NULL);
		CHECK(err.len > 0);
		goto out;
	}
	CHECK(p != NULL && p->nstrings > 0 && p->strings[0][0] == '\0');
	/* Decoded again from our own encoding: the same content. */
	CHECK(profile_encode(p, false, &enc) == 0);
	if (profile_decode(enc.data, enc.len, &q, &err) != 0) {
		fprintf(stderr, "re-decoding failed: %s\n", err.data);
		abort();
	}
	CHECK(q->nsample_types == p->nsample_types);
	CHECK(q->nsamples == p->nsamples);
	CHECK(q->nlocations == p->nlocations);
	CHECK(q->nfunctions == p->nfunctions);
	CHECK(q->nmappings == p->nmappings);
	CHECK(q->time_nanos == p->time_nanos && q->period == p->period);
	for (t = 0; t < p->nsample_types; t++) {
		CHECK(wrap_total(q, t) == wrap_total(p, t));
		(void)profile_total(p, t);
	}
	if (p->nsample_types)
		CHECK(profile_default_type(p) < p->nsample_types);
	CHECK(profile_signature(p, &sig) == 0);
	(void)store_infer_type(p);
	if (p->nsample_types)
		check_merge(p);
out:
	profile_free(p);
	profile_free(q);
	buf_free(&err);
	buf_free(&enc);
	buf_free(&sig);
	return 0;
}
