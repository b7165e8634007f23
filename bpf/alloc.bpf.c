// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * alloc.bpf.c - bpfprof --alloc: the C library's allocator sampled by bytes
 * (alloc_abi.h says how). One entry program per call; the return is seen
 * only for sampled calls where the kernel has session uprobes
 * (alloc_session: its entry returns 1 for "no return probe"), else a
 * return program runs for every allocation call (alloc_entry and
 * alloc_return, uprobe_multi or perf-event links). The function is the
 * probe's cookie. Go's runtime functions (ALLOC_FN_GO_*) have entry probes
 * only: the runtime sampled already, each call is recorded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "alloc_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

extern bool bpf_session_is_return(void) __ksym __weak;

/* -a and --cgroup: every process mapping the probed files (--cgroup: those
 * in one of the cgroups or below) but bpfprof itself (self_tgid); else the
 * targets map. */
const volatile bool all_procs = false;
const volatile __u32 nr_cgroups = 0;
const volatile __u32 self_tgid = 0;

/*
 * -a's guard (src/collector/allocguard.h): enabled is cleared before the
 * probes are taken off and set once they are back, so that the counters'
 * windows have exact edges; track_live cleared once the guard engages (the
 * frees of the windows off are unseen: the live table would only grow, and
 * in-use is reported as not measured).
 */
volatile bool enabled = true;
volatile bool track_live = true;

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, ALLOC_CGROUPS);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

/* Exponential gaps of mean period, in bytes (filled before the load). */
__u64 gaps[ALLOC_GAPS];

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct alloc_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ALLOC_LIVE_MAX);
	__type(key, struct alloc_live_key);
	__type(value, struct alloc_live);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ALLOC_RING_BYTES);
} events SEC(".maps");

/* SBCL runtimes probed: each one's layout (alloc_abi.h), by the probe cookie's slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ALLOC_SBCL_SLOTS);
	__type(key, __u32);
	__type(value, struct alloc_sbcl);
} sbcl SEC(".maps");

/* Go: setprofilebucket's calls by (process, bucket) (alloc_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ALLOC_GO_BUCKETS);
	__type(key, struct alloc_go_bkey);
	__type(value, struct alloc_go_bval);
} gobuckets SEC(".maps");

/* Go: each process's entries in gobuckets (ALLOC_GO_BUCKETS_PROC at most). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ALLOC_GO_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} gobucket_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ALLOC_C_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void counter_add(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counters, &which);

	if (n)
		(*n)++;
}

static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < ALLOC_CGROUPS; i++) {
		if (i >= nr_cgroups)
			break;
		if (bpf_current_task_under_cgroup(&cgroups, i) == 1)
			return true;
	}
	return false;
}

static __always_inline bool is_target(__u32 tgid)
{
	if (!enabled)
		return false;
	if (all_procs) {
		if (tgid != self_tgid && (!nr_cgroups || in_cgroups()))
			return true;
		counter_add(ALLOC_C_OTHERS);
		return false;
	}
	return bpf_map_lookup_elem(&targets, &tgid);
}

static __always_inline __s64 draw(void)
{
	__u32 i = bpf_get_prandom_u32() & (ALLOC_GAPS - 1);
	__s64 g = (__s64)gaps[i];

	return g > 0 ? g : 1;
}

/* A free of addr: a sampled block is no longer in use. */
static __always_inline void forget(__u32 tgid, __u64 addr)
{
	struct alloc_live_key k = { .tgid = tgid, .source = ALLOC_SRC_LIBC, .addr = addr };

	counter_add(ALLOC_C_FREES);
	if (!bpf_map_delete_elem(&live, &k))
		counter_add(ALLOC_C_FREED);
}

/*
 * A sampled allocation of size bytes at addr: an event with its user stack
 * by value (read straight into the ring's record: no scratch buffer, which a
 * uprobe could not keep per CPU, preemptible), a live entry with its hash.
 * The ring full: the block is still followed, its stack lost (ALLOC_STACK_LOST).
 * followed false: no live entry (no probe will see its free).
 */
