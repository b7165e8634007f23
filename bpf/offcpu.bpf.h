/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * offcpu.bpf.h - --off-cpu's programs and maps (src/collector/offcpu.c
 * drives them). A part of profile.bpf.c's object, included at its end: it
 * counts into the sampler's maps with the sampler's walkers, filters and
 * stack store, so it does not stand alone (tests/lint/headers.sh skips it),
 * and loading it costs no second skeleton.
 */
#ifndef BPFPROF_OFFCPU_BPF_H
#define BPFPROF_OFFCPU_BPF_H

/* --- --off-cpu: where target tasks wait ---------------------------------------- */

/*
 * Counted in the same maps as the on-CPU samples (keys flagged
 * SAMPLE_F_OFFCPU, values in ns), with the sampler's filters, walkers and
 * stack store; programs of their own, loaded only with --off-cpu.
 *
 * One program on the scheduler switch (tp_btf/sched_switch), which runs with
 * interrupts off, so it never nests with the sampler on a CPU and shares its
 * per-CPU state (walkers, row cache, counters):
 *
 *   prev leaves the CPU blocked (not preempted, not exiting): its user stack
 *   is walked now - the only moment its address space is the current one -
 *   and stored in the active stacks set; the time and the stack id go into
 *   its slot of the task table.
 *
 *   next comes back: its entry is taken out; a wait shorter than
 *   offcpu_min_ns is only counted in the statistics (the kernel stack walk
 *   and the key cost nothing then); a longer one gets next's kernel stack
 *   from its saved switch frame (bpf_get_task_stack(): a task that is not
 *   running has a stable stack, starting in __schedule) and its time is
 *   added to the (task, kernel stack, user stack) key of the active set.
 *
 * So the kernel stack walk, the key and the map update are only paid for
 * waits at least offcpu_min_ns long; a context-switch-heavy task pays the
 * user walk (row cache hits, mostly) and two small map operations per wait.
 *
 * A wait that spans buffer flips: the user stack was stored in the set
 * active when the task blocked. At each flip, userspace copies the stacks of
 * every task still blocked into the new set before emptying the old one; a
 * task that comes back between the flip and that copy finds its stack in the
 * old set, still intact, and copies it itself (checked against its id). So
 * a wait is counted once, whole, in the interval in which it ends; a task
 * still blocked when profiling stops is not counted (userspace reports how
 * many).
 *
 * The task table (offcpu_tasks) is bounded and costs no hashing: an array
 * of 2^k slots, a thread's slot being tid & mask, like a direct-mapped
 * cache. A thread that blocks while another thread's wait sits in its slot
 * evicts it, and counts the eviction; a slot is published by writing its
 * tid last (an atomic exchange, a full barrier) and claimed by whoever
 * swaps that tid for 0 first - the thread's return, the flush at the end,
 * or an evicting block - so no wait is counted twice or torn. (A return
 * reads the slot's fields before its claim: x86 does not reorder those
 * loads.) Every block is accounted for: kept, short, lost by reason,
 * evicted, replaced, or still blocked (enum bp_stat).
 */
const volatile __u64 offcpu_min_ns = 1000000;	 /* --off-cpu-min */
const volatile __u32 self_tgid = 0;		 /* the profiler: never counted */
const volatile bool offcpu_filter_tgids = false; /* -p, -- COMMAND: offcpu_tgids */
const volatile bool offcpu_filter_cpus = false;	 /* -C: offcpu_cpus */

#define OC_TASK_RUNNING 0x0000
#define OC_TASK_DEAD	0x0080
#define OC_TASK_NOLOAD	0x0400 /* TASK_IDLE: a kernel thread waiting for work */
#define OC_PF_IO_WORKER 0x00000010

/* Slots: tid & offcpu_slot_mask. Mmapable: userspace scans it in place. */
const volatile __u32 offcpu_slot_mask = 16383;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 16384); /* --off-cpu-tasks rounded up to a power of two */
	__type(key, __u32);
	__type(value, struct bp_offcpu_task);
} offcpu_tasks SEC(".maps");

static __always_inline struct bp_offcpu_task *oc_slot(__u32 tid)
{
	__u32 slot = tid & offcpu_slot_mask;

	return bpf_map_lookup_elem(&offcpu_tasks, &slot);
}

/*
 * Takes the wait of thread tid out of its slot into *t; false if the slot
 * holds no wait of tid (it never blocked here, or lost it to an eviction).
 */
