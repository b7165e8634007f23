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
 * Double buffering: there are two sets of (counts map, count slots, stacks
 * map). Every run reads active_buf once and writes only into that set.
 * Counts only grow: userspace reads the active set's count slots in place
 * (an mmap) at most drains (keys and stacks stay, so a
 * stack seen once takes the cheap path below for as long as the set lives).
 * When the set is half full, or sampling stopped, userspace flips active_buf,
 * waits for an RCU grace period (a map-in-map update does synchronize_rcu(),
 * and perf_event programs run under rcu_read_lock()), and only then reads and
 * clears the other set. No sample is lost or counted twice (src/collector/drain.c).
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
#include "kprogs.bpf.h"
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
/* Tests: the execve check kernels without task_struct.in_execve get. */
const volatile bool execve_by_mm = false;
const volatile __u32 nr_cgroups = 0;  /* --cgroup: only tasks under one of these */
const volatile bool fp_walker = true; /* false: bpf_get_stack() walks user frame pointers */
/* A new image's notice carries the mappings of its sample (bpf_find_vma(), 5.17+). */
const volatile bool notice_vmas = false;

#define MAX_CGROUPS 16

/* Which map set runs write to; flipped by userspace at every drain. */
volatile __u32 active_buf = 0;
/* Set by userspace once it can read and clear the hot slots (its mmap). */
volatile __u32 hot_slots = 0;

/* Sizes, not BTF types, for the inner maps: libbpf builds the outer maps'
 * templates from these definitions, where the key struct is only declared.
 * A counts map holds key -> index of its count slot (profile_abi.h). */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(struct bp_sample_key));
	__uint(value_size, sizeof(__u32));
} counts_0 SEC(".maps"), counts_1 SEC(".maps");

/* Count slots (profile_abi.h), sized by userspace before load. */
const volatile __u32 slot_regions = 1;	  /* possible CPUs + 1 (the off-CPU flush's) */
const volatile __u32 slot_per_region = 1; /* slots per region and buffer set */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* slot_regions */
	__type(key, __u32);
	__type(value, struct bp_slot_region);
} slot_next SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* PROFILE_NR_BUFS x slot_regions x slot_per_region */
	__type(key, __u32);
	__type(value, __u64);
} slot_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* as slot_counts */
	__type(key, __u32);
	__type(value, struct bp_sample_key);
} slot_keys SEC(".maps");

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

/*
 * The targets (-p, -- COMMAND) by tgid, for the per-CPU events: every thread
 * and process that runs is sampled at the events' pace, so one that runs for
 * less than a period is sampled as often as its CPU time says (a per-task
 * event starts its period afresh in every new task, and never samples a
 * thread of 5 ms at 99 Hz). Under -- COMMAND the processes a target forks
 * join it before they first run (target_fork); a process leaves
 * when its last thread exits (target_exit), so its pid, once reused, is not a
 * target. Preallocated, as perf_event programs need before Linux 6.1.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* userspace: the -p targets, or a command's processes at once */
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

_Static_assert(PROFILE_MAX_DEPTH == BP_STACK_HASH_MAX, "a stack hash covers a whole bp_stack");

