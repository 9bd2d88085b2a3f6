/*
 * test_labels: label sets in their canonical text form (base/labels.c):
 * escaping, parsing, formatting, sorting, refusals and selector matching.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base.h"
#include "util.h"

/* Parse s and return its canonical form (static buffer), or NULL if refused. */
static const char *
canon(const char *s)
{
	static char out[8192];
	struct labelset ls;
	struct buf b = { 0 };

	if (labels_parse(s, &ls, NULL) < 0)
		return NULL;
	assert_int_equal(labels_format(&ls, &b), 0);
	snprintf(out, sizeof(out), "%s", b.data);
	labels_clear(&ls);
	buf_free(&b);
	return out;
}

static void
test_parse_sorted(void **state)
{
	struct labelset ls;
	struct buf err = { 0 };

	(void)state;
	assert_int_equal(labels_parse("zone=eu,app=web,version=1.4", &ls, &err), 0);
	assert_int_equal(ls.n, 3);
	assert_string_equal(ls.pairs[0].key, "app");
	assert_string_equal(ls.pairs[0].value, "web");
	assert_string_equal(ls.pairs[1].key, "version");
	assert_string_equal(ls.pairs[1].value, "1.4");
	assert_string_equal(ls.pairs[2].key, "zone");
	labels_clear(&ls);
	assert_int_equal(ls.n, 0);
	assert_string_equal(canon("b=2,a=1"), "a=1,b=2");
	assert_string_equal(canon("a=1"), "a=1");
	assert_string_equal(canon(""), "");
	assert_string_equal(canon("a="), "a=");		/* empty value allowed */
	assert_string_equal(canon("a=1,"), "a=1");	/* a trailing comma is tolerated */
	assert_string_equal(canon("k=a=b"), "k=a%3Db");	/* first '=' splits */
	/* Byte order (strcmp): upper case before lower case. */
	assert_string_equal(canon("b=1,B=2,a=3"), "B=2,a=3,b=1");
	buf_free(&err);
}

static void
expect_refused(const char *s, const char *why)
{
	struct labelset ls;
	struct buf err = { 0 };

	ls.n = 0;
	if (labels_parse(s, &ls, &err) != -EINVAL)
		fail_msg("\"%s\" was accepted", s);
	assert_int_equal(ls.n, 0);	/* nothing left to free */
	assert_non_null(err.data);
	if (strstr(err.data, why) == NULL)
		fail_msg("\"%s\": reason \"%s\" lacks \"%s\"", s, err.data, why);
	buf_free(&err);
}

static void
test_refused(void **state)
{
	char big[600], many[2048];
	size_t i, n = 0;

	(void)state;
	expect_refused("a=1,a=2", "given twice");
	expect_refused("a=1,b=2,a=1", "given twice");
	expect_refused("noequals", "no '='");
	expect_refused("a=1,,b=2", "no '='");
	expect_refused("=v", "empty key");
	expect_refused("a=%zz", "escape");
	expect_refused("a=%4", "escape");
	expect_refused("a=%", "escape");
	expect_refused("a%=1", "escape");
	expect_refused("a=x%00y", "escape");		/* no NUL inside names */
	memset(big, 'x', sizeof(big));
	memcpy(big, "k=", 2);
	big[2 + LABEL_MAX_LEN + 1] = '\0';
	expect_refused(big, "longer than");
	big[2 + LABEL_MAX_LEN] = '\0';
	assert_non_null(canon(big));			/* exactly the limit */
	for (i = 0; i <= LABELS_MAX; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%sk%03zu=v", i ? "," : "", i);
	expect_refused(many, "more than");
	*strrchr(many, ',') = '\0';
	assert_non_null(canon(many));			/* exactly LABELS_MAX */
}

static void
test_escape(void **state)
{
	struct buf b = { 0 };

	(void)state;
	assert_int_equal(labels_escape(&b, "a/b,c=d%e f\x01\xff~", 14), 0);
	assert_string_equal(b.data, "a%2Fb%2Cc%3Dd%25e%20f%01%FF~");
	buf_reset(&b);
	assert_int_equal(labels_unescape(&b, "a%2Fb%2cc%3Dd%25e", 17), 0);
	assert_string_equal(b.data, "a/b,c=d%e");	/* lower-case hex accepted */
	buf_reset(&b);
	assert_int_equal(labels_unescape(&b, "%41", 3), 0);
	assert_string_equal(b.data, "A");
	buf_reset(&b);
	assert_int_equal(labels_unescape(&b, "%4", 2), -EINVAL);
	buf_reset(&b);
	assert_int_equal(labels_unescape(&b, "%00", 3), -EINVAL);
	buf_reset(&b);
	assert_int_equal(labels_unescape(&b, "%G0", 3), -EINVAL);
	buf_reset(&b);
	/* The length given is respected: the escape is cut. */
	assert_int_equal(labels_unescape(&b, "%41", 2), -EINVAL);
	buf_free(&b);
}

/* Every byte but NUL survives escape + unescape; the escaped form is safe. */
static void
test_escape_roundtrip_all_bytes(void **state)
{
	char in[255];
	struct buf e = { 0 }, u = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in); i++)
		in[i] = (char)(i + 1);
	assert_int_equal(labels_escape(&e, in, sizeof(in)), 0);
	for (i = 0; i < e.len; i++) {
		unsigned char c = (unsigned char)e.data[i];

		assert_true(c > 0x20 && c < 0x7f);
		assert_true(c != '/' && c != ',' && c != '=');
	}
	assert_int_equal(labels_unescape(&u, e.data, e.len), 0);
	assert_int_equal(u.len, sizeof(in));
	assert_memory_equal(u.data, in, sizeof(in));
	buf_free(&e);
	buf_free(&u);
}

