/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unwinder.h - keeps the kernel's unwind tables and per-process mapping
 * lists (unwind_abi.h) in step with the processes being sampled. No libbpf:
 * the collector provides the few kernel operations (struct unwind_kops).
 *
 * Life cycle of a process: the BPF program reports a new program image
 * (exec, new pid, pid reuse) -> unwinder__note_process() takes its
 * executable mappings from the process table (proc/ptab.h, which reads and
 * checks everything a process controls), builds the table of every file not
 * seen before (once per file: keyed by the table's mfile serial, shared by
 * build id across copies, e.g. the same libc in two containers), uploads it into the slot
 * pool, and installs the process's sorted mapping list. Until then its
 * samples are walked with frame pointers. When the walker meets code in no
 * known mapping (dlopen, new JIT code) it asks for a refresh
 * (unwinder__refresh(), rate-limited on both sides). unwinder__tick()
 * forgets processes that exited, frees their mapping lists, and drops
 * tables no process has used for a while.
 *
 * Bounds: at most max_procs processes have an entry in the kernel (the
 * least recently noticed one is evicted for a new one: it falls back to
 * frame pointers until its next notice), at most max_chunks MiB of slots
 * (tables no live process uses are evicted first when the pool is full; a
 * table that still does not fit is skipped, and its mappings use frame
 * pointers). Failed builds (no .eh_frame, not x86-64, unreadable, over
 * the build's CPU budget: table.h) are remembered, for a minute after they
 * were last asked for, so they are not retried for every process.
 */
#ifndef BPFPROF_UNWIND_UNWINDER_H
#define BPFPROF_UNWIND_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "proc/ptab.h"
#include "hotspot_abi.h"
#include "python_abi.h"
#include "unwind_abi.h"

/* Kernel operations, implemented by the collector. Each returns 0 or -errno. */
struct unwind_kops {
	void *ctx;
	int (*chunk_add)(void *ctx, uint32_t chunk);  /* create + install chunk */
	int (*chunk_drop)(void *ctx, uint32_t chunk); /* uninstall + free chunk */
	/* Writes n 8-byte slots from vals (n * 8 bytes) at global slot `slot`. */
	int (*slots_write)(void *ctx, uint32_t slot, const void *vals, uint32_t n);
	int (*proc_set)(void *ctx, uint32_t tgid, const struct bp_uproc *p);
	int (*proc_del)(void *ctx, uint32_t tgid);
	/* Tells the walker that slots were freed: its cached rows are stale. */
	void (*pool_changed)(void *ctx, uint64_t generation);
	/* A Python process's interpreter (python_abi.h), set before its unwind entry. */
	int (*py_set)(void *ctx, uint32_t tgid, const struct bp_pyproc *p);
	int (*py_del)(void *ctx, uint32_t tgid);
	/* A JVM's code cache (hotspot_abi.h), set before its unwind entry. */
	int (*hs_set)(void *ctx, uint32_t tgid, const struct bp_hsproc *p);
	int (*hs_del)(void *ctx, uint32_t tgid);
};

struct ptab;

struct unwinder_opts {
	/* The process table files are read through (shared with the symbolizer);
	 * NULL: one of its own on proc_root. */
	struct ptab *ptab;
	const char *proc_root;	  /* default "/proc", without ptab */
	uint32_t max_procs;	  /* kernel entries; default 4096 */
	uint32_t max_chunks;	  /* pool cap in 1 MiB chunks; default 128 */
	uint32_t idle_table_secs; /* unused tables kept this long; default 60 */
	uint32_t seg_rows;	  /* rows per pool run (tables are split); default 16384 */
	bool python;		  /* walk Python frames (default: only if set) */
	bool jvm;		  /* walk HotSpot JIT and interpreter frames (likewise) */
	/* Called once per process whose Python bpfprof cannot walk, with a sentence. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

struct unwinder_stats {
	uint64_t procs;		/* processes with an entry in the kernel now */
	uint64_t procs_loaded;	/* entries installed (or updated) */
	uint64_t procs_evicted; /* pushed out by max_procs */
	uint64_t procs_skipped; /* not x86-64, gone, unreadable */
	uint64_t refreshes;	/* mapping lists re-read on request */
	uint64_t maps_dropped;	/* executable mappings left out of lists over UNWIND_MAX_MAPS */
	uint64_t maps_lost;	/* ... of them with unwind tables (their frames end stacks) */
	uint64_t tables;	/* tables in the kernel now */
	uint64_t tables_built;	/* built (since start) */
	uint64_t tables_shared; /* found by build id under another inode */
	uint64_t tables_failed; /* files without a usable table */
	uint64_t tables_over_budget; /* ... of them: its build took more than its time budget */
	uint64_t tables_evicted;     /* dropped: idle, or to make room */
	uint64_t tables_no_room;     /* did not fit under max_chunks */
	uint64_t rows;		     /* rows of the tables in the kernel now */
	uint64_t build_ns;	     /* time spent building tables */
	uint64_t kernel_bytes;	     /* pool chunks allocated in the kernel */
	uint64_t used_bytes;	     /* ... of which in use */
	uint64_t python_procs;	     /* Python processes whose frames the walker reads */
	uint64_t python_tls;	 /* ... whose threads' states are in their thread-specific data */
	uint64_t python_unknown; /* Python processes it cannot (version, layout) */
	uint64_t python_vfork;	 /* vfork() children before their exec: not probed */
	uint64_t python_retries; /* probes again of interpreters not started yet */
	uint64_t python_file_reads; /* files whose symbols Python probes read (once a file) */
	uint64_t jvm_procs;	    /* JVMs whose JIT and interpreter frames the walker steps */
	uint64_t jvm_unknown;	    /* JVMs it cannot (tables lacking, a layout out of bounds) */
	uint64_t jvm_retries;	    /* probes again of JVMs not started yet */
	uint64_t jvm_probe_ns;	    /* CPU time reading JVMs' VM structures */
};

struct unwinder;

struct unwinder *unwinder__new(const struct unwinder_opts *opts, const struct unwind_kops *kops);
/* Frees userspace state; the kernel maps go away with the collector. */
void unwinder__free(struct unwinder *u);

/*
 * A new program image (from a BPF notice): install its tables and
 * mappings. id->start_time is the task's start_boottime in ns, as BPF sees
 * it. 0 or -errno (-ESRCH gone or pid reused, -ENOTSUP not an x86-64
 * process). Idempotent.
 */
int unwinder__note_process(struct unwinder *u, const struct proc_id *id);
/*
 * The walker met an address in no known mapping: re-read the mappings.
 * 0 (re-read) or -errno; 1 if not now: too soon after the last re-read,
 * whose wait doubles (up to 32 s) each time one finds nothing new.
 */
int unwinder__refresh(struct unwinder *u, const struct proc_id *id);
/*
 * Installs pid's entry ahead of its first sample (for -p targets, just
 * before sampling starts), so even that sample is walked with tables. Its
 * image ids are not known yet: the entry matches whatever pid runs
 * (UPROC_F_ANY_IMAGE) until the first notice supplies them; pid reuse is
 * caught by the /proc start time at every tick.
 */
int unwinder__install(struct unwinder *u, uint32_t pid);

/* Periodic upkeep (call every few hundred ms): frees what exited processes
 * and idle tables held. */
void unwinder__tick(struct unwinder *u);
/* When (now_ns()) unwinder__tick() must have run for work that is due - a
 * Python or a JVM still starting up to probe again - or 0 for none: a caller's wait
 * ends by then. Work that may wait is taken at any tick after it is due, so
 * a caller that wakes up more often than that wakes up for nothing more. */
uint64_t unwinder__next_due_ns(const struct unwinder *u);

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *st);

/* When (now_ns()) the last Python process was found and handed to the
 * walker, or 0: its code objects can only be named while it runs, so the
 * caller drains sooner for a while (a short-lived script). */
uint64_t unwinder__python_found_ns(const struct unwinder *u);

#endif
