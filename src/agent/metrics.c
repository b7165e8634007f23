// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* metrics.c - Prometheus text for the agent's counters; see metrics.h. */
#include "agent/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/selfstat.h"
#include "base/util.h"

void metrics__init(struct metrics *m, uint64_t drain_period_ns)
{
	memset(m, 0, sizeof(*m));
	m->s.effective_hz = -1; /* not measured yet */
	pthread_mutex_init(&m->lock, NULL);
	m->started_ns = now_ns();
	m->drain_period_ns = drain_period_ns;
	selfstat__init(); /* now, while descriptors are plentiful */
}

void metrics__publish(struct metrics *m, const struct metrics_snapshot *s)
{
	pthread_mutex_lock(&m->lock);
	m->s = *s;
	pthread_mutex_unlock(&m->lock);
}

void metrics__get(struct metrics *m, struct metrics_snapshot *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->s;
	pthread_mutex_unlock(&m->lock);
	out->started_ns = m->started_ns;
	out->drain_period_ns = m->drain_period_ns;
}

uint64_t metrics__overdue_ns(const struct metrics_snapshot *s)
{
	return 2 * s->drain_period_ns + METRICS_DRAIN_GRACE_S * NS_PER_SEC;
}

bool metrics__healthy(const struct metrics_snapshot *s, uint64_t now, char *why, size_t size)
{
	uint64_t limit = metrics__overdue_ns(s);
	uint64_t since = s->last_drain_ns ? s->last_drain_ns : s->started_ns;
	uint64_t age = now > since ? now - since : 0;
	char rule[96];

	snprintf(rule, sizeof(rule), "overdue after %.0f s: 2 drain periods of %.3g s + %d s",
		 limit / NS_PER_SEC_F, s->drain_period_ns / NS_PER_SEC_F, METRICS_DRAIN_GRACE_S);
	if (s->last_drain_ns && age <= limit) {
		snprintf(why, size, "ok\n");
		return true;
	}
	if (s->last_drain_ns)
		snprintf(why, size, "stalled: no drain completed for %.0f s (%s)\n",
			 age / NS_PER_SEC_F, rule);
	else if (age > limit)
		snprintf(why, size, "stalled: no drain yet, started %.0f s ago (%s)\n",
			 age / NS_PER_SEC_F, rule);
	else
		snprintf(why, size, "not ready: no drain yet (started %.1f s ago)\n",
			 age / NS_PER_SEC_F);
	return false;
}

#define COUNTER(name, help, v)                                                                     \
	sbuf_printf(out,                                                                           \
		    "# HELP " name " " help "\n# TYPE " name " counter\n" name " %" PRIu64 "\n",   \
		    (uint64_t)(v))
#define GAUGE(name, help, fmt, v)                                                                  \
	sbuf_printf(out, "# HELP " name " " help "\n# TYPE " name " gauge\n" name " " fmt "\n", v)

/* One value of a labelled counter: NAME{KEY="label"} value. */
struct label_value {
	const char *label;
	uint64_t value;
};

static int counter_head(struct sbuf *out, const char *name, const char *help)
{
	return sbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
}

static int counter_value(struct sbuf *out, const char *name, const char *key, const char *label,
			 uint64_t value)
{
	return sbuf_printf(out, "%s{%s=\"%s\"} %" PRIu64 "\n", name, key, label, value);
}

/* A counter with one label: its HELP and TYPE, then a line per value, in order. */
static int labelled_counter(struct sbuf *out, const char *name, const char *help, const char *key,
			    const struct label_value *v, size_t n)
{
	int err = counter_head(out, name, help);

	for (size_t i = 0; i < n; i++)
		err |= counter_value(out, name, key, v[i].label, v[i].value);
	return err;
}

