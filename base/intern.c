/*
 * intern: open addressing with linear probing over a power-of-two slot array;
 * slots hold index+1 (0 = empty) and the full hash to skip most key compares.
 *
 * Everything a table holds is in the memory budget: keys through its arena,
 * the slot and key arrays reserved as they grow (a failed reservation is
 * -ENOMEM from intern_put(), NULL from intern_create()).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

struct ikey {
	const void	*p;
	size_t		 len;
	uint64_t	 hash;
};

struct intern {
	struct arena	*arena;
	uint32_t	*slots;		/* index + 1, 0 when empty */
	size_t		 mask;
	struct ikey	*keys;
	size_t		 n, cap;
	size_t		 charged;	/* bytes of slots and keys in the budget */
};

uint64_t
hash_bytes(const void *p, size_t n)
{
	/* FNV-1a over 8-byte words with a final avalanche (splitmix64). */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ n, w;

	while (n >= 8) {
		memcpy(&w, s, 8);
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

struct intern *
intern_create(size_t hint)
{
	struct intern *t;
	size_t sz = 64;

	while (sz < hint * 2)
		sz *= 2;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->arena = arena_create();
	if (t->arena == NULL || budget_reserve(sz * sizeof(*t->slots)) < 0) {
		intern_destroy(t);
		return NULL;
	}
	t->charged = sz * sizeof(*t->slots);
	if ((t->slots = calloc(sz, sizeof(*t->slots))) == NULL) {
		intern_destroy(t);
		return NULL;
	}
	t->mask = sz - 1;
	return t;
}

void
intern_destroy(struct intern *t)
{
	if (t == NULL)
		return;
	arena_destroy(t->arena);
	budget_release(t->charged);
	free(t->slots);
	free(t->keys);
	free(t);
}

static int
intern_grow(struct intern *t)
{
	size_t nsz = (t->mask + 1) * 2, i, j;
	uint32_t *ns;

	if (budget_reserve(nsz * sizeof(*ns)) < 0)
		return -ENOMEM;
	if ((ns = calloc(nsz, sizeof(*ns))) == NULL) {
		budget_release(nsz * sizeof(*ns));
		return -ENOMEM;
	}
	for (i = 0; i < t->n; i++) {
		for (j = t->keys[i].hash & (nsz - 1); ns[j]; j = (j + 1) & (nsz - 1))
			;
		ns[j] = (uint32_t)(i + 1);
	}
	budget_release((t->mask + 1) * sizeof(*ns));
	t->charged += (nsz - (t->mask + 1)) * sizeof(*ns);
	free(t->slots);
	t->slots = ns;
	t->mask = nsz - 1;
	return 0;
}

/* Room for one more key. */
static int
keys_grow(struct intern *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 8;
	struct ikey *nk;

	if (t->n < t->cap)
		return 0;
	if (budget_reserve((ncap - t->cap) * sizeof(*nk)) < 0)
		return -ENOMEM;
	if ((nk = realloc(t->keys, ncap * sizeof(*nk))) == NULL) {
		budget_release((ncap - t->cap) * sizeof(*nk));
		return -ENOMEM;
	}
	t->charged += (ncap - t->cap) * sizeof(*nk);
	t->keys = nk;
	t->cap = ncap;
	return 0;
}

static size_t
intern_find(const struct intern *t, const void *key, size_t len, uint64_t h)
{
	size_t j;

	for (j = h & t->mask; t->slots[j]; j = (j + 1) & t->mask) {
		const struct ikey *k = &t->keys[t->slots[j] - 1];

		if (k->hash == h && k->len == len && memcmp(k->p, key, len) == 0)
			break;
	}
	return j;
}

int64_t
intern_put(struct intern *t, const void *key, size_t len, int *added)
{
	uint64_t h = hash_bytes(key, len);
	size_t j = intern_find(t, key, len, h);
	struct ikey *nk;

	if (added)
		*added = 0;
	if (t->slots[j])
		return t->slots[j] - 1;
	if (t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	/* Grow first: a failure leaves the table as it was, never full. */
	if ((t->n + 1) * 10 > (t->mask + 1) * 7) {
		if (intern_grow(t) < 0)
			return -ENOMEM;
		j = intern_find(t, key, len, h);
	}
	if (keys_grow(t) < 0)
		return -ENOMEM;
	nk = &t->keys[t->n];
	if ((nk->p = arena_memdup(t->arena, key, len)) == NULL)
		return -ENOMEM;
	nk->len = len;
	nk->hash = h;
	t->slots[j] = (uint32_t)(++t->n);
	if (added)
		*added = 1;
	return (int64_t)t->n - 1;
}

int64_t
intern_get(const struct intern *t, const void *key, size_t len)
{
	size_t j = intern_find(t, key, len, hash_bytes(key, len));

	return t->slots[j] ? (int64_t)t->slots[j] - 1 : -1;
}

size_t
intern_bytes(const struct intern *t)
{
	return sizeof(*t) + arena_used(t->arena) + (t->mask + 1) * sizeof(*t->slots) +
	    t->cap * sizeof(*t->keys);
}

size_t
intern_count(const struct intern *t)
{
	return t->n;
}

const void *
intern_key(const struct intern *t, size_t i, size_t *len)
{
	assert(i < t->n);
	if (len)
		*len = t->keys[i].len;
	return t->keys[i].p;
}
