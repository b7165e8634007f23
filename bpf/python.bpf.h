/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * python.bpf.h - CPython frames in the user-stack walk (unwind.bpf.h calls
 * in here; ABI and frame encoding in python_abi.h).
 *
 * When the native walk reaches a frame whose pc is in the interpreter loop
 * (_PyEval_EvalFrameDefault, or its .cold part), it records, instead of that
 * native frame, the Python frames that call of the loop runs: from the
 * thread's current frame (the first time) or from where the previous call's
 * frames ended, following `previous`, up to the frame that entered the loop
 * from C (3.11: the frame with is_entry set; 3.12+: the shim frame owned by
 * the C stack, which is not itself recorded). Then the native walk goes on
 * from the same native frame. So C frames between two calls of the loop
 * (a C extension calling back into Python) stay where they ran.
 *
 * One Python frame per bpf_loop() iteration of the walker, with two stack
 * slots each: the same loop, verified once, bounds both walks. Per frame:
 * one read of the _PyInterpreterFrame (80 bytes) and one of its code
 * object's qualname's hash (8 bytes), and the first time this CPU meets the
 * code object one of its checksum window (64 bytes). The thread state is found once per
 * stack: this CPU's last answer, checked with one read of its thread id, or
 * the thread's own thread-specific data (py_tstate()), or a walk of the
 * interpreter's thread list (at most BP_PY_MAX_THREADS); not found, counted.
 *
 * Nothing read is trusted beyond the read: offsets come from userspace and
 * are bounded before use, a frame that cannot be read ends the Python frames
 * (recorded as one unknown frame), and names are only given in userspace
 * after the code object's type and checksum check out.
 */
#ifndef BPFPROF_PYTHON_BPF_H
#define BPFPROF_PYTHON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "cpu_state.bpf.h"
#include "python_abi.h"
#include "unwind_state.bpf.h"

#define PY_CODE_CACHE	256 /* code objects per CPU whose qualname hash is remembered */
#define PY_CENT_REFRESH 8   /* uses of an entry after which its hash is read again */

/*
 * Per CPU, per code object: its qualname's string hash, kept with the
 * checksum of the code object's window it was read beside, so a frame of a
 * code object seen before costs one read (the window, read every time)
 * instead of two. The window read fresh checks the entry: a code object
 * freed and another made at its address has another window (3.12+: its
 * co_version is in it; 3.11: its names, counts and tuples) and its hash is
 * read again. What the window cannot tell - a 3.11 code object made at a
 * freed one's address with the same window, its name a new string at the
 * freed name's address - costs at most PY_CENT_REFRESH frames of this CPU a
 * checksum that names nothing (never another name): the hash is read again
 * every PY_CENT_REFRESH uses. An entry used for another process's object at
 * the same address is checked the same way.
 */
struct py_cent {
	__u64 code, window, hash, uses;
};

struct py_cache {
	struct py_cent e[PY_CODE_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_cache);
} py_code_cache SEC(".maps");

/* tgid -> what the walker needs of a Python process; userspace keeps it bounded. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bp_pyproc);
} python_procs SEC(".maps");

/* The process's Python entry, for exactly this image; NULL if it has none. */
static __always_inline struct bp_pyproc *py_proc(__u32 tgid, __u64 start_time, __u64 exec_id)
{
	struct bp_pyproc *py = bpf_map_lookup_elem(&python_procs, &tgid);

	if (!py || py->start_time != start_time || py->exec_id != exec_id)
		return NULL;
	return py;
}

static __always_inline void py_walk_init(struct uw_state *st)
{
	st->py.state = PY_IDLE;
	st->py.frame = 0;
	st->py.looked = 0;
	st->py.count = 0;
}

static __always_inline bool py_in_eval(const struct bp_pyproc *py, __u64 pc)
{
	return (pc >= py->eval[0][0] && pc < py->eval[0][1]) ||
	       (pc >= py->eval[1][0] && pc < py->eval[1][1]);
}

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/*
 * The sampled thread's id in its own pid namespace: what the interpreter
 * recorded (gettid()) in a container, where the host's id differs.
 */
static __always_inline __u32 py_ns_tid(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pid *pid = task->thread_pid;
	unsigned int level = BPF_CORE_READ(pid, level);
	int nr = 0;

	if (level > 31)
		return 0;
	bpf_core_read(&nr, sizeof(nr), &pid->numbers[level].nr);
	return (__u32)nr;
}

