/*
 * fs: the libfuse3 (high-level, path-based) handlers. Each handler parses its
 * path with path_parse(), asks the store, the view cache, dir.c or ingest.c,
 * and returns one result. Generated files are rendered on first stat or open
 * and cached, so the size stat reports is the size read returns; an open file
 * holds its cache entry (its pin, pin.c), so it reads one consistent snapshot. Inode numbers
 * are a hash of the path, stable across restarts.
 *
 * Writes are accepted only under ingest/ (ingest.c); everything else is
 * read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"
#include "cache.h"
#include "fs_int.h"
#include "views.h"

/*
 * One more request of a kind in profilefs_fuse_requests_total{op=...}: op
 * is a literal, the labels made at compile time (a walk sends 350,000).
 */
#define fs_count(op)	metrics_add(METRIC_FUSE_REQUESTS, "op=\"" op "\"", 1)

struct fsctx *
fs_ctx(void)
{
	return fuse_get_context()->private_data;
}

void
fs_stat(struct stat *st, const char *path, bool dir, off_t size, bool writable,
    int64_t mtime_ns)
{
	const struct fsctx *fs = fs_ctx();
	time_t now = time(NULL);

	memset(st, 0, sizeof(*st));
	st->st_ino = hash_bytes(path, strlen(path)) | 1;
	/* The modes fs_main() chose: the kernel checks them (default_permissions). */
	/* Under a service, the writers may delete (pf_unlink, pf_rmdir). */
	bool del = !writable && path[0] == '/' && path[1] != '\0' &&
	    strcmp(path, "/README.txt") != 0 && strcmp(path, "/.targets.json") != 0;

	if (dir) {
		st->st_mode = S_IFDIR | (writable ? fs->mode_ingest_dir : fs->mode_dir);
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (writable ? fs->mode_ingest_file : fs->mode_file);
		st->st_nlink = 1;
		st->st_size = size;
		st->st_blocks = (size + 511) / 512;
	}
	if (del)
		st->st_mode |= fs->mode_delete;
	st->st_blksize = 65536;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
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
/* Whether the caller deleted under fp's service lately (its rm -r walks: delete.c). */
static bool
deleted_lately(const struct fspath *fp)
{
	return fp->service[0] && delete_recent(fp->service, fuse_get_context()->pid);
}

/*
 * Deletion below a last-* range (the range directory or anything in it). A
 * relative range moves with the clock, so rm -r of last-5m would delete
 * whatever the last five minutes held while rm walked: refused. Its entries
 * go quietly when the caller's rm -r walks a label set, type or service above
 * (whose rmdir deletes the data), and inside an rm -r of the range itself,
 * whose top directory is then the one refusal rm prints. 0: go on, removing
 * nothing; -EPERM: refused, the reason in ingest/errors.txt.
 */
static int
relative_delete(const char *path, const struct fspath *fp)
{
	char rdir[PATH_MAX], root[PATH_MAX];
	const char *p = path;
	int i;

	for (i = 0; i < 4 && p; i++)	/* /<service>/<type>/<selector>/<range> */
		p = strchr(p + 1, '/');
	snprintf(rdir, sizeof(rdir), "%.*s", p ? (int)(p - path) : (int)strlen(path), path);
	if (delete_walk_root(fuse_get_context()->pid, root, sizeof(root)) &&
	    ((delete_path_under(rdir, root) && strcmp(rdir, root) != 0) ||
	    (delete_path_under(path, root) && strcmp(path, root) != 0)))
		return 0;
	errlog_note("delete %s: refused: %s moves with the clock, so deleting through it "
	    "would take whatever it held at that moment; delete an explicit range (a day "
	    "2026-11-22, an hour 2026-11-22T10, FROM..TO), a stored profile there, or the "
	    "label set", path, fp->range.name);
	return -EPERM;
}

/*
 * A generated file's bytes (first, so the entry's value reads as a struct
 * buf) and whether they differ for a caller who may not see kernel
 * addresses: such a file never goes through the kernel's page cache, which
 * every reader of the inode shares.
 */
struct content {
	struct buf	 b;
	bool		 by_class;
};

static void
free_content(void *v)
{
	buf_free(&((struct content *)v)->b);
	free(v);
}

/*
 * The key of path's content for the caller: a file that may hold kernel
 * text addresses is kept apart for callers who may not see them (fp's
 * hide_kernel set, the key path with a \x01 before it), so that nothing
 * made for one class of readers is served to the other (query.h:
 * kaddr_visible()). Returns path, or key (of size n).
 */
static const char *
content_key(const char *path, struct fspath *fp, char *key, size_t n)
{
	if ((fp->node != NODE_VIEW && fp->node != NODE_VS_VIEW && fp->node != NODE_PROFILE) ||
	    kaddr_visible(fuse_get_context()->pid) ||
	    (size_t)snprintf(key, n, "\x01%s", path) >= n)
		return path;
	fp->hide_kernel = true;
	return key;
}

/*
 * A stored profile for the caller: in *b as stored, or, for a caller who
 * may not see kernel addresses, decoded and encoded again without them
 * when it holds any. *by_class: whether the two differ.
 */
static int
profile_for_caller(const struct fspath *fp, struct buf *b, bool *by_class)
{
	struct profile *p = NULL;
	struct buf err = { 0 };
	int rc;

	*by_class = true;
	if ((rc = profile_decode(b->data, b->len, &p, &err)) < 0) {
		/* Nothing can be told of it: not served where it must be checked. */
		if (fp->hide_kernel)
			log_warnx("%s: the stored profile does not decode: %s", fp->view,
			    err.data ? err.data : strerror(-rc));
		goto out;
	}
	if (!fp->hide_kernel) {
		*by_class = kaddr_any(p);
		goto out;
	}
	if (kaddr_hide(p) == 0) {
		*by_class = false;
		goto out;
	}
	buf_reset(b);
	rc = profile_encode(p, true, b);
out:
	profile_free(p);
	buf_free(&err);
	return fp->hide_kernel ? rc : 0;
}

struct fill_arg {
	struct fsctx		*fs;
	const struct fspath	*fp;
	const char		*path;
};

static int readme_render(struct fsctx *fs, struct buf *out);

/* Whether the profile's name is ref's own, in a range and series that hold it. */
static bool
profile_in_path(struct fsctx *fs, const struct fspath *fp, const struct store_ref *ref)
{
	const struct series *s = reader_series_get(fs->rd, ref->series);
	struct query q = { .service = fp->service, .type = fp->type };
	struct query_sel sel;
	char want[128];
	bool ok;

	path_profile_name(ref->time, ref->id, want, sizeof(want));
	if (s == NULL || strcmp(want, fp->view) != 0 || ref->time < fp->range.from ||
	    ref->time >= fp->range.to)
		return false;
	if (query_sel_parse(fp->selector, &sel, NULL) < 0) {
		query_sel_free(&sel);
		return false;
	}
	query_sel_apply(&sel, &q);
	ok = query_match(&q, s);
	query_sel_free(&sel);
	return ok;
}

static int
fill_file(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct fill_arg *a = varg;
	struct content *ct = xcalloc(1, sizeof(*ct));
	struct buf *b = &ct->b;
	struct store_ref ref;
	int rc;

	switch (a->fp->node) {
	case NODE_README:
		rc = readme_render(a->fs, b);
		break;
	case NODE_TARGETS:
		rc = a->fs->targets_json ? a->fs->targets_json(a->fs->targets_arg, b) : -ENOENT;
		break;
	case NODE_ERRORS:
		rc = errlog_render(b);
		break;
	case NODE_PROFILE:
		rc = reader_get(a->fs->rd, a->fp->profile_id, &ref, b);
		/* Serving it told the store its size: not unknown any more. */
		memo_profile_forget(a->fp->profile_id);
		if (rc == 0 && !profile_in_path(a->fs, a->fp, &ref))
			rc = -ENOENT;
		if (rc == 0)
			rc = profile_for_caller(a->fp, b, &ct->by_class);
		break;
	default:
		ct->by_class = true;
		rc = views_render(a->fs, a->fp, b);
		break;
	}
	/* Appends that failed leave a partial file: refuse it rather than serve it. */
	if (rc == 0 && (rc = buf_error(b)) < 0)
		log_warnx("%s: cannot generate the file: %s", a->fp->view[0] ? a->fp->view :
		    "content", strerror(-rc));
	if (rc == 0 && b->data == NULL)
		rc = buf_reserve(b, 0);
	*val = ct;
	*size = b->cap + sizeof(*ct);
	*free_fn = free_content;
	return rc;
}

/*
 * What a failed generation tells the caller: EAGAIN when the memory budget
 * was short (try again), EFBIG for a file over its size limit (the reason is
 * in the log), EIO for storage trouble, else the file does not exist.
 */
static int
errno_of(int rc)
{
	if (rc == -ENOMEM || rc == -EAGAIN)
		return -EAGAIN;
	return rc == -EIO || rc == -EFBIG ? rc : -ENOENT;
}

/* The latest time whose data fp's content shows (INT64_MAX: any). */
static int64_t
content_scope(const struct fspath *fp)
{
	if (fp->node == NODE_VIEW || fp->node == NODE_PROFILE)
		return fp->range.to;
	if (fp->node == NODE_VS_VIEW)
		return fp->range.to > fp->base_range.to ? fp->range.to : fp->base_range.to;
	return INT64_MAX;	/* README, .targets.json */
}

/* How long content of fp may be served at one generation (0: as long as it is current). */
static int64_t
content_max_age(const struct fspath *fp)
{
	if (fp->node == NODE_ERRORS)	/* read right after a refusal: fresh, but one stat and read agree */
		return INT64_C(100) * 1000000;
	return fp->range.relative || fp->node == NODE_TARGETS ||
	    (fp->node == NODE_VS_VIEW && fp->base_range.relative) ? RELATIVE_MAX_AGE : 0;
}

int
fs_content(struct fsctx *fs, const char *path, const struct fspath *fp,
    struct cache_entry **ce)
{
	struct fill_arg a = { fs, fp, path };

	return cache_get_scoped(fs->files, path, reader_generation(fs->rd), content_scope(fp),
	    content_max_age(fp), fill_file, &a, ce);
}

struct size_val {
	off_t	 size;
	int64_t	 born;
	uint64_t stored;	/* a stored profile's bytes in the database (its st_blocks) */
	int	 rc;
};

static int
fill_size(void *varg, void **val, size_t *size, void (**free_fn)(void *))
{
	struct fill_arg *a = varg;
	struct size_val *v = xcalloc(1, sizeof(*v));
	struct store_ref ref = { .time = 0 };
	struct cache_entry *ce;

	/*
	 * A stored profile's size is in the store's index once it was served
	 * (to a caller who sees kernel addresses: others get it made); its
	 * time is its file's time, its blocks what the store holds.
	 */
	if (a->fp->node == NODE_PROFILE) {
		uint64_t z;

		v->rc = memo_profile_size(a->fs->rd, a->fp->profile_id, &ref, &z);
		v->stored = ref.stored;
		if (!a->fp->hide_kernel && (v->rc == 0 || v->rc == -ENOENT)) {
			if (v->rc == 0 && !profile_in_path(a->fs, a->fp, &ref))
				v->rc = -ENOENT;
			v->size = (off_t)z;
			v->born = ref.time;
			goto out;
		}
	}
	v->rc = fs_content(a->fs, a->path, a->fp, &ce);
	if (v->rc == 0) {
		v->size = (off_t)((struct buf *)ce->val)->len;
		v->born = ref.time ? ref.time : ce->born;
	}
	cache_release(a->fs->files, ce);
out:
	*val = v;
	*size = sizeof(*v);
	*free_fn = free;
	/* Kept: a size, a file that is not there, one too big; not a passing shortage. */
	return v->rc == 0 || v->rc == -ENOENT || v->rc == -EFBIG ? v->rc : -ENOMEM;
}

/*
 * The size and birth of a generated file. Sizes are remembered apart from
 * contents, far more of them: a second du, find or ls -l over many ranges
 * makes nothing again although the contents left the cache.
 */
static int
content_size(struct fsctx *fs, const char *path, const struct fspath *fp, off_t *size,
    int64_t *born, uint64_t *stored)
{
	struct fill_arg a = { fs, fp, path };
	struct cache_entry *ce;
	const struct size_val *v;
	int rc;

	cache_get_scoped(fs->sizes, path, reader_generation(fs->rd), content_scope(fp),
	    content_max_age(fp), fill_size, &a, &ce);
	if (ce == NULL)
		return -ENOMEM;
	v = ce->val;
	rc = v ? v->rc : -ENOMEM;
	if (rc == 0) {
		*size = v->size;
		*born = v->born;
		*stored = v->stored;
	}
	cache_release(fs->sizes, ce);
	return rc;
}

/*
 * The size and birth of a generated file if it is known without making it:
 * remembered (content_size()) or the content cached. -ENOENT: not known.
 */
static int
content_size_known(struct fsctx *fs, const char *path, const struct fspath *fp,
    off_t *size, int64_t *born, uint64_t *stored)
{
	uint64_t gen = reader_generation(fs->rd);
	struct cache_entry *ce;
	int rc = -ENOENT;

	if (cache_peek_scoped(fs->sizes, path, gen, content_scope(fp), content_max_age(fp),
	    &ce) == 0) {
		const struct size_val *v = ce->val;

		if (v && v->rc == 0) {
			*size = v->size;
			*born = v->born;
			*stored = v->stored;
			rc = 0;
		}
		cache_release(fs->sizes, ce);
		if (rc == 0)
			return 0;
	}
	if (fp->node != NODE_PROFILE && cache_peek_scoped(fs->files, path, gen,
	    content_scope(fp), content_max_age(fp), &ce) == 0) {
		if (ce->rc == 0) {
			*size = (off_t)((struct buf *)ce->val)->len;
			*born = ce->born;
			rc = 0;
		}
		cache_release(fs->files, ce);
	}
	return rc;
}

/*
 * The process (thread group) behind the current FUSE request: the kernel
 * gives the calling thread's id, and a multi-threaded reader (go tool pprof)
 * may open on one thread and fstat on another.
 */
pid_t
fs_caller(void)
{
	pid_t tid = fuse_get_context()->pid, tgid = tid;
	char path[64], line[128];
	FILE *f;

	if (tid <= 0)
		return tid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((f = fopen(path, "re")) == NULL)
		return tid;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Tgid:", 5) == 0) {
			tgid = (pid_t)strtol(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return tgid > 0 ? tgid : tid;
}


/* What vs/<base> points at: ../.vs/<base>. Its length. */
static size_t
vs_link(const char *path, char *out, size_t size)
{
	const char *base = strrchr(path, '/') + 1;

	return (size_t)snprintf(out, size, "../.vs/%s", base);
}

/* A name of the tree that is not well formed: why, noted (errlog.c) for the user. */
static void
name_explain(const char *path)
{
	struct buf why = { 0 };

	if (path_why(path, clock_now_ns(), &why) < 0)
		errlog_note_name("lookup %s: %s", path, why.data ? why.data : "malformed name");
	buf_free(&why);
}

/*
 * A lookup below ingest/ that the grammar refused: a malformed label set is
 * EINVAL, with the reason in the log, so that cp says more than ENOENT.
 */
static int
ingest_refused(const char *path)
{
	struct buf why = { 0 };
	int rc = -ENOENT;

	if (path_in_ingest(path) && path_ingest_why(path, &why) < 0) {
		errlog_note("ingest: %s: not a label set: %s (a directory under "
		    "ingest/<service>/<type>/ is k=v[,k=v...], with %%, /, ',' and '=' written %%XX)",
		    path, why.data ? why.data : "malformed");
		rc = -EINVAL;
	}
	buf_free(&why);
	return rc;
}

/*
 * Whether the caller's lookup is part of a mkdir(2): the thread is blocked in
 * that system call (/proc/<tid>/syscall; readable to a daemon run by root or
 * by the caller's user, else false). Below ingest/, such a lookup finds only
 * the directories made (ingest_made()), so that mkdir makes one, not EEXIST.
 */
static bool
caller_in_mkdir(void)
{
	pid_t tid = fuse_get_context()->pid;
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tid);
	if (tid <= 0 || (f = fopen(path, "re")) == NULL)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
#ifdef SYS_mkdir
	if (nr == SYS_mkdir)
		return true;
#endif
	return nr == SYS_mkdirat;
}

/* dir_exists() for a lookup: once more when the reader's listing may predate the name. */
static bool
lookup_exists(struct fsctx *fs, const struct fspath *fp, const struct range *r)
{
	const char *type = fp->node == NODE_SERVICE ? NULL : fp->type;
	const char *sel = fp->node == NODE_SERVICE || fp->node == NODE_TYPE ? NULL : fp->selector;

	return dir_exists(fs, fp->service, type, sel, r) ||
	    (reader_missed(fs->rd) && dir_exists(fs, fp->service, type, sel, r));
}

/*
 * A view or a stored profile, to a caller walking the tree (walk.c), without
 * making it: its size if known, else 0 -- a view is read with direct_io and a
 * stored profile asks its size again on open, so readers still get every
 * byte -- and as blocks the bytes the store holds for it (none for a view).
 * 0 and *st, -ENOENT (the ordinary stat tells), or -EIO.
 */
static int
walk_stat(struct fsctx *fs, const char *path, const char *key, const struct fspath *fp,
    struct stat *st)
{
	struct store_ref ref;
	uint64_t stored = 0, z = 0;
	off_t size = 0;
	int64_t born = 0;
	int rc;

	/* A stored profile's size, when known, is the store's (memo.c), but for hidden kernel addresses. */
	if (((fp->node != NODE_PROFILE || fp->hide_kernel) &&
	    content_size_known(fs, key, fp, &size, &born, &stored) == 0) ||
	    fp->node != NODE_PROFILE)
		goto out;
	rc = memo_profile_size(fs->rd, fp->profile_id, &ref, &z);
	if (rc == -EIO)
		return rc;
	if ((rc != 0 && rc != -ENODATA) || !profile_in_path(fs, fp, &ref))
		return -ENOENT;
	size = rc == 0 && !fp->hide_kernel ? (off_t)z : 0;
	born = ref.time;
	stored = ref.stored;
out:
	fs_stat(st, path, false, size, false, born);
	st->st_blocks = (blkcnt_t)((stored + 511) / 512);
	return 0;
}

static int
pf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fsctx *fs = fs_ctx();
	struct fspath fp;
	int rc;

	fs_count("getattr");
	if (fi && fi->fh && ((struct handle *)(uintptr_t)fi->fh)->kind != H_DIR) {
		struct handle *h = (struct handle *)(uintptr_t)fi->fh;

		if (h->kind == H_INGEST) {
			off_t size = 0;

			ingest_size(fs, path, h->ig, &size);
			fs_stat(st, path, false, size, true, 0);
			return 0;
		}
		fs_stat(st, path, false, (off_t)((struct buf *)pin_entry(h->pin)->val)->len, false,
		    pin_entry(h->pin)->born);
		return 0;
	}
	if (path_parse(path, clock_now_ns(), &fp) < 0) {
		/* A bad service, type or label set in ingest/: say why it is not there. */
		if (path_in_ingest(path))
			ingest_explain(path);
		else
			name_explain(path);
		return ingest_refused(path);
	}
	switch (fp.node) {
	case NODE_ROOT:
		fs_stat(st, path, true, 0, false, 0);
		return 0;
	case NODE_INGEST:
		if (fp.ingest_depth > 1 && !ingest_made(fs, path) && caller_in_mkdir())
			return -ENOENT;
		fs_stat(st, path, true, 0, true, 0);
		return 0;
	case NODE_INGEST_FILE: {
		off_t size;

		if ((rc = ingest_size(fs, path, NULL, &size)) == 0)
			fs_stat(st, path, false, size, true, 0);
		return rc;
	}
	case NODE_SERVICE:
	case NODE_TYPE:
	case NODE_SELECTOR:
	case NODE_RANGE:
	case NODE_PROFILES:
	case NODE_VS:
	case NODE_VS_BASE: {
		/*
		 * A stat of each entry of a directory is a stat of the
		 * directory too (its search permission): remembered a moment.
		 */
		uint64_t gen = reader_generation(fs->rd);
		bool top = fp.node == NODE_SERVICE || fp.node == NODE_TYPE ||
		    fp.node == NODE_SELECTOR;
		int64_t newest = 0;

		if (memo_dir_get(fs->rd, path, &newest)) {
			if (!top)
				ttl_keep_dirs();
			fs_stat(st, path, true, 0, false, newest);
			return 0;
		}
		rc = lookup_exists(fs, &fp, top ? NULL : &fp.range);
		if (!rc && !deleted_lately(&fp))
			return -ENOENT;
		/* Below a label set: only the existence of a range can change. */
		if (rc && !top)
			ttl_keep_dirs();
		/* Its newest profile's time, so that ls -lt finds the active ones. */
		if (top)
			newest = dir_newest(fs, fp.service,
			    fp.node == NODE_SERVICE ? NULL : fp.type,
			    fp.node == NODE_SELECTOR ? fp.selector : NULL);
		if (rc)
			memo_dir_put(fs->rd, gen, path, newest);
		fs_stat(st, path, true, 0, false, newest);
		return 0;
	}
	case NODE_VS_LINK: {
		char target[8 + 256];

		if (!dir_exists(fs, fp.service, fp.type, fp.selector, &fp.range))
			return -ENOENT;
		fs_stat(st, path, false, (off_t)vs_link(path, target, sizeof(target)), false, 0);
		st->st_mode = S_IFLNK | 0777;
		return 0;
	}
	case NODE_README:
	case NODE_TARGETS:
	case NODE_ERRORS:
	case NODE_VIEW:
	case NODE_VS_VIEW:
	case NODE_PROFILE: {
		char kbuf[PATH_MAX + 2];
		const char *key = content_key(path, &fp, kbuf, sizeof(kbuf));
		bool view = fp.node == NODE_VIEW || fp.node == NODE_VS_VIEW;
		uint64_t stored = 0;
		off_t size;
		int64_t born;

		/* While the file is open: the size of the version its readers share. */
		if (pin_stat(fs, key, &size, &born)) {
			fs_stat(st, path, false, size, false, born);
			if (view)
				st->st_blocks = 0;
			return 0;
		}
		if ((view || fp.node == NODE_PROFILE) &&
		    walk_note(fuse_get_context()->pid, path) &&
		    (rc = walk_stat(fs, path, key, &fp, st)) != -ENOENT)
			return rc < 0 ? errno_of(rc) : 0;
		rc = content_size(fs, key, &fp, &size, &born, &stored);
		/* Listed before a deletion took its data, while rm -r walks (delete.c). */
		if (rc == -ENOENT && fp.node != NODE_README && fp.node != NODE_TARGETS &&
		    fp.node != NODE_ERRORS && deleted_lately(&fp)) {
			size = 0;
			born = 0;
			rc = 0;
		}
		if (rc == 0)
			fs_stat(st, path, false, size, false, born);
		/* du counts what the store holds of each profile; views take no room. */
		if (rc == 0 && (view || fp.node == NODE_PROFILE))
			st->st_blocks = (blkcnt_t)((stored + 511) / 512);
		if (rc < 0 && rc != -ENOENT) {
			metrics_add(METRIC_FUSE_ERRORS, "op=\"getattr\"", 1);
		}
		return rc < 0 ? errno_of(rc) : 0;
	}
	}
	return -ENOENT;
}

