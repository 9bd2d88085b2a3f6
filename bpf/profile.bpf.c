// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c: the kernel half of the CPU sampler. do_sample runs on each
 * tick of a software cpu-clock perf event (one per online CPU, frequency mode)
 * and sends the current task's kernel and user stacks to user space through one
 * ring buffer; no stack id map, so stacks never collide. Kernel stacks come
 * from bpf_get_stack. User stacks are walked here with the unwind tables user
 * space loaded for the process (see "Unwinding" below), frame by frame, by
 * frame pointer where no table covers a pc (JIT code, Go); a process user
 * space has not loaded yet is walked by bpf_get_stack's frame pointers. CPython
 * processes also get their interpreter frames read ("Python" below), Ruby
 * ones their control frames (ruby.bpf.h), PHP ones their executor's
 * frames (php.bpf.h), Go processes their goroutine's
 * pprof labels (golabels.bpf.h), V8 processes the JSFunction of each frame
 * walked by frame pointer (v8.bpf.h). Two raw
 * scheduler tracepoints (no tracefs
 * needed) tell user space when a process exec's (mappings change: capture
 * them now) and exits (forget it). Everything lost or failing is counted in per-CPU counters. Aggregation
 * and symbolization are left to collector/ebpf/.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "profile.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
/* Wake the reader only past this much unread data; it also polls on a timer. */
const volatile __u64 wakeup_bytes = 1 << 20;
/* Walk user stacks with unwind tables (x86-64; user space loads them). */
const volatile bool unwind_tables = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by user space before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * Waking the reader for every sample would cost a context switch per sample
 * and, worse, line its wake-ups up with the other CPUs' sampling timers, so
 * the reader would be over-sampled in its own profile.
 */
static __always_inline __u64
wakeup_flag(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
	    BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void
count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

/*
 * Unwinding. Three maps, filled by collector/ebpf/unwind.c:
 *   unw_rows   every loaded file's rows (struct unw_row), a file's rows
 *              contiguous and sorted by pc; an mmap-able array sized by
 *              --ebpf-unwind-mem.
 *   unw_maps   (pid, address) -> the table and load bias of the mapping that
 *              holds it, as LPM prefixes of the mapping's range: one lookup
 *              per frame, no search.
 *   unw_procs  pid -> generation of its unw_maps entries. Deleted here at exec
 *              and exit, so a new image is never walked with the old one's
 *              mappings; absent (or marked as having no tables): the process
 *              is walked by bpf_get_stack. A sample of a process user space
 *              has not seen yet, or one whose leaf no table covers shortly
 *              after its tables were loaded (the libraries of a process
 *              just started), wakes user space at once, so that tables
 *              follow within a sample or two rather than a poll interval.
 * The walk runs in a bpf_loop callback, one frame per call, so the verifier
 * checks one frame's code however deep the stack; a frame costs one LPM lookup,
 * at most UNW_SEARCH_STEPS array lookups (binary search of the file's rows)
 * and two or three reads of user memory.
 */
#define UNW_SEARCH_STEPS	24	/* 2^24 rows is more than unw_rows can hold */
#define USER_TOP		0x0000800000000000ULL
#define UNW_EAGER_NS		(500ULL * 1000 * 1000)	/* wake-ups on a leaf miss, after a load */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);		/* resized by user space before load */
	__type(key, __u32);
	__type(value, struct unw_row);
} unw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 18);
	__type(key, struct unw_map_key);
	__type(value, struct unw_map_val);
} unw_maps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct unw_proc);
} unw_procs SEC(".maps");

struct walk {
	__u64	pc, sp, bp;
	__u32	pid, gen;
	__u32	n;		/* frames in walk_bufs */
	__u32	flags;		/* PROF_UNW_* */
	__u32	exact;		/* pc is exact (leaf, or interrupted by a signal) */
};

/*
 * A walk's state lives in this per-CPU map value, not on the stack: values
 * loaded from a map carry no range, so the verifier sees one state per frame
 * (and per step of the binary search), not one per path through them, and
 * newer kernels that verify bpf_loop callbacks iteration by iteration find
 * the state repeating at once.
 */
struct walk_buf {
	__u64		pcs[PROF_MAX_USTACK];
	struct walk	w;
	__u32		lo, hi;		/* bounds of the binary search */
	/* hotspot.bpf.h's: the JVM's code cache (hs_on: a JVM), interpreted frames met */
	struct hs_proc	hs;
	__u32		hs_on, jn;
	struct prof_jframe jf[PROF_MAX_JFRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_buf);
} walk_bufs SEC(".maps");

#include "hotspot.bpf.h"

#include "v8.bpf.h"

/* One step by frame pointer: the frame record {caller's rbp, return address} at rbp. */
static __always_inline long
walk_fp(struct walk *w)
{
	__u64 rec[2];

	count(PROF_CNT_CFI_FP_FRAMES);
	v8_note(w);
	if (w->bp == 0 || bpf_probe_read_user(rec, sizeof(rec), (void *)w->bp) != 0)
		return 1;
	w->sp = w->bp + 16;
	w->bp = rec[0];
	w->pc = rec[1];
	w->exact = 0;
	return 0;
}

