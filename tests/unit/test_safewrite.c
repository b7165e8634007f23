// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_safewrite.c - where root writes (proc/safewrite.h): -o targets and
 * output directories in a temp dir holding what a tenant would plant -
 * symlinks on the path and at the name, FIFOs with and without a reader,
 * link loops, /proc magic links - and the O_EXCL temp file and no-replace
 * rename the atomic writes use. "Another user" is played by making our own
 * uid untrusted (safewrite__trust_only); as root, by chown as well.
 */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "proc/safewrite.h"

#define OTHER_UID 4242 /* nobody has it: trusting only it distrusts us */

static char top[64];

static void path_of(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", top, rel);
}

static void mk(const char *rel, mode_t mode)
{
	char p[256];

	path_of(p, sizeof(p), rel);
	assert_int_equal(mkdir(p, mode), 0);
	assert_int_equal(chmod(p, mode), 0); /* whatever the umask */
}

static void ln(const char *target, const char *rel)
{
	char p[256];

	path_of(p, sizeof(p), rel);
	assert_int_equal(symlink(target, p), 0);
}

static void fifo(const char *rel)
{
	char p[256];

	path_of(p, sizeof(p), rel);
	assert_int_equal(mkfifo(p, 0644), 0);
}

static void put(const char *rel)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x\n", 2), 2);
	close(fd);
}

static int target(const char *rel, bool open, struct safewrite_target *t, struct errmsg *em)
{
	char p[256];

	if (rel[0] == '/')
		snprintf(p, sizeof(p), "%s", rel);
	else
		path_of(p, sizeof(p), rel);
	errmsg_clear(em);
	return safewrite__target(p, open, t, em);
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/bpfprof-safewrite-XXXXXX");
	assert_non_null(mkdtemp(top));
	mk("priv", 0755);    /* ours, writable by no one else */
	mk("shared", 01777); /* like /tmp */
	mk("priv/sub", 0755);
	put("priv/file.folded");
	fifo("priv/fifo");
	fifo("shared/fifo");
	ln("file.folded", "priv/link_to_file");
	ln("fifo", "priv/link_to_fifo");
	ln("/dev/null", "shared/devnull");
	ln("../priv/sub", "shared/dirlink");
	ln("loop_b", "priv/loop_a");
	ln("loop_a", "priv/loop_b");
	ln("missing/x", "priv/dangling");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	safewrite__trust_only((uid_t)-1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_trusted_and_others_write(void **state)
{
	struct stat st = { .st_uid = geteuid(), .st_mode = S_IFDIR | 0755 };

	(void)state;
	assert_true(safewrite__trusted(0));
	assert_true(safewrite__trusted(geteuid()));
	assert_false(safewrite__others_write(&st));
	st.st_mode = S_IFDIR | 0775; /* its group */
	assert_true(safewrite__others_write(&st));
	st.st_mode = S_IFDIR | 01777; /* everyone, sticky or not */
	assert_true(safewrite__others_write(&st));
	st.st_mode = S_IFDIR | 0755;
	/* Under sudo, the user who ran it (root already, in effect), as git does. */
	if (geteuid() == 0) {
		assert_false(safewrite__trusted(OTHER_UID));
		setenv("SUDO_UID", "4242", 1);
		assert_true(safewrite__trusted(OTHER_UID));
		setenv("SUDO_UID", "4242x", 1);
		assert_false(safewrite__trusted(OTHER_UID));
		unsetenv("SUDO_UID");
	}
	safewrite__trust_only(OTHER_UID);
	assert_false(safewrite__trusted(0));
	assert_true(safewrite__others_write(&st)); /* its owner is someone else */
	safewrite__trust_only((uid_t)-1);
}

/* Missing and regular files: a name in a directory, for temp + rename. */
static void test_plain_files(void **state)
{
	struct safewrite_target t;
	struct errmsg em;

	(void)state;
	assert_int_equal(target("priv/new.folded", true, &t, &em), 0);
	assert_true(t.dirfd >= 0 && t.fd < 0);
	assert_string_equal(t.name, "new.folded");
	safewrite__target_close(&t);
	assert_int_equal(target("priv/file.folded", true, &t, &em), 0);
	assert_true(t.dirfd >= 0 && t.fd < 0);
	safewrite__target_close(&t);
	/* A symlink to a regular file (or to nothing) is replaced, not written through. */
	assert_int_equal(target("priv/link_to_file", true, &t, &em), 0);
	assert_string_equal(t.name, "link_to_file");
	safewrite__target_close(&t);
	assert_int_equal(target("priv/dangling", true, &t, &em), 0);
	assert_string_equal(t.name, "dangling");
	safewrite__target_close(&t);
	/* Through a directory symlink of ours, even in a shared directory. */
	assert_int_equal(target("shared/dirlink/new.folded", true, &t, &em), 0);
	safewrite__target_close(&t);
	assert_int_equal(target("priv/sub", true, &t, &em), -EISDIR);
	assert_int_equal(target("/", true, &t, &em), -EISDIR);
	assert_int_equal(target("priv/nodir/x.folded", true, &t, &em), -ENOENT);
	assert_int_equal(target("priv/file.folded/x", true, &t, &em), -ENOTDIR);
	assert_int_equal(target("priv/loop_a", true, &t, &em), -ELOOP);
	assert_int_equal(target("priv/loop_a/x", true, &t, &em), -ELOOP);
}

/* FIFOs never block: no reader is -ENXIO at once; with one, a blocking fd. */
static void test_fifo_never_blocks(void **state)
{
	struct safewrite_target t;
	struct timespec a, b;
	struct errmsg em;
	char p[256];
	int rfd;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(target("priv/fifo", true, &t, &em), -ENXIO);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 2);
	assert_true(errmsg_said(&em));
	assert_non_null(strstr(em.msg, "nobody has open for reading"));
	/* A check opens nothing, so needs no reader. */
	assert_int_equal(target("priv/fifo", false, &t, &em), 0);
	assert_true(t.fd < 0 && t.dirfd < 0);
	path_of(p, sizeof(p), "priv/fifo");
	rfd = open(p, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_int_equal(target("priv/link_to_fifo", true, &t, &em), 0);
	assert_true(t.fd >= 0 && t.dirfd < 0);
	assert_int_equal(fcntl(t.fd, F_GETFL) & O_NONBLOCK, 0);
	assert_int_equal(write(t.fd, "hi", 2), 2);
	safewrite__target_close(&t);
	{
		char buf[8] = "";

		assert_int_equal(read(rfd, buf, sizeof(buf)), 2);
		assert_memory_equal(buf, "hi", 2);
	}
	close(rfd);
}

/* /dev/null and /proc magic links (/dev/stdout): written directly. */
static void test_devices_and_magic_links(void **state)
{
	struct safewrite_target t;
	char p[64], buf[8] = "";
	struct errmsg em;
	int pipefd[2], fd;
	struct stat st;

	(void)state;
	assert_int_equal(target("/dev/null", true, &t, &em), 0);
	assert_true(t.fd >= 0);
	safewrite__target_close(&t);
	assert_int_equal(target("/dev/stdout", false, &t, &em), 0);
	assert_true(t.fd < 0 && t.dirfd < 0);
	assert_int_equal(pipe(pipefd), 0);
	snprintf(p, sizeof(p), "/dev/fd/%d", pipefd[1]);
	assert_int_equal(target(p, true, &t, &em), 0);
	assert_true(t.fd >= 0);
	assert_int_equal(write(t.fd, "ok", 2), 2);
	safewrite__target_close(&t);
	assert_int_equal(read(pipefd[0], buf, sizeof(buf)), 2);
	close(pipefd[0]);
	close(pipefd[1]);
	/* A regular file behind a magic link is written in place (fopen "w"), never
	 * replaced by a rename: that would replace /dev/stdout itself. */
	{
		char f[256];

		path_of(f, sizeof(f), "priv/stdout.txt");
		fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "old old old\n", 12), 12);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		assert_int_equal(target(p, true, &t, &em), 0);
		assert_true(t.fd >= 0 && t.dirfd < 0);
		assert_int_equal(write(t.fd, "new\n", 4), 4);
		safewrite__target_close(&t);
		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(st.st_size, 4);
		close(fd);
	}
}

