/*
 * fs: the libfuse3 (high-level, path-based) handlers. Each handler parses its
 * path with path_parse(), asks the store or the view cache, and returns one
 * result. Generated files are rendered on first stat or open and cached, so the
 * size stat reports is the size read returns; an open file holds its cache
 * entry, so it reads one consistent snapshot. Inode numbers are a hash of the
 * path, stable across restarts.
 *
 * Writes are accepted only under ingest/: a file created there collects its
 * bytes in memory and is parsed and stored when it is closed (flush), so the
 * result of close() -- and cp's exit status -- tells whether it was stored.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "fs.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "path.h"
#include "views.h"

#define INGEST_MAX		(256u << 20)	/* bytes one ingest file may hold */
#define FILE_CACHE_BYTES	(512u << 20)
#define MERGE_CACHE_BYTES	(512u << 20)
#define RELATIVE_MAX_AGE	(INT64_C(1500) * 1000000)

enum hkind { H_CONTENT, H_INGEST };

/* A file being written into ingest/. Protected by ig_lock. */
struct ingest {
	struct ingest	*next;
	char		*path;
	struct fspath	 fp;
	struct buf	 data;
	pthread_mutex_t	 store_lock;	/* held across a store attempt, so a
					   concurrent flush waits for its result */
	bool		 dirty;		/* written since the last store attempt */
	int		 result;	/* of the last store attempt */
	int		 opens;
};

struct handle {
	enum hkind		 kind;
	struct cache_entry	*ce;	/* H_CONTENT: the file's bytes (a struct buf) */
	struct ingest		*ig;	/* H_INGEST */
};

static pthread_mutex_t ig_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ingest *ig_open;	/* protected by ig_lock */

