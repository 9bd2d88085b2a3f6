/*
 * test_httpparse: the HTTP API's parameter parsers (api/httpparse.c):
 * profefe labels and times, Pyroscope names and from/until, --http
 * addresses, and the JSON time format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "httpparse.h"

#define SEC	INT64_C(1000000000)

/* Parse profefe labels; the canonical text into a static buffer, or NULL if refused. */
static const char *
plabels(const char *s)
{
	static char out[1024];
	struct labelset ls = { .n = 0 };
	struct buf b = { 0 };

	if (httpparse_labels(s, &ls, NULL) < 0) {
		labels_clear(&ls);
		return NULL;
	}
	labels_format(&ls, &b);
	snprintf(out, sizeof(out), "%s", b.data ? b.data : "");
	labels_clear(&ls);
	buf_free(&b);
	return out;
}

static void
test_labels(void **state)
{
	(void)state;
	assert_string_equal(plabels("k=v,k2=v2"), "k=v,k2=v2");
	assert_string_equal(plabels(""), "");
	assert_string_equal(plabels(" b = 2 , a=1"), "a=1,b=2");
	assert_string_equal(plabels("=dropped,k=v,,"), "k=v");
	assert_string_equal(plabels("noval"), "noval=");
	assert_string_equal(plabels("k=a=b"), "k=a%3Db");
	assert_string_equal(plabels("k=a%2Cb,x=hello+world"), "k=a%2Cb,x=hello%20world");
	assert_null(plabels("k=%zz"));
	assert_null(plabels("k=%2"));
	assert_null(plabels("k=%00"));
	assert_null(plabels("k=1,k=2"));
}

