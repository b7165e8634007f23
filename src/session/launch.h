/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * launch.h - "-- COMMAND" for the commands that probe a command's files
 * before it runs (count, --alloc): the command is started stopped at its
 * exec (a tracepoint sends it SIGSTOP), then at its entry point (a uprobe
 * there), where the dynamic loader has mapped its libraries; the caller
 * attaches its probes then and sends SIGCONT. The stops are the caller's
 * collector's, through struct launch_stops.
 */
#ifndef BPFPROF_LAUNCH_H
#define BPFPROF_LAUNCH_H

#include <stdint.h>

#include "base/errmsg.h"
#include "proc/child.h"
#include "proc/ptab.h"

#define LAUNCH_STOP_WAIT_MS 10000

struct launch_stops {
	void *ctx;
	/* pid is a target, stopped at its exec (and what else the caller follows). 0 or
	 * -errno, with em said or not. */
	int (*at_exec)(void *ctx, uint32_t pid, struct errmsg *em);
	/* A probe that stops pid at path's file offset off. 0 or -errno, with em. */
	int (*at_entry)(void *ctx, const char *path, uint64_t off, int pid, struct errmsg *em);
	/* The stops are done with. */
	void (*detach)(void *ctx);
};

/*
 * Starts cmd in ch, stopped at its entry point, its maps in ptab re-read.
 * 0 (the caller lets it go: SIGCONT), or 1: said, and the command ended.
 */
int launch__start(struct child *ch, char **cmd, struct ptab *ptab,
		  const struct launch_stops *stops);

#endif
