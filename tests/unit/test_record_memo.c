// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_record_memo.c - drained keys into the profile (record_samples.c): a
 * key symbolized once only adds its count afterwards, found by the cookie
 * the drain keeps with it; a cookie of another profile (another memo) is
 * never taken for this one's.
 */
#include "testutil.h"

#include <unistd.h>

#include "base/htab.h"
#include "base/profile.h"
#include "session/record.h"
#include "proc/labels.h"
#include "proc/procfs.h"
#include "proc/ptab.h"
#include "sym/symbolizer.h"

/* Code with a name in this test's own symbol table: the samples' leaf. */
int memo_leaf(int x);
int memo_other_leaf(int x);

__attribute__((noinline)) int memo_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int memo_other_leaf(int x)
{
	return x * 5 + 2;
}

struct env {
	struct options o;
	struct record_ctx rc;
	struct bp_sample_key key[2];
	__u64 ips[2];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	uint64_t ticks;

	if (!e)
		return -1;
	e->rc.o = &e->o;
	e->rc.prof = profile__new();
	e->rc.pt = ptab__new(NULL);
	e->rc.sym = symbolizer__new(&(struct symbolizer_opts){ .ptab = e->rc.pt });
	e->rc.labels = labels__new(e->rc.pt, 0);
	if (procfs__starttime("/proc", (uint32_t)getpid(), &ticks))
		return -1;
	for (int i = 0; i < 2; i++) {
		e->key[i].tgid = (uint32_t)getpid();
		e->key[i].start_time = ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
		e->key[i].ustack = 100 + (uint64_t)i;
		memcpy(e->key[i].comm, "memo", 5);
	}
	e->ips[0] = (uint64_t)(uintptr_t)memo_leaf + 4;
	e->ips[1] = (uint64_t)(uintptr_t)memo_other_leaf + 4;
	*state = e;
	return e->rc.prof && e->rc.sym && e->rc.labels ? 0 : -1;
}

static int teardown(void **state)
{
	struct env *e = *state;

	htab__free(e->rc.memo);
	labels__free(e->rc.labels);
	symbolizer__free(e->rc.sym);
	ptab__free(e->rc.pt);
	profile__free(e->rc.prof);
	free(e);
	return 0;
}

/* Key i's sample as the drain hands it out, with its stack unless known. */
static struct collector_sample sample(struct env *e, int i, uint64_t count, uint64_t *cookie)
{
	return (struct collector_sample){ .key = &e->key[i],
					  .uips = &e->ips[i],
					  .nr_uips = 1,
					  .count = count,
					  .cookie = cookie };
}

/* The count of the sample whose leaf frame is named name (0 if none). */
static uint64_t count_of(const struct profile *p, const char *name)
{
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);
		uint32_t n = 0;
		const uint32_t *frames = profile__stack_get(p, s->stack, &n);

		if (frames && n && !strcmp(profile__frame_get(p, frames[n - 1])->name, name))
			return s->count;
	}
	return 0;
}

static void test_a_key_comes_back_by_its_cookie(void **state)
{
	struct env *e = *state;
	uint64_t cookie[2] = { 0 }, saved;
	struct collector_sample s;

	s = sample(e, 0, 3, &cookie[0]);
	assert_false(record__known_sample(&e->rc, &s));
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_int_equal(count_of(e->rc.prof, "memo_leaf"), 3);
	assert_true(cookie[0] != 0);
	assert_int_equal(e->rc.memo_hits, 0);

	/* Handed out again: known, without stacks, and only counted. */
	s = sample(e, 0, 4, &cookie[0]);
	assert_true(record__known_sample(&e->rc, &s));
	s.uips = NULL;
	s.nr_uips = 0;
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_int_equal(count_of(e->rc.prof, "memo_leaf"), 7);
	assert_int_equal(e->rc.memo_hits, 1);
	assert_int_equal(profile__nr_samples(e->rc.prof), 1);

	/* The set was emptied (cookie 0 again): found by the key, the cookie set anew. */
	saved = cookie[0];
	cookie[0] = 0;
	s = sample(e, 0, 1, &cookie[0]);
	assert_true(record__known_sample(&e->rc, &s));
	assert_int_equal(cookie[0], saved);
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_int_equal(count_of(e->rc.prof, "memo_leaf"), 8);

	/* A second key gets a sample (and a cookie) of its own. */
	s = sample(e, 1, 2, &cookie[1]);
	assert_false(record__known_sample(&e->rc, &s));
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_true(cookie[1] != 0 && cookie[1] != cookie[0]);
	assert_int_equal(count_of(e->rc.prof, "memo_other_leaf"), 2);
	assert_int_equal(count_of(e->rc.prof, "memo_leaf"), 8);
}

