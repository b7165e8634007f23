/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * record.h - the run engine that "bpfprof record", top and annotate drive
 * (src/cmd/), in three files:
 *
 *   record.c          the run: checks, open, the main loop, stop, one-shot output
 *   record_samples.c  drained samples and process notices into the profile
 *   record_sinks.c    continuous mode: the CPU collector's intervals and metrics
 *   sinks.c           continuous mode's sinks, for any engine: stores, push,
 *                     HTTP, metrics (no collector: an engine emits a finished
 *                     profile and its kind)
 *
 * Everything here is owned by one struct record that lives on the command's
 * stack; the functions print what went wrong and the run's progress and
 * summary (src/session/ prints to the user, as src/cmd/ does) and return 0
 * or the process exit status (1 failure, 2 usage).
 */
#ifndef BPFPROF_RECORD_H
#define BPFPROF_RECORD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/metrics.h"
#include "base/log.h"
#include "collector/collector.h"
#include "proc/child.h"
#include "session/options.h"
#include "sym/kbuildid.h"
#include "sym/symbolizer.h"

struct profile;
struct symbolizer;
struct labels;
struct unwinder;
struct ptab;
struct store;
struct pusher;
struct live;
struct httpd;
struct debuginfod;
struct allocrun;

/* Turning drained samples into the profile (record_samples.c). */
struct record_ctx {
	struct profile *prof; /* the whole run, or the current interval */
	bool last_drain;      /* after detach: the symbolizer may take its time */
	struct ptab *pt;      /* the process table: shared by the symbolizer and the unwinder */
	struct symbolizer *sym;
	struct debuginfod *dbgd; /* debug files from servers, or NULL */
	struct labels *labels;
	char kernel_build_id[BUILDID_HEX_MAX]; /* "" if unknown */
	struct unwinder *uw;		       /* NULL with --unwind fp */
	const char *unwind_name;	       /* the mode in effect, for the profile's metadata */
	const struct options *o;
	uint64_t notices;
	uint64_t frames; /* symbolized */
	/* Keys already symbolized into prof: kernel key -> sample index (record_samples.c). */
	struct htab *memo;
	uint64_t memo_prof; /* profile__serial() of the profile it is for */
	uint64_t memo_gen;
	uint32_t memo_epoch;	  /* which memo a key's cookie (collector_sample) is of; from 1 */
	uint64_t memo_hits;	  /* drained keys that only added their count */
	uint64_t keys_symbolized; /* drained keys symbolized (not in the memo) */
};

/*
 * The kinds of profile the sinks take. Each has its own store in one
 * --output-dir, by extension: "bpfprof-T.pb.gz" (CPU), "bpfprof-T.heap.pb.gz"
 * (allocations, pprof only), disjoint listings and retention.
 */
enum sink_kind { SINK_CPU, SINK_HEAP, SINK_KINDS };
#define SINK_BIT(k) (1u << (k))

/* Continuous mode: where intervals go, and the bookkeeping of the current one. */
struct continuous {
	unsigned kinds;			 /* SINK_BIT()s of the kinds opened */
	const char *output_dir;		 /* for messages */
	struct store *store[SINK_KINDS]; /* --output-dir: one per kind opened */
	uint64_t emitted[SINK_KINDS];	 /* profiles handed to sinks__emit() */
	struct pusher *pusher;
	struct live *live;	/* --listen, CPU: /debug/pprof/profile */
	struct live *live_heap; /* --listen, --alloc: /debug/pprof/heap, /allocs */
	/*
	 * Set by the allocation engine's loop before sinks__open(): the heap
	 * live's finisher (agent/live.h, live_finish_fn), run on the loop's
	 * thread in sinks__heap_feed() when a request completes. NULL: a
	 * request gets only the allocations fed over its seconds.
	 */
	int (*heap_finish)(void *ctx, struct profile *acc, unsigned seconds);
	void *heap_ctx;
	struct httpd *httpd;
	struct metrics metrics;
	uint64_t start_mono, start_real;
	uint64_t lost_at_start;
	uint64_t offcpu_lost_at_start;
	uint64_t intervals;
	struct ratelimit write_rl;
	struct ratelimit throttle_rl;
	struct collector_stats throttle_at; /* at the last "not taken" warning */
	uint64_t not_taken_seen;	    /* the measurement last looked at (acct.at_ns) */
};

