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
 * Bounded: at most PYNAME_MAX_CODES code objects and PYNAME_MAX_BYTES of
 * names and line tables per process; over either, the cache starts over
 * (what was handed out stays valid until pynamer__sweep()). The symbolizer
 * also caps all processes' caches together (SYM_PY_MAX_BYTES).
 */
#ifndef BPFPROF_SYM_PYNAME_H
#define BPFPROF_SYM_PYNAME_H

#include <stddef.h>
#include <stdint.h>

#include "lang/cpython.h"

#define PYNAME_MAX_CODES 65536
#define PYNAME_MAX_BYTES (32u << 20)

struct pynamer;
struct ptab;
struct pproc;

/* A namer for a process probed as cp (copied). NULL on ENOMEM. */
struct pynamer *pynamer__new(const struct cpython_proc *cp);
void pynamer__free(struct pynamer *n);

struct pyframe {
	const char *name; /* co_qualname */
	const char *file; /* co_filename */
	uint32_t line;	  /* 0 if unknown */
};

/*
 * Names the frame of code object `code` at instruction index instr
 * (BP_PY_NO_INSTR: unknown) that the sampler saw with checksum csum,
 * reading from process p if it is not cached. 0, or -ESTALE (the object
 * there now is another), -EINVAL (not a code object, unreadable). The
 * strings live until the next pynamer__sweep().
 */
int pynamer__name(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code, uint32_t instr,
		  uint32_t csum, struct pyframe *out);

/* Starts the cache over (what was handed out stays valid until the sweep). */
void pynamer__reset(struct pynamer *n);
/* Frees what earlier lookups handed out and a cache that started over. */
void pynamer__sweep(struct pynamer *n);
/* Heap bytes held. */
size_t pynamer__bytes(const struct pynamer *n);
const struct cpython_proc *pynamer__proc(const struct pynamer *n);

#endif