static int
pf_readlink(const char *path, char *out, size_t size)
{
	struct fspath fp;

	fs_count("readlink");
	if (path_parse(path, clock_now_ns(), &fp) < 0)
		return -ENOENT;
	if (fp.node != NODE_VS_LINK)
		return -EINVAL;
	if (size > 0)
		vs_link(path, out, size);	/* cut to size, as readlink(2) does */
	return 0;
}

/*
 * The type and inode number of entry name of directory path (fp), so that
 * readers of the listing know directories from files without a stat of each
 * (rm -r, find): a stat of a generated file makes it. false: unknown
 * (ingest/, which holds files being written). *full: st holds all the
 * attributes, for a READDIRPLUS answer, whose kernel entries then exist
 * without a lookup, so that rm -r (unlinkat after the listing) and a
 * non-writer's refused rm make nothing, and du, find and ls -l of a listing
 * send one request per entry (its stat), not two: directories and
 * generated files below a service (size 0, read with direct_io), and, to a
 * caller walking the tree (walk.c), stored profiles with the size the store
 * knows (memo.c) -- the kernel asks again
 * on each stat and read (attr_timeout 0), but a size it takes from the
 * listing cuts the page cache of a profile already read, so a profile gets
 * its true size, or 0 only while it was never served (nothing cached). Not
 * README.txt (page-cached), nor a stored profile for a caller who may not
 * see kernel addresses (served apart from the page cache, which a size of
 * the other version would cut for the others: plain is false).
 */
