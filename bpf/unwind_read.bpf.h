/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unwind_read.bpf.h - the user-stack walker's reads of stack memory (through
 * the walk's window), its stop and its frame-pointer step: what the .eh_frame
 * walk (unwind.bpf.h), the kernel walk (kwalk.bpf.h) and the HotSpot walk
 * (hotspot.bpf.h) share.
 */
#ifndef BPFPROF_UNWIND_READ_BPF_H
#define BPFPROF_UNWIND_READ_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "cpu_state.bpf.h"
#include "unwind_state.bpf.h"

/*
 * Reads words (1 or 2) aligned 8-byte words of the stack at addr (user
 * memory, or kernel memory if kernel: the ORC walk of kwalk.bpf.h). The
 * stack is read in pieces of up to UW_WIN_BYTES: a frame's saved registers
 * are a few dozen bytes above the last frame's, so one helper call serves
 * several frames, where each read helper call has a fixed cost of its own
 * (~100 ns for user memory, ~40 for kernel memory). A user piece may run
 * into the next page (the stack above a frame is mapped: callers' frames,
 * then the thread's start-up data; 512 bytes where 256 needed a second
 * read for half the samples of tools/bench_breakdown.py's workload); if
 * that read fails, the piece ends at the page holding addr, which is
 * mapped if addr is. A kernel piece always ends there: a task's kernel
 * stack ends at a page boundary, with a guard page after it. The window
 * belongs to one walk (the walks reset win_base). 0, or -1 if the memory
 * cannot be read.
 */
static __always_inline long uw_read_mem(void *dst, __u32 len, __u64 addr, bool kernel)
{
	return kernel ? bpf_probe_read_kernel(dst, len, (void *)addr)
		      : bpf_probe_read_user(dst, len, (void *)addr);
}

static __always_inline int uw_read_win(struct uw_state *st, __u64 addr, __u64 *dst, __u32 words,
				       bool kernel)
{
	__u64 off = addr - st->win_base, len, rem;
	__u32 idx;

	if ((addr & 7) || words < 1 || words > 2)
		goto direct;
	if (!st->win_base || addr < st->win_base || off + 8 * words > st->win_len) {
		len = UW_WIN_BYTES;
		if (kernel || uw_read_mem(st->win, UW_WIN_BYTES, addr, false)) {
			rem = 4096 - (addr & 4095);
			if (rem < len)
				len = rem;
			if (len < 8 * words)
				goto direct; /* the words cross into the next page */
			barrier_var(len);
			if (len > UW_WIN_BYTES)
				goto direct;
			if (uw_read_mem(st->win, len, addr, kernel)) {
				st->win_base = 0;
				goto direct; /* as before: one read of just these words */
			}
		}
		st->win_base = addr;
		st->win_len = (__u32)len;
		off = 0;
	}
	idx = (__u32)(off >> 3);
	if (idx > UW_WIN_WORDS - words)
		goto direct;
	dst[0] = st->win[idx & (UW_WIN_WORDS - 1)];
	if (words == 2)
		dst[1] = st->win[(idx + 1) & (UW_WIN_WORDS - 1)];
	return 0;
direct:
	return uw_read_mem(dst, 8 * (words & 3), addr, kernel) ? -1 : 0;
}

static __always_inline int uw_read(struct uw_state *st, __u64 addr, __u64 *dst, __u32 words)
{
	return uw_read_win(st, addr, dst, words, false);
}

static __always_inline long uw_stop(struct uw_state *st, __u32 reason)
{
	st->stop = reason;
	return 1;
}

/* A frame-pointer step: [rbp] = caller's rbp, [rbp + 8] = return address. */
static __always_inline long uw_fp_step(struct uw_state *st)
{
	__u64 fr[2];

	if (unwind_mode == UNWIND_MODE_DWARF)
		return uw_stop(st, STAT_UNWIND_ERR_NO_TABLE);
	if (!st->bp)
		return uw_stop(st, STAT_UNWIND_FP_END);
	if (st->bp < st->sp || (st->bp & 7))
		return uw_stop(st, STAT_UNWIND_ERR_CFA);
	if (uw_read(st, st->bp, fr, 2))
		return uw_stop(st, STAT_UNWIND_ERR_READ);
	st->fp_frames++;
	st->sp = st->bp + 16;
	st->bp = fr[0];
	st->pc = fr[1];
	st->flags = 0; /* a frame-pointer pc may be junk: no refresh requests for it */
	return 0;
}

#endif /* BPFPROF_UNWIND_READ_BPF_H */
