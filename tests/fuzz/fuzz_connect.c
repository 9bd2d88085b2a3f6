/*
 * fuzz_connect: the Grafana API's JSON mapping (api/connect.c) on arbitrary
 * text, as the bodies of DiffRequest (nested messages, repeated strings,
 * 64-bit integers) and SelectSeriesRequest (doubles, enums). A body that
 * decodes must encode to JSON that decodes to the same message (equal
 * protobuf bytes); a refusal gives a reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "querier/v1/querier.pb-c.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_connect: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static void
roundtrip(const ProtobufCMessageDescriptor *d, const json_t *doc)
{
	ProtobufCMessage *m, *m2;
	struct buf err = { 0 };
	uint8_t *a, *b;
	size_t na, nb;
	json_t *j;

	if ((m = connect_from_json(d, doc, &err)) == NULL) {
		CHECK(err.len > 0);
		buf_free(&err);
		return;
	}
	CHECK((j = connect_to_json(m)) != NULL);
	m2 = connect_from_json(d, j, &err);
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
	protobuf_c_message_free_unpacked(m, NULL);
	protobuf_c_message_free_unpacked(m2, NULL);
	buf_free(&err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);

	if (doc == NULL)
		return 0;
	roundtrip(&querier__v1__diff_request__descriptor, doc);
	roundtrip(&querier__v1__select_series_request__descriptor, doc);
	roundtrip(&querier__v1__series_request__descriptor, doc);
	json_decref(doc);
	return 0;
}