static bool
entry_type(struct fsctx *fs, const char *path, const struct fspath *fp, const char *name,
    bool plain, struct stat *st, bool *full)
{
	char child[PATH_MAX];
	struct fspath cp;

	*full = false;
	if (fp->node == NODE_INGEST || snprintf(child, sizeof(child), "%s/%s",
	    strcmp(path, "/") == 0 ? "" : path, name) >= (int)sizeof(child))
		return false;
	if (fp->node == NODE_PROFILES) {
		/* <time>-<id>.pb.gz, as list_profiles() wrote it: no path_parse() per entry. */
		const char *dash = strrchr(name, '-');
		char *end = NULL;

		cp.node = NODE_PROFILE;
		cp.profile_id = dash ? strtoull(dash + 1, &end, 16) : 0;
		if (end == NULL || strcmp(end, ".pb.gz") != 0)
			return false;
	} else if (path_parse(child, clock_now_ns(), &cp) < 0) {
		return false;
	}
	memset(st, 0, sizeof(*st));
	st->st_ino = hash_bytes(child, strlen(child)) | 1;	/* as fs_stat() */
	switch (cp.node) {
	case NODE_VIEW:
	case NODE_VS_VIEW:
		fs_stat(st, child, false, 0, false, 0);
		*full = true;
		return true;
	case NODE_PROFILE: {
		struct store_ref ref;
		uint64_t z = 0;
		int rc;

		st->st_mode = S_IFREG;
		if (!plain || ((rc = memo_profile_size(fs->rd, cp.profile_id, &ref, &z)) != 0 &&
		    rc != -ENODATA))
			return true;
		fs_stat(st, child, false, rc == 0 ? (off_t)z : 0, false, ref.time);
		st->st_blocks = (blkcnt_t)((ref.stored + 511) / 512);
		*full = true;
		return true;
	}
	case NODE_README:
	case NODE_TARGETS:
	case NODE_ERRORS:
	case NODE_INGEST_FILE:
		st->st_mode = S_IFREG;
		return true;
	case NODE_VS_LINK:
		st->st_mode = S_IFLNK;
		return true;
	case NODE_ROOT:
	case NODE_INGEST:
		st->st_mode = S_IFDIR;
		return true;
	default:
		fs_stat(st, child, true, 0, false, 0);
		*full = true;
		return true;
	}
}

