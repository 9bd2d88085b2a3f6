/*
 * write: the write path. A profile is checked, its series found or made,
 * and it is written (pack, symbols, T, I and H records, window marker,
 * outbox key) in one synced batch; then the generation moves on, with the
 * earliest time the change touched, so caches of other ranges stay valid.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store_int.h"

/* The most entries one run record holds: its value stays a few hundred KiB. */
#define YRUN_MAX	1024

/*
 * The 'Y' records of one run of entries: one key for the lot (a RocksDB key
 * costs more than its bytes, and a new process's profile brings hundreds of
 * entries), the old single-entry key for a run of one.
 */
static void
put_run(rocksdb_writebatch_t *wb, unsigned char ykey[18], uint32_t first, uint32_t n,
    const void *one, size_t onelen, const struct buf *run)
{
	ykey[10] = (unsigned char)(first >> 24);
	ykey[11] = (unsigned char)(first >> 16);
	ykey[12] = (unsigned char)(first >> 8);
	ykey[13] = (unsigned char)first;
	if (n == 1) {
		rocksdb_writebatch_put(wb, (char *)ykey, 14, one, onelen);
		return;
	}
	ykey[14] = (unsigned char)(n >> 24);
	ykey[15] = (unsigned char)(n >> 16);
	ykey[16] = (unsigned char)(n >> 8);
	ykey[17] = (unsigned char)n;
	rocksdb_writebatch_put(wb, (char *)ykey, 18, run->data, run->len);
}

/*
 * Add to wb the 'Y' records of the n new entries e of t (series space):
 * per kind, runs of consecutive ids in the order they came (new entries
 * come in id order).
 */
static int
put_symbols(rocksdb_writebatch_t *wb, uint64_t space, const struct symtab *t,
    const struct sym_new *e, size_t n)
{
	unsigned char ykey[18];
	struct buf run = { 0 };
	const void *d, *one = NULL;
	uint32_t first = 0, cnt = 0;
	size_t i, dl, onelen = 0;
	int kind, rc = 0;

	ykey[0] = 'Y';
	be64_put(ykey + 1, space);
	for (kind = 0; kind < SYM_NKINDS && rc == 0; kind++) {
		ykey[9] = (unsigned char)kind;
		cnt = 0;
		buf_reset(&run);
		for (i = 0; i < n && rc == 0; i++) {
			if (e[i].kind != kind)
				continue;
			if (cnt > 0 && (e[i].id != first + cnt || cnt == YRUN_MAX)) {
				put_run(wb, ykey, first, cnt, one, onelen, &run);
				cnt = 0;
				buf_reset(&run);
			}
			if ((d = symtab_entry(t, kind, e[i].id, &dl)) == NULL) {
				rc = -EINVAL;
				break;
			}
			if (cnt == 0) {
				first = e[i].id;
				one = d;
				onelen = dl;
			}
			if ((rc = buf_add_varint(&run, dl)) < 0 || (rc = buf_add(&run, d, dl)) < 0)
				break;
			cnt++;
		}
		if (rc == 0 && cnt > 0)
			put_run(wb, ykey, first, cnt, one, onelen, &run);
	}
	buf_free(&run);
	return rc;
}

/*
 * Add to wb everything that stores profile p as (sid, time, id): its pack,
 * the new symbols, its T record and its window's dirty marker. *news gets
 * the symbols to mark durable once wb is written; *marks (optional) what
 * its span record says was cut or refused.
 */
int
batch_profile(struct store *st, rocksdb_writebatch_t *wb, uint64_t sid, int64_t time,
    uint64_t id, const struct profile *p, struct buf *news, size_t *vlen,
    struct span_marks *marks)
{
	unsigned char pkey[25], dkey[25], tmark[8];
	struct buf val = { 0 }, tv = { 0 }, sig = { 0 }, spv = { 0 };
	struct series_state *ss;
	uint64_t h;
	size_t i;
	int rc;

