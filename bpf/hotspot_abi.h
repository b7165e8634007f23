/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hotspot_abi.h - the ABI of the HotSpot frame walker, shared by
 * bpf/hotspot.bpf.h (the walk, at sampling time) and src/ (lang/hotspot.c
 * fills the entry from the JVM's exported tables, the unwinder pushes it).
 *
 * A JVM started without -XX:+PreserveFramePointer uses rbp as an ordinary
 * register in compiled code, so a frame-pointer walk ends at the first
 * JIT frame. The walker steps through the code cache itself instead:
 *
 *   - a pc in [interp_lo, interp_hi) (the template interpreter): rbp is the
 *     frame pointer: pc = fp[1], bp = fp[0], sp = fp[if_sender_sp];
 *   - pc == call_stub_ra (StubRoutines::call_stub, the caller of the first
 *     Java frame): a frame-pointer step hands back to the native walker
 *     (JavaCalls::call_helper has .eh_frame);
 *   - any other pc in [cc_lo, cc_hi): the code blob holding it, found with
 *     the heap's segment map (one byte per 2^log2_seg bytes of code: 0xff
 *     free, 0 a block's first segment, n: go back n), then its header;
 *     frame_size > 0 (nmethods, runtime stubs): sender_sp = sp + 8 *
 *     frame_size, pc = sender_sp[-1], bp = sender_sp[-2]; a deoptimised
 *     frame (pc is its nmethod's deopt handler) recorded at its original pc.
 *
 * Nothing here is trusted: every value read from the process is checked
 * (sp moves up, frame sizes and fps in bounds, a Java frame's caller in the
 * code cache), reads per walk are budgeted, every stop is counted.
 *
 * hotspot_procs: HASH, tgid -> struct bp_hsproc, max_entries set to
 * unwind_max_procs at open (as python_procs); the process's bp_uproc has
 * UPROC_F_HOTSPOT when it has an entry. Fixed-width types; size pinned.
 */
#ifndef BPFPROF_HOTSPOT_ABI_H
#define BPFPROF_HOTSPOT_ABI_H

#ifndef __VMLINUX_H__ /* BPF programs get the __u* types from vmlinux.h */
#include <linux/types.h>
#endif

#define BP_HS_HEAPS	    4	/* code heaps (JDK 17: non-nmethods, profiled, non-profiled) */
#define BP_HS_SEG_WIN	    256 /* segment-map bytes per read (one hop spans up to 254) */
#define BP_HS_SEG_WINDOWS   8	/* windows read per blob at most: longer chains stop */
#define BP_HS_HDR	    128 /* the CodeBlob header read: every cb_* field ends inside */
#define BP_HS_HDR_EXTRA	    64	/* read with it: the HeapBlock (hb_size <= 64), and nm_deopt* */
#define BP_HS_READ_BUDGET   256 /* reads of JVM memory per stack walk (hostile chains) */
#define BP_HS_MIN_FRAME	    2	/* frame_size bounds, words (ra and saved rbp included) */
#define BP_HS_MAX_FRAME	    8192
#define BP_HS_INTERP_FRAME  0x1000     /* an interpreter fp is within this of sp */
#define BP_HS_INTERP_SENDER (1u << 20) /* ... and its sender sp within this above fp */

/* bp_hsproc.flags */
#define HSPROC_F_CODE_OFFSETS                                                                      \
	1 /* cb_begin/cb_end are CodeBlob::_code_offset/_data_offset (int, from the blob:          \
	   * JDK 8, 23+), not _code_begin/_code_end pointers */

/* One code heap: CodeHeap::_memory's and _segmap's reserved bounds
 * (VirtualSpace::_low_boundary/_high_boundary: never change). */
struct bp_hs_heap {
	__u64 lo, hi; /* [lo, hi): the heap's code; 0, 0: unused slot */
	__u64 segmap; /* the segment map's first byte (segment 0) */
};

/*
 * What the walker needs of one JVM (hotspot_procs: tgid -> this). Offsets
 * are bytes into the structure named.
 */
struct bp_hsproc {
	__u64 start_time; /* must match the sampled image, as bp_uproc's */
	__u64 exec_id;
	__u64 cc_lo, cc_hi; /* CodeCache::_low_bound/_high_bound: "in the code cache" */
	struct bp_hs_heap heap[BP_HS_HEAPS];
	__u64 interp_lo, interp_hi; /* the interpreter's StubQueue: _stub_buffer, _buffer_limit */
	__u64 call_stub_ra;	    /* *StubRoutines::_call_stub_return_address */
	/* CodeBlob fields, read from the blob's first BP_HS_HDR bytes: each < BP_HS_HDR - 8. */
	__u16 cb_frame_size;	 /* int _frame_size, words */
	__u16 cb_frame_complete; /* _frame_complete_offset (read as 2 bytes: int or int16_t) */
	__u16 cb_begin;		 /* _code_begin (u64) or _code_offset (int, CODE_OFFSETS) */
	__u16 cb_end;		 /* _code_end (u64) or _data_offset (int, CODE_OFFSETS) */
	__u16 cb_size;		 /* int _size, bytes */
	__u16 hb_size;		 /* sizeof(HeapBlock): blob = block + hb_size */
	__u16 hb_used;		 /* HeapBlock::_header + Header::_used (a byte), from the block */
	__u8 log2_seg;		 /* CodeHeap::_log2_segment_size (the same in every heap) */
	__u8 nr_heaps;		 /* heap[] slots used */
	__u8 flags;		 /* HSPROC_F_* */
	/* The interpreter frame, words from its rbp (frame_x86.hpp). */
	__s8 if_sender_sp; /* -1: the caller's unextended sp */
	__s8 if_method;	   /* -3: Method* (a caller's frame is recorded by it) */
	__s8 if_bcp;	   /* -8 (JDK 9+), -7 (JDK 8) */
	/*
	 * A deoptimised frame: its callee's return address patched to its
	 * nmethod's deopt handler; the original pc is in the frame, at sp +
	 * *(int *)(nmethod + nm_orig_pc). nm_deopt, nm_deopt_mh: the handlers'
	 * addresses in the nmethod, within the header read (hb_size + off <=
	 * BP_HS_HDR + BP_HS_HDR_EXTRA - 8). 0: not known (the handler's pc kept).
	 */
	__u16 nm_deopt;	   /* _deopt_handler_begin (u64) */
	__u16 nm_deopt_mh; /* _deopt_mh_handler_begin (u64) */
	__u16 nm_orig_pc;  /* nmethod::_orig_pc_offset (int) */
	__u16 pad16;
	__u32 pad;
};
_Static_assert(sizeof(struct bp_hsproc) == 184, "bp_hsproc");

/*
 * An interpreted frame that called out (not the leaf: at a method's entry
 * rbp is still its caller's) is recorded by the Method* in its frame, in
 * place of its pc, as BP_HS_INTERP_MARK | Method*. User addresses are below
 * 2^56 and kernel ones have the top bits set: the slot is neither.
 */
#define BP_HS_INTERP_MARK 0x4000000000000000ULL
#define BP_HS_ADDR_MASK	  0x00ffffffffffffffULL

static inline int bp_hs_is_interp(__u64 slot)
{
	return (slot & ~BP_HS_ADDR_MASK) == BP_HS_INTERP_MARK;
}

#endif /* BPFPROF_HOTSPOT_ABI_H */
