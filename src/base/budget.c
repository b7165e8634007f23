// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* budget.c - time budgets for work on hostile input; see budget.h. */
#include "base/budget.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "base/util.h"

/* When the stop was asked for (CLOCK_MONOTONIC ns), 0: no stop. Written by a
 * signal handler: a lock-free atomic, so the store is async-signal-safe. */
static _Atomic uint64_t stop_ns;

static uint64_t clock_of(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void budget__start(struct budget *b, uint64_t cpu_ns)
{
	b->cpu_end_ns = clock_of(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
	b->countdown = BUDGET_STRIDE;
	b->err = 0;
}

bool budget__over_now(struct budget *b)
{
	uint64_t stop = atomic_load_explicit(&stop_ns, memory_order_relaxed);

	if (b->err)
		return true;
	b->countdown = BUDGET_STRIDE;
	if (stop && clock_of(CLOCK_MONOTONIC) >= stop + BUDGET_STOP_GRACE_NS)
		b->err = -ECANCELED;
	else if (clock_of(CLOCK_THREAD_CPUTIME_ID) >= b->cpu_end_ns)
		b->err = -ETIMEDOUT;
	return b->err != 0;
}

bool budget__over(struct budget *b)
{
	if (b->err)
		return true;
	if (--b->countdown)
		return false;
	return budget__over_now(b);
}

bool budget__spend(struct budget *b, uint64_t units)
{
	if (b->err)
		return true;
	if (units < b->countdown) {
		b->countdown -= (unsigned)units;
		return false;
	}
	return budget__over_now(b);
}

int budget__err(const struct budget *b)
{
	return b->err;
}

void budget__stop(void)
{
	uint64_t now = clock_of(CLOCK_MONOTONIC), none = 0;

	/* The first request counts: a repeated signal does not push it back. */
	atomic_compare_exchange_strong(&stop_ns, &none, now ? now : 1);
}

void budget__unstop(void)
{
	atomic_store(&stop_ns, 0);
}
