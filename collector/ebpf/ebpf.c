/*
 * ebpf: the whole-host CPU sampler (`serve --ebpf[=HZ]`). Loads
 * bpf/profile.bpf.c through its libbpf skeleton, attaches it to a software
 * cpu-clock perf event in frequency mode on every online CPU and to the exec
 * and exit tracepoints, and runs one thread that reads the ring buffer,
 * resolves each stack as it arrives (proctab.c, symbolize.c: the process may
 * be gone a moment later) and adds it to the period's aggregates (cpuprof.c),
 * which it stores every flush period as one pprof CPU profile per service.
 *
 * Self-observation: samples, drops and errors (from the BPF per-CPU counters),
 * the share of frames named and the processes tracked go to the log at -v
 * each period and to the profilefs_ebpf_* metrics. A watchdog thread tells
 * a sampler that completes no period (stuck in the kernel on something a
 * process put in its way) to the log, the metrics and /healthz; the
 * sampler's reads of other processes' memory have a deadline (memread.c),
 * and so have its opens of files by their paths (rio.c).
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "profile.h"
#include "ebpf.h"
#include "cpuprof.h"
#include "debuginfod.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "memread.h"
#include "memgrow.h"
#include "offcpu.h"
#include "mallocprof.h"
#include "rio.h"
#include "proctab.h"
#include "hotspot.h"
#include "python.h"
#include "golabels.h"
#include "ruby.h"
#include "php.h"
#include "v8.h"
#include "symbolize.h"
#include "unwind.h"
#include "profile.skel.h"

#define KERNEL_START	0xffff800000000000ULL
#define EXPIRE_SECS	600	/* ELF objects unused this long are dropped */
#define POLL_MS		100	/* ring buffer read interval */
#define SAMPLER_NICE	-5
#define SUMMARY_SECS	60	/* the summary line without -v, at most this often */
#define UNWIND_KEEP_SECS 600	/* tables no process maps are kept this long (room permitting) */
#define MAPS_FRESH_NS	(10LL * 1000 * 1000)	/* maps read this recently are current */
#define MISS_WAIT_MAX_NS (64LL * 1000 * 1000 * 1000)	/* see caller_miss */
#define FCACHE_SLOTS	8192	/* a power of two */
#define SCACHE_SLOTS	4096	/* stacks remembered a period, each aggregate; a power of two */
#define SCACHE_BYTES	(4u << 20)	/* their addresses and locations */
#define PROF_INLINED_MAX 256	/* frames HotSpot's inlined methods may add to a stack */
#define OFFCPU_DRAIN_NS	(5000LL * 1000 * 1000)	/* off-CPU waits drained this often (and at flush) */
#define OFFCPU_AGGS	8192	/* entries of offcpu_aggs (72 bytes each, preallocated) */
#define OFFCPU_STACKS	4096	/* entries of offcpu_stacks (a struct prof_sample each, when used) */
#define OFFCPU_THREADS	8192	/* entries of offcpu_threads (48 bytes each, preallocated) */
#define OFFCPU_WALKS	100	/* off-CPU stacks each CPU takes a second, about, at most (but for long waits) */
/*
 * The watchdog: a sampler that has not completed a period in STALL_PERIODS
 * periods (and STALL_MIN_NS: a flush may take seconds on a loaded host) is
 * stalled (/healthz says so, and the metrics). At stop, the thread gets
 * STOP_GRACE_NS to end; one that does not is left behind.
 */
#define STALL_PERIODS	3
#define STALL_MIN_NS	(20LL * 1000 * 1000 * 1000)
#define STOP_GRACE_NS	(5LL * 1000 * 1000 * 1000)

/*
 * A native or kernel frame's location in its service's aggregate, by the
 * raw address: the same ones come back sample after sample. Valid while the
 * process's maps (maps_gen) and the period stay the same. Only frames in
 * a file mapping (or the kernel) are kept: their names cannot change
 * meanwhile, JIT code's can.
 */
struct fcache_ent {
	const struct cpuprof_svc *svc;	/* NULL: empty */
	uint64_t		 period;	/* cpuprof_period() */
	uint64_t		 serial;	/* the process's; 0: the kernel */
	uint64_t		 addr;		/* as resolved (a call's, not its return address) */
	uint32_t		 maps_gen;
	uint32_t		 loc;
	bool			 named;
};

/*
 * A whole stack's locations in its service's aggregate, by its raw
 * addresses: a thread that waits or runs where it did before (most waits
 * drained each second are a thread waiting where it waited the second
 * before) is named once a period, not frame by frame. Valid for its
 * process's maps (maps_gen) and the period. Only stacks whose every frame
 * the frame cache would keep (kernel, file mappings), with no frames of a
 * language runtime.
 */
struct scache_ent {
	const struct cpuprof_svc *svc;	/* NULL: empty */
	uint64_t		 hash, serial;
	uint32_t		 maps_gen;
	uint16_t		 nk, nu;	/* raw addresses, kernel and user */
	uint32_t		 nlocs;
	size_t			 off;		/* in arena: nk + nu addresses, then nlocs locations */
	/* what naming it added to the counters */
	uint16_t		 kframes, knamed, uframes, unamed;
	bool			 truncated;
	uint64_t		 miss;		/* a caller outside every mapping known, or 0 */
};

struct scache {
	uint64_t		 period;	/* cpuprof_period() of the entries */
	struct scache_ent	*ents;		/* SCACHE_SLOTS */
	size_t			 n;
	char			*arena;		/* SCACHE_BYTES */
	size_t			 used;
};

struct ebpf_sampler {
	struct store		*st;
	struct cpuprof_gate	*gate;		/* the service for the rest, NULL: none */
	struct profile_bpf	*skel;
	struct ring_buffer	*rb;
	int			*pfds;		/* one perf event per online CPU */
	struct bpf_link		**links;
	int			 npfds;
	struct bpf_link		*exec_link, *exit_link;
	struct bpf_link		*switch_link;	/* off-CPU, else NULL */
	struct bpf_link		*sysexit_link;	/* off-CPU: stacks taken at a system call's end */
	struct bpf_link		*rseq_link;	/* off-CPU: ... at a return to user mode (rseq) */
	bool			 sysexit_tried;	/* sysexit_link attached, or failed to */
	bool			 exits_told;	/* the held exited processes' room ran out, said once */
	bool			 offcpu_tw;	/* off-CPU stacks taken by task work (on_switch_tw) */
	pthread_t		 thread;
	bool			 running;
	atomic_bool		 stop;
	int			 hz;
	unsigned		 flush_secs;
	struct symbolizer	*sym;
	struct proctab		*pt;
	struct cpuprof		*cp;
	struct cpuprof		*off;		/* off-CPU waits; NULL: not recorded */
	struct offcpu		*oc;		/* drains them; with off */
	int64_t			 oc_next;	/* monotonic ns of the next drain */
	uint64_t		 oc_entries, oc_waits;	/* drained this period */
	uint32_t		 oc_exec;	/* the image of the waits being added (offcpu_add) */
	struct cpuprof		*mal;		/* allocations (--ebpf-malloc); NULL: off */
	struct mallocprof	*mp;		/* probes and blocks; with mal */
	int64_t			 mvals[4];	/* the values of the allocation sample being named */
	struct scache		 sc_mal;	/* stacks of mal's */
	struct memgrow		*mg;		/* --ebpf-memory, else NULL */
	struct unwinder		*unw;		/* NULL: frame pointers only */
	struct python		*py;		/* CPython frames */
	struct golabels		*gl;		/* Go pprof labels */
	struct ruby		*ruby;		/* Ruby frames */
	struct php		*php;		/* PHP frames */
	struct hotspot		*hs;		/* HotSpot frames */
	struct v8		*v8;		/* JavaScript frames (Node.js) */
	struct dbginfod		*dbg;		/* debug files by build id; NULL: none */
	int64_t			 period_start;	/* wall-clock ns */
	int64_t			 next_flush;	/* monotonic ns */
	/* counted by the sampler thread only */
	uint64_t		 events, user_frames, user_named, kernel_frames, kernel_named;
	uint64_t		 truncated;	/* stacks cut at a return address in no mapping */
	uint64_t		 stacks, stacks_cached;	/* stacks named; of them, from sc_* */
	uint64_t		 py_frames, py_unreadable;	/* Python frames put in stacks; not named */
	struct {
		uint64_t	 user_frames, user_named, kernel_frames, kernel_named, truncated;
		uint64_t	 py_frames, py_unreadable, py_unlined;
		uint64_t	 java_frames, java_unreadable;
		uint64_t	 js_frames, js_unreadable;
		uint64_t	 mal_untracked;
		uint64_t	 mal_full;
	}			 rep;		/* the above at the last metrics update */
	uint64_t		 prev[PROF_CNT_MAX];	/* BPF counters at the last report */
	struct {
		uint64_t	 samples, stored, drops;
		size_t		 profiles;
		int64_t		 since;		/* monotonic ns; 0: nothing said yet */
	}			 sum;		/* for the summary line, since it was last said */
	/* (HotSpot's inlined methods: up to PROF_INLINED_MAX frames more than the walk's) */
	uint32_t		 locs[PROF_MAX_STACK + PROF_MAX_USTACK + PROF_MAX_PYFRAMES + 1 +
				    PROF_INLINED_MAX];
	struct fcache_ent	*fcache;	/* FCACHE_SLOTS */
	struct scache		 sc_cpu, sc_off;	/* stacks of cp's and of off's */
	/* the watchdog's: written by the sampler thread, read by others */
	_Atomic int64_t		 period_done;	/* monotonic ns a period last completed */
	atomic_bool		 exited;	/* the sampler thread has returned */
	pthread_t		 watchdog;
	bool			 watching;
	pthread_mutex_t		 wd_mu;
	pthread_cond_t		 wd_cv;		/* stop, for the watchdog */
	bool			 stalled;	/* as the watchdog last said; protected by wd_mu */
};

/* A sampler left behind at stop: kept reachable, it may still wake up. */
static struct ebpf_sampler *abandoned_sampler;

static int
libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	const char *m = msg;
	size_t n;

	/* libbpf's debug level (relocations, hundreds of lines) only at -vv. */
	if ((level == LIBBPF_DEBUG && log_verbose < 2) || (level == LIBBPF_INFO && !log_verbose))
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	/* Most of libbpf's messages carry its name already. */
	if (strncmp(m, "libbpf: ", 8) == 0)
		m += 8;
	if (level == LIBBPF_WARN)
		log_warnx("libbpf: %s", m);
	else
		log_debug("libbpf: %s", m);
	return 0;
}

/* --- preflight: say what is missing before libbpf says something cryptic --- */

static bool
has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return (d[cap / 32].effective & (1u << (cap % 32))) != 0;
}

static int
read_int_file(const char *path, int *v)
{
	FILE *f = fopen(path, "re");
	int rc;

	if (f == NULL)
		return -errno;
	rc = fscanf(f, "%d", v) == 1 ? 0 : -EINVAL;
	fclose(f);
	return rc;
}

