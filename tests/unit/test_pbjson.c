/*
 * test_pbjson: the API's JSON reader (api/pbjson.c). The scan's limits name
 * what they refuse; the budget reservation per element bounds what jansson
 * really allocates for the shapes of parse bombs (counted by allocation
 * functions installed for this program); the proto3 mapping of both users
 * (OTLP's hex ids, Connect's names, 64-bit strings and enums); the unpacker's
 * cap and its budget given back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "connect.h"
#include "otlp.pb-c.h"
#include "pbjson.h"
#include "querier/v1/querier.pb-c.h"

/* --- jansson's allocations, counted as malloc would hold them ------------------ */

static size_t j_live, j_peak;

static void *
count_malloc(size_t n)
{
	size_t *p = malloc(n + 16);

	if (p == NULL)
		return NULL;
	*p = n;
	/* glibc's chunk: the request and 8 bytes of header, rounded to 16. */
	j_live += (n + 8 + 15) / 16 * 16 < 32 ? 32 : (n + 8 + 15) / 16 * 16;
	if (j_live > j_peak)
		j_peak = j_live;
	return (char *)p + 16;
}

static void
count_free(void *ptr)
{
	size_t n;

	if (ptr == NULL)
		return;
	ptr = (char *)ptr - 16;
	n = *(size_t *)ptr;
	j_live -= (n + 8 + 15) / 16 * 16 < 32 ? 32 : (n + 8 + 15) / 16 * 16;
	free(ptr);
}

static const struct pbjson_limits lim = {
	.max_text = 64u << 20, .max_depth = PBJSON_MAX_DEPTH,
	.max_elements = PBJSON_MAX_ELEMENTS, .max_strings = 64u << 20,
};

/* n copies of item joined by sep inside open/close. */
static void
repeat(struct buf *b, const char *open, const char *item, const char *sep, size_t n,
    const char *close)
{
	size_t i;

	buf_reset(b);
	assert_int_equal(buf_adds(b, open), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(buf_adds(b, item), 0);
		if (i + 1 < n)
			assert_int_equal(buf_adds(b, sep), 0);
	}
	assert_int_equal(buf_adds(b, close), 0);
}

static int
scan(const struct buf *b, const struct pbjson_limits *l, size_t *nel, size_t *nstr,
    struct buf *err)
{
	struct pbjson_count c;
	int rc;

	buf_reset(err);
	rc = pbjson_scan(b->data, b->len, l, &c, err);
	*nel = c.scalars + c.strings + c.arrays + c.objects;
	*nstr = c.string_bytes;
	return rc;
}

static void
test_limits(void **state)
{
	struct pbjson_limits l = { .max_text = 1u << 20, .max_depth = 64, .max_elements = 1000,
	    .max_strings = 100 };
	struct buf b = { 0 }, err = { 0 }, out = { 0 };
	size_t nel, nstr;

	(void)state;
	repeat(&b, "", "[", "", 65, "");
	assert_int_equal(scan(&b, &l, &nel, &nstr, &err), -EFBIG);
	assert_string_equal(err.data, "JSON nested deeper than 64 levels");
	repeat(&b, "", "[", "", 64, "");
	assert_int_equal(scan(&b, &l, &nel, &nstr, &err), 0);
	/* Brackets inside strings are text, escaped quotes too. */
	buf_reset(&b);
	buf_adds(&b, "{\"a\\\"[[[[\":\"]]]]{{{{\"}");
	assert_int_equal(scan(&b, &l, &nel, &nstr, &err), 0);
	assert_int_equal(nel, 3);
	assert_int_equal(nstr, 15);
	repeat(&b, "[", "0", ",", 1000, "]");
	assert_int_equal(scan(&b, &l, &nel, &nstr, &err), -EFBIG);
	assert_string_equal(err.data, "JSON has more than 1000 elements");
	repeat(&b, "[", "0", ",", 999, "]");
	assert_int_equal(scan(&b, &l, &nel, &nstr, &err), 0);
	assert_int_equal(nel, 1000);
	repeat(&b, "[", "\"0123456789\"", ",", 11, "]");
	assert_int_equal(scan(&b, &l, &nel, &nstr, &err), -EFBIG);
	assert_string_equal(err.data, "JSON strings hold more than 100 bytes");
	/* The same through the converter: nothing built, the limit named. */
	repeat(&b, "{\"values\":[", "0", ",", 2000, "]}");
	buf_reset(&err);
	assert_int_equal(pbjson_encode(&querier__v1__level__descriptor, b.data, b.len, &l, 0,
	    &out, &err), -EFBIG);
	assert_string_equal(err.data, "JSON has more than 1000 elements");
	assert_int_equal(out.len, 0);
	l.max_text = 100;
	buf_reset(&err);
	assert_int_equal(pbjson_encode(&querier__v1__level__descriptor, b.data, b.len, &l, 0,
	    &out, &err), -EFBIG);
	assert_non_null(strstr(err.data, "at most 100"));
	buf_free(&b);
	buf_free(&err);
	buf_free(&out);
}

