// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* log.c - stderr messages for the user; see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int cur_level = LOG_WARN;

void log_set_level(int level)
{
	cur_level = level;
}

int log_level(void)
{
	return cur_level;
}

static void vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
	if (level > cur_level)
		return;
	fprintf(stderr, "%s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#define DEFINE_LOGGER(fn, level, prefix)                                                           \
	void fn(const char *fmt, ...)                                                              \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		vlog(level, prefix, fmt, ap);                                                      \
		va_end(ap);                                                                        \
	}

DEFINE_LOGGER(p_err, LOG_ERROR, "bpfprof: ")
DEFINE_LOGGER(p_hint, LOG_ERROR, "HINT: ")
DEFINE_LOGGER(p_warn, LOG_WARN, "bpfprof: warning: ")
DEFINE_LOGGER(p_info, LOG_INFO, "bpfprof: ")
DEFINE_LOGGER(p_debug, LOG_DEBUG, "bpfprof: debug: ")

void p_warn_rl(struct ratelimit *rl, double interval_s, const char *fmt, ...)
{
	struct timespec ts;
	double now;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec + ts.tv_nsec / 1e9;
	if (rl->last != 0 && now - rl->last < interval_s) {
		rl->suppressed++;
		return;
	}
	rl->last = now;
	va_start(ap, fmt);
	vlog(LOG_WARN, "bpfprof: warning: ", fmt, ap);
	va_end(ap);
	if (rl->suppressed && cur_level >= LOG_WARN)
		fprintf(stderr, "bpfprof: (%lu similar warnings suppressed)\n", rl->suppressed);
	rl->suppressed = 0;
}
