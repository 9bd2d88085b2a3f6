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

#endif