static __always_inline void record(struct pt_regs *ctx, __u32 tgid, __u64 addr, __u64 size,
				   __u32 source, bool followed)
{
	struct alloc_live_key k = { .tgid = tgid, .source = source, .addr = addr };
	struct alloc_live v = { .size = size };
	struct alloc_event *ev;
	long n;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (ev) {
		/* the rest of ips[] zeroed by the helper, on an error the whole;
		 * SBCL's, taken at an entry: the probed function's own pc left
		 * out (the leaf is where it was called, as a return's stack) */
		n = bpf_get_stack(ctx, ev->ips, sizeof(ev->ips),
				  BPF_F_USER_STACK | (source == ALLOC_SRC_SBCL ? 1 : 0));
		ev->nr = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
		ev->stack = ev->nr ? bp_stack_hash(ev->ips, ev->nr, BP_SEED_USTACK) : 0;
		if (ev->stack == ALLOC_STACK_LOST)
			ev->stack = 2;
		if (!ev->nr)
			counter_add(ALLOC_C_NO_STACK);
		v.stack = ev->stack;
		ev->tgid = tgid;
		ev->size = size;
		ev->addr = addr;
		ev->source = source;
		ev->pad = 0;
		bpf_get_current_comm(ev->comm, sizeof(ev->comm));
		bpf_ringbuf_submit(ev, 0);
		counter_add(ALLOC_C_RECORDED);
	} else {
		v.stack = ALLOC_STACK_LOST;
		counter_add(ALLOC_C_RING_FULL);
	}
	if (!track_live || !followed)
		return;
	if (bpf_map_update_elem(&live, &k, &v, BPF_ANY))
		counter_add(ALLOC_C_LIVE_FULL);
}

/* Go's integer argument i (ABIInternal), at a probe past the prologue. Each
 * register is loaded at its fixed offset (the verifier refuses a context
 * read at a computed one), then one is chosen. */
static __always_inline __u64 go_arg(struct pt_regs *ctx, __u32 i)
{
	__u64 a0, a1, a2, a3;

#if defined(__TARGET_ARCH_x86)
	a0 = ctx->ax;
	a1 = ctx->bx;
	a2 = ctx->cx;
	a3 = ctx->di;
#elif defined(__TARGET_ARCH_arm64)
	a0 = PT_REGS_PARM1(ctx);
	a1 = PT_REGS_PARM2(ctx);
	a2 = PT_REGS_PARM3(ctx);
	a3 = PT_REGS_PARM4(ctx);
#else
	a0 = a1 = a2 = a3 = 0;
#endif
	barrier_var(a0);
	barrier_var(a1);
	barrier_var(a2);
	barrier_var(a3);
	return i == 0 ? a0 : i == 1 ? a1 : i == 2 ? a2 : i == 3 ? a3 : 0;
}

#define GO_TINY	  16   /* the runtime's tiny blocks: several objects, one special each */
#define GO_X86_CF 0x01 /* EFLAGS' carry and zero flags: jbe's condition */
#define GO_X86_ZF 0x40

/*
 * Go's runtime functions (ALLOC_FN_GO_*): cookie says which and where their
 * arguments are. freeSpecial(s, p, size) runs for each special record of a
 * dead object: the record's kind byte (at the cookie's offset in s, the
 * release's layout) says whether it is a profiled one, whose live entry goes.
 */
