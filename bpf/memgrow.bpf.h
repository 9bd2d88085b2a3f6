/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memgrow.bpf.h: memory growth by stack (--ebpf-memory), included by
 * profile.bpf.c after fill_sample. Two sources, each sent through the ring
 * buffer as a struct prof_sample walked exactly as a CPU sample is (unwind
 * tables, frame pointers, Python/Ruby/Java/V8 frames, Go labels), its
 * offcpu_ns the bytes and waits the events it stands for:
 *
 *   memgrow_fault  a software perf event, PERF_COUNT_SW_PAGE_FAULTS of
 *                  user mode only, one per online CPU, overflowing every
 *                  sample_period faults (user space picks it): the code
 *                  that first touched a page of anonymous memory, so that
 *                  the kernel had to give it one. Faults in a file mapping
 *                  (code, mapped files) are left out here, after the
 *                  sampling, so the rest still stand for sample_period
 *                  faults each. A fault stands for one base page.
 *   memgrow_sys    the mmap, brk and munmap system calls (x86-64; the raw
 *                  sys_enter tracepoint: no tracefs needed, and some hosts
 *                  refuse fentry), of private anonymous, accessible
 *                  memory: the code that
 *                  asked the kernel for address space to grow into. A call
 *                  of memgrow_rate bytes or more is sent by itself; a
 *                  smaller one with probability size / memgrow_rate, then
 *                  standing for memgrow_rate bytes and rate / size calls
 *                  (unbiased, as Go's heap sampling is), so that a program
 *                  that maps and unmaps small blocks all the time costs
 *                  little.
 *
 * The daemon's own process is left out (self_tgid): its memory moves with
 * the samples it reads.
 */

const volatile bool memgrow = false;
const volatile __u64 memgrow_page = 4096;
const volatile __u64 memgrow_rate = 4 << 20;
/* System call samples sent per CPU per second at most (the rest counted, not sent). */
const volatile __u64 memgrow_calls_max = 20;

struct mg_limit {
	__u64	since;		/* ns: the second counted */
	__u64	n;		/* samples sent in it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mg_limit);
} memgrow_limits SEC(".maps");

#define MG_MAP_ANONYMOUS	0x20	/* include/uapi/asm-generic/mman-common.h */
#define MG_MAP_TYPE		0x0f	/* include/uapi/linux/mman.h: MAP_SHARED, MAP_PRIVATE, ... */
#define MG_MAP_PRIVATE		0x02
#define MG_PROT_RW		0x3	/* PROT_READ | PROT_WRITE */
#define MG_VM_RW		0x3	/* VM_READ | VM_WRITE */
#define MG_BIG			(64ULL << 20)	/* calls never held back by memgrow_calls_max */

struct mg_vma {
	bool	file;		/* the address is in a file mapping */
	bool	rw;		/* readable or writable (not a PROT_NONE reservation) */
};

static long
mg_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct mg_vma *v = data;

	v->file = BPF_CORE_READ(vma, vm_file) != NULL;
	v->rw = (BPF_CORE_READ(vma, vm_flags) & MG_VM_RW) != 0;
	return 0;
}

/* What maps addr in the current process; false when that cannot be said now. */
static __always_inline bool
mg_vma_of(__u64 addr, struct mg_vma *v)
{
	v->file = false;
	v->rw = true;
	return bpf_find_vma(bpf_get_current_task_btf(), addr, mg_vma_cb, v, 0) == 0;
}

/* Whether the current task is one whose memory is recorded. */
static __always_inline bool
mg_wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	return memgrow && (__u32)id != 0 && (id >> 32) != self_tgid;
}

SEC("perf_event")
int
memgrow_fault(struct bpf_perf_event_data *ctx)
{
	struct prof_sample *e;
	struct mg_vma v;
	__u32 zero = 0;
	__u64 period = ctx->sample_period;

	if (!mg_wanted() || ctx->regs.ip >= USER_TOP)
		return 0;
	if (mg_vma_of(ctx->addr, &v) && v.file) {
		count(PROF_CNT_MEM_FILE);
		return 0;
	}
	if ((e = bpf_map_lookup_elem(&sample_bufs, &zero)) == NULL)
		return 0;
	e->hdr.kind = PROF_EV_MEM_FAULT;
	fill_sample(ctx, e, true, ctx->regs.ip, ctx->regs.sp, ctx->regs.bp);
	/* The fault's regs are the user's: no kernel stack to show. */
	e->kstack_len = 0;
	if (period == 0)
		period = 1;
	e->waits = (__u32)period;
	e->offcpu_ns = period * memgrow_page;
	if (send_sample(e) != 0)
		count(PROF_CNT_DROP_RINGBUF);
	else
		count(PROF_CNT_MEM_FAULTS);
	return 0;
}

