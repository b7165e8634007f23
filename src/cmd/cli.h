/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cli.h - command-line options of "bpfprof record" (the default command),
 * parsed into one validated struct options (session/options.h). Pure: no
 * /proc, no BPF, so every rule is unit-tested. Checks that need the machine
 * (does the pid exist, is -F above the kernel's limit, does CPU 7 exist)
 * happen in session/record.c.
 */
#ifndef BPFPROF_CLI_H
#define BPFPROF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/errmsg.h"
#include "base/util.h"
#include "format/writer.h"
#include "session/options.h"

#define CLI_MAX_FREQ		  1000000u /* sanity cap; the kernel's sysctl limit is checked later */
#define CLI_OFFCPU_MIN_DEFAULT_NS NS_PER_MS /* --off-cpu-min: 1 ms */

/* --alloc: 512 KiB between samples by default, at most 1 TiB. */
#define CLI_ALLOC_DEFAULT_PERIOD (512u << 10)
#define CLI_ALLOC_MAX_PERIOD	 (1ull << 40)
/* --alloc -a, --cgroup: the allocator's calls per second across the CPUs the
 * guard allows (about a third of a CPU in traps at ~3 us each), at most 1G. */
#define CLI_ALLOC_DEFAULT_BUDGET 100000u
#define CLI_ALLOC_MAX_BUDGET	 1000000000u

/* Long options without a short one (getopt_long values). */
enum {
	OPT_INCLUDE_IDLE = 256,
	OPT_PER_THREAD,
	OPT_MAX_STACKS,
	OPT_MAX_COUNTS,
	OPT_UNWIND,
	OPT_VERSION,
	OPT_INTERVAL,
	OPT_OUTPUT_DIR,
	OPT_KEEP,
	OPT_MAX_DISK,
	OPT_PUSH,
	OPT_APP_NAME,
	OPT_TOKEN_FILE,
	OPT_LISTEN,
	OPT_CGROUP,
	OPT_NO_PYTHON,
	OPT_KERNEL_UNWIND,
	OPT_ADDRESSES,
	OPT_CALL_GRAPH,
	OPT_OFFCPU,
	OPT_OFFCPU_MIN,
	OPT_OFFCPU_TASKS,
	OPT_DEBUGINFOD,
	OPT_NO_DEBUGINFOD,
	OPT_ALLOC,
	OPT_ALLOC_BUDGET,
	OPT_ON_CPU,
	OPT_CMD_FIRST = 350, /* options of other commands (top, annotate) start here */
};

/*
 * What is sampled and how: targets (-a, -p, -C, --cgroup), -F, -d, -U/-K,
 * --include-idle, --per-thread, map sizes, --unwind, --kernel-unwind, perf's
 * -g and --call-graph. The
 * same for every command that samples (record, top, annotate):
 * CLI_SAMPLING_OPTIONS goes into a struct option table, CLI_SAMPLING_SHORT
 * into the short option string, cli__sampling_option() applies one.
 */
#define CLI_SAMPLING_SHORT "F:ap:C:d:UKg"
#define CLI_SAMPLING_OPTIONS                                                                       \
	{ "freq", required_argument, NULL, 'F' }, { "frequency", required_argument, NULL, 'F' },   \
		{ "all-cpus", no_argument, NULL, 'a' }, { "pid", required_argument, NULL, 'p' },   \
		{ "cpu", required_argument, NULL, 'C' },                                           \
		{ "duration", required_argument, NULL, 'd' },                                      \
		{ "user-only", no_argument, NULL, 'U' },                                           \
		{ "kernel-only", no_argument, NULL, 'K' },                                         \
		{ "include-idle", no_argument, NULL, OPT_INCLUDE_IDLE },                           \
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },                               \
		{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },                         \
		{ "max-entries", required_argument, NULL, OPT_MAX_COUNTS },                        \
		{ "unwind", required_argument, NULL, OPT_UNWIND },                                 \
		{ "kernel-unwind", required_argument, NULL, OPT_KERNEL_UNWIND },                   \
		{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },                         \
		{ "cgroup", required_argument, NULL, OPT_CGROUP },                                 \
	{                                                                                          \
		"no-python", no_argument, NULL, OPT_NO_PYTHON                                      \
	}
/* CLI_OK if c was one of them (applied), CLI_USAGE with em, or 1 if not one. */
int cli__sampling_option(int c, const char *arg, struct options *o, struct errmsg *em);
/* Zeroes o and sets the defaults (-F 99, output options). */
void cli__sampling_defaults(struct options *o);

/* Parse results. */
enum {
	CLI_OK = 0,
	CLI_EXIT = 1,	/* --help / --version printed: exit 0 */
	CLI_USAGE = -1, /* bad usage: message in em, exit 2 */
};

