// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c: the kernel half of the CPU sampler. do_sample runs on each
 * tick of a software cpu-clock perf event (one per online CPU, frequency mode)
 * and sends the current task's kernel and user stacks, walked by frame
 * pointers with bpf_get_stack, to user space through one ring buffer; no stack
 * id map, so stacks never collide. Two raw scheduler tracepoints (no tracefs
 * needed) tell user space when a process exec's (mappings change: capture
 * them now) and exits (forget it). Everything lost or failing is counted in per-CPU counters. Aggregation
 * and symbolization are left to collector/.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profile.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
/* Wake the reader only past this much unread data; it also polls on a timer. */
const volatile __u64 wakeup_bytes = 1 << 20;

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

SEC("perf_event")
int
do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task;
	struct prof_sample *e;

	count(PROF_CNT_SAMPLES);
	if (tid == 0) {
		count(PROF_CNT_IDLE);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROF_CNT_DROP_RINGBUF);
		return 0;
	}
	e->hdr.kind = PROF_EV_SAMPLE;
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.time_ns = bpf_ktime_get_ns();
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	e->kstack_len = 0;
	if (kernel_stacks) {
		e->kstack_len = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
		if (e->kstack_len < 0)
			count(PROF_CNT_ERR_KSTACK);
	}
	e->ustack_len = 0;
	task = (struct task_struct *)bpf_get_current_task();
	/* Kernel threads have no user stack: not an error. */
	if (user_stacks && BPF_CORE_READ(task, mm) != NULL) {
		e->ustack_len = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack),
		    BPF_F_USER_STACK);
		if (e->ustack_len < 0)
			count(PROF_CNT_ERR_USTACK);
	}
	bpf_ringbuf_submit(e, wakeup_flag());
	return 0;
}

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
	/*
	 * An exec wakes the reader at once: it reads the new mappings while
	 * the process still exists, however short its life.
	 */
	bpf_ringbuf_submit(n, kind == PROF_EV_EXEC ? BPF_RB_FORCE_WAKEUP : wakeup_flag());
}

SEC("raw_tp/sched_process_exec")
int
on_exec(void *ctx)
{
	notify(PROF_EV_EXEC);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int
on_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	/* Only the thread group leader's exit ends the process's mappings. */
	if ((id >> 32) == (__u32)id)
		notify(PROF_EV_EXIT);
	return 0;
}
