// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_allocguard.c - --alloc -a's calls-per-second guard
 * (collector/allocguard.h) driven by a simulated host: calls arrive at a
 * given rate and are counted only while the probes are on; ticks every
 * 100 ms as the drain loop's.
 */
#include "testutil.h"

#include <math.h>

#include "collector/allocguard.h"

#define MS   1000000ull
#define TICK (100 * MS)

struct sim {
	struct allocguard g;
	uint64_t now, seen, truth;
	double carry;
	uint64_t offs, ons;
	uint64_t longest_off, shortest_off, off_since;
	uint32_t rnd;
};

static uint32_t next_rnd(struct sim *s)
{
	s->rnd = s->rnd * 1664525u + 1013904223u;
	return s->rnd;
}

static void sim_init(struct sim *s, uint64_t budget)
{
	memset(s, 0, sizeof(*s));
	s->now = 1000 * MS;
	s->shortest_off = UINT64_MAX;
	s->rnd = 12345;
	allocguard__init(&s->g, budget, s->now, 0);
}

/* dur_ns at rate calls per second, ticking each 100 ms. */
static void sim_run(struct sim *s, double rate, uint64_t dur_ns)
{
	for (uint64_t t = 0; t < dur_ns; t += TICK) {
		double n = rate * (double)TICK / 1e9 + s->carry;
		uint64_t whole = (uint64_t)n;

		s->carry = n - (double)whole;
		s->truth += whole;
		if (s->g.on)
			s->seen += whole;
		s->now += TICK;
		switch (allocguard__tick(&s->g, s->now, s->seen, next_rnd(s))) {
		case ALLOCGUARD_OFF:
			s->offs++;
			s->off_since = s->now;
			break;
		case ALLOCGUARD_ON: {
			uint64_t off = s->now - s->off_since;

			s->ons++;
			if (off > s->longest_off)
				s->longest_off = off;
			if (off < s->shortest_off)
				s->shortest_off = off;
			allocguard__on_at(&s->g, s->now);
			break;
		}
		default:
			break;
		}
	}
}

static double on_fraction(const struct sim *s)
{
	return (double)allocguard__on_ns(&s->g, s->now) / (double)(s->now - s->g.start_ns);
}

static void test_under_the_budget_nothing_happens(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 100000);
	sim_run(&s, 90000, 30000 * MS);
	assert_false(s.g.engaged);
	assert_int_equal(s.offs + s.ons, 0);
	assert_int_equal(s.g.toggles, 0);
	assert_true(on_fraction(&s) == 1.0);
	assert_true(allocguard__scale(&s.g, s.now) == 1.0);
}

static void test_no_budget_no_guard(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 0);
	sim_run(&s, 1e9, 10000 * MS);
	assert_false(s.g.engaged);
	assert_int_equal(s.g.toggles, 0);
}

/* Over the budget: engaged at the first tick, on about budget / rate of the time,
 * the calls seen within the budget, the scaled count near the truth. */
static void test_duty_cycle_holds_the_budget(void **state)
{
	struct sim s;
	double f, est, seen_rate;

	(void)state;
	sim_init(&s, 100000);
	sim_run(&s, 400000, 120000 * MS);
	assert_true(s.g.engaged);
	assert_int_equal(s.g.engaged_ns, s.g.start_ns + TICK);
	assert_true(s.g.duty > 0.249 && s.g.duty < 0.251);
	f = on_fraction(&s);
	assert_true(f > 0.25 * 0.85 && f < 0.25 * 1.15);
	seen_rate = (double)s.seen * 1e9 / (double)(s.now - s.g.start_ns);
	assert_true(seen_rate < 100000 * 1.15);
	est = (double)s.seen * allocguard__scale(&s.g, s.now);
	assert_true(fabs(est - (double)s.truth) < 0.03 * (double)s.truth);
	assert_false(s.g.still_over);
	assert_int_equal(s.offs, s.ons + (s.g.on ? 0 : 1));
	assert_int_equal(s.g.toggles, s.offs + s.ons);
	assert_true(s.g.max_rate > 399000 && s.g.max_rate < 401000);
}

/* At most one off/on pair per second: a window is its time on (>= 100 ms,
 * the window stretched to keep the duty) plus at least half the rest. */
static void test_at_most_one_pair_a_window(void **state)
{
	struct sim s;
	uint64_t dur = 60000 * MS;

	(void)state;
	sim_init(&s, 10000);
	sim_run(&s, 2e6, dur);
	assert_true(s.g.engaged);
	assert_true(s.g.duty == ALLOCGUARD_MIN_DUTY);
	/* 100 ms on, 1.9 s x [0.5, 1.5) off */
	assert_true(s.ons <= dur / (100 * MS + 950 * MS) + 1);
	assert_true(s.ons >= dur / (200 * MS + 2850 * MS + TICK) - 1);
}