	*vlen = 0;
	if ((ss = series_state_lock(st, sid, &rc)) == NULL)
		return rc;
	if ((rc = pack_profile(ss->sym, p, time, &val, news, &spv)) < 0)
		goto unlock;
	/* The batch copies keys and values: the lock covers only the table. */
	rc = put_symbols(wb, ss->space, ss->sym, (const struct sym_new *)news->data,
	    news->len / sizeof(struct sym_new));
unlock:
	pthread_mutex_unlock(&ss->sym_lock);
	if (rc < 0)
		goto out;
	pkey[0] = 'P';
	be64_put(pkey + 1, sid);
	be64_put(pkey + 9, time_enc(time));
	be64_put(pkey + 17, id);
	rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), val.data, val.len);
	if (spv.len) {	/* Z: its samples' spans, F: their filter (span.c) */
		struct buf fv = { 0 };
		size_t nruns, ncut, nbad;

		if (marks && span_counts(spv.data, spv.len, &nruns, &ncut, &nbad) == 0) {
			marks->profiles_cut = ncut > 0;
			marks->cut = ncut;
			marks->profiles_refused = nbad > 0;
			marks->refused = nbad;
		}

		pkey[0] = 'Z';
		rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), spv.data, spv.len);
		if ((rc = span_filter(spv.data, spv.len, &fv)) == 0) {
			pkey[0] = 'F';
			rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), fv.data ? fv.data : "",
			    fv.len);
			*vlen += fv.len;
		}
		buf_free(&fv);
		if (rc < 0)
			goto out;
	}
	/* T: totals and signature hash */
	if ((rc = profile_signature(p, &sig)) < 0)
		goto out;
	h = store_sighash(sig.data, sig.len);
	{
		unsigned char tmp[8];

		for (i = 0; i <= p->nsample_types && i <= STORE_MAX_TYPES && rc == 0; i++) {
			uint64_t v = i == 0 ? p->nsample_types :
			    (uint64_t)profile_total(p, i - 1) << 1 ^
			    (uint64_t)(profile_total(p, i - 1) >> 63);

			rc = buf_add_varint(&tv, v);
		}
		be64_put(tmp, h);
		if (rc == 0)
			rc = buf_add(&tv, tmp, 8);
	}
	if (rc < 0)
		goto out;
	pkey[0] = 'T';
	rocksdb_writebatch_put(wb, (char *)pkey, sizeof(pkey), tv.data, tv.len);
	if (time >= WIN_MIN && time < WIN_MAX) {
		dkey[0] = 'D';
		be64_put(dkey + 1, sid);
		be64_put(dkey + 9, time_enc(floor_div(time, NS_10M) * NS_10M));
		be64_put(dkey + 17, id);
		/* The marker's value is the profile's time: the compactor finds it by key. */
		be64_put(tmark, time_enc(time));
		rocksdb_writebatch_put(wb, (char *)dkey, sizeof(dkey), (char *)tmark, 8);
	}
	*vlen += val.len + spv.len;
out:
	buf_free(&spv);
	buf_free(&val);
	buf_free(&tv);
	buf_free(&sig);
	return rc;
}

/* After wb was written: its symbols need not be written again. */
void
batch_done(struct store *st, uint64_t sid, const struct buf *news)
{
	struct series_state *ss;
	int rc;

	if (news->len == 0 || (ss = series_state_lock(st, sid, &rc)) == NULL)
		return;
	symtab_durable(ss->sym, (const struct sym_new *)news->data,
	    news->len / sizeof(struct sym_new));
	pthread_mutex_unlock(&ss->sym_lock);
}

/*
 * What put_locked() knows of one profile of a batch between its checks and
 * its write.
 */
struct put_one {
	struct store_ref	 r;
	struct buf		 news;
	size_t			 vlen;
	struct span_marks	 spans;		/* what its span data could not keep */
	struct profile		*inc;		/* a snapshot's increase: stored instead */
	bool			 base;		/* the snapshot is its series' new 'L' */
};

