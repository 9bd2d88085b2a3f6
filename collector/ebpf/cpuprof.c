/*
 * cpuprof: per-period, per-service aggregation of eBPF samples into pprof.
 *
 * Each service of a period aggregates into one merge (pprof/merge.c) through
 * its builder side: mappings, functions, locations and samples are interned
 * by pprof's own identities as they are first seen, a sample's values add up,
 * and merge_finish() makes the profile that store_put_profile() stores. Then
 * everything starts over.
 *
 * The same frames come back sample after sample: small direct-mapped caches
 * per service take a frame to its location, a new location's mapping and
 * function to theirs, without interning their strings again. A hit needs
 * the fields equal and the strings equal by content (the caller's strings
 * may be freed and their memory reused). Locations are cached by address
 * within their mapping, as the merge knows them: a new process of a program
 * (its libraries elsewhere) finds the frames its predecessors named.
 *
 * The gate (cpuprof_gate_*) keeps the root short: a service name has a
 * profile of its own only once its CPU samples and off-CPU waits (each
 * counts one, but no more than 1/HZ's waited) reach a threshold within
 * an hour; until then each of its period's aggregates is folded at the
 * flush into the one per-host service for the rest, its series labels (unit, container, pod) becoming sample
 * labels next to comm and pid. A name keeps its service while it has CPU
 * samples or waits at least once an hour. "kernel" (the kernel's threads)
 * is always a service of its own.
 *
 * Off-CPU counts by waits, the offcpu profile's first value, not by time:
 * every thread of every process is off-CPU nearly all the time it is idle,
 * so time would give each process alive a few seconds a service of its
 * own; a wait is a wakeup, something the process was woken for (a request,
 * a timer, a lock), as a CPU sample is something it ran. But no more waits
 * count in a period than CPU samples the time waited would have given
 * (wait_ns, 1/HZ, each): a short command's start has a few waits of a tenth
 * of a millisecond to a few (a page, a CPU to run on on a busy host), which
 * would give every command run 20 times an hour a service of its own, and
 * a cap much below 1/HZ leaves those on a busy host above it; a sleeper's
 * or a server's waits are longer. The figures are the profile's own (the
 * kernel's exact count and time of the name's switches out), so a reader
 * can check them (-sample_index=waits and offcpu), whatever the CPU's load
 * or --ebpf-offcpu-sample made of the stacks.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "cpuprof.h"

#define LCACHE_SLOTS	1024	/* locations; a power of two, as are the two below */

struct lcache_ent {
	const char	*func, *srcfile;	/* the caller's pointers */
	uint64_t	 rel, size, offset;	/* address - start, limit - start (no file: addr, 0) */
	int64_t		 line;
	int64_t		 s_func, s_file, s_build_id, s_srcfile;	/* merge strings, -1: none */
	int64_t		 loc;		/* -1: empty slot */
};

#define MCACHE_SLOTS	64	/* mappings */
#define FNCACHE_SLOTS	1024	/* functions */

/* A mapping's merge index, for a frame with the same fields and strings. */
struct mcache_ent {
	const char	*file, *build_id;
	uint64_t	 start, limit, offset;
	int64_t		 s_file, s_build_id;
	int64_t		 k;		/* -1: empty */
};

/* A function's merge index, for a frame with the same names. */
struct fncache_ent {
	const char	*func, *srcfile;
	int64_t		 s_func, s_srcfile;	/* s_srcfile -1: none */
	int64_t		 k;		/* -1: empty */
};

struct cpuprof_svc {
	char		*service;
	char		*exe;		/* the executable of its first process, NULL: unknown */
	struct labelset	 labels;
	struct merge	*m;
	int64_t		 s_pid, s_tid, s_comm;	/* label keys, merge string indexes */
	uint64_t	 total;		/* its samples' first values added up */
	uint64_t	 total1;	/* ... and second ones (off-CPU: ns waited), for the gate */
	struct lcache_ent *lcache;	/* LCACHE_SLOTS, allocated at first use */
	struct mcache_ent mcache[MCACHE_SLOTS];
	struct fncache_ent *fncache;	/* FNCACHE_SLOTS, with lcache */
};

