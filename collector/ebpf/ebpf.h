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
struct ebpf_opts {
	int		 hz;		/* 1..99 */
	unsigned	 flush_secs;	/* profile period, default 10 */
	long		 unwind_mib;	/* unwind table memory: 0 default (64), < 0 none */
	bool		 offcpu;	/* record off-CPU waits too (profile type offcpu) */
	uint64_t	 offcpu_min_ns;	/* shorter waits are not recorded */
	unsigned	 offcpu_sample;	/* record 1 switch in this many, 0 or 1: all */
};
int	ebpf_start(struct store *st, const struct ebpf_opts *o, struct ebpf_sampler **out);
void	ebpf_stop(struct ebpf_sampler *e);

#endif