/* hash_abi.h's stack hash; 0 is reserved for "no stack". */
static __always_inline __u64 stack_hash(const struct bp_stack *st, __u64 seed)
{
	return bp_stack_hash(st->ips, st->nr, seed);
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

/* task is in execve(), between its new address space and its return. */
static __always_inline bool task_in_execve(struct task_struct *task)
{
	struct mm_struct *mm;

	if (!execve_by_mm && bpf_core_field_exists(task->in_execve))
		return BPF_CORE_READ_BITFIELD(task, in_execve);
	/* Kernels without the flag: the fields load_elf_binary() sets last. */
	mm = task->mm;
	return mm && (!mm->env_end || !mm->start_code);
}

#if defined(__TARGET_ARCH_x86)
struct vma_find {
	__u32 n; /* mappings in the CPU's nvma[] */
	__u32 pad;
};

/* bpf_find_vma()'s callback: the mapping, as /proc/PID/maps would list it. */
static long vma_found(struct task_struct *task, struct vm_area_struct *vma, struct vma_find *c)
{
	struct cpu_state *cs = cpu_state_get();
	struct bp_vma *v;
	struct file *f;

	if (!cs || c->n >= BP_NOTICE_VMAS)
		return 1;
	v = &cs->nvma[c->n & (BP_NOTICE_VMAS - 1)];
	v->start = vma->vm_start;
	v->end = vma->vm_end;
	v->offset = vma->vm_pgoff << 12; /* x86's page size */
	v->inode = 0;
	v->dev = 0;
	v->flags = 0;
	f = vma->vm_file;
	if (f) {
		struct inode *ino = f->f_inode;

		v->inode = ino->i_ino;
		v->dev = ino->i_sb->s_dev;
	} else if (vma->vm_mm && vma->vm_start == (__u64)vma->vm_mm->context.vdso) {
		v->flags = BP_VMA_VDSO;
	}
	c->n++;
	return 0;
}

/* One frame of notice_vmas_find(): its mapping, unless an earlier frame's has it. */
static long notice_vma_step(__u32 i, struct vma_find *c)
{
	struct cpu_state *cs = cpu_state_get();
	__u64 ip;

	if (!cs || i >= cs->user.nr || c->n >= BP_NOTICE_VMAS)
		return 1;
	ip = cs->user.ips[i & (BP_NOTICE_IPS - 1)];
	if (i)
		ip--; /* a return address: the call is before it */
	for (__u32 j = 0; j < BP_NOTICE_VMAS; j++) {
		if (j >= c->n)
			break;
		if (ip >= cs->nvma[j].start && ip < cs->nvma[j].end)
			return 0;
	}
	/* -EBUSY: its mmap lock is taken; no more mappings this time. */
	return bpf_find_vma(bpf_get_current_task_btf(), ip, vma_found, c, 0) == -16;
}

/*
 * The mappings of the sampled user stack's first BP_NOTICE_IPS frames, at
 * most BP_NOTICE_VMAS distinct ones, into the CPU's nvma[]: what names the
 * sample if the process is gone before userspace reads its /proc files (a
 * process that lives a few milliseconds). Only at a new image's notice, of
 * the current task. Global, and one frame per bpf_loop() step: verified once.
 */
__attribute__((noinline)) int notice_vmas_find(__u32 have)
{
	struct vma_find c = { .n = have };

	/* Checked even where nothing calls it (a global function): kernels
	 * without bpf_loop() and bpf_find_vma() must see the branch pruned. */
	if (!notice_vmas)
		return have;
	bpf_loop(BP_NOTICE_IPS, notice_vma_step, &c, 0);
	return c.n;
}

/* Copies nvma[from, n) into e; with from > 0 those are what the CPU found
 * since its last send (an update). */
static __always_inline void notice_vmas_put(struct bp_proc_event *e, struct cpu_state *cs,
					    __u32 from, __u32 n)
{
	e->nr_vmas = 0;
	for (__u32 i = 0; i < BP_NOTICE_VMAS; i++) {
		__u32 j = from + i;

		if (j >= n || j >= BP_NOTICE_VMAS)
			break;
		e->vmas[i] = cs->nvma[j & (BP_NOTICE_VMAS - 1)];
		e->nr_vmas = i + 1;
	}
}
#endif

/* A notice's fields but its mappings (none yet). */
static __always_inline void notice_head(struct bp_proc_event *e, __u32 kind, __u32 tgid,
					__u64 start_time, __u64 exec_id, const char *comm)
{
	e->tgid = tgid;
	e->kind = kind;
	e->start_time = start_time;
	e->exec_id = exec_id;
	__builtin_memcpy(e->comm, comm, sizeof(e->comm));
	e->mm_sig = 0;
	e->nr_vmas = 0;
	e->flags = 0;
	e->cgroup_id = 0;
}

/* notify_new_image()'s answers. */
enum { NOTIFY_NOT, NOTIFY_BEFORE, NOTIFY_SENT };

/* Tells userspace about a program image it may not know yet: NOTIFY_SENT
 * now, NOTIFY_BEFORE (told before; *sent_ns: when that notice went with
 * mappings, 0 if without), NOTIFY_NOT (could not: asked again at the next
 * new key). With_vmas: the sample's user stack is in the CPU's state (a
 * sample of task, the current task); its mappings go with the notice, and
 * stay in the CPU's nvma[]. */
static __always_inline int notify_new_image(__u32 tgid, __u64 start_time, __u64 exec_id,
					    const char *comm, struct task_struct *task,
					    bool with_vmas, __u64 *sent_ns)
{
	struct bp_proc_seen *old = bpf_map_lookup_elem(&seen, &tgid);
	struct bp_proc_seen cur = { .start_time = start_time, .exec_id = exec_id };
	struct bp_proc_event *e;

	if (old && old->start_time == start_time && old->exec_id == exec_id) {
		if (sent_ns)
			*sent_ns = old->sent_ns;
		return NOTIFY_BEFORE;
	}
	/*
	 * Inside execve() the new image's address space is half made: its
	 * exec_id is the new one, but start_code, start_brk, env_end are set
	 * at the end of load_elf_binary(). A notice from there would carry a
	 * signature /proc never shows, and userspace would give the image up
	 * as gone. Not noticed yet: the image's next new key asks again.
	 */
	if (task_in_execve(task))
		return NOTIFY_NOT;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_NOTIFY_LOST); /* retried at the next sample: seen not updated */
		return NOTIFY_NOT;
	}
	notice_head(e, PROC_EVENT_NEW_IMAGE, tgid, start_time, exec_id, comm);
	/* The sampled thread's mm: the leader's is gone once the main thread exits. */
	if (task->mm)
		e->mm_sig = bp_mm_sig(task->mm->start_code, task->mm->end_code, task->mm->start_brk,
				      task->mm->arg_start, task->mm->env_end);
	/* Set until the child's exec (or exit) gives the parent its memory back. */
	if (task->vfork_done)
		e->flags |= BP_NOTICE_VFORK;
	/* Its cgroup: userspace labels processes of a cgroup it knows without
	 * reading their /proc/PID/cgroup. */
	e->cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