static int
preflight(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) == 0) {
		bool admin = has_cap(d, CAP_SYS_ADMIN);

		if (!admin && !(has_cap(d, 39 /* CAP_BPF */) && has_cap(d, 38 /* CAP_PERFMON */))) {
			log_warnx("--ebpf: needs root, or the capabilities CAP_BPF and CAP_PERFMON "
			    "(or CAP_SYS_ADMIN); this process has neither");
			return -EPERM;
		}
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		log_warnx("--ebpf: the kernel exposes no BTF (/sys/kernel/btf/vmlinux: %s); "
		    "a kernel built with CONFIG_DEBUG_INFO_BTF=y is needed", strerror(errno));
		return -ENOTSUP;
	}
	return 0;
}

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,5"); malloc'd list. */
static int
online_cpus(int **out, int *n)
{
	long max = sysconf(_SC_NPROCESSORS_CONF);
	char line[4096], *s, *end;
	int k = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	if ((f = fopen("/sys/devices/system/cpu/online", "re")) == NULL)
		return -errno;
	s = fgets(line, sizeof(line), f);
	fclose(f);
	if (s == NULL)
		return -EINVAL;
	if (max < 1)
		max = 1;
	if ((*out = calloc((size_t)max, sizeof(**out))) == NULL)
		return -ENOMEM;
	while (*s && *s != '\n') {
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			break;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		for (; a <= b && k < max; a++)
			(*out)[k++] = (int)a;
		if (*s == ',')
			s++;
	}
	*n = k;
	return k > 0 ? 0 : -EINVAL;
}

static int
open_perf_events(struct ebpf_sampler *e)
{
	struct perf_event_attr attr;
	int *cpus = NULL, ncpus, i, rc, paranoid = -1;

	if ((rc = online_cpus(&cpus, &ncpus)) < 0) {
		log_warnx("--ebpf: cannot read the online CPUs: %s", strerror(-rc));
		return rc;
	}
	e->pfds = calloc((size_t)ncpus, sizeof(*e->pfds));
	e->links = calloc((size_t)ncpus, sizeof(*e->links));
	if (e->pfds == NULL || e->links == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = (uint64_t)e->hz;
	for (i = 0; i < ncpus; i++) {
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpus[i], -1,
		    PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			rc = -errno;
			read_int_file("/proc/sys/kernel/perf_event_paranoid", &paranoid);
			log_warnx("--ebpf: perf_event_open(cpu-clock, cpu %d): %s "
			    "(kernel.perf_event_paranoid is %d; root or CAP_PERFMON is needed above 1)",
			    cpus[i], strerror(-rc), paranoid);
			goto out;
		}
		e->pfds[e->npfds++] = fd;
		e->links[i] = bpf_program__attach_perf_event(e->skel->progs.do_sample, fd);
		if (e->links[i] == NULL) {
			rc = -errno;
			log_warnx("--ebpf: attaching to the perf event of cpu %d: %s", cpus[i],
			    strerror(-rc));
			goto out;
		}
	}
	rc = 0;
out:
	free(cpus);
	return rc;
}

/* Whether the running kernel has the BTF tracepoint name (its btf_trace_ type). */
static bool
kernel_has_tp(const char *name)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	char type[128];
	bool has;

	if (vmlinux == NULL)
		return true;	/* let the load say */
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	has = btf__find_by_name_kind(vmlinux, type, BTF_KIND_TYPEDEF) >= 0;
	btf__free(vmlinux);
	return has;
}

/*
 * Whether the kernel lets a BPF program run a callback in a task on its way
 * back to user mode (6.18): off-CPU stacks are taken there, with no
 * program on every return to user mode or system call.
 */
static bool
kernel_has_task_work(void)
{
	struct btf *vmlinux;
	bool has;

	/* (The tests take the older kernels' way too, on this one.) */
	if (getenv("PROFILEFS_EBPF_NO_TASK_WORK") != NULL)
		return false;
	if ((vmlinux = btf__load_vmlinux_btf()) == NULL)
		return false;
	has = btf__find_by_name_kind(vmlinux, "bpf_task_work_schedule_resume_impl",
	    BTF_KIND_FUNC) >= 0 && btf__find_by_name_kind(vmlinux, "bpf_task_work",
	    BTF_KIND_STRUCT) >= 0;
	btf__free(vmlinux);
	return has;
}

/*
 * sys_exit, where a drawn wait's stacks are taken for a Go thread (no
 * rseq; its goroutine's labels are those of the wait there): attached
 * only once such a thread had a wait drawn (offcpu_norseq), since every
 * system call of the host then runs it. Without
 * it (or without rseq_update), the stacks are taken at the thread's next
 * switch out: logged once.
 */
static void
offcpu_sysexit(struct ebpf_sampler *e)
{
	if (e->offcpu_tw || e->sysexit_link != NULL || e->sysexit_tried ||
	    (e->rseq_link != NULL && e->skel->bss->offcpu_norseq == 0))
		return;
	e->sysexit_tried = true;
	if (bpf_program__autoload(e->skel->progs.offcpu_sys_exit))
		e->sysexit_link = bpf_program__attach(e->skel->progs.offcpu_sys_exit);
	if (e->sysexit_link != NULL)
		log_info("ebpf: off-CPU: a Go thread waits: its waits' stacks are taken as its "
		    "system calls return (sys_exit)");
	else
		log_warnx("--ebpf-offcpu: no sys_exit tracepoint: the stacks of a wait of a "
		    "thread without rseq are taken at its next switch out");
}

/*
 * Attach the off-CPU programs: sched_switch, and, without task work, where
 * a drawn wait's stacks are taken in its thread's own context (a return to
 * user mode with rseq; sys_exit: offcpu_sysexit).
 */
static int
attach_offcpu(struct ebpf_sampler *e)
{
	int rc;

	e->switch_link = bpf_program__attach(e->offcpu_tw ? e->skel->progs.on_switch_tw :
	    e->skel->progs.on_switch);
	if (e->switch_link == NULL) {
		rc = -errno;
		log_warnx("--ebpf-offcpu: attaching to the sched_switch tracepoint: %s",
		    strerror(-rc));
		return rc;
	}
	if (e->offcpu_tw) {
		log_info("ebpf: off-CPU: a drawn wait's stacks are taken by task work, as its "
		    "thread returns to user mode");
		return 0;
	}
	if (bpf_program__autoload(e->skel->progs.offcpu_rseq))
		e->rseq_link = bpf_program__attach(e->skel->progs.offcpu_rseq);
	offcpu_sysexit(e);
	return 0;
}

/* --ebpf-memory's programs: loaded only with it (bpf/memgrow.bpf.h). */
static void
memgrow_configure(struct ebpf_sampler *e, const struct ebpf_opts *o)
{
	long page = sysconf(_SC_PAGESIZE);

	e->skel->rodata->memgrow = o->memory_faults > 0;
	e->skel->rodata->memgrow_page = page > 0 ? (uint64_t)page : 4096;
	e->skel->rodata->memgrow_rate = MEMGROW_RATE;
	e->skel->rodata->memgrow_calls_max = MEMGROW_CALLS_MAX;
	bpf_program__set_autoload(e->skel->progs.memgrow_fault, o->memory_faults > 0);
#if defined(__x86_64__)
	bpf_program__set_autoload(e->skel->progs.memgrow_sys, o->memory_faults > 0);
#endif
}

/* Attach --ebpf-memory's programs: page faults on every online CPU, mmap/brk/munmap. */
static int
attach_memgrow(struct ebpf_sampler *e, const struct ebpf_opts *o)
{
	long page = sysconf(_SC_PAGESIZE);
	struct bpf_program *calls[1] = { NULL };
	int *cpus = NULL, ncpus, rc;
	bool calls_on = false;

#if defined(__x86_64__)
	calls[0] = e->skel->progs.memgrow_sys;
#endif
	if ((rc = online_cpus(&cpus, &ncpus)) < 0) {
		log_warnx("--ebpf-memory: cannot read the online CPUs: %s", strerror(-rc));
		return rc;
	}
	if ((e->mg = memgrow_create(o->memory_faults, page > 0 ? (uint64_t)page : 4096)) == NULL)
		rc = -ENOMEM;
	else
		rc = memgrow_attach(e->mg, e->skel->progs.memgrow_fault, calls, 1, cpus, ncpus,
		    &calls_on);
	free(cpus);
	if (rc == 0)
		log_info("ebpf: memory growth recorded: 1 user page fault in %u on anonymous "
		    "memory (profile type memory-growth)%s", o->memory_faults, calls_on ?
		    ", anonymous mmap, brk and munmap calls (memory-mmap)" : "");
	return rc;
}

/* --- the sampler thread -------------------------------------------------- */

/*
 * A caller outside every mapping known: the walk may have stepped into a
 * library mapped after the maps were read (the dynamic linker maps them
 * right after the exec notice; dlopen later), or a frame-pointer chain
 * into noise. The maps are read again, at growing intervals while that
 * finds nothing new, so that noise costs a read a minute at most.
 */
static void
caller_miss(struct ebpf_sampler *e, struct proc *p, uint64_t a)
{
	if (p->miss_wait < MAPS_FRESH_NS)
		p->miss_wait = MAPS_FRESH_NS;
	if (clock_mono_ns() - p->maps_read < p->miss_wait)
		return;
	proctab_refresh(e->pt, p, 0);
	if (proctab_known(p, a))
		p->miss_wait = MAPS_FRESH_NS;
	else if (p->miss_wait < MISS_WAIT_MAX_NS)
		p->miss_wait *= 2;
}

static struct fcache_ent *
fcache_slot(struct ebpf_sampler *e, uint64_t serial, uint64_t addr)
{
	uint64_t h = (addr ^ serial * 0xc2b2ae3d27d4eb4fULL) * 0x9e3779b97f4a7c15ULL;

	return &e->fcache[(h >> 40) & (FCACHE_SLOTS - 1)];
}

/* The location of the frame at addr, if known (see struct fcache_ent). */
static struct fcache_ent *
fcache_get(struct ebpf_sampler *e, const struct cpuprof *cp, const struct cpuprof_svc *svc,
    uint64_t serial, uint32_t maps_gen, uint64_t addr)
{
	struct fcache_ent *c = fcache_slot(e, serial, addr);

	if (c->svc == svc && c->period == cpuprof_period(cp) && c->serial == serial &&
	    c->addr == addr && c->maps_gen == maps_gen)
		return c;
	return NULL;
}

static void
fcache_put(struct ebpf_sampler *e, const struct cpuprof *cp, const struct cpuprof_svc *svc,
    uint64_t serial, uint32_t maps_gen, uint64_t addr, int64_t loc, bool named)
{
	struct fcache_ent *c = fcache_slot(e, serial, addr);

	c->svc = svc;
	c->period = cpuprof_period(cp);
	c->serial = serial;
	c->addr = addr;
	c->maps_gen = maps_gen;
	c->loc = (uint32_t)loc;
	c->named = named;
}

static int
scache_init(struct scache *c)
{
	if ((c->ents = calloc(SCACHE_SLOTS, sizeof(*c->ents))) == NULL ||
	    (c->arena = malloc(SCACHE_BYTES)) == NULL)
		return -ENOMEM;
	return 0;
}

static void
scache_free(struct scache *c)
{
	free(c->ents);
	free(c->arena);
}

static uint64_t
scache_hash(const struct cpuprof_svc *svc, const struct proc *p, const __u64 *k, int nk,
    const __u64 *u, int nu)
{
	uint64_t h = hash_bytes(k, (size_t)nk * sizeof(*k));

	h = (h ^ hash_bytes(u, (size_t)nu * sizeof(*u))) * 0x9e3779b97f4a7c15ULL;
	h ^= (p->serial * 0xc2b2ae3d27d4eb4fULL) ^ ((uint64_t)p->maps_gen << 32) ^
	    (uint64_t)(uintptr_t)svc;
	return h * 0x165667b19e3779f9ULL;
}

