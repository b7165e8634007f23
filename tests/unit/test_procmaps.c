// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_procmaps.c - /proc/PID/maps parsing, lookup and file classification. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "proc/procmaps.h"

static void parse_ok(const char *s, struct procmaps *m)
{
	assert_int_equal(procmaps__parse(s, strlen(s), m), 0);
}

static const char sample[] =
	"55d4c3a00000-55d4c3a02000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
	"55d4c3a02000-55d4c3a07000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
	"55d4c4c4c000-55d4c4c6d000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000001000 rw-s 00000000 00:01 1055                       /memfd:jit "
	"(deleted)\n"
	"7f0000001000-7f0000002000 r-xp 00001000 fe:01 42                         /opt/my app/lib "
	"x.so\n"
	"7f0000002000-7f0000003000 r-xp 00000000 fe:01 43                         /tmp/gone.so "
	"(deleted)\n"
	"7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
	"7f0000004000-7f0000005000 rw-p 00000000 00:00 0                          [anon:foo bar]\n"
	"7f0000005000-7f0000006000 rw-s 00000000 00:01 7                          /dev/zero "
	"(deleted)\n"
	"7f0000006000-7f0000007000 r--s 00000000 00:05 5                          "
	"/dev/dri/renderD128\n"
	"7f0000007000-7f0000008000 rw-s 00000000 00:01 32769                      /SYSV00000000 "
	"(deleted)\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static const struct procmap *at(const struct procmaps *m, uint64_t a)
{
	return procmaps__find(m, a);
}

static void test_sample(void **state)
{
	struct procmaps m = { 0 };
	const struct procmap *pm;

	(void)state;
	parse_ok(sample, &m);
	assert_int_equal(m.nr, 13);
	assert_int_equal(m.bad_lines, 0);

	pm = &m.maps[1];
	assert_true(pm->start == 0x55d4c3a02000ULL && pm->end == 0x55d4c3a07000ULL);
	assert_true(pm->offset == 0x2000);
	assert_int_equal(pm->perms, PROCMAP_R | PROCMAP_X | PROCMAP_P);
	assert_int_equal(pm->dev_major, 0xfe);
	assert_int_equal(pm->dev_minor, 0);
	assert_true(pm->inode == 247134);
	assert_string_equal(pm->path, "/usr/bin/cat");
	assert_false(pm->deleted);
	assert_true(procmap__is_file(pm));
	/* Consecutive mappings of one file share the path string. */
	assert_ptr_equal(m.maps[0].path, m.maps[1].path);

	assert_string_equal(m.maps[2].path, "[heap]");
	assert_false(procmap__is_file(&m.maps[2]));

	pm = &m.maps[3];
	assert_string_equal(pm->path, "/memfd:jit");
	assert_true(pm->deleted);
	assert_int_equal(pm->perms, PROCMAP_R | PROCMAP_W);
	assert_false(procmap__is_file(pm));

	pm = &m.maps[4];
	assert_string_equal(pm->path, "/opt/my app/lib x.so");
	assert_false(pm->deleted);
	assert_true(procmap__is_file(pm));

	pm = &m.maps[5];
	assert_string_equal(pm->path, "/tmp/gone.so");
	assert_true(pm->deleted);
	assert_true(procmap__is_file(pm)); /* file-backed; `deleted` says the path is stale */

	assert_null(m.maps[6].path); /* anonymous, with the kernel's trailing space */
	assert_false(procmap__is_file(&m.maps[6]));
	assert_string_equal(m.maps[7].path, "[anon:foo bar]");
	assert_false(procmap__is_file(&m.maps[7]));
	assert_string_equal(m.maps[8].path, "/dev/zero");
	assert_true(m.maps[8].deleted);
	assert_false(procmap__is_file(&m.maps[8]));
	assert_false(procmap__is_file(&m.maps[9]));
	assert_false(procmap__is_file(&m.maps[10]));
	assert_string_equal(m.maps[11].path, "[vdso]");
	assert_false(procmap__is_file(&m.maps[11]));
	pm = &m.maps[12];
	assert_string_equal(pm->path, "[vsyscall]");
	assert_int_equal(pm->perms, PROCMAP_X | PROCMAP_P);
	assert_true(pm->end == 0xffffffffff601000ULL);
	procmaps__free(&m);
	assert_null(m.maps);
	assert_int_equal(m.nr, 0);
}