/*
 * Parses argv (argv[0] is the program or sub-command name): each option on
 * its own, then cli__validate(). CLI_OK, CLI_EXIT or CLI_USAGE (message in em).
 */
int cli__parse(int argc, char **argv, struct options *o, struct errmsg *em);
/*
 * Checks how the parsed options combine (-U with -K, a command with -p, ...)
 * and fills the defaults that depend on others (--interval for the
 * always-on sinks). CLI_OK or CLI_USAGE with em.
 */
int cli__validate(struct options *o, struct errmsg *em);
/*
 * The writer for -f format (NULL: none given) and -o path (NULL: stdout):
 * the format named, else the one path's ending names, else folded - for a
 * name without an ending ("profile", "run.1") as for stdout. An ending that
 * names no format (x.png, x.data) is a usage error whose hint lists the known
 * endings. CLI_OK or CLI_USAGE with em.
 */
int cli__pick_writer(const char *format, const char *path, const struct writer **out,
		     struct errmsg *em);
/* -f naming another format than -o FILE's ending (-f pprof -o x.svg): a
 * warning, as the file is still written as -f says. */
void cli__warn_mismatch(const struct writer *w, const char *format, const char *path);
/*
 * The command of "-- COMMAND" can be run: a path to an executable file, or a
 * name found in $PATH as execvp() searches it; checked before sampling starts
 * so "cannot run" is not said after "sampling". CLI_OK or CLI_USAGE with em
 * (the caller exits 1, as when the exec itself fails).
 */
int cli__check_command(const char *name, struct errmsg *em);
/*
 * A binary format (pprof, svgz) bound for stdout (path NULL or "-") when
 * stdout is a terminal: a usage error (gzip's rule), as it would only garble
 * the screen. CLI_OK or CLI_USAGE with em.
 */
int cli__check_terminal(const struct writer *w, const char *path, struct errmsg *em);
/* The same for "bpfprof diff", whose default is its report. */
int cli__pick_diff_writer(const char *format, const char *path, const struct diff_writer **out,
			  struct errmsg *em);
void cli__usage(FILE *f);

/*
 * Output options every command takes (long options only). CLI_OUT_OPTIONS
 * goes into a struct option table; cli__out_option() handles one of them.
 */
enum {
	OPT_OUT_TITLE = 400,
	OPT_OUT_INVERTED,
	OPT_OUT_MERGE,
	OPT_OUT_TOP,
	OPT_OUT_SORT,
	OPT_OUT_LINES,
	OPT_OUT_VIEW,
};
#define CLI_OUT_OPTIONS                                                                            \
	{ "title", required_argument, NULL, OPT_OUT_TITLE },                                       \
		{ "inverted", no_argument, NULL, OPT_OUT_INVERTED },                               \
		{ "merge", no_argument, NULL, OPT_OUT_MERGE },                                     \
		{ "top", required_argument, NULL, OPT_OUT_TOP },                                   \
		{ "sort", required_argument, NULL, OPT_OUT_SORT },                                 \
		{ "lines", no_argument, NULL, OPT_OUT_LINES },                                     \
	{                                                                                          \
		"view", required_argument, NULL, OPT_OUT_VIEW                                      \
	}
/* Defaults: no title, not inverted, not merged, 20 rows, both tables. */
void cli__out_defaults(struct out_opts *oo);
/* CLI_OK if opt was one of them (applied), CLI_USAGE with em, or 1 if not one. */
int cli__out_option(int opt, const char *arg, struct out_opts *oo, struct errmsg *em);
/* The --help lines describing them. */
void cli__out_usage(FILE *f);

/*
 * Whether argv[at], an argument left after the options, is one more pid of a
 * list given to -p with spaces ("-p 12 34", "-p $(pgrep app)"): then em says
 * so, with a hint that joins them with commas.
 */
bool cli__stray_pids(const struct options *o, int argc, char **argv, int at, struct errmsg *em);
/* Parses "1234,5678" into a deduplicated array; 0 or -EINVAL/-ERANGE. */
int cli__parse_pids(const char *s, uint32_t **pids, size_t *nr);
/* --off-cpu-min: milliseconds ("1", "0.5"), or with a unit ("200us", "1ms",
 * "2s"); 0 is allowed. 0 or -EINVAL. */
int cli__parse_wait(const char *s, uint64_t *ns);
/* Parses seconds ("10", "0.5", "2m", "1h"); 0 or -EINVAL. */
int cli__parse_duration(const char *s, double *out);
/* Parses a size ("1048576", "512K", "100M", "2G"; powers of 1024); 0 or -EINVAL. */
int cli__parse_size(const char *s, uint64_t *out);
/* "auto", "fp", "dwarf" -> enum unwind_opt; -EINVAL otherwise. */
int cli__parse_unwind(const char *s, enum unwind_opt *out);

#endif
