/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * symbolizer.h - turns sampled addresses into names; the caching facade over
 * kallsyms, procmaps and elfsym.
 *
 * Processes are identified by (pid, start time, exec id) - the same triple
 * the BPF program puts in every sample key - so a recycled pid or an exec in
 * the same pid can never borrow another image's mappings. Files are cached by
 * (device, inode), so one libc is read once for every process that maps it.
 *
 * Life cycle of a process entry: created by symbolizer__note_process() when
 * the BPF side reports a new image (while the process is alive, so short-lived
 * processes keep their mappings), used while its samples are symbolized, and
 * dropped by symbolizer__sweep() one drain after the process is seen gone:
 * samples taken between a drain's buffer flip and the exit are only drained
 * the next time.
 */
#ifndef BPFPROF_SYMBOLIZER_H
#define BPFPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct symbolizer;

struct symbolizer_opts {
	const char *proc_root;	   /* default "/proc" */
	const char *kallsyms_path; /* default "<proc_root>/kallsyms" */
	size_t max_procs;	   /* cap on process entries (default 16384) */
	size_t max_files;	   /* cap on cached files (default 4096) */
};

struct proc_id {
	uint32_t pid;
	uint64_t start_time; /* task start_boottime, ns; 0 = unknown, not checked */
	uint64_t exec_id;
};

/* The answer for one address. Strings live until the next sweep. */
struct sym {
	const char *name;   /* function name, or NULL if none is known */
	const char *module; /* file path, "[vdso]", kernel module, or NULL */
	uint64_t addr;	    /* address within the module (ELF vaddr), or the ip */
	enum frame_kind kind;
};

struct symbolizer_stats {
	size_t procs, files, ksyms;
	uint64_t lookups, unknown;
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);

/* Loads kernel symbols. 0, or -errno; kptr_restrict is not an error. */
int symbolizer__load_kernel(struct symbolizer *s);
bool symbolizer__kernel_restricted(const struct symbolizer *s);

/* Snapshots the process's mappings and loads its files now. 0 or -errno
 * (-ESRCH: gone, or a different process has the pid). Idempotent. */
int symbolizer__note_process(struct symbolizer *s, const struct proc_id *id);

void symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym *out);
/*
 * leaf: ip is the sampled instruction; otherwise it is a return address and
 * ip - 1 is looked up, so a call at the very end of a function is not named
 * after the next one.
 */
void symbolizer__user(struct symbolizer *s, const struct proc_id *id, uint64_t ip, bool leaf,
		      struct sym *out);

/* Formats the frame name: the symbol, else "module+0xADDR", else "[unknown]". */
const char *sym__display(const struct sym *sym, char *buf, size_t size);

/* After a drain: forget processes that were already gone at the last sweep. */
void symbolizer__sweep(struct symbolizer *s);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st);

#endif
