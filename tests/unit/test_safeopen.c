// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_safeopen.c - opening files a profiled process controls: a fake
 * container root in a temp dir with symlinks that try to escape it, a FIFO,
 * a directory, /proc magic links, and FUSE mounts described by a mount table;
 * plus the mountinfo parser those checks rely on.
 */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "proc/mountinfo.h"
#include "proc/safeopen.h"

static char root[64];
static int root_fd = -1;

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void sub(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void link_(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static struct mountinfo host_mi; /* the real table: where the fake root's files live */

static int setup(void **state)
{
	char path[256];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/bpfprof-safeopen-XXXXXX");
	assert_non_null(mkdtemp(root));
	sub("etc");
	sub("tmp");
	sub("fusemnt");
	put("etc/passwd", "inside\n");
	put("tmp/perf-1.map", "7f0000001000 10 x\n");
	link_("/etc/passwd", "abs_link");
	link_("../../../../../etc/passwd", "rel_escape");
	link_("/etc", "dir_link");
	link_("/proc/self/exe", "magic");
	snprintf(path, sizeof(path), "%s/fifo", root);
	assert_int_equal(mkfifo(path, 0600), 0);
	root_fd = safeopen__dir(root);
	assert_true(root_fd >= 0);
	assert_int_equal(mountinfo__read("/proc/self/mountinfo", &host_mi), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	close(root_fd);
	mountinfo__free(&host_mi);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* Opens path in the fake root and returns what it reads ("" on error: *err set). */
static const char *read_in_root(const char *path, unsigned flags, const struct mountinfo *mi,
				int *err)
{
	static char buf[64];
	struct safe_root r = { .fd = root_fd, .mi = mi, .host_mi = &host_mi };
	struct safe_file f;
	ssize_t n;

	buf[0] = '\0';
	*err = safeopen__in_root(&r, path, flags, &f);
	if (*err) {
		assert_int_equal(f.fd, -1);
		return buf;
	}
	assert_true(S_ISREG(f.st.st_mode));
	n = read(f.fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(f.fd);
	return buf;
}

static void test_symlinks_stay_inside_root(void **state)
{
	int err;

	(void)state;
	assert_string_equal(read_in_root("/etc/passwd", 0, NULL, &err), "inside\n");
	/* Absolute and ../ links resolve inside the root, never to the host's file. */
	assert_string_equal(read_in_root("/abs_link", 0, NULL, &err), "inside\n");
	assert_string_equal(read_in_root("/rel_escape", 0, NULL, &err), "inside\n");
	assert_string_equal(read_in_root("/dir_link/passwd", 0, NULL, &err), "inside\n");
	/* A magic-looking link resolves inside the root too: nothing there. */
	read_in_root("/magic", 0, NULL, &err);
	assert_int_equal(err, -ENOENT);
	/* With NO_SYMLINKS no link is followed, last component or not. */
	read_in_root("/abs_link", SAFEOPEN_NO_SYMLINKS, NULL, &err);
	assert_int_equal(err, -ELOOP);
	read_in_root("/dir_link/passwd", SAFEOPEN_NO_SYMLINKS, NULL, &err);
	assert_int_equal(err, -ELOOP);
	assert_string_equal(read_in_root("/tmp/perf-1.map", SAFEOPEN_NO_SYMLINKS, NULL, &err),
			    "7f0000001000 10 x\n");
	/* ".." is refused outright, even where it would stay inside. */
	read_in_root("/etc/../etc/passwd", 0, NULL, &err);
	assert_int_equal(err, -EINVAL);
	read_in_root("relative", 0, NULL, &err);
	assert_int_equal(err, -EINVAL);
}

static void test_magic_links_refused(void **state)
{
	int host = safeopen__dir("/"), err;
	struct safe_root r = { .fd = host, .host_mi = &host_mi };
	struct safe_file f;

	(void)state;
	assert_true(host >= 0);
	err = safeopen__in_root(&r, "/proc/self/exe", 0, &f);
	assert_int_equal(err, -ELOOP);
	close(host);
}

static void test_special_files_do_not_block(void **state)
{
	struct timespec t0, t1;
	int err;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* A FIFO with no writer: opening it for reading would wait forever. */
	read_in_root("/fifo", 0, NULL, &err);
	assert_int_equal(err, -EINVAL);
	read_in_root("/etc", 0, NULL, &err);
	assert_int_equal(err, -EINVAL);
	read_in_root("/nonexistent", 0, NULL, &err);
	assert_int_equal(err, -ENOENT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
}

static void test_fuse_mounts_are_not_touched(void **state)
{
	char table[1024];
	struct mountinfo mi;
	int err;

	(void)state;
	snprintf(table, sizeof(table),
		 "22 1 0:21 / / rw - ext4 /dev/root rw\n"
		 "40 22 0:50 / /fusemnt rw,nosuid shared:9 - fuse.sshfs host:/x rw\n");
	assert_int_equal(mountinfo__parse(table, strlen(table), &mi), 0);
	assert_true(mi.any_block);
	read_in_root("/fusemnt/file", 0, &mi, &err);
	assert_int_equal(err, -EREMOTE);
	read_in_root("/fusemnt", 0, &mi, &err);
	assert_int_equal(err, -EREMOTE);
	/* Elsewhere is fine, but with a FUSE mount around no symlink is followed. */
	assert_string_equal(read_in_root("/etc/passwd", 0, &mi, &err), "inside\n");
	read_in_root("/abs_link", 0, &mi, &err);
	assert_int_equal(err, -ELOOP);
	mountinfo__free(&mi);
}

/* Network file systems block like FUSE when the server stops answering. */
static void test_network_mounts_are_not_touched(void **state)
{
	const char *table = "22 1 0:21 / / rw - ext4 /dev/root rw\n"
			    "41 22 0:51 / /srv/nfs rw - nfs4 host:/export rw\n"
			    "42 22 0:52 / /srv/smb rw - cifs //h/s rw\n"
			    "43 22 0:53 / /srv/tmp rw - tmpfs tmpfs rw\n";
	struct safe_root r = { .fd = root_fd };
	struct mountinfo mi;
	struct safe_file f;
	int err;

	(void)state;
	assert_int_equal(mountinfo__parse(table, strlen(table), &mi), 0);
	r.mi = &mi;
	r.host_mi = &host_mi;
	assert_int_equal(safeopen__in_root(&r, "/srv/nfs/bin/app", 0, &f), -EREMOTE);
	assert_string_equal(f.fstype, "nfs4");
	assert_int_equal(safeopen__in_root(&r, "/srv/smb/x", 0, &f), -EREMOTE);
	assert_string_equal(f.fstype, "cifs");
	read_in_root("/srv/tmp/x", 0, &mi, &err);
	assert_int_equal(err, -ENOENT); /* looked up: tmpfs cannot block */
	/* The device numbers of the mounts that may block, as maps lines show them. */
	assert_non_null(mountinfo__dev_may_block(&mi, 0, 51));
	assert_non_null(mountinfo__dev_may_block(&mi, 0, 52));
	assert_null(mountinfo__dev_may_block(&mi, 0, 53));
	assert_null(mountinfo__dev_may_block(&mi, 0, 21));
	mountinfo__free(&mi);
}

/* A file on a mount neither table knows could be anything: refused. */
static void test_unknown_mount_is_refused(void **state)
{
	struct mountinfo empty = { 0 };
	struct safe_root r = { .fd = root_fd, .mi = &empty, .host_mi = NULL };
	struct safe_file f;

	(void)state;
	assert_int_equal(safeopen__in_root(&r, "/etc/passwd", 0, &f), -EREMOTE);
	assert_string_equal(f.fstype, "");
	assert_int_equal(f.fd, -1);
	/* Known through the host's table: fine. */
	r.host_mi = &host_mi;
	assert_int_equal(safeopen__in_root(&r, "/etc/passwd", 0, &f), 0);
	close(f.fd);
}

static void test_walk_without_openat2(void **state)
{
	int err;

	(void)state;
	safeopen__force_walk(true);
	assert_string_equal(read_in_root("/etc/passwd", 0, NULL, &err), "inside\n");
	read_in_root("/abs_link", 0, NULL, &err);
	assert_int_equal(err, -ELOOP);
	read_in_root("/dir_link/passwd", 0, NULL, &err);
	assert_int_equal(err, -ELOOP);
	read_in_root("/fifo", 0, NULL, &err);
	assert_int_equal(err, -EINVAL);
	safeopen__force_walk(false);
}

static void test_reopen_checks_type(void **state)
{
	char path[256];
	struct safe_file f;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo", root);
	fd = open(path, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	{
		struct safe_root r = { .fd = -1, .host_mi = &host_mi };

		assert_int_equal(safeopen__reopen(fd, &r, &f), -EINVAL);
		close(fd);
		snprintf(path, sizeof(path), "%s/etc/passwd", root);
		fd = open(path, O_PATH | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(safeopen__reopen(fd, &r, &f), 0);
	}
	assert_true(f.fd >= 0 && f.fd != fd);
	close(f.fd);
	close(fd);
}

static void test_mountinfo_parser(void **state)
{
	static const char text[] =
		"22 27 0:21 / /proc rw,relatime - proc proc rw\n"
		"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
		"50 27 0:60 / /mnt/with\\040space rw shared:1 master:2 - fuse /dev/fuse rw\n"
		"51 27 0:61 / /media/usb rw - fuseblk /dev/sdb1 rw\n"
		"52 27 0:62 / /mnt/fu rw - tmpfs tmpfs rw\n"
		"garbage line\n"
		"53 27 0:63 / relative rw - tmpfs tmpfs rw\n"
		"54 27 0:64 / /no/type rw\n"
		"55 27 0:65 / /bad\\09escape rw - tmpfs tmpfs rw\n"
		"\n";
	struct mountinfo mi;

	(void)state;
	assert_int_equal(mountinfo__parse(text, sizeof(text) - 1, &mi), 0);
	assert_int_equal(mi.nr, 5);
	assert_int_equal(mi.bad_lines, 4);
	assert_true(mi.any_block);
	assert_string_equal(mi.ents[2].point, "/mnt/with space");
	assert_true(mi.ents[2].may_block);
	assert_string_equal(mi.ents[2].fstype, "fuse");
	assert_int_equal(mi.ents[2].major, 0);
	assert_int_equal(mi.ents[2].minor, 60);
	assert_true(mi.ents[3].may_block);
	assert_false(mi.ents[4].may_block);
	assert_true(mountinfo__find_id(&mi, 50)->may_block);
	assert_true(mountinfo__find_id(&mi, 51)->may_block);
	assert_false(mountinfo__find_id(&mi, 52)->may_block);
	assert_null(mountinfo__find_id(&mi, 999));
	assert_non_null(mountinfo__path_may_block(&mi, "/mnt/with space/a/b"));
	assert_non_null(mountinfo__path_may_block(&mi, "/media/usb"));
	/* Component-wise: /media/usbstick is not under /media/usb. */
	assert_null(mountinfo__path_may_block(&mi, "/media/usbstick/x"));
	assert_null(mountinfo__path_may_block(&mi, "/mnt/fu/x"));
	assert_null(mountinfo__path_may_block(&mi, "/usr/bin/ls"));
	mountinfo__free(&mi);

	/* A FUSE file system mounted on / covers everything. */
	{
		const char *t = "1 0 0:1 / / rw - fuse.rootfs x rw\n";

		assert_int_equal(mountinfo__parse(t, strlen(t), &mi), 0);
	}
	assert_non_null(mountinfo__path_may_block(&mi, "/tmp/perf-1.map"));
	mountinfo__free(&mi);
	assert_int_equal(mountinfo__parse(NULL, 0, &mi), 0);
	assert_null(mountinfo__path_may_block(&mi, "/x"));
	mountinfo__free(&mi);
	/* The real one parses. */
	assert_int_equal(mountinfo__read("/proc/self/mountinfo", &mi), 0);
	assert_true(mi.nr > 0);
	mountinfo__free(&mi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symlinks_stay_inside_root),
		cmocka_unit_test(test_magic_links_refused),
		cmocka_unit_test(test_special_files_do_not_block),
		cmocka_unit_test(test_fuse_mounts_are_not_touched),
		cmocka_unit_test(test_walk_without_openat2),
		cmocka_unit_test(test_reopen_checks_type),
		cmocka_unit_test(test_network_mounts_are_not_touched),
		cmocka_unit_test(test_unknown_mount_is_refused),
		cmocka_unit_test(test_mountinfo_parser),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
