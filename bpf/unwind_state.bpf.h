/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unwind_state.bpf.h - the user-stack walker's settings, maps and per-CPU
 * state types. cpu_state.bpf.h includes it for its per-CPU state (which
 * holds a struct uw_state); the walker's code is in unwind.bpf.h.
 */
#ifndef BPFPROF_UNWIND_STATE_BPF_H
#define BPFPROF_UNWIND_STATE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "hotspot_abi.h"
#include "profile_abi.h"
#include "unwind_abi.h"

const volatile __u32 unwind_mode = UNWIND_MODE_FP;

/* Slot pool generation: set by userspace whenever slots are freed. */
volatile __u64 uw_gen = 0;
/* Bumped by userspace after every change to unwind_procs or hotspot_procs. */
volatile __u64 uw_proc_gen = 0;

/* Mmapable: userspace writes tables straight into the chunk's memory. */
struct unwind_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, UNWIND_CHUNK_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
};

/* Slot pool: chunk i is created and installed by userspace when first needed. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, UNWIND_MAX_CHUNKS);
	__type(key, __u32);
	__array(values, struct unwind_chunk);
} unwind_chunks SEC(".maps");

/* tgid -> its executable mappings; bounded, userspace evicts the least
 * recently noticed processes when it is full. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bp_uproc);
} unwind_procs SEC(".maps");

#define UW_REFRESH_NS 500000000ULL /* at most two refresh requests a second per process */
#define UW_MAP_PROBES 16	   /* log2(UNWIND_MAX_MAPS) + 1 */
#define UW_ROW_PROBES 13	   /* ceil(log2(UNWIND_PAGE_MAX_ROWS)) */
#define UW_F_EXACT    1		   /* pc is not a return address (leaf, after a signal frame) */
#define UW_F_TRUSTED  2		   /* pc came from a table step or the registers */
#define UW_CACHE_SIZE 512	   /* row cache entries per CPU (16 KiB: four pages) */
#define UW_CACHE_SETS (UW_CACHE_SIZE / 2) /* two entries (one cache line) per set */
#define UW_NO_ROW     0xff		  /* cached: the mapping has no row for the pc */
#define UW_WIN_BYTES  512		  /* user stack read per helper call (uw_read) */
#define UW_WIN_WORDS  (UW_WIN_BYTES / 8)
/* uw_fp_fallback(): the farthest a frame pointer may be above its frame's sp
 * on the same stack (a thread stack's default size, RLIMIT_STACK's 8 MiB),
 * and the largest main-thread stack it believes in. */
#define UW_FP_FALLBACK_GAP   (8ULL << 20)
#define UW_FP_MAIN_STACK_MAX (1ULL << 30)
#define UW_RLIMIT_STACK	     3 /* RLIMIT_STACK (not in vmlinux.h) */

struct uw_cent {
	__u64 pc;	    /* the lookup address; 0: empty */
	__u32 gen;	    /* uw_gen when filled (low 32 bits) */
	__u32 maps;	    /* the process's mapping list */
	struct bp_urow row; /* row.op == UW_NO_ROW: frame pointers; kernel frames:
			     * row.pc to row.cfa, the range inside the granule pc */
	__u64 aux;	    /* kernel frames (kwalk.bpf.h): the raw orc_entry */
};

/* Python frames inside a walk (python.bpf.h). */
enum { PY_IDLE = 0, PY_EMIT = 1, PY_RESUME = 2 };

struct uw_py {
	__u64 frame;		     /* the next _PyInterpreterFrame to record */
	__u64 cache_ts;		     /* this CPU's last thread state found ... */
	__u32 cache_tid, cache_tgid; /* ... for this thread */
	__u8 state;		     /* PY_* */
	__u8 looked;		     /* the thread's frame was looked up in this walk */
	__u8 emitted;		     /* frames recorded for the current native frame */
	__u8 count;		     /* Python frames in this stack */
	__u32 pad;
	__u64 buf[10]; /* a _PyInterpreterFrame as read */
	__u64 win[8];  /* a code object's checksum window as read */
};

struct uw_state {
	__u64 pc, sp, bp;
	__u64 m_start, m_end, m_bias; /* the mapping of the previous frame */
	__u32 m_pages, m_nr_pages;
	struct bp_urow row; /* uw_find_row()'s answer */
	__u32 maps, nr_maps;
	__u32 tgid;
	__u32 flags;
	__u32 capped; /* the mapping list is partial (UPROC_F_CAPPED) */
	__u32 capped_pad;
	__u32 stop; /* enum bp_stat of the stop, 0 while walking */
	__u32 nr;
	__u32 dwarf_frames, fp_frames; /* counted into stats once per walk */
	__u32 cache_hits, cache_misses;
	/* HotSpot (hotspot.bpf.h): the JVM's code cache (0, 0: not a JVM), reads of
	 * its memory and frames in this walk. */
	__u64 hs_lo, hs_hi;
	__u64 hs_orig; /* hs_step(): recorded in place of pc (a deoptimised frame's
			original pc, an interpreted frame's tagged Method*) */
	__u32 hs_reads, hs_frames;
	__u64 gen;
	/* A copy of user stack memory [win_base, win_base + win_len), this walk's. */
	__u64 win_base;
	__u32 win_len;
	__u32 win_pad;
	__u64 win[UW_WIN_WORDS];
	/* The last process entry looked up on this CPU (uw_proc_gen checks it). */
	struct {
		__u64 gen, start_time, exec_id;
		__u32 tgid, found, maps, nr_maps;
		__u32 python;  /* UPROC_F_PYTHON: python_procs has an entry */
		__u32 capped;  /* UPROC_F_CAPPED */
		__u32 hotspot; /* UPROC_F_HOTSPOT: hotspot_procs has an entry */
		__u32 hotspot_pad;
	} proc;
	struct uw_py py;
};

/* the HeapBlock (hb_size <= 64), the header, nm_deopt* */
#define HS_HDR_READ (BP_HS_HDR + BP_HS_HDR_EXTRA)

/*
 * This CPU's HotSpot walk (hotspot.bpf.h; cpu_state's hs, beside the walk's
 * registers): the JVM's entry (copied: the global functions take no
 * pointers), the blob found, the read buffers.
 */
struct hs_scratch {
	struct bp_hsproc p;
	/* Whose entry p is (hs_begin()): kept across samples until
	 * uw_proc_gen changes (userspace bumps it after every change to
	 * hotspot_procs), so a CPU sampling the same JVM again neither looks
	 * it up nor copies it. m_ok: hs_begin()'s answer for it. */
	__u64 m_gen, m_start, m_exec;
	__u32 m_tgid, m_valid, m_ok, m_pad;
	/* hs_find_blob()'s answer: [code_begin, code_end) is also the walk's
	 * last blob, which hs_step() reuses (zeroed by hs_begin()). */
	__u64 code_begin;
	__u64 code_end, blob;
	__u64 deopt, deopt_mh; /* its deopt handlers, if an nmethod (0: not known) */
	__s32 frame_size;
	__u32 frame_complete;
	/* hs_find_blob()'s walk of the segment map, kept here rather than in
	 * registers: the verifier then sees one state per hop, not one per
	 * combination of window and hop (the loop went past its 1M insns). */
	__u64 idx, wlo, segmap;
	__u32 windows, have, r;
	__u8 seg[BP_HS_SEG_WIN];
	__u8 hdr[HS_HDR_READ];
};

#endif /* BPFPROF_UNWIND_STATE_BPF_H */
