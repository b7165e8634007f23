// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_metrics_alloc.c - the /metrics lines of --alloc (agent/metrics.h,
 * metrics__render_alloc): the allocator probes' counters, the live table,
 * -a's files and their caps (the real cap: a wrong constant fails the
 * golden text) and the guard's lines only when a guard runs;
 * metrics__render has them only in an --alloc run, each metric named once.
 */
#include "testutil.h"

#include "agent/metrics.h"
#include "base/util.h"
#include "session/allocrun.h"

static const struct metrics_alloc filled = {
	.calls = 1000000,
	.frees = 900000,
	.others = 12,
	.samples_libc = 2048,
	.samples_go = 64,
	.freed_libc = 1500,
	.freed_go = 40,
	.lost = { 1, 2, 3, 4, 5, 6 },
	.live_blocks = 548,
	.inuse_bytes = 287309824,
	.probes = 9,
	.live_dropped_exited = 17,
	.aggs_evicted = 3,
	.sbcl_unnamed_frames = 5,
	.guard = true,
	.guard_engaged = true,
	.guard_duty = 0.25,
	.guard_scale = 3.9876,
	.guard_rate = 812345.4,
	.guard_windows = 30,
	.guard_toggles = 61,
	.probes_on_ns = 7500000000ULL,
	.switch_ns = { 1250000, 2500000 },
	.all = true,
	.files_probed = 64,
	.files_probed_max = ALLOCRUN_MAX_HELD,
	.files_not_probed = 16,
	.files_not_looked = 2,
};

