/*
 * test_path: the grammar of the mounted tree (fs/path.c) as docs/tree.md gives
 * it: nodes, label selectors with %XX escapes, ranges (last-N<unit>, days,
 * hours, minutes, FROM..TO, invalid dates), vs/<base> forms, profiles/ names
 * and ingest paths. Pure parsing: no store, no mount.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "path.h"

#define NS	INT64_C(1000000000)
/* 2026-11-22T10:05:03Z */
#define NOW	(INT64_C(1795341903) * NS)

static int
parse(const char *path, struct fspath *o)
{
	return path_parse(path, NOW, o);
}

static enum node
node_of(const char *path)
{
	struct fspath o;

	if (parse(path, &o) != 0)
		return (enum node)-1;
	return o.node;
}

static void
test_top(void **state)
{
	struct fspath o;

	(void)state;
	assert_int_equal(node_of("/"), NODE_ROOT);
	assert_int_equal(node_of(""), NODE_ROOT);
	assert_int_equal(node_of("/README.txt"), NODE_README);
	assert_int_equal(parse("/README.txt/x", &o), -ENOENT);
	assert_int_equal(node_of("/.targets.json"), NODE_TARGETS);
	assert_int_equal(parse("/.targets.json/x", &o), -ENOENT);
	assert_int_equal(node_of("/checkout"), NODE_SERVICE);
	assert_int_equal(parse("/checkout", &o), 0);
	assert_string_equal(o.service, "checkout");
	assert_int_equal(node_of("/checkout/cpu"), NODE_TYPE);
	assert_int_equal(parse("/checkout/cpu/", &o), 0);	/* trailing slash */
	assert_string_equal(o.type, "cpu");
	assert_int_equal(node_of("//checkout//cpu"), NODE_TYPE);
	/* Reserved or malformed services and types. */
	assert_int_equal(parse("/.hidden", &o), -ENOENT);
	assert_int_equal(parse("/svc/CPU", &o), -ENOENT);
	assert_int_equal(parse("/svc/auto", &o), -ENOENT);
	assert_int_equal(parse("/svc/c p u", &o), -ENOENT);
	assert_int_equal(parse("/svc/.x", &o), -ENOENT);
}

static void
test_service_escapes(void **state)
{
	struct fspath o;
	char longname[400];

	(void)state;
	assert_int_equal(parse("/my%20svc/cpu", &o), 0);
	assert_string_equal(o.service, "my svc");
	assert_int_equal(parse("/caf%C3%A9", &o), 0);
	assert_string_equal(o.service, "caf\xc3\xa9");
	assert_int_equal(parse("/a%2Fb", &o), -ENOENT);		/* '/' not in a service */
	assert_int_equal(parse("/a%01b", &o), -ENOENT);		/* control characters */
	assert_int_equal(parse("/a%zzb", &o), -ENOENT);		/* bad escape */
	assert_int_equal(parse("/a%00b", &o), -ENOENT);
	memset(longname, 'x', sizeof(longname));
	longname[0] = '/';
	longname[SERVICE_MAX_LEN + 1] = '\0';
	assert_int_equal(parse(longname, &o), 0);
	longname[SERVICE_MAX_LEN + 1] = 'x';
	longname[SERVICE_MAX_LEN + 2] = '\0';
	assert_int_equal(parse(longname, &o), -ENOENT);
}

