/*
 * store: the RocksDB database, opened and closed; the data directory; the
 * rules for service and type names and profile ids; and the public entry
 * points that take db_lock around a job's function in the store's other
 * files (store_int.h lists them). Only store/ includes RocksDB. Profiles
 * are validated (decoded) before anything is written, and each profile is
 * written in one synced batch (write.c), so an acknowledged profile survives
 * a crash and a refused one leaves no trace.
 *
 * Profiles are kept in the compact form of pack.h: symbols once per service
 * ('Y'), samples as (stack id, values). Merges of aligned windows of 10 min,
 * 1 h and 1 day ('W') are derived data: every profile's batch also writes a
 * dirty marker ('D') for its 10-minute window, and the compactor thread
 * (compact.c) adds the marked profiles to their 10-minute, hourly and daily
 * windows and deletes those markers in one batch. A read uses a window only
 * when no marker lies inside it, and the raw profiles otherwise, all from
 * one snapshot (window.c): reads are exact whatever the compactor has done,
 * and a crash at any point leaves markers to redo. The key layout is in
 * store_int.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store_int.h"

void
store_id_format(uint64_t id, char out[17])
{
	int i;

	for (i = 15; i >= 0; i--) {
		out[i] = hex_digit((unsigned)id, false);
		id >>= 4;
	}
	out[16] = '\0';
}

int
store_id_parse(const char *s, uint64_t *id)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		int h = hex_value(s[i]);

		/* Ids are written in lower case: another spelling names nothing. */
		if (h < 0 || (s[i] >= 'A' && s[i] <= 'F'))
			return -EINVAL;
		v = v << 4 | (uint64_t)h;
	}
	if (s[16] != '\0')
		return -EINVAL;
	*id = v;
	return 0;
}

int
store_check_type(const char *type, struct buf *err)
{
	size_t i, n = strlen(type);

	if (n == 0 || n > TYPE_MAX_LEN) {
		if (err)
			buf_printf(err, "profile type must be 1 to %d characters", TYPE_MAX_LEN);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		char c = type[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
		    c == '-' || c == '.')) {
			if (err)
				buf_printf(err, "profile type \"%s\": use lower-case letters, digits, '_', '-', '.'",
				    type);
			return -EINVAL;
		}
	}
	if (strcmp(type, "auto") == 0 || type[0] == '.') {
		if (err)
			buf_printf(err, "\"%s\" is not a profile type", type);
		return -EINVAL;
	}
	return 0;
}

int
store_check_service(const char *service, struct buf *err)
{
	size_t i, n = strlen(service);

	if (n == 0 || n > SERVICE_MAX_LEN) {
		if (err)
			buf_printf(err, "service name must be 1 to %d bytes", SERVICE_MAX_LEN);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)service[i];

		if (c < 0x20 || c == 0x7f || c == '/') {
			if (err)
				buf_adds(err, "service name must not contain '/' or control characters");
			return -EINVAL;
		}
	}
	if (store_service_reserved(service)) {
		if (err)
			buf_printf(err, "\"%s\" is reserved and cannot be a service name", service);
		return -EINVAL;
	}
	return 0;
}

static bool
has_type(const struct profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nsample_types; i++)
		if (strcmp(profile_str(p, p->sample_types[i].type), name) == 0)
			return true;
	return false;
}

bool
store_service_reserved(const char *service)
{
	/* The tree's own top-level names, and every dot name (".", "..", ".targets.json"). */
	return service[0] == '.' || strcmp(service, "ingest") == 0 ||
	    strcmp(service, "README.txt") == 0;
}

/* profefe's types first (its API lists them in this order), then the others inferred. */
const char *const store_types[] = {
	"cpu", "heap", "block", "mutex", "goroutine", "threadcreate", "other",
	"allocs", "wall", "offcpu", "memory-growth", "memory-mmap", NULL
};

bool
store_type_known(const char *type)
{
	size_t i;

	for (i = 0; store_types[i]; i++)
		if (strcmp(type, store_types[i]) == 0)
			return true;
	return false;
}