static const char golden[] =
	"# HELP bpfprof_alloc_calls_total Allocator calls the probes saw (alloc: the targets' allocations, free: their frees, other: calls of processes not profiled).\n"
	"# TYPE bpfprof_alloc_calls_total counter\n"
	"bpfprof_alloc_calls_total{kind=\"alloc\"} 1000000\n"
	"bpfprof_alloc_calls_total{kind=\"free\"} 900000\n"
	"bpfprof_alloc_calls_total{kind=\"other\"} 12\n"
	"# HELP bpfprof_alloc_samples_total Sampled allocations recorded, by source (libc: the C library's allocator, go: the Go runtime's own samples).\n"
	"# TYPE bpfprof_alloc_samples_total counter\n"
	"bpfprof_alloc_samples_total{source=\"libc\"} 2048\n"
	"bpfprof_alloc_samples_total{source=\"go\"} 64\n"
	"# HELP bpfprof_alloc_frees_matched_total Frees of sampled blocks, by source.\n"
	"# TYPE bpfprof_alloc_frees_matched_total counter\n"
	"bpfprof_alloc_frees_matched_total{source=\"libc\"} 1500\n"
	"bpfprof_alloc_frees_matched_total{source=\"go\"} 40\n"
	"# HELP bpfprof_alloc_lost_total What the allocator probes lost, by reason (ring_full, no_stack, no_return, memory: sampled allocations not recorded; live_full: recorded, not followed in use; no_thread: calls not counted).\n"
	"# TYPE bpfprof_alloc_lost_total counter\n"
	"bpfprof_alloc_lost_total{reason=\"ring_full\"} 1\n"
	"bpfprof_alloc_lost_total{reason=\"live_full\"} 2\n"
	"bpfprof_alloc_lost_total{reason=\"no_stack\"} 3\n"
	"bpfprof_alloc_lost_total{reason=\"no_thread\"} 4\n"
	"bpfprof_alloc_lost_total{reason=\"no_return\"} 5\n"
	"bpfprof_alloc_lost_total{reason=\"memory\"} 6\n"
	"# HELP bpfprof_alloc_live_blocks Sampled blocks in use at the last walk of the live table.\n"
	"# TYPE bpfprof_alloc_live_blocks gauge\n"
	"bpfprof_alloc_live_blocks 548\n"
	"# HELP bpfprof_alloc_inuse_bytes Estimated bytes in use at the last walk of the live table.\n"
	"# TYPE bpfprof_alloc_inuse_bytes gauge\n"
	"bpfprof_alloc_inuse_bytes 287309824\n"
	"# HELP bpfprof_alloc_probes Allocator probes attached.\n"
	"# TYPE bpfprof_alloc_probes gauge\n"
	"bpfprof_alloc_probes 9\n"
	"# HELP bpfprof_alloc_live_dropped_total Live-table entries dropped, by reason (exited: their process ended).\n"
	"# TYPE bpfprof_alloc_live_dropped_total counter\n"
	"bpfprof_alloc_live_dropped_total{reason=\"exited\"} 17\n"
	"# HELP bpfprof_alloc_aggs_evicted_total Samples of the run-long totals folded into their process's [other stacks] for room.\n"
	"# TYPE bpfprof_alloc_aggs_evicted_total counter\n"
	"bpfprof_alloc_aggs_evicted_total 3\n"
	"# HELP bpfprof_alloc_sbcl_unnamed_frames_total SBCL frames written as [unnamed: SBCL]: past the time for naming Lisp functions (500 ms a turn of the main loop, shared by the SBCL processes).\n"
	"# TYPE bpfprof_alloc_sbcl_unnamed_frames_total counter\n"
	"bpfprof_alloc_sbcl_unnamed_frames_total 5\n"
	"# HELP bpfprof_alloc_files_probed Files whose allocator functions are probed (-a, --cgroup).\n"
	"# TYPE bpfprof_alloc_files_probed gauge\n"
	"bpfprof_alloc_files_probed 64\n"
	"# HELP bpfprof_alloc_files_probed_max Files probed at most (files that define no allocator do not count).\n"
	"# TYPE bpfprof_alloc_files_probed_max gauge\n"
	"bpfprof_alloc_files_probed_max 64\n"
	"# HELP bpfprof_alloc_files_not_probed_total Files that define the allocator not probed: past bpfprof_alloc_files_probed_max, past one cgroup's share of it (a quarter) for files first mapped by its processes, or while file descriptors were short (their processes' allocations are missing).\n"
	"# TYPE bpfprof_alloc_files_not_probed_total counter\n"
	"bpfprof_alloc_files_not_probed_total 16\n"
	"# HELP bpfprof_alloc_files_not_looked_total Times a newly mapped file was not looked at, past the cap on files looked at (a file counts again at each look, every 10 s).\n"
	"# TYPE bpfprof_alloc_files_not_looked_total counter\n"
	"bpfprof_alloc_files_not_looked_total 2\n"
	"# HELP bpfprof_alloc_guard_engaged 1 once the calls went over --alloc-budget (the probes are duty-cycled).\n"
	"# TYPE bpfprof_alloc_guard_engaged gauge\n"
	"bpfprof_alloc_guard_engaged 1\n"
	"# HELP bpfprof_alloc_guard_duty Share of each guard window the probes are in.\n"
	"# TYPE bpfprof_alloc_guard_duty gauge\n"
	"bpfprof_alloc_guard_duty 0.250\n"
	"# HELP bpfprof_alloc_guard_scale What the last interval's estimates were multiplied by (time / time on).\n"
	"# TYPE bpfprof_alloc_guard_scale gauge\n"
	"bpfprof_alloc_guard_scale 3.988\n"
	"# HELP bpfprof_alloc_guard_calls_per_second Allocator calls per second of the last window on.\n"
	"# TYPE bpfprof_alloc_guard_calls_per_second gauge\n"
	"bpfprof_alloc_guard_calls_per_second 812345\n"
	"# HELP bpfprof_alloc_guard_windows_total Guard windows since it engaged.\n"
	"# TYPE bpfprof_alloc_guard_windows_total counter\n"
	"bpfprof_alloc_guard_windows_total 30\n"
	"# HELP bpfprof_alloc_guard_toggles_total Times the probes were taken off or put back.\n"
	"# TYPE bpfprof_alloc_guard_toggles_total counter\n"
	"bpfprof_alloc_guard_toggles_total 61\n"
	"# HELP bpfprof_alloc_probes_on_seconds_total Time the probes were in.\n"
	"# TYPE bpfprof_alloc_probes_on_seconds_total counter\n"
	"bpfprof_alloc_probes_on_seconds_total 7.500000\n"
	"# HELP bpfprof_alloc_guard_switch_seconds_total Time spent taking the probes off and putting them back.\n"
	"# TYPE bpfprof_alloc_guard_switch_seconds_total counter\n"
	"bpfprof_alloc_guard_switch_seconds_total{dir=\"off\"} 0.001250\n"
	"bpfprof_alloc_guard_switch_seconds_total{dir=\"on\"} 0.002500\n";

