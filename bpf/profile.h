/*
 * profile.h: the types shared by bpf/profile.bpf.c (kernel side) and
 * collector/ebpf/ebpf.c (user side). Fixed-size fields only, so both compilers lay
 * them out identically. Every record in the ring buffer starts with a struct
 * prof_hdr whose kind says which struct follows.
 */
#ifndef PROFILEFS_BPF_PROFILE_H
#define PROFILEFS_BPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PROF_COMM_LEN		16
#define PROF_MAX_STACK		127	/* kernel.perf_event_max_stack default */
#define PROF_MAX_USTACK		256	/* user frames the table walker follows */
#define PROF_MAX_PYFRAMES	96	/* Python frames read per sample */
#define PROF_MAX_V8FRAMES	128	/* V8 JavaScript frames noted per sample */

enum prof_kind {
	PROF_EV_SAMPLE	= 1,	/* struct prof_sample */
	PROF_EV_EXEC	= 2,	/* struct prof_notice: pid just exec'd */
	PROF_EV_EXIT	= 3,	/* struct prof_notice: thread group leader exited */
	PROF_EV_OFFCPU	= 4,	/* struct prof_sample: a sampled wait; offcpu_ns its value, waits its count (1/1024ths) */
	PROF_EV_TABLES	= 5,	/* struct prof_notice: pid blocked before its unwind tables were loaded */
	PROF_EV_MALLOC	= 9,	/* struct prof_sample: a sampled allocation (malloc.bpf.h) */
	/* --ebpf-memory (bpf/memgrow.bpf.h): struct prof_sample, offcpu_ns the bytes, waits the calls */
	PROF_EV_MEM_FAULT	= 16,	/* a sampled user page fault on anonymous memory */
	PROF_EV_MEM_MMAP	= 17,	/* an anonymous mmap */
	PROF_EV_MEM_BRK		= 18,	/* brk that grew the heap */
	PROF_EV_MEM_UNMAP	= 19,	/* munmap of anonymous memory, or brk that shrank it */
};

struct prof_hdr {
	__u32	kind;		/* enum prof_kind */
	__u32	pid;		/* thread group id, as seen from the initial pid namespace */
	__u32	tid;
	__u32	cpu;
	__u64	time_ns;	/* bpf_ktime_get_ns() */
};

struct prof_notice {
	struct prof_hdr	hdr;
	char	comm[PROF_COMM_LEN];
	__u32	exec;		/* the process's image: its task's self_exec_id (low bits) */
	__u32	pad;
};

/* Set on a user frame whose address is an exact pc, not a return address. */
#define PROF_PC_EXACT		(1ULL << 63)

/* prof_sample.unwind: how the user stack was walked. */
#define PROF_UNW_CFI		1	/* with unwind tables (else frame pointers only) */
#define PROF_UNW_COMPLETE	2	/* reached a frame whose return address CFI marks undefined */
#define PROF_UNW_LEAF_MISS	4	/* no table covers the leaf pc (a new mapping?) */

/*
 * A Python frame (CPython's _PyInterpreterFrame) as read at the sample: the
 * code object and the instruction pointer, leaf first. PROF_PY_ENTRY on code
 * marks the outermost frame of one run of the evaluation loop
 * (_PyEval_EvalFrameDefault): the frames from the previous entry up to this
 * one take that native frame's place.
 */
#define PROF_PY_ENTRY		(1ULL << 63)

struct prof_pyframe {
	__u64	code;		/* PyCodeObject address | PROF_PY_ENTRY */
	__u64	instr;		/* the frame's instruction pointer */
	__u64	name;		/* the code's co_qualname pointer at the sample: user
				   space names the frame only if the code still has it */
};

/*
 * A pprof label of the sampled goroutine (Go's pprof.Do / SetGoroutineLabels),
 * its key and value as offsets and lengths into prof_sample.go_str. Bounds:
 * PROF_MAX_GOLABELS pairs, keys up to PROF_GO_KEY_MAX bytes, values up to
 * PROF_GO_VALUE_MAX, PROF_GO_STR bytes in all; a pair over them is left out.
 */
#define PROF_MAX_GOLABELS	8
#define PROF_GO_KEY_MAX		64
#define PROF_GO_VALUE_MAX	128
#define PROF_GO_STR		512	/* a power of two */

struct prof_golabel {
	__u16	key, klen;
	__u16	value, vlen;
};