static void test_find_boundaries(void **state)
{
	struct procmaps m = { 0 };

	(void)state;
	parse_ok(sample, &m);
	assert_null(at(&m, 0));
	assert_null(at(&m, 0x55d4c39fffffULL));
	assert_ptr_equal(at(&m, 0x55d4c3a00000ULL), &m.maps[0]); /* start */
	assert_ptr_equal(at(&m, 0x55d4c3a01fffULL), &m.maps[0]); /* end - 1 */
	assert_ptr_equal(at(&m, 0x55d4c3a02000ULL), &m.maps[1]); /* end == next start */
	assert_ptr_equal(at(&m, 0x55d4c3a06fffULL), &m.maps[1]);
	assert_null(at(&m, 0x55d4c3a07000ULL)); /* end, gap follows */
	assert_null(at(&m, 0x55d4c4c4bfffULL));
	assert_ptr_equal(at(&m, 0x55d4c4c4c000ULL), &m.maps[2]);
	assert_ptr_equal(at(&m, 0xffffffffff600000ULL), &m.maps[12]);
	assert_ptr_equal(at(&m, 0xffffffffff600fffULL), &m.maps[12]);
	assert_null(at(&m, 0xffffffffff601000ULL));
	assert_null(at(&m, UINT64_MAX));
	procmaps__free(&m);
	assert_null(procmaps__find(&m, 0x1000));
	assert_null(procmaps__find(NULL, 0x1000));
	assert_false(procmap__is_file(NULL));
	procmaps__free(NULL);
}

/*
 * A file literally named "x (deleted)" is indistinguishable from a deleted
 * "x": the kernel does not escape the suffix. We strip one suffix either way
 * and set `deleted` (see procmaps.h); a deleted "x (deleted)" keeps one.
 */
static void test_deleted_ambiguity(void **state)
{
	struct procmaps m = { 0 };

	(void)state;
	parse_ok("1000-2000 r-xp 00000000 08:01 12 /home/u/x (deleted)\n"
		 "2000-3000 r-xp 00000000 08:01 13 /home/u/y (deleted) (deleted)\n"
		 "3000-4000 r-xp 00000000 08:01 14 /home/u/(deleted)\n"
		 "4000-5000 r-xp 00000000 08:01 15 /home/u/z (deleted) \n",
		 &m);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.maps[0].path, "/home/u/x");
	assert_true(m.maps[0].deleted);
	assert_string_equal(m.maps[1].path, "/home/u/y (deleted)");
	assert_true(m.maps[1].deleted);
	assert_string_equal(m.maps[2].path, "/home/u/(deleted)");
	assert_false(m.maps[2].deleted);
	/* Trailing spaces are part of a file name. */
	assert_string_equal(m.maps[3].path, "/home/u/z (deleted) ");
	assert_false(m.maps[3].deleted);
	procmaps__free(&m);
}

