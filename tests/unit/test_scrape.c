/*
 * test_scrape: the pure parts of the Go pull mode: the JSON reader
 * (collector/json.c) and its line numbers, the targets file
 * (collector/targets.c) with its defaults and refusals, and the delta between
 * two scrapes of a cumulative profile (pprof/delta.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "json.h"
#include "targets.h"
#include "util.h"

/* --- json ---------------------------------------------------------------- */

static void
json_ok(void **state)
{
	const char *t = "\xef\xbb\xbf{\"a\": [1, -2.5e3, true, false, null],\n"
	    " \"s\": \"x\\u00e9\\ud83d\\ude00\\n\", \"o\": {}}";
	struct json *j;
	const struct json *a, *s, *e;

	(void)state;
	assert_int_equal(json_parse(t, strlen(t), &j, NULL), 0);
	assert_int_equal(j->type, JSON_OBJECT);
	a = json_get(j, "a");
	assert_non_null(a);
	assert_int_equal(a->type, JSON_ARRAY);
	e = a->child;
	assert_true(e->num == 1);
	assert_true(e->next->num == -2500);
	assert_true(e->next->next->b);
	assert_int_equal(e->next->next->next->next->type, JSON_NULL);
	s = json_get(j, "s");
	assert_string_equal(s->str, "x\xc3\xa9\xf0\x9f\x98\x80\n");
	assert_int_equal(s->line, 2);
	assert_int_equal(json_get(j, "o")->type, JSON_OBJECT);
	assert_null(json_get(j, "missing"));
	json_free(j);
}

static void
expect_json_error(const char *text, const char *want)
{
	struct buf err = { 0 };
	struct json *j = (struct json *)1;

	assert_int_equal(json_parse(text, strlen(text), &j, &err), -EINVAL);
	assert_null(j);
	if (strstr(err.data, want) == NULL)
		fail_msg("for %s: got '%s', want '%s'", text, err.data, want);
	buf_free(&err);
}

static void
json_errors(void **state)
{
	char deep[200];

	(void)state;
	expect_json_error("[1,\n2,\n]", "line 3: trailing comma");
	expect_json_error("{\"a\": 1,\n \"a\": 2}", "line 2: duplicate key \"a\"");
	expect_json_error("[\"abc", "line 1: unterminated string");
	expect_json_error("[\n\n\"ab\ncd\"]", "line 3: unterminated string (newline inside)");
	expect_json_error("{\"a\" 1}", "expected ':'");
	expect_json_error("[1 2]", "expected ',' or ']'");
	expect_json_error("[01]", "expected ',' or ']'");
	expect_json_error("[1.]", "bad number");
	expect_json_error("[tru]", "not a JSON value");
	expect_json_error("[1] x", "unexpected text after");
	expect_json_error("", "unexpected end of file");
	expect_json_error("[\"\\ud800\"]", "unpaired surrogate");
	expect_json_error("[\"\\u0000\"]", "not allowed");
	expect_json_error("[\"\\q\"]", "bad escape");
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	expect_json_error(deep, "nested too deeply");
	/* Not NUL-terminated: the length bounds the parse. */
	{
		struct json *j;

		assert_int_equal(json_parse("[1]xxxx", 3, &j, NULL), 0);
		json_free(j);
	}
}

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
		cmocka_unit_test(json_ok),
		cmocka_unit_test(json_errors),
		cmocka_unit_test(targets_defaults),
		cmocka_unit_test(targets_errors),
		cmocka_unit_test(delta_matches_by_stack),
		cmocka_unit_test(delta_restart),
		cmocka_unit_test(delta_real_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
