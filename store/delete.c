/*
 * delete: removing stored profiles on request (rm in the mount, DELETE over
 * HTTP). One profile goes with its P, T, I and outbox keys, and its
 * 10-minute window gets a "rebuild from raw" marker ('D' with no time; the
 * key layout is in store_int.h): reads stop using that window, its hour and its
 * day at once, and the compactor rebuilds them from what is left, so every
 * merge keeps the exact sums of the remaining profiles. A whole series goes
 * by key ranges (profiles, totals, markers, windows, hours, its last
 * snapshot of totals) plus the I and outbox keys of its profiles; the
 * series' name stays in the index, empty, as after retention, and is
 * dropped at the next open. Symbols ('Y') are
 * shared by the service's series and stay.
 *
 * Every deletion is one synced batch written while the compactor is held
 * off, so a window it computed before cannot come back; the caches learn it
 * through the store's change log (note_change), like a put.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/*
 * Writes that exclude the compactor (it must not write windows read before
 * the deletion) and hold the database open: cp_run before db_lock, the
 * store's lock order.
 */
static void
write_begin(struct store *st)
{
	pthread_mutex_lock(&st->cp_run);
	pthread_rwlock_rdlock(&st->db_lock);
}

static void
write_end(struct store *st)
{
	pthread_rwlock_unlock(&st->db_lock);
	pthread_mutex_unlock(&st->cp_run);
}

/* Write wb synced; -errno with the reason in err (optional). */
static int
write_batch(struct store *st, rocksdb_writebatch_t *wb, struct buf *err)
{
	char *dberr = NULL;

	if (atomic_load(&st->full)) {
		if (err)
			buf_adds(err, "the data directory's file system is full");
		return -ENOSPC;
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	return dberr ? store_write_error(st, dberr, err) : 0;
}

/*
 * Tell the caches, the windows, the series index and the outbox count that
 * data of series sid from time tmin on went away (unqueued: outbox keys
 * deleted).
 */
static void
note_deleted(struct store *st, uint64_t sid, int64_t tmin, uint64_t unqueued)
{
	uint64_t cur = atomic_load(&st->q_len);

	/* Clamped as in store_queue_remove(): the shipper may count it too. */
	while (unqueued && !atomic_compare_exchange_weak(&st->q_len, &cur,
	    cur > unqueued ? cur - unqueued : 0))
		;
	note_change(st, tmin);
	note_empty(st, sid);
	compact_kick(st);
}

/* Whether key k exists. */
static bool
key_exists(rocksdb_t *db, rocksdb_readoptions_t *ro, const unsigned char *k, size_t kl)
{
	char *dberr = NULL, *v;
	size_t vl;

	v = rocksdb_get(db, ro, (const char *)k, kl, &vl, &dberr);
	free(dberr);
	free(v);
	return v != NULL;
}

int
store_delete_profile(struct store *st, uint64_t id, struct store_ref *ref, struct buf *err)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	unsigned char ik[9], k[25];
	const unsigned char *iv;
	char *dberr = NULL, *v;
	uint64_t sid, queued = 0;
	int64_t t;
	size_t vl;
	int rc;

	write_begin(st);
	ik[0] = 'I';
	be64_put(ik + 1, id);
	v = rocksdb_get(st->db, ro, (char *)ik, sizeof(ik), &vl, &dberr);
	if (dberr || v == NULL || vl < 16) {
		if (err)
			buf_printf(err, dberr ? "database read failed: %s" : "no such profile",
			    dberr);
		rc = dberr ? -EIO : -ENOENT;
		goto out;
	}
	iv = (const unsigned char *)v;
	sid = be64_get(iv);
	t = time_dec(be64_get(iv + 8));
	k[0] = 'P';
	be64_put(k + 1, sid);
	memcpy(k + 9, iv + 8, 8);
	be64_put(k + 17, id);
	rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	k[0] = 'T';
	rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	k[0] = 'Z';	/* its spans and their filter */
	rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	k[0] = 'F';
	rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
	ik[0] = 'O';
	if (key_exists(st->db, ro, ik, sizeof(ik))) {
		rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
		queued = 1;
	}
	if (t >= WIN_MIN && t < WIN_MAX) {
		/* Its window, hour and day are rebuilt without it (replaces a pending marker). */
		k[0] = 'D';
		be64_put(k + 9, time_enc(floor_div(t, NS_10M) * NS_10M));
		rocksdb_writebatch_put(wb, (char *)k, sizeof(k), "", 0);
	}
	if ((rc = write_batch(st, wb, err)) == 0) {
		if (ref) {
			memset(ref, 0, sizeof(*ref));
			ref->id = id;
			ref->series = sid;
			ref->time = t;
		}
		note_deleted(st, sid, t, queued);
	}
out:
	write_end(st);
	free(v);
	free(dberr);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

/* Delete [prefix|sid, prefix|sid+1) in wb: every key of series sid of that kind. */
static void
delete_kind(rocksdb_writebatch_t *wb, char prefix, uint64_t sid)
{
	unsigned char a[9], b[9];

	a[0] = b[0] = (unsigned char)prefix;
	be64_put(a + 1, sid);
	be64_put(b + 1, sid + 1);
	rocksdb_writebatch_delete_range(wb, (char *)a, sizeof(a), (char *)b, sizeof(b));
}

/* Everything series sid holds; *n: its profiles. */
static int
delete_one_series(struct store *st, uint64_t sid, uint64_t *n, struct buf *err)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_iterator_t *it;
	unsigned char lo[9], hi[9], ik[9];
	uint64_t here = 0, queued = 0;
	static const char kinds[] = { 'P', 'T', 'D', 'W', 'H', 'L', 'Z', 'F' };
	size_t i;
	int rc;

	write_begin(st);
	lo[0] = hi[0] = 'T';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid + 1);
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (kl != 25)
			continue;
		ik[0] = 'I';
		memcpy(ik + 1, k + 17, 8);
		rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
		ik[0] = 'O';
		if (key_exists(st->db, ro, ik, sizeof(ik))) {
			rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
			queued++;
		}
		here++;
	}
	rocksdb_iter_destroy(it);
	for (i = 0; i < sizeof(kinds); i++)
		delete_kind(wb, kinds[i], sid);
	/* A snapshot put meanwhile must not bring the 'L' base back. */
	pthread_mutex_lock(&st->inc_lock);
	rc = write_batch(st, wb, err);
	pthread_mutex_unlock(&st->inc_lock);
	if (rc == 0) {
		note_deleted(st, sid, INT64_MIN, queued);
		*n += here;
	}
	write_end(st);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

int
store_delete_series(struct store *st, const struct query *q, uint64_t *nseries,
    uint64_t *nprofiles, struct buf *err)
{
	const struct series **all;
	uint64_t ns = 0, np = 0;
	size_t n, i;
	int rc;

	if ((rc = store_series(st, &all, &n)) < 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		bool had;

		if (!query_match(q, all[i]))
			continue;
		/* A label set counts if it held data: profiles, or windows past retention. */
		had = series_holds_data(st, all[i]->id);
		rc = delete_one_series(st, all[i]->id, &np, err);
		ns += rc == 0 && had;
	}
	free(all);
	if (nseries)
		*nseries = ns;
	if (nprofiles)
		*nprofiles = np;
	return rc;
}