/* A huge rate: the duty's floor (5%, never fully off), the window on never
 * under 100 ms (the window stretched to 2 s), said as still over. */
static void test_floor_and_still_over(void **state)
{
	struct sim s;
	double f;

	(void)state;
	sim_init(&s, 1000);
	sim_run(&s, 1e7, 60000 * MS);
	assert_true(s.g.duty == ALLOCGUARD_MIN_DUTY);
	assert_true(s.g.still_over);
	f = on_fraction(&s);
	/* 100 ms on in 100 ms + (1.9 s x [0.5, 1.5)) */
	assert_true(f > 0.04 && f < 0.07);
	assert_true(s.ons > 0);
}

/* The off length's jitter: the rest of the window times [0.5, 1.5). */
static void test_jitter_bounds(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, 100000);
	sim_run(&s, 200000, 300000 * MS); /* duty 0.5: off 0.5 s x [0.5, 1.5) */
	assert_true(s.shortest_off >= 250 * MS);
	assert_true(s.shortest_off <= 350 * MS); /* the draws reach near the bottom */
	assert_true(s.longest_off <= 750 * MS + TICK);
	assert_true(s.longest_off >= 650 * MS);
}

/* Once the rate falls under the budget, the probes stay in (engaged stays
 * true: what was missed is still scaled). */
static void test_back_under_the_budget(void **state)
{
	struct sim s;
	uint64_t toggles;

	(void)state;
	sim_init(&s, 100000);
	sim_run(&s, 500000, 5000 * MS);
	assert_true(s.g.engaged);
	sim_run(&s, 50000, 3000 * MS); /* a window on measures it */
	toggles = s.g.toggles;
	assert_true(s.g.on);
	sim_run(&s, 50000, 10000 * MS);
	assert_int_equal(s.g.toggles, toggles);
	assert_true(s.g.engaged);
	assert_true(s.g.duty == 1.0);
	assert_true(allocguard__scale(&s.g, s.now) > 1.0);
}

/* A rate that jumps inside a window on: the window ends once its calls pass
 * its window's budget (two ticks later at most), not at its planned end. */
static void test_jump_ends_the_window_early(void **state)
{
	struct sim s;
	uint64_t before;

	(void)state;
	sim_init(&s, 100000);
	sim_run(&s, 500000, 3000 * MS); /* engaged */
	sim_run(&s, 10000, 4000 * MS);	/* back under: windows on of 1 s */
	assert_true(s.g.on && s.g.duty == 1.0);
	before = s.seen;
	sim_run(&s, 2e6, 1000 * MS);
	assert_false(s.g.on);
	/* without the early end: 2e6 calls */
	assert_true(s.seen - before <= 100000 + 2 * 2e6 * 0.1 + 10000);
}

/* The time to put the probes back is not time on: on_at moves the edge. */
static void test_on_at_moves_the_edge(void **state)
{
	struct allocguard g;
	uint64_t t = 1000 * MS;

	(void)state;
	allocguard__init(&g, 1000, t, 0);
	assert_int_equal(allocguard__tick(&g, t + TICK, 10000, 0), ALLOCGUARD_OFF);
	assert_int_equal(allocguard__on_ns(&g, t + TICK), TICK);
	t += TICK;
	while (allocguard__tick(&g, t, 10000, 0) != ALLOCGUARD_ON)
		t += TICK;
	allocguard__on_at(&g, t + 30 * MS);
	assert_int_equal(allocguard__on_ns(&g, t + 30 * MS), TICK);
	assert_int_equal(allocguard__on_ns(&g, t + 50 * MS), TICK + 20 * MS);
	/* a clock going back is ignored */
	assert_int_equal(allocguard__tick(&g, t - 5 * TICK, 20000, 0), ALLOCGUARD_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_under_the_budget_nothing_happens),
		cmocka_unit_test(test_no_budget_no_guard),
		cmocka_unit_test(test_duty_cycle_holds_the_budget),
		cmocka_unit_test(test_at_most_one_pair_a_window),
		cmocka_unit_test(test_floor_and_still_over),
		cmocka_unit_test(test_jitter_bounds),
		cmocka_unit_test(test_back_under_the_budget),
		cmocka_unit_test(test_jump_ends_the_window_early),
		cmocka_unit_test(test_on_at_moves_the_edge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
