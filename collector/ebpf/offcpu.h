/*
 * offcpu: drains the off-CPU waits the BPF program adds up in the kernel
 * (the map offcpu_aggs, one entry per thread, stack and generation; see
 * struct prof_offcpu_key in bpf/profile.h) into the sampler's aggregate,
 * and holds back the forgetting of processes that exited until their last
 * waits have been drained (their mappings name the frames). Resolving the
 * stacks is the caller's (ebpf.c). Not thread-safe: the sampler's thread's.
 */
#ifndef PROFILEFS_OFFCPU_H
#define PROFILEFS_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct offcpu;

/*
 * aggs_fd: the offcpu_aggs map; gen: the BPF program's offcpu_gen (the
 * skeleton's mmap'd .bss), which the drain moves on. NULL on ENOMEM.
 * Freed by offcpu_destroy.
 */
struct offcpu	*offcpu_create(int aggs_fd, volatile uint32_t *gen);
void		 offcpu_destroy(struct offcpu *o);

/*
 * Call add(arg, v) for each entry of the generations before the current
 * one (all: every entry, at stop), and delete them from the map; then
 * forget(arg, pid) for the processes whose exit (offcpu_exited) two drains
 * ago. v (and its sample) may be changed by add, and is valid during the
 * call only. 0 or -errno (the map could not be read).
 */
int		 offcpu_drain(struct offcpu *o, bool all,
		    void (*add)(void *arg, struct prof_offcpu_val *v),
		    void (*forget)(void *arg, uint32_t pid), void *arg);

/*
 * pid exited: returns true if it is kept until its waits are drained (the
 * drain forgets it), false if the caller must forget it now (no room).
 */
bool		 offcpu_exited(struct offcpu *o, uint32_t pid);

#endif