static void test_alloc_lines(void **state)
{
	struct sbuf sb = { 0 };

	(void)state;
	assert_int_equal(metrics__render_alloc(&filled, &sb), 0);
	assert_string_equal(sb.buf, golden);
	sbuf_free(&sb);
}

/* -p or a command (no budget): no guard, no guard lines. */
static void test_no_guard_no_guard_lines(void **state)
{
	struct metrics_alloc a = filled;
	struct sbuf sb = { 0 };

	(void)state;
	a.guard = false;
	assert_int_equal(metrics__render_alloc(&a, &sb), 0);
	assert_null(strstr(sb.buf, "guard"));
	assert_null(strstr(sb.buf, "probes_on_seconds"));
	assert_non_null(strstr(sb.buf, "\nbpfprof_alloc_aggs_evicted_total 3\n"));
	assert_int_equal(strncmp(sb.buf, golden, sb.len), 0); /* the same lines up to there */
	sbuf_free(&sb);
}

/* -p or a command (no -a, --cgroup): no caps on files, no file lines. */
static void test_no_scan_no_file_lines(void **state)
{
	struct metrics_alloc a = filled;
	struct sbuf sb = { 0 };

	(void)state;
	a.all = false;
	a.guard = false;
	assert_int_equal(metrics__render_alloc(&a, &sb), 0);
	assert_null(strstr(sb.buf, "bpfprof_alloc_files_"));
	assert_true(sb.len > 0 && !strncmp(sb.buf, golden, sb.len));
	assert_non_null(strstr(sb.buf, "\nbpfprof_alloc_aggs_evicted_total 3\n"));
	sbuf_free(&sb);
}

/* Each metric's "# TYPE" line at most once in the page (cut into lines: text is changed). */
static void assert_types_once(char *text)
{
	const char *types[256];
	size_t n = 0;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "# TYPE ", 7))
			continue;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(types[i], line))
				fail_msg("twice: %s", line);
		assert_true(n < ARRAY_SIZE(types));
		types[n++] = line;
	}
}

/* In the whole page: only with --alloc; every metric's TYPE once. */
static void test_render_has_them_with_alloc_only(void **state)
{
	struct metrics_snapshot m = { .samples = 5, .freq = 99, .am = filled };
	struct sbuf sb = { 0 };

	(void)state;
	assert_int_equal(metrics__render(&m, 0, &sb), 0);
	assert_null(strstr(sb.buf, "bpfprof_alloc_"));
	sbuf_free(&sb);
	m.alloc = true;
	assert_int_equal(metrics__render(&m, 0, &sb), 0);
	assert_non_null(strstr(sb.buf, golden));
	assert_types_once(sb.buf);
	sbuf_free(&sb);
}

static const char *const go_want[] = {
	"\nbpfprof_alloc_go_samples_lost_total{reason=\"refused\"} 7\n",
	"\nbpfprof_alloc_go_samples_lost_total{reason=\"tables_full\"} 11802\n",
	"\nbpfprof_alloc_go_samples_lost_total{reason=\"exited\"} 3\n",
	"\nbpfprof_alloc_go_samples_unnamed_total 18446744073709551615\n",
	"\nbpfprof_alloc_go_buckets_lost_total{reason=\"refused\"} 2\n",
	"\nbpfprof_alloc_go_buckets_lost_total{reason=\"stack_share\"} 7678\n",
	"\nbpfprof_alloc_go_reads_failed_total 5\n",
	"\nbpfprof_alloc_go_list_cap_total 4\n",
	"\nbpfprof_alloc_go_processes_lost_total{reason=\"ended\"} 1\n",
	"\nbpfprof_alloc_go_processes_lost_total{reason=\"other_image\"} 6\n",
	"\nbpfprof_alloc_go_buckets 8192\n",
	"\nbpfprof_alloc_go_stacks 514\n",
	"\nbpfprof_alloc_go_stacks_max 32768\n",
	"\nbpfprof_alloc_go_stacks_process_max 8192\n",
};

