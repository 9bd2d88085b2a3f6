/*
 * test_matchers: Prometheus label matchers (base/labels.c): the API's
 * selector syntax, the tree's %XX form, full-match regexes, absent labels
 * read as "", service_name, canonical formatting, and refusals with reasons.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base.h"
#include "util.h"

/* Whether prom selector sel selects the series of service with labels set ("k=v,..."). */
static bool
sel_match(const char *sel, const char *service, const char *set)
{
	struct matchers ms;
	struct labelset ls;
	bool ok;

	assert_int_equal(matchers_parse_prom(sel, &ms, NULL), 0);
	assert_int_equal(labels_parse(set, &ls, NULL), 0);
	ok = matchers_match(&ms, service, &ls);
	matchers_clear(&ms);
	labels_clear(&ls);
	return ok;
}

/* The same for the tree's form. */
static bool
path_match(const char *sel, const char *set)
{
	struct matchers ms;
	struct labelset ls;
	bool ok;

	assert_int_equal(matchers_parse_path(sel, &ms, NULL), 0);
	assert_int_equal(labels_parse(set, &ls, NULL), 0);
	ok = matchers_match(&ms, "svc", &ls);
	matchers_clear(&ms);
	labels_clear(&ls);
	return ok;
}

/* The reason a prom selector is refused ("" if accepted). */
static const char *
refusal(const char *sel)
{
	static char out[512];
	struct matchers ms;
	struct buf err = { 0 };

	out[0] = '\0';
	if (matchers_parse_prom(sel, &ms, &err) < 0)
		snprintf(out, sizeof(out), "%s", err.data ? err.data : "(no reason)");
	else
		matchers_clear(&ms);
	buf_free(&err);
	return out;
}

static void
test_prom_parse(void **state)
{
	struct matchers ms;
	struct buf err = { 0 };

	(void)state;
	assert_int_equal(matchers_parse_prom("{service_name=\"checkout\", pod=~\"api-.*\", "
	    "region!=\"eu\", zone!~'a|b'}", &ms, &err), 0);
	assert_int_equal(ms.n, 4);
	assert_string_equal(ms.m[0].key, "service_name");
	assert_int_equal(ms.m[0].op, MATCH_EQ);
	assert_string_equal(ms.m[1].value, "api-.*");
	assert_int_equal(ms.m[1].op, MATCH_RE);
	assert_int_equal(ms.m[2].op, MATCH_NE);
	assert_int_equal(ms.m[3].op, MATCH_NRE);
	assert_string_equal(ms.m[3].value, "a|b");
	matchers_clear(&ms);
	/* Empty selectors select everything; a trailing comma is allowed. */
	assert_int_equal(matchers_parse_prom("", &ms, NULL), 0);
	assert_int_equal(ms.n, 0);
	assert_int_equal(matchers_parse_prom("{}", &ms, NULL), 0);
	assert_int_equal(ms.n, 0);
	assert_int_equal(matchers_parse_prom(" { a = \"1\" , } ", &ms, NULL), 0);
	assert_int_equal(ms.n, 1);
	matchers_clear(&ms);
	/* Escapes in quoted values. */
	assert_int_equal(matchers_parse_prom("{a=\"x\\\"y\\\\z\\n\"}", &ms, NULL), 0);
	assert_string_equal(ms.m[0].value, "x\"y\\z\n");
	matchers_clear(&ms);
	buf_free(&err);
}

