/*
 * unwind: the unwind tables in the BPF maps of bpf/profile.bpf.c. A file's
 * table (cfi.c) is built the first time a sampled process maps it, kept in
 * the shared row array once per file identity (device, inode and build id),
 * shared by every process that maps it, and evicted once no process has
 * mapped it for a while, or sooner when room is needed. Tables are built on a
 * thread of their own, so that a big file (libLLVM: a million rows) never
 * holds up the reading of samples. Per process, the
 * address ranges of its mappings point at those tables (LPM prefixes keyed by
 * pid). What is mapped where is proctab.c's.
 *
 * Not thread-safe: the unwinder belongs to the sampler's thread.
 */
#ifndef PROFILEFS_UNWIND_H
#define PROFILEFS_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "profile.h"
#include "proctab.h"

#define UNWIND_MEM_DEFAULT	(64u << 20)	/* bytes of rows, --ebpf-unwind-mem */
#define UNWIND_MEM_MAX		(128u << 20)	/* 2^24 rows: the BPF binary search's reach */

struct unwinder;

struct unwind_stats {
	size_t		 tables;		/* files with rows loaded */
	size_t		 procs;			/* processes walked with tables */
	uint64_t	 bytes_used, bytes_cap;	/* of the row array */
	uint64_t	 builds, build_failures, evictions, no_room;
	uint64_t	 deferred;		/* process loads that waited for a build */
	double		 build_seconds;		/* total spent building tables */
};

/* Sizes for an opened, not yet loaded, skeleton: rows for mem_bytes. */
int		 unwind_configure(struct bpf_map *rows, size_t mem_bytes);
/*
 * After load: maps the row array into memory. The maps belong to the caller's
 * skeleton and must outlive the unwinder. NULL with errno set on failure.
 */
struct unwinder	*unwind_create(struct bpf_map *rows, struct bpf_map *maps,
		    struct bpf_map *procs);
void		 unwind_destroy(struct unwinder *u);
/*
 * Point the BPF maps at the tables of p's mappings, asking the build thread
 * for those not cached (p is loaded again when they are ready); nothing when
 * p's maps did not change since. 0 or -errno; a file whose table cannot be
 * had is walked by frame pointer.
 */
int		 unwind_proc(struct unwinder *u, struct proc *p);
/*
 * Load the tables the build thread finished, and reload the processes that
 * waited for them. Call often from the sampler's thread.
 */
void		 unwind_poll(struct unwinder *u);
/*
 * Have the tables of p's mappings built (in the background) without loading
 * them: p has just exec'd, and its first samples will want them.
 */
void		 unwind_prefetch(struct unwinder *u, struct proc *p);
/* p is going away: drop its BPF entries and its table references. */
void		 unwind_forget(struct unwinder *u, struct proc *p);
/* Evict tables no process has mapped since `before` (monotonic seconds). */
void		 unwind_expire(struct unwinder *u, time_t before);
void		 unwind_get_stats(const struct unwinder *u, struct unwind_stats *st);
/*
 * What turns a process's unw_maps entries ok -> ov (on of them) into
 * nk -> nv (nn): *del (ndel) the keys to delete, *put -> *putv (nput) the
 * entries to write, new or with another value; every other entry stays.
 * The three arrays are the caller's to free; 0 or -ENOMEM.
 */
int		 unwind_diff(const struct unw_map_key *ok, const struct unw_map_val *ov,
		    size_t on, const struct unw_map_key *nk, const struct unw_map_val *nv,
		    size_t nn, struct unw_map_key **del, size_t *ndel, struct unw_map_key **put,
		    struct unw_map_val **putv, size_t *nput);

#endif