#if defined(__TARGET_ARCH_x86)
	if (notice_vmas && with_vmas && task->mm) {
		struct cpu_state *cs = cpu_state_get();

		if (cs) {
			__u32 n = notice_vmas_find(0);

			notice_vmas_put(e, cs, 0, n);
			cs->seen.nr_sent = n; /* for notify_more_vmas() */
			cur.sent_ns = bpf_ktime_get_ns();
		}
	}
#endif
	bpf_ringbuf_submit(e, 0);
	bpf_map_update_elem(&seen, &tgid, &cur, BPF_ANY);
	return NOTIFY_SENT;
}

#if defined(__TARGET_ARCH_x86)
/*
 * A new key of the image this CPU noticed last, within BP_NOTICE_MORE_NS of
 * its notice: if its leaf is in none of the mappings sent so far (the
 * notice's sample was in the dynamic loader, this one in the program), the
 * new ones go too (PROC_EVENT_MAPS), while nvma[] has room. A process that
 * lives a few milliseconds is sampled a few times at high rates; userspace
 * needs the mappings of each sample it cannot read any more.
 */
static __always_inline void notify_more_vmas(struct cpu_state *cs, __u32 tgid, __u64 start_time,
					     __u64 exec_id, const char *comm)
{
	__u32 have = cs->seen.nr_sent, n;
	struct bp_proc_event *e;
	__u64 leaf;

	if (!cs->seen.sent_ns || have >= BP_NOTICE_VMAS || !cs->user.nr ||
	    bpf_ktime_get_ns() - cs->seen.sent_ns > BP_NOTICE_MORE_NS)
		return;
	leaf = cs->user.ips[0];
	for (__u32 j = 0; j < BP_NOTICE_VMAS; j++) {
		if (j >= have)
			break;
		if (leaf >= cs->nvma[j].start && leaf < cs->nvma[j].end)
			return;
	}
	n = notice_vmas_find(have);
	if (n <= have)
		return; /* in no mapping, or its lock was taken */
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_NOTIFY_LOST); /* found again at the next new key */
		return;
	}
	cs->seen.nr_sent = n;
	notice_head(e, PROC_EVENT_MAPS, tgid, start_time, exec_id, comm);
	notice_vmas_put(e, cs, have, n);
	bpf_ringbuf_submit(e, 0);
}
#endif

/*
 * notify_new_image() for do_sample(), which takes a new key for ~5% of
 * samples (a new leaf address, mostly), nearly always of the image the
 * CPU's last new key had: the seen lookup, a few hundred ns of cold hash
 * buckets, is skipped when this CPU found that image noticed since
 * uw_proc_gen last changed. Userspace bumps uw_proc_gen after it deletes a
 * seen entry (a process evicted from its tables), so a notice it asks for
 * that way is never skipped. Not for the off-CPU programs: the flush runs
 * preemptible and could tear the CPU's memo.
 */
static __always_inline void notify_new_image_memo(struct cpu_state *cs, __u32 tgid,
						  __u64 start_time, __u64 exec_id, const char *comm,
						  struct task_struct *task)
{
	__u64 pgen = uw_proc_gen, sent_ns = 0;
	int told;