static struct fsctx *
ctx(void)
{
	return fuse_get_context()->private_data;
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
fill_stat_at(struct stat *st, const char *path, bool dir, off_t size, bool writable,
    int64_t mtime_ns)
{
	time_t now = time(NULL);

	memset(st, 0, sizeof(*st));
	st->st_ino = hash_bytes(path, strlen(path)) | 1;
	if (dir) {
		st->st_mode = S_IFDIR | (writable ? 0755 : 0555);
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (writable ? 0644 : 0444);
		st->st_nlink = 1;
		st->st_size = size;
		st->st_blocks = (size + 511) / 512;
	}
	st->st_blksize = 65536;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = now;
	if (mtime_ns > 0) {
		/*
		 * Generated content: its mtime is when it was made, so the
		 * kernel (auto_inval_data) drops pages of an older version.
		 */
		st->st_mtim.tv_sec = st->st_ctim.tv_sec = (time_t)(mtime_ns / 1000000000);
		st->st_mtim.tv_nsec = st->st_ctim.tv_nsec = (long)(mtime_ns % 1000000000);
	}
}

static void
fill_stat(struct stat *st, const char *path, bool dir, off_t size, bool writable)
{
	fill_stat_at(st, path, dir, size, writable, 0);
}

/* --- existence ---------------------------------------------------------- */

static int
stop_cb(void *arg, const struct store_ref *ref, const void *d, size_t l)
{
	(void)arg;
	(void)ref;
	(void)d;
	(void)l;
	return 1;
}

/* The start of unix hour h in ns, saturated at int64's ends. */
static int64_t
hour_ns(int64_t h)
{
	int64_t ns;

	if (__builtin_mul_overflow(h, INT64_C(3600000000000), &ns))
		return h < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}

/* Whether series sid holds any profile (between from and to). */
static bool
series_has_data(struct fsctx *fs, uint64_t sid, int64_t from, int64_t to)
{
	return store_scan(fs->st, sid, from, to, false, stop_cb, NULL) == 1;
}

/*
 * Whether any series matches (service, type, selector) and, with r, whether
 * any of them holds a profile in r.
 */
static bool
exists(struct fsctx *fs, const char *service, const char *type, const char *selector,
    const struct range *r)
{
	const struct series **all;
	struct labelset sel = { .n = 0 };
	struct query q;
	size_t n, i;
	bool found = false;

	if (store_series(fs->st, &all, &n) < 0)
		return false;
	if (selector && labels_parse(selector, &sel, NULL) < 0) {
		free(all);
		return false;
	}
	memset(&q, 0, sizeof(q));
	q.service = service;
	q.type = type;
	q.sel = selector ? &sel : NULL;
	for (i = 0; i < n && !found; i++) {
		if (!query_match(&q, all[i]))
			continue;
		/* A series whose profiles retention deleted does not count. */
		if (store_scan(fs->st, all[i]->id, r ? r->from : INT64_MIN,
		    r ? r->to : INT64_MAX, false, stop_cb, NULL) == 1)
			found = true;
	}
	labels_clear(&sel);
	free(all);
	return found;
}

/* --- content ------------------------------------------------------------ */

static void
free_buf(void *v)
{
	buf_free(v);
	free(v);
}

struct fill_arg {
	struct fsctx		*fs;
	const struct fspath	*fp;
};

static int readme_render(struct fsctx *fs, struct buf *out);

static int
fill_file(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct fill_arg *a = varg;
	struct buf *b = calloc(1, sizeof(*b));
	struct store_ref ref;
	char want[128];
	int rc;

	if (b == NULL)
		return -ENOMEM;
	switch (a->fp->node) {
	case NODE_README:
		rc = readme_render(a->fs, b);
		break;
	case NODE_TARGETS:
		rc = a->fs->targets_json ? a->fs->targets_json(a->fs->targets_arg, b) : -ENOENT;
		break;
	case NODE_PROFILE:
		rc = store_get(a->fs->st, a->fp->profile_id, &ref, b);
		if (rc == 0) {
			/* The name must be the profile's own, in a range and series that hold it. */
			const struct series *s = store_series_get(a->fs->st, ref.series);
			struct labelset sel;
			struct query q = { .service = a->fp->service, .type = a->fp->type };

			path_profile_name(ref.time, ref.id, want, sizeof(want));
			if (s == NULL || strcmp(want, a->fp->view) != 0 ||
			    ref.time < a->fp->range.from || ref.time >= a->fp->range.to ||
			    labels_parse(a->fp->selector, &sel, NULL) < 0) {
				rc = -ENOENT;
				break;
			}
			q.sel = &sel;
			if (!query_match(&q, s))
				rc = -ENOENT;
			labels_clear(&sel);
		}
		break;
	default:
		rc = views_render(a->fs, a->fp, b);
		break;
	}
	if (rc == 0 && b->data == NULL)
		rc = buf_reserve(b, 0);
	*val = b;
	*size = b->cap + sizeof(*b);
	*free_fn = free_buf;
	return rc;
}

/* The content of a generated file, cached; *ce holds a reference. */
static int
content_get(struct fsctx *fs, const char *path, const struct fspath *fp,
    struct cache_entry **ce)
{
	struct fill_arg a = { fs, fp };
	bool relative = fp->range.relative || fp->node == NODE_TARGETS ||
	    (fp->node == NODE_VS_VIEW && fp->base_range.relative);
	uint64_t gen = store_generation(fs->st);

	return cache_get(fs->files, path, gen, relative ? RELATIVE_MAX_AGE : 0,
	    fill_file, &a, ce);
}

/* --- handlers ----------------------------------------------------------- */

static struct ingest *
ingest_find(const char *path)
{
	struct ingest *ig;

	for (ig = ig_open; ig; ig = ig->next)
		if (strcmp(ig->path, path) == 0)
			return ig;
	return NULL;
}

static int
pf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fsctx *fs = ctx();
	struct cache_entry *ce;
	struct fspath fp;
	int rc;

	metrics_add("profilefs_fuse_requests_total", NULL, 1);
	if (fi && fi->fh) {
		struct handle *h = (struct handle *)(uintptr_t)fi->fh;

		if (h->kind == H_INGEST) {
			pthread_mutex_lock(&ig_lock);
			fill_stat(st, path, false, (off_t)h->ig->data.len, true);
			pthread_mutex_unlock(&ig_lock);
			return 0;
		}
		fill_stat_at(st, path, false, (off_t)((struct buf *)h->ce->val)->len, false,
		    h->ce->born);
		return 0;
	}
	if (path_parse(path, now_ns(), &fp) < 0)
		return -ENOENT;
	switch (fp.node) {
	case NODE_ROOT:
		fill_stat(st, path, true, 0, false);
		return 0;
	case NODE_INGEST:
		fill_stat(st, path, true, 0, true);
		return 0;
	case NODE_INGEST_FILE:
		pthread_mutex_lock(&ig_lock);
		{
			struct ingest *ig = ingest_find(path);

			if (ig)
				fill_stat(st, path, false, (off_t)ig->data.len, true);
			rc = ig ? 0 : -ENOENT;
		}
		pthread_mutex_unlock(&ig_lock);
		return rc;
	case NODE_SERVICE:
		if (!exists(fs, fp.service, NULL, NULL, NULL))
			return -ENOENT;
		fill_stat(st, path, true, 0, false);
		return 0;
	case NODE_TYPE:
		if (!exists(fs, fp.service, fp.type, NULL, NULL))
			return -ENOENT;
		fill_stat(st, path, true, 0, false);
		return 0;
	case NODE_SELECTOR:
		if (!exists(fs, fp.service, fp.type, fp.selector, NULL))
			return -ENOENT;
		fill_stat(st, path, true, 0, false);
		return 0;
	case NODE_RANGE:
	case NODE_PROFILES:
	case NODE_VS:
		if (!exists(fs, fp.service, fp.type, fp.selector, &fp.range))
			return -ENOENT;
		fill_stat(st, path, true, 0, false);
		return 0;
	case NODE_VS_BASE:
		if (!exists(fs, fp.service, fp.type, fp.selector, &fp.range))
			return -ENOENT;
		fill_stat(st, path, true, 0, false);
		return 0;
	case NODE_README:
	case NODE_TARGETS:
	case NODE_VIEW:
	case NODE_VS_VIEW:
	case NODE_PROFILE:
		rc = content_get(fs, path, &fp, &ce);
		if (rc == 0)
			fill_stat_at(st, path, false, (off_t)((struct buf *)ce->val)->len, false,
			    ce->born);
		if (ce)
			cache_release(fs->files, ce);
		if (rc < 0 && rc != -ENOENT) {
			metrics_add("profilefs_fuse_errors_total", NULL, 1);
		}
		return rc < 0 ? (rc == -ENOMEM || rc == -EIO || rc == -EFBIG ? rc : -ENOENT) : 0;
	}
	return -ENOENT;
}

