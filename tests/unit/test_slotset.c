// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_slotset.c - the drain's view of a buffer set's count slots: slots
 * learned region by region up to the first unpublished one, a key's
 * slots summed, hot-slot counts added by key hash, and only what each key
 * gained handed out, once.
 */
#include "testutil.h"

#include "collector/slotset.h"

#define REGIONS 3
#define PER	8

struct fake {
	uint64_t counts[REGIONS * PER];
	struct bp_sample_key keys[REGIONS * PER];
	uint32_t taken[REGIONS];
	struct slotset_mem m;
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->m.counts = f->counts;
	f->m.keys = f->keys;
}

static struct bp_sample_key key_of(uint32_t tgid, uint64_t ustack)
{
	struct bp_sample_key k = { .tgid = tgid, .ustack = ustack };

	snprintf(k.comm, sizeof(k.comm), "p%u", tgid);
	return k;
}

/* As the program does it: the key, its count, then the region's next. */
static uint32_t publish(struct fake *f, uint32_t region, struct bp_sample_key k, uint64_t count)
{
	uint32_t idx = region * PER + f->taken[region];

	f->keys[idx] = k;
	f->counts[idx] = count;
	f->taken[region]++;
	return idx;
}

/* gains -> count by tgid (keys here differ by tgid); returns how many keys gained. */
static size_t gains_by_tgid(struct slotset *s, struct fake *f, uint64_t *by_tgid, size_t n)
{
	const struct slotset_gain *g;
	size_t nr;

	memset(by_tgid, 0, n * sizeof(*by_tgid));
	assert_int_equal(slotset__gains(s, &f->m, &g, &nr), 0);
	for (size_t i = 0; i < nr; i++) {
		assert_true(g[i].key->tgid < n);
		assert_int_equal(by_tgid[g[i].key->tgid], 0); /* each key once */
		by_tgid[g[i].key->tgid] = g[i].count;
	}
	return nr;
}

static void test_only_what_grew_is_handed_out(void **state)
{
	struct slotset *s = slotset__new(REGIONS, PER, 4);
	struct fake f;
	uint64_t by[8];
	uint32_t a, b;

	fake_init(&f);
	assert_non_null(s);
	a = publish(&f, 0, key_of(1, 11), 5);
	b = publish(&f, 1, key_of(2, 22), 3);
	publish(&f, 2, key_of(3, 33), 7); /* the flush's region */
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(slotset__keys(s), 3);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 3);
	assert_int_equal(by[1], 5);
	assert_int_equal(by[2], 3);
	assert_int_equal(by[3], 7);

	/* Nothing new: nothing handed out. */
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 0);

	/* Counted in place: only the difference, only for the key that grew. */
	f.counts[a] += 4;
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 1);
	assert_int_equal(by[1], 4);
	f.counts[b] += 1;
	f.counts[a] += 2;
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 2);
	assert_int_equal(by[1], 2);
	assert_int_equal(by[2], 1);
	slotset__free(s);
}

static void test_an_unpublished_slot_waits_for_the_next_scan(void **state)
{
	struct slotset *s = slotset__new(REGIONS, PER, 4);
	struct fake f;
	uint64_t by[8];
	uint32_t idx;

	fake_init(&f);
	assert_non_null(s);
	publish(&f, 0, key_of(1, 11), 2);
	/* Taken but not published yet (count 0), then one after it. */
	idx = publish(&f, 0, key_of(2, 22), 0);
	publish(&f, 0, key_of(3, 33), 6);
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(slotset__keys(s), 1);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 1);
	assert_int_equal(by[1], 2);

	f.counts[idx] = 9; /* published now */
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(slotset__keys(s), 3);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 2);
	assert_int_equal(by[2], 9);
	assert_int_equal(by[3], 6);
	assert_int_equal(by[1], 0);
	slotset__free(s);
}

