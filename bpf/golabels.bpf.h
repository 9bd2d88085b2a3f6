/* SPDX-License-Identifier: GPL-2.0 */
/*
 * golabels.bpf.h: the pprof labels of the goroutine a sample caught, for Go
 * processes user space entered into go_procs (collector/ebpf/runtimes/golabels.c
 * found the offsets of their runtime). Included by profile.bpf.c, which
 * calls walk_golabels from fill_sample.
 *
 * The strings are copied here, at the sample, not read later by user space
 * from a pointer the sample carries: a label set lives only as long as a
 * goroutine or a context refers to it, and once the collector frees it its
 * memory is reused, for another label set as well; at the sample the
 * goroutine still holds it, so what is read is what the goroutine ran with.
 *
 * The running g is read from the thread's TLS (fs_base + tls_g), which the
 * runtime keeps current at every switch of g whatever runs (Go code,
 * assembly, the scheduler, C through cgo), unlike r14, which holds g only
 * inside Go's register ABI. Its m's curg is the user goroutine (g itself,
 * or the one g0 or the signal stack runs for); a curg whose m is not that m
 * is a torn read and is skipped. Its labels point to runtime/pprof's
 * labelMap: up to Go 1.23 a map[string]string (a pointer to an hmap: the
 * bucket array, 8 slots per bucket, overflow chains), from Go 1.24 a struct
 * that starts with a slice of pairs. Each step of the bpf_loop
 * callback handles one slot or pair: at most a bucket read and two string
 * reads. Bounds are PROF_MAX_GOLABELS pairs and PROF_GO_STR bytes (profile.h);
 * maps past GO_MAX_BUCKETS buckets or in the middle of growing are read in
 * part and marked truncated.
 */
#ifndef PROFILEFS_GOLABELS_BPF_H
#define PROFILEFS_GOLABELS_BPF_H

#define GO_MIN_TOPHASH		5	/* tophash values below are empty or evacuated slots */
#define GO_LOOP_STEPS		(GO_MAX_BUCKETS * 8 * 2)	/* slots, with some overflow buckets */
#define GO_STR_ROOM		(PROF_GO_STR + 256)	/* an offset < PROF_GO_STR plus a length < 256 */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct go_proc);
} go_procs SEC(".maps");

struct go_buf {
	struct prof_golabel	labels[PROF_MAX_GOLABELS];
	char			str[GO_STR_ROOM];
	__u8			bucket[GO_BUCKET_SIZE];
	struct go_proc		gp;
	__u64			cur;		/* map: the bucket read; slice: the pairs' array */
	__u64			next;		/* map: the next bucket of the array */
	__u32			left;		/* map: buckets of the array after next; slice: pairs */
	__u32			slot;		/* map: slot in cur; slice: pair index */
	__u32			n, pos, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct go_buf);
} go_bufs SEC(".maps");

/* Copy one pair (Go strings: pointer, length) into b. Nonzero: no room for more. */
static __always_inline int
go_pair(struct go_buf *b, __u64 kp, __u64 kl, __u64 vp, __u64 vl)
{
	__u32 n = b->n, pos = b->pos, off;

	if (n >= PROF_MAX_GOLABELS) {
		b->flags |= PROF_GO_TRUNCATED;
		return 1;
	}
	if (kl == 0 || kl > PROF_GO_KEY_MAX || vl > PROF_GO_VALUE_MAX ||
	    pos + kl + vl > PROF_GO_STR) {
		b->flags |= PROF_GO_LEFT_OUT;
		return 0;
	}
	if (kp == 0 || kp >= USER_TOP || (vl > 0 && (vp == 0 || vp >= USER_TOP)))
		goto fault;
	off = pos & (PROF_GO_STR - 1);
	if (bpf_probe_read_user(&b->str[off], kl & 0xff, (void *)kp) != 0)
		goto fault;
	off = (pos + kl) & (PROF_GO_STR - 1);
	if (vl > 0 && bpf_probe_read_user(&b->str[off], vl & 0xff, (void *)vp) != 0)
		goto fault;
	b->labels[n & (PROF_MAX_GOLABELS - 1)].key = pos;
	b->labels[n & (PROF_MAX_GOLABELS - 1)].klen = kl;
	b->labels[n & (PROF_MAX_GOLABELS - 1)].value = pos + kl;
	b->labels[n & (PROF_MAX_GOLABELS - 1)].vlen = vl;
	b->n = n + 1;
	b->pos = pos + kl + vl;
	return 0;
fault:
	b->flags |= PROF_GO_TRUNCATED;
	return 0;
}

