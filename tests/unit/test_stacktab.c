// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_stacktab.c - the bounded table of stacks by hash (base/stacktab.h)
 * --alloc keeps its stacks in: interning, references, the cap (eviction
 * only of unreferenced stacks, oldest first; drops when all are
 * referenced), pins renewed by epochs, depth cut, and hash_abi.h's stack hash as BPF computes it.
 */
#include "testutil.h"

#include "base/stacktab.h"
#include "hash_abi.h"

/* As BPF hashes the ips of an event (copied: __u64 and uint64_t may be
 * distinct types to the compiler's aliasing rules). */
static uint64_t hash_seed(const uint64_t *ips, uint32_t nr, uint64_t seed)
{
	__u64 w[BP_STACK_HASH_MAX] = { 0 };

	memcpy(w, ips, (size_t)nr * sizeof(*ips));
	return bp_stack_hash(w, nr, seed);
}

static uint64_t hash_of(const uint64_t *ips, uint32_t nr)
{
	return hash_seed(ips, nr, BP_SEED_USTACK);
}

static void test_intern(void **state)
{
	struct stacktab *t = stacktab__new(4, 8);
	uint64_t a[] = { 0x401000, 0x402000, 0x403000 }, b[] = { 0x501000 };
	uint64_t ha = hash_of(a, 3), hb = hash_of(b, 1);
	struct stacktab_stats st;
	const uint64_t *got;
	uint32_t nr = 0;

	assert_non_null(t);
	assert_int_not_equal(ha, 0);
	assert_int_not_equal(ha, hb);
	assert_int_equal(stacktab__get(t, ha, a, 3), 0);
	assert_int_equal(stacktab__get(t, ha, a, 3), 0); /* known: a second reference */
	assert_int_equal(stacktab__get(t, hb, b, 1), 0);
	got = stacktab__find(t, ha, &nr);
	assert_non_null(got);
	assert_int_equal(nr, 3);
	assert_memory_equal(got, a, sizeof(a));
	got = stacktab__find(t, hb, &nr);
	assert_int_equal(nr, 1);
	assert_int_equal(got[0], b[0]);
	assert_null(stacktab__find(t, 12345, &nr));
	assert_null(stacktab__find(t, 0, &nr));
	assert_int_equal(stacktab__get(t, 0, a, 3), -EINVAL); /* 0: no stack */
	stacktab__stats(t, &st);
	assert_int_equal(st.count, 2);
	assert_int_equal(st.evicted, 0);
	assert_int_equal(st.dropped, 0);
	stacktab__put(t, 12345); /* unknown: nothing */
	stacktab__free(t);
	stacktab__free(NULL);
	assert_null(stacktab__new(0, 8));
}

/* At the cap: a new stack takes the oldest unreferenced one's place; with
 * every stack referenced, it is dropped; the referenced ones never go. */
static void test_cap(void **state)
{
	struct stacktab *t = stacktab__new(3, 8);
	uint64_t ips[8][1];
	struct stacktab_stats st;
	uint32_t nr;

	for (int i = 0; i < 8; i++)
		ips[i][0] = 0x1000 + (uint64_t)i;
	for (int i = 0; i < 3; i++)
		assert_int_equal(stacktab__get(t, hash_of(ips[i], 1), ips[i], 1), 0);
	/* full, all referenced: dropped */
	assert_int_equal(stacktab__get(t, hash_of(ips[3], 1), ips[3], 1), -ENOSPC);
	assert_null(stacktab__find(t, hash_of(ips[3], 1), &nr));
	/* 1 then 0 let go: 1 is the oldest unreferenced, evicted first */
	stacktab__put(t, hash_of(ips[1], 1));
	stacktab__put(t, hash_of(ips[0], 1));
	assert_int_equal(stacktab__get(t, hash_of(ips[3], 1), ips[3], 1), 0);
	assert_null(stacktab__find(t, hash_of(ips[1], 1), &nr));
	assert_non_null(stacktab__find(t, hash_of(ips[0], 1), &nr));
	assert_non_null(stacktab__find(t, hash_of(ips[2], 1), &nr));
	/* 0 referenced again: off the idle list, so 4 finds no room */
	assert_int_equal(stacktab__get(t, hash_of(ips[0], 1), NULL, 0), 0);
	assert_int_equal(stacktab__get(t, hash_of(ips[4], 1), ips[4], 1), -ENOSPC);
	stacktab__stats(t, &st);
	assert_int_equal(st.count, 3);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.dropped, 2);
	/* a reference more than taken is ignored: 2 evictable once, not twice */
	stacktab__put(t, hash_of(ips[2], 1));
	stacktab__put(t, hash_of(ips[2], 1));
	assert_int_equal(stacktab__get(t, hash_of(ips[5], 1), ips[5], 1), 0);
	assert_int_equal(stacktab__get(t, hash_of(ips[6], 1), ips[6], 1), -ENOSPC);
	assert_non_null(stacktab__find(t, hash_of(ips[0], 1), &nr));
	assert_non_null(stacktab__find(t, hash_of(ips[3], 1), &nr));
	assert_non_null(stacktab__find(t, hash_of(ips[5], 1), &nr));
	stacktab__free(t);
}

