// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_unwind_pool.c - the slot pool allocator: runs inside one chunk, lazy
 * chunks up to the cap, deferred reuse, coalescing, empty chunks dropped. */
#include "testutil.h"

#include "unwind/pool.h"

#define SLOTS 1024u

struct calls {
	int grown[8], dropped[8];
	int fail_grow;
};

static int grow(void *ctx, uint32_t chunk)
{
	struct calls *c = ctx;

	if (c->fail_grow)
		return -EPERM;
	c->grown[chunk]++;
	return 0;
}

static int shrink(void *ctx, uint32_t chunk)
{
	struct calls *c = ctx;

	c->dropped[chunk]++;
	return 0;
}

static void test_alloc_within_chunks(void **state)
{
	struct calls c = { 0 };
	struct upool *p = upool__new(SLOTS, 2, grow, shrink, &c);
	uint32_t a, b, d, e;

	assert_non_null(p);
	assert_int_equal(upool__alloc(p, 0, &a), -EINVAL);
	assert_int_equal(upool__alloc(p, SLOTS + 1, &a), -EINVAL);
	assert_int_equal(upool__alloc(p, 600, &a), 0);
	assert_int_equal(a, 0);
	assert_int_equal(c.grown[0], 1);
	/* 500 does not fit the rest of chunk 0: a run never spans chunks. */
	assert_int_equal(upool__alloc(p, 500, &b), 0);
	assert_int_equal(b, SLOTS);
	assert_int_equal(c.grown[1], 1);
	assert_int_equal(upool__alloc(p, 424, &d), 0);
	assert_int_equal(d, 600);
	assert_int_equal(upool__largest_free(p), SLOTS - 500);
	/* At the cap. */
	assert_int_equal(upool__alloc(p, 600, &e), -ENOSPC);
	{
		struct upool_stats st;

		upool__stats(p, &st);
		assert_int_equal(st.chunks, 2);
		assert_int_equal(st.used_slots, 600 + 500 + 424);
		assert_int_equal(st.failed_allocs, 1);
	}
	upool__free(p);
}

static void test_release_is_deferred(void **state)
{
	struct calls c = { 0 };
	struct upool *p = upool__new(SLOTS, 1, grow, shrink, &c);
	uint32_t a, b, x;

	assert_int_equal(upool__alloc(p, SLOTS / 2, &a), 0);
	assert_int_equal(upool__alloc(p, SLOTS / 2, &b), 0);
	uint64_t gen = upool__generation(p);

	upool__release(p, a, SLOTS / 2);
	/* A walk may still read the run: not reusable yet, nor after one reclaim. */
	assert_int_equal(upool__alloc(p, 1, &x), -ENOSPC);
	upool__reclaim(p);
	assert_int_equal(upool__alloc(p, 1, &x), -ENOSPC);
	/* Nothing freed yet: the walker's cached rows are still good. */
	assert_true(upool__generation(p) == gen);
	upool__reclaim(p);
	/* Freed: the generation moves before the slots can be handed out again. */
	assert_true(upool__generation(p) != gen);
	gen = upool__generation(p);
	assert_int_equal(upool__alloc(p, SLOTS / 2, &x), 0);
	assert_true(upool__generation(p) == gen);
	assert_int_equal(x, a);
	upool__free(p);
}

static void test_coalescing_and_drop(void **state)
{
	struct calls c = { 0 };
	struct upool *p = upool__new(SLOTS, 1, grow, shrink, &c);
	uint32_t r[4], big;

	for (int i = 0; i < 4; i++)
		assert_int_equal(upool__alloc(p, SLOTS / 4, &r[i]), 0);
	/* Free 1 and 2 (not neighbours of any free extent), then 0: one extent. */
	upool__release(p, r[2], SLOTS / 4);
	upool__release(p, r[1], SLOTS / 4);
	upool__reclaim(p);
	upool__release(p, r[0], SLOTS / 4);
	upool__reclaim(p);
	upool__reclaim(p);
	assert_int_equal(upool__largest_free(p), 3 * SLOTS / 4);
	assert_int_equal(upool__alloc(p, 3 * SLOTS / 4, &big), 0);
	assert_int_equal(big, 0);
	/* Everything back: the chunk goes back to the kernel. */
	upool__release(p, big, 3 * SLOTS / 4);
	upool__release(p, r[3], SLOTS / 4);
	upool__reclaim(p);
	upool__reclaim(p);
	assert_int_equal(c.dropped[0], 1);
	{
		struct upool_stats st;

		upool__stats(p, &st);
		assert_int_equal(st.chunks, 0);
		assert_int_equal(st.used_slots, 0);
		assert_int_equal(st.peak_chunks, 1);
	}
	/* And is created again when needed. */
	assert_int_equal(upool__alloc(p, 10, &big), 0);
	assert_int_equal(c.grown[0], 2);
	upool__free(p);
}

static void test_grow_failure(void **state)
{
	struct calls c = { .fail_grow = 1 };
	struct upool *p = upool__new(SLOTS, 4, grow, shrink, &c);
	uint32_t a;

	assert_int_equal(upool__alloc(p, 10, &a), -EPERM);
	c.fail_grow = 0;
	assert_int_equal(upool__alloc(p, 10, &a), 0);
	assert_int_equal(a, 0);
	/* Bad releases are ignored. */
	upool__release(p, 5 * SLOTS, 1);
	upool__release(p, SLOTS - 1, 5);
	upool__reclaim(p);
	upool__reclaim(p);
	upool__free(p);
	assert_null(upool__new(1000, 4, grow, shrink, &c)); /* not a power of two */
}

/* Random alloc/release against a shadow bitmap: runs never overlap. */
static void test_random_no_overlap(void **state)
{
	struct calls c = { 0 };
	struct upool *p = upool__new(SLOTS, 4, grow, shrink, &c);
	static uint8_t owner[4 * SLOTS];
	struct {
		uint32_t slot, n;
	} live[256];
	int nlive = 0;

	memset(owner, 0, sizeof(owner));
	srand(7);
	for (int step = 0; step < 20000; step++) {
		if (nlive < 256 && (rand() % 3 || !nlive)) {
			uint32_t n = 1 + rand() % 300, s;

			if (upool__alloc(p, n, &s))
				continue;
			assert_true((s & (SLOTS - 1)) + n <= SLOTS);
			for (uint32_t i = 0; i < n; i++)
				assert_int_equal(owner[s + i]++, 0);
			live[nlive].slot = s;
			live[nlive++].n = n;
		} else {
			int k = rand() % nlive;

			for (uint32_t i = 0; i < live[k].n; i++)
				owner[live[k].slot + i]--;
			upool__release(p, live[k].slot, live[k].n);
			live[k] = live[--nlive];
		}
		if (step % 17 == 0)
			upool__reclaim(p);
	}
	upool__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_within_chunks),
		cmocka_unit_test(test_release_is_deferred),
		cmocka_unit_test(test_coalescing_and_drop),
		cmocka_unit_test(test_grow_failure),
		cmocka_unit_test(test_random_no_overlap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