const char *
store_infer_type(const struct profile *p)
{
	const char *pt = profile_str(p, p->period_type.type);
	const char *dflt = p->nsample_types ?
	    profile_str(p, p->sample_types[profile_default_type(p)].type) : "";

	if (has_type(p, "alloc_space") || has_type(p, "alloc_objects"))
		return strncmp(dflt, "alloc_", 6) == 0 ? "allocs" : "heap";
	/* pprof-nodejs names its heap columns objects/count and space/bytes. */
	if (has_type(p, "inuse_space") || has_type(p, "inuse_objects") ||
	    (has_type(p, "objects") && has_type(p, "space")))
		return "heap";
	if (has_type(p, "contentions") || has_type(p, "delay"))
		return strcmp(pt, "mutex") == 0 ? "mutex" : "block";
	if (has_type(p, "goroutine") || has_type(p, "goroutines"))
		return "goroutine";
	if (has_type(p, "threadcreate"))
		return "threadcreate";
	if (has_type(p, "offcpu"))
		return "offcpu";
	/* The eBPF agent's memory profiles (--ebpf-memory). */
	if (has_type(p, "fault_space"))
		return "memory-growth";
	if (has_type(p, "mmap_space"))
		return "memory-mmap";
	if (has_type(p, "wall") || has_type(p, "time") || strcmp(pt, "wall") == 0 ||
	    strcmp(pt, "wallclock") == 0)
		return "wall";
	if (has_type(p, "cpu") || strcmp(pt, "cpu") == 0)
		return "cpu";
	if (p->nsample_types == 1 && has_type(p, "samples"))
		return "cpu";
	if (has_type(p, "alloc_size") || has_type(p, "alloc-size"))
		return "allocs";
	return "other";
}