static long
walk_step(__u32 i, void *arg)
{
	__u32 zero = 0, n, lo, j, idx, first;
	struct walk_buf *buf = bpf_map_lookup_elem(&walk_bufs, &zero);
	struct unw_map_key key;
	struct unw_map_val *m;
	struct unw_row *r, row;
	struct walk *w;
	__u64 pc, lpc, vaddr, cfa = 0, ra, bp;

	if (buf == NULL)
		return 1;
	w = &buf->w;
	n = w->n;
	pc = w->pc;
	if (n >= PROF_MAX_USTACK || pc == 0 || pc >= USER_TOP)
		return 1;
	buf->pcs[n] = n > 0 && w->exact ? pc | PROF_PC_EXACT : pc;
	w->n = n + 1;
	/* A return address is just past the call: look up the call itself. */
	lpc = w->exact ? pc : pc - 1;

	key.prefixlen = 96;
	key.pid_be = bpf_htonl(w->pid);
	key.addr_be = bpf_cpu_to_be64(lpc);
	m = bpf_map_lookup_elem(&unw_maps, &key);
	if (m == NULL || m->gen != w->gen || m->nrows == 0) {
		int hr = hs_step(buf, w, lpc, n);

		if (hr >= 0)
			return hr;
		if (n == 0)
			w->flags |= PROF_UNW_LEAF_MISS;
		return walk_fp(w);
	}
	vaddr = lpc - m->bias;
	first = m->first;
	buf->lo = 0;
	buf->hi = m->nrows;
	if (vaddr > 0xffffffffULL)
		return walk_fp(w);
	for (j = 0; j < UNW_SEARCH_STEPS; j++) {
		__u32 l = buf->lo, h = buf->hi, mid;

		if (l >= h)
			break;
		mid = l + (h - l) / 2;
		idx = first + mid;
		r = bpf_map_lookup_elem(&unw_rows, &idx);
		if (r == NULL)
			return 1;
		if (r->pc <= (__u32)vaddr)
			buf->lo = mid + 1;
		else
			buf->hi = mid;
	}
	lo = buf->lo;
	if (lo == 0)
		return walk_fp(w);
	idx = first + lo - 1;
	r = bpf_map_lookup_elem(&unw_rows, &idx);
	if (r == NULL)
		return 1;
	row = *r;

	switch (row.kind) {
	case UNW_END:
		w->flags |= PROF_UNW_COMPLETE;
		return 1;
	case UNW_RSP:
		cfa = w->sp + row.cfa_off;
		break;
	case UNW_RBP:
		cfa = w->bp + row.cfa_off;
		break;
	case UNW_PLT:
		cfa = w->sp + row.cfa_off + ((pc & 15) >= (__u64)(__u8)row.rbp_off ? 8 : 0);
		break;
	case UNW_DEREF:
		if (bpf_probe_read_user(&cfa, sizeof(cfa), (void *)(w->bp - row.cfa_off)) != 0)
			goto fault;
		break;
	case UNW_SIGNAL: {
		/*
		 * rsp points at the ucontext the kernel pushed: its sigcontext
		 * holds rbp at +120, rsp at +160 and rip at +168, the state the
		 * signal interrupted (an exact pc, not a return address).
		 */
		__u64 sc[7];

		if (bpf_probe_read_user(sc, sizeof(sc), (void *)(w->sp + 120)) != 0)
			goto fault;
		w->bp = sc[0];
		w->sp = sc[5];
		w->pc = sc[6];
		w->exact = 1;
		return 0;
	}
	case UNW_NONE:
		return walk_fp(w);
	default:
		count(PROF_CNT_CFI_UNSUPPORTED);
		return 1;
	}
	/* Callers' frames lie above: a CFA at or below rsp is a broken walk. */
	if (cfa <= w->sp)
		return 1;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)) != 0)
		goto fault;
	if (row.rbp_off != 0) {
		if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)row.rbp_off * 8)) != 0)
			goto fault;
		w->bp = bp;
	}
	w->sp = cfa;
	w->pc = ra;
	w->exact = 0;
	return 0;
fault:
	count(PROF_CNT_CFI_READ_ERR);
	return 1;
}

/*
 * Walk the user stack of the current task with unwind tables into e->ustack,
 * from the registers ip, sp, bp if in_user (a sample that hit user mode),
 * else from those saved at kernel entry. Returns nonzero when the process
 * has no tables loaded (the caller walks by frame pointers as before).
 * *wake: user space should look at this sample now.
 */
static __always_inline int
walk_user(struct prof_sample *e, bool in_user, __u64 ip, __u64 sp, __u64 bp, __u32 tgid,
    bool *wake)
{
#ifdef __TARGET_ARCH_x86
	struct walk_buf *buf;
	struct unw_proc *up;
	struct walk *w;
	__u32 zero = 0, n;

	if (!unwind_tables || (buf = bpf_map_lookup_elem(&walk_bufs, &zero)) == NULL)
		return 1;
	/*
	 * A JVM is walked through its code cache even while none of its
	 * files has a table (not built yet on a busy host, or no room): its
	 * other frames by frame pointer, as bpf_get_stack would. Generation
	 * 0 is no process's, so no table is looked up then.
	 */
	hs_begin(buf, tgid);
	if ((up = bpf_map_lookup_elem(&unw_procs, &tgid)) == NULL)
		*wake = true;
	if ((up == NULL || (up->flags & UNW_PROC_NO_TABLES)) && !buf->hs_on)
		return 1;
	w = &buf->w;
	w->pid = tgid;
	w->gen = up != NULL && !(up->flags & UNW_PROC_NO_TABLES) ? up->gen : 0;
	w->n = 0;
	w->flags = 0;
	w->exact = 1;
	/* The user registers: the sample's when it hit user mode, else those saved at kernel entry. */
	if (in_user) {
		w->pc = ip;
		w->sp = sp;
		w->bp = bp;
	} else {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		if (regs == NULL)
			return 1;
		w->pc = BPF_CORE_READ(regs, ip);
		w->sp = BPF_CORE_READ(regs, sp);
		w->bp = BPF_CORE_READ(regs, bp);
	}
	count(PROF_CNT_CFI_STACKS);
	bpf_loop(PROF_MAX_USTACK, walk_step, NULL, 0);
	if (w->flags & PROF_UNW_COMPLETE)
		count(PROF_CNT_CFI_COMPLETE);
	n = w->n;
	if (n > PROF_MAX_USTACK)
		n = PROF_MAX_USTACK;
	if (bpf_probe_read_kernel(e->ustack, sizeof(e->ustack), buf->pcs) != 0)
		return 1;
	e->ustack_len = (__s32)(n * sizeof(__u64));
	e->unwind = PROF_UNW_CFI | w->flags;
	hs_end(e, buf);
	if (up != NULL && (w->flags & PROF_UNW_LEAF_MISS) &&
	    bpf_ktime_get_ns() - up->since_ns < UNW_EAGER_NS)
		*wake = true;
	return 0;
#else
	return 1;
#endif
}

/*
 * Python. For a process in py_procs (a CPython user space found, with the
 * offsets of its version), the sampled thread's interpreter frames are read
 * too: its thread state is the one in the main interpreter's list whose
 * thread_id is the thread's pthread_self() (its fs base), its frames the
 * chain from the current frame through previous. Each frame costs one read
 * of user memory; the walk runs in a bpf_loop callback like the native one.
 * Resolving code objects to names is user space's (collector/ebpf/runtimes/python.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct py_proc);
} py_procs SEC(".maps");

struct py_buf {
	struct prof_pyframe	frames[PROF_MAX_PYFRAMES];
	__u8			raw[PY_FRAME_READ];
	struct py_proc		pp;
	__u64			frame;
	__u32			n, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_buf);
} py_bufs SEC(".maps");

/* A pointer-sized field at off of the frame just read (off checked against the read). */
static __always_inline __u64
py_field(struct py_buf *b, __u32 off)
{
	__u64 v = 0;

	if (off > PY_FRAME_READ - 8)
		return 0;
	bpf_probe_read_kernel(&v, sizeof(v), b->raw + off);
	return v;
}

static long
py_step(__u32 i, void *arg)
{
	__u32 zero = 0, n, off;
	struct py_buf *b = bpf_map_lookup_elem(&py_bufs, &zero);
	__u64 code, instr, prev;
	__u8 owner = 0, entry = 0;

	if (b == NULL || b->frame == 0)
		return 1;
	if (b->frame >= USER_TOP ||
	    bpf_probe_read_user(b->raw, sizeof(b->raw), (void *)b->frame) != 0) {
		b->flags |= PROF_PY_TRUNCATED;
		count(PROF_CNT_PY_READ_ERR);
		return 1;
	}
	code = py_field(b, b->pp.fr_code) & ~7ULL;	/* 3.14: a tagged _PyStackRef */
	instr = py_field(b, b->pp.fr_instr);
	prev = py_field(b, b->pp.fr_previous);
	off = b->pp.fr_owner;
	if (off < PY_FRAME_READ)
		owner = b->raw[off];
	off = b->pp.fr_entry;
	if (off < PY_FRAME_READ)
		entry = b->raw[off];
	b->frame = prev;
	n = b->n;
	if (owner >= b->pp.owner_cstack) {
		/* The shim frame below a run of the evaluation loop: its first frame is an entry. */
		if (n > 0 && n <= PROF_MAX_PYFRAMES)
			b->frames[n - 1].code |= PROF_PY_ENTRY;
		return 0;
	}
	if (n >= PROF_MAX_PYFRAMES) {
		b->flags |= PROF_PY_TRUNCATED;
		return 1;
	}
	b->frames[n].code = entry ? code | PROF_PY_ENTRY : code;
	b->frames[n].instr = instr;
	b->frames[n].name = 0;
	if (code != 0 && code < USER_TOP)
		bpf_probe_read_user(&b->frames[n].name, sizeof(__u64),
		    (void *)(code + b->pp.co_qualname));
	b->n = n + 1;
	return 0;
}

