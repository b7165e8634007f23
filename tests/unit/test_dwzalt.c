// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_dwzalt.c - dwz files (sym/dwzalt.h): the .gnu_debugaltlink parser
 * (name and build id; no NUL, empty, truncated, oversized, control
 * characters); the inlined fixture dwz'd (fixtures/dwz: heavy's and light's
 * names live only in common.dwz, named by the relative link "common.dwz"):
 * read through dwinline, the inlined frames are named, and two files share
 * one held dwz file, freed with the last; without it they have no name; its
 * sections count in the file's cap (one byte short: not read).
 * Then the tenant's attacks, each of which must leave the names out without
 * blocking or reading outside the root: the dwz file missing, a FIFO, a
 * directory, a symlink loop, another build id, over the size cap, a link
 * that climbs out of the container root with "..", one through
 * /proc/self/root, a file its owner could not read.
 */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "proc/elfnote.h"
#include "proc/mountinfo.h"
#include "proc/safeopen.h"
#include "sym/dwinline.h"
#include "sym/dwzalt.h"

static char tmp[64];
static struct mountinfo self_mi;

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/bpfprof-dwzalt-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	assert_int_equal(mountinfo__read("/proc/self/mountinfo", &self_mi), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	assert_int_equal(system(cmd), 0);
	mountinfo__free(&self_mi);
	return 0;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd))
		fail_msg("command failed: %s", cmd);
}

/* --- the parser ----------------------------------------------------------------- */

static void test_altlink_parse(void **state)
{
	char name[ALTLINK_NAME_MAX], *big;
	uint8_t id[BUILD_ID_MAX], blob[BUILD_ID_MAX + 8];
	size_t len;

	(void)state;
	assert_int_equal(elfnote__altlink("/usr/lib/debug/.dwz/x.debug\0\x01\x02\x03\x04", 32, name,
					  id, &len),
			 0);
	assert_string_equal(name, "/usr/lib/debug/.dwz/x.debug");
	assert_int_equal(len, 4);
	assert_memory_equal(id, "\x01\x02\x03\x04", 4);
	/* Relative, and a build id holding NULs. */
	assert_int_equal(elfnote__altlink("../c\0\0\0\x07", 8, name, id, &len), 0);
	assert_string_equal(name, "../c");
	assert_int_equal(len, 3);
	assert_memory_equal(id, "\0\0\x07", 3);
	/* No NUL; an empty name; no build id; control characters. */
	assert_int_equal(elfnote__altlink("abcd", 4, name, id, &len), -EINVAL);
	assert_int_equal(elfnote__altlink("\0\x01\x02", 3, name, id, &len), -EINVAL);
	assert_int_equal(elfnote__altlink("abc\0", 4, name, id, &len), -EINVAL);
	assert_int_equal(elfnote__altlink("a\nb\0\x01", 5, name, id, &len), -EINVAL);
	assert_int_equal(elfnote__altlink("a\x7f\0\x01", 4, name, id, &len), -EINVAL);
	assert_int_equal(elfnote__altlink(NULL, 4, name, id, &len), -EINVAL);
	assert_int_equal(elfnote__altlink("a", 0, name, id, &len), -EINVAL);
	/* A build id of 64 bytes is the most; 65 is refused. */
	memset(blob, 0xab, sizeof(blob));
	memcpy(blob, "n\0", 2);
	assert_int_equal(elfnote__altlink(blob, 2 + BUILD_ID_MAX, name, id, &len), 0);
	assert_int_equal(len, BUILD_ID_MAX);
	assert_int_equal(elfnote__altlink(blob, 3 + BUILD_ID_MAX, name, id, &len), -EINVAL);
	/* A name of PATH_MAX bytes or more is refused; one less is read. */
	big = malloc(ALTLINK_NAME_MAX + 2);
	assert_non_null(big);
	memset(big, 'x', ALTLINK_NAME_MAX);
	big[ALTLINK_NAME_MAX] = '\0';
	big[ALTLINK_NAME_MAX + 1] = 1;
	assert_int_equal(elfnote__altlink(big, ALTLINK_NAME_MAX + 2, name, id, &len), -EINVAL);
	big[ALTLINK_NAME_MAX - 1] = '\0';
	big[ALTLINK_NAME_MAX] = 1;
	assert_int_equal(elfnote__altlink(big, ALTLINK_NAME_MAX + 1, name, id, &len), 0);
	assert_int_equal(strlen(name), ALTLINK_NAME_MAX - 1);
	assert_int_equal(len, 1);
	free(big);
}