static int
store_load(struct store *st, struct buf *err)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	rocksdb_writebatch_t *gone = rocksdb_writebatch_create();
	struct buf nk = { 0 };
	unsigned char k[9];
	size_t ngone = 0;
	uint64_t sid;
	int rc = 0;

	for (rocksdb_iter_seek(it, "S", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *key = rocksdb_iter_key(it, &kl);
		const char *val = rocksdb_iter_value(it, &vl);
		const char *type, *labels;
		char *copy;

		if (kl != 9 || key[0] != 'S')
			break;
		/* service \0 type \0 labels */
		if ((copy = malloc(vl + 1)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		memcpy(copy, val, vl);
		copy[vl] = '\0';
		type = memchr(copy, '\0', vl) ? copy + strlen(copy) + 1 : NULL;
		labels = type && type < copy + vl ? type + strlen(type) + 1 : NULL;
		if (labels == NULL || labels > copy + vl) {
			log_warnx("store: skipping corrupt series record %llu",
			    (unsigned long long)be64_get((const unsigned char *)key + 1));
			free(copy);
			continue;
		}
		sid = be64_get((const unsigned char *)key + 1);
		if (!series_holds_data(st, sid)) {
			/* Emptied by deletion or retention: its records go (its id is never reused). */
			if (name_key(&nk, copy, type, labels) != NULL) {
				rocksdb_writebatch_delete(gone, key, kl);
				rocksdb_writebatch_delete(gone, nk.data, nk.len);
				k[0] = 'L';	/* its last snapshot of totals, if any */
				memcpy(k + 1, key + 1, 8);
				rocksdb_writebatch_delete(gone, (char *)k, sizeof(k));
				ngone++;
			}
			buf_reset(&nk);
			if (sid >= st->next_sid)
				st->next_sid = sid + 1;
			free(copy);
			continue;
		}
		rc = series_add(st, sid, copy, type, labels);
		free(copy);
		if (rc < 0)
			break;
	}
	if (rc == 0 && ngone) {
		char *dberr = NULL;

		rocksdb_write(st->db, st->wsync, gone, &dberr);
		if (dberr) {
			log_warnx("store: removing %zu empty series: %s", ngone, dberr);
			free(dberr);
		} else {
			log_info("store: dropped %zu empty series from the index (emptied by "
			    "deletion or retention)", ngone);
		}
	}
	rocksdb_writebatch_destroy(gone);
	buf_free(&nk);
	{
		char *dberr = NULL, *v;
		size_t vl;

		v = rocksdb_get(st->db, st->ropts, "Q", 1, &vl, &dberr);
		if (v && vl == 8 && be64_get((unsigned char *)v) > st->next_sid)
			st->next_sid = be64_get((unsigned char *)v);
		free(v);
		free(dberr);
	}
	/* The next profile id follows the largest one stored. */
	k[0] = 'J';
	rocksdb_iter_seek_for_prev(it, (char *)k, 1);
	if (rocksdb_iter_valid(it)) {
		size_t kl;
		const char *key = rocksdb_iter_key(it, &kl);

		if (kl == 9 && key[0] == 'I')
			st->next_id = be64_get((const unsigned char *)key + 1) + 1;
	}
	if (st->next_id == 0)
		st->next_id = 1;
	rocksdb_iter_destroy(it);
	if (rc < 0 && err)
		buf_adds(err, "out of memory loading the series index");
	return rc;
}

/*
 * Data dirs of earlier releases hold gzipped pprof values (version 1):
 * convert each to a pack with its T record and marker, a batch of profiles
 * at a time (each batch synced: a crash resumes where it stopped), then
 * note the format in 'V' so that later opens skip the scan.
 */
static int
store_migrate(struct store *st, struct buf *err)
{
	rocksdb_iterator_t *it;
	rocksdb_writebatch_t *wb;
	struct buf news = { 0 };
	char *dberr = NULL, *v;
	uint64_t done = 0, bad = 0;
	size_t vl, inbatch = 0;
	int rc = 0;

	v = rocksdb_get(st->db, st->ropts, "V", 1, &vl, &dberr);
	if (dberr) {
		if (err)
			buf_printf(err, "cannot read the database: %s", dberr);
		free(dberr);
		return -EIO;
	}
	free(v);
	if (v)
		return 0;
	it = rocksdb_create_iterator(st->db, st->ropts);
	wb = rocksdb_writebatch_create();
	for (rocksdb_iter_seek(it, "P", 1); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *val = rocksdb_iter_value(it, &vl);
		struct profile *p = NULL;
		size_t plen;

		if (kl != 25 || k[0] != 'P')
			break;
		if (vl < 1 || val[0] != VALUE_V1)
			continue;
		if (profile_decode(val + 1, vl - 1, &p, NULL) < 0) {
			bad++;	/* kept as it is: listed, left out of merges with a reason */
			continue;
		}
		buf_reset(&news);
		rc = batch_profile(st, wb, be64_get(k + 1), time_dec(be64_get(k + 9)),
		    be64_get(k + 17), p, &news, &plen, NULL);
		profile_free(p);
		if (rc == 0)
			batch_done(st, be64_get(k + 1), &news);	/* written below, or nothing is */
		if (rc == 0 && ++inbatch == 256) {
			rocksdb_write(st->db, st->wsync, wb, &dberr);
			rocksdb_writebatch_clear(wb);
			done += inbatch;
			inbatch = 0;
			if (dberr)
				break;
		}
	}
	if (rc == 0 && dberr == NULL) {
		rocksdb_writebatch_put(wb, "V", 1, "2", 1);
		rocksdb_write(st->db, st->wsync, wb, &dberr);
		done += inbatch;
	}
	rocksdb_writebatch_destroy(wb);
	rocksdb_iter_destroy(it);
	buf_free(&news);
	if (dberr) {
		if (err)
			buf_printf(err, "converting the data directory failed: %s", dberr);
		free(dberr);
		return -EIO;
	}
	if (rc < 0) {
		if (err)
			buf_adds(err, "converting the data directory failed (out of memory)");
		return rc;
	}
	if (done)
		log_info("store: converted %llu profiles to the compact format%s",
		    (unsigned long long)done, bad ? " (some could not be decoded)" : "");
	return 0;
}

bool
store_time_sane(int64_t t, int64_t now)
{
	return t >= STORE_TIME_MIN && t <= now + INT64_C(86400) * 1000000000;
}

/*
 * The data directory: created 0700 if missing, kept private if it exists
 * (profiles name functions, files and labels that are not every local
 * user's business), and refused when it already holds files that are not
 * a database: --data pointed at the wrong place must not fill, say, a home
 * directory with RocksDB's files.
 */
static int
data_dir_check(const char *dir, struct buf *err)
{
	struct dirent *e;
	struct stat sb;
	bool empty = true, db = false;
	DIR *d;
	int rc;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno != EEXIST || stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		rc = errno == EEXIST ? -ENOTDIR : -errno;
		if (err)
			buf_printf(err, "cannot create data directory %s: %s", dir, strerror(-rc));
		return rc;
	}
	if ((d = opendir(dir)) == NULL) {
		rc = -errno;
		if (err)
			buf_printf(err, "cannot read data directory %s: %s", dir, strerror(errno));
		return rc;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, "lost+found") == 0)
			continue;
		empty = false;
		if (strcmp(e->d_name, "CURRENT") == 0 || strcmp(e->d_name, "IDENTITY") == 0)
			db = true;
	}
	closedir(d);
	if (!empty && !db) {
		if (err)
			buf_printf(err, "data directory %s is not empty and holds no profilefs "
			    "database: give --data a new or empty directory", dir);
		return -EEXIST;
	}
	if ((sb.st_mode & 077) && sb.st_uid == geteuid() && chmod(dir, 0700) == 0)
		log_info("data directory %s: access for other users removed (now 0700)", dir);
	return 0;
}