/* The entry of this stack in c, or NULL. */
static const struct scache_ent *
scache_get(const struct scache *c, const struct cpuprof *cp, const struct cpuprof_svc *svc,
    const struct proc *p, uint64_t h, const __u64 *k, int nk, const __u64 *u, int nu)
{
	const struct scache_ent *x;
	const __u64 *raw;
	size_t i;

	if (c->period != cpuprof_period(cp))
		return NULL;
	for (i = 0; i < 8; i++) {
		x = &c->ents[(h + i) & (SCACHE_SLOTS - 1)];
		if (x->svc == NULL)
			return NULL;
		if (x->hash != h || x->svc != svc || x->serial != p->serial ||
		    x->maps_gen != p->maps_gen || x->nk != nk || x->nu != nu)
			continue;
		raw = (const __u64 *)(const void *)(c->arena + x->off);
		if (memcmp(raw, k, (size_t)nk * sizeof(*k)) == 0 &&
		    memcmp(raw + nk, u, (size_t)nu * sizeof(*u)) == 0)
			return x;
	}
	return NULL;
}

/* Remember a stack and its locations (x: the rest of its entry), room permitting. */
static void
scache_put(struct scache *c, const struct cpuprof *cp, const struct scache_ent *x,
    const __u64 *k, const __u64 *u, const uint32_t *locs)
{
	size_t i, need = ((size_t)x->nk + x->nu) * sizeof(__u64) + x->nlocs * sizeof(*locs);
	struct scache_ent *d;

	if (c->period != cpuprof_period(cp)) {
		memset(c->ents, 0, SCACHE_SLOTS * sizeof(*c->ents));
		c->n = c->used = 0;
		c->period = cpuprof_period(cp);
	}
	need = (need + 7) & ~(size_t)7;
	if (c->n >= SCACHE_SLOTS * 3 / 4 || c->used + need > SCACHE_BYTES)
		return;
	for (i = 0; i < 8; i++) {
		d = &c->ents[(x->hash + i) & (SCACHE_SLOTS - 1)];
		if (d->svc != NULL)
			continue;
		*d = *x;
		d->off = c->used;
		memcpy(c->arena + d->off, k, (size_t)x->nk * sizeof(*k));
		memcpy(c->arena + d->off + (size_t)x->nk * sizeof(*k), u,
		    (size_t)x->nu * sizeof(*u));
		memcpy(c->arena + d->off + ((size_t)x->nk + x->nu) * sizeof(*k), locs,
		    x->nlocs * sizeof(*locs));
		c->used += need;
		c->n++;
		return;
	}
}

/* The frame that stands for Python (or Ruby) frames the sample could not carry. */
static void
py_marker(struct frame *f, const struct prof_sample *s)
{
	bool rb = (s->py_flags & PROF_RB_FRAMES) != 0;

	memset(f, 0, sizeof(*f));
	f->func = rb ? "[ruby: truncated]" : "[python: truncated]";
	f->file = rb ? "[ruby]" : "[python]";
	if (s->py_flags & PROF_PHP_FRAMES) {
		f->func = "[php: truncated]";
		f->file = "[php]";
	}
	f->build_id = "";
}

/*
 * Interpreter frame i of s into f, Python's or Ruby's: 0, -EFAULT (named
 * unreadable), 1: none to show.
 */
static int
interp_frame(struct ebpf_sampler *e, struct proc *p, const struct prof_sample *s, size_t n,
    size_t i, struct frame *f)
{
	if (s->py_flags & PROF_RB_FRAMES)
		return ruby_frame(e->ruby, p, s->py, n, i, f);
	if (s->py_flags & PROF_PHP_FRAMES)
		return php_frame(e->php, p, s->py, n, i, f);
	return python_frame(e->py, p, s->py, n, i, f);
}

/* Whether native frame f of p is the one s's interpreter frames replace. */
static bool
interp_is_eval(const struct prof_sample *s, const struct proc *p, const struct frame *f)
{
	if (s->py_flags & PROF_PHP_FRAMES)
		return php_is_vm(f->func);
	return (s->py_flags & PROF_RB_FRAMES) ? ruby_is_vm(f->func) : python_is_eval_frame(p, f);
}

/*
 * How many leaf frames of an off-CPU kernel stack are the BPF program and
 * the tracepoint's glue (it is taken inside sched_switch), not the wait.
 */
static int
tracing_frames(struct ebpf_sampler *e, const __u64 *kstack, int nk)
{
	static const char *const glue[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_",
	    "__traceiter_", "__probestub_" };
	const char *name;
	size_t g;
	int i;

	for (i = 0; i < nk && i < 8; i++) {
		if ((name = symbolize_kernel(e->sym, kstack[i])) == NULL)
			break;
		for (g = 0; g < sizeof(glue) / sizeof(glue[0]); g++)
			if (strncmp(name, glue[g], strlen(glue[g])) == 0)
				break;
		if (g == sizeof(glue) / sizeof(glue[0]))
			break;
	}
	return i;
}

