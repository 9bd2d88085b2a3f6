/*
 * qcache: the query API's answers kept for the same question asked again
 * (querier.c), as the tree keeps its generated files. An entry is the reply
 * of one request (its method and message) in protobuf, made at a reader
 * generation; it is served while the
 * reader's data up to the request's range end is what it was then
 * (reader_changed_since()), so a new profile in the range makes the next
 * call compute again, and one after the range does not. Bounded in entries
 * and bytes, least recently used out first. Internal to api/.
 *
 * Thread-safety: every call takes the cache's own lock; replies are copied
 * in and out, so nothing is shared with the caller.
 */
#ifndef PROFILEFS_QCACHE_H
#define PROFILEFS_QCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "store.h"

struct qcache;

/* An empty cache (NULL when out of memory: callers then cache nothing). */
struct qcache *qcache_create(size_t max_entries, size_t max_bytes);
void	qcache_destroy(struct qcache *c);	/* NULL: a no-op */

/*
 * The reply cached under key (klen bytes) if still current for rd: its
 * bytes appended to body; 0, or -ENOENT (none, or stale: then dropped),
 * or body's error. c may be NULL.
 */
int	qcache_get(struct qcache *c, const struct reader *rd, const void *key, size_t klen,
	    struct buf *body);
/*
 * Keep a copy of the reply (len bytes) to key, made from rd's data at
 * generation gen, covering times before upto (ns; INT64_MAX: any change
 * makes it stale). One over the byte bound is not kept. c may be NULL.
 */
void	qcache_put(struct qcache *c, const void *key, size_t klen, uint64_t gen, int64_t upto,
	    const void *reply, size_t len);

#endif
