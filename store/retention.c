/*
 * retention: deleting what is older than the limits (raw profiles and
 * windows by their own ages) and what is over the disk cap, by key ranges;
 * the retention thread that does it (rt_lock, rt_cond, rt_stop).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "store_int.h"

/* Delete [prefix|sid|lo, prefix|sid|hi) in wb; keys of (1 + 8 + 8) bytes. */
static void
delete_span(rocksdb_writebatch_t *wb, char prefix, uint64_t sid, int64_t lo, int64_t hi)
{
	unsigned char a[17], b[17];

	a[0] = b[0] = (unsigned char)prefix;
	be64_put(a + 1, sid);
	be64_put(b + 1, sid);
	be64_put(a + 9, time_enc(lo));
	be64_put(b + 9, time_enc(hi));
	rocksdb_writebatch_delete_range(wb, (char *)a, sizeof(a), (char *)b, sizeof(b));
}

/*
 * Delete the raw profiles of series sid older than `before` (and windows
 * wholly older than wbefore) by key ranges; only the expired T records are
 * read, for the ids of their I records. *n: profiles deleted.
 */
/* Whether series sid holds any profile or window. */
bool
series_holds_data(struct store *st, uint64_t sid)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	static const char kinds[] = { 'P', 'W' };
	unsigned char k[9];
	bool any = false;
	size_t i;

	for (i = 0; i < sizeof(kinds) && !any; i++) {
		k[0] = (unsigned char)kinds[i];
		be64_put(k + 1, sid);
		rocksdb_iter_seek(it, (char *)k, sizeof(k));
		if (rocksdb_iter_valid(it)) {
			size_t kl;
			const char *key = rocksdb_iter_key(it, &kl);

			any = kl >= sizeof(k) && memcmp(key, k, sizeof(k)) == 0;
		}
	}
	rocksdb_iter_destroy(it);
	return any;
}

/*
 * Retention emptied series sid: it no longer counts against the series
 * limit, and its records go at the next open (not now: a put may be
 * writing to it).
 */
void
note_empty(struct store *st, uint64_t sid)
{
	ssize_t pos;

	if (series_holds_data(st, sid))
		return;
	pthread_rwlock_wrlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0)
		st->state[pos]->empty = true;
	pthread_rwlock_unlock(&st->st_lock);
}

static int
expire_series(struct store *st, uint64_t sid, int64_t before, int64_t wbefore, uint64_t *n,
    bool *wgone)
{
	unsigned char lo[17], hi[17], ikey[9], w0[18], w1[18];
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_iterator_t *it;
	char *dberr = NULL;
	uint64_t here = 0;
	int l, rc = 0;

	/*
	 * The raw cut falls on a 10-minute boundary, so each window is either
	 * all raw or all past it (served from windows kept longer), never half.
	 */
	if (before > WIN_MIN && before < WIN_MAX)
		before = floor_div(before, NS_10M) * NS_10M;
	lo[0] = hi[0] = 'T';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid);
	be64_put(lo + 9, time_enc(INT64_MIN));
	be64_put(hi + 9, time_enc(before));
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (kl != 25)
			continue;
		ikey[0] = 'I';
		memcpy(ikey + 1, k + 17, 8);
		rocksdb_writebatch_delete(wb, (char *)ikey, sizeof(ikey));
		here++;
	}
	rocksdb_iter_destroy(it);
	if (here) {
		delete_span(wb, 'P', sid, INT64_MIN, before);
		delete_span(wb, 'T', sid, INT64_MIN, before);
		delete_span(wb, 'Z', sid, INT64_MIN, before);	/* spans go with their profiles */
		delete_span(wb, 'F', sid, INT64_MIN, before);
		/* Markers of expired spans: their windows keep what they hold. */
		delete_span(wb, 'D', sid, INT64_MIN, before < WIN_MIN ? WIN_MIN : before > WIN_MAX ?
		    WIN_MAX : floor_div(before, NS_10M) * NS_10M);
		/* Hours wholly before the cut no longer hold data. */
		delete_span(wb, 'H', sid, INT64_MIN, floor_div(before, NS_1H));
	}
	if (wbefore > WIN_MAX)
		wbefore = WIN_MAX;
	/* Windows that go now (some may be all that is left of their span). */
	if (wbefore > WIN_MIN + NS_10M && key_in(st, sid, 0, WIN_MIN, wbefore - NS_10M + 1))
		*wgone = true;
	for (l = 0; l < 3 && wbefore > WIN_MIN; l++) {
		w0[0] = w1[0] = 'W';
		be64_put(w0 + 1, sid);
		be64_put(w1 + 1, sid);
		w0[9] = w1[9] = (unsigned char)l;
		be64_put(w0 + 10, time_enc(INT64_MIN));
		/* windows [w, w + len) with w + len <= wbefore */
		be64_put(w1 + 10, time_enc(wbefore - win_len[l] + 1));
		rocksdb_writebatch_delete_range(wb, (char *)w0, sizeof(w0), (char *)w1, sizeof(w1));
	}
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	if (dberr) {
		log_warnx("store: retention: %s", dberr);
		free(dberr);
		rc = -EIO;
	} else if (here || wbefore > WIN_MIN) {
		note_empty(st, sid);
	}
	*n += here;
	return rc;
}

int
store_expire(struct store *st, int64_t before, uint64_t *n)
{
	return store_expire_tiers(st, before, before, n);
}