static void test_malformed(void **state)
{
	struct procmaps m = { 0 };
	static const char text[] =
		"1000-2000 r-xp 00000000 08:01 12 /ok/one\n"
		"3000-2000 r-xp 00000000 08:01 12 /start-after-end\n"
		"3000-3000 r-xp 00000000 08:01 12 /empty-range\n"
		"3000 r-xp 00000000 08:01 12 /no-dash\n"
		"-4000 r-xp 00000000 08:01 12 /no-start\n"
		"3000- r-xp 00000000 08:01 12 /no-end\n"
		"30g0-4000 r-xp 00000000 08:01 12 /bad-hex-start\n"
		"3000-4000 r-xp 0000z000 08:01 12 /bad-hex-offset\n"
		"3000-4000 r-xq 00000000 08:01 12 /bad-perms\n"
		"3000-4000 rwx 00000000 08:01 12 /short-perms\n"
		"3000-4000 r-xpp 00000000 08:01 12 /long-perms\n"
		"3000-4000 x-rp 00000000 08:01 12 /perm-order\n"
		"3000-4000 r-xp 00000000 0801 12 /no-colon\n"
		"3000-4000 r-xp 00000000 08:0g 12 /bad-minor\n"
		"3000-4000 r-xp 00000000 100000000:01 12 /major-too-big\n"
		"3000-4000 r-xp 00000000 08:01 1x2 /bad-inode\n"
		"3000-4000 r-xp 00000000 08:01 99999999999999999999 /inode-overflow\n"
		"3000-4000 r-xp 00000000 08:01\n"
		"3000-4000 r-xp\n"
		"3000-4000\n"
		"10000000000000000-10000000000001000 r-xp 00000000 08:01 1 /17-digits\n"
		"garbage\n"
		"\n"
		"5000-6000 r-xp ffffffffffff0000 08:01 12 /huge-offset\n"
		"6000-7000 r-xp 0x10 08:01 12 /0x-offset\n"
		"7000-8000 r-xp 00000000 fff:fffff 18446744073709551615 /big-dev-inode";
	const struct procmap *pm;

	(void)state;
	parse_ok(text, &m);
	assert_int_equal(m.bad_lines, 21);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.maps[0].path, "/ok/one");
	pm = at(&m, 0x5000);
	assert_non_null(pm);
	assert_true(pm->offset == 0xffffffffffff0000ULL);
	assert_string_equal(pm->path, "/huge-offset");
	assert_true(at(&m, 0x6000)->offset == 0x10);
	pm = at(&m, 0x7fff);
	assert_non_null(pm);
	assert_string_equal(pm->path, "/big-dev-inode"); /* no final newline */
	assert_int_equal(pm->dev_major, 0xfff);
	assert_int_equal(pm->dev_minor, 0xfffff);
	assert_true(pm->inode == UINT64_MAX);
	procmaps__free(&m);

	/* A NUL in the path is not something the kernel prints. */
	{
		static const char nul[] = "1000-2000 r-xp 00000000 08:01 12 /a\0b\n"
					  "2000-3000 r-xp 00000000 08:01 12 /c\n";
		assert_int_equal(procmaps__parse(nul, sizeof(nul) - 1, &m), 0);
		assert_int_equal(m.nr, 1);
		assert_int_equal(m.bad_lines, 1);
		assert_string_equal(m.maps[0].path, "/c");
		procmaps__free(&m);
	}
}

static void test_empty(void **state)
{
	struct procmaps m = { 0 };

	(void)state;
	parse_ok("", &m);
	assert_int_equal(m.nr, 0);
	assert_int_equal(m.bad_lines, 0);
	assert_null(procmaps__find(&m, 0x1000));
	procmaps__free(&m);
	assert_int_equal(procmaps__parse(NULL, 0, &m), 0);
	assert_int_equal(m.nr, 0);
	procmaps__free(&m);
	parse_ok("\n\n\n", &m);
	assert_int_equal(m.nr, 0);
	assert_int_equal(m.bad_lines, 0);
	procmaps__free(&m);
}

/* Lines out of order are sorted; overlapping ones are dropped and counted. */
static void test_unsorted_overlap(void **state)
{
	struct procmaps m = { 0 };

	(void)state;
	parse_ok("5000-6000 r-xp 00000000 08:01 1 /e\n"
		 "1000-2000 r-xp 00000000 08:01 1 /a\n"
		 "1800-2800 r-xp 00000000 08:01 1 /overlaps-a\n"
		 "3000-4000 r-xp 00000000 08:01 1 /c\n"
		 "1000-2000 r-xp 00000000 08:01 1 /a-again\n",
		 &m);
	assert_int_equal(m.nr, 3);
	assert_int_equal(m.bad_lines, 2);
	assert_string_equal(at(&m, 0x1fff)->path, "/a");
	assert_null(at(&m, 0x2000));
	assert_string_equal(at(&m, 0x3000)->path, "/c");
	assert_string_equal(at(&m, 0x5fff)->path, "/e");
	procmaps__free(&m);
}

