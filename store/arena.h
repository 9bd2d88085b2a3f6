/*
 * arena: bump allocator for per-request work (decoding and merging many
 * profiles). Everything allocated from an arena is freed at once by
 * arena_destroy(). Not thread-safe: one arena belongs to one thread at a time.
 */
#ifndef PROFILEFS_ARENA_H
#define PROFILEFS_ARENA_H

#include <stddef.h>

struct arena;

struct arena	*arena_create(void);
void		 arena_destroy(struct arena *a);
/* 16-byte aligned, uninitialised; NULL on allocation failure or overflow. */
void		*arena_alloc(struct arena *a, size_t n);
void		*arena_calloc(struct arena *a, size_t nmemb, size_t size);
void		*arena_memdup(struct arena *a, const void *p, size_t n);
/* Bytes handed out so far (for limits and statistics). */
size_t		 arena_used(const struct arena *a);

#endif