/* The reservation the converter makes for text bounds jansson's peak for it. */
static void
check_cost(const char *what, const struct buf *b)
{
	struct buf err = { 0 };
	struct pbjson_count c;
	size_t nel, cost;
	json_t *doc;

	assert_int_equal(pbjson_scan(b->data, b->len, &lim, &c, &err), 0);
	nel = c.scalars + c.strings + c.arrays + c.objects;
	cost = pbjson_cost(&c);
	j_live = j_peak = 0;
	doc = json_loadb(b->data, b->len, 0, NULL);
	assert_non_null(doc);
	json_decref(doc);
	printf("# %-28s %8zu elements: jansson's peak %9zu bytes, %5.1f per element, "
	    "reserved %9zu (%.0f%%)\n", what, nel, j_peak, (double)j_peak / (double)nel, cost,
	    100.0 * (double)j_peak / (double)cost);
	assert_true(j_peak <= cost);
	buf_free(&err);
}

static void
test_cost(void **state)
{
	struct buf b = { 0 }, key = { 0 };
	size_t i;

	(void)state;
	repeat(&b, "{\"a\":[", "0", ",", 1u << 20, "]}");
	check_cost("a million small ints", &b);
	repeat(&b, "[", "7", ",", 131073, "]");
	check_cost("ints, one past a doubling", &b);
	repeat(&b, "[", "1.5", ",", 200000, "]");
	check_cost("reals", &b);
	repeat(&b, "[", "[]", ",", 200000, "]");
	check_cost("empty arrays", &b);
	repeat(&b, "[", "{}", ",", 200000, "]");
	check_cost("empty objects", &b);
	repeat(&b, "[", "{\"a\":{\"b\":{\"c\":{}}}}", ",", 50000, "]");
	check_cost("nested objects", &b);
	repeat(&b, "[", "[[],[],[],[],[],[],[],[],[]]", ",", 20000, "]");
	check_cost("arrays of 9 arrays", &b);
	repeat(&b, "[", "{\"a\":0}", ",", 200000, "]");
	check_cost("objects of one key", &b);
	repeat(&b, "[", "\"\"", ",", 200000, "]");
	check_cost("empty strings", &b);
	repeat(&b, "[", "true", ",", 200000, "]");
	check_cost("literals", &b);
	repeat(&b, "[", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]"
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", ",", 5000, "]");
	check_cost("deep arrays", &b);
	repeat(&b, "[\"", "QUJD", "", 1u << 20, "\"]");
	check_cost("a 4 MB base64 string", &b);
	buf_reset(&b);
	buf_adds(&b, "{");
	for (i = 0; i < 200000; i++) {
		buf_reset(&key);
		buf_printf(&key, "%s\"k%zu\":0", i ? "," : "", i);
		buf_add(&b, key.data, key.len);
	}
	buf_adds(&b, "}");
	check_cost("many keys", &b);
	buf_free(&b);
	buf_free(&key);
}

static ProtobufCMessage *
decode(const ProtobufCMessageDescriptor *d, const char *json, unsigned flags, struct buf *err)
{
	struct buf pb = { 0 };
	ProtobufCMessage *m = NULL;

	buf_reset(err);
	if (pbjson_encode(d, json, strlen(json), &lim, flags, &pb, err) == 0)
		assert_int_equal(pbjson_unpack(d, pb.data ? pb.data : "", pb.len, 1u << 20, &m,
		    err), 0);
	buf_free(&pb);
	return m;
}