static void test_read_file(void **state)
{
	struct procmaps m = { 0 };
	char *path = write_temp_str("1000-2000 r-xp 00000000 08:01 12 /from/file\n");

	(void)state;
	assert_int_equal(procmaps__read(path, &m), 0);
	assert_int_equal(m.nr, 1);
	assert_string_equal(m.maps[0].path, "/from/file");
	procmaps__free(&m);
	unlink(path);
	free(path);
	assert_int_equal(procmaps__read("/nonexistent/maps", &m), -ENOENT);
	assert_null(m.maps);
}

__attribute__((noinline)) static int function_in_test_binary(int x)
{
	return x + 1;
}

/* The test's own maps: a function of this binary is in an r-x mapping of it. */
static void test_self(void **state)
{
	struct procmaps m = { 0 };
	const struct procmap *pm;
	char exe[PATH_MAX];
	ssize_t n;
	int x = 0;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(procmaps__read("/proc/self/maps", &m), 0);
	assert_true(m.nr > 5);
	assert_int_equal(m.bad_lines, 0);
	pm = procmaps__find(&m, (uint64_t)(uintptr_t)&function_in_test_binary);
	assert_non_null(pm);
	assert_non_null(pm->path);
	assert_string_equal(pm->path, exe);
	assert_true(pm->perms & PROCMAP_X);
	assert_true(pm->perms & PROCMAP_R);
	assert_true(procmap__is_file(pm));
	assert_false(pm->deleted);
	/* A stack address is in [stack], which is not a file. */
	pm = procmaps__find(&m, (uint64_t)(uintptr_t)&x);
	assert_non_null(pm);
	assert_string_equal(pm->path, "[stack]");
	assert_false(procmap__is_file(pm));
	x = function_in_test_binary(x);
	procmaps__free(&m);
}

static void test_keep_executable(void **state)
{
	static const char text[] =
		"555555554000-555555555000 r--p 00000000 fe:00 10   /usr/bin/prog\n"
		"555555555000-555555556000 r-xp 00001000 fe:00 10   /usr/bin/prog\n"
		"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
		"7f0000001000-7f0000002000 rw-p 00000000 00:00 0    [heap]\n"
		"7f0000002000-7f0000003000 r-xp 00000000 00:01 77   /memfd:jit (deleted)\n"
		"7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0    [vdso]\n";
	struct procmaps m;

	(void)state;
	assert_int_equal(procmaps__parse(text, sizeof(text) - 1, &m), 0);
	assert_int_equal(m.nr, 6);
	assert_int_equal(procmaps__keep(&m, PROCMAP_X), 0);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.maps[0].path, "/usr/bin/prog");
	assert_true(m.maps[0].offset == 0x1000);
	assert_null(m.maps[1].path);
	assert_string_equal(m.maps[2].path, "/memfd:jit");
	assert_true(m.maps[2].deleted);
	assert_string_equal(m.maps[3].path, "[vdso]");
	assert_non_null(procmaps__find(&m, 0x7f0000002010ULL));
	assert_null(procmaps__find(&m, 0x7f0000001010ULL));
	assert_int_equal(procmaps__keep(&m, PROCMAP_W), 0);
	assert_int_equal(m.nr, 0);
	procmaps__free(&m);
}

/* A directory next to the test binary: its file system allows PROT_EXEC. */
static void exec_dir(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	assert_true(strlen(exe) + 17 < len);
	snprintf(out, len, "%.*s/procmaps-XXXXXX", (int)(len - 17), exe);
	assert_non_null(mkdtemp(out));
}

/* Maps `pages` pages of a new file at dir/name, r-x; the file keeps its name. */
static void *map_exec_file(int dirfd, const char *name, size_t pages)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	void *p;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(pages * 4096)), 0);
	p = mmap(NULL, pages * 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	close(fd);
	return p;
}

/* The text's executable mappings less [vsyscall], which no query returns (not in the mm). */
static void read_text_exec(struct procmaps *text)
{
	assert_int_equal(procmaps__read("/proc/self/maps", text), 0);
	assert_int_equal(procmaps__keep(text, PROCMAP_X), 0);
	if (text->nr && text->maps[text->nr - 1].path &&
	    !strcmp(text->maps[text->nr - 1].path, "[vsyscall]"))
		text->nr--;
}