typedef int (*filler_t)(void *, const char *, const struct stat *, off_t,
    enum fuse_fill_dir_flags);

static void
add_unique(struct buf *names, const char *s)
{
	/* names holds NUL-separated entries; callers give sorted input. */
	size_t n = strlen(s);

	if (names->len >= n + 1 && memcmp(names->data + names->len - n - 1, s, n + 1) == 0 &&
	    (names->len == n + 1 || names->data[names->len - n - 2] == '\0'))
		return;
	buf_add(names, s, n + 1);
}

static int
pf_readdir(const char *path, void *dbuf, fuse_fill_dir_t filler, off_t off,
    struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct fsctx *fs = ctx();
	const struct series **all = NULL;
	struct buf names = { 0 }, esc = { 0 };
	struct fspath fp;
	size_t n = 0, i;
	const char *p;
	int rc = 0;

	(void)off;
	(void)fi;
	(void)flags;
	metrics_add("profilefs_fuse_requests_total", NULL, 1);
	if (path_parse(path, now_ns(), &fp) < 0)
		return -ENOENT;
	filler(dbuf, ".", NULL, 0, 0);
	filler(dbuf, "..", NULL, 0, 0);
	switch (fp.node) {
	case NODE_ROOT:
		filler(dbuf, "README.txt", NULL, 0, 0);
		if (fs->targets_json != NULL)
			filler(dbuf, ".targets.json", NULL, 0, 0);
		filler(dbuf, "ingest", NULL, 0, 0);
		if ((rc = store_series(fs->st, &all, &n)) < 0)
			break;
		for (i = 0; i < n; i++) {
			if (!series_has_data(fs, all[i]->id, INT64_MIN, INT64_MAX))
				continue;
			buf_reset(&esc);
			labels_escape(&esc, all[i]->service, strlen(all[i]->service));
			add_unique(&names, esc.data);
		}
		break;
	case NODE_INGEST:
		pthread_mutex_lock(&ig_lock);
		{
			struct ingest *ig;
			size_t plen = strlen(path);

			/* Files still being written show up where they are. */
			for (ig = ig_open; ig; ig = ig->next)
				if (strncmp(ig->path, path, plen) == 0 && ig->path[plen] == '/' &&
				    strchr(ig->path + plen + 1, '/') == NULL)
					buf_add(&names, ig->path + plen + 1,
					    strlen(ig->path + plen + 1) + 1);
		}
		pthread_mutex_unlock(&ig_lock);
		break;
	case NODE_SERVICE:
	case NODE_TYPE:
		if ((rc = store_series(fs->st, &all, &n)) < 0)
			break;
		if (fp.node == NODE_TYPE)
			add_unique(&names, "all");
		for (i = 0; i < n; i++) {
			if (strcmp(all[i]->service, fp.service) != 0 ||
			    !series_has_data(fs, all[i]->id, INT64_MIN, INT64_MAX))
				continue;
			if (fp.node == NODE_SERVICE)
				add_unique(&names, all[i]->type);
			else if (strcmp(all[i]->type, fp.type) == 0 && all[i]->labels[0])
				add_unique(&names, all[i]->labels);
		}
		if (names.len == 0 || (fp.node == NODE_TYPE && names.len == 4 &&
		    !exists(fs, fp.service, fp.type, NULL, NULL)))
			rc = -ENOENT;
		break;
	case NODE_SELECTOR: {
		int64_t now = now_ns(), *hours = NULL;
		size_t nh, j;
		struct range r;
		char name[64];
		struct labelset sel;
		struct query q = { .service = fp.service, .type = fp.type };

		if (!exists(fs, fp.service, fp.type, fp.selector, NULL)) {
			rc = -ENOENT;
			break;
		}
		for (i = 0; path_presets[i]; i++) {
			path_range(path_presets[i], now, &r);
			if (exists(fs, fp.service, fp.type, fp.selector, &r))
				buf_add(&names, path_presets[i], strlen(path_presets[i]) + 1);
		}
		/* Days and hours that hold data, from the hour index of each series. */
		if ((rc = store_series(fs->st, &all, &n)) < 0 ||
		    (rc = labels_parse(fp.selector, &sel, NULL)) < 0)
			break;
		q.sel = &sel;
		{
			struct buf hs = { 0 };

			for (i = 0; i < n; i++) {
				if (!query_match(&q, all[i]) ||
				    store_hours(fs->st, all[i]->id, &hours, &nh) < 0)
					continue;
				/* The hour index may name hours retention emptied. */
				for (j = 0; j < nh; j++)
					if (series_has_data(fs, all[i]->id, hour_ns(hours[j]),
					    hour_ns(hours[j] + 1)))
						buf_add(&hs, &hours[j], sizeof(hours[j]));
				free(hours);
			}
			/* Sort and list each day once, then each hour. */
			nh = hs.len / sizeof(int64_t);
			hours = (int64_t *)hs.data;
			for (i = 1; i < nh; i++)
				for (j = i; j > 0 && hours[j - 1] > hours[j]; j--) {
					int64_t t = hours[j];
					hours[j] = hours[j - 1];
					hours[j - 1] = t;
				}
			for (int pass = 0; pass < 2; pass++) {
				char prev[64] = "";

				for (i = 0; i < nh; i++) {
					time_t secs = (time_t)(hours[i] * 3600);
					struct tm tm;

					gmtime_r(&secs, &tm);
					strftime(name, sizeof(name),
					    pass == 0 ? "%Y-%m-%d" : "%Y-%m-%dT%H", &tm);
					if (strcmp(name, prev) != 0)
						buf_add(&names, name, strlen(name) + 1);
					snprintf(prev, sizeof(prev), "%s", name);
				}
			}
			buf_free(&hs);
		}
		labels_clear(&sel);
		break;
	}
	case NODE_RANGE:
		if (!exists(fs, fp.service, fp.type, fp.selector, &fp.range)) {
			rc = -ENOENT;
			break;
		}
		buf_add(&names, "profiles", 9);
		if ((rc = views_list(fs, &fp, &names)) < 0)
			break;
		break;
	case NODE_PROFILES: {
		struct query_result res;
		struct labelset sel;
		struct query q = { .service = fp.service, .type = fp.type,
		    .from = fp.range.from, .to = fp.range.to };
		char name[128];

		if ((rc = labels_parse(fp.selector, &sel, NULL)) < 0)
			break;
		q.sel = &sel;
		rc = query_list(fs->st, &q, &res);
		labels_clear(&sel);
		if (rc < 0)
			break;
		if (res.nrefs == 0)
			rc = -ENOENT;
		for (i = 0; i < res.nrefs; i++) {
			path_profile_name(res.refs[i].time, res.refs[i].id, name, sizeof(name));
			buf_add(&names, name, strlen(name) + 1);
		}
		query_result_free(&res);
		break;
	}
	case NODE_VS: {
		int64_t now = now_ns();
		struct range r;

		if (!exists(fs, fp.service, fp.type, fp.selector, &fp.range)) {
			rc = -ENOENT;
			break;
		}
		/*
		 * Any base works on lookup; listed are the likely ones: the
		 * presets holding data for this selector, and the other label
		 * sets of the type over the same range.
		 */
		for (i = 0; path_presets[i]; i++) {
			path_range(path_presets[i], now, &r);
			if (strcmp(path_presets[i], fp.range.name) != 0 &&
			    exists(fs, fp.service, fp.type, fp.selector, &r))
				buf_add(&names, path_presets[i], strlen(path_presets[i]) + 1);
		}
		if ((rc = store_series(fs->st, &all, &n)) < 0)
			break;
		if (fp.selector[0]) {
			/* Bare "all" here is the range: every label set is all@<range>. */
			buf_reset(&esc);
			buf_printf(&esc, "all@%s", fp.range.name);
			add_unique(&names, esc.data);
		}
		for (i = 0; i < n; i++)
			if (strcmp(all[i]->service, fp.service) == 0 &&
			    strcmp(all[i]->type, fp.type) == 0 && all[i]->labels[0] &&
			    strcmp(all[i]->labels, fp.selector) != 0 &&
			    exists(fs, fp.service, fp.type, all[i]->labels, &fp.range))
				add_unique(&names, all[i]->labels);
		break;
	}
	case NODE_VS_BASE:
		rc = views_list_vs(fs, &fp, &names);
		break;
	default:
		rc = -ENOTDIR;
		break;
	}
	for (p = names.data; rc == 0 && p && p < names.data + names.len; p += strlen(p) + 1)
		if (filler(dbuf, p, NULL, 0, 0))
			break;
	free(all);
	buf_free(&names);
	buf_free(&esc);
	return rc;
}

