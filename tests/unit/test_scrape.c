/*
 * test_scrape: the pure parts of the Go pull mode: the targets file
 * (collector/scrape/targets.c) with its defaults, its refusals and the lines its
 * errors name, and the delta between two scrapes of a cumulative profile
 * (pprof/delta.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "targets.h"
#include "util.h"

/* --- targets ------------------------------------------------------------- */

static const char *
label(const struct labelset *ls, const char *k)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (strcmp(ls->pairs[i].key, k) == 0)
			return ls->pairs[i].value;
	return NULL;
}

static void
targets_defaults(void **state)
{
	const char *t = "[{\"targets\": [\"10.0.0.5:6060\", \"db-1.example:7070\"],\n"
	    "  \"labels\": {\"service_name\": \"checkout\", \"env\": \"prod\", \"__meta_x\": \"y\"}},\n"
	    " {\"targets\": [\"[::1]:6061\"], \"interval\": \"30s\", \"timeout\": \"1m\",\n"
	    "  \"profiles\": [\"mutex\", \"delta_heap\", \"cpu\"], \"scheme\": \"https\",\n"
	    "  \"path_prefix\": \"/app/\"}]";
	struct target_list l;
	struct buf err = { 0 };
	const struct target_spec *s;

	(void)state;
	assert_int_equal(targets_parse(t, strlen(t), &l, &err), 0);
	assert_int_equal(l.n, 2 * 3 + 3);
	s = &l.v[0];
	assert_string_equal(s->profile->name, "cpu");
	assert_string_equal(s->url, "http://10.0.0.5:6060/debug/pprof/profile?seconds=14");
	assert_string_equal(s->service, "checkout");
	assert_string_equal(s->instance, "10.0.0.5:6060");
	assert_true(s->interval == INT64_C(15000000000));
	assert_true(s->timeout == INT64_C(24000000000));	/* 14 s + 10 s */
	assert_string_equal(label(&s->labels, "env"), "prod");
	assert_string_equal(label(&s->labels, "instance"), "10.0.0.5:6060");
	assert_null(label(&s->labels, "service_name"));
	assert_null(label(&s->labels, "__meta_x"));
	assert_int_equal(s->labels.n, 2);
	assert_string_equal(l.v[1].profile->name, "heap");
	assert_int_equal(l.v[1].profile->kind, SK_CUMULATIVE);
	assert_true(l.v[1].timeout == INT64_C(10000000000));
	assert_string_equal(l.v[2].profile->name, "goroutine");
	assert_string_equal(l.v[3].url, "http://db-1.example:7070/debug/pprof/profile?seconds=14");
	/* Second group: no service_name, so host:port; prefix without a double slash. */
	s = &l.v[6];
	assert_string_equal(s->url, "https://[::1]:6061/app/debug/pprof/mutex");
	assert_string_equal(s->service, "[::1]:6061");
	assert_true(s->timeout == INT64_C(30000000000));	/* capped at the interval */
	assert_string_equal(l.v[7].url, "https://[::1]:6061/app/debug/pprof/delta_heap");
	assert_string_equal(l.v[7].profile->type, "heap");
	assert_int_equal(l.v[7].profile->kind, SK_DELTA);
	assert_string_equal(l.v[8].url, "https://[::1]:6061/app/debug/pprof/profile?seconds=29");
	/* Keys differ between jobs and are stable. */
	assert_string_not_equal(l.v[0].key, l.v[3].key);
	targets_free(&l);
	buf_free(&err);
}

static void
expect_targets_error(const char *text, const char *want)
{
	struct target_list l;
	struct buf err = { 0 };

	assert_int_equal(targets_parse(text, strlen(text), &l, &err), -EINVAL);
	assert_int_equal(l.n, 0);
	if (strstr(err.data, want) == NULL)
		fail_msg("for %s: got '%s', want '%s'", text, err.data, want);
	buf_free(&err);
}