/* What another user plants in a directory others can write is refused. */
static void test_other_users_entries_refused(void **state)
{
	struct safewrite_target t;
	struct errmsg em;

	(void)state;
	safewrite__trust_only(OTHER_UID); /* now everything here is "another user's" */
	assert_int_equal(target("shared/devnull", true, &t, &em), -EACCES);
	assert_non_null(strstr(em.msg, "it is a symbolic link owned by"));
	assert_non_null(strstr(em.msg, "mode 1777"));
	assert_true(em.hint[0]);
	assert_int_equal(target("shared/devnull", false, &t, &em), -EACCES);
	assert_int_equal(target("shared/fifo", true, &t, &em), -EACCES);
	assert_non_null(strstr(em.msg, "FIFO owned by"));
	assert_int_equal(target("shared/fifo", false, &t, &em), -EACCES);
	/* A link anywhere on the path, not only at the name. */
	assert_int_equal(target("shared/dirlink/new.folded", true, &t, &em), -EACCES);
	assert_non_null(strstr(em.msg, "/shared/dirlink is a symbolic link"));
	/* An untrusted owner's own directory is one others can write, too. */
	assert_int_equal(target("priv/link_to_fifo", true, &t, &em), -EACCES);
	assert_int_equal(target("priv/link_to_file", true, &t, &em), -EACCES);
	/* New and regular files are fine anywhere: created O_EXCL, renamed over. */
	assert_int_equal(target("shared/new.folded", true, &t, &em), 0);
	safewrite__target_close(&t);
	/* Devices root owns in /dev (root's, 0755) stay usable. */
	safewrite__trust_only(0);
	assert_int_equal(target("/dev/null", true, &t, &em), 0);
	safewrite__target_close(&t);
	safewrite__trust_only((uid_t)-1);
	/* Our own link in a shared directory is followed. */
	assert_int_equal(target("shared/devnull", true, &t, &em), 0);
	assert_true(t.fd >= 0);
	safewrite__target_close(&t);
}

