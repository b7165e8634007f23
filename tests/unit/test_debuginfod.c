// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_debuginfod.c - the debuginfod client's parts that need no server:
 * request URLs (hex only, whatever the build id's bytes), the URL list,
 * cache names, the cache directory's rules (0700, ours, no symlink), which
 * cache files are read (regular, ours, one link, private, under the cap),
 * trimming the cache to its byte cap (oldest first, nothing but its own
 * files touched), and a server that refuses connections: failed, counted,
 * warned once, not asked again. Servers that answer are in
 * tests/integration/test_debuginfod.py.
 */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "sym/debuginfod.h"

static char tmp[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/bpfprof-debuginfod-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	assert_int_equal(chmod(tmp, 0700), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	return system(cmd) ? -1 : 0;
}

static void test_urls(void **state)
{
	/* Bytes a crafted note could hold: '/', '.', '?', NUL, high bytes. */
	const uint8_t evil[] = { '.', '.', '/', '?', 0, 0xff, '%', '#' };
	const uint8_t id[] = { 0xab, 0xcd, 0x01 };
	char url[256], urls[4][DEBUGINFOD_MAX_URL], name[64], longurl[DEBUGINFOD_MAX_URL + 40];

	(void)state;
	assert_int_equal(debuginfod__url("http://h:1", id, sizeof(id), url, sizeof(url)), 0);
	assert_string_equal(url, "http://h:1/buildid/abcd01/debuginfo");
	assert_int_equal(debuginfod__url("http://h:1/", id, sizeof(id), url, sizeof(url)), 0);
	assert_string_equal(url, "http://h:1/buildid/abcd01/debuginfo");
	assert_int_equal(debuginfod__url("http://h", evil, sizeof(evil), url, sizeof(url)), 0);
	assert_string_equal(url, "http://h/buildid/2e2e2f3f00ff2523/debuginfo");
	assert_int_equal(debuginfod__url("http://h", id, 1, url, sizeof(url)), -EINVAL);
	assert_int_equal(debuginfod__url("http://h", id, 65, url, sizeof(url)), -EINVAL);
	assert_int_equal(debuginfod__url("http://h", id, sizeof(id), url, 20), -ENAMETOOLONG);

	assert_int_equal(debuginfod__cache_name(evil, sizeof(evil), name, sizeof(name)), 0);
	assert_string_equal(name, "2e2e2f3f00ff2523.debug");
	assert_int_equal(debuginfod__cache_name(id, 1, name, sizeof(name)), -EINVAL);

	assert_int_equal(debuginfod__parse_urls("  http://a:1  ftp://b file:///etc https://c/x\tx "
						"http://d http://e",
						urls, 3),
			 3);
	assert_string_equal(urls[0], "http://a:1");
	assert_string_equal(urls[1], "https://c/x");
	assert_string_equal(urls[2], "http://d");
	memset(longurl, 'a', sizeof(longurl) - 1);
	memcpy(longurl, "http://", 7);
	longurl[sizeof(longurl) - 1] = '\0';
	assert_int_equal(debuginfod__parse_urls(longurl, urls, 3), 0);
	assert_int_equal(debuginfod__parse_urls("", urls, 3), 0);
	assert_int_equal(debuginfod__parse_urls(NULL, urls, 3), 0);
}

static void make_file(int dirfd, const char *name, size_t size, time_t mtime, mode_t mode)
{
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
}

static bool exists(int dirfd, const char *name)
{
	struct stat st;

	return !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
}

static void test_trim(void **state)
{
	char path[128];
	struct errmsg em = { 0 };
	time_t now = time(NULL);
	int dirfd;

	(void)state;
	snprintf(path, sizeof(path), "%s/trim", tmp);
	dirfd = debuginfod__cache_dir(path, &em);
	assert_true(dirfd >= 0);
	make_file(dirfd, "aaaa01.debug", 1000, now - 300, 0600);
	make_file(dirfd, "aaaa02.debug", 1000, now - 200, 0600);
	make_file(dirfd, "aaaa03.debug", 1000, now - 100, 0600);
	/* Not the cache's: never removed, never counted. */
	make_file(dirfd, "notes.txt", 5000, now - 1000, 0600);
	make_file(dirfd, "AAAA04.debug", 5000, now - 1000, 0600);
	assert_int_equal(symlinkat("/etc/passwd", dirfd, "bbbb05.debug"), 0);
	/* A crashed run's temporary file goes; one in progress stays. */
	make_file(dirfd, "cccc06.debug.tmp.Ab12Cd", 100, now - 2 * 86400, 0600);
	make_file(dirfd, "cccc07.debug.tmp.Ef34Gh", 100, now, 0600);

	assert_int_equal(debuginfod__cache_trim(dirfd, 10000, 0), 3000);
	assert_true(exists(dirfd, "aaaa01.debug"));
	assert_false(exists(dirfd, "cccc06.debug.tmp.Ab12Cd"));
	assert_true(exists(dirfd, "cccc07.debug.tmp.Ef34Gh"));
	/* Room for 1500 under 3000: the two oldest go. */
	assert_int_equal(debuginfod__cache_trim(dirfd, 3000, 1500), 1000);
	assert_false(exists(dirfd, "aaaa01.debug"));
	assert_false(exists(dirfd, "aaaa02.debug"));
	assert_true(exists(dirfd, "aaaa03.debug"));
	assert_true(exists(dirfd, "notes.txt"));
	assert_true(exists(dirfd, "AAAA04.debug"));
	assert_true(exists(dirfd, "bbbb05.debug"));
	/* More than the cap incoming: everything of the cache's goes. */
	assert_int_equal(debuginfod__cache_trim(dirfd, 3000, 5000), 0);
	assert_true(exists(dirfd, "notes.txt"));
	close(dirfd);
}

static void test_cache_dir_rules(void **state)
{
	char path[128], parent[128], link[128];
	struct errmsg em = { 0 };
	struct stat st;
	int fd;

	(void)state;
	/* Made 0700; a directory of ours with looser bits is tightened. */
	snprintf(path, sizeof(path), "%s/c1", tmp);
	fd = debuginfod__cache_dir(path, &em);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	close(fd);
	assert_int_equal(chmod(path, 0755), 0);
	fd = debuginfod__cache_dir(path, &em);
	assert_true(fd >= 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	close(fd);
	/* Someone else's directory, or one others may write: refused. */
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(debuginfod__cache_dir(path, &em), -EACCES);
	assert_non_null(strstr(em.msg, "owned by uid 65534"));
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(debuginfod__cache_dir(path, &em), -EACCES);
	assert_int_equal(chmod(path, 0700), 0);
	/* A symlink as the cache: not followed. */
	snprintf(link, sizeof(link), "%s/c2", tmp);
	assert_int_equal(symlink(path, link), 0);
	assert_true(debuginfod__cache_dir(link, &em) < 0);
	/* A parent others can write: refused before anything is made in it. */
	snprintf(parent, sizeof(parent), "%s/open", tmp);
	assert_int_equal(mkdir(parent, 0777), 0);
	assert_int_equal(chmod(parent, 0777), 0);
	snprintf(path, sizeof(path), "%s/open/c3", tmp);
	assert_int_equal(debuginfod__cache_dir(path, &em), -EACCES);
	assert_false(exists(AT_FDCWD, path));
	assert_true(debuginfod__cache_dir("relative/x", &em) < 0);
}

static void test_cache_files_and_refused_server(void **state)
{
	const uint8_t id[] = { 0x12, 0x34, 0x56, 0x78 };
	struct debuginfod_opts o = { .urls = "http://127.0.0.1:1 ftp://x", .connect_timeout_s = 2 };
	struct debuginfod_stats st;
	struct errmsg em = { 0 };
	struct debuginfod *d;
	char dir[128], msg[1024];
	int dirfd, fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/cache", tmp);
	setenv("BPFPROF_CACHE_DIR", dir, 1);
	d = debuginfod__new(&o, &em);
	if (!d)
		fail_msg("%s", em.msg); /* libcurl is a build dependency */
	snprintf(dir, sizeof(dir), "%s/cache/debuginfod", tmp);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dirfd >= 0);

	/* Nothing cached: asked of the server, which refuses the connection. */
	assert_int_equal(debuginfod__open(d, id, sizeof(id)), -ENOENT);
	assert_int_equal(debuginfod__want(d, id, sizeof(id)), 0);
	assert_int_equal(debuginfod__want(d, id, sizeof(id)), -EALREADY);
	assert_int_equal(debuginfod__want(d, id, 1), -EINVAL);
	assert_int_equal(debuginfod__wait(d, 10000), 0);
	debuginfod__stats(d, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.fetched, 0);
	assert_int_equal(st.pending, 0);
	assert_int_equal(debuginfod__done(d), 0);
	assert_true(debuginfod__warning(d, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "http://127.0.0.1:1"));
	assert_false(debuginfod__warning(d, msg, sizeof(msg)));
	/* Failed a moment ago: not asked again. */
	assert_int_equal(debuginfod__want(d, id, sizeof(id)), -EALREADY);
	assert_int_equal(debuginfod__wait(d, 1000), 0);
	debuginfod__stats(d, &st);
	assert_int_equal(st.failed, 1);

	/* Cache files: read only when regular, ours, private, with one link. */
	make_file(dirfd, "12345678.debug", 100, time(NULL), 0644);
	assert_int_equal(debuginfod__open(d, id, sizeof(id)), -EPERM);
	assert_int_equal(fchmodat(dirfd, "12345678.debug", 0600, 0), 0);
	assert_int_equal(fchownat(dirfd, "12345678.debug", 65534, 65534, 0), 0);
	assert_int_equal(debuginfod__open(d, id, sizeof(id)), -EPERM);
	assert_int_equal(fchownat(dirfd, "12345678.debug", 0, 0, 0), 0);
	assert_int_equal(linkat(dirfd, "12345678.debug", dirfd, "other", 0), 0);
	assert_int_equal(debuginfod__open(d, id, sizeof(id)), -EPERM);
	assert_int_equal(unlinkat(dirfd, "other", 0), 0);
	fd = debuginfod__open(d, id, sizeof(id));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(unlinkat(dirfd, "12345678.debug", 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", dirfd, "12345678.debug"), 0);
	assert_int_equal(debuginfod__open(d, id, sizeof(id)), -EPERM);
	assert_int_equal(unlinkat(dirfd, "12345678.debug", 0), 0);
	assert_int_equal(mkfifoat(dirfd, "12345678.debug", 0600), 0);
	assert_int_equal(debuginfod__open(d, id, sizeof(id)), -EPERM);
	close(dirfd);
	debuginfod__free(d);
	unsetenv("BPFPROF_CACHE_DIR");

	/* No usable URL: refused at once. */
	o.urls = "ftp://x file:///y";
	assert_null(debuginfod__new(&o, &em));
	assert_non_null(strstr(em.msg, "no http:// or https:// URL"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_cache_dir_rules),
		cmocka_unit_test(test_cache_files_and_refused_server),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