/* Add s to cp: a CPU sample, or waits off-CPU (how many, s->offcpu_ns in all). */
static void
handle_sample(struct ebpf_sampler *e, struct cpuprof *cp, const struct prof_sample *s,
    uint64_t waits)
{
	char comm[PROF_COMM_LEN + 1];
	struct cpuprof_svc *svc;
	struct golabels_set gs;
	struct frame f;
	struct proc *p;
	size_t n = 0, pi = 0, pn = 0, vi = 0, vn = 0;
	uint64_t miss = 0;		/* a caller outside every mapping known */
	bool py_cut = false, py_left, entry, golab, core = false, java, whole;
	const struct frame *jf;
	const struct scache_ent *x;
	struct scache_ent xe;
	struct scache *sc;
	uint64_t sh = 0, c0[5] = { 0 };
	size_t nj, k;
	int i, nk, nu;
	int64_t li;

	/* The process is named after its leader, not after one of its threads. */
	memcpy(comm, s->leader_comm[0] ? s->leader_comm : s->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = '\0';
	p = proctab_get(e->pt, s->hdr.pid, comm);
	/* Waits drained after an exec: the image they were taken in. */
	if (p != NULL && cp == e->off && e->oc_exec != OFFCPU_EXEC_ANY)
		p = proctab_image(p, e->oc_exec);
	memcpy(comm, s->comm, PROF_COMM_LEN);	/* the sample's comm label: the thread's */
	comm[PROF_COMM_LEN] = '\0';
	if (p == NULL || p->excluded)
		return;
	/* A goroutine's pprof labels: its own series (within bounds), and sample labels. */
	golabels_check(e->gl, p);
	golab = golabels_sample(e->gl, p, s, &gs) == 0;
	if ((svc = golab && gs.series ? cpuprof_service_labels(cp, p, gs.series) :
	    cpuprof_service(cp, p)) == NULL)
		return;
	if (e->unw && !p->kthread && !p->gone && !p->held) {
		/*
		 * Tables for the next samples of p. Its maps may date from its
		 * exec, before the dynamic linker mapped the libraries, or from
		 * before a dlopen: a leaf outside them is worth a fresh look.
		 * Not for a process that exited (its waits drained after it):
		 * it has no next samples.
		 */
		if (p->unw == NULL || (s->ustack_len >= 8 &&
		    !proctab_known(p, s->ustack[0] & ~PROF_PC_EXACT)))
			proctab_refresh(e->pt, p, MAPS_FRESH_NS);
		unwind_proc(e->unw, p);
	}
	python_check(e->py, p);
	ruby_check(e->ruby, p);
	php_check(e->php, p);
	hotspot_check(e->hs, p);
	/* The runtime part, by its tag: one of Java's, Python's or Ruby's, V8's, Go's. */
	java = s->rt == PROF_RT_JAVA && s->j_n > 0;
	if (java)
		hotspot_read(e->hs, p, s);
	if (s->rt == PROF_RT_PY && (s->py_flags & PROF_PY_WALKED) &&
	    ((s->py_flags & PROF_PHP_FRAMES) ? p->php :
	    (s->py_flags & PROF_RB_FRAMES) ? p->rb : p->py)) {
		pn = s->py_n < PROF_MAX_PYFRAMES ? s->py_n : PROF_MAX_PYFRAMES;
		if (s->py_flags & PROF_PHP_FRAMES)
			php_read(e->php, p, s->py, pn, s->hdr.time_ns);
		else if (s->py_flags & PROF_RB_FRAMES)
			ruby_read(e->ruby, p, s->py, pn);
		else
			python_read(e->py, p, s->py, pn, s->hdr.time_ns);
		py_cut = (s->py_flags & PROF_PY_TRUNCATED) != 0;
	}
	v8_check(e->v8, p);
	if (s->rt == PROF_RT_V8 && (s->v8_flags & PROF_V8_WALKED) && p->v8) {
		vn = s->v8_n < PROF_MAX_V8FRAMES ? s->v8_n : PROF_MAX_V8FRAMES;
		v8_read(e->v8, p, s->v8, vn);
	}
	nk = s->kstack_len > 0 ? s->kstack_len / 8 : 0;
	nu = s->ustack_len > 0 ? s->ustack_len / 8 : 0;
	if (nk > PROF_MAX_STACK)
		nk = PROF_MAX_STACK;
	if (nu > PROF_MAX_USTACK)
		nu = PROF_MAX_USTACK;
	/* A stack named before in this period: its locations at once (see struct scache). */
	sc = cp == e->off ? &e->sc_off : cp == e->mal ? &e->sc_mal : &e->sc_cpu;
	e->stacks++;
	/* Only stacks without a runtime's frames (named from the process at each sample). */
	whole = pn == 0 && !py_cut && vn == 0 && !java && !p->rb && !memgrow_kind(s->hdr.kind);
	if (whole) {
		sh = scache_hash(svc, p, s->kstack, nk, s->ustack, nu);
		if ((x = scache_get(sc, cp, svc, p, sh, s->kstack, nk, s->ustack, nu)) != NULL) {
			n = x->nlocs;
			memcpy(e->locs, sc->arena + x->off + ((size_t)nk + (size_t)nu) *
			    sizeof(s->kstack[0]), n * sizeof(e->locs[0]));
			e->kernel_frames += x->kframes;
			e->kernel_named += x->knamed;
			e->user_frames += x->uframes;
			e->user_named += x->unamed;
			e->truncated += x->truncated;
			e->stacks_cached++;
			miss = x->miss;
			goto named;
		}
		c0[0] = e->kernel_frames;
		c0[1] = e->kernel_named;
		c0[2] = e->user_frames;
		c0[3] = e->user_named;
		c0[4] = e->truncated;
	}
	i = 0;
	if (s->hdr.kind == PROF_EV_OFFCPU)
		i = tracing_frames(e, s->kstack, nk);
	for (; i < nk; i++) {
		struct fcache_ent *c = fcache_get(e, cp, svc, 0, 0, s->kstack[i]);

		e->kernel_frames++;
		if (c != NULL) {
			e->kernel_named += c->named;
			e->locs[n++] = c->loc;
			continue;
		}
		memset(&f, 0, sizeof(f));
		f.addr = s->kstack[i];
		f.func = symbolize_kernel(e->sym, f.addr);
		f.file = "[kernel]";
		f.build_id = "";
		f.start = KERNEL_START;
		f.limit = UINT64_MAX;
		e->kernel_named += f.func != NULL;
		if ((li = cpuprof_location(svc, &f)) < 0)
			return;
		fcache_put(e, cp, svc, 0, 0, f.addr, li, f.func != NULL);
		e->locs[n++] = (uint32_t)li;
	}
	for (i = 0; i < nu; i++) {
		uint64_t a = s->ustack[i];
		bool exact = i == 0 || (a & PROF_PC_EXACT);
		struct fcache_ent *c;

		a &= ~PROF_PC_EXACT;
		if (a == 0)
			break;
		if (java && (nj = hotspot_frames(e->hs, p, s, (size_t)i, &jf)) > 0) {
			/* Java frames: named after their methods, not the pc. */
			for (k = 0; k < nj; k++) {
				/* Room for the rest of the stack first. */
				if (k > 0 && n + (size_t)(nu - i) + PROF_MAX_PYFRAMES + 3 >=
				    sizeof(e->locs) / sizeof(e->locs[0]))
					break;
				e->user_frames++;
				e->user_named++;
				if ((li = cpuprof_location(svc, &jf[k])) < 0)
					return;
				e->locs[n++] = (uint32_t)li;
			}
			continue;
		}
		/* A JavaScript function's frame: named after it, in place of the code's address. */
		while (vi < vn && (s->v8[vi].fn_idx >> PROF_V8_IDX_SHIFT) < (uint64_t)i)
			vi++;
		if (vi < vn && (s->v8[vi].fn_idx >> PROF_V8_IDX_SHIFT) == (uint64_t)i &&
		    v8_frame(e->v8, p, vi++, &f) == 0) {
			if ((li = cpuprof_location(svc, &f)) < 0)
				return;
			e->locs[n++] = (uint32_t)li;
			continue;
		}
		/*
		 * Callers' frames hold return addresses: step back into the
		 * call. Not so for a frame a signal interrupted.
		 */
		if ((c = fcache_get(e, cp, svc, p->serial, p->maps_gen, exact ? a : a - 1)) != NULL) {
			e->user_frames++;
			e->user_named += c->named;
			core = (p->rb || p->php) && !c->named;
			e->locs[n++] = c->loc;
			continue;
		}
		proctab_resolve(e->pt, p, exact ? a : a - 1, &f);
		if (p->rb)
			ruby_native_name(e->ruby, p, &f);	/* an unexported rb_vm_exec */
		/*
		 * A return address outside every executable mapping means the
		 * frame-pointer chain went through code built without frame
		 * pointers: what follows is noise, not callers.
		 */
		if (i > 0 && f.file == NULL) {
			e->truncated++;
			miss = exact ? a : a - 1;
			break;
		}
		if (pi < pn && interp_is_eval(s, p, &f)) {
			/*
			 * Ruby's instruction loop, just below rb_vm_exec, or an
			 * unnamed opcode handler of PHP's: its frames stand for it.
			 */
			if (core && n > 0)
				n--;
			/* This run of the evaluation loop: its frames up to its entry frame. */
			do {
				int r = interp_frame(e, p, s, pn, pi, &f);

				e->py_unreadable += r < 0;
				entry = (s->py[pi++].code & PROF_PY_ENTRY) != 0;
				if (r == 1)
					continue;
				if ((li = cpuprof_location(svc, &f)) < 0)
					return;
				e->locs[n++] = (uint32_t)li;
				e->py_frames++;
			} while (!entry && pi < pn);
			core = false;
			if (!entry && py_cut) {
				/* The rest of this run was not read (too deep, or unreadable). */
				py_marker(&f, s);
				py_cut = false;
				if ((li = cpuprof_location(svc, &f)) < 0)
					return;
				e->locs[n++] = (uint32_t)li;
			}
			continue;
		}
		if (py_cut && pi >= pn && interp_is_eval(s, p, &f)) {
			/* This run's Python frames were not read (too deep, or unreadable). */
			py_marker(&f, s);
			py_cut = false;
			if ((li = cpuprof_location(svc, &f)) < 0)
				return;
			e->locs[n++] = (uint32_t)li;
			continue;
		}
		e->user_frames++;
		e->user_named += f.func != NULL;
		if ((li = cpuprof_location(svc, &f)) < 0)
			return;
		/*
		 * In a Ruby stack, the frame just above rb_vm_exec is its
		 * instruction loop (unnamed where libruby has no symbols).
		 */
		core = (p->rb && (f.func == NULL || ruby_is_core(f.func))) ||
		    (p->php && f.func == NULL);
		/* Not the evaluation loop: it stands for Python frames when there are some. */
		if (f.file && f.file[0] == '/' && !python_is_eval_frame(p, &f) && !ruby_is_vm(f.func) &&
		    !ruby_is_core(f.func) && !php_is_vm(f.func))
			fcache_put(e, cp, svc, p->serial, p->maps_gen, f.addr, li,
			    f.func != NULL);
		/* (A stack without Python frames is named the same each time, loop or not.) */
		if (f.file == NULL || f.file[0] != '/')
			whole = false;
		e->locs[n++] = (uint32_t)li;
	}
	if (whole) {
		memset(&xe, 0, sizeof(xe));
		xe.svc = svc;
		xe.hash = sh;
		xe.serial = p->serial;
		xe.maps_gen = p->maps_gen;
		xe.nk = (uint16_t)nk;
		xe.nu = (uint16_t)nu;
		xe.nlocs = (uint32_t)n;
		xe.kframes = (uint16_t)(e->kernel_frames - c0[0]);
		xe.knamed = (uint16_t)(e->kernel_named - c0[1]);
		xe.uframes = (uint16_t)(e->user_frames - c0[2]);
		xe.unamed = (uint16_t)(e->user_named - c0[3]);
		xe.truncated = e->truncated != c0[4];
		xe.miss = miss;
		scache_put(sc, cp, &xe, s->kstack, s->ustack, e->locs);
	}
named:
	/*
	 * Python frames the native walk did not reach (it stopped short, e.g.
	 * before the process's tables were loaded): outermost. Not past a walk
	 * that reached the process's root: their place in it is not known.
	 */
	if (s->unwind & PROF_UNW_COMPLETE) {
		e->py_unreadable += pn - pi;
		pi = pn;
	}
	py_left = pi < pn;
	for (; pi < pn; pi++) {
		int r = interp_frame(e, p, s, pn, pi, &f);

		e->py_unreadable += r < 0;
		if (r == 1)
			continue;
		if ((li = cpuprof_location(svc, &f)) < 0)
			return;
		e->locs[n++] = (uint32_t)li;
		e->py_frames++;
	}
	if (py_cut && py_left) {
		py_marker(&f, s);
		if ((li = cpuprof_location(svc, &f)) < 0)
			return;
		e->locs[n++] = (uint32_t)li;
	}
	if (n == 0) {
		memset(&f, 0, sizeof(f));
		f.func = "[unknown]";
		if ((li = cpuprof_location(svc, &f)) < 0)
			return;
		e->locs[n++] = (uint32_t)li;
	}
	if (s->hdr.kind == PROF_EV_MALLOC)
		cpuprof_sample_malloc(svc, e->locs, n, s->hdr.pid, s->hdr.tid, comm, e->mvals,
		    golab ? gs.keys : NULL, golab ? gs.values : NULL, golab ? gs.n : 0);
	else if (memgrow_kind(s->hdr.kind))
		memgrow_add(svc, e->locs, n, s, comm, golab ? gs.keys : NULL,
		    golab ? gs.values : NULL, golab ? gs.n : 0);
	else if (s->hdr.kind == PROF_EV_OFFCPU)
		cpuprof_sample_waits(svc, e->locs, n, s->hdr.pid, s->hdr.tid, comm,
		    (int64_t)waits, (int64_t)s->offcpu_ns, golab ? gs.keys : NULL,
		    golab ? gs.values : NULL, golab ? gs.n : 0);
	else
		cpuprof_sample_labels(svc, e->locs, n, s->hdr.pid, s->hdr.tid, comm, 0,
		    golab ? gs.keys : NULL, golab ? gs.values : NULL, golab ? gs.n : 0);
	/* Tables for the next samples, should the maps have grown. */
	if (miss && e->unw && !p->kthread && !p->gone && !p->held)
		caller_miss(e, p, miss);
}

/*
 * Whether a sample record of size bytes holds what its counts say: records
 * end after the used part of their runtime member (prof_sample_size).
 */
static bool
sample_complete(const void *data, size_t size)
{
	const struct prof_sample *s = data;

	if (size < PROF_SAMPLE_BASE || (s->rt != PROF_RT_NONE && size < PROF_SAMPLE_BASE + 8))
		return false;
	return size >= prof_sample_size(s);
}

static int
handle_event(void *ctx, void *data, size_t size)
{
	struct ebpf_sampler *e = ctx;
	const struct prof_hdr *h = data;
	struct proc *p;

	if (size < sizeof(*h))
		return 0;
	e->events++;
	switch (h->kind) {
	case PROF_EV_SAMPLE:
		if (sample_complete(data, size))
			handle_sample(e, e->cp, data, 1);
		break;
	case PROF_EV_OFFCPU:
		/* One wait sent by itself, counted as many times as it was sampled for. */
		if (sample_complete(data, size) && e->off)
			handle_sample(e, e->off, data, (((const struct prof_sample *)data)->waits +
			    PROF_OFFCPU_ONE / 2) / PROF_OFFCPU_ONE);
		break;
	case PROF_EV_TABLES:
		/* A process waits before its tables are loaded: loaded now, before its wait ends. */
		if (size >= sizeof(struct prof_notice) && e->unw) {
			const struct prof_notice *n = data;
			char comm[PROF_COMM_LEN + 1];

			memcpy(comm, n->comm, PROF_COMM_LEN);
			comm[PROF_COMM_LEN] = '\0';
			/*
			 * Its maps are read again unless read after it asked:
			 * read at its exec (a millisecond before), they may
			 * predate the libraries the dynamic linker mapped since.
			 */
			if ((p = proctab_get(e->pt, h->pid, comm)) != NULL && !p->excluded &&
			    !p->kthread && !p->gone && !p->held) {
				if (p->maps_read <= (int64_t)h->time_ns)
					proctab_refresh(e->pt, p, 0);
				unwind_proc(e->unw, p);
			}
		}
		break;
	case PROF_EV_MALLOC:
		/* A sampled allocation: weighted, its block held for inuse (mallocprof.c). */
		if (sample_complete(data, size) && e->mp) {
			mallocprof_sample(e->mp, data, e->mvals);
			handle_sample(e, e->mal, data, 1);
		}
		break;
	case PROF_EV_MEM_FAULT:
	case PROF_EV_MEM_MMAP:
	case PROF_EV_MEM_BRK:
	case PROF_EV_MEM_UNMAP:
		if (sample_complete(data, size) && e->mg)
			handle_sample(e, memgrow_cpuprof(e->mg, h->kind), data, 1);
		break;
	case PROF_EV_EXEC:
		/* New mappings: read them now, while the process surely exists. */
		if (e->mp)
			mallocprof_forget(e->mp, h->pid, true);
		if (size >= sizeof(struct prof_notice)) {
			const struct prof_notice *n = data;
			char comm[PROF_COMM_LEN + 1];

			memcpy(comm, n->comm, PROF_COMM_LEN);
			comm[PROF_COMM_LEN] = '\0';
			/*
			 * The executable and the dynamic linker are mapped
			 * already: their tables are built now, in the
			 * background (once per file), and loaded at the first
			 * sample, so that even that one is walked with them.
			 * The image of before stays for its off-CPU waits not
			 * drained yet.
			 */
			if ((p = proctab_exec(e->pt, h->pid, comm, n->exec, e->oc != NULL)) != NULL &&
			    e->unw)
				unwind_prefetch(e->unw, p);
		} else {
			proctab_forget(e->pt, h->pid);
		}
		break;
	case PROF_EV_EXIT:
		if (e->mp)
			mallocprof_forget(e->mp, h->pid, false);
		/* Off-CPU waits still in the kernel need its mappings: forgotten after their drain. */
		if (e->oc == NULL || proctab_hold(e->pt, h->pid) < 0)
			proctab_forget(e->pt, h->pid);
		else if (!offcpu_exited(e->oc, h->pid)) {
			proctab_forget(e->pt, h->pid);
			if (!e->exits_told)
				log_warnx("ebpf: more processes exited within a drain of off-CPU waits "
				    "than are held for it (%d): the waits of the others still in the "
				    "kernel are stored without their mappings (frames unnamed, "
				    "service by command name); said once", OFFCPU_EXITS_HELD);
			e->exits_told = true;
		}
		break;
	}
	return 0;
}

/* A stack of blocks not freed at the period's end, with their inuse values. */
static void
malloc_add(void *arg, const struct prof_sample *s, const int64_t vals[4])
{
	struct ebpf_sampler *e = arg;

	memcpy(e->mvals, vals, sizeof(e->mvals));
	handle_sample(e, e->mal, s, 1);
}

/* The allocations' period: inuse at its end, then the profiles, and what was lost. */
static void
flush_malloc(struct ebpf_sampler *e, int64_t end, const uint64_t *d)
{
	struct mallocprof_stats ms;
	uint64_t samples = 0;
	size_t profiles = 0;

	mallocprof_flush(e->mp, malloc_add, e);
	cpuprof_flush(e->mal, e->st, e->period_start, end, e->gate, &profiles, &samples);
	mallocprof_get_stats(e->mp, &ms);
	metrics_add("profilefs_ebpf_malloc_profiles_total", NULL, (double)profiles);
	metrics_add("profilefs_ebpf_malloc_samples_total", NULL, (double)d[PROF_CNT_MALLOC_SAMPLES]);
	metrics_add("profilefs_ebpf_malloc_untracked_total", NULL,
	    (double)d[PROF_CNT_MALLOC_LIVE_FULL] + (double)(ms.untracked - e->rep.mal_untracked));
	e->rep.mal_untracked = ms.untracked;
	metrics_add("profilefs_ebpf_malloc_refused_total", NULL, (double)(ms.full - e->rep.mal_full));
	e->rep.mal_full = ms.full;
	metrics_set("profilefs_ebpf_malloc_processes", NULL, (double)ms.procs);
	metrics_set("profilefs_ebpf_malloc_live_blocks", NULL, (double)ms.live);
	metrics_set("profilefs_ebpf_malloc_probes_removing", NULL, (double)ms.removing);
	if (d[PROF_CNT_MALLOC_LIVE_FULL] > 0)
		log_warnx("ebpf: --ebpf-malloc: %llu sampled allocations not tracked for inuse_*: "
		    "the table of live blocks (%u) is full; counted in alloc_* only",
		    (unsigned long long)d[PROF_CNT_MALLOC_LIVE_FULL], mallocprof_live_cap());
	log_debug("ebpf: --ebpf-malloc: %llu allocations sampled -> %zu profiles; %zu processes "
	    "probed, %zu blocks held in %zu stacks (%zu KiB), %llu not held (no room), %llu in "
	    "the kernel's table unknown here, %llu processes not probed",
	    (unsigned long long)d[PROF_CNT_MALLOC_SAMPLES], profiles, ms.procs, ms.live, ms.stacks,
	    ms.stack_bytes >> 10, (unsigned long long)ms.untracked,
	    (unsigned long long)ms.unknown, (unsigned long long)ms.attach_failures);
}

/* One entry of offcpu_aggs: a thread's waits in one stack. */
static void
offcpu_add(void *arg, struct prof_sample *s, uint64_t waits, uint32_t exec)
{
	struct ebpf_sampler *e = arg;

	e->events++;
	e->oc_entries++;
	e->oc_waits += waits;
	e->oc_exec = exec;
	handle_sample(e, e->off, s, waits);
	e->oc_exec = OFFCPU_EXEC_ANY;
}

static void
offcpu_forget(void *arg, uint32_t pid)
{
	struct ebpf_sampler *e = arg;

	proctab_forget(e->pt, pid);
}

/* The off-CPU waits added up in the kernel since the last drain (all: every one). */
static void
drain_offcpu(struct ebpf_sampler *e, bool all)
{
	int rc;

	if (e->oc == NULL)
		return;
	e->oc_next = clock_mono_ns() + OFFCPU_DRAIN_NS;
	if ((rc = offcpu_drain(e->oc, all, offcpu_add, offcpu_forget, e)) < 0)
		log_warnx("ebpf: reading the off-CPU waits: %s", strerror(-rc));
	proctab_drained(e->pt);
}

static void
read_counters(struct ebpf_sampler *e, uint64_t out[PROF_CNT_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(e->skel->maps.counters);
	uint64_t *vals;
	uint32_t k;
	int c;

	memset(out, 0, PROF_CNT_MAX * sizeof(*out));
	if (ncpu <= 0 || (vals = calloc((size_t)ncpu, sizeof(*vals))) == NULL)
		return;
	for (k = 0; k < PROF_CNT_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals) != 0)
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
}

/*
 * The line that says sampling works without -v: after the first period, then
 * once a minute, what the periods since the last one sampled and stored.
 */
static void
summary(struct ebpf_sampler *e, uint64_t sampled, uint64_t stored, size_t profiles,
    uint64_t drops, int64_t now)
{
	int64_t since = e->sum.since;

	e->sum.samples += sampled;
	e->sum.stored += stored;
	e->sum.profiles += profiles;
	e->sum.drops += drops;
	if (since != 0 && now - since < SUMMARY_SECS * INT64_C(1000000000))
		return;
	log_info("ebpf: %s %lld s: %llu samples, %zu processes tracked, %zu profiles stored "
	    "(%llu samples), %llu samples dropped", since ? "last" : "first",
	    since ? (long long)((now - since) / 1000000000) : (long long)e->flush_secs,
	    (unsigned long long)e->sum.samples,
	    proctab_count(e->pt), e->sum.profiles, (unsigned long long)e->sum.stored,
	    (unsigned long long)e->sum.drops);
	memset(&e->sum, 0, sizeof(e->sum));
	e->sum.since = now;
}

static void
flush(struct ebpf_sampler *e)
{
	static const char *const names[PROF_CNT_MAX] = {
		"samples", "idle", "dropped_ringbuf", "dropped_event", "kstack_errors",
		"ustack_errors", "cfi_stacks", "cfi_complete", "cfi_fp_frames", "cfi_unsupported",
		"cfi_read_errors", "py_stacks", "py_read_errors", "offcpu_switches",
		"offcpu_short", "offcpu_sent", "offcpu_full", "go_labels", "go_labels_truncated",
		"rb_stacks", "rb_read_errors", "hs_frames", "hs_no_blob", "v8_stacks",
		"offcpu_spilled", "malloc_samples", "malloc_live_full", "php_stacks",
		"php_read_errors", "mem_faults", "mem_faults_file", "mem_calls", "mem_calls_limited",
		"offcpu_busy", "offcpu_threads_full"
	};
	struct unwind_stats us;
	struct python_stats ps;
	struct hotspot_stats hss;
	struct v8_stats vs;
	uint64_t c[PROF_CNT_MAX], d[PROF_CNT_MAX], samples = 0;
	struct golabels_stats gls;
	int64_t end = clock_now_ns(), t0 = clock_mono_ns();
	size_t profiles = 0;
	char lbl[64];
	int k;

	/* The period's waits count for the gate before its CPU samples are stored. */
	if (e->off) {
		drain_offcpu(e, atomic_load(&e->stop));
		cpuprof_gate_count(e->off, e->gate, end);
	}
	cpuprof_flush(e->cp, e->st, e->period_start, end, e->gate, &profiles, &samples);
	if (e->off) {
		size_t op = 0, held, held_bytes;
		uint64_t os = 0;

		cpuprof_flush(e->off, e->st, e->period_start, end, e->gate, &op, &os);
		held = offcpu_cached(e->oc, &held_bytes);
		log_debug("ebpf: off-CPU: %llu waits in %llu entries drained from the kernel; "
		    "%zu stacks held (%zu KiB), %llu entries without their stack since start",
		    (unsigned long long)e->oc_waits, (unsigned long long)e->oc_entries, held,
		    held_bytes >> 10, (unsigned long long)offcpu_lost(e->oc));
		e->oc_waits = e->oc_entries = 0;
		metrics_add("profilefs_ebpf_offcpu_waits_stored_total", NULL, (double)os);
		metrics_add("profilefs_ebpf_offcpu_profiles_total", NULL, (double)op);
	}
	if (e->mg) {
		uint64_t ms = 0;

		memgrow_flush(e->mg, e->st, e->period_start, end, e->gate, &ms);
		metrics_add("profilefs_ebpf_memory_samples_stored_total", NULL, (double)ms);
	}
	e->period_start = end;
	proctab_expire(e->pt);
	symbolize_elf_expire(e->sym, (time_t)(t0 / 1000000000) - EXPIRE_SECS);
	/* Between periods: debug files fetched meanwhile name the next one's frames. */
	symbolize_debuginfod_poll(e->sym);

	read_counters(e, c);
	for (k = 0; k < PROF_CNT_MAX; k++) {
		d[k] = c[k] - e->prev[k];
		e->prev[k] = c[k];
		snprintf(lbl, sizeof(lbl), "what=\"%s\"", names[k]);
		metrics_add("profilefs_ebpf_bpf_events_total", lbl, (double)d[k]);
	}
	if (e->unw) {
		unwind_expire(e->unw, (time_t)(t0 / 1000000000) - UNWIND_KEEP_SECS);
		unwind_get_stats(e->unw, &us);
		metrics_set("profilefs_ebpf_unwind_table_bytes", NULL, (double)us.bytes_used);
		metrics_set("profilefs_ebpf_unwind_table_capacity_bytes", NULL, (double)us.bytes_cap);
		metrics_set("profilefs_ebpf_unwind_tables", NULL, (double)us.tables);
		metrics_set("profilefs_ebpf_unwind_processes", NULL, (double)us.procs);
		metrics_set("profilefs_ebpf_unwind_table_builds", NULL, (double)us.builds);
		metrics_set("profilefs_ebpf_unwind_table_build_failures", NULL,
		    (double)us.build_failures);
		metrics_set("profilefs_ebpf_unwind_table_evictions", NULL, (double)us.evictions);
		metrics_set("profilefs_ebpf_unwind_table_no_room", NULL, (double)us.no_room);
		metrics_set("profilefs_ebpf_unwind_build_seconds", NULL, us.build_seconds);
		metrics_set("profilefs_ebpf_unwind_loads_deferred", NULL, (double)us.deferred);
		log_debug("ebpf: unwind tables: %zu files, %llu of %llu KiB, %zu processes; "
		    "%llu built (%.3f s), %llu failed, %llu evicted, %llu without room, "
		    "%llu loads waited for a build; "
		    "this period %llu stacks walked with tables, %llu reaching the root",
		    us.tables, (unsigned long long)us.bytes_used >> 10,
		    (unsigned long long)us.bytes_cap >> 10, us.procs,
		    (unsigned long long)us.builds, us.build_seconds,
		    (unsigned long long)us.build_failures, (unsigned long long)us.evictions,
		    (unsigned long long)us.no_room, (unsigned long long)us.deferred,
		    (unsigned long long)d[PROF_CNT_CFI_STACKS],
		    (unsigned long long)d[PROF_CNT_CFI_COMPLETE]);
	}
	if (e->mp)
		flush_malloc(e, end, d);
	metrics_add("profilefs_ebpf_samples_stored_total", NULL, (double)samples);
	metrics_add("profilefs_ebpf_profiles_total", NULL, (double)profiles);
	metrics_add("profilefs_ebpf_dropped_total", NULL,
	    (double)(d[PROF_CNT_DROP_RINGBUF] + d[PROF_CNT_DROP_EVENT]));
	/* Counters grow by what this period added. */
	metrics_add("profilefs_ebpf_frames_total", "kind=\"user\"",
	    (double)(e->user_frames - e->rep.user_frames));
	metrics_add("profilefs_ebpf_frames_named_total", "kind=\"user\"",
	    (double)(e->user_named - e->rep.user_named));
	metrics_add("profilefs_ebpf_frames_total", "kind=\"kernel\"",
	    (double)(e->kernel_frames - e->rep.kernel_frames));
	metrics_add("profilefs_ebpf_frames_named_total", "kind=\"kernel\"",
	    (double)(e->kernel_named - e->rep.kernel_named));
	metrics_add("profilefs_ebpf_stacks_truncated_total", NULL,
	    (double)(e->truncated - e->rep.truncated));
	e->rep.user_frames = e->user_frames;
	e->rep.user_named = e->user_named;
	e->rep.kernel_frames = e->kernel_frames;
	e->rep.kernel_named = e->kernel_named;
	e->rep.truncated = e->truncated;
	metrics_add("profilefs_ebpf_python_frames_total", NULL,
	    (double)(e->py_frames - e->rep.py_frames));
	metrics_add("profilefs_ebpf_python_frames_unreadable_total", NULL,
	    (double)(e->py_unreadable - e->rep.py_unreadable));
	e->rep.py_frames = e->py_frames;
	e->rep.py_unreadable = e->py_unreadable;
	python_get_stats(e->py, &ps);
	metrics_add("profilefs_ebpf_python_frames_unlined_total", NULL,
	    (double)(ps.frames_unlined - e->rep.py_unlined));
	e->rep.py_unlined = ps.frames_unlined;
	metrics_set("profilefs_ebpf_python_line_table_bytes", NULL, (double)ps.lines_bytes);
	python_period(e->py, e->flush_secs);
	golabels_get_stats(e->gl, &gls);
	metrics_set("profilefs_ebpf_go_processes_total", NULL, (double)gls.procs);
	metrics_set("profilefs_ebpf_go_labelled_samples_total", NULL, (double)gls.samples);
	metrics_set("profilefs_ebpf_go_label_sets_refused_total", NULL, (double)gls.refused);
	metrics_set("profilefs_ebpf_go_label_pairs_dropped_total", NULL, (double)gls.dropped);
	metrics_set("profilefs_ebpf_go_label_sets", NULL, (double)gls.sets);
	golabels_period(e->gl, t0);
	v8_get_stats(e->v8, &vs);
	metrics_add("profilefs_ebpf_js_frames_total", NULL, (double)(vs.named - e->rep.js_frames));
	metrics_add("profilefs_ebpf_js_frames_unreadable_total", NULL,
	    (double)(vs.unreadable - e->rep.js_unreadable));
	e->rep.js_frames = vs.named;
	e->rep.js_unreadable = vs.unreadable;
	metrics_set("profilefs_ebpf_processes_tracked", NULL, (double)proctab_count(e->pt));
	metrics_set("profilefs_ebpf_elf_objects_cached", NULL,
	    (double)symbolize_elf_count(e->sym));
	metrics_observe("profilefs_ebpf_flush_seconds", NULL,
	    (double)(clock_mono_ns() - t0) / 1e9);
	hotspot_get_stats(e->hs, &hss);
	metrics_add("profilefs_ebpf_java_frames_total", NULL,
	    (double)(hss.frames - e->rep.java_frames));
	metrics_add("profilefs_ebpf_java_frames_unreadable_total", NULL,
	    (double)(hss.unreadable - e->rep.java_unreadable));
	e->rep.java_frames = hss.frames;
	e->rep.java_unreadable = hss.unreadable;
	metrics_set("profilefs_ebpf_java_jvms_walked", NULL, (double)hss.jvms);
	metrics_set("profilefs_ebpf_java_jvms_refused", NULL, (double)hss.refused);
	metrics_set("profilefs_ebpf_memory_reads_stalled", NULL,
	    (double)(ps.mem_stalls + hss.mem_stalls));
	metrics_set("profilefs_ebpf_file_opens_stalled", NULL, (double)rio_stalls());
	atomic_store(&e->period_done, clock_mono_ns());
	summary(e, d[PROF_CNT_SAMPLES], samples, profiles,
	    d[PROF_CNT_DROP_RINGBUF] + d[PROF_CNT_DROP_EVENT], t0);
	log_debug("ebpf: period: %llu samples (%llu idle) -> %zu profiles, %llu samples stored; "
	    "dropped %llu samples, %llu events; stack errors kernel %llu user %llu; "
	    "named frames user %.1f%% kernel %.1f%%; %llu stacks truncated; %llu Python frames "
	    "(%llu unreadable); %zu processes, %zu ELF objects; %llu of %llu stacks named "
	    "from the stack cache",
	    (unsigned long long)d[PROF_CNT_SAMPLES], (unsigned long long)d[PROF_CNT_IDLE],
	    profiles, (unsigned long long)samples,
	    (unsigned long long)d[PROF_CNT_DROP_RINGBUF], (unsigned long long)d[PROF_CNT_DROP_EVENT],
	    (unsigned long long)d[PROF_CNT_ERR_KSTACK], (unsigned long long)d[PROF_CNT_ERR_USTACK],
	    e->user_frames ? 100.0 * (double)e->user_named / (double)e->user_frames : 0.0,
	    e->kernel_frames ? 100.0 * (double)e->kernel_named / (double)e->kernel_frames : 0.0,
	    (unsigned long long)e->truncated, (unsigned long long)e->py_frames,
	    (unsigned long long)e->py_unreadable, proctab_count(e->pt),
	    symbolize_elf_count(e->sym), (unsigned long long)e->stacks_cached,
	    (unsigned long long)e->stacks);
}

static void *
sampler_main(void *arg)
{
	struct ebpf_sampler *e = arg;
	int rc;

	/*
	 * A little ahead of ordinary work, so that an exec notice is read (and
	 * the new process's mappings with it) before a short-lived process
	 * exits on a busy host. The thread uses well under 1% of a CPU.
	 */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), SAMPLER_NICE) < 0)
		log_debug("ebpf: sampler thread priority unchanged: %s", strerror(errno));
	while (!atomic_load(&e->stop)) {
		/*
		 * The BPF side wakes us only when the buffer fills up (see
		 * wakeup_bytes); otherwise read what has come every 100 ms.
		 */
		rc = ring_buffer__poll(e->rb, POLL_MS);
		if (rc >= 0)
			rc = ring_buffer__consume(e->rb);
		if (e->unw)
			unwind_poll(e->unw);
		if (e->mp)
			mallocprof_poll(e->mp);
		if (e->oc && (clock_mono_ns() >= e->oc_next || offcpu_due(e->oc)))
			drain_offcpu(e, false);
		if (e->oc)
			offcpu_sysexit(e);
		if (rc < 0 && rc != -EINTR) {
			log_warnx("ebpf: ring buffer: %s", strerror(-rc));
			break;
		}
		if (clock_mono_ns() >= e->next_flush) {
			flush(e);
			e->next_flush += (int64_t)e->flush_secs * 1000000000;
		}
	}
	ring_buffer__consume(e->rb);
	flush(e);
	atomic_store(&e->exited, true);
	return NULL;
}

