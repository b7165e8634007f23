/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * profile_abi.h - the ABI shared by bpf/profile.bpf.c and src/collector/.
 *
 * Fixed-width types only: this header is compiled once for the BPF target and
 * once for the host, and both sides must agree on every byte of the map keys
 * and values below; a _Static_assert after each struct pins its size, so a
 * field added on one side only fails the build of both.
 */
#ifndef BPFPROF_PROFILE_ABI_H
#define BPFPROF_PROFILE_ABI_H

#ifndef __VMLINUX_H__ /* BPF programs get the __u* types from vmlinux.h */
#include <linux/types.h>
#endif

#include "hash_abi.h"

#define PROFILE_MAX_DEPTH 127 /* frames per stack, the kernel's own limit */
#define PROFILE_COMM_LEN  16  /* TASK_COMM_LEN */
#define PROFILE_NR_BUFS	  2   /* count/stack map sets, see "double buffering" */

/*
 * Stack ids are 64-bit hashes of the frames computed in BPF. 0 means "no
 * stack" (not collected, or a kernel thread has no user stack).
 */
#define STACK_ID_NONE 0ULL

/* struct bp_sample_key.flags */
#define SAMPLE_F_KSTACK_ERR (1U << 0) /* kernel stack could not be read */
#define SAMPLE_F_USTACK_ERR (1U << 1) /* user stack could not be read */
#define SAMPLE_F_KTHREAD    (1U << 2) /* kernel thread: no user stack exists */
#define SAMPLE_F_OFFCPU	    (1U << 3) /* --off-cpu: the count is blocked time in ns, not samples */

/*
 * One aggregation bucket: a count slot (below) holds its count.
 *
 * (tgid, start_time, exec_id) names one program image: start_time tells a
 * recycled pid from the old one, exec_id tells the images before and after an
 * execve() in the same pid apart. Userspace keys its process cache by it.
 */
struct bp_sample_key {
	__u32 tgid;
	__u32 tid;	  /* 0 unless per-thread keys were requested */
	__u64 start_time; /* group leader's start_boottime, ns */
	__u64 exec_id;	  /* group leader's self_exec_id */
	__u64 kstack;	  /* stack id of the kernel stack */
	__u64 ustack;	  /* stack id of the user stack */
	__u32 flags;	  /* SAMPLE_F_* */
	__u32 pad;
	char comm[PROFILE_COMM_LEN];
};
_Static_assert(sizeof(struct bp_sample_key) == 64, "bp_sample_key: whole 8-byte words (hashed)");

/*
 * Count slots: where each key's count lives, so the agent reads the counts in
 * place (an mmap) instead of copying the whole counts map every drain. The
 * counts hash maps only map a key to its slot (a __u32 index); slot_counts
 * holds the counts (__u64) and slot_keys each slot's key, both mmapable
 * arrays indexed alike:
 *
 *   index of slot i of region r in buffer set b = (b * regions + r) * per_region + i
 *
 * Regions: one per possible CPU, whose sampler and switch programs (which
 * never nest) take its slots with plain stores, and a last one for the
 * end-of-run off-CPU flush. A key new to a set takes its CPU's next slot:
 * the key is written, then its count is published (an atomic add; a slot
 * whose count is still 0 is not published yet), then the region's next
 * (struct bp_slot_region) moves on and the counts map learns key -> slot.
 * Two CPUs that meet the same new key at once each give it a slot; the
 * agent sums a key's slots. Counts only grow until the set is flipped and
 * emptied (collector/drain.c), which is also when next goes back to 0.
 */
struct bp_slot_region {
	__u32 next[PROFILE_NR_BUFS]; /* slots taken, per buffer set */
	__u32 pad[14];		     /* one cache line per region */
};
_Static_assert(sizeof(struct bp_slot_region) == 64, "bp_slot_region: one cache line");

/*
 * Hot keys: each CPU counts the keys it sees most in slots of its own
 * (struct cpu_state in profile.bpf.c, the last page of each value, read
 * by userspace through an mmap), so the usual sample costs one cache line
 * instead of a hash map lookup (~1 us of cold lines on a VM). A slot is
 * claimed, once per buffer set, by a key that already has a count slot
 * in that set; from then on the CPU counts the key in the hot slot. A key's
 * count is its count slots plus its hot slots on every CPU, all of which
 * only grow until the set is flipped and emptied (collector/drain.c).
 */