/*
 * Snapshots of totals. A Go heap profile as the process serves it counts
 * alloc_* from the process's start (profile_is_snapshot()); the contract
 * wants a range to sum what was allocated in it, as Prometheus's increase().
 * Such a profile is stored as its increase over the previous snapshot of its
 * series (profile_increase(): inuse_* kept, the gauges they are), and the
 * series' last snapshot is kept whole under 'L'|sid. Doing it here, once,
 * rather than between consecutive snapshots at every merge, keeps the
 * windows plain sums (a window's pack cannot know the snapshot before it)
 * and reads as cheap as for any profile; the price is that profiles/ serves
 * the increase, which is a valid pprof of what the process allocated
 * between the two pushes.
 *
 *   - the first snapshot of a series counts whole: the process counted from
 *     zero at its start (the scraper cannot know that of its first scrape,
 *     so it only primes; a push can, its counts are the whole increase);
 *   - a counter column whose total went down, or other sample types: a new
 *     process, counted whole; one stack going down counts its whole value
 *     (increase() on that stack's counter);
 *   - a snapshot older than the series' last one came late: its increase was
 *     counted by the later one, so its counters are stored as zero (inuse_*
 *     kept) and the last one stays the base; sums stay exact;
 *   - deleting a stored profile removes the increase it brought; the base
 *     stays (the next snapshot counts from it); deleting the series drops
 *     the base with it.
 *
 * Producers that send deltas are left alone: the scraper (it takes deltas
 * itself), Pyroscope and OTLP pushes (each covers a time span) and anything
 * with a duration.
 */
static bool
snapshot_source(const struct store_input *in, const struct profile *p)
{
	static const char *const deltas[] = { "scrape", "pyroscope", "otlp", "ebpf" };
	size_t i;

	for (i = 0; in->source && i < sizeof(deltas) / sizeof(deltas[0]); i++)
		if (strcmp(in->source, deltas[i]) == 0)
			return false;
	return profile_is_snapshot(p);
}

/*
 * The base of snapshot i of the batch: an earlier snapshot of its series in
 * the batch, else its 'L' record (decoded into *owned). NULL when none can
 * be had (the first snapshot, or an unreadable record: logged).
 */
static int
snapshot_base(struct store *st, const struct put_one *o, size_t i,
    const struct profile *const *p, struct profile **owned, const struct profile **base,
    int64_t *btime)
{
	unsigned char lkey[9];
	struct buf plain = { 0 }, why = { 0 };
	char *v, *dberr = NULL;
	size_t j, vl = 0;
	int rc = 0;

	*base = NULL;
	*owned = NULL;
	for (j = i; j-- > 0;)
		if (o[j].base && o[j].r.series == o[i].r.series) {
			*base = p[j];
			*btime = o[j].r.time;
			return 0;
		}
	lkey[0] = 'L';
	be64_put(lkey + 1, o[i].r.series);
	v = rocksdb_get(st->db, st->ropts, (char *)lkey, sizeof(lkey), &vl, &dberr);
	if (dberr) {
		log_warnx("store: reading the last snapshot of series %llu: %s",
		    (unsigned long long)o[i].r.series, dberr);
		free(dberr);
		return -EIO;
	}
	if (v == NULL)
		return 0;
	if (vl < 8 || (rc = profile_gunzip(v + 8, vl - 8, &plain, &why)) < 0 ||
	    (rc = profile_decode(plain.data ? plain.data : "", plain.len, owned, &why)) < 0) {
		log_warnx("store: the last snapshot of series %llu cannot be read (%s): the next "
		    "one counts whole", (unsigned long long)o[i].r.series,
		    why.data ? why.data : "too short");
		rc = rc == -ENOMEM ? rc : 0;
	} else {
		*base = *owned;
		*btime = time_dec(be64_get((const unsigned char *)v));
	}
	rocksdb_free(v);
	buf_free(&plain);
	buf_free(&why);
	return rc;
}

