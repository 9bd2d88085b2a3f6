/*
 * cache: bytes by key that another layer keeps in the store's database, the
 * 'C' keys: the fleet's stack frames by address (cluster/read.c), which
 * never change, so a reader that restarts does not ask ClickHouse for them
 * again. Never listed, shipped or expired with profiles. The key 'C' alone
 * holds how many bytes of keys and values were put since the cache was last
 * emptied (u64, big-endian); past the cap (STORE_CACHE_MAX, at most an
 * eighth of --max-disk), the cache is emptied whole (one range deletion) and
 * fills again: simple, and rare.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define CACHE_KEY_MAX	256

/* 'C' then key into k (CACHE_KEY_MAX + 1 bytes); -EINVAL when too long or empty. */
static int
cache_key(const void *key, size_t klen, unsigned char *k)
{
	if (klen == 0 || klen > CACHE_KEY_MAX)
		return -EINVAL;
	k[0] = 'C';
	memcpy(k + 1, key, klen);
	return 0;
}

int
store_cache_get(struct store *st, const void *key, size_t klen, char **val, size_t *vlen)
{
	unsigned char k[CACHE_KEY_MAX + 1];
	char *dberr = NULL, *v;
	size_t vl = 0;

	*val = NULL;
	*vlen = 0;
	if (cache_key(key, klen, k) < 0)
		return -EINVAL;
	pthread_rwlock_rdlock(&st->db_lock);
	v = rocksdb_get(st->db, st->ropts, (char *)k, klen + 1, &vl, &dberr);
	pthread_rwlock_unlock(&st->db_lock);
	if (dberr) {
		log_warnx("store: cache: %s", dberr);
		free(dberr);
		return -EIO;
	}
	if (v == NULL)
		return -ENOENT;
	*val = v;
	*vlen = vl;
	return 0;
}

/* The bytes counted under 'C' (0 when none; UINT64_MAX, so dropped, when unreadable); db_lock held. */
static uint64_t
cache_bytes(struct store *st)
{
	char *dberr = NULL, *v;
	size_t vl = 0;
	uint64_t n = 0;

	v = rocksdb_get(st->db, st->ropts, "C", 1, &vl, &dberr);
	if (dberr || (v && vl != 8))
		n = UINT64_MAX;
	else if (v)
		n = be64_get((const unsigned char *)v);
	free(v);
	free(dberr);
	return n;
}

int
store_cache_put(struct store *st, const struct store_kv *kv, size_t n)
{
	unsigned char k[CACHE_KEY_MAX + 1], cnt[8];
	rocksdb_writebatch_t *wb;
	char *dberr = NULL;
	uint64_t add = 0, have, max;
	size_t i;

	/* Under --max-disk, an eighth of it at most: profiles are what the cap keeps. */
	max = atomic_load(&st->cache_max);
	if (st->rt_max_disk && st->rt_max_disk / 8 < max)
		max = st->rt_max_disk / 8;
	for (i = 0; i < n; i++) {
		if (kv[i].klen == 0 || kv[i].klen > CACHE_KEY_MAX)
			return -EINVAL;
		add += kv[i].klen + kv[i].vlen;
	}
	if (n == 0 || add > max)
		return 0;	/* nothing, or more than the cache holds: not kept */
	pthread_mutex_lock(&st->cache_lock);
	pthread_rwlock_rdlock(&st->db_lock);
	if (atomic_load(&st->full)) {
		pthread_rwlock_unlock(&st->db_lock);
		pthread_mutex_unlock(&st->cache_lock);
		return -ENOSPC;
	}
	have = cache_bytes(st);
	wb = rocksdb_writebatch_create();
	if (have > max || have + add > max) {
		rocksdb_writebatch_delete_range(wb, "C", 1, "D", 1);
		have = 0;
	}
	for (i = 0; i < n; i++) {
		cache_key(kv[i].key, kv[i].klen, k);
		rocksdb_writebatch_put(wb, (char *)k, kv[i].klen + 1, kv[i].val, kv[i].vlen);
	}
	be64_put(cnt, have + add);
	rocksdb_writebatch_put(wb, "C", 1, (char *)cnt, sizeof(cnt));
	rocksdb_write(st->db, st->wasync, wb, &dberr);
	rocksdb_writebatch_destroy(wb);
	pthread_rwlock_unlock(&st->db_lock);
	pthread_mutex_unlock(&st->cache_lock);
	/* A full disk is told once and recovered from as for profiles. */
	return dberr ? store_write_error(st, dberr, NULL) : 0;
}

void
store_set_cache_max(struct store *st, uint64_t bytes)
{
	atomic_store(&st->cache_max, bytes);
}
