/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * kwalk.bpf.h - walks the kernel stack of a sample taken in kernel mode with
 * the kernel's own ORC table (copied and reshaped by src/unwind/korc.c),
 * giving exactly what bpf_get_stack() gives - [interrupted ip, return
 * address, ...] up to the user-mode registers or the end-of-stack hint -
 * at a fraction of its cost: the kernel's unwinder searches several MiB of
 * cold tables for every frame, this walk finds most frames in the per-CPU
 * row cache it shares with the user-stack walker (one cache line each).
 *
 * Only what the table fully describes is walked: CALL and full REGS frames
 * with their CFA on rsp or rbp, in [_stext, _etext). Anything else - a
 * module or BPF program on the stack, an ftrace or kretprobe return
 * trampoline, an iret frame, a switch to another stack - makes the caller
 * take bpf_get_stack() for the whole stack, so the result is the kernel's
 * in every case (tests run with kw_verify, which checks every stack).
 * It shares the row cache and its search with the user-stack walker
 * (unwind.bpf.h). x86-64 only.
 */
#ifndef BPFPROF_KWALK_BPF_H
#define BPFPROF_KWALK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "profile_abi.h"
#include "cpu_state.bpf.h"
#include "unwind.bpf.h"

const volatile bool kw_enabled = false;
const volatile bool kw_verify = false; /* tests: compare with bpf_get_stack() */
const volatile __u64 kw_base = 0, kw_end = 0;
const volatile __u32 kw_nblocks = 0;
const volatile __u64 kw_tramp0 = 0, kw_tramp1 = 0, kw_tramp2 = 0;

/* Filled by userspace through mmap before attach, then never written. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by userspace */
	__type(key, __u32);
	__type(value, struct bp_korc_ent);
} korc_ents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} korc_uniq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bp_korc_block);
} korc_blocks SEC(".maps");

#define KW_MAPS	  0xffffffffu	      /* row cache entries of kernel frames: no mapping list is */
#define KW_GEN	  0xffffffffu	      /* (and the maps field alone tells them apart) */
#define KW_PROBES 13		      /* entries per 4 KiB block <= 4096 */
#define KW_FAIL	  STAT_KWALK_FALLBACK /* st->stop: take bpf_get_stack() */

/*
 * The raw orc_entry covering lookup (see korc__lookup()), and the range it
 * covers: [*lo, *hi), offsets from kw_base (up to the next entry's ip).
 */
static __always_inline bool kw_find(__u64 lookup, __u64 *raw, __u32 *rlo, __u32 *rhi)
{
	__u32 off = (__u32)(lookup - kw_base), b = off >> KORC_BLOCK_SHIFT, lo, n;
	struct bp_korc_block *blk;
	struct bp_korc_ent *e;
	__u64 *u;

	if (b >= kw_nblocks)
		return false;
	blk = bpf_map_lookup_elem(&korc_blocks, &b);
	if (!blk || !blk->count)
		return false;
	lo = blk->first;
	n = blk->count;
	for (int i = 0; i < KW_PROBES; i++) {
		__u32 half = n / 2, mid;

		if (n <= 1)
			break;
		mid = lo + half;
		e = bpf_map_lookup_elem(&korc_ents, &mid);
		if (!e)
			return false;
		if (e->ip <= off)
			lo = mid;
		n -= half;
	}
	e = bpf_map_lookup_elem(&korc_ents, &lo);
	if (!e || e->ip > off)
		return false;
	u = bpf_map_lookup_elem(&korc_uniq, &e->uniq);
	if (!u)
		return false;
	*raw = *u;
	*rlo = e->ip;
	lo++;
	e = bpf_map_lookup_elem(&korc_ents, &lo); /* the next entry: usually the same line */
	*rhi = e && e->ip > off ? e->ip : off + 1;
	return true;
}

/*
 * Kernel frames are cached by 64-byte granule, each entry holding the part
 * of its ORC entry's range inside the granule (row.pc to row.cfa, offsets
 * in the granule): a sample taken in kernel mode has a new leaf pc almost
 * every time, and a pc near an earlier one mostly shares its entry. Return
 * addresses repeat anyway.
 */
#define KW_GRANULE 64

/* Kernel stack words through the walk's window (uw_read_win()). */
static __always_inline bool kw_read(struct uw_state *st, __u64 *dst, __u32 words, __u64 addr)
{
	return uw_read_win(st, addr, dst, words, true) == 0;
}

