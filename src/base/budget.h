/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * budget.h - the time one piece of work on a hostile input may take, and a
 * process-wide "stop soon".
 *
 * Caps on bytes and items bound what a file can make the agent read; a
 * budget bounds what it can make the agent do with them (a slow path taken
 * on every item, a table made for the worst case of a search), so the main
 * loop keeps draining and obeys a stop request while a hostile file is being
 * read. Work on one input starts a budget and asks budget__over() between
 * items; once it says so the work gives up, and its caller refuses the input
 * - and remembers that, so a file costs its budget once.
 *
 * A budget counts the CPU time of the thread that started it, not wall time:
 * a large legitimate file on a busy host is not refused for the host's load.
 *
 * budget__stop() (async-signal-safe: the SIGINT/SIGTERM handler calls it)
 * ends every budget, running or to come, BUDGET_STOP_GRACE_NS of real time
 * after the request: the read in progress gives up within that, the last
 * drain's reads share what is left, and the agent exits promptly whatever it
 * was reading. An input cut short by a stop is not at fault: budget__err()
 * tells -ECANCELED (do not remember it) from -ETIMEDOUT (refuse it).
 *
 * budget__over() reads a clock only every BUDGET_STRIDE calls; ask it once
 * per item of a loop whose items cost at least ~50 ns (a tighter loop asks
 * once per batch of items), or budget__spend() with the item's weight when
 * items cost more the larger they are.
 */
#ifndef BPFPROF_BUDGET_H
#define BPFPROF_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#define BUDGET_STRIDE	     1024
#define BUDGET_STOP_GRACE_NS (2000ull * 1000 * 1000)

struct budget {
	uint64_t cpu_end_ns; /* thread CPU time at which it is spent */
	unsigned countdown;  /* calls to budget__over() before the next clock read */
	int err;	     /* 0, then -ETIMEDOUT (spent) or -ECANCELED (stop): sticky */
};

/* A budget of cpu_ns of this thread's CPU time, from now. */
void budget__start(struct budget *b, uint64_t cpu_ns);
/* Whether the work must give up (spent, or a stop's grace is over); cheap. */
bool budget__over(struct budget *b);
/* The same, reading the clocks now (between items that cost milliseconds). */
bool budget__over_now(struct budget *b);
/*
 * budget__over() for an item that costs `units` asks' worth of work (one
 * unit ~50 ns: a step whose cost grows with its input, such as libdw running
 * an entry's CFI instructions up to a pc): the clock is read once that much
 * has been spent since the last read, however the work is cut up.
 */
bool budget__spend(struct budget *b, uint64_t units);
/* Why it is over: 0 not over, -ETIMEDOUT spent, -ECANCELED stopped. */
int budget__err(const struct budget *b);

/* The process is stopping: every budget ends a grace period from now. */
void budget__stop(void);
/* Forgets a stop (tests). */
void budget__unstop(void);

#endif
