/*
 * profile.h: the types shared by bpf/profile.bpf.c (kernel side) and
 * collector/ebpf.c (user side). Fixed-size fields only, so both compilers lay
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

enum prof_kind {
	PROF_EV_SAMPLE	= 1,	/* struct prof_sample */
	PROF_EV_EXEC	= 2,	/* struct prof_notice: pid just exec'd */
	PROF_EV_EXIT	= 3,	/* struct prof_notice: thread group leader exited */
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
};

struct prof_sample {
	struct prof_hdr	hdr;
	__u64	cgroup_id;
	__s32	kstack_len;	/* bytes written into kstack, or a negative errno */
	__s32	ustack_len;	/* bytes written into ustack, or a negative errno */
	char	comm[PROF_COMM_LEN];
	__u64	kstack[PROF_MAX_STACK];	/* leaf first */
	__u64	ustack[PROF_MAX_STACK];	/* leaf first */
};

/* Indexes of the per-CPU counter array "counters". */
enum prof_counter {
	PROF_CNT_SAMPLES = 0,	/* perf events handled (idle included) */
	PROF_CNT_IDLE,		/* samples of the idle task, not sent */
	PROF_CNT_DROP_RINGBUF,	/* ring buffer full: sample lost */
	PROF_CNT_DROP_EVENT,	/* ring buffer full: exec/exit notice lost */
	PROF_CNT_ERR_KSTACK,	/* bpf_get_stack (kernel) failed */
	PROF_CNT_ERR_USTACK,	/* bpf_get_stack (user) failed for a user task */
	PROF_CNT_MAX
};

#endif