static void
test_mapping(void **state)
{
	struct buf err = { 0 };
	ProtobufCMessage *m;
	Querier__V1__SelectMergeStacktracesRequest *sm;
	Querier__V1__SelectSeriesRequest *ss;
	Otlp__ExportProfilesServiceRequest *o;

	(void)state;
	/* Connect: lowerCamelCase or the field's own name, int64 as strings, enums by name. */
	m = decode(&querier__v1__select_merge_stacktraces_request__descriptor,
	    "{\"profile_typeID\":\"cpu\",\"labelSelector\":\"{}\",\"start\":\"-5\",\"end\":7,"
	    "\"maxNodes\":\"9223372036854775807\",\"format\":\"PROFILE_FORMAT_TREE\","
	    "\"profileIdSelector\":[\"a\",\"b\"],\"unknown\":[[1]],\"async\":null}", 0, &err);
	assert_non_null(m);
	sm = (Querier__V1__SelectMergeStacktracesRequest *)m;
	assert_string_equal(sm->profile_typeid, "cpu");
	assert_string_equal(sm->label_selector, "{}");
	assert_int_equal(sm->start, -5);
	assert_int_equal(sm->end, 7);
	assert_true(sm->max_nodes == INT64_MAX);
	assert_int_equal(sm->format, QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE);
	assert_int_equal(sm->n_profile_id_selector, 2);
	assert_string_equal(sm->profile_id_selector[1], "b");
	assert_null(sm->async);
	pbjson_free(m);
	/* doubles as numbers or strings, enums by number */
	m = decode(&querier__v1__select_series_request__descriptor,
	    "{\"step\":\"1.5\",\"aggregation\":1}", 0, &err);
	assert_non_null(m);
	ss = (Querier__V1__SelectSeriesRequest *)m;
	assert_true(ss->step == 1.5);
	pbjson_free(m);
	/* refusals name the field */
	assert_null(decode(&querier__v1__select_merge_stacktraces_request__descriptor,
	    "{\"format\":\"PROFILE_FORMAT_NONE\"}", 0, &err));
	assert_non_null(strstr(err.data, "no value PROFILE_FORMAT_NONE"));
	assert_null(decode(&querier__v1__profile_types_request__descriptor,
	    "{\"start\":\"soon\"}", 0, &err));
	assert_string_equal(err.data, "JSON field \"start\": not an integer (a number or a "
	    "decimal string)");
	assert_null(decode(&querier__v1__series_request__descriptor, "{\"matchers\":\"a\"}", 0,
	    &err));
	assert_string_equal(err.data, "JSON field \"matchers\": not an array");
	assert_null(decode(&querier__v1__series_request__descriptor, "[]", 0, &err));
	assert_non_null(strstr(err.data, "not an object"));
	assert_null(decode(&querier__v1__series_request__descriptor, "{\"start\":", 0, &err));
	assert_non_null(strstr(err.data, "not JSON"));
	/* OTLP: ids in hex, other bytes in base64 */
	m = decode(&otlp__export_profiles_service_request__descriptor,
	    "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"profileId\":"
	    "\"00ff10\",\"originalPayload\":\"QUJD\"}]}]}]}", PBJSON_HEX_IDS, &err);
	assert_non_null(m);
	o = (Otlp__ExportProfilesServiceRequest *)m;
	assert_int_equal(o->resource_profiles[0]->scope_profiles[0]->profiles[0]->profile_id.len, 3);
	assert_int_equal(o->resource_profiles[0]->scope_profiles[0]->profiles[0]->profile_id.data[1],
	    0xff);
	pbjson_free(m);
	assert_null(decode(&otlp__export_profiles_service_request__descriptor,
	    "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"profileId\":"
	    "\"QUJD\"}]}]}]}", PBJSON_HEX_IDS, &err));
	assert_non_null(strstr(err.data, "not hex digits"));
	buf_free(&err);
}

/* Messages past the unpacker's cap are refused, and what it took is given back. */
static void
test_unpack_cap(void **state)
{
	struct buf pb = { 0 }, err = { 0 };
	ProtobufCMessage *m = NULL;
	size_t used0, used1, i;

	(void)state;
	budget_stats(&used0, NULL, NULL);
	/* 100000 empty Levels of a FlameGraph (field 2): 2 bytes each on the wire. */
	for (i = 0; i < 100000; i++)
		buf_add(&pb, "\x12\x00", 2);
	assert_int_equal(pbjson_unpack(&querier__v1__flame_graph__descriptor, pb.data, pb.len,
	    1u << 20, &m, &err), -EFBIG);
	assert_null(m);
	assert_non_null(strstr(err.data, "more than 1 MiB"));
	assert_int_equal(pbjson_unpack(&querier__v1__flame_graph__descriptor, pb.data, pb.len,
	    64u << 20, &m, &err), 0);
	assert_int_equal(((Querier__V1__FlameGraph *)m)->n_levels, 100000);
	pbjson_free(m);
	buf_free(&pb);
	buf_free(&err);
	budget_stats(&used1, NULL, NULL);
	assert_int_equal(used1, used0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_cost),
		cmocka_unit_test(test_mapping),
		cmocka_unit_test(test_unpack_cap),
	};

	/* Before any of jansson's allocations: it frees what it allocated with these. */
	json_set_alloc_funcs(count_malloc, count_free);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