static __always_inline void go_probe(struct pt_regs *ctx, __u32 tgid, __u32 cookie)
{
	__u64 p = go_arg(ctx, ALLOC_COOKIE_P_ARG(cookie));
	__u64 size = go_arg(ctx, ALLOC_COOKIE_SIZE_ARG(cookie));
	struct alloc_live_key k = { .tgid = tgid, .source = ALLOC_SRC_GO };
	__u64 s;
	__u8 kind;

#if defined(__TARGET_ARCH_x86)
	/* at the stack check's jbe: taken, morestack runs and the call starts again */
	if ((cookie & ALLOC_COOKIE_GO_AT_CHECK) && (ctx->flags & (GO_X86_CF | GO_X86_ZF)))
		return;
#endif
	switch (ALLOC_COOKIE_FN(cookie)) {
	case ALLOC_FN_GO_MALLOC:
		counter_add(ALLOC_C_GO_SAMPLES);
		if (p)
			record(ctx, tgid, p, size, ALLOC_SRC_GO,
			       !(cookie & ALLOC_COOKIE_GO_UNFOLLOWED));
		return;
	case ALLOC_FN_GO_FREE_SPECIAL:
		s = go_arg(ctx, 0);
		if (!s || !p ||
		    bpf_probe_read_user(&kind, 1, (void *)(s + ALLOC_COOKIE_KIND_OFF(cookie))) ||
		    kind != ALLOC_COOKIE_KIND(cookie))
			return;
		counter_add(ALLOC_C_GO_FREES);
		k.addr = p;
		if (!bpf_map_delete_elem(&live, &k)) {
			counter_add(ALLOC_C_GO_FREED);
			return;
		}
		/* A tiny block's objects were sampled at their own addresses;
		 * the sweeper names the block. */
		if (size != GO_TINY)
			return;
		for (int i = 1; i < GO_TINY; i++) {
			k.addr++;
			if (!bpf_map_delete_elem(&live, &k)) {
				counter_add(ALLOC_C_GO_FREED);
				return;
			}
		}
		return;
	}
}

/*
 * Go's runtime.setprofilebucket(p, b) (alloc_abi.h): a sampled allocation
 * counted by (process, bucket); no stack, no memory read. The cookie's
 * size argument is b's.
 */
static __always_inline void go_bucket(struct pt_regs *ctx, __u32 tgid, __u32 cookie)
{
	struct alloc_go_bkey k = { .tgid = tgid, .pad = ALLOC_COOKIE_GO_LAYOUT(cookie) };
	struct alloc_go_bval nv = { .count = 1 }, *v;
	__u32 zero = 0, *np;

#if defined(__TARGET_ARCH_x86)
	if ((cookie & ALLOC_COOKIE_GO_AT_CHECK) && (ctx->flags & (GO_X86_CF | GO_X86_ZF)))
		return;
#endif
	k.b = go_arg(ctx, ALLOC_COOKIE_SIZE_ARG(cookie));
	if (!k.b)
		return;
	counter_add(ALLOC_C_GO_SAMPLES);
	v = bpf_map_lookup_elem(&gobuckets, &k);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		return;
	}
	/* a new bucket: within the process's share (a forged flood fills its own) */
	np = bpf_map_lookup_elem(&gobucket_procs, &tgid);
	if (!np) {
		bpf_map_update_elem(&gobucket_procs, &tgid, &zero, BPF_NOEXIST);
		np = bpf_map_lookup_elem(&gobucket_procs, &tgid);
	}
	if (!np || *np >= ALLOC_GO_BUCKETS_PROC) {
		counter_add(ALLOC_C_GO_BUCKETS_FULL);
		return;
	}
	bpf_get_current_comm(nv.comm, sizeof(nv.comm));
	if (!bpf_map_update_elem(&gobuckets, &k, &nv, BPF_NOEXIST)) {
		__sync_fetch_and_add(np, 1);
		return;
	}
	v = bpf_map_lookup_elem(&gobuckets, &k); /* made meanwhile by another thread */
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		return;
	}
	counter_add(ALLOC_C_GO_BUCKETS_FULL);
	if (!*np) /* the table full: no entry of the process's left behind */
		bpf_map_delete_elem(&gobucket_procs, &tgid);
}

/*
 * SBCL (alloc_abi.h): the bytes of a region of the calling thread being
 * closed (gc_close_region), or of a large object (alloc), sampled by bytes
 * as the C library's. The stack is the entry's (record() leaves the entry
 * pc out): the probed function's caller shows by the return address its
 * frame holds, its own caller (alloc's, ALLOC-TRAMP; gc_close_region's,
 * alloc, make_list...).
 */