/*
 * An open directory (opendir's fi->fh): its listing, made at the first
 * readdir from offset 0 and kept for the readdirs that go on from later
 * offsets -- a listing of last-7d/profiles/ (40,000 names) takes some 2,000
 * READDIRPLUS replies, and making it again for each cost ls seconds -- with
 * where the last reply stopped. A rewind (offset 0) lists afresh.
 */
static void handle_link(struct fsctx *fs, struct handle *h);
static void handle_unlink(struct fsctx *fs, struct handle *h);

struct dirlist {
	struct handle	 h;		/* H_DIR, listed in fs->handles while open */
	struct buf	 names;
	int		 rc;
	bool		 ready;
	off_t		 next_off;	/* the offset the next reply starts from */
	size_t		 next_pos;	/* and its name's place in names */
};

static int
pf_opendir(const char *path, struct fuse_file_info *fi)
{
	struct dirlist *dl = calloc(1, sizeof(*dl));

	(void)path;
	fs_count("opendir");
	if (dl == NULL)
		return -ENOMEM;
	dl->h.kind = H_DIR;
	handle_link(fs_ctx(), &dl->h);
	fi->fh = (uintptr_t)dl;
	return 0;
}

static int
pf_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct dirlist *dl = (struct dirlist *)(uintptr_t)fi->fh;

	(void)path;
	if (dl) {
		handle_unlink(fs_ctx(), &dl->h);
		buf_free(&dl->names);
		free(dl);
	}
	return 0;
}

