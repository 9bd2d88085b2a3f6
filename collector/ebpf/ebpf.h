/*
 * ebpf: the eBPF agent, a producer that samples every CPU of the host and
 * fills the store. The sampler (ebpf.c) drives the BPF program (bpf/), the
 * process table (proctab.c) tracks what runs, the symbolizer (symbolize.c)
 * and the unwinder (cfi.c, unwind.c) turn addresses into frames, cpuprof.c
 * builds the profiles, and runtimes/ holds one file per language runtime
 * (python.c, jvm.c). It runs its own threads between ebpf_start() and
 * ebpf_stop(); all it knows of storage is store.h.
 */
#ifndef PROFILEFS_EBPF_H
#define PROFILEFS_EBPF_H

#include "base.h"
#include "store.h"

struct ebpf_sampler;

/* The service for the rest, and the samples that give a name its own by default. */
#define EBPF_OTHER_SERVICE	"host-other"
#define EBPF_MIN_SAMPLES	20
/* --ebpf-memory: 1 user page fault in this many by default (8 MiB of 4 KiB pages). */
#define EBPF_MEMORY_FAULTS	2048

/* One --ebpf-include / --ebpf-exclude rule (proctab_filter). */
struct ebpf_filter {
	const char	*rule;		/* "unit:NAME", "container:NAME", "comm:NAME", "service:NAME" */
	bool		 include;
};

struct ebpf_opts {
	int		 hz;		/* 1..99 */
	unsigned	 flush_secs;	/* profile period, default 10 */
	long		 unwind_mib;	/* unwind table memory: 0 default (64), < 0 none */
	const char	*data_dir;	/* the debuginfod cache goes under it */
	const char	*debuginfod;	/* server URLs (dbginfod_parse_urls form), NULL: none */
	uint64_t	 debuginfod_cache;	/* bytes, 0: default */
	bool		 offcpu;	/* record off-CPU waits too (profile type offcpu) */
	uint64_t	 offcpu_min_ns;	/* shorter waits are not recorded */
	unsigned	 offcpu_sample;	/* record 1 switch in this many, 0 or 1: all */
	unsigned	 memory_faults;	/* --ebpf-memory: 1 user page fault in this many, 0: off */
	long		 min_samples;	/* CPU samples an hour for a service of its own, < 0: default */
	const struct ebpf_filter *filters;
	size_t		 nfilters;
	const char *const *malloc_rules;	/* --ebpf-malloc selectors; none: off */
	size_t		 nmalloc_rules;
};
/* Whether rule is an --ebpf-malloc selector: 0, or -EINVAL with *bad a reason. */
int	ebpf_check_malloc_rule(const char *rule, const char **bad);
/* Whether rule is an --ebpf-include/--ebpf-exclude rule: 0, or -EINVAL with *bad a reason. */
int	ebpf_check_filter(const char *rule, const char **bad);
/*
 * A debuginfod server list ("URL,URL" or DEBUGINFOD_URLS's "URL URL") into
 * ebpf_opts.debuginfod form, malloc'ed into *out ("" for an empty list).
 * 0, or -EINVAL with *bad a static reason.
 */
int	ebpf_parse_debuginfod(const char *list, char **out, const char **bad);
int	ebpf_start(struct store *st, const struct ebpf_opts *o, struct ebpf_sampler **out);
/*
 * Stops the sampler: its thread gets a few seconds to end (and store the
 * period); one stuck in the kernel is left behind and nothing is freed.
 */
void	ebpf_stop(struct ebpf_sampler *e);
/*
 * Whether ebpf_stop left a thread behind, stuck in the kernel (the sampler's
 * or a memory reader's): the process should then end with _exit, since
 * exit handlers (a leak checker stopping every thread) could wait on it.
 */
bool	ebpf_threads_left(void);
/*
 * For /healthz (any thread): appends one line about the sampler to out;
 * false when it has completed no period in 3 periods (and 20 s): stalled.
 */
bool	ebpf_health(struct ebpf_sampler *e, struct buf *out);

#endif
