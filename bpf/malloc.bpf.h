/* SPDX-License-Identifier: GPL-2.0 */
/*
 * malloc.bpf.h: allocations by stack (--ebpf-malloc), included by
 * profile.bpf.c after its sampler (fill_sample, send_sample). User space
 * (collector/ebpf/mallocprof.c) attaches these programs as uprobes on the C
 * library's allocation functions of the selected processes only, each with
 * its pid filter, so that no other process gets a breakpoint.
 *
 * Sampling is by bytes, as Go's and tcmalloc's profilers sample: each
 * thread counts down a random number of bytes (exponential, mean
 * malloc_rate; drawn from malloc_draws, MALLOC_DRAWS quantiles user space
 * computed: no floating point here), and the allocation that takes the
 * countdown to zero or below is sampled; the countdown starts again. The
 * entry probe decides (a task-local lookup and a subtraction: what every
 * call costs); the return probe, for a sampled call only, records the
 * block in malloc_live (its address -> size, for the inuse views) and
 * sends its stack, taken at the return into the caller, through the ring
 * buffer as a PROF_EV_MALLOC sample. free (and realloc's old block)
 * deletes the block from malloc_live. Weighting each sample is user space's.
 * With malloc_live full, the sample is sent all the same, flagged
 * PROF_MALLOC_UNTRACKED (counted in alloc_*, not in inuse_*), and counted.
 */

const volatile __u32 malloc_draws[MALLOC_DRAWS];

/* A thread's countdown, and the sampled call it is in (between entry and return). */
struct malloc_task {
	__s64	left;		/* bytes until the next sample */
	__u64	size;		/* the sampled call's */
	__u64	memptr;		/* posix_memalign's out argument */
	__u32	pending;	/* a sampled call is under way */
	__u32	init;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct malloc_task);
} malloc_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* resized by user space before load */
	__type(key, struct prof_malloc_key);
	__type(value, __u64);
} malloc_live SEC(".maps");

/*
 * The sample is built here, not in do_sample's buffer: a uprobe's program
 * runs with preemption on, and the CPU sampler's may interrupt it. (The
 * walk's own scratch maps are shared still: a sample taken at that very
 * moment may get a wrong frame.)
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_sample);
} malloc_bufs SEC(".maps");

static __always_inline __s64
malloc_draw(void)
{
	__u32 i = bpf_get_prandom_u32() & (MALLOC_DRAWS - 1);

	return (__s64)malloc_draws[i] + 1;
}

static __always_inline void
malloc_enter(__u64 size, __u64 memptr)
{
	struct malloc_task *t = bpf_task_storage_get(&malloc_tasks, bpf_get_current_task_btf(),
	    0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t == NULL)
		return;
	t->pending = 0;
	if (!t->init) {
		t->left = malloc_draw();
		t->init = 1;
	}
	/* A size past any real one (a failing call) is not sampled. */
	if (size > (1ULL << 48))
		return;
	t->left -= (__s64)size;
	if (t->left > 0)
		return;
	t->left = malloc_draw();
	t->size = size;
	t->memptr = memptr;
	t->pending = 1;
}

static __always_inline void
malloc_forget(__u64 ptr)
{
	struct prof_malloc_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .addr = ptr };

	if (ptr != 0)
		bpf_map_delete_elem(&malloc_live, &k);
}

static __always_inline void
malloc_leave(struct pt_regs *ctx, bool memalign)
{
	struct malloc_task *t = bpf_task_storage_get(&malloc_tasks, bpf_get_current_task_btf(),
	    0, 0);
	struct prof_malloc_key k = { 0 };
	struct prof_sample *e;
	__u32 zero = 0;
	__u64 addr = 0, size;
	bool tracked;

	if (t == NULL || !t->pending)
		return;
	t->pending = 0;
	size = t->size;
	if (memalign) {
		/* posix_memalign(&p, align, size): 0 and p, or an error */
		if (PT_REGS_RC(ctx) != 0 ||
		    bpf_probe_read_user(&addr, sizeof(addr), (void *)t->memptr) != 0)
			return;
	} else {
		addr = PT_REGS_RC(ctx);
	}
	if (addr == 0)
		return;
	count(PROF_CNT_MALLOC_SAMPLES);
	k.pid = bpf_get_current_pid_tgid() >> 32;
	k.addr = addr;
	/* In the table before the sample is sent: user space reads the table after the samples. */
	tracked = bpf_map_update_elem(&malloc_live, &k, &size, BPF_ANY) == 0;
	if (!tracked)
		count(PROF_CNT_MALLOC_LIVE_FULL);
	if ((e = bpf_map_lookup_elem(&malloc_bufs, &zero)) == NULL)
		goto lost;
	e->hdr.kind = PROF_EV_MALLOC;
	e->offcpu_ns = size;
	/* At the return into the caller: the caller is the leaf, as in Go's heap profiles. */
	fill_sample(ctx, e, true, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx));
	e->kstack_len = 0;	/* the uprobe's own path in the kernel: no one's allocation */
	e->mem_addr = addr;
	e->waits = tracked ? 0 : PROF_MALLOC_UNTRACKED;
	if (send_sample(e) == 0)
		return;
	count(PROF_CNT_DROP_RINGBUF);
lost:
	/* A block user space never hears of would hold its room until the process exits. */
	if (tracked)
		bpf_map_delete_elem(&malloc_live, &k);
}

SEC("uprobe")
int BPF_KPROBE(malloc_in, __u64 size)
{
	malloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(malloc_calloc_in, __u64 n, __u64 size)
{
	/* Past 2^32 each, the product may overflow: such a call fails anyway. */
	malloc_enter(n >> 32 || size >> 32 ? ~0ULL : n * size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(malloc_realloc_in, __u64 ptr, __u64 size)
{
	malloc_forget(ptr);
	malloc_enter(size, 0);
	return 0;
}

/* aligned_alloc(align, size), memalign(align, size) */
SEC("uprobe")
int BPF_KPROBE(malloc_aligned_in, __u64 align, __u64 size)
{
	malloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(malloc_memalign_in, __u64 memptr, __u64 align, __u64 size)
{
	malloc_enter(size, memptr);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(malloc_free_in, __u64 ptr)
{
	malloc_forget(ptr);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(malloc_out)
{
	malloc_leave(ctx, false);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(malloc_memalign_out)
{
	malloc_leave(ctx, true);
	return 0;
}
