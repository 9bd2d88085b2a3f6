/*
 * fs: the FUSE daemon. fs_main() mounts the tree of docs/tree.md at a mount
 * point, serves it until SIGINT/SIGTERM (or fs_stop()), then unmounts.
 * The store is the caller's: it is neither opened nor closed here.
 */
#ifndef PROFILEFS_FS_H
#define PROFILEFS_FS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

struct cache;
struct fuse;
struct handles;
struct ingests;
struct pins;

/* State shared by every FUSE handler (fuse_get_context()->private_data). */
struct fsctx {
	struct store		*st;		/* where ingest/ stores */
	/* where the tree reads (store.h); NULL: the store's own, set by fs_main() */
	const struct reader	*rd;
	const char		*mountpoint;
	struct cache		*merges;	/* query results by (query, range) */
	struct cache		*files;		/* rendered file contents by path */
	struct cache		*sizes;		/* sizes of generated files by path */
	struct fuse		*fuse;
	/* Made by fs_main(), gone when it returns (fs/'s own). */
	struct pins		*pins;		/* versions open files read */
	struct ingests		*ingests;	/* files being written into ingest/ */
	struct handles		*handles;	/* open files, freed at unmount if not released */
	/*
	 * MOUNTPOINT/.targets.json: the scraper's status appended to out, by
	 * whoever wires the program (fs/ knows no producer). NULL: no such file.
	 */
	int			(*targets_json)(void *arg, struct buf *out);
	void			*targets_arg;
	/*
	 * What stat reports, set by fs_main() from struct fs_access: the owner
	 * is whoever mounted (the ids the kernel checks without allow_other).
	 */
	uid_t			 uid;
	gid_t			 gid;
	mode_t			 mode_dir, mode_file;		/* the read-only tree */
	mode_t			 mode_ingest_dir, mode_ingest_file;
	mode_t			 mode_delete;	/* added under a service: who may rm */
};

/*
 * Who may use the mount. Default: only the user who mounts. The modes and
 * owners the tree reports follow from these, and the kernel enforces them
 * (default_permissions), so `ls -l` shows what is true.
 */
struct fs_access {
	bool		 allow_other;	/* every local user reads */
	bool		 group_set;	/* members of group read ... */
	gid_t		 group;
	bool		 group_write;	/* ... and write into ingest/ */
};

struct fs_opts {
	const char	*mountpoint;
	bool		 debug;		/* libfuse request tracing */
	unsigned	 threads;	/* max FUSE worker threads, 0 = default */
	struct fs_access access;
	/*
	 * Called once the tree is mounted, before requests are served (e.g. to
	 * give up root); nonzero unmounts and makes fs_main() fail. Then
	 * unmounting, called when serving ends, before libfuse unmounts (a
	 * process that gave up root may need help to unmount). Both optional.
	 */
	int		(*mounted)(void *arg);
	void		(*unmounting)(void *arg);
	void		*hook_arg;
	/*
	 * Called from the signal handler, after libfuse's, when a stop signal
	 * comes while serving: async-signal-safe only. Optional.
	 */
	void		(*stop_signal)(int sig);
	/* Called once serving ended, before the unmount. Optional. */
	void		(*served)(void);
};

/*
 * Mount and serve until SIGINT, SIGTERM or SIGHUP; returns 0 after a clean
 * unmount, -errno with a message logged. The caller may keep those signals
 * blocked (in every thread it starts): they are unblocked in the calling
 * thread once libfuse handles them, and one already pending stops at once.
 */
int	fs_main(struct fsctx *fs, const struct fs_opts *o);
/* Detach a stale mount left by a crashed daemon ("Transport endpoint is not connected"). */
int	fs_cleanup_stale(const char *mountpoint);

#endif
