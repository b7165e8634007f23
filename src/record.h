/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* record.h - "bpfprof record", the default command. */
#ifndef BPFPROF_RECORD_H
#define BPFPROF_RECORD_H

/* Runs a profiling session; returns the process exit status (0, 1 or 2). */
int cmd_record(int argc, char **argv);

#endif
