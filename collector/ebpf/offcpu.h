/*
 * offcpu: drains the off-CPU waits the BPF program adds up in the kernel
 * (the map offcpu_aggs, one small entry per thread, stack and generation,
 * and offcpu_stacks, each stack once per generation; see struct
 * prof_offcpu_key in bpf/profile.h) into the sampler's aggregate, and holds
 * back the forgetting of processes that exited until their last waits have
 * been drained (their mappings name the frames). The stacks read are kept
 * here, by their hash, as long as waits keep coming in them, so that a
 * stack is read from the kernel once, not once a drain. Resolving the
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
 * aggs_fd, stacks_fd, threads_fd: the maps offcpu_aggs (of aggs_cap
 * entries), offcpu_stacks and offcpu_threads; gen: the BPF program's offcpu_gen (the skeleton's mmap'd
 * data), which the drain moves on; added: its offcpu_added, the entries it
 * has added to offcpu_aggs. NULL on ENOMEM. Freed by offcpu_destroy.
 */
struct offcpu	*offcpu_create(int aggs_fd, int stacks_fd, int threads_fd,
		    uint32_t aggs_cap, volatile uint32_t *gen, volatile __u64 *added);
void		 offcpu_destroy(struct offcpu *o);

/*
 * Whether offcpu_aggs has filled up enough since the last drain (a quarter
 * of its room) to drain before the drain interval is over. Reads memory
 * only: cheap enough for every poll.
 */
bool		 offcpu_due(const struct offcpu *o);

/* add()'s exec for a thread's time with no stack: no image in particular. */
#define OFFCPU_EXEC_ANY		UINT32_MAX

/*
 * Call add(arg, s, waits, exec) for each entry of the generations before
 * the current one (all: every entry, at stop), s its stack with the entry's
 * identity (hdr.pid, hdr.tid, comm, leader_comm), exec the process image
 * the stack was taken in (prof_offcpu_key.exec), s->offcpu_ns the
 * waits' time and waits their count, both scaled to the thread's exact
 * figures of the generation (a thread's time with no stack: s has none),
 * and delete the entries and their stacks from the maps;
 * then forget(arg, pid) for the processes whose exit (offcpu_exited) two
 * drains ago. s may be changed by add, and is valid during the call only.
 * An entry whose stack is not in the map (the BPF side stores it after
 * the entry) is counted (offcpu_lost) and left out. 0 or -errno (the map
 * could not be read).
 */
int		 offcpu_drain(struct offcpu *o, bool all,
		    void (*add)(void *arg, struct prof_sample *s, uint64_t waits, uint32_t exec),
		    void (*forget)(void *arg, uint32_t pid), void *arg);

/* Entries drained whose stack was not found, since the start. */
uint64_t	 offcpu_lost(const struct offcpu *o);

/* Stacks held (read once from the kernel, kept while waits come in them), and their bytes. */
size_t		 offcpu_cached(const struct offcpu *o, size_t *bytes);

/*
 * pid exited: returns true if it is kept until its waits are drained (the
 * drain forgets it), false if the caller must forget it now (no room: more
 * than OFFCPU_EXITS_HELD exited since the drain before last).
 */
#define OFFCPU_EXITS_HELD	4096
bool		 offcpu_exited(struct offcpu *o, uint32_t pid);

#endif