/* Which of the thread's regions (at thread) arg is, or -1. */
static __always_inline int sbcl_region(const struct alloc_sbcl *l, __u64 thread, __u64 arg)
{
	for (int i = 0; i < ALLOC_SBCL_REGIONS; i++)
		if (arg == thread + l->region[i])
			return i;
	return -1;
}

static __always_inline void sbcl_probe(struct pt_regs *ctx, __u32 tgid, __u32 cookie)
{
	__u32 slot = ALLOC_COOKIE_SLOT(cookie);
	__u64 arg = PT_REGS_PARM1(ctx), w = 0, thread = 0, tp = 0, at, r[3];
	const struct alloc_sbcl *l = bpf_map_lookup_elem(&sbcl, &slot);
	struct alloc_thread *ts = NULL;
	int i = -1;

	if (!l)
		return;
	if (ALLOC_COOKIE_FN(cookie) == ALLOC_FN_SBCL_ALLOC) {
		if (l->large && arg >= l->large && arg < ALLOC_SBCL_MAX_REGION)
			w = arg; /* a large object */
	} else {
#if defined(__TARGET_ARCH_x86)
		tp = bpf_get_current_task_btf()->thread.fsbase;
#endif
		if (!tp)
			return;
		/* current_thread: read once a thread, kept with where it was read
		 * (another place: read again); a close of none of its regions
		 * with the kept one reads it again too (the GC's own regions,
		 * rarer; a thread structure that changed at the same place) */
		at = tp + (__u64)l->tpoff;
		ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
					  BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (ts && ts->sbcl_at == at) {
			thread = ts->sbcl_thread;
			i = sbcl_region(l, thread, arg);
		}
		if (i < 0) {
			if (bpf_probe_read_user(&thread, sizeof(thread), (void *)at) || !thread)
				return;
			if (ts) {
				ts->sbcl_at = at;
				ts->sbcl_thread = thread;
			}
			i = sbcl_region(l, thread, arg);
		}
		/* r: free_pointer, end_addr, start_addr */
		if (i >= 0 && !bpf_probe_read_user(r, sizeof(r), (void *)arg) && r[2] &&
		    r[0] >= r[2] && r[0] - r[2] < ALLOC_SBCL_MAX_REGION)
			w = r[0] - r[2];
	}
	if (!w)
		return;
	counter_add(ALLOC_C_CALLS);
	if (!ts)
		ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
					  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		counter_add(ALLOC_C_NO_THREAD);
		return;
	}
	if (ts->left <= 0)
		ts->left = draw();
	if ((__u64)ts->left > w) {
		ts->left -= (__s64)w;
		return;
	}
	ts->left = draw();
	counter_add(ALLOC_C_SAMPLED);
	record(ctx, tgid, 0, w, ALLOC_SRC_SBCL, false); /* the GC moves SBCL's objects */
}

