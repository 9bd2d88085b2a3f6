/*
 * fuzz_connect: the Grafana API's JSON mapping on arbitrary text, as the
 * bodies of DiffRequest (nested messages, repeated strings, 64-bit
 * integers), SelectSeriesRequest (doubles, enums) and SeriesRequest: read by
 * pbjson.c as connect_decode() reads a request, written back by
 * connect_to_json(). A body that decodes must encode to JSON that decodes to
 * the same message (equal protobuf bytes); a refusal gives a reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "pbjson.h"
#include "querier/v1/querier.pb-c.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_connect: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static const struct pbjson_limits limits = {
	.max_text = 16u << 20, .max_depth = PBJSON_MAX_DEPTH, .max_elements = 256u << 10,
	.max_strings = 16u << 20,
};

/* Text to a message of d as connect_decode() makes it; NULL with a reason. */
static ProtobufCMessage *
from_json(const ProtobufCMessageDescriptor *d, const void *text, size_t len, struct buf *err)
{
	struct buf pb = { 0 };
	ProtobufCMessage *m = NULL;
	int rc;

	rc = pbjson_encode(d, text, len, &limits, 0, &pb, err);
	CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
	if (rc == 0)
		CHECK(pbjson_unpack(d, pb.data ? pb.data : "", pb.len, 64u << 20, &m, err) == 0);
	else
		CHECK(err->len > 0);
	buf_free(&pb);
	return m;
}

static void
roundtrip(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t size)
{
	ProtobufCMessage *m, *m2;
	struct buf err = { 0 }, text = { 0 };
	uint8_t *a, *b;
	size_t na, nb;
	json_t *j;

	if ((m = from_json(d, data, size, &err)) == NULL) {
		buf_free(&err);
		return;
	}
	CHECK((j = connect_to_json(m)) != NULL);
	CHECK(jsonw_dump(&text, j, JSON_COMPACT) == 0);
	m2 = from_json(d, text.data, text.len, &err);
	CHECK(m2 != NULL);
	na = protobuf_c_message_get_packed_size(m);
	nb = protobuf_c_message_get_packed_size(m2);
	CHECK(na == nb);
	a = malloc(na + 1);
	b = malloc(nb + 1);
	CHECK(a && b);
	protobuf_c_message_pack(m, a);
	protobuf_c_message_pack(m2, b);
	CHECK(memcmp(a, b, na) == 0);
	free(a);
	free(b);
	json_decref(j);
	pbjson_free(m);
	pbjson_free(m2);
	buf_free(&text);
	buf_free(&err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	roundtrip(&querier__v1__diff_request__descriptor, data, size);
	roundtrip(&querier__v1__select_series_request__descriptor, data, size);
	roundtrip(&querier__v1__series_request__descriptor, data, size);
	return 0;
}