/* prof_sample.go_flags */
#define PROF_GO_WALKED		1	/* a Go process: go[] is its running goroutine's */
#define PROF_GO_LEFT_OUT	2	/* pairs left out: too long, or no room left */
#define PROF_GO_TRUNCATED	4	/* more pairs than read, or a read failed */

/* prof_sample.py_flags */
#define PROF_PY_WALKED		1	/* the process runs Python: py[] is this thread's */
#define PROF_PY_NO_THREAD	2	/* no thread state of this thread (not running Python) */
#define PROF_PY_TRUNCATED	4	/* more frames than PROF_MAX_PYFRAMES, or a read failed */

/*
 * A HotSpot frame met by the user stack walk (bpf/hotspot.bpf.h), ustack[idx]:
 *   PROF_J_INTERP    a pc of the interpreter, running the Method* method at
 *                    the bytecode pointer bcp;
 *   PROF_J_BLOB      a pc of the code blob at method (an nmethod, a stub, an
 *                    adapter), bcp 0.
 * User space names the frame after the method(s) it runs
 * (collector/ebpf/runtimes/hotspot.c) rather than after the pc.
 */
#define PROF_MAX_JFRAMES	64	/* HotSpot frames kept per sample */
#define PROF_OFFCPU_TW_SLOTS	8	/* off-CPU task work slots per CPU: one is busy a while after its callback */
#define PROF_J_INTERP		0
#define PROF_J_BLOB		1

struct prof_jframe {
	__u32	idx;
	__u32	kind;		/* PROF_J_* */
	__u64	method;
	__u64	bcp;
};

/*
 * A V8 frame (Node.js) met by the user stack walk: a frame walked by frame
 * pointer (JIT code, V8's builtins) whose context slot holds a heap object,
 * not a frame type marker, so that its function slot holds the JSFunction
 * the frame runs. Named by user space (collector/ebpf/runtimes/v8.c). One
 * word: the tagged JSFunction pointer (a user address, below 2^56) and, in
 * the top byte, the frame's index in ustack.
 */
#define PROF_V8_IDX_SHIFT	56
#define PROF_V8_FN_MASK		((1ULL << PROF_V8_IDX_SHIFT) - 1)

struct prof_v8frame {
	__u64	fn_idx;
};

/* prof_sample.v8_flags */
#define PROF_V8_WALKED		1	/* the process runs V8: v8[] is this stack's */
#define PROF_V8_TRUNCATED	2	/* more frames than PROF_MAX_V8FRAMES */

/* prof_sample.rt: which runtime's part the sample's union holds. */
enum prof_rt {
	PROF_RT_NONE	= 0,	/* none: native frames only */
	PROF_RT_PY	= 1,	/* py_*: Python's frames, or Ruby's (py_flags PROF_RB_FRAMES) */
	PROF_RT_GO	= 2,	/* go_*: the running goroutine's pprof labels */
	PROF_RT_JAVA	= 3,	/* j_*: HotSpot frames met by the user stack walk */
	PROF_RT_V8	= 4,	/* v8_*: V8 JavaScript frames met by the user stack walk */
};

/*
 * A sample: what every one has (identity, kernel and user stacks), then
 * the part of the one runtime its process runs, in a union tagged by rt
 * (a process runs one runtime; the BPF side fills at most one part). The
 * union's members are read only under their tag. The union comes last,
 * so that a record may end after the used part of its member
 * (prof_sample_size).
 */