static int
pf_readdir(const char *path, void *dbuf, fuse_fill_dir_t filler, off_t off,
    struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dirlist *dl = fi ? (struct dirlist *)(uintptr_t)fi->fh : NULL, one = { .rc = 0 };
	struct fspath fp;
	const char *p;
	int rc;

	fs_count("readdir");
	if (path_parse(path, clock_now_ns(), &fp) < 0)
		return -ENOENT;
	if (fp.node != NODE_INGEST)	/* where an rm -r began (relative_delete()) */
		delete_walk_note(fuse_get_context()->pid, path);
	if (dl == NULL)
		dl = &one;
	if (!dl->ready || off == 0) {
		buf_reset(&dl->names);
		dl->rc = dir_list(fs_ctx(), path, &fp, &dl->names);
		/* Emptied by a deletion while rm -r walks it (delete.c). */
		if (dl->rc == -ENOENT && fp.node != NODE_ROOT && fp.node != NODE_INGEST &&
		    deleted_lately(&fp)) {
			buf_reset(&dl->names);
			dl->rc = 0;
		}
		dl->ready = true;
		dl->next_off = 0;
		dl->next_pos = 0;
	}
	rc = dl->rc;
	/*
	 * Each entry carries its offset (its index + 1): libfuse then sends
	 * READDIRPLUS entries as they are filled, with attributes (libfuse
	 * 3.14 drops them from a listing filled at offset 0), and a listing
	 * too long for one reply goes on from off.
	 */
	/* The directories a label set and a range list: ranges, profiles/. */
	if (rc == 0 && (fp.node == NODE_SELECTOR || fp.node == NODE_RANGE))
		ttl_keep_dirs();
	if (rc == 0) {
		/*
		 * Stored profiles come with their attributes to a walker only:
		 * each costs the store's index record, and a listing alone (ls,
		 * find) stats nothing.
		 */
		pid_t pid = fuse_get_context()->pid;
		bool plain = fp.node == NODE_PROFILES && walk_active(pid) && kaddr_visible(pid);
		const char *end = dl->names.data + dl->names.len;
		off_t i = 0;

		if (i++ >= off && filler(dbuf, ".", NULL, i, 0))
			goto out;
		if (i++ >= off && filler(dbuf, "..", NULL, i, 0))
			goto out;
		p = dl->names.data;
		/* Where the last reply stopped: no walk from the first name again. */
		if (dl->next_off > 2 && off == dl->next_off && p) {
			i = dl->next_off;
			p += dl->next_pos;
		}
		for (; p && p < end; p += strlen(p) + 1) {
			struct stat st;
			bool typed, full;

			if (i++ < off)
				continue;
			typed = entry_type(fs_ctx(), path, &fp, p, plain, &st, &full);
			if (filler(dbuf, p, typed ? &st : NULL, i, full &&
			    (flags & FUSE_READDIR_PLUS) ? FUSE_FILL_DIR_PLUS : 0)) {
				/* Not sent: the next reply starts with it. */
				dl->next_off = i - 1;
				dl->next_pos = (size_t)(p - dl->names.data);
				break;
			}
		}
	}
out:
	if (dl == &one)
		buf_free(&one.names);
	return rc;
}


struct handles {
	pthread_mutex_t	 lock;
	struct handle	*head;
};

int
handles_create(struct handles **out)
{
	struct handles *hs = calloc(1, sizeof(*hs));

	*out = NULL;
	if (hs == NULL)
		return -ENOMEM;
	pthread_mutex_init(&hs->lock, NULL);
	*out = hs;
	return 0;
}

void
handles_destroy(struct handles *hs)
{
	struct handle *h, *next;

	if (hs == NULL)
		return;
	for (h = hs->head; h; h = next) {
		next = h->next;
		if (h->kind == H_DIR)	/* a directory still open: its listing too */
			buf_free(&((struct dirlist *)h)->names);
		free(h);
	}
	pthread_mutex_destroy(&hs->lock);
	free(hs);
}

/* List h in fs->handles (freed by handles_destroy() should it stay open). */
static void
handle_link(struct fsctx *fs, struct handle *h)
{
	pthread_mutex_lock(&fs->handles->lock);
	h->prev = NULL;
	h->next = fs->handles->head;
	if (h->next)
		h->next->prev = h;
	fs->handles->head = h;
	pthread_mutex_unlock(&fs->handles->lock);
}

static void
handle_unlink(struct fsctx *fs, struct handle *h)
{
	pthread_mutex_lock(&fs->handles->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->handles->head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles->lock);
}

/* A new handle of kind, listed in fs->handles until handle_free(). */
static struct handle *
handle_new(struct fsctx *fs, enum hkind kind)
{
	struct handle *h = xcalloc(1, sizeof(*h));

	h->kind = kind;
	handle_link(fs, h);
	return h;
}

static void
handle_free(struct fsctx *fs, struct handle *h)
{
	handle_unlink(fs, h);
	free(h);
}

static int
pf_open(const char *path, struct fuse_file_info *fi)
{
	struct fsctx *fs = fs_ctx();
	char kbuf[PATH_MAX + 2];
	const struct content *ct;
	const char *key;
	struct pin *pin;
	struct handle *h;
	struct fspath fp;
	pid_t pid;
	int rc;

	fs_count("open");
	if (path_parse(path, clock_now_ns(), &fp) < 0)
		return -ENOENT;
	if (fp.node == NODE_INGEST_FILE) {
		/* Reopening a file that is still being written. */
		struct ingest *ig;

		rc = ingest_open(fs, path, (fi->flags & O_TRUNC) != 0, &ig);
		/*
		 * The name was stored and released, but the kernel still holds
		 * its entry (entry_timeout) and opens it instead of creating
		 * it: a writer starts a new file, as a create would.
		 */
		if (rc == -ENOENT && (fi->flags & O_ACCMODE) != O_RDONLY)
			rc = ingest_create(fs, path, &fp, false, &ig);
		if (rc < 0)
			return rc;
		h = handle_new(fs, H_INGEST);
		h->ig = ig;
		fi->fh = (uintptr_t)h;
		fi->direct_io = 1;
		return 0;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return fp.node == NODE_ROOT ? -EISDIR : -EROFS;
	if (fp.node != NODE_README && fp.node != NODE_TARGETS && fp.node != NODE_ERRORS &&
	    fp.node != NODE_VIEW &&
	    fp.node != NODE_VS_VIEW && fp.node != NODE_PROFILE)
		return -EISDIR;
	pid = fs_caller();
	key = content_key(path, &fp, kbuf, sizeof(kbuf));
	if ((rc = pin_open(fs, key, &fp, pid, &pin)) < 0)
		return errno_of(rc);
	ct = pin_entry(pin)->val;
	h = handle_new(fs, H_CONTENT);
	h->pin = pin;
	h->pid = pid;
	fi->fh = (uintptr_t)h;
	/*
	 * Each open reads one version (its pin), but the kernel's page cache
	 * is one per inode: a reader of a superseded version and one of the
	 * new one would mix their pages, and the new size would cut the old
	 * reader short. So content that can change is read with direct_io,
	 * straight from the pinned entry (read(2) readers such as go tool pprof, cp, cat are
	 * unaffected; a MAP_SHARED mmap is refused with ENODEV by kernels that
	 * do not allow mmap of direct_io files, MAP_PRIVATE works). A stored
	 * profile and README.txt never change for a name: they stay cached,
	 * unless the profile is not the same for every reader (kernel
	 * addresses hidden from some: struct content).
	 */
	fi->direct_io = (fp.node != NODE_PROFILE && fp.node != NODE_README) || ct->by_class;
	fi->keep_cache = !fi->direct_io;
	return 0;
}

static int
pf_read(const char *path, char *out, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	const struct buf *b;
	size_t n;

	fs_count("read");
	(void)path;
	if (h == NULL)
		return -EBADF;
	if (h->kind == H_INGEST)
		return ingest_read(h->ig, out, size, off);
	b = pin_entry(h->pin)->val;
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
	struct handle *h;
	struct fspath fp;

	(void)mode;
	fs_count("create");
	if (path_parse(path, clock_now_ns(), &fp) < 0 || fp.node != NODE_INGEST_FILE) {
		if (!path_in_ingest(path))
			return -EROFS;
		ingest_explain(path);
		return -EINVAL;
	}
	h = handle_new(fs_ctx(), H_INGEST);
	/* cp creates with O_EXCL, shell redirection and most writers with O_TRUNC; touch with neither. */
	ingest_create(fs_ctx(), path, &fp, (fi->flags & O_EXCL) != 0, &h->ig);
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	return 0;
}

static int
pf_write(const char *path, const char *data, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	fs_count("write");
	(void)path;
	if (h == NULL || h->kind != H_INGEST)
		return -EBADF;
	return ingest_write(h->ig, data, size, off);
}

static int
pf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct ingest *ig = NULL;
	struct fspath fp;

	fs_count("truncate");
	if (fi && fi->fh)
		ig = ((struct handle *)(uintptr_t)fi->fh)->ig;
	if (ig != NULL)
		return ingest_truncate(fs_ctx(), path, ig, size);
	if (path_parse(path, clock_now_ns(), &fp) == 0 && fp.node == NODE_INGEST_FILE)
		return ingest_truncate(fs_ctx(), path, NULL, size);
	return -EROFS;
}