static __always_inline void
walk_python(struct prof_sample *e, struct task_struct *task, __u32 tgid)
{
#ifdef __TARGET_ARCH_x86
	__u64 fsbase, interp = 0, ts = 0, tid = 0, frame = 0;
	struct py_proc *pp = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_buf *b;
	__u32 zero = 0, k;

	/* bpf_loop, like the table walker: off on kernels that refuse it. */
	if (!unwind_tables || pp == NULL || e->rt != PROF_RT_NONE ||
	    (b = bpf_map_lookup_elem(&py_bufs, &zero)) == NULL)
		return;
	b->pp = *pp;
	e->rt = PROF_RT_PY;
	e->py_n = 0;
	e->py_flags = PROF_PY_WALKED;
	count(PROF_CNT_PY_STACKS);
	fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(b->pp.runtime + b->pp.rt_interp)) != 0 ||
	    bpf_probe_read_user(&ts, sizeof(ts), (void *)(interp + b->pp.interp_threads)) != 0)
		goto fault;
	for (k = 0; k < PY_MAX_THREADS && ts != 0; k++) {
		if (bpf_probe_read_user(&tid, sizeof(tid), (void *)(ts + b->pp.ts_thread_id)) != 0)
			goto fault;
		if (tid == fsbase)
			break;
		if (bpf_probe_read_user(&ts, sizeof(ts), (void *)(ts + b->pp.ts_next)) != 0)
			goto fault;
	}
	if (ts == 0 || tid != fsbase) {
		e->py_flags |= PROF_PY_NO_THREAD;
		return;
	}
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(ts + b->pp.ts_frame)) != 0)
		goto fault;
	if (b->pp.cframe_frame != PY_OFF_NONE && frame != 0 &&
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + b->pp.cframe_frame)) != 0)
		goto fault;
	b->frame = frame;
	b->n = 0;
	b->flags = 0;
	bpf_loop(PROF_MAX_PYFRAMES + 16, py_step, NULL, 0);
	if (b->frame != 0)
		b->flags |= PROF_PY_TRUNCATED;
	k = b->n;
	if (k > PROF_MAX_PYFRAMES)
		k = PROF_MAX_PYFRAMES;
	e->py_n = k;
	e->py_flags |= b->flags;
	if (bpf_probe_read_kernel(e->py, sizeof(e->py), b->frames) != 0)
		e->py_n = 0;
	return;
fault:
	e->py_flags |= PROF_PY_TRUNCATED;
	count(PROF_CNT_PY_READ_ERR);
#endif
}

#include "golabels.bpf.h"
#include "ruby.bpf.h"
#include "php.bpf.h"

/*
 * Fill e (hdr.kind set by the caller) with the current task's identity and
 * stacks; e->wake: user space should see it at once. ctx: the program's
 * context, for bpf_get_stack; in_user, ip, sp, bp: see walk_user; kstack:
 * take the kernel stack (else the caller has put it in e already).
 */
static __always_inline void
fill_sample_k(void *ctx, struct prof_sample *e, bool in_user, __u64 ip, __u64 sp, __u64 bp,
    bool kstack)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct task_struct *task, *leader;
	bool wake = false;

	e->hdr.pid = tgid;
	e->hdr.tid = (__u32)id;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.time_ns = bpf_ktime_get_ns();
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	task = (struct task_struct *)bpf_get_current_task();
	/*
	 * The process's name even when it is exiting or /proc has no entry
	 * left by the time the sample is read: its leader's comm.
	 */
	leader = BPF_CORE_READ(task, group_leader);
	if (leader == NULL ||
	    bpf_core_read_str(e->leader_comm, sizeof(e->leader_comm), &leader->comm) < 0)
		e->leader_comm[0] = '\0';

	if (kstack) {
		e->kstack_len = 0;
		if (kernel_stacks) {
			e->kstack_len = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
			if (e->kstack_len < 0)
				count(PROF_CNT_ERR_KSTACK);
		}
	}
	e->ustack_len = 0;
	e->unwind = 0;
	e->rt = PROF_RT_NONE;
	e->waits = 0;
	v8_begin(tgid);
	/* Kernel threads have no user stack: not an error. */
	if (user_stacks && BPF_CORE_READ(task, mm) != NULL &&
	    walk_user(e, in_user, ip, sp, bp, tgid, &wake) != 0) {
		/* (A task work callback has no context: its task is the current one.) */
		if (ctx != NULL)
			e->ustack_len = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack),
			    BPF_F_USER_STACK);
		else
			e->ustack_len = bpf_get_task_stack(bpf_get_current_task_btf(), e->ustack,
			    sizeof(e->ustack), BPF_F_USER_STACK);
		if (e->ustack_len < 0)
			count(PROF_CNT_ERR_USTACK);
	}
	v8_end(e);
	if (user_stacks && BPF_CORE_READ(task, mm) != NULL) {
		walk_python(e, task, tgid);
		walk_golabels(e, task, tgid);
		walk_ruby(e, task, tgid);
		walk_php(e, tgid);
	}
	e->wake = wake;
}

static __always_inline void
fill_sample(void *ctx, struct prof_sample *e, bool in_user, __u64 ip, __u64 sp, __u64 bp)
{
	fill_sample_k(ctx, e, in_user, ip, sp, bp, true);
}

/*
 * Where do_sample builds its sample, sent with its used bytes only (a
 * record carries the one runtime part its process has, and only the frames
 * of it that were read).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_sample);
} sample_bufs SEC(".maps");

/* Send s through the ring buffer, its used bytes (prof_sample_size). 0, or nonzero: full. */
static __always_inline long
send_sample(struct prof_sample *s)
{
	__u64 size = prof_sample_size(s);

	/* The compiler knows the bound; the verifier must see it checked. */
	barrier_var(size);
	if (size > sizeof(*s))
		size = sizeof(*s);
	return bpf_ringbuf_output(&events, s, size, s->wake ? BPF_RB_FORCE_WAKEUP : wakeup_flag());
}