struct cpuprof {
	const char	*type;		/* the store's profile type: "cpu", "offcpu", ... */
	const char	*const *types, *const *units;	/* sample types */
	size_t		 ntypes;	/* 2; malloc: 4; up to CPUPROF_MAX_TYPES (cpuprof_create_typed) */
	const char	*dflt;		/* the default sample type, NULL: pprof's (the last) */
	int64_t		 period;	/* ns per sample; off-CPU: 1 in how many switches */
	const char	*period_type, *period_unit;
	struct intern	*keys;		/* service "\0" labels text -> svc index */
	struct cpuprof_svc **svcs;
	size_t		 nsvcs, cap;
	uint64_t	 gen;		/* the period's number, bumped at every reset */
	int		 slot;		/* of struct proc's cp_svc: 0 CPU, 1 off-CPU, 2.. others; -1 none */
	bool		 counted;	/* counted for the gate this period (cpuprof_gate_count) */
};

/* A service name the gate has seen: its CPU samples and off-CPU waits since it was first seen. */
struct gate_ent {
	char		*name;
	uint64_t	 count;		/* CPU samples + off-CPU waits within the window begun at since */
	int64_t		 since, last;	/* ns: window start, last flush with samples or waits */
	bool		 own;		/* past the threshold: a service of its own */
};

struct cpuprof_gate {
	uint64_t	 min;		/* samples within GATE_WINDOW_NS */
	uint64_t	 wait_ns;	/* off-CPU: one wait counted per this much waited at most */
	char		*other;		/* the service for the rest */
	char		*series;	/* its series labels (canonical text) */
	struct gate_ent	*ents;
	size_t		 n, cap;
};

#define GATE_WINDOW_NS	(3600LL * 1000 * 1000 * 1000)

/* Go's CPU profiles: what the sampler's must merge with. */
static const char *const sample_types[] = { "samples", "cpu" };
static const char *const sample_units[] = { "count", "nanoseconds" };
/* Off-CPU: how many waits were recorded, and how long they lasted. */
static const char *const offcpu_types[] = { "waits", "offcpu" };
static const char *const offcpu_units[] = { "count", "nanoseconds" };
/* Allocations (--ebpf-malloc): Go's heap profiles, so the two read alike. */
static const char *const malloc_types[] = { "alloc_objects", "alloc_space", "inuse_objects",
    "inuse_space" };
static const char *const malloc_units[] = { "count", "bytes", "count", "bytes" };

/*
 * Periods are numbered across all aggregates, so that a number held in a
 * struct proc (cp_gen) or a frame cache names one aggregate's period only.
 */
static atomic_uint_fast64_t next_gen = 1;

