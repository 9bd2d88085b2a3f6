/*
 * outbox: a fleet (--clickhouse) ships every acknowledged profile elsewhere.
 * The outbox is the set of 'O' keys: each is written in the profile's own
 * synced batch, so a profile acknowledged is a profile queued, and the
 * shipper deletes the keys of what the other side acknowledged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
store_queue_enable(struct store *st, uint64_t *pending)
{
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	uint64_t n = 0;

	pthread_rwlock_rdlock(&st->db_lock);
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, "P", 1);
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, "O", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it))
		n++;
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	atomic_store(&st->q_len, n);
	atomic_store(&st->q_on, true);
	pthread_rwlock_unlock(&st->db_lock);
	if (pending)
		*pending = n;
	return 0;
}

uint64_t
store_queue_length(struct store *st)
{
	return atomic_load(&st->q_len);
}

int
store_queue_each_locked(struct store *st, uint64_t after, size_t max, store_queue_fn fn,
    void *arg)
{
	unsigned char lo[9];
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	struct buf gz = { 0 };
	size_t n = 0;
	int rc = 0;

	lo[0] = 'O';
	be64_put(lo + 1, after == UINT64_MAX ? after : after + 1);
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, "P", 1);
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo));
	    rocksdb_iter_valid(it) && n < max && rc == 0; rocksdb_iter_next(it), n++) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const struct series *s;
		struct store_ref ref;
		int grc;

		if (kl != 9)
			continue;
		buf_reset(&gz);
		memset(&ref, 0, sizeof(ref));
		ref.id = be64_get(k + 1);
		grc = store_get_locked(st, ref.id, &ref, &gz, false, false);
		s = grc == 0 ? series_local(st, ref.series) : NULL;
		if (grc == -EIO) {
			rc = -EIO;
			break;
		}
		/* Gone (retention, the size cap): fn hears of it with no data. */
		rc = fn(arg, &ref, s, s ? gz.data : NULL, s ? gz.len : 0);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	buf_free(&gz);
	return rc;
}

int
store_queue_remove(struct store *st, const uint64_t *ids, size_t n)
{
	rocksdb_writebatch_t *wb;
	unsigned char k[9];
	char *dberr = NULL;
	size_t i;
	int rc = 0;

	if (n == 0)
		return 0;
	pthread_rwlock_rdlock(&st->db_lock);
	wb = rocksdb_writebatch_create();
	k[0] = 'O';
	for (i = 0; i < n; i++) {
		be64_put(k + 1, ids[i]);
		rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	rocksdb_writebatch_destroy(wb);
	pthread_rwlock_unlock(&st->db_lock);
	if (dberr) {
		log_warnx("store: outbox: %s", dberr);
		free(dberr);
		rc = -EIO;
	} else {
		uint64_t cur = atomic_load(&st->q_len);

		while (!atomic_compare_exchange_weak(&st->q_len, &cur, cur > n ? cur - n : 0))
			;
	}
	return rc;
}
