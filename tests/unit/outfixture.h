/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * outfixture.h - for the writer and reader tests: one fixed in-memory profile
 * that exercises every corner a writer has (several processes and threads,
 * kernel, JIT and unsymbolized frames, recursion, a sample with no frames,
 * names that need escaping, invalid UTF-8, build ids), writing a writer's
 * output to a string, and golden files under tests/unit/golden/.
 *
 * BPFPROF_UPDATE_GOLDEN=1 rewrites the golden files from the current output
 * (then review the diff before committing it).
 */
#ifndef BPFPROF_OUTFIXTURE_H
#define BPFPROF_OUTFIXTURE_H

#include "testutil.h"

#include "format/writer.h"
#include "base/profile.h"

struct fx_frame {
	enum frame_kind kind;
	const char *name, *module;
};

/* clang-format off */
#define FX_USER(n)	{ FRAME_USER, n, "/usr/bin/app" }
#define FX_LIB(n)	{ FRAME_USER, n, "/usr/lib/libc.so.6" }
#define FX_KERN(n)	{ FRAME_KERNEL, n, NULL }
#define FX_JIT(n)	{ FRAME_JIT, n, "/tmp/perf-200.map" }
#define FX_NOMOD(n)	{ FRAME_USER, n, NULL }
/* clang-format on */

static inline void fx_add(struct profile *p, const char *comm, uint32_t pid, uint32_t tid,
			  uint64_t count, const struct fx_frame *fr, size_t n)
{
	struct psample s = { .pid = pid, .tid = tid, .comm = comm };
	uint32_t ids[32];

	assert_true(n <= 32);
	for (size_t i = 0; i < n; i++) {
		int64_t id = profile__frame(p, fr[i].kind, fr[i].name, fr[i].module);

		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	assert_int_equal(profile__add(p, &s, ids, (uint32_t)n, count), 0);
}

#define FX(p, comm, pid, tid, count, ...)                                                          \
	do {                                                                                       \
		const struct fx_frame fr_[] = { __VA_ARGS__ };                                     \
		fx_add(p, comm, pid, tid, count, fr_, sizeof(fr_) / sizeof(fr_[0]));               \
	} while (0)

/* The fixed profile every writer test uses (sorted, with metadata). */
static inline struct profile *fx_profile(void)
{
	struct profile *p = profile__new();
	struct profile_meta *m;

	assert_non_null(p);
	m = profile__meta(p);
	m->freq_hz = 99;
	m->start_ns = 1700000000123456789ull; /* 2023-11-14 22:13:20 UTC */
	m->duration_ns = 10000000000ull;
	m->lost = 3;
	snprintf(m->hostname, sizeof(m->hostname), "testhost");

	FX(p, "app", 100, 101, 50, FX_LIB("__libc_start_main"), FX_USER("main"), FX_USER("compute"),
	   FX_USER("leaf_a"));
	FX(p, "app", 100, 102, 25, FX_LIB("__libc_start_main"), FX_USER("main"), FX_USER("compute"),
	   FX_USER("leaf_b"));
	FX(p, "app", 100, 101, 10, FX_LIB("__libc_start_main"), FX_USER("main"), FX_LIB("read"),
	   FX_KERN("entry_SYSCALL_64"), FX_KERN("vfs_read"));
	FX(p, "app", 100, 101, 5, FX_LIB("__libc_start_main"), FX_USER("main"),
	   FX_LIB("libc.so.6+0x1234"));
	/* Another process with the same name: recursion counts once in "total". */
	FX(p, "app", 300, 0, 7, FX_USER("main"), FX_USER("recurse"), FX_USER("recurse"),
	   FX_USER("recurse"));
	FX(p, "java", 200, 0, 8, FX_NOMOD("Interpreter"), FX_JIT("LFoo;::bar"));
	/* Names a writer must escape; a frame with a template and arguments. */
	FX(p, "we<ird>", 400, 0, 3, FX_USER("ns::f<int>(char const*, \"q\")"), FX_USER("a&b;c\\d"),
	   FX_NOMOD("bad\xff"
		    "utf8"));
	/* A sample with no frames (kernel-only sampling of user code). */
	FX(p, "idle", 500, 0, 2, );
	assert_int_equal(profile__set_build_id(p, "/usr/bin/app", "0123456789abcdef"), 0);
	assert_int_equal(profile__set_build_id(p, "[kernel.kallsyms]", "fedcba9876543210"), 0);
	profile__sort(p);
	return p;
}

/* A writer's output as a malloc'd string (*len set if len). */
static inline char *fx_write(const struct writer *w, const struct profile *p,
			     const struct out_opts *o, size_t *len)
{
	char *buf = NULL;
	size_t l = 0;
	FILE *f = open_memstream(&buf, &l);

	assert_non_null(f);
	assert_int_equal(w->write(p, f, o), 0);
	assert_int_equal(fclose(f), 0);
	if (len)
		*len = l;
	return buf;
}

static inline char *fx_write_diff(const struct diff_writer *w, const struct profile *before,
				  const struct profile *after, const struct out_opts *o)
{
	char *buf = NULL;
	size_t l = 0;
	FILE *f = open_memstream(&buf, &l);

	assert_non_null(f);
	assert_int_equal(w->write(before, after, f, o), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static inline const char *golden_path(const char *name)
{
	static char buf[4096];
	const char *dir = getenv("BPFPROF_GOLDEN");

	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : "tests/unit/golden", name);
	return buf;
}

/* Compares actual with golden file name; prints the first difference. */
static inline void assert_golden(const char *name, const char *actual, size_t len)
{
	const char *path = golden_path(name);
	char *want = NULL;
	size_t wlen = 0, i;

	if (getenv("BPFPROF_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(actual, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
		return;
	}
	if (read_file(path, 64 << 20, &want, &wlen)) {
		print_error("cannot read golden file %s (BPFPROF_UPDATE_GOLDEN=1 makes it)\n",
			    path);
		fail();
	}
	for (i = 0; i < len && i < wlen && actual[i] == want[i]; i++)
		;
	if (i != len || len != wlen) {
		size_t from = i > 80 ? i - 80 : 0;

		print_error("%s differs at byte %zu:\n--- want ---\n%.*s\n--- got ---\n%.*s\n",
			    path, i, (int)MIN(wlen - from, (size_t)200), want + from,
			    (int)MIN(len - from, (size_t)200), actual + from);
		free(want);
		fail();
	}
	free(want);
}

#endif