static void
targets_errors(void **state)
{
	(void)state;
	expect_targets_error("{}", "line 1: the file must hold a JSON array");
	expect_targets_error("[{\"targets\": [\"a:1\"],\n \"intervall\": \"5s\"}]",
	    "line 2: unknown key \"intervall\"");
	expect_targets_error("[{\"labels\": {}}]", "no \"targets\"");
	expect_targets_error("[{\"targets\": [\"a\"]}]", "target a: want \"host:port\"");
	expect_targets_error("[{\"targets\": [\"a:99999\"]}]", "want \"host:port\"");
	expect_targets_error("[{\"targets\": [\"a/b:1\"]}]", "want \"host:port\"");
	expect_targets_error("[{\"targets\": [\"u@a:1\"]}]", "want \"host:port\"");
	expect_targets_error("[{\"targets\": [\"a: 1\"]}]", "want \"host:port\"");
	expect_targets_error("[{\"targets\": [\"a:+1\"]}]", "want \"host:port\"");
	expect_targets_error("[{\"targets\": [5]}]", "want \"host:port\"");
	expect_targets_error("[{\"targets\": [\"a:1\"],\n\n \"interval\": \"1s\"}]",
	    "line 3: \"interval\" must be at least 2s");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"interval\": 15}]", "must be a duration");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"profiles\": [\"cpu\", \"cpu\"]}]",
	    "listed twice");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"profiles\": [\"heapz\"]}]",
	    "unknown profile \"heapz\"");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"profiles\": []}]", "non-empty");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"scheme\": \"ftp\"}]", "\"scheme\"");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"path_prefix\": \"x?y\"}]",
	    "\"path_prefix\"");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"labels\": {\"1x\": \"v\"}}]",
	    "bad label name");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"labels\": {\"k\": 1}}]",
	    "must be a string");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"labels\": {\"service_name\": \"a/b\"}}]",
	    "service_name");
	expect_targets_error("[{\"targets\": [\"a:1\"]}, {\"targets\": [\"a:1\"]}]",
	    "listed twice");
	expect_targets_error("[{\"targets\": [\"a:1\"],,}]", "line 1:");
	expect_targets_error("[{\"targets\": [\".x:1\"]}]", "cannot name a service");
}

/* Syntax errors: jansson's reason with the line it was found on. */
static void
targets_syntax_lines(void **state)
{
	struct target_list l;
	char deep[5000];

	(void)state;
	expect_targets_error("[{\"targets\": [\"a:1\"],\n  \"interval\": 15s}]", "line 2: ");
	expect_targets_error("[{\"targets\": [\"a:1\"],\n\n  \"interval\": \"5s\",\n}]",
	    "line 4: trailing comma before '}'");
	expect_targets_error("[{\"targets\": [\"a:1\"]},\n\n]", "line 3: trailing comma before ']'");
	expect_targets_error("[{\"targets\": [\"a:1\"],\n \"targets\": []}]",
	    "line 2: duplicate object key");
	expect_targets_error("[\n\n\"ab\ncd\"]", "line 3: ");
	expect_targets_error("[{\"targets\": [\"a:1\"]}]\n\nx", "line 3: end of file expected");
	expect_targets_error("[{\"targets\": [\"a:1\xff\"]}]", "line 1: unable to decode byte 0xff");
	expect_targets_error("", "line 1: the file is empty");
	expect_targets_error(" \n\n ", "the file is empty");
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	expect_targets_error(deep, "line 1: maximum parsing depth");
	/* The length bounds the parse: the text need not be NUL-terminated. */
	assert_int_equal(targets_parse("[]xxxx", 2, &l, NULL), 0);
	assert_int_equal(l.n, 0);
	/* A byte order mark is skipped; lines count as the editor shows them. */
	assert_int_equal(targets_parse("\xef\xbb\xbf[]", 5, &l, NULL), 0);
	expect_targets_error("\xef\xbb\xbf[\n{\"targets\": [\"a\"]}]", "line 2: target a");
}

