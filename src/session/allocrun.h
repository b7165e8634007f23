/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * allocrun.h - the --alloc engine: the allocator functions of the targets'
 * files found and probed (collector/alloc.h), -- COMMAND started and
 * stopped at its entry, the sampled allocations drained and weighed per
 * (process, stack), -a's rescans and guard (collector/allocguard.h), and
 * what was recorded taken into a profile with Go's four heap sample types.
 * The command (cmd/alloc.c) drives it: new, start, tick until a stop,
 * stop, take, and says what the counters (allocrun__stats) tell; in
 * continuous mode it takes each interval's profile (ALLOCRUN_INTERVAL)
 * while the run goes on.
 *
 * The process table and the symbolizer are the caller's (a combined CPU
 * and allocation run shares them); the engine holds the files it probed
 * open through the table until allocrun__free. Like the rest of session/,
 * it says the run's progress (probes attached, files skipped) itself.
 */
#ifndef BPFPROF_SESSION_ALLOCRUN_H
#define BPFPROF_SESSION_ALLOCRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/profile.h"
#include "base/stacktab.h"
#include "collector/alloc.h"
#include "collector/allocguard.h"
#include "proc/child.h"
#include "proc/ptab.h"
#include "session/options.h"
#include "sym/symbolizer.h"

#define ALLOCRUN_GO_DEFAULT_RATE (512 * 1024) /* runtime.MemProfileRate's default */
/* Distinct stacks kept (base/stacktab.h): as many as the live table's blocks,
 * whose stacks must stay known; ~1 KiB each at most, 300 B typical. */
#define ALLOCRUN_STACKS ALLOC_LIVE_MAX
/*
 * -a, --cgroup: the caps on files. At most ALLOCRUN_MAX_HELD files that
 * define the allocator are probed (each one's probes are taken off and put
 * back at every switch of the guard, ~50 ms a file), a quarter of them at
 * most first probed for the processes of one cgroup; files that define none
 * do not count. At most ALLOCRUN_MAX_LOOKED files are looked at (each one's
 * verdict is remembered).
 */
#define ALLOCRUN_MAX_HELD   64
#define ALLOCRUN_MAX_LOOKED 65536
/* SBCL's names read as its samples come: per drain (100 ms), at most so
 * many new (process, stack) and so much time naming; past them a sample's
 * Lisp frames are named when the profile is written
 * (allocrun_stats.sbcl_unnamed), for at most ALLOCRUN_SBCL_WRITE_MS of
 * naming a turn of the loop (its takes together: an interval's file,
 * /debug/pprof/heap), each of N SBCL processes 1/(N+1) of it, then named
 * SYM_LISP_UNNAMED (allocrun_stats.sbcl_write_unnamed) */
#define ALLOCRUN_SBCL_NAME_STACKS 4096
#define ALLOCRUN_SBCL_NAME_MS	  250
#define ALLOCRUN_SBCL_WRITE_MS	  500

struct allocrun;

/* Whether the allocations of process tgid not yet in a profile (since the
 * interval's edge, or the one-shot run's start) name their stacks with
 * tgid's mappings: a symbolizer keeping processes gone (keep_gone) keeps
 * those only. */
bool allocrun__references(const struct allocrun *r, uint32_t tgid);

/* The descriptors the probes of a run of options o may hold at most,
 * per_file a file's (collector/alloc.h allocprof__fds_per_file: 1 to 36). */
uint64_t allocrun__fds_need(const struct options *o, size_t per_file);

/* o (validated; kept), pt and sym (the caller's, outliving the run). NULL with errno. */
struct allocrun *allocrun__new(const struct options *o, struct ptab *pt, struct symbolizer *sym);
/*
 * The program opened, the targets found (-- COMMAND started, -p's
 * processes, -a's or --cgroup's scan), their files probed, the probes in
 * and the run's clock started. 0, or 1: said (a command started is ended
 * by allocrun__free).
 */
int allocrun__start(struct allocrun *ar);
/*
 * -- COMMAND beside another collector (--alloc --on-cpu): the program
 * opened and the command started in ch, the caller's, stopped at its entry
 * point; before allocrun__start, which probes it and leaves it stopped. The
 * caller sends SIGCONT, reaps and ends it. 0, or 1: said (the command ended).
 */
int allocrun__launch(struct allocrun *ar, struct child *ch);
/* One turn: the ring drained, the guard's tick, -a's rescan, the targets'
 * mappings refreshed when due. When the next turn is due (ns, now_ns()'s clock). */
