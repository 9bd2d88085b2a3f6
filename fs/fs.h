/*
 * fs: the FUSE daemon. fs_main() mounts the tree of README.md ("The tree") at a mount
 * point, serves it until SIGINT/SIGTERM (or fs_stop()), then unmounts.
 * The store is the caller's: it is neither opened nor closed here.
 */
#ifndef PROFILEFS_FS_H
#define PROFILEFS_FS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

struct cache;
struct fuse;

/* State shared by every FUSE handler (fuse_get_context()->private_data). */
struct fsctx {
	struct store		*st;
	const char		*mountpoint;
	struct cache		*merges;	/* query results by (query, range) */
	struct cache		*files;		/* rendered file contents by path */
	struct fuse		*fuse;
	/*
	 * MOUNTPOINT/.targets.json: the scraper's status appended to out, by
	 * whoever wires the program (fs/ knows no collector). NULL: no such file.
	 */
	int			(*targets_json)(void *arg, struct buf *out);
	void			*targets_arg;
};

struct fs_opts {
	const char	*mountpoint;
	bool		 debug;		/* libfuse request tracing */
	unsigned	 threads;	/* max FUSE worker threads, 0 = default */
};

/* Mount and serve; returns 0 after a clean unmount, -errno with a message logged. */
int	fs_main(struct fsctx *fs, const struct fs_opts *o);
/* Detach a stale mount left by a crashed daemon ("Transport endpoint is not connected"). */
int	fs_cleanup_stale(const char *mountpoint);

#endif