static int
pf_open(const char *path, struct fuse_file_info *fi)
{
	struct fsctx *fs = ctx();
	struct cache_entry *ce = NULL;
	struct handle *h;
	struct fspath fp;
	int rc;

	metrics_add("profilefs_fuse_requests_total", NULL, 1);
	if (path_parse(path, now_ns(), &fp) < 0)
		return -ENOENT;
	if (fp.node == NODE_INGEST_FILE) {
		/* Reopening a file that is still being written. */
		struct ingest *ig;

		if ((h = calloc(1, sizeof(*h))) == NULL)
			return -ENOMEM;
		pthread_mutex_lock(&ig_lock);
		ig = ingest_find(path);
		if (ig) {
			ig->opens++;
			if (fi->flags & O_TRUNC) {
				buf_reset(&ig->data);
				ig->dirty = true;
			}
		}
		pthread_mutex_unlock(&ig_lock);
		if (ig == NULL) {
			free(h);
			return -ENOENT;
		}
		h->kind = H_INGEST;
		h->ig = ig;
		fi->fh = (uintptr_t)h;
		fi->direct_io = 1;
		return 0;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return fp.node == NODE_ROOT ? -EISDIR : -EROFS;
	if (fp.node != NODE_README && fp.node != NODE_TARGETS && fp.node != NODE_VIEW &&
	    fp.node != NODE_VS_VIEW && fp.node != NODE_PROFILE)
		return -EISDIR;
	rc = content_get(fs, path, &fp, &ce);
	if (rc < 0) {
		if (ce)
			cache_release(fs->files, ce);
		return rc == -ENOMEM || rc == -EIO || rc == -EFBIG ? rc : -ENOENT;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL) {
		cache_release(fs->files, ce);
		return -ENOMEM;
	}
	h->kind = H_CONTENT;
	h->ce = ce;
	fi->fh = (uintptr_t)h;
	/* Content is a snapshot per open: let the kernel drop stale pages. */
	fi->keep_cache = 0;
	return 0;
}

static int
pf_read(const char *path, char *out, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	const struct buf *b;
	size_t n;

	(void)path;
	if (h == NULL)
		return -EBADF;
	if (h->kind == H_INGEST) {
		pthread_mutex_lock(&ig_lock);
		b = &h->ig->data;
		n = off < 0 || (size_t)off >= b->len ? 0 : b->len - (size_t)off;
		n = n < size ? n : size;
		if (n)
			memcpy(out, b->data + off, n);
		pthread_mutex_unlock(&ig_lock);
		return (int)n;
	}
	b = h->ce->val;
	if (off < 0 || (size_t)off >= b->len)
		return 0;
	n = b->len - (size_t)off;
	n = n < size ? n : size;
	memcpy(out, b->data + off, n);
	return (int)n;
}

static int
pf_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct ingest *ig;
	struct handle *h;
	struct fspath fp;

	(void)mode;
	metrics_add("profilefs_fuse_requests_total", NULL, 1);
	if (path_parse(path, now_ns(), &fp) < 0 || fp.node != NODE_INGEST_FILE) {
		if (strncmp(path, "/ingest", 7) != 0)
			return -EROFS;
		log_warnx("ingest: cannot create %s: files go in "
		    "ingest/<service>/<type>/[<k=v,...>/]<file> (type: cpu, heap, ... or auto)",
		    path);
		return -EINVAL;
	}
	h = NULL;
	if ((ig = calloc(1, sizeof(*ig))) == NULL || (h = calloc(1, sizeof(*h))) == NULL ||
	    (ig->path = strdup(path)) == NULL) {
		free(h);
		free(ig);
		return -ENOMEM;
	}
	pthread_mutex_init(&ig->store_lock, NULL);
	ig->fp = fp;
	ig->opens = 1;
	h->kind = H_INGEST;
	h->ig = ig;
	pthread_mutex_lock(&ig_lock);
	ig->next = ig_open;
	ig_open = ig;
	pthread_mutex_unlock(&ig_lock);
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	return 0;
}

