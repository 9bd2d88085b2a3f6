/*
 * cpuprof: the eBPF sampler's aggregation of resolved stacks into pprof CPU
 * profiles, one per (service, series labels) per period, shaped exactly like
 * Go's CPU profiles (sample types samples/count and cpu/nanoseconds, period
 * type cpu/nanoseconds, period 1e9/HZ) so that the two merge; or, for
 * off-CPU waits, profiles of type offcpu (see cpuprof_create_offcpu). Per-sample pprof
 * labels pid, tid, comm. Where stacks come from is ebpf.c's business.
 *
 * Not thread-safe: one cpuprof belongs to the sampler's thread.
 */
#ifndef PROFILEFS_CPUPROF_H
#define PROFILEFS_CPUPROF_H

#include <stddef.h>
#include <stdint.h>

#include "proctab.h"
#include "base.h"
#include "pprof.h"
#include "store.h"

struct cpuprof;
struct cpuprof_svc;

struct cpuprof	*cpuprof_create(int hz);
/*
 * An aggregate of off-CPU waits instead: profile type offcpu, sample types
 * waits/count and offcpu/nanoseconds, period type offcpu/nanoseconds with
 * period sample_n (1 switch in sample_n recorded; values already scaled).
 */
struct cpuprof	*cpuprof_create_offcpu(unsigned sample_n);
/*
 * An aggregate of allocations instead (--ebpf-malloc): profile type heap,
 * laid out as Go's heap profiles (sample types alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes, the last the
 * default; period type space/bytes with period rate, the mean bytes
 * between samples). Not remembered in struct proc (no slot there).
 */
struct cpuprof	*cpuprof_create_malloc(int64_t rate);

/*
 * Another aggregate of samples walked like CPU samples (memgrow.c's): the
 * store's profile type type, ntypes (2..CPUPROF_MAX_TYPES) sample types,
 * the first a count, period type the second, period period, default sample
 * type dflt (NULL: pprof's, the last); slot: its own of struct proc's
 * cp_svc (2..CPUPROF_SLOTS-1). The strings must outlive it. NULL on bad
 * arguments or ENOMEM. Samples go in with cpuprof_sample_values.
 */
#define CPUPROF_MAX_TYPES	4
struct cpuprof	*cpuprof_create_typed(const char *type, const char *const *types,
		    const char *const *units, size_t ntypes, int64_t period, const char *dflt,
		    int slot);
void		 cpuprof_destroy(struct cpuprof *c);
/*
 * The aggregate of p's service and labels in this period (created on first
 * use), remembered in p for the period's next samples.
 */
struct cpuprof_svc *cpuprof_service(struct cpuprof *c, struct proc *p);
/*
 * The same with series labels series (canonical text: p's labels and more)
 * instead of p's own; not remembered in p.
 */
struct cpuprof_svc *cpuprof_service_labels(struct cpuprof *c, struct proc *p,
		    const char *series);
/* The period's number: the indexes below hold while it stays the same. */
uint64_t	 cpuprof_period(const struct cpuprof *c);
/* Location index of one frame in s (copied: f's strings may go away after). */
int64_t		 cpuprof_location(struct cpuprof_svc *s, const struct frame *f);
/*
 * Count one sample with the given location indexes, leaf first; its second
 * value is value (off-CPU: the wait in ns), or the period if value is 0.
 */
int		 cpuprof_sample(struct cpuprof_svc *s, const uint32_t *locs, size_t n,
		    uint32_t pid, uint32_t tid, const char *comm, int64_t value);
/* The same with nextra more string labels keys[i]=values[i] (at most 16). */
int		 cpuprof_sample_labels(struct cpuprof_svc *s, const uint32_t *locs, size_t n,
		    uint32_t pid, uint32_t tid, const char *comm, int64_t value,
		    const char *const *keys, const char *const *values, size_t nextra);
/* Count waits off-CPU at once (values waits and ns: the kernel added them up), labelled so. */
int		 cpuprof_sample_waits(struct cpuprof_svc *s, const uint32_t *locs, size_t n,
		    uint32_t pid, uint32_t tid, const char *comm, int64_t waits, int64_t ns,
		    const char *const *keys, const char *const *values, size_t nextra);
/* Count the four values of an allocation aggregate (cpuprof_create_malloc), already weighted. */
int		 cpuprof_sample_malloc(struct cpuprof_svc *s, const uint32_t *locs, size_t n,
		    uint32_t pid, uint32_t tid, const char *comm, const int64_t vals[4],
		    const char *const *keys, const char *const *values, size_t nextra);

/* Add one sample with its values, one per sample type (vals[0], a count, at least 1). */
int		 cpuprof_sample_values(struct cpuprof_svc *s, const uint32_t *locs, size_t n,
		    uint32_t pid, uint32_t tid, const char *comm, const int64_t *vals,
		    const char *const *keys, const char *const *values, size_t nextra);

/*
 * The gate: a service name gets a profile of its own once its CPU samples
 * and off-CPU waits (each one; the first value of the cpu and offcpu
 * aggregates; in a period no more waits than wait_ns, > 0, were waited:
 * the CPU sampling period) reach min_samples within an hour (0: at once);
 * before that
 * its aggregates go to the service other, with series labels series
 * (canonical text), each sample labelled with the series labels but host
 * of the service it would have been. Shared by all the aggregates (the
 * CPU and off-CPU ones decide); the sampler's thread only.
 */
struct cpuprof_gate;
struct cpuprof_gate *cpuprof_gate_create(uint64_t min_samples, uint64_t wait_ns,
		    const char *other, const char *series);
void		 cpuprof_gate_destroy(struct cpuprof_gate *g);
/*
 * Count c's samples or waits of the period for the gate g now (its flush
 * does it otherwise): the off-CPU aggregate before the CPU one is flushed.
 */
void		 cpuprof_gate_count(struct cpuprof *c, struct cpuprof_gate *g, int64_t end);
/* Whether name has a service of its own (true with no gate). */
bool		 cpuprof_gate_own(struct cpuprof_gate *g, const char *name);

/*
 * Store one profile per service for the period [start, end) (wall-clock ns)
 * through the gate g (NULL: none; the CPU and off-CPU aggregates count for
 * it, so they are flushed before the others) and empty the aggregates, in one synced batch (each by itself should the
 * store refuse the batch). *profiles (output) counts the profiles stored.
 * Errors of single services are logged; -errno only if none could be stored.
 */
int		 cpuprof_flush(struct cpuprof *c, struct store *st, int64_t start,
		    int64_t end, struct cpuprof_gate *g, size_t *profiles, uint64_t *samples);

#endif