struct prof_sample {
	struct prof_hdr	hdr;
	__u64	cgroup_id;
	__s32	kstack_len;	/* bytes written into kstack, or a negative errno */
	__s32	ustack_len;	/* bytes written into ustack, or a negative errno */
	__u32	unwind;		/* PROF_UNW_* */
	__u32	wake;		/* BPF side: wake user space when sent */
	__u64	offcpu_ns;	/* PROF_EV_OFFCPU: the wait's value (its length, or the threshold it was drawn at);
				   PROF_EV_MEM_*: the bytes the sample stands for */
	char	comm[PROF_COMM_LEN];	/* the thread's */
	char	leader_comm[PROF_COMM_LEN];	/* the thread group leader's: the process's */
	__u32	rt;		/* enum prof_rt */
	__u32	waits;		/* PROF_EV_OFFCPU sent by itself: the waits it stands for, in 1/1024ths;
				   PROF_EV_MEM_*: the faults or calls */
	__u64	mem_addr;	/* PROF_EV_MALLOC: the block (its size in offcpu_ns; waits: flags) */
	__u64	kstack[PROF_MAX_STACK];	/* leaf first */
	__u64	ustack[PROF_MAX_USTACK];	/* leaf first; bpf_get_stack fills at most PROF_MAX_STACK */
	union {
		struct {		/* PROF_RT_PY */
			__u32	py_n;		/* frames in py */
			__u32	py_flags;	/* PROF_PY_* */
			struct prof_pyframe py[PROF_MAX_PYFRAMES];
		};
		struct {		/* PROF_RT_GO */
			__u32	go_n;		/* pairs in go */
			__u32	go_flags;	/* PROF_GO_* */
			struct prof_golabel go[PROF_MAX_GOLABELS];
			char	go_str[PROF_GO_STR];	/* the pairs' bytes, not NUL-terminated */
		};
		struct {		/* PROF_RT_JAVA */
			__u32	j_n;		/* entries in j */
			__u32	j_pad;
			struct prof_jframe j[PROF_MAX_JFRAMES];
		};
		struct {		/* PROF_RT_V8 */
			__u32	v8_n;		/* frames in v8 */
			__u32	v8_flags;	/* PROF_V8_* */
			struct prof_v8frame v8[PROF_MAX_V8FRAMES];	/* leaf first, as ustack */
		};
	};
};

/* Where a sample's runtime part starts: a record is at least this long. */
#define PROF_SAMPLE_BASE	__builtin_offsetof(struct prof_sample, py_n)

/*
 * The bytes of s that carry something: all up to the union, then the used
 * part of its member (the whole of go_str for Go labels). Bounded by
 * sizeof(struct prof_sample) whatever the counts say.
 */
static __inline __u32
prof_sample_size(const struct prof_sample *s)
{
	__u32 n;

	switch (s->rt) {
	case PROF_RT_PY:
		n = s->py_n < PROF_MAX_PYFRAMES ? s->py_n : PROF_MAX_PYFRAMES;
		return PROF_SAMPLE_BASE + 8 + n * (__u32)sizeof(struct prof_pyframe);
	case PROF_RT_GO:
		return PROF_SAMPLE_BASE + 8 + (__u32)(sizeof(s->go) + sizeof(s->go_str));
	case PROF_RT_JAVA:
		n = s->j_n < PROF_MAX_JFRAMES ? s->j_n : PROF_MAX_JFRAMES;
		return PROF_SAMPLE_BASE + 8 + n * (__u32)sizeof(struct prof_jframe);
	case PROF_RT_V8:
		n = s->v8_n < PROF_MAX_V8FRAMES ? s->v8_n : PROF_MAX_V8FRAMES;
		return PROF_SAMPLE_BASE + 8 + n * (__u32)sizeof(struct prof_v8frame);
	default:
		return PROF_SAMPLE_BASE;
	}
}

/*
 * --ebpf-malloc (bpf/malloc.bpf.h): the sampling intervals, bytes, are drawn
 * from a table of MALLOC_DRAWS quantiles of the exponential distribution
 * user space fills; malloc_live holds the sampled blocks not yet freed.
 */
#define MALLOC_DRAWS		1024	/* a power of two */
#define PROF_MALLOC_UNTRACKED	1	/* prof_sample.waits: not in malloc_live (full) */

struct prof_malloc_key {
	__u32	pid;		/* thread group id */
	__u32	pad;
	__u64	addr;
};

