/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unwind.bpf.h - the user-stack walker that follows .eh_frame unwind tables
 * (built in userspace by src/unwind/, format in unwind_abi.h). Only BPF code
 * sees it; the per-CPU state, counters and ring buffer it uses are in
 * cpu_state.bpf.h.
 *
 * Per frame: find the mapping holding the pc (cached between frames, else
 * a binary search over the process's sorted mappings), then the table row
 * (page index, then a binary search among that page's rows - at most 13
 * probes), compute the CFA, read the return address at CFA - 8 and the
 * caller's rbp where the row says, and continue. A frame in code without a
 * table (JIT, anonymous, files built with frame pointers and no CFI) takes
 * a frame-pointer step instead, so the two mix freely in one stack
 * (--unwind auto); with --unwind dwarf such a frame ends the stack. So does
 * a frame whose row the walker cannot follow, in --unwind auto (uw_fp_fallback()).
 *
 * Row cache: the searches cost a dozen or more dependent reads of cold
 * memory per frame, while a profiled program's return addresses repeat from
 * sample to sample. A per-CPU two-way cache remembers, per (mapping
 * list, pc), the mapping and the row found. Mapping lists and tables never
 * change in place; their slots are only rewritten after being freed, and
 * userspace bumps uw_gen (read before the process entry is looked up)
 * whenever slots are freed, so an entry of an older generation is never used.
 *
 * Verifier strategy: one frame is one bpf_loop() callback, verified once,
 * whatever the depth; the two searches inside (bounded loops of 13 and 16
 * iterations) are global functions, checked once on their own. Tables live in 1 MiB ARRAY chunks
 * behind an ARRAY_OF_MAPS, so every probe is an inlined array access, no hashing. Every stop has a
 * counted reason (STAT_UNWIND_*).
 */
#ifndef BPFPROF_UNWIND_BPF_H
#define BPFPROF_UNWIND_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "cpu_state.bpf.h"
#include "hotspot.bpf.h"
#include "python.bpf.h"
#include "unwind_read.bpf.h"
#include "unwind_state.bpf.h"

struct uw_ctx {
	struct uw_state *st;
	struct bp_stack *out;
	struct bp_pyproc *py; /* a Python process's interpreter (python.bpf.h), or NULL */
};

static __always_inline __u64 *uw_slot(void *chunk_map, __u32 idx)
{
	return bpf_map_lookup_elem(chunk_map, &idx);
}

static __always_inline void *uw_chunk(__u32 global_slot)
{
	__u32 c = global_slot >> UNWIND_CHUNK_SHIFT;

	return bpf_map_lookup_elem(&unwind_chunks, &c);
}

/* Asks userspace to re-read the process's mappings (dlopen, new JIT code). */
static __always_inline void uw_request_refresh(__u32 tgid)
{
	struct bp_uproc *p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	struct bp_proc_event *e;
	__u64 now = bpf_ktime_get_ns();

	if (!p || now - p->refresh_ns < UW_REFRESH_NS)
		return;
	p->refresh_ns = now;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->tgid = tgid;
	e->kind = PROC_EVENT_REFRESH;
	e->start_time = p->start_time;
	e->exec_id = p->exec_id;
	bpf_ringbuf_submit(e, 0);
	stat_inc(STAT_UNWIND_REFRESH);
}

/*
 * Finds the mapping holding pc and caches it in the walk's state (this
 * CPU's: the user-stack walk only runs with it); false if none does.
 * This and uw_find_row() are global functions, checked once by the verifier
 * on their own rather than inlined into every path of the frame step: their
 * bounded loops were a fifth of the program's verification, i.e. of
 * start-up, and they only run when the row cache misses (~1% of frames).
 * Scalar arguments only: global functions with pointer arguments need 5.12.
 */
__attribute__((noinline)) int uw_find_mapping(__u64 pc)
{
	struct cpu_state *cs = cpu_state_get();
	struct uw_state *st;
	__u32 base, lo = 0, n;
	__u64 *start, *end, *bias, *tab;
	void *chunk;

	if (!cs)
		return false;
	st = &cs->uw;
	base = st->maps & (UNWIND_CHUNK_SLOTS - 1);
	n = st->nr_maps;
	if (!n || n > UNWIND_MAX_MAPS)
		return false;
	chunk = uw_chunk(st->maps);
	if (!chunk)
		return false;
	for (int i = 0; i < UW_MAP_PROBES; i++) {
		__u32 half = n / 2;

		if (n <= 1)
			break;
		start = uw_slot(chunk, base + (lo + half) * UNWIND_MAP_SLOTS);
		if (!start)
			return false;
		if (*start <= pc)
			lo += half;
		n -= half;
	}
	base += lo * UNWIND_MAP_SLOTS;
	start = uw_slot(chunk, base);
	end = uw_slot(chunk, base + 1);
	bias = uw_slot(chunk, base + 2);
	tab = uw_slot(chunk, base + 3);
	if (!start || !end || !bias || !tab || pc < *start || pc >= *end)
		return false;
	st->m_start = *start;
	st->m_end = *end;
	st->m_bias = *bias;
	st->m_pages = (__u32)*tab;
	st->m_nr_pages = (__u32)(*tab >> 32);
	return true;
}

/* The row for table offset off of the walk's mapping, into the walk's
 * state (row); false if the table has none there. Global: see
 * uw_find_mapping(). */
__attribute__((noinline)) int uw_find_row(__u64 off)
{
	struct cpu_state *cs = cpu_state_get();
	struct uw_state *st;
	__u32 page, pslot, lo, n;
	struct bp_upage *pg;
	struct bp_urow *r;
	void *chunk;

	if (!cs)
		return false;
	st = &cs->uw;
	if ((off >> UNWIND_PAGE_SHIFT) >= st->m_nr_pages)
		return false;
	page = (__u32)(off >> UNWIND_PAGE_SHIFT);
	pslot = st->m_pages + page;
	chunk = uw_chunk(pslot);
	if (!chunk)
		return false;
	pg = (struct bp_upage *)uw_slot(chunk, pslot & (UNWIND_CHUNK_SLOTS - 1));
	if (!pg || !pg->count || pg->count > UNWIND_PAGE_MAX_ROWS)
		return false;
	lo = pg->first;
	n = pg->count;
	chunk = uw_chunk(lo);
	if (!chunk)
		return false;
	lo &= UNWIND_CHUNK_SLOTS - 1;
	for (int i = 0; i < UW_ROW_PROBES; i++) {
		__u32 half = n / 2;

		if (n <= 1)
			break;
		r = (struct bp_urow *)uw_slot(chunk, lo + half);
		if (!r)
			return false;
		if (r->pc <= (__u32)off)
			lo += half;
		n -= half;
	}
	r = (struct bp_urow *)uw_slot(chunk, lo);
	if (!r || r->pc > (__u32)off)
		return false;
	st->row = *r;
	return true;
}

/*
 * Whether addr is in the current task's main-thread stack: below its
 * start (mm->start_stack) by at most its RLIMIT_STACK (capped at
 * UW_FP_MAIN_STACK_MAX). Read only on uw_fp_fallback()'s path.
 */
static __always_inline bool uw_in_main_stack(__u64 addr)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 top = BPF_CORE_READ(t, mm, start_stack);
	__u64 lim = BPF_CORE_READ(t, signal, rlim[UW_RLIMIT_STACK].rlim_cur);

	if (lim > UW_FP_MAIN_STACK_MAX)
		lim = UW_FP_MAIN_STACK_MAX;
	return addr < top && top - addr <= lim;
}