static int
pf_flush(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	fs_count("flush");
	(void)path;
	if (h == NULL || h->kind != H_INGEST)
		return 0;
	return ingest_flush(fs_ctx(), h->ig);
}

static int
pf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	fs_count("fsync");
	(void)path;
	(void)datasync;
	if (h == NULL || h->kind != H_INGEST)
		return 0;
	return ingest_flush(fs_ctx(), h->ig);
}

static int
pf_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct fsctx *fs = fs_ctx();

	fs_count("release");
	(void)path;
	if (h == NULL)
		return 0;
	if (h->kind == H_CONTENT)
		pin_close(fs, h->pin, h->pid);
	else
		ingest_release(fs, h->ig);
	handle_free(fs, h);
	return 0;
}

static int
pf_mkdir(const char *path, mode_t mode)
{
	struct fspath fp;

	fs_count("mkdir");
	(void)mode;
	if (path_parse(path, clock_now_ns(), &fp) == 0 && fp.node == NODE_INGEST) {
		ingest_mkdir(fs_ctx(), path);
		return 0;
	}
	if (!path_in_ingest(path))
		return -EROFS;
	ingest_explain(path);
	if (ingest_refused(path) == -ENOENT)
		log_warnx("ingest: cannot make directory %s: below ingest/ directories are "
		    "<service>/<type>/[<k=v,...>/] (type: cpu, heap, ... or auto)", path);
	return -EINVAL;
}

/*
 * Deletion. The kernel lets only the mount's writers get here (the owner,
 * and the group with --group-write: the w bits fs_stat() reports under a
 * service). rm of a stored profile deletes it; rmdir of a label set (or a
 * selector), a type or a service deletes every series it shows. What is
 * generated from data (views, range directories, profiles/, vs/) goes with
 * its data: removing it succeeds and removes nothing by itself, so `rm -r`
 * walks any subtree and the directories it names last delete the data.
 */
static int
pf_unlink(const char *path)
{
	struct fsctx *fs = fs_ctx();
	struct store_ref ref;
	struct buf err = { 0 };
	struct fspath fp;
	uint64_t size;
	int rc;

	fs_count("unlink");
	if (path_in_ingest(path))
		return -ENOENT;
	if (path_parse(path, clock_now_ns(), &fp) < 0)
		return -ENOENT;
	if (fp.range.relative && fp.node != NODE_SERVICE && fp.node != NODE_TYPE &&
	    fp.node != NODE_SELECTOR) {
		if ((rc = relative_delete(path, &fp)) < 0)
			return rc;
		/* Goes with its data (it must be there to be removed). */
		return dir_exists(fs, fp.service, fp.type, fp.selector, &fp.range) ||
		    deleted_lately(&fp) ? 0 : -ENOENT;
	}
	switch (fp.node) {
	case NODE_PROFILE:
		rc = reader_get_size(fs->rd, fp.profile_id, &ref, &size);
		if (rc == -ENODATA && ref.series == 0) {
			/* Reads served by a fleet: the profile says where it is. */
			rc = reader_get(fs->rd, fp.profile_id, &ref, &err);
			buf_reset(&err);
		}
		if ((rc == 0 || rc == -ENODATA) && !profile_in_path(fs, &fp, &ref))
			rc = -ENOENT;
		if (rc == 0 || rc == -ENODATA)
			rc = reader_delete_profile(fs->rd, fp.profile_id, NULL, &err);
		if (rc == -ENOENT && deleted_lately(&fp))
			rc = 0;		/* listed before a deletion that took it */
		else if (rc == 0) {
			delete_note(fp.service, fuse_get_context()->pid, 1);
			log_info("deleted %s", path);
		}
		else if (rc != -ENOENT)
			log_warnx("cannot delete %s: %s", path,
			    err.data ? err.data : strerror(-rc));
		buf_free(&err);
		return rc == -ENOENT ? -ENOENT : rc < 0 ? -EIO : 0;
	case NODE_VIEW:
	case NODE_VS_VIEW:
	case NODE_VS_LINK:
		/* Generated: it goes with its data. */
		return dir_exists(fs, fp.service, fp.type, fp.selector, &fp.range) ||
		    deleted_lately(&fp) ? 0 : -ENOENT;
	default:
		return fp.node == NODE_ROOT ? -EISDIR : -EROFS;
	}
}

static int
pf_symlink(const char *target, const char *path)
{
	fs_count("symlink");
	(void)target;
	(void)path;
	return -EROFS;
}

static int
pf_link(const char *from, const char *to)
{
	fs_count("link");
	(void)from;
	(void)to;
	return -EROFS;
}

static int
pf_mknod(const char *path, mode_t mode, dev_t dev)
{
	fs_count("mknod");
	(void)mode;
	(void)dev;
	return path_in_ingest(path) ? -EINVAL : -EROFS;
}