static __always_inline bool oc_claim(__u32 tid, struct bp_offcpu_task *t)
{
	struct bp_offcpu_task *e;

	if (!tid)
		return false; /* the idle task; 0 also marks a free slot */
	e = oc_slot(tid);
	if (!e || e->tid != tid)
		return false;
	barrier();
	t->ts = e->ts;
	t->ustack = e->ustack;
	t->flags = e->flags;
	barrier();
	/* Whoever swaps the tid out first owns the wait; a block that evicted
	 * it meanwhile has swapped it already (and counted the eviction). */
	return __sync_val_compare_and_swap(&e->tid, (__u64)tid, 0) == tid;
}

/* Target processes (-p, -- COMMAND) and the processes they fork: tgid ->
 * start time of its leader (0: any, for the ones given at start). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* possible CPUs, set by userspace */
	__type(key, __u32);
	__type(value, __u8);
} offcpu_cpus SEC(".maps");

/* task_struct.state was renamed __state in 5.14. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 oc_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* Should prev's wait be counted? prev is the current task. */
static __always_inline bool oc_target(struct task_struct *prev, __u32 tgid, __u32 tid)
{
	__u32 state;

	if (tid == 0 || tgid == self_tgid)
		return false; /* idle, or the profiler itself */
	state = oc_task_state(prev);
	if (state == OC_TASK_RUNNING || (state & (OC_TASK_DEAD | OC_TASK_NOLOAD)))
		return false; /* still runnable (yield), exiting, or an idle kernel thread */
	if (offcpu_filter_cpus) {
		__u32 cpu = bpf_get_smp_processor_id();
		__u8 *ok = bpf_map_lookup_elem(&offcpu_cpus, &cpu);

		if (!ok || !*ok)
			return false;
	}
	if (offcpu_filter_tgids) {
		__u64 *start = bpf_map_lookup_elem(&offcpu_tgids, &tgid);

		if (!start || (*start && *start != prev->group_leader->start_boottime))
			return false;
	}
	if (nr_cgroups && !in_cgroups())
		return false;
	return true;
}

/* prev (the current task) leaves the CPU blocked: remember when, and where
 * in user code. */
static __always_inline void oc_block(void *ctx, struct task_struct *prev, __u64 now)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct bp_offcpu_task t = { .ts = now }, *e;
	struct cpu_state *cs;
	__u64 old;

	if (!oc_target(prev, tgid, tid))
		return;
	cs = cpu_state_get();
	if (!cs)
		return;
	if (prev->flags & (PF_KTHREAD | OC_PF_IO_WORKER)) {
		t.flags = SAMPLE_F_KTHREAD; /* no user stack to return to */
	} else if (!drop_user) {
		struct bp_sample_key key = {
			.tgid = tgid,
			.start_time = prev->group_leader->start_boottime,
			.exec_id = prev->group_leader->self_exec_id,
		};
		__u32 buf = active_buf & (PROFILE_NR_BUFS - 1);
		void *smap = bpf_map_lookup_elem(&stacks, &buf);

		/* A thread blocks in the same place again and again: a lookup
		 * finds its stack stored, cheaper than an insert that fails. */
		if (smap &&
		    read_user_stack(ctx, NULL, prev, cs, tgid, key.start_time, key.exec_id,
				    &key.ustack) &&
		    key.ustack != STACK_ID_NONE &&
		    (bpf_map_lookup_elem(smap, &key.ustack) ||
		     !store_stack(smap, key.ustack, &cs->user)))
			t.ustack = key.ustack;
		else
			t.flags = SAMPLE_F_USTACK_ERR;
	}
	e = oc_slot(tid);
	if (!e)
		return;
	old = __sync_lock_test_and_set(&e->tid, 0); /* take the slot */
	if (old == tid)
		/* Its last wait never ended here (it came back through a path
		 * this program did not see): counted, then replaced. */
		cs->stats[STAT_OFFCPU_REPLACED]++;
	else if (old)
		cs->stats[STAT_OFFCPU_EVICTED]++; /* another thread's wait, in our slot */
	e->ts = t.ts;
	e->ustack = t.ustack;
	e->flags = t.flags;
	/* Publish, fields first: the exchange is only an acquire to the
	 * compiler, which could sink the stores below it without the barrier. */
	barrier();
	old = __sync_lock_test_and_set(&e->tid, (__u64)tid);
	if (old)
		/* Another thread of this slot blocked on another CPU and published
		 * between our take and this: its wait is displaced, an eviction. */
		cs->stats[STAT_OFFCPU_EVICTED]++;
	cs->stats[STAT_OFFCPU_BLOCKS]++;
}