/* The entry of the probe of cookie: true if the call is sampled (its return is wanted). */
static __always_inline bool enter(struct pt_regs *ctx, __u32 cookie)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, fn = ALLOC_COOKIE_FN(cookie);
	__u64 size = 0, memptr = 0, old;
	struct alloc_thread *ts;

	if (!is_target(tgid))
		return false;
	if (fn == ALLOC_FN_GO_BUCKET) {
		go_bucket(ctx, tgid, cookie);
		return false;
	}
	if (fn == ALLOC_FN_GO_FLUSH) {
		counter_add(ALLOC_C_GO_FLUSHES);
		return false;
	}
	if (fn >= ALLOC_FN_SBCL_ALLOC) {
		sbcl_probe(ctx, tgid, cookie);
		return false;
	}
	if (fn >= ALLOC_FN_GO_MALLOC) {
		go_probe(ctx, tgid, cookie);
		return false;
	}
	switch (fn) {
	case ALLOC_FN_FREE:
		old = PT_REGS_PARM1(ctx);
		if (old)
			forget(tgid, old);
		return false;
	case ALLOC_FN_MALLOC:
		size = PT_REGS_PARM1(ctx);
		break;
	case ALLOC_FN_CALLOC:
		size = PT_REGS_PARM1(ctx) * PT_REGS_PARM2(ctx);
		break;
	case ALLOC_FN_REALLOC:
		old = PT_REGS_PARM1(ctx);
		size = PT_REGS_PARM2(ctx);
		if (old)
			forget(tgid, old);
		if (old && !size)
			return false; /* realloc(p, 0) frees p */
		break;
	case ALLOC_FN_POSIX_MEMALIGN:
		memptr = PT_REGS_PARM1(ctx);
		size = PT_REGS_PARM3(ctx);
		break;
	case ALLOC_FN_ALIGNED_ALLOC:
	case ALLOC_FN_MEMALIGN:
		size = PT_REGS_PARM2(ctx);
		break;
	default:
		return false;
	}
	counter_add(ALLOC_C_CALLS);
	ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		counter_add(ALLOC_C_NO_THREAD);
		return false;
	}
	if (ts->left <= 0)
		ts->left = draw(); /* the thread's first call */
	if ((__u64)ts->left > size) {
		ts->left -= (__s64)size;
		return false;
	}
	/* The count crossed a sampling point: this allocation stands for
	 * 1 / (1 - exp(-size / period)) of its kind. The next gap starts at
	 * its end (the process is memoryless). */
	ts->left = draw();
	if (ts->pending)
		counter_add(ALLOC_C_NO_RETURN);
	ts->pending = 1;
	ts->fn = fn;
	ts->size = size;
	ts->memptr = memptr;
	ts->sp = PT_REGS_SP(ctx);
	counter_add(ALLOC_C_SAMPLED);
	return true;
}

/* The return of fn: a sampled call's block recorded. */
static __always_inline void leave(struct pt_regs *ctx, __u32 fn)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct alloc_thread *ts;
	__u64 sp = PT_REGS_SP(ctx), addr = PT_REGS_RC(ctx);

	ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL, 0);
	if (!ts || !ts->pending)
		return;
	if (ts->fn != fn || ts->sp + 8 != sp) {
		if (sp > ts->sp + 8) { /* an outer return: the sampled one's was missed */
			ts->pending = 0;
			counter_add(ALLOC_C_NO_RETURN);
		}
		return; /* a call nested in the sampled one */
	}
	ts->pending = 0;
	if (fn == ALLOC_FN_POSIX_MEMALIGN) {
		if (addr || bpf_probe_read_user(&addr, sizeof(addr), (void *)ts->memptr))
			addr = 0; /* an error number, or an unreadable result */
	}
	if (!addr) {
		counter_add(ALLOC_C_FAILED);
		return;
	}
	record(ctx, tgid, addr, ts->size, ALLOC_SRC_LIBC, true);
}

/* Session uprobes (kernel 6.13+): the return runs only where the entry returned 0. */
SEC("uprobe")
int alloc_session(struct pt_regs *ctx)
{
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);

	if (bpf_session_is_return()) {
		leave(ctx, ALLOC_COOKIE_FN(cookie));
		return 0;
	}
	return enter(ctx, cookie) ? 0 : 1;
}

SEC("uprobe")
int alloc_entry(struct pt_regs *ctx)
{
	enter(ctx, (__u32)bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	leave(ctx, ALLOC_COOKIE_FN(bpf_get_attach_cookie(ctx)));
	return 0;
}

/* -- COMMAND: the command stops at its exec, before its first instruction, ... */
#include "execstop.bpf.h"

SEC("tp_btf/sched_process_exec")
int alloc_exec(void *ctx)
{
	execstop__at_exec(&targets, ALLOC_TARGET_STOP, ALLOC_TARGET_ON);
	return 0;
}

/* ... and again at its entry point, its libraries mapped: the probes go in then. */
SEC("uprobe")
int alloc_stop(struct pt_regs *ctx)
{
	execstop__at_entry(&targets);
	return 0;
}