/* --- reading dwz'd files -------------------------------------------------------- */

static bool have_fixture(void)
{
	struct stat st;

	if (stat(fixture_path("dwz/a"), &st) || !st.st_size) {
		print_message("skipped: no dwz when the fixtures were built\n");
		return false;
	}
	return true;
}

/* Names of the inlined frames at every address of outer() in bin. */
struct names {
	size_t heavy, light, unnamed;
};

static struct names outer_names(struct dwinline *d, const char *bin)
{
	uint64_t start = nm_addr(bin, "outer");
	struct names nm = { 0 };

	for (uint64_t a = start; a < start + 64; a++) {
		const struct dwinline_frame *f;
		struct budget b;
		size_t n;

		budget__start(&b, 1000ull * 1000 * 1000);
		if (dwinline__frames(d, a, &b, &f, &n))
			continue;
		for (size_t i = 0; i + 1 < n; i++) {
			if (!f[i].name)
				nm.unnamed++;
			else if (!strcmp(f[i].name, "heavy"))
				nm.heavy++;
			else if (!strcmp(f[i].name, "light"))
				nm.light++;
		}
	}
	return nm;
}

/*
 * Opens root_dir/rel's DWARF with its dwz file looked for in root_dir (as a
 * container's root: the holding file's path is /rel there), for readers
 * (NULL: anyone). *status: dwinline__alt()'s.
 */
static struct dwinline *open_in(const char *root_dir, const char *rel,
				const struct safe_cred *reader, int *status, double *secs)
{
	struct safe_root root = { .fd = safeopen__dir(root_dir), .host_mi = &self_mi };
	const struct safe_cred *readers[1] = { reader };
	char path[4096], inside[4096];
	struct dwzalt_query q = { 0 };
	struct dwinline *d;
	struct timespec t0, t1;
	int fd;

	assert_true(root.fd >= 0);
	snprintf(path, sizeof(path), "%s/%s", root_dir, rel);
	snprintf(inside, sizeof(inside), "/%s", rel);
	q.roots[0] = &root;
	q.path = inside;
	q.link_root = 0;
	q.debug_dir = "/nonexistent-debug-dir";
	q.readers = readers;
	q.nr_readers = reader ? 1 : 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	d = dwinline__open_fd_alt(fd, DWINLINE_MAX_BYTES, NULL, NULL, &q);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	close(root.fd);
	assert_non_null(d);
	*status = dwinline__alt(d, NULL);
	if (secs)
		*secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return d;
}

/* A container root holding the fixtures at /p/{a,b,common.dwz}. */
static void make_root(const char *name, char *dir, size_t size)
{
	snprintf(dir, size, "%s/%s", tmp, name);
	sh("rm -rf %s && mkdir -p %s/p && cp %s %s/p/", dir, dir, fixture_path("dwz/a"), dir);
	sh("cp %s %s/p/", fixture_path("dwz/b"), dir);
	sh("cp %s %s/p/", fixture_path("dwz/common.dwz"), dir);
}

static void test_names_from_dwz_file(void **state)
{
	char root[256], bin[300];
	struct dwinline *d, *d2;
	struct names nm;
	int st;

	(void)state;
	if (!have_fixture())
		return;
	make_root("good", root, sizeof(root));
	snprintf(bin, sizeof(bin), "%s/p/a", root);
	/* Without its dwz file (what bpfprof did before): no names. */
	{
		int fd = open(bin, O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0);
		d = dwinline__open_fd(fd, DWINLINE_MAX_BYTES, NULL, NULL);
		close(fd);
		assert_non_null(d);
		assert_int_equal(dwinline__alt(d, NULL), 1);
		nm = outer_names(d, bin);
		assert_true(nm.unnamed > 0);
		assert_int_equal(nm.heavy + nm.light, 0);
		dwinline__free(d);
	}
	d = open_in(root, "p/a", NULL, &st, NULL);
	assert_int_equal(st, 0);
	nm = outer_names(d, bin);
	assert_true(nm.heavy > 0);
	assert_true(nm.light > 0);
	assert_int_equal(nm.unnamed, 0);
	/* b names the same file: read once, held while either uses it. */
	assert_int_equal(dwzalt__held(), 1);
	d2 = open_in(root, "p/b", NULL, &st, NULL);
	assert_int_equal(st, 0);
	assert_int_equal(dwzalt__held(), 1);
	dwinline__free(d);
	nm = outer_names(d2, bin);
	assert_true(nm.heavy > 0 && nm.light > 0);
	dwinline__free(d2);
	assert_int_equal(dwzalt__held(), 0);
}