SEC("perf_event")
int
do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_sample *e;
	__u32 zero = 0;

	count(PROF_CNT_SAMPLES);
	if ((__u32)id == 0) {
		count(PROF_CNT_IDLE);
		return 0;
	}
	if ((e = bpf_map_lookup_elem(&sample_bufs, &zero)) == NULL)
		return 0;
	e->hdr.kind = PROF_EV_SAMPLE;
	e->offcpu_ns = 0;
	fill_sample(ctx, e, ctx->regs.ip < USER_TOP, ctx->regs.ip, ctx->regs.sp, ctx->regs.bp);
	if (send_sample(e) != 0)
		count(PROF_CNT_DROP_RINGBUF);
	return 0;
}

/*
 * Off-CPU time (with --ebpf-offcpu), from the sched_switch BTF tracepoint
 * (no kprobes or trampolines needed). When a user thread switches in, its
 * wait is the time since its last switch in less the CPU time it had since
 * (the scheduler's own se.sum_exec_runtime), on the run queue's clock the
 * scheduler has just read (offcpu_clock): nothing is kept or read at a
 * switch out, one task storage access and no clock read per switch. Its
 * stacks are taken only for a sample of the waits, drawn when the wait
 * ends, its length known: with probability p = min(1, length / T), a
 * sampled wait counting 1/p waits and max(length, T) nanoseconds
 * (Horvitz-Thompson: unbiased for every stack, label set and thread
 * whatever its waits' lengths). T is per CPU, from offcpu_min_ns (the
 * threshold: waits that long always keep their own stacks) up to
 * OFFCPU_T_CAP times that, raised when the CPU would draw more than
 * offcpu_walks waits a second and lowered again when it draws fewer; it is
 * read once for each draw, before it. (A host with many threads has most of
 * its off-CPU time in idle threads: a T without a cap would leave a busy
 * thread a draw a second or less.)
 *
 * The stacks are taken after the wait, in the thread's own context, where
 * its user stack and registers are still those of the wait (its kernel
 * stack is read at the switch in, bpf_get_task_stack: __schedule down to
 * where it blocked). With the kernel's task work for BPF (6.18:
 * on_switch_tw), a drawn wait schedules a callback its thread runs on its
 * way back to user mode, and nothing else runs on any switch, return to
 * user mode or system call. Without it (on_switch): at its return to user
 * mode with rseq registered (rseq_update: every glibc thread, after every
 * switch in), at its system call's return (sys_exit, attached by user
 * space only once a Go thread, which has no rseq, had a wait drawn:
 * offcpu_norseq; every system call of the host runs it then), or, should
 * neither come first, at its next switch out. By then its process's unwind
 * tables are loaded, even for a wait from its first second (a young
 * thread's first switches out ask user space for them when its process has
 * none: PROF_EV_TABLES), its Go goroutine and interpreter frames those of
 * the wait.
 *
 * The exact time of every wait is added up per thread (task storage) and
 * moved to offcpu_threads when one of its waits is sampled and when it
 * exits; user space scales a thread's sampled stacks of a generation to it
 * (see profile.h). The daemon's own process (self_tgid), the idle tasks,
 * kernel threads and exiting threads are left out: their waits are no one's
 * latency.
 */
const volatile bool offcpu = false;
const volatile __u64 offcpu_min_ns = 1000000;
const volatile __u64 offcpu_walks = 100;
/* A Go thread (no rseq) had a wait drawn: user space attaches sys_exit once it sees it. */
volatile __u64 offcpu_norseq = 0;
const volatile __u32 self_tgid = 0;
/* Written by user space (collector/ebpf/offcpu.c) before each drain. */
volatile __u32 offcpu_gen = 1;
/* Entries added to offcpu_aggs since the start: user space drains early past a share of its room. */
volatile __u64 offcpu_added = 0;

/* Where every switch out happens: the leaf of an off-CPU kernel stack (0: not found). */
extern const void __schedule __ksym __weak;

#define PF_EXITING_FLAG		0x00000004	/* include/linux/sched.h PF_EXITING */
#define PF_KTHREAD_FLAG		0x00200000	/* PF_KTHREAD: a kernel thread, maybe with a borrowed mm */
#define EEXIST_ERRNO		17		/* include/uapi/asm-generic/errno-base.h EEXIST */
#define OFFCPU_WIN_NS		100000000ULL	/* T follows the walks of each tenth of a second */
#define OFFCPU_T_MAX		4000000000ULL	/* T at most (4 s: the draw is a 32-bit remainder) */
#define OFFCPU_T_GROW		16		/* T grows at most this many times a window */
#define OFFCPU_T_CAP		50		/* ... up to this many times offcpu_min_ns */
#define OFFCPU_NOTICE_NS	200000000ULL	/* between two PROF_EV_TABLES of a thread */
#define OFFCPU_NOTICES		3		/* PROF_EV_TABLES a thread sends at most */
#define OFFCPU_ONE_T		(1U << 20)	/* T in offcpu_task.next's unit */
#define OFFCPU_TABLES_OK	0xff		/* offcpu_task.notices: its process has tables (or no more asking) */
#define OFFCPU_YOUNG		16		/* a thread's first switches out, which may ask for tables */
#define OFFCPU_CARRY_MAX	10000000LL	/* a thread's carry, at most (10 ms) */
#define OFFCPU_STALE_NS		1000000000ULL	/* a task work slot busy this long is taken back */

/* task_struct's rseq area (registered by glibc 2.35 and later for every thread), where it has one. */
struct task_struct___rseq {
	void	*rseq;
} __attribute__((preserve_access_index));

/*
 * A thread's last switch in and its exact time not yet in offcpu_threads.
 * Freed with the task.
 */
struct offcpu_task {
	__u64	in_clock;	/* its last switch in, on the switch clock (offcpu_clock); 0: none seen */
	__u64	in_sum;		/* its CPU time (se.sum_exec_runtime) then */
	__s64	carry;		/* a wait that came out below nothing, for the next (offcpu_in) */
	__u64	ns;		/* every wait's time since its last move to offcpu_threads */
	__u64	waits;
	__u64	notice_ns;	/* its last PROF_EV_TABLES at a switch out (switch clock) */
	__u64	wake_ns;	/* ... after a walk that met code without a table (bpf_ktime_get_ns) */
	__u64	notice_xvm;	/* its process's executable pages (mm->exec_vm) at that notice */
	__u32	notices;	/* PROF_EV_TABLES sent, or OFFCPU_TABLES_OK */
	__u32	next;		/* off-CPU time to its next draw point, in T/OFFCPU_ONE_T; 0: none yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* Each CPU's T: the window's start, the waits drawn in it. */
struct offcpu_cpu {
	__u64	win;
	__u64	t;
	__u64	walks;
	__u64	rng;		/* xorshift64 state: cheaper than bpf_get_prandom_u32 on every wait */
	__u32	slot;		/* its next task work slot (offcpu_tws) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_cpu);
} offcpu_cpus SEC(".maps");

/*
 * The wait drawn at this CPU's last switch in whose stacks are still to be
 * taken (tid 0: none): the thread runs on this CPU until it switches out,
 * so one per CPU. s holds its kernel stack, value and count.
 */
struct offcpu_pend {
	__u32	tid;
	__u32	pad;
	__u64	delta;		/* the wait's own length */
	struct prof_sample s;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_pend);
} offcpu_pends SEC(".maps");

/*
 * With the kernel's task work (bpf_task_work_schedule_resume, 6.18), a
 * drawn wait's stacks are taken by a callback the thread runs on its way
 * back to user mode: PROF_OFFCPU_TW_SLOTS slots per CPU (an array: task
 * work needs one), each busy from its draw until its callback (or
 * OFFCPU_STALE_NS, should the thread never return to user mode).
 */
struct offcpu_tw {
	struct offcpu_pend	p;
	__u64			drawn;		/* its draw, on the switch clock */
	struct bpf_task_work	tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);			/* resized to the possible CPUs by user space */
	__type(key, __u32);
	__type(value, struct offcpu_tw);
} offcpu_tws SEC(".maps");

extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
    void *map__map, int (*callback)(struct bpf_map *map, void *key, void *value),
    void *aux__prog) __ksym __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* preallocated: small entries, cheap to delete */
	__uint(max_entries, 8192);		/* resized by user space before load */
	__type(key, struct prof_offcpu_key);
	__type(value, struct prof_offcpu_val);
} offcpu_aggs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);		/* resized by user space before load */
	__type(key, struct prof_offcpu_skey);
	__type(value, struct prof_sample);
} offcpu_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* preallocated: small entries, cheap to delete */
	__uint(max_entries, 8192);		/* resized by user space before load */
	__type(key, struct prof_offcpu_tkey);
	__type(value, struct prof_offcpu_tval);
} offcpu_threads SEC(".maps");

static __always_inline void
notify(__u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_notice *n;

	n = bpf_ringbuf_reserve(&events, sizeof(*n), 0);
	if (!n) {
		count(PROF_CNT_DROP_EVENT);
		return;
	}
	n->hdr.kind = kind;
	n->hdr.pid = id >> 32;
	n->hdr.tid = (__u32)id;
	n->hdr.cpu = bpf_get_smp_processor_id();
	n->hdr.time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(n->comm, sizeof(n->comm));
	n->exec = (__u32)bpf_get_current_task_btf()->self_exec_id;
	n->pad = 0;
	/*
	 * An exec wakes the reader at once: it reads the new mappings while
	 * the process still exists, however short its life; so does a
	 * process that waits before it has tables, so that they are loaded
	 * before its wait ends.
	 */
	bpf_ringbuf_submit(n, kind == PROF_EV_EXEC || kind == PROF_EV_TABLES ?
	    BPF_RB_FORCE_WAKEUP : wakeup_flag());
}

static __always_inline __u64
mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/*
 * A hash of what tells s's stacks apart: the frames and the runtime part
 * (interpreter and Java frames, JavaScript functions, Go labels), not the
 * identity.
 */
static __always_inline __u64
stack_hash(const struct prof_sample *s)
{
	__u32 nk = s->kstack_len > 0 ? (__u32)s->kstack_len / 8 : 0;
	__u32 nu = s->ustack_len > 0 ? (__u32)s->ustack_len / 8 : 0;
	__u32 n, i, end;
	__u64 h, word;

	h = mix(0x6a09e667f3bcc908ULL, ((__u64)(__u32)s->kstack_len << 32) | (__u32)s->ustack_len);
	h = mix(h, ((__u64)s->unwind << 32) | s->rt);
	for (i = 0; i < PROF_MAX_STACK; i++) {
		if (i >= nk)
			break;
		h = mix(h, s->kstack[i]);
	}
	for (i = 0; i < PROF_MAX_USTACK; i++) {
		if (i >= nu)
			break;
		h = mix(h, s->ustack[i]);
	}
	switch (s->rt) {
	case PROF_RT_PY:
		n = s->py_n;
		h = mix(h, ((__u64)n << 32) | s->py_flags);
		for (i = 0; i < PROF_MAX_PYFRAMES; i++) {
			if (i >= n)
				break;
			h = mix(h, s->py[i].code);
			h = mix(h, s->py[i].instr);
			h = mix(h, s->py[i].name);
		}
		break;
	case PROF_RT_GO:
		/* The pairs, then their bytes: those past the last pair's are left from before. */
		n = s->go_n;
		h = mix(h, ((__u64)n << 32) | s->go_flags);
		end = 0;
		for (i = 0; i < PROF_MAX_GOLABELS; i++) {
			if (i >= n)
				break;
			h = mix(h, ((__u64)s->go[i].key << 48) | ((__u64)s->go[i].klen << 32) |
			    ((__u64)s->go[i].value << 16) | s->go[i].vlen);
			if ((__u32)s->go[i].value + s->go[i].vlen > end)
				end = (__u32)s->go[i].value + s->go[i].vlen;
		}
		for (i = 0; i < PROF_GO_STR / 8; i++) {
			if (i * 8 >= end)
				break;
			__builtin_memcpy(&word, &s->go_str[i * 8], 8);
			if (end - i * 8 < 8)
				word &= (1ULL << ((end - i * 8) * 8)) - 1;
			h = mix(h, word);
		}
		break;
	case PROF_RT_JAVA:
		n = s->j_n;
		h = mix(h, n);
		for (i = 0; i < PROF_MAX_JFRAMES; i++) {
			if (i >= n)
				break;
			h = mix(h, ((__u64)s->j[i].idx << 32) | s->j[i].kind);
			h = mix(h, s->j[i].method);
			h = mix(h, s->j[i].bcp);
		}
		break;
	case PROF_RT_V8:
		n = s->v8_n;
		h = mix(h, ((__u64)n << 32) | s->v8_flags);
		for (i = 0; i < PROF_MAX_V8FRAMES; i++) {
			if (i >= n)
				break;
			h = mix(h, s->v8[i].fn_idx);
		}
		break;
	}
	return h;
}

/* Move the current thread's exact time (task storage o) to offcpu_threads. 0, or nonzero: full. */
static __always_inline long
offcpu_flush(struct offcpu_task *o, const struct prof_sample *s, __u32 pid, __u32 tid, __u32 gen)
{
	struct prof_offcpu_tkey key = {};
	struct prof_offcpu_tval val, *v;

	if (o->ns == 0 && o->waits == 0)
		return 0;
	key.pid = pid;
	key.tid = tid;
	key.gen = gen;
	/* One writer: the thread itself (user space deletes only older generations' entries). */
	if ((v = bpf_map_lookup_elem(&offcpu_threads, &key)) != NULL) {
		__sync_fetch_and_add(&v->ns, o->ns);
		__sync_fetch_and_add(&v->waits, o->waits);
	} else {
		val.ns = o->ns;
		val.waits = o->waits;
		if (s != NULL) {
			__builtin_memcpy(val.comm, s->comm, sizeof(val.comm));
			__builtin_memcpy(val.leader_comm, s->leader_comm, sizeof(val.leader_comm));
		} else {
			bpf_get_current_comm(val.comm, sizeof(val.comm));
			__builtin_memset(val.leader_comm, 0, sizeof(val.leader_comm));
		}
		if (bpf_map_update_elem(&offcpu_threads, &key, &val, BPF_NOEXIST) != 0) {
			count(PROF_CNT_OFFCPU_THREADS_FULL);
			return 1;
		}
	}
	o->ns = 0;
	o->waits = 0;
	return 0;
}