int
store_open(const char *dir, struct store **out, struct buf *err)
{
	struct store *st;
	char *dberr = NULL;
	int rc;

	*out = NULL;
	if ((rc = data_dir_check(dir, err)) < 0)
		return rc;
	metrics_describe("profilefs_store_strings_cut_total", "counter",
	    "Strings of stored profiles (names, file names, labels) longer than 4096 bytes, "
	    "stored cut and marked.");
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	pthread_rwlock_init(&st->st_lock, NULL);
	pthread_rwlock_init(&st->db_lock, NULL);
	pthread_mutex_init(&st->rt_lock, NULL);
	pthread_mutex_init(&st->ch_lock, NULL);
	pthread_mutex_init(&st->cp_run, NULL);
	pthread_mutex_init(&st->cache_lock, NULL);
	pthread_mutex_init(&st->inc_lock, NULL);
	st->cache_max = STORE_CACHE_MAX;
	pthread_cond_init(&st->rt_cond, NULL);
	store_reader_init(st);
	st->names = intern_create(64);
	st->max_series = STORE_MAX_SERIES;
	st->max_services = STORE_MAX_SERVICES;
	if ((st->dir = strdup(dir)) == NULL) {
		store_close(st);
		return -ENOMEM;
	}
	st->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(st->opts, 1);
	/*
	 * Packs are varints of ids and values: zstd over 64 KiB blocks finds
	 * what repeats from one profile to the next (Debian's librocksdb links
	 * libzstd). Fresh tables (flushes, upper levels) use the cheaper lz4 so
	 * that ingest does not pay zstd's price; the bottom level holds most.
	 */
	rocksdb_options_set_compression(st->opts, rocksdb_lz4_compression);
	rocksdb_options_set_bottommost_compression(st->opts, rocksdb_zstd_compression);
	st->bopts = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_size(st->bopts, 64 << 10);
	rocksdb_options_set_block_based_table_factory(st->opts, st->bopts);
	rocksdb_options_increase_parallelism(st->opts, 2);
	rocksdb_options_set_max_open_files(st->opts, 512);
	rocksdb_options_set_keep_log_file_num(st->opts, 3);
	/*
	 * RocksDB's text LOG only gets its header: on a full file system a
	 * failed LOG write makes RocksDB 7.8 abort at its next message (an
	 * assertion in WritableFileWriter), while the store reports errors itself.
	 */
	rocksdb_options_set_info_log_level(st->opts, 5 /* HEADER_LEVEL */);
	st->wsync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wsync, 1);
	st->wasync = rocksdb_writeoptions_create();
	st->ropts = rocksdb_readoptions_create();
	st->db = rocksdb_open(st->opts, dir, &dberr);
	if (st->db == NULL) {
		if (err) {
			if (dberr && strstr(dberr, "lock"))
				buf_printf(err, "data directory %s is in use by another process "
				    "(is another profilefs running on it?): %s", dir, dberr);
			else
				buf_printf(err, "cannot open the database in %s: %s", dir,
				    dberr ? dberr : "unknown error");
		}
		free(dberr);
		store_close(st);
		return -EIO;
	}
	if ((rc = store_load(st, err)) < 0 || (rc = store_migrate(st, err)) < 0) {
		store_close(st);
		return rc;
	}
	pthread_cond_init(&st->cp_cond, NULL);
	if (pthread_create(&st->cp_thread, NULL, compact_main, st) != 0) {
		rc = -errno;
		if (err)
			buf_adds(err, "cannot start the compaction thread");
		store_close(st);
		return rc;
	}
	st->cp_running = true;
	*out = st;
	return 0;
}