static struct cpuprof *
create(const char *type, const char *const *types, const char *const *units, int64_t period,
    int slot)
{
	struct cpuprof *c = xcalloc(1, sizeof(*c));

	c->type = type;
	c->slot = slot;
	c->types = types;
	c->units = units;
	c->ntypes = 2;
	c->period = period;
	c->period_type = types[1];
	c->period_unit = units[1];
	c->gen = atomic_fetch_add(&next_gen, 1);
	if ((c->keys = intern_create(64)) == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

struct cpuprof *
cpuprof_create(int hz)
{
	return create("cpu", sample_types, sample_units, 1000000000LL / (hz > 0 ? hz : 1), 0);
}

struct cpuprof *
cpuprof_create_offcpu(unsigned sample_n)
{
	return create("offcpu", offcpu_types, offcpu_units, sample_n > 0 ? sample_n : 1, 1);
}

struct cpuprof *
cpuprof_create_malloc(int64_t rate)
{
	struct cpuprof *c = create("heap", malloc_types, malloc_units, rate, -1);

	if (c != NULL) {
		c->ntypes = 4;
		c->period_type = "space";
		c->period_unit = "bytes";
	}
	return c;
}

struct cpuprof *
cpuprof_create_typed(const char *type, const char *const *types, const char *const *units,
    size_t ntypes, int64_t period, const char *dflt, int slot)
{
	struct cpuprof *c;

	if (ntypes < 2 || ntypes > CPUPROF_MAX_TYPES || slot < 2 || slot >= CPUPROF_SLOTS)
		return NULL;
	if ((c = create(type, types, units, period > 0 ? period : 1, slot)) != NULL) {
		c->ntypes = ntypes;
		c->dflt = dflt;
	}
	return c;
}

static void
svc_free(struct cpuprof_svc *s)
{
	if (s == NULL)
		return;
	free(s->service);
	free(s->exe);
	labels_clear(&s->labels);
	merge_free(s->m);
	free(s->lcache);
	free(s->fncache);
	free(s);
}

static void
reset(struct cpuprof *c)
{
	size_t i;

	for (i = 0; i < c->nsvcs; i++)
		svc_free(c->svcs[i]);
	c->nsvcs = 0;
	c->gen = atomic_fetch_add(&next_gen, 1);
	intern_destroy(c->keys);
	c->keys = intern_create(64);
}

void
cpuprof_destroy(struct cpuprof *c)
{
	if (c == NULL)
		return;
	reset(c);
	intern_destroy(c->keys);
	free(c->svcs);
	free(c);
}

static struct cpuprof_svc *
svc_new(const struct cpuprof *c, const char *name, const char *series)
{
	struct cpuprof_svc *s = xcalloc(1, sizeof(*s));
	struct merge_header h = { .types = c->types, .units = c->units, .ntypes = c->ntypes,
	    .period_type = c->period_type, .period_unit = c->period_unit, .period = c->period };

	s->service = xstrdup(name);
	if (labels_parse(series, &s->labels, NULL) < 0 ||
	    (s->m = merge_create()) == NULL || merge_begin(s->m, &h) < 0 ||
	    (s->s_pid = merge_string(s->m, "pid")) < 0 ||
	    (s->s_tid = merge_string(s->m, "tid")) < 0 ||
	    (s->s_comm = merge_string(s->m, "comm")) < 0) {
		svc_free(s);
		return NULL;
	}
	return s;
}

uint64_t
cpuprof_period(const struct cpuprof *c)
{
	return c->gen;
}

/*
 * The executable of s's first process with one: remembered, and its mapping
 * interned (main_mapping_first puts it first, even when no sample ran in it).
 */
static void
svc_exe(struct cpuprof_svc *s, struct proc *p)
{
	struct pf_mapping mp = { 0 };
	struct frame f;

	if (proctab_exe_mapping(p, &f) < 0 || (s->exe = strdup(p->exe)) == NULL)
		return;
	mp.start = f.start;
	mp.limit = f.limit;
	mp.offset = f.offset;
	if ((mp.filename = merge_string(s->m, f.file)) < 0 ||
	    (mp.build_id = merge_string(s->m, f.build_id ? f.build_id : "")) < 0 ||
	    merge_mapping(s->m, &mp) < 0) {
		free(s->exe);		/* out of memory: the order is left as it is */
		s->exe = NULL;
	}
}

/* The aggregate of service name and series labels series. */
static struct cpuprof_svc *
service_named(struct cpuprof *c, const char *name, const char *series)
{
	struct buf key = { 0 };
	struct cpuprof_svc *s = NULL;
	int added = 0;
	int64_t i;

	if (c->keys == NULL && (c->keys = intern_create(64)) == NULL)
		return NULL;	/* out of memory at the last reset: try again next time */
	buf_adds(&key, name);
	buf_addc(&key, '\0');
	buf_adds(&key, series);
	if (buf_error(&key) < 0 || (i = intern_put(c->keys, key.data, key.len, &added)) < 0)
		goto out;
	if (!added) {
		s = c->svcs[i];
		goto out;
	}
	c->svcs = xgrow(c->svcs, &c->cap, c->nsvcs + 1, sizeof(*c->svcs));
	if ((s = svc_new(c, name, series)) == NULL) {
		/* The key is interned but no service is behind it: drop the period. */
		reset(c);
		goto out;
	}
	c->svcs[c->nsvcs++] = s;
out:
	buf_free(&key);
	return s;
}

/* The aggregate of p's service and series labels series. */
static struct cpuprof_svc *
service(struct cpuprof *c, struct proc *p, const char *series)
{
	struct cpuprof_svc *s = service_named(c, p->service, series);

	if (s != NULL && s->exe == NULL && p->exe != NULL)
		svc_exe(s, p);
	return s;
}

struct cpuprof_svc *
cpuprof_service(struct cpuprof *c, struct proc *p)
{
	struct cpuprof_svc *s;

	if (c->slot < 0)
		return service(c, p, p->labels_text);
	if (p->cp_gen[c->slot] == c->gen && p->cp_svc[c->slot] != NULL)
		return p->cp_svc[c->slot];
	if ((s = service(c, p, p->labels_text)) != NULL) {
		p->cp_svc[c->slot] = s;
		p->cp_gen[c->slot] = c->gen;
	}
	return s;
}

struct cpuprof_svc *
cpuprof_service_labels(struct cpuprof *c, struct proc *p, const char *series)
{
	return service(c, p, series);
}

/*
 * pprof takes a profile's first mapping for its main binary ("File:" of
 * go tool pprof): move the executable's mapping first, where the
 * interning order (leaf first: libc, the kernel) put another.
 */
static void
main_mapping_first(struct profile *p, const char *exe)
{
	struct pf_mapping m;
	size_t i, k;

	if (exe == NULL)
		return;
	for (k = 0; k < p->nmappings; k++)
		if (strcmp(profile_str(p, p->mappings[k].filename), exe) == 0)
			break;
	if (k == 0 || k == p->nmappings)
		return;
	m = p->mappings[k];
	memmove(&p->mappings[1], &p->mappings[0], k * sizeof(*p->mappings));
	p->mappings[0] = m;
	/* Location mapping ids are index + 1: k + 1 becomes 1, 1..k shift by one. */
	for (i = 0; i < p->nlocations; i++) {
		uint32_t *id = &p->locations[i].mapping;

		if (*id == k + 1)
			*id = 1;
		else if (*id >= 1 && *id <= k)
			(*id)++;
	}
}

/* Whether a cached string (merge index i, -1 for none) is str. */
static bool
lcache_same(const struct cpuprof_svc *s, int64_t i, const char *str)
{
	if (str == NULL)
		return i < 0;
	return i >= 0 && merge_string_is(s->m, i, str);
}

static int64_t
mapping(struct cpuprof_svc *s, const struct frame *f, struct lcache_ent *ce)
{
	const char *bid = f->build_id ? f->build_id : "";
	uint64_t h = (f->start ^ (uint64_t)(uintptr_t)f->file) * 0x9e3779b97f4a7c15ULL;
	struct mcache_ent *c = &s->mcache[(h >> 40) & (MCACHE_SLOTS - 1)];
	struct pf_mapping mp = { .start = f->start, .limit = f->limit, .offset = f->offset };
	int64_t k;

	if (c->k >= 0 && c->file == f->file && c->build_id == f->build_id &&
	    c->start == f->start && c->limit == f->limit && c->offset == f->offset &&
	    lcache_same(s, c->s_file, f->file) && lcache_same(s, c->s_build_id, bid)) {
		ce->s_file = c->s_file;
		ce->s_build_id = c->s_build_id;
		return c->k;
	}
	c->k = -1;
	if ((mp.filename = merge_string(s->m, f->file)) < 0 ||
	    (mp.build_id = merge_string(s->m, bid)) < 0 ||
	    (k = merge_mapping(s->m, &mp)) < 0)
		return -ENOMEM;
	c->file = f->file;
	c->build_id = f->build_id;
	c->start = f->start;
	c->limit = f->limit;
	c->offset = f->offset;
	ce->s_file = c->s_file = mp.filename;
	ce->s_build_id = c->s_build_id = mp.build_id;
	c->k = k;
	return k;
}

static int64_t
function(struct cpuprof_svc *s, const struct frame *f, struct lcache_ent *ce)
{
	uint64_t h = ((uint64_t)(uintptr_t)f->func ^ (uint64_t)(uintptr_t)f->srcfile << 7) *
	    0x9e3779b97f4a7c15ULL;
	struct fncache_ent scratch, *c = s->fncache ?
	    &s->fncache[(h >> 40) & (FNCACHE_SLOTS - 1)] : &scratch;
	struct pf_function fn = { 0 };
	int64_t k;

	if (c != &scratch && c->k >= 0 && c->func == f->func && c->srcfile == f->srcfile &&
	    lcache_same(s, c->s_func, f->func) && lcache_same(s, c->s_srcfile, f->srcfile)) {
		ce->s_func = c->s_func;
		ce->s_srcfile = c->s_srcfile;
		return c->k;
	}
	c->k = -1;
	c->s_srcfile = -1;
	if ((fn.name = merge_string(s->m, f->func)) < 0 ||
	    (f->srcfile && (fn.filename = c->s_srcfile = merge_string(s->m, f->srcfile)) < 0))
		return -ENOMEM;
	fn.system_name = fn.name;
	if ((k = merge_function(s->m, &fn)) < 0)
		return -ENOMEM;
	c->func = f->func;
	c->srcfile = f->srcfile;
	ce->s_func = c->s_func = fn.name;
	ce->s_srcfile = c->s_srcfile;
	c->k = k;
	return k;
}

static int64_t
location(struct cpuprof_svc *s, const struct frame *f, struct lcache_ent *ce)
{
	struct pf_line line = { .function = PF_NONE };
	uint32_t map = 0;
	int64_t k;

	if (f->file) {
		if ((k = mapping(s, f, ce)) < 0)
			return k;
		map = (uint32_t)k + 1;
	}
	if (f->func) {
		if ((k = function(s, f, ce)) < 0)
			return k;
		line.function = (uint32_t)k;
		line.line = f->line;
	}
	return merge_location(s->m, map, f->file ? f->start : 0, f->addr, false, &line,
	    f->func ? 1 : 0);
}

static uint32_t
lcache_slot(const struct frame *f, uint64_t rel)
{
	uint64_t h = rel * 0x9e3779b97f4a7c15ULL;

	h ^= (uint64_t)(uintptr_t)f->func * 0xc2b2ae3d27d4eb4fULL;
	h ^= f->offset * 0x165667b19e3779f9ULL;
	return (uint32_t)(h >> 40) & (LCACHE_SLOTS - 1);
}

int64_t
cpuprof_location(struct cpuprof_svc *s, const struct frame *f)
{
	struct lcache_ent *ce, scratch;
	uint64_t rel = f->file ? f->addr - f->start : f->addr;
	uint64_t size = f->file ? f->limit - f->start : 0;
	size_t i;
	int64_t k;

	if (s->lcache == NULL) {
		s->lcache = malloc(LCACHE_SLOTS * sizeof(*s->lcache));
		s->fncache = malloc(FNCACHE_SLOTS * sizeof(*s->fncache));
		if (s->lcache == NULL || s->fncache == NULL) {
			free(s->lcache);
			free(s->fncache);
			s->lcache = NULL;
			s->fncache = NULL;
		}
		for (i = 0; s->lcache && i < LCACHE_SLOTS; i++)
			s->lcache[i].loc = -1;
		for (i = 0; s->fncache && i < FNCACHE_SLOTS; i++)
			s->fncache[i].k = -1;
		for (i = 0; i < MCACHE_SLOTS; i++)
			s->mcache[i].k = -1;
	}
	/*
	 * The merge's identity of a location: its mapping's (size, offset,
	 * file and build id: compared by content, a process's own copy of the
	 * path is another pointer), the address within it, its line.
	 */
	ce = s->lcache ? &s->lcache[lcache_slot(f, rel)] : &scratch;
	if (ce != &scratch && ce->loc >= 0 && ce->rel == rel && ce->func == f->func &&
	    ce->srcfile == f->srcfile && ce->line == f->line && ce->size == size &&
	    ce->offset == f->offset &&
	    lcache_same(s, ce->s_func, f->func) && lcache_same(s, ce->s_file, f->file) &&
	    (f->file == NULL || lcache_same(s, ce->s_build_id,
	    f->build_id ? f->build_id : "")) &&
	    (f->func == NULL || lcache_same(s, ce->s_srcfile, f->srcfile)))
		return ce->loc;
	ce->loc = -1;
	ce->s_func = ce->s_file = ce->s_build_id = ce->s_srcfile = -1;
	if ((k = location(s, f, ce)) < 0)
		return k;
	ce->func = f->func;
	ce->srcfile = f->srcfile;
	ce->rel = rel;
	ce->size = size;
	ce->offset = f->offset;
	ce->line = f->line;
	ce->loc = k;
	return k;
}

static int
add_values(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm, const int64_t *vals, const char *const *keys,
    const char *const *values, size_t nextra)
{
	struct pf_label labels[3 + 16] = {
		{ .key = s->s_pid, .num = pid },
		{ .key = s->s_tid, .num = tid },
		{ .key = s->s_comm },
	};
	int64_t ci;
	size_t i, nl = 3;
	int rc;

	if ((ci = merge_string(s->m, comm)) < 0)
		return -ENOMEM;
	labels[2].str = ci;
	for (i = 0; i < nextra && nl < sizeof(labels) / sizeof(labels[0]); i++, nl++) {
		memset(&labels[nl], 0, sizeof(labels[nl]));
		if ((labels[nl].key = merge_string(s->m, keys[i])) < 0 ||
		    (labels[nl].str = merge_string(s->m, values[i])) < 0)
			return -ENOMEM;
	}
	if ((rc = merge_sample(s->m, locs, n, labels, nl, vals)) == 0) {
		s->total += vals[0] > 0 ? (uint64_t)vals[0] : 1;
		s->total1 += vals[1] > 0 ? (uint64_t)vals[1] : 0;
	}
	return rc;
}

int
cpuprof_sample_malloc(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm, const int64_t vals[4], const char *const *keys,
    const char *const *values, size_t nextra)
{
	return add_values(s, locs, n, pid, tid, comm, vals, keys, values, nextra);
}

int
cpuprof_sample(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm, int64_t value)
{
	return cpuprof_sample_labels(s, locs, n, pid, tid, comm, value, NULL, NULL, 0);
}

int
cpuprof_sample_labels(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm, int64_t value, const char *const *keys,
    const char *const *values, size_t nextra)
{
	int64_t vals[2] = { 1, value > 0 ? value : merge_period(s->m) };

	return add_values(s, locs, n, pid, tid, comm, vals, keys, values, nextra);
}

int
cpuprof_sample_waits(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm, int64_t waits, int64_t ns, const char *const *keys,
    const char *const *values, size_t nextra)
{
	int64_t vals[2] = { waits, ns };

	if (waits < 1 || ns < 0)
		return -EINVAL;
	return add_values(s, locs, n, pid, tid, comm, vals, keys, values, nextra);
}

int
cpuprof_sample_values(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm, const int64_t *vals, const char *const *keys,
    const char *const *values, size_t nextra)
{
	if (vals[0] < 1)
		return -EINVAL;
	return add_values(s, locs, n, pid, tid, comm, vals, keys, values, nextra);
}

/* Name c's default sample type in p (pprof's default_sample_type), if c has one. */
static void
default_type(const struct cpuprof *c, struct profile *p)
{
	size_t i;

	if (c->dflt == NULL)
		return;
	for (i = 0; i < p->nsample_types; i++)
		if (strcmp(profile_str(p, p->sample_types[i].type), c->dflt) == 0) {
			p->default_sample_type = p->sample_types[i].type;
			return;
		}
}

struct cpuprof_gate *
cpuprof_gate_create(uint64_t min_samples, uint64_t wait_ns, const char *other,
    const char *series)
{
	struct cpuprof_gate *g = xcalloc(1, sizeof(*g));

	g->min = min_samples;
	g->wait_ns = wait_ns;
	g->other = xstrdup(other);
	g->series = xstrdup(series);
	return g;
}

void
cpuprof_gate_destroy(struct cpuprof_gate *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->n; i++)
		free(g->ents[i].name);
	free(g->ents);
	free(g->other);
	free(g->series);
	free(g);
}

static struct gate_ent *
gate_find(struct cpuprof_gate *g, const char *name)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		if (strcmp(g->ents[i].name, name) == 0)
			return &g->ents[i];
	return NULL;
}