/* parse(format(x)) == x for sets with awkward keys and values. */
static void
test_format_roundtrip(void **state)
{
	struct labelset ls = { .n = 0 }, back;
	struct buf b = { 0 }, b2 = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(labels_add(&ls, "path", "/usr/bin/app", NULL), 0);
	assert_int_equal(labels_add(&ls, "list", "a,b,c", NULL), 0);
	assert_int_equal(labels_add(&ls, "eq=key", "x=y", NULL), 0);
	assert_int_equal(labels_add(&ls, "pct", "100%", NULL), 0);
	assert_int_equal(labels_add(&ls, "utf8", "caf\xc3\xa9 \xe2\x82\xac", NULL), 0);
	assert_int_equal(labels_add(&ls, "empty", "", NULL), 0);
	assert_int_equal(labels_format(&ls, &b), 0);
	assert_null(strchr(b.data, '/'));
	assert_int_equal(labels_parse(b.data, &back, NULL), 0);
	assert_int_equal(back.n, ls.n);
	for (i = 0; i < ls.n; i++) {
		assert_string_equal(back.pairs[i].key, ls.pairs[i].key);
		assert_string_equal(back.pairs[i].value, ls.pairs[i].value);
	}
	assert_int_equal(labels_format(&back, &b2), 0);
	assert_string_equal(b.data, b2.data);
	/* labels_add keeps the set sorted and refuses duplicates with a reason. */
	for (i = 1; i < ls.n; i++)
		assert_true(strcmp(ls.pairs[i - 1].key, ls.pairs[i].key) < 0);
	buf_reset(&b2);
	assert_int_equal(labels_add(&ls, "pct", "other", &b2), -EINVAL);
	assert_non_null(strstr(b2.data, "pct"));
	buf_reset(&b2);
	assert_int_equal(labels_add(&ls, "", "v", &b2), -EINVAL);
	assert_non_null(strstr(b2.data, "empty key"));
	labels_clear(&ls);
	labels_clear(&back);
	/* An empty set formats as "" (and the buffer is valid). */
	buf_free(&b);
	assert_int_equal(labels_format(&ls, &b), 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	buf_free(&b);
	buf_free(&b2);
}

static bool
match(const char *sel, const char *set)
{
	struct labelset a, b;
	bool r;

	assert_int_equal(labels_parse(sel, &a, NULL), 0);
	assert_int_equal(labels_parse(set, &b, NULL), 0);
	r = labels_match(&a, &b);
	labels_clear(&a);
	labels_clear(&b);
	return r;
}

static void
test_match(void **state)
{
	(void)state;
	assert_true(match("", ""));			/* all matches everything */
	assert_true(match("", "a=1,b=2"));
	assert_true(match("a=1", "a=1"));
	assert_true(match("a=1", "a=1,b=2"));
	assert_true(match("b=2,a=1", "a=1,b=2,c=3"));
	assert_false(match("a=1", ""));
	assert_false(match("a=1", "a=2"));
	assert_false(match("a=1", "b=1"));
	assert_false(match("a=1,b=2", "a=1"));
	assert_false(match("a=", "a=1"));		/* empty value is a value */
	assert_true(match("a=", "a="));
	assert_true(match("p=%2F", "p=/,q=x"));		/* escapes compared unescaped */
	assert_false(match("a=1", "A=1"));		/* case matters */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_sorted),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_escape_roundtrip_all_bytes),
		cmocka_unit_test(test_format_roundtrip),
		cmocka_unit_test(test_match),
	};

	return cmocka_run_group_tests_name("labels", tests, NULL, NULL);
}
