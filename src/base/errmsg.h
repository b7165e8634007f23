/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * errmsg.h - the error convention of library code (everything below
 * src/session/ and src/cmd/).
 *
 *   - A function that acts returns 0 or a negative errno.
 *   - A constructor returns the object, or NULL with errno set.
 *   - A predicate returns bool.
 *
 * The errno says what kind of failure it was. For the few failures where the
 * user needs more - which line of a file is malformed, which CPU the kernel
 * refused, what to do about it - the function also fills a struct errmsg the
 * caller passes (NULL: not wanted). Library code never prints it; src/cmd/
 * and src/session/ print to the user (the run engine its progress and
 * summary, as record always has), errors with p_errmsg() (base/log.h).
 */
#ifndef BPFPROF_ERRMSG_H
#define BPFPROF_ERRMSG_H

#include <stdbool.h>

struct errmsg {
	int err;	/* the negative errno the function returned */
	char msg[256];	/* one line: what failed and why, no "error:" prefix */
	char hint[256]; /* what the user can do about it, or "" */
};

/*
 * Sets em's message (if em is not NULL), clears its hint, and returns err,
 * so a failure path reads `return errmsg_set(em, -EINVAL, "line %zu: ...", n);`.
 */
int errmsg_set(struct errmsg *em, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Empties em (may be NULL): nothing said yet. */
void errmsg_clear(struct errmsg *em);
/* Whether a message was set since em was last cleared (false for NULL). */
bool errmsg_said(const struct errmsg *em);
/* Adds the hint line to a message already set (em may be NULL). */
void errmsg_hint(struct errmsg *em, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