/* A string header {ptr, len} at off of the bucket just read. */
static __always_inline void
go_bucket_str(struct go_buf *b, __u32 off, __u64 *p, __u64 *l)
{
	__u64 s[2] = { 0, 0 };

	if (off <= GO_BUCKET_SIZE - 16)
		bpf_probe_read_kernel(s, sizeof(s), b->bucket + off);
	*p = s[0];
	*l = s[1];
}

static long
go_map_step(__u32 i, void *arg)
{
	__u32 zero = 0, slot;
	struct go_buf *b = bpf_map_lookup_elem(&go_bufs, &zero);
	__u64 kp, kl, vp, vl, ovf = 0;
	__u8 top;

	if (b == NULL || b->cur == 0)
		return 1;
	slot = b->slot & 7;
	if (slot == 0 && (b->cur >= USER_TOP ||
	    bpf_probe_read_user(b->bucket, sizeof(b->bucket), (void *)b->cur) != 0)) {
		b->flags |= PROF_GO_TRUNCATED;
		return 1;
	}
	top = b->bucket[slot];
	if (top >= GO_MIN_TOPHASH) {
		go_bucket_str(b, b->gp.bkt_keys + slot * 16, &kp, &kl);
		go_bucket_str(b, b->gp.bkt_values + slot * 16, &vp, &vl);
		if (go_pair(b, kp, kl, vp, vl) != 0)
			return 1;
	}
	/* emptyRest (0): nothing more in this bucket nor in its overflow chain. */
	if (top != 0 && slot < 7) {
		b->slot = slot + 1;
		return 0;
	}
	if (top != 0 && b->gp.bkt_overflow <= GO_BUCKET_SIZE - 8)
		bpf_probe_read_kernel(&ovf, sizeof(ovf), b->bucket + b->gp.bkt_overflow);
	b->slot = 0;
	if (ovf != 0) {
		b->cur = ovf;
	} else if (b->left > 0) {
		b->cur = b->next;
		b->next += GO_BUCKET_SIZE;
		b->left--;
	} else {
		b->cur = 0;
		return 1;
	}
	return 0;
}

static long
go_slice_step(__u32 i, void *arg)
{
	__u32 zero = 0;
	struct go_buf *b = bpf_map_lookup_elem(&go_bufs, &zero);
	__u64 pair[4];

	if (b == NULL || b->slot >= b->left)
		return 1;
	if (bpf_probe_read_user(pair, sizeof(pair), (void *)(b->cur + (__u64)b->slot * 32)) != 0) {
		b->flags |= PROF_GO_TRUNCATED;
		return 1;
	}
	b->slot++;
	return go_pair(b, pair[0], pair[1], pair[2], pair[3]);
}

