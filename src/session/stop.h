/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * stop.h - how SIGINT, SIGTERM and SIGHUP stop a command that samples.
 *
 * A signal is a request to stop, cleanly: the command finishes its work and
 * writes what it has. Copies of a signal that arrive close together are one
 * request - timeout(1) and shells send SIGTERM to bpfprof and to its whole
 * process group, supervisors send SIGINT and SIGTERM together - so they never
 * cost the profile. Only a signal more than STOP_REPEAT_MS after the first
 * means "exit now" (a second Ctrl-C); it kills the process with that signal,
 * except while an output file is being written (stop__writing()): that write
 * finishes first, so no file is ever left half-written. The first request
 * also ends the time budgets of work on hostile input a grace period later
 * (budget__stop()): a file being read when it came cannot hold the stop up.
 */
#ifndef BPFPROF_STOP_H
#define BPFPROF_STOP_H

#include <stdbool.h>

#define STOP_REPEAT_MS 1000

/* Catches SIGINT, SIGTERM, SIGHUP (and ignores SIGPIPE). */
void stop__install(void);
/* The signal that asked to stop, 0 if none. */
int stop__requested(void);
/* Around writing an output: an "exit now" waits for the end of the write. */
void stop__writing(bool on);

#endif