/*
 * A table row the walker cannot follow (--unwind auto): go on with a
 * frame-pointer step from this frame, as a frame-pointer walk reaching it
 * would, so the default never does worse than frame pointers. SBCL's
 * call_into_lisp is such a frame (CFA = *rbp + 16: its rbp is on the C stack,
 * its callees on the Lisp control stack). Only from a plausible frame
 * pointer: 8-aligned, above the frame's sp, and either at most
 * UW_FP_FALLBACK_GAP above it (the same stack) or in the main thread's stack
 * (a switch back to it, as SBCL's main thread makes). The step moves sp
 * above rbp, so the walk still only goes up. Counted
 * (STAT_UNWIND_FP_FALLBACK); a frame that fails these checks stops the walk
 * with reason, as before.
 */
static __always_inline long uw_fp_fallback(struct uw_state *st, __u32 reason)
{
	if (unwind_mode != UNWIND_MODE_AUTO || !st->bp || (st->bp & 7) || st->bp < st->sp)
		return uw_stop(st, reason);
	if (st->bp - st->sp > UW_FP_FALLBACK_GAP && !uw_in_main_stack(st->bp))
		return uw_stop(st, reason);
	stat_inc(STAT_UNWIND_FP_FALLBACK);
	return uw_fp_step(st);
}

