/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unwind_abi.h - the ABI of the .eh_frame unwinder, shared by
 * bpf/unwind.bpf.h (the walker) and src/unwind/ + src/collector/unwind_kops.c (the
 * tables and the maps that hold them).
 *
 * Everything the walker reads lives in one "slot pool": 8-byte slots in
 * chunks of UNWIND_CHUNK_SLOTS, each chunk an ARRAY map created on demand
 * and installed in an ARRAY_OF_MAPS (so kernel memory grows with the tables
 * loaded, up to a cap, and lookups stay inlined array accesses). A slot
 * index is global: chunk = slot >> UNWIND_CHUNK_SHIFT. Userspace allocates
 * contiguous runs of slots inside one chunk for:
 *
 *   - a table's page index: one struct bp_upage per 4 KiB of text, giving
 *     the rows that cover that page (so the walker's binary search is over
 *     a few dozen rows, not a whole library);
 *   - a table's rows (struct bp_urow), sorted by pc, split into runs at page
 *     boundaries when a table does not fit one chunk;
 *   - a process's executable mappings (struct bp_umap, 4 slots each), sorted
 *     by start address.
 *
 * The per-process entry (struct bp_uproc, hash map keyed by tgid) names the
 * mapping run. Fixed-width types only; every struct's size is pinned.
 */
#ifndef BPFPROF_UNWIND_ABI_H
#define BPFPROF_UNWIND_ABI_H

#ifndef __VMLINUX_H__ /* BPF programs get the __u* types from vmlinux.h */
#include <linux/types.h>
#endif

#define UNWIND_PAGE_SHIFT  12 /* page index granularity: 4 KiB of text */
#define UNWIND_CHUNK_SHIFT 17
#define UNWIND_CHUNK_SLOTS (1u << UNWIND_CHUNK_SHIFT) /* 1 MiB per chunk */
#define UNWIND_MAX_CHUNKS  512			      /* hard cap: 512 MiB */
#define UNWIND_MAP_SLOTS   4			      /* slots per struct bp_umap */
/* Executable mappings per process: one chunk's worth (a list is one run). */
#define UNWIND_MAX_MAPS (UNWIND_CHUNK_SLOTS / UNWIND_MAP_SLOTS) /* 32768 */
#define UNWIND_NO_TABLE 0xffffffffu /* bp_umap.pages: walk with frame pointers */
/* Rows one page may reference: a row per byte of the page plus the one covering its start. */
#define UNWIND_PAGE_MAX_ROWS ((1u << UNWIND_PAGE_SHIFT) + 1)

/* --unwind modes (rodata unwind_mode). */
enum bp_unwind_mode {
	UNWIND_MODE_FP = 0,    /* frame pointers only (bpf_get_stack() if the walker cannot load) */
	UNWIND_MODE_AUTO = 1,  /* tables where loaded, frame pointers elsewhere */
	UNWIND_MODE_DWARF = 2, /* tables only: a frame without one ends the stack */
};

/*
 * How to find the caller's CFA (canonical frame address: the caller's stack
 * pointer after the return) - low nibble of bp_urow.op. On x86-64 the return
 * address is always at CFA - 8 for the kinds that have a CFA.
 */
enum bp_urow_cfa {
	UROW_CFA_NONE = 0,	  /* no CFI here (gap between FDEs): frame pointers */
	UROW_CFA_RSP = 1,	  /* CFA = rsp + cfa */
	UROW_CFA_RBP = 2,	  /* CFA = rbp + cfa */
	UROW_CFA_PLT = 3,	  /* CFA = rsp + cfa + ((rip & 15) >= rbp ? 8 : 0): PLT stubs */
	UROW_CFA_DEREF_RBP = 4,	  /* CFA = *(rbp + (s16)cfa): gcc's stack realignment */
	UROW_CFA_SIGNAL = 5,	  /* rt_sigframe: rsp, rip, rbp saved at rsp + cfa, +8, -40 */
	UROW_CFA_END = 6,	  /* return address undefined: outermost frame (_start) */
	UROW_CFA_UNSUPPORTED = 7, /* a rule the walker cannot follow: stop here */
	UROW_CFA_RSP_X8 = 8,	  /* CFA = rsp + 8 * cfa: frames of 64 KiB or more */
};

/* Where the caller's rbp is - high nibble of bp_urow.op. */
enum bp_urow_rbp {
	UROW_RBP_SAME = 0,  /* unchanged (callee-saved, not touched yet) */
	UROW_RBP_CFA = 1,   /* saved at CFA + 8 * rbp */
	UROW_RBP_DEREF = 2, /* saved at rbp + 8 * rbp (with UROW_CFA_DEREF_RBP) */
};

#define UROW_OP(cfa, rbp) ((__u8)((cfa) | ((rbp) << 4)))
#define UROW_CFA_OF(op)	  ((op)&0x0f)
#define UROW_RBP_OF(op)	  ((op) >> 4)

/* One unwind row: the rule from pc up to the next row's pc. 8 bytes. */
struct bp_urow {
	__u32 pc;  /* offset from the table's base vaddr */
	__u8 op;   /* UROW_OP(cfa kind, rbp kind) */
	__s8 rbp;  /* rbp slot offset in 8-byte units; PLT: the rip & 15 threshold */
	__u16 cfa; /* CFA offset in bytes (s16 for UROW_CFA_DEREF_RBP) */
};
_Static_assert(sizeof(struct bp_urow) == 8, "bp_urow: one slot");

/* One page of the page index: the rows covering [base + p * 4096, +4096). */
struct bp_upage {
	__u32 first; /* global slot of the row covering the page start */
	__u32 count; /* rows, 0 if the page has no CFI at all */
};
_Static_assert(sizeof(struct bp_upage) == 8, "bp_upage: one slot");

/*
 * One executable mapping of a process: vaddr (as in the table) =
 * address - bias. pages = UNWIND_NO_TABLE for code without a table (JIT,
 * anonymous, files without .eh_frame): those frames use frame pointers.
 */
struct bp_umap {
	__u64 start, end; /* [start, end) */
	__u64 bias;	  /* address - bias = table offset (base folded in) */
	__u32 pages;	  /* global slot of page 0 of the table's page index */
	__u32 nr_pages;
};
_Static_assert(sizeof(struct bp_umap) == 8 * UNWIND_MAP_SLOTS, "bp_umap: UNWIND_MAP_SLOTS slots");

/* bp_uproc.flags */
#define UPROC_F_ANY_IMAGE 1 /* installed before the first notice (-p): ids not known yet */
#define UPROC_F_PYTHON	  2 /* a Python process: python_procs (python_abi.h) has its entry */
#define UPROC_F_CAPPED                                                                             \
	4 /* mappings with tables were left out (UNWIND_MAX_MAPS): a pc in no                      \
	   * listed mapping ends the stack (STAT_UNWIND_ERR_MAPS_LIMIT) */
/* A JVM: hotspot_procs (hotspot_abi.h) has its entry. */
#define UPROC_F_HOTSPOT 8

/* unwind_procs: tgid -> the image's mappings. */
struct bp_uproc {
	__u64 start_time; /* must match the sampled image, else frame pointers */
	__u64 exec_id;
	__u64 refresh_ns; /* BPF: when it last asked userspace to re-read the maps */
	__u32 maps;	  /* global slot of the first bp_umap */
	__u32 nr_maps;
	__u32 flags; /* UPROC_F_* */
	__u32 pad;
};
_Static_assert(sizeof(struct bp_uproc) == 40, "bp_uproc");

#endif /* BPFPROF_UNWIND_ABI_H */