/* Indexes of the per-CPU counter array "counters". */
enum prof_counter {
	PROF_CNT_SAMPLES = 0,	/* perf events handled (idle included) */
	PROF_CNT_IDLE,		/* samples of the idle task, not sent */
	PROF_CNT_DROP_RINGBUF,	/* ring buffer full: sample lost */
	PROF_CNT_DROP_EVENT,	/* ring buffer full: exec/exit notice lost */
	PROF_CNT_ERR_KSTACK,	/* bpf_get_stack (kernel) failed */
	PROF_CNT_ERR_USTACK,	/* bpf_get_stack (user) failed for a user task */
	PROF_CNT_CFI_STACKS,	/* user stacks walked with unwind tables */
	PROF_CNT_CFI_COMPLETE,	/* ... of which reached the outermost frame */
	PROF_CNT_CFI_FP_FRAMES,	/* frames walked by frame pointer where no table covers the pc */
	PROF_CNT_CFI_UNSUPPORTED, /* walks stopped at a rule the tables cannot express */
	PROF_CNT_CFI_READ_ERR,	/* walks stopped by an unreadable stack word */
	PROF_CNT_PY_STACKS,	/* Python stacks read */
	PROF_CNT_PY_READ_ERR,	/* ... cut short by unreadable interpreter memory */
	PROF_CNT_OFFCPU_OUT,	/* not counted: a cost on every switch */
	PROF_CNT_OFFCPU_SHORT,	/* waits not drawn: their time in their thread's total only */
	PROF_CNT_OFFCPU_SENT,	/* waits drawn: stacks taken and added up */
	PROF_CNT_OFFCPU_FULL,	/* switches out not timed: no task storage */
	PROF_CNT_GO_LABELS,	/* samples of a goroutine with pprof labels */
	PROF_CNT_GO_TRUNCATED,	/* ... not all read (past the bounds, or a read failed) */
	PROF_CNT_RB_STACKS,	/* Ruby stacks read */
	PROF_CNT_RB_READ_ERR,	/* ... cut short by unreadable VM memory */
	PROF_CNT_HS_FRAMES,	/* frames of HotSpot's code cache stepped through */
	PROF_CNT_HS_NO_BLOB,	/* ... whose code blob was not found (walked by frame pointer) */
	PROF_CNT_V8_STACKS,	/* stacks of V8 processes walked for JavaScript frames */
	PROF_CNT_OFFCPU_SPILL,	/* waits sent one by one through the ring buffer: offcpu_aggs full */
	PROF_CNT_MALLOC_SAMPLES,	/* allocations sampled (--ebpf-malloc) */
	PROF_CNT_MALLOC_LIVE_FULL,	/* ... not tracked for inuse: malloc_live full */
	PROF_CNT_PHP_STACKS,	/* PHP stacks read */
	PROF_CNT_PHP_READ_ERR,	/* ... cut short by unreadable executor memory */
	PROF_CNT_MEM_FAULTS,	/* --ebpf-memory: sampled user page faults sent */
	PROF_CNT_MEM_FILE,	/* ... left out: a file mapping's */
	PROF_CNT_MEM_CALLS,	/* --ebpf-memory: mmap, brk, munmap calls sent (after sampling) */
	PROF_CNT_MEM_LIMITED,	/* ... not sent: past memgrow_calls_max a second on their CPU */
	PROF_CNT_OFFCPU_BUSY,	/* waits not drawn: their CPU's last drawn wait still had its stacks to take */
	PROF_CNT_OFFCPU_THREADS_FULL,	/* a thread's exact time not moved out, offcpu_threads full: kept for its next walk (lost at its exit) */
	PROF_CNT_MAX
};

/*
 * Unwind tables. One row says how to find the caller's frame for the pcs from
 * its own pc up to the next row's (rows of one file sorted by pc, gaps between
 * FDEs are UNW_NONE rows). All files' rows live in one array map, a file's in
 * [first, first + nrows); x86-64 only.
 *
 *   offset size field
 *   0      4    pc        ELF virtual address of the first byte covered
 *   4      2    cfa_off   added to the CFA's base register (UNW_DEREF: subtracted)
 *   6      1    kind      enum unw_kind: how the CFA is found
 *   7      1    rbp_off   the caller's rbp is saved at CFA + 8 * rbp_off; 0: rbp unchanged
 *                         (UNW_PLT: the threshold of the pc & 15 test)
 * The return address is always at CFA - 8; rows where it is not are UNW_UNSUPPORTED.
 */
enum unw_kind {
	UNW_NONE = 0,		/* no CFI here: walk by frame pointer */
	UNW_RSP,		/* CFA = rsp + cfa_off */
	UNW_RBP,		/* CFA = rbp + cfa_off */
	UNW_PLT,		/* CFA = rsp + cfa_off + ((pc & 15) >= rbp_off ? 8 : 0): PLT stubs */
	UNW_DEREF,		/* CFA = *(rbp - cfa_off): functions that realign the stack */
	UNW_SIGNAL,		/* a signal trampoline: the interrupted registers in a ucontext at rsp */
	UNW_END,		/* the return address is undefined: outermost frame */
	UNW_UNSUPPORTED,	/* a rule the walker cannot follow: stop */
};

struct unw_row {
	__u32	pc;
	__u16	cfa_off;
	__u8	kind;
	__s8	rbp_off;
};