/* The status line on a terminal (record.c). */
struct status_line {
	bool on, shown;
	uint64_t next_ns;
};

/*
 * One sampling run. record, top and annotate go through the same phases, so
 * they target, load, symbolize and account the same way:
 *
 *   record__check   options against the machine (pids, CPUs, -F, privileges)
 *   record__setup   symbolizer, labels, kernel symbols, sinks, the command
 *   record__open    load and attach the program, start the unwinder, drop caps
 *   record__start   stamp the start, let the command go
 *   record__loop    drain every second until Ctrl-C, -d, the command's exit
 *                   or (-p) every target process's
 *   record__drain   notices, then the kernel's counts into rc.prof; sweep
 *   record__stop    stop sampling and drain what is left
 *   record__close   free everything (safe after any phase failed)
 *
 * Callers fill r->o (src/cmd/cli.c's cli__parse, or their own options with
 * cli__sampling_option) and run the phases in order; each prints its error
 * and returns 0 or the exit status. rc.prof may be swapped between drains
 * (top keeps one profile per second).
 */
struct record {
	struct options o;
	const struct writer *w;
	bool tty_report; /* stdout is a terminal and no -o or -f: the top functions */
	struct record_ctx rc;
	struct continuous ct;
	struct child ch;
	bool cmd_stopped; /* bpfprof ended the command (-d, a stop request): not its own exit */
	struct collector *col;
	struct status_line sl;
	/* -p: a pidfd per target (procfs__pidfd), -1 if none; the run stops
	 * when every one has exited (targets_gone), as perf record does. */
	int *target_fds;
	bool targets_gone;
	/* A stop request (Ctrl-C) came during the load, before "sampling ...":
	 * the command is not started, the run ends as soon as it can. */
	bool stopped_early;
	/* ... before the attach: no event was ever enabled (record__run only:
	 * top's loop polls the collector's ring, which the attach makes). */
	bool early_skips_attach, not_attached;
	bool *cpus; /* -C, NULL: all */
	int nr_cpus;
	int *cgroup_fds;
	uint64_t t_start, t_stop; /* CLOCK_MONOTONIC: sampling started, stopped */
	/* Start-up, for -v: cmd_record entered, kernel symbols, unwind tables. */
	uint64_t t_main, ksyms_ns, unwind_ns;
	/* Kernel symbols read on a thread (or in line) from record__open() to
	 * the first drain at the latest, installed in rc.sym then. */
	pthread_t ksyms_thread;
	bool ksyms_threaded, ksyms_pending;
	struct kernel_read ksyms;
	/* Process notices go here (NULL: record__on_proc_notice(&rc)); top
	 * hooks them to defer per-process work. */
	collector_proc_fn on_notice;
	void *notice_ctx;
	/* Tests (BPFPROF_TEST_DRAIN_STALL, record.c): drain stall_drain is held stall_ms. */
	uint64_t drains_begun, stall_drain, stall_ms;
	/* --alloc --on-cpu: the allocation engine beside the collector, sharing
	 * rc.pt and rc.sym (session/allocrun.h); started after the CPU program's
	 * attach, ticked every turn of the loop, stopped first in record__stop;
	 * NULL without --alloc. */
	struct allocrun *ar;
	/* --alloc --on-cpu --listen: when the heap requests are fed next (the
	 * engine's pace, not every turn: process notices can make turns many) */
	uint64_t heap_feed_due;
};

