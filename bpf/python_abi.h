/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * python_abi.h - the ABI of the CPython frame walker, shared by
 * bpf/python.bpf.h (the walk, at sampling time) and src/ (what userspace
 * finds out about each Python process, and how it names the frames).
 *
 * When the user-stack walk meets CPython's interpreter loop
 * (_PyEval_EvalFrameDefault), the walker reads the thread's Python frames
 * (_PyInterpreterFrame, linked by `previous`) from the thread state and
 * records, in place of that native frame, the frames this call of the loop
 * runs - innermost first, up to the frame that entered it from C - as two
 * stack slots each:
 *
 *   slot 0: BP_PY_MARK | code object address     (bits 0-55: the address)
 *   slot 1: checksum << 32 | instruction index  (BP_PY_NO_INSTR: unknown)
 *
 * The checksum folds the 64 bytes of the code object that end with
 * co_qualname (fields set when the object is made and never changed:
 * counts, names, co_version where there is one) and the hash of the
 * qualname string, which its text decides: userspace reads the code object
 * later, at the drain, and names the frame only if the object at that
 * address, alive, still gives the same checksum - a code object freed and
 * replaced in between, even by one of the same shape whose strings landed
 * at the same addresses, is never named after its successor. A frame that
 * could not be read is slot 0 = BP_PY_MARK (address 0): "[unknown]".
 *
 * User addresses are below 2^56 even with 5-level page tables, so a slot
 * with the top byte BP_PY_MARK is never a return address.
 */
#ifndef BPFPROF_PYTHON_ABI_H
#define BPFPROF_PYTHON_ABI_H

#ifndef __VMLINUX_H__ /* BPF programs get the __u* types from vmlinux.h */
#include <linux/types.h>
#endif

#define BP_PY_MARK	  0xfe00000000000000ULL
#define BP_PY_ADDR_MASK	  0x00ffffffffffffffULL
#define BP_PY_NO_INSTR	  0xffffffffU
#define BP_PY_CSUM_WORDS  8  /* the checksum window: 64 bytes */
#define BP_PY_MAX_FRAMES  64 /* Python frames walked per stack */
#define BP_PY_MAX_THREADS 64 /* thread states searched for the sampled thread's */
#define BP_PY_EVAL_RANGES 2  /* _PyEval_EvalFrameDefault and its .cold part */

static inline int bp_py_is_frame(__u64 slot)
{
	return (slot & ~BP_PY_ADDR_MASK) == BP_PY_MARK;
}

/* The window's last word is co_qualname; its str's hash is at this offset (3.11-3.14). */
#define BP_PY_STR_HASH 24

/*
 * The checksum of the window's 8 words and the qualname's hash; the same on
 * both sides. In two steps: the walker keeps the first per code object (a
 * per-CPU cache) and reads only the hash again.
 */
static inline __u64 bp_py_csum_window(const __u64 *w)
{
	__u64 h = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < BP_PY_CSUM_WORDS; i++) {
		h ^= w[i];
		h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 29;
	}
	return h;
}

static inline __u32 bp_py_csum_finish(__u64 h, __u64 name_hash)
{
	h ^= name_hash;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return (__u32)(h ^ (h >> 32));
}

static inline __u32 bp_py_csum(const __u64 *w, __u64 name_hash)
{
	return bp_py_csum_finish(bp_py_csum_window(w), name_hash);
}

/* bp_pyproc.flags */
#define PYPROC_F_ENTRY_FLAG                                                                        \
	1		  /* 3.11: frame_owner is is_entry; the frame with it set ends a call      \
			   */
#define PYPROC_F_CFRAME 2 /* 3.11, 3.12: tstate->cframe->current_frame */
#define PYPROC_F_TAGGED 4 /* 3.14: f_executable is a tagged stack reference */
#define PYPROC_F_TLS	8 /* tls_l1, tls_l2: where a thread keeps its own state */

/*
 * What the walker needs of one Python process (python_procs: tgid ->
 * this). Offsets are bytes into the structure named; the image fields are
 * the sampled image's, as in struct bp_uproc.
 */
struct bp_pyproc {
	__u64 start_time;
	__u64 exec_id;
	__u64 runtime;			  /* &_PyRuntime */
	__u64 eval[BP_PY_EVAL_RANGES][2]; /* [start, end) of the interpreter loop */
	__u16 runtime_interp_head;	  /* _PyRuntimeState.interpreters.head */
	__u16 interp_threads_head;	  /* PyInterpreterState.threads.head */
	__u16 interp_next;
	__u16 tstate_next;
	__u16 tstate_native_tid;
	__u16 tstate_frame;   /* cframe (PYPROC_F_CFRAME) or current_frame */
	__u16 cframe_current; /* _PyCFrame.current_frame */
	__u16 frame_code;     /* f_code / f_executable */
	__u16 frame_previous;
	__u16 frame_instr;   /* prev_instr / instr_ptr */
	__u16 frame_owner;   /* is_entry (3.11) / owner */
	__u16 code_adaptive; /* the bytecode: offsetof co_code_adaptive */
	__u16 code_csum;     /* start of the checksum window */
	__u8 owner_entry;    /* 3.11: 1 (is_entry); 3.12+: FRAME_OWNED_BY_CSTACK */
	__u8 flags;	     /* PYPROC_F_* */
	/*
	 * PYPROC_F_TLS: where the thread's PyThreadState is in its own
	 * thread-specific data (the interpreter's autoTSSkey, glibc's layout
	 * for that key): the pointer at thread pointer + tls_l1 leads to the
	 * key's block, the state is the pointer at block + tls_l2.
	 */
	__u16 tls_l1;
	__u16 tls_l2;
};
_Static_assert(sizeof(struct bp_pyproc) == 88, "bp_pyproc");

#endif /* BPFPROF_PYTHON_ABI_H */