/*
 * Which unwind table covers a pc of a process: an LPM trie keyed by pid and
 * address (both big-endian, so that a prefix is an aligned address block),
 * one or more prefixes per executable mapping.
 */
struct unw_map_key {
	__u32	prefixlen;	/* 32 + bits of addr */
	__u32	pid_be;
	__u64	addr_be;
};

/* unw_procs value: a process user space has looked at. */
#define UNW_PROC_NO_TABLES	1	/* none of its files has a table: bpf_get_stack as before */

struct unw_proc {
	__u32	gen;		/* of its unw_maps entries */
	__u32	flags;		/* UNW_PROC_* */
	__u64	since_ns;	/* CLOCK_MONOTONIC when written */
};

struct unw_map_val {
	__u64	bias;		/* ELF address = runtime address - bias */
	__u32	first;		/* rows [first, first + nrows) of unw_rows */
	__u32	nrows;
	__u32	gen;		/* must equal unw_procs[pid] */
	__u32	pad;
};

/*
 * py_procs value: where a CPython process keeps its thread states and
 * frames, written by collector/ebpf/runtimes/python.c for its version. Offsets in bytes;
 * PY_OFF_NONE: the field does not exist in this version.
 *
 *   runtime          address of _PyRuntime
 *   rt_interp        _PyRuntime: interpreters.head (the main interpreter)
 *   interp_threads   PyInterpreterState: threads.head
 *   ts_next          PyThreadState: next
 *   ts_thread_id     PyThreadState: thread_id (pthread_self(): the fs base)
 *   ts_frame         PyThreadState: cframe (3.11, 3.12) or current_frame (3.13 on)
 *   cframe_frame     _PyCFrame: current_frame; PY_OFF_NONE: ts_frame is the frame
 *   fr_code, fr_previous, fr_instr, fr_owner: _PyInterpreterFrame (fr_code:
 *                    f_executable from 3.13; from 3.14 a _PyStackRef whose low
 *                    bits are tags: the walk clears the low 3 bits)
 *   fr_entry         _PyInterpreterFrame: is_entry (3.11), else PY_OFF_NONE
 *   owner_cstack     the least owner value of a shim frame (3.12+: 3), else 0xff
 *   co_qualname      PyCodeObject: co_qualname
 * Frame fields lie in the first PY_FRAME_READ bytes.
 */
#define PY_OFF_NONE		0xffff
#define PY_FRAME_READ		80	/* 3.14's owner is at 74 */
#define PY_MAX_THREADS		64	/* thread states searched for the sampled thread */

struct py_proc {
	__u64	runtime;
	__u16	rt_interp, interp_threads, ts_next, ts_thread_id;
	__u16	ts_frame, cframe_frame, fr_code, fr_previous;
	__u16	fr_instr, fr_owner, fr_entry, co_qualname;
	__u8	owner_cstack;
	__u8	pad[7];
};

/*
 * go_procs value: where a Go process keeps the running goroutine's pprof
 * labels, written by collector/ebpf/runtimes/golabels.c from the
 * executable's DWARF or its Go version. Offsets in bytes.
 *
 *   tls_g            the current g is at fs_base + tls_g (-8 for Go's own TLS)
 *   g_m, m_curg      runtime.g: m; runtime.m: curg (the user goroutine)
 *   g_labels         runtime.g: labels (a *labelMap of runtime/pprof)
 *   layout           GO_LAYOUT_*: what labels points to
 *   hmap_*           GO_LAYOUT_MAP: runtime.hmap's count, B, buckets, oldbuckets
 *   bkt_*            GO_LAYOUT_MAP: bucket<string,string>'s keys, values,
 *                    overflow; its size is GO_BUCKET_SIZE
 * GO_LAYOUT_MAP: labels points to the map (a pointer to the hmap);
 * GO_LAYOUT_SLICE: to a struct that starts with a []struct{key, value string}.
 */
#define GO_LAYOUT_MAP		1	/* map[string]string (Go 1.17 to 1.23) */
#define GO_LAYOUT_SLICE		2	/* a slice of pairs (Go 1.24 on) */
#define GO_BUCKET_SIZE		272	/* 8 tophash bytes, 8 keys, 8 values, overflow */
#define GO_MAX_BUCKETS		8	/* of a map's bucket array read (B <= 3) */