/* The user stack a wait was stored with, in smap (the active set); false
 * if it is in neither set any more. */
static __always_inline bool oc_user_stack(struct cpu_state *cs, void *smap, __u32 buf, __u64 id)
{
	__u32 other = buf ^ 1;
	struct bp_stack *st;
	void *omap;

	if (bpf_map_lookup_elem(smap, &id))
		return true;
	/* Blocked before a flip that userspace has not copied it over from yet:
	 * the old set is read-only now and emptied only after that copy. */
	omap = bpf_map_lookup_elem(&stacks, &other);
	st = omap ? bpf_map_lookup_elem(omap, &id) : NULL;
	if (!st || bpf_probe_read_kernel(&cs->user, sizeof(cs->user), st))
		return false;
	if (cs->user.nr > PROFILE_MAX_DEPTH || stack_hash(&cs->user, BP_SEED_USTACK) != id)
		return false; /* emptied under us after all */
	return !store_stack(smap, id, &cs->user);
}

/* Counters: plain adds on the switch (interrupts off, nothing nests), atomic
 * ones in the flush at the end, which runs preemptible in process context. */
static __always_inline void oc_stat(struct cpu_state *cs, __u32 idx, __u64 n, bool atomic)
{
	if (idx >= STAT_MAX)
		return;
	if (atomic)
		__sync_fetch_and_add(&cs->stats[idx], n);
	else
		cs->stats[idx] += n;
}

/*
 * The kernel stack of a task that is not running, into out: the program's
 * ORC walk from the frame the task saved when it switched out (as the
 * kernel's own unwinder starts a blocked task's stack: __schedule, schedule,
 * then what called it), else bpf_get_task_stack(), which leaves out the
 * scheduler's functions. False if neither gives a frame.
 */
static __always_inline bool oc_kernel_stack(struct task_struct *task, struct uw_state *ws,
					    struct bp_stack *out, struct cpu_state *cs, bool atomic)
{
	long n;

#if defined(__TARGET_ARCH_x86)
	if (kw_enabled) {
		struct inactive_task_frame fr;
		__u64 tsp = BPF_CORE_READ(task, thread.sp);

		if (!bpf_probe_read_kernel(&fr, sizeof(fr), (void *)tsp) &&
		    kw_walk_from(fr.ret_addr, tsp + sizeof(fr), fr.bp, false, ws, out) && out->nr) {
			oc_stat(cs, STAT_KWALK_OK, 1, atomic);
			return true;
		}
		oc_stat(cs, STAT_KWALK_FALLBACK, 1, atomic);
	}
#endif
	n = bpf_get_task_stack(task, out->ips, sizeof(out->ips), 0);
	out->nr = n > 0 ? n / sizeof(__u64) : 0;
	return out->nr != 0;
}

/*
 * Adds delta ns of waiting by task (not running), blocked as t says, to
 * its key in the active set. scr: the per-CPU state to walk with; cs: the
 * one to count in.
 */
