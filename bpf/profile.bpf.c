// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * profile.bpf.c - the sampler. Runs on every cpu-clock perf_event overflow,
 * reads the kernel and user stacks and counts them in the kernel, so userspace
 * only sees one record per distinct (process, stacks) pair per drain.
 *
 * Stacks: the kernel stack by bpf_get_stack(), the user stack by the walker
 * in unwind.bpf.h (tables or frame pointers), into per-CPU state; a 64-bit
 * hash of the frames is the stack id. The stacks map is keyed by that id. Unlike
 * BPF_MAP_TYPE_STACK_TRACE (one stack per bucket, -EEXIST on a bucket clash)
 * distinct stacks never evict or reject each other; a full map is counted.
 *
 * Double buffering: there are two (counts, stacks) map sets. Every run reads
 * active_buf once and writes only into that set. Counts only grow: userspace
 * reads the active set in place at most drains (keys and stacks stay, so a
 * stack seen once takes the cheap path below for as long as the set lives).
 * When the set is half full, or sampling stopped, userspace flips active_buf,
 * waits for an RCU grace period (a map-in-map update does synchronize_rcu(),
 * and perf_event programs run under rcu_read_lock()), and only then reads and
 * clears the other set. No sample is lost or counted twice (collector.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "profile_abi.h"
#include "cpu_state.bpf.h"
#include "unwind.bpf.h"
#if defined(__TARGET_ARCH_x86)
#include "kwalk.bpf.h"
#endif

#define PF_KTHREAD 0x00200000
#define EEXIST	   17
#define E2BIG	   7

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Filters, set by userspace before load. */
const volatile bool filter_tgids = false; /* only tgids in the tgids map */
const volatile bool drop_kernel = false;  /* -U: keep the sample, drop kernel frames */
const volatile bool drop_user = false;	  /* -K: keep the sample, drop user frames */
const volatile bool include_idle = false; /* count the idle task (pid 0) */
const volatile bool per_thread = false;	  /* put the tid in the key */
const volatile __u32 nr_cgroups = 0;	  /* --cgroup: only tasks under one of these */
const volatile bool fp_walker = true;	  /* false: bpf_get_stack() walks user frame pointers */

#define MAX_CGROUPS 16

/* Which map set runs write to; flipped by userspace at every drain. */
volatile __u32 active_buf = 0;
/* Set by userspace once it can read and clear the hot slots (its mmap). */
volatile __u32 hot_slots = 0;

/* Sizes, not BTF types, for the inner maps: libbpf builds the outer maps'
 * templates from these definitions, where the key struct is only declared. */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(struct bp_sample_key));
	__uint(value_size, sizeof(__u64));
} counts_0 SEC(".maps"), counts_1 SEC(".maps");

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Preallocated: allocating in interrupt context can fail (and did, about
	 * once per thousand new stacks). Userspace sizes it from F x CPUs x the
	 * drain period, so it stays small. */
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(struct bp_stack));
} stacks_0 SEC(".maps"), stacks_1 SEC(".maps");

/* Slot i holds counts_i, stacks_i: filled by userspace before attach (not by
 * libbpf, which would wait for an RCU grace period per slot in turn). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, PROFILE_NR_BUFS);
	__type(key, __u32);
	__array(values, struct counts_map);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, PROFILE_NR_BUFS);
	__type(key, __u32);
	__array(values, struct stacks_map);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by userspace to the number of targets */
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

/* --cgroup filter: cgroup v2 directories (fds set by userspace). */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, MAX_CGROUPS);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

/* tgid -> the image we last told userspace about. LRU: an evicted entry only
 * costs a repeated (idempotent) notice. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct bp_proc_seen);
} seen SEC(".maps");

/* One mixing step per frame; 0 is reserved for "no stack". */
static __always_inline __u64 stack_hash(const struct bp_stack *st, __u64 seed)
{
	__u64 h = seed ^ ((__u64)st->nr * BP_GOLDEN);

	for (__u32 i = 0; i < PROFILE_MAX_DEPTH; i++) {
		if (i >= st->nr)
			break;
		h = bp_hash_step(h, st->ips[i]);
	}
	return bp_hash_end(h);
}

/*
 * Fills st and sets *id (STACK_ID_NONE for an empty stack, e.g. the kernel
 * stack of a sample taken in user mode). Returns false if the stack could not
 * be read at all.
 */