struct py_tsearch {
	const struct bp_pyproc *py;
	__u64 ts;	  /* the thread state to look at next; the answer at the end */
	__u32 tid, nstid; /* the sampled thread's ids, host and own namespace */
	bool found;
};

/* One thread state of the interpreter's list per bpf_loop() iteration. */
static long py_tsearch_step(__u64 index, void *data)
{
	struct py_tsearch *s = data;
	__u32 t = 0;

	if (!s->ts ||
	    bpf_probe_read_user(&t, sizeof(t), (void *)(s->ts + s->py->tstate_native_tid)))
		return 1;
	if (t == s->tid || (t == s->nstid && s->nstid)) {
		s->found = true;
		return 1;
	}
	s->ts = py_read_ptr(s->ts + s->py->tstate_next);
	return 0;
}

/*
 * The thread pointer of the sampled thread as the kernel keeps it (x86-64:
 * the FS base, set by clone(CLONE_SETTLS) or arch_prctl(), saved at each
 * switch): where glibc's struct pthread starts. 0 elsewhere.
 */
static __always_inline __u64 py_thread_pointer(void)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *task = bpf_get_current_task_btf();

	return task->thread.fsbase;
#else
	return 0;
#endif
}

/* Whether the thread state at ts is the sampled thread's (one read). */
static __always_inline bool py_ts_is(const struct bp_pyproc *py, __u64 ts, __u32 tid, __u32 nstid)
{
	__u32 t = 0;

	return ts && !bpf_probe_read_user(&t, sizeof(t), (void *)(ts + py->tstate_native_tid)) &&
	       (t == tid || (t == nstid && nstid));
}

/*
 * The sampled thread's PyThreadState, or 0: this CPU's last answer, or the
 * thread's own thread-specific data (what PyGILState_GetThisThreadState()
 * reads: two reads, whatever the number of threads), or a search of the
 * interpreter's thread list (newest first, at most BP_PY_MAX_THREADS: the
 * oldest threads of a Python with more are not reached). Each answer is
 * checked with one read (the state's thread id); a miss is counted. The list
 * walk is a bpf_loop(): as a bounded loop the verifier checked its body once
 * per iteration, a third of the whole program's verification (start-up time).
 */
static __always_inline __u64 py_tstate(struct uw_state *st, const struct bp_pyproc *py)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), nstid = py_ns_tid();
	struct py_tsearch s = { .py = py, .tid = tid, .nstid = nstid };
	__u64 interp, ts = 0, tp, block;

	/* This CPU's last answer, if the thread state still says it is this thread. */
	if (st->py.cache_tid == tid && st->py.cache_tgid == st->tgid &&
	    py_ts_is(py, st->py.cache_ts, tid, nstid)) {
		stat_inc(STAT_PY_TS_CACHED);
		return st->py.cache_ts;
	}
	if ((py->flags & PYPROC_F_TLS) && (tp = py_thread_pointer())) {
		block = py_read_ptr(tp + py->tls_l1);
		ts = block ? py_read_ptr(block + py->tls_l2) : 0;
		if (py_ts_is(py, ts, tid, nstid)) {
			stat_inc(STAT_PY_TS_TLS);
			goto found;
		}
	}
	interp = py_read_ptr(py->runtime + py->runtime_interp_head);
	s.ts = interp ? py_read_ptr(interp + py->interp_threads_head) : 0;
	bpf_loop(BP_PY_MAX_THREADS, py_tsearch_step, &s, 0);
	if (!s.found) {
		stat_inc(STAT_PY_TS_MISS);
		return 0;
	}
	stat_inc(STAT_PY_TS_SEARCH);
	ts = s.ts;
found:
	st->py.cache_tid = tid;
	st->py.cache_tgid = st->tgid;
	st->py.cache_ts = ts;
	return ts;
}

/*
 * At a native frame in the interpreter loop: whether it has Python frames
 * to record (then the walker calls py_step() until py.state is PY_RESUME).
 */
static __always_inline bool py_begin(struct uw_state *st, const struct bp_pyproc *py)
{
	__u64 ts, f;

	if (!st->py.looked) {
		st->py.looked = 1;
		ts = py_tstate(st, py);
		f = ts ? py_read_ptr(ts + py->tstate_frame) : 0;
		if (f && (py->flags & PYPROC_F_CFRAME))
			f = py_read_ptr(f + py->cframe_current);
		st->py.frame = f;
	}
	if (!st->py.frame)
		return false;
	st->py.state = PY_EMIT;
	st->py.emitted = 0;
	return true;
}