static void assert_same_range(const struct procmap *a, const struct procmap *b)
{
	assert_true(a->start == b->start && a->end == b->end && a->offset == b->offset);
	assert_true(a->inode == b->inode);
	assert_int_equal(a->dev_major, b->dev_major);
	assert_int_equal(a->dev_minor, b->dev_minor);
	assert_int_equal(a->perms, b->perms);
}

static void assert_same_mapping(const struct procmap *a, const struct procmap *b)
{
	assert_same_range(a, b);
	if (a->deleted != b->deleted)
		fail_msg("deleted: %d %s, the text %d %s", a->deleted, a->path ? a->path : "-",
			 b->deleted, b->path ? b->path : "-");
}

/*
 * PROCMAP_QUERY gives what the text gives for the executable mappings (a
 * deleted file, a memfd, anonymous code, the vdso, a name with a space),
 * except that a newline in a name comes as itself, where the text escapes
 * it; and every file-backed mapping, without names, for the blocked check.
 */
static void test_query_matches_text(void **state)
{
	char dir[PATH_MAX];
	struct procmaps q, text;
	void *named, *gone, *nl, *jit, *anon;
	size_t files = 0;
	int dfd, mfd, err;

	(void)state;
	exec_dir(dir, sizeof(dir));
	dfd = open(dir, O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	named = map_exec_file(dfd, "lib with space.so", 2);
	gone = map_exec_file(dfd, "gone.so", 1);
	assert_int_equal(unlinkat(dfd, "gone.so", 0), 0);
	nl = map_exec_file(dfd, "new\nline.so", 1);
	mfd = memfd_create("jit", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, mfd, 0);
	assert_true(jit != MAP_FAILED);
	anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);

	err = procmaps__query("/proc/self/maps", PROCMAPS_Q_EXEC, &q);
	if (err == -EOPNOTSUPP)
		fail_msg("this kernel has no PROCMAP_QUERY (Linux 6.11+): %s", "the text is read");
	assert_int_equal(err, 0);
	read_text_exec(&text);
	assert_int_equal(q.nr, text.nr);
	assert_int_equal(q.bad_lines, 0);
	for (size_t i = 0; i < q.nr; i++) {
		const struct procmap *a = &q.maps[i], *b = &text.maps[i];

		assert_same_mapping(a, b);
		if (a->start == (uint64_t)(uintptr_t)nl) {
			assert_non_null(strstr(a->path, "/new\nline.so"));
			assert_non_null(strstr(b->path, "/new\\012line.so"));
		} else if (!b->path) {
			assert_null(a->path);
		} else {
			assert_string_equal(a->path, b->path);
		}
	}
	assert_non_null(strstr(procmaps__find(&q, (uintptr_t)named)->path, "/lib with space.so"));
	assert_true(procmaps__find(&q, (uintptr_t)gone)->deleted);
	assert_string_equal(procmaps__find(&q, (uintptr_t)jit)->path, "/memfd:jit");
	assert_true(procmaps__find(&q, (uintptr_t)jit)->deleted);
	assert_null(procmaps__find(&q, (uintptr_t)anon)->path);
	assert_non_null(procmaps__find(&q, (uintptr_t)&function_in_test_binary));
	procmaps__free(&q);
	procmaps__free(&text);

	/* Every file-backed mapping, names left out. */
	assert_int_equal(procmaps__query("/proc/self/maps", PROCMAPS_Q_FILES, &q), 0);
	assert_int_equal(procmaps__read("/proc/self/maps", &text), 0);
	for (size_t i = 0; i < text.nr; i++)
		files += text.maps[i].inode != 0; /* [vsyscall] has none */
	assert_int_equal(q.nr, files);
	for (size_t i = 0, j = 0; i < text.nr; i++) {
		if (!text.maps[i].inode)
			continue;
		assert_same_range(&q.maps[j], &text.maps[i]);
		assert_null(q.maps[j++].path); /* and so `deleted` is not known */
	}
	procmaps__free(&q);
	procmaps__free(&text);

	munmap(named, 2 * 4096);
	munmap(gone, 4096);
	munmap(nl, 4096);
	munmap(jit, 4096);
	munmap(anon, 4096);
	close(mfd);
	unlinkat(dfd, "lib with space.so", 0);
	unlinkat(dfd, "new\nline.so", 0);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
}