/*
 * Add the drawn wait p (its stacks just taken, in the thread's own
 * context) to offcpu_aggs, and the thread's exact time to offcpu_threads.
 */
static __always_inline void
offcpu_add(struct offcpu_pend *p)
{
	struct prof_offcpu_key key = {};
	struct prof_offcpu_skey skey = {};
	struct prof_offcpu_val val, *v;
	struct offcpu_task *o;
	long rc;

	/* (A process user space has not seen was announced at its switch out: offcpu_tables.) */
	o = bpf_task_storage_get(&offcpu_tasks, bpf_get_current_task_btf(), NULL, 0);
	/*
	 * The walk met code no table of the process covers (its tables not
	 * loaded yet, or loaded before a library was mapped): user space is
	 * asked to look at the process again now, as a CPU sample's wake
	 * does (a wait's stacks go through the maps, not the ring buffer).
	 */
	if (p->s.wake) {
		__u64 t = bpf_ktime_get_ns();

		if (o == NULL || t - o->wake_ns >= OFFCPU_NOTICE_NS) {
			notify(PROF_EV_TABLES);
			if (o != NULL)
				o->wake_ns = t;
		}
	}
	key.stack = stack_hash(&p->s);
	key.pid = p->s.hdr.pid;
	key.tid = p->s.hdr.tid;
	key.gen = offcpu_gen;
	key.exec = (__u32)bpf_get_current_task_btf()->self_exec_id;
	/* The thread's entry has one writer: the thread itself. */
	if ((v = bpf_map_lookup_elem(&offcpu_aggs, &key)) != NULL) {
		__sync_fetch_and_add(&v->waits, p->s.waits);
		__sync_fetch_and_add(&v->ns, p->s.offcpu_ns);
		goto added;
	}
	val.waits = p->s.waits;
	val.ns = p->s.offcpu_ns;
	__builtin_memcpy(val.comm, p->s.comm, sizeof(val.comm));
	__builtin_memcpy(val.leader_comm, p->s.leader_comm, sizeof(val.leader_comm));
	if (bpf_map_update_elem(&offcpu_aggs, &key, &val, BPF_NOEXIST) != 0)
		goto spill;
	/* The stack, unless a thread stored it already in this generation. */
	skey.stack = key.stack;
	skey.gen = key.gen;
	rc = bpf_map_update_elem(&offcpu_stacks, &skey, &p->s, BPF_NOEXIST);
	if (rc != 0 && rc != -EEXIST_ERRNO) {
		bpf_map_delete_elem(&offcpu_aggs, &key);
		goto spill;
	}
	__sync_fetch_and_add(&offcpu_added, 1);
added:
	count(PROF_CNT_OFFCPU_SENT);
	if (o != NULL)
		offcpu_flush(o, &p->s, key.pid, key.tid, key.gen);
	return;
spill:
	/*
	 * The maps are full: the wait goes by itself, with its own value,
	 * and leaves the thread's exact time (not scaled by user space).
	 * Should the ring buffer be full too, its time stays in the thread's
	 * total, for its other stacks.
	 */
	if (send_sample(&p->s) != 0) {
		count(PROF_CNT_DROP_RINGBUF);
		return;
	}
	count(PROF_CNT_OFFCPU_SPILL);
	if (o != NULL) {
		o->ns = o->ns > p->delta ? o->ns - p->delta : 0;
		o->waits = o->waits > 0 ? o->waits - 1 : 0;
	}
}

/* Take the drawn wait p's user stacks: the current task is its thread. */
static __always_inline void
offcpu_walk(void *ctx, struct offcpu_pend *p)
{
	__u32 waits = p->s.waits;

	p->tid = 0;
	fill_sample_k(ctx, &p->s, false, 0, 0, 0, false);
	p->s.waits = waits;	/* (fill_sample_k clears it) */
	offcpu_add(p);
}

/*
 * The task work of a drawn wait: its thread returns to user mode (or exits:
 * no user stack then), its registers those of the wait.
 */
static int
offcpu_tw_walk(struct bpf_map *map, void *key, void *value)
{
	struct offcpu_tw *v = value;

	/*
	 * A task work may be preempted, and the walk's buffers are per CPU
	 * (another thread's walk on this CPU would write over them).
	 */
	bpf_preempt_disable();
	if (v->p.tid != 0 && v->p.tid == (__u32)bpf_get_current_pid_tgid())
		offcpu_walk(NULL, &v->p);
	bpf_preempt_enable();
	return 0;
}

/* The CPU's xorshift64 (cheaper than bpf_get_prandom_u32 on every wait). */
static __always_inline __u64
offcpu_rand(struct offcpu_cpu *c)
{
	__u64 x = c->rng;

	if (x == 0)
		x = bpf_get_prandom_u32() | ((__u64)bpf_get_prandom_u32() << 32) | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return x;
}

/* A gap between two draw points: uniform in [T/2, 3T/2), in T/OFFCPU_ONE_T. */
static __always_inline __u32
offcpu_gap(struct offcpu_cpu *c)
{
	return OFFCPU_ONE_T / 2 + (__u32)((offcpu_rand(c) >> 16) % OFFCPU_ONE_T);
}

/*
 * next switches in: its wait ends. Its time goes to its exact total; drawn
 * (see above), its kernel stack is read now and the rest left for its own
 * context (offcpu_pends).
 */
