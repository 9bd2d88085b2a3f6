/*
 * mallocprof: allocations by stack, opt-in per process (--ebpf-malloc).
 * Finds the processes the selectors name (a scan of /proc every second, and
 * again at exec), attaches bpf/malloc.bpf.h's uprobes to the allocation
 * functions of the C library each one maps (through its own root: another
 * mount namespace's libc is its own), with the process's pid as filter, and
 * detaches them when it exits. Weights each sampled allocation (Go's
 * scaling: an allocation of size bytes, sampled with probability
 * 1 - exp(-size/rate), stands for 1 / (1 - exp(-size/rate)) allocations)
 * and holds the sampled blocks not yet freed, each with its stack (held
 * once per process and stack), to give the inuse values at each period's
 * end. Naming stacks and building profiles are the caller's (ebpf.c,
 * cpuprof.c). Not thread-safe: the sampler's thread's.
 */
#ifndef PROFILEFS_MALLOCPROF_H
#define PROFILEFS_MALLOCPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

#define MALLOC_RATE_DEFAULT	(512 * 1024)	/* mean bytes between samples, as Go's */
#define MALLOC_LIVE_DEFAULT	65536		/* sampled blocks tracked for inuse_* */

struct mallocprof;

/*
 * Entries of the table of live blocks: MALLOC_LIVE_DEFAULT, or
 * PROFILEFS_EBPF_MALLOC_LIVE (16 to 4194304; tests make it small).
 */
uint32_t	 mallocprof_live_cap(void);
struct profile_bpf;

/*
 * Whether rule is an --ebpf-malloc selector: "pid:N" or an --ebpf-include
 * rule (unit:, container:, comm:, service: with an fnmatch pattern).
 * 0, or -EINVAL with *bad a static reason.
 */
int		 mallocprof_check_rule(const char *rule, const char **bad);

/*
 * Between the skeleton's open and load: enabled, size the maps and fill the
 * interval table for rate bytes; else leave the programs out of the load.
 */
void		 mallocprof_configure(struct profile_bpf *skel, bool enabled, int64_t rate,
		    uint32_t live_cap);

/*
 * After the load: the selectors (rules, copied), for the processes of pt.
 * NULL on ENOMEM. Freed (the uprobes detached) by mallocprof_destroy.
 */
struct mallocprof *mallocprof_create(struct profile_bpf *skel, struct proctab *pt,
		    const char *const *rules, size_t nrules, int64_t rate, uint32_t live_cap);
void		 mallocprof_destroy(struct mallocprof *m);

/* Attach to the processes selected since the last scan (a scan a second at most). */
void		 mallocprof_poll(struct mallocprof *m);

/*
 * pid exited, or exec'd (exec): its uprobes and blocks go; an exec'd one is
 * looked at again within MP_EXEC_SCAN_NS.
 */
void		 mallocprof_forget(struct mallocprof *m, uint32_t pid, bool exec);

/*
 * A PROF_EV_MALLOC sample s: its weighted values into vals (alloc_objects,
 * alloc_space; the inuse ones 0), and its block held for the inuse values.
 */
void		 mallocprof_sample(struct mallocprof *m, const struct prof_sample *s,
		    int64_t vals[4]);

/*
 * The period's end, after the ring buffer was read: the blocks freed are
 * let go, and add(arg, s, vals) is called once per process and stack with
 * blocks not freed (s its stack, vals the inuse values; s valid during the
 * call only).
 */
void		 mallocprof_flush(struct mallocprof *m,
		    void (*add)(void *arg, const struct prof_sample *s, const int64_t vals[4]),
		    void *arg);

struct mallocprof_stats {
	size_t		 procs;		/* processes with uprobes */
	size_t		 live;		/* sampled blocks held */
	size_t		 stacks, stack_bytes;
	uint64_t	 attach_failures;	/* processes whose C library could not be probed */
	uint64_t	 full;		/* looks at selected processes refused: too many probed */
	size_t		 removing;	/* links of processes gone, not destroyed yet */
	uint64_t	 untracked;	/* samples not held: no room (table, memory) */
	uint64_t	 unknown;	/* blocks in the kernel's table whose sample was not read */
};
void		 mallocprof_get_stats(const struct mallocprof *m, struct mallocprof_stats *st);

#endif