static __always_inline bool read_stack(void *ctx, struct bp_stack *st, __u64 flags, __u64 seed,
				       __u64 *id)
{
	long n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);

	*id = STACK_ID_NONE;
	st->nr = 0;
	if (n < 0)
		return false;
	st->nr = n / sizeof(__u64);
	if (st->nr)
		*id = stack_hash(st, seed);
	return true;
}

static __always_inline void notify_new_image(__u32 tgid, __u64 start_time, __u64 exec_id,
					     const char *comm, struct task_struct *task)
{
	struct bp_proc_seen *old = bpf_map_lookup_elem(&seen, &tgid);
	struct bp_proc_seen cur = { .start_time = start_time, .exec_id = exec_id };
	struct bp_proc_event *e;

	if (old && old->start_time == start_time && old->exec_id == exec_id)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_NOTIFY_LOST); /* retried at the next sample: seen not updated */
		return;
	}
	e->tgid = tgid;
	e->kind = PROC_EVENT_NEW_IMAGE;
	e->start_time = start_time;
	e->exec_id = exec_id;
	__builtin_memcpy(e->comm, comm, sizeof(e->comm));
	e->mm_sig = 0;
	/* The sampled thread's mm: the leader's is gone once the main thread exits. */
	if (task->mm)
		e->mm_sig = bp_mm_sig(task->mm->start_code, task->mm->end_code,
				      task->mm->start_brk, task->mm->arg_start, task->mm->env_end);
	bpf_ringbuf_submit(e, 0);
	bpf_map_update_elem(&seen, &tgid, &cur, BPF_ANY);
}

#if defined(__TARGET_ARCH_x86)
/* kw_verify (tests): the walk must equal bpf_get_stack(); if not, counted,
 * and the kernel's stack is used. */
static __always_inline bool kw_check(struct bpf_perf_event_data *ctx, struct cpu_state *scr)
{
	long n = bpf_get_stack(ctx, scr->check.ips, sizeof(scr->check.ips), 0);
	bool same = n >= 0 && (__u32)(n / sizeof(__u64)) == scr->kernel.nr;

	for (__u32 i = 0; same && i < PROFILE_MAX_DEPTH; i++) {
		if (i >= scr->kernel.nr)
			break;
		if (scr->kernel.ips[i] != scr->check.ips[i])
			same = false;
	}
	if (!same)
		stat_inc(STAT_KWALK_DIFF);
	return same;
}
#endif

/*
 * The kernel stack of a sample taken in kernel mode, into the CPU's state
 * (stack and id). 0, or SAMPLE_F_KSTACK_ERR if it could not be read. A
 * global function: the verifier checks it once, on its own, instead of once
 * for every way the user-stack part can go after it - half of the program's
 * verification time, which is most of bpfprof's start-up.
 */
__attribute__((noinline)) int sample_kstack(struct bpf_perf_event_data *ctx)
{
	struct cpu_state *scr = cpu_state_get();
	bool walked = false;

	if (!scr)
		return SAMPLE_F_KSTACK_ERR;
	scr->kstack = STACK_ID_NONE;
#if defined(__TARGET_ARCH_x86)
	if (kw_enabled) {
		walked = kw_walk(ctx, &scr->uw, &scr->kernel);
		stat_inc(walked ? STAT_KWALK_OK : STAT_KWALK_FALLBACK);
		if (walked && kw_verify)
			walked = kw_check(ctx, scr);
		if (walked && scr->kernel.nr)
			scr->kstack = stack_hash(&scr->kernel, BP_SEED_KSTACK);
	}
#endif
	if (!walked && !read_stack(ctx, &scr->kernel, 0, BP_SEED_KSTACK, &scr->kstack)) {
		stat_inc(STAT_KSTACK_ERR);
		return SAMPLE_F_KSTACK_ERR;
	}
	return 0;
}

/* A free hot slot taken by a key now in the counts map: count first, then
 * the hash, so a reader that sees the hash sees a count of this claim. */
static __always_inline void hot_claim(struct bp_hot_slot *slot, __u64 khash)
{
	slot->count = 0;
	barrier();
	slot->khash = khash;
}

/* Returns 0 if the stack is (now) in the map, else the map's error. */
static __always_inline long store_stack(void *smap, __u64 id, const struct bp_stack *st)
{
	long err;

	if (id == STACK_ID_NONE)
		return 0;
	err = bpf_map_update_elem(smap, &id, st, BPF_NOEXIST);
	return err == -EEXIST ? 0 : err;
}

