// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_sampling.c - what the events took against what they should have:
 * idle time counted the way the program saw it, steal taken out, a margin
 * for what the measurement may be off by, the profile's share of a
 * shortfall, and windows whose figures add up.
 */
#include "testutil.h"

#include "collector/sampling.h"

#define MS     1000000ULL
#define PERIOD (10 * MS) /* 100 Hz */
#define TICK   (10 * MS) /* USER_HZ 100 */

static struct sampling_figures measure(const struct sampling_cpu *cpus, size_t n, uint64_t period)
{
	struct sampling_sum s = { 0 };
	struct sampling_figures f = { 0 };

	for (size_t i = 0; i < n; i++)
		sampling__add(&s, &cpus[i], period, TICK);
	sampling__figures(&f, &s);
	f.at_ns = 1;
	f.period_ns = period;
	return f;
}

static struct sampling_window since_start(const struct sampling_cpu *cpus, size_t n)
{
	struct sampling_figures f = measure(cpus, n, PERIOD);
	struct sampling_window w;

	sampling__window(NULL, &f, &w);
	return w;
}

static void busy_cpu_took_all(void **state)
{
	struct sampling_cpu c = {
		.run_ns = 10000 * MS, .busy = 1000, .kept_busy = 1000, .kept = 1000
	};
	struct sampling_window w = since_start(&c, 1);

	(void)state;
	assert_int_equal(w.expected, 1000);
	assert_int_equal(w.taken, 1000);
	assert_false(w.real);
	assert_int_equal(w.kept_not_taken, 0);
	assert_true(w.rate_hz > 99.9 && w.rate_hz < 100.1);
}

/* The kernel fires on this idle CPU every period, and sees the idle task
 * for longer than /proc/stat counts as idle (interrupts, entering and
 * leaving idle): 620 idle samples against 6 s of idle. Counting idle the
 * program's way leaves no shortfall (/proc/stat's way, 20: a warning). */
static void idle_samples_beyond_idle_time(void **state)
{
	struct sampling_cpu c = { .run_ns = 10000 * MS,
				  .off_ns = 6000 * MS,
				  .idle = 620,
				  .busy = 380,
				  .kept_busy = 380,
				  .kept = 380 };
	struct sampling_window w = since_start(&c, 1);

	(void)state;
	assert_int_equal(w.expected, 380);
	assert_int_equal(w.shortfall, 0);
	assert_false(w.real);
}

/* A CPU the kernel never fires on while it idles: /proc/stat's idle time. */
static void idle_never_sampled(void **state)
{
	struct sampling_cpu c = { .run_ns = 10000 * MS,
				  .off_ns = 6000 * MS,
				  .busy = 398,
				  .kept_busy = 398,
				  .kept = 398 };
	struct sampling_window w = since_start(&c, 1);

	(void)state;
	assert_int_equal(w.expected, 400);
	assert_int_equal(w.shortfall, 2);
	assert_false(w.real); /* within the margin */
	assert_int_equal(w.kept_not_taken, 0);
	assert_true(w.rate_hz == 100); /* the rate reached, as far as it can be told */
}

/* The hypervisor's time: the vCPU could not fire, nothing is owed. */
static void steal_taken_out(void **state)
{
	struct sampling_cpu c = { .run_ns = 10000 * MS,
				  .steal_ns = 500 * MS,
				  .busy = 950,
				  .kept_busy = 950,
				  .kept = 950 };
	struct sampling_window w = since_start(&c, 1);

	(void)state;
	assert_int_equal(w.expected, 950);
	assert_false(w.real);
}

/* Half the periods never sampled: real, and the figures add up. */
static void throttled_half(void **state)
{
	struct sampling_cpu c = {
		.run_ns = 10000 * MS, .busy = 500, .kept_busy = 500, .kept = 500
	};
	struct sampling_window w = since_start(&c, 1);

	(void)state;
	assert_true(w.real);
	assert_int_equal(w.shortfall, 500);
	assert_int_equal(w.kept, 500);
	assert_int_equal(w.kept_not_taken, 500);
	assert_int_equal(w.kept + w.kept_not_taken, w.expected);
}

/* Beyond the margin but under 1%: a busy machine's late timers, not said. */
static void under_one_percent(void **state)
{
	struct sampling_cpu c = {
		.run_ns = 100000 * MS, .busy = 9920, .kept_busy = 9920, .kept = 9920
	};
	struct sampling_window w = since_start(&c, 1);

	(void)state;
	assert_int_equal(w.shortfall, 80);
	assert_true(w.shortfall > w.margin);
	assert_false(w.real);
}