uint64_t allocrun__tick(struct allocrun *ar, uint64_t now);
/*
 * -a, --cgroup with a guard, when the caller's turns may be long (a CPU
 * profile's drains beside, seconds on a loaded host; bpfprof's own
 * allocations trap into -a's probes too): the guard ticks on a thread of
 * its own from here, at its pace, whatever the caller does; allocrun__tick
 * does the rest (a tick while the thread switches the probes does nothing
 * and is due again in 10 ms). Until allocrun__stop. Meanwhile takes,
 * stats, metrics and the window note read the guard's state under its
 * lock (a copy; continuous mode takes intervals while it runs). 0 (nothing
 * to do too) or -errno.
 */
int allocrun__guard_thread(struct allocrun *ar);
/* The targets are all gone (never for -a, --cgroup). */
bool allocrun__targets_gone(struct allocrun *ar);
/* The run's end: the program paused (nothing more counted, sampled or
 * matched: allocprof__pause), what is left in the ring drained, the clock stopped. */
void allocrun__stop(struct allocrun *ar);

/*
 * What allocrun__take puts in. The engine keeps three sets of (process,
 * stack) values: cur (the allocations since the last interval's edge),
 * tick (since the last tick's edge; only while allocrun__want_ticks) and a
 * run-long total (a symbolized profile, each interval merged in; bounded:
 * once it holds ALLOC_TOTAL_MAX samples, an interval's sample it does not
 * have goes into its process's "[other stacks]" sample, counted in
 * /metrics' aggregates evicted; past 1024 such processes into one of pid 0).
 * alloc_* are estimates scaled by the guard over the set's own span (time
 * / time the probes were in, -a and --cgroup); inuse_* come from one walk
 * of the live table, never from a set: two takes never count a block twice.
 */
#define ALLOCRUN_ALLOC	  (1u << 0) /* cur's alloc_*, cur kept (one-shot: since the start) */
#define ALLOCRUN_INUSE	  (1u << 1) /* inuse_*: one walk of the live table (pins, sweep) */
#define ALLOCRUN_ALL	  (ALLOCRUN_ALLOC | ALLOCRUN_INUSE) /* the one-shot run's profile */
#define ALLOCRUN_INTERVAL (1u << 2) /* cur's alloc_* since the last edge; resets cur */
#define ALLOCRUN_TICK	  (1u << 3) /* tick's alloc_* (heap requests waiting); resets tick */
#define ALLOCRUN_TOTAL	  (1u << 4) /* a copy of the run-long profile's alloc_* */
/*
 * The samples (what: ALLOCRUN_*) into into (a new profile: the values of
 * the sets asked are summed), with its meta: the period; start_ns
 * (CLOCK_REALTIME) and duration_ns of the span (INTERVAL: since the last
 * interval's edge, TICK: the last tick's, else the run's start; to now,
 * or the stop); alloc_on_ns, the part of it the probes were in; lost
 * (ring full and userspace memory, grown over that span); the note
 * (allocrun__window_note; none for INUSE alone: a heap window's part).
 * INTERVAL merges cur into the total before it resets, and sets the scale
 * allocrun__metrics gives (so does ALLOC once the run stopped). 0 or
 * -errno (-ENOMEM: nothing committed; the sets, the total and the live
 * table's blocks of exited processes stay as they were, the next take
 * counts them).
 */
int allocrun__take(struct allocrun *ar, struct profile *into, unsigned what);
/*
 * -a, --cgroup: the note of a profile whose span m says (duration_ns, of
 * it alloc_on_ns with the probes in; a window's, the sums of its parts'):
 * the guard's (budget, on_fraction, scale, windows, toggles) once it
 * engaged, and files_not_probed=N once the cap on files probed was met.
 * m->note left as it is when there is nothing to say.
 */
void allocrun__window_note(struct allocrun *ar, struct profile_meta *m);
/* The scale of a span's alloc values: its time (t_from to t_to) over the
 * time the probes were in (allocguard__on_ns at each edge); >= 1, and 1
 * when they were in throughout, or never. */
double allocrun__span_scale(uint64_t t_from, uint64_t on_from, uint64_t t_to, uint64_t on_to);
/* Heap requests wait (on) or none does (off): the tick set is kept only
 * while on; off frees it. */
void allocrun__want_ticks(struct allocrun *ar, bool on);