static __always_inline bool in_user_mode(struct bpf_perf_event_data *ctx)
{
	/* Full-width loads: the verifier rejects narrowed context accesses. */
#if defined(__TARGET_ARCH_x86)
	return (*(volatile __u64 *)&ctx->regs.cs & 3) == 3;
#elif defined(__TARGET_ARCH_arm64)
	return (*(volatile __u64 *)&ctx->regs.pstate & 0xf) == 0; /* EL0 */
#else
	return false; /* unknown: always ask the kernel */
#endif
}

/* True if the current task is in one of the --cgroup cgroups or below. */
static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < MAX_CGROUPS; i++) {
		if (i >= nr_cgroups)
			break;
		if (bpf_current_task_under_cgroup(&cgroups, i) == 1)
			return true;
	}
	return false;
}

/*
 * The user stack: the walker, with the process's unwind tables when they are
 * loaded (--unwind auto|dwarf), by frame pointers otherwise. 32-bit tasks
 * and other architectures: the kernel's frame-pointer walk (bpf_get_stack).
 * pctx: a perf_event sample's context (its registers), or NULL for the
 * current task's saved user registers (--off-cpu, on the scheduler switch).
 */
static __always_inline bool read_user_stack(void *ctx, struct bpf_perf_event_data *pctx,
					    struct task_struct *task, struct cpu_state *cs,
					    __u32 tgid, __u64 start_time, __u64 exec_id, __u64 *id)
{
	/* Both before the process entry: see the caches in unwind.bpf.h. */
	__u64 gen = uw_gen, pgen = uw_proc_gen;
	struct uw_state *ws = &cs->uw;
	struct bp_stack *st = &cs->user;
	bool tables = false;

	barrier();
	if (unwind_mode != UNWIND_MODE_FP) {
		TM_NOW(t0);
		tables = uw_proc(ws, tgid, start_time, exec_id, pgen);
		stat_inc(tables ? STAT_UNWIND_WALKS : STAT_UNWIND_NOT_READY);
		TM_ADD(TM_UPROC, bpf_ktime_get_ns() - t0);
	}
#if defined(__TARGET_ARCH_x86)
	if (fp_walker) { /* false on kernels without bpf_loop(): see the collector */
		enum uw_result r;
		__u64 rcs, ip, sp, bp;

		*id = STACK_ID_NONE;
		st->nr = 0;
		if (pctx)
			r = uw_walk(pctx, task, ws, tables, gen, start_time, exec_id, st);
		else if (uw_task_regs(task, &rcs, &ip, &sp, &bp))
			r = uw_walk_regs(task, ws, tables, gen, start_time, exec_id, st, rcs, ip, sp,
					 bp);
		else
			r = UW_NO_REGS;
		switch (r) {
		case UW_OK:
			TM_ADD(TM_UFRAMES, st->nr);
			if (st->nr)
				*id = stack_hash(st, BP_SEED_USTACK);
			return true;
		case UW_NO_REGS:
			return false;
		case UW_COMPAT:
			break;
		}
	}
#endif
	return read_stack(ctx, st, BPF_F_USER_STACK, BP_SEED_USTACK, id);
}

/* The user stack, into the CPU's state (stack and id). 0, or
 * SAMPLE_F_USTACK_ERR. Global, like sample_kstack(): checked once. */
