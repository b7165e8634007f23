/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * offline.h - what "bpfprof convert", "report" and "diff" share: their
 * options, reading and merging the input profiles, writing the result.
 * Every function prints its own error; the int ones return 0 to go on or
 * the exit status to return.
 */
#ifndef BPFPROF_CMD_OFFLINE_H
#define BPFPROF_CMD_OFFLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/errmsg.h"
#include "base/profile.h"
#include "format/reader.h"
#include "format/writer.h"

struct offline_opts {
	const char *output; /* NULL: stdout */
	const char *format; /* -f, NULL: from the output's extension */
	struct out_opts out;
	char **inputs;
	int nr_inputs;
	/* -i FILE (perf report's spelling), repeatable: inputs before the others */
	char **named;
	size_t nr_named, cap_named;
	char **inputs_buf; /* inputs when -i was given: named, then the arguments */
	int verbosity;
	bool help;
	/* Which samples of the inputs are read (perf report's --pid, --comm). */
	struct input_opts in; /* --event: a perf script input's event */
	uint32_t *pids;	      /* --pid PID[,PID...]: only these processes */
	size_t nr_pids, cap_pids;
	char **comms; /* --comm NAME[,NAME...]: only these process names */
	size_t nr_comms, cap_comms;
};

/* A usage error: the message, a hint to the command's --help; returns 2. */
int offline__usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for an error described in em (with its hint, if it has one). */
int offline__usage_em(const char *cmd, const struct errmsg *em);
/* 2 if the output path cannot be written. */
int offline__check_output(const char *cmd, const char *path);
/*
 * Reads the inputs paths[0..n), keeps the samples --pid and --comm select,
 * and adds them up into *out: 0, or the exit status after printing why (1
 * an input could not be read or nothing was selected, 2 an option that
 * does not apply to an input, such as --pid on folded text).
 */
int offline__load(const struct offline_opts *o, char **paths, int n, struct profile **out);
/*
 * All of command cmd: its options and inputs parsed, then its --help
 * printed by usage or the command run, and its options freed; the exit status.
 */
int offline__main(int argc, char **argv, const char *cmd, bool takes_format, void (*usage)(FILE *f),
		  int (*run)(struct offline_opts *o));
/* The --help lines of --pid, --comm and --event. */
void offline__select_usage(FILE *f);
/* 1 if writing failed. */
int offline__write_or_fail(const struct writer *w, const struct profile *p,
			   const struct offline_opts *o);

#endif
