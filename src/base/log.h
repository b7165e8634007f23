/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * log.h - the one place that formats messages for the user (stderr).
 *
 * Errors are one line, "bpfprof: <what failed>: <why>", optionally followed by
 * a "HINT: <what to do>" line. Warnings can be rate-limited per call site so a
 * broken input seen a million times prints once (plus a count at exit).
 */
#ifndef BPFPROF_LOG_H
#define BPFPROF_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_QUIET = -1,
	LOG_ERROR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

void log_set_level(int level);
int log_level(void);

void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What the user should know even without -v (what was read or written): silenced by -q only. */
void p_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The message and hint a library function left in a struct errmsg (base/errmsg.h). */
struct errmsg;
void p_errmsg(const struct errmsg *em);

/*
 * A warning that prints at most once per `interval_s` seconds per call site;
 * suppressed repeats are counted and mentioned with the next one printed.
 */
struct ratelimit {
	double last;
	unsigned long suppressed;
};
void p_warn_rl(struct ratelimit *rl, double interval_s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The same rule without printing, for modules below session/ that report through
 * a callback: true at most once per `interval_s`; then *suppressed is how
 * many were held back since the last pass. Not thread-safe per rl.
 */
bool ratelimit__pass(struct ratelimit *rl, double interval_s, unsigned long *suppressed);

#endif