static int
pf_write(const char *path, const char *data, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct buf *b;
	int rc = 0;

	(void)path;
	if (h == NULL || h->kind != H_INGEST)
		return -EBADF;
	if (off < 0 || (uint64_t)off + size > INGEST_MAX) {
		log_warnx("ingest: %s is larger than the limit of %u MiB", path, INGEST_MAX >> 20);
		return -EFBIG;
	}
	pthread_mutex_lock(&ig_lock);
	b = &h->ig->data;
	if ((size_t)off + size > b->len) {
		size_t old = b->len;

		if ((rc = buf_reserve(b, (size_t)off + size - b->len)) == 0) {
			memset(b->data + old, 0, (size_t)off + size - old);
			b->len = (size_t)off + size;
			b->data[b->len] = '\0';
		}
	}
	if (rc == 0) {
		memcpy(b->data + off, data, size);
		h->ig->dirty = true;
	}
	pthread_mutex_unlock(&ig_lock);
	return rc < 0 ? rc : (int)size;
}

static int
pf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct ingest *ig = NULL;
	struct fspath fp;
	int rc = 0;

	if (fi && fi->fh)
		ig = ((struct handle *)(uintptr_t)fi->fh)->ig;
	pthread_mutex_lock(&ig_lock);
	if (ig == NULL)
		ig = ingest_find(path);
	if (ig == NULL) {
		pthread_mutex_unlock(&ig_lock);
		if (path_parse(path, now_ns(), &fp) == 0 && fp.node == NODE_INGEST_FILE)
			return -ENOENT;
		return -EROFS;
	}
	if (size < 0 || (uint64_t)size > INGEST_MAX)
		rc = -EFBIG;
	else if ((size_t)size <= ig->data.len) {
		ig->data.len = (size_t)size;
		if (ig->data.data)
			ig->data.data[size] = '\0';
	} else if ((rc = buf_reserve(&ig->data, (size_t)size - ig->data.len)) == 0) {
		memset(ig->data.data + ig->data.len, 0, (size_t)size - ig->data.len);
		ig->data.len = (size_t)size;
		ig->data.data[size] = '\0';
	}
	if (rc == 0)
		ig->dirty = true;
	pthread_mutex_unlock(&ig_lock);
	return rc;
}