/*
 * Snapshot i of the batch: set o[i].inc to what is stored in its place
 * (NULL: itself, counted whole) and, unless it came late, put it in wb as
 * its series' 'L' record. inc_lock held.
 */
static int
snapshot_increase(struct store *st, rocksdb_writebatch_t *wb, struct put_one *o, size_t i,
    const struct profile *const *p)
{
	unsigned char lkey[9], t[8];
	const struct profile *base;
	struct profile *owned = NULL;
	struct buf enc = { 0 }, why = { 0 };
	int64_t btime = 0;
	int rc;

	if ((rc = snapshot_base(st, o, i, p, &owned, &base, &btime)) < 0)
		goto out;
	if (base && o[i].r.time < btime) {
		/* Late: the later snapshot counted its increase already. */
		rc = profile_increase(p[i], p[i], &o[i].inc, NULL);
		goto out;
	}
	if (base) {
		rc = profile_increase(p[i], base, &o[i].inc, &why);
		if (rc == -ERANGE || rc == -EINVAL) {
			log_debug("store: series %llu: %s: the snapshot counts whole",
			    (unsigned long long)o[i].r.series, why.data ? why.data : "reset");
			rc = 0;
		}
		if (rc < 0)
			goto out;
	}
	/* time:8, then the snapshot as gzipped pprof (profile_encode appends) */
	be64_put(t, time_enc(o[i].r.time));
	if ((rc = buf_add(&enc, t, sizeof(t))) < 0 || (rc = profile_encode(p[i], true, &enc)) < 0)
		goto out;
	lkey[0] = 'L';
	be64_put(lkey + 1, o[i].r.series);
	rocksdb_writebatch_put(wb, (char *)lkey, sizeof(lkey), enc.data, enc.len);
	o[i].base = true;
out:
	profile_free(owned);
	buf_free(&enc);
	buf_free(&why);
	return rc;
}

/* Check profile p, find or make its series and pick its time and id into *o. */
static int
put_prepare(struct store *st, const struct store_input *in, const struct profile *p,
    int64_t now, struct put_one *o, struct buf *err)
{
	const char *type = in->type;
	struct buf labels = { 0 };
	int rc;

	if ((rc = store_check_service(in->service ? in->service : "", err)) < 0)
		goto out;
	if (type == NULL || strcmp(type, "auto") == 0)
		type = store_infer_type(p);
	else if ((rc = store_check_type(type, err)) < 0 ||
	    (rc = store_check_known_type(type, err)) < 0 ||
	    (rc = store_check_profile_type(type, p, err)) < 0)
		goto out;
	if (p->nsample_types == 0 || p->nsample_types > STORE_MAX_TYPES) {
		if (err)
			buf_printf(err, p->nsample_types ? "profile has %zu sample types (at most %d "
			    "are stored)" : "profile has no sample types", p->nsample_types,
			    STORE_MAX_TYPES);
		rc = -EINVAL;
		goto out;
	}
	if (in->labels) {
		size_t i;

		/* A series per request would follow: span ids belong to samples (span.c). */
		for (i = 0; i < in->labels->n; i++)
			if (strcmp(in->labels->pairs[i].key, "span_id") == 0 ||
			    strcmp(in->labels->pairs[i].key, "trace_id") == 0) {
				if (err)
					buf_printf(err, "%s is not a series label: span ids belong "
					    "to samples (the pprof sample label %s, or OTLP links)",
					    in->labels->pairs[i].key, in->labels->pairs[i].key);
				rc = -EINVAL;
				goto out;
			}
	}
	if (in->labels && (rc = labels_format(in->labels, &labels)) < 0)
		goto out;
	if ((rc = buf_reserve(&labels, 0)) < 0)
		goto out;
	/*
	 * A profile's own time that no clock could have written (0001, 2262)
	 * would sit where no range shows it and retention never reaches: it
	 * counts as absent, and the time of reception is used.
	 */
	if (p->time_nanos && !in->created_at && !store_time_sane(p->time_nanos, now))
		log_info("store: %s/%s: the profile's time %lld ns is out of range; stored at "
		    "its time of reception", in->service, type, (long long)p->time_nanos);
	o->r.time = in->created_at ? in->created_at :
	    p->time_nanos && store_time_sane(p->time_nanos, now) ? p->time_nanos : now;
	snprintf(o->r.type, sizeof(o->r.type), "%s", type);
	if ((rc = series_get_or_create(st, in->service, type, labels.data, &o->r.series,
	    err)) < 0)
		goto out;
	o->r.id = atomic_fetch_add(&st->next_id, 1);
out:
	buf_free(&labels);
	return rc;
}