/* Seconds since a period last completed, and whether that makes a stall. */
static double
period_age(struct ebpf_sampler *e, bool *stalled)
{
	int64_t age = clock_mono_ns() - atomic_load(&e->period_done);
	int64_t limit = (int64_t)e->flush_secs * STALL_PERIODS * 1000000000LL;

	*stalled = age > (limit > STALL_MIN_NS ? limit : STALL_MIN_NS);
	return (double)age / 1e9;
}

/* Once a second: the sampler's liveness to the metrics and, when it changes, the log. */
static void *
watchdog_main(void *arg)
{
	struct ebpf_sampler *e = arg;
	struct timespec until;
	bool stalled;
	double age;
	int64_t t;

	pthread_mutex_lock(&e->wd_mu);
	while (!atomic_load(&e->stop)) {
		age = period_age(e, &stalled);
		metrics_set("profilefs_ebpf_last_period_age_seconds", NULL, age);
		metrics_set("profilefs_ebpf_sampler_stalled", NULL, stalled ? 1 : 0);
		if (stalled != e->stalled) {
			if (stalled)
				log_warnx("ebpf: the sampler has completed no period for %.0f s "
				    "(every %u s expected): stalled", age, e->flush_secs);
			else
				log_info("ebpf: the sampler completes periods again");
			e->stalled = stalled;
		}
		t = clock_mono_ns() + 1000000000LL;
		until.tv_sec = t / 1000000000;
		until.tv_nsec = t % 1000000000;
		pthread_cond_timedwait(&e->wd_cv, &e->wd_mu, &until);
	}
	pthread_mutex_unlock(&e->wd_mu);
	return NULL;
}