/*
 * The next interval's profile: the cookies name samples of the last one. A
 * key is symbolized into the new profile, never counted at an index taken
 * from the old.
 */
static void test_a_cookie_of_another_profile_is_not_taken(void **state)
{
	struct env *e = *state;
	uint64_t cookie[2] = { 0 };
	struct collector_sample s;
	struct profile *old;

	for (int i = 1; i >= 0; i--) { /* key 1 first: index 0 in the old profile */
		s = sample(e, i, 5, &cookie[i]);
		assert_int_equal(record__on_sample(&e->rc, &s), 0);
	}
	old = e->rc.prof;
	e->rc.prof = profile__new();
	assert_non_null(e->rc.prof);

	/* Only key 0 drains now: its old index was 1, the new profile has none. */
	s = sample(e, 0, 2, &cookie[0]);
	assert_false(record__known_sample(&e->rc, &s));
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_int_equal(profile__nr_samples(e->rc.prof), 1);
	assert_int_equal(count_of(e->rc.prof, "memo_leaf"), 2);
	assert_int_equal(count_of(e->rc.prof, "memo_other_leaf"), 0);
	/* And key 1's stale cookie (index 0, now key 0's) is not used either. */
	s = sample(e, 1, 1, &cookie[1]);
	assert_false(record__known_sample(&e->rc, &s));
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_int_equal(count_of(e->rc.prof, "memo_leaf"), 2);
	assert_int_equal(count_of(e->rc.prof, "memo_other_leaf"), 1);
	profile__free(old);
}

/*
 * A catalog replaced (bpfprof top): the samples still in use are copied into
 * the new profile, and their keys stay known there - counted, not
 * symbolized again; a key left behind is symbolized anew.
 */
static void test_the_memo_follows_copied_samples(void **state)
{
	struct env *e = *state;
	uint64_t cookie[2] = { 0 }, frames;
	struct collector_sample s;
	struct profile *old = e->rc.prof, *next = profile__new();
	bool keep[2];
	int64_t map[2];

	assert_non_null(next);
	for (int i = 0; i < 2; i++) {
		s = sample(e, i, 5, &cookie[i]);
		assert_int_equal(record__on_sample(&e->rc, &s), 0);
	}
	assert_int_equal(profile__nr_samples(old), 2);
	/* Key 1's sample only is copied (its index in old: the second). */
	keep[0] = false;
	keep[1] = true;
	assert_int_equal(profile__copy_if(next, old, keep, map), 0);
	record__memo_move(&e->rc, old, next, map, 2);
	e->rc.prof = next;
	frames = e->rc.frames;

	s = sample(e, 1, 3, &cookie[1]);
	assert_true(record__known_sample(&e->rc, &s)); /* by the key: the old cookie is stale */
	s.uips = NULL;
	s.nr_uips = 0;
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_int_equal(e->rc.frames, frames); /* nothing symbolized */
	assert_int_equal(count_of(next, "memo_other_leaf"), 3);

	s = sample(e, 0, 2, &cookie[0]);
	assert_false(record__known_sample(&e->rc, &s));
	assert_int_equal(record__on_sample(&e->rc, &s), 0);
	assert_true(e->rc.frames > frames);
	assert_int_equal(count_of(next, "memo_leaf"), 2);
	assert_int_equal(profile__nr_samples(next), 2);
	profile__free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_key_comes_back_by_its_cookie, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_cookie_of_another_profile_is_not_taken,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_memo_follows_copied_samples, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