bool
cpuprof_gate_own(struct cpuprof_gate *g, const char *name)
{
	struct gate_ent *e;

	/* The kernel's threads are one service, named in the README's first steps. */
	if (g == NULL || g->min == 0 || strcmp(name, g->other) == 0 || strcmp(name, "kernel") == 0)
		return true;
	return (e = gate_find(g, name)) != NULL && e->own;
}

/*
 * The CPU or off-CPU period [.., now) of c: each name's samples count (CPU)
 * or its waits (off-CPU: the aggregate's first value, as for CPU), no more
 * of them than wait_ns it waited (rounded down), a name past the threshold
 * gets its own service; names with neither for an hour are forgotten (and
 * start over).
 */
static void
gate_count(struct cpuprof_gate *g, const struct cpuprof *c, int64_t now)
{
	struct gate_ent *e;
	size_t i, j;

	for (i = 0; i < c->nsvcs; i++) {
		const struct cpuprof_svc *s = c->svcs[i];
		uint64_t n = s->total;

		if (s->total == 0 || strcmp(s->service, g->other) == 0)
			continue;
		if (c->slot == 1 && g->wait_ns > 0 && s->total1 / g->wait_ns < n)
			n = s->total1 / g->wait_ns;
		e = gate_find(g, s->service);
		/* (Waits that count nothing start no entry: a name per process that waited.) */
		if (e == NULL && n == 0)
			continue;
		if (e == NULL) {
			g->ents = xgrow(g->ents, &g->cap, g->n + 1, sizeof(*g->ents));
			e = &g->ents[g->n++];
			*e = (struct gate_ent){ .name = xstrdup(s->service), .since = now };
		}
		if (!e->own && now - e->since > GATE_WINDOW_NS) {
			e->count = 0;
			e->since = now;
		}
		e->count += n;
		e->last = now;
		if (e->count >= g->min)
			e->own = true;
	}
	for (i = j = 0; i < g->n; i++) {
		if (now - g->ents[i].last > GATE_WINDOW_NS) {
			free(g->ents[i].name);
			continue;
		}
		g->ents[j++] = g->ents[i];
	}
	g->n = j;
}