struct go_proc {
	__s64	tls_g;
	__u16	g_m, m_curg, g_labels, layout;
	__u16	hmap_count, hmap_b, hmap_buckets, hmap_oldbuckets;
	__u16	bkt_keys, bkt_values, bkt_overflow, pad;
};

/*
 * Ruby (bpf/ruby.bpf.h). A Ruby process's samples carry its control frames
 * in py[] (py_flags PROF_RB_FRAMES, PROF_PY_TRUNCATED and PROF_PY_NO_THREAD
 * as for Python), leaf first: code the frame's iseq (PROF_PY_ENTRY: the
 * outermost frame of one run of rb_vm_exec, flagged FINISH), instr its
 * pc, name the iseq's body pointer at the sample; a C method's frame has
 * PROF_RB_CFUNC on code, which is then its method entry, and name its
 * definition pointer.
 */
#define PROF_RB_FRAMES		(1u << 8)
#define PROF_RB_CFUNC		(1ULL << 62)

/*
 * rb_procs value: where a Ruby process keeps the sampled thread's frames,
 * written by collector/ebpf/runtimes/ruby.c for its version. The thread's
 * execution context is libruby's thread-local ruby_current_ec, found
 * through glibc's dtv (the thread pointer's second word) at tls_module.
 *
 *   ec_vm_stack, ec_vm_stack_size, ec_cfp   rb_execution_context_t fields
 *   cf_pc, cf_iseq, cf_ep, cf_size          rb_control_frame_t fields, its size
 *   iseq_body                               rb_iseq_t: body
 * Control frame fields lie in the first RB_CFP_READ bytes.
 */
#define RB_CFP_READ		48

struct rb_proc {
	__u64	tls_module;	/* libruby's TLS module id (its dtv index) */
	__u64	tls_offset;	/* ruby_current_ec in libruby's TLS block */
	__u16	ec_vm_stack, ec_vm_stack_size, ec_cfp, cf_pc;
	__u16	cf_iseq, cf_ep, cf_size, iseq_body;
};

/*
 * PHP (bpf/php.bpf.h). A PHP process's samples carry its executor's frames
 * in py[] (py_flags PROF_PHP_FRAMES; PROF_PY_TRUNCATED and PROF_PY_NO_THREAD
 * as for Python), leaf first, user code only (internal functions' frames are
 * left out: their C functions are among the native frames): code the
 * zend_function (PROF_PY_ENTRY: the frame flagged ZEND_CALL_TOP, the
 * outermost of one run of execute_ex), instr the line of its opline (0:
 * unreadable), name its function_name pointer at the sample.
 */
#define PROF_PHP_FRAMES		(1u << 9)

/*
 * php_procs value: where an NTS PHP process keeps its frames, written by
 * collector/ebpf/runtimes/php.c for its version. Offsets in bytes.
 *
 *   eg                  address of executor_globals
 *   eg_current_ex       zend_executor_globals: current_execute_data
 *   ex_opline, ex_func, ex_prev    zend_execute_data fields
 *   ex_call_info        zend_execute_data: This.u1.type_info (call flags in the top bits)
 *   fn_type, fn_name    zend_function: type (byte), common.function_name
 *   op_lineno           zend_op: lineno
 *   call_top            the call flag of the outermost frame of an execute_ex run
 * Execute data fields lie in the first PHP_EX_READ bytes.
 */
#define PHP_EX_READ		56

struct php_proc {
	__u64	eg;
	__u32	call_top;
	__u16	eg_current_ex, ex_opline, ex_func, ex_prev;
	__u16	ex_call_info, fn_type, fn_name, op_lineno;
	__u16	pad[2];
};

/*
 * hs_procs value: a HotSpot JVM's code cache, written by
 * collector/ebpf/runtimes/hotspot.c from the JVM's own structure tables
 * (gHotSpotVMStructs). A pc in [cc_low, cc_high) is Java code, a stub or the
 * interpreter: the interpreter's frames ([interp_low, interp_high)) are
 * walked by their frame pointer, the method at rbp - interp_method; other
 * blobs are found through their heap's segment map (one byte per segment:
 * 0xff free, 0 a block's first segment, else how many segments to step
 * back) and stepped by their fixed frame size (CodeBlob fields at the off_
 * offsets, the blob block_hdr bytes after its block's start).
 */
#define HS_MAX_HEAPS		3
#define HS_SEG_HOPS		64	/* segment map hops per frame */

