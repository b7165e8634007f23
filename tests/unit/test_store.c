// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_store.c - retention of the interval store (agent/store.h) counts and
 * removes only files the store wrote: earlier runs' files by owner, link
 * count and exact name; files that appear after the start are never listed
 * (the store remembers what it wrote instead of listing the directory after
 * every write); names it does not make and other users' files stay; two
 * stores of different extensions share a directory without touching each
 * other's files.
 */
#include "dirfixture.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "agent/store.h"
#include "base/profile.h"
#include "format/writer.h"

static void touch(const char *name)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "app;old 1\n", 10), 10);
	close(fd);
}

static bool exists(const char *name)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

/* Earlier runs' files count and go first; names the store does not make stay. */
static void test_restart_keeps_counting_its_files(void **state)
{
	struct store_opts so = {
		.dir = dir, .writer = &writer_folded, .ext = ".folded", .keep = 3
	};
	static const char *const foreign[] = {
		"bpfprof-20201301T000000Z.folded",     /* month 13 */
		"bpfprof-20200101T000000Z-007.folded", /* not how -N is written */
		"bpfprof-20200101T000000Z-0.folded",   "bpfprof-20200101T000000Z.folded.bak",
		"bpfprof-20200101T000000Z.pb.gz", /* another extension */
		"bpfprof-20200101T000000Zx.folded",    "bpfprof-20200101T000000Z.folded.tmp.abc",
	};
	struct profile *p = small_profile();
	struct store_stats st;
	struct store *s;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(foreign); i++)
		touch(foreign[i]);
	touch("bpfprof-20200101T000000Z.folded"); /* an earlier run's, the oldest */
	touch("bpfprof-20200101T000000Z-2.folded");
	touch("bpfprof-20200101T000001Z.folded");
	s = store__open(&so, NULL);
	assert_non_null(s);
	store__stats(s, &st);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.bytes, 30);
	assert_int_equal(store__write(s, p, T0, NULL, 0), 0);
	assert_int_equal(store__write(s, p, T0 + SEC, NULL, 0), 0);
	store__stats(s, &st);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.pruned, 2);
	assert_false(exists("bpfprof-20200101T000000Z.folded"));
	assert_false(exists("bpfprof-20200101T000000Z-2.folded"));
	assert_true(exists("bpfprof-20200101T000001Z.folded"));
	for (size_t i = 0; i < ARRAY_SIZE(foreign); i++)
		assert_true(exists(foreign[i]));
	store__close(s);
	profile__free(p);
}

/*
 * After the start the directory is never listed: a file that appears then,
 * even one named like ours, is neither counted nor removed, however many
 * intervals pass (a listing per write made prune cost grow with the
 * directory, and let such files push real profiles out).
 */
static void test_no_listing_after_start(void **state)
{
	struct store_opts so = {
		.dir = dir, .writer = &writer_folded, .ext = ".folded", .keep = 2
	};
	struct profile *p = small_profile();
	struct store_stats st;
	struct store *s;
	char path[512];

	(void)state;
	s = store__open(&so, NULL);
	assert_non_null(s);
	touch("bpfprof-19990101T000000Z.folded");
	touch("bpfprof-19990101T000001Z.folded");
	for (int i = 0; i < 5; i++)
		assert_int_equal(store__write(s, p, T0 + (uint64_t)i * SEC, path, sizeof(path)), 0);
	store__stats(s, &st);
	assert_int_equal(st.written, 5);
	assert_int_equal(st.files, 2);
	assert_int_equal(st.pruned, 3);
	assert_true(exists("bpfprof-19990101T000000Z.folded"));
	assert_true(exists("bpfprof-19990101T000001Z.folded"));
	assert_true(exists("bpfprof-20261122T091004Z.folded"));
	assert_true(exists("bpfprof-20261122T091003Z.folded"));
	assert_false(exists("bpfprof-20261122T091002Z.folded"));
	/* Same second as a file that exists: a new name, never over it. */
	assert_int_equal(store__write(s, p, T0 + 4 * SEC, path, sizeof(path)), 0);
	assert_non_null(strstr(path, "T091004Z-1.folded"));
	assert_int_equal(dir_count(name_has, ".tmp."), 0);
	store__close(s);
	profile__free(p);
}

/* --max-disk from the sizes the store wrote. */
static void test_max_disk_in_memory(void **state)
{
	struct store_opts so = {
		.dir = dir, .writer = &writer_folded, .ext = ".txt", .max_disk = 25
	};
	struct profile *p = small_profile(); /* "app;main 7\n": 11 bytes */
	struct store_stats st;
	struct store *s;

	(void)state;
	s = store__open(&so, NULL);
	assert_non_null(s);
	for (int i = 0; i < 6; i++)
		assert_int_equal(store__write(s, p, T0 + (uint64_t)i * SEC, NULL, 0), 0);
	store__stats(s, &st);
	assert_int_equal(st.files, 2);
	assert_int_equal(st.bytes, 22);
	assert_int_equal(st.pruned, 4);
	assert_int_equal(dir_count(name_has, ".txt"), 2);
	store__close(s);
	profile__free(p);
}