/*
 * Each sample of p gets the pairs of ls but host as labels: what tells the
 * processes of the service for the rest apart. In p's arena.
 */
static int
profile_label_series(struct profile *p, const struct labelset *ls)
{
	int64_t keys[LABELS_MAX], vals[LABELS_MAX];
	const char **strings;
	size_t i, k, n = 0;

	for (i = 0; i < ls->n; i++)
		if (strcmp(ls->pairs[i].key, "host") != 0)
			n++;
	if (n == 0)
		return 0;
	if ((strings = arena_calloc(p->arena, p->nstrings + 2 * n, sizeof(*strings))) == NULL)
		return -ENOMEM;
	memcpy(strings, p->strings, p->nstrings * sizeof(*strings));
	for (i = k = 0; i < ls->n; i++) {
		if (strcmp(ls->pairs[i].key, "host") == 0)
			continue;
		keys[k] = (int64_t)p->nstrings;
		strings[p->nstrings++] = ls->pairs[i].key;	/* ls outlives p's use */
		vals[k] = (int64_t)p->nstrings;
		strings[p->nstrings++] = ls->pairs[i].value;
		k++;
	}
	p->strings = strings;
	for (i = 0; i < p->nsamples; i++) {
		struct pf_sample *sm = &p->samples[i];
		struct pf_label *l = arena_calloc(p->arena, sm->nlabels + n, sizeof(*l));

		if (l == NULL)
			return -ENOMEM;
		memcpy(l, sm->labels, sm->nlabels * sizeof(*l));
		for (k = 0; k < n; k++) {
			l[sm->nlabels + k].key = keys[k];
			l[sm->nlabels + k].str = vals[k];
		}
		sm->labels = l;
		sm->nlabels += (uint32_t)n;
	}
	return 0;
}