/* Parse and store what an ingest file holds. Called without ig_lock. */
static int
ingest_store(struct fsctx *fs, struct ingest *ig)
{
	struct labelset ls = { .n = 0 };
	struct store_input in;
	struct store_ref ref;
	struct buf err = { 0 }, data = { 0 };
	char idh[17];
	int64_t t0 = 0;
	int rc;

	pthread_mutex_lock(&ig->store_lock);
	pthread_mutex_lock(&ig_lock);
	if (!ig->dirty) {
		rc = ig->result;
		pthread_mutex_unlock(&ig_lock);
		pthread_mutex_unlock(&ig->store_lock);
		return rc;
	}
	ig->dirty = false;
	rc = buf_add(&data, ig->data.data ? ig->data.data : "", ig->data.len);
	pthread_mutex_unlock(&ig_lock);
	if (rc < 0)
		goto out;
	t0 = now_ns();
	if (ig->fp.ingest_labels[0] && labels_parse(ig->fp.ingest_labels, &ls, &err) < 0) {
		rc = -EINVAL;
		goto out;
	}
	memset(&in, 0, sizeof(in));
	in.service = ig->fp.service;
	in.type = ig->fp.type;
	in.labels = &ls;
	in.source = "ingest";
	rc = store_put(fs->st, &in, data.data, data.len, &ref, &err);
	metrics_observe("profilefs_ingest_duration_seconds", "source=\"ingest\"",
	    (double)(now_ns() - t0) / 1e9);
	if (rc == 0) {
		store_id_format(ref.id, idh);
		log_info("ingest: stored %s as %s/%s profile %s (%zu bytes)", ig->path,
		    ig->fp.service, ref.type, idh, data.len);
		metrics_add("profilefs_ingested_profiles_total", "source=\"ingest\",outcome=\"ok\"", 1);
		metrics_add("profilefs_ingested_bytes_total", "source=\"ingest\"", (double)data.len);
	}
out:
	if (rc < 0) {
		log_warnx("ingest: refused %s: %s", ig->path,
		    err.data ? err.data : strerror(-rc));
		metrics_add("profilefs_ingested_profiles_total", rc == -EINVAL ?
		    "source=\"ingest\",outcome=\"invalid\"" : rc == -EFBIG ?
		    "source=\"ingest\",outcome=\"too_large\"" : "source=\"ingest\",outcome=\"error\"", 1);
		/* EIO for storage trouble, EINVAL for everything the file did wrong. */
		if (rc != -EIO && rc != -ENOMEM && rc != -EFBIG)
			rc = -EINVAL;
	}
	pthread_mutex_lock(&ig_lock);
	ig->result = rc;
	pthread_mutex_unlock(&ig_lock);
	pthread_mutex_unlock(&ig->store_lock);
	labels_clear(&ls);
	buf_free(&err);
	buf_free(&data);
	return rc;
}

static int
pf_flush(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	(void)path;
	if (h == NULL || h->kind != H_INGEST)
		return 0;
	return ingest_store(ctx(), h->ig);
}

static int
pf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	return pf_flush(path, fi);
}

static int
pf_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct fsctx *fs = ctx();
	struct ingest **pp, *ig;

	(void)path;
	if (h == NULL)
		return 0;
	if (h->kind == H_CONTENT) {
		cache_release(fs->files, h->ce);
		free(h);
		return 0;
	}
	ig = h->ig;
	free(h);
	pthread_mutex_lock(&ig_lock);
	if (--ig->opens > 0) {
		pthread_mutex_unlock(&ig_lock);
		return 0;
	}
	for (pp = &ig_open; *pp && *pp != ig; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = ig->next;
	pthread_mutex_unlock(&ig_lock);
	/* Written but never flushed (a writer that died): store it now. */
	if (ig->dirty)
		ingest_store(fs, ig);
	if (ig->data.len == 0 && ig->result == 0)
		log_warnx("ingest: %s was empty; nothing stored", ig->path);
	buf_free(&ig->data);
	pthread_mutex_destroy(&ig->store_lock);
	free(ig->path);
	free(ig);
	return 0;
}

static int
pf_mkdir(const char *path, mode_t mode)
{
	struct fspath fp;

	(void)mode;
	if (path_parse(path, now_ns(), &fp) == 0 && fp.node == NODE_INGEST)
		return 0;
	if (strncmp(path, "/ingest/", 8) == 0)
		return -EINVAL;
	return -EROFS;
}

static int
pf_unlink(const char *path)
{
	return strncmp(path, "/ingest/", 8) == 0 ? -ENOENT : -EROFS;
}

static int
pf_symlink(const char *target, const char *path)
{
	(void)target;
	(void)path;
	return -EROFS;
}

