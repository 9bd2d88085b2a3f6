/*
 * test_cluster: the strings a fleet keeps in ClickHouse (cluster/codec.c).
 * Every real profile, its stacks written as text and read back through the
 * merge's builder, keeps its sums, samples and functions; malformed text is
 * refused without a crash. Also the TabSeparated reader of chttp.c, the
 * URL list's shards and replicas, the proof that they are the cluster's
 * shards (reads shard by shard), and the tables' ENGINE clauses; the keys
 * of stacks the shipper keeps (shipped.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster_int.h"
#include "util.h"

/* p rebuilt from codec text: header, then each sample's stack and values. */
static struct profile *
roundtrip(const struct profile *p, bool memo)
{
	struct codec_memo *cm = memo ? codec_memo_create() : NULL;
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	struct buf hdr = { 0 }, st = { 0 };
	struct merge *m = merge_create();
	struct profile *out = NULL;
	size_t i, nt = 0;

	assert_int_equal(codec_header(p, &hdr), 0);
	assert_int_equal(codec_begin(m, hdr.data, p->period, &nt, gauge), 0);
	assert_int_equal(nt, p->nsample_types);
	for (i = 0; i < p->nsamples; i++) {
		buf_reset(&st);
		assert_int_equal(codec_stack(p, &p->samples[i], &st), 0);
		assert_int_equal(codec_add(m, cm, st.data ? st.data : "", st.len,
		    p->samples[i].values, nt), 0);
	}
	assert_int_equal(merge_finish(m, false, &out), 0);
	codec_memo_free(cm);
	merge_free(m);
	buf_free(&hdr);
	buf_free(&st);
	return out;
}

static struct profile *
merged_alone(const struct profile *p)
{
	struct merge *m = merge_create();
	struct profile *out = NULL;

	assert_int_equal(merge_add(m, p, NULL), 0);
	assert_int_equal(merge_finish(m, false, &out), 0);
	merge_free(m);
	return out;
}

static void
test_real_roundtrip(void **state)
{
	struct buf eb = { 0 }, ec = { 0 };
	size_t n, i, t, done = 0;
	char **files = real_files(&n);

	(void)state;
	for (i = 0; i < n; i++) {
		struct profile *p = load_real(files[i]), *a, *b, *c;

		if (p == NULL || p->nsample_types == 0) {
			profile_free(p);
			free(files[i]);
			continue;
		}
		a = merged_alone(p);
		b = roundtrip(p, false);
		/* Read through the memo of locations: the very same profile. */
		c = roundtrip(p, true);
		buf_reset(&eb);
		buf_reset(&ec);
		assert_int_equal(profile_encode(b, false, &eb), 0);
		assert_int_equal(profile_encode(c, false, &ec), 0);
		assert_int_equal(eb.len, ec.len);
		assert_memory_equal(eb.data, ec.data, eb.len);
		profile_free(c);
		for (t = 0; t < p->nsample_types; t++)
			assert_true(profile_total(a, t) == profile_total(b, t));
		assert_int_equal(a->nsamples, b->nsamples);
		assert_int_equal(a->nfunctions, b->nfunctions);
		assert_int_equal(a->nlocations, b->nlocations);
		/*
		 * A merge keeps a profile's first mapping even when no location
		 * uses it (pprof's "main binary"); stacks carry only the used ones.
		 */
		assert_true(b->nmappings == a->nmappings || b->nmappings + 1 == a->nmappings);
		profile_free(a);
		profile_free(b);
		profile_free(p);
		free(files[i]);
		done++;
	}
	free(files);
	buf_free(&eb);
	buf_free(&ec);
	assert_true(done > 0);
}

/*
 * shipped.c: two stacks have one key exactly when codec_stack() writes one
 * text for them, over every real profile, and a profile encoded and decoded
 * again has the same keys; and the shipped set keeps addresses,
 * forgets what was shipped, and stays bounded.
 */
