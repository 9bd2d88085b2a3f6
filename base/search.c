/*
 * search: the binary search of sorted address tables (symbols, mappings,
 * perf-map entries): how many leading elements have a key at or below a
 * value. Callers step back from there to the element that covers it.
 */
#include <stdint.h>
#include <string.h>

#include "base.h"

size_t
search_u64_le(const void *base, size_t n, size_t size, size_t offset, uint64_t key)
{
	const char *p = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, p + mid * size + offset, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
