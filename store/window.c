/*
 * window: the pre-aggregated windows of 10 minutes, 1 hour and 1 day ('W'
 * keys). Reading a range sums the clean windows that fit and the raw
 * profiles elsewhere (struct range_read, from one snapshot); past the raw
 * retention, the 10-minute windows stand for the profiles they summed. The
 * compactor (compact.c) keeps them up to date.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

const int64_t win_len[3] = { NS_10M, NS_1H, NS_1D };

/* Whether a marker lies in [w, w + len). */
static bool
is_dirty(const struct range_read *c, int64_t w, int64_t len)
{
	size_t lo = 0, hi = c->ndirty, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->dirty[mid] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ndirty && c->dirty[lo] - w < len;
}

/* Add the raw profiles of [from, to). */
int
read_raw(struct range_read *c, int64_t from, int64_t to)
{
	unsigned char lo[17], hi[17];
	rocksdb_iterator_t *it;
	int rc = 0;

	if (from >= to)
		return 0;
	if (from < c->acut) {
		if ((rc = past_windows(c, from, to < c->acut ? to : c->acut, NULL, NULL)) != 0)
			return rc;
		if ((from = c->acut) >= to)
			return 0;
	}
	lo[0] = hi[0] = 'P';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid);
	be64_put(lo + 9, time_enc(from));
	be64_put(hi + 9, time_enc(to));
	it = rocksdb_create_iterator(c->st->db, c->ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it);
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;

		if (kl != 25 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		v = rocksdb_iter_value(it, &vl);
		buf_reset(&c->err);
		if ((rc = agg_add(c->a, v, vl, &c->err)) == -EINVAL && c->bad) {
			struct store_ref r = { .id = be64_get(k + 17), .series = c->sid,
			    .time = time_dec(be64_get(k + 9)) };
			char why[200];

			snprintf(why, sizeof(why), "stored profile cannot be decoded: %s",
			    c->err.data ? c->err.data : "");
			rc = c->bad(c->arg, &r, why);
		}
		if (rc != 0)
			break;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/*
 * Add [from, to) using windows of `level` and finer where they are clean,
 * raw profiles elsewhere: cost grows with log(to - from).
 */
int
read_cover(struct range_read *c, int64_t from, int64_t to, int level)
{
	unsigned char lo[18], hi[18];
	rocksdb_iterator_t *it;
	int64_t len, s, e, w;
	size_t i;
	int rc = 0;

	if (from >= to)
		return 0;
	if (level < 0)
		return read_raw(c, from, to);
	len = win_len[level];
	s = floor_div(from, len) * len;
	if (s < from)
		s += len;
	e = floor_div(to, len) * len;
	if (s >= e)
		return read_cover(c, from, to, level - 1);
	if ((rc = read_cover(c, from, s, level - 1)) != 0)
		return rc;
	/* The windows stored in [s, e): the clean ones count as they are. */
	lo[0] = hi[0] = 'W';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid);
	lo[9] = hi[9] = (unsigned char)level;
	be64_put(lo + 10, time_enc(s));
	be64_put(hi + 10, time_enc(e));
	it = rocksdb_create_iterator(c->st->db, c->ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;

		if (kl != 18 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		w = time_dec(be64_get(k + 10));
		if (is_dirty(c, w, len))
			continue;
		v = rocksdb_iter_value(it, &vl);
		buf_reset(&c->err);
		if ((rc = agg_add(c->a, v, vl, &c->err)) < 0)
			log_warnx("store: window of series %llu at level %d is corrupt (%s)",
			    (unsigned long long)c->sid, level, c->err.data ? c->err.data : "");
	}
	rocksdb_iter_destroy(it);
	if (rc != 0)
		return rc;
	/* Marked windows: one level finer (each marked span once). */
	for (i = 0, w = INT64_MIN; i < c->ndirty && rc == 0; i++) {
		int64_t d = floor_div(c->dirty[i], len) * len;

		if (d < s || d >= e || d == w)
			continue;
		w = d;
		rc = read_cover(c, d, d + len, level - 1);
	}
	if (rc == 0)
		rc = read_cover(c, e, to, level - 1);
	return rc;
}

/* The first and last time of series sid's profiles (in the snapshot); -ENOENT if none. */
static int
series_extent(struct range_read *c, int64_t *first, int64_t *last)
{
	unsigned char lo[9], hi[9];
	rocksdb_iterator_t *it = rocksdb_create_iterator(c->st->db, c->ro);
	size_t kl;
	const unsigned char *k;
	int rc = -ENOENT;

	lo[0] = hi[0] = 'T';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid + 1);
	rocksdb_iter_seek(it, (char *)lo, sizeof(lo));
	if (rocksdb_iter_valid(it) && (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) &&
	    kl == 25 && memcmp(k, lo, 9) == 0) {
		*first = time_dec(be64_get(k + 9));
		rocksdb_iter_seek_for_prev(it, (char *)hi, sizeof(hi));
		if (rocksdb_iter_valid(it) &&
		    (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) && kl == 25 &&
		    memcmp(k, lo, 9) == 0) {
			*last = time_dec(be64_get(k + 9));
			rc = 0;
		}
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/* The start of series sid's first (or last) window of `level`; -ENOENT if none. */
static int
window_edge(struct range_read *c, int level, bool last, int64_t *w)
{
	unsigned char k0[10], k1[10];
	rocksdb_iterator_t *it = rocksdb_create_iterator(c->st->db, c->ro);
	const unsigned char *k;
	size_t kl;
	int rc = -ENOENT;

	k0[0] = k1[0] = 'W';
	be64_put(k0 + 1, c->sid);
	be64_put(k1 + 1, c->sid);
	k0[9] = (unsigned char)level;
	k1[9] = (unsigned char)(level + 1);
	if (last)
		rocksdb_iter_seek_for_prev(it, (char *)k1, sizeof(k1));
	else
		rocksdb_iter_seek(it, (char *)k0, sizeof(k0));
	if (rocksdb_iter_valid(it) && (k = (const unsigned char *)rocksdb_iter_key(it, &kl)) &&
	    kl == 18 && memcmp(k, k0, sizeof(k0)) == 0) {
		*w = time_dec(be64_get(k + 10));
		rc = 0;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/*
 * The span of series sid's data: its raw profiles, and before them the
 * 10-minute windows that outlived them (--retention-aggregates); sets
 * c->acut. -ENOENT if it holds neither.
 */
int
series_bounds(struct range_read *c, int64_t *first, int64_t *last)
{
	int64_t w0, w1;
	bool raw = series_extent(c, first, last) == 0;

	c->acut = INT64_MIN;
	if (window_edge(c, 0, false, &w0) < 0)
		return raw ? 0 : -ENOENT;
	if (raw) {
		/* Windows lie in [WIN_MIN, WIN_MAX): the cut is too. */
		c->acut = *first < WIN_MIN ? INT64_MIN : *first >= WIN_MAX ? WIN_MAX :
		    floor_div(*first, NS_10M) * NS_10M;
		if (w0 < c->acut)
			*first = w0;
		return 0;
	}
	if (window_edge(c, 0, true, &w1) < 0)
		return -ENOENT;
	c->acut = INT64_MAX;
	*first = w0;
	*last = w1 + NS_10M - 1;
	return 0;
}

/*
 * The 10-minute windows past the raw retention that start in [from, to):
 * added to c->a, or with fn, listed (a ref per window and group, standing
 * for the profiles it summed).
 */
int
past_windows(struct range_read *c, int64_t from, int64_t to, store_meta_fn fn, void *arg)
{
	const struct series *s = series_local(c->st, c->sid);
	unsigned char lo[18], hi[18];
	rocksdb_iterator_t *it;
	struct buf sig = { 0 };
	int rc = 0;

	if (from < WIN_MIN)
		from = WIN_MIN;
	if (to > WIN_MAX)
		to = WIN_MAX;
	if (from >= to)
		return 0;
	lo[0] = hi[0] = 'W';
	be64_put(lo + 1, c->sid);
	be64_put(hi + 1, c->sid);
	lo[9] = hi[9] = 0;
	be64_put(lo + 10, time_enc(from));
	be64_put(hi + 10, time_enc(to));
	it = rocksdb_create_iterator(c->st->db, c->ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl, g;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v;
		struct series_state *ss;
		struct agg *one;

		if (kl != 18 || memcmp(k, hi, sizeof(hi)) >= 0)
			break;
		v = rocksdb_iter_value(it, &vl);
		buf_reset(&c->err);
		if (fn == NULL) {
			if ((rc = agg_add(c->a, v, vl, &c->err)) == -EINVAL) {
				log_warnx("store: window of series %llu is corrupt (%s)",
				    (unsigned long long)c->sid, c->err.data ? c->err.data : "");
				rc = 0;
			}
			continue;
		}
		if ((one = agg_create()) == NULL) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = agg_add(one, v, vl, &c->err)) < 0 ||
		    (ss = series_state_lock(c->st, c->sid, &rc)) == NULL) {
			agg_free(one);
			if (rc == -EINVAL)
				rc = 0;		/* corrupt: left out, as the merge does */
			continue;
		}
		for (g = 0; g < agg_ngroups(one) && rc == 0; g++) {
			/* At the window's start, which the range holds. */
			struct store_ref r = { .series = c->sid, .summary = agg_count(one, g),
			    .time = time_dec(be64_get(k + 10)) };
			struct store_meta m = { 0 };

			if (s)
				snprintf(r.type, sizeof(r.type), "%s", s->type);
			buf_reset(&sig);
			if ((rc = agg_signature(one, ss->sym, g, &sig)) < 0 ||
			    (rc = agg_totals(one, g, m.totals, STORE_MAX_TYPES, &m.ntypes)) < 0)
				break;
			m.sighash = store_sighash(sig.data, sig.len);
			rc = fn(arg, &r, &m);
		}
		pthread_mutex_unlock(&ss->sym_lock);
		agg_free(one);
	}
	rocksdb_iter_destroy(it);
	buf_free(&sig);
	return rc;
}

/* The value of key k (NULL if none) added to a; -EINVAL if it does not decode. */
int
value_add(struct store *st, rocksdb_readoptions_t *ro, const unsigned char *k, size_t kl,
    struct agg *a)
{
	char *dberr = NULL, *v;
	size_t vl;
	int rc = 0;

	v = rocksdb_get(st->db, ro, (const char *)k, kl, &vl, &dberr);
	if (dberr) {
		free(dberr);
		return -EIO;
	}
	if (v)
		rc = agg_add(a, v, vl, NULL);
	free(v);
	return rc;
}

/* The pack of window (sid, level, w) from the snapshot, appended to a. */
int
window_get(struct store *st, rocksdb_readoptions_t *ro, uint64_t sid, int level, int64_t w,
    struct agg *a)
{
	unsigned char k[18];

	k[0] = 'W';
	be64_put(k + 1, sid);
	k[9] = (unsigned char)level;
	be64_put(k + 10, time_enc(w));
	return value_add(st, ro, k, sizeof(k), a);
}

/* Put (or delete, when empty) window (sid, level, w) = a into wb. */
int
window_put(rocksdb_writebatch_t *wb, uint64_t sid, int level, int64_t w, const struct agg *a)
{
	unsigned char k[18];
	struct buf v = { 0 };
	int rc = 0;

	k[0] = 'W';
	be64_put(k + 1, sid);
	k[9] = (unsigned char)level;
	be64_put(k + 10, time_enc(w));
	if (agg_ngroups(a) == 0) {
		rocksdb_writebatch_delete(wb, (char *)k, sizeof(k));
		return 0;
	}
	if ((rc = agg_encode(a, &v)) == 0)
		rocksdb_writebatch_put(wb, (char *)k, sizeof(k), v.data, v.len);
	buf_free(&v);
	return rc;
}
