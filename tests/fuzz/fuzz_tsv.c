/*
 * fuzz_tsv: ClickHouse's TabSeparated answers as the fleet's reader parses
 * them, on arbitrary bytes (a server, or whatever answers on its port, is
 * outside input): rows and fields (tsv_next()), numbers and arrays
 * (tsv_i64(), tsv_u64(), tsv_nums()), and a row read as a stored profile's
 * header and stacks (codec_begin(), codec_add()), whose merge must be pprof
 * that decodes again, the same read through a memo of locations or not; and
 * the bytes as RowBinary rows of a merge of raw rows (raw_row_next()).
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

/*
 * The row as a profile, read through a memo of locations or not: the add's
 * results and the pprof of the merge into rcs and pb, which must be the same
 * both ways.
 */
static void
as_profile1(struct tsv *t, bool memo, struct buf *rcs, struct buf *pb)
{
	int64_t period = 0, vals[PROFILE_MAX_SAMPLE_TYPES];
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	struct merge *m = merge_create();
	struct codec_memo *cm = memo ? codec_memo_create() : NULL;
	struct profile *p = NULL;
	size_t nt = 0, i, k;
	int rc;

	CHECK(m != NULL && (!memo || cm != NULL));
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
		rc = codec_add(m, cm, t->f[i], t->len[i], vals, nt);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
		buf_add(rcs, &rc, sizeof(rc));
	}
	if (merge_count(m) > 0 && merge_finish(m, false, &p) == 0) {
		struct profile *back = NULL;

		CHECK(profile_encode(p, false, pb) == 0);
		CHECK(profile_decode(pb->data ? pb->data : "", pb->len, &back, NULL) == 0);
		profile_free(back);
	}
out:
	profile_free(p);
	codec_memo_free(cm);
	merge_free(m);
}

static void
as_profile(struct tsv *t)
{
	struct buf r1 = { 0 }, r2 = { 0 }, p1 = { 0 }, p2 = { 0 };

	as_profile1(t, false, &r1, &p1);
	as_profile1(t, true, &r2, &p2);
	CHECK(r1.len == r2.len && (r1.len == 0 || memcmp(r1.data, r2.data, r1.len) == 0));
	CHECK(p1.len == p2.len && (p1.len == 0 || memcmp(p1.data, p2.data, p1.len) == 0));
	buf_free(&r1);
	buf_free(&r2);
	buf_free(&p1);
	buf_free(&p2);
}

/* The same bytes as RowBinary raw rows: every part a row points to is inside the answer. */
static void
as_raw_rows(const struct buf *in)
{
	const unsigned char *lo = (const unsigned char *)(in->data ? in->data : ""), *hi = lo + in->len;
	struct rowbin r;
	struct raw_row row;
	uint64_t sum = 0;
	size_t k;
	int rc;

	rb_init(&r, in);
	while ((rc = raw_row_next(&r, &row)) == 1) {
		for (k = 0; k < 5; k++) {
			CHECK((const unsigned char *)row.str[k] >= lo &&
			    (const unsigned char *)row.str[k] + row.len[k] <= hi);
			CHECK(memchr(row.str[k], '\0', row.len[k]) == NULL);
		}
		CHECK(row.ntotals <= PROFILE_MAX_SAMPLE_TYPES && row.ntypes > 0 &&
		    row.nvals % row.ntypes == 0);
		CHECK(row.totals >= lo && row.totals + row.ntotals * 8 <= hi);
		CHECK(row.stacks >= lo && row.stacks + row.nvals * DIGEST128_HEX <= hi);
		CHECK(row.vals >= lo && row.vals + row.nvals * 8 <= hi);
		for (k = 0; k < row.nvals; k++)
			sum += rb_le64(row.vals + k * 8) + row.stacks[k * DIGEST128_HEX];
	}
	CHECK(rc == 0 || rc == -EINVAL);
	(void)sum;
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
	as_raw_rows(&in);
	buf_free(&nums);
	buf_free(&in);
	return 0;
}