/* The margin counts /proc/stat's ticks in periods: at 1000 Hz a tick is ten. */
static void margin_scales_with_the_rate(void **state)
{
	struct sampling_cpu c = { .run_ns = 1000 * MS, .busy = 1000 };
	struct sampling_figures slow = measure(&c, 1, PERIOD), fast = measure(&c, 1, MS);

	(void)state;
	assert_int_equal(slow.margin, 2 + 3 * 1 + 1);
	assert_int_equal(fast.margin, 2 + 3 * 10 + 1);
}

/* -p: the targets' share of each CPU's shortfall, CPU by CPU. CPU 0 lost 100
 * of which the target had half the busy samples; CPU 1 lost none. */
static void kept_share_by_cpu(void **state)
{
	struct sampling_cpu cpus[2] = {
		{ .run_ns = 10000 * MS, .busy = 900, .kept_busy = 450, .kept = 450 },
		{ .run_ns = 10000 * MS, .busy = 1000, .kept_busy = 0, .kept = 0 },
	};
	struct sampling_window w = since_start(cpus, 2);

	(void)state;
	assert_true(w.real);
	assert_int_equal(w.shortfall, 100);
	assert_int_equal(w.kept, 450);
	assert_int_equal(w.kept_not_taken, 50);
}

/* -p: the targets' own CPU time says what they should have had, once the
 * CPUs' shortfall is real; a deficit within chance (where the target's time
 * fell on the grid of periods) is not one. */
static void targets_held_against_their_cpu_time(void **state)
{
	struct sampling_cpu c = {
		.run_ns = 20000 * MS, .busy = 1000, .kept_busy = 500, .kept = 500
	};
	struct sampling_figures f = measure(&c, 1, PERIOD);
	struct sampling_window w;

	(void)state;
	f.kept_cpu_known = true;
	f.kept_cpu_ns = 10000 * MS; /* 1000 samples' worth */
	f.kept_cpu_margin = 2;
	sampling__window(NULL, &f, &w);
	assert_true(w.real);
	assert_int_equal(w.kept, 500);
	assert_int_equal(w.kept_not_taken, 500);
	/* The same target deficit, the CPUs short by nothing: not real. */
	c.busy = 2000;
	f = measure(&c, 1, PERIOD);
	f.kept_cpu_known = true;
	f.kept_cpu_ns = 10000 * MS;
	sampling__window(NULL, &f, &w);
	assert_false(w.real);
	assert_int_equal(w.kept_not_taken, 0);
	/* Real on the CPUs, the target's own deficit within chance (5 sd). */
	c.busy = 1000;
	c.kept_busy = c.kept = 900;
	f = measure(&c, 1, PERIOD);
	f.kept_cpu_known = true;
	f.kept_cpu_ns = 10000 * MS;
	sampling__window(NULL, &f, &w);
	assert_true(w.real);
	assert_int_equal(w.kept_not_taken, 0);
}

/* A window between two measurements: its own figures, the margin once. */
static void window_between_measurements(void **state)
{
	struct sampling_cpu c1 = {
		.run_ns = 10000 * MS, .busy = 1000, .kept_busy = 1000, .kept = 1000
	};
	struct sampling_cpu c2 = {
		.run_ns = 20000 * MS, .busy = 1500, .kept_busy = 1500, .kept = 1500
	};
	struct sampling_figures a = measure(&c1, 1, PERIOD), b = measure(&c2, 1, PERIOD);
	struct sampling_window w;

	(void)state;
	b.throttles = 3;
	sampling__window(&a, &b, &w);
	assert_int_equal(w.expected, 1000);
	assert_int_equal(w.taken, 500);
	assert_true(w.real);
	assert_true(w.throttled);
	assert_int_equal(w.kept, 500);
	assert_int_equal(w.kept_not_taken, 500);
	assert_true(w.rate_hz > 49.9 && w.rate_hz < 50.1);
	sampling__window(&b, &b, &w);
	assert_false(w.real);
	assert_false(w.throttled);
	assert_true(w.rate_hz == 100); /* nothing to tell it from the asked rate */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(busy_cpu_took_all),
		cmocka_unit_test(idle_samples_beyond_idle_time),
		cmocka_unit_test(idle_never_sampled),
		cmocka_unit_test(steal_taken_out),
		cmocka_unit_test(throttled_half),
		cmocka_unit_test(under_one_percent),
		cmocka_unit_test(margin_scales_with_the_rate),
		cmocka_unit_test(kept_share_by_cpu),
		cmocka_unit_test(targets_held_against_their_cpu_time),
		cmocka_unit_test(window_between_measurements),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
