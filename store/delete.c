/*
 * delete: removing stored profiles on request (rm in the mount, DELETE over
 * HTTP). One profile goes with its P, T, I and outbox keys, and its
 * 10-minute window gets a "rebuild from raw" marker ('D' with no time; the
 * key layout is in store.c): reads stop using that window, its hour and its
 * day at once, and the compactor rebuilds them from what is left, so every
 * merge keeps the exact sums of the remaining profiles. A whole series goes
 * by key ranges (profiles, totals, markers, windows, hours) plus the I and
 * outbox keys of its profiles; the series' name stays in the index, empty,
 * as after retention, and is dropped at the next open. Symbols ('Y') are
 * shared by the service's series and stay.
 *
 * Every deletion is one synced batch written while the compactor is held
 * off, so a window it computed before cannot come back; the caches learn it
 * through the store's change log (note_change), like a put.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "base.h"
#include "storeint.h"

#define NS_10M		(INT64_C(600) * 1000000000)
#define NS_1D		(INT64_C(86400) * 1000000000)
/* The windows' domain (store.c): profiles outside have no window. */
#define WIN_MIN		(-(INT64_C(1) << 62) / NS_1D * NS_1D)
#define WIN_MAX		((INT64_C(1) << 62) / NS_1D * NS_1D)

static void
put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static uint64_t
get64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint64_t
tenc(int64_t t)
{
	return (uint64_t)t ^ (UINT64_C(1) << 63);
}

static int64_t
floor10m(int64_t t)
{
	return t / NS_10M * NS_10M - (t % NS_10M < 0 ? NS_10M : 0);
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

/* store_delete_profile() of this store's own data. */
static int
delete_local(struct store *st, uint64_t id, struct store_ref *ref, struct buf *err)
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

	store_write_begin(st);
	ik[0] = 'I';
	put64(ik + 1, id);
	v = rocksdb_get(store_db(st), ro, (char *)ik, sizeof(ik), &vl, &dberr);
	if (dberr || v == NULL || vl < 16) {
		if (err)
			buf_printf(err, dberr ? "database read failed: %s" : "no such profile",
			    dberr);
		rc = dberr ? -EIO : -ENOENT;
		goto out;
	}
	iv = (const unsigned char *)v;
	sid = get64(iv);
	t = (int64_t)(get64(iv + 8) ^ (UINT64_C(1) << 63));
	k[0] = 'P';
	put64(k + 1, sid);
	memcpy(k + 9, iv + 8, 8);
	put64(k + 17, id);
	rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	k[0] = 'T';
	rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
	rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
	ik[0] = 'O';
	if (key_exists(store_db(st), ro, ik, sizeof(ik))) {
		rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
		queued = 1;
	}
	if (t >= WIN_MIN && t < WIN_MAX) {
		/* Its window, hour and day are rebuilt without it (replaces a pending marker). */
		k[0] = 'D';
		put64(k + 9, tenc(floor10m(t)));
		rocksdb_writebatch_put(wb, (char *)k, sizeof(k), "", 0);
	}
	if ((rc = store_write_batch(st, wb, err)) == 0) {
		if (ref) {
			memset(ref, 0, sizeof(*ref));
			ref->id = id;
			ref->series = sid;
			ref->time = t;
		}
		store_note_deleted(st, sid, t, queued);
	}
out:
	store_write_end(st);
	free(v);
	free(dberr);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

int
store_delete_profile(struct store *st, uint64_t id, struct store_ref *ref, struct buf *err)
{
	const struct store_remote *rm = store_remote_get(st);
	uint64_t local = 0;
	int rc;

	if (rm == NULL || rm->remove_profile == NULL)
		return delete_local(st, id, ref, err);
	/* A fleet: the id is the fleet's; this host's copy goes too. */
	if ((rc = rm->remove_profile(rm->arg, id, &local, err)) < 0)
		return rc;
	if (local && (rc = delete_local(st, local, ref, NULL)) < 0 && rc != -ENOENT)
		log_warnx("store: profile %llu was deleted in the fleet but not here: %s",
		    (unsigned long long)local, strerror(-rc));
	if (ref) {
		memset(ref, 0, sizeof(*ref));
		ref->id = id;
	}
	return 0;
}

/* Delete [prefix|sid, prefix|sid+1) in wb: every key of series sid of that kind. */
static void
delete_kind(rocksdb_writebatch_t *wb, char prefix, uint64_t sid)
{
	unsigned char a[9], b[9];

	a[0] = b[0] = (unsigned char)prefix;
	put64(a + 1, sid);
	put64(b + 1, sid + 1);
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
	static const char kinds[] = { 'P', 'T', 'D', 'W', 'H' };
	size_t i;
	int rc;

	store_write_begin(st);
	lo[0] = hi[0] = 'T';
	put64(lo + 1, sid);
	put64(hi + 1, sid + 1);
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(store_db(st), ro);
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
		if (key_exists(store_db(st), ro, ik, sizeof(ik))) {
			rocksdb_writebatch_delete(wb, (char *)ik, sizeof(ik));
			queued++;
		}
		here++;
	}
	rocksdb_iter_destroy(it);
	for (i = 0; i < sizeof(kinds); i++)
		delete_kind(wb, kinds[i], sid);
	if ((rc = store_write_batch(st, wb, err)) == 0) {
		store_note_deleted(st, sid, INT64_MIN, queued);
		*n += here;
	}
	store_write_end(st);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

struct remote_arg {
	const struct query	*q;
	const struct series	**s;
	size_t			 n, cap;
};

static int
collect(void *arg, const struct series *s)
{
	struct remote_arg *a = arg;

	if (!query_match(a->q, s))
		return 0;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->s = xreallocarray(a->s, a->cap, sizeof(*a->s));
	}
	a->s[a->n++] = s;
	return 0;
}

int
store_delete_series(struct store *st, const struct query *q, uint64_t *nseries,
    uint64_t *nprofiles, struct buf *err)
{
	const struct store_remote *rm;
	const struct series **all;
	uint64_t ns = 0, np = 0;
	size_t n, i;
	int rc;

	if ((rc = store_local_series(st, &all, &n)) < 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		uint64_t before = np;

		if (!query_match(q, all[i]))
			continue;
		rc = delete_one_series(st, all[i]->id, &np, err);
		ns += rc == 0 && np > before;
	}
	free(all);
	if (rc == 0 && (rm = store_remote_get(st)) != NULL && rm->remove_series != NULL) {
		struct remote_arg ra = { .q = q };
		uint64_t nr = 0;

		/* The fleet's series (this host's among them) go there. */
		rc = rm->series_each(rm->arg, q->service, q->type, collect, &ra);
		for (i = 0; i < ra.n && rc == 0; i++)
			if ((rc = rm->remove_series(rm->arg, ra.s[i], err)) == 0)
				nr++;
		free(ra.s);
		ns = nr > ns ? nr : ns;
	}
	if (nseries)
		*nseries = ns;
	if (nprofiles)
		*nprofiles = np;
	return rc;
}
