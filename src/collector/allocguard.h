/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * allocguard.h - the guard of "bpfprof --alloc -a / --cgroup": the C
 * library's allocator probed in every process traps every call on the host,
 * so the calls per second (across CPUs) are held to a budget by taking the
 * probes off and putting them back (a duty cycle), and the estimates are
 * scaled by the time they were on.
 *
 * A pure state machine, fed the time and the count of calls the probes saw
 * (counted only while they are on) each tick of the drain loop; it says
 * when to take the probes off or put them back. Under the budget, nothing
 * happens. The first tick over it engages the guard for the rest of the
 * run: windows of ALLOCGUARD_WINDOW_NS, on for duty x window where duty =
 * budget / (the last on-window's rate) within [ALLOCGUARD_MIN_DUTY, 1],
 * off for the rest of the window times a random factor in [0.5, 1.5) (a
 * program periodic in the window does not alias with it; the mean keeps
 * the duty). A window on is at least ALLOCGUARD_MIN_ON_NS: below that the
 * window stretches (the duty kept), so there is at most one off/on pair a
 * second; taking uprobes off and on walks every process mapping the file.
 *
 * The scale (time / time on) assumes the calls of the windows off were like
 * those of the windows on: biased for a bursty program (a burst inside a
 * window off is missed, one inside a window on multiplied); a process that
 * lived only inside windows off is absent.
 */
#ifndef BPFPROF_COLLECTOR_ALLOCGUARD_H
#define BPFPROF_COLLECTOR_ALLOCGUARD_H

#include <stdbool.h>
#include <stdint.h>

#define ALLOCGUARD_WINDOW_NS   1000000000ull
#define ALLOCGUARD_MIN_ON_NS   100000000ull
#define ALLOCGUARD_MIN_TICK_NS 50000000ull /* a shorter first tick measures nothing */
#define ALLOCGUARD_MIN_DUTY    0.05

enum allocguard_act {
	ALLOCGUARD_NONE,
	ALLOCGUARD_OFF, /* take the probes off (the program switched off first) */
	ALLOCGUARD_ON,	/* put them back, then allocguard__on_at(the time they are in) */
};

struct allocguard {
	uint64_t budget;       /* calls per second across CPUs; 0: no guard */
	bool on;	       /* the probes are in */
	bool engaged;	       /* the calls went over the budget (for the rest of the run) */
	bool still_over;       /* at ALLOCGUARD_MIN_DUTY, windows on still over the budget */
	double duty;	       /* share of each window on (1 until engaged) */
	uint64_t start_ns;     /* the guard's start */
	uint64_t since_ns;     /* the current phase's start (its edge) */
	uint64_t until_ns;     /* engaged: the current phase's planned end */
	uint64_t last_ns;      /* the last tick */
	uint64_t last_calls;   /* calls at the last tick */
	uint64_t phase_calls;  /* calls at the start of the phase on */
	uint64_t on_ns;	       /* time on, of the phases ended */
	uint64_t engaged_ns;   /* when it engaged */
	uint64_t toggles;      /* switches off and on */
	uint64_t windows;      /* windows on since it engaged */
	double rate, max_rate; /* calls per second of the last and busiest window (or tick) on */
};

void allocguard__init(struct allocguard *g, uint64_t budget, uint64_t now_ns, uint64_t calls);
/* A tick: calls counted so far (they only grow), rnd 32 random bits. What to do. */
enum allocguard_act allocguard__tick(struct allocguard *g, uint64_t now_ns, uint64_t calls,
				     uint32_t rnd);
/* After ALLOCGUARD_ON: the probes are in (and counting) since t_ns. */
void allocguard__on_at(struct allocguard *g, uint64_t t_ns);
/* Engaged: when the current phase ends (the next tick should come then); else 0. */
uint64_t allocguard__deadline(const struct allocguard *g);
/* Time on from the start to now_ns. */
uint64_t allocguard__on_ns(const struct allocguard *g, uint64_t now_ns);
/* What the counts seen from the start to now_ns are multiplied by: time / time on (>= 1). */
double allocguard__scale(const struct allocguard *g, uint64_t now_ns);

#endif
