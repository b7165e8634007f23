/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * options.h - what a sampling run is asked to do: struct options, which
 * src/cmd/cli.c fills from the command line (record's, or the sampling
 * options top and annotate share) and the run engine (session/record.h)
 * reads. Plain data and the --unwind names; no parsing here.
 */
#ifndef BPFPROF_OPTIONS_H
#define BPFPROF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "format/writer.h"

/* --unwind: how user stacks are walked. */
enum unwind_opt {
	UNWIND_OPT_AUTO = 0, /* .eh_frame tables where loaded, frame pointers elsewhere */
	UNWIND_OPT_FP,	     /* frame pointers only (bpf_get_stack) */
	UNWIND_OPT_DWARF,    /* tables only */
	UNWIND_OPT_NR
};

struct options {
	uint32_t freq;
	bool all_cpus;
	const char *cpu_list; /* -C, validated syntax; NULL = all */
	uint32_t *pids;	      /* -p, deduplicated */
	size_t nr_pids;
	double duration;  /* seconds; 0 = until Ctrl-C / command exit */
	bool user_only;	  /* -U */
	bool kernel_only; /* -K */
	bool include_idle;
	bool per_thread;
	bool addresses;		/* --addresses: samples keep their leaf address */
	bool offcpu;		/* --off-cpu: also where threads wait (blocked time) */
	uint64_t offcpu_min_ns; /* --off-cpu-min: shorter waits are only counted */
	uint32_t offcpu_tasks;	/* --off-cpu-tasks: blocked tasks followed at once */
	bool offcpu_min_set;
	/* --alloc[=BYTES]: mean bytes between samples; 0: a CPU profile */
	uint64_t alloc_period;
	/* --alloc-budget CALLS: -a, --cgroup: allocator calls per second (0: no guard) */
	uint64_t alloc_budget;
	bool alloc_budget_set;
	/* --on-cpu: with --alloc, the CPU profile too (one run, two files) */
	bool on_cpu;
	const char *output; /* NULL = stdout */
	const char *format; /* NULL = from extension, else folded */
	char **cmd;	    /* after "--", NULL-terminated; NULL if none */
	bool cmd_is_target; /* cmd is what is profiled; with -a, -C or -p it only
			     * sets how long (perf record's habit) */
	int verbosity;	    /* 0 default, -1 quiet, 1.. -v count */
	uint32_t max_stacks;
	uint32_t max_counts;
	/* Continuous mode. */
	double interval;	/* seconds; 0 = one-shot */
	const char *output_dir; /* --output-dir */
	unsigned keep;		/* --keep N files (0 = no limit) */
	uint64_t max_disk;	/* --max-disk BYTES (0 = no limit) */
	const char *push_url;	/* --push URL (Pyroscope) */
	const char *app_name;	/* --app-name (default "bpfprof") */
	const char *token_file; /* --token-file */
	const char *listen;	/* --listen [ADDR:]PORT */
	/* --listen's address, parsed once with the options (httpd__parse_listen) */
	struct sockaddr_storage listen_addr;
	socklen_t listen_len;
	const char *debuginfod; /* --debuginfod URLS (else $DEBUGINFOD_URLS) */
	bool no_debuginfod;	/* --no-debuginfod */
	const char **cgroups;	/* --cgroup PATH (repeatable) */
	size_t nr_cgroups, cap_cgroups;
	enum unwind_opt unwind;
	bool kernel_helper;	  /* --kernel-unwind kernel: bpf_get_stack(), not the ORC walk */
	bool no_python;		  /* --no-python: native frames only in Python processes */
	uint32_t call_graph_size; /* --call-graph dwarf,SIZE: accepted, not needed (0: none) */
	bool show_version;
	bool show_help;
	struct out_opts out; /* --title, --inverted, --merge, --top, --sort, --lines */
};

/* Frees what the options own (-p's pids, --cgroup's list); o stays usable. */
void options__free(struct options *o);
/* The --unwind word of u ("auto", "fp", "dwarf"); "?" if out of range. */
const char *options__unwind_name(enum unwind_opt u);
/*
 * The program's UNWIND_MODE_* (bpf/unwind_abi.h, whose values differ: FP is 0
 * there) for u; UNWIND_MODE_AUTO if out of range.
 */
uint32_t options__unwind_mode(enum unwind_opt u);

#endif