/* The row cache of the CPU whose state st is (the same map value). */
static __always_inline struct uw_cent *uw_cache_of(struct uw_state *st)
{
	return ((struct cpu_state *)((void *)st - __builtin_offsetof(struct cpu_state, uw)))
		->uw_cache;
}

/*
 * The row cache entry for (pc, gen, maps): two-way set associative with
 * LRU replacement, a set being the two entries of one cache line, so a
 * probe still reads one line. Kernel-mode samples bring a new leaf pc
 * almost every time; direct-mapped, each such insertion evicted a hot
 * return address, and misses (each a search through cold table pages,
 * ~1-2 us) were 3.6% of user frames on tools/bench_breakdown.py's
 * workload; now 0.9%. Sets *hit if the entry holds the pair; else returns
 * the entry to fill, the set's first, whose old contents moved to the
 * second (the least recently used leaves).
 */
static __always_inline struct uw_cent *uw_cache_find(struct uw_state *st, __u64 pc, __u32 gen,
						     __u32 maps, bool *hit)
{
	__u32 set = (__u32)(((pc ^ maps) * BP_GOLDEN) >> 56) & (UW_CACHE_SETS - 1);
	struct uw_cent *ce = &uw_cache_of(st)[set * 2];
	struct uw_cent t;

	*hit = true;
	if (ce[0].pc == pc && ce[0].gen == gen && ce[0].maps == maps)
		return &ce[0];
	if (ce[1].pc == pc && ce[1].gen == gen && ce[1].maps == maps) {
		/* Least recently used first: a hit moves to the front. */
		t = ce[1];
		ce[1] = ce[0];
		ce[0] = t;
		return &ce[0];
	}
	*hit = false;
	ce[1] = ce[0];
	return &ce[0];
}

