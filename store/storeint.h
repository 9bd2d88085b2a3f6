/*
 * storeint: what query.c needs of store.c beyond store.h: reading one
 * series' range as a sum of packs (windows + raw edges) with its listing,
 * from one snapshot. Private to store/.
 */
#ifndef PROFILEFS_STOREINT_H
#define PROFILEFS_STOREINT_H

#include "pack.h"
#include "store.h"

#define STORE_MAX_TYPES	64

/* One T record: a profile's totals and the hash of its signature. */
struct store_meta {
	int64_t		 totals[STORE_MAX_TYPES];
	size_t		 ntypes;
	uint64_t	 sighash;
};

typedef int (*store_meta_fn)(void *arg, const struct store_ref *ref,
    const struct store_meta *m);

/*
 * Add every profile of series sid with from <= time < to into a (windows
 * that fit, raw profiles elsewhere), and call fn (optional) for each of them
 * in time order with its T record. Both views come from one snapshot.
 * Raw profiles that cannot be read are passed to bad (optional) and left
 * out of a. A nonzero return of a callback stops the read and is returned.
 */
typedef int (*store_bad_fn)(void *arg, const struct store_ref *ref, const char *why);
int	store_read_series(struct store *st, uint64_t sid, int64_t from, int64_t to,
	    struct agg *a, store_meta_fn fn, store_bad_fn bad, void *arg);

/*
 * The symbol table of series sid, locked (sym_lock) until
 * store_symtab_release(); NULL with *rc set on failure.
 */
const struct symtab *store_symtab_acquire(struct store *st, uint64_t sid, int *rc);
void	store_symtab_release(struct store *st, uint64_t sid);

/* The hash stored in T records for a signature (profile_signature()'s text). */
uint64_t store_sighash(const void *sig, size_t len);

/*
 * For delete.c: the database, and writes that exclude the compactor
 * (store_write_begin() .. store_write_end(), which also hold the database
 * open); store_write_batch() writes wb synced (-errno with the reason in
 * err, optional); store_note_deleted() tells the caches, the windows, the
 * series index and the outbox count that data of series sid from time tmin
 * on went away (unqueued: outbox keys deleted).
 */
typedef struct rocksdb_t rocksdb_t;
typedef struct rocksdb_writebatch_t rocksdb_writebatch_t;
rocksdb_t *store_db(struct store *st);
void	store_write_begin(struct store *st);
void	store_write_end(struct store *st);
int	store_write_batch(struct store *st, rocksdb_writebatch_t *wb, struct buf *err);
void	store_note_deleted(struct store *st, uint64_t sid, int64_t tmin, uint64_t unqueued);
/* store_series() of this store's own index, whatever the reads go to. */
int	store_local_series(struct store *st, const struct series ***out, size_t *n);

#endif
