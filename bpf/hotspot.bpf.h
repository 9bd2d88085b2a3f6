/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hotspot.bpf.h: the user stack walker's steps through a HotSpot JVM's code
 * cache, included by profile.bpf.c after its walker's types. HotSpot's
 * compiled Java code keeps no frame pointer (unless the JVM runs with
 * -XX:+PreserveFramePointer) and has no unwind tables, so a walk by frame
 * pointer stops at the first compiled frame. What the JVM publishes about
 * its code cache (struct hs_proc, from user space's collector/ebpf/runtimes/
 * hotspot.c) says instead how to step each frame:
 *   - the interpreter keeps rbp as its frame pointer: {caller's rbp, return
 *     address} at rbp, its Method* and bytecode pointer below rbp (kept in
 *     the sample, for user space to name the frame), and its caller's sp at
 *     rbp - interp_sender_sp (a compiled caller's frame is found from it);
 *   - any other code blob (an nmethod, a runtime stub) is looked up through
 *     its heap's segment map and noted in the sample (user space names the
 *     frame after the nmethod's methods or the stub); one with a frame size has its return address
 *     at sp + 8 * frame_size - 8 and the caller's rbp just below, unless the
 *     sample hit it before its frame was built (only the return address is
 *     pushed then); one without (the call stub, adapters) pushes rbp as a
 *     frame pointer, and is walked by it. Where a blob keeps its frame size,
 *     the end of its prologue and its code differs between JDK versions
 *     (hs_proc's off_ fields and flags).
 * Every read of the JVM's memory is bounded and checked; a JVM whose
 * structures make no sense just gets walked by frame pointer, as before.
 */
#ifndef PROFILEFS_BPF_HOTSPOT_H
#define PROFILEFS_BPF_HOTSPOT_H

#define HS_FRAME_WORDS_MAX	(1 << 16)	/* a larger frame size is not believed */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct hs_proc);
} hs_procs SEC(".maps");

/* At the start of a walk of tgid's stack: its code cache, if it is a JVM. */
static __always_inline void
hs_begin(struct walk_buf *buf, __u32 tgid)
{
	struct hs_proc *hp = bpf_map_lookup_elem(&hs_procs, &tgid);

	buf->jn = 0;
	buf->hs_on = 0;
	if (hp != NULL) {
		buf->hs = *hp;
		buf->hs_on = 1;
	}
}

/* At its end: the interpreted frames met, into the sample. */
static __always_inline void
hs_end(struct prof_sample *e, struct walk_buf *buf)
{
	__u32 n = buf->jn;

	if (n == 0 || e->rt != PROF_RT_NONE)
		return;
	if (n > PROF_MAX_JFRAMES)
		n = PROF_MAX_JFRAMES;
	if (bpf_probe_read_kernel(e->j, sizeof(e->j), buf->jf) == 0) {
		e->rt = PROF_RT_JAVA;
		e->j_n = n;
	}
}

/* Keep frame n's HotSpot facts for user space, while there is room. */
static __always_inline void
hs_note(struct walk_buf *buf, __u32 n, __u32 kind, __u64 method, __u64 bcp)
{
	__u32 j = buf->jn;

	if (j >= PROF_MAX_JFRAMES)
		return;
	buf->jf[j].idx = n;
	buf->jf[j].kind = kind;
	buf->jf[j].method = method;
	buf->jf[j].bcp = bcp;
	buf->jn = j + 1;
}

/*
 * One frame whose pc (lpc: the pc looked up) no unwind table covers.
 * Returns -1 when it is not in the JVM's code cache or its blob is not
 * found (the caller walks it by frame pointer), 0 when stepped to the
 * caller, 1 when the walk ends. n: the frame's index in buf->pcs.
 */
static __always_inline int
hs_step(struct walk_buf *buf, struct walk *w, __u64 lpc, __u32 n)
{
	struct hs_proc *hs = &buf->hs;
	struct hs_heap *hh = NULL;
	__u64 rec[2], sender_sp = 0, seg, blob, cfa, ra, bp, code_begin = 0;
	__u8 b = 0;
	__s32 fsize = 0, complete = 0;
	__u32 k, j;

	if (!buf->hs_on || lpc < hs->cc_low || lpc >= hs->cc_high)
		return -1;
	count(PROF_CNT_HS_FRAMES);
	if (lpc >= hs->interp_low && lpc < hs->interp_high) {
		rec[0] = rec[1] = 0;
		bpf_probe_read_user(&rec[0], sizeof(__u64), (void *)(w->bp - hs->interp_method));
		bpf_probe_read_user(&rec[1], sizeof(__u64), (void *)(w->bp - hs->interp_bcp));
		hs_note(buf, n, PROF_J_INTERP, rec[0], rec[1]);
		if (w->bp == 0 || bpf_probe_read_user(rec, sizeof(rec), (void *)w->bp) != 0 ||
		    bpf_probe_read_user(&sender_sp, sizeof(sender_sp),
		    (void *)(w->bp - hs->interp_sender_sp)) != 0) {
			count(PROF_CNT_CFI_READ_ERR);
			return 1;
		}
		/* The caller's sp as the interpreter kept it, if it is sane. */
		w->sp = sender_sp > w->bp && sender_sp - w->bp < (1 << 20) ? sender_sp : w->bp + 16;
		w->bp = rec[0];
		w->pc = rec[1];
		w->exact = 0;
		return 0;
	}
	for (k = 0; k < HS_MAX_HEAPS; k++) {
		if (lpc >= hs->heaps[k].low && lpc < hs->heaps[k].high) {
			hh = &hs->heaps[k];
			break;
		}
	}
	if (hh == NULL || hh->log2seg == 0 || hh->log2seg > 20)
		goto no_blob;
	seg = (lpc - hh->low) >> hh->log2seg;
	for (j = 0; j < HS_SEG_HOPS; j++) {
		if (bpf_probe_read_user(&b, 1, (void *)(hh->segmap + seg)) != 0 || b == 0xff)
			goto no_blob;
		if (b == 0)
			break;
		if (seg < b)
			goto no_blob;
		seg -= b;
	}
	if (b != 0)
		goto no_blob;
	blob = hh->low + (seg << hh->log2seg) + hs->block_hdr;
	/* Three reads: the fields lie 8 to 90 bytes apart, as the version has them. */
	if (hs->off_frame_size > 252 || hs->off_frame_complete > 252 || hs->off_code_begin > 248 ||
	    bpf_probe_read_user(&fsize, 4, (void *)(blob + hs->off_frame_size)) != 0)
		goto no_blob;
	if (hs->flags & HS_COMPLETE16) {
		__s16 c16 = 0;

		if (bpf_probe_read_user(&c16, 2, (void *)(blob + hs->off_frame_complete)) != 0)
			goto no_blob;
		complete = c16;
	} else if (bpf_probe_read_user(&complete, 4, (void *)(blob + hs->off_frame_complete)) != 0) {
		goto no_blob;
	}
	if (hs->flags & HS_CODE_OFFSET) {
		__s32 co = 0;

		if (bpf_probe_read_user(&co, 4, (void *)(blob + hs->off_code_begin)) != 0)
			goto no_blob;
		code_begin = blob + (__s64)co;
	} else if (bpf_probe_read_user(&code_begin, 8, (void *)(blob + hs->off_code_begin)) != 0) {
		goto no_blob;
	}
	hs_note(buf, n, PROF_J_BLOB, blob, 0);
	if (fsize <= 0 || fsize > HS_FRAME_WORDS_MAX)
		return -1;	/* no fixed frame: rbp is its frame pointer */
	if (w->exact && complete > 0 && lpc >= code_begin && lpc < code_begin + complete) {
		/* Not yet in its frame: only the return address is pushed. */
		cfa = w->sp + 8;
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)w->sp) != 0)
			goto fault;
		w->sp = cfa;
		w->pc = ra;
		w->exact = 0;
		return 0;
	}
	cfa = w->sp + (__u64)fsize * 8;
	if (bpf_probe_read_user(rec, sizeof(rec), (void *)(cfa - 16)) != 0)
		goto fault;
	bp = rec[0];
	ra = rec[1];
	w->sp = cfa;
	w->bp = bp;
	w->pc = ra;
	w->exact = 0;
	return 0;
no_blob:
	count(PROF_CNT_HS_NO_BLOB);
	return -1;
fault:
	count(PROF_CNT_CFI_READ_ERR);
	return 1;
}

#endif
