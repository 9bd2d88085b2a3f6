/*
 * fuzz_otlp: otlp_decode() on arbitrary bytes, as protobuf and as JSON (the
 * body of POST /v1development/profiles once gunzipped). The first byte picks
 * the encoding. Bad input must be refused with -EINVAL/-EFBIG and a reason,
 * leaving an empty batch; a request that decodes gives profiles the store
 * would take: each has sample types, a service that passes
 * store_check_service(), a sane time, and encodes and decodes back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_otlp: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_batch ob;
	struct buf err = { 0 }, enc = { 0 };
	bool json = size > 0 && (data[0] & 1);
	size_t i;
	int rc;

	if (size == 0)
		return 0;
	rc = otlp_decode(data + 1, size - 1, json, &ob, &err);
	if (rc < 0) {
		CHECK(rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
		CHECK(rc == -ENOMEM || err.len > 0);
		CHECK(ob.n == 0 && ob.p == NULL);
	} else {
		for (i = 0; i < ob.n; i++) {
			struct profile *back = NULL;

			CHECK(ob.p[i]->nsample_types > 0);
			CHECK(store_check_service(ob.in[i].service, NULL) == 0);
			CHECK(store_time_sane(ob.in[i].created_at, clock_now_ns()));
			buf_reset(&enc);
			CHECK(profile_encode(ob.p[i], false, &enc) == 0);
			CHECK(profile_decode(enc.data, enc.len, &back, NULL) == 0);
			CHECK(back->nsamples == ob.p[i]->nsamples);
			profile_free(back);
		}
	}
	otlp_batch_free(&ob);
	buf_free(&err);
	buf_free(&enc);
	return 0;
}