/* What room() was asked for, in order: the file's sections, then its dwz file's. */
static size_t rooms[4], nr_rooms;

static void room(void *ctx, size_t bytes)
{
	(void)ctx;
	if (nr_rooms < 4)
		rooms[nr_rooms++] = bytes;
}

static struct dwinline *open_max(const char *root_dir, size_t max, int *status)
{
	struct safe_root root = { .fd = safeopen__dir(root_dir), .host_mi = &self_mi };
	struct dwzalt_query q = { .roots = { &root }, .path = "/p/a", .link_root = 0 };
	char path[4096];
	struct dwinline *d;
	int fd;

	snprintf(path, sizeof(path), "%s/p/a", root_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && root.fd >= 0);
	nr_rooms = 0;
	d = dwinline__open_fd_alt(fd, max, room, NULL, &q);
	close(fd);
	close(root.fd);
	assert_non_null(d);
	*status = dwinline__alt(d, NULL);
	return d;
}

/*
 * The dwz file's sections count in the file's cap and are asked room for:
 * one byte short, it is not read (whether read now or already held for
 * another file with more room).
 */
static void test_dwz_file_counts_in_the_cap(void **state)
{
	struct dwinline *d, *held;
	size_t own, alt;
	char root[256];
	int st;

	(void)state;
	if (!have_fixture())
		return;
	make_root("cap", root, sizeof(root));
	d = open_max(root, DWINLINE_MAX_BYTES, &st);
	assert_int_equal(st, 0);
	assert_int_equal(nr_rooms, 2);
	own = rooms[0];
	alt = rooms[1];
	assert_true(own > 0 && alt > 0);
	dwinline__free(d);
	d = open_max(root, own + alt, &st);
	assert_int_equal(st, 0);
	dwinline__free(d);
	d = open_max(root, own + alt - 1, &st);
	assert_int_equal(st, -EFBIG);
	assert_int_equal(nr_rooms, 1);
	dwinline__free(d);
	/* Held for one file, too large for another. */
	held = open_max(root, DWINLINE_MAX_BYTES, &st);
	assert_int_equal(st, 0);
	d = open_max(root, own + alt - 1, &st);
	assert_int_equal(st, -EFBIG);
	assert_int_equal(nr_rooms, 1);
	assert_int_equal(dwzalt__held(), 1);
	dwinline__free(d);
	dwinline__free(held);
	assert_int_equal(dwzalt__held(), 0);
}

/* The dwz file replaced by what cmd makes of root/p/common.dwz: no names, no hang. */
static void attack(const char *name, const char *cmd, const struct safe_cred *reader, int want)
{
	char root[256], bin[300];
	struct dwinline *d;
	struct names nm;
	double secs;
	int st;

	make_root(name, root, sizeof(root));
	snprintf(bin, sizeof(bin), "%s/p/a", root);
	if (cmd)
		sh(cmd, root, root, root);
	d = open_in(root, "p/a", reader, &st, &secs);
	if (st != want)
		fail_msg("%s: status %d, want %d", name, st, want);
	assert_true(secs < 2.0);
	nm = outer_names(d, bin);
	assert_int_equal(nm.heavy + nm.light, 0);
	assert_true(nm.unnamed > 0);
	dwinline__free(d);
	assert_int_equal(dwzalt__held(), 0);
}

/* Flips the last byte of the file's build id (where the link names it too). */
#define FLIP_BUILD_ID                                                                              \
	"python3 -c 'import re,subprocess,sys; f=sys.argv[1]; "                                    \
	"i=bytes.fromhex(re.search(r\"Build ID: ([0-9a-f]+)\", subprocess.run([\"readelf\","       \
	"\"-n\",f],capture_output=True,text=True).stdout).group(1)); b=bytearray(open(f,\"rb\")."  \
	"read()); k=b.find(i); assert k>0; b[k+len(i)-1]^=0xff; open(f,\"wb\").write(b)' "

