/*
 * digest: the hashes that leave the process. What is written to disk or to
 * ClickHouse outlives a build, so it never uses hash_bytes() (the in-memory
 * tables' function, free to change); it uses one of two named algorithms
 * here, each frozen:
 *
 *   pfhash64   the local store's 64-bit tags (a group's sample types, the
 *              codec tag of stored sizes). FNV-1a over little-endian 8-byte
 *              words (a byte at a time for the tail), the length folded into
 *              the offset basis, then splitmix64's finalizer. Not collision
 *              resistant: only for values the daemon derives itself, never
 *              as the sole key of content an outsider chooses.
 *   digest128  content addresses shared by a fleet (a stack's frames in
 *              ClickHouse): the first 16 bytes of SHA-256, written as 32
 *              lowercase hex digits. No key to distribute: every host
 *              computes the same address for the same content, and finding
 *              a second content for a given address costs about 2^128
 *              SHA-256 evaluations.
 */
#include <string.h>

#include <openssl/sha.h>

#include "base.h"

uint64_t
pfhash64(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ n, w;
	int i;

	while (n >= 8) {
		for (w = 0, i = 7; i >= 0; i--)
			w = w << 8 | s[i];
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
		s += 8;
		n -= 8;
	}
	while (n--)
		h = (h ^ *s++) * 0x100000001b3ULL;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

void
digest128(const void *p, size_t n, char out[DIGEST128_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_LENGTH];
	size_t i;

	SHA256(n ? p : (const void *)"", n, md);
	for (i = 0; i < DIGEST128_HEX / 2; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[DIGEST128_HEX] = '\0';
}