static void
test_stack_keys(void **state)
{
	struct shipped *t = shipped_create(64);
	struct intern *texts = intern_create(64), *keyids = intern_create(64);
	struct buf st = { 0 }, enc = { 0 }, err = { 0 };
	int64_t *text_key = NULL;
	size_t n, i, j, done = 0, ntext = 0;
	char **files = real_files(&n);

	(void)state;
	for (i = 0; i < n; i++) {
		struct profile *p = load_real(files[i]), *q = NULL;
		struct stackkey a, b;
		uint64_t (*ka)[2], kb[2];
		int64_t *tid;

		free(files[i]);
		if (p == NULL || p->nsamples == 0) {
			profile_free(p);
			continue;
		}
		buf_reset(&enc);
		assert_int_equal(profile_encode(p, false, &enc), 0);
		assert_int_equal(profile_decode(enc.data, enc.len, &q, &err), 0);
		assert_int_equal(stackkey_begin(&a, p, shipped_key(t)), 0);
		assert_int_equal(stackkey_begin(&b, q, shipped_key(t)), 0);
		ka = calloc(p->nsamples, sizeof(*ka));
		tid = calloc(p->nsamples, sizeof(*tid));
		assert_non_null(ka);
		assert_non_null(tid);
		for (j = 0; j < p->nsamples; j++) {
			buf_reset(&st);
			assert_int_equal(codec_stack(p, &p->samples[j], &st), 0);
			tid[j] = intern_put(texts, st.data ? st.data : "", st.len, NULL);
			assert_int_equal(stackkey_stack(&a, &p->samples[j], ka[j]), 0);
			assert_int_equal(stackkey_stack(&b, &q->samples[j], kb), 0);
			assert_memory_equal(ka[j], kb, sizeof(kb));
		}
		/* One text, one key, over every profile: a table of each. */
		for (j = 0; j < p->nsamples; j++) {
			int64_t kid = intern_put(keyids, ka[j], sizeof(ka[j]), NULL);

			assert_true(kid >= 0);
			if ((size_t)tid[j] >= ntext) {
				text_key = realloc(text_key, (size_t)(tid[j] + 1) * sizeof(*text_key));
				assert_non_null(text_key);
				for (; ntext <= (size_t)tid[j]; ntext++)
					text_key[ntext] = -1;
			}
			if (text_key[tid[j]] < 0)
				text_key[tid[j]] = kid;
			assert_int_equal(text_key[tid[j]], kid);
		}
		stackkey_end(&a);
		stackkey_end(&b);
		free(ka);
		free(tid);
		profile_free(p);
		profile_free(q);
		done++;
	}
	free(files);
	assert_true(done > 0);

	/* The set: an address kept, shipped once marked, forgotten at once. */
	{
		uint64_t k1[2] = { 1, 2 }, k[2];
		char hex[DIGEST128_HEX];
		bool shipped;
		size_t m;

		memset(hex, 'a', sizeof(hex));
		assert_null(shipped_get(t, k1, &shipped));
		shipped_put(t, k1, hex);
		assert_non_null(shipped_get(t, k1, &shipped));
		assert_false(shipped);
		shipped_mark(t, k1);
		assert_memory_equal(shipped_get(t, k1, &shipped), hex, DIGEST128_HEX);
		assert_true(shipped);
		shipped_forget(t);
		assert_non_null(shipped_get(t, k1, &shipped));
		assert_false(shipped);
		for (m = 0; m < 1000; m++) {
			k[0] = m * 0x9e3779b97f4a7c15ULL;
			k[1] = m;
			shipped_put(t, k, hex);
		}
		assert_true(shipped_count(t) <= 64);
	}
	/* As many keys as texts: each text had one key, so no key had two texts. */
	assert_int_equal(intern_count(keyids), intern_count(texts));
	shipped_free(t);
	free(text_key);
	intern_destroy(keyids);
	intern_destroy(texts);
	buf_free(&st);
	buf_free(&enc);
	buf_free(&err);
}

static void
test_malformed(void **state)
{
	static const char *const bad[] = {
		"zz\x1f" "0\x1f\x1f\x1f",		/* address not hex */
		"10\x1f" "0\x1f",			/* too few fields */
		"10\x1f" "0\x1f\x1c\x1f\x1f",		/* "same mapping" with none before */
		"10\x1f" "0\x1f" "1,2\x1f" "a\x1f" "b",	/* mapping of 2 numbers */
		"10\x1f" "0\x1f\x1f\x1f\x1f" "f\x1f" "f\x1f" "x.go\x1f" "1\x1f" "2",	/* short line */
		"10\x1f" "0\x1f\x1f\x1f\x1f" "%4\x1f" "f\x1f" "x.go\x1f" "1\x1f" "2\x1f" "0", /* bad escape */
		"\x1d" "k\x1f" "v",			/* label of 2 fields */
	};
	static const char *const hdrs[] = { "", "a\x1f" "b", "a\x1f" "b\x1f" "c\x1f" "d", "%zz\x1f"
	    "b\x1f" "c\x1f" "d\x1f" "e" };
	const char *types[] = { "samples" }, *units[] = { "count" };
	struct merge_header h = { .types = types, .units = units, .ntypes = 1,
	    .period_type = "cpu", .period_unit = "nanoseconds" };
	bool gauge[PROFILE_MAX_SAMPLE_TYPES];
	struct codec_memo *cm;
	int64_t v = 1;
	size_t i, nt;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct merge *m = merge_create();

		assert_int_equal(merge_begin(m, &h), 0);
		assert_true(codec_add(m, NULL, bad[i], strlen(bad[i]), &v, 1) < 0);
		merge_free(m);
		/* Through a memo, twice: refused each time. */
		m = merge_create();
		cm = codec_memo_create();
		assert_int_equal(merge_begin(m, &h), 0);
		assert_true(codec_add(m, cm, bad[i], strlen(bad[i]), &v, 1) < 0);
		assert_true(codec_add(m, cm, bad[i], strlen(bad[i]), &v, 1) < 0);
		codec_memo_free(cm);
		merge_free(m);
	}
	for (i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		struct merge *m = merge_create();

		assert_true(codec_begin(m, hdrs[i], 1, &nt, gauge) < 0);
		merge_free(m);
	}
}