static void
test_prom_refused(void **state)
{
	char big[2048];

	(void)state;
	assert_non_null(strstr(refusal("{a=\"1\""), "closing '}'"));
	assert_non_null(strstr(refusal("{a=1}"), "must be quoted"));
	assert_non_null(strstr(refusal("{a~\"1\"}"), "expected =, !=, =~ or !~"));
	assert_non_null(strstr(refusal("{=\"1\"}"), "expected a label name"));
	assert_non_null(strstr(refusal("{a=\"1\" b=\"2\"}"), "expected ','"));
	assert_non_null(strstr(refusal("{a=\"unterminated}"), "unterminated"));
	assert_non_null(strstr(refusal("{a=~\"(\"}"), "bad regular expression"));
	assert_non_null(strstr(refusal("{a=\"\\q\"}"), "unknown escape"));
	assert_non_null(strstr(refusal("{a=\"1\"} x"), "after the selector"));
	/* RE2 refuses repetitions of repetitions and counts over 1000, nested multiplied. */
	assert_non_null(strstr(refusal("{a=~\"a++++++++++++++++++++++++++++++++++++++++\"}"),
	    "repetition of a repetition"));
	assert_non_null(strstr(refusal("{a=~\"(a{1000}){1000}\"}"), "at most 1000"));
	assert_non_null(strstr(refusal("{a=~\"************+****\"}"), "bad regular expression"));
	/* Nested + is linear in RE2: accepted, as Prometheus does. */
	assert_string_equal(refusal("{a=~\"((((((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+\"}"), "");
	assert_string_equal(refusal("{a=~\"a*?\"}"), "");	/* non-greedy */
	assert_string_equal(refusal("{a=~\"(api|web)-[[:digit:]]+[a-z]{2,8}.*\"}"), "");
	assert_string_equal(refusal("{a=~\"[]+]+x{3}\\\\+\"}"), "");
	assert_non_null(strstr(refusal("a=\"1\"}"), "without an opening"));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "{a=\"", 4);
	big[sizeof(big) - 3] = '"';
	big[sizeof(big) - 2] = '}';
	assert_non_null(strstr(refusal(big), "longer than"));
}

static void
test_prom_semantics(void **state)
{
	(void)state;
	assert_true(sel_match("{pod=~\"api-.*\"}", "s", "pod=api-1"));
	/* Regexes match the whole value, as Prometheus anchors them. */
	assert_false(sel_match("{pod=~\"api\"}", "s", "pod=api-1"));
	assert_false(sel_match("{pod=~\"pi-1\"}", "s", "pod=api-1"));
	assert_true(sel_match("{pod=~\"api|web\"}", "s", "pod=web"));
	assert_true(sel_match("{pod!~\"api-.*\"}", "s", "pod=web-1"));
	/* An absent label is "": != selects it, =~ ".*" too, = "x" does not. */
	assert_true(sel_match("{region!=\"eu\"}", "s", "pod=a"));
	assert_false(sel_match("{region!=\"eu\"}", "s", "pod=a,region=eu"));
	assert_true(sel_match("{region=~\".*\"}", "s", ""));
	assert_false(sel_match("{region=\"x\"}", "s", ""));
	assert_true(sel_match("{region=\"\"}", "s", "pod=a"));
	/* service_name is the service unless the series has such a label. */
	assert_true(sel_match("{service_name=\"checkout\"}", "checkout", "pod=a"));
	assert_false(sel_match("{service_name=\"checkout\"}", "cart", "pod=a"));
	assert_true(sel_match("{service_name=~\"check.*\"}", "checkout", ""));
	/* All matchers must hold. */
	assert_false(sel_match("{pod=~\"api-.*\", region!=\"eu\"}", "s", "pod=api-1,region=eu"));
	assert_true(sel_match("{pod=~\"api-.*\", region!=\"eu\"}", "s", "pod=api-1,region=us"));
}

static void
test_path_form(void **state)
{
	struct matchers ms;
	struct buf b = { 0 }, err = { 0 };

	(void)state;
	assert_true(path_match("pod=~api-.*,region!=eu", "pod=api-2,region=us"));
	assert_false(path_match("pod=~api-.*,region!=eu", "pod=api-2,region=eu"));
	assert_true(path_match("pod!~api-.*", "pod=web"));
	assert_true(path_match("k=a%2Cb", "k=a%2Cb"));		/* escaped ',' */
	assert_true(path_match("k=~a%2C.*", "k=a%2Cz"));
	assert_true(path_match("k=%7Ex", "k=~x"));		/* '~' escaped: a value */
	/* Canonical text reads back the same. */
	assert_int_equal(matchers_parse_path("pod=~api-.*,k=%7Ex,p!=%2F", &ms, &err), 0);
	assert_int_equal(matchers_format(&ms, &b), 0);
	assert_string_equal(b.data, "pod=~api-.*,k=%7Ex,p!=%2F");
	matchers_clear(&ms);
	assert_true(matchers_has_ops("pod!=x"));
	assert_true(matchers_has_ops("pod=~x"));
	assert_false(matchers_has_ops("pod=x,k=v"));
	/* Refusals. */
	buf_reset(&err);
	assert_int_equal(matchers_parse_path("pod", &ms, &err), -EINVAL);
	assert_non_null(strstr(err.data, "no operator"));
	buf_reset(&err);
	assert_int_equal(matchers_parse_path("pod=~(", &ms, &err), -EINVAL);
	assert_non_null(strstr(err.data, "bad regular expression"));
	buf_reset(&err);
	assert_int_equal(matchers_parse_path("pod=%zz", &ms, &err), -EINVAL);
	assert_non_null(strstr(err.data, "escape"));
	buf_reset(&err);
	assert_int_equal(matchers_parse_path("!=x", &ms, &err), -EINVAL);
	assert_non_null(strstr(err.data, "empty label name"));
	buf_free(&b);
	buf_free(&err);
}

