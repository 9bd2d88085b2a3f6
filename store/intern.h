/*
 * intern: a hash table that gives each distinct byte string a dense index
 * 0, 1, 2, ... in first-seen order. The merge uses one per kind of object
 * (strings, functions, mappings, locations, samples) to find identical ones.
 * Keys are copied into the table's own arena; the table is single-threaded.
 */
#ifndef PROFILEFS_INTERN_H
#define PROFILEFS_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern;

struct intern	*intern_create(size_t hint);
void		 intern_destroy(struct intern *t);
/*
 * Index of key, adding it if new (*added set to 1 then). Returns -ENOMEM on
 * allocation failure, otherwise the index (>= 0).
 */
int64_t		 intern_put(struct intern *t, const void *key, size_t len, int *added);
/* Index of key, or -1 if absent. */
int64_t		 intern_get(const struct intern *t, const void *key, size_t len);
size_t		 intern_count(const struct intern *t);
/* The key of index i (valid until the table is destroyed). */
const void	*intern_key(const struct intern *t, size_t i, size_t *len);

uint64_t	 hash_bytes(const void *p, size_t n);

#endif
