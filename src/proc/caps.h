/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * caps.h - least privilege. bpfprof needs:
 *
 *   CAP_BPF + CAP_PERFMON   load the program, open perf events (required;
 *                           CAP_SYS_ADMIN stands in for both on old kernels)
 *   CAP_SYS_PTRACE          read other processes' maps and files (else their
 *                           frames are module+offset or [unknown])
 *   CAP_SYSLOG              read kernel addresses under kptr_restrict=1
 *   CAP_CHECKPOINT_RESTORE  open /proc/PID/map_files (or CAP_SYS_ADMIN); else
 *                           files are opened by path with a device/inode check
 *
 * After attaching, everything but what reading profiles still needs is
 * dropped from the effective, permitted and inheritable sets.
 */
#ifndef BPFPROF_CAPS_H
#define BPFPROF_CAPS_H

#include <stdbool.h>
#include <stddef.h>

struct caps_report {
	bool can_bpf;	  /* CAP_BPF, or CAP_SYS_ADMIN */
	bool can_perfmon; /* CAP_PERFMON, or CAP_SYS_ADMIN */
	bool can_ptrace;
	bool can_syslog;
	bool can_map_files;
	char missing[128]; /* "CAP_BPF and CAP_PERFMON", "" if none required is missing */
};

void caps__check(struct caps_report *r);
/* Drops every capability not needed once attached; keep_dac_override when
 * output still has to be written where the user asked. 0 or -errno. */
int caps__drop_after_attach(bool keep_dac_override);
/* The effective set as a hex mask (for tests and -v). */
unsigned long long caps__effective(void);

#endif