bool
ebpf_threads_left(void)
{
	return abandoned_sampler != NULL || memread_stuck_now() > 0 || rio_stuck_now() > 0;
}

bool
ebpf_health(struct ebpf_sampler *e, struct buf *out)
{
	bool stalled;
	double age;

	if (e == NULL)
		return true;
	age = period_age(e, &stalled);
	if (stalled) {
		buf_printf(out, "ebpf: stalled: no period completed for %.0f s (every %u s "
		    "expected)", age, e->flush_secs);
		return false;
	}
	buf_printf(out, "ebpf: ok, last period %.0f s ago", age);
	return true;
}

/* --- start and stop ------------------------------------------------------ */

static enum service_by
service_rule(void)
{
	const char *v = getenv("PROFILEFS_EBPF_SERVICE_BY");

	if (v == NULL || *v == '\0' || strcmp(v, "cgroup") == 0)
		return SERVICE_BY_CGROUP;
	if (strcmp(v, "exe") == 0)
		return SERVICE_BY_EXE;
	if (strcmp(v, "comm") == 0)
		return SERVICE_BY_COMM;
	log_warnx("PROFILEFS_EBPF_SERVICE_BY=%s: not cgroup, exe or comm; using cgroup", v);
	return SERVICE_BY_CGROUP;
}

int
ebpf_check_filter(const char *rule, const char **bad)
{
	return proctab_filter_check(rule, bad);
}

int
ebpf_check_malloc_rule(const char *rule, const char **bad)
{
	return mallocprof_check_rule(rule, bad);
}

/*
 * The include/exclude rules into the process table, and the gate of the
 * service for the rest (EBPF_OTHER_SERVICE, labelled with the host).
 */
