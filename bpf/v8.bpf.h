/*
 * v8.bpf.h: JavaScript frames of V8 processes (Node.js), included by
 * profile.bpf.c after struct walk. V8 keeps a frame pointer in every frame of
 * its JIT code and builtins, and each such frame holds, at fixed offsets
 * from its frame pointer, either its context (a tagged heap object: a
 * JavaScript frame) and below it the JSFunction it runs, or a frame type
 * marker (a Smi: entry, exit, stub frames). The table walker steps through
 * those frames by frame pointer (no unwind table covers them); for a process
 * in v8_procs each such step notes the frame's JSFunction pointer and the
 * frame's index in the stack. Two words of user memory per frame, one read;
 * nothing else is read here. Naming the functions is user space's
 * (collector/ebpf/runtimes/v8.c).
 */
#ifndef PROFILEFS_V8_BPF_H
#define PROFILEFS_V8_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct v8_proc);
} v8_procs SEC(".maps");

struct v8_buf {
	struct prof_v8frame	frames[PROF_MAX_V8FRAMES];
	struct v8_proc		vp;
	__u32			on;	/* this sample's process runs V8 */
	__u32			n, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_buf);
} v8_bufs SEC(".maps");

/* A new sample of process tgid: note its V8 frames if it runs V8. */
static __always_inline void
v8_begin(__u32 tgid)
{
	struct v8_proc *vp = bpf_map_lookup_elem(&v8_procs, &tgid);
	__u32 zero = 0;
	struct v8_buf *b = bpf_map_lookup_elem(&v8_bufs, &zero);

	if (b == NULL)
		return;
	b->n = 0;
	b->flags = 0;
	b->on = vp != NULL;
	if (vp)
		b->vp = *vp;
}

/* The walk steps by frame pointer out of frame w->n - 1, whose frame pointer is w->bp. */
static __always_inline void
v8_note(const struct walk *w)
{
	__u32 zero = 0, n;
	struct v8_buf *b = bpf_map_lookup_elem(&v8_bufs, &zero);
	__u64 fn = 0, ctx = 0;

	/* (w->n - 1 < PROF_MAX_USTACK = 256: the index fits the top byte.) */
	if (b == NULL || !b->on || w->n == 0 || w->n > 256 || w->bp < 64 || w->bp >= USER_TOP)
		return;
	n = b->n;
	if (n >= PROF_MAX_V8FRAMES) {
		b->flags |= PROF_V8_TRUNCATED;
		return;
	}
	if (bpf_probe_read_user(&ctx, sizeof(ctx), (void *)(w->bp + b->vp.off_context)) != 0 ||
	    (ctx & 1) == 0)
		return;		/* a frame type marker: no JavaScript function */
	if (bpf_probe_read_user(&fn, sizeof(fn), (void *)(w->bp + b->vp.off_function)) != 0 ||
	    (fn & 1) == 0 || fn >= USER_TOP)
		return;
	b->frames[n].fn_idx = fn | ((__u64)(w->n - 1) << PROF_V8_IDX_SHIFT);
	b->n = n + 1;
}

/* The frames noted into e. */
static __always_inline void
v8_end(struct prof_sample *e)
{
	__u32 zero = 0, n;
	struct v8_buf *b = bpf_map_lookup_elem(&v8_bufs, &zero);

	if (b == NULL || !b->on)
		return;
	b->on = 0;
	if (e->rt != PROF_RT_NONE)
		return;
	e->rt = PROF_RT_V8;
	e->v8_n = 0;
	count(PROF_CNT_V8_STACKS);
	n = b->n;
	if (n > PROF_MAX_V8FRAMES)
		n = PROF_MAX_V8FRAMES;
	e->v8_flags = PROF_V8_WALKED | b->flags;
	if (n > 0 && bpf_probe_read_kernel(e->v8, sizeof(e->v8), b->frames) == 0)
		e->v8_n = n;
}

#endif