int
store_expire_tiers_locked(struct store *st, int64_t before, int64_t wbefore, uint64_t *n)
{
	const struct series **all;
	uint64_t count = 0;
	bool wgone = false;
	size_t ns, i;
	int rc;

	if ((rc = store_series(st, &all, &ns)) < 0)
		return rc;
	for (i = 0; i < ns && rc == 0; i++)
		rc = expire_series(st, all[i]->id, before, wbefore, &count, &wgone);
	free(all);
	if (count || wgone)
		note_change(st, INT64_MIN);	/* ranges past and present lose data */
	if (n)
		*n = count;
	return rc;
}

/*
 * Bytes of the database files in the data directory: tables, write-ahead
 * logs, manifests; RocksDB's own text logs (LOG*) are not data.
 */
static uint64_t
dir_bytes(const char *dir)
{
	char path[4096];
	struct dirent *e;
	struct stat sb;
	uint64_t n = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && strncmp(e->d_name, "LOG", 3) != 0 &&
		    stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			n += (uint64_t)sb.st_blocks * 512;
	}
	closedir(d);
	return n;
}

/* The times of the oldest and newest data (raw or windows) of any series; -ENOENT if none. */
static int
oldest_time(struct store *st, int64_t *t, int64_t *newest)
{
	const struct series **all;
	size_t n, i;
	int rc = -ENOENT;

	if (store_series(st, &all, &n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct range_read c = { .st = st, .ro = st->ropts, .sid = all[i]->id };
		int64_t first, last;

		if (series_bounds(&c, &first, &last) < 0)
			continue;
		if (rc < 0 || first < *t)
			*t = first;
		if (rc < 0 || last > *newest)
			*newest = last;
		rc = 0;
	}
	free(all);
	return rc;
}

/*
 * --max-disk: while the data dir is over the cap, delete the oldest hour of
 * data of every series (raw and windows) and compact, so the files shrink.
 */
static void
enforce_max_disk(struct store *st)
{
	uint64_t size = dir_bytes(st->dir), n, total = 0;
	int64_t t = 0, newest = 0, cut = INT64_MIN;
	int rounds = 0;

	pthread_rwlock_rdlock(&st->db_lock);
	while (size > st->rt_max_disk && rounds++ < 10000 && oldest_time(st, &t, &newest) == 0) {
		/* Hours, within the windows' domain; a profile at a time outside, alone. */
		cut = t >= WIN_MIN && t < WIN_MAX ? (floor_div(t, NS_1H) + 1) * NS_1H :
		    t < INT64_MAX ? t + 1 : t;
		/* The newest hour stays: a cap below it would delete all that arrives. */
		if (newest >= WIN_MIN && newest < WIN_MAX ? cut > floor_div(newest, NS_1H) * NS_1H :
		    cut > newest) {
			log_warnx("retention: --max-disk %llu bytes is below what the newest hour "
			    "of data takes (%llu bytes)", (unsigned long long)st->rt_max_disk,
			    (unsigned long long)size);
			break;
		}
		if (store_expire_tiers(st, cut, cut, &n) < 0)
			break;
		total += n;
		rocksdb_compact_range(st->db, NULL, 0, NULL, 0);
		size = dir_bytes(st->dir);
	}
	pthread_rwlock_unlock(&st->db_lock);
	if (total)
		log_info("retention: --max-disk: deleted %llu profiles (data before %lld s); "
		    "%llu bytes on disk", (unsigned long long)total, (long long)(cut / 1000000000),
		    (unsigned long long)size);
}

static void *
retention_main(void *arg)
{
	struct store *st = arg;
	struct timespec ts;
	uint64_t n;
	int64_t now, wkeep;

	pthread_mutex_lock(&st->rt_lock);
	while (!st->rt_stop) {
		pthread_mutex_unlock(&st->rt_lock);
		now = clock_now_ns();
		wkeep = st->rt_keep_windows > st->rt_keep ? st->rt_keep_windows : st->rt_keep;
		/* Windows outliving the raw profiles take in what is pending first. */
		if (st->rt_keep && wkeep > st->rt_keep)
			store_compact(st, NULL);
		if (st->rt_keep && store_expire_tiers(st, now - st->rt_keep, now - wkeep, &n) == 0 &&
		    n)
			log_info("retention: deleted %llu profiles older than %lld s",
			    (unsigned long long)n, (long long)(st->rt_keep / 1000000000));
		if (st->rt_max_disk)
			enforce_max_disk(st);
		pthread_mutex_lock(&st->rt_lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		/* The size cap is checked more often than ages change. */
		ts.tv_sec += st->rt_max_disk ? 5 : 60;
		while (!st->rt_stop &&
		    pthread_cond_timedwait(&st->rt_cond, &st->rt_lock, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&st->rt_lock);
	return NULL;
}

int
store_set_retention(struct store *st, int64_t keep_ns)
{
	return store_set_limits(st, keep_ns, 0, 0);
}

int
store_set_limits(struct store *st, int64_t keep_raw, int64_t keep_windows, uint64_t max_disk)
{
	if ((keep_raw <= 0 && max_disk == 0) || st->rt_running)
		return 0;
	st->rt_keep = keep_raw > 0 ? keep_raw : 0;
	st->rt_keep_windows = keep_windows > 0 ? keep_windows : 0;
	st->rt_max_disk = max_disk;
	if (pthread_create(&st->rt_thread, NULL, retention_main, st) != 0)
		return -errno;
	st->rt_running = true;
	return 0;
}
