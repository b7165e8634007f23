/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cli.h - command-line options of "bpfprof record" (the default command),
 * parsed into one validated struct. Pure: no /proc, no BPF, so every rule is
 * unit-tested. Checks that need the machine (does the pid exist, is -F above
 * the kernel's limit, does CPU 7 exist) happen in record.c.
 */
#ifndef BPFPROF_CLI_H
#define BPFPROF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_MAX_FREQ 1000000u /* sanity cap; the kernel's sysctl limit is checked later */

/* --unwind: how user stacks are walked. */
enum unwind_opt {
	UNWIND_OPT_AUTO = 0, /* .eh_frame tables where loaded, frame pointers elsewhere */
	UNWIND_OPT_FP,	     /* frame pointers only (bpf_get_stack) */
	UNWIND_OPT_DWARF,    /* tables only */
};

struct options {
	uint32_t freq;
	bool all_cpus;
	const char *cpu_list; /* -C, validated syntax; NULL = all */
	uint32_t *pids;	      /* -p, deduplicated */
	size_t nr_pids;
	double duration;      /* seconds; 0 = until Ctrl-C / command exit */
	bool user_only;	      /* -U */
	bool kernel_only;     /* -K */
	bool include_idle;
	bool per_thread;
	const char *output;   /* NULL = stdout */
	const char *format;   /* NULL = from extension, else folded */
	char **cmd;	      /* after "--", NULL-terminated; NULL if none */
	int verbosity;	      /* 0 default, -1 quiet, 1.. -v count */
	uint32_t max_stacks;
	uint32_t max_counts;
	enum unwind_opt unwind;
	bool show_version;
	bool show_help;
};

/* Parse results. */
enum {
	CLI_OK = 0,
	CLI_EXIT = 1,	/* --help / --version printed: exit 0 */
	CLI_USAGE = -1, /* bad usage: message in err, exit 2 */
};

/* Parses argv (argv[0] is the program or sub-command name). */
int cli__parse(int argc, char **argv, struct options *o, char *err, size_t errlen);
void cli__free(struct options *o);
void cli__usage(FILE *f);

/* Parses "1234,5678" into a deduplicated array; 0 or -EINVAL/-ERANGE. */
int cli__parse_pids(const char *s, uint32_t **pids, size_t *nr);
/* Parses seconds ("10", "0.5", "2m", "1h"); 0 or -EINVAL. */
int cli__parse_duration(const char *s, double *out);
/* "auto", "fp", "dwarf" -> enum unwind_opt; -EINVAL otherwise. */
int cli__parse_unwind(const char *s, enum unwind_opt *out);
const char *cli__unwind_name(enum unwind_opt u);

#endif