/* Go's lines: only with Go (a Go process probed, or -a); its losses by
 * reason, the stack table's share, a saturated counter as it is. */
static void test_go_lines(void **state)
{
	struct metrics_snapshot m = { .samples = 5, .freq = 99, .am = filled, .alloc = true };
	struct metrics_alloc *a = &m.am;
	struct sbuf sb = { 0 };

	(void)state;
	a->go = true;
	a->go_lost[METRICS_GO_LOST_REFUSED] = 7;
	a->go_lost[METRICS_GO_LOST_TABLES_FULL] = 11802;
	a->go_lost[METRICS_GO_LOST_EXITED] = 3;
	a->go_unnamed = UINT64_MAX;
	a->go_bkts_refused = 2;
	a->go_bkts_unnamed = 7678;
	a->go_read_fails = 5;
	a->go_list_over = 4;
	a->go_poll_ended = 1;
	a->go_other = 6;
	a->go_buckets = 8192;
	a->go_stacks = 514;
	a->go_stacks_max = 32768;
	a->go_stacks_proc = 8192;
	assert_int_equal(metrics__render_alloc(a, &sb), 0);
	assert_int_equal(
		strncmp(sb.buf, golden, strstr(golden, "# HELP bpfprof_alloc_files") - golden), 0);
	for (size_t i = 0; i < ARRAY_SIZE(go_want); i++)
		if (!strstr(sb.buf, go_want[i]))
			fail_msg("not in /metrics: %s", go_want[i]);
	sbuf_free(&sb);
	memset(&sb, 0, sizeof(sb));
	assert_int_equal(metrics__render(&m, 0, &sb), 0);
	assert_types_once(sb.buf);
	sbuf_free(&sb);
	memset(&sb, 0, sizeof(sb));
	a->go = false; /* no Go: no Go line */
	assert_int_equal(metrics__render_alloc(a, &sb), 0);
	assert_null(strstr(sb.buf, "bpfprof_alloc_go_"));
	sbuf_free(&sb);
}

/* -a, --cgroup: the buckets past their cgroup's share of Go's stacks, apart
 * from those past their process's or Go's, and that share; without it
 * (-p), no cgroup line. */
static void test_go_cgroup_lines(void **state)
{
	struct metrics_alloc a = filled;
	struct sbuf sb = { 0 };

	(void)state;
	a.go = true;
	a.go_bkts_unnamed = 15356;
	a.go_bkts_cgroup = 16380;
	a.go_stacks_cgroup = 16384;
	a.go_reads_skipped = 4096;
	assert_int_equal(metrics__render_alloc(&a, &sb), 0);
	assert_non_null(strstr(sb.buf, "\nbpfprof_alloc_go_reads_skipped_total 4096\n"));
	assert_non_null(strstr(
		sb.buf, "\nbpfprof_alloc_go_buckets_lost_total{reason=\"stack_share\"} 15356\n"
			"bpfprof_alloc_go_buckets_lost_total{reason=\"cgroup_share\"} 16380\n"));
	assert_non_null(strstr(sb.buf, "\nbpfprof_alloc_go_stacks_cgroup_max 16384\n"));
	assert_non_null(strstr(sb.buf, "\n# TYPE bpfprof_alloc_go_stacks_cgroup_max gauge\n"));
	sbuf_free(&sb);
	memset(&sb, 0, sizeof(sb));
	a.go_stacks_cgroup = 0;
	assert_int_equal(metrics__render_alloc(&a, &sb), 0);
	assert_null(strstr(sb.buf, "bpfprof_alloc_go_stacks_cgroup_max"));
	sbuf_free(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_lines),
		cmocka_unit_test(test_no_guard_no_guard_lines),
		cmocka_unit_test(test_no_scan_no_file_lines),
		cmocka_unit_test(test_render_has_them_with_alloc_only),
		cmocka_unit_test(test_go_lines),
		cmocka_unit_test(test_go_cgroup_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