static int
pf_setxattr(const char *path, const char *name, const char *value, size_t size, int flags)
{
	fs_count("setxattr");
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
	struct fsctx *fs = fs_ctx();
	struct labelset sel = { .n = 0 };
	struct buf err = { 0 };
	struct fspath fp;
	struct query q;
	uint64_t ns = 0, np = 0;
	int rc;

	fs_count("rmdir");
	/* Below ingest/, a directory mkdir made can go again; nothing else there. */
	if (path_in_ingest(path))
		return path_parse(path, clock_now_ns(), &fp) == 0 && fp.node == NODE_INGEST &&
		    fp.ingest_depth > 1 && (rc = ingest_rmdir(fs, path)) != -ENOENT ? rc : -EROFS;
	if (path_parse(path, clock_now_ns(), &fp) < 0)
		return -ENOENT;
	memset(&q, 0, sizeof(q));
	switch (fp.node) {
	case NODE_SELECTOR:
		if (labels_parse(fp.selector, &sel, NULL) < 0)
			return -ENOENT;
		q.sel = &sel;
		/* fallthrough */
	case NODE_TYPE:
		q.type = fp.type;
		/* fallthrough */
	case NODE_SERVICE:
		q.service = fp.service;
		if (!dir_exists(fs, fp.service, q.type, fp.node == NODE_SELECTOR ? fp.selector :
		    NULL, NULL)) {
			uint64_t walked;

			rc = deleted_lately(&fp) ? 0 : -ENOENT;
			/* rm -r took every profile one by one on its way here. */
			if (rc == 0 && (walked = delete_walked(fp.service, fuse_get_context()->pid)))
				log_info("deleted %s: %llu profiles, removed one by one as rm "
				    "walked it", path, (unsigned long long)walked);
			break;
		}
		rc = reader_delete_series(fs->rd, &q, &ns, &np, &err);
		if (rc == 0) {
			/* rm -r deleted the profiles it met in profiles/ one by one. */
			uint64_t walked = delete_walked(fp.service, fuse_get_context()->pid);

			delete_note(fp.service, fuse_get_context()->pid, 0);
			if (walked)
				log_info("deleted %s: %llu profiles of %llu label sets, and %llu "
				    "profiles rm removed one by one before", path,
				    (unsigned long long)np, (unsigned long long)ns,
				    (unsigned long long)walked);
			else
				log_info("deleted %s: %llu profiles of %llu label sets", path,
				    (unsigned long long)np, (unsigned long long)ns);
		}
		else
			log_warnx("cannot delete %s: %s", path,
			    err.data ? err.data : strerror(-rc));
		rc = rc < 0 ? -EIO : 0;
		break;
	case NODE_RANGE:
	case NODE_PROFILES:
	case NODE_VS:
	case NODE_VS_BASE:
		if (fp.range.relative && (rc = relative_delete(path, &fp)) < 0)
			break;
		/* Views of the data: they go with it. */
		rc = dir_exists(fs, fp.service, fp.type, fp.selector, &fp.range) ||
		    deleted_lately(&fp) ? 0 : -ENOENT;
		break;
	default:
		rc = -EROFS;
		break;
	}
	labels_clear(&sel);
	buf_free(&err);
	return rc;
}

static int
pf_rename(const char *from, const char *to, unsigned int flags)
{
	fs_count("rename");
	(void)from;
	(void)to;
	(void)flags;
	return -EROFS;
}

static int
pf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	fs_count("chmod");
	(void)mode;
	(void)fi;
	/* cp -p on ingest files: harmless, accept. */
	return path_in_ingest(path) ? 0 : -EROFS;
}

static int
pf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	fs_count("chown");
	(void)uid;
	(void)gid;
	(void)fi;
	return path_in_ingest(path) ? 0 : -EROFS;
}

static int
pf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	fs_count("utimens");
	(void)tv;
	(void)fi;
	return path_in_ingest(path) ? 0 : -EROFS;
}

static int
pf_statfs(const char *path, struct statvfs *sv)
{
	struct store_stats s;

	fs_count("statfs");
	(void)path;
	store_get_stats(fs_ctx()->st, &s);
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
	/*
	 * Every reply of a listing READDIRPLUS, not the first one only (the
	 * kernel's default, "auto", turns to plain READDIR for the rest of a
	 * long listing when no lookup came in between): du and find read a
	 * whole directory before they stat its entries, and an entry listed
	 * without attributes costs a LOOKUP besides its GETATTR.
	 */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	cfg->use_ino = 1;
	/*
	 * Names are kept FS_ENTRY_TIMEOUT: du and find stat the entries of a
	 * listing one after another, some seconds for the 40,000 profiles of
	 * last-7d, and a name past its timeout costs a LOOKUP again. What a
	 * name holds is asked anew on each stat (attr_timeout 0, below), so a
	 * deleted one is gone at once all the same; new names show at once
	 * (negative_timeout 0); ingest.c keeps a name closed lately resolvable
	 * for as long.
	 */
	cfg->entry_timeout = (double)FS_ENTRY_TIMEOUT_NS / 1e9;
	/*
	 * Attributes are not cached: a generated file's size changes with new
	 * data, and the kernel must ask (with the open handle, so an open file
	 * keeps its snapshot's size) before it trusts i_size for a read.
	 */
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->nullpath_ok = 0;
	/* rm of an open stored profile deletes it (no .fuse_hidden rename). */
	cfg->hard_remove = 1;
	return fuse_get_context()->private_data;
}

