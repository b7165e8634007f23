// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_util.c - htab, string buffer, number and CPU-list parsers, procfs. */
#include "testutil.h"

#include <errno.h>

#include "htab.h"
#include "sym/procfs.h"
#include "util.h"

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
	assert_int_equal(procfs__parse_stat_starttime(
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
	assert_int_equal(procfs__ns_to_ticks(2500000000ULL), 2500000000ULL / (1000000000ULL / sysconf(_SC_CLK_TCK)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_htab_insert_find_remove_grow),
		cmocka_unit_test(test_sbuf),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_read_file_limits),
		cmocka_unit_test(test_procfs_stat_and_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
