// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_safeopen_as.c - opening a file only if a reader could open it itself
 * (safeopen__in_root_as, threat model rule 1): a fake root in a temp dir
 * with files and directories of every mode, groups, symlinks (followed
 * inside the root, looping, in a sticky world-writable directory), ".."
 * that stays inside the root, a POSIX ACL that denies what the mode bits
 * allow, /proc's files and magic links; and the credentials parser behind
 * the readers (procfs__parse_cred).
 */
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "proc/mountinfo.h"
#include "proc/procfs.h"
#include "proc/safeopen.h"

static char root[64];
static int root_fd = -1;
static struct mountinfo host_mi;
static uid_t me;

/* Uids and gids no file here has (the test may run as root or not). */
#define STRANGER 4242u
#define FRIEND	 4343u
#define CLUB	 4444u

static void mk(const char *rel, mode_t mode, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (!text) {
		assert_int_equal(mkdir(path, 0700), 0);
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
		close(fd);
	}
	assert_int_equal(chmod(path, mode), 0);
}

static void ln(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
	(void)state;
	me = geteuid();
	snprintf(root, sizeof(root), "/tmp/bpfprof-safeopen-as-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(chmod(root, 0755), 0);
	mk("pub", 0755, NULL);
	mk("pub/open.c", 0644, "open\n");
	mk("pub/secret", 0600, "secret\n");
	mk("pub/club.c", 0640, "club\n");
	mk("locked", 0700, NULL);
	mk("locked/open.c", 0644, "behind a locked door\n");
	mk("passage", 0711, NULL);
	mk("passage/open.c", 0644, "through\n");
	mk("sticky", 01777, NULL);
	ln("/pub/open.c", "pub/abs_link");
	ln("../../../../pub/open.c", "pub/rel_link");
	ln("secret", "pub/link_to_secret");
	ln("loop_b", "pub/loop_a");
	ln("loop_a", "pub/loop_b");
	ln("/pub/open.c", "sticky/link");
	ln("/proc/self/root/etc/passwd", "pub/magic");
	{
		char path[256];

		/* club.c's group is CLUB (chown to a group we are not in needs root). */
		snprintf(path, sizeof(path), "%s/pub/club.c", root);
		if (me == 0)
			assert_int_equal(chown(path, 0, CLUB), 0);
	}
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

/* What path reads as the readers (NULL-ended list), in the fake root; "" on error (*err set). */
static const char *read_as(const char *path, unsigned flags, int *err, size_t *denied,
			   const struct safe_cred *c0, const struct safe_cred *c1)
{
	static char buf[64];
	const struct safe_cred *readers[2] = { c0, c1 };
	struct safe_root r = { .fd = root_fd, .mi = &host_mi, .host_mi = &host_mi };
	struct safe_file f;
	ssize_t n;

	buf[0] = '\0';
	*denied = SIZE_MAX;
	*err = safeopen__in_root_as(&r, path, flags, readers, c0 ? (c1 ? 2 : 1) : 0, &f, denied);
	if (*err) {
		assert_int_equal(f.fd, -1);
		return buf;
	}
	n = read(f.fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(f.fd);
	return buf;
}

static const struct safe_cred stranger = { .uid = STRANGER, .gid = STRANGER };

static void test_mode_bits(void **state)
{
	struct safe_cred owner = { .uid = me, .gid = getegid() };
	struct safe_cred member = {
		.uid = FRIEND, .gid = FRIEND, .groups = { 1, CLUB }, .nr_groups = 2
	};
	struct safe_cred leader = { .uid = FRIEND, .gid = CLUB };
	size_t denied;
	int err;

	(void)state;
	assert_string_equal(read_as("/pub/open.c", 0, &err, &denied, &stranger, NULL), "open\n");
	/* 0600: its owner, not another. */
	read_as("/pub/secret", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -EACCES);
	assert_int_equal(denied, 0);
	assert_string_equal(read_as("/pub/secret", 0, &err, &denied, &owner, NULL), "secret\n");
	/* Every reader must be able to: the second one here cannot. */
	read_as("/pub/secret", 0, &err, &denied, &owner, &stranger);
	assert_int_equal(err, -EACCES);
	assert_int_equal(denied, 1);
	/* No readers: the walk, without a permission check (a directory the operator named). */
	assert_string_equal(read_as("/pub/secret", 0, &err, &denied, NULL, NULL), "secret\n");
	/* A file readable by all behind a directory only its owner may search. */
	read_as("/locked/open.c", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -EACCES);
	assert_string_equal(read_as("/locked/open.c", 0, &err, &denied, &owner, NULL),
			    "behind a locked door\n");
	/* Search without read (0711) is enough to reach a file by name. */
	assert_string_equal(read_as("/passage/open.c", 0, &err, &denied, &stranger, NULL),
			    "through\n");
	/* 0640: the group's, by primary or supplementary group. */
	if (me == 0) {
		read_as("/pub/club.c", 0, &err, &denied, &stranger, NULL);
		assert_int_equal(err, -EACCES);
		assert_string_equal(read_as("/pub/club.c", 0, &err, &denied, &member, NULL),
				    "club\n");
		assert_string_equal(read_as("/pub/club.c", 0, &err, &denied, &leader, NULL),
				    "club\n");
	}
	/* uid 0 reads anything. */
	assert_string_equal(read_as("/pub/secret", 0, &err, &denied,
				    &(struct safe_cred){ .uid = 0, .gid = 0 }, NULL),
			    "secret\n");
	/* Not a regular file, not there. */
	read_as("/pub", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -EINVAL);
	read_as("/pub/none.c", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -ENOENT);
	read_as("/pub/open.c/x", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -ENOTDIR);
}

static void test_links_and_dotdot_stay_inside(void **state)
{
	size_t denied;
	int err;

	(void)state;
	assert_string_equal(read_as("/pub/abs_link", 0, &err, &denied, &stranger, NULL), "open\n");
	assert_string_equal(read_as("/pub/rel_link", 0, &err, &denied, &stranger, NULL), "open\n");
	/* ".." is the directory the walk came from, and never above the root. */
	assert_string_equal(
		read_as("/../../pub/../pub/./open.c", 0, &err, &denied, &stranger, NULL), "open\n");
	/* A link is no way around the file's own mode. */
	read_as("/pub/link_to_secret", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -EACCES);
	read_as("/pub/loop_a", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -ELOOP);
	read_as("/pub/abs_link", SAFEOPEN_NO_SYMLINKS, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -ELOOP);
	/* Inside the root, /proc/self/root is no magic: there is no proc here. */
	read_as("/pub/magic", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -ENOENT);
	/* fs.protected_symlinks: a link in a sticky world-writable directory is followed by
	 * its owner (or when the directory's owner owns it), not by another. */
	if (me == 0) {
		char path[256];

		snprintf(path, sizeof(path), "%s/sticky/link", root);
		assert_int_equal(lchown(path, FRIEND, FRIEND), 0);
		read_as("/sticky/link", 0, &err, &denied, &stranger, NULL);
		assert_int_equal(err, -EACCES);
		assert_string_equal(read_as("/sticky/link", 0, &err, &denied,
					    &(struct safe_cred){ .uid = FRIEND, .gid = FRIEND },
					    NULL),
				    "open\n");
	}
}

/* An ACL entry for one user that takes away what "other" gives everyone. */
static void test_acl_denies_what_the_mode_allows(void **state)
{
	/* version 2; USER_OBJ rw, USER STRANGER ---, GROUP_OBJ r, MASK r, OTHER r */
	static const uint8_t acl[] = {
		2,
		0,
		0,
		0,
		0x01,
		0,
		6,
		0,
		0xff,
		0xff,
		0xff,
		0xff,
		0x02,
		0,
		0,
		0,
		STRANGER & 0xff,
		STRANGER >> 8,
		0,
		0,
		0x04,
		0,
		4,
		0,
		0xff,
		0xff,
		0xff,
		0xff,
		0x10,
		0,
		4,
		0,
		0xff,
		0xff,
		0xff,
		0xff,
		0x20,
		0,
		4,
		0,
		0xff,
		0xff,
		0xff,
		0xff,
	};
	char path[256];
	size_t denied;
	int err;

	(void)state;
	mk("pub/acl.c", 0644, "acl\n");
	snprintf(path, sizeof(path), "%s/pub/acl.c", root);
	if (setxattr(path, "system.posix_acl_access", acl, sizeof(acl), 0)) {
		print_message("no POSIX ACLs on %s (%s): skipped\n", root, strerror(errno));
		return;
	}
	read_as("/pub/acl.c", 0, &err, &denied, &stranger, NULL);
	assert_int_equal(err, -EACCES);
	assert_string_equal(read_as("/pub/acl.c", 0, &err, &denied,
				    &(struct safe_cred){ .uid = FRIEND, .gid = FRIEND }, NULL),
			    "acl\n");
}

/* What neither opener looks up: no root, a relative or missing path, one too long. */
static void test_bad_arguments(void **state)
{
	struct safe_root r = { .fd = safeopen__dir("/"), .mi = &host_mi, .host_mi = &host_mi };
	struct safe_root none = { .fd = -1 };
	const struct safe_cred *readers[1] = { &(struct safe_cred){ .uid = 0, .gid = 0 } };
	char *longp = malloc(PATH_MAX + 1);
	struct safe_file f;

	(void)state;
	assert_true(r.fd >= 0);
	assert_non_null(longp);
	longp[0] = '/';
	memset(longp + 1, 'a', PATH_MAX - 1);
	longp[PATH_MAX] = '\0'; /* strlen PATH_MAX: no room for its NUL */
	for (int as = 0; as < 2; as++) {
		const char *paths[] = { "/etc/passwd", "etc/passwd", NULL, longp };
		const int want[][4] = { { 0, -EINVAL, -EINVAL, -ENAMETOOLONG },
					{ -EBADF, -EBADF, -EBADF, -EBADF } };

		for (int ri = 0; ri < 2; ri++) {
			for (int i = 0; i < 4; i++) {
				const struct safe_root *rt = ri ? &none : &r;
				int err;

				memset(&f, 0x55, sizeof(f));
				err = as ? safeopen__in_root_as(rt, paths[i], 0, readers, 1, &f,
								NULL)
					 : safeopen__in_root(rt, paths[i], 0, &f);
				assert_int_equal(err, want[ri][i]);
				if (err) {
					assert_int_equal(f.fd, -1);
					assert_string_equal(f.fstype, "");
				} else {
					close(f.fd);
				}
			}
		}
	}
	free(longp);
	close(r.fd);
}

/* /proc's files are checked by more than their mode bits: never read for a reader. */
static void test_pseudo_file_systems(void **state)
{
	struct safe_root r = { .fd = safeopen__dir("/"), .mi = &host_mi, .host_mi = &host_mi };
	const struct safe_cred *readers[1] = { &(struct safe_cred){ .uid = 0, .gid = 0 } };
	struct safe_file f;

	(void)state;
	assert_true(r.fd >= 0);
	/* /proc/1/maps is 0444, but reading it needs ptrace rights over pid 1. */
	assert_int_equal(safeopen__in_root_as(&r, "/proc/1/maps", 0, readers, 1, &f, NULL), -EPERM);
	/* A magic link is no way into another root. */
	assert_int_equal(
		safeopen__in_root_as(&r, "/proc/1/root/etc/passwd", 0, readers, 1, &f, NULL),
		-ELOOP);
	close(r.fd);
}

static void test_cred_parser(void **state)
{
	struct safe_cred c;
	char big[4096];
	size_t n;

	(void)state;
	assert_int_equal(procfs__parse_cred("Name:\tx\nUid:\t1001\t1002\t1003\t1004\n"
					    "Gid:\t2001\t2002\t2003\t2004\nGroups:\t27 1001 \n",
					    &c),
			 0);
	/* The fs ids: what file access uses. */
	assert_int_equal(c.uid, 1004);
	assert_int_equal(c.gid, 2004);
	assert_int_equal(c.nr_groups, 2);
	assert_int_equal(c.groups[0], 27);
	assert_int_equal(c.groups[1], 1001);
	assert_int_equal(procfs__parse_cred("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\n", &c),
			 0);
	assert_int_equal(c.nr_groups, 0);
	/* No Gid, a short Uid, a number past 32 bits. */
	assert_int_equal(procfs__parse_cred("Uid:\t1\t1\t1\t1\n", &c), -EINVAL);
	assert_int_equal(procfs__parse_cred("Uid:\t1\t1\nGid:\t1\t1\t1\t1\n", &c), -EINVAL);
	assert_int_equal(procfs__parse_cred("Uid:\t1\t1\t1\t99999999999\nGid:\t1\t1\t1\t1\n", &c),
			 -EINVAL);
	/* More groups than kept: the first SAFE_CRED_MAX_GROUPS. */
	n = (size_t)snprintf(big, sizeof(big), "Uid:\t5\t5\t5\t5\nGid:\t5\t5\t5\t5\nGroups:\t");
	for (unsigned i = 0; i < 100; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%u ", 100 + i);
	assert_int_equal(procfs__parse_cred(big, &c), 0);
	assert_int_equal(c.nr_groups, SAFE_CRED_MAX_GROUPS);
	assert_int_equal(c.groups[SAFE_CRED_MAX_GROUPS - 1], 100 + SAFE_CRED_MAX_GROUPS - 1);
	/* Our own, from the real /proc. */
	assert_int_equal(procfs__cred("/proc", (uint32_t)getpid(), &c), 0);
	assert_int_equal(c.uid, geteuid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_bits),
		cmocka_unit_test(test_links_and_dotdot_stay_inside),
		cmocka_unit_test(test_acl_denies_what_the_mode_allows),
		cmocka_unit_test(test_pseudo_file_systems),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_cred_parser),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
