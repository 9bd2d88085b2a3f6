/* SPDX-License-Identifier: GPL-2.0 */
/*
 * php.bpf.h: PHP's executor frames, read at the sample (included by
 * profile.bpf.c once its maps and helpers are defined). For a process in
 * php_procs (an NTS php binary of a known version found by
 * collector/ebpf/runtimes/php.c), the frames are the chain of
 * zend_execute_data from executor_globals.current_execute_data through
 * prev_execute_data: per frame one read of the execute data, one of its
 * function's type and name, one of its opline's line. Internal functions'
 * frames are skipped (their C functions are among the native frames); the
 * frame flagged ZEND_CALL_TOP is the outermost of one run of execute_ex.
 * The walk runs in a bpf_loop callback like the others, bounded by frames
 * looked at, so a chain that loops ends. Naming the functions is user
 * space's.
 */
#ifndef PROFILEFS_PHP_BPF_H
#define PROFILEFS_PHP_BPF_H

#define PHP_USER_FUNCTION	2	/* zend_function.type: user code */
#define PHP_EVAL_CODE		4	/* ... eval()'d or included code */
/* Frames looked at per sample beyond those carried (internal functions'). */
#define PHP_MAX_SKIPPED		32

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct php_proc);
} php_procs SEC(".maps");

struct php_buf {
	struct prof_pyframe	frames[PROF_MAX_PYFRAMES];
	__u8			raw[PHP_EX_READ];
	struct php_proc		pp;
	__u64			ex;
	__u32			n, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct php_buf);
} php_bufs SEC(".maps");

/* A field of sz bytes (4 or 8) at off of the execute data just read. */
static __always_inline __u64
php_field(struct php_buf *b, __u32 off, __u32 sz)
{
	__u64 v = 0;

	if (off > PHP_EX_READ - 8)
		return 0;
	bpf_probe_read_kernel(&v, sizeof(v), b->raw + off);
	return sz == 4 ? (__u32)v : v;
}

static long
php_step(__u32 i, void *arg)
{
	__u32 zero = 0, n, line = 0;
	struct php_buf *b = bpf_map_lookup_elem(&php_bufs, &zero);
	__u64 fn, opline, name = 0, info;
	__u8 type = 0;

	if (b == NULL || b->ex == 0)
		return 1;
	if (b->ex >= USER_TOP ||
	    bpf_probe_read_user(b->raw, sizeof(b->raw), (void *)b->ex) != 0) {
		b->flags |= PROF_PY_TRUNCATED;
		count(PROF_CNT_PHP_READ_ERR);
		return 1;
	}
	fn = php_field(b, b->pp.ex_func, 8);
	opline = php_field(b, b->pp.ex_opline, 8);
	info = php_field(b, b->pp.ex_call_info, 4);
	b->ex = php_field(b, b->pp.ex_prev, 8);
	if (fn == 0 || fn >= USER_TOP ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(fn + b->pp.fn_type)) != 0 ||
	    (type != PHP_USER_FUNCTION && type != PHP_EVAL_CODE))
		return 0;
	n = b->n;
	if (n >= PROF_MAX_PYFRAMES) {
		b->flags |= PROF_PY_TRUNCATED;
		return 1;
	}
	bpf_probe_read_user(&name, sizeof(name), (void *)(fn + b->pp.fn_name));
	if (opline != 0 && opline < USER_TOP)
		bpf_probe_read_user(&line, sizeof(line), (void *)(opline + b->pp.op_lineno));
	b->frames[n].code = (info & b->pp.call_top) ? fn | PROF_PY_ENTRY : fn;
	b->frames[n].instr = line;
	b->frames[n].name = name;
	b->n = n + 1;
	return 0;
}

static __always_inline void
walk_php(struct prof_sample *e, __u32 tgid)
{
#ifdef __TARGET_ARCH_x86
	struct php_proc *pp = bpf_map_lookup_elem(&php_procs, &tgid);
	struct php_buf *b;
	__u32 zero = 0, k;
	__u64 ex = 0;

	if (pp == NULL || e->rt != PROF_RT_NONE || (b = bpf_map_lookup_elem(&php_bufs, &zero)) == NULL)
		return;
	b->pp = *pp;
	e->rt = PROF_RT_PY;
	e->py_n = 0;
	e->py_flags = PROF_PY_WALKED | PROF_PHP_FRAMES;
	count(PROF_CNT_PHP_STACKS);
	if (b->pp.eg == 0 || b->pp.eg >= USER_TOP ||
	    bpf_probe_read_user(&ex, sizeof(ex), (void *)(b->pp.eg + b->pp.eg_current_ex)) != 0) {
		e->py_flags |= PROF_PY_TRUNCATED;
		count(PROF_CNT_PHP_READ_ERR);
		return;
	}
	/* Not running PHP code (starting, between requests): native frames only. */
	if (ex == 0) {
		e->py_flags |= PROF_PY_NO_THREAD;
		return;
	}
	b->ex = ex;
	b->n = 0;
	b->flags = 0;
	bpf_loop(PROF_MAX_PYFRAMES + PHP_MAX_SKIPPED, php_step, NULL, 0);
	if (b->ex != 0)
		b->flags |= PROF_PY_TRUNCATED;	/* not all frames looked at */
	k = b->n;
	if (k > PROF_MAX_PYFRAMES)
		k = PROF_MAX_PYFRAMES;
	e->py_n = k;
	e->py_flags |= b->flags;
	if (bpf_probe_read_kernel(e->py, sizeof(e->py), b->frames) != 0)
		e->py_n = 0;
#endif
}

#endif