__attribute__((noinline)) int sample_ustack(struct bpf_perf_event_data *ctx, __u32 tgid,
					    __u64 start_time, __u64 exec_id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct cpu_state *cs = cpu_state_get();

	if (!cs)
		return SAMPLE_F_USTACK_ERR;
	cs->ustack = STACK_ID_NONE;
	if (!read_user_stack(ctx, ctx, task, cs, tgid, start_time, exec_id, &cs->ustack) ||
	    cs->ustack == STACK_ID_NONE) {
		stat_inc(STAT_USTACK_ERR);
		return SAMPLE_F_USTACK_ERR;
	}
	return 0;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct bp_sample_key key = {};
	struct task_struct *task;
	struct cpu_state *scr;
	__u32 buf;
	void *cmap, *smap;
	__u64 *cnt, one = 1, khash = 0;
	struct bp_hot_slot *slot = NULL;
	long err;
	TM_NOW(t_start);

	if (tid == 0 && !include_idle) {
		stat_inc(STAT_IDLE);
		return 0;
	}
	if (filter_tgids && !bpf_map_lookup_elem(&tgids, &tgid)) {
		stat_inc(STAT_FILTERED);
		return 0;
	}
	if (nr_cgroups && !in_cgroups()) {
		stat_inc(STAT_FILTERED);
		return 0;
	}
	stat_inc(STAT_SAMPLES);

	scr = cpu_state_get();
	if (!scr) {
		stat_inc(STAT_LOST_NO_MAP);
		return 0;
	}

	/* BTF pointer: plain (CO-RE relocated) loads, no probe-read helper calls. */
	task = bpf_get_current_task_btf();
	key.tgid = tgid;
	key.tid = per_thread ? tid : 0;
	key.start_time = task->group_leader->start_boottime;
	key.exec_id = task->group_leader->self_exec_id;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));

	TM_NOW(t_ids);
	/* A sample taken in user mode has no kernel stack: skip the helper call. */
	if (!drop_kernel && !in_user_mode(ctx)) {
		key.flags |= sample_kstack(ctx) & SAMPLE_F_KSTACK_ERR;
		key.kstack = scr->kstack;
	}
	TM_NOW(t_kstack);
	if (task->flags & PF_KTHREAD) {
		key.flags |= SAMPLE_F_KTHREAD;
	} else if (!drop_user) {
		key.flags |= sample_ustack(ctx, tgid, key.start_time, key.exec_id) &
			     SAMPLE_F_USTACK_ERR;
		key.ustack = scr->ustack;
	}

	TM_NOW(t_ustack);
	TM_ADD(TM_SAMPLES, 1);
	TM_ADD(TM_IDENTITY, t_ids - t_start);
	TM_ADD(TM_KSTACK, t_kstack - t_ids);
	TM_ADD(TM_USTACK, t_ustack - t_kstack);
	TM_NOW(t_agg);
	buf = active_buf & (PROFILE_NR_BUFS - 1);
	/* Hottest path: a key this CPU counts in a slot of its own. Runs do
	 * not nest on a CPU and only this CPU writes its slots: plain adds. */
	if (hot_slots) {
		khash = bp_key_hash(&key);
		slot = &scr->hot[buf][khash & (PROFILE_HOT_SLOTS - 1)];
		if (slot->khash == khash) {
			slot->count++;
			scr->stats[STAT_HOT_HITS]++;
			TM_ADD(TM_HOT, bpf_ktime_get_ns() - t_agg);
			TM_ADD(TM_HOT_N, 1);
			return 0;
		}
	}
	cmap = bpf_map_lookup_elem(&counts, &buf);
	if (!cmap) {
		stat_inc(STAT_LOST_NO_MAP);
		return 0;
	}

	/* Hot path: a (process, stacks) pair counted before in this set; its
	 * stacks are stored already. Counted in the map, and from now on in
	 * the CPU's slot if that is free (the key is in the map: userspace
	 * finds it there). */
	cnt = bpf_map_lookup_elem(cmap, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
		if (slot && !slot->khash)
			hot_claim(slot, khash);
		TM_ADD(TM_HOT, bpf_ktime_get_ns() - t_agg);
		TM_ADD(TM_HOT_N, 1);
		return 0;
	}
	smap = bpf_map_lookup_elem(&stacks, &buf);
	if (!smap) {
		stat_inc(STAT_LOST_NO_MAP);
		return 0;
	}

	/* A new key in this set: the only place a new program image can show up
	 * first, so the notice check costs nothing on the hot path. */
	stat_inc(STAT_NEW_KEYS);
	if (!(key.flags & SAMPLE_F_KTHREAD) && !drop_user)
		notify_new_image(tgid, key.start_time, key.exec_id, key.comm, task);

	err = store_stack(smap, key.kstack, &scr->kernel);
	if (!err)
		err = store_stack(smap, key.ustack, &scr->user);
	if (err) {
		stat_inc(err == -E2BIG ? STAT_LOST_STACKS_FULL : STAT_LOST_STACK_ERR);
		return 0;
	}
	err = bpf_map_update_elem(cmap, &key, &one, BPF_NOEXIST);
	if (err == -EEXIST) { /* another CPU created it just now */
		cnt = bpf_map_lookup_elem(cmap, &key);
		if (cnt) {
			__sync_fetch_and_add(cnt, 1);
			err = 0;
		}
	}
	if (err)
		stat_inc(STAT_LOST_COUNTS_FULL);
	else if (slot && !slot->khash)
		hot_claim(slot, khash);
	TM_ADD(TM_NEW, bpf_ktime_get_ns() - t_agg);
	TM_ADD(TM_NEW_N, 1);
	return 0;
}

#include "offcpu.bpf.h"