static void
test_limits(void **state)
{
	struct matchers ms;
	struct buf s = { 0 }, err = { 0 };
	int i;

	(void)state;
	buf_addc(&s, '{');
	for (i = 0; i <= LABELS_MAX; i++)
		buf_printf(&s, "k%d=\"v\",", i);
	buf_addc(&s, '}');
	assert_int_equal(matchers_parse_prom(s.data, &ms, &err), -EINVAL);
	assert_non_null(strstr(err.data, "more than"));
	assert_int_equal(ms.n, 0);
	buf_free(&s);
	buf_free(&err);
}

/* What Prometheus (Go's regexp, RE2 syntax) accepts and how it matches. */
static void
test_re2_semantics(void **state)
{
	(void)state;
	assert_true(sel_match("{pod=~\"(?i)API-.*\"}", "s", "pod=api-1"));
	assert_true(sel_match("{pod=~\"\\\\d+\"}", "s", "pod=123"));
	assert_false(sel_match("{pod=~\"\\\\d+\"}", "s", "pod=12a"));
	assert_true(sel_match("{pod=~\"[[:digit:]]+\"}", "s", "pod=42"));
	assert_true(sel_match("{pod=~\"\\\\pL+\"}", "s", "pod=h%C3%A9llo"));
	assert_true(sel_match("{pod=~\"(?P<n>a)b\"}", "s", "pod=ab"));
	assert_true(sel_match("{pod=~\"a*?\"}", "s", "pod=aaa"));	/* still the whole value */
	/* '.' is not '\n' unless (?s), as in Go. */
	assert_false(sel_match("{pod=~\"a.b\"}", "s", "pod=a%0Ab"));
	assert_true(sel_match("{pod=~\"(?s)a.b\"}", "s", "pod=a%0Ab"));
	/* Anchored as ^(?:re)$: alternation inside, no match of a part. */
	assert_false(sel_match("{pod=~\"a|b\"}", "s", "pod=ab"));
	assert_true(sel_match("{pod=~\"a|b\"}", "s", "pod=b"));
	assert_true(sel_match("{pod!~\"a|b\"}", "s", "pod=ab"));
	/* The largest counts RE2 allows. */
	assert_true(sel_match("{pod=~\"(a|b|c|d|e|f|g|h|i|j){1,1000}\"}", "s", "pod=abcjjj"));
	assert_false(sel_match("{pod=~\"(a|b|c|d|e|f|g|h|i|j){1,1000}\"}", "s", "pod=abcz"));
	assert_false(sel_match("{pod=~\"x{1000}\"}", "s", "pod=x"));
	/* A pattern that would break out of the anchors is refused, as Go refuses it. */
	assert_non_null(strstr(refusal("{a=~\"a)|(b\"}"), "bad regular expression"));
	assert_non_null(strstr(refusal("{a=~\"(b\"}"), "missing"));
}

/* The shapes that cost gigabytes or minutes with a backtracking regcomp(). */
static void
test_re2_refused(void **state)
{
	const char *r;

	(void)state;
	r = refusal("{a=~\"(.*)(.*)(.*)(.*)(.*)\\\\5\\\\4\\\\3\\\\2x\"}");
	assert_non_null(strstr(r, "back-references (\\5) are not supported"));
	assert_non_null(strstr(refusal("{a=~\"(a)\\\\1\"}"), "back-references"));
	r = refusal("{a=~\"(a|b|c|d|e|f|g|h|i|j){1,1800}\"}");
	assert_non_null(strstr(r, "invalid repetition size: {1,1800}"));
	assert_non_null(strstr(r, "at most 1000"));
	assert_non_null(strstr(refusal("{a=~\"x{1001}\"}"), "at most 1000"));
	assert_non_null(strstr(refusal("{a=~\"(a{100}){100}\"}"), "at most 1000"));
	assert_non_null(strstr(refusal("{a=~\"((a{1,30}){1,30}){1,30}\"}"), "at most 1000"));
	assert_non_null(strstr(refusal("{a=~\"a**\"}"), "repetition of a repetition"));
	assert_non_null(strstr(refusal("{a=~\"\\\\pL{1,1000}\"}"), "compiles to more than"));
	assert_non_null(strstr(refusal("{a=~\"\\\\Z\"}"), "invalid escape"));
	/* The tree's form gives the same reasons. */
	{
		struct matchers ms;
		struct buf err = { 0 };

		assert_int_equal(matchers_parse_path("pod=~(a|b|c|d|e|f|g|h|i|j){1%2C1800}", &ms,
		    &err), -EINVAL);
		assert_non_null(strstr(err.data, "at most 1000"));
		buf_free(&err);
	}
}