void
store_close(struct store *st)
{
	size_t i;

	if (st == NULL)
		return;
	if (st->cp_running) {
		pthread_mutex_lock(&st->rt_lock);
		st->cp_stop = true;
		pthread_cond_broadcast(&st->cp_cond);
		pthread_mutex_unlock(&st->rt_lock);
		pthread_join(st->cp_thread, NULL);
		pthread_cond_destroy(&st->cp_cond);
	}
	if (st->rt_running) {
		pthread_mutex_lock(&st->rt_lock);
		st->rt_stop = true;
		pthread_cond_signal(&st->rt_cond);
		pthread_mutex_unlock(&st->rt_lock);
		pthread_join(st->rt_thread, NULL);
	}
	if (st->db) {
		char *dberr = NULL;
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();

		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(st->db, fo, &dberr);
		rocksdb_flushoptions_destroy(fo);
		if (dberr) {
			log_warnx("store: flush on close failed: %s", dberr);
			free(dberr);
		}
		rocksdb_close(st->db);
	}
	if (st->opts)
		rocksdb_options_destroy(st->opts);
	if (st->wsync)
		rocksdb_writeoptions_destroy(st->wsync);
	if (st->wasync)
		rocksdb_writeoptions_destroy(st->wasync);
	if (st->bopts)
		rocksdb_block_based_options_destroy(st->bopts);
	if (st->ropts)
		rocksdb_readoptions_destroy(st->ropts);
	for (i = 0; i < st->nseries; i++) {
		free((char *)st->series[i]->service);
		free((char *)st->series[i]->type);
		free((char *)st->series[i]->labels);
		labels_clear(&st->series[i]->ls);
		free(st->series[i]);
	}
	for (i = 0; i < st->nseries; i++) {
		symtab_free(st->state[i]->sym);
		pthread_mutex_destroy(&st->state[i]->sym_lock);
		free(st->state[i]);
	}
	free(st->series);
	free(st->sorted);
	free(st->state);
	intern_destroy(st->names);
	pthread_rwlock_destroy(&st->st_lock);
	pthread_rwlock_destroy(&st->db_lock);
	pthread_mutex_destroy(&st->rt_lock);
	pthread_mutex_destroy(&st->ch_lock);
	pthread_mutex_destroy(&st->cp_run);
	pthread_mutex_destroy(&st->cache_lock);
	pthread_mutex_destroy(&st->inc_lock);
	pthread_cond_destroy(&st->rt_cond);
	free(st->dir);
	free(st);
}

uint64_t
store_sighash(const void *sig, size_t len)
{
	return pfhash64(sig, len);
}

