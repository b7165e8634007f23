/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sampling.h - what the perf events took against what they should have
 * taken: the figures behind "N not taken", the throttling warning and the
 * effective rate in /metrics.
 *
 * Every event is a per-CPU cpu-clock event: the kernel fires it once per
 * period (1e9 / F ns, at least 10 us) of the CPU's time, and every firing
 * runs the program, which counts it once: as idle (the idle task), filtered
 * (not a target) or kept. A CPU's busy time is the event's running time less
 * what the CPU spent off: idle and iowait (/proc/stat, whole ticks: the
 * kernel measures it exactly, but says it in USER_HZ ticks), steal (the
 * hypervisor ran something else: the vCPU's timer could not fire), and the
 * periods the program saw the idle task in, if those are more - some kernels
 * fire the event on an idle CPU every period, some never (even one CPU of a
 * machine and not the other), and the idle task also runs outside what the
 * kernel counts as idle time (interrupts, entering and leaving idle). So
 * idle time is counted the way the program recognises it wherever the
 * program saw it. Busy periods minus busy samples (kept and filtered) is the
 * shortfall: samples the kernel did not take (throttled above
 * kernel.perf_event_max_sample_rate, or a timer that ran late).
 *
 * What the measurement may be off by, per CPU: a period at each end of the
 * window (a firing due, a sample in flight), a tick of /proc/stat for each
 * of idle, iowait and steal (each read is truncated to a tick), and the
 * rounding. A shortfall within that margin, or under 1% of the expected
 * samples (a busy machine's late timers), is not one: "not taken" is then
 * 0 and nothing is said. The profile's share of a shortfall (under -p,
 * -- COMMAND and --cgroup the kept samples are the targets' only) is the
 * kept samples' share of each CPU's busy samples, CPU by CPU; for -p, the
 * targets' own CPU time, F samples a second of it, less their samples - if
 * more than that count's chance variation (five standard deviations: where a
 * target's time lies on the events' grid of periods is chance) and its
 * ticks. Both only when the CPUs' shortfall is real.
 *
 * Pure arithmetic: no libbpf, no /proc (events.c reads them), so the
 * unit tests drive it with figures of their own.
 */
#ifndef BPFPROF_SAMPLING_H
#define BPFPROF_SAMPLING_H

#include <stdbool.h>
#include <stdint.h>

/* One CPU's event since it was attached (or over a window). */
struct sampling_cpu {
	uint64_t run_ns;    /* the event's running time */
	uint64_t off_ns;    /* idle + iowait time (/proc/stat) */
	uint64_t steal_ns;  /* steal time (/proc/stat) */
	uint64_t idle;	    /* program runs in the idle task (kept or not) */
	uint64_t busy;	    /* the other runs: filtered or kept */
	uint64_t kept_busy; /* ... of which kept */
	uint64_t kept;	    /* the profile's samples: kept_busy + idle ones kept (--include-idle) */
};

/* The sum over the CPUs. */
struct sampling_sum {
	uint64_t expected;  /* busy periods of the sampled CPUs */
	uint64_t taken;	    /* busy samples taken (kept or filtered) */
	uint64_t margin;    /* what expected - taken may be off by */
	uint64_t busy_ns;   /* busy time: taken * 1e9 / busy_ns is the rate reached */
	uint64_t kept;	    /* the profile's samples */
	uint64_t kept_busy; /* ... in busy time */
	/* The CPUs short of samples: their shortfalls, the profile's share of
	 * them, and those of CPUs that took no busy sample (share unknown). */
	double short_pos, kept_short, short_unknown;
};

/* period_ns: the events' period; tick_ns: /proc/stat's tick (1e9 / USER_HZ). */
void sampling__add(struct sampling_sum *s, const struct sampling_cpu *c, uint64_t period_ns,
		   uint64_t tick_ns);

/* A measurement since attach, as the collector keeps it (collector_stats). */
struct sampling_figures {
	uint64_t at_ns;	      /* when (monotonic); 0: not measured yet */
	uint64_t expected;    /* busy periods of the sampled CPUs */
	uint64_t taken;	      /* busy samples taken there (kept or filtered) */
	uint64_t margin;      /* what expected - taken may be off by */
	uint64_t busy_ns;     /* busy time of the sampled CPUs */
	uint64_t kept;	      /* the profile's samples */
	uint64_t kept_short;  /* its share of expected - taken, if any (an estimate) */
	uint64_t throttles;   /* times the kernel throttled an event (its records) */
	bool throttles_known; /* ... the events' records could be read */
	/* -p: the targets' CPU time (/proc/PID/stat), what their samples are
	 * held against instead of a share of the CPUs' shortfall: the samples
	 * taken right after a throttled event's restart are not a fair share. */
	bool kept_cpu_known;
	uint64_t kept_cpu_ns;
	uint64_t kept_cpu_margin; /* samples it may be off by (its ticks) */
	uint64_t period_ns;
};

void sampling__figures(struct sampling_figures *f, const struct sampling_sum *s);

/* What a window between two measurements says (a NULL: since attach). */
struct sampling_window {
	uint64_t expected, taken, shortfall, margin; /* the sampled CPUs' */
	bool real;		 /* a shortfall beyond the margin and at least 1% */
	uint64_t kept;		 /* the profile's samples taken ... */
	uint64_t kept_not_taken; /* ... and not taken (0 unless real): they add up */
	double rate_hz;		 /* busy samples per busy CPU-second: F unless real; < 0 unknown */
	bool throttled;		 /* the kernel said it throttled (else: the timer ran late) */
	bool throttles_known;	 /* ... it could say so */
};

void sampling__window(const struct sampling_figures *a, const struct sampling_figures *b,
		      struct sampling_window *w);

#endif