struct hs_heap {
	__u64	low, high;	/* the heap's memory */
	__u64	segmap;		/* its segment map */
	__u32	log2seg;	/* log2 of its segment size */
	__u32	pad;
};

struct hs_proc {
	__u64	cc_low, cc_high;
	__u64	interp_low, interp_high;
	struct hs_heap heaps[HS_MAX_HEAPS];
	__u16	off_frame_size;		/* CodeBlob::_frame_size (int, words) */
	__u16	off_frame_complete;	/* CodeBlob::_frame_complete_offset (int) */
	__u16	off_code_begin;		/* CodeBlob::_code_begin (address) or _code_offset */
	__u16	block_hdr;		/* sizeof(HeapBlock) */
	__u16	interp_method;		/* Method* at rbp - interp_method */
	__u16	interp_bcp;		/* bcp at rbp - interp_bcp */
	__u16	interp_sender_sp;	/* the caller's sp at rbp - interp_sender_sp */
	__u16	flags;			/* HS_* below: how the JVM's version lays a blob out */
};
#define HS_CODE_OFFSET		1	/* off_code_begin: an int offset from the blob (JDK 23+) */
#define HS_COMPLETE16		2	/* off_frame_complete: an int16_t (JDK 23+) */

/*
 * v8_procs value: where a V8 frame (frame pointer fp) keeps its JSFunction
 * and its context or frame type marker, as the process's V8 exports them
 * (v8dbg_off_fp_function, v8dbg_off_fp_context_or_frame_type); written by
 * collector/ebpf/runtimes/v8.c.
 */
struct v8_proc {
	__s16	off_function;
	__s16	off_context;
	__u32	pad;
};

/*
 * Off-CPU waits are added up in the kernel, in three maps. offcpu_aggs holds
 * one small entry per thread, stack and generation: the sampled waits' count
 * (in 1/1024ths: a wait drawn with probability p counts 1/p) and value (a
 * wait of the threshold T or more its length, a shorter one T: its length
 * over p), and the thread's names. offcpu_stacks holds each stack once per
 * generation, whichever threads waited in it, keyed by its hash (of its
 * kernel, user and runtime frames, not of who waited). offcpu_threads holds
 * each thread's exact off-CPU time and waits, every wait's, added in when
 * one of its waits is sampled (the time since the one before) and when it
 * exits: user space scales the thread's stacks of a generation so that
 * they add up to it (one factor for all of them). A wait is added under the
 * generation current when its stacks were taken (offcpu_gen); user space
 * moves the generation on before it drains, and drains only the
 * generations before the one it just left, to which no program adds any
 * more, reading the stacks it does not hold already and deleting the three
 * maps' entries. The BPF side stores a stack only after the thread's entry
 * of offcpu_aggs that names it, and deletes that entry again if the stack
 * cannot be stored: every stack drained is named by an entry drained with
 * it. A key names the process image its stack was taken in (exec): a
 * process that exec'd since has its waits of before named from the image
 * they were taken in, which user space keeps until they are drained.
 */
#define PROF_OFFCPU_ONE		1024	/* one wait, in offcpu_aggs' and a sample's counts */

struct prof_offcpu_key {
	__u64	stack;		/* hash of the sample's frames (prof_offcpu_skey.stack) */
	__u32	pid, tid;
	__u32	gen;		/* offcpu_gen when the waits' stacks were taken */
	__u32	exec;		/* the image they were taken in (prof_notice.exec) */
};

struct prof_offcpu_val {
	__u64	waits;		/* waits added up, in 1/PROF_OFFCPU_ONE */
	__u64	ns;		/* their values (see above) */
	char	comm[PROF_COMM_LEN];	/* the thread's, at the first wait */
	char	leader_comm[PROF_COMM_LEN];	/* its process's */
};

/* offcpu_stacks key; its value is the struct prof_sample of the first wait in it. */
struct prof_offcpu_skey {
	__u64	stack;
	__u32	gen;
	__u32	pad;
};

/* offcpu_threads: a thread's exact off-CPU time of one generation. */
struct prof_offcpu_tkey {
	__u32	pid, tid;
	__u32	gen;
	__u32	pad;
};

struct prof_offcpu_tval {
	__u64	ns;		/* every wait's length, summed */
	__u64	waits;		/* how many */
	char	comm[PROF_COMM_LEN];
	char	leader_comm[PROF_COMM_LEN];
};

#endif