static int
pf_link(const char *from, const char *to)
{
	(void)from;
	(void)to;
	return -EROFS;
}

static int
pf_mknod(const char *path, mode_t mode, dev_t dev)
{
	(void)mode;
	(void)dev;
	return strncmp(path, "/ingest/", 8) == 0 ? -EINVAL : -EROFS;
}

static int
pf_setxattr(const char *path, const char *name, const char *value, size_t size, int flags)
{
	(void)path;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	return -ENOTSUP;
}

static int
pf_rmdir(const char *path)
{
	(void)path;
	return -EROFS;
}

static int
pf_rename(const char *from, const char *to, unsigned int flags)
{
	(void)from;
	(void)to;
	(void)flags;
	return -EROFS;
}

static int
pf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	(void)fi;
	/* cp -p on ingest files: harmless, accept. */
	return strncmp(path, "/ingest/", 8) == 0 ? 0 : -EROFS;
}

static int
pf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	(void)fi;
	return strncmp(path, "/ingest/", 8) == 0 ? 0 : -EROFS;
}

static int
pf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)tv;
	(void)fi;
	return strncmp(path, "/ingest/", 8) == 0 ? 0 : -EROFS;
}

static int
pf_statfs(const char *path, struct statvfs *sv)
{
	struct store_stats s;

	(void)path;
	store_get_stats(ctx()->st, &s);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_blocks = s.disk_bytes / 4096 + 1;
	sv->f_files = s.series;
	sv->f_namemax = 255;
	return 0;
}

static void *
pf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 1;
	cfg->entry_timeout = 1.0;
	/*
	 * Attributes are not cached: a generated file's size changes with new
	 * data, and the kernel must ask (with the open handle, so an open file
	 * keeps its snapshot's size) before it trusts i_size for a read.
	 */
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->nullpath_ok = 0;
	return fuse_get_context()->private_data;
}

static const struct fuse_operations pf_ops = {
	.init		= pf_init,
	.getattr	= pf_getattr,
	.readdir	= pf_readdir,
	.open		= pf_open,
	.read		= pf_read,
	.create		= pf_create,
	.write		= pf_write,
	.truncate	= pf_truncate,
	.flush		= pf_flush,
	.fsync		= pf_fsync,
	.release	= pf_release,
	.mkdir		= pf_mkdir,
	.unlink		= pf_unlink,
	.rmdir		= pf_rmdir,
	.symlink	= pf_symlink,
	.link		= pf_link,
	.mknod		= pf_mknod,
	.setxattr	= pf_setxattr,
	.rename		= pf_rename,
	.chmod		= pf_chmod,
	.chown		= pf_chown,
	.utimens	= pf_utimens,
	.statfs		= pf_statfs,
};

/* --- README.txt --------------------------------------------------------- */

static int
readme_render(struct fsctx *fs, struct buf *b)
{
	const char *m = fs->mountpoint;

	buf_printf(b,
"profilefs %s: continuous profiling as files\n"
"\n"
"Layout\n"
"  %s/\n"
"    README.txt                  this help\n"
"    .targets.json               with --scrape: each scraped target's health and last error\n"
"    ingest/<service>/<type>/[<k=v,...>/]<file>   drop box for pprof files\n"
"    <service>/<type>/           cpu, heap, allocs, block, mutex, goroutine, ...\n"
"      all/                      every label set of the service and type\n"
"      <k=v,k2=v2>/              one label set (any selector works on lookup)\n"
"        <range>/                last-5m last-15m last-1h last-6h last-24h last-7d all,\n"
"                                days (2026-11-22), hours (2026-11-22T10); on lookup also\n"
"                                last-<n><s|m|h|d>, minutes (2026-11-22T10:05) and\n"
"                                FROM..TO (2026-11-22T10:00..2026-11-22T10:30)\n"
"          merged.pb.gz          every profile of the range merged (pprof)\n"
"          meta.json             counts, time span, sample types, ids, what was left out\n"
"          flamegraph.svg        interactive flame graph (click to zoom, Search: regex);\n"
"                                flamegraph.<sample_type>.svg for the other types\n"
"          folded.txt            collapsed stacks: frame;frame;leaf value\n"
"          top.txt               top functions by flat and cumulative value\n"
"          diff.pb.gz, diff.svg  this range against the range of equal length before it\n"
"          vs/<base>/            the same against <range>, <selector>@<range> or <selector>:\n"
"                                diff.pb.gz diff.svg top.txt meta.json\n"
"          timeline.svg, .csv    the total per step across the range\n"
"          profiles/<UTC time>-<id>.pb.gz   each stored profile\n"
"\n"
"All times are UTC. In names, %%, /, ',' and '=' are written %%XX.\n"
"Counters (cpu, alloc_*, contentions, delay) are summed over a range; gauges\n"
"(inuse_*, goroutines) are averaged over each series' snapshots in it, then\n"
"summed across the series a selector matches.\n"
"\n"
"Examples\n"
"  ls %s/\n"
"  cp cpu.pprof %s/ingest/checkout/cpu/region=eu/\n"
"  cp heap.pb.gz %s/ingest/checkout/auto/      (type inferred from the samples)\n"
"  go tool pprof -top %s/checkout/cpu/all/last-1h/merged.pb.gz\n"
"  cat %s/checkout/cpu/region=eu/last-24h/meta.json\n"
"  cp -r %s/checkout/heap/all/last-1h/profiles /backup/\n"
"\n"
"A copy into ingest/ succeeds only once the profile is stored; a file that is\n"
"not a pprof profile fails with 'Invalid argument' and the reason is in the\n"
"daemon's log. Everything outside ingest/ is read-only.\n",
	    PROFILEFS_VERSION, m, m, m, m, m, m, m);
	return b->data ? 0 : -ENOMEM;
}

