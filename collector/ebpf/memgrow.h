/*
 * memgrow: memory growth by stack (`serve --ebpf --ebpf-memory[=FAULTS]`).
 * The user side of bpf/memgrow.bpf.h: opens a software page-fault perf event
 * (user mode only, one sample every FAULTS faults) on every online CPU for
 * memgrow_fault, attaches the mmap/brk/munmap programs, and keeps the two
 * aggregates their samples go to, built and stored like the CPU samples'
 * (cpuprof.c) once a period:
 *
 *   memory-growth  faults/count, fault_space/bytes: the code that touched
 *                  anonymous memory first (the page fault that grew the
 *                  resident set), weighted by the page size;
 *   memory-mmap    calls/count, mmap_space/bytes, munmap_space/bytes
 *                  (default mmap_space), sample label call=mmap|brk|munmap:
 *                  the code that asked the kernel for heap.
 *
 * Which process a sample belongs to, its service, labels and frames are
 * ebpf.c's (handle_sample), the same as for a CPU sample. Not thread-safe:
 * the sampler's thread's.
 */
#ifndef PROFILEFS_MEMGROW_H
#define PROFILEFS_MEMGROW_H

#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "cpuprof.h"
#include "profile.h"
#include "store.h"

/* mmap/brk/munmap: calls this large or larger are all recorded, smaller ones sampled. */
#define MEMGROW_RATE		(4u << 20)
/* ... and at most this many a second on each CPU (the rest counted: mem_calls_limited). */
#define MEMGROW_CALLS_MAX	20

struct memgrow;

/*
 * The aggregates (faults: 1 sample in that many faults), with pages of
 * page bytes. NULL on ENOMEM. Nothing runs before memgrow_attach.
 */
struct memgrow	*memgrow_create(unsigned faults, uint64_t page);
/*
 * Attach: fault to a page-fault perf event on each of the ncpus CPUs cpus,
 * the system call programs (NULL where the architecture has none) to their
 * functions. A fault event that cannot be opened is an error; a system
 * call program that cannot be attached is said in the log and left out
 * (*calls false: no memory-mmap profiles). 0 or -errno.
 */
int		 memgrow_attach(struct memgrow *m, struct bpf_program *fault,
		    struct bpf_program *const *calls, size_t ncalls, const int *cpus, int ncpus,
		    bool *calls_on);
void		 memgrow_destroy(struct memgrow *m);
/* Whether kind (struct prof_hdr) is a memgrow sample's. */
bool		 memgrow_kind(uint32_t kind);
/* The aggregate a sample of that kind goes to. */
struct cpuprof	*memgrow_cpuprof(struct memgrow *m, uint32_t kind);
/*
 * Add memgrow sample s (its values: offcpu_ns bytes, waits events) with
 * the locations locs to the aggregate svc of memgrow_cpuprof(s's kind),
 * with nextra more labels.
 */
int		 memgrow_add(struct cpuprof_svc *svc, const uint32_t *locs, size_t n,
		    const struct prof_sample *s, const char *comm, const char *const *keys,
		    const char *const *values, size_t nextra);
/*
 * Store the period's profiles [start, end) (through the gate g, as the
 * CPU profiles are); *samples: how many stored.
 */
void		 memgrow_flush(struct memgrow *m, struct store *st, int64_t start, int64_t end,
		    struct cpuprof_gate *g, uint64_t *samples);

#endif