#define PROFILE_HOT_SLOTS 128 /* per CPU and buffer set: 2 x 128 x 16 bytes = one page */

struct bp_hot_slot {
	__u64 khash; /* bp_key_hash() of the key; 0: free */
	__u64 count;
};
_Static_assert(sizeof(struct bp_hot_slot) == 16, "bp_hot_slot");
_Static_assert(sizeof(struct bp_hot_slot) * PROFILE_HOT_SLOTS * PROFILE_NR_BUFS == 4096,
	       "hot slots: one page per CPU");

/* A 64-bit hash of a whole sample key, the same on both sides. */
static inline __u64 bp_key_hash(const struct bp_sample_key *k)
{
	const __u64 *w = (const __u64 *)k;
	__u64 h = BP_SEED_KEY;

	for (int i = 0; i < (int)(sizeof(*k) / sizeof(__u64)); i++)
		h = bp_hash_step(h, w[i]);
	return bp_hash_end(h);
}

/* The stacks map holds stack id -> stack_trace. */
struct bp_stack {
	__u32 nr; /* valid entries in ips[] */
	__u32 pad;
	__u64 ips[PROFILE_MAX_DEPTH];
};
_Static_assert(sizeof(struct bp_stack) == 1024, "bp_stack: 8 + 8 x PROFILE_MAX_DEPTH");

/*
 * The kernel's ORC unwind table, reshaped by src/unwind/korc.c for the
 * kernel stack walker. korc_ents: one per ORC entry, sorted by ip (offset
 * from korc_base); uniq: index into korc_uniq, which holds each distinct
 * raw orc_entry (6 bytes, zero-extended). korc_blocks: per 4 KiB of text,
 * the run of korc_ents that can hold a pc in it.
 */
#define KORC_BLOCK_SHIFT 12

struct bp_korc_ent {
	__u32 ip;
	__u32 uniq;
};
_Static_assert(sizeof(struct bp_korc_ent) == 8, "bp_korc_ent");

struct bp_korc_block {
	__u32 first;
	__u32 count;
};
_Static_assert(sizeof(struct bp_korc_block) == 8, "bp_korc_block");

/* struct orc_entry, kernels 6.3+: s16 sp_offset, s16 bp_offset, then
 * sp_reg:4 bp_reg:4 type:3 signal:1 (checked against BTF before use). */
#define KORC_SP_OFF(v)	       ((__s16)((v)&0xffff))
#define KORC_BP_OFF(v)	       ((__s16)(((v) >> 16) & 0xffff))
#define KORC_SP_REG(v)	       (((v) >> 32) & 0xf)
#define KORC_BP_REG(v)	       (((v) >> 36) & 0xf)
#define KORC_TYPE(v)	       (((v) >> 40) & 0x7)
#define KORC_SIGNAL(v)	       (((v) >> 43) & 0x1)
#define KORC_REG_UNDEFINED     0
#define KORC_REG_PREV_SP       1
#define KORC_REG_BP	       4
#define KORC_REG_SP	       5
#define KORC_REG_BP_INDIRECT   8
#define KORC_REG_SP_INDIRECT   9
#define KORC_TYPE_UNDEFINED    0
#define KORC_TYPE_END_OF_STACK 1
#define KORC_TYPE_CALL	       2
#define KORC_TYPE_REGS	       3
#define KORC_TYPE_REGS_PARTIAL 4

