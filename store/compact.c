/*
 * compact: the compactor thread. It adds the profiles that dirty markers
 * ('D') name to their 10-minute, hourly and daily windows and deletes the
 * markers in the same batch. cp_run makes passes one at a time; rt_lock
 * and cp_cond wake the thread (cp_kick, cp_stop).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

/* Wake the compactor: new markers wait. */
void
compact_kick(struct store *st)
{
	/* A kick already pending covers this put (a stale read only costs a kick). */
	if (__atomic_load_n(&st->cp_kick, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&st->rt_lock);
	__atomic_store_n(&st->cp_kick, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&st->cp_cond);
	pthread_mutex_unlock(&st->rt_lock);
}

/* A raw profile that cannot be read stays out of the windows, as of reads. */
static int
skip_bad(void *arg, const struct store_ref *ref, const char *why)
{
	(void)arg;
	log_warnx("store: profile %016llx left out of the windows: %s",
	    (unsigned long long)ref->id, why);
	return 0;
}

/* A dirty marker as the compactor collects it. */
struct mark {
	unsigned char	 key[25];
	bool		 has_time;	/* no time: rebuild the window from raw profiles */
	int64_t		 time;
};

/*
 * Bring the windows of one day of one series up to date with its markers
 * ms[0..n) (seen in the snapshot ro), and delete those markers in the same
 * batch. Invariant: a window holds exactly the profiles of its span that
 * have no marker. So a marker with a time adds its profile to the 10-minute
 * window, its hour and its day (cost: the windows, not the day's profiles);
 * a marker without one (or a window that does not decode) has the window
 * rebuilt from the raw profiles, and its hour and day from their parts.
 */
static int
compact_day(struct store *st, rocksdb_readoptions_t *ro, uint64_t sid, int64_t day,
    const struct mark *ms, size_t n)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	struct buf enc10[6 * 24], enc1h[24], delta10[6 * 24];
	bool touched[6 * 24] = { false }, rebuild[6 * 24] = { false }, rebuilt1h[24] = { false };
	bool touched1h[24] = { false }, rebuilt_day = false;
	struct agg *a = NULL, *d;
	struct range_read c = { .st = st, .ro = ro, .sid = sid, .bad = skip_bad,
	    .acut = INT64_MIN };
	unsigned char pk[25];
	char *dberr = NULL;
	size_t i, j, slot;
	int rc = 0;

	memset(enc10, 0, sizeof(enc10));
	memset(enc1h, 0, sizeof(enc1h));
	memset(delta10, 0, sizeof(delta10));
	/* The profiles each marked 10-minute window gains. */
	for (i = 0; i < n && rc == 0; i = j) {
		int64_t w = time_dec(be64_get(ms[i].key + 9));

		slot = (size_t)((w - day) / NS_10M);
		for (j = i; j < n && memcmp(ms[j].key + 9, ms[i].key + 9, 8) == 0; j++)
			;
		if (slot >= 6 * 24)
			continue;
		touched[slot] = touched1h[slot / 6] = true;
		if ((d = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		for (; i < j && rc == 0; i++) {
			if (!ms[i].has_time) {
				rebuild[slot] = true;
				continue;
			}
			pk[0] = 'P';
			memcpy(pk + 1, ms[i].key + 1, 8);
			be64_put(pk + 9, time_enc(ms[i].time));
			memcpy(pk + 17, ms[i].key + 17, 8);
			/* Gone (retention) or unreadable: reads leave it out too. */
			if ((rc = value_add(st, ro, pk, sizeof(pk), d)) == -EINVAL)
				rc = 0;
		}
		if (rc == 0)
			rc = agg_encode(d, &delta10[slot]);
		agg_free(d);
	}
	for (slot = 0; slot < 6 * 24 && rc == 0; slot++) {
		int64_t w = day + (int64_t)slot * NS_10M;

		if (!touched[slot])
			continue;
		if ((c.a = a = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (!rebuild[slot] && window_get(st, ro, sid, 0, w, a) < 0) {
			agg_free(a);	/* a window that does not decode: from raw */
			if ((c.a = a = agg_create()) == NULL) {
				rc = -ENOMEM;
				break;
			}
			rebuild[slot] = true;
		}
		rc = rebuild[slot] ? read_raw(&c, w, w + NS_10M) :
		    agg_add(a, delta10[slot].data, delta10[slot].len, NULL);
		if (rc == 0 && (rc = window_put(wb, sid, 0, w, a)) == 0)
			rc = agg_encode(a, &enc10[slot]);
		if (rebuild[slot])
			rebuilt1h[slot / 6] = true;
		agg_free(a);
		a = NULL;
	}
	/* Hours: their deltas, or their six parts when one was rebuilt. */
	for (i = 0; i < 24 && rc == 0; i++) {
		int64_t h = day + (int64_t)i * NS_1H;

		if (!touched1h[i])
			continue;
		if ((a = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (!rebuilt1h[i] && window_get(st, ro, sid, 1, h, a) < 0) {
			agg_free(a);
			if ((a = agg_create()) == NULL) {
				rc = -ENOMEM;
				break;
			}
			rebuilt1h[i] = true;
		}
		for (j = 0; j < 6 && rc == 0; j++) {
			slot = i * 6 + j;
			if (rebuilt1h[i])
				rc = touched[slot] ? agg_add(a, enc10[slot].data, enc10[slot].len, NULL) :
				    window_get(st, ro, sid, 0, h + (int64_t)j * NS_10M, a);
			else if (touched[slot])
				rc = agg_add(a, delta10[slot].data, delta10[slot].len, NULL);
		}
		if (rc == 0 && (rc = window_put(wb, sid, 1, h, a)) == 0)
			rc = agg_encode(a, &enc1h[i]);
		if (rebuilt1h[i])
			rebuilt_day = true;
		agg_free(a);
		a = NULL;
	}
	/* The day likewise. */
	if (rc == 0 && (a = agg_create()) == NULL)
		rc = -ENOMEM;
	if (rc == 0 && !rebuilt_day && window_get(st, ro, sid, 2, day, a) < 0) {
		agg_free(a);
		if ((a = agg_create()) == NULL)
			rc = -ENOMEM;
		rebuilt_day = true;
	}
	for (i = 0; i < 24 && rc == 0; i++) {
		if (rebuilt_day)
			rc = touched1h[i] ? agg_add(a, enc1h[i].data, enc1h[i].len, NULL) :
			    window_get(st, ro, sid, 1, day + (int64_t)i * NS_1H, a);
		else
			for (j = 0; j < 6 && rc == 0; j++)
				if (touched[i * 6 + j])
					rc = agg_add(a, delta10[i * 6 + j].data,
					    delta10[i * 6 + j].len, NULL);
	}
	if (rc == 0)
		rc = window_put(wb, sid, 2, day, a);
	agg_free(a);
	for (i = 0; rc == 0 && i < n; i++)
		rocksdb_writebatch_delete(wb, (const char *)ms[i].key, 25);
	/* Derived data: not synced; a crash keeps the markers and redoes it. */
	if (rc == 0) {
		rocksdb_write(st->db, st->wasync, wb, &dberr);
		if (dberr)
			rc = store_write_error(st, dberr, NULL);
	}
	rocksdb_writebatch_destroy(wb);
	for (i = 0; i < 6 * 24; i++) {
		buf_free(&enc10[i]);
		buf_free(&delta10[i]);
	}
	for (i = 0; i < 24; i++)
		buf_free(&enc1h[i]);
	return rc;
}

static int
store_compact_locked(struct store *st, uint64_t *ndays)
{
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(st->db);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	struct buf marks = { 0 };
	uint64_t cur_sid = 0, days = 0;
	int64_t cur_day = 0;
	int rc = 0;

	rocksdb_readoptions_set_snapshot(ro, snap);
	it = rocksdb_create_iterator(st->db, ro);
	/* Markers sort by series then window: one day of one series at a time. */
	for (rocksdb_iter_seek(it, "D", 1);; rocksdb_iter_next(it)) {
		const unsigned char *k = NULL;
		size_t kl = 0, vl;
		uint64_t sid = 0;
		int64_t day = 0;
		bool valid = rocksdb_iter_valid(it);
		struct mark m;

		if (valid) {
			k = (const unsigned char *)rocksdb_iter_key(it, &kl);
			valid = kl == 25 && k[0] == 'D';
		}
		if (valid) {
			sid = be64_get(k + 1);
			day = floor_div(time_dec(be64_get(k + 9)), NS_1D) * NS_1D;
		}
		if (marks.len && (!valid || sid != cur_sid || day != cur_day)) {
			rc = compact_day(st, ro, cur_sid, cur_day, (const struct mark *)marks.data,
			    marks.len / sizeof(struct mark));
			if (rc < 0)
				break;
			days++;
			buf_reset(&marks);
			atomic_fetch_add(&st->n_compacted, 1);
		}
		if (!valid)
			break;
		memset(&m, 0, sizeof(m));
		memcpy(m.key, k, 25);
		{
			const unsigned char *v = (const unsigned char *)rocksdb_iter_value(it, &vl);

			if (vl == 8) {
				m.has_time = true;
				m.time = time_dec(be64_get(v));
			}
		}
		if ((rc = buf_add(&marks, &m, sizeof(m))) < 0)
			break;
		cur_sid = sid;
		cur_day = day;
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(st->db, snap);
	buf_free(&marks);
	if (ndays)
		*ndays = days;
	atomic_store(&st->n_pending, days);
	return rc;
}

int
store_compact(struct store *st, uint64_t *ndays)
{
	int rc;

	pthread_mutex_lock(&st->cp_run);
	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_compact_locked(st, ndays);
	pthread_rwlock_unlock(&st->db_lock);
	pthread_mutex_unlock(&st->cp_run);
	return rc;
}

void *
compact_main(void *arg)
{
	struct store *st = arg;
	struct timespec ts;
	uint64_t n = 0;

	pthread_mutex_lock(&st->rt_lock);
	while (!st->cp_stop) {
		__atomic_store_n(&st->cp_kick, false, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&st->rt_lock);
		if (atomic_load(&st->full))
			n = store_recover(st) < 0;	/* look again in a second */
		else if (store_compact(st, &n) < 0) {
			log_warnx("store: compaction failed; retrying in a second");
			n = 1;
		}
		pthread_mutex_lock(&st->rt_lock);
		/* Batch what arrives within two seconds; idle otherwise. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		while (!st->cp_stop && pthread_cond_timedwait(&st->cp_cond, &st->rt_lock, &ts) == 0)
			;
		/*
		 * A pass that found work goes again: the next says it caught up.
		 * Idle, it wakes now and then to free idle symbol tables.
		 */
		while (!st->cp_stop && !__atomic_load_n(&st->cp_kick, __ATOMIC_RELAXED) && n == 0) {
			pthread_mutex_unlock(&st->rt_lock);
			symtab_sweep_due(st);
			pthread_mutex_lock(&st->rt_lock);
			if (st->cp_stop || __atomic_load_n(&st->cp_kick, __ATOMIC_RELAXED))
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += budget_pressed() ? SYM_IDLE_PRESSED_NS / 1000000000 :
			    SYM_SWEEP_NS / 1000000000;
			pthread_cond_timedwait(&st->cp_cond, &st->rt_lock, &ts);
		}
	}
	pthread_mutex_unlock(&st->rt_lock);
	return NULL;
}