static void test_attacks(void **state)
{
	const struct safe_cred nobody = { .uid = 65534, .gid = 65534 };

	(void)state;
	if (!have_fixture())
		return;
	attack("missing", "rm %s/p/common.dwz # %s %s", NULL, -ENOENT);
	attack("fifo", "rm %s/p/common.dwz && mkfifo %s/p/common.dwz # %s", NULL, -EINVAL);
	attack("dir", "rm %s/p/common.dwz && mkdir %s/p/common.dwz # %s", NULL, -EINVAL);
	attack("loop", "rm %s/p/common.dwz && ln -s common.dwz %s/p/common.dwz # %s", NULL, -ELOOP);
	attack("buildid", FLIP_BUILD_ID "%s/p/common.dwz # %s %s", NULL, -ESTALE);
	/* Over DEBUGINFO_MAX_FILE (sparse): refused before a byte is read. */
	attack("huge", "truncate -s 2G %s/p/common.dwz # %s %s", NULL, -EFBIG);
	/* Readable only by root: not read for a binary nobody owns (rule 1). */
	attack("perm", "chmod 600 %s/p/common.dwz && chmod 755 %s %s/p", &nobody, -EACCES);
}

/*
 * Rewrites root/p/a's link to name (its build id kept) and opens it: the
 * right dwz file is there, outside the root or through /proc, so only a walk
 * that left the root would find it.
 */
static void attack_link(const char *name, const char *link_fmt, bool host_root, int want)
{
	char root[256], bin[300], link[1024];
	struct dwinline *d;
	struct names nm;
	int st;

	make_root(name, root, sizeof(root));
	snprintf(bin, sizeof(bin), "%s/p/a", root);
	/* The dwz file outside the container root, not inside. */
	sh("mv %s/p/common.dwz %s/%s.dwz", root, tmp, name);
	snprintf(link, sizeof(link), link_fmt, tmp, name);
	sh("cd %s/p && objcopy --dump-section .gnu_debugaltlink=old a && "
	   "printf '%%s\\0' '%s' > new && tail -c 20 old >> new && "
	   "objcopy --update-section .gnu_debugaltlink=new a a2 && mv a2 a",
	   root, link);
	/* host_root: the agent's own "/", holding the file at /TMP/NAME.dwz. */
	d = host_root ? open_in("/", bin + 1, NULL, &st, NULL)
		      : open_in(root, "p/a", NULL, &st, NULL);
	if (want == 1 ? st != 0 : want ? st != want : st >= 0)
		fail_msg("%s: status %d, want %d", name, st, want);
	print_message("%s: %s\n", name, strerror(-st));
	nm = outer_names(d, bin);
	if (want == 1)
		assert_true(nm.heavy > 0 && nm.light > 0);
	else
		assert_int_equal(nm.heavy + nm.light, 0);
	dwinline__free(d);
	assert_int_equal(dwzalt__held(), 0);
}

static void test_link_escapes(void **state)
{
	char real[300];
	struct dwinline *d;
	int st;

	(void)state;
	if (!have_fixture())
		return;
	/* The control: an absolute link to it works when it is inside the root. */
	make_root("abs", real, sizeof(real));
	sh("cd %s/p && objcopy --dump-section .gnu_debugaltlink=old a && "
	   "printf '%%s\\0' /p/common.dwz > new && tail -c 20 old >> new && "
	   "objcopy --update-section .gnu_debugaltlink=new a a2 && mv a2 a",
	   real);
	d = open_in(real, "p/a", NULL, &st, NULL);
	assert_int_equal(st, 0);
	dwinline__free(d);
	/* "../../../" climbs to the root's "/", never past it. */
	attack_link("dotdot", "../../../../../../..%s/%s.dwz", false, -ENOENT);
	/* The host's path of it, absolute: looked up in the container's root. */
	attack_link("hostpath", "%s/%s.dwz", false, -ENOENT);
	/* Through /proc magic links, even in the host's root: refused. */
	attack_link("procself", "/proc/self/root%s/%s.dwz", true, 0);
	attack_link("procfd", "/proc/self/cwd/../../../../../../..%s/%s.dwz", true, 0);
	/* The control: the same host path in the host's root is found. */
	attack_link("hostok", "%s/%s.dwz", true, 1);
}