	barrier();
	if (cs->seen.gen == pgen && cs->seen.tgid == tgid && cs->seen.start_time == start_time &&
	    cs->seen.exec_id == exec_id) {
#if defined(__TARGET_ARCH_x86)
		if (notice_vmas)
			notify_more_vmas(cs, tgid, start_time, exec_id, comm);
#endif
		return;
	}
	told = notify_new_image(tgid, start_time, exec_id, comm, task, true, &sent_ns);
	if (told == NOTIFY_NOT)
		return;
	cs->seen.gen = pgen;
	cs->seen.tgid = tgid;
	cs->seen.start_time = start_time;
	cs->seen.exec_id = exec_id;
	/* nr_sent: what the notice carried, set by notify_new_image(). */
	if (told == NOTIFY_SENT && notice_vmas) {
		cs->seen.sent_ns = bpf_ktime_get_ns();
	} else if (told == NOTIFY_BEFORE && notice_vmas && sent_ns) {
		/*
		 * A young image noticed before, whose mappings this CPU no longer
		 * holds: another image's new key came between (a busy host), or
		 * its notice went from another CPU. What this CPU sent for it is
		 * unknown: this sample's mappings go as an update (userspace
		 * drops the ones it has), and later ones as usual, until the
		 * image is BP_NOTICE_MORE_NS old.
		 */
		cs->seen.nr_sent = 0;
		cs->seen.sent_ns = sent_ns;
#if defined(__TARGET_ARCH_x86)
		notify_more_vmas(cs, tgid, start_time, exec_id, comm);
#endif
	} else {
		cs->seen.nr_sent = 0;
		cs->seen.sent_ns = 0;
	}
}

/*
 * notify_new_image_memo() for a new key of the current task: a global
 * function, which the verifier checks once, on its own - inlined into
 * do_sample(), the notice's mappings (two bpf_loop()s, with bpf_find_vma()
 * in them) were verified along every path there and tripled the load time.
 */