static long kw_step(__u64 index, void *data)
{
	struct uw_ctx *c = data;
	struct uw_state *st = c->st;
	struct bp_stack *out = c->out;
	__u64 lookup, raw, cfa, ip, sp, nbp, regs[5], g, lo_abs, hi_abs;
	__u32 nr = st->nr, type, at, rlo = 0, rhi = 0;
	struct uw_cent *ce;
	bool found, is_regs, hit;

	if (nr >= PROFILE_MAX_DEPTH)
		return uw_stop(st, STAT_UNWIND_TRUNCATED); /* as deep as the kernel's */
	out->ips[nr] = st->pc;
	st->nr = nr + 1;

	lookup = st->pc - ((st->flags & UW_F_EXACT) ? 0 : 1);
	if (lookup < kw_base || lookup >= kw_end)
		return uw_stop(st, KW_FAIL);
	g = lookup & ~(__u64)(KW_GRANULE - 1);
	at = (__u32)(lookup - g);
	ce = uw_cache_find(st, g, KW_GEN, KW_MAPS, &hit);
	if (hit && at >= ce->row.pc && at < ce->row.cfa) {
		raw = ce->aux;
		found = ce->row.op != UW_NO_ROW;
	} else {
		/* A miss, or the granule's entry is another range: (re)fill it. */
		found = kw_find(lookup, &raw, &rlo, &rhi);
		ce->pc = g;
		ce->maps = KW_MAPS;
		ce->gen = KW_GEN;
		ce->aux = found ? raw : 0;
		ce->row.op = found ? 0 : UW_NO_ROW;
		if (found) {
			lo_abs = kw_base + rlo;
			hi_abs = kw_base + rhi;
			ce->row.pc = lo_abs > g ? (__u32)(lo_abs - g) : 0;
			ce->row.cfa = hi_abs - g < KW_GRANULE ? (__u16)(hi_abs - g) : KW_GRANULE;
		} else {
			ce->row.pc = at;
			ce->row.cfa = at + 1;
		}
	}
	if (!found)
		return uw_stop(st, KW_FAIL);

	type = KORC_TYPE(raw);
	if (type == KORC_TYPE_END_OF_STACK)
		return uw_stop(st, STAT_UNWIND_END);
	if (type != KORC_TYPE_CALL && type != KORC_TYPE_REGS)
		return uw_stop(st, KW_FAIL);
	switch (KORC_SP_REG(raw)) {
	case KORC_REG_SP:
		cfa = st->sp + KORC_SP_OFF(raw);
		break;
	case KORC_REG_BP:
		cfa = st->bp + KORC_SP_OFF(raw);
		break;
	case KORC_REG_BP_INDIRECT:
		if (!kw_read(st, &cfa, 1, st->bp + KORC_SP_OFF(raw)))
			return uw_stop(st, KW_FAIL);
		break;
	default: /* SP_INDIRECT (a stack switch), registers only a full regs frame has */
		return uw_stop(st, KW_FAIL);
	}
	is_regs = type == KORC_TYPE_REGS;
	/* A call frame's CFA is above sp; a regs frame may start at sp. */
	if (cfa < st->sp || (cfa == st->sp && !is_regs))
		return uw_stop(st, KW_FAIL);

	nbp = st->bp;
	if (is_regs) {
		/* struct pt_regs at cfa: bp at 4, ip at 16, cs at 17, sp at 19 (x8). */
		if (!kw_read(st, &regs[0], 1, cfa + 4 * 8) ||
		    !kw_read(st, &regs[1], 2, cfa + 16 * 8) ||
		    !kw_read(st, &regs[3], 1, cfa + 19 * 8))
			return uw_stop(st, KW_FAIL);
		if ((regs[2] & 3) == 3)
			return uw_stop(st,
				       STAT_UNWIND_END); /* user registers: the kernel stack ends */
		ip = regs[1];
		sp = regs[3];
		if (KORC_BP_REG(raw) == KORC_REG_UNDEFINED)
			nbp = regs[0];
	} else {
		if (!kw_read(st, &ip, 1, cfa - 8))
			return uw_stop(st, KW_FAIL);
		sp = cfa;
	}
	if (ip == kw_tramp0 || ip == kw_tramp1 || ip == kw_tramp2)
		return uw_stop(st, KW_FAIL); /* the kernel would recover the real address */
	switch (KORC_BP_REG(raw)) {
	case KORC_REG_UNDEFINED:
		break;
	case KORC_REG_PREV_SP:
		if (!kw_read(st, &nbp, 1, cfa + KORC_BP_OFF(raw)))
			return uw_stop(st, KW_FAIL);
		break;
	case KORC_REG_BP:
		if (!kw_read(st, &nbp, 1, st->bp + KORC_BP_OFF(raw)))
			return uw_stop(st, KW_FAIL);
		break;
	default:
		return uw_stop(st, KW_FAIL);
	}
	if (sp <= st->sp)
		return uw_stop(st, KW_FAIL);
	st->pc = ip;
	st->sp = sp;
	st->bp = nbp;
	st->flags = KORC_SIGNAL(raw) ? UW_F_EXACT : 0;
	return 0;
}

/*
 * The kernel stack from pc, sp and bp; exact: pc is where the CPU stopped
 * (an interrupted ip), not a return address. False: use the kernel's walk.
 */
static __always_inline bool kw_walk_from(__u64 pc, __u64 sp, __u64 bp, bool exact,
					 struct uw_state *st, struct bp_stack *out)
{
	struct uw_ctx c = { .st = st, .out = out };

	st->pc = pc;
	st->sp = sp;
	st->bp = bp;
	barrier_var(st->pc);
	st->flags = exact ? UW_F_EXACT : 0;
	st->stop = 0;
	st->nr = 0;
	st->win_base = 0; /* nothing read yet: the window may hold another stack */
	bpf_loop(PROFILE_MAX_DEPTH + 1, kw_step, &c, 0);
	out->nr = st->nr;
	return st->stop == STAT_UNWIND_END || st->stop == STAT_UNWIND_TRUNCATED;
}

/* The kernel stack of a sample taken in kernel mode; false: use bpf_get_stack(). */
static __always_inline bool kw_walk(struct bpf_perf_event_data *ctx, struct uw_state *st,
				    struct bp_stack *out)
{
	return kw_walk_from(ctx->regs.ip, ctx->regs.sp, ctx->regs.bp, true, st, out);
}

#endif /* BPFPROF_KWALK_BPF_H */