/* Many stacks through a small table: its size stays at the cap. */
static void test_churn(void **state)
{
	struct stacktab *t = stacktab__new(64, 4);
	struct stacktab_stats st;

	for (uint64_t i = 1; i <= 100000; i++) {
		uint64_t ips[2] = { i, i * 7 }, h = hash_of(ips, 2);

		assert_int_equal(stacktab__get(t, h, ips, 2), 0);
		stacktab__put(t, h);
	}
	stacktab__stats(t, &st);
	assert_int_equal(st.count, 64);
	assert_int_equal(st.evicted, 100000 - 64);
	assert_int_equal(st.dropped, 0);
	stacktab__free(t);
}

/* Deeper than max_depth: cut. */
static void test_depth(void **state)
{
	struct stacktab *t = stacktab__new(4, 2);
	uint64_t ips[5] = { 1, 2, 3, 4, 5 };
	const uint64_t *got;
	uint32_t nr;

	assert_int_equal(stacktab__get(t, hash_of(ips, 5), ips, 5), 0);
	got = stacktab__find(t, hash_of(ips, 5), &nr);
	assert_int_equal(nr, 2);
	assert_int_equal(got[1], 2);
	/* an empty stack with a hash (BPF never sends one; harmless) */
	assert_int_equal(stacktab__get(t, 99, NULL, 0), 0);
	assert_non_null(stacktab__find(t, 99, &nr));
	assert_int_equal(nr, 0);
	stacktab__free(t);
}

/*
 * Pins: a stack the aggregates let go of but a live block still names
 * survives a full table (what per-interval resets rely on); a pin not
 * renewed in an epoch is let go at its end, and the stack is evictable
 * again; a pin is one reference however often renewed.
 */
static void test_pin(void **state)
{
	struct stacktab *t = stacktab__new(3, 8);
	uint64_t ips[8][1], h[8];
	struct stacktab_stats st;
	uint32_t nr;

	for (int i = 0; i < 8; i++) {
		ips[i][0] = 0x2000 + (uint64_t)i;
		h[i] = hash_of(ips[i], 1);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(stacktab__get(t, h[i], ips[i], 1), 0);
	/* epoch 1: the walk sees 0 (twice: one pin) and 1; then the interval's
	 * aggregates are freed */
	assert_int_equal(stacktab__pin(t, h[0], 1), 0);
	assert_int_equal(stacktab__pin(t, h[0], 1), 0);
	assert_int_equal(stacktab__pin(t, h[1], 1), 0);
	assert_int_equal(stacktab__pin(t, h[7], 1), -ENOENT); /* unknown: nothing pinned */
	assert_int_equal(stacktab__pin_epoch(t, 1), 0);
	for (int i = 0; i < 3; i++)
		stacktab__put(t, h[i]);
	stacktab__stats(t, &st);
	assert_int_equal(st.pinned, 2);
	/* full: new stacks take only 2's place, the pinned ones stay */
	assert_int_equal(stacktab__get(t, h[3], ips[3], 1), 0);
	stacktab__put(t, h[3]);
	assert_int_equal(stacktab__get(t, h[4], ips[4], 1), 0); /* evicts 3 */
	assert_int_equal(stacktab__get(t, h[5], ips[5], 1), -ENOSPC);
	assert_non_null(stacktab__find(t, h[0], &nr));
	assert_non_null(stacktab__find(t, h[1], &nr));
	assert_null(stacktab__find(t, h[2], &nr));
	assert_null(stacktab__find(t, h[3], &nr));
	/* epoch 2: the walk sees only 1; 0's pin goes, 0 is evictable */
	assert_int_equal(stacktab__pin(t, h[1], 2), 0);
	assert_int_equal(stacktab__pin_epoch(t, 2), 1);
	stacktab__stats(t, &st);
	assert_int_equal(st.pinned, 1);
	assert_int_equal(stacktab__get(t, h[5], ips[5], 1), 0);
	assert_null(stacktab__find(t, h[0], &nr));
	assert_non_null(stacktab__find(t, h[1], &nr));
	/* a referenced stack unpinned stays referenced: 4 is still held */
	assert_int_equal(stacktab__pin(t, h[4], 3), 0);
	assert_int_equal(stacktab__pin_epoch(t, 4), 2); /* no walk (the guard): all let go */
	assert_int_equal(stacktab__get(t, h[6], ips[6], 1), 0); /* evicts 1 */
	assert_null(stacktab__find(t, h[1], &nr));
	assert_non_null(stacktab__find(t, h[4], &nr));
	assert_int_equal(stacktab__get(t, h[7], ips[7], 1), -ENOSPC);
	stacktab__stats(t, &st);
	assert_int_equal(st.pinned, 0);
	stacktab__free(t);
}

/* The hash: the same ips the same hash; the count and every frame count. */
static void test_hash(void **state)
{
	uint64_t a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 }, z[1] = { 0 };

	assert_int_equal(hash_of(a, 3), hash_of(a, 3));
	assert_int_not_equal(hash_of(a, 3), hash_of(b, 3));
	assert_int_not_equal(hash_of(a, 2), hash_of(a, 3));
	assert_int_not_equal(hash_of(z, 1), 0);
	assert_int_not_equal(hash_seed(a, 3, BP_SEED_KSTACK), hash_of(a, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern), cmocka_unit_test(test_cap),
		cmocka_unit_test(test_churn),  cmocka_unit_test(test_depth),
		cmocka_unit_test(test_hash),   cmocka_unit_test(test_pin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