/* Per-CPU counters, indexed by enum bp_stat. */
enum bp_stat {
	STAT_SAMPLES = 0,      /* samples that passed the filters (counted or lost) */
	STAT_LOST_COUNTS_FULL, /* no count slot left (its CPU's region full): sample dropped */
	STAT_LOST_STACKS_FULL, /* stacks map full: sample dropped */
	STAT_LOST_NO_MAP,      /* internal: map-in-map lookup failed */
	STAT_LOST_STACK_ERR,   /* stacks map refused the stack (not full: e.g. -ENOMEM) */
	STAT_KSTACK_ERR,       /* kept, kernel stack missing */
	STAT_USTACK_ERR,       /* kept, user stack missing */
	STAT_IDLE,	       /* idle task (excluded, unless --include-idle) */
	STAT_FILTERED,	       /* not a target process (-p, -- COMMAND, --cgroup) */
	STAT_NOTIFY_LOST,      /* ring buffer full: a process notice dropped */
	STAT_NEW_KEYS,	       /* samples that took the new-key path (stacks stored) */
	STAT_HOT_HITS,	       /* samples counted in a per-CPU hot slot (no map lookup) */
	STAT_KWALK_OK,	       /* kernel stacks walked with the ORC table */
	STAT_KWALK_FALLBACK,   /* ... that needed bpf_get_stack() (module, BPF, irq stack) */
	STAT_KWALK_DIFF,       /* --verify: the walk disagreed with bpf_get_stack() */
	/* --unwind auto|dwarf: how each table walk of a user stack ended (bpf/unwind.bpf.h). */
	STAT_UNWIND_WALKS,	     /* user stacks walked with unwind tables */
	STAT_UNWIND_NOT_READY,	     /* ... not: no tables for the process yet (frame pointers) */
	STAT_UNWIND_END,	     /* reached the outermost frame (_start, thread start) */
	STAT_UNWIND_FP_END,	     /* a frame-pointer step met rbp == 0 */
	STAT_UNWIND_TRUNCATED,	     /* PROFILE_MAX_DEPTH frames */
	STAT_UNWIND_ERR_READ,	     /* stack memory unreadable */
	STAT_UNWIND_ERR_NO_MAP,	     /* pc in no known executable mapping */
	STAT_UNWIND_ERR_NO_TABLE,    /* --unwind dwarf: a frame in code without a table */
	STAT_UNWIND_ERR_UNSUPPORTED, /* a CFI rule the walker cannot follow */
	STAT_UNWIND_ERR_CFA,	     /* the CFA did not move up the stack */
	STAT_UNWIND_DWARF_FRAMES,    /* frames unwound with a table row */
	STAT_UNWIND_FP_FRAMES,	     /* frames unwound with frame pointers inside table walks */
	STAT_UNWIND_REFRESH,	     /* requests to re-read a process's mappings */
	STAT_UNWIND_CACHE_HITS,	     /* frames whose mapping and row came from the row cache */
	STAT_UNWIND_CACHE_MISSES,    /* ... that were searched */
	STAT_UNWIND_ERR_MAPS_LIMIT,  /* pc in a mapping left out of a list over UNWIND_MAX_MAPS */
	STAT_UNWIND_FP_FALLBACK, /* a row it cannot follow: a frame-pointer step instead (auto) */
	/* Python (bpf/python.bpf.h): how a stack in the interpreter loop found its thread's
	 * PyThreadState, once per stack. MISS: not at all - the stack keeps its native
	 * frames, its Python frames are not shown. */
	STAT_PY_TS_CACHED, /* this CPU's last answer, still this thread's */
	STAT_PY_TS_TLS,	   /* the thread's own slot (its thread-specific data) */
	STAT_PY_TS_SEARCH, /* a search of the interpreter's thread list */
	STAT_PY_TS_MISS,   /* not found (not in its slot, not in the threads searched) */
	/* --off-cpu (offcpu.bpf.h). Every block of a target task ends as a
	 * resume, a cut (still blocked at the end), an eviction from the full
	 * task table, or is pending (blocked now):
	 *   BLOCKS = RESUMES + CUT + REPLACED + EVICTED + pending
	 *   RESUMES + CUT = KEPT + SHORT + LOST (the LOST_* reasons)
	 * userspace counts the pending entries (the table's occupied slots). */
	STAT_OFFCPU_BLOCKS,   /* target tasks that left a CPU blocked (entry written) */
	STAT_OFFCPU_RESUMES,  /* ... that ran again with their entry still there */
	STAT_OFFCPU_CUT,      /* ... still blocked when profiling stopped: counted to then */
	STAT_OFFCPU_REPLACED, /* ... blocked again with its entry still there (a lost resume) */
	STAT_OFFCPU_EVICTED,  /* ... pushed out of its slot by another thread's block */
	STAT_OFFCPU_KEPT,     /* resumes counted: blocked at least --off-cpu-min */
	STAT_OFFCPU_KEPT_NS,  /* ... their blocked time (what the profiles hold), ns */
	STAT_OFFCPU_SHORT,    /* resumes blocked less than --off-cpu-min: not counted */
	STAT_OFFCPU_SHORT_NS, /* ... their blocked time, ns */
	STAT_OFFCPU_LOST_NS,  /* blocked time of the lost resumes below, ns */
	STAT_OFFCPU_LOST_COUNTS_FULL, /* lost: no count slot left */
	STAT_OFFCPU_LOST_STACKS_FULL, /* lost: stacks map full */
	STAT_OFFCPU_LOST_USTACK,      /* lost: the user stack taken at the block was gone */
	STAT_OFFCPU_LOST_OTHER,	      /* lost: a map lookup or the stack store failed */
	STAT_OFFCPU_KSTACK_ERR,	      /* kept, kernel stack missing */
	STAT_OFFCPU_USTACK_ERR,	      /* kept, user stack missing */
	STAT_TARGETS_LOST, /* -- COMMAND: processes it forked not followed (tgids full) */
	STAT_IDLE_KEPT,	   /* --include-idle: idle samples that passed the filters */
	/* HotSpot JIT and interpreter frames (bpf/hotspot.bpf.h). Every JVM step either
	 * counts a frame or ends the walk with one of the ERR_JVM_* reasons. */
	STAT_UNWIND_JVM_FRAMES,	    /* frames stepped through the code cache */
	STAT_UNWIND_JVM_STUB,	    /* call stub reached: handed back to the native walker */
	STAT_UNWIND_JVM_LEAF_GUESS, /* a leaf's return address taken from [sp] (prologue, stubs) */
	STAT_UNWIND_ERR_JVM_BLOB,   /* no blob: free or bad segment map, header, code range */
	STAT_UNWIND_ERR_JVM_FRAME,  /* frame size out of bounds, or sp did not move up */
	STAT_UNWIND_ERR_JVM_RA,	    /* a Java frame's caller pc not in the code cache */
	STAT_UNWIND_ERR_JVM_INTERP, /* an interpreter frame's fp or sender sp implausible */
	STAT_UNWIND_ERR_JVM_READ,   /* JVM memory (segment map, header, stack) unreadable */
	STAT_UNWIND_ERR_JVM_BUDGET, /* BP_HS_READ_BUDGET reads spent in one walk */
	STAT_UNWIND_JVM_DEOPT,	    /* deoptimised frames recorded at their original pc */
	STAT_MAX,
};