/* LABELLED_COUNTER(name, help, key, { "label", value }, ...) */
#define LABELLED_COUNTER(name, help, key, ...)                                                     \
	labelled_counter(out, name, help, key, (const struct label_value[]){ __VA_ARGS__ },        \
			 ARRAY_SIZE(((const struct label_value[]){ __VA_ARGS__ })))

/* The same of an array of n values, labels[i] naming values[i]. */
static int labelled_array(struct sbuf *out, const char *name, const char *help, const char *key,
			  const char *const *labels, const uint64_t *values, size_t n)
{
	int err = counter_head(out, name, help);

	for (size_t i = 0; i < n; i++)
		err |= counter_value(out, name, key, labels[i], values[i]);
	return err;
}

int metrics__render_alloc(const struct metrics_alloc *a, struct sbuf *out)
{
	static const char *const lost[METRICS_ALLOC_LOST_NR] = {
		[METRICS_ALLOC_LOST_RING_FULL] = "ring_full",
		[METRICS_ALLOC_LOST_LIVE_FULL] = "live_full",
		[METRICS_ALLOC_LOST_NO_STACK] = "no_stack",
		[METRICS_ALLOC_LOST_NO_THREAD] = "no_thread",
		[METRICS_ALLOC_LOST_NO_RETURN] = "no_return",
		[METRICS_ALLOC_LOST_MEMORY] = "memory",
	};
	int err = 0;

	err |= LABELLED_COUNTER(
		"bpfprof_alloc_calls_total",
		"Allocator calls the probes saw (alloc: the targets' allocations, free: their frees, other: calls of processes not profiled).",
		"kind", { "alloc", a->calls }, { "free", a->frees }, { "other", a->others });
	err |= LABELLED_COUNTER(
		"bpfprof_alloc_samples_total",
		"Sampled allocations recorded, by source (libc: the C library's allocator, go: the Go runtime's own samples).",
		"source", { "libc", a->samples_libc }, { "go", a->samples_go });
	err |= LABELLED_COUNTER("bpfprof_alloc_frees_matched_total",
				"Frees of sampled blocks, by source.", "source",
				{ "libc", a->freed_libc }, { "go", a->freed_go });
	err |= labelled_array(
		out, "bpfprof_alloc_lost_total",
		"What the allocator probes lost, by reason (ring_full, no_stack, no_return, memory: sampled allocations not recorded; live_full: recorded, not followed in use; no_thread: calls not counted).",
		"reason", lost, a->lost, METRICS_ALLOC_LOST_NR);
	err |= GAUGE("bpfprof_alloc_live_blocks",
		     "Sampled blocks in use at the last walk of the live table.", "%" PRIu64,
		     a->live_blocks);
	err |= GAUGE("bpfprof_alloc_inuse_bytes",
		     "Estimated bytes in use at the last walk of the live table.", "%" PRIu64,
		     a->inuse_bytes);
	err |= GAUGE("bpfprof_alloc_probes", "Allocator probes attached.", "%" PRIu64, a->probes);
	err |= LABELLED_COUNTER(
		"bpfprof_alloc_live_dropped_total",
		"Live-table entries dropped, by reason (exited: their process ended).", "reason",
		{ "exited", a->live_dropped_exited });
	err |= COUNTER(
		"bpfprof_alloc_aggs_evicted_total",
		"Samples of the run-long totals folded into their process's [other stacks] for room.",
		a->aggs_evicted);
	err |= COUNTER("bpfprof_alloc_sbcl_unnamed_frames_total",
		       "SBCL frames written as [unnamed: SBCL]: past the time for naming "
		       "Lisp functions (500 ms a turn of the main loop, shared by the SBCL "
		       "processes).",
		       a->sbcl_unnamed_frames);
	if (a->go) {
		static const char *const go_lost[METRICS_GO_LOST_NR] = {
			[METRICS_GO_LOST_REFUSED] = "refused",
			[METRICS_GO_LOST_TABLES_FULL] = "tables_full",
			[METRICS_GO_LOST_EXITED] = "exited",
		};

		err |= labelled_array(
			out, "bpfprof_alloc_go_samples_lost_total",
			"Go's sampled allocations not counted, by reason (refused: their bucket forged or unreadable; tables_full: their bucket not kept, the bucket tables or a process's share of them full; exited: their bucket first seen once its process had exited).",
			"reason", go_lost, a->go_lost, METRICS_GO_LOST_NR);
		err |= COUNTER(
			"bpfprof_alloc_go_samples_unnamed_total",
			"Go's sampled allocations counted without their stack ([no stack]): their bucket's stack past its process's, its cgroup's or all Go processes' share of the stack table.",
			a->go_unnamed);
		err |= LABELLED_COUNTER(
			"bpfprof_alloc_go_buckets_lost_total",
			"Go profile buckets not read whole, by reason (refused: not a memory-profile bucket, or unreadable; stack_share: kept without their stack, past their process's share of the stack table or all Go processes'; cgroup_share: the same, past their cgroup's share, -a and --cgroup).",
			"reason", { "refused", a->go_bkts_refused },
			{ "stack_share", a->go_bkts_unnamed },
			{ "cgroup_share", a->go_bkts_cgroup });
		err |= COUNTER(
			"bpfprof_alloc_go_reads_failed_total",
			"Reads of a Go bucket or of a polled bucket list's head that failed (the last values kept).",
			a->go_read_fails);
		err |= COUNTER(
			"bpfprof_alloc_go_reads_skipped_total",
			"Reads of Go buckets' in-use counts not tried: a process's batch stopped after 64 failed pieces (the last values kept; its next batch starts at the first one not tried).",
			a->go_reads_skipped);
		err |= COUNTER(
			"bpfprof_alloc_go_list_cap_total",
			"Walks of a polled bucket list stopped at its process's cap on buckets (its newer buckets not counted).",
			a->go_list_over);
		err |= LABELLED_COUNTER(
			"bpfprof_alloc_go_processes_lost_total",
			"Polled Go processes whose last allocations were lost, by reason (ended: between two polls; other_image: their pid went to another image, exec or reuse).",
			"reason", { "ended", a->go_poll_ended }, { "other_image", a->go_other });
		err |= GAUGE("bpfprof_alloc_go_buckets", "Go profile buckets kept now.", "%" PRIu64,
			     a->go_buckets);
		err |= GAUGE("bpfprof_alloc_go_stacks",
			     "Stacks of the stack table Go's buckets hold now.", "%" PRIu64,
			     a->go_stacks);
		err |= GAUGE("bpfprof_alloc_go_stacks_max",
			     "Stacks Go's buckets may hold: all Go processes together.", "%" PRIu64,
			     a->go_stacks_max);
		err |= GAUGE("bpfprof_alloc_go_stacks_process_max",
			     "Stacks one Go process's buckets may hold.", "%" PRIu64,
			     a->go_stacks_proc);
		if (a->go_stacks_cgroup)
			err |= GAUGE(
				"bpfprof_alloc_go_stacks_cgroup_max",
				"Stacks one cgroup's Go buckets may hold together (-a, --cgroup; "
				"the root cgroup's: no such cap).",
				"%" PRIu64, a->go_stacks_cgroup);
	}
	if (a->all) {
		err |= GAUGE("bpfprof_alloc_files_probed",
			     "Files whose allocator functions are probed (-a, --cgroup).",
			     "%" PRIu64, a->files_probed);
		err |= GAUGE("bpfprof_alloc_files_probed_max",
			     "Files probed at most (files that define no allocator do not count).",
			     "%" PRIu64, a->files_probed_max);
		err |= COUNTER(
			"bpfprof_alloc_files_not_probed_total",
			"Files that define the allocator not probed: past bpfprof_alloc_files_probed_max, past one cgroup's share of it (a quarter) for files first mapped by its processes, or while file descriptors were short (their processes' allocations are missing).",
			a->files_not_probed);
		err |= COUNTER(
			"bpfprof_alloc_files_not_looked_total",
			"Times a newly mapped file was not looked at, past the cap on files looked at (a file counts again at each look, every 10 s).",
			a->files_not_looked);
	}
	if (!a->guard)
		return err ? -ENOMEM : 0;
	err |= GAUGE("bpfprof_alloc_guard_engaged",
		     "1 once the calls went over --alloc-budget (the probes are duty-cycled).",
		     "%d", a->guard_engaged ? 1 : 0);
	err |= GAUGE("bpfprof_alloc_guard_duty", "Share of each guard window the probes are in.",
		     "%.3f", a->guard_duty);
	err |= GAUGE("bpfprof_alloc_guard_scale",
		     "What the last interval's estimates were multiplied by (time / time on).",
		     "%.3f", a->guard_scale);
	err |= GAUGE("bpfprof_alloc_guard_calls_per_second",
		     "Allocator calls per second of the last window on.", "%.0f", a->guard_rate);
	err |= COUNTER("bpfprof_alloc_guard_windows_total", "Guard windows since it engaged.",
		       a->guard_windows);
	err |= COUNTER("bpfprof_alloc_guard_toggles_total",
		       "Times the probes were taken off or put back.", a->guard_toggles);
	err |= sbuf_printf(out,
			   "# HELP bpfprof_alloc_probes_on_seconds_total Time the probes were in.\n"
			   "# TYPE bpfprof_alloc_probes_on_seconds_total counter\n"
			   "bpfprof_alloc_probes_on_seconds_total %.6f\n",
			   a->probes_on_ns / NS_PER_SEC_F);
	err |= sbuf_printf(
		out,
		"# HELP bpfprof_alloc_guard_switch_seconds_total Time spent taking the probes off and putting them back.\n"
		"# TYPE bpfprof_alloc_guard_switch_seconds_total counter\n"
		"bpfprof_alloc_guard_switch_seconds_total{dir=\"off\"} %.6f\n"
		"bpfprof_alloc_guard_switch_seconds_total{dir=\"on\"} %.6f\n",
		a->switch_ns[0] / NS_PER_SEC_F, a->switch_ns[1] / NS_PER_SEC_F);
	return err ? -ENOMEM : 0;
}