static void
test_tsv(void **state)
{
	struct buf b = { 0 };
	struct tsv t;
	uint64_t u;
	int64_t s;

	(void)state;
	buf_adds(&b, "a\\tb\tc\\\\d\t\\n\n1\t-2\n");
	tsv_init(&t, &b);
	assert_int_equal(tsv_next(&t), 1);
	assert_int_equal(t.nf, 3);
	assert_string_equal(t.f[0], "a\tb");
	assert_string_equal(t.f[1], "c\\d");
	assert_string_equal(t.f[2], "\n");
	assert_int_equal(tsv_next(&t), 1);
	assert_int_equal(tsv_u64(t.f[0], &u), 0);
	assert_true(u == 1);
	assert_true(tsv_u64(t.f[1], &u) < 0);
	assert_int_equal(tsv_i64(t.f[1], &s), 0);
	assert_true(s == -2);
	assert_int_equal(tsv_next(&t), 0);
	tsv_free(&t);
	/* Empty fields, an escape at a field's start and end, a NUL. */
	buf_reset(&b);
	buf_adds(&b, "\t\\0x\\t\tlong run\\\\\n");
	tsv_init(&t, &b);
	assert_int_equal(tsv_next(&t), 1);
	assert_int_equal(t.nf, 3);
	assert_int_equal(t.len[0], 0);
	assert_int_equal(t.len[1], 3);
	assert_memory_equal(t.f[1], "\0x\t", 3);
	assert_string_equal(t.f[2], "long run\\");
	assert_int_equal(tsv_next(&t), 0);
	tsv_free(&t);
	/* A cut answer (no final newline) and a trailing escape are refused. */
	buf_reset(&b);
	buf_adds(&b, "1\t2");
	tsv_init(&t, &b);
	assert_true(tsv_next(&t) < 0);
	tsv_free(&t);
	buf_reset(&b);
	buf_adds(&b, "1\\");
	tsv_init(&t, &b);
	assert_true(tsv_next(&t) < 0);
	tsv_free(&t);
	buf_free(&b);
}

static void
urls_free(struct cluster *c)
{
	size_t i;

	for (i = 0; i < c->nurls; i++) {
		free(c->urls[i].base);
		free(c->urls[i].shown);
	}
	free(c->db);
	memset(c, 0, sizeof(*c));
}

/* ',' between shards, '|' between a shard's replicas (only when replicated). */
/* The servers' shards as told (0: unknown), cluster_shards each; whether reads go shard by shard. */
static bool
direct_of(struct cluster *c, const size_t *num, size_t nshards_told)
{
	size_t i;

	for (i = 0; i < c->nurls; i++) {
		atomic_store(&c->urls[i].shard_num, num[i]);
		atomic_store(&c->urls[i].cluster_shards, num[i] ? nshards_told : 0);
	}
	ch_direct_check(c);
	return atomic_load(&c->direct);
}

/*
 * Reads ask each shard directly only when the URL groups are proven to be
 * the cluster's shards, each once: never a shard missing or counted twice.
 */