/* Errors found in a valid document still name the line of the value at fault. */
static void
targets_semantic_lines(void **state)
{
	(void)state;
	expect_targets_error("\n\n{\"targets\": []}",
	    "line 3: the file must hold a JSON array of target groups, not object");
	expect_targets_error("[\n  5]", "line 2: each element must be an object with \"targets\", not number");
	expect_targets_error("[{\"targets\": [\"a:1\"]},\n {\"labels\": {}}]",
	    "line 2: group has no \"targets\" list");
	/* Second group, the value on its own line. */
	expect_targets_error("[{\"targets\": [\"a:1\"], \"interval\": \"5s\"},\n"
	    " {\"targets\": [\"b:1\"],\n  \"interval\":\n   \"1s\"}]",
	    "line 4: \"interval\" must be at least 2s");
	expect_targets_error("[{\"targets\": [\n  \"a:1\",\n  \"b\"\n]}]", "line 3: target b: want \"host:port\"");
	/* Keys are matched decoded: inter\u0076al is "interval", x\u00e9 is unknown. */
	expect_targets_error("[{\"targets\": [\"a:1\"],\n \"inter\\u0076al\": \"5s\",\n \"x\\u00e9\": 1}]",
	    "line 3: unknown key \"x\xc3\xa9\"");
	expect_targets_error("[{\"targets\": [\"a:1\"],\n \"labels\": {\n  \"env\": \"prod\",\n"
	    "  \"k\": 1}}]", "line 4: label \"k\" must be a string");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"labels\": {\"env\": \"p\"}},\n"
	    " {\"targets\": [\"b:1\"], \"labels\": {\"env\": \"p\",\n \"9x\": \"v\"}}]",
	    "line 3: bad label name \"9x\"");
	/* jansson shares one null: the place is found by its path, not its address. */
	expect_targets_error("[{\"targets\": [null],\n \"labels\": {\"x\": \"y\"},\n"
	    " \"profiles\": [\"cpu\", null]}]", "line 3: profile names are strings, not null");
	expect_targets_error("[{\"targets\": [\"a:1\"], \"profiles\": [\"heap\",\n \"heap\"]}]",
	    "line 2: profile \"heap\" listed twice");
	/* The same URL in two groups: the second is at fault. */
	expect_targets_error("[{\"targets\": [\"a:1\"]},\n {\"targets\": [\"b:2\"]},\n"
	    " {\"targets\": [\"b:2\"]}]",
	    "line 3: http://b:2/debug/pprof/profile?seconds=14 is listed twice");
	/* Strings holding brackets, commas and escaped quotes do not confuse the walk. */
	expect_targets_error("[{\"targets\": [\"a:1\"], \"labels\": {\"k\": \"]}\\\",[{\"}},\n"
	    " {\"targets\": [\"a:2\"], \"scheme\":\n \"ftp\"}]",
	    "line 3: \"scheme\" must be \"http\" or \"https\"");
}

/* --- delta --------------------------------------------------------------- */

#define HEAP_TYPES "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes"

/*
 * A heap profile with samples at stacks main.a<-main.main (with a bytes=64
 * label), main.b<-main.main and optionally main.c; `reversed` changes how the
 * functions and locations are laid out, as a new scrape renumbers them.
 */
static struct profile *
heap(bool reversed, const int64_t *a, const int64_t *b, const int64_t *c)
{
	struct profile *p = tp_new("space", "bytes", 524288, HEAP_TYPES);
	uint32_t m = tp_mapping(p, 0x400000, 0x800000, 0, "/bin/app", "b1d");
	uint32_t fm, fa, fb, fc, lm, la, lb, lc;
	struct pf_sample *s;

	if (reversed) {
		fc = tp_func(p, "main.c", "c.go", 1);
		fb = tp_func(p, "main.b", "b.go", 1);
		fa = tp_func(p, "main.a", "a.go", 1);
		fm = tp_func(p, "main.main", "m.go", 1);
		lc = tp_loc(p, m, 0x403000, (int)fc, -1);
		lb = tp_loc(p, m, 0x402000, (int)fb, -1);
		la = tp_loc(p, m, 0x401000, (int)fa, -1);
		lm = tp_loc(p, m, 0x400100, (int)fm, -1);
	} else {
		fm = tp_func(p, "main.main", "m.go", 1);
		fa = tp_func(p, "main.a", "a.go", 1);
		fb = tp_func(p, "main.b", "b.go", 1);
		fc = tp_func(p, "main.c", "c.go", 1);
		lm = tp_loc(p, m, 0x400100, (int)fm, -1);
		la = tp_loc(p, m, 0x401000, (int)fa, -1);
		lb = tp_loc(p, m, 0x402000, (int)fb, -1);
		lc = tp_loc(p, m, 0x403000, (int)fc, -1);
	}
	if (reversed && c)
		tp_sample(p, c, (int)lc, (int)lm, -1, NULL);
	if (b)
		tp_sample(p, b, (int)lb, (int)lm, -1, NULL);
	s = tp_sample(p, a, (int)la, (int)lm, -1, NULL);
	tp_numlabel(p, s, "bytes", 64, NULL);
	if (!reversed && c)
		tp_sample(p, c, (int)lc, (int)lm, -1, NULL);
	{
		struct profile *q = tp_reload(p);

		profile_free(p);
		return q;
	}
}

