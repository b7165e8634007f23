/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pyname.h - names of Python frames, from code objects read out of the
 * process: co_qualname, co_filename, and the line of the instruction from
 * co_linetable (the 3.11 location table) and co_firstlineno.
 *
 * One namer per process image. Code objects are cached by address, each
 * with the checksum of its unchanging fields (python_abi.h): a frame is
 * named only if the object at its address has the checksum the BPF program
 * saw when it sampled it, so a code object freed and another made at the
 * same address (garbage collection, exec() of new code) is read again, and
 * a sample of the old one gets no name rather than the new one's. Objects
 * whose type is not PyCode_Type are never named.
 *
 * Bounded at every moment, not at a later sweep (the process controls what
 * is read):
 *   - one code object costs at most PYNAME_ITEM_MAX: its qualname is kept
 *     to PYNAME_NAME_MAX bytes (cut, "..." at the end), its file name to
 *     PYNAME_FILE_MAX (its start cut: "...", the base name kept), its line
 *     table to its first PYNAME_LT_KEEP bytes; the line of an instruction
 *     past those is read from the process when asked (the whole table, at
 *     most 64 KiB, out of a caller's budget) and remembered for the last few
 *     such instructions of the object;
 *   - a namer holds at most max_codes objects and max_bytes
 *     (PYNAME_MAX_CODES, PYNAME_MAX_BYTES by default): an insertion over
 *     either starts the cache over first, and what it held is freed then.
 * So the strings a lookup hands out live only until the next call on the
 * namer (pynamer__name, pynamer__reset): the caller copies them (interns
 * them in its profile) before it asks again. The symbolizer caps all
 * processes' namers together the same way (SYM_PY_MAX_BYTES).
 */
#ifndef BPFPROF_SYM_PYNAME_H
#define BPFPROF_SYM_PYNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/cpython.h"

#define PYNAME_MAX_CODES 65536
#define PYNAME_MAX_BYTES (32u << 20)
#define PYNAME_NAME_MAX	 512  /* bytes of a qualname kept (UTF-8, with its "...") */
#define PYNAME_FILE_MAX	 1024 /* bytes of a file name kept */
#define PYNAME_LT_KEEP	 1024 /* bytes of a line table kept */
/* What one cached code object costs, at most (pynamer__bytes counts it so). */
#define PYNAME_ITEM_MAX (PYNAME_NAME_MAX + PYNAME_FILE_MAX + PYNAME_LT_KEEP + 256)

struct pynamer;
struct ptab;
struct pproc;

/* A namer for a process probed as cp (copied). NULL on ENOMEM. */
struct pynamer *pynamer__new(const struct cpython_proc *cp);
void pynamer__free(struct pynamer *n);
/* Caps other than PYNAME_MAX_CODES and PYNAME_MAX_BYTES, held from the next insertion on. */
void pynamer__set_caps(struct pynamer *n, size_t max_codes, size_t max_bytes);

struct pyframe {
	const char *name; /* co_qualname */
	const char *file; /* co_filename */
	uint32_t line;	  /* 0 if unknown */
	bool over_budget; /* ... because reading its table again was over *lt_budget */
};

/*
 * Names the frame of code object `code` at instruction index instr
 * (BP_PY_NO_INSTR: unknown) that the sampler saw with checksum csum,
 * reading from process p if it is not cached (p NULL: the process is gone,
 * only the cache answers). A line past the kept start of the object's line
 * table is read from p if *lt_budget (bytes, decremented; NULL: no limit)
 * covers the table; else the line is 0. 0, or -ESTALE (the object there
 * now is another), -EINVAL (not a code object, unreadable), -ESRCH (not
 * cached and no p), -ENOMEM. The strings live until the next call on n.
 */
int pynamer__name(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code, uint32_t instr,
		  uint32_t csum, size_t *lt_budget, struct pyframe *out);

/* Frees the cache (what lookups handed out is gone with it). */
void pynamer__reset(struct pynamer *n);
/* Heap bytes held (each code object counted as its strings, table and overhead). */
size_t pynamer__bytes(const struct pynamer *n);
size_t pynamer__count(const struct pynamer *n);
/* Times the cache started over because it was full. */
uint64_t pynamer__resets(const struct pynamer *n);

#endif
