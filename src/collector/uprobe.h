/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * uprobe.h - uprobe_multi and session-uprobe links made with a raw
 * BPF_LINK_CREATE (libbpf 1.1 has no API for them): one link puts a program
 * on n offsets of one file, in one process or (pid 0) every process, each
 * offset with its cookie.
 *
 *   UPROBE_ATTACH_MULTI    entries (or, with ret, returns): kernel 6.6+
 *   UPROBE_ATTACH_SESSION  one program at entry and return, the return only
 *                          where the entry returned 0: kernel 6.13+
 *
 * A program is loaded for one of them (bpf_program__set_expected_attach_type
 * with that value) before its link is made.
 */
#ifndef BPFPROF_COLLECTOR_UPROBE_H
#define BPFPROF_COLLECTOR_UPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* enum bpf_attach_type values this libbpf's headers lack. */
#define UPROBE_ATTACH_MULTI   48 /* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_ATTACH_SESSION 57 /* BPF_TRACE_UPROBE_SESSION */

/*
 * A link of prog_fd (loaded for attach_type) on offs[0..n) of the file at
 * path (kept by the kernel), cookies[i] (NULL: 0) for each; ret: the
 * returns (UPROBE_ATTACH_MULTI only). pid <= 0: every process. The link's
 * descriptor, or -errno.
 */
int uprobe__link(int prog_fd, uint32_t attach_type, bool ret, const char *path,
		 const uint64_t *offs, const uint64_t *cookies, size_t n, int pid);

#endif