/* Send a call of size bytes (kind PROF_EV_MEM_*), sampled by size (see above). */
static __always_inline void
mg_call(void *ctx, __u32 kind, __u64 size)
{
	struct prof_sample *e;
	__u64 bytes = size, calls = 1, rate = memgrow_rate, now;
	struct mg_limit *l;
	__u32 zero = 0;

	if (size == 0)
		return;
	if (rate > 1 && size < rate) {
		if ((__u64)bpf_get_prandom_u32() % rate >= size)
			return;
		bytes = rate;
		calls = (rate + size / 2) / size;
	}
	/*
	 * A program that maps and unmaps blocks in a loop (an allocator with
	 * no cache of them) would send a sample per call: past
	 * memgrow_calls_max a second on this CPU, they are counted only. A
	 * call of MG_BIG bytes or more always goes: it is rare (it grows
	 * memory by that much, or maps what it never touches), and the one
	 * a reader looks for.
	 */
	if ((l = bpf_map_lookup_elem(&memgrow_limits, &zero)) == NULL)
		return;
	now = bpf_ktime_get_ns();
	if (now - l->since >= 1000000000ULL) {
		l->since = now;
		l->n = 0;
	}
	if (l->n >= memgrow_calls_max && size < MG_BIG) {
		count(PROF_CNT_MEM_LIMITED);
		return;
	}
	l->n++;
	if ((e = bpf_map_lookup_elem(&sample_bufs, &zero)) == NULL)
		return;
	e->hdr.kind = kind;
	fill_sample(ctx, e, false, 0, 0, 0);
	/* The system call's own frames (entry, tracing trampoline) say nothing. */
	e->kstack_len = 0;
	e->waits = (__u32)calls;
	e->offcpu_ns = bytes;
	if (send_sample(e) != 0)
		count(PROF_CNT_DROP_RINGBUF);
	else
		count(PROF_CNT_MEM_CALLS);
}

#ifdef __TARGET_ARCH_x86
#define MG_NR_MMAP	9	/* arch/x86/entry/syscalls/syscall_64.tbl */
#define MG_NR_MUNMAP	11
#define MG_NR_BRK	12

static __always_inline void
mg_mmap(void *ctx, struct pt_regs *regs)
{
	__u64 len = BPF_CORE_READ(regs, si), prot = BPF_CORE_READ(regs, dx);
	__u64 flags = BPF_CORE_READ(regs, r10);

	/*
	 * Private anonymous memory one may use; not a reservation (PROT_NONE),
	 * nor shared memory (a file to the kernel, as its faults are).
	 */
	if (!(flags & MG_MAP_ANONYMOUS) || (flags & MG_MAP_TYPE) != MG_MAP_PRIVATE ||
	    !(prot & MG_PROT_RW))
		return;
	mg_call(ctx, PROF_EV_MEM_MMAP, (len + memgrow_page - 1) & ~(memgrow_page - 1));
}

static __always_inline void
mg_munmap(void *ctx, struct pt_regs *regs)
{
	__u64 addr = BPF_CORE_READ(regs, di), len = BPF_CORE_READ(regs, si);
	struct mg_vma v;

	/* Judged by the first mapping of the range, as its mmap was. */
	if (!mg_vma_of(addr, &v) || v.file || !v.rw)
		return;
	mg_call(ctx, PROF_EV_MEM_UNMAP, (len + memgrow_page - 1) & ~(memgrow_page - 1));
}

static __always_inline void
mg_brk(void *ctx, struct pt_regs *regs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 want, cur, start, mask = ~(memgrow_page - 1);

	want = BPF_CORE_READ(regs, di);
	cur = BPF_CORE_READ(task, mm, brk);
	start = BPF_CORE_READ(task, mm, start_brk);
	/* brk(0) asks where the break is; below the heap's start is refused. */
	if (want < start)
		return;
	want = (want + memgrow_page - 1) & mask;
	cur = (cur + memgrow_page - 1) & mask;
	if (want > cur)
		mg_call(ctx, PROF_EV_MEM_BRK, want - cur);
	else if (want < cur)
		mg_call(ctx, PROF_EV_MEM_UNMAP, cur - want);
}

/*
 * Every system call's entry (the raw tracepoint: no tracefs needed): all
 * but three return at the first test. The user's registers hold the
 * arguments (di, si, dx, r10, r8); the stack is walked from them.
 */
SEC("tp_btf/sys_enter")
int
BPF_PROG(memgrow_sys, struct pt_regs *regs, long id)
{
	if (id != MG_NR_MMAP && id != MG_NR_MUNMAP && id != MG_NR_BRK)
		return 0;
	if (!mg_wanted())
		return 0;
	if (id == MG_NR_MMAP)
		mg_mmap(ctx, regs);
	else if (id == MG_NR_MUNMAP)
		mg_munmap(ctx, regs);
	else
		mg_brk(ctx, regs);
	return 0;
}
#endif