/*
 * Process notices sent through the ring buffer: the first sample of a new
 * program image (new pid, pid reuse or exec) so userspace can read its
 * mappings while the process is still alive.
 */
/*
 * A mapping of a noticed sample's user stack as the kernel had it at the
 * sample (bpf_find_vma()): what names the frames of a process that is gone
 * before userspace can read its /proc files.
 */
struct bp_vma {
	__u64 start, end;
	__u64 offset; /* file offset of start */
	__u64 inode;  /* 0: no file (anonymous memory, the vDSO) */
	__u32 dev;    /* the file's device, the kernel's dev_t: major << 20 | minor */
	__u32 flags;  /* BP_VMA_* */
};
_Static_assert(sizeof(struct bp_vma) == 40, "bp_vma");
#define BP_VMA_VDSO 1 /* the vDSO */

/* Mappings a notice carries: the distinct ones of its sample's first frames. */
#define BP_NOTICE_VMAS 8
#define BP_NOTICE_IPS  16 /* frames looked at */

struct bp_proc_event {
	__u32 tgid;
	__u32 kind; /* PROC_EVENT_* */
	__u64 start_time;
	__u64 exec_id;
	char comm[PROFILE_COMM_LEN];
	__u64 mm_sig;	 /* bp_mm_sig() of the address space sampled, 0 if unknown */
	__u32 nr_vmas;	 /* of vmas[]: a new image's sampled mappings (0: none taken) */
	__u32 flags;	 /* BP_NOTICE_* */
	__u64 cgroup_id; /* the task's cgroup v2 (its kernfs id, as cgroupfs inodes), 0 if unknown
			  */
	struct bp_vma vmas[BP_NOTICE_VMAS];
};
_Static_assert(sizeof(struct bp_proc_event) == 64 + BP_NOTICE_VMAS * 40, "bp_proc_event");

