/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cpython.h - what bpfprof knows of CPython's memory layouts, and how it
 * finds them in a running interpreter: enough to walk a thread's Python
 * frames (bpf/python.bpf.h) and to name them from their code objects.
 *
 * Versions are data, not code:
 *   3.11  a table, checked against Debian's python3.11 headers and verified
 *         end to end on Debian's interpreter;
 *   3.12  a table from CPython 3.12's published structures (the thread state
 *         and interpreter state as released, the frame as OTel's profiler and
 *         pystack use it), not verified on a real 3.12 here;
 *   3.13+ read from the interpreter itself: _PyRuntime starts with
 *         _Py_DebugOffsets ("xdebugpy", the version, then every offset a
 *         debugger needs), whose own layout is known for 3.13 and 3.14.
 * Code object fields come from the interpreter's PyCode_Type member table
 * (tp_members: co_filename, co_qualname, ...) where it lists them, so they
 * are the running interpreter's, not ours.
 *
 * Everything read from the process is checked before it is used: the layout
 * must lead from _PyRuntime to a thread state that points back at its
 * interpreter, and a code object must have PyCode_Type as its type. A
 * version without a layout, or a layout that fails the checks, gives the
 * process no Python frames (native frames as before) and one warning.
 */
#ifndef BPFPROF_LANG_CPYTHON_H
#define BPFPROF_LANG_CPYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python_abi.h"

struct ptab;
struct pproc;

#define CPY_VERSION(major, minor) ((uint32_t)(major) << 24 | (uint32_t)(minor) << 16)

/* One CPython version's layout (x86-64, the default build with the GIL). */
struct cpython_layout {
	uint32_t version; /* CPY_VERSION(3, 11) */
	/* _PyRuntime -> interpreters -> their thread states. */
	uint16_t runtime_interp_head, interp_next, interp_threads_head;
	uint16_t tstate_next, tstate_interp, tstate_native_tid;
	uint16_t tstate_frame;	 /* cframe (3.11, 3.12) or current_frame */
	uint16_t cframe_current; /* _PyCFrame.current_frame */
	bool has_cframe;
	/* _PyInterpreterFrame. */
	uint16_t frame_code, frame_previous, frame_instr, frame_owner;
	uint8_t owner_entry; /* is_entry == 1 (3.11), owner == FRAME_OWNED_BY_CSTACK (3.12+) */
	bool entry_flag;     /* 3.11: the frame with is_entry set is the last of a call */
	bool tagged_code;    /* 3.14: f_executable is a tagged _PyStackRef */
	/* Code objects (replaced by PyCode_Type's member table where it has them). */
	uint16_t code_filename, code_name, code_qualname, code_linetable, code_firstlineno;
	uint16_t code_adaptive; /* the bytecode (co_code_adaptive) */
	/* str and bytes objects. */
	uint16_t unicode_length, unicode_state, unicode_ascii_data, unicode_compact_data;
	uint16_t bytes_size, bytes_data;
	/* _PyRuntime's autoTSSkey (a Py_tss_t): each thread's own state; 0 unknown. */
	uint16_t runtime_tss_key;
};

/* The built-in table of a version (3.11, 3.12), or NULL. */
const struct cpython_layout *cpython__table(uint32_t version);

/*
 * The layout described by a _Py_DebugOffsets block (the first len bytes of
 * _PyRuntime): 0, -ENOENT no cookie, -ENOTSUP a version whose block layout
 * is unknown (*version still set), -EINVAL offsets out of range.
 */
int cpython__debug_offsets(const void *buf, size_t len, struct cpython_layout *out,
			   uint32_t *version);

/*
 * The line of instruction index instr (in code units) from a 3.11+ location
 * table (co_linetable) starting at firstlineno. 0, or -ENOENT (an
 * instruction without a line), -ERANGE (past the bytes given: the end of
 * the table, or of its start that a caller holds), -EINVAL (corrupt).
 */
int cpython__line(const uint8_t *table, size_t len, uint32_t firstlineno, uint32_t instr,
		  uint32_t *line);

/*
 * A str object's text as UTF-8 from its bytes as read (hdr: the object from
 * its start, at least unicode_compact_data bytes, then the data): compact
 * ASCII and compact UCS-1/2/4 strings. Returns the length written to out
 * (NUL-terminated, at most size - 1 bytes) or -EINVAL (not compact, bad
 * kind or length).
 */
int cpython__str(const struct cpython_layout *l, const uint8_t *obj, size_t len, char *out,
		 size_t size);