static size_t open_fds(void)
{
	struct dirent *e;
	size_t n = 0;
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * review10 M2: a held dwz file is pinned (a descriptor kept open), so once
 * it is unlinked its inode number cannot go to another file, whose link
 * names the same build id, and be served the held DWARF without a byte of
 * it read. Another tenant's directory p2: b naming "common.dwz", files
 * made there until one gets the unlinked file's inode (ext4 gives it at
 * once when it is free) or 200 tries.
 */
static void test_held_file_pinned(void **state)
{
	char root[256], path[400], name[400];
	struct dwinline *d, *d2;
	struct stat st, st2;
	size_t fds;
	int s, tries, got = 0;

	(void)state;
	if (!have_fixture())
		return;
	make_root("reuse", root, sizeof(root));
	sh("mkdir %s/p2 && cp %s %s/p2/b", root, fixture_path("dwz/b"), root);
	snprintf(path, sizeof(path), "%s/p/common.dwz", root);
	assert_int_equal(stat(path, &st), 0);
	fds = open_fds();
	d = open_in(root, "p/a", NULL, &s, NULL);
	assert_int_equal(s, 0);
	assert_int_equal(dwzalt__held(), 1);
	assert_int_equal(open_fds(), fds + 1); /* its descriptor, kept */
	assert_int_equal(unlink(path), 0);
	for (tries = 0; tries < 200 && !got; tries++) {
		int fd;

		snprintf(name, sizeof(name), "%s/p2/g%d", root, tries);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		/* As large as the held file, zeros (not ELF). */
		assert_int_equal(ftruncate(fd, st.st_size), 0);
		assert_int_equal(fstat(fd, &st2), 0);
		close(fd);
		got = st2.st_ino == st.st_ino;
	}
	print_message("inode %s after %d files\n", got ? "reused" : "not reused", tries);
	if (got)
		sh("mv %s %s/p2/common.dwz", name, root);
	else
		sh("truncate -s %lld %s/p2/common.dwz", (long long)st.st_size, root);
	assert_false(got);
	d2 = open_in(root, "p2/b", NULL, &s, NULL);
	if (s == 0)
		fail_msg("b was given the held dwz file (inode %s)", got ? "reused" : "not reused");
	assert_int_equal(s, -ENOEXEC);
	dwinline__free(d2);
	dwinline__free(d);
	assert_int_equal(dwzalt__held(), 0);
	assert_int_equal(open_fds(), fds);
}

/*
 * review10 S1: a refused dwz file is read once in the run, not once per file
 * naming it (a tenant's bomb named by many small binaries), while it is the
 * same file; changed (touched), it is read again.
 */
static void test_refusal_remembered(void **state)
{
	static const char *const kinds[] = { "buildid", "garbage" };
	char root[256];
	struct dwinline *d;
	size_t reads;
	int st;

	(void)state;
	if (!have_fixture())
		return;
	for (size_t k = 0; k < 2; k++) {
		int want = k ? -ENOEXEC : -ESTALE;
		char name[32];

		snprintf(name, sizeof(name), "refused-%s", kinds[k]);
		make_root(name, root, sizeof(root));
		if (k)
			sh("head -c 100000 /dev/zero > %s/p/common.dwz", root);
		else
			sh(FLIP_BUILD_ID "%s/p/common.dwz", root);
		reads = dwzalt__reads();
		for (int i = 0; i < 4; i++) {
			d = open_in(root, i % 2 ? "p/b" : "p/a", NULL, &st, NULL);
			assert_int_equal(st, want);
			dwinline__free(d);
		}
		if (dwzalt__reads() != reads + 1)
			fail_msg("%s: read %zu times for 4 files naming it", kinds[k],
				 dwzalt__reads() - reads);
		/* Another file now (its times changed): read again, once. */
		sh("sleep 0.01; touch %s/p/common.dwz", root);
		for (int i = 0; i < 2; i++) {
			d = open_in(root, "p/a", NULL, &st, NULL);
			assert_int_equal(st, want);
			dwinline__free(d);
		}
		assert_int_equal(dwzalt__reads(), reads + 2);
		assert_int_equal(dwzalt__held(), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_altlink_parse),
		cmocka_unit_test(test_names_from_dwz_file),
		cmocka_unit_test(test_dwz_file_counts_in_the_cap),
		cmocka_unit_test(test_attacks),
		cmocka_unit_test(test_link_escapes),
		cmocka_unit_test(test_held_file_pinned),
		cmocka_unit_test(test_refusal_remembered),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
