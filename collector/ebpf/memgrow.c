/*
 * memgrow: the user side of --ebpf-memory (see memgrow.h). The page-fault
 * event counts user-mode faults only (exclude_kernel: a fault the kernel
 * takes copying into a user buffer is the system call's, not the code's)
 * and overflows every `faults` of them on its CPU, whatever process takes
 * them; the program keeps those in anonymous memory. Counting per CPU in
 * period mode (not frequency mode) keeps each sample worth the same number
 * of faults, so a profile's totals are the faults times the page size.
 * The system call samples come already weighted (bpf/memgrow.bpf.h).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base.h"
#include "memgrow.h"

/* Slots of struct proc's cp_svc (0 and 1 are the CPU and off-CPU aggregates'). */
#define SLOT_GROWTH	2
#define SLOT_MMAP	3

static const char *const growth_types[] = { "faults", "fault_space" };
static const char *const growth_units[] = { "count", "bytes" };
static const char *const mmap_types[] = { "calls", "mmap_space", "munmap_space" };
static const char *const mmap_units[] = { "count", "bytes", "bytes" };

struct memgrow {
	struct cpuprof	*growth, *maps;
	int		*pfds;
	struct bpf_link	**links;
	int		 npfds;
	struct bpf_link	**call_links;
	size_t		 ncall_links;
	bool		 calls_on;
	unsigned	 faults;	/* per sample */
};

struct memgrow *
memgrow_create(unsigned faults, uint64_t page)
{
	struct memgrow *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	if (faults < 1)
		faults = 1;
	m->faults = faults;
	m->growth = cpuprof_create_typed("memory-growth", growth_types, growth_units, 2,
	    (int64_t)((uint64_t)faults * page), NULL, SLOT_GROWTH);
	m->maps = cpuprof_create_typed("memory-mmap", mmap_types, mmap_units, 3, MEMGROW_RATE,
	    "mmap_space", SLOT_MMAP);
	if (m->growth == NULL || m->maps == NULL) {
		memgrow_destroy(m);
		return NULL;
	}
	return m;
}

/* The page-fault event of one CPU, period faults, attached to prog. */
static int
open_fault_event(struct memgrow *m, struct bpf_program *prog, int cpu, uint64_t period)
{
	struct perf_event_attr attr;
	struct bpf_link *l;
	int fd, rc;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.sample_period = period;
	attr.sample_type = PERF_SAMPLE_ADDR;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		log_warnx("--ebpf-memory: perf_event_open(page-faults, cpu %d): %s", cpu,
		    strerror(-rc));
		return rc;
	}
	m->pfds[m->npfds] = fd;
	if ((l = bpf_program__attach_perf_event(prog, fd)) == NULL) {
		rc = -errno;
		close(fd);
		log_warnx("--ebpf-memory: attaching to the page-fault event of cpu %d: %s", cpu,
		    strerror(-rc));
		return rc;
	}
	m->links[m->npfds++] = l;
	return 0;
}

int
memgrow_attach(struct memgrow *m, struct bpf_program *fault, struct bpf_program *const *calls,
    size_t ncalls, const int *cpus, int ncpus, bool *calls_on)
{
	struct bpf_link *l;
	size_t i;
	int k, rc;

	*calls_on = false;
	m->pfds = calloc((size_t)(ncpus > 0 ? ncpus : 1), sizeof(*m->pfds));
	m->links = calloc((size_t)(ncpus > 0 ? ncpus : 1), sizeof(*m->links));
	m->call_links = calloc(ncalls ? ncalls : 1, sizeof(*m->call_links));
	if (m->pfds == NULL || m->links == NULL || m->call_links == NULL)
		return -ENOMEM;
	for (k = 0; k < ncpus; k++)
		if ((rc = open_fault_event(m, fault, cpus[k], m->faults)) < 0)
			return rc;
	m->calls_on = ncalls > 0;
	for (i = 0; i < ncalls; i++) {
		if (calls[i] == NULL) {
			m->calls_on = false;
			continue;
		}
		if ((l = bpf_program__attach(calls[i])) == NULL) {
			log_warnx("--ebpf-memory: attaching %s: %s; mmap, brk and munmap are not "
			    "recorded (profile type memory-mmap), page faults are",
			    bpf_program__name(calls[i]), strerror(errno));
			m->calls_on = false;
			break;
		}
		m->call_links[m->ncall_links++] = l;
	}
	if (!m->calls_on) {
		for (i = 0; i < m->ncall_links; i++)
			bpf_link__destroy(m->call_links[i]);
		m->ncall_links = 0;
	}
	*calls_on = m->calls_on;
	return 0;
}

void
memgrow_destroy(struct memgrow *m)
{
	size_t i;
	int k;

	if (m == NULL)
		return;
	for (k = 0; k < m->npfds; k++) {
		bpf_link__destroy(m->links[k]);
		close(m->pfds[k]);
	}
	for (i = 0; i < m->ncall_links; i++)
		bpf_link__destroy(m->call_links[i]);
	cpuprof_destroy(m->growth);
	cpuprof_destroy(m->maps);
	free(m->pfds);
	free(m->links);
	free(m->call_links);
	free(m);
}

bool
memgrow_kind(uint32_t kind)
{
	return kind >= PROF_EV_MEM_FAULT && kind <= PROF_EV_MEM_UNMAP;
}

struct cpuprof *
memgrow_cpuprof(struct memgrow *m, uint32_t kind)
{
	if (m == NULL || !memgrow_kind(kind))
		return NULL;
	return kind == PROF_EV_MEM_FAULT ? m->growth : m->maps;
}

int
memgrow_add(struct cpuprof_svc *svc, const uint32_t *locs, size_t n, const struct prof_sample *s,
    const char *comm, const char *const *keys, const char *const *values, size_t nextra)
{
	const char *k[1 + 16], *v[1 + 16];
	int64_t vals[3] = { s->waits > 0 ? s->waits : 1, 0, 0 };
	size_t i;

	if (s->hdr.kind == PROF_EV_MEM_FAULT) {
		vals[1] = (int64_t)s->offcpu_ns;
		return cpuprof_sample_values(svc, locs, n, s->hdr.pid, s->hdr.tid, comm, vals,
		    keys, values, nextra);
	}
	/* Which call: the label tells mmap from brk, and the unmapping from both. */
	k[0] = "call";
	v[0] = s->hdr.kind == PROF_EV_MEM_MMAP ? "mmap" : s->hdr.kind == PROF_EV_MEM_BRK ? "brk" :
	    "munmap";
	vals[s->hdr.kind == PROF_EV_MEM_UNMAP ? 2 : 1] = (int64_t)s->offcpu_ns;
	for (i = 0; i < nextra && i < 16; i++) {
		k[i + 1] = keys[i];
		v[i + 1] = values[i];
	}
	return cpuprof_sample_values(svc, locs, n, s->hdr.pid, s->hdr.tid, comm, vals, k, v,
	    i + 1);
}

void
memgrow_flush(struct memgrow *m, struct store *st, int64_t start, int64_t end,
    struct cpuprof_gate *g, uint64_t *samples)
{
	size_t profiles = 0;
	uint64_t n = 0;

	*samples = 0;
	cpuprof_flush(m->growth, st, start, end, g, &profiles, &n);
	*samples += n;
	cpuprof_flush(m->maps, st, start, end, g, &profiles, &n);
	*samples += n;
}