static long uw_step(__u64 index, void *data)
{
	struct uw_ctx *c = data;
	struct uw_state *st = c->st;
	struct bp_stack *out = c->out;
	struct uw_cent *ce;
	struct bp_urow row;
	__u64 lookup, cfa, ra, nbp, fr[7];
	__u32 nr = st->nr;
	bool found, hit;
	__u8 kind;

	if (!st->pc)
		return uw_stop(st, STAT_UNWIND_END);
	/* Python frames of the interpreter-loop frame at st->pc, one per iteration. */
	if (st->py.state == PY_EMIT && c->py)
		return py_step(st, c->py, out);
	if (nr >= PROFILE_MAX_DEPTH)
		return uw_stop(st, STAT_UNWIND_TRUNCATED);
	if (st->py.state == PY_RESUME) {
		/* Its Python frames stand for it; now on to its caller. */
		st->py.state = PY_IDLE;
		if (!st->py.emitted) {
			out->ips[nr] = st->pc;
			st->nr = nr + 1;
		}
	} else if (c->py && py_in_eval(c->py, st->pc) && py_begin(st, c->py)) {
		return 0;
	} else {
		out->ips[nr] = st->pc;
		st->nr = nr + 1;
	}
	/* A JVM's code cache: its own steps, no mapping or row lookup. */
	if (st->pc >= st->hs_lo && st->pc < st->hs_hi) {
		long r;
#ifdef BPFPROF_TIMING
		__u64 t_hs = bpf_ktime_get_ns();

		/* Its unused argument set after the clock's call: the verifier
		 * wants a scalar there, and the compiler drops the 0. */
		asm volatile("r1 = 0" ::: "r1");
		r = hs_step(0) ? 1 : 0;
		TM_ADD(TM_HS_STEP, bpf_ktime_get_ns() - t_hs);
		TM_ADD(TM_HS_STEP_N, 1);
#else
		r = hs_step(0) ? 1 : 0; /* a callback returns 0 or 1 */
#endif
		/* A deoptimised frame: recorded at its original pc (hs_deopt());
		 * an interpreted caller by its Method* (BP_HS_INTERP_MARK). */
		if (st->hs_orig) {
			if (st->nr == nr + 1 && nr < PROFILE_MAX_DEPTH)
				out->ips[nr] = st->hs_orig;
			st->hs_orig = 0;
		}
		return r;
	}

	/* A return address is looked up at address - 1: the call may be the
	 * last instruction of its function. */
	lookup = st->pc - ((st->flags & UW_F_EXACT) ? 0 : 1);
	if (!st->nr_maps) /* no tables for this process: frame pointers */
		return uw_fp_step(st);
	TM_NOW(t_probe);
	ce = uw_cache_find(st, lookup, (__u32)st->gen, st->maps, &hit);
	if (hit) {
		/* st->m_* keep the mapping of the last search: still this process's. */
		st->cache_hits++;
		if (ce->row.op == UW_NO_ROW)
			return uw_fp_step(st);
		row = ce->row;
		TM_ADD(TM_UW_HIT, bpf_ktime_get_ns() - t_probe);
		TM_ADD(TM_UW_HIT_N, 1);
	} else {
		st->cache_misses++;
		if (lookup < st->m_start || lookup >= st->m_end) {
			if (!uw_find_mapping(lookup)) {
				st->m_start = st->m_end = 0;
				if (st->flags & UW_F_TRUSTED)
					uw_request_refresh(st->tgid);
				if (st->capped)
					return uw_stop(st, STAT_UNWIND_ERR_MAPS_LIMIT);
				if (unwind_mode == UNWIND_MODE_DWARF)
					return uw_stop(st, STAT_UNWIND_ERR_NO_MAP);
				return uw_fp_step(st);
			}
		}
		found = st->m_pages != UNWIND_NO_TABLE && uw_find_row(lookup - st->m_bias);
		row = st->row;
		ce->pc = lookup;
		ce->gen = (__u32)st->gen;
		ce->maps = st->maps;
		if (!found) {
			ce->row.op = UW_NO_ROW;
			return uw_fp_step(st);
		}
		ce->row = row;
		TM_ADD(TM_UW_MISS, bpf_ktime_get_ns() - t_probe);
		TM_ADD(TM_UW_MISS_N, 1);
	}
	TM_NOW(t_rest);

	kind = UROW_CFA_OF(row.op);
	switch (kind) {
	case UROW_CFA_RSP:
		cfa = st->sp + row.cfa;
		break;
	case UROW_CFA_RSP_X8:
		cfa = st->sp + ((__u64)row.cfa << 3);
		break;
	case UROW_CFA_RBP:
		cfa = st->bp + row.cfa;
		break;
	case UROW_CFA_PLT:
		cfa = st->sp + row.cfa + (((st->pc & 15) >= (__u64)(__u8)row.rbp) ? 8 : 0);
		break;
	case UROW_CFA_DEREF_RBP:
		if (bpf_probe_read_user(&cfa, sizeof(cfa), (void *)(st->bp + (__s16)row.cfa)))
			return uw_stop(st, STAT_UNWIND_ERR_READ);
		break;
	case UROW_CFA_SIGNAL:
		/* ucontext gregs: rbp at -40, rsp at 0, rip at +8 from rsp + cfa. */
		if (bpf_probe_read_user(fr, sizeof(fr), (void *)(st->sp + row.cfa - 40)))
			return uw_stop(st, STAT_UNWIND_ERR_READ);
		st->dwarf_frames++;
		st->bp = fr[0];
		st->sp = fr[5];
		st->pc = fr[6];
		st->flags =
			UW_F_EXACT | UW_F_TRUSTED; /* the interrupted pc, not a return address */
		return 0;
	case UROW_CFA_END:
		return uw_stop(st, STAT_UNWIND_END);
	case UROW_CFA_NONE:
		return uw_fp_step(st);
	default:
		return uw_fp_fallback(st, STAT_UNWIND_ERR_UNSUPPORTED);
	}
	if (cfa <= st->sp)
		return uw_stop(st, STAT_UNWIND_ERR_CFA); /* must move up the stack */

	nbp = st->bp;
	switch (UROW_RBP_OF(row.op)) {
	case UROW_RBP_CFA:
		if (row.rbp == -2) {
			/* push %rbp right after the call: one read for both. */
			if (uw_read(st, cfa - 16, fr, 2))
				return uw_stop(st, STAT_UNWIND_ERR_READ);
			nbp = fr[0];
			ra = fr[1];
			goto done;
		}
		if (uw_read(st, cfa + (__s64)row.rbp * 8, &nbp, 1))
			return uw_stop(st, STAT_UNWIND_ERR_READ);
		break;
	case UROW_RBP_DEREF:
		if (uw_read(st, st->bp + (__s64)row.rbp * 8, &nbp, 1))
			return uw_stop(st, STAT_UNWIND_ERR_READ);
		break;
	default:
		break;
	}
	if (uw_read(st, cfa - 8, &ra, 1))
		return uw_stop(st, STAT_UNWIND_ERR_READ);
done:
	TM_ADD(TM_UW_REST, bpf_ktime_get_ns() - t_rest);
	st->dwarf_frames++;
	st->pc = ra;
	st->sp = cfa;
	st->bp = nbp;
	st->flags = UW_F_TRUSTED;
	return 0;
}