/* Matching time is linear: shapes that backtrack exponentially end at once. */
static void
test_re2_linear(void **state)
{
	struct matchers ms;
	char v[4097];

	(void)state;
	memset(v, 'x', sizeof(v) - 1);
	v[sizeof(v) - 1] = '\0';
	assert_int_equal(matchers_parse_prom("{a=~\"(x+x+)+y\", b=~\"(x|xx)*z\", "
	    "c=~\"(.*)(.*)(.*)(.*)(.*)y\"}", &ms, NULL), 0);
	assert_false(matcher_match(&ms.m[0], v));
	assert_false(matcher_match(&ms.m[1], v));
	assert_false(matcher_match(&ms.m[2], v));
	matchers_clear(&ms);
}

/* Compiled regexes hold budget, given back when cleared; caps per regex and selector. */
static void
test_re2_budget(void **state)
{
	struct matchers ms;
	struct buf s = { 0 }, err = { 0 };
	size_t used0, used1, lim;
	int i;

	(void)state;
	budget_stats(&used0, NULL, NULL);
	assert_int_equal(matchers_parse_prom("{a=~\"api-.*\", b=\"x\"}", &ms, NULL), 0);
	assert_true(ms.m[0].re_mem > 0 && ms.m[0].re_mem <= (128u << 10));
	assert_int_equal(ms.m[1].re_mem, 0);
	assert_int_equal(matchers_re_mem(&ms), ms.m[0].re_mem);
	budget_stats(&used1, NULL, NULL);
	assert_int_equal(used1 - used0, matchers_re_mem(&ms));
	matchers_clear(&ms);
	budget_stats(&used1, NULL, NULL);
	assert_int_equal(used1, used0);
	/* A large program holds more, at most MATCHER_RE_MEM. */
	assert_int_equal(matchers_parse_prom("{a=~\"(abcd|efgh|ijkl|mnop){1,1000}\"}", &ms, NULL), 0);
	assert_true(ms.m[0].re_mem > (256u << 10) && ms.m[0].re_mem <= MATCHER_RE_MEM);
	matchers_clear(&ms);
	/* 64 of them pass the selector's cap: refused with the reason, nothing held. */
	buf_addc(&s, '{');
	for (i = 0; i < LABELS_MAX; i++)
		buf_printf(&s, "k%d=~\"(abcd|efgh|ijkl|mnop){1,1000}\",", i);
	buf_addc(&s, '}');
	buf_reserve(&err, 1024);
	budget_stats(&used0, NULL, NULL);	/* s and err hold some */
	assert_int_equal(matchers_parse_prom(s.data, &ms, &err), -EINVAL);
	assert_non_null(strstr(err.data, "would take more than 32 MiB"));
	assert_int_equal(ms.n, 0);
	budget_stats(&used1, NULL, NULL);
	assert_int_equal(used1, used0);
	/* No room in the budget: -ENOMEM with a reason. */
	lim = budget_limit();
	budget_set_limit(used0 + (512u << 10));
	buf_reset(&err);
	assert_int_equal(matchers_parse_prom("{a=~\"x\"}", &ms, &err), -ENOMEM);
	assert_non_null(strstr(err.data, "memory budget"));
	budget_set_limit(lim);
	buf_free(&s);
	buf_free(&err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prom_parse),
		cmocka_unit_test(test_prom_refused),
		cmocka_unit_test(test_prom_semantics),
		cmocka_unit_test(test_path_form),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_re2_semantics),
		cmocka_unit_test(test_re2_refused),
		cmocka_unit_test(test_re2_linear),
		cmocka_unit_test(test_re2_budget),
	};

	return cmocka_run_group_tests_name("matchers", tests, NULL, NULL);
}
