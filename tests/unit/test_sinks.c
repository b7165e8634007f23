// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_sinks.c - continuous mode's sinks without a collector
 * (session/sinks.c): an engine hands sinks__emit() a finished profile and
 * its kind; each kind goes to its own store in one --output-dir
 * (".pb.gz", ".heap.pb.gz") with its own retention, --max-disk shared; a
 * profile of the wrong kind is refused, never written among the others.
 */
#include "dirfixture.h"

#include <sys/stat.h>

#include "agent/store.h"
#include "base/profile.h"
#include "session/options.h"
#include "session/record.h"

static struct profile *heap_profile(void)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 1, .comm = "app" };
	struct palloc v = { 3, 3000, 1, 1000 };
	uint32_t f = (uint32_t)profile__frame(p, FRAME_USER, "keep", "/bin/app");

	assert_int_equal(profile__add_alloc(p, &s, &f, 1, &v), 0);
	profile__meta(p)->alloc_period = 524288;
	return p;
}

/* A CPU profile's file: a name ending with .pb.gz but not .heap.pb.gz. */
static bool cpu_file(const char *name, const char *unused)
{
	(void)unused;
	return name_ends(name, ".pb.gz") && !strstr(name, ".heap.pb.gz");
}

/* The kinds a run's options ask for: --alloc makes heap profiles instead. */
static void test_kinds_of_options(void **state)
{
	struct options o = { 0 };

	(void)state;
	assert_int_equal(sinks__kinds(&o), SINK_BIT(SINK_CPU));
	o.alloc_period = 524288;
	assert_int_equal(sinks__kinds(&o), SINK_BIT(SINK_HEAP));
}

/*
 * Both kinds emitted into one --output-dir with no collector anywhere: each
 * to its store, --keep on each; the wrong kind is refused and written
 * nowhere; a later CPU-only run leaves the heap files alone.
 */
static void test_emit_two_kinds(void **state)
{
	struct options o = { .output_dir = dir, .keep = 2 };
	struct continuous ct = { 0 };
	struct profile *c = small_profile(), *h = heap_profile();
	struct store_stats st;
	char path[512], buf[128];

	(void)state;
	assert_int_equal(sinks__open_kinds(&ct, &o, SINK_BIT(SINK_CPU) | SINK_BIT(SINK_HEAP)), 0);
	for (int i = 0; i < 3; i++) {
		uint64_t t = T0 + (uint64_t)i * SEC;

		assert_int_equal(sinks__emit(&ct, SINK_CPU, c, t, t + SEC, path, sizeof(path)), 0);
		assert_non_null(strstr(path, dir));
		assert_null(strstr(path, ".heap."));
		assert_int_equal(sinks__emit(&ct, SINK_HEAP, h, t, t + SEC, path, sizeof(path)), 0);
		assert_non_null(strstr(path, "Z.heap.pb.gz"));
	}
	/* A profile of the other kind: refused, nothing written. */
	assert_int_equal(sinks__emit(&ct, SINK_CPU, h, T0, T0 + SEC, path, sizeof(path)), -EINVAL);
	assert_string_equal(path, "");
	assert_int_equal(sinks__emit(&ct, SINK_HEAP, c, T0, T0 + SEC, NULL, 0), -EINVAL);
	assert_int_equal(sinks__emit(&ct, SINK_KINDS, c, T0, T0 + SEC, NULL, 0), -EINVAL);
	assert_int_equal(ct.emitted[SINK_CPU], 3);
	assert_int_equal(ct.emitted[SINK_HEAP], 3);
	store__stats(ct.store[SINK_CPU], &st);
	assert_int_equal(st.written, 3);
	assert_int_equal(st.files, 2);
	store__stats(ct.store[SINK_HEAP], &st);
	assert_int_equal(st.written, 3);
	assert_int_equal(st.files, 2);
	assert_int_equal(dir_count(name_ends, ".heap.pb.gz"), 2);
	assert_int_equal(dir_count(cpu_file, NULL), 2);
	sinks__status(&ct, buf, sizeof(buf));
	assert_string_equal(buf, ", 6 profiles written");
	sinks__close(&ct);
	profile__free(c);
	profile__free(h);

	/* A CPU-only run (the default): its store only; a heap profile is refused. */
	memset(&ct, 0, sizeof(ct));
	o.keep = 1;
	assert_int_equal(sinks__open(&ct, &o), 0);
	assert_null(ct.store[SINK_HEAP]);
	h = heap_profile();
	assert_int_equal(sinks__emit(&ct, SINK_HEAP, h, T0, T0 + SEC, NULL, 0), -EINVAL);
	profile__free(h);
	sinks__close(&ct);
	assert_int_equal(dir_count(cpu_file, NULL), 1);
	assert_int_equal(dir_count(name_ends, ".heap.pb.gz"), 2);
}

/* --max-disk with two kinds: half each, so one kind cannot push the other out. */
static void test_max_disk_shared(void **state)
{
	struct options o = { .output_dir = dir };
	struct continuous ct = { 0 };
	struct profile *c = small_profile(), *h = heap_profile();
	struct store_stats cs, hs;
	uint64_t most;

	(void)state;
	/* The files' sizes, from a run without limits. */
	assert_int_equal(sinks__open_kinds(&ct, &o, SINK_BIT(SINK_CPU) | SINK_BIT(SINK_HEAP)), 0);
	assert_int_equal(sinks__emit(&ct, SINK_CPU, c, T0, T0 + SEC, NULL, 0), 0);
	assert_int_equal(sinks__emit(&ct, SINK_HEAP, h, T0, T0 + SEC, NULL, 0), 0);
	store__stats(ct.store[SINK_CPU], &cs);
	store__stats(ct.store[SINK_HEAP], &hs);
	most = cs.bytes > hs.bytes ? cs.bytes : hs.bytes;
	sinks__close(&ct);

	/* Room for 6 of the larger in all: each store alone would keep more than half. */
	memset(&ct, 0, sizeof(ct));
	o.max_disk = 6 * most;
	assert_int_equal(sinks__open_kinds(&ct, &o, SINK_BIT(SINK_CPU) | SINK_BIT(SINK_HEAP)), 0);
	for (int i = 1; i <= 6; i++) {
		uint64_t t = T0 + (uint64_t)i * SEC;

		assert_int_equal(sinks__emit(&ct, SINK_CPU, c, t, t + SEC, NULL, 0), 0);
		assert_int_equal(sinks__emit(&ct, SINK_HEAP, h, t, t + SEC, NULL, 0), 0);
	}
	store__stats(ct.store[SINK_CPU], &cs);
	store__stats(ct.store[SINK_HEAP], &hs);
	assert_true(cs.files >= 1 && cs.bytes <= o.max_disk / 2);
	assert_true(hs.files >= 1 && hs.bytes <= o.max_disk / 2);
	sinks__close(&ct);
	profile__free(c);
	profile__free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_of_options),
		cmocka_unit_test_setup_teardown(test_emit_two_kinds, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_max_disk_shared, dir_setup, dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
