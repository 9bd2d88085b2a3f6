/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby.bpf.h: Ruby's control frames, read at the sample (included by
 * profile.bpf.c once its maps and helpers are defined). For a process in
 * rb_procs (a libruby of a known version found by
 * collector/ebpf/runtimes/ruby.c), the sampled thread's execution context
 * is its ruby_current_ec, a thread-local of libruby: the thread pointer (the
 * fs base) holds glibc's dtv at +8, the dtv the thread's TLS block of
 * libruby at 16 * its module id. Its frames are the control frames from ec->cfp
 * up to the end of the VM stack (vm_stack + vm_stack_size VALUEs), one read
 * of the frame and one of its environment's three words per frame, plus
 * the iseq's body pointer for a Ruby frame; the walk runs in a bpf_loop
 * callback like the others. Frames that are neither Ruby code nor a C
 * method (dummy, ifunc) are skipped. Naming them is user space's.
 */
#ifndef PROFILEFS_RUBY_BPF_H
#define PROFILEFS_RUBY_BPF_H

/* vm_core.h's frame flags (ep[0]), stable since Ruby 2.6. */
#define RB_FRAME_MAGIC_MASK	0x7fff0001ULL
#define RB_FRAME_MAGIC_CFUNC	0x55550001ULL
#define RB_FRAME_FLAG_FINISH	0x0020ULL
#define RB_FRAME_FLAG_CFRAME	0x0080ULL
/* Frames looked at per sample beyond those carried (skipped ones). */
#define RB_MAX_SKIPPED		32

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct rb_proc);
} rb_procs SEC(".maps");

struct rb_buf {
	struct prof_pyframe	frames[PROF_MAX_PYFRAMES];
	__u8			raw[RB_CFP_READ];
	__u64			env[3];		/* ep[-2] (method entry or cref), ep[-1], ep[0] (flags) */
	struct rb_proc		rp;
	__u64			cfp, end;
	__u32			n, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rb_buf);
} rb_bufs SEC(".maps");

/* A pointer-sized field at off of the control frame just read. */
static __always_inline __u64
rb_field(struct rb_buf *b, __u32 off)
{
	__u64 v = 0;

	if (off > RB_CFP_READ - 8)
		return 0;
	bpf_probe_read_kernel(&v, sizeof(v), b->raw + off);
	return v;
}

static long
rb_step(__u32 i, void *arg)
{
	__u32 zero = 0, n;
	struct rb_buf *b = bpf_map_lookup_elem(&rb_bufs, &zero);
	__u64 cfp, pc, iseq, ep, fl, body = 0;

	if (b == NULL || b->cfp == 0 || b->cfp >= b->end)
		return 1;
	cfp = b->cfp;
	if (cfp >= USER_TOP || bpf_probe_read_user(b->raw, sizeof(b->raw), (void *)cfp) != 0)
		goto fault;
	b->cfp = cfp + b->rp.cf_size;
	ep = rb_field(b, b->rp.cf_ep);
	if (ep < 16 || ep >= USER_TOP)
		return 0;
	if (bpf_probe_read_user(b->env, sizeof(b->env), (void *)(ep - 16)) != 0)
		goto fault;
	fl = b->env[2];
	n = b->n;
	if (n >= PROF_MAX_PYFRAMES) {
		b->flags |= PROF_PY_TRUNCATED;
		return 1;
	}
	if (fl & RB_FRAME_FLAG_CFRAME) {
		__u64 me = b->env[0], def = 0;

		if ((fl & RB_FRAME_MAGIC_MASK) != RB_FRAME_MAGIC_CFUNC || me == 0 || me >= USER_TOP)
			return 0;
		/* rb_method_entry_t: def at +16 */
		bpf_probe_read_user(&def, sizeof(def), (void *)(me + 16));
		b->frames[n].code = me | PROF_RB_CFUNC;
		b->frames[n].instr = 0;
		b->frames[n].name = def;
		b->n = n + 1;
		return 0;
	}
	iseq = rb_field(b, b->rp.cf_iseq);
	pc = rb_field(b, b->rp.cf_pc);
	if (iseq == 0 || iseq >= USER_TOP || pc == 0)
		return 0;
	bpf_probe_read_user(&body, sizeof(body), (void *)(iseq + b->rp.iseq_body));
	b->frames[n].code = (fl & RB_FRAME_FLAG_FINISH) ? iseq | PROF_PY_ENTRY : iseq;
	b->frames[n].instr = pc;
	b->frames[n].name = body;
	b->n = n + 1;
	return 0;
fault:
	b->flags |= PROF_PY_TRUNCATED;
	count(PROF_CNT_RB_READ_ERR);
	return 1;
}

static __always_inline void
walk_ruby(struct prof_sample *e, struct task_struct *task, __u32 tgid)
{
#ifdef __TARGET_ARCH_x86
	struct rb_proc *rp = bpf_map_lookup_elem(&rb_procs, &tgid);
	__u64 fsbase, dtv = 0, blk = 0, ec = 0, w[3];
	struct rb_buf *b;
	__u32 zero = 0, k;

	if (!unwind_tables || rp == NULL || e->rt != PROF_RT_NONE ||
	    (b = bpf_map_lookup_elem(&rb_bufs, &zero)) == NULL)
		return;
	b->rp = *rp;
	e->rt = PROF_RT_PY;
	e->py_n = 0;
	e->py_flags = PROF_PY_WALKED | PROF_RB_FRAMES;
	count(PROF_CNT_RB_STACKS);
	fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (b->rp.tls_module == 0 || b->rp.tls_module > 4096 || fsbase == 0 || fsbase >= USER_TOP ||
	    bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(fsbase + 8)) != 0 ||
	    dtv < 16 || dtv >= USER_TOP ||
	    bpf_probe_read_user(&w[0], 8, (void *)(dtv - 16)) != 0)
		goto fault;
	/* dtv[-1] counts the slots: a module past them has no block in this thread. */
	if (w[0] < b->rp.tls_module ||
	    bpf_probe_read_user(&blk, sizeof(blk), (void *)(dtv + 16 * b->rp.tls_module)) != 0) {
		e->py_flags |= PROF_PY_NO_THREAD;
		return;
	}
	/* A block not allocated yet (-1), or none: the thread never ran Ruby. */
	if (blk == 0 || blk >= USER_TOP ||
	    bpf_probe_read_user(&ec, sizeof(ec), (void *)(blk + b->rp.tls_offset)) != 0 || ec == 0) {
		e->py_flags |= PROF_PY_NO_THREAD;
		return;
	}
	if (ec >= USER_TOP ||
	    bpf_probe_read_user(&w[0], 8, (void *)(ec + b->rp.ec_vm_stack)) != 0 ||
	    bpf_probe_read_user(&w[1], 8, (void *)(ec + b->rp.ec_vm_stack_size)) != 0 ||
	    bpf_probe_read_user(&w[2], 8, (void *)(ec + b->rp.ec_cfp)) != 0)
		goto fault;
	b->cfp = w[2];
	b->end = w[0] + w[1] * 8;
	if (w[1] > (1ULL << 32) || b->end < w[0] || b->rp.cf_size < 8 || b->rp.cf_size > 256)
		goto fault;
	b->n = 0;
	b->flags = 0;
	bpf_loop(PROF_MAX_PYFRAMES + RB_MAX_SKIPPED, rb_step, NULL, 0);
	if (b->cfp != 0 && b->cfp < b->end)
		b->flags |= PROF_PY_TRUNCATED;	/* not all frames looked at */
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
	count(PROF_CNT_RB_READ_ERR);
#endif
}

#endif
