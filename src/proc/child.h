/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* child.h - start a command stopped, let it exec, reap it with its CPU time. */
#ifndef BPFPROF_CHILD_H
#define BPFPROF_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

struct child {
	pid_t pid;
	int go_fd;  /* write a byte: the child may exec */
	int err_fd; /* exec errno, or EOF when exec succeeded */
	bool exited;
	int status;   /* as from wait() */
	double cpu_s; /* user + system CPU of the command and its waited-for children */
};

#define CHILD_INIT                                                                                 \
	{                                                                                          \
		.go_fd = -1, .err_fd = -1                                                          \
	}

/* Forks; the child waits before exec'ing cmd (argv, NULL-terminated). 0 or -errno. */
int child__spawn(struct child *ch, char **cmd);
/* Lets it exec; 0, or the exec's -errno (the child then exits 127). */
int child__start(struct child *ch);
/* Collects its exit status if it ended (block: wait for it). */
void child__reap(struct child *ch, bool block);
/*
 * Waits up to timeout_ms for the started command to stop (SIGSTOP: bpfprof
 * count stops it at its exec and its entry point to attach probes) and
 * consumes that stop; SIGCONT resumes it. 0 stopped, -ECHILD it exited
 * (reaped, as child__reap), -ETIMEDOUT.
 */
int child__wait_stopped(struct child *ch, int timeout_ms);
/* Not started: it exits 127 without exec'ing; started: SIGTERM. Then reaps it. */
void child__abort(struct child *ch);

#endif