static __always_inline void oc_count(struct task_struct *task, const struct bp_offcpu_task *t,
				     __u64 delta, struct cpu_state *scr, struct cpu_state *cs,
				     bool atomic)
{
	struct bp_sample_key key = {};
	__u32 buf, reason = 0, region, *cslot;
	void *cmap, *smap;
	long err;

	buf = active_buf & (PROFILE_NR_BUFS - 1);
	cmap = bpf_map_lookup_elem(&counts, &buf);
	smap = bpf_map_lookup_elem(&stacks, &buf);
	if (!cmap || !smap) {
		reason = STAT_OFFCPU_LOST_OTHER;
		goto lost;
	}
	key.tgid = task->tgid;
	key.tid = per_thread ? task->pid : 0;
	key.start_time = task->group_leader->start_boottime;
	key.exec_id = task->group_leader->self_exec_id;
	bpf_probe_read_kernel(&key.comm, sizeof(key.comm), task->comm);
	key.flags = SAMPLE_F_OFFCPU | t->flags;
	key.ustack = t->ustack;
	if (key.ustack && !oc_user_stack(scr, smap, buf, key.ustack)) {
		reason = STAT_OFFCPU_LOST_USTACK;
		goto lost;
	}
	if (key.flags & SAMPLE_F_USTACK_ERR)
		oc_stat(cs, STAT_OFFCPU_USTACK_ERR, 1, atomic);
	if (!drop_kernel) {
		if (oc_kernel_stack(task, &scr->uw, &scr->kernel, cs, atomic)) {
			key.kstack = stack_hash(&scr->kernel, BP_SEED_KSTACK);
		} else {
			key.flags |= SAMPLE_F_KSTACK_ERR;
			oc_stat(cs, STAT_OFFCPU_KSTACK_ERR, 1, atomic);
		}
	}

	cslot = bpf_map_lookup_elem(cmap, &key);
	if (cslot && slot_add(*cslot, delta))
		goto kept;
	if (!(key.flags & SAMPLE_F_KTHREAD) && !drop_user)
		notify_new_image(key.tgid, key.start_time, key.exec_id, key.comm, task, false,
				 NULL);
	err = store_stack(smap, key.kstack, &scr->kernel);
	if (err) {
		reason = err == -E2BIG ? STAT_OFFCPU_LOST_STACKS_FULL : STAT_OFFCPU_LOST_OTHER;
		goto lost;
	}
	/* The switch takes its CPU's slots (it never nests with the sampler);
	 * the flush, which runs preemptible, the last region, its own. */
	region = atomic ? slot_regions - 1 : bpf_get_smp_processor_id();
	err = atomic || region < slot_regions - 1 ? slot_new(cmap, buf, region, &key, delta)
						  : -E2BIG;
	if (err) {
		reason = STAT_OFFCPU_LOST_COUNTS_FULL;
		goto lost;
	}
kept:
	oc_stat(cs, STAT_OFFCPU_KEPT, 1, atomic);
	oc_stat(cs, STAT_OFFCPU_KEPT_NS, delta, atomic);
	return;
lost:
	oc_stat(cs, reason, 1, atomic);
	oc_stat(cs, STAT_OFFCPU_LOST_NS, delta, atomic);
}

/* next comes back to a CPU (it is not running yet: its stack is stable). */
static __always_inline void oc_resume(struct task_struct *next, __u64 now)
{
	struct bp_offcpu_task t;
	struct cpu_state *cs;
	__u64 delta;

	if (!oc_claim(next->pid, &t))
		return;
	cs = cpu_state_get();
	if (!cs)
		return;
	cs->stats[STAT_OFFCPU_RESUMES]++;
	delta = now > t.ts ? now - t.ts : 0;
	if (delta < offcpu_min_ns) {
		cs->stats[STAT_OFFCPU_SHORT]++;
		cs->stats[STAT_OFFCPU_SHORT_NS] += delta;
		return;
	}
	oc_count(next, &t, delta, cs, cs, false);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	if (!preempt)
		oc_block(ctx, prev, now);
	oc_resume(next, now);
	return 0;
}

/* -p, -- COMMAND: the processes a target forks are targets too (as the
 * inherited perf events of the on-CPU sampler follow them). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(offcpu_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u64 start = child->group_leader->start_boottime;

	if (ptgid == ctgid || !bpf_map_lookup_elem(&offcpu_tgids, &ptgid))
		return 0; /* a thread (same tgid), or not a target's child */
	bpf_map_update_elem(&offcpu_tgids, &ctgid, &start, BPF_ANY);
	return 0;
}

/* The flush's own per-CPU-state-shaped scratch: it runs preemptible, so it
 * must not share a CPU's state with the sampler and the switch. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} offcpu_flush_state SEC(".maps");

/*
 * When profiling stops (before the switch program is detached): the waits
 * still going are counted up to now, run once over every task by
 * userspace. Each wait is claimed (oc_claim), so a task that comes back
 * meanwhile is counted by exactly one of this and the switch. Its
 * stack is read while it is blocked; one that starts running during the
 * walk can give a torn kernel stack, which costs a wrong frame, not memory.
 */
SEC("iter/task")
int offcpu_flush(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct bp_offcpu_task t;
	struct cpu_state *scr, *cs;
	__u32 zero = 0;
	__u64 now, delta;

	if (!task || !oc_claim(task->pid, &t))
		return 0; /* no wait, or it came back: the switch counted it */
	scr = bpf_map_lookup_elem(&offcpu_flush_state, &zero);
	cs = cpu_state_get();
	if (!scr || !cs)
		return 0;
	now = bpf_ktime_get_ns();
	delta = now > t.ts ? now - t.ts : 0;
	oc_stat(cs, STAT_OFFCPU_CUT, 1, true);
	if (delta < offcpu_min_ns) {
		oc_stat(cs, STAT_OFFCPU_SHORT, 1, true);
		oc_stat(cs, STAT_OFFCPU_SHORT_NS, delta, true);
		return 0;
	}
	oc_count(task, &t, delta, scr, cs, true);
	return 0;
}

#endif