/*
 * Fold the period's aggregates of names without a service of their own
 * into the service for the rest. An aggregate that cannot be folded (out
 * of memory) is dropped, as a period is.
 */
static void
gate_fold(struct cpuprof_gate *g, struct cpuprof *c)
{
	struct cpuprof_svc *o = NULL;
	struct buf err = { 0 };
	size_t i, n = c->nsvcs;

	for (i = 0; i < n; i++) {
		struct cpuprof_svc *s = c->svcs[i];
		struct profile *p = NULL;

		if (s->total == 0 || cpuprof_gate_own(g, s->service))
			continue;
		/* (Appended past n, or found among them: its own total is not 0.) */
		if (o == NULL && (o = service_named(c, g->other, g->series)) == NULL)
			break;
		if (o == s)
			continue;
		buf_free(&err);
		if (merge_finish(s->m, false, &p) == 0 && profile_label_series(p, &s->labels) == 0 &&
		    merge_add(o->m, p, &err) == 0)
			o->total += s->total;
		else
			log_warnx("ebpf: folding %s into %s failed: %s", s->service, g->other,
			    err.len ? err.data : "out of memory");
		profile_free(p);
		s->total = 0;	/* not stored; freed at the reset */
	}
	buf_free(&err);
}

/*
 * The period's profiles go to the store in one synced batch (one write and
 * one sync, not one per service). Should the batch be refused (a profile
 * the store will not take makes it refuse all), each is stored by itself,
 * so that one bad service costs only its own profile.
 */