__attribute__((noinline)) int notice_new_key(__u32 tgid, __u64 start_time, __u64 exec_id)
{
	struct cpu_state *cs = cpu_state_get();
	char comm[PROFILE_COMM_LEN];

	if (!cs)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	notify_new_image_memo(cs, tgid, start_time, exec_id, comm, bpf_get_current_task_btf());
	return 0;
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

/*
 * Hot slots (profile_abi.h) come in sets of HOT_WAYS, one cache line: a key
 * may take any free slot of the set its hash picks. Direct-mapped, two of
 * a CPU's keys whose hashes shared a slot both went through the counts
 * map lookup (a few hundred ns) - 10-25% of samples on
 * tools/bench_overhead.py's workloads, whose leaf addresses give a CPU a
 * hundred or more keys. Userspace reads every slot, wherever a key is.
 */
#define HOT_WAYS 4

/* A free hot slot taken by a key now in the counts map: count first, then
 * the hash, so a reader that sees the hash sees a count of this claim. */
static __always_inline void hot_claim(struct bp_hot_slot *slot, __u64 khash)
{
	slot->count = 0;
	barrier();
	slot->khash = khash;
}

/* Adds delta to the count in slot idx (a counts map value); false if idx is not a slot. */
static __always_inline bool slot_add(__u32 idx, __u64 delta)
{
	__u64 *cnt = bpf_map_lookup_elem(&slot_counts, &idx);

	if (!cnt)
		return false;
	__sync_fetch_and_add(cnt, delta);
	return true;
}

/*
 * A key new to set buf takes the next slot of region (profile_abi.h): the
 * key first, then its count, published by an atomic add, then the region's
 * next; then the counts map points the key at the slot. The count is kept
 * whatever that insert says: on -EEXIST another CPU gave the key a slot
 * just now (userspace sums both), on a full map the key's next sample takes
 * a slot of its own again. Returns 0, or -E2BIG if the region is full.
 */
static __always_inline long slot_new(void *cmap, __u32 buf, __u32 region,
				     const struct bp_sample_key *key, __u64 delta)
{
	struct bp_slot_region *r;
	struct bp_sample_key *k;
	__u64 *cnt;
	__u32 n, idx;

	if (!delta)
		return 0; /* nothing to count; a count of 0 reads as unpublished */
	r = bpf_map_lookup_elem(&slot_next, &region);
	if (!r)
		return -E2BIG;
	n = r->next[buf & (PROFILE_NR_BUFS - 1)];
	if (n >= slot_per_region)
		return -E2BIG;
	idx = (buf * slot_regions + region) * slot_per_region + n;
	k = bpf_map_lookup_elem(&slot_keys, &idx);
	cnt = bpf_map_lookup_elem(&slot_counts, &idx);
	if (!k || !cnt)
		return -E2BIG;
	__builtin_memcpy(k, key, sizeof(*k));
#if defined(__TARGET_ARCH_x86)
	__sync_fetch_and_add(cnt, delta); /* lock add: after the key's stores (TSO) */
#else
	{ /* a fetching atomic: fully ordered (5.12+), the key is visible first */
		__u64 old = __sync_fetch_and_add(cnt, delta);

		asm volatile("" : : "r"(old));
	}
#endif
	r->next[buf & (PROFILE_NR_BUFS - 1)] = n + 1;
	bpf_map_update_elem(cmap, key, &idx, BPF_NOEXIST);
	return 0;
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
			r = uw_walk_regs(task, ws, tables, gen, start_time, exec_id, st, rcs, ip,
					 sp, bp);
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
	__u64 khash = 0;
	__u32 *cslot, region;
	struct bp_hot_slot *slot = NULL;
	long err;
	TM_NOW(t_start);

	/* Every run is counted once as idle, filtered or kept (+ idle kept):
	 * what userspace holds against the events' running time (collector/events.c,
	 * events__measure()). */
	if (tid == 0) {
		stat_inc(STAT_IDLE);
		if (!include_idle)
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
	if (tid == 0)
		stat_inc(STAT_IDLE_KEPT);

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
		key.flags |=
			sample_ustack(ctx, tgid, key.start_time, key.exec_id) & SAMPLE_F_USTACK_ERR;
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
		struct bp_hot_slot *set;

		khash = bp_key_hash(&key);
		set = &scr->hot[buf][khash & (PROFILE_HOT_SLOTS - HOT_WAYS)];
#pragma unroll
		for (int i = 0; i < HOT_WAYS; i++) {
			if (set[i].khash == khash) {
				set[i].count++;
				scr->stats[STAT_HOT_HITS]++;
				TM_ADD(TM_HOT, bpf_ktime_get_ns() - t_agg);
				TM_ADD(TM_HOT_N, 1);
				return 0;
			}
			if (!set[i].khash) {
				/* Ways fill in order and only empty all at once: none after it. */
				slot = &set[i];
				break;
			}
		}
	}
	cmap = bpf_map_lookup_elem(&counts, &buf);
	if (!cmap) {
		stat_inc(STAT_LOST_NO_MAP);
		return 0;
	}

	/* Hot path: a (process, stacks) pair counted before in this set; its
	 * stacks are stored already. Counted in its count slot, and from now on
	 * in the CPU's hot slot if that is free (the key has a count slot:
	 * userspace finds it there). */
	cslot = bpf_map_lookup_elem(cmap, &key);
	if (cslot && slot_add(*cslot, 1)) {
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
		notice_new_key(tgid, key.start_time, key.exec_id);

	err = store_stack(smap, key.kstack, &scr->kernel);
	if (!err)
		err = store_stack(smap, key.ustack, &scr->user);
	if (err) {
		stat_inc(err == -E2BIG ? STAT_LOST_STACKS_FULL : STAT_LOST_STACK_ERR);
		return 0;
	}
	/* This CPU's region: runs on a CPU never nest, so its slots are ours. */
	region = bpf_get_smp_processor_id();
	err = region < slot_regions - 1 ? slot_new(cmap, buf, region, &key, 1) : -E2BIG;
	if (err)
		stat_inc(STAT_LOST_COUNTS_FULL);
	else if (slot && !slot->khash)
		hot_claim(slot, khash);
	TM_ADD(TM_NEW, bpf_ktime_get_ns() - t_agg);
	TM_ADD(TM_NEW_N, 1);
	return 0;
}

/* --- the targets' processes (the tgids map above) ------------------------------ */

/* -- COMMAND: a process a target forks is a target. Runs in the parent before
 * the child first runs, so none of the child's CPU time goes unsampled. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(target_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct cpu_state *cs;
	__u8 one = 1;

	if (ptgid == ctgid || !bpf_map_lookup_elem(&tgids, &ptgid))
		return 0; /* a thread (same tgid), or not a target's child */
	if (!bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY))
		return 0;
	/* Full: the child's samples will be filtered out - said, not hidden.
	 * Atomic: a sample may interrupt this on its CPU. */
	cs = cpu_state_get();
	if (cs)
		__sync_fetch_and_add(&cs->stats[STAT_TARGETS_LOST], 1);
	return 0;
}

/* A target whose last thread exits leaves the map: its slot is free for
 * another descendant, and its pid, once reused, is not a target. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(target_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	/* signal->live was counted down before the tracepoint (do_exit()). */
	if (BPF_CORE_READ(task, signal, live.counter) > 0)
		return 0;
	bpf_map_delete_elem(&tgids, &tgid);
	return 0;
}

/* --- --off-cpu: where target tasks wait (offcpu.bpf.h) ------------------------ */

#include "offcpu.bpf.h"