static void
test_direct(void **state)
{
	static struct cluster c;
	struct buf err = { 0 };

	(void)state;
	c.name = "profilefs";
	assert_int_equal(ch_parse_urls(&c, "http://a:1,http://b:2", &err), 0);
	assert_true(direct_of(&c, (size_t[]){ 1, 2 }, 2));
	assert_true(direct_of(&c, (size_t[]){ 2, 1 }, 2));
	assert_false(direct_of(&c, (size_t[]){ 1, 1 }, 2));	/* one shard twice */
	assert_false(direct_of(&c, (size_t[]){ 1, 0 }, 2));	/* one not told */
	assert_false(direct_of(&c, (size_t[]){ 1, 2 }, 3));	/* a shard not listed */
	urls_free(&c);

	/* One URL of a cluster of two shards: through the Distributed tables. */
	c.name = "profilefs";
	assert_int_equal(ch_parse_urls(&c, "http://a:1", &err), 0);
	assert_false(direct_of(&c, (size_t[]){ 1 }, 2));
	assert_true(direct_of(&c, (size_t[]){ 1 }, 1));
	urls_free(&c);

	/* Replicas: a group is one shard; one replica not reached yet is not used. */
	c.name = "profilefs";
	c.replicated = true;
	assert_int_equal(ch_parse_urls(&c, "http://a:1|http://b:2,http://c:3|http://d:4", &err), 0);
	assert_true(direct_of(&c, (size_t[]){ 1, 1, 2, 2 }, 2));
	assert_true(direct_of(&c, (size_t[]){ 1, 0, 0, 2 }, 2));
	assert_false(direct_of(&c, (size_t[]){ 1, 2, 2, 2 }, 2));	/* a group of two shards */
	assert_false(direct_of(&c, (size_t[]){ 0, 0, 2, 2 }, 2));	/* a shard not reached */
	urls_free(&c);
	c.replicated = false;
	buf_free(&err);
}

static void
test_urls(void **state)
{
	static const char *const bad[] = { "http://a:1||http://b:2", "|http://a:1",
	    "http://a:1|", "http://a:1|,http://b:2", "|" };
	static struct cluster c;
	struct buf err = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(ch_parse_urls(&c, "http://a:1,http://b:2/db", &err), 0);
	assert_int_equal(c.nurls, 2);
	assert_int_equal(c.nshards, 2);
	assert_int_equal(c.urls[0].shard, 0);
	assert_int_equal(c.urls[1].shard, 1);
	assert_string_equal(c.db, "db");
	urls_free(&c);

	assert_true(ch_parse_urls(&c, "http://a:1|http://b:2", &err) < 0);
	assert_non_null(strstr(err.data, "--clickhouse-replicated"));
	urls_free(&c);

	c.replicated = true;
	buf_reset(&err);
	assert_int_equal(ch_parse_urls(&c, "http://a:1|http://b:2,http://c:3|http://d:4,"
	    "http://e:5", &err), 0);
	assert_int_equal(c.nurls, 5);
	assert_int_equal(c.nshards, 3);
	assert_int_equal(c.urls[0].shard, 0);
	assert_int_equal(c.urls[1].shard, 0);
	assert_int_equal(c.urls[2].shard, 1);
	assert_int_equal(c.urls[3].shard, 1);
	assert_int_equal(c.urls[4].shard, 2);
	assert_string_equal(c.urls[3].base, "http://d:4/");
	urls_free(&c);

	/* Empty replicas are refused; an empty shard (",,") is skipped as before. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.replicated = true;
		buf_reset(&err);
		assert_true(ch_parse_urls(&c, bad[i], &err) < 0);
		assert_non_null(err.data);
		urls_free(&c);
	}
	c.replicated = true;
	assert_int_equal(ch_parse_urls(&c, "http://a:1,,http://b:2|http://c:3", &err), 0);
	assert_int_equal(c.nshards, 2);
	assert_int_equal(c.urls[2].shard, 1);
	urls_free(&c);
	buf_free(&err);
}

static void
test_engine(void **state)
{
	static struct cluster c;
	struct buf b = { 0 };
	char db[] = "pf";

	(void)state;
	c.db = db;
	assert_int_equal(cluster_engine(&c, "SummingMergeTree(value)", "samples10_local", &b), 0);
	assert_string_equal(b.data, "SummingMergeTree(value)");
	c.replicated = true;
	buf_reset(&b);
	assert_int_equal(cluster_engine(&c, "MergeTree", "profiles_local", &b), 0);
	assert_string_equal(b.data, "ReplicatedMergeTree('/clickhouse/tables/{shard}/"
	    "pf.profiles_local', '{replica}')");
	buf_reset(&b);
	assert_int_equal(cluster_engine(&c, "SummingMergeTree(value)", "samples10_local", &b), 0);
	assert_string_equal(b.data, "ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/"
	    "pf.samples10_local', '{replica}', value)");
	buf_reset(&b);
	assert_int_equal(cluster_engine(&c, "ReplacingMergeTree()", "stacks_local", &b), 0);
	assert_string_equal(b.data, "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/"
	    "pf.stacks_local', '{replica}')");
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_roundtrip),
		cmocka_unit_test(test_stack_keys),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_tsv),
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_engine),
	};

	return cmocka_run_group_tests_name("cluster", tests, NULL, NULL);
}