/* The values of the sample whose leaf is function `name`, or NULL. */
static const int64_t *
values_at(const struct profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nsamples; i++) {
		const struct pf_location *l = &p->locations[p->samples[i].locs[0]];

		if (strcmp(profile_str(p, p->functions[l->lines[0].function].name), name) == 0)
			return p->samples[i].values;
	}
	return NULL;
}

static void
delta_matches_by_stack(void **state)
{
	const int64_t pa[] = { 10, 1000, 2, 200 }, pb[] = { 5, 500, 1, 100 };
	const int64_t ca[] = { 15, 1500, 3, 300 }, cb[] = { 5, 500, 0, 0 }, cc[] = { 1, 10, 1, 10 };
	struct profile *prev = heap(false, pa, pb, NULL), *cur = heap(true, ca, cb, cc), *d;
	struct buf err = { 0 };
	const int64_t *v;

	(void)state;
	assert_non_null(prev);
	assert_non_null(cur);
	assert_int_equal(profile_delta(cur, prev, &d, &err), 0);
	/* a: counters are the difference, inuse the snapshot; b: unchanged and
	 * nothing in use, dropped; c: new, counted whole. */
	assert_int_equal(d->nsamples, 2);
	v = values_at(d, "main.a");
	assert_non_null(v);
	assert_true(v[0] == 5 && v[1] == 500 && v[2] == 3 && v[3] == 300);
	assert_int_equal(d->samples[0].nlabels + d->samples[1].nlabels, 1);
	assert_null(values_at(d, "main.b"));
	v = values_at(d, "main.c");
	assert_non_null(v);
	assert_true(v[0] == 1 && v[1] == 10 && v[2] == 1 && v[3] == 10);
	/* The result encodes and decodes. */
	{
		struct profile *r = tp_reload(d);

		assert_non_null(r);
		profile_free(r);
	}
	profile_free(d);
	profile_free(prev);
	profile_free(cur);
	buf_free(&err);
}

static void
delta_restart(void **state)
{
	const int64_t pa[] = { 10, 1000, 2, 200 }, pb[] = { 5, 500, 1, 100 };
	const int64_t ca[] = { 3, 300, 2, 200 }, cb[] = { 9, 900, 1, 100 };
	const int64_t ra[] = { 20, 2000, 2, 200 };
	struct profile *prev = heap(false, pa, pb, NULL), *cur = heap(false, ca, cb, NULL), *d;
	struct profile *fewer = heap(false, ra, NULL, NULL);
	struct buf err = { 0 };

	(void)state;
	/* A counter went down: the process restarted. */
	assert_int_equal(profile_delta(cur, prev, &d, &err), -ERANGE);
	assert_null(d);
	assert_non_null(strstr(err.data, "went down"));
	/* Stacks that vanish do not count as negative, but a lower total does. */
	buf_reset(&err);
	assert_int_equal(profile_delta(fewer, prev, &d, &err), 0);
	assert_int_equal(d->nsamples, 1);
	profile_free(d);
	{
		const int64_t small[] = { 11, 1001, 0, 0 };
		struct profile *lower = heap(false, small, NULL, NULL);

		buf_reset(&err);
		assert_int_equal(profile_delta(lower, prev, &d, &err), -ERANGE);
		assert_non_null(strstr(err.data, "total"));
		profile_free(lower);
	}
	/* Other sample types: refused. */
	{
		struct profile *cpu = tp_new("cpu", "nanoseconds", 10000000,
		    "samples/count,cpu/nanoseconds");

		buf_reset(&err);
		assert_int_equal(profile_delta(cpu, prev, &d, &err), -EINVAL);
		profile_free(cpu);
	}
	profile_free(prev);
	profile_free(cur);
	profile_free(fewer);
	buf_free(&err);
}

/*
 * The store's increase of a pushed snapshot: one stack going down counts its
 * whole value (that counter reset), a total going down is a new process.
 */
