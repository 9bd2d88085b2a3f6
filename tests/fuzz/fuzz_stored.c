/*
 * fuzz_stored: the store's decoders of what it reads back from disk, on
 * arbitrary bytes (a corrupt or hostile data directory must cost an error,
 * never a crash): symbol entries ('Y' values, symtab_load()), packs ('P' and
 * 'W' values, agg_add()) and T records (meta_decode()), then what a read
 * makes of them (agg_totals(), agg_signature(), agg_profile(), agg_encode()).
 *
 * Input: records of kind:1 len:2 (little-endian) bytes. Kinds 0..4 are
 * symbol entries of that kind (ids in order), 5 a pack, 6 a T record, 7 a
 * run of symbol entries (symtab_load_run(): its first byte the symbol kind,
 * the second how many, from the next id or one before), 8 a span record
 * ('Z' value, store/span.c: its filter, its counts, the runs of a few span
 * ids and of a trace, added from the last pack with agg_add_ranges(), and
 * the last pack read back whole with the record's labels, pack_rows_profile()); a
 * record cut short by the end of the input takes what is left.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_stored: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab *t = symtab_create();
	struct agg *a = agg_create(), *back = NULL;
	struct buf enc = { 0 }, sig = { 0 }, err = { 0 };
	uint32_t next[SYM_NKINDS] = { 0 };
	const uint8_t *p = data, *end = data + size, *lastpack = NULL;
	size_t g, n, lastlen = 0;
	int rc;

	CHECK(t != NULL && a != NULL);
	while (end - p >= 3) {
		unsigned kind = p[0];
		size_t len = (size_t)p[1] | (size_t)p[2] << 8;

		p += 3;
		if (len > (size_t)(end - p))
			len = (size_t)(end - p);
		if (kind < SYM_NKINDS) {
			rc = symtab_load(t, (int)kind, next[kind], p, len);
			CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM || rc == -EOVERFLOW);
			if (rc == 0)
				next[kind]++;
		} else if (kind == SYM_NKINDS) {
			buf_reset(&err);
			rc = agg_add(a, p, len, &err);
			CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
			lastpack = p;
			lastlen = len;
			CHECK(rc != -EINVAL || err.len > 0);
		} else if (kind == SYM_NKINDS + 2 && len >= 2) {
			unsigned sk = p[0] % SYM_NKINDS;
			uint32_t first = next[sk] > 0 && (p[1] & 0x80) ? next[sk] - 1 : next[sk];

			rc = symtab_load_run(t, (int)sk, first, p[1] & 0x7f, p + 2, len - 2);
			CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM || rc == -EOVERFLOW);
			next[sk] = (uint32_t)symtab_count(t, (int)sk);
		} else if (kind == SYM_NKINDS + 3) {
			uint64_t ids[3] = { 1, 0, UINT64_MAX };
			unsigned char tr[1][16];
			struct span_sel sel = { .ids = ids, .nids = 3, .traces = tr, .ntraces = 1 };
			uint32_t *rg = NULL;
			size_t nrg = 0, cap = 0, nr, nc, nb, i;
			struct buf fb = { 0 };

			memset(tr, 0, sizeof(tr));
			if (len >= 24) {
				memcpy(&ids[1], p + len - 8, 8);
				memcpy(tr[0], p + len - 24, 16);
			}
			rc = span_filter(p, len, &fb);
			CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
			buf_free(&fb);
			rc = span_counts(p, len, &nr, &nc, &nb);
			CHECK(rc == 0 || rc == -EINVAL);
			rc = span_ranges(p, len, &sel, &rg, &nrg, &cap);
			CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
			for (i = 1; rc == 0 && i < nrg; i++)	/* runs in pack order */
				CHECK(rg[2 * i] >= rg[2 * i - 2] + rg[2 * i - 1]);
			if (rc == 0 && nrg && lastpack) {
				struct agg *sa = agg_create();
				int64_t tot[STORE_MAX_TYPES];
				size_t nt;

				CHECK(sa != NULL);
				rc = agg_add_ranges(sa, lastpack, lastlen, rg, nrg, tot,
				    STORE_MAX_TYPES, &nt);
				CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
				agg_free(sa);
			}
			free(rg);
			{
				/* A profile read back whole: the last pack's rows with the record's labels. */
				struct span_runs sr;

				rc = span_runs_read(p, len, &sr);
				CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
				for (i = 1; rc == 0 && i < sr.nrun; i++)
					CHECK(sr.run[i].start == sr.run[i - 1].start + sr.run[i - 1].len);
				if (rc == 0 && lastpack) {
					struct profile *rp = NULL;
					struct buf pb = { 0 };

					rc = pack_rows_profile(lastpack, lastlen, t, &sr, &rp);
					CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM ||
					    rc == -EOVERFLOW);
					if (rc == 0) {
						CHECK(profile_encode(rp, false, &pb) == 0);
						profile_free(rp);
						rp = NULL;
						CHECK(profile_decode(pb.data ? pb.data : "", pb.len, &rp,
						    NULL) == 0);
					}
					buf_free(&pb);
					profile_free(rp);
				}
				span_runs_free(&sr);
			}
		} else if (kind == SYM_NKINDS + 1) {
			struct store_meta m;

			rc = meta_decode(p, len, &m);
			CHECK(rc == 0 || rc == -EINVAL);
			CHECK(rc < 0 || m.ntypes <= STORE_MAX_TYPES);
		}
		p += len;
	}
	n = agg_ngroups(a);
	for (g = 0; g < n; g++) {
		int64_t totals[STORE_MAX_TYPES];
		struct profile *prof = NULL;
		size_t nt;

		rc = agg_totals(a, g, totals, STORE_MAX_TYPES, &nt);
		CHECK(rc == 0 || rc == -EINVAL);
		CHECK(rc < 0 || nt <= STORE_MAX_TYPES);
		buf_reset(&sig);
		rc = agg_signature(a, t, g, &sig);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
		rc = agg_profile(a, t, g, g % 2 == 0, &prof);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM || rc == -EOVERFLOW);
		if (rc == 0) {
			struct buf pb = { 0 };

			/* What a read serves must be pprof that decodes again. */
			CHECK(profile_encode(prof, false, &pb) == 0);
			profile_free(prof);
			prof = NULL;
			CHECK(profile_decode(pb.data ? pb.data : "", pb.len, &prof, NULL) == 0);
			buf_free(&pb);
		}
		profile_free(prof);
	}
	/* What was summed encodes to a pack that sums the same again. */
	CHECK(agg_encode(a, &enc) == 0);
	if (n > 0) {
		CHECK((back = agg_create()) != NULL);
		CHECK(agg_add(back, enc.data, enc.len, NULL) == 0);
		CHECK(agg_ngroups(back) == n);
		for (g = 0; g < n; g++)
			CHECK(agg_count(back, g) == agg_count(a, g));
		agg_free(back);
	}
	buf_free(&enc);
	buf_free(&sig);
	buf_free(&err);
	agg_free(a);
	symtab_free(t);
	return 0;
}
