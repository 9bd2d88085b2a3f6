/*
 * spanbench: what span ids cost in the store (scripts/bench-spans.sh). An
 * hour of one service's CPU profiles, one every 10 s, every sample tagged
 * with one of NSPANS span ids (pprof label span_id, 16 hex digits, and
 * span_name), or the same samples untagged; each request (span) burns
 * TICKS samples over STACKS of the service's stacks. Built against
 * build/libprofilefs.a.
 *
 *   spanbench put DIR [--no-spans] [--spans N] [--ticks N] [--stacks N]
 *     stores the hour into a fresh database in DIR, prints the samples
 *     (pprof rows and ticks) stored
 *   spanbench get DIR N
 *     opens DIR (a cold process: nothing cached) and merges the samples of
 *     N span ids of the hour, one lookup each; prints each lookup's time
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

#define PROFILES	360		/* an hour, every 10 s */
#define NFUNCS		64
#define DEPTH		10
#define POOL		400		/* the service's distinct stacks */
#define PERIOD		10000000	/* 10 ms */

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int64_t
now_ns(int clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* --- a hand-written pprof encoder (fields of pprof/profile.proto) --- */

static void
fvar(struct buf *b, unsigned f, uint64_t v)
{
	buf_add_varint(b, (uint64_t)f << 3);
	buf_add_varint(b, v);
}

static void
fbytes(struct buf *b, unsigned f, const void *p, size_t n)
{
	buf_add_varint(b, (uint64_t)f << 3 | 2);
	buf_add_varint(b, n);
	buf_add(b, p, n);
}

static void
fmsg(struct buf *b, unsigned f, const struct buf *m)
{
	fbytes(b, f, m->data ? m->data : "", m->len);
}

/* String table: fixed strings, then functions, then span names, then span ids. */
enum { S_EMPTY, S_SAMPLES, S_COUNT, S_CPU, S_NS, S_SPAN_ID, S_SPAN_NAME, S_FIXED };
#define S_FUNC(i)	(S_FIXED + (i))
#define S_NAME(i)	(S_FIXED + NFUNCS + (i))
#define NNAMES		16
#define S_ID(i)		(S_FIXED + NFUNCS + NNAMES + (i))

static void
encode(struct buf *out, uint64_t first_span, size_t nspans, bool spans, int ticks, int stacks,
    int64_t t)
{
	struct buf m = { 0 }, v = { 0 };
	static const char *const fixed[] = { "", "samples", "count", "cpu", "nanoseconds",
	    "span_id", "span_name" };
	int64_t *agg = NULL;
	size_t i, k;
	int j;
	char s[64];

	buf_reset(out);
	buf_reset(&m);
	fvar(&m, 1, S_SAMPLES);
	fvar(&m, 2, S_COUNT);
	fmsg(out, 1, &m);
	buf_reset(&m);
	fvar(&m, 1, S_CPU);
	fvar(&m, 2, S_NS);
	fmsg(out, 1, &m);
	if (!spans)
		agg = calloc(POOL, sizeof(*agg));
	for (i = 0; i < nspans; i++) {
		uint64_t id = mix(first_span + i);

		for (k = 0; k < (size_t)stacks; k++) {
			int st = (int)(mix(id + k) % POOL);
			int n = ticks / stacks + ((int)k < ticks % stacks);

			if (!spans) {
				agg[st] += n;
				continue;
			}
			buf_reset(&m);
			buf_reset(&v);
			for (j = 0; j < DEPTH; j++)
				buf_add_varint(&v, (uint64_t)(mix((uint64_t)st * 31 + (uint64_t)j) %
				    NFUNCS) + 1);
			fmsg(&m, 1, &v);
			buf_reset(&v);
			buf_add_varint(&v, (uint64_t)n);
			buf_add_varint(&v, (uint64_t)n * PERIOD);
			fmsg(&m, 2, &v);
			buf_reset(&v);
			fvar(&v, 1, S_SPAN_ID);
			fvar(&v, 2, S_ID(i));
			fmsg(&m, 3, &v);
			buf_reset(&v);
			fvar(&v, 1, S_SPAN_NAME);
			fvar(&v, 2, S_NAME(id % NNAMES));
			fmsg(&m, 3, &v);
			fmsg(out, 2, &m);
		}
	}
	for (k = 0; agg && k < POOL; k++) {
		if (agg[k] == 0)
			continue;
		buf_reset(&m);
		buf_reset(&v);
		for (j = 0; j < DEPTH; j++)
			buf_add_varint(&v, (uint64_t)(mix(k * 31 + (uint64_t)j) % NFUNCS) + 1);
		fmsg(&m, 1, &v);
		buf_reset(&v);
		buf_add_varint(&v, (uint64_t)agg[k]);
		buf_add_varint(&v, (uint64_t)agg[k] * PERIOD);
		fmsg(&m, 2, &v);
		fmsg(out, 2, &m);
	}
	for (j = 0; j < NFUNCS; j++) {
		buf_reset(&m);
		fvar(&m, 1, (uint64_t)j + 1);		/* location id */
		buf_reset(&v);
		fvar(&v, 1, (uint64_t)j + 1);		/* line.function_id */
		fvar(&v, 2, (uint64_t)j + 10);
		fmsg(&m, 4, &v);
		fmsg(out, 4, &m);
		buf_reset(&m);
		fvar(&m, 1, (uint64_t)j + 1);
		fvar(&m, 2, S_FUNC(j));
		fmsg(out, 5, &m);
	}
	for (i = 0; i < S_FIXED; i++)
		fbytes(out, 6, fixed[i], strlen(fixed[i]));
	for (j = 0; j < NFUNCS; j++) {
		snprintf(s, sizeof(s), "service/handler.step%02d", j);
		fbytes(out, 6, s, strlen(s));
	}
	for (j = 0; j < NNAMES; j++) {
		snprintf(s, sizeof(s), "GET /api/v1/route%d", j);
		fbytes(out, 6, s, strlen(s));
	}
	for (i = 0; spans && i < nspans; i++) {
		snprintf(s, sizeof(s), "%016" PRIx64, mix(first_span + i));
		fbytes(out, 6, s, 16);
	}
	fvar(out, 9, (uint64_t)t);
	fvar(out, 10, 10000000000ull);
	buf_reset(&m);
	fvar(&m, 1, S_CPU);
	fvar(&m, 2, S_NS);
	fmsg(out, 11, &m);
	fvar(out, 12, PERIOD);
	buf_free(&m);
	buf_free(&v);
	free(agg);
}

static int
put(const char *dir, bool spans, size_t nspans, int ticks, int stacks)
{
	struct store_input in = { .service = "bench", .type = "cpu", .source = "bench" };
	struct buf err = { 0 }, pb = { 0 };
	struct store *st;
	int64_t t0 = (now_ns(CLOCK_REALTIME) / 3600000000000 - 1) * 3600000000000;
	size_t p, per = nspans / PROFILES, done = 0;
	uint64_t rows = 0, nticks = 0;
	int rc;

	if ((rc = store_open(dir, &st, &err)) < 0) {
		fprintf(stderr, "spanbench: %s\n", err.data);
		return 1;
	}
	for (p = 0; p < PROFILES; p++) {
		size_t n = p == PROFILES - 1 ? nspans - done : per;

		encode(&pb, done, n, spans, ticks, stacks, t0 + (int64_t)p * 10000000000);
		in.created_at = t0 + (int64_t)p * 10000000000;
		buf_reset(&err);
		if ((rc = store_put(st, &in, pb.data, pb.len, NULL, &err)) < 0) {
			fprintf(stderr, "spanbench: put: %s\n", err.data ? err.data : strerror(-rc));
			return 1;
		}
		done += n;
		rows += (uint64_t)n * (uint64_t)stacks;
		nticks += (uint64_t)n * (uint64_t)ticks;
	}
	store_compact(st, NULL);
	store_settle(st);
	store_close(st);
	printf("profiles %d spans %zu rows %" PRIu64 " ticks %" PRIu64 " from %" PRId64 "\n",
	    PROFILES, spans ? nspans : 0, rows, nticks, t0);
	buf_free(&pb);
	buf_free(&err);
	return 0;
}

static int
get(const char *dir, int n, size_t nspans, int64_t t0)
{
	struct buf err = { 0 };
	struct store *st;
	int i, rc;

	if ((rc = store_open(dir, &st, &err)) < 0) {
		fprintf(stderr, "spanbench: %s\n", err.data);
		return 1;
	}
	for (i = 0; i < n; i++) {
		uint64_t id = mix(mix((uint64_t)i + 77) % nspans);
		struct span_sel sel = { .ids = &id, .nids = 1 };
		struct query q = { .service = "bench", .type = "cpu", .from = t0,
		    .to = t0 + 3600000000000, .merged_only = true, .spans = &sel };
		struct query_result res;
		int64_t a = now_ns(CLOCK_MONOTONIC), b;

		rc = query_merge(st, &q, &res);
		b = now_ns(CLOCK_MONOTONIC);
		printf("lookup %016" PRIx64 " %.2f ms rc %d samples %zu total %" PRId64 "\n", id,
		    (double)(b - a) / 1e6, rc, res.merged ? res.merged->nsamples : 0,
		    res.merged ? profile_total(res.merged, 1) : 0);
		query_result_free(&res);
	}
	store_close(st);
	buf_free(&err);
	return 0;
}

int
main(int argc, char **argv)
{
	size_t nspans = 1000000;
	int ticks = 20, stacks = 4, i;
	bool spans = true;

	if (argc >= 3 && strcmp(argv[1], "put") == 0) {
		for (i = 3; i < argc; i++) {
			if (strcmp(argv[i], "--no-spans") == 0)
				spans = false;
			else if (strcmp(argv[i], "--spans") == 0 && i + 1 < argc)
				nspans = strtoul(argv[++i], NULL, 10);
			else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc)
				ticks = atoi(argv[++i]);
			else if (strcmp(argv[i], "--stacks") == 0 && i + 1 < argc)
				stacks = atoi(argv[++i]);
		}
		if (stacks < 1 || ticks < stacks)
			return 2;
		return put(argv[2], spans, nspans, ticks, stacks);
	}
	if (argc == 6 && strcmp(argv[1], "get") == 0)
		return get(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 10),
		    strtoll(argv[5], NULL, 10));
	fprintf(stderr, "usage: spanbench put DIR [--no-spans] [--spans N] [--ticks N] "
	    "[--stacks N]\n       spanbench get DIR N NSPANS FROM_NS\n");
	return 2;
}
