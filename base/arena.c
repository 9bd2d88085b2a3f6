/*
 * arena: a list of chunks; small allocations bump a pointer in the current
 * chunk, large ones get a chunk of their own. Chunks are reserved in the
 * memory budget (budget.c): past it arena_alloc() returns NULL, as for an
 * allocation failure, and arena_destroy() gives the bytes back.
 *
 * Chunks start small and double up to ARENA_CHUNK, so what an arena reserves
 * stays within twice what it hands out: many long-lived arenas holding a few
 * bytes each (the symbol tables of thousands of small services) cost what
 * they use, not a full chunk each.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

#define ARENA_CHUNK	(256 * 1024)
#define ARENA_FIRST	1024		/* the first chunk; each next one doubles */

struct chunk {
	struct chunk	*next;
	size_t		 size;
	size_t		 used;
	_Alignas(16) unsigned char data[];
};

struct arena {
	struct chunk	*head;
	size_t		 total;
	size_t		 next;		/* size of the next small chunk */
};

struct arena *
arena_create(void)
{
	return calloc(1, sizeof(struct arena));
}

void
arena_destroy(struct arena *a)
{
	struct chunk *c, *n;

	if (a == NULL)
		return;
	for (c = a->head; c; c = n) {
		n = c->next;
		budget_release(sizeof(*c) + c->size);
		free(c);
	}
	free(a);
}

void *
arena_alloc(struct arena *a, size_t n)
{
	struct chunk *c;
	size_t sz;

	if (n > SIZE_MAX - 64)
		return NULL;
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	assert(n % 16 == 0);
	c = a->head;
	if (c == NULL || c->size - c->used < n) {
		if (n > ARENA_CHUNK / 4)
			sz = n;
		else {
			for (sz = a->next ? a->next : ARENA_FIRST; sz < n; sz *= 2)
				;
			a->next = sz < ARENA_CHUNK ? sz * 2 : ARENA_CHUNK;
		}
		if (budget_reserve(sizeof(*c) + sz) < 0)
			return NULL;
		if ((c = malloc(sizeof(*c) + sz)) == NULL) {
			budget_release(sizeof(*c) + sz);
			return NULL;
		}
		c->size = sz;
		c->used = 0;
		if (n > ARENA_CHUNK / 4 && a->head) {
			/* A big block: keep bumping in the current chunk. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	c->used += n;
	a->total += n;
	return c->data + c->used - n;
}

void *
arena_calloc(struct arena *a, size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	if ((p = arena_alloc(a, nmemb * size)) != NULL)
		memset(p, 0, nmemb * size);
	return p;
}

void *
arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *q = arena_alloc(a, n + 1);

	if (q) {
		if (n)	/* p may be NULL for an empty string (protobuf-c) */
			memcpy(q, p, n);
		((char *)q)[n] = '\0';
	}
	return q;
}

size_t
arena_used(const struct arena *a)
{
	return a->total;
}