int metrics__render(const struct metrics_snapshot *s, uint64_t now, struct sbuf *out)
{
	char why[160];
	long long rss;
	long fds;
	int err = 0;

	err |= COUNTER("bpfprof_samples_total", "Samples taken (counted or lost).", s->samples);
	err |= LABELLED_COUNTER(
		"bpfprof_lost_samples_total", "Samples the kernel could not count, by reason.",
		"reason", { "stack_map_full", s->lost_stacks_full },
		{ "count_map_full", s->lost_counts_full },
		{ "stack_store_failed", s->lost_stack_err }, { "other", s->lost_other },
		{ "throttled", s->lost_throttled }, { "timer_late", s->lost_timer_late });
	/* Measured every 15 s (the first after a second): left out until then. */
	if (s->effective_hz >= 0)
		err |= GAUGE("bpfprof_effective_sample_frequency_hertz",
			     "Samples per busy CPU-second the kernel took, between the last two "
			     "measurements (below the asked frequency when throttled or late).",
			     "%.1f", s->effective_hz);
	err |= COUNTER("bpfprof_idle_samples_total",
		       "Samples of idle CPUs (excluded unless --include-idle).", s->idle);
	err |= COUNTER("bpfprof_filtered_samples_total", "Samples of tasks outside the targets.",
		       s->filtered);
	err |= COUNTER("bpfprof_user_stack_errors_total",
		       "Samples kept without a readable user stack.", s->ustack_errors);
	err |= COUNTER("bpfprof_process_notices_lost_total",
		       "New-process notices dropped (ring buffer full).", s->notices_lost);
	err |= COUNTER(
		"bpfprof_unwind_fp_fallbacks_total",
		"Frames whose unwind table row the stack walker cannot follow, walked on with "
		"frame pointers (--unwind auto).",
		s->unwind_fp_fallbacks);
	err |= COUNTER("bpfprof_jvm_frames_total",
		       "Frames of HotSpot JVMs stepped through their code cache (JIT-compiled, "
		       "interpreted, stubs).",
		       s->jvm_frames);
	err |= COUNTER("bpfprof_jvm_leaf_guesses_total",
		       "JVM leaf frames whose return address was taken from the stack's top "
		       "(a prologue, a frameless stub).",
		       s->jvm_leaf_guesses);
	err |= LABELLED_COUNTER(
		"bpfprof_jvm_walk_ends_total",
		"Walks through a JVM's frames by how they left them (call_stub: handed back to the native walker; the others end the stack there).",
		"reason", { "call_stub", s->jvm_ends[0] }, { "no_blob", s->jvm_ends[1] },
		{ "bad_frame", s->jvm_ends[2] }, { "return_address", s->jvm_ends[3] },
		{ "interpreter_frame", s->jvm_ends[4] }, { "unreadable", s->jvm_ends[5] },
		{ "read_budget", s->jvm_ends[6] });
	err |= LABELLED_COUNTER(
		"bpfprof_python_thread_states_total",
		"Samples in Python's interpreter loop, by where their thread's state was found (not_found: shown without their Python frames).",
		"found", { "cpu_cache", s->py_ts_cached }, { "thread_data", s->py_ts_tls },
		{ "thread_list", s->py_ts_search }, { "not_found", s->py_ts_miss });
	if (s->offcpu) {
		err |= LABELLED_COUNTER(
			"bpfprof_offcpu_waits_total",
			"Waits of target threads (--off-cpu), by what became of them.", "result",
			{ "counted", s->offcpu_counted }, { "shorter_than_min", s->offcpu_short },
			{ "lost", s->offcpu_lost }, { "evicted", s->offcpu_evicted });
		err |= sbuf_printf(
			out,
			"# HELP bpfprof_offcpu_seconds_total Off-CPU time counted in profiles.\n"
			"# TYPE bpfprof_offcpu_seconds_total counter\n"
			"bpfprof_offcpu_seconds_total %.6f\n",
			s->offcpu_counted_ns / NS_PER_SEC_F);
		err |= GAUGE("bpfprof_offcpu_blocked_threads", "Target threads blocked now.",
			     "%" PRIu64, s->offcpu_blocked_now);
	}
	if (s->alloc && metrics__render_alloc(&s->am, out))
		err = 1;
	err |= COUNTER("bpfprof_drains_total", "Kernel map drains.", s->drains);
	err |= GAUGE("bpfprof_drain_duration_seconds", "Duration of the last drain.", "%.6f",
		     s->drain_ns_last / NS_PER_SEC_F);
	err |= sbuf_printf(out,
			   "# HELP bpfprof_drain_seconds_total Time spent draining.\n"
			   "# TYPE bpfprof_drain_seconds_total counter\n"
			   "bpfprof_drain_seconds_total %.6f\n",
			   s->drain_ns_total / NS_PER_SEC_F);
	err |= GAUGE("bpfprof_last_drain_timestamp_seconds", "Unix time of the last drain.",
		     "%" PRIu64, s->last_drain_unix);
	/* Left out before the first drain: there is no such age (bpfprof_healthy is 0). */
	if (s->last_drain_ns)
		err |= GAUGE("bpfprof_last_drain_age_seconds",
			     "Seconds since the last drain completed.", "%.3f",
			     (now > s->last_drain_ns ? now - s->last_drain_ns : 0) / NS_PER_SEC_F);
	err |= GAUGE("bpfprof_healthy",
		     "1 if /healthz says ok: a drain completed, and none is overdue.", "%d",
		     metrics__healthy(s, now, why, sizeof(why)) ? 1 : 0);
	err |= COUNTER("bpfprof_intervals_total", "Intervals completed.", s->intervals);
	err |= COUNTER("bpfprof_profiles_written_total",
		       "Interval profiles written to --output-dir.", s->files_written);
	err |= COUNTER("bpfprof_profile_write_errors_total", "Failed interval profile writes.",
		       s->file_errors);
	err |= COUNTER("bpfprof_profiles_pruned_total", "Profiles removed by retention.",
		       s->files_pruned);
	err |= GAUGE("bpfprof_store_files", "Profiles kept in --output-dir.", "%" PRIu64,
		     s->files_kept);
	err |= GAUGE("bpfprof_store_bytes", "Bytes of profiles kept in --output-dir.", "%" PRIu64,
		     s->store_bytes);
	err |= COUNTER("bpfprof_push_sent_total", "Profiles accepted by the push server.",
		       s->push_sent);
	err |= COUNTER("bpfprof_push_failed_total", "Push attempts that failed.", s->push_failed);
	err |= COUNTER("bpfprof_push_responses_too_large_total",
		       "Push attempts that failed because the server's answer was over a size cap.",
		       s->push_too_large);
	err |= COUNTER("bpfprof_push_dropped_total", "Profiles dropped (queue full or rejected).",
		       s->push_dropped);
	err |= GAUGE("bpfprof_push_queue_length", "Profiles waiting to be pushed.", "%" PRIu64,
		     s->push_queued);
	err |= GAUGE("bpfprof_symbolizer_processes", "Processes in the symbol cache.", "%" PRIu64,
		     s->procs_cached);
	err |= GAUGE("bpfprof_symbolizer_files", "Files in the symbol cache.", "%" PRIu64,
		     s->files_cached);
	err |= COUNTER("bpfprof_debuginfod_fetched_total",
		       "Debug files fetched from debuginfod servers and cached.", s->dbgd_fetched);
	err |= COUNTER("bpfprof_debuginfod_cache_hits_total",
		       "Debug files found in the debuginfod cache.", s->dbgd_cache_hits);
	err |= COUNTER("bpfprof_debuginfod_not_found_total",
		       "Build ids no debuginfod server has a debug file for.", s->dbgd_not_found);
	err |= COUNTER(
		"bpfprof_debuginfod_failed_total",
		"Debuginfod transfers that failed (connection, timeout, HTTP error, size cap).",
		s->dbgd_failed);
	err |= COUNTER("bpfprof_debuginfod_rejected_total",
		       "Files from debuginfod servers refused (not ELF, another build id).",
		       s->dbgd_rejected);
	err |= GAUGE("bpfprof_debuginfod_pending", "Debug files being fetched or queued.",
		     "%" PRIu64, s->dbgd_pending);
	err |= GAUGE("bpfprof_label_cache_entries", "Processes in the label cache.", "%" PRIu64,
		     s->labels_cached);
	err |= GAUGE("bpfprof_sample_frequency_hertz", "Sampling frequency.", "%u", s->freq);
	/* Read through descriptors kept since start: honest when none are left.
	 * A figure that cannot be had is left out, never reported as 0. */
	rss = selfstat__rss_bytes();
	fds = selfstat__open_fds();
	if (rss >= 0)
		err |= GAUGE("bpfprof_resident_memory_bytes", "Resident set size of the agent.",
			     "%lld", rss);
	if (fds >= 0)
		err |= GAUGE("bpfprof_open_fds", "Open file descriptors of the agent.", "%ld", fds);
	err |= GAUGE("bpfprof_max_fds", "The agent's file descriptor limit (RLIMIT_NOFILE).",
		     "%" PRIu64, selfstat__fd_limit());
	return err ? -ENOMEM : 0;
}