/* A Python process as the walker and the namer need it. */
struct cpython_proc {
	struct cpython_layout l;
	uint32_t version;   /* as the interpreter says (Py_Version), major/minor/micro */
	uint64_t runtime;   /* &_PyRuntime in the process */
	uint64_t code_type; /* &PyCode_Type */
	uint64_t eval[BP_PY_EVAL_RANGES][2];
	uint16_t csum_off; /* the code object checksum window (python_abi.h) */
	char module[256];  /* the interpreter's file, for messages */
	uint64_t dev, ino; /* ... and which file it is (one warning per file, not per process) */
	/* cpython__tls(): where a thread finds its own state (bp_pyproc.tls_l1, tls_l2). */
	bool tls;
	uint16_t tls_l1, tls_l2;
	/* Files whose symbols the probe read; the others' verdicts were remembered. */
	unsigned files_read;
};

/*
 * Finds the interpreter in process p (a mapped python3.X or libpython3.X
 * ELF file defining _PyRuntime and _PyEval_EvalFrameDefault), its version
 * and layout, and checks the layout on the running process. 0; -ENOENT not
 * a Python process (no message); -EAGAIN not yet (the interpreter not
 * initialized, or a python3.X whose libpython is not mapped yet: probe
 * again); -ENOTSUP a Python whose layout bpfprof does not know or that
 * failed the checks (why says which, for the one warning); -ESRCH the
 * process exec'd or exited since p's mappings were read (its memory is not
 * theirs). On -EAGAIN out->runtime is nonzero when the interpreter's file was
 * found (only its initialization is awaited: the mappings need not be read
 * again before the next probe), 0 when a libpython is still to be mapped.
 *
 * A file's symbols are read once: what it holds (the interpreter's symbols,
 * or none and whether it needs a libpython3) is remembered with the file
 * (mfile__memo), for every process and every try. One probe reads at most
 * 4 files, each at most 4M symbols in half a second of CPU; a file over
 * that is taken for no interpreter, for good.
 */
int cpython__probe(struct ptab *t, struct pproc *p, struct cpython_proc *out, char *why,
		   size_t why_len);

/*
 * Probes again a process for which cpython__probe() said -EAGAIN with the
 * interpreter's file found (cp->runtime nonzero), cp as it left it: only
 * its memory is read again (the interpreter initialized since?), not its
 * mappings nor the file's symbol table: a program that links libpython
 * but never starts an interpreter (perf, gdb, vim) is probed ~50 times,
 * and on `perf stat` a full probe costs ~95 us of CPU, this ~16 us (most of
 * it the /proc/PID/stat read that tells an exec). The same results as
 * cpython__probe().
 */
int cpython__recheck(struct ptab *t, struct pproc *p, struct cpython_proc *cp, char *why,
		     size_t why_len);

/*
 * Where each thread of the probed Python process p keeps its own thread
 * state, for the walker: the interpreter's thread-specific data key
 * (_PyRuntime's autoTSSkey, the 3.11 and 3.12 tables) and how the
 * process's glibc lays out that key's slot, from the descriptors glibc
 * exports for libthread_db (_thread_db_pthread_specific, ...: the offsets
 * of struct pthread's fields), read from the libc (or libpthread) it maps.
 * The descriptors are read from the file (a process may write over its
 * copy) and remembered in cache (the caller's; NULL: none) by the file's
 * device and inode, so the libc every process maps is read once. Sets
 * cp->tls, tls_l1, tls_l2 and returns 0; -ENOENT (no key known or set up,
 * no glibc descriptors: another libc, a static binary), -EINVAL (values out
 * of range). What the walker finds there is the process's memory: it checks
 * each answer against the thread's id before it uses it.
 */
struct cpython_tls_cache {
	struct {
		bool used;
		int err; /* of the read: 0, the file has no descriptors, ... */
		uint64_t inode;
		uint32_t dev_major, dev_minor;
		uint32_t d[3][3]; /* bits, elements, offset of each field */
	} e[8];
	unsigned next;
};
int cpython__tls(struct ptab *t, struct pproc *p, struct cpython_proc *cp,
		 struct cpython_tls_cache *cache);

/* Whether an ELF file (a process's, untrusted) lists a libpython3 among its
 * DT_NEEDED libraries; at most 4096 dynamic entries are looked at. */
struct Elf;
bool cpython__needs_libpython(struct Elf *elf);

/* The walker's view of a probed process (python_abi.h). */
void cpython__bpf(const struct cpython_proc *cp, struct bp_pyproc *out);

/* The checksum window of a code object (from its offsets). */
uint16_t cpython__csum_off(const struct cpython_layout *l);

#endif
