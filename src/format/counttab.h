/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * counttab.h - bpfprof count's results and what names what it counts: the
 * patterns (glob, LIB:GLOB), the libraries they name, and the writers (the
 * deterministic profile's table, as gprof's flat profile and SBCL's
 * deterministic profiler print it, and JSON). No BPF, no process: the
 * command fills struct count_fn from the collector's counts.
 */
#ifndef BPFPROF_COUNTTAB_H
#define BPFPROF_COUNTTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "count_abi.h"

/* A pattern: "GLOB" (the executable and its libraries), "LIB:GLOB", or
 * "kernel:GLOB" (kernel functions; GLOB too under -k). */
struct count_pat {
	char *lib;   /* NULL: any file the target maps (or the kernel's, kernel set) */
	char *func;  /* fnmatch(3) glob */
	bool kernel; /* a kernel function's pattern: never matches a file's */
};

/*
 * Parses arg into p (malloc'd strings: counttab__pat_free). The library is
 * split at the first lone ':' ("ns::f*" is a C++ name, not a library); an
 * empty library or function is an error. 0 or -EINVAL.
 */
int counttab__pat_parse(const char *arg, struct count_pat *p);
void counttab__pat_free(struct count_pat *p);
/*
 * Whether lib names the file at path: lib with a '/' is matched against the
 * whole path (a glob), otherwise against its base name, which it names
 * when equal, matched as a glob, or followed there by '.' or '-' ("libc"
 * names libc.so.6 and libc-2.31.so, not libcap.so.2).
 */
bool counttab__lib_match(const char *lib, const char *path);
/* Whether a function name matches p's glob (and p's library names path, if it has one). */
bool counttab__pat_match(const struct count_pat *p, const char *path, const char *name);
/* Whether kernel pattern p names the kernel function name. */
bool counttab__kpat_match(const struct count_pat *p, const char *name);

struct count_caller {
	char *function; /* "module+0xADDR" when no symbol names it */
	uint64_t calls;
};

struct count_fn {
	char *function;
	char *module; /* the file's path */
	struct count_stat st;
	struct count_caller *callers; /* most calls first after counttab__sort() */
	size_t nr_callers;
	/* The guard detached it: its rate, calls per second, when it did. */
	bool detached;
	double rate;
};

/* Adds n calls from caller to f (merged by name). 0 or -ENOMEM. */
int counttab__add_caller(struct count_fn *f, const char *caller, uint64_t n);
/* Most total time first, then most calls, then by name; callers most calls first. */
void counttab__sort(struct count_fn *fns, size_t n);
void counttab__fn_free(struct count_fn *f);

struct counttab_opts {
	unsigned max_callers; /* caller lines per function (0: none) */
	bool hist;	      /* each function's latency histogram */
	bool all;	      /* functions with no calls too */
};
/* The table (fns sorted). 0 or -errno of the write. */
int counttab__write_table(FILE *f, const struct count_fn *fns, size_t n,
			  const struct counttab_opts *o);
/* {"functions": [...]}, every function, every caller. 0 or -errno. */
int counttab__write_json(FILE *f, const struct count_fn *fns, size_t n, double seconds);

/* "12.3 us"-style duration into buf. */
const char *counttab__dur(uint64_t ns, char *buf, size_t size);

#endif
