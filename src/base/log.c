// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* log.c - stderr messages for the user; see log.h. */
#include "base/log.h"

#include "base/errmsg.h"
#include "base/text.h"
#include "base/util.h"

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
	char line[4096];
	int n, m;

	if (level > cur_level)
		return;
	/* One write per line: the HTTP and push threads warn too. */
	n = snprintf(line, sizeof(line), "%s", prefix);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	n += m > 0 ? m : 0;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n] = '\0';
	/* Messages quote paths, names and lines the profiled processes wrote:
	 * what a terminal would obey is '?' (text.h). */
	n = (int)text__clean(line, true);
	line[n++] = '\n';
	line[n] = '\0';
	fputs(line, stderr);
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
DEFINE_LOGGER(p_note, LOG_WARN, "bpfprof: ")
DEFINE_LOGGER(p_debug, LOG_DEBUG, "bpfprof: debug: ")

void p_errmsg(const struct errmsg *em)
{
	p_err("%s", em->msg[0] ? em->msg : "failed");
	if (em->hint[0])
		p_hint("%s", em->hint);
}

bool ratelimit__pass(struct ratelimit *rl, double interval_s, unsigned long *suppressed)
{
	struct timespec ts;
	double now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec + ts.tv_nsec / NS_PER_SEC_F;
	if (rl->last != 0 && now - rl->last < interval_s) {
		rl->suppressed++;
		return false;
	}
	rl->last = now;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}

void p_warn_rl(struct ratelimit *rl, double interval_s, const char *fmt, ...)
{
	unsigned long suppressed;
	va_list ap;

	if (!ratelimit__pass(rl, interval_s, &suppressed))
		return;
	va_start(ap, fmt);
	vlog(LOG_WARN, "bpfprof: warning: ", fmt, ap);
	va_end(ap);
	if (suppressed && cur_level >= LOG_WARN)
		fprintf(stderr, "bpfprof: (%lu similar warnings suppressed)\n", suppressed);
}
