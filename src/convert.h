/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * convert.h - the commands that work on profiles already written (no root,
 * no BPF): "bpfprof convert", "bpfprof report" and "bpfprof diff". Each
 * returns the process exit status: 0, 1 failure (unreadable or corrupt
 * input, cannot write), 2 usage error.
 */
#ifndef BPFPROF_CONVERT_H
#define BPFPROF_CONVERT_H

int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
