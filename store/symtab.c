/*
 * symtab: the per-service symbol tables in memory (loaded from 'Y' records
 * on first use) and the lock (sym_lock) each is used under. Which entries
 * a pack adds, and their layout, is pack.c's business.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* Fill t with the 'Y' records of series sid. */
static int
symtab_read(struct store *st, uint64_t sid, struct symtab *t)
{
	unsigned char lo[9], hi[9];
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	int rc = 0;

	lo[0] = hi[0] = 'Y';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid + 1);
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);

		if (kl != 14 || k[9] >= SYM_NKINDS)
			continue;
		rc = symtab_load(t, k[9], (uint32_t)be64_get(k + 6) & UINT32_MAX, v, vl);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

/*
 * The state holding series sid's symbols, loaded, with its sym_lock held.
 * Lock order: db_lock (read, held by the caller), then sym_lock.
 */
struct sstate *
sstate_lock(struct store *st, uint64_t sid, int *rc)
{
	struct sstate *ss = NULL;
	ssize_t pos;

	*rc = 0;
	pthread_rwlock_rdlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0 &&
	    (pos = series_pos(st, st->state[pos]->space)) >= 0)
		ss = st->state[pos];
	pthread_rwlock_unlock(&st->st_lock);
	if (ss == NULL) {
		*rc = -ENOENT;
		return NULL;
	}
	pthread_mutex_lock(&ss->sym_lock);
	if (ss->sym == NULL) {
		if ((ss->sym = symtab_create()) == NULL)
			*rc = -ENOMEM;
		else	/* the caller holds db_lock: always taken before sym_lock */
			*rc = symtab_read(st, ss->space, ss->sym);
		if (*rc < 0 && ss->sym) {
			log_warnx("store: the symbols of series %llu cannot be loaded",
			    (unsigned long long)sid);
			symtab_free(ss->sym);
			ss->sym = NULL;
		}
		if (*rc < 0) {
			pthread_mutex_unlock(&ss->sym_lock);
			return NULL;
		}
	}
	return ss;
}

const struct symtab *
store_symtab_acquire(struct store *st, uint64_t sid, int *rc)
{
	struct sstate *ss;

	pthread_rwlock_rdlock(&st->db_lock);
	if ((ss = sstate_lock(st, sid, rc)) == NULL)
		pthread_rwlock_unlock(&st->db_lock);
	return ss ? ss->sym : NULL;
}

void
store_symtab_release(struct store *st, uint64_t sid)
{
	struct sstate *ss = NULL;
	ssize_t pos;

	pthread_rwlock_rdlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0 &&
	    (pos = series_pos(st, st->state[pos]->space)) >= 0)
		ss = st->state[pos];
	pthread_rwlock_unlock(&st->st_lock);
	if (ss)
		pthread_mutex_unlock(&ss->sym_lock);
	pthread_rwlock_unlock(&st->db_lock);
}