/* A field of the frame read into py.buf, at a bounded offset. */
static __always_inline __u64 py_field(struct uw_state *st, __u16 off)
{
	__u64 v;

	if (off > sizeof(st->py.buf) - 8)
		return 0;
	__builtin_memcpy(&v, (__u8 *)st->py.buf + (off & 0xff), 8);
	return v;
}

static __always_inline __u8 py_byte(struct uw_state *st, __u16 off)
{
	if (off > sizeof(st->py.buf) - 1)
		return 0;
	return ((__u8 *)st->py.buf)[off & 0xff];
}

/* Records one Python frame of this call of the loop (one walker iteration). */
static __always_inline long py_step(struct uw_state *st, const struct bp_pyproc *py,
				    struct bp_stack *out)
{
	__u64 frame = st->py.frame, code, prev, instr, idx = BP_PY_NO_INSTR, hash = 0;
	__u32 nr = st->nr, csum = 0;
	__u8 owner;

	if (nr > PROFILE_MAX_DEPTH - 2 || st->py.count >= BP_PY_MAX_FRAMES) {
		st->py.state = PY_RESUME;
		st->py.frame = 0;
		return 0;
	}
	if (bpf_probe_read_user(st->py.buf, sizeof(st->py.buf), (void *)frame)) {
		/* Unreadable: one unknown frame, and no more Python frames in this stack. */
		out->ips[nr] = BP_PY_MARK;
		out->ips[nr + 1] = BP_PY_NO_INSTR;
		st->nr = nr + 2;
		st->py.emitted++;
		st->py.state = PY_RESUME;
		st->py.frame = 0;
		return 0;
	}
	code = py_field(st, py->frame_code);
	prev = py_field(st, py->frame_previous);
	instr = py_field(st, py->frame_instr);
	owner = py_byte(st, py->frame_owner);
	st->py.frame = prev;
	if (!(py->flags & PYPROC_F_ENTRY_FLAG) && owner == py->owner_entry) {
		/* 3.12+: the shim frame that entered the loop from C ends this call's frames. */
		st->py.state = PY_RESUME;
		return 0;
	}
	if (py->flags & PYPROC_F_TAGGED)
		code &= ~3ULL;
	if (code) {
		__u32 zero = 0, slot = (__u32)((code >> 4) * BP_GOLDEN >> 56) & (PY_CODE_CACHE - 1);
		struct py_cache *cache = bpf_map_lookup_elem(&py_code_cache, &zero);
		struct py_cent *ce = cache ? &cache->e[slot] : NULL;
		__u64 window;

		if (bpf_probe_read_user(st->py.win, sizeof(st->py.win),
					(void *)(code + py->code_csum))) {
			code = 0;
		} else {
			window = bp_py_csum_window(st->py.win);
			if (ce && ce->code == code && ce->window == window &&
			    ++ce->uses % PY_CENT_REFRESH) {
				hash = ce->hash;
			} else if (bpf_probe_read_user(&hash, sizeof(hash),
						       (void *)(st->py.win[BP_PY_CSUM_WORDS - 1] +
								BP_PY_STR_HASH))) {
				code = 0;
			} else if (ce) {
				ce->code = code;
				ce->window = window;
				ce->hash = hash;
				ce->uses = 0;
			}
			if (code)
				csum = bp_py_csum_finish(window, hash);
		}
	}
	if (code && instr >= code + py->code_adaptive &&
	    instr - code - py->code_adaptive < (1ULL << 31))
		idx = (instr - code - py->code_adaptive) / 2;
	out->ips[nr] = BP_PY_MARK | (code & BP_PY_ADDR_MASK);
	out->ips[nr + 1] = (__u64)csum << 32 | idx;
	st->nr = nr + 2;
	st->py.emitted++;
	st->py.count++;
	if (((py->flags & PYPROC_F_ENTRY_FLAG) && owner == py->owner_entry) || !prev)
		st->py.state = PY_RESUME; /* 3.11: the frame that entered from C was the last */
	return 0;
}

#endif /* BPFPROF_PYTHON_BPF_H */