static void
increase_resets(void **state)
{
	const int64_t pa[] = { 10, 1000, 2, 200 }, pb[] = { 5, 500, 1, 100 };
	const int64_t ca[] = { 3, 300, 1, 100 }, cb[] = { 20, 2000, 4, 400 };
	const int64_t la[] = { 3, 300, 1, 100 }, lb[] = { 1, 100, 1, 100 };
	struct profile *prev = heap(false, pa, pb, NULL), *cur = heap(false, ca, cb, NULL), *d;
	struct profile *lower = heap(false, la, lb, NULL);
	struct buf err = { 0 };
	const int64_t *v;

	(void)state;
	assert_true(profile_is_snapshot(prev));
	assert_int_equal(profile_increase(cur, prev, &d, &err), 0);
	v = values_at(d, "main.a");
	assert_non_null(v);
	assert_true(v[0] == 3 && v[1] == 300 && v[2] == 1 && v[3] == 100);
	v = values_at(d, "main.b");
	assert_non_null(v);
	assert_true(v[0] == 15 && v[1] == 1500 && v[2] == 4 && v[3] == 400);
	profile_free(d);
	/* The totals went down: a new process, the caller counts it whole. */
	assert_int_equal(profile_increase(lower, prev, &d, &err), -ERANGE);
	assert_null(d);
	/* Against itself: counters zero, in use kept (a late snapshot). */
	assert_int_equal(profile_increase(prev, prev, &d, &err), 0);
	assert_true(profile_total(d, 1) == 0 && profile_total(d, 3) == 300);
	profile_free(d);
	/* A duration makes it a delta; CPU is no snapshot of totals. */
	prev->duration_nanos = 1000000000;
	assert_false(profile_is_snapshot(prev));
	{
		struct profile *cpu = tp_new("cpu", "nanoseconds", 10000000,
		    "samples/count,cpu/nanoseconds");

		assert_false(profile_is_snapshot(cpu));
		profile_free(cpu);
	}
	profile_free(prev);
	profile_free(cur);
	profile_free(lower);
	buf_free(&err);
}

/* Real Go heap scrapes of one process: deltas are never negative. */
static void
delta_real_series(void **state)
{
	static const char *const files[] = {
		"parca/many-1644509272337470000.pb.gz", "parca/many-1644509275338070000.pb.gz",
		"parca/many-1644509278338696000.pb.gz", "parca/many-1644509281339135000.pb.gz",
	};
	struct profile *prev = NULL, *cur, *d;
	struct buf err = { 0 };
	size_t i, k, t;

	(void)state;
	if (real_dir() == NULL) {
		print_message("real profiles not found (set REAL=)\n");
		return;
	}
	for (k = 0; k < 4; k++) {
		cur = load_real(files[k]);
		assert_non_null(cur);
		if (prev) {
			buf_reset(&err);
			assert_int_equal(profile_delta(cur, prev, &d, &err), 0);
			for (t = 0; t < d->nsample_types; t++) {
				const char *name = profile_str(d, d->sample_types[t].type);

				if (strncmp(name, "alloc_", 6) == 0)
					assert_true(profile_total(d, t) ==
					    profile_total(cur, t) - profile_total(prev, t));
				else
					assert_true(profile_total(d, t) == profile_total(cur, t));
			}
			for (i = 0; i < d->nsamples; i++)
				for (t = 0; t < d->nsample_types; t++)
					assert_true(d->samples[i].values[t] >= 0);
			profile_free(d);
			profile_free(prev);
		}
		prev = cur;
	}
	/* A profile against itself: the counters are all zero, in use stays. */
	assert_int_equal(profile_delta(prev, prev, &d, &err), 0);
	assert_true(profile_total(d, 1) == 0);
	assert_true(profile_total(d, 3) == profile_total(prev, 3));
	profile_free(d);
	profile_free(prev);
	buf_free(&err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(targets_defaults),
		cmocka_unit_test(targets_errors),
		cmocka_unit_test(targets_syntax_lines),
		cmocka_unit_test(targets_semantic_lines),
		cmocka_unit_test(delta_matches_by_stack),
		cmocka_unit_test(delta_restart),
		cmocka_unit_test(increase_resets),
		cmocka_unit_test(delta_real_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
