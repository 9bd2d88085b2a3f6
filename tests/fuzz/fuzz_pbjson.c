/*
 * fuzz_pbjson: the API's one JSON reader (api/pbjson.c) on arbitrary text.
 * The first byte picks the message (OTLP's request with its hex ids, or
 * querier.v1's FlameGraph, SelectMergeStacktracesResponse, SelectSeriesRequest:
 * nested repeated messages, repeated int64, bytes, doubles and enums) and,
 * with bit 2, small limits (depth 16, 64 Ki elements, 256 KiB of strings)
 * that the corpus's bombs (deep arrays, a million small ints, a huge base64
 * string, many keys) pass in a few MB. A refusal is -EINVAL/-EFBIG/-ENOMEM
 * with a reason; what is encoded unpacks as its message (the querier's read
 * back from their JSON to the same bytes); the memory budget is given back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "otlp.pb-c.h"
#include "pbjson.h"
#include "querier/v1/querier.pb-c.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_pbjson: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static const struct pbjson_limits real = {
	.max_text = 64u << 20, .max_depth = PBJSON_MAX_DEPTH,
	.max_elements = PBJSON_MAX_ELEMENTS, .max_strings = 64u << 20,
};
static const struct pbjson_limits small = {
	.max_text = 16u << 20, .max_depth = 16, .max_elements = 64u << 10,
	.max_strings = 256u << 10,
};

static const ProtobufCMessageDescriptor *const descs[4] = {
	&otlp__export_profiles_service_request__descriptor,
	&querier__v1__flame_graph__descriptor,
	&querier__v1__select_merge_stacktraces_response__descriptor,
	&querier__v1__select_series_request__descriptor,
};

/* Encode and unpack; NULL with a reason in err. */
static ProtobufCMessage *
decode(const ProtobufCMessageDescriptor *d, const void *text, size_t len,
    const struct pbjson_limits *lim, unsigned flags, struct buf *err)
{
	struct buf pb = { 0 };
	ProtobufCMessage *m = NULL;
	int rc;

	rc = pbjson_encode(d, text, len, lim, flags, &pb, err);
	CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
	if (rc == 0) {
		rc = pbjson_unpack(d, pb.data ? pb.data : "", pb.len, 256u << 20, &m, err);
		CHECK(rc == 0 || rc == -EFBIG || rc == -ENOMEM);
	}
	CHECK(m != NULL || err->len > 0);
	buf_free(&pb);
	return m;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *d;
	const struct pbjson_limits *lim;
	struct buf err = { 0 }, text = { 0 };
	ProtobufCMessage *m, *m2;
	size_t used0, used1;
	unsigned flags;
	json_t *j;

	if (size == 0)
		return 0;
	d = descs[data[0] & 3];
	lim = data[0] & 4 ? &small : &real;
	flags = d == descs[0] ? PBJSON_HEX_IDS : 0;
	budget_stats(&used0, NULL, NULL);
	m = decode(d, data + 1, size - 1, lim, flags, &err);
	if (m && flags == 0) {
		size_t na, nb;
		uint8_t *a, *b;

		CHECK((j = connect_to_json(m)) != NULL);
		CHECK(jsonw_dump(&text, j, JSON_COMPACT) == 0);
		json_decref(j);
		buf_reset(&err);
		CHECK((m2 = decode(d, text.data, text.len, &real, 0, &err)) != NULL);
		na = protobuf_c_message_get_packed_size(m);
		nb = protobuf_c_message_get_packed_size(m2);
		CHECK(na == nb);
		a = malloc(na + 1);
		b = malloc(nb + 1);
		CHECK(a != NULL && b != NULL);
		protobuf_c_message_pack(m, a);
		protobuf_c_message_pack(m2, b);
		CHECK(memcmp(a, b, na) == 0);
		free(a);
		free(b);
		pbjson_free(m2);
	}
	pbjson_free(m);
	buf_free(&text);
	buf_free(&err);
	budget_stats(&used1, NULL, NULL);
	CHECK(used1 == used0);
	return 0;
}