int record__check(struct record *r);
int record__setup(struct record *r);
int record__open(struct record *r);
int record__start(struct record *r);
int record__drain(struct record *r, uint64_t now);
/* Delivers the process notices waiting (up to timeout_ms for the first). */
int record__poll_notices(struct record *r, int timeout_ms);
/* A wait of timeout ms (from now, now_ns()) cut short to end at `at` (0 if past). */
int record__wait_until(int timeout, uint64_t at, uint64_t now);
/* ... and to end when the unwinder has work due (a starting Python to probe again). */
int record__timeout(const struct record *r, int timeout, uint64_t now);
/*
 * -p: whether every target process has exited (record's and top's loops
 * stop then); false while one may still run or has no pidfd.
 */
bool record__targets_exited(const struct record *r);
/* record and annotate's run: check, setup, open, start, loop and stop; 0 or the exit status. */
int record__run(struct record *r);
/* The end of a continuous run: the partial last interval, the summary. */
int record__finish_continuous(struct record *r);
/* The end of a one-shot run: the summary, then r->w writes the profile to -o. */
int record__write(struct record *r);
void record__close(struct record *r);

/* Collector callbacks: a process notice, a drained sample. */
void record__on_proc_notice(void *ctx, const struct bp_proc_event *e);
int record__on_sample(void *ctx, const struct collector_sample *s);
/* The drain's first pass: announces the user addresses (NULL: all announced). */
int record__want_sample(void *ctx, const struct collector_sample *s);
/* The key is in record__on_sample's memo: its stacks are not needed. */
bool record__known_sample(void *ctx, const struct collector_sample *s);
/*
 * The memo follows samples copied from one profile into another
 * (profile__copy_if's map, n entries): keys whose sample was copied stay
 * known in to (no symbolizing), the rest are forgotten.
 */
void record__memo_move(struct record_ctx *rc, const struct profile *from, const struct profile *to,
		       const int64_t *map, size_t n);
/* Stamps a profile with what it covers (and the kernel's build id). */
void record__fill_meta(struct profile *p, const struct record_ctx *rc, uint64_t start_real,
		       uint64_t duration_ns, uint64_t lost);
/* Samples the kernel dropped, every reason summed. */
uint64_t record__lost(const struct collector_stats *st);
/* -v: the symbolizer's two lines of statistics (names, symbol tables). */
void record__symbolizer_stats(const struct record_ctx *rc);
/* kernel.perf_event_max_sample_rate now (UINT64_MAX if unreadable). */
uint64_t record__max_sample_rate(void);
/* Why samples were not taken, as "N not taken (WHY)" says it. */
const char *record__not_taken_cause(const struct sampling_window *w);
/*
 * Warns when the kernel took fewer of the profile's samples than it should
 * have, beyond what the measurement may be off by (collector/sampling.h),
 * between stats `from` (NULL: the start) and `to`: how many, the rate
 * reached, why. True if it warned.
 */
bool record__warn_not_taken(const struct collector_stats *from, const struct collector_stats *to,
			    uint32_t freq);
/* --off-cpu: waits the kernel could not count, every reason summed. */
uint64_t record__offcpu_lost(const struct collector_stats *st);
/* --off-cpu: the summary line of the waits (stderr). */
void record__offcpu_summary(const struct collector_stats *st, const struct profile *prof,
			    uint64_t min_ns);

/*
 * The sinks (sinks.c), without a collector. Opens what the options ask for,
 * for the kinds of profile the run makes (sinks__kinds: the CPU's, or
 * --alloc's heap profiles, or both with --alloc --on-cpu); 0, or the exit
 * status after printing why.
 * --keep applies to each kind's store; --max-disk is shared equally.
 */
