/*
 * fuzz_hotspot: the eBPF sampler's readers of a HotSpot JVM's structures as
 * a hostile process could craft them (collector/ebpf/runtimes/hotspot.c): a
 * method signature (Symbol bytes), a compressed line number table, an
 * nmethod's scopes data with its metadata. The first byte picks the reader
 * and its parameters; the rest is the input, copied to exactly its size.
 * Names stay within their buffers, NUL-terminated; chains stay within max;
 * never a crash or a hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_hotspot: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel, *in;
	char ret[33], args[65];
	uint64_t meta[16], out[8];
	int64_t bcis[8];
	size_t i, n, rsz, asz;

	if (size == 0)
		return 0;
	sel = data[0];
	data++;
	size--;
	if ((in = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(in, data, size);
	switch (sel % 3) {
	case 0:
		rsz = 1 + (sel >> 2) % 32;
		asz = 1 + (sel >> 3) % 64;
		memset(ret, 'X', sizeof(ret));
		memset(args, 'X', sizeof(args));
		if (hotspot_signature((const char *)in, size, ret, rsz, args, asz) == 0) {
			CHECK(memchr(ret, '\0', rsz) != NULL);
			CHECK(memchr(args, '\0', asz) != NULL);
		}
		for (i = rsz; i < sizeof(ret); i++)
			CHECK(ret[i] == 'X');
		for (i = asz; i < sizeof(args); i++)
			CHECK(args[i] == 'X');
		break;
	case 1:
		for (i = 0; i < 8; i++)
			CHECK(hotspot_line(in, size, (int64_t)i * (sel >> 2) - 1, i & 1) >= 0);
		break;
	default:
		for (i = 0; i < 16; i++)
			meta[i] = 0x1000 + i;
		for (i = 0; i < size && i < 64; i++) {
			n = hotspot_scopes(in, size, meta, (sel >> 2) % 17, (int64_t)i, out, bcis,
			    1 + (sel >> 6), i & 1);
			CHECK(n <= 1u + (sel >> 6));
			while (n-- > 0)
				CHECK(out[n] >= 0x1000 && out[n] < 0x1010 && bcis[n] >= -1);
		}
		break;
	}
	free(in);
	return 0;
}