static void test_a_key_with_two_slots_is_one_key(void **state)
{
	struct slotset *s = slotset__new(REGIONS, PER, 4);
	struct fake f;
	uint64_t by[8];
	uint32_t a, b;

	fake_init(&f);
	assert_non_null(s);
	/* Two CPUs met key 1 new at once: a slot in each of their regions. */
	a = publish(&f, 0, key_of(1, 11), 4);
	b = publish(&f, 1, key_of(1, 11), 1);
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(slotset__keys(s), 1);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 1);
	assert_int_equal(by[1], 5);
	f.counts[b] += 3; /* whichever slot keeps counting */
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 1);
	assert_int_equal(by[1], 3);
	f.counts[a] += 1;
	f.counts[b] += 1;
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 1);
	assert_int_equal(by[1], 2);
	slotset__free(s);
}

static void test_hot_counts_join_their_key(void **state)
{
	struct slotset *s = slotset__new(REGIONS, PER, 4);
	struct bp_sample_key k1 = key_of(1, 11), k2 = key_of(2, 22);
	struct fake f;
	uint64_t by[8];

	fake_init(&f);
	assert_non_null(s);
	publish(&f, 0, k1, 1);
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	/* Hot slots on two CPUs (the counts every read sees: they only grow). */
	slotset__hot(s, 0, bp_key_hash(&k1), 10);
	slotset__hot(s, 2, bp_key_hash(&k1), 20);
	slotset__hot(s, 3, bp_key_hash(&k2), 99); /* k2 not scanned yet: waits */
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 1);
	assert_int_equal(by[1], 31);

	/* Next read: k1's hot slots grew by 5, k2 is scanned now. */
	publish(&f, 1, k2, 1);
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	slotset__hot(s, 0, bp_key_hash(&k1), 15);
	slotset__hot(s, 2, bp_key_hash(&k1), 20);
	slotset__hot(s, 3, bp_key_hash(&k2), 99);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 2);
	assert_int_equal(by[1], 5);
	assert_int_equal(by[2], 100);

	/* The same hot counts again: nothing gained. */
	slotset__hot(s, 0, bp_key_hash(&k1), 15);
	slotset__hot(s, 2, bp_key_hash(&k1), 20);
	slotset__hot(s, 3, bp_key_hash(&k2), 99);
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 0);

	/* After a reset (the set emptied) a position's claim is looked up
	 * anew, not credited to the key index it had before. */
	memset(f.counts, 0, sizeof(f.counts));
	memset(f.taken, 0, sizeof(f.taken));
	slotset__reset(s);
	publish(&f, 0, k2, 1);
	publish(&f, 0, k1, 1);
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	/* Position 0 holds k1 again, which is now the set's second key. */
	slotset__hot(s, 0, bp_key_hash(&k1), 4);
	slotset__hot(s, 5, bp_key_hash(&k2), 2); /* past the positions: looked up each read */
	assert_int_equal(gains_by_tgid(s, &f, by, 8), 2);
	assert_int_equal(by[1], 5);
	assert_int_equal(by[2], 3);
	slotset__free(s);
}

static void test_taken_is_clamped_and_reset_forgets(void **state)
{
	struct slotset *s = slotset__new(REGIONS, PER, 4);
	struct fake f;
	uint64_t by[32];

	fake_init(&f);
	assert_non_null(s);
	for (uint32_t i = 0; i < PER; i++)
		publish(&f, 1, key_of(i + 1, i), 1);
	f.taken[1] = 1000; /* past the region: never read past it */
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(slotset__keys(s), PER);
	assert_int_equal(gains_by_tgid(s, &f, by, 32), PER);

	/* The set was emptied and refilled: every key anew, counted from 0. */
	memset(f.counts, 0, sizeof(f.counts));
	memset(f.taken, 0, sizeof(f.taken));
	slotset__reset(s);
	assert_int_equal(slotset__keys(s), 0);
	publish(&f, 0, key_of(1, 0), 2);
	assert_int_equal(slotset__scan(s, &f.m, f.taken), 0);
	assert_int_equal(gains_by_tgid(s, &f, by, 32), 1);
	assert_int_equal(by[1], 2);
	assert_int_equal(slotset__key(s, 0)->tgid, 1);
	slotset__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_what_grew_is_handed_out),
		cmocka_unit_test(test_an_unpublished_slot_waits_for_the_next_scan),
		cmocka_unit_test(test_a_key_with_two_slots_is_one_key),
		cmocka_unit_test(test_hot_counts_join_their_key),
		cmocka_unit_test(test_taken_is_clamped_and_reset_forgets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