/* As root: another user's files, and hard links, are never ours. */
static void test_other_owners_files_stay(void **state)
{
	struct store_opts so = { .dir = dir, .writer = &writer_folded, .ext = ".gz", .keep = 1 };
	struct profile *p = small_profile();
	char a[256], b[256];
	struct store_stats st;
	struct store *s;

	(void)state;
	if (geteuid() != 0)
		skip();
	touch("bpfprof-20000101T000000Z.gz");
	touch("bpfprof-20000101T000000Z.gz.tmp.Ab3dE9");
	snprintf(a, sizeof(a), "%s/bpfprof-20000101T000000Z.gz", dir);
	assert_int_equal(chown(a, 4242, 4242), 0);
	snprintf(a, sizeof(a), "%s/bpfprof-20000101T000000Z.gz.tmp.Ab3dE9", dir);
	assert_int_equal(chown(a, 4242, 4242), 0);
	touch("linked");
	snprintf(a, sizeof(a), "%s/linked", dir);
	snprintf(b, sizeof(b), "%s/bpfprof-20000101T000001Z.gz", dir);
	assert_int_equal(link(a, b), 0);
	s = store__open(&so, NULL);
	assert_non_null(s);
	store__stats(s, &st);
	assert_int_equal(st.files, 0);
	assert_int_equal(store__write(s, p, T0, NULL, 0), 0);
	assert_int_equal(store__write(s, p, T0 + SEC, NULL, 0), 0);
	assert_true(exists("bpfprof-20000101T000000Z.gz"));
	assert_true(exists("bpfprof-20000101T000000Z.gz.tmp.Ab3dE9"));
	assert_true(exists("bpfprof-20000101T000001Z.gz"));
	assert_false(exists("bpfprof-20261122T091000Z.gz"));
	assert_true(exists("bpfprof-20261122T091001Z.gz"));
	store__close(s);
	profile__free(p);
}

/*
 * Two stores in one directory, as --output-dir holds the CPU's and --alloc's
 * files (session/sinks.c): ".pb.gz" and ".heap.pb.gz" end alike, but each
 * store lists, counts, prunes and cleans up only its own names - an earlier
 * run's files and a crash's temporary files of the other kind stay.
 */
static void test_two_stores_one_dir(void **state)
{
	struct store_opts co = { .dir = dir, .writer = &writer_folded, .ext = ".pb.gz", .keep = 2 };
	struct store_opts ho = {
		.dir = dir, .writer = &writer_folded, .ext = ".heap.pb.gz", .keep = 3
	};
	struct profile *p = small_profile();
	struct store_stats cs, hs;
	struct store *c, *h;
	char path[512];

	(void)state;
	/* An earlier run's: two of each kind, one "-N" each, a tmp file each. */
	touch("bpfprof-20200101T000000Z.pb.gz");
	touch("bpfprof-20200101T000000Z-1.pb.gz");
	touch("bpfprof-20200101T000000Z.heap.pb.gz");
	touch("bpfprof-20200101T000000Z-1.heap.pb.gz");
	touch("bpfprof-20200101T000001Z.pb.gz.tmp.Ab3dE9");
	touch("bpfprof-20200101T000001Z.heap.pb.gz.tmp.Zy9xW8");
	c = store__open(&co, NULL);
	assert_non_null(c);
	store__stats(c, &cs);
	assert_int_equal(cs.files, 2);
	assert_false(exists("bpfprof-20200101T000001Z.pb.gz.tmp.Ab3dE9"));
	assert_true(exists("bpfprof-20200101T000001Z.heap.pb.gz.tmp.Zy9xW8"));
	h = store__open(&ho, NULL);
	assert_non_null(h);
	store__stats(h, &hs);
	assert_int_equal(hs.files, 2);
	assert_false(exists("bpfprof-20200101T000001Z.heap.pb.gz.tmp.Zy9xW8"));
	/* The same interval edges for both kinds: names never collide. */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(store__write(c, p, T0 + (uint64_t)i * SEC, path, sizeof(path)), 0);
		assert_null(strstr(path, ".heap."));
		assert_int_equal(store__write(h, p, T0 + (uint64_t)i * SEC, path, sizeof(path)), 0);
		assert_non_null(strstr(path, ".heap.pb.gz"));
		assert_null(strstr(path, "Z-"));
	}
	store__stats(c, &cs);
	store__stats(h, &hs);
	assert_int_equal(cs.files, 2);
	assert_int_equal(cs.pruned, 4);
	assert_int_equal(hs.files, 3);
	assert_int_equal(hs.pruned, 3);
	assert_int_equal(dir_count(name_has, ".heap.pb.gz"), 3);
	assert_int_equal(dir_count(name_has, "pb.gz") - dir_count(name_has, ".heap.pb.gz"), 2);
	assert_true(exists("bpfprof-20261122T091003Z.pb.gz"));
	assert_true(exists("bpfprof-20261122T091002Z.pb.gz"));
	assert_true(exists("bpfprof-20261122T091001Z.heap.pb.gz"));
	assert_false(exists("bpfprof-20261122T091000Z.heap.pb.gz"));
	store__close(c);
	store__close(h);
	/* A restart of one kind alone: the other kind's files are not its own. */
	co.keep = 1;
	c = store__open(&co, NULL);
	assert_non_null(c);
	store__stats(c, &cs);
	assert_int_equal(cs.files, 1);
	assert_int_equal(dir_count(name_has, ".heap.pb.gz"), 3);
	store__close(c);
	profile__free(p);
}

/* A directory others can write is refused, saying who owns it and its mode. */
static void test_shared_dir_refused(void **state)
{
	struct store_opts so = { .dir = dir, .writer = &writer_folded, .ext = ".folded" };
	struct errmsg em = { 0 };

	(void)state;
	assert_int_equal(chmod(dir, 01777), 0);
	assert_null(store__open(&so, &em));
	assert_int_equal(errno, EACCES);
	assert_non_null(strstr(em.msg, "mode 1777"));
	assert_int_equal(chmod(dir, 0700), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_restart_keeps_counting_its_files, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(test_no_listing_after_start, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(test_max_disk_in_memory, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_other_owners_files_stay, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(test_shared_dir_refused, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_two_stores_one_dir, dir_setup, dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
