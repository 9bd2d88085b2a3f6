/*
 * fs_int: what the files of fs/ share and nothing outside fs/ sees. The
 * daemon is split along its four jobs:
 *
 *   fs.c      the FUSE handlers: attributes, open/read/release, generated
 *             content through the file cache, the read-only refusals
 *   dir.c     directory listings and "does this directory exist"
 *   ingest.c  files being written into ingest/ and storing them on close
 *   mount.c   mounting, the FUSE session and its threads, stale mounts
 *   pin.c     the version of a generated file each open reads
 *
 * with the path grammar (path.c), the content cache (cache.c) and the views
 * of a range directory (views.c) beside them.
 */
#ifndef PROFILEFS_FS_INT_H
#define PROFILEFS_FS_INT_H

/* 3.12: fuse_loop_mt() takes the config fuse_loop_cfg_create() makes (mount.c). */
#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base.h"
#include "fs.h"
#include "path.h"

struct cache_entry;
struct ingest;
struct ingests;
struct pin;
struct pins;

/* What an open file handle holds (fi->fh). */
enum hkind { H_CONTENT, H_INGEST, H_DIR /* an open directory: struct dirlist, fs.c */ };
struct handle {
	enum hkind		 kind;
	struct pin		*pin;	/* H_CONTENT: the version of the file it reads (fs.c) */
	pid_t			 pid;	/* H_CONTENT: the process that opened it */
	struct ingest		*ig;	/* H_INGEST */
	struct handle		*prev, *next;	/* in fsctx.handles, while open */
};

/*
 * The open files' handles. The kernel need not send a release for a file
 * still open when the mount goes (a lazy unmount, a reader killed as the
 * daemon stops): handles_destroy() frees those, after pins_destroy() and
 * ingests_destroy() freed what they hold (fs.c).
 */
int	handles_create(struct handles **out);		/* 0, -ENOMEM */
void	handles_destroy(struct handles *hs);		/* NULL: no-op */

/*
 * How long the kernel keeps a name it looked up or was listed (entry_timeout,
 * fs.c); ingest.c keeps names closed lately resolvable a little longer.
 */
#define FS_ENTRY_TIMEOUT_NS	(INT64_C(10) * 1000000000)

/* The daemon's context inside a FUSE handler. */
struct fsctx	*fs_ctx(void);
/*
 * The process (thread group) behind the current FUSE request: the kernel
 * gives the calling thread's id, and a multi-threaded reader (go tool pprof)
 * may open on one thread and fstat on another.
 */
pid_t	fs_caller(void);
/* The content of a generated file, cached; *ce holds a reference (fs.c). */
int	fs_content(struct fsctx *fs, const char *path, const struct fspath *fp,
	    struct cache_entry **ce);
/*
 * A stat of path: a directory or a regular file of size bytes, writable
 * (ingest/) or not; mtime_ns > 0 is the time generated content was made.
 */
void	fs_stat(struct stat *st, const char *path, bool dir, off_t size, bool writable,
	    int64_t mtime_ns);

/* The handler table mount.c hands to libfuse (fs.c). */
extern const struct fuse_operations fs_ops;

/* --- dir.c --- */
/*
 * Whether a series matches (service, type, selector) -- NULL for any -- and,
 * with r, whether one of them holds a profile in r.
 */
bool	dir_exists(struct fsctx *fs, const char *service, const char *type,
	    const char *selector, const struct range *r);
/*
 * The time (ns) of the newest data of the series matching (service, type,
 * selector), NULL for any: a directory's mtime, so ls -lt shows the active
 * ones first. Two seeks per series (store_newest()); 0 if unknown.
 */
int64_t	dir_newest(struct fsctx *fs, const char *service, const char *type,
	    const char *selector);
/* The entries of directory fp (NUL-separated names) appended to names. -ENOENT, -ENOTDIR. */
int	dir_list(struct fsctx *fs, const char *path, const struct fspath *fp, struct buf *names);

/* --- pin.c: each function takes the pins' lock itself --- */
int	pins_create(struct pins **out);		/* 0, -ENOMEM */
/* Free pins, the pins still open included (before fs->files goes); NULL: no-op. */
void	pins_destroy(struct fsctx *fs, struct pins *pins);
/*
 * Open path's content for pid: the pinned version, or a new one (through
 * fs_content()) that becomes the pin. 0 with *out held until pin_close(), or
 * fs_content()'s error.
 */
int	pin_open(struct fsctx *fs, const char *path, const struct fspath *fp, pid_t pid,
	    struct pin **out);
/* The open of p by pid ends; the last one frees p and its cache reference. */
void	pin_close(struct fsctx *fs, struct pin *p, pid_t pid);
/*
 * The size and birth of the version of path that the calling process reads
 * (the newest it holds open), else of the current pin; false if path is not
 * open (then stat generates as usual).
 */
bool	pin_stat(struct fsctx *fs, const char *path, off_t *size, int64_t *born);
/* The cache entry (a struct buf) p reads. */
struct cache_entry *pin_entry(const struct pin *p);

/* --- ingest.c ---
 * An ingest file collects its bytes in memory and is parsed and stored when
 * closed (flushed); the outcome is close()'s result. Each function takes the
 * ingest lock itself.
 */