void
cpuprof_gate_count(struct cpuprof *c, struct cpuprof_gate *g, int64_t end)
{
	if (g == NULL || g->min == 0 || c->counted || (c->slot != 0 && c->slot != 1))
		return;
	gate_count(g, c, end);
	c->counted = true;
}

int
cpuprof_flush(struct cpuprof *c, struct store *st, int64_t start, int64_t end,
    struct cpuprof_gate *g, size_t *profiles, uint64_t *samples)
{
	struct store_input *in = NULL;
	struct profile **ps = NULL;
	struct cpuprof_svc **of = NULL;	/* ps[k]'s service */
	struct buf err = { 0 };
	size_t i, n = 0, ok = 0, failed = 0;
	int rc = 0;

	*profiles = 0;
	*samples = 0;
	if (g != NULL && g->min > 0) {
		/*
		 * CPU (0) and off-CPU (1) count; the others (allocations,
		 * faults) follow their verdict. (The off-CPU aggregate is
		 * counted before the CPU one is flushed: a name that passes
		 * by its waits has that period's CPU samples as its own.)
		 */
		cpuprof_gate_count(c, g, end);
		gate_fold(g, c);
	}
	c->counted = false;
	if (c->nsvcs > 0) {
		in = xcalloc(c->nsvcs, sizeof(*in));
		ps = xcalloc(c->nsvcs, sizeof(*ps));
		of = xcalloc(c->nsvcs, sizeof(*of));
	}
	for (i = 0; i < c->nsvcs; i++) {
		struct cpuprof_svc *s = c->svcs[i];
		struct profile *p = NULL;

		if (s->total == 0)
			continue;
		if ((rc = merge_finish(s->m, false, &p)) < 0) {
			log_warnx("ebpf: storing the profile of %s failed: %s", s->service,
			    strerror(-rc));
			failed++;
			continue;
		}
		main_mapping_first(p, s->exe);
		default_type(c, p);
		p->time_nanos = start;
		p->duration_nanos = end - start;
		in[n] = (struct store_input){ .service = s->service, .type = c->type,
		    .labels = &s->labels, .created_at = start, .source = "ebpf" };
		ps[n] = p;
		of[n++] = s;
	}
	if (n > 0 && store_put_profiles(st, in, (const struct profile *const *)ps, n, NULL,
	    &err) == 0) {
		ok = n;
		for (i = 0; i < n; i++)
			*samples += of[i]->total;
	} else {
		for (i = 0; i < n; i++) {
			buf_free(&err);
			if ((rc = store_put_profile(st, &in[i], ps[i], NULL, &err)) < 0) {
				log_warnx("ebpf: storing the profile of %s failed: %s",
				    of[i]->service, err.len ? err.data : strerror(-rc));
				failed++;
			} else {
				ok++;
				*samples += of[i]->total;
			}
		}
	}
	buf_free(&err);
	for (i = 0; i < n; i++)
		profile_free(ps[i]);
	free(ps);
	free(of);
	free(in);
	reset(c);
	*profiles = ok;
	if (c->keys == NULL)
		return -ENOMEM;
	return ok == 0 && failed > 0 ? (rc < 0 ? rc : -EIO) : 0;
}