/*
 * The mapping list of the process's unwind entry, if userspace has loaded
 * one for exactly this program image (same start time and exec count). An
 * entry installed ahead of the first sample (-p targets, read just before
 * sampling started) has no ids yet; the first sample's notice makes
 * userspace fill them in. The answer is kept per CPU until unwind_procs
 * changes (pgen: uw_proc_gen, read before this lookup): the hash lookup
 * costs a few hundred ns of cache misses, and a CPU mostly samples the same
 * process again.
 */
static __always_inline bool uw_proc(struct uw_state *st, __u32 tgid, __u64 start_time,
				    __u64 exec_id, __u64 pgen)
{
	struct bp_uproc *p;
	bool found;

	if (st->proc.gen == pgen && st->proc.tgid == tgid && st->proc.start_time == start_time &&
	    st->proc.exec_id == exec_id)
		return st->proc.found;
	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	found = p && ((p->flags & UPROC_F_ANY_IMAGE) ||
		      (p->start_time == start_time && p->exec_id == exec_id));
	st->proc.gen = pgen;
	st->proc.tgid = tgid;
	st->proc.start_time = start_time;
	st->proc.exec_id = exec_id;
	st->proc.found = found;
	st->proc.maps = found ? p->maps : 0;
	st->proc.nr_maps = found ? p->nr_maps : 0;
	st->proc.python = found && (p->flags & UPROC_F_PYTHON);
	st->proc.capped = found && (p->flags & UPROC_F_CAPPED);
	st->proc.hotspot = found && (p->flags & UPROC_F_HOTSPOT);
	return found;
}

#define USER32_CS 0x23 /* __USER32_CS: a 32-bit (compat) task */

enum uw_result {
	UW_OK,	    /* out holds the stack */
	UW_NO_REGS, /* the user registers could not be read */
	UW_COMPAT,  /* a 32-bit task: the walker only knows x86-64 frames */
};

/*
 * Walks the user stack of the current task into out from its user
 * registers (cs, ip, sp, bp), with the mapping list uw_proc() found
 * (tables) or none: a frame-pointer walk - done here rather than by
 * bpf_get_stack(BPF_F_USER_STACK), which costs about a microsecond more per
 * sample on the same frames (tools/bench_breakdown.py); --unwind dwarf then
 * keeps just the leaf. gen: uw_gen, read before uw_proc().
 */