/* What the run counted, for its summary. */
struct allocrun_stats {
	uint64_t c[ALLOC_C_NR]; /* the program's counters */
	uint64_t period;
	uint64_t oom;	    /* samples lost to memory in userspace */
	uint64_t t0, t1;    /* the run's start and stop (now_ns) */
	bool all;	    /* -a, --cgroup */
	size_t nr_go;	    /* Go processes probed during the run (exited ones too) */
	bool go_off_warned; /* one of them was said not to sample */
	size_t nr_held;	    /* files probed */
	/* -a, --cgroup: the guard */
	struct allocguard g;
	uint64_t calls0; /* calls counted before the run (the probes going in) */
	uint64_t toggle_ns[2], toggle_max_ns, toggle_cpu_ns; /* [0] off, [1] on */
	double scale; /* of the last interval's alloc values (one-shot: the run's) */
	struct stacktab_stats stacks; /* the distinct stacks kept */
	uint64_t stack_unknown;	      /* live blocks whose stack was not known ([stack lost]) */
	/* -a, --cgroup: the caps on files */
	size_t max_held;      /* files probed at most (ALLOCRUN_MAX_HELD; tests: smaller) */
	uint64_t held_over;   /* files that define the allocator, not probed: cap, share, fds */
	uint64_t looked_over; /* times a new file was not looked at: past ALLOCRUN_MAX_LOOKED */
	/* Go's buckets (setprofilebucket's probe) */
	size_t go_buckets;	  /* kept now */
	uint64_t go_bkt_bad;	  /* samples of buckets refused (not a bucket, unreadable) */
	uint64_t go_bkt_over;	  /* samples of buckets not kept: userspace's table full */
	uint64_t go_bkt_gone;	  /* samples of new buckets seen once their process had exited */
	uint64_t go_bkt_reads;	  /* buckets read from the processes (first reads, in-use) */
	uint64_t go_bkt_read_ns;  /* the time those reads took */
	uint64_t go_polled;	  /* samples counted from polled buckets (runtime.mbuckets) */
	uint64_t go_poll_refused; /* polled buckets refused */
	uint32_t nr_sbcl;	  /* SBCL runtimes probed */
	uint64_t sbcl_unnamed;	  /* SBCL samples not named as they came: a drain's budget spent */
	uint64_t go_poll_ended;	  /* polled Go processes that ended between two polls */
	uint64_t go_other;	  /* Go processes whose pid went to another image (reused, exec) */
	size_t go_stacks;	  /* stacks Go's buckets hold now (their share of the table) */
	size_t go_stacks_max, go_stacks_proc; /* ... at most: all Go processes', one's */
	uint64_t go_stk_over;		      /* buckets kept without their stack: a share spent */
	uint64_t go_unnamed;		      /* samples counted without their stack */
	uint64_t go_bkts_refused;    /* buckets refused (not a bucket, unreadable), both paths */
	uint64_t go_read_fails;	     /* reads of bucket records or a polled list's head failed */
	uint64_t go_list_over;	     /* walks of a polled list stopped at its process's cap */
	uint64_t sbcl_write_unnamed; /* SBCL frames left unnamed by a profile's write: its budget */
	uint64_t go_cg_over;	     /* of go_stk_over: past their cgroup's share (-a, --cgroup) */
	size_t go_stacks_cgroup;     /* stacks one cgroup's Go buckets may hold; 0: no such share */
	uint64_t go_reads_skipped;   /* in-use reads not tried: a batch stopped at its failures */
};
void allocrun__stats(struct allocrun *ar, struct allocrun_stats *st);

struct metrics_alloc;
/* The run's counters, the last live walk's and the guard's, as /metrics
 * renders them (agent/metrics.h); m overwritten. */
void allocrun__metrics(struct allocrun *ar, struct metrics_alloc *m);

/* -- COMMAND: the command (its status once it exited); NULL without one. */
const struct child *allocrun__child(const struct allocrun *ar);

/* Ends a command started and not exited; the probes out, the files let go. NULL: nothing. */
void allocrun__free(struct allocrun *ar);

/*
 * The process-name table: each process's command name, kept for the live
 * blocks of earlier intervals, with its start time (a pid reused is another
 * process). Its entries, and the start-time lookup it checks them with
 * (NULL: ptab__starttime; the unit test fakes it).
 */
size_t allocrun__nr_comms(const struct allocrun *ar);
void allocrun__set_starttime(struct allocrun *ar,
			     int (*fn)(struct ptab *t, uint32_t pid, uint64_t *ticks));

#endif
