/*
 * fuzz_tsv: ClickHouse's TabSeparated answers as the fleet's reader parses
 * them, on arbitrary bytes (a server, or whatever answers on its port, is
 * outside input): rows and fields (tsv_next()), numbers and arrays
 * (tsv_i64(), tsv_u64(), tsv_nums()), and a row read as a stored profile's
 * header and stacks (codec_begin(), codec_add()), whose merge must be pprof
 * that decodes again.
 *
 * A row is read as: header, period, then stacks (each added with values
 * 1, 2, ... per sample type).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_tsv: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static void
as_profile(struct tsv *t)
{
	int64_t period = 0, vals[PROFILE_MAX_SAMPLE_TYPES];
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	struct merge *m = merge_create();
	struct profile *p = NULL;
	size_t nt = 0, i, k;
	int rc;

	CHECK(m != NULL);
	if (t->nf < 2 || tsv_i64(t->f[1], &period) < 0)
		period = 0;
	rc = codec_begin(m, t->f[0], period, &nt, gauge);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc < 0)
		goto out;
	CHECK(nt <= PROFILE_MAX_SAMPLE_TYPES);
	for (k = 0; k < nt; k++)
		vals[k] = (int64_t)k + 1;
	for (i = 2; i < t->nf; i++) {
		rc = codec_add(m, NULL, t->f[i], t->len[i], vals, nt);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	}
	if (merge_count(m) > 0 && merge_finish(m, false, &p) == 0) {
		struct buf pb = { 0 };
		struct profile *back = NULL;

		CHECK(profile_encode(p, false, &pb) == 0);
		CHECK(profile_decode(pb.data ? pb.data : "", pb.len, &back, NULL) == 0);
		profile_free(back);
		buf_free(&pb);
	}
out:
	profile_free(p);
	merge_free(m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf in = { 0 }, nums = { 0 };
	struct tsv t;
	size_t i, n, rows = 0;
	int rc;

	CHECK(buf_add(&in, data, size) == 0);
	tsv_init(&t, &in);
	while ((rc = tsv_next(&t)) == 1 && rows++ < 64) {
		CHECK(t.nf >= 1 && t.nf <= TSV_MAX_FIELDS);
		for (i = 0; i < t.nf; i++) {
			int64_t v;
			uint64_t u;

			CHECK(t.f[i][t.len[i]] == '\0');
			(void)tsv_i64(t.f[i], &v);
			(void)tsv_u64(t.f[i], &u);
			buf_reset(&nums);
			rc = tsv_nums(t.f[i], &nums, &n, 1024, i % 2 == 0);
			CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
			CHECK(rc < 0 || (n <= 1024 && nums.len == n * sizeof(int64_t)));
		}
		as_profile(&t);
	}
	CHECK(rc == 0 || rc == 1 || rc == -EINVAL || rc == -ENOMEM);
	tsv_free(&t);
	buf_free(&nums);
	buf_free(&in);
	return 0;
}