static __always_inline enum uw_result uw_walk_regs(struct task_struct *task, struct uw_state *st,
						   bool tables, __u64 gen, __u64 start_time,
						   __u64 exec_id, struct bp_stack *out, __u64 cs,
						   __u64 ip, __u64 sp, __u64 bp)
{
	struct uw_ctx c = { .out = out };

	if ((cs & 0xffff) == USER32_CS)
		return UW_COMPAT;
	st->pc = ip;
	st->sp = sp;
	st->bp = bp;
	st->m_start = st->m_end = 0;
	st->maps = tables ? st->proc.maps : 0;
	st->nr_maps = tables ? st->proc.nr_maps : 0;
	st->capped = tables && st->proc.capped;
	st->tgid = task->tgid;
	st->flags = UW_F_EXACT | UW_F_TRUSTED;
	st->stop = 0;
	st->nr = 0;
	st->dwarf_frames = st->fp_frames = 0;
	st->cache_hits = st->cache_misses = 0;
	st->gen = gen;
	st->win_base = 0; /* nothing read yet: the last sample's copy is another stack */

	py_walk_init(st);
	c.py = tables && st->proc.python ? py_proc(st->tgid, start_time, exec_id) : NULL;
	st->hs_lo = st->hs_hi = st->hs_orig = 0;
	st->hs_reads = st->hs_frames = 0;
	if (tables && st->proc.hotspot) {
		TM_NOW(t_hsb);
		hs_begin(st->tgid, start_time, exec_id);
		TM_ADD(TM_HS_BEGIN, bpf_ktime_get_ns() - t_hsb);
	}
	c.st = st;
	bpf_loop(PROFILE_MAX_DEPTH + 1, uw_step, &c, 0);
	out->nr = st->nr;
	if (tables) { /* the unwinding statistics are about table walks */
		stat_inc(st->stop ? st->stop : STAT_UNWIND_TRUNCATED);
		stat_add(STAT_UNWIND_DWARF_FRAMES, st->dwarf_frames);
		stat_add(STAT_UNWIND_FP_FRAMES, st->fp_frames);
		stat_add(STAT_UNWIND_CACHE_HITS, st->cache_hits);
		stat_add(STAT_UNWIND_CACHE_MISSES, st->cache_misses);
		if (st->hs_frames)
			stat_add(STAT_UNWIND_JVM_FRAMES, st->hs_frames);
	}
	return UW_OK;
}

/* The user registers saved when task entered the kernel (syscall, fault,
 * interrupt); false if they cannot be read. */
static __always_inline bool uw_task_regs(struct task_struct *task, __u64 *cs, __u64 *ip, __u64 *sp,
					 __u64 *bp)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs)
		return false;
	*cs = regs->cs;
	*ip = regs->ip;
	*sp = regs->sp;
	*bp = regs->bp;
	return true;
}

/* The same from a perf_event sample's registers (in the kernel: the saved ones). */
static __always_inline enum uw_result uw_walk(struct bpf_perf_event_data *ctx,
					      struct task_struct *task, struct uw_state *st,
					      bool tables, __u64 gen, __u64 start_time,
					      __u64 exec_id, struct bp_stack *out)
{
	__u64 cs, ip, sp, bp;
	/*
	 * pt_regs.cs is 16 bits wide, but the context can only be read in
	 * 8-byte words: read the word holding it. The barriers keep the
	 * compiler from merging these context loads with the pt_regs loads
	 * below into one load through a selected pointer, which the verifier
	 * refuses for the context.
	 */
	cs = *(__u64 *)((void *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));
	ip = ctx->regs.ip;
	sp = ctx->regs.sp;
	bp = ctx->regs.bp;
	barrier_var(ip);
	barrier_var(sp);
	barrier_var(bp);
	/* In the kernel (syscall, fault): the user registers saved at entry. */
	if ((cs & 3) != 3 && !uw_task_regs(task, &cs, &ip, &sp, &bp))
		return UW_NO_REGS;
	return uw_walk_regs(task, st, tables, gen, start_time, exec_id, out, cs, ip, sp, bp);
}

#endif /* BPFPROF_UNWIND_BPF_H */
