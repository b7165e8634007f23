// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * count.bpf.c - bpfprof count: every call of the probed functions counted
 * and timed from entry to return. Two ways, the function's index in the
 * probe's cookie either way:
 *
 *  - count_session (session uprobes, kernel 6.13+): one program for the
 *    entry and the return of each call, the entry's timestamp in the
 *    call's own session cookie: no per-thread stack, recursion and longjmp
 *    handled by the kernel's return instances;
 *  - count_entry and count_return (uprobe_multi or perf-event uprobes): the
 *    entry pushes its frame on the thread's stack, the return finds its own
 *    (count_abi.h says how).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "count_abi.h"
#include "execstop.bpf.h"

#define EEXIST 17

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* -a and --cgroup: every process mapping the probed files (--cgroup: those
 * in one of the cgroups or below); else the targets map. */
const volatile bool all_procs = false;
const volatile __u32 nr_cgroups = 0;

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, COUNT_CGROUPS);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COUNT_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* the number of functions, set before the load */
	__type(key, __u32);
	__type(value, struct count_stat);
} stats SEC(".maps");

/* The generation of each function's probes (the cookie's high half): while
 * uprobe_multi links are replaced by ones without a detached function, only
 * one of the two fires for a function at any moment. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the number of functions, set before the load */
	__type(key, __u32);
	__type(value, __u32);
} fn_gen SEC(".maps");

static __always_inline bool current_gen(__u64 cookie)
{
	__u32 fn = (__u32)cookie, *g = bpf_map_lookup_elem(&fn_gen, &fn);

	return g && *g == (__u32)(cookie >> 32);
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COUNT_CALLERS);
	__type(key, struct count_caller_key);
	__type(value, __u64);
} callers SEC(".maps");

/* Each thread's stack of entries, in the task itself: made at its first
 * call, freed with the thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct count_tstack);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNT_C_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void counter_add(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counters, &which);

	if (n)
		(*n)++;
}

static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < COUNT_CGROUPS; i++) {
		if (i >= nr_cgroups)
			break;
		if (bpf_current_task_under_cgroup(&cgroups, i) == 1)
			return true;
	}
	return false;
}

static __always_inline bool is_target(__u32 tgid)
{
	if (all_procs)
		return !nr_cgroups || in_cgroups();
	return bpf_map_lookup_elem(&targets, &tgid);
}

/* Session uprobes' kfuncs: only count_session calls them, and it is loaded
 * only where the kernel has them. */
extern __u64 *bpf_session_cookie(void) __ksym __weak;
extern bool bpf_session_is_return(void) __ksym __weak;

/* The call's caller: whoever the return address at the top of the stack returns to. */
static __always_inline void count_caller(__u32 tgid, __u32 fn, __u64 sp, bool kernel)
{
	struct count_caller_key key = { .tgid = tgid, .fn = fn };
	__u64 one = 1, *n;
	long err = kernel ? bpf_probe_read_kernel(&key.ret, sizeof(key.ret), (void *)sp)
			  : bpf_probe_read_user(&key.ret, sizeof(key.ret), (void *)sp);

	if (err)
		key.ret = 0;
	n = bpf_map_lookup_elem(&callers, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
	} else if (bpf_map_update_elem(&callers, &key, &one, BPF_NOEXIST)) {
		n = bpf_map_lookup_elem(&callers, &key); /* another CPU's first call */
		if (n)
			__sync_fetch_and_add(n, 1);
		else
			counter_add(COUNT_C_CALLERS_FULL);
	}
}

static __always_inline void count_time(struct count_stat *s, __u64 t)
{
	__u32 b;

	if (!s->returns || t < s->min_ns)
		s->min_ns = t;
	if (t > s->max_ns)
		s->max_ns = t;
	s->returns++;
	s->total_ns += t;
	b = count_bucket(t);
	if (b < COUNT_HIST_BUCKETS)
		s->hist[b]++;
}

/*
 * Session probes: the entry counts the call and keeps its time in the
 * call's cookie (returning 1 when the call is not counted: no return then);
 * the return of the same call reads it back. A return always belongs to its
 * own entry, whatever the generation now (the guard's switch). kernel: the
 * return address is on the kernel stack (kprobe session, -k).
 */
static __always_inline int count_session_run(struct pt_regs *ctx, bool kernel)
{
	__u64 *ck = bpf_session_cookie(), now, id, cookie;
	__u32 fn;
	struct count_stat *s;

	if (!ck)
		return 1;
	if (bpf_session_is_return()) {
		now = bpf_ktime_get_ns();
		if (!*ck)
			return 0;
		fn = (__u32)bpf_get_attach_cookie(ctx);
		s = bpf_map_lookup_elem(&stats, &fn);
		if (s)
			count_time(s, now - *ck);
		return 0;
	}
	id = bpf_get_current_pid_tgid();
	cookie = bpf_get_attach_cookie(ctx);
	fn = (__u32)cookie;
	if (!is_target(id >> 32) || !current_gen(cookie))
		return 1;
	s = bpf_map_lookup_elem(&stats, &fn);
	if (!s)
		return 1;
	s->calls++;
	count_caller(id >> 32, fn, PT_REGS_SP(ctx), kernel);
	*ck = bpf_ktime_get_ns(); /* last: the bookkeeping above is not the callee's time */
	return 0;
}