/*
 * A stored profile whose span data was cut or refused: counted (/metrics)
 * and logged, at most one line per 10 s (a client that sends the same
 * malformed ids with every push would otherwise fill the log); the line
 * says how many such profiles it stands for.
 */
static void
span_marks_note(struct store *st, const struct store_input *in, const struct store_ref *r,
    const struct span_marks *m)
{
	static _Atomic int64_t last;
	static _Atomic uint64_t unlogged;
	int64_t now = clock_now_ns(), t = atomic_load(&last);
	uint64_t more;

	atomic_fetch_add(&st->n_span_cut, m->cut);
	atomic_fetch_add(&st->n_span_refused, m->refused);
	if (now - t < INT64_C(10000000000) || !atomic_compare_exchange_strong(&last, &t, now)) {
		atomic_fetch_add(&unlogged, 1);
		return;
	}
	more = atomic_exchange(&unlogged, 0);
	log_info("store: %s/%s: profile %llu keeps %llu spans past the %d a profile may tag "
	    "and %llu samples whose span or trace id was not accepted (not 1 to 16 hex "
	    "digits, or 32) as untagged samples; %llu more such profiles since the last line",
	    in->service, r->type, (unsigned long long)r->id, (unsigned long long)m->cut,
	    SPAN_MAX_PER_PROFILE, (unsigned long long)m->refused, (unsigned long long)more);
}

/*
 * Store the n profiles p[i] as in[i] says in one synced batch: all of them
 * or none. refs (optional) gets n refs.
 */