/* As root: really another uid's entries, in a shared and in a private directory. */
static void test_other_uid_as_root(void **state)
{
	struct safewrite_target t;
	struct errmsg em;
	char p[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	mk("priv2", 0755);
	ln("/dev/null", "priv2/devnull");
	ln("/dev/null", "shared/devnull2");
	path_of(p, sizeof(p), "priv2/devnull");
	assert_int_equal(lchown(p, OTHER_UID, OTHER_UID), 0);
	path_of(p, sizeof(p), "shared/devnull2");
	assert_int_equal(lchown(p, OTHER_UID, OTHER_UID), 0);
	/* Nobody else could have put it in root's 0755 directory: followed. */
	assert_int_equal(target("priv2/devnull", true, &t, &em), 0);
	safewrite__target_close(&t);
	assert_int_equal(target("shared/devnull2", true, &t, &em), -EACCES);
	assert_non_null(strstr(em.msg, "uid 4242"));
}

static void test_tmpfile_and_rename(void **state)
{
	char dir[256], tmp[NAME_MAX + 1], tmp2[NAME_MAX + 1], longname[300];
	struct stat st;
	mode_t old;
	int dfd, fd;

	(void)state;
	path_of(dir, sizeof(dir), "priv");
	dfd = open(dir, O_PATH | O_DIRECTORY);
	assert_true(dfd >= 0);
	old = umask(077);
	fd = safewrite__tmpfile(dfd, "out.folded", tmp, sizeof(tmp));
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(strncmp(tmp, "out.folded.tmp.", 15), 0);
	assert_int_equal(strlen(tmp), 21);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	close(fd);
	/* No replace: an existing name (here a symlink) is -EEXIST and stays. */
	assert_int_equal(safewrite__rename(dfd, tmp, "link_to_file", true), -EEXIST);
	assert_int_equal(fstatat(dfd, "link_to_file", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(safewrite__rename(dfd, tmp, "fresh.folded", true), 0);
	/* Replace: the symlink itself is replaced; its target is untouched. */
	fd = safewrite__tmpfile(dfd, "out.folded", tmp2, sizeof(tmp2));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(safewrite__rename(dfd, tmp2, "link_to_file", false), 0);
	assert_int_equal(fstatat(dfd, "link_to_file", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_size == 0);
	assert_int_equal(fstatat(dfd, "file.folded", &st, 0), 0);
	assert_int_equal(st.st_size, 2);
	memset(longname, 'a', 250);
	longname[250] = '\0';
	assert_int_equal(safewrite__tmpfile(dfd, longname, tmp, sizeof(tmp)), -ENAMETOOLONG);
	close(dfd);
}

static void test_output_dir(void **state)
{
	struct errmsg em = { 0 };
	struct stat st;
	char p[256];
	int fd;

	(void)state;
	path_of(p, sizeof(p), "priv/store");
	fd = safewrite__dir(p, true, &em); /* made, 0755 */
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	close(fd);
	fd = safewrite__dir(p, false, &em); /* there now */
	assert_true(fd >= 0);
	close(fd);
	path_of(p, sizeof(p), "priv/nostore");
	assert_int_equal(safewrite__dir(p, false, &em), -ENOENT);
	path_of(p, sizeof(p), "priv/none/store");
	assert_int_equal(safewrite__dir(p, true, &em), -ENOENT);
	path_of(p, sizeof(p), "priv/file.folded");
	assert_int_equal(safewrite__dir(p, true, &em), -ENOTDIR);
	/* Writable by others: refused with owner and mode. */
	path_of(p, sizeof(p), "shared");
	errmsg_clear(&em);
	assert_int_equal(safewrite__dir(p, true, &em), -EACCES);
	assert_non_null(strstr(em.msg, "mode 1777"));
	assert_non_null(strstr(em.msg, "owned by"));
	mk("groupw", 0775);
	path_of(p, sizeof(p), "groupw");
	assert_int_equal(safewrite__dir(p, true, &em), -EACCES);
	assert_non_null(strstr(em.msg, "mode 0775"));
	/* Through our own symlink: fine. */
	path_of(p, sizeof(p), "shared/dirlink");
	fd = safewrite__dir(p, true, &em);
	assert_true(fd >= 0);
	close(fd);
	/* Owned by someone else: refused, however private its mode. */
	safewrite__trust_only(OTHER_UID);
	path_of(p, sizeof(p), "priv/store");
	errmsg_clear(&em);
	assert_int_equal(safewrite__dir(p, true, &em), -EACCES);
	assert_non_null(strstr(em.msg, "mode 0755"));
	safewrite__trust_only((uid_t)-1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trusted_and_others_write),
		cmocka_unit_test(test_plain_files),
		cmocka_unit_test(test_fifo_never_blocks),
		cmocka_unit_test(test_devices_and_magic_links),
		cmocka_unit_test(test_other_users_entries_refused),
		cmocka_unit_test(test_other_uid_as_root),
		cmocka_unit_test(test_tmpfile_and_rename),
		cmocka_unit_test(test_output_dir),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