unsigned sinks__kinds(const struct options *o);
int sinks__open(struct continuous *ct, const struct options *o);
int sinks__open_kinds(struct continuous *ct, const struct options *o, unsigned kinds);
/* Sinks that wait for the next drain (a pending HTTP request) shorten the period. */
bool sinks__want_drain(const struct continuous *ct);
/*
 * The HTTP endpoint's live profile: *delta is a new profile for this drain
 * when requests wait (else NULL); hand it (or NULL, the clock's tick) to
 * sinks__live_feed() after the drain. 0 or -ENOMEM.
 */
int sinks__live_begin(struct continuous *ct, struct profile **delta);
void sinks__live_feed(struct continuous *ct, const struct profile *delta);
/*
 * --alloc's side of the HTTP endpoint (ct->live_heap). The number of heap
 * requests waiting (the engine then feeds every tick, and builds the tick's
 * allocations as a delta while one waits for seconds); the tick's delta
 * (NULL: none, the clock's tick) to them, completing the due ones through
 * ct->heap_finish.
 */
int sinks__heap_pending(const struct continuous *ct);
void sinks__heap_feed(struct continuous *ct, const struct profile *delta);
/*
 * A finished profile of that kind, covering [from_real, until_real)
 * (CLOCK_REALTIME ns): written to the kind's store (path, if given, gets the
 * file, "" if none) and queued for --push (as its kind). A sink failing
 * is warned (rate-limited) and counted, never returned. -EINVAL: a kind not
 * opened, or a profile not of its kind (meta.alloc_period set iff heap).
 */
int sinks__emit(struct continuous *ct, enum sink_kind kind, const struct profile *p,
		uint64_t from_real, uint64_t until_real, char *path, size_t size);
/*
 * Publishes m for /metrics after adding the sinks' figures (stores summed
 * over the kinds, push, intervals) and the run's shared caches (any NULL).
 */
void sinks__publish(struct continuous *ct, struct metrics_snapshot *m, struct symbolizer *sym,
		    struct debuginfod *dbgd, struct labels *labels);
/* For the status line: ", 3 profiles written, 2 pushed (1 failed, 0 dropped)". */
void sinks__status(struct continuous *ct, char *buf, size_t size);
/* At the end of a run: the last push, and what the sinks did (a line per store). */
void sinks__summary(struct continuous *ct, const struct options *o);
void sinks__close(struct continuous *ct);

/* The CPU collector's side (record_sinks.c). One drain, handed to the profile
 * and to waiting HTTP requests. 0 or -errno. */
int sinks__drain(struct continuous *ct, struct record_ctx *rc, struct collector *col);
/* Ends the current interval: stamps it, sinks__emit()s it, starts the next. */
int sinks__finish_interval(struct continuous *ct, struct record_ctx *rc, struct collector *col,
			   uint64_t now_mono);
/* The collector's counters (and ar's: --alloc --on-cpu; NULL: none) and the
 * sinks' figures to /metrics. */
void sinks__publish_metrics(struct continuous *ct, struct record_ctx *rc, struct collector *col,
			    struct allocrun *ar);

/*
 * The allocation engine's side (alloc_sinks.c), for --alloc alone and
 * beside the CPU collector. The heap live's finisher (ct->heap_finish, ctx
 * the engine): a request of N seconds gets the ticks' allocations fed over
 * them and the blocks in use now, one of 0 seconds the run's allocations
 * and the blocks in use. 0 or -errno.
 */
int sinks__heap_finish(void *ctx, struct profile *acc, unsigned seconds);
/*
 * The interval's heap profile (its allocations since the last edge, the
 * blocks in use now) taken from the engine and sinks__emit()ted as
 * SINK_HEAP; ct->intervals is the caller's to count. 0, or -ENOMEM: nothing
 * taken, the interval's allocations go into the next one.
 */
int sinks__heap_interval(struct continuous *ct, struct allocrun *ar);
/* Every turn of the loop: heap requests waiting get the tick's allocations
 * (the engine's tick set kept only while one waits). */
void sinks__heap_tick(struct continuous *ct, struct allocrun *ar);

#endif