static int
put_locked(struct store *st, const struct store_input *in, const struct profile *const *p,
    size_t n, struct store_ref *refs, struct buf *err)
{
	int64_t now = clock_now_ns(), tmin = INT64_MAX;
	unsigned char ikey[9], ival[16], hkey[17];
	rocksdb_writebatch_t *wb = NULL;
	struct put_one *o;
	char *dberr = NULL;
	bool snaps = false;
	size_t i;
	int rc = 0;

	if ((o = calloc(n ? n : 1, sizeof(*o))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n && !snaps; i++)
		snaps = snapshot_source(&in[i], p[i]);
	if (snaps)
		pthread_mutex_lock(&st->inc_lock);
	wb = rocksdb_writebatch_create();
	for (i = 0; i < n && rc == 0; i++) {
		if ((rc = put_prepare(st, &in[i], p[i], now, &o[i], err)) < 0)
			break;
		if (snaps && snapshot_source(&in[i], p[i]) &&
		    (rc = snapshot_increase(st, wb, o, i, p)) < 0) {
			if (err)
				buf_adds(err, rc == -ENOMEM ? "out of memory" :
				    "the series' last snapshot cannot be read");
			break;
		}
		rc = batch_profile(st, wb, o[i].r.series, o[i].r.time, o[i].r.id,
		    o[i].inc ? o[i].inc : p[i], &o[i].news, &o[i].vlen, &o[i].spans);
		if (rc < 0) {
			if (err)
				buf_adds(err, rc == -ENOMEM ? "out of memory" :
				    "profile cannot be encoded");
			break;
		}
		ikey[0] = 'I';
		be64_put(ikey + 1, o[i].r.id);
		be64_put(ival, o[i].r.series);
		be64_put(ival + 8, time_enc(o[i].r.time));
		hkey[0] = 'H';
		be64_put(hkey + 1, o[i].r.series);
		be64_put(hkey + 9, time_enc(floor_div(o[i].r.time, NS_1H)));
		rocksdb_writebatch_put(wb, (char *)ikey, sizeof(ikey), (char *)ival, sizeof(ival));
		rocksdb_writebatch_put(wb, (char *)hkey, sizeof(hkey), "", 0);
		if (atomic_load(&st->q_on)) {
			ikey[0] = 'O';	/* same id as the I key: in the same batch */
			rocksdb_writebatch_put(wb, (char *)ikey, sizeof(ikey), "", 0);
		}
		if (o[i].r.time < tmin)
			tmin = o[i].r.time;
	}
	if (rc < 0)
		goto out;
	rocksdb_write(st->db, st->wsync, wb, &dberr);
	if (dberr) {
		rc = store_write_error(st, dberr, err);
		goto out;
	}
	for (i = 0; i < n; i++) {
		batch_done(st, o[i].r.series, &o[i].news);
		if (atomic_load(&st->q_on))
			atomic_fetch_add(&st->q_len, 1);
		atomic_fetch_add(&st->n_put, 1);
		atomic_fetch_add(&st->n_bytes, o[i].vlen);
		if (o[i].spans.cut || o[i].spans.refused)
			span_marks_note(st, &in[i], &o[i].r, &o[i].spans);
		if (refs)
			refs[i] = o[i].r;
	}
	if (n) {
		note_change(st, tmin);
		compact_kick(st);
	}
out:
	rocksdb_writebatch_destroy(wb);
	if (snaps)
		pthread_mutex_unlock(&st->inc_lock);
	if (rc < 0)
		atomic_fetch_add(&st->n_rejected, n ? n : 1);
	for (i = 0; i < n; i++) {
		buf_free(&o[i].news);
		profile_free(o[i].inc);
	}
	free(o);
	return rc;
}

/*
 * The profiles as they are stored: each string of each at most
 * STR_MAX_STORED bytes, whichever producer it came from (a pushed 64 MiB
 * function name would otherwise be kept whole, in the symbol table, in
 * every merge and every view). *view gets p itself, or a shallow copy whose
 * strings array holds the cut ones (*cut, freed by the caller with
 * free(), each entry and *view). Said in the log at most once a minute.
 */
static int
put_bound(const struct store_input *in, const struct profile *const *p, size_t n,
    const struct profile ***view, struct profile **copies, const char ***cut)
{
	static _Atomic int64_t told;
	const struct profile **v;
	size_t i, nc, total = 0;
	int64_t now, last;
	int rc = 0;

	*view = NULL;
	*copies = NULL;
	if ((v = calloc(n ? n : 1, sizeof(*v))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i] = p[i];
		if ((rc = profile_cut_strings(p[i], STR_MAX_STORED, &cut[i], &nc)) < 0)
			break;
		if (cut[i] == NULL)
			continue;
		if (*copies == NULL && (*copies = calloc(n, sizeof(**copies))) == NULL) {
			rc = -ENOMEM;
			break;
		}
		(*copies)[i] = *p[i];
		(*copies)[i].strings = cut[i];
		v[i] = &(*copies)[i];
		total += nc;
	}
	if (rc < 0) {
		free(v);
		free(*copies);
		*copies = NULL;
		return rc;
	}
	if (total) {
		metrics_add("profilefs_store_strings_cut_total", NULL, (double)total);
		now = clock_mono_ns();
		last = atomic_load(&told);
		if ((last == 0 || now - last >= 60 * INT64_C(1000000000)) &&
		    atomic_compare_exchange_strong(&told, &last, now))
			log_info("store: %s (%s): %zu strings of the profile%s were longer than %d "
			    "bytes: stored cut, ending in \"%s\"", in->service ? in->service : "",
			    in->source ? in->source : "other", total, n > 1 ? "s" : "",
			    STR_MAX_STORED, STR_CUT_MARK);
	}
	*view = v;
	return 0;
}

/* Puts share the database with each other; a reopen after a full disk waits. */
static int
put_common(struct store *st, const struct store_input *in, const struct profile *const *p,
    size_t n, struct store_ref *ref, struct buf *err)
{
	const struct profile **view = NULL;
	struct profile *copies = NULL;
	const char **cut_small[4] = { NULL }, ***cut = cut_small;
	size_t i;
	int rc;

	if (atomic_load(&st->full)) {
		if (err)
			buf_printf(err, "the data directory's file system is full; "
			    "storing resumes once %u MiB are free on it", STORE_RESUME_FREE >> 20);
		atomic_fetch_add(&st->n_rejected, n);
		return -ENOSPC;
	}
	if (n > 4 && (cut = calloc(n, sizeof(*cut))) == NULL)
		return -ENOMEM;
	if ((rc = put_bound(in, p, n, &view, &copies, cut)) < 0) {
		if (err)
			buf_adds(err, "out of memory");
		goto out;
	}
	pthread_rwlock_rdlock(&st->db_lock);
	rc = put_locked(st, in, view, n, ref, err);
	pthread_rwlock_unlock(&st->db_lock);
out:
	for (i = 0; i < n; i++)
		free(cut[i]);
	if (cut != cut_small)
		free(cut);
	free(copies);
	free(view);
	return rc;
}

/* Count one attempt of in->source in the metrics (see store.h). */
static void
count_put(const struct store_input *in, int rc, size_t len, int64_t t0)
{
	const char *src = in->source ? in->source : "other";
	const char *outcome = rc == 0 ? "ok" : rc == -EINVAL ? "invalid" :
	    rc == -EFBIG ? "too_large" : "error";
	char l[128];

	snprintf(l, sizeof(l), "source=\"%s\"", src);
	metrics_observe(METRIC_INGEST_DURATION, l,
	    (double)(clock_mono_ns() - t0) / 1e9);
	if (rc == 0)
		metrics_add(METRIC_INGESTED_BYTES, l, (double)len);
	snprintf(l, sizeof(l), "source=\"%s\",outcome=\"%s\"", src, outcome);
	metrics_add(METRIC_INGESTED_PROFILES, l, 1);
}

int
store_put(struct store *st, const struct store_input *in, const void *data, size_t len,
    struct store_ref *ref, struct buf *err)
{
	size_t limit = in->max_decoded ? in->max_decoded : PROFILE_MAX_DECODED;
	struct profile *p = NULL;
	struct buf plain = { 0 };
	int64_t t0 = clock_mono_ns();
	bool gzipped = profile_is_gzip(data, len);
	const void *pd = data;
	size_t pl = len;
	int rc;

	/* Gunzipped once, never past the limit, then decoded. */
	if (gzipped) {
		if ((rc = profile_gunzip_max(data, len, limit, &plain, err)) < 0)
			goto out;
		pd = plain.data ? plain.data : "";
		pl = plain.len;
	}
	if (pl > limit) {
		if (err)
			buf_printf(err, "the profile is %zu bytes unzipped, over the limit of %zu bytes",
			    pl, limit);
		rc = -EFBIG;
		goto out;
	}
	if (gzipped && pl == 0) {
		if (err)
			buf_adds(err, "gzip data holds nothing: not a pprof profile");
		rc = -EINVAL;
		goto out;
	}
	if ((rc = profile_decode(pd, pl, &p, err)) < 0)
		goto out;
	rc = put_common(st, in, (const struct profile *const *)&p, 1, ref, err);
out:
	if (rc < 0 && p == NULL)
		atomic_fetch_add(&st->n_rejected, 1);
	count_put(in, rc, len, t0);
	profile_free(p);
	buf_free(&plain);
	return rc;
}

int
store_put_profile(struct store *st, const struct store_input *in, const struct profile *p,
    struct store_ref *ref, struct buf *err)
{
	int64_t t0 = clock_mono_ns();
	int rc;

	rc = put_common(st, in, &p, 1, ref, err);
	count_put(in, rc, 0, t0);
	return rc;
}

int
store_put_profiles(struct store *st, const struct store_input *in,
    const struct profile *const *p, size_t n, struct store_ref *refs, struct buf *err)
{
	int64_t t0 = clock_mono_ns();
	size_t i;
	int rc;

	if (n == 0)
		return 0;
	rc = put_common(st, in, p, n, refs, err);
	for (i = 0; i < n; i++)
		count_put(&in[i], rc, 0, t0);
	return rc;
}

/*
 * A change to the data at time t (INT64_MIN: at any time) makes a new
 * generation. Entries whose earliest time is at or after t now stand for
 * generations whose changes reach back to t: they fold into one. Times rise
 * along the stack, so the entry holding generation g+1 tells the earliest
 * time any change after g touched. A full stack folds two entries, which
 * only makes an answer earlier (safe: a reader rebuilds).
 */
void
note_change(struct store *st, int64_t t)
{
	uint64_t g;

	pthread_mutex_lock(&st->ch_lock);
	g = atomic_fetch_add(&st->gen, 1) + 1;
	while (st->nchanges > 0 && st->changes[st->nchanges - 1].tmin >= t)
		g = st->changes[--st->nchanges].gen;
	if (st->nchanges == STORE_CHANGES) {
		/*
		 * Full: the neighbours closest in time fold into one, which
		 * answers for both with the earlier time (safe, and off by
		 * the least).
		 */
		size_t i, best = 0;
		uint64_t gap, min = UINT64_MAX;

		for (i = 0; i + 1 < st->nchanges; i++) {
			gap = (uint64_t)st->changes[i + 1].tmin - (uint64_t)st->changes[i].tmin;
			if (gap < min) {
				min = gap;
				best = i;
			}
		}
		memmove(&st->changes[best + 1], &st->changes[best + 2],
		    (st->nchanges - best - 2) * sizeof(st->changes[0]));
		st->nchanges--;
	}
	st->changes[st->nchanges].gen = g;
	st->changes[st->nchanges].tmin = t;
	st->nchanges++;
	pthread_mutex_unlock(&st->ch_lock);
}

bool
store_changed_since(struct store *st, uint64_t gen, int64_t upto)
{
	size_t lo = 0, hi;
	bool changed;

	pthread_mutex_lock(&st->ch_lock);
	if (gen >= atomic_load(&st->gen)) {
		pthread_mutex_unlock(&st->ch_lock);
		return false;
	}
	/* The last entry starting at or before gen + 1. */
	hi = st->nchanges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->changes[mid].gen <= gen + 1)
			lo = mid + 1;
		else
			hi = mid;
	}
	changed = st->nchanges == 0 || st->changes[lo ? lo - 1 : 0].tmin <= upto;
	pthread_mutex_unlock(&st->ch_lock);
	return changed;
}

uint64_t
store_generation(const struct store *st)
{
	return atomic_load(&((struct store *)st)->gen);
}

/*
 * A write failed: -ENOSPC when the file system is full (RocksDB then refuses
 * writes until it recovers, reads go on), -EIO otherwise. Frees dberr.
 */
int
store_write_error(struct store *st, char *dberr, struct buf *err)
{
	bool full = strstr(dberr, "No space left") || strstr(dberr, "NoSpace") ||
	    strstr(dberr, "no space");

	/* RocksDB must not be written again until it is reopened. */
	if (full && !atomic_exchange(&st->full, true)) {
		log_warnx("store: the data directory's file system is full: writes are refused "
		    "until %u MiB are free on it (%s)", STORE_RESUME_FREE >> 20, st->dir);
		/* The compactor looks for room every second from now on. */
		compact_kick(st);
	}
	if (err && full)
		buf_printf(err, "the data directory's file system is full (%s); storing resumes "
		    "once %u MiB are free on it", dberr, STORE_RESUME_FREE >> 20);
	else if (err)
		buf_printf(err, "database write failed: %s", dberr);
	free(dberr);
	return full ? -ENOSPC : -EIO;
}
