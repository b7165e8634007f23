// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_util.c - htab, htab__index, string buffer, number and CPU-list parsers, procfs. */
#include "testutil.h"

#include <signal.h>
#include <sys/wait.h>

#include <errno.h>

#include "base/dynlib.h"
#include "base/errmsg.h"
#include "base/htab.h"
#include "proc/procfs.h"
#include "base/util.h"

static void test_htab_insert_find_remove_grow(void **state)
{
	struct htab *h = htab__new();
	char key[32];

	assert_non_null(h);
	for (int i = 0; i < 10000; i++) {
		bool created;
		struct htab_entry *e;

		snprintf(key, sizeof(key), "key-%d", i);
		e = htab__upsert(h, key, strlen(key), &created);
		assert_non_null(e);
		assert_true(created);
		e->value = (void *)(uintptr_t)(i + 1);
	}
	assert_int_equal(htab__count(h), 10000);
	for (int i = 0; i < 10000; i += 2) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_int_equal((uintptr_t)htab__remove(h, key, strlen(key)), i + 1);
	}
	assert_int_equal(htab__count(h), 5000);
	for (int i = 0; i < 10000; i++) {
		struct htab_entry *e;

		snprintf(key, sizeof(key), "key-%d", i);
		e = htab__find(h, key, strlen(key));
		if (i % 2)
			assert_int_equal((uintptr_t)e->value, i + 1);
		else
			assert_null(e);
	}
	/* Churn: tombstones must not make the table grow without bound or lose keys. */
	for (int round = 0; round < 50; round++)
		for (int i = 0; i < 1000; i++) {
			snprintf(key, sizeof(key), "churn-%d", i);
			assert_non_null(htab__upsert(h, key, strlen(key), NULL));
			htab__remove(h, key, strlen(key));
		}
	assert_int_equal(htab__count(h), 5000);
	{
		size_t pos = 0, n = 0;

		while (htab__next(h, &pos))
			n++;
		assert_int_equal(n, 5000);
	}
	htab__free(h);
	htab__free(NULL);
}

/* Grouping by key into an array: dense numbers, zeroed new elements, nothing kept on failure. */
static void test_htab_index(void **state)
{
	struct group {
		uint32_t key, hits;
	} *g = NULL;
	struct htab *h = htab__new(), *a = htab__new(), *b = htab__new();
	size_t nr = 0, cap = 0, at, shared = 0;
	struct htab_entry *e;
	bool created;

	assert_non_null(h);
	assert_non_null(a);
	assert_non_null(b);
	/* Keys 0..99 seen in the order 7k mod 100, each as often as its key mod 3, plus once. */
	for (uint32_t round = 0; round < 3; round++)
		for (uint32_t i = 0; i < 100; i++) {
			uint32_t k = i * 7 % 100;

			if (round && k % 3 < round)
				continue;
			e = htab__index(h, &k, sizeof(k), &at, &created, &nr, (void **)&g, &cap,
					sizeof(*g));
			assert_non_null(e);
			assert_int_equal(created, !round);
			assert_int_equal((uintptr_t)e->value, at);
			if (created) {
				assert_int_equal(at, i); /* numbered in first-seen order */
				assert_int_equal(g[at].key, 0);
				assert_int_equal(g[at].hits, 0); /* zeroed */
				g[at].key = k;
			}
			assert_int_equal(g[at].key, k);
			g[at].hits++;
		}
	assert_int_equal(nr, 100);
	assert_int_equal(htab__count(h), 100);
	for (size_t i = 0; i < nr; i++)
		assert_int_equal(g[i].hits, 1 + g[i].key % 3);
	/* An array that cannot grow (its bytes would wrap): NULL, and the key is not kept. */
	{
		uint32_t k = 1000;
		void *big = NULL;
		size_t bnr = 0, bcap = 0;

		errno = 0;
		assert_null(htab__index(h, &k, sizeof(k), &at, &created, &bnr, &big, &bcap,
					SIZE_MAX / 2));
		assert_int_equal(errno, ENOMEM);
		assert_false(created);
		assert_int_equal(bnr, 0);
		assert_int_equal(bcap, 0);
		assert_null(big);
		assert_null(htab__find(h, &k, sizeof(k)));
		assert_int_equal(htab__count(h), 100);
	}
	/* Numbers only, one numbering shared by two tables. */
	assert_non_null(htab__index(a, "x", 1, &at, &created, &shared, NULL, NULL, 0));
	assert_true(created);
	assert_int_equal(at, 0);
	assert_non_null(htab__index(b, "x", 1, &at, &created, &shared, NULL, NULL, 0));
	assert_true(created);
	assert_int_equal(at, 1);
	assert_non_null(htab__index(a, "y", 1, &at, &created, &shared, NULL, NULL, 0));
	assert_int_equal(at, 2);
	assert_non_null(htab__index(a, "x", 1, &at, &created, &shared, NULL, NULL, 0));
	assert_false(created);
	assert_int_equal(at, 0);
	assert_int_equal(shared, 3);
	free(g);
	htab__free(h);
	htab__free(a);
	htab__free(b);
}