static void
test_time(void **state)
{
	int64_t ns;

	(void)state;
	assert_int_equal(httpparse_time("1970-01-01T00:00:00", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05", &ns), 0);
	assert_int_equal(ns, INT64_C(1136214245) * SEC);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05Z", &ns), 0);
	assert_int_equal(ns, INT64_C(1136214245) * SEC);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05.5Z", &ns), 0);
	assert_int_equal(ns, INT64_C(1136214245) * SEC + SEC / 2);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05.123456789", &ns), 0);
	assert_int_equal(ns % SEC, 123456789);
	assert_int_equal(httpparse_time("2024-02-29T00:00:00", &ns), 0);
	assert_int_equal(httpparse_time("2023-02-29T00:00:00", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-13-02T15:04:05", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02T24:00:00", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02 15:04:05", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02T15:04", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05.", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05.1234567891", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05+01:00", &ns), -EINVAL);
	assert_int_equal(httpparse_time("2006-01-02T15:04:05ZZ", &ns), -EINVAL);
	assert_int_equal(httpparse_time("0000-01-01T00:00:00", &ns), -EINVAL);
	assert_int_equal(httpparse_time("", &ns), -EINVAL);
}

static void
test_format_time(void **state)
{
	char out[40];
	int64_t ns;

	(void)state;
	httpparse_format_time(0, out);
	assert_string_equal(out, "1970-01-01T00:00:00Z");
	httpparse_format_time(INT64_C(1136214245) * SEC + 500000000, out);
	assert_string_equal(out, "2006-01-02T15:04:05.5Z");
	httpparse_format_time(INT64_C(1136214245) * SEC + 1, out);
	assert_string_equal(out, "2006-01-02T15:04:05.000000001Z");
	httpparse_format_time(-1, out);
	assert_string_equal(out, "1969-12-31T23:59:59.999999999Z");
	/* What is written parses back. */
	assert_int_equal(httpparse_time("2026-11-22T10:05:07.25Z", &ns), 0);
	httpparse_format_time(ns, out);
	assert_string_equal(out, "2026-11-22T10:05:07.25Z");
}

static void
test_attime(void **state)
{
	const int64_t now = INT64_C(1763800000) * SEC;
	int64_t ns;

	(void)state;
	assert_int_equal(httpparse_attime("1700000000", now, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000000) * SEC);
	assert_int_equal(httpparse_attime("1700000000123", now, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000000123) * 1000000);
	assert_int_equal(httpparse_attime("1700000000123456", now, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000000123456) * 1000);
	assert_int_equal(httpparse_attime("1700000000123456789", now, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000000123456789));
	assert_int_equal(httpparse_attime("20240229", now, &ns), 0);
	assert_int_equal(ns, INT64_C(1709164800) * SEC);
	assert_int_equal(httpparse_attime("1_700_000_000", now, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000000) * SEC);
	assert_int_equal(httpparse_attime("now", now, &ns), 0);
	assert_int_equal(ns, now);
	assert_int_equal(httpparse_attime("now-1h", now, &ns), 0);
	assert_int_equal(ns, now - 3600 * SEC);
	assert_int_equal(httpparse_attime("now-1h30m", now, &ns), 0);
	assert_int_equal(ns, now - 5400 * SEC);
	assert_int_equal(httpparse_attime("-15min", now, &ns), 0);
	assert_int_equal(ns, now - 900 * SEC);
	assert_int_equal(httpparse_attime("now+2d", now, &ns), 0);
	assert_int_equal(ns, now + 2 * 86400 * SEC);
	assert_int_equal(httpparse_attime("now-1mon", now, &ns), 0);
	assert_int_equal(ns, now - 30 * 86400 * SEC);
	assert_int_equal(httpparse_attime("yesterday", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("now-1q", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("now-", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("now-h", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("99999999999999999999", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("9999999999999", now, &ns), -EINVAL);
	assert_int_equal(httpparse_attime("9223372036854775807", now, &ns), 0);
}

static void
test_appname(void **state)
{
	struct labelset ls = { .n = 0 };
	struct buf app = { 0 }, err = { 0 };

	(void)state;
	assert_int_equal(httpparse_appname("shop.api{env=prod, region = eu}", &app, &ls, &err), 0);
	assert_string_equal(app.data, "shop.api");
	assert_int_equal(ls.n, 2);
	assert_string_equal(ls.pairs[0].key, "env");
	assert_string_equal(ls.pairs[1].value, "eu");
	labels_clear(&ls);
	buf_reset(&app);
	assert_int_equal(httpparse_appname("plain", &app, &ls, &err), 0);
	assert_string_equal(app.data, "plain");
	assert_int_equal(ls.n, 0);
	buf_reset(&app);
	assert_int_equal(httpparse_appname("a{}", &app, &ls, &err), 0);
	assert_int_equal(ls.n, 0);
	buf_reset(&app);
	assert_int_equal(httpparse_appname("a{k=v,}", &app, &ls, &err), 0);
	assert_int_equal(ls.n, 1);
	labels_clear(&ls);
	buf_reset(&app);
	assert_int_equal(httpparse_appname("{k=v}", &app, &ls, &err), -EINVAL);
	assert_int_equal(httpparse_appname("a{k=v", &app, &ls, &err), -EINVAL);
	assert_int_equal(httpparse_appname("a{k}", &app, &ls, &err), -EINVAL);
	assert_int_equal(httpparse_appname("a{=v}", &app, &ls, &err), -EINVAL);
	assert_int_equal(httpparse_appname("a{k=v}x", &app, &ls, &err), -EINVAL);
	assert_int_equal(httpparse_appname("a}b", &app, &ls, &err), -EINVAL);
	assert_int_equal(httpparse_appname("a{k=1,k=2}", &app, &ls, &err), -EINVAL);
	assert_true(err.len > 0);
	labels_clear(&ls);
	buf_free(&app);
	buf_free(&err);
}

static void
test_listen(void **state)
{
	char h[64], p[8];

	(void)state;
	assert_int_equal(httpparse_listen("127.0.0.1:10100", h, sizeof(h), p, sizeof(p), NULL), 0);
	assert_string_equal(h, "127.0.0.1");
	assert_string_equal(p, "10100");
	assert_int_equal(httpparse_listen("[::1]:0", h, sizeof(h), p, sizeof(p), NULL), 0);
	assert_string_equal(h, "::1");
	assert_string_equal(p, "0");
	assert_int_equal(httpparse_listen("localhost:80", h, sizeof(h), p, sizeof(p), NULL), 0);
	assert_string_equal(h, "localhost");
	assert_int_equal(httpparse_listen(":80", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("host", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("host:", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("host:65536", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("host:123456", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("host:8o", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("::1:80", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("[::1]80", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("[::1", h, sizeof(h), p, sizeof(p), NULL), -EINVAL);
	assert_int_equal(httpparse_listen("a-very-long-host-name-that-does-not-fit-in-the-buffer-at-all:1",
	    h, 16, p, sizeof(p), NULL), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_format_time),
		cmocka_unit_test(test_attime),
		cmocka_unit_test(test_appname),
		cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
