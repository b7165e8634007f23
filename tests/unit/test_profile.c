// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_profile.c - interning, merging and the folded writer (golden output). */
#include "testutil.h"

#include "format/writer.h"
#include "base/profile.h"

/* Adds comm;frames... where a frame ending in "_[k]" is a kernel frame. */
static void add(struct profile *p, const char *comm, uint32_t pid, uint64_t count, int n, ...)
{
	uint32_t ids[16];
	struct psample s = { .pid = pid, .comm = comm };
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *name = va_arg(ap, const char *);
		size_t l = strlen(name);
		int64_t id;

		if (l > 4 && !strcmp(name + l - 4, "_[k]")) {
			char buf[256];

			snprintf(buf, sizeof(buf), "%.*s", (int)(l - 4), name);
			id = profile__frame(p, FRAME_KERNEL, buf, NULL);
		} else {
			id = profile__frame(p, FRAME_USER, name, "/bin/x");
		}
		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	va_end(ap);
	assert_int_equal(profile__add(p, &s, ids, n, count), 0);
}

static char *write_to_string(const struct writer *w, const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(w->write(p, f, NULL), 0);
	fclose(f);
	return buf;
}

static void test_interning_and_merge(void **state)
{
	struct profile *p = profile__new();

	add(p, "app", 1, 3, 2, "main", "work");
	add(p, "app", 1, 2, 2, "main", "work"); /* same identity and stack: merged */
	add(p, "app", 2, 1, 2, "main", "work"); /* other pid: a separate sample */
	assert_int_equal(profile__nr_samples(p), 2);
	assert_int_equal(profile__nr_stacks(p), 1);
	assert_int_equal(profile__nr_frames(p), 2);
	assert_int_equal(profile__total(p), 6);
	/* A kernel frame and a user frame with the same name are different frames. */
	assert_true(profile__frame(p, FRAME_KERNEL, "work", NULL) !=
		    profile__frame(p, FRAME_USER, "work", "/bin/x"));
	{
		struct profile *q = profile__new();

		add(q, "app", 1, 10, 2, "main", "work");
		add(q, "other", 9, 4, 1, "solo");
		assert_int_equal(profile__merge(p, q), 0);
		assert_int_equal(profile__total(p), 20);
		assert_int_equal(profile__nr_samples(p), 3);
		profile__free(q);
	}
	profile__free(p);
	profile__free(NULL);
}

/*
 * A copy keeps what the chosen samples are (stacks, frames, identity), not
 * their counts, and says where each went; the rest are not copied, nor
 * the frames only they used.
 */
static void test_copy_if(void **state)
{
	struct profile *src = profile__new(), *dst = profile__new();
	bool keep[3] = { true, false, true };
	int64_t map[3];
	const struct psample *s;
	const uint32_t *fr;
	uint32_t n;

	(void)state;
	add(src, "app", 1, 3, 2, "main", "work");
	add(src, "app", 1, 5, 2, "main", "only_dropped");
	add(src, "tool", 7, 2, 3, "main", "work", "read_[k]");
	assert_int_equal(profile__set_build_id(src, "/bin/x", "abcd"), 0);
	assert_int_equal(profile__copy_if(dst, src, keep, map), 0);
	assert_int_equal(profile__nr_samples(dst), 2);
	assert_int_equal(map[1], -1);
	assert_true(map[0] >= 0 && map[2] >= 0 && map[0] != map[2]);
	assert_int_equal(profile__total(dst), 0);
	assert_int_equal(profile__nr_frames(dst), 3); /* main, work, read: not only_dropped */
	s = profile__sample(dst, (size_t)map[2]);
	assert_int_equal(s->pid, 7);
	assert_string_equal(s->comm, "tool");
	assert_int_equal(s->count, 0);
	fr = profile__stack_get(dst, s->stack, &n);
	assert_int_equal(n, 3);
	assert_string_equal(profile__frame_get(dst, fr[0])->name, "main");
	assert_string_equal(profile__frame_get(dst, fr[2])->name, "read");
	assert_int_equal(profile__frame_get(dst, fr[2])->kind, FRAME_KERNEL);
	assert_string_equal(profile__build_id(dst, "/bin/x"), "abcd");
	/* Counted in dst from here, as samples of its own. */
	assert_int_equal(profile__add_count(dst, (size_t)map[0], 4), 0);
	assert_int_equal(profile__sample(dst, (size_t)map[0])->count, 4);
	assert_int_equal(profile__total(dst), 4);
	profile__free(src);
	profile__free(dst);
}

/* profile__find_all: the samples of another profile found by their identity
 * (frames by value), nothing added; profile__add_alloc_at adds to one in place. */