/* Session uprobes (BPF_TRACE_UPROBE_SESSION). */
SEC("uprobe")
int count_session(struct pt_regs *ctx)
{
	return count_session_run(ctx, false);
}

/* Session kprobes (BPF_TRACE_KPROBE_SESSION): kernel functions, -k. */
SEC("kprobe")
int count_ksession(struct pt_regs *ctx)
{
	return count_session_run(ctx, true);
}

SEC("uprobe")
int count_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = (__u32)cookie, d;
	struct count_tstack *ts;
	struct count_stat *s;

	if (!is_target(id >> 32) || !current_gen(cookie))
		return 0;
	s = bpf_map_lookup_elem(&stats, &fn);
	if (!s)
		return 0;
	s->calls++;
	count_caller(id >> 32, fn, sp, false);

	ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		counter_add(COUNT_C_THREADS_FULL);
		return 0;
	}
	d = ts->depth;
	if (d >= COUNT_STACK_DEPTH) {
		counter_add(COUNT_C_DEEP);
		return 0;
	}
	ts->fr[d].sp = sp;
	ts->fr[d].fn = fn;
	ts->depth = d + 1;
	ts->fr[d].ts =
		bpf_ktime_get_ns(); /* last: the bookkeeping above is not the callee's time */
	return 0;
}

SEC("uretprobe")
int count_return(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = (__u32)cookie, d;
	struct count_tstack *ts;
	struct count_stat *s;
	__u64 t, entry_sp = sp - 8; /* the ret popped the return address */

	if (!is_target(id >> 32) || !current_gen(cookie))
		return 0;
	ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL, 0);
	if (!ts)
		return 0;
	for (int i = 0; i < COUNT_STACK_DEPTH; i++) {
		d = ts->depth;
		if (d == 0 || d > COUNT_STACK_DEPTH)
			break;
		d--;
		if (ts->fr[d].sp > entry_sp)
			break; /* an outer frame: this call's entry was not recorded */
		if (ts->fr[d].sp < entry_sp) {
			/* a deeper frame that never returned (longjmp, probe detached) */
			ts->depth = d;
			counter_add(COUNT_C_UNMATCHED);
			continue;
		}
		if (ts->fr[d].fn != fn)
			break; /* another function at the same stack pointer: a tail call's */
		ts->depth = d;
		t = now - ts->fr[d].ts;
		s = bpf_map_lookup_elem(&stats, &fn);
		if (s)
			count_time(s, t);
		return 0;
	}
	counter_add(COUNT_C_NOFRAME);
	return 0;
}

/* --children: a target that execs (the command's child) is stopped there and
 * listed in execs with its start time (start_boottime, ns: the pid may be
 * another process's by the time userspace looks); userspace probes the new
 * executable's functions and lets it go on (SIGCONT, by a pidfd it checked
 * against that time). Set by userspace once the command runs. */
volatile bool follow_exec = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COUNT_EXECS);
	__type(key, __u32);
	__type(value, __u64);
} execs SEC(".maps");

/* -- COMMAND: the command stops at its exec, before its first instruction;
 * --children: so does any other target. */
SEC("tp_btf/sched_process_exec")
int count_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 start;

	if (execstop__at_exec(&targets, COUNT_TARGET_STOP, COUNT_TARGET_ON) || !follow_exec ||
	    !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	start = bpf_get_current_task_btf()->group_leader->start_boottime;
	if (bpf_map_update_elem(&execs, &tgid, &start, BPF_ANY))
		counter_add(COUNT_C_EXECS_FULL);
	else
		bpf_send_signal(SIGSTOP);
	return 0;
}

/* ... and again at its entry point, its libraries mapped: the probes go in then. */
SEC("uprobe")
int count_stop(struct pt_regs *ctx)
{
	execstop__at_entry(&targets);
	return 0;
}

/* --children: a process a target forks is a target, before it first runs
 * (as record's target_fork); exec'd children stay targets. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(count_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 on = COUNT_TARGET_ON;

	if (ptgid == ctgid || !bpf_map_lookup_elem(&targets, &ptgid))
		return 0; /* a thread, or not a target's child */
	if (bpf_map_update_elem(&targets, &ctgid, &on, BPF_ANY))
		counter_add(COUNT_C_TARGETS_FULL);
	return 0;
}

/* ... and leaves the map with its last thread: its pid, once reused, is not one. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(count_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	if (BPF_CORE_READ(task, signal, live.counter) > 0)
		return 0;
	bpf_map_delete_elem(&targets, &tgid);
	return 0;
}