static void test_array_grow(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	assert_int_equal(array_grow((void **)&v, &cap, 1, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(array_grow((void **)&v, &cap, 17, sizeof(*v)), 0);
	assert_int_equal(cap, 32);
	for (size_t i = 0; i < 32; i++)
		v[i] = i; /* ASan: all of it is there */
	assert_int_equal(array_grow((void **)&v, &cap, 5, sizeof(*v)), 0); /* no shrink */
	assert_int_equal(cap, 32);
	/* Overflow of the element count or the byte count: refused, array intact. */
	assert_int_equal(array_grow((void **)&v, &cap, SIZE_MAX, sizeof(*v)), -ENOMEM);
	assert_int_equal(array_grow((void **)&v, &cap, SIZE_MAX / 8 + 1, 8), -ENOMEM);
	assert_int_equal(array_grow((void **)&v, &cap, 64, SIZE_MAX / 32), -ENOMEM);
	assert_int_equal(cap, 32);
	assert_int_equal(v[31], 31);
	free(v);
}

/* array_trim: down to n (room for one at least), never up; the elements stay. */
static void test_array_trim(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	(void)state;
	array_trim((void **)&v, &cap, 0, sizeof(*v)); /* nothing allocated: nothing to do */
	assert_null(v);
	assert_int_equal(array_grow((void **)&v, &cap, 20, sizeof(*v)), 0);
	for (size_t i = 0; i < 20; i++)
		v[i] = i;
	array_trim((void **)&v, &cap, 20, sizeof(*v));
	assert_int_equal(cap, 20);
	array_trim((void **)&v, &cap, 40, sizeof(*v)); /* no growth */
	assert_int_equal(cap, 20);
	array_trim((void **)&v, &cap, 3, sizeof(*v));
	assert_int_equal(cap, 3);
	assert_int_equal(v[2], 2); /* ASan: exactly 3 left */
	array_trim((void **)&v, &cap, 0, sizeof(*v));
	assert_int_equal(cap, 1);
	assert_int_equal(v[0], 0);
	free(v);
}

static void test_errmsg(void **state)
{
	struct errmsg em;
	char big[600];

	errmsg_clear(&em);
	assert_false(errmsg_said(&em));
	assert_int_equal(errmsg_set(&em, -EINVAL, "line %d: bad", 3), -EINVAL);
	assert_true(errmsg_said(&em));
	assert_int_equal(em.err, -EINVAL);
	assert_string_equal(em.msg, "line 3: bad");
	assert_string_equal(em.hint, "");
	errmsg_hint(&em, "try %s", "this");
	assert_string_equal(em.hint, "try this");
	/* A new message drops the old hint; a long one is cut, NUL-terminated. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	errmsg_set(&em, -E2BIG, "%s", big);
	assert_int_equal(strlen(em.msg), sizeof(em.msg) - 1);
	assert_string_equal(em.hint, "");
	/* NULL: the caller does not want the text; the errno still comes back. */
	assert_int_equal(errmsg_set(NULL, -ENOENT, "x"), -ENOENT);
	errmsg_hint(NULL, "y");
	errmsg_clear(NULL);
	assert_false(errmsg_said(NULL));
}

static void test_sbuf(void **state)
{
	struct sbuf sb = { 0 };

	assert_int_equal(sbuf_puts(&sb, "a;"), 0);
	assert_int_equal(sbuf_printf(&sb, "%d-%s", 42, "x"), 0);
	assert_string_equal(sb.buf, "a;42-x");
	for (int i = 0; i < 1000; i++)
		sbuf_puts(&sb, "0123456789");
	assert_int_equal(sb.len, 6 + 10000);
	sbuf_reset(&sb);
	assert_string_equal(sb.buf, "");
	sbuf_free(&sb);
}

static void test_numbers(void **state)
{
	uint64_t v;

	assert_int_equal(parse_u64("18446744073709551615", 10, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_u64("18446744073709551616", 10, &v), -ERANGE);
	assert_int_equal(parse_u64("0x1F", 16, &v), 0);
	assert_int_equal(v, 31);
	assert_int_equal(parse_u64("", 10, &v), -EINVAL);
	assert_int_equal(parse_u64("12a", 10, &v), -EINVAL);
	assert_int_equal(parse_hex_n("ffffffffffffffff", 16, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_hex_n("1ffffffffffffffff", 17, &v), -ERANGE);
	assert_int_equal(parse_hex_n("0x", 2, &v), -EINVAL);
	assert_int_equal(parse_hex_n("12g", 3, &v), -EINVAL);
}

static void test_cpulist(void **state)
{
	bool m[8];

	assert_int_equal(parse_cpulist("0-2,5", m, 8), 0);
	assert_true(m[0] && m[1] && m[2] && !m[3] && !m[4] && m[5] && !m[6]);
	assert_int_equal(parse_cpulist("0-1\n", m, 8), 0);
	assert_int_equal(parse_cpulist("8", m, 8), -ERANGE);
	assert_int_equal(parse_cpulist("2-1", m, 8), -EINVAL);
	assert_int_equal(parse_cpulist("-1", m, 8), -EINVAL);
	assert_int_equal(parse_cpulist("1,", m, 8), -EINVAL);
	assert_int_equal(parse_cpulist("a", NULL, 0), -EINVAL);
	assert_int_equal(parse_cpulist("100000", NULL, 0), 0); /* syntax only */
}

static void test_read_file_limits(void **state)
{
	char *path = write_temp_str("hello world");
	char *buf;
	size_t len;

	assert_int_equal(read_file(path, 100, &buf, &len), 0);
	assert_int_equal(len, 11);
	assert_string_equal(buf, "hello world");
	free(buf);
	assert_int_equal(read_file(path, 5, &buf, &len), -EFBIG);
	assert_int_equal(read_file("/nonexistent/x", 5, &buf, &len), -ENOENT);
	unlink(path);
	free(path);
}

static void test_procfs_stat_and_status(void **state)
{
	uint64_t t;
	struct proc_status st;

	/* A comm with spaces and ')' must not shift the fields. */
	assert_int_equal(
		procfs__parse_stat_starttime(
			"123 (a) b (c)) R 1 123 123 0 -1 4194304 100 0 0 0 5 6 0 0 20 0 1 0 "
			"98765 1000 100 18446744073709551615\n",
			&t),
		0);
	assert_int_equal(t, 98765);
	assert_int_equal(procfs__parse_stat_starttime("123 (x) R 1 2", &t), -EINVAL);
	assert_int_equal(procfs__parse_stat_starttime("garbage", &t), -EINVAL);

	assert_int_equal(procfs__parse_status("Name:\tx\nTgid:\t500\nNgid:\t0\nPid:\t501\n"
					      "Uid:\t1000\t1001\t1002\t1003\nNSpid:\t501\t7\n",
					      &st),
			 0);
	assert_int_equal(st.tgid, 500);
	assert_int_equal(st.ns_pid, 7);
	assert_int_equal(st.euid, 1001);
	assert_int_equal(procfs__parse_status("Name:\tx\n", &st), -ENOENT);

	/* Our own process, for real. */
	assert_int_equal(procfs__status("/proc", getpid(), &st), 0);
	assert_int_equal(st.tgid, getpid());
	assert_int_equal(procfs__starttime("/proc", getpid(), &t), 0);
	assert_true(t > 0);
	assert_int_equal(procfs__starttime("/proc", 0, &t), -ENOENT);
	assert_int_equal(procfs__ns_to_ticks(2500000000ULL),
			 2500000000ULL / (1000000000ULL / sysconf(_SC_CLK_TCK)));
}

/* A pidfd only for the process that started when BPF saw it (count --children's
 * stops): another start time, a gone pid and an unknown time are refused. */
static void test_procfs_pidfd_started(void **state)
{
	uint64_t ns_tick = 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK), t;
	int fd;

	(void)state;
	assert_int_equal(procfs__starttime("/proc", getpid(), &t), 0);
	fd = procfs__pidfd_started("/proc", getpid(), t * ns_tick + ns_tick / 2);
	assert_true(fd >= 0);
	assert_int_equal(procfs__pidfd_signal(fd, 0), 0);
	close(fd);
	assert_int_equal(procfs__pidfd_started("/proc", getpid(), (t + 1) * ns_tick), -ESRCH);
	assert_int_equal(procfs__pidfd_started("/proc", getpid(), 0), -ESRCH);
	assert_int_equal(procfs__pidfd_started("/proc", 0x3ffffffe, t * ns_tick), -ESRCH);
}

/* Fields 14 and 15: a process's user and system time (the -p targets' CPU). */
static void test_procfs_cputime(void **state)
{
	struct proc_stat ps;

	(void)state;
	assert_int_equal(
		procfs__parse_stat("9 (a) 14 15) R 1 9 9 0 -1 0 0 0 0 0 1234 56 7 8 20 0 1 0 "
				   "777 0 0\n",
				   &ps),
		0);
	assert_int_equal(ps.utime, 1234);
	assert_int_equal(ps.stime, 56);
	assert_int_equal(ps.start_time, 777);
}

static void test_procfs_image_signature(void **state)
{
	struct proc_stat ps;
	uint64_t ticks, t2, sig1, sig2;
	char self_exe[256], exe[256], link[64];
	int go[2];
	pid_t pid;

	(void)state;
	/* Fields 22, 26, 27, 47, 48 and 51, after a comm with spaces and ')'. */
	assert_int_equal(
		procfs__parse_stat("9 (a b) c)) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 "
				   "0 0 0 4194304 4198400 140000 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 "
				   "6291456 6295552 6299648 140001 140002 140003 140004 0\n",
				   &ps),
		0);
	assert_int_equal(ps.start_time, 777);
	assert_int_equal(ps.start_code, 4194304);
	assert_int_equal(ps.end_code, 4198400);
	assert_int_equal(ps.start_brk, 6299648);
	assert_int_equal(ps.arg_start, 140001);
	assert_int_equal(ps.env_end, 140004);
	assert_true(procfs__mm_sig(&ps) != 0);
	/* An old kernel's short line: the mm fields read 0, no signature. */
	assert_int_equal(
		procfs__parse_stat("9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n", &ps),
		0);
	assert_int_equal(procfs__mm_sig(&ps), 0);
	assert_int_equal(procfs__parse_stat("garbage", &ps), -EINVAL);

	/* For real: an exec in the same pid changes the signature, not the start time. */
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b;

		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(1);
	}
	close(go[0]);
	assert_int_equal(procfs__image("/proc", pid, &ticks, &sig1), 0);
	assert_true(sig1 != 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	assert_true(readlink("/proc/self/exe", self_exe, sizeof(self_exe)) > 0);
	for (int i = 0; i < 500; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		if (n > 0 && strstr(exe, "sleep"))
			break;
		usleep(2000);
	}
	usleep(20000);
	assert_int_equal(procfs__image("/proc", pid, &t2, &sig2), 0);
	assert_int_equal(t2, ticks);
	assert_true(sig2 != 0 && sig2 != sig1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(go[1]);
}

/* Libraries loaded on first use: a real one, a missing one, a missing function. */
static void test_dynlib(void **state)
{
	static const char *const z_names[] = { "zlibVersion", "crc32" };
	static const char *const bad_names[] = { "zlibVersion", "no_such_function_here" };
	struct {
		const char *(*zlibVersion)(void);
		unsigned long (*crc32)(unsigned long, const unsigned char *, unsigned int);
	} z = { 0 }, z2 = { 0 }, z3 = { 0 };
	struct dynlib ok = DYNLIB_INIT("libz.so.1", z_names, &z);
	struct dynlib missing = DYNLIB_INIT("libbpfprof-no-such-library.so.9", z_names, &z2);
	struct dynlib nofn = DYNLIB_INIT("libz.so.1", bad_names, &z3);

	assert_int_equal(dynlib__load(&ok), 0);
	assert_non_null(z.zlibVersion);
	assert_true(z.zlibVersion()[0] == '1');
	assert_int_equal(z.crc32(0, (const unsigned char *)"abc", 3), 0x352441c2);
	assert_int_equal(dynlib__load(&ok), 0); /* the first answer, again */

	assert_int_equal(dynlib__load(&missing), -ELIBACC);
	assert_non_null(strstr(dynlib__why(&missing), "libbpfprof-no-such-library.so.9"));
	assert_null(z2.zlibVersion);
	assert_int_equal(dynlib__load(&missing), -ELIBACC);

	assert_int_equal(dynlib__load(&nofn), -ELIBACC);
	assert_string_equal(dynlib__why(&nofn), "libz.so.1 has no no_such_function_here");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_htab_insert_find_remove_grow),
		cmocka_unit_test(test_htab_index),
		cmocka_unit_test(test_array_grow),
		cmocka_unit_test(test_array_trim),
		cmocka_unit_test(test_errmsg),
		cmocka_unit_test(test_sbuf),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_read_file_limits),
		cmocka_unit_test(test_procfs_stat_and_status),
		cmocka_unit_test(test_procfs_cputime),
		cmocka_unit_test(test_procfs_image_signature),
		cmocka_unit_test(test_procfs_pidfd_started),
		cmocka_unit_test(test_dynlib),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
