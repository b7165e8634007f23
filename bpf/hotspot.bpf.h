/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hotspot.bpf.h - HotSpot JIT-compiled and interpreted frames in the
 * user-stack walk (unwind.bpf.h calls in here; ABI in hotspot_abi.h).
 *
 * A JVM started without -XX:+PreserveFramePointer keeps no frame pointer in
 * compiled code, so when the walk's pc is in the JVM's code cache this file
 * takes the step, one frame per bpf_loop() iteration of the walker:
 *
 *   - the interpreter (pc in [interp_lo, interp_hi), no lookup): rbp is the
 *     frame's fp; pc = fp[1], bp = fp[0], sp = fp[if_sender_sp] (the
 *     caller's unextended sp);
 *   - the call stub's return address (call_stub_ra): a frame-pointer step
 *     into JavaCalls::call_helper, whose .eh_frame row takes over (in every
 *     --unwind mode: the stub has no table);
 *   - anything else: the code blob holding the pc, found through its code
 *     heap's segment map (hs_find_blob(): windows of BP_HS_SEG_WIN bytes,
 *     at most BP_HS_SEG_WINDOWS of them) and its header (one read of
 *     BP_HS_HDR bytes past the HeapBlock); a blob with a frame size
 *     (nmethods, runtime stubs): sender_sp = sp + 8 * frame_size, pc =
 *     sender_sp[-1], bp = sender_sp[-2]; without one (stubs, adapters): a
 *     leaf returns to [sp], a caller takes a frame-pointer step.
 *
 * A leaf (the sampled pc, not a return address) may be before its frame is
 * built (a compiled method's prologue, an interpreted method's entry): its
 * return address is then taken from [sp] or [sp + 8], only when that value
 * is in the code cache (counted: STAT_UNWIND_JVM_LEAF_GUESS). So is a
 * compiled leaf in its epilogue, told by the instruction at its pc
 * (hs_epilogue(): one more read of the JVM's memory per compiled leaf).
 *
 * Nothing the process wrote is trusted: the entry's offsets are bounded
 * before use, sp must move up, frame sizes stay in [BP_HS_MIN_FRAME,
 * BP_HS_MAX_FRAME], an interpreter fp must sit just above sp and its
 * sender sp just above it, a Java frame's caller must be in the code cache,
 * and the walk reads the JVM's memory (segment map, headers) at most
 * BP_HS_READ_BUDGET times, so a hostile fake JVM costs a bounded time per
 * sample. Every stop is counted (STAT_UNWIND_ERR_JVM_*).
 *
 * Verifier: the step and the blob lookup are global functions with scalar
 * arguments (like uw_find_mapping()), verified once on their own; their
 * state is this CPU's cpu_state: the walk's registers (uw) and the JVM's
 * walk (hs: the process's entry, copied once and kept while uw_proc_gen
 * holds, the last blob found, the read buffers).
 *
 * Per sample, what a Java stack costs over a native one is mostly cold
 * memory: hence the entry kept per CPU (no lookup or copy while the CPU
 * samples the same JVM), the last blob reused within a walk (a recursion
 * steps through one nmethod many times: no segment-map or header read), and
 * the JVM's walk on the pages of the walk's registers.
 */
#ifndef BPFPROF_HOTSPOT_BPF_H
#define BPFPROF_HOTSPOT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "cpu_state.bpf.h"
#include "hotspot_abi.h"
#include "unwind_read.bpf.h"
#include "unwind_state.bpf.h"

#define HS_MAX_HOPS 32	   /* segment-map hops per blob (an honest 1 MiB blob needs ~66) */
#define HS_FC_NEVER 0xffff /* _frame_complete_offset -1: never complete */
#define HS_LOG2_MIN 4
#define HS_LOG2_MAX 16

/* tgid -> what the walker needs of a JVM; userspace keeps it bounded. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bp_hsproc);
} hotspot_procs SEC(".maps");

/* This CPU's HotSpot walk (struct hs_scratch: unwind_state.bpf.h), or NULL. */
static __always_inline struct hs_scratch *hs_scratch_of(struct cpu_state *cs)
{
	return cs ? &cs->hs : NULL;
}

/* The process's JVM entry for exactly this image, into s->p with its
 * offsets checked: 1, or 0 if it has no usable one. */
static __always_inline int hs_load(struct hs_scratch *s, __u32 tgid, __u64 start_time,
				   __u64 exec_id)
{
	struct bp_hsproc *p = bpf_map_lookup_elem(&hotspot_procs, &tgid);

	if (!p || p->start_time != start_time || p->exec_id != exec_id)
		return 0;
	__builtin_memcpy(&s->p, p, sizeof(s->p));
	if (s->p.cc_lo >= s->p.cc_hi || s->p.nr_heaps > BP_HS_HEAPS ||
	    s->p.log2_seg < HS_LOG2_MIN || s->p.log2_seg > HS_LOG2_MAX || s->p.hb_size > 64 ||
	    s->p.hb_used >= s->p.hb_size || s->p.cb_frame_size > BP_HS_HDR - 8 ||
	    s->p.cb_frame_complete > BP_HS_HDR - 8 || s->p.cb_begin > BP_HS_HDR - 8 ||
	    s->p.cb_end > BP_HS_HDR - 8 || s->p.cb_size > BP_HS_HDR - 8 ||
	    s->p.if_sender_sp < -16 || s->p.if_sender_sp > -1)
		return 0;
	return 1;
}

/*
 * A walk's start: the process's JVM entry (hs_load()), and its code cache
 * into the walk's state (st->hs_lo, hs_hi: the frames hs_step() takes);
 * none (0, 0: native frames only, as before) if it has no usable entry.
 * The answer is kept in this CPU's scratch until hotspot_procs changes
 * (uw_proc_gen: st->proc.gen is this sample's, read before uw_proc(),
 * which ran first; userspace bumps it after every update or delete, so an
 * entry taken is never older than the generation it is kept under).
 * Global, and the walker sees only the state it wrote: verified once, and
 * the walk's loop is not verified once per answer (a pointer in the loop's
 * context doubled the program's verification).
 */
__attribute__((noinline)) int hs_begin(__u32 tgid, __u64 start_time, __u64 exec_id)
{
	struct cpu_state *cs = cpu_state_get();
	struct hs_scratch *s = hs_scratch_of(cs);
	struct uw_state *st;

	if (!cs || !s)
		return 0;
	st = &cs->uw;
	st->hs_lo = st->hs_hi = 0;
	st->hs_reads = st->hs_frames = 0;
	s->code_begin = s->code_end = 0; /* no blob of this walk yet */
	if (!s->m_valid || s->m_gen != st->proc.gen || s->m_tgid != tgid ||
	    s->m_start != start_time || s->m_exec != exec_id) {
		s->m_valid = 0; /* while p is rewritten */
		s->m_ok = hs_load(s, tgid, start_time, exec_id);
		s->m_gen = st->proc.gen;
		s->m_tgid = tgid;
		s->m_start = start_time;
		s->m_exec = exec_id;
		s->m_valid = 1;
	}
	if (!s->m_ok)
		return 0;
	st->hs_lo = s->p.cc_lo;
	st->hs_hi = s->p.cc_hi;
	return 1;
}

static __always_inline bool hs_in_cc(const struct hs_scratch *s, __u64 pc)
{
	return pc >= s->p.cc_lo && pc < s->p.cc_hi;
}

/* n (2, 4 or 8) little-endian bytes of the header read, at off past the HeapBlock. */
static __always_inline __u64 hs_hdr(const struct hs_scratch *s, __u32 off, __u32 n)
{
	__u64 v = 0;

	off += s->p.hb_size;
	if (off > HS_HDR_READ - 8)
		return 0;
	off &= 0xff;
	if (n == 8)
		__builtin_memcpy(&v, &s->hdr[off], 8);
	else if (n == 4)
		__builtin_memcpy(&v, &s->hdr[off], 4);
	else
		__builtin_memcpy(&v, &s->hdr[off], 2);
	return v;
}

/* One read of the JVM's memory, within the walk's budget: 0, or a stop reason. */
static __always_inline __u32 hs_charge(struct uw_state *st)
{
	if (st->hs_reads >= BP_HS_READ_BUDGET)
		return STAT_UNWIND_ERR_JVM_BUDGET;
	st->hs_reads++;
	return 0;
}

/* hs_hop()'s context: this CPU's walk, as hs_find_blob() found it. */
struct hs_hop_ctx {
	struct uw_state *st;
	struct hs_scratch *s;
};

/*
 * One hop back through the segment map (a bpf_loop() callback: verified
 * once, where an unrolled loop of HS_MAX_HOPS took 6,000 of the program's
 * verified instructions): its state in this CPU's scratch; at the block's
 * first segment, s->r = 0.
 */
static long hs_hop(__u64 i, void *ctx)
{
	struct hs_hop_ctx *c = ctx;
	struct hs_scratch *s = c->s;
	__u64 len;
	__u8 b;

	if (!s->have || s->idx < s->wlo) {
		/* The window of segment-map bytes that ends at idx. */
		if (s->windows++ >= BP_HS_SEG_WINDOWS)
			return 1;
		if ((s->r = hs_charge(c->st)))
			return 1;
		s->r = STAT_UNWIND_ERR_JVM_BLOB;
		s->wlo = s->idx >= BP_HS_SEG_WIN - 1 ? s->idx - (BP_HS_SEG_WIN - 1) : 0;
		len = s->idx - s->wlo + 1;
		if (len < 1 || len > BP_HS_SEG_WIN)
			return 1;
		if (bpf_probe_read_user(s->seg, len, (void *)(s->segmap + s->wlo))) {
			s->r = STAT_UNWIND_ERR_JVM_READ;
			return 1;
		}
		s->have = 1;
	}
	b = s->seg[(s->idx - s->wlo) & (BP_HS_SEG_WIN - 1)];
	if (b == 0xff || b > s->idx) /* free, or before the heap */
		return 1;
	if (!b) {
		s->r = 0;
		return 1;
	}
	s->idx -= b;
	return 0;
}

/*
 * The code blob holding pc: its code start, frame size and frame-complete
 * offset into this CPU's scratch. 0, or the stop's reason (enum bp_stat).
 * Global: verified once (see the header comment).
 */
__attribute__((noinline)) int hs_find_blob(__u64 pc)
{
	struct cpu_state *cs = cpu_state_get();
	struct hs_scratch *s = hs_scratch_of(cs);
	struct hs_hop_ctx c;
	__u64 lo = 0, hi = 0, segmap = 0, block, blob, size, begin, end;
	struct uw_state *st;
	__u8 log2;
	__u32 r;

	if (!cs || !s)
		return STAT_UNWIND_ERR_JVM_BLOB;
	st = &cs->uw;
	for (int i = 0; i < BP_HS_HEAPS; i++) {
		if (i >= s->p.nr_heaps)
			break;
		if (pc >= s->p.heap[i].lo && pc < s->p.heap[i].hi) {
			lo = s->p.heap[i].lo;
			hi = s->p.heap[i].hi;
			segmap = s->p.heap[i].segmap;
			break;
		}
	}
	if (!hi)
		return STAT_UNWIND_ERR_JVM_BLOB;
	log2 = s->p.log2_seg & 31;
	s->idx = (pc - lo) >> log2;
	s->have = s->windows = 0;
	s->segmap = segmap;
	s->r = STAT_UNWIND_ERR_JVM_BLOB; /* a chain longer than any honest blob's */
	c.st = st;
	c.s = s;
	bpf_loop(HS_MAX_HOPS, hs_hop, &c, 0);
	if (s->r)
		return s->r;
	block = lo + (s->idx << log2);
	if ((r = hs_charge(st)))
		return r;
	if (bpf_probe_read_user(s->hdr, HS_HDR_READ, (void *)block))
		return STAT_UNWIND_ERR_JVM_READ;
	if (!s->hdr[s->p.hb_used & 63])
		return STAT_UNWIND_ERR_JVM_BLOB; /* a free block */
	blob = block + s->p.hb_size;
	size = (__u64)(__s64)(__s32)hs_hdr(s, s->p.cb_size, 4);
	if ((__s64)size <= 0 || size > hi - blob)
		return STAT_UNWIND_ERR_JVM_BLOB;
	if (s->p.flags & HSPROC_F_CODE_OFFSETS) {
		begin = blob + (__u64)(__s64)(__s32)hs_hdr(s, s->p.cb_begin, 4);
		end = blob + (__u64)(__s64)(__s32)hs_hdr(s, s->p.cb_end, 4);
	} else {
		begin = hs_hdr(s, s->p.cb_begin, 8);
		end = hs_hdr(s, s->p.cb_end, 8);
	}
	if (begin < blob || end > blob + size || pc < begin || pc >= end)
		return STAT_UNWIND_ERR_JVM_BLOB;
	s->code_begin = begin;
	s->code_end = end;
	s->blob = blob;
	s->deopt = s->p.nm_deopt ? hs_hdr(s, s->p.nm_deopt, 8) : 0;
	s->deopt_mh = s->p.nm_deopt_mh ? hs_hdr(s, s->p.nm_deopt_mh, 8) : 0;
	s->frame_size = (__s32)hs_hdr(s, s->p.cb_frame_size, 4);
	s->frame_complete = (__u32)hs_hdr(s, s->p.cb_frame_complete, 2);
	return 0;
}

/*
 * The blob holding pc into s (hs_find_blob()), or the walk's last one if
 * it holds pc: a recursion steps through one nmethod again and again. Live
 * blobs' code ranges do not overlap, and hs_find_blob() writes its answer
 * whole, after its checks; a blob freed and reused within one walk is the
 * race two lookups would have too.
 */
static __always_inline __u32 hs_blob(const struct hs_scratch *s, __u64 pc)
{
	if (pc >= s->code_begin && pc < s->code_end)
		return 0;
	return hs_find_blob(pc);
}

/* The step to a Java frame's caller: it must be up the stack and in the code cache. */
static __always_inline long hs_next(struct uw_state *st, const struct hs_scratch *s, __u64 pc,
				    __u64 sp, __u64 bp)
{
	if (sp <= st->sp)
		return uw_stop(st, STAT_UNWIND_ERR_JVM_FRAME);
	if (!hs_in_cc(s, pc))
		return uw_stop(st, STAT_UNWIND_ERR_JVM_RA);
	st->pc = pc;
	st->sp = sp;
	st->bp = bp;
	st->flags = 0; /* a return address: looked up at pc - 1; no refresh requests */
	st->hs_frames++;
	return 0;
}

/*
 * A leaf whose frame is not built (or not known): its return address at
 * [sp] (before push rbp), or at [sp + 8] with the caller's rbp at [sp]
 * (after it), taken only if in the code cache; else stop with reason.
 */
static __always_inline long hs_leaf(struct uw_state *st, const struct hs_scratch *s, __u32 reason)
{
	__u64 fr[2];

	if (!(st->flags & UW_F_EXACT))
		return uw_stop(st, reason);
	if (uw_read(st, st->sp, fr, 2))
		return uw_stop(st, STAT_UNWIND_ERR_JVM_READ);
	stat_inc(STAT_UNWIND_JVM_LEAF_GUESS);
	if (hs_in_cc(s, fr[0]))
		return hs_next(st, s, fr[0], st->sp + 8, st->bp);
	if (hs_in_cc(s, fr[1]))
		return hs_next(st, s, fr[1], st->sp + 16, fr[0]);
	return uw_stop(st, reason);
}

/*
 * Where a compiled leaf is in its epilogue (add rsp; pop rbp; the return
 * poll: cmp rsp, [r15 + d]; ja; ret), from the instruction at pc: 1 after
 * pop rbp (return address at [sp]), 2 at it (rbp at [sp], return address at
 * [sp + 8]), 0 elsewhere: the frame is whole, the frame-size step holds.
 * The frame-size step in an epilogue would read the caller's frame - and
 * an interpreted caller's frame holds its own return address, whose frame
 * would be skipped.
 */
static __always_inline int hs_epilogue(struct uw_state *st, __u64 pc)
{
	__u8 c[8];

	if (hs_charge(st) || bpf_probe_read_user(c, sizeof(c), (void *)pc))
		return 0;
	if (c[0] == 0xc3) /* ret */
		return 1;
	if (c[0] == 0x5d) /* pop rbp */
		return 2;
	if (c[0] == 0x49 && c[1] == 0x3b && (c[2] == 0x67 || c[2] == 0xa7))
		return 1; /* cmp rsp, [r15 + disp8 | disp32] */
	if (c[0] == 0x0f && c[1] == 0x87 && c[6] == 0xc3)
		return 1; /* the poll's ja rel32, then ret */
	return 0;
}

/*
 * A deoptimised frame: its callee returns to its nmethod's deopt handler
 * (pc), which unpacks it into interpreter frames; until then, the pc it was
 * at is in the frame, at sp + nmethod::_orig_pc_offset. Taken (st->hs_orig:
 * uw_step() records it in place of pc) only if it is code of the same
 * nmethod and not the handler: named then with the methods inlined at the
 * call. The step itself is the nmethod's either way.
 */
static __always_inline void hs_deopt(struct uw_state *st, const struct hs_scratch *s, __u64 pc)
{
	__s32 off;
	__u64 orig;

	if (hs_charge(st) ||
	    bpf_probe_read_user(&off, sizeof(off), (void *)(s->blob + s->p.nm_orig_pc)))
		return;
	if (off < 0 || off > (s->frame_size - 1) * 8 || (off & 7))
		return;
	if (uw_read(st, st->sp + (__u64)off, &orig, 1))
		return;
	if (orig < s->code_begin || orig >= s->code_end || orig == pc || orig == s->deopt ||
	    orig == s->deopt_mh)
		return;
	st->hs_orig = orig;
	stat_inc(STAT_UNWIND_JVM_DEOPT);
}

/* A frame-pointer step out of a stub; the pc it finds may be native. */
static __always_inline long hs_fp_step(struct uw_state *st)
{
	__u64 fr[2];

	if (!st->bp || (st->bp & 7) || st->bp < st->sp)
		return uw_stop(st, STAT_UNWIND_ERR_JVM_FRAME);
	if (uw_read(st, st->bp, fr, 2))
		return uw_stop(st, STAT_UNWIND_ERR_JVM_READ);
	st->sp = st->bp + 16;
	st->bp = fr[0];
	st->pc = fr[1];
	st->flags = 0;
	st->hs_frames++;
	return 0;
}

/*
 * The step from a frame whose pc is in the code cache (the caller checked):
 * 0 to go on, 1 to stop (st->stop set). Global: verified once.
 */
__attribute__((noinline)) int hs_step(__u64 unused)
{
	struct cpu_state *cs = cpu_state_get();
	struct hs_scratch *s = hs_scratch_of(cs);
	struct uw_state *st;
	__u64 pc, fp, fr[2], ssp, m;
	__u32 r;

	if (!cs || !s)
		return 1;
	st = &cs->uw;
	pc = st->pc;
	if (pc >= s->p.interp_lo && pc < s->p.interp_hi) {
		/* The interpreter: rbp is this frame's (in a method's entry,
		 * before its frame is built, still the caller's). */
		fp = st->bp;
		if ((fp & 7) || fp < st->sp || fp - st->sp >= BP_HS_INTERP_FRAME)
			return hs_leaf(st, s, STAT_UNWIND_ERR_JVM_INTERP);
		if (uw_read(st, fp + (__s64)s->p.if_sender_sp * 8, &ssp, 1) ||
		    uw_read(st, fp, fr, 2))
			return uw_stop(st, STAT_UNWIND_ERR_JVM_READ);
		if (ssp < fp + 16 || ssp - fp > BP_HS_INTERP_SENDER)
			return uw_stop(st, STAT_UNWIND_ERR_JVM_INTERP);
		/* A frame that called out is complete: recorded by its Method*
		 * (uw_step() puts st->hs_orig in place of pc; bp_hs_is_interp). */
		if (!(st->flags & UW_F_EXACT) &&
		    !uw_read(st, fp + (__s64)s->p.if_method * 8, &m, 1) && m && !(m & 7) &&
		    !(m & ~BP_HS_ADDR_MASK))
			st->hs_orig = BP_HS_INTERP_MARK | m;
		return hs_next(st, s, fr[1], ssp, fr[0]);
	}
	if (pc == s->p.call_stub_ra && !(st->flags & UW_F_EXACT)) {
		/* The call stub, the first Java frame's caller: back to native frames. */
		stat_inc(STAT_UNWIND_JVM_STUB);
		return hs_fp_step(st);
	}
	r = hs_blob(s, pc - ((st->flags & UW_F_EXACT) ? 0 : 1));
	if (r)
		return uw_stop(st, r);
	if (s->frame_size <= 0) {
		/* A stub without a frame size: a leaf returns to [sp]; a stub
		 * that called out keeps a frame pointer. */
		if (st->flags & UW_F_EXACT)
			return hs_leaf(st, s, STAT_UNWIND_ERR_JVM_RA);
		return hs_fp_step(st);
	}
	if (s->frame_size < BP_HS_MIN_FRAME || s->frame_size > BP_HS_MAX_FRAME)
		return uw_stop(st, STAT_UNWIND_ERR_JVM_FRAME);
	/* A leaf in the prologue: its frame is not complete yet. */
	if ((st->flags & UW_F_EXACT) && s->frame_complete != HS_FC_NEVER &&
	    pc < s->code_begin + s->frame_complete)
		return hs_leaf(st, s, STAT_UNWIND_ERR_JVM_RA);
	if (st->flags & UW_F_EXACT) {
		r = hs_epilogue(st, pc);
		if (r) {
			stat_inc(STAT_UNWIND_JVM_LEAF_GUESS);
			if (uw_read(st, st->sp, fr, 2))
				return uw_stop(st, STAT_UNWIND_ERR_JVM_READ);
			if (r == 1)
				return hs_next(st, s, fr[0], st->sp + 8, st->bp);
			return hs_next(st, s, fr[1], st->sp + 16, fr[0]);
		}
	}
	if (!(st->flags & UW_F_EXACT) && s->deopt && (pc == s->deopt || pc == s->deopt_mh))
		hs_deopt(st, s, pc);
	ssp = st->sp + (__u64)s->frame_size * 8;
	if (uw_read(st, ssp - 16, fr, 2))
		return uw_stop(st, STAT_UNWIND_ERR_JVM_READ);
	return hs_next(st, s, fr[1], ssp, fr[0]);
}

#endif /* BPFPROF_HOTSPOT_BPF_H */
