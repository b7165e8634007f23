// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_alloc_profile.c - allocation profiles (bpfprof --alloc) outside the
 * kernel: the four values in the profile (summed, merged, saturating at
 * pprof's int64 maximum), the views writers of one value get, pprof's heap
 * sample types and their round trip through the reader.
 */
#include "outfixture.h"

#include <errno.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif

#include "format/pprof_proto.h"
#include "format/reader.h"
#include "format/view.h"

static void add(struct profile *p, const char *leaf, uint64_t ao, uint64_t ab, uint64_t io,
		uint64_t ib)
{
	struct psample s = { .pid = 7, .comm = "app" };
	struct palloc v = { ao, ab, io, ib };
	uint32_t ids[2];
	int64_t a = profile__frame(p, FRAME_USER, "main", "/usr/bin/app");
	int64_t b = profile__frame(p, FRAME_USER, leaf, "/usr/bin/app");

	assert_true(a >= 0 && b >= 0);
	ids[0] = (uint32_t)a;
	ids[1] = (uint32_t)b;
	assert_int_equal(profile__add_alloc(p, &s, ids, 2, &v), 0);
}

static struct profile *heap(void)
{
	struct profile *p = profile__new();

	assert_non_null(p);
	add(p, "site_freed", 300, 3000000, 0, 0);
	add(p, "site_kept", 100, 1000000, 100, 1000000);
	add(p, "site_kept", 1, 10000, 1, 10000); /* the same stack: summed */
	profile__meta(p)->alloc_period = 524288;
	return p;
}

static const struct palloc *find(const struct profile *p, const char *leaf)
{
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);
		uint32_t n;
		const uint32_t *fr = profile__stack_get(p, s->stack, &n);

		if (n && !strcmp(profile__frame_get(p, fr[n - 1])->name, leaf))
			return &s->alloc;
	}
	return NULL;
}

static void test_values(void **state)
{
	struct profile *p = heap(), *q = profile__new();
	const struct palloc *k = find(p, "site_kept");

	assert_int_equal(profile__nr_samples(p), 2);
	assert_int_equal(k->alloc_bytes, 1010000);
	assert_int_equal(k->inuse_objects, 101);
	assert_int_equal(profile__total(p), 0); /* no CPU samples */
	assert_int_equal(profile__merge(q, p), 0);
	assert_int_equal(profile__merge(q, p), 0);
	assert_int_equal(find(q, "site_freed")->alloc_bytes, 6000000);
	/* Sums stop at INT64_MAX (pprof's values are int64). */
	add(q, "site_freed", 1, INT64_MAX, 0, 0);
	add(q, "site_freed", 1, UINT64_MAX, 0, 0);
	assert_int_equal(find(q, "site_freed")->alloc_bytes, INT64_MAX);
	assert_int_equal(find(q, "site_freed")->alloc_objects, 602);
	profile__free(q);
	profile__free(p);
}

static void test_views(void **state)
{
	struct profile *p = heap(), *v;
	enum view w;
	static const struct {
		const char *name;
		enum view v;
		uint64_t kept, freed;
		const char *unit;
	} want[] = {
		{ "alloc-space", VIEW_ALLOC_SPACE, 1010000, 3000000, "bytes" },
		{ "alloc-objects", VIEW_ALLOC_OBJECTS, 101, 300, "allocs" },
		{ "inuse-space", VIEW_INUSE_SPACE, 1010000, 0, "bytes" },
		{ "inuse-objects", VIEW_INUSE_OBJECTS, 101, 0, "allocs" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		assert_int_equal(view__parse(want[i].name, &w), 0);
		assert_int_equal(w, want[i].v);
		assert_string_equal(view__name(w), want[i].name);
		v = view__build(p, w);
		assert_non_null(v);
		assert_int_equal(profile__total(v), want[i].kept + want[i].freed);
		assert_string_equal(profile__meta_c(v)->unit, want[i].unit);
		assert_int_equal(profile__meta_c(v)->alloc_period, 0);
		assert_int_equal(profile__nr_samples(v), want[i].freed ? 2 : 1);
		profile__free(v);
	}
	assert_int_equal(view__resolve(p, VIEW_AUTO), VIEW_ALLOC_SPACE);
	/* A CPU view of an allocation profile, or the reverse: refused. */
	errno = 0;
	assert_null(view__build(p, VIEW_CPU));
	assert_int_equal(errno, EINVAL);
	profile__meta(p)->alloc_period = 0;
	assert_null(view__build(p, VIEW_INUSE_SPACE));
	profile__free(p);
}

static void test_folded_view(void **state)
{
	struct profile *p = heap();
	struct out_opts o = { .view = VIEW_INUSE_SPACE };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(writer__write_file(&writer_folded, p, f, &o), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(buf, "app;main;site_kept 1010000\n"));
	assert_null(strstr(buf, "site_freed"));
	free(buf);
	profile__free(p);
}

static void test_pprof_round_trip(void **state)
{
	struct profile *p = heap(), *q = profile__new();
	struct errmsg em = { 0 };
	const char *want[] = { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" };
	const uint8_t *at = NULL;
	uint8_t *buf;
	size_t len;

	assert_int_equal(pprof__encode_view(p, VIEW_AUTO, &buf, &len), 0);
	/* The types in Go's order (their strings in the table in order of use). */
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const uint8_t *hit = memmem(buf, len, want[i], strlen(want[i]));

		assert_non_null(hit);
		assert_true(!at || hit > at);
		at = hit;
	}
	assert_int_equal(reader__find("pprof")->read(buf, len, q, &em), 0);
	free(buf);
	assert_int_equal(profile__meta_c(q)->alloc_period, 524288);
	assert_int_equal(profile__total(q), 0);
	assert_int_equal(find(q, "site_kept")->inuse_bytes, 1010000);
	assert_int_equal(find(q, "site_freed")->alloc_objects, 300);
	assert_int_equal(find(q, "site_freed")->inuse_bytes, 0);
	profile__free(q);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_views),
		cmocka_unit_test(test_folded_view),
		cmocka_unit_test(test_pprof_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