/* bp_proc_event.flags: a vfork() (or posix_spawn()) child before its exec,
 * which runs in its parent's address space - its image is the parent's for
 * a moment. */
#define BP_NOTICE_VFORK 1

/* bp_proc_event.kind */
#define PROC_EVENT_NEW_IMAGE 0 /* first sample of a new program image */
#define PROC_EVENT_REFRESH   1 /* the unwinder met code in no known mapping (dlopen) */
#define PROC_EVENT_MAPS	     2 /* more mappings of a new image's first samples (vmas[]) */

/* A new image's samples in code outside the mappings its notice carried
 * send more (PROC_EVENT_MAPS) for this long after it. */
#define BP_NOTICE_MORE_NS 100000000ull

/*
 * --off-cpu: what the program keeps about a target thread while it is
 * blocked (map offcpu_tasks: slot tid & mask, see offcpu.bpf.h). The user stack is
 * read when the task blocks (only then is its address space the current
 * one) and stored in the stacks set active at that moment; userspace copies
 * the stacks of blocked tasks into the new set at every buffer flip
 * (collector/offcpu.c), so a wait may span any number of flips.
 */
struct bp_offcpu_task {
	__u64 tid;    /* the thread whose wait this is, 0: free; written last */
	__u64 ts;     /* bpf_ktime_get_ns() when it left the CPU */
	__u64 ustack; /* user stack id, STACK_ID_NONE if none */
	__u32 flags;  /* SAMPLE_F_USTACK_ERR, SAMPLE_F_KTHREAD */
	__u32 pad;
};

/* Value of the per-tgid "seen" map. */
struct bp_proc_seen {
	__u64 start_time;
	__u64 exec_id;
	__u64 sent_ns; /* when its notice went with mappings; 0: without */
};
_Static_assert(sizeof(struct bp_proc_seen) == 24, "bp_proc_seen");

/*
 * Identity of an address space, from mm fields /proc/PID/stat also shows
 * (26 startcode, 27 endcode, 47 start_brk, 48 arg_start, 51 env_end). The BPF
 * side puts it in a process notice; userspace reads the same fields before
 * and after snapshotting /proc/PID/maps, and keeps the snapshot only if they
 * match: an execve() in between replaces the address space (and with ASLR,
 * every one of these), so a notice about one image can never be answered
 * with the mappings of the next. 0 is "unknown".
 */
static inline __u64 bp_mm_sig(__u64 start_code, __u64 end_code, __u64 start_brk, __u64 arg_start,
			      __u64 env_end)
{
	__u64 v[5] = { start_code, end_code, start_brk, arg_start, env_end };
	__u64 h = BP_SEED_KEY;

	for (int i = 0; i < 5; i++)
		h = bp_hash_step(h, v[i]);
	return h ? h : 1;
}

/* kread.bpf.c's context (BPF_PROG_TEST_RUN ctx_in): copy len bytes at addr. */
#define KREAD_MAX 65536 /* bytes per run */

struct bp_kread_args {
	__u64 addr;
	__u32 len;
	__u32 pad;
};
_Static_assert(sizeof(struct bp_kread_args) == 16, "bp_kread_args");

/*
 * kprogs.bpf.c's records (a bpf_prog iterator read by userspace): each
 * loaded program's JIT image and its kallsyms name, so a kernel address in
 * BPF space is named by the program that holds it. One record per program,
 * then one per function of a program with BPF-to-BPF calls (sub = 1; their
 * images are separate kallsyms symbols). Programs come in increasing id
 * order. Names longer than the field are cut (still the right program).
 */
#define KPROGS_MAX_FUNCS 256 /* BPF_MAX_SUBPROGS */
#define KPROG_NAME_LEN	 112

struct bp_kprog {
	__u64 start; /* aux->ksym.start (the image) */
	__u32 len;   /* aux->ksym.end - start; 0: not in kallsyms (not JITed) */
	__u32 id : 31, sub : 1;
	char name[KPROG_NAME_LEN]; /* aux->ksym.name: bpf_prog_<tag>_<name> */
};
_Static_assert(sizeof(struct bp_kprog) == 128, "bp_kprog");

#endif /* BPFPROF_PROFILE_ABI_H */
