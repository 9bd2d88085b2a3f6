/*
 * views: the generated files of a range directory. Each view renders from
 * the range's merge result (one merge per range, shared through the cache)
 * and, for diffs, from a base range's. Renderers are plain functions of a
 * profile; this module only routes names to them.
 */
#ifndef PROFILEFS_VIEWS_H
#define PROFILEFS_VIEWS_H

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "path.h"

/* How long a view of a range that moves with the clock (last-1h) is reused. */
#define RELATIVE_MAX_AGE	(INT64_C(1500) * 1000000)

struct fsctx;

/* What a renderer gets. */
struct view_in {
	struct fsctx			*fs;
	const struct fspath		*fp;
	const char			*name;		/* the file name asked for */
	const struct query_result	*cur;		/* this range, merged */
	int64_t				 cur_born;	/* when that merge was made */
	const struct query_result	*base;		/* the diff's base, or NULL */
	bool				 hidden;	/* cur: kernel addresses hidden */
};

/* Render view fp->view (or fp->view under vs/) into out. -ENOENT: no such file. */
int	views_render(struct fsctx *fs, const struct fspath *fp, struct buf *out);
/* Append the names of the files of a range directory (NUL-separated) to out. */
int	views_list(struct fsctx *fs, const struct fspath *fp, struct buf *out);
/* The same for vs/<base>/. */
int	views_list_vs(struct fsctx *fs, const struct fspath *fp, struct buf *out);

/*
 * The merged result of (service, type, selector, range), cached. *out holds
 * a cache reference; views_merge_release() drops it.
 */
struct cache_entry;
int	views_merge(struct fsctx *fs, const char *service, const char *type,
	    const char *selector, const struct range *r, struct cache_entry **out);
void	views_merge_release(struct fsctx *fs, struct cache_entry *e);

/* RFC 3339 UTC with nanoseconds: 2026-11-22T10:05:03.123456789Z */
void	views_time(int64_t ns, char *out, size_t n);
/* [from, to) for a person, to the second: 2026-11-22 10:05:03 to 11:05:03 UTC */
void	views_span(int64_t from, int64_t to, char *out, size_t n);

#endif