int	ingests_create(struct ingests **out);		/* 0, -ENOMEM */
void	ingests_destroy(struct ingests *igs);	/* the files still open too; NULL: no-op */
/*
 * A new file at path (fp parsed as NODE_INGEST_FILE); excl: created with
 * O_EXCL (cp), so closing it empty is an empty upload. *out is held until
 * ingest_release().
 */
int	ingest_create(struct fsctx *fs, const char *path, const struct fspath *fp, bool excl,
	    struct ingest **out);
/*
 * Another open of a name still being written: a new object of its own,
 * empty with trunc, else a copy of the newest writer's bytes. -ENOENT, -EAGAIN.
 */
int	ingest_open(struct fsctx *fs, const char *path, bool trunc, struct ingest **out);
int	ingest_write(struct ingest *ig, const char *data, size_t size, off_t off);
int	ingest_read(struct ingest *ig, char *out, size_t size, off_t off);
/* Truncate ig, or the file at path when ig is NULL (-ENOENT: none). */
int	ingest_truncate(struct fsctx *fs, const char *path, struct ingest *ig, off_t size);
/* The size of ig, or of the file at path when ig is NULL. -ENOENT. */
int	ingest_size(struct fsctx *fs, const char *path, struct ingest *ig, off_t *size);
/* Store what ig holds if it changed since the last attempt; that attempt's result. */
int	ingest_flush(struct fsctx *fs, struct ingest *ig);
/* Drop one open; the last one stores unflushed data and frees ig. */
void	ingest_release(struct fsctx *fs, struct ingest *ig);
/* --- delete.c ---
 * delete_note(): process pid (the FUSE caller) deleted data of service
 * (nprofiles stored profiles one by one, 0 for a label set).
 * delete_recent(): whether pid did lately (its rm -r may still be walking);
 * refreshes it.
 */
void	delete_note(const char *service, pid_t pid, uint64_t nprofiles);
bool	delete_recent(const char *service, pid_t pid);
/*
 * delete_walked(): the profiles pid deleted one by one under service lately
 * (delete_note()'s nprofiles), counted from zero again.
 * delete_walk_note(): pid listed directory path; delete_walk_root(): the
 * first directory of pid's current walk, copied to root (false: none lately).
 * delete_path_under(): whether path is dir or below it.
 */
uint64_t delete_walked(const char *service, pid_t pid);
void	delete_walk_note(pid_t pid, const char *path);
bool	delete_walk_root(pid_t pid, char *root, size_t size);
bool	delete_path_under(const char *path, const char *dir);

/*
 * walk.c: process pid (the FUSE caller) stats the generated file path;
 * whether it is walking the tree (du, grep -r: generated files in more than
 * a few range directories one after another), so that its stat should not
 * make the file to learn its size. Thread-safe.
 */
bool	walk_note(pid_t pid, const char *path);
/* Whether pid is walking (walk_note() said so lately), without noting anything. */
bool	walk_active(pid_t pid);

/*
 * memo.c: what stats ask the store over and over, remembered a moment
 * (thread-safe, bounded tables).
 * memo_dir_get(): whether directory path was found to exist lately, at the
 * store's current generation (within a second); *newest: its mtime as
 * remembered. memo_dir_put(): path exists, found at generation gen.
 * memo_profile_size(): reader_get_size(), remembered by id while nothing at
 * or before the profile's time changed (ref's id, series, time and stored
 * are set). memo_profile_forget(): id's size is now known to the store.
 */
bool	memo_dir_get(const struct reader *rd, const char *path, int64_t *newest);
void	memo_dir_put(const struct reader *rd, uint64_t gen, const char *path, int64_t newest);
int	memo_profile_size(const struct reader *rd, uint64_t id, struct store_ref *ref,
	    uint64_t *size);
void	memo_profile_forget(uint64_t id);

/*
 * ttl.c: ttl_attach(): the session's replies go through ttl.c (after
 * fuse_mount()). ttl_keep_dirs(): the directories the current request's
 * reply describes keep their attributes in the kernel a second (their mode,
 * owner and times do not change while they exist); files keep 0.
 */
int	ttl_attach(struct fuse_session *se);
void	ttl_keep_dirs(void);

/* Log why path, under ingest/, names no place for a file (a bad service or type). */
void	ingest_explain(const char *path);

/*
 * errlog.c: the recent refusals the mount shows in ingest/errors.txt. Note
 * a refusal, said as the log says it ("ingest: refused /ingest/...: why"):
 * kept (the newest 100) and logged as a warning. Thread-safe.
 */
void	errlog_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* errlog_note() for a malformed name: logged at most 20 times per 10 s. */
void	errlog_note_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Append the notes to out, newest last: 0, or buf_error(out). */
int	errlog_render(struct buf *out);
/* The names of files being written directly in directory dir, appended to names. */
void	ingest_list(struct fsctx *fs, const char *dir, struct buf *names);
/*
 * Directories mkdir made below ingest/ (ingest.c): whether path is one;
 * remember it; forget it (0, -ENOENT not made, -ENOTEMPTY one made below).
 */
bool	ingest_made(struct fsctx *fs, const char *path);
void	ingest_mkdir(struct fsctx *fs, const char *path);
int	ingest_rmdir(struct fsctx *fs, const char *path);

#endif