int
store_scan(struct store *st, uint64_t sid, int64_t from, int64_t to, bool with_data,
    store_scan_fn fn, void *arg)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_scan_locked(st, sid, from, to, with_data, fn, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

int
store_get(struct store *st, uint64_t id, struct store_ref *ref, struct buf *out)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_get_locked(st, id, ref, out, true, true);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

int
store_read_series(struct store *st, uint64_t sid, int64_t from, int64_t to, struct agg *a,
    store_meta_fn fn, store_bad_fn bad, void *arg)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_read_series_locked(st, sid, from, to, a, fn, bad, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

void
store_settle(struct store *st)
{
	pthread_rwlock_wrlock(&st->db_lock);
	rocksdb_compact_range(st->db, NULL, 0, NULL, 0);
	pthread_rwlock_unlock(&st->db_lock);
}

int
store_read_spans(struct store *st, uint64_t sid, int64_t from, int64_t to,
    const struct span_sel *sel, struct agg *a, struct span_marks *marks, store_meta_fn fn,
    store_bad_fn bad, void *arg)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_read_spans_locked(st, sid, from, to, sel, a, marks, fn, bad, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

/*
 * After a full disk: once the file system has room again, reopen the
 * database (RocksDB refuses writes after a failed one until then). Readers
 * wait during the reopen; -EAGAIN while there is still no room.
 */
int
store_recover(struct store *st)
{
	struct statvfs sv;
	char *dberr = NULL;
	int tries;

	if (statvfs(st->dir, &sv) < 0 || (uint64_t)sv.f_bavail * sv.f_frsize < STORE_RESUME_FREE)
		return -EAGAIN;
	pthread_rwlock_wrlock(&st->db_lock);
	rocksdb_close(st->db);
	for (tries = 0; (st->db = rocksdb_open(st->opts, st->dir, &dberr)) == NULL; tries++) {
		if (tries == 60)
			log_fatalx("store: cannot reopen the database after a full disk: %s", dberr);
		free(dberr);
		dberr = NULL;
		sleep(1);
	}
	atomic_store(&st->full, false);
	pthread_rwlock_unlock(&st->db_lock);
	log_info("store: the file system has room again: storing resumes");
	return 0;
}

bool
store_has_data(struct store *st, uint64_t sid, int64_t from, int64_t to)
{
	bool any;

	pthread_rwlock_rdlock(&st->db_lock);
	any = has_data_locked(st, sid, from, to);
	pthread_rwlock_unlock(&st->db_lock);
	return any;
}

int
store_newest(struct store *st, uint64_t sid, int64_t *t)
{
	struct range_read c = { .st = st, .ro = st->ropts, .sid = sid };
	int64_t first, last;
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = series_bounds(&c, &first, &last);
	pthread_rwlock_unlock(&st->db_lock);
	if (rc == 0)
		*t = last;
	return rc;
}

int
store_hours(struct store *st, uint64_t sid, int64_t **out, size_t *n)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_hours_locked(st, sid, out, n);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

static void
store_get_stats_locked(struct store *st, struct store_stats *s)
{
	uint64_t v = 0;

	s->profiles = atomic_load(&st->n_put);
	s->rejected = atomic_load(&st->n_rejected);
	s->bytes = atomic_load(&st->n_bytes);
	pthread_rwlock_rdlock(&st->st_lock);
	s->series = st->nseries;
	pthread_rwlock_unlock(&st->st_lock);
	s->windows_pending = atomic_load(&st->n_pending);
	s->span_ids_cut = atomic_load(&st->n_span_cut);
	s->span_ids_refused = atomic_load(&st->n_span_refused);
	s->disk_bytes = 0;
	if (rocksdb_property_int(st->db, "rocksdb.total-sst-files-size", &v) == 0)
		s->disk_bytes += v;
	if (rocksdb_property_int(st->db, "rocksdb.cur-size-all-mem-tables", &v) == 0)
		s->disk_bytes += v;
}

void
store_get_stats(struct store *st, struct store_stats *s)
{
	pthread_rwlock_rdlock(&st->db_lock);
	store_get_stats_locked(st, s);
	pthread_rwlock_unlock(&st->db_lock);
}

int
store_expire_tiers(struct store *st, int64_t before, int64_t wbefore, uint64_t *n)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_expire_tiers_locked(st, before, wbefore, n);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}

int
store_queue_each(struct store *st, uint64_t after, size_t max, store_queue_fn fn, void *arg)
{
	int rc;

	pthread_rwlock_rdlock(&st->db_lock);
	rc = store_queue_each_locked(st, after, max, fn, arg);
	pthread_rwlock_unlock(&st->db_lock);
	return rc;
}
