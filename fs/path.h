/*
 * path: the grammar of the mounted tree. path_parse() turns a path into what
 * it names; it never touches the store, so "does this exist" is the caller's
 * question. Range names are resolved against a given `now`.
 *
 *   /README.txt
 *   /.targets.json
 *   /ingest[/<service>[/<type>[/<labels>]]][/<file>]
 *   /ingest/errors.txt
 *   /<service>[/<type>[/<selector>[/<range>[/<view>]]]]
 *   /<service>/<type>/<selector>/<range>/profiles[/<time>-<id>.pb.gz]
 *   /<service>/<type>/<selector>/<range>/vs[/<base>[/<view>]]
 *       <base> = <range> | <selector>@<range> | <selector>
 */
#ifndef PROFILEFS_PATH_H
#define PROFILEFS_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

enum node {
	NODE_ROOT,
	NODE_README,
	NODE_TARGETS,		/* .targets.json: the scraper's per-target status */
	NODE_ERRORS,		/* ingest/errors.txt: recent refusals (errlog.c) */
	NODE_INGEST,		/* ingest/ and its service, type, labels directories */
	NODE_INGEST_FILE,	/* a file being written into ingest/ */
	NODE_SERVICE,
	NODE_TYPE,
	NODE_SELECTOR,
	NODE_RANGE,
	NODE_VIEW,		/* a generated file in a range directory */
	NODE_PROFILES,
	NODE_PROFILE,
	NODE_VS,		/* vs/ (and .vs/) */
	NODE_VS_LINK,		/* vs/<base>: a symbolic link to ../.vs/<base> */
	NODE_VS_BASE,		/* .vs/<base>/ */
	NODE_VS_VIEW,		/* .vs/<base>/<view> */
};

struct range {
	char	 name[64];	/* last-*, all, or the times in the form the tree lists */
	int64_t	 from, to;	/* ns, from <= t < to */
	bool	 relative;	/* moves with the clock (last-*) */
};

struct fspath {
	enum node	 node;
	char		 service[SERVICE_MAX_LEN + 1];	/* unescaped */
	char		 type[TYPE_MAX_LEN + 1];
	char		 selector[1024];	/* canonical escaped labels; "" for all */
	struct range	 range;
	char		 view[64];		/* file name of a view */
	uint64_t	 profile_id;
	/* vs/<base>: the base's selector and range */
	char		 base_selector[1024];
	struct range	 base_range;
	/* ingest */
	char		 ingest_labels[1024];	/* escaped, as written */
	char		 file[256];
	int		 ingest_depth;		/* 1 ingest, 2 service, 3 type, 4 labels */
	/*
	 * Not the grammar's: set by fs.c for a caller who may not see kernel
	 * addresses (query.h, kaddr_visible()), so that the views hide them.
	 */
	bool		 hide_kernel;
};

/*
 * Parse path (absolute, as FUSE gives it). 0 on success; -ENOENT for a path
 * that cannot exist whatever the store holds.
 */
int	path_parse(const char *path, int64_t now, struct fspath *out);
/*
 * Whether path lies below ingest/, whatever follows: writes there that the
 * grammar refuses are EINVAL (a misplaced file), elsewhere EROFS.
 */
bool	path_in_ingest(const char *path);
/*
 * Why a path below ingest/ that path_parse() refused is wrong, when it names
 * a label set that does not parse (bad %XX, a key twice, no key): -EINVAL
 * with the reason appended to why; 0 when there is nothing more to say.
 */
int	path_ingest_why(const char *path, struct buf *why);
/*
 * Why a path of the tree (not ingest/) that path_parse() refused is not well
 * formed: a service or type name that cannot be one, a selector or range
 * that does not parse (last-1hr, a FROM..TO whose TO is not after FROM), a
 * vs/ base that is neither. -EINVAL with the reason appended to why; 0 when
 * its form is fine (the name may still hold no data).
 */
int	path_why(const char *path, int64_t now, struct buf *why);
/*
 * Parse a range name; -EINVAL if it is not one. Times are taken in ISO 8601's
 * basic (2026-11-22T1005) or extended (2026-11-22T10:05) form, with or without
 * a trailing 'Z'; r->name is the basic form without 'Z'.
 */
int	path_range(const char *name, int64_t now, struct range *r);
/*
 * Parse a selector segment ("all" or k=v,...) into canonical text (escaped,
 * sorted); -EINVAL if malformed.
 */
int	path_selector(const char *seg, char *out, size_t outsz);
/*
 * The name profiles/ gives a stored profile: 2026-11-22T100503.123456789Z-<id>.pb.gz
 * (no ':', so scp and rsync do not read it as a host; lookups also take the
 * colon form 2026-11-22T10:05:03.123456789Z-<id>.pb.gz).
 */
void	path_profile_name(int64_t time, uint64_t id, char *out, size_t outsz);

/* Presets listed in every selector directory that holds data. */
extern const char *const path_presets[];

#endif
