/*
 * cache: generated content (merged profiles, rendered files) shared between
 * FUSE requests. Entries are refcounted: a reader holds its entry while a file
 * is open, so eviction never frees what is being read. An entry is valid while
 * the store generation it was made at is current and, for ranges that move
 * with the clock, for at most max_age. Computing is single-flight: concurrent
 * requests for one key wait for the first, so a listing merges once.
 */
#ifndef PROFILEFS_CACHE_H
#define PROFILEFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache;

struct cache_entry {
	const char	*key;
	void		*val;		/* owned by the entry */
	size_t		 size;		/* bytes charged against the cache */
	int		 rc;		/* the computation's result (cached too) */
	int64_t		 born;		/* CLOCK_REALTIME ns */
};

/* Compute the value for key: *val, *size and *free_fn are outputs. */
typedef int (*cache_fill_fn)(void *arg, void **val, size_t *size,
    void (**free_fn)(void *));

struct cache	*cache_create(size_t max_bytes);
void		 cache_destroy(struct cache *c);
/*
 * The entry for key (computed by fill if missing or stale). *out holds a
 * reference the caller drops with cache_release(). Returns the entry's rc.
 */
int		 cache_get(struct cache *c, const char *key, uint64_t gen,
		    int64_t max_age_ns, cache_fill_fn fill, void *arg,
		    struct cache_entry **out);
/*
 * The same, for content made from data up to time scope: an entry made at
 * an older generation is kept when the cache's changed function says nothing
 * at or before scope changed since (cache_set_changed). cache_get() is this
 * with no scope: any new generation makes its entries stale.
 */
int		 cache_get_scoped(struct cache *c, const char *key, uint64_t gen,
		    int64_t scope, int64_t max_age_ns, cache_fill_fn fill, void *arg,
		    struct cache_entry **out);
/*
 * The entry for key if it is there and current (as cache_get_scoped() would
 * serve it), without computing it: 0 and *out (released with
 * cache_release()), or -ENOENT and *out NULL.
 */
int		 cache_peek_scoped(struct cache *c, const char *key, uint64_t gen,
		    int64_t scope, int64_t max_age_ns, struct cache_entry **out);
/*
 * Entries of c that no get asked for in idle_ns are dropped by the sweeper's
 * tick (cache_sweeper_start()), and the memory they held is given back to
 * the system; 0 (the default): only a short budget or max_bytes drop them.
 */
void		 cache_set_idle(struct cache *c, int64_t idle_ns);
/* Whether a change after generation then touched data at or before scope. */
typedef bool (*cache_changed_fn)(void *arg, uint64_t then, int64_t scope);
void		 cache_set_changed(struct cache *c, cache_changed_fn changed, void *arg);
void		 cache_release(struct cache *c, struct cache_entry *e);
/*
 * What an entry for key costs besides its value (bookkeeping and the key);
 * an entry's size is its fill's size plus this.
 */
size_t		 cache_overhead(const char *key);
/*
 * Entries, bytes and fills so far (for metrics and tests). bytes counts
 * every entry until it is freed: also replaced or evicted ones still held.
 */
void		 cache_stats(struct cache *c, size_t *entries, size_t *bytes,
		    uint64_t *fills, uint64_t *hits);

/*
 * A thread that drops the unreferenced entries of caches[0..n) whenever the
 * memory budget runs short (budget_pressed()), woken early by a refused
 * reservation: so that memory the caches hold comes back even when no file
 * is read, without the budget calling into them. On each tick (a second) it
 * also drops the entries gone idle (cache_set_idle()) and gives their memory
 * back. Stop it before destroying the caches. 0 or -errno.
 */
struct cache_sweeper;
int		 cache_sweeper_start(struct cache **caches, size_t n,
		    struct cache_sweeper **out);
void		 cache_sweeper_stop(struct cache_sweeper *sw);

#endif