static void test_find(void **state)
{
	struct profile *src = profile__new(), *dst = profile__new();
	struct palloc v = { .alloc_objects = 2, .alloc_bytes = 64 };
	int64_t at[5];
	size_t nf, ns;

	(void)state;
	add(dst, "app", 1, 3, 2, "main", "work");
	add(dst, "app", 1, 1, 1, "main");
	add(src, "other", 9, 1, 1, "unrelated"); /* frames in another order than dst's */
	add(src, "app", 1, 5, 2, "main", "work");
	add(src, "app", 2, 5, 2, "main", "work");  /* another pid */
	add(src, "tool", 1, 5, 2, "main", "work"); /* another comm */
	add(src, "app", 1, 5, 2, "work", "main");  /* another stack */
	nf = profile__nr_frames(dst);
	ns = profile__nr_samples(dst);
	assert_int_equal(profile__find_all(dst, src, at), 0);
	assert_int_equal(at[0], -1);
	assert_int_equal(at[1], 0);
	assert_int_equal(at[2], -1);
	assert_int_equal(at[3], -1);
	assert_int_equal(at[4], -1);
	assert_int_equal(profile__nr_frames(dst), nf);
	assert_int_equal(profile__nr_samples(dst), ns);
	assert_int_equal(profile__add_alloc_at(dst, 0, &v), 0);
	assert_int_equal(profile__add_alloc_at(dst, 0, &v), 0);
	assert_int_equal(profile__sample(dst, 0)->alloc.alloc_bytes, 128);
	assert_int_equal(profile__sample(dst, 0)->alloc.alloc_objects, 4);
	assert_int_equal(profile__add_alloc_at(dst, 2, &v), -EINVAL);
	profile__free(src);
	profile__free(dst);
}

static void test_folded_golden(void **state)
{
	struct profile *p = profile__new();
	char *out;

	add(p, "worker", 10, 5, 3, "main", "compute", "leaf_a");
	add(p, "worker", 11, 2, 3, "main", "compute", "leaf_a"); /* other pid, same text: summed */
	add(p, "worker", 10, 1, 4, "main", "do_read", "vfs_read_[k]", "read_zero_[k]");
	add(p, "my;comm", 12, 1, 1, "fn;with;semis"); /* ';' would split frames */
	add(p, "idle", 13, 0, 1, "never");	      /* zero counts are not printed */
	add(p, "kthread", 14, 4, 0);		      /* no frames: just the comm */
	profile__sort(p);
	out = write_to_string(&writer_folded, p);
	assert_string_equal(out, "kthread 4\n"
				 "my:comm;fn:with:semis 1\n"
				 "worker;main;compute;leaf_a 7\n"
				 "worker;main;do_read;vfs_read_[k];read_zero_[k] 1\n");
	free(out);
	profile__free(p);
}

static void test_writer_table(void **state)
{
	assert_ptr_equal(writer__find("folded"), &writer_folded);
	assert_null(writer__find("nope"));
	assert_ptr_equal(writer__for_path("/tmp/x.folded"), &writer_folded);
	assert_null(writer__for_path("/tmp/x.unknown"));
}

static void test_atomic_write(void **state)
{
	char dir[] = "/tmp/bpfprof-out-XXXXXX", path[256], *buf;
	struct profile *p = profile__new();
	size_t len;

	assert_non_null(mkdtemp(dir));
	add(p, "a", 1, 1, 1, "f");
	snprintf(path, sizeof(path), "%s/p.folded", dir);
	assert_int_equal(writer__write_path(&writer_folded, p, path, NULL, NULL), 0);
	assert_int_equal(read_file(path, 1 << 20, &buf, &len), 0);
	assert_string_equal(buf, "a;f 1\n");
	free(buf);
	assert_int_equal(writer__check_path(path, NULL), 0);
	/* Missing directory: reported before profiling starts. */
	snprintf(path, sizeof(path), "%s/missing/p.folded", dir);
	assert_int_equal(writer__check_path(path, NULL), -ENOENT);
	assert_true(writer__write_path(&writer_folded, p, path, NULL, NULL) < 0);
	assert_int_equal(writer__check_path(dir, NULL), -EISDIR);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
	profile__free(p);
}

/* Samples with only a process name: their stack is empty, and valid to read. */
static void test_only_empty_stacks(void **state)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 1, .comm = "kthread" };
	const uint32_t *fr;
	uint32_t n = 7;

	assert_int_equal(profile__add(p, &s, &(uint32_t){ 0 }, 0, 3), 0);
	fr = profile__stack_get(p, profile__sample(p, 0)->stack, &n);
	assert_non_null(fr);
	assert_int_equal(n, 0);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interning_and_merge),
		cmocka_unit_test(test_copy_if),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_folded_golden),
		cmocka_unit_test(test_writer_table),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_only_empty_stacks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
