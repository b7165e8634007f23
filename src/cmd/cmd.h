/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cmd.h - bpfprof's commands. Each takes its own argv (argv[0] is the
 * command name) and returns the process exit status: 0, 1 failure, 2 usage
 * error. Commands wire the layers below together; they and the run engine
 * they drive (src/session/) are the only code that prints to the user.
 *
 *   record   (the default) profile processes or CPUs with BPF; needs root
 *   report   top functions of profiles already written
 *   convert  any format to any format
 *   diff     compare two profiles
 *   top      a live full-screen view of the hottest functions; needs root
 *   annotate a function's instructions with their samples (live, or a
 *            profile recorded with --addresses)
 *   count    calls and time per function, every call (uprobes); needs root
 *
 * report, convert and diff work on files and need no privileges.
 */
#ifndef BPFPROF_CMD_H
#define BPFPROF_CMD_H

int cmd_record(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_count(int argc, char **argv);

struct options;
struct writer;
/* record --alloc (alloc.c): memory profiles from the C library's allocator;
 * the options were validated. The exit status. */
int cmd_record_alloc(const struct options *o, const struct writer *w);
struct allocrun;
/* The engine's one-shot heap profile (ALLOCRUN_ALL) taken, its counters
 * said, written with w to path (NULL: stdout). 0 or 1 (said). --alloc
 * alone, and --alloc --on-cpu after the CPU profile. */
int cmd_alloc_report(struct allocrun *ar, const struct options *o, const struct writer *w,
		     const char *path);
/* --alloc --on-cpu in continuous mode, at its end (the heap profiles all
 * written): what the engine's counters say. */
void cmd_alloc_summary(struct allocrun *ar);

#endif