const struct fuse_operations fs_ops = {
	.init		= pf_init,
	.getattr	= pf_getattr,
	.readlink	= pf_readlink,
	.opendir	= pf_opendir,
	.readdir	= pf_readdir,
	.releasedir	= pf_releasedir,
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
"    host-other/                 with --ebpf: the processes whose name has not yet had\n"
"                                --ebpf-min-samples CPU samples (with --ebpf-offcpu, and\n"
"                                waits of 1/HZ or so) in an hour (tags comm, unit)\n"
"    ingest/<service>/<type>/[<k=v,...>/]<file>   drop box for pprof files\n"
"    ingest/errors.txt           why a file was not stored, or a name is not well\n"
"                                formed (last-1hr, pod=~[): the last 100 reasons\n"
"    <service>/<type>/           cpu, heap, allocs, block, mutex, goroutine, offcpu, ...\n"
"                                (with --ebpf-memory: memory-growth, memory-mmap)\n"
"      all/                      every label set of the service and type\n"
"      <k=v,k2=v2>/              one label set (any selector works on lookup)\n"
"      <k!=v,k=~re,k!~re>/       label matchers on lookup: != not equal, =~ !~ a regex\n"
"                                (RE2 syntax as Prometheus, matching the whole value); a\n"
"                                label a series lacks reads as \"\": region!=eu/ keeps\n"
"                                series without one\n"
"        <range>/                last-5m last-15m last-1h last-6h last-24h last-7d all,\n"
"                                days (2026-11-22), hours (2026-11-22T10); on lookup also\n"
"                                last-<n><s|m|h|d>, minutes (2026-11-22T1005) and\n"
"                                FROM..TO (2026-11-22T1000..2026-11-22T103015)\n"
"          merged.pb.gz          every profile of the range merged (pprof)\n"
"          meta.json             counts, time span, sample types, ids, what was left out,\n"
"                                the label sets the selector matched (\"series\")\n"
"          flamegraph.svg        interactive flame graph (click to zoom, Search: regex);\n"
"                                flamegraph.<sample_type>.svg for the other types\n"
"          folded.txt            collapsed stacks: frame;frame;leaf value\n"
"          top.txt               top functions by flat and cumulative value\n"
"          diff.pb.gz, diff.svg  this range against the range of equal length before it;\n"
"                                diff.svg compares each frame's share of its side's total\n"
"                                (normalized), diff.absolute.svg absolute values\n"
"          vs/<base>/            the same against <range>, <selector>@<range> or <selector>:\n"
"                                diff.pb.gz diff.svg diff.absolute.svg meta.json, top.txt\n"
"                                (shares, as pprof -normalize) and top.absolute.txt; a link\n"
"                                to ../.vs/<base>: du, find, grep -r do not follow it\n"
"          timeline.svg, .csv    the total per step across the range (CSV header:\n"
"                                time,<sample type>_<unit>, e.g. time,cpu_nanoseconds;\n"
"                                CPU time adds cpu_cores: CPU time over the step's length)\n"
"          profiles/<UTC time>-<id>.pb.gz   each stored profile, its samples with the\n"
"                                labels they were stored with (span_id too)\n"
"      span_id=<id>[+<id>...]/   span profiles (traces to profiles): only the samples of\n"
"                                these spans (the pprof sample label span_id, 1 to 16 hex\n"
"                                digits, as Pyroscope's SDKs set it; OTLP links); e.g.\n"
"                                go tool pprof -top \\\n"
"                                  %s/checkout/cpu/span_id=9f3c2a1b7d4e5f60/last-1h/merged.pb.gz\n"
"      trace_id=<32 hex>/        the samples of one trace (OTLP links); both combine\n"
"                                with labels (region=eu,span_id=<id>/); with --clickhouse,\n"
"                                every host's samples of them. Span ids are never label\n"
"                                sets: ls lists none. On disk about 11 bytes per span and\n"
"                                profile plus the sample rows they keep apart; a lookup\n"
"                                reads a Bloom filter per profile of the range, then only\n"
"                                the profiles holding the span (kept as raw profiles are)\n"
"\n"
"All times are UTC. In names, %%, /, ',' and '=' are written %%XX (in matchers\n"
"also a key's trailing '!' and a value's leading '~').\n"
"No name has a ':' (go tool pprof, scp and rsync read host:path), so every\n"
"name works unquoted: times are written 2026-11-22T1005 and services or\n"
"label values holding ':' show it as %%3A. Lookups also take the colon forms\n"
"(2026-11-22T10:05) and a trailing Z (2026-11-22T10:05Z).\n"
"C++ and Rust function names are shown demangled (as c++filt prints them;\n"
"the .pb.gz files keep them as stored); top.txt and folded.txt write control\n"
"characters and bytes that are not UTF-8 as \\xHH.\n"
"Counters (cpu, offcpu, alloc_*, contentions, delay, fault_space, mmap_space)\n"
"are summed over a range;\n"
"gauges (inuse_*, goroutines) are averaged over each series' snapshots in it,\n"
"then summed across the series a selector matches.\n"
"A Go heap profile pushed as the process serves it (no duration: alloc_*\n"
"counted from the process's start) counts its increase over the series'\n"
"previous one, as Prometheus's increase(): pushes of 250 MB then 464 MB\n"
"merge to 464 MB. A series' first one, or one with lower totals (a new\n"
"process), counts whole; one older than the last adds nothing to alloc_*.\n"
"profiles/ serves what each added.\n"
"\n"
"Examples\n"
"  ls %s/\n"
"  cp cpu.pprof %s/ingest/checkout/cpu/region=eu/\n"
"  cp heap.pb.gz %s/ingest/checkout/auto/      (type inferred from the samples)\n"
"  go tool pprof -top %s/checkout/cpu/all/last-1h/merged.pb.gz\n"
"  cat %s/checkout/cpu/region=eu/last-24h/meta.json\n"
"  go tool pprof -top '%s/checkout/cpu/pod=~api-.*,region!=eu/last-1h/merged.pb.gz'\n"
"  cp -r %s/checkout/heap/all/last-1h/profiles /backup/\n"
"\n"
"When a copy or a name fails, read why: cat %s/ingest/errors.txt\n"
"(the same reasons are in the daemon's log). A name that is not well formed\n"
"(last-1hr, a FROM..TO whose TO is before FROM, a selector that does not\n"
"parse) is 'No such file or directory', like a range that holds no data; only\n"
"the first is noted there.\n"
"Every well-formed directory below ingest/ exists for cp; mkdir of one\n"
"succeeds, and ls ingest/ lists the directories made (until a restart).\n"
"Below ingest/<service>/<type>/ a directory is a label set k=v[,k=v]: one that\n"
"does not parse (bad %%XX, a key twice), or mkdir of a name without '=', fails\n"
"with 'Invalid argument', the reason in ingest/errors.txt.\n"
"A copy into ingest/ succeeds only once the profile is stored; a file that is\n"
"not a pprof profile fails with 'Invalid argument' (reason: ingest/errors.txt),\n"
"and so does a profile whose sample types are not its\n"
"directory's type (a CPU profile under heap/). Types: cpu heap allocs block\n"
"mutex goroutine threadcreate wall offcpu memory-growth memory-mmap other, or\n"
"auto (inferred); service\n"
"names: letters, digits, '_', '-', '.' (as Pyroscope's application names); other\n"
"directories cannot be made ('Invalid argument', the reason in the log).\n"
"'cmd > file' stores what cmd wrote; a file closed without any byte (touch,\n"
"': > file') stores nothing and is no error; cp of an empty file is an\n"
"upload that fails with 'Invalid argument'. A name can be written again right\n"
"after its file was stored. Two\n"
"writers of one name each store their own file (two racing cp may also get\n"
"'File exists' from the kernel before writing anything). When the daemon's\n"
"memory budget is in use, writes and generated files fail with 'Resource\n"
"temporarily unavailable' (EAGAIN): try again. Generated files over their\n"
"size limit fail with 'File too large' (EFBIG), the reason in the log; flame\n"
"graphs leave out frames too narrow or too deep to see and say so in their\n"
"second line; a stack tree past its limits (128 inlined lines per location,\n"
"262,144 frames in all) sums the rest into '[inlined frames cut]' and\n"
"'[more frames: tree limit]' frames, totals exact. A new service past\n"
"--max-services fails with 'Invalid argument', the reason in the log.\n"
"\n"
"Deleting: the mount's owner (and its group with --group-write) may rm a\n"
"stored profile (profiles/<name>.pb.gz) and rm -r a label set, a type or a\n"
"service; every merge, window and view then leaves that data out, and the\n"
"deletion is durable. Removing a generated file or a range directory removes\n"
"nothing by itself (it goes with its data), so rm -r works on any directory\n"
"but a last-* range: it moves with the clock, so rm -r last-5m (or rm of a\n"
"profile under it) fails with 'Operation not permitted' (reason in\n"
"ingest/errors.txt); delete a day, an hour, FROM..TO or the label set.\n"
"Service, type and label set directories carry their newest profile's time\n"
"(ls -lt lists the active ones first).\n"
"Over HTTP: DELETE /api/0/profiles/<id> and\n"
"DELETE /api/0/services/<service>[?type=&labels=]. Other writes outside\n"
"ingest/ fail with 'Read-only file system'; other users get 'Permission\n"
"denied'.\n"
"\n"
"Sizes, du and find: a profile shows in every range directory that holds it\n"
"(its hour, its day, last-24h, last-7d, all, ...), under all/ and under its\n"
"label set, so du, find and ls -R count it once per such directory: du -s of\n"
"a service is many times what it stores. Generated files take no room (du\n"
"counts 0 blocks for them); a stored profile counts the bytes the store\n"
"holds for it (before the database compresses them; du --apparent-size\n"
"counts sizes as served). A process that stats files in more than 3\n"
"directories one after another (du, find -size, ls -lR, grep -r) is told 0\n"
"as the size of a file not made yet, so that a walk makes nothing; reading\n"
"the file still returns every byte. The kernel keeps names 10 s and a range\n"
"directory's attributes 1 s (a file's are asked on every stat): a profile\n"
"stored or deleted shows at once; a range emptied by a deletion over HTTP\n"
"may still be stat'ed for a second. What the store takes on disk:\n"
"  df -h %s      (or du -sh of the --data directory)\n"
"and how many profiles a range holds: \"profiles\" in its meta.json.\n"
"\n"
"More: man profilefs; in the source tree README.md and docs/ (docs/tree.md\n"
"for this tree, docs/cli.md for every option).\n",
	    PROFILEFS_VERSION, m, m, m, m, m, m, m, m, m, m, m);
	return b->data ? 0 : -ENOMEM;
}