/* --- mount -------------------------------------------------------------- */

/* libfuse's own messages go through log.c like everything else. */
static void
fuse_log_to_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n;

	if (level >= FUSE_LOG_INFO && !log_verbose)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	if (level <= FUSE_LOG_WARNING)
		log_warnx("fuse: %s", msg);
	else
		log_debug("fuse: %s", msg);
}

int
fs_cleanup_stale(const char *mountpoint)
{
	struct stat st;

	if (stat(mountpoint, &st) == 0 || errno != ENOTCONN)
		return 0;
	log_warnx("%s: stale mount from an earlier run; detaching it", mountpoint);
	if (umount2(mountpoint, MNT_DETACH) == 0)
		return 0;
	{
		/* Not root: fusermount3 may unmount what this user mounted. */
		char *const argv[] = { "fusermount3", "-u", "-z", (char *)mountpoint, NULL };
		int status = -1;
		pid_t pid = fork();

		if (pid == 0) {
			execvp(argv[0], argv);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			log_warnx("%s: cannot detach the stale mount; run: fusermount3 -u %s",
			    mountpoint, mountpoint);
			return -EBUSY;
		}
	}
	return 0;
}

/* Whether path is itself a mount point (its device differs from its parent's). */
static bool
is_mountpoint(const char *path)
{
	struct stat a, b;
	char parent[PATH_MAX];

	if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
		return false;
	if (stat(path, &a) < 0 || stat(parent, &b) < 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

int
fs_main(struct fsctx *fs, const struct fs_opts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se;
	struct fuse *f;
	struct stat st;
	int rc = 0;

	if (fs_cleanup_stale(o->mountpoint) < 0)
		return -EBUSY;
	if (stat(o->mountpoint, &st) < 0) {
		if (errno == ENOENT && mkdir(o->mountpoint, 0755) == 0) {
			log_info("created mount point %s", o->mountpoint);
		} else {
			log_warn("mount point %s", o->mountpoint);
			return -errno;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		log_warnx("mount point %s is not a directory", o->mountpoint);
		return -ENOTDIR;
	} else if (is_mountpoint(o->mountpoint)) {
		log_warnx("%s is already a mount point (another profilefs on it?); "
		    "unmount it first: fusermount3 -u %s", o->mountpoint, o->mountpoint);
		return -EBUSY;
	}
	fs->mountpoint = o->mountpoint;
	fs->files = cache_create(FILE_CACHE_BYTES);
	fs->merges = cache_create(MERGE_CACHE_BYTES);
	if (fs->files == NULL || fs->merges == NULL)
		return -ENOMEM;

	fuse_set_log_func(fuse_log_to_log);
	fuse_opt_add_arg(&args, "profilefs");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, geteuid() == 0 ? "fsname=profilefs,subtype=profilefs,allow_other"
	    : "fsname=profilefs,subtype=profilefs");
	if (o->debug)
		fuse_opt_add_arg(&args, "-d");
	f = fuse_new(&args, &pf_ops, sizeof(pf_ops), fs);
	if (f == NULL) {
		log_warnx("cannot set up the FUSE filesystem");
		fuse_opt_free_args(&args);
		return -EIO;
	}
	fs->fuse = f;
	if (fuse_mount(f, o->mountpoint) != 0) {
		log_warnx("cannot mount on %s (is /dev/fuse there and fuse3 installed? "
		    "is something else mounted there?)", o->mountpoint);
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return -EIO;
	}
	se = fuse_get_session(f);
	if (fuse_set_signal_handlers(se) != 0) {
		rc = -EIO;
		goto unmount;
	}
	log_info("mounted on %s", o->mountpoint);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, o->threads ? o->threads : 16);
	fuse_loop_cfg_set_idle_threads(lc, 4);
	/* A positive result is the signal that ended the loop: a clean stop. */
	if (fuse_loop_mt(f, lc) < 0)
		rc = -EIO;
	fuse_loop_cfg_destroy(lc);
	fuse_remove_signal_handlers(se);
unmount:
	fuse_unmount(f);
	fuse_destroy(f);
	fuse_opt_free_args(&args);
	cache_destroy(fs->files);
	cache_destroy(fs->merges);
	fs->files = fs->merges = NULL;
	log_info("unmounted %s", o->mountpoint);
	return rc;
}
