// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_budget.c - time budgets for work on hostile input: spent after their
 * CPU time (not wall time), checked cheaply, and ended for everyone a grace
 * period after a stop request.
 */
#include "testutil.h"

#include <time.h>

#include "base/budget.h"

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void test_spent_after_its_cpu_time(void **state)
{
	volatile uint64_t sink = 0;
	struct budget b;
	uint64_t t0;
	size_t calls = 0;

	(void)state;
	budget__start(&b, 20 * 1000 * 1000);
	assert_false(budget__over_now(&b));
	assert_int_equal(budget__err(&b), 0);
	/* Sleeping costs no CPU: still within it. */
	sleep_ms(50);
	assert_false(budget__over_now(&b));
	t0 = cpu_ns();
	while (!budget__over(&b)) {
		for (int i = 0; i < 100; i++)
			sink += (uint64_t)i;
		calls++;
	}
	assert_int_equal(budget__err(&b), -ETIMEDOUT);
	/* Seen within a stride of calls once spent. */
	assert_true(cpu_ns() - t0 >= 20 * 1000 * 1000 - 1000000);
	assert_true(calls >= BUDGET_STRIDE - 1);
	/* Sticky. */
	assert_true(budget__over(&b));
	assert_true(budget__over_now(&b));
}

static void test_clock_read_once_a_stride(void **state)
{
	struct budget b;

	(void)state;
	budget__start(&b, 0); /* spent at once, but only a clock read says so */
	for (unsigned i = 1; i < BUDGET_STRIDE; i++)
		assert_false(budget__over(&b));
	assert_true(budget__over(&b));
	assert_int_equal(budget__err(&b), -ETIMEDOUT);
}

/* Weighted asks: the clock is read once a stride's worth of units is spent. */
static void test_spend_reads_the_clock_by_weight(void **state)
{
	struct budget b;

	(void)state;
	budget__start(&b, 0);
	assert_false(budget__spend(&b, BUDGET_STRIDE / 2));
	assert_false(budget__spend(&b, BUDGET_STRIDE / 2 - 1));
	assert_true(budget__spend(&b, 1));
	assert_int_equal(budget__err(&b), -ETIMEDOUT);
	/* One heavy item reads it at once. */
	budget__start(&b, 0);
	assert_true(budget__spend(&b, 100ull * BUDGET_STRIDE));
	budget__start(&b, 60ull * 1000 * 1000 * 1000);
	assert_false(budget__spend(&b, UINT64_MAX));
	assert_false(budget__spend(&b, 0));
}

static void test_stop_ends_every_budget_after_the_grace(void **state)
{
	struct budget running, later;

	(void)state;
	budget__start(&running, 60ull * 1000 * 1000 * 1000);
	budget__stop();
	/* Within the grace: work goes on (the last drain's reads). */
	assert_false(budget__over_now(&running));
	sleep_ms(600);
	budget__stop(); /* a second request does not push the end back */
	budget__start(&later, 60ull * 1000 * 1000 * 1000);
	assert_false(budget__over_now(&later));
	sleep_ms((unsigned)(BUDGET_STOP_GRACE_NS / 1000000) - 600 + 50);
	assert_true(budget__over_now(&running));
	assert_int_equal(budget__err(&running), -ECANCELED);
	assert_true(budget__over_now(&later));
	assert_int_equal(budget__err(&later), -ECANCELED);
	budget__unstop();
	budget__start(&later, 60ull * 1000 * 1000 * 1000);
	assert_false(budget__over_now(&later));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spent_after_its_cpu_time),
		cmocka_unit_test(test_clock_read_once_a_stride),
		cmocka_unit_test(test_spend_reads_the_clock_by_weight),
		cmocka_unit_test(test_stop_ends_every_budget_after_the_grace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