static __always_inline void
walk_golabels(struct prof_sample *e, struct task_struct *task, __u32 tgid)
{
#ifdef __TARGET_ARCH_x86
	struct go_proc *gp = bpf_map_lookup_elem(&go_procs, &tgid);
	__u64 fsbase, g = 0, m = 0, curg = 0, m2 = 0, labels = 0, h[6];
	struct go_buf *b;
	__u32 zero = 0, k;

	if (!unwind_tables || gp == NULL || e->rt != PROF_RT_NONE ||
	    (b = bpf_map_lookup_elem(&go_bufs, &zero)) == NULL)
		return;
	b->gp = *gp;
	fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (fsbase == 0 ||
	    bpf_probe_read_user(&g, sizeof(g), (void *)(fsbase + b->gp.tls_g)) != 0 || g == 0 ||
	    bpf_probe_read_user(&m, sizeof(m), (void *)(g + b->gp.g_m)) != 0 || m == 0 ||
	    bpf_probe_read_user(&curg, sizeof(curg), (void *)(m + b->gp.m_curg)) != 0 ||
	    curg == 0 ||
	    bpf_probe_read_user(&m2, sizeof(m2), (void *)(curg + b->gp.g_m)) != 0 || m2 != m ||
	    bpf_probe_read_user(&labels, sizeof(labels), (void *)(curg + b->gp.g_labels)) != 0 ||
	    labels == 0 || labels >= USER_TOP)
		return;		/* no goroutine, or one without labels: no runtime part */
	e->rt = PROF_RT_GO;
	e->go_n = 0;
	e->go_flags = PROF_GO_WALKED;
	count(PROF_CNT_GO_LABELS);
	b->n = 0;
	b->pos = 0;
	b->flags = 0;
	b->slot = 0;
	if (b->gp.layout == GO_LAYOUT_MAP) {
		__u32 nb;
		__u8 lb = 0;

		/*
		 * labels points to the labelMap variable, a map: a pointer to
		 * the hmap, whose count, B, buckets, oldbuckets all lie in its
		 * first 48 bytes.
		 */
		if (bpf_probe_read_user(&labels, sizeof(labels), (void *)labels) != 0 ||
		    labels == 0 || labels >= USER_TOP ||
		    bpf_probe_read_user(h, sizeof(h), (void *)labels) != 0)
			goto fault;
		if (b->gp.hmap_b < sizeof(h))
			bpf_probe_read_kernel(&lb, 1, (__u8 *)h + b->gp.hmap_b);
		if (b->gp.hmap_buckets > sizeof(h) - 8 || b->gp.hmap_oldbuckets > sizeof(h) - 8)
			goto fault;
		bpf_probe_read_kernel(&b->cur, 8, (__u8 *)h + b->gp.hmap_buckets);
		bpf_probe_read_kernel(&b->next, 8, (__u8 *)h + b->gp.hmap_oldbuckets);
		if (b->next != 0)
			b->flags |= PROF_GO_TRUNCATED;	/* growing: some pairs still in the old array */
		nb = lb > 3 ? GO_MAX_BUCKETS : 1u << lb;
		if (lb > 3)
			b->flags |= PROF_GO_TRUNCATED;
		b->next = b->cur + GO_BUCKET_SIZE;
		b->left = nb - 1;
		bpf_loop(GO_LOOP_STEPS, go_map_step, NULL, 0);
	} else if (b->gp.layout == GO_LAYOUT_SLICE) {
		if (bpf_probe_read_user(h, 16, (void *)labels) != 0)
			goto fault;
		b->cur = h[0];
		b->left = h[1] > PROF_MAX_GOLABELS ? PROF_MAX_GOLABELS + 1 : (__u32)h[1];
		if (b->cur == 0 || b->cur >= USER_TOP)
			b->left = 0;
		bpf_loop(PROF_MAX_GOLABELS + 1, go_slice_step, NULL, 0);
	}
	k = b->n;
	if (k > PROF_MAX_GOLABELS)
		k = PROF_MAX_GOLABELS;
	e->go_n = k;
	e->go_flags |= b->flags;
	if (bpf_probe_read_kernel(e->go, sizeof(e->go), b->labels) != 0 ||
	    bpf_probe_read_kernel(e->go_str, sizeof(e->go_str), b->str) != 0)
		e->go_n = 0;
	if (b->flags & PROF_GO_TRUNCATED)
		count(PROF_CNT_GO_TRUNCATED);
	return;
fault:
	e->go_flags |= PROF_GO_TRUNCATED;
	count(PROF_CNT_GO_TRUNCATED);
#endif
}

#endif