/* Not a maps file (a fake tree), no such file, a zombie (no address space). */
static void test_query_refusals(void **state)
{
	char *path = write_temp_str("1000-2000 r-xp 00000000 08:01 12 /from/file\n");
	struct procmaps m = { 0 };
	siginfo_t si = { 0 };
	uint32_t tid = 1;
	pid_t pid;

	(void)state;
	assert_int_equal(procmaps__query(path, PROCMAPS_Q_EXEC, &m), -EOPNOTSUPP);
	assert_null(m.maps);
	assert_int_equal(procmaps__query_pid("/nonexistent", 1, PROCMAPS_Q_EXEC, &m, &tid),
			 -ENOENT);
	unlink(path);
	free(path);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(procmaps__query_pid("/proc", (uint32_t)pid, PROCMAPS_Q_EXEC, &m, &tid), 0);
	assert_int_equal(m.nr, 0);
	assert_int_equal(tid, 0);
	procmaps__free(&m);
	waitpid(pid, NULL, 0);
}

/*
 * What a process controls: how many mappings, how long their names. Twenty
 * thousand code mappings come back whole and in order; a name longer than
 * PATH_MAX is -ENAMETOOLONG (the caller reads the text, which has it).
 */
static void test_query_many_mappings_and_a_long_name(void **state)
{
	enum { PAGES = 40000 };
	char dir[PATH_MAX], part[256];
	struct procmaps q, text;
	size_t in_region = 0;
	int dfd, fds[20], depth = 0;
	char *region;
	void *deep;

	(void)state;
	region = mmap(NULL, PAGES * 4096UL, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(region != MAP_FAILED);
	for (size_t i = 0; i < PAGES; i += 2)
		assert_int_equal(mprotect(region + i * 4096, 4096, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(procmaps__query("/proc/self/maps", PROCMAPS_Q_EXEC, &q), 0);
	read_text_exec(&text);
	assert_int_equal(q.nr, text.nr);
	for (size_t i = 0; i < q.nr; i++) {
		assert_same_mapping(&q.maps[i], &text.maps[i]);
		in_region += q.maps[i].start >= (uintptr_t)region &&
			     q.maps[i].end <= (uintptr_t)region + PAGES * 4096UL;
	}
	assert_int_equal(in_region, PAGES / 2);
	procmaps__free(&q);
	procmaps__free(&text);
	munmap(region, PAGES * 4096UL);

	/* 17 directories of 250 characters: a path of over 4250. */
	exec_dir(dir, sizeof(dir));
	memset(part, 'd', 250);
	part[250] = '\0';
	dfd = fds[depth++] = open(dir, O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	while (depth < 18) {
		assert_int_equal(mkdirat(dfd, part, 0755), 0);
		dfd = fds[depth++] = openat(dfd, part, O_DIRECTORY | O_CLOEXEC);
		assert_true(dfd >= 0);
	}
	deep = map_exec_file(dfd, "deep.so", 1);
	assert_int_equal(procmaps__query("/proc/self/maps", PROCMAPS_Q_EXEC, &q), -ENAMETOOLONG);
	assert_null(q.maps);
	assert_int_equal(procmaps__read("/proc/self/maps", &text), 0);
	assert_true(strlen(procmaps__find(&text, (uintptr_t)deep)->path) > PATH_MAX);
	procmaps__free(&text);
	/* Without names the file-backed mappings are all there. */
	assert_int_equal(procmaps__query("/proc/self/maps", PROCMAPS_Q_FILES, &q), 0);
	assert_non_null(procmaps__find(&q, (uintptr_t)deep));
	procmaps__free(&q);
	munmap(deep, 4096);
	unlinkat(dfd, "deep.so", 0);
	while (--depth > 0) {
		close(fds[depth]);
		assert_int_equal(unlinkat(fds[depth - 1], part, AT_REMOVEDIR), 0);
	}
	close(fds[0]);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_find_boundaries),
		cmocka_unit_test(test_deleted_ambiguity),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_unsorted_overlap),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_keep_executable),
		cmocka_unit_test(test_query_matches_text),
		cmocka_unit_test(test_query_refusals),
		cmocka_unit_test(test_query_many_mappings_and_a_long_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