static void
test_selectors(void **state)
{
	struct fspath o;
	char out[64];

	(void)state;
	assert_int_equal(parse("/svc/cpu/all", &o), 0);
	assert_int_equal(o.node, NODE_SELECTOR);
	assert_string_equal(o.selector, "");
	assert_int_equal(parse("/svc/cpu/zone=eu,app=web", &o), 0);
	assert_string_equal(o.selector, "app=web,zone=eu");	/* canonical: sorted */
	assert_int_equal(parse("/svc/cpu/path=%2Fusr%2fbin,x=a%2Cb", &o), 0);
	assert_string_equal(o.selector, "path=%2Fusr%2Fbin,x=a%2Cb");
	assert_int_equal(parse("/svc/cpu/nolabel", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/a=1,a=2", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/a=%zz", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/=1", &o), -ENOENT);
	/* path_selector on its own. */
	assert_int_equal(path_selector("all", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(path_selector("b=2,a=1", out, sizeof(out)), 0);
	assert_string_equal(out, "a=1,b=2");
	assert_int_equal(path_selector("v=%41", out, sizeof(out)), 0);
	assert_string_equal(out, "v=A");			/* needless escapes dropped */
	assert_int_equal(path_selector("x", out, sizeof(out)), -EINVAL);
	assert_int_equal(path_selector("k=0123456789", out, 8), -EINVAL);	/* too long */
}

static void
expect_range(const char *name, int64_t from, int64_t to, bool relative)
{
	struct range r;

	char want[64];
	size_t i, n = 0;

	if (path_range(name, NOW, &r) != 0)
		fail_msg("range \"%s\" refused", name);
	/* Named without ':' and 'Z', as the tree lists it. */
	for (i = 0; name[i] && n + 1 < sizeof(want); i++)
		if (name[i] != ':' && name[i] != 'Z')
			want[n++] = name[i];
	want[n] = '\0';
	assert_string_equal(r.name, want);
	if (r.from != from || r.to != to)
		fail_msg("range \"%s\": [%lld, %lld), want [%lld, %lld)", name,
		    (long long)r.from, (long long)r.to, (long long)from, (long long)to);
	assert_int_equal(r.relative, relative);
}

static void
expect_bad_range(const char *name)
{
	struct range r;
	struct fspath o;
	char path[256];

	if (path_range(name, NOW, &r) != -EINVAL)
		fail_msg("range \"%s\" accepted", name);
	snprintf(path, sizeof(path), "/svc/cpu/all/%s", name);
	if (name[0])
		assert_int_equal(parse(path, &o), -ENOENT);
}

static void
test_ranges_relative(void **state)
{
	(void)state;
	/* Exactly as long as named, up to now plus a second of clock skew. */
	expect_range("last-5m", NOW + NS - 300 * NS, NOW + NS, true);
	expect_range("last-15m", NOW + NS - 900 * NS, NOW + NS, true);
	expect_range("last-1h", NOW + NS - 3600 * NS, NOW + NS, true);
	expect_range("last-6h", NOW + NS - 6 * 3600 * NS, NOW + NS, true);
	expect_range("last-24h", NOW + NS - 86400 * NS, NOW + NS, true);
	expect_range("last-7d", NOW + NS - 7 * 86400 * NS, NOW + NS, true);
	expect_range("last-30s", NOW + NS - 30 * NS, NOW + NS, true);
	expect_range("last-90m", NOW + NS - 90 * 60 * NS, NOW + NS, true);
	expect_range("last-2w", NOW + NS - 14 * 86400 * NS, NOW + NS, true);
	expect_range("all", INT64_MIN, INT64_MAX, false);
	expect_bad_range("last-0m");
	expect_bad_range("last-05m");
	expect_bad_range("last--5m");
	expect_bad_range("last-5");
	expect_bad_range("last-m");
	expect_bad_range("last-5x");
	expect_bad_range("last-5mm");
	expect_bad_range("last-5M");
	expect_bad_range("last-1 h");
	expect_bad_range("last-99999999999999999999d");	/* overflows */
	expect_bad_range("last-40000d");			/* over a century */
	expect_bad_range("last-");
	expect_bad_range("ALL");
	expect_bad_range("");
	expect_bad_range("yesterday");
	/* Every preset parses. */
	{
		size_t i;
		struct range r;

		for (i = 0; path_presets[i]; i++)
			assert_int_equal(path_range(path_presets[i], NOW, &r), 0);
		assert_true(i >= 7);
	}
}

/* 2026-11-22T00:00:00Z */
#define DAY	(INT64_C(1795305600) * NS)

static void
test_ranges_absolute(void **state)
{
	(void)state;
	expect_range("2026-11-22", DAY, DAY + 86400 * NS, false);
	expect_range("2026-11-22T10", DAY + 10 * 3600 * NS, DAY + 11 * 3600 * NS, false);
	expect_range("2026-11-22T10:05", DAY + (10 * 3600 + 5 * 60) * NS,
	    DAY + (10 * 3600 + 6 * 60) * NS, false);
	expect_range("2026-11-22T10:05..2026-11-22T11:00", DAY + (10 * 3600 + 300) * NS,
	    DAY + 11 * 3600 * NS, false);
	expect_range("2026-11-22T10:05:03..2026-11-22T10:05:04", DAY + (10 * 3600 + 303) * NS,
	    DAY + (10 * 3600 + 304) * NS, false);
	expect_range("2026-11-21T23:00..2026-11-22T01:00", DAY - 3600 * NS, DAY + 3600 * NS,
	    false);
	expect_range("1970-01-01", 0, 86400 * NS, false);
	expect_range("1969-12-31", -86400 * NS, 0, false);
	expect_range("2024-02-29", INT64_C(1709164800) * NS, INT64_C(1709251200) * NS, false);
	expect_range("2026-12-31T23", INT64_C(1798758000) * NS, INT64_C(1798761600) * NS,
	    false);
	/* Invalid dates and times. */
	expect_bad_range("2026-02-29");		/* not a leap year */
	expect_bad_range("2026-02-30");
	expect_bad_range("2026-04-31");
	expect_bad_range("2026-13-01");
	expect_bad_range("2026-00-10");
	expect_bad_range("2026-11-00");
	expect_bad_range("2026-11-32");
	expect_bad_range("2026-11-22T24");
	expect_bad_range("2026-11-22T10:60");
	expect_bad_range("2026-11-22T10:05:03");	/* a second alone is not a range */
	expect_bad_range("2026-11-22T10:05:60..2026-11-22T10:07");	/* no leap seconds */
	expect_bad_range("2026-11-22T23:59:60..2026-11-23T00:01");
	expect_bad_range("2026-11-22T10:05:99..2026-11-22T10:07");
	expect_bad_range("2026-11-2");
	expect_bad_range("2026-1-22");
	expect_bad_range("26-11-22");
	expect_bad_range("2026/11/22");
	expect_bad_range("2026-11-22 10");
	expect_bad_range("2026-11-22T1");
	expect_bad_range("2026-11-22T10:5");
	expect_bad_range("2026-11-22T10:05:3");
	expect_bad_range("2026-11-22T10:05:03Z");
	expect_bad_range("2026-11-22T100503");
	expect_bad_range("2026-11-22T10:0503..2026-11-22T11:00");	/* one form per time */
	expect_bad_range("2026-11-22T1005:03..2026-11-22T11:00");
	expect_bad_range("2026-11-22T10:");
	expect_bad_range("2026-11-22T100");
	expect_bad_range("2026-11-22T10ZZ");
	expect_bad_range("2026-11-22T1060");
	expect_bad_range("2026-11-22T100560..2026-11-22T1007");
	expect_bad_range("2026-11-22T10:05x");
	expect_bad_range("2026-11-22x");
	expect_bad_range("+026-11-22");
	/* Outside what int64 nanoseconds hold (1677..2262). */
	expect_bad_range("0839-11-22");
	expect_bad_range("0000-01-01");
	expect_bad_range("1677-09-21");
	expect_bad_range("2262-04-11");
	expect_bad_range("9999-12-31T23:59..9999-12-31T23:59:59");
	expect_range("1678-01-01", INT64_C(-9214560000) * NS, INT64_C(-9214473600) * NS, false);
	expect_range("2262-04-10", INT64_C(9223200000) * NS, INT64_C(9223286400) * NS, false);
	/* FROM..TO: minutes or seconds, TO after FROM, both valid. */
	expect_bad_range("2026-11-22T11:00..2026-11-22T10:00");
	expect_bad_range("2026-11-22T10:00..2026-11-22T10:00");
	expect_bad_range("2026-11-22..2026-11-23");
	expect_bad_range("2026-11-22T10..2026-11-22T11");
	expect_bad_range("2026-11-22T10:00..");
	expect_bad_range("..2026-11-22T10:00");
	expect_bad_range("2026-11-22T10:00..2026-02-30T10:00");
	expect_bad_range("2026-11-22T10:00...2026-11-22T11:00");
	expect_bad_range("2026-11-22T10:00..2026-11-22T11:00..2026-11-22T12:00");
	expect_bad_range("..");
}

/* The form the tree lists (no ':'), the colon form and a trailing Z name the same range. */
static void
test_ranges_basic_form(void **state)
{
	struct range r;

	(void)state;
	expect_range("2026-11-22T1005", DAY + (10 * 3600 + 5 * 60) * NS,
	    DAY + (10 * 3600 + 6 * 60) * NS, false);
	expect_range("2026-11-22T1005Z", DAY + (10 * 3600 + 5 * 60) * NS,
	    DAY + (10 * 3600 + 6 * 60) * NS, false);
	expect_range("2026-11-22T10:05Z", DAY + (10 * 3600 + 5 * 60) * NS,
	    DAY + (10 * 3600 + 6 * 60) * NS, false);
	expect_range("2026-11-22T10Z", DAY + 10 * 3600 * NS, DAY + 11 * 3600 * NS, false);
	expect_range("2026-11-22Z", DAY, DAY + 86400 * NS, false);
	expect_range("2026-11-22T1000..2026-11-22T103015", DAY + 10 * 3600 * NS,
	    DAY + (10 * 3600 + 30 * 60 + 15) * NS, false);
	expect_range("2026-11-22T1000Z..2026-11-22T103015Z", DAY + 10 * 3600 * NS,
	    DAY + (10 * 3600 + 30 * 60 + 15) * NS, false);
	expect_range("2026-11-22T10:00Z..2026-11-22T103015", DAY + 10 * 3600 * NS,
	    DAY + (10 * 3600 + 30 * 60 + 15) * NS, false);
	/* Every form is named as the tree lists it. */
	assert_int_equal(path_range("2026-11-22T10:05:00Z..2026-11-22T10:30", NOW, &r), 0);
	assert_string_equal(r.name, "2026-11-22T100500..2026-11-22T1030");
	assert_int_equal(path_range("2026-11-22T10:05Z", NOW, &r), 0);
	assert_string_equal(r.name, "2026-11-22T1005");
	assert_int_equal(path_range("2026-11-22T10Z", NOW, &r), 0);
	assert_string_equal(r.name, "2026-11-22T10");
	assert_int_equal(path_range("1969-12-31T23:59", NOW, &r), 0);
	assert_string_equal(r.name, "1969-12-31T2359");
	/* last-1h is exactly an hour, and holds now. */
	assert_int_equal(path_range("last-1h", NOW, &r), 0);
	assert_true(r.to - r.from == 3600 * NS);
	assert_true(r.from <= NOW && NOW < r.to);
}

static void
test_range_nodes(void **state)
{
	struct fspath o;

	(void)state;
	assert_int_equal(parse("/svc/cpu/all/last-1h", &o), 0);
	assert_int_equal(o.node, NODE_RANGE);
	assert_string_equal(o.range.name, "last-1h");
	assert_true(o.range.relative);
	assert_int_equal(parse("/svc/cpu/k=v/2026-11-22T10/merged.pb.gz", &o), 0);
	assert_int_equal(o.node, NODE_VIEW);
	assert_string_equal(o.view, "merged.pb.gz");
	assert_string_equal(o.selector, "k=v");
	assert_true(o.range.from == DAY + 10 * 3600 * NS);
	assert_int_equal(parse("/svc/cpu/all/all/meta.json", &o), 0);
	assert_string_equal(o.view, "meta.json");
	/* Nothing below a file. */
	assert_int_equal(parse("/svc/cpu/all/all/meta.json/x", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/all/nope/merged.pb.gz", &o), -ENOENT);
}

static void
test_profiles(void **state)
{
	struct fspath o;
	char name[128], path[256];

	(void)state;
	assert_int_equal(parse("/svc/heap/all/last-1h/profiles", &o), 0);
	assert_int_equal(o.node, NODE_PROFILES);
	path_profile_name(NOW + 123456789, 0x1234abcdULL, name, sizeof(name));
	assert_string_equal(name, "2026-11-22T100503.123456789Z-000000001234abcd.pb.gz");
	snprintf(path, sizeof(path), "/svc/heap/all/last-1h/profiles/%s", name);
	assert_int_equal(parse(path, &o), 0);
	assert_int_equal(o.node, NODE_PROFILE);
	assert_true(o.profile_id == 0x1234abcdULL);
	assert_string_equal(o.view, name);
	/* The largest id. */
	path_profile_name(0, UINT64_MAX, name, sizeof(name));
	assert_string_equal(name, "1970-01-01T000000.000000000Z-ffffffffffffffff.pb.gz");
	snprintf(path, sizeof(path), "/svc/heap/all/all/profiles/%s", name);
	assert_int_equal(parse(path, &o), 0);
	assert_true(o.profile_id == UINT64_MAX);
	/* The colon form of earlier versions names the same profile. */
	assert_int_equal(parse("/svc/heap/all/all/profiles/"
	    "1970-01-01T00:00:00.000000000Z-ffffffffffffffff.pb.gz", &o), 0);
	assert_string_equal(o.view, name);
	assert_true(o.profile_id == UINT64_MAX);
	assert_int_equal(parse("/svc/heap/all/all/profiles/x.pb.gz", &o), -ENOENT);
	assert_int_equal(parse("/svc/heap/all/all/profiles/2026-000000001234ABCD.pb.gz", &o),
	    -ENOENT);	/* ids are lower-case hex */
	assert_int_equal(parse("/svc/heap/all/all/profiles/2026-000000001234abcd.pb", &o),
	    -ENOENT);
	assert_int_equal(parse("/svc/heap/all/all/profiles/2026-00000000123zabcd.pb.gz", &o),
	    -ENOENT);
	snprintf(path, sizeof(path), "/svc/heap/all/all/profiles/%s/x", name);
	assert_int_equal(parse(path, &o), -ENOENT);
}

/* Times before 1970 name the second they fall in (floor), and any int64 works. */
static void
test_profile_names_extreme(void **state)
{
	char name[128];

	(void)state;
	path_profile_name(-1, 1, name, sizeof(name));
	assert_string_equal(name, "1969-12-31T235959.999999999Z-0000000000000001.pb.gz");
	path_profile_name(-NS, 1, name, sizeof(name));
	assert_string_equal(name, "1969-12-31T235959.000000000Z-0000000000000001.pb.gz");
	path_profile_name(INT64_MAX, 2, name, sizeof(name));
	assert_string_equal(name, "2262-04-11T234716.854775807Z-0000000000000002.pb.gz");
	path_profile_name(INT64_MIN, 3, name, sizeof(name));
	assert_string_equal(name, "1677-09-21T001243.145224192Z-0000000000000003.pb.gz");
	/* A short buffer truncates, never overflows. */
	path_profile_name(0, 1, name, 8);
	assert_string_equal(name, "1970-01");
}

static void
test_vs(void **state)
{
	struct fspath o;

	(void)state;
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/vs", &o), 0);
	assert_int_equal(o.node, NODE_VS);
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/.vs", &o), 0);
	assert_int_equal(o.node, NODE_VS);
	/* vs/<base> is a link to ../.vs/<base>: nothing lies below it. */
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/vs/2026-11-22T09", &o), 0);
	assert_int_equal(o.node, NODE_VS_LINK);
	assert_string_equal(o.base_selector, "a=1");
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/vs/2026-11-22T09/diff.svg", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/vs/bogus", &o), -ENOENT);
	/* vs/<range>: same selector. */
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/.vs/2026-11-22T09", &o), 0);
	assert_int_equal(o.node, NODE_VS_BASE);
	assert_string_equal(o.base_selector, "a=1");
	assert_true(o.base_range.from == DAY + 9 * 3600 * NS);
	/* vs/<selector>@<range> */
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/.vs/b=2,a=0@last-7d/diff.svg", &o), 0);
	assert_int_equal(o.node, NODE_VS_VIEW);
	assert_string_equal(o.base_selector, "a=0,b=2");
	assert_true(o.base_range.from == NOW + NS - 7 * 86400 * NS);
	assert_string_equal(o.view, "diff.svg");
	assert_int_equal(parse("/svc/cpu/a=1/last-1h/.vs/all@2026-11-22", &o), 0);
	assert_string_equal(o.base_selector, "");
	assert_true(o.base_range.from == DAY);
	/* vs/<selector>: same range. */
	assert_int_equal(parse("/svc/cpu/all/2026-11-22T10/.vs/version=1.3/diff.pb.gz", &o), 0);
	assert_string_equal(o.base_selector, "version=1.3");
	assert_true(o.base_range.from == o.range.from && o.base_range.to == o.range.to);
	assert_string_equal(o.view, "diff.pb.gz");
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/all", &o), 0);
	assert_string_equal(o.base_selector, "");
	/* Refused bases. */
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/bogus", &o), -ENOENT);
	/* Not a range after '@': the whole segment is a selector. */
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/a=1@bogus", &o), 0);
	assert_string_equal(o.base_selector, "a=1@bogus");
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/bogus@bogus", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/bogus@last-1h", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/2026-02-30", &o), -ENOENT);
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/last-1h/diff.svg/x", &o), -ENOENT);
}

/* A label value may contain '@' (not escaped): the last '@' splits off the range. */
static void
test_vs_at_in_value(void **state)
{
	struct fspath o;

	(void)state;
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/user=a@b@last-1h", &o), 0);
	assert_string_equal(o.base_selector, "user=a@b");
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/user=a@b", &o), 0);
	assert_string_equal(o.base_selector, "user=a@b");
	assert_true(o.base_range.from == o.range.from);
	assert_int_equal(parse("/svc/cpu/all/last-1h/.vs/user=a%40b", &o), 0);
	assert_string_equal(o.base_selector, "user=a@b");
	assert_true(o.base_range.from == o.range.from);
}

/* Why a label directory under ingest/ is refused, for the log. */
static void
test_ingest_why(void **state)
{
	struct buf why = { 0 };

	(void)state;
	assert_int_equal(path_ingest_why("/ingest/svc/cpu/a=%zz/x.pb.gz", &why), -EINVAL);
	assert_non_null(strstr(why.data, "bad %XX escape"));
	buf_reset(&why);
	assert_int_equal(path_ingest_why("/ingest/svc/cpu/k=a,k=b", &why), -EINVAL);
	assert_non_null(strstr(why.data, "given twice"));
	buf_reset(&why);
	assert_int_equal(path_ingest_why("/ingest/svc/cpu/=v/x", &why), -EINVAL);
	/* Nothing to say: good labels, file names, too short a path. */
	assert_int_equal(path_ingest_why("/ingest/svc/cpu/k=v/x.pb.gz", &why), 0);
	assert_int_equal(path_ingest_why("/ingest/svc/cpu/k=%zz.pb.gz", &why), 0);
	assert_int_equal(path_ingest_why("/ingest/svc/cpu/notalabel/x", &why), 0);
	assert_int_equal(path_ingest_why("/ingest/svc", &why), 0);
	buf_free(&why);
}

/* Why a name of the tree is not well formed, for ingest/errors.txt. */
static void
test_name_why(void **state)
{
	static const struct {
		const char *path, *says;
	} bad[] = {
		{ "/svc/cpu/all/last-1hr", "after last- comes a number" },
		{ "/svc/cpu/all/2026-11-22T1000..2026-11-22T0900", "TO is not after FROM" },
		{ "/svc/cpu/all/2026-11-22..2026-11-23", "are minutes or seconds" },
		{ "/svc/cpu/all/yesterday", "not a range: ranges are" },
		{ "/svc/cpu/env=prod,env=dev", "given twice" },
		{ "/svc/cpu/pod=~[", "not a label selector" },
		{ "/svc/cpu/nolabel", "no '=' in it" },
		{ "/svc/cpu/all/last-1h/vs/last-1hr", "not a base to compare with" },
		{ "/svc%zz", "not a service name" },
		{ "/svc/cpu%zz", "not a type" },
	};
	static const char *const good[] = {
		"/svc/cpu/all/last-1h", "/svc/cpu/all/2026-11-22T10", "/svc/cpu/k=v/all",
		"/svc/cpu/all/last-1h/merged.pb.gz", "/svc/cpu/all/last-1h/vs/last-6h/diff.svg",
		"/svc/cpu/all/last-1h/nosuchfile", "/nosuchservice", "/ingest/x/cpuu", "/",
	};
	struct buf why = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&why);
		if (path_why(bad[i].path, NOW, &why) != -EINVAL)
			fail_msg("%s: not noted", bad[i].path);
		if (strstr(why.data, bad[i].says) == NULL)
			fail_msg("%s: \"%s\" does not say \"%s\"", bad[i].path, why.data,
			    bad[i].says);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		buf_reset(&why);
		if (path_why(good[i], NOW, &why) != 0)
			fail_msg("%s: noted as malformed: %s", good[i], why.data);
	}
	/* ingest/errors.txt is a file, and nothing is below it. */
	{
		struct fspath o;

		assert_int_equal(parse("/ingest/errors.txt", &o), 0);
		assert_int_equal(o.node, NODE_ERRORS);
		assert_int_equal(parse("/ingest/errors.txt/cpu", &o), -ENOENT);
	}
	buf_free(&why);
}

static void
test_ingest(void **state)
{
	struct fspath o;

	(void)state;
	assert_int_equal(parse("/ingest", &o), 0);
	assert_int_equal(o.node, NODE_INGEST);
	assert_int_equal(o.ingest_depth, 1);
	assert_int_equal(parse("/ingest/checkout", &o), 0);
	assert_int_equal(o.node, NODE_INGEST);
	assert_int_equal(o.ingest_depth, 2);
	assert_string_equal(o.service, "checkout");
	assert_int_equal(parse("/ingest/checkout/cpu", &o), 0);
	assert_int_equal(o.ingest_depth, 3);
	assert_string_equal(o.type, "cpu");
	assert_int_equal(parse("/ingest/checkout/auto", &o), 0);
	assert_string_equal(o.type, "auto");
	assert_int_equal(parse("/ingest/checkout/cpu/region=eu", &o), 0);
	assert_int_equal(o.node, NODE_INGEST);
	assert_int_equal(o.ingest_depth, 4);
	assert_string_equal(o.ingest_labels, "region=eu");
	assert_int_equal(parse("/ingest/checkout/cpu/region=eu/cpu.pprof", &o), 0);
	assert_int_equal(o.node, NODE_INGEST_FILE);
	assert_string_equal(o.file, "cpu.pprof");
	assert_string_equal(o.ingest_labels, "region=eu");
	assert_int_equal(parse("/ingest/checkout/cpu/f.pb.gz", &o), 0);
	assert_int_equal(o.node, NODE_INGEST_FILE);
	assert_string_equal(o.file, "f.pb.gz");
	assert_string_equal(o.ingest_labels, "");
	assert_int_equal(parse("/ingest/my.svc-2_x/heap/x", &o), 0);
	assert_string_equal(o.service, "my.svc-2_x");
	/* Refused: names outside Pyroscope's rule, unknown types. */
	assert_int_equal(parse("/ingest/my%20svc/heap/x", &o), -ENOENT);
	assert_int_equal(parse("/ingest/check out/cpu", &o), -ENOENT);
	assert_int_equal(parse("/ingest/checkoutenv=prod/cpu", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/cpuu", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/cpuu/f.pb.gz", &o), -ENOENT);
	assert_int_equal(parse("/ingest/ingest/cpu", &o), -ENOENT);
	assert_int_equal(parse("/ingest/.x/cpu", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/CPU", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/cpu/a=1,a=2/f", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/cpu/a=%zz/f", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/cpu/a=1/f/g", &o), -ENOENT);
	assert_int_equal(parse("/ingest/svc/cpu/f/g", &o), -ENOENT);
}

static void
test_long_segments(void **state)
{
	struct fspath o;
	char path[4096];

	(void)state;
	memset(path, 'a', sizeof(path));
	memcpy(path, "/svc/cpu/k=", 11);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(parse(path, &o), -ENOENT);
	memcpy(path, "/ingest/s/cpu/", 14);
	assert_int_equal(parse(path, &o), -ENOENT);
	path[14 + 300] = '\0';		/* a file name over 255 bytes */
	assert_int_equal(parse(path, &o), -ENOENT);
	memcpy(path, "/svc/cpu/all/all/", 17);
	assert_int_equal(parse(path, &o), -ENOENT);	/* a view name over 63 bytes */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_service_escapes),
		cmocka_unit_test(test_selectors),
		cmocka_unit_test(test_ranges_relative),
		cmocka_unit_test(test_ranges_absolute),
		cmocka_unit_test(test_ranges_basic_form),
		cmocka_unit_test(test_range_nodes),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_profile_names_extreme),
		cmocka_unit_test(test_vs),
		cmocka_unit_test(test_vs_at_in_value),
		cmocka_unit_test(test_ingest),
		cmocka_unit_test(test_ingest_why),
		cmocka_unit_test(test_name_why),
		cmocka_unit_test(test_long_segments),
	};

	return cmocka_run_group_tests_name("path", tests, NULL, NULL);
}