static int
gate_create(struct ebpf_sampler *e, const struct ebpf_opts *o, const char *host)
{
	struct labelset ls = { 0 };
	struct buf text = { 0 };
	size_t i;
	int rc = 0;

	for (i = 0; i < o->nfilters && rc == 0; i++)
		rc = proctab_filter(e->pt, o->filters[i].rule, o->filters[i].include);
	if (rc < 0)
		return rc;
	if (o->min_samples == 0)
		return 0;
	if (labels_add(&ls, "host", host, NULL) < 0 || labels_format(&ls, &text) < 0 ||
	    buf_reserve(&text, 0) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	/* Off-CPU waits count one each, no more than 1/HZ's waited (cpuprof.c). */
	e->gate = cpuprof_gate_create(o->min_samples < 0 ? EBPF_MIN_SAMPLES :
	    (uint64_t)o->min_samples, 1000000000ULL / (uint64_t)(o->hz > 0 ? o->hz : 1),
	    EBPF_OTHER_SERVICE, text.data);
out:
	labels_clear(&ls);
	buf_free(&text);
	return rc;
}

static void
describe_metrics(void)
{
	metrics_describe("profilefs_ebpf_bpf_events_total", "counter",
	    "Events counted by the BPF program, by what happened (samples, idle, drops, errors).");
	metrics_describe("profilefs_ebpf_samples_stored_total", "counter",
	    "Samples stored in eBPF CPU profiles.");
	metrics_describe("profilefs_ebpf_profiles_total", "counter",
	    "eBPF CPU profiles stored (one per service per period).");
	metrics_describe("profilefs_ebpf_dropped_total", "counter",
	    "Samples and notices lost because the ring buffer was full.");
	metrics_describe("profilefs_ebpf_frames_total", "counter", "Stack frames resolved.");
	metrics_describe("profilefs_ebpf_frames_named_total", "counter",
	    "Stack frames resolved to a function name.");
	metrics_describe("profilefs_ebpf_stacks_truncated_total", "counter",
	    "User stacks cut where the frame-pointer chain left the mapped code.");
	metrics_describe("profilefs_ebpf_java_frames_total", "counter",
	    "Java frames named from the JVM's structures (interpreted, compiled, inlined).");
	metrics_describe("profilefs_ebpf_java_frames_unreadable_total", "counter",
	    "... of which could not be named (method unreadable or changed).");
	metrics_describe("profilefs_ebpf_java_jvms_walked", "gauge",
	    "JVMs whose Java stacks are walked through their code cache, since start.");
	metrics_describe("profilefs_ebpf_java_jvms_refused", "gauge",
	    "JVMs left to frame pointers and the perf map (version, tables), since start.");
	metrics_describe("profilefs_ebpf_python_frames_total", "counter",
	    "Python frames put in place of the interpreter's evaluation loop.");
	metrics_describe("profilefs_ebpf_python_frames_unreadable_total", "counter",
	    "... of which could not be named (process gone, code object changed).");
	metrics_describe("profilefs_ebpf_python_frames_unlined_total", "counter",
	    "Python frames named without their line: the period's CPU budget or the memory "
	    "for decoded line tables was spent.");
	metrics_describe("profilefs_ebpf_python_line_table_bytes", "gauge",
	    "Bytes of decoded Python line tables held (at most 32 MiB).");
	metrics_describe("profilefs_ebpf_go_processes_total", "counter",
	    "Go processes whose samples carry their goroutines' pprof labels.");
	metrics_describe("profilefs_ebpf_go_labelled_samples_total", "counter",
	    "Samples of a goroutine with pprof labels.");
	metrics_describe("profilefs_ebpf_go_label_sets_refused_total", "counter",
	    "Of those, samples whose label set was past the bounds: not made a series.");
	metrics_describe("profilefs_ebpf_go_label_pairs_dropped_total", "counter",
	    "Go label pairs left out of a sample (empty value, malformed).");
	metrics_describe("profilefs_ebpf_go_label_sets", "gauge",
	    "Go label sets remembered in this hour's window.");
	metrics_describe("profilefs_ebpf_js_frames_total", "counter",
	    "JavaScript frames of V8 processes (Node.js) named after their function.");
	metrics_describe("profilefs_ebpf_js_frames_unreadable_total", "counter",
	    "Frames noted as V8 JavaScript frames whose function could not be read (moved, "
	    "gone, not a function): left native.");
	metrics_describe("profilefs_ebpf_processes_tracked", "gauge",
	    "Processes whose mappings the sampler holds.");
	metrics_describe("profilefs_ebpf_elf_objects_cached", "gauge",
	    "ELF objects in the symbol cache.");
	metrics_describe("profilefs_ebpf_unwind_table_bytes", "gauge",
	    "Bytes of unwind table rows loaded into the BPF map.");
	metrics_describe("profilefs_ebpf_unwind_table_capacity_bytes", "gauge",
	    "Bytes the unwind table map holds (--ebpf-unwind-mem).");
	metrics_describe("profilefs_ebpf_unwind_tables", "gauge",
	    "Files (executables, libraries) with an unwind table loaded.");
	metrics_describe("profilefs_ebpf_unwind_processes", "gauge",
	    "Processes whose stacks are walked with unwind tables.");
	metrics_describe("profilefs_ebpf_unwind_table_builds", "gauge",
	    "Unwind tables built since start (files read for CFI).");
	metrics_describe("profilefs_ebpf_unwind_table_build_failures", "gauge",
	    "Files whose CFI could not be read since start.");
	metrics_describe("profilefs_ebpf_unwind_table_evictions", "gauge",
	    "Unwind tables evicted since start (unmapped, or to make room).");
	metrics_describe("profilefs_ebpf_unwind_table_no_room", "gauge",
	    "Unwind tables that did not fit in --ebpf-unwind-mem since start.");
	metrics_describe("profilefs_ebpf_unwind_build_seconds", "gauge",
	    "Seconds spent building unwind tables since start.");
	metrics_describe("profilefs_ebpf_unwind_loads_deferred", "gauge",
	    "Process table loads that waited for a table being built, since start.");
	metrics_describe("profilefs_ebpf_sampler_stalled", "gauge",
	    "1 when the sampler has completed no period in 3 periods and 20 s (see /healthz).");
	metrics_describe("profilefs_ebpf_last_period_age_seconds", "gauge",
	    "Seconds since the sampler last completed a period.");
	metrics_describe("profilefs_ebpf_memory_reads_stalled", "gauge",
	    "Reads of a process's memory abandoned since start (the process is read no more).");
	metrics_describe("profilefs_ebpf_offcpu_waits_stored_total", "counter",
	    "Off-CPU waits stored in eBPF offcpu profiles (--ebpf-offcpu).");
	metrics_describe("profilefs_ebpf_offcpu_profiles_total", "counter",
	    "eBPF offcpu profiles stored (one per service per period).");
	metrics_describe("profilefs_ebpf_memory_samples_stored_total", "counter",
	    "Samples stored in memory-growth and memory-mmap profiles (--ebpf-memory).");
	metrics_describe("profilefs_ebpf_file_opens_stalled", "gauge",
	    "Opens of a process's files abandoned since start (its files are opened no more).");
	metrics_describe("profilefs_ebpf_malloc_profiles_total", "counter",
	    "eBPF heap profiles of sampled allocations stored (--ebpf-malloc).");
	metrics_describe("profilefs_ebpf_malloc_samples_total", "counter",
	    "Allocations sampled by the malloc uprobes (--ebpf-malloc).");
	metrics_describe("profilefs_ebpf_malloc_untracked_total", "counter",
	    "Sampled allocations counted in alloc_* but not tracked for inuse_* (the table of "
	    "live blocks full, or no memory).");
	metrics_describe("profilefs_ebpf_malloc_refused_total", "counter",
	    "Selected processes not probed by --ebpf-malloc: as many are probed as it allows at once.");
	metrics_describe("profilefs_ebpf_malloc_probes_removing", "gauge",
	    "Uprobe links of processes gone, still being removed (each waits for the kernel).");
	metrics_describe("profilefs_ebpf_malloc_processes", "gauge",
	    "Processes whose allocator is probed (--ebpf-malloc).");
	metrics_describe("profilefs_ebpf_malloc_live_blocks", "gauge",
	    "Sampled allocations not freed yet, held for inuse_*.");
	metrics_describe("profilefs_ebpf_flush_seconds", "histogram",
	    "Time to build and store one period's profiles.");
}

static void
release_proc(void *arg, struct proc *p)
{
	struct ebpf_sampler *e = arg;

	if (e->unw)
		unwind_forget(e->unw, p);
	python_forget(e->py, p);
	golabels_forget(e->gl, p);
	ruby_forget(e->ruby, p);
	php_forget(e->php, p);
	hotspot_forget(e->hs, p);
	v8_forget(e->v8, p);
}

int
ebpf_parse_debuginfod(const char *list, char **out, const char **bad)
{
	return dbginfod_parse_urls(list, out, bad);
}

int
ebpf_start(struct store *st, const struct ebpf_opts *o, struct ebpf_sampler **out)
{
	struct ebpf_sampler *e;
	char host[256] = "";
	long ncpu, unwind_mib;
	bool tw_refused = false;
	size_t rbsize;
	int rc;

	*out = NULL;
	if (o->hz < 1 || o->hz > 99) {
		log_warnx("--ebpf: HZ must be 1..99");
		return -EINVAL;
	}
	if ((rc = preflight()) < 0)
		return rc;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return -ENOMEM;
	e->oc_exec = OFFCPU_EXEC_ANY;
	pthread_mutex_init(&e->wd_mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&e->wd_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	e->st = st;
	e->hz = o->hz;
	e->flush_secs = o->flush_secs ? o->flush_secs : 10;
	libbpf_set_print(libbpf_log);
	gethostname(host, sizeof(host) - 1);
	if ((e->fcache = calloc(FCACHE_SLOTS, sizeof(*e->fcache))) == NULL ||
	    scache_init(&e->sc_cpu) < 0 || (o->offcpu && scache_init(&e->sc_off) < 0) ||
	    (o->nmalloc_rules && (scache_init(&e->sc_mal) < 0 ||
	    (e->mal = cpuprof_create_malloc(MALLOC_RATE_DEFAULT)) == NULL)) ||
	    (e->sym = symbolize_create()) == NULL ||
	    (e->pt = proctab_create(e->sym, service_rule(), host[0] ? host : "localhost")) == NULL ||
	    (e->cp = cpuprof_create(e->hz)) == NULL ||
	    (rc = gate_create(e, o, host[0] ? host : "localhost")) < 0 ||
	    (o->offcpu && (e->off = cpuprof_create_offcpu(1)) == NULL)) {
		rc = -ENOMEM;
		goto fail;
	}

#if defined(__x86_64__)
	unwind_mib = o->unwind_mib == 0 ? UNWIND_MEM_DEFAULT >> 20 : o->unwind_mib;
#else
	unwind_mib = -1;	/* the tables and the walker speak x86-64 only */
#endif
	/*
	 * The table walker needs bpf_loop (5.17); an older kernel refuses the
	 * program with it, and gets the frame-pointer sampler instead (the
	 * verifier skips the walker's code when unwind_tables is false).
	 * Should a kernel with task work refuse its off-CPU program, the
	 * older kernels' way is loaded instead.
	 */
	for (;;) {
		if ((e->skel = profile_bpf__open()) == NULL) {
			rc = -errno;
			log_warnx("--ebpf: opening the BPF object: %s", strerror(-rc));
			goto fail;
		}
		e->skel->rodata->kernel_stacks = true;
		e->skel->rodata->user_stacks = true;
		e->skel->rodata->offcpu = o->offcpu;
		e->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
		e->skel->rodata->offcpu_walks = OFFCPU_WALKS / (o->offcpu_sample > 1 ?
		    o->offcpu_sample : 1);
		e->skel->rodata->self_tgid = (uint32_t)getpid();
		/* Without off-CPU its programs are not even loaded; a tracepoint the kernel lacks neither. */
		e->offcpu_tw = o->offcpu && !tw_refused && kernel_has_task_work();
		bpf_program__set_autoload(e->skel->progs.on_switch_tw, e->offcpu_tw);
		bpf_program__set_autoload(e->skel->progs.on_switch, o->offcpu && !e->offcpu_tw);
		bpf_program__set_autoload(e->skel->progs.offcpu_sys_exit, o->offcpu &&
		    !e->offcpu_tw && kernel_has_tp("sys_exit"));
		bpf_program__set_autoload(e->skel->progs.offcpu_rseq, o->offcpu &&
		    !e->offcpu_tw && kernel_has_tp("rseq_update"));
		bpf_map__set_max_entries(e->skel->maps.offcpu_tws, e->offcpu_tw &&
		    libbpf_num_possible_cpus() > 0 ? (uint32_t)libbpf_num_possible_cpus() *
		    PROF_OFFCPU_TW_SLOTS : 1);
		memgrow_configure(e, o);
		if (!o->offcpu) {
			bpf_map__set_max_entries(e->skel->maps.offcpu_threads, 1);
			bpf_map__set_max_entries(e->skel->maps.offcpu_aggs, 1);
			bpf_map__set_max_entries(e->skel->maps.offcpu_stacks, 1);
		} else {
			bpf_map__set_max_entries(e->skel->maps.offcpu_threads, OFFCPU_THREADS);
			bpf_map__set_max_entries(e->skel->maps.offcpu_aggs, OFFCPU_AGGS);
			bpf_map__set_max_entries(e->skel->maps.offcpu_stacks, OFFCPU_STACKS);
		}
		mallocprof_configure(e->skel, o->nmalloc_rules > 0, MALLOC_RATE_DEFAULT,
		    mallocprof_live_cap());
		if (unwind_mib > 0) {
			e->skel->rodata->unwind_tables = true;
			unwind_configure(e->skel->maps.unw_rows, (size_t)unwind_mib << 20);
		}
		/*
		 * 2 MiB per CPU (about 4 s of 99 Hz samples of 5.4 KiB, the
		 * most a record takes: Python frames included), a power of two, at least 8 MiB.
		 */
		ncpu = sysconf(_SC_NPROCESSORS_CONF);
		for (rbsize = 8u << 20; rbsize < (size_t)(ncpu > 0 ? ncpu : 1) << 21 &&
		    rbsize < (256u << 20); rbsize <<= 1)
			;
		bpf_map__set_max_entries(e->skel->maps.events, (uint32_t)rbsize);
		e->skel->rodata->wakeup_bytes = rbsize / 4;
		if ((rc = profile_bpf__load(e->skel)) == 0)
			break;
		if (e->offcpu_tw) {
			log_warnx("--ebpf-offcpu: the kernel refused the task work program (%s): "
			    "off-CPU stacks are taken at rseq_update, sys_exit or the next switch "
			    "out", strerror(-rc));
			profile_bpf__destroy(e->skel);
			e->skel = NULL;
			tw_refused = true;
			continue;
		}
		if (unwind_mib > 0) {
			log_warnx("--ebpf: the kernel refused the unwind-table walker (%s; bpf_loop "
			    "needs 5.17): stacks are walked by frame pointers", strerror(-rc));
			profile_bpf__destroy(e->skel);
			e->skel = NULL;
			unwind_mib = -1;
			continue;
		}
		log_warnx("--ebpf: loading the BPF program failed: %s (run with -v for the "
		    "verifier's log; the kernel needs BPF ring buffers, 5.8 or later%s)", strerror(-rc),
		    o->offcpu ? ", and BTF tracepoints for --ebpf-offcpu" : "");
		goto fail;
	}
	if (unwind_mib > 0) {
		if ((e->unw = unwind_create(e->skel->maps.unw_rows, e->skel->maps.unw_maps,
		    e->skel->maps.unw_procs)) == NULL)
			log_warnx("--ebpf: unwind tables: %s; stacks are walked by frame pointers",
			    strerror(errno));
	}
	if ((e->py = python_create(bpf_map__fd(e->skel->maps.py_procs))) == NULL ||
	    (e->ruby = ruby_create(bpf_map__fd(e->skel->maps.rb_procs))) == NULL ||
	    (e->php = php_create(bpf_map__fd(e->skel->maps.php_procs))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((e->gl = golabels_create(bpf_map__fd(e->skel->maps.go_procs))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((e->hs = hotspot_create(bpf_map__fd(e->skel->maps.hs_procs))) == NULL ||
	    (e->v8 = v8_create(bpf_map__fd(e->skel->maps.v8_procs))) == NULL ||
	    (o->offcpu && (e->oc = offcpu_create(bpf_map__fd(e->skel->maps.offcpu_aggs),
	    bpf_map__fd(e->skel->maps.offcpu_stacks), bpf_map__fd(e->skel->maps.offcpu_threads),
	    OFFCPU_AGGS, &e->skel->data->offcpu_gen,
	    &e->skel->bss->offcpu_added)) == NULL)) {
		rc = -ENOMEM;
		goto fail;
	}
	proctab_set_release(e->pt, release_proc, e);
	if (o->nmalloc_rules && (e->mp = mallocprof_create(e->skel, e->pt, o->malloc_rules,
	    o->nmalloc_rules, MALLOC_RATE_DEFAULT, mallocprof_live_cap())) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if (o->debuginfod && o->debuginfod[0] && o->data_dir &&
	    dbginfod_create(o->debuginfod, o->data_dir, o->debuginfod_cache, &e->dbg) == 0) {
		symbolize_set_debuginfod(e->sym, e->dbg);
		log_info("ebpf: debug files of binaries without symbols are fetched by build id "
		    "from debuginfod (cache %s/debuginfo)", o->data_dir);
	}
	if (!symbolize_kernel_ok(e->sym))
		log_warnx("--ebpf: /proc/kallsyms hides kernel addresses (kernel.kptr_restrict, "
		    "CAP_SYSLOG): kernel frames keep addresses only");
	if ((rc = open_perf_events(e)) < 0)
		goto fail;
	e->exec_link = bpf_program__attach(e->skel->progs.on_exec);
	e->exit_link = bpf_program__attach(e->skel->progs.on_exit);
	if (e->exec_link == NULL || e->exit_link == NULL) {
		rc = -errno;
		log_warnx("--ebpf: attaching to the sched_process_exec/exit tracepoints: %s",
		    strerror(-rc));
		goto fail;
	}
	if (o->offcpu && (rc = attach_offcpu(e)) < 0)
		goto fail;
	if (o->memory_faults && (rc = attach_memgrow(e, o)) < 0)
		goto fail;
	e->rb = ring_buffer__new(bpf_map__fd(e->skel->maps.events), handle_event, e, NULL);
	if (e->rb == NULL) {
		rc = -errno;
		log_warnx("--ebpf: ring buffer: %s", strerror(-rc));
		goto fail;
	}
	describe_metrics();
	e->period_start = clock_now_ns();
	e->next_flush = clock_mono_ns() + (int64_t)e->flush_secs * 1000000000;
	atomic_store(&e->period_done, clock_mono_ns());
	if ((rc = pthread_create(&e->thread, NULL, sampler_main, e)) != 0) {
		rc = -rc;
		log_warnx("--ebpf: starting the sampler thread: %s", strerror(-rc));
		goto fail;
	}
	e->running = true;
	if ((rc = pthread_create(&e->watchdog, NULL, watchdog_main, e)) == 0)
		e->watching = true;
	else
		log_warnx("--ebpf: starting the watchdog thread: %s", strerror(rc));
	log_info("ebpf: sampling %d CPUs at %d Hz, one profile per service every %u s; user stacks "
	    "walked %s", e->npfds, e->hz, e->flush_secs, e->unw ?
	    "with unwind tables (.eh_frame), else frame pointers" : "by frame pointers");
	if (e->mp)
		log_info("ebpf: allocations sampled in the processes %zu selectors name, every "
		    "%d KiB allocated on average (uprobes on their C library), profile type heap",
		    o->nmalloc_rules,
		    MALLOC_RATE_DEFAULT >> 10);
	if (o->offcpu)
		log_info("ebpf: off-CPU time recorded, every wait timed; stacks of waits of "
		    "%.3f ms or more (more past about %llu stacks a second per CPU), of shorter "
		    "ones in proportion to their length; profile type offcpu",
		    (double)o->offcpu_min_ns / 1e6,
		    (unsigned long long)e->skel->rodata->offcpu_walks);
	*out = e;
	return 0;
fail:
	ebpf_stop(e);
	return rc < 0 ? rc : -EIO;
}

void
ebpf_stop(struct ebpf_sampler *e)
{
	int i;

	if (e == NULL)
		return;
	atomic_store(&e->stop, true);
	if (e->watching) {
		pthread_mutex_lock(&e->wd_mu);
		pthread_cond_broadcast(&e->wd_cv);
		pthread_mutex_unlock(&e->wd_mu);
		pthread_join(e->watchdog, NULL);
	}
	if (e->running) {
		int64_t until = clock_mono_ns() + STOP_GRACE_NS;

		/* A thread stuck in the kernel (a read that never ends) is not waited for. */
		while (!atomic_load(&e->exited) && clock_mono_ns() < until)
			usleep(20 * 1000);
		if (!atomic_load(&e->exited)) {
			log_warnx("ebpf: the sampler thread did not stop within %lld s (stuck in "
			    "a read?): leaving it; this period's samples are lost",
			    (long long)(STOP_GRACE_NS / 1000000000));
			pthread_detach(e->thread);
			abandoned_sampler = e;
			return;
		}
		pthread_join(e->thread, NULL);
	}
	for (i = 0; e->links && i < e->npfds; i++)
		bpf_link__destroy(e->links[i]);
	for (i = 0; i < e->npfds; i++)
		close(e->pfds[i]);
	bpf_link__destroy(e->exec_link);
	bpf_link__destroy(e->exit_link);
	bpf_link__destroy(e->switch_link);
	bpf_link__destroy(e->sysexit_link);
	bpf_link__destroy(e->rseq_link);
	ring_buffer__free(e->rb);
	cpuprof_destroy(e->cp);
	cpuprof_gate_destroy(e->gate);
	cpuprof_destroy(e->off);
	offcpu_destroy(e->oc);
	/* The uprobes go before the program they run. */
	mallocprof_destroy(e->mp);
	cpuprof_destroy(e->mal);
	memgrow_destroy(e->mg);
	/* Processes release their unwind entries while the maps still exist. */
	proctab_destroy(e->pt);
	python_destroy(e->py);
	golabels_destroy(e->gl);
	ruby_destroy(e->ruby);
	php_destroy(e->php);
	hotspot_destroy(e->hs);
	v8_destroy(e->v8);
	unwind_destroy(e->unw);
	profile_bpf__destroy(e->skel);
	symbolize_destroy(e->sym);
	dbginfod_destroy(e->dbg);
	free(e->links);
	free(e->pfds);
	free(e->fcache);
	scache_free(&e->sc_cpu);
	scache_free(&e->sc_off);
	scache_free(&e->sc_mal);
	pthread_mutex_destroy(&e->wd_mu);
	pthread_cond_destroy(&e->wd_cv);
	free(e);
}