static __always_inline void
offcpu_in(struct task_struct *next, __u64 now, bool tw)
{
	struct offcpu_task *o;
	struct offcpu_pend *p;
	struct offcpu_tw *v = NULL;
	struct offcpu_cpu *c;
	__u64 delta, t, w, grow, step, k, sum;
	__s64 diff;
	__u32 zero = 0, r, tgid, cpu;
	long len;

	o = bpf_task_storage_get(&offcpu_tasks, next, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (o == NULL) {
		count(PROF_CNT_OFFCPU_FULL);
		return;
	}
	/*
	 * Its wait: the time since its last switch in less the CPU time it
	 * had since (the kernel's own account of it: nothing is kept at a
	 * switch out). Its first switch in seen only starts the count.
	 */
	sum = next->se.sum_exec_runtime;
	/*
	 * Two CPUs' run-queue clocks may differ a little: a wait that comes
	 * out below nothing is carried (o->carry) into the thread's next
	 * one, so that its waits add up to its time off CPU, not to that
	 * plus every difference in its favour.
	 */
	if (o->in_clock == 0) {
		o->in_clock = now;
		o->in_sum = sum;
		return;
	}
	diff = (__s64)(now - o->in_clock) - (__s64)(sum - o->in_sum) + o->carry;
	o->in_clock = now;
	o->in_sum = sum;
	if (diff <= 0) {
		/* (Bounded: a clock that jumped back is not carried for ever.) */
		o->carry = diff > -OFFCPU_CARRY_MAX ? diff : -OFFCPU_CARRY_MAX;
		return;
	}
	o->carry = 0;
	delta = (__u64)diff;
	o->ns += delta;
	o->waits++;
	if ((c = bpf_map_lookup_elem(&offcpu_cpus, &zero)) == NULL)
		return;
	/* A new window: T follows the last one's draws. */
	if (now - c->win >= OFFCPU_WIN_NS) {
		w = offcpu_walks / (1000000000ULL / OFFCPU_WIN_NS);
		if (w < 2)
			w = 2;
		/*
		 * The draws of a window go as 1/T (but for the waits longer
		 * than T): T is scaled by the window's draws over the budget
		 * (16 times at most, halved at most), left alone between
		 * half the budget and all of it.
		 */
		t = c->t < offcpu_min_ns ? offcpu_min_ns : c->t;
		if (c->walks > w) {
			grow = c->walks < w * OFFCPU_T_GROW ? c->walks : w * OFFCPU_T_GROW;
			t = t * grow / w;
		} else if (c->walks < w / 2) {
			t = t * (c->walks > w / 4 ? c->walks : w / 4) / (w / 2);
		}
		if (t > offcpu_min_ns * OFFCPU_T_CAP)
			t = offcpu_min_ns * OFFCPU_T_CAP;
		if (t < offcpu_min_ns)
			t = offcpu_min_ns;
		if (t > OFFCPU_T_MAX)
			t = OFFCPU_T_MAX;
		c->t = t;
		c->win = now;
		c->walks = 0;
	}
	t = c->t < offcpu_min_ns ? offcpu_min_ns : c->t;
	if (t > OFFCPU_T_MAX)
		t = OFFCPU_T_MAX;
	/*
	 * Draw points lie along each thread's off-CPU time, T apart on
	 * average (gaps uniform in [T/2, 3T/2), in units of the T of the
	 * moment, from a random start): a wait holds k of them, k / T per
	 * ns on average whatever came before, and counts k T ns and k T /
	 * length waits (Hansen-Hurwitz: unbiased for every wait). A thread's
	 * draws are spread over its time, so the split between its stacks
	 * is much steadier than with independent draws, and the jitter
	 * keeps a thread's rhythm from lining up with them. A wait of 3T/2
	 * or more always holds one: it is drawn, counting its length and 1.
	 */
	if (delta >= t + t / 2) {
		k = 0;
		o->next = offcpu_gap(c);
	} else {
		step = delta * OFFCPU_ONE_T / t;
		r = o->next != 0 ? o->next : (__u32)(offcpu_rand(c) % OFFCPU_ONE_T) + 1;
		k = 0;
		if (step >= r) {
			/* (Gaps are T/2 at least and the wait below 3T/2: 3 points at most.) */
			step -= r;
			k = 1;
			r = offcpu_gap(c);
			if (step >= r) {
				step -= r;
				k = 2;
				r = offcpu_gap(c);
				if (step >= r) {
					step -= r;
					k = 3;
					r = offcpu_gap(c);
				}
			}
		}
		o->next = step < r ? r - (__u32)step : 1;
		if (k == 0) {
			count(PROF_CNT_OFFCPU_SHORT);
			return;
		}
	}
	if (tw) {
		/* A free task work slot of this CPU's (not one whose draw still has its stacks to take). */
		cpu = bpf_get_smp_processor_id() * PROF_OFFCPU_TW_SLOTS;
		for (r = 0; r < PROF_OFFCPU_TW_SLOTS; r++) {
			__u32 slot = cpu + (c->slot++ % PROF_OFFCPU_TW_SLOTS);

			v = bpf_map_lookup_elem(&offcpu_tws, &slot);
			if (v == NULL || v->p.tid == 0 || now - v->drawn >= OFFCPU_STALE_NS)
				break;
			v = NULL;
		}
		if (v == NULL) {
			count(PROF_CNT_OFFCPU_BUSY);
			return;
		}
		p = &v->p;
		v->drawn = now;
	} else if ((p = bpf_map_lookup_elem(&offcpu_pends, &zero)) == NULL) {
		return;
	}
	c->walks++;
	/*
	 * Its stacks are taken where it returns to user mode, with rseq; a Go
	 * thread (no rseq) needs sys_exit for its goroutine's labels, which
	 * user space attaches once one is drawn; others without rseq are
	 * taken at their next switch out.
	 */
	tgid = next->tgid;
	if (!tw && (!bpf_core_field_exists(((struct task_struct___rseq *)next)->rseq) ||
	    BPF_CORE_READ((struct task_struct___rseq *)next, rseq) == NULL) &&
	    offcpu_norseq == 0 && bpf_map_lookup_elem(&go_procs, &tgid) != NULL)
		__sync_fetch_and_add(&offcpu_norseq, 1);
	p->tid = next->pid;
	p->delta = delta;
	p->s.hdr.kind = PROF_EV_OFFCPU;
	if (k == 0) {
		p->s.offcpu_ns = delta;
		p->s.waits = PROF_OFFCPU_ONE;
	} else {
		p->s.offcpu_ns = k * t;
		w = delta > 0 ? k * t * PROF_OFFCPU_ONE / delta : 0xffffffffULL;
		p->s.waits = w < 0xffffffffULL ? (__u32)w : 0xffffffffU;
	}
	p->s.kstack_len = 0;
	if (kernel_stacks) {
		/*
		 * The kernel's walk of a task that is not running leaves out
		 * the scheduler's functions (.sched.text): __schedule, where
		 * every switch out happens, is put back as the leaf.
		 */
		p->s.kstack[0] = (__u64)&__schedule;
		len = bpf_get_task_stack(next, &p->s.kstack[1], sizeof(p->s.kstack) - 8, 0);
		if (len < 0)
			count(PROF_CNT_ERR_KSTACK);
		else if (p->s.kstack[0] != 0)
			p->s.kstack_len = len + 8;
		else if (len > 0)
			p->s.kstack_len = bpf_get_task_stack(next, p->s.kstack,
			    sizeof(p->s.kstack), 0);
	}
	/* The rest on its way back to user mode (offcpu_tw_walk). */
	if (tw && v != NULL &&
	    bpf_task_work_schedule_resume_impl(next, &v->tw, &offcpu_tws, offcpu_tw_walk, NULL) != 0) {
		p->tid = 0;
		count(PROF_CNT_OFFCPU_BUSY);
	}
}

/*
 * prev blocks before its process has unwind tables, or with tables loaded
 * in the last UNW_EAGER_NS (a new process's, read maybe before its
 * libraries were mapped): user space is asked to load them (a few times,
 * OFFCPU_NOTICE_NS apart; it reads the process's maps again), so that they
 * are there, whole, when its wait ends.
 */
static __always_inline void
offcpu_tables(struct offcpu_task *o, struct task_struct *t, __u64 now)
{
	__u32 tgid = t->tgid;
	struct unw_proc *up;
	__u64 xvm;

	if (!unwind_tables || o->notices >= OFFCPU_NOTICES ||
	    ((up = bpf_map_lookup_elem(&unw_procs, &tgid)) != NULL &&
	    bpf_ktime_get_ns() - up->since_ns >= UNW_EAGER_NS)) {
		o->notices = OFFCPU_TABLES_OK;
		return;
	}
	/*
	 * Not again within OFFCPU_NOTICE_NS, unless code was mapped since the
	 * last ask: a first switch out in the dynamic linker asked before
	 * libc was mapped, and a wait in libc that follows would be walked
	 * without its table.
	 */
	xvm = t->mm != NULL ? t->mm->exec_vm : 0;
	if (o->notices > 0 && now - o->notice_ns < OFFCPU_NOTICE_NS && xvm == o->notice_xvm)
		return;
	notify(PROF_EV_TABLES);
	o->notices++;
	o->notice_ns = now;
	o->notice_xvm = xvm;
}

/*
 * The clock of the switches: the run queue's, which the scheduler has just
 * read (on a virtual machine a clock read costs as much as the rest of the
 * program), else bpf_ktime_get_ns. 0: none this time (the switch is left
 * out).
 */
static __always_inline __u64
offcpu_clock(struct task_struct *prev)
{
	struct cfs_rq *cr;
	struct rq *rq;

	if (!bpf_core_field_exists(((struct cfs_rq *)0)->rq))
		return bpf_ktime_get_ns();
	/* prev runs on this CPU: its fair-class queue (every task has one) is this run queue's. */
	if ((cr = prev->se.cfs_rq) == NULL || (rq = cr->rq) == NULL)
		return 0;
	return rq->clock;
}

/*
 * A switch from prev to next: next's wait ends (offcpu_in). Only a young
 * thread's switch out does anything: one of its first OFFCPU_YOUNG (a new
 * process) may ask for its process's tables. Without task work, a wait of
 * prev's drawn at its switch in whose stacks no hook took yet is taken now
 * (prev is the current task).
 */
static __always_inline void
offcpu_switch(void *ctx, struct task_struct *prev, struct task_struct *next, bool tw)
{
	struct offcpu_task *o;
	struct offcpu_pend *p;
	__u32 tid, zero = 0;
	__u64 now;

	if (!offcpu || (now = offcpu_clock(prev)) == 0)
		return;
	tid = prev->pid;
	if (!tw && (p = bpf_map_lookup_elem(&offcpu_pends, &zero)) != NULL && p->tid == tid &&
	    tid != 0) {
		if (prev->mm != NULL && !(prev->flags & PF_EXITING_FLAG))
			offcpu_walk(ctx, p);
		else
			p->tid = 0;
	}
	if (tid != 0 && prev->nvcsw + prev->nivcsw < OFFCPU_YOUNG && prev->mm != NULL &&
	    prev->tgid != self_tgid && !(prev->flags & (PF_EXITING_FLAG | PF_KTHREAD_FLAG))) {
		o = bpf_task_storage_get(&offcpu_tasks, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (o != NULL && o->notices != OFFCPU_TABLES_OK)
			offcpu_tables(o, prev, now);
	}
	/* (Kernel threads, the idle task and the daemon's own threads have no entry: not looked for.) */
	if (next->pid != 0 && next->mm != NULL && next->tgid != self_tgid &&
	    !(next->flags & (PF_EXITING_FLAG | PF_KTHREAD_FLAG)))
		offcpu_in(next, now, tw);
}

/* The kernel has no task work for BPF: stacks at rseq_update, sys_exit or the next switch out. */
SEC("tp_btf/sched_switch")
int
BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	offcpu_switch(ctx, prev, next, false);
	return 0;
}

/* With task work (6.18): stacks on the way back to user mode, nothing else on the way. */
SEC("tp_btf/sched_switch")
int
BPF_PROG(on_switch_tw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	offcpu_switch(ctx, prev, next, true);
	return 0;
}

/* The current thread's drawn wait, if it has one, while its stacks are the wait's. */
static __always_inline void
offcpu_hook(void *ctx)
{
	struct offcpu_pend *p;
	__u32 zero = 0;

	if ((p = bpf_map_lookup_elem(&offcpu_pends, &zero)) == NULL || p->tid == 0 ||
	    p->tid != (__u32)bpf_get_current_pid_tgid())
		return;
	offcpu_walk(ctx, p);
}

/* A system call returns: a wait in it ended (its user registers are where it was made). */
SEC("tp_btf/sys_exit")
int
BPF_PROG(offcpu_sys_exit, struct pt_regs *regs, long ret)
{
	if (offcpu)
		offcpu_hook(ctx);
	return 0;
}

/* A thread with rseq registered returns to user mode after a switch in (preempted, a fault). */
SEC("tp_btf/rseq_update")
int
BPF_PROG(offcpu_rseq, struct task_struct *t)
{
	if (offcpu)
		offcpu_hook(ctx);
	return 0;
}

/* The exiting thread's exact time since its last sampled wait goes to offcpu_threads. */
static __always_inline void
offcpu_exit(__u32 pid, __u32 tid)
{
	struct offcpu_task *o;
	struct offcpu_pend *p;
	__u32 zero = 0;

	if ((p = bpf_map_lookup_elem(&offcpu_pends, &zero)) != NULL && p->tid == tid)
		p->tid = 0;
	o = bpf_task_storage_get(&offcpu_tasks, bpf_get_current_task_btf(), NULL, 0);
	if (o != NULL)
		offcpu_flush(o, NULL, pid, tid, offcpu_gen);
}

/* Memory growth by stack (--ebpf-memory): page faults and mmap/brk/munmap. */
#include "memgrow.bpf.h"

SEC("raw_tp/sched_process_exec")
int
on_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	/* The old image's tables (and interpreter) no longer apply. */
	bpf_map_delete_elem(&unw_procs, &tgid);
	bpf_map_delete_elem(&py_procs, &tgid);
	bpf_map_delete_elem(&go_procs, &tgid);
	bpf_map_delete_elem(&rb_procs, &tgid);
	bpf_map_delete_elem(&php_procs, &tgid);
	bpf_map_delete_elem(&hs_procs, &tgid);
	bpf_map_delete_elem(&v8_procs, &tgid);
	/* A new image: its first waits ask for its tables again. */
	if (offcpu) {
		struct offcpu_task *o = bpf_task_storage_get(&offcpu_tasks,
		    bpf_get_current_task_btf(), NULL, 0);

		if (o != NULL)
			o->notices = 0;
	}
	notify(PROF_EV_EXEC);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int
on_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;

	/* Every thread's exact off-CPU time not yet moved out. */
	if (offcpu)
		offcpu_exit(id >> 32, tid);

	/* Only the thread group leader's exit ends the process's mappings. */
	if ((id >> 32) == (__u32)id) {
		__u32 tgid = id >> 32;

		bpf_map_delete_elem(&unw_procs, &tgid);
		bpf_map_delete_elem(&py_procs, &tgid);
		bpf_map_delete_elem(&go_procs, &tgid);
		bpf_map_delete_elem(&rb_procs, &tgid);
		bpf_map_delete_elem(&php_procs, &tgid);
		bpf_map_delete_elem(&hs_procs, &tgid);
		bpf_map_delete_elem(&v8_procs, &tgid);
		notify(PROF_EV_EXIT);
	}
	return 0;
}

/* Allocations by stack (--ebpf-malloc): uprobes on the C library's allocator. */
#include "malloc.bpf.h"
