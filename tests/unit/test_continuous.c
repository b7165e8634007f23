// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_continuous.c - the pieces of continuous mode that need no BPF: the
 * interval store (names, atomic files, retention, full disk), push series
 * names, --listen parsing, metrics text, live requests, the new options.
 */
#include "testutil.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "agent/httpd.h"
#include "agent/live.h"
#include "agent/metrics.h"
#include "format/writer.h"
#include "base/profile.h"
#include "agent/push.h"
#include "agent/store.h"
#include "proc/cgroup.h"

static struct profile *small_profile(uint64_t count)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 1, .comm = "app" };
	uint32_t f = (uint32_t)profile__frame(p, FRAME_USER, "main", "/bin/app");

	assert_int_equal(profile__add(p, &s, &f, 1, count), 0);
	return p;
}

static int count_files(const char *dir, const char *needle)
{
	char cmd[512], line[256];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls -1 %s", dir);
	f = popen(cmd, "r");
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	pclose(f);
	return n;
}

static void test_store_names_and_keep(void **state)
{
	char dir[] = "/tmp/bpfprof-store-XXXXXX", name[128], path[512], cmd[600];
	struct store_opts so = { .writer = &writer_folded, .ext = ".folded", .keep = 3 };
	struct profile *p = small_profile(5);
	struct store_stats st;
	struct store *s;
	/* 2026-11-22T09:10:00Z */
	uint64_t t0 = 1795338600ULL * 1000000000ULL;

	assert_int_equal(store__name(t0, ".pb.gz", 0, name, sizeof(name)), 0);
	assert_string_equal(name, "bpfprof-20261122T091000Z.pb.gz");
	assert_int_equal(store__name(t0, ".pb.gz", 2, name, sizeof(name)), 0);
	assert_string_equal(name, "bpfprof-20261122T091000Z-2.pb.gz");

	assert_non_null(mkdtemp(dir));
	/* Files that are not ours must survive retention; a leftover temp of ours
	 * goes, one with a name the store does not make stays. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && touch keep-me.folded bpfprof-20200101T000000Z.folded.tmp.Ab3dE9 "
		 "bpfprof-20200101T000000Z.folded.tmp.abc",
		 dir);
	assert_int_equal(system(cmd), 0);
	so.dir = dir;
	s = store__open(&so, NULL);
	assert_non_null(s);
	assert_int_equal(count_files(dir, ".tmp."), 1);
	assert_int_equal(count_files(dir, ".tmp.abc"), 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(
			store__write(s, p, t0 + (uint64_t)i * 10000000000ULL, path, sizeof(path)),
			0);
	/* Same second twice: a -1 suffix, not an overwrite. */
	assert_int_equal(store__write(s, p, t0 + 40000000000ULL, path, sizeof(path)), 0);
	assert_non_null(strstr(path, "T091040Z-1.folded"));
	store__stats(s, &st);
	assert_int_equal(st.written, 6);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.pruned, 3);
	assert_int_equal(count_files(dir, "bpfprof-"), 4); /* and the .tmp.abc */
	assert_int_equal(count_files(dir, "keep-me"), 1);
	assert_int_equal(count_files(dir, "T091000Z"), 0); /* the oldest went first */
	store__close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	profile__free(p);
}

static void test_store_max_disk_and_errors(void **state)
{
	char dir[] = "/tmp/bpfprof-store-XXXXXX", cmd[600];
	struct store_opts so = { .writer = &writer_folded, .ext = ".folded" };
	struct profile *p = small_profile(7); /* "app;main 7\n": 11 bytes */
	struct store_stats st;
	struct store *s;

	assert_non_null(mkdtemp(dir));
	so.dir = dir;
	so.max_disk = 25; /* room for two files */
	s = store__open(&so, NULL);
	for (int i = 0; i < 4; i++)
		assert_int_equal(store__write(s, p, (uint64_t)(1000 + i) * 1000000000ULL, NULL, 0),
				 0);
	store__stats(s, &st);
	assert_int_equal(st.files, 2);
	assert_true(st.bytes <= 25);
	/* The directory becomes unwritable: the write fails, is counted, files stay. */
	snprintf(cmd, sizeof(cmd), "chmod 0500 %s", dir);
	assert_int_equal(system(cmd), 0);
	if (geteuid() != 0) { /* root ignores directory permissions */
		assert_true(store__write(s, p, 2000ULL * 1000000000ULL, NULL, 0) < 0);
		store__stats(s, &st);
		assert_int_equal(st.errors, 1);
		assert_int_equal(st.files, 2);
	}
	store__close(s);
	snprintf(cmd, sizeof(cmd), "chmod 0700 %s && rm -rf %s", dir, dir);
	assert_int_equal(system(cmd), 0);
	/* Not a directory / missing parent. */
	so.dir = "/dev/null";
	assert_null(store__open(&so, NULL));
	so.dir = "/nonexistent/a/b";
	assert_null(store__open(&so, NULL));
	profile__free(p);
}

static void test_push_series_name(void **state)
{
	char buf[256];

	assert_int_equal(pusher__series_name("bpfprof", "node1", NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "bpfprof.cpu{hostname=node1}");
	assert_int_equal(pusher__series_name("app", "h", "abc", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "app.cpu{hostname=h,container_id=abc}");
	assert_int_equal(pusher__series_name("app", "h", "abc", buf, 10), -ENAMETOOLONG);
}

static void test_listen_parsing(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;

	assert_int_equal(httpd__parse_listen("6060", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), 0x7f000001);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 6060);
	assert_int_equal(httpd__parse_listen("0.0.0.0:80", &ss, &len), 0);
	assert_int_equal(httpd__parse_listen("[::1]:6060", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(httpd__parse_listen("localhost:1", &ss, &len), 0);
	assert_int_equal(httpd__parse_listen("0", &ss, &len), -EINVAL);
	assert_int_equal(httpd__parse_listen("65536", &ss, &len), -EINVAL);
	assert_int_equal(httpd__parse_listen("host:", &ss, &len), -EINVAL);
	assert_int_equal(httpd__parse_listen("999.1.1.1:80", &ss, &len), -EINVAL);
	assert_int_equal(httpd__parse_listen("[::1:80", &ss, &len), -EINVAL);
}

static void test_metrics_text(void **state)
{
	struct metrics_snapshot m = { .samples = 990,
				      .lost_stacks_full = 2,
				      .drains = 10,
				      .freq = 99,
				      .unwind_fp_fallbacks = 7,
				      .jvm_frames = 40,
				      .jvm_ends = { 12, 3 } };
	struct sbuf sb = { 0 };

	assert_int_equal(metrics__render(&m, 0, &sb), 0);
	assert_non_null(strstr(
		sb.buf, "# TYPE bpfprof_samples_total counter\nbpfprof_samples_total 990\n"));
	assert_non_null(
		strstr(sb.buf, "bpfprof_lost_samples_total{reason=\"stack_map_full\"} 2\n"));
	assert_non_null(strstr(sb.buf, "bpfprof_resident_memory_bytes "));
	assert_non_null(strstr(sb.buf, "\nbpfprof_unwind_fp_fallbacks_total 7\n"));
	assert_non_null(strstr(sb.buf, "\nbpfprof_jvm_frames_total 40\n"));
	assert_non_null(strstr(sb.buf, "\nbpfprof_jvm_walk_ends_total{reason=\"call_stub\"} 12\n"));
	assert_non_null(strstr(sb.buf, "\nbpfprof_jvm_walk_ends_total{reason=\"no_blob\"} 3\n"));
	/* No drain completed (last_drain_ns 0): not healthy, and no age to show. */
	assert_non_null(strstr(sb.buf, "\nbpfprof_healthy 0\n"));
	assert_null(strstr(sb.buf, "bpfprof_last_drain_age_seconds"));
	/* Every line is a comment or "name[{labels}] value". */
	for (char *line = strtok(sb.buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		assert_non_null(strchr(line, ' '));
		assert_true(strncmp(line, "bpfprof_", 8) == 0);
	}
	sbuf_free(&sb);
}

#define S 1000000000ULL

/* Health: not before the first drain, not once a drain is overdue (2 periods + 10 s). */
static void test_health_verdict(void **state)
{
	struct metrics_snapshot m = { .started_ns = 100 * S, .drain_period_ns = 1 * S };
	struct sbuf sb = { 0 };
	char why[160];

	assert_int_equal(metrics__overdue_ns(&m), 12 * S);
	/* Starting: no drain yet. */
	assert_false(metrics__healthy(&m, 101 * S, why, sizeof(why)));
	assert_string_equal(why, "not ready: no drain yet (started 1.0 s ago)\n");
	/* The first drain stuck past the limit. */
	assert_false(metrics__healthy(&m, 113 * S, why, sizeof(why)));
	assert_string_equal(why, "stalled: no drain yet, started 13 s ago "
				 "(overdue after 12 s: 2 drain periods of 1 s + 10 s)\n");
	/* Drained: ok up to 12 s after the last drain, not a nanosecond more. */
	m.last_drain_ns = 120 * S;
	assert_true(metrics__healthy(&m, 120 * S, why, sizeof(why)));
	assert_string_equal(why, "ok\n");
	assert_true(metrics__healthy(&m, 132 * S, why, sizeof(why)));
	assert_false(metrics__healthy(&m, 132 * S + 1, why, sizeof(why)));
	assert_false(metrics__healthy(&m, 150 * S, why, sizeof(why)));
	assert_string_equal(why, "stalled: no drain completed for 30 s "
				 "(overdue after 12 s: 2 drain periods of 1 s + 10 s)\n");
	/* A clock read before the snapshot was taken is not an age. */
	assert_true(metrics__healthy(&m, 119 * S, why, sizeof(why)));
	/* A shorter --interval shortens the period. */
	m.drain_period_ns = S / 2;
	assert_int_equal(metrics__overdue_ns(&m), 11 * S);
	assert_false(metrics__healthy(&m, 131500000000ULL, why, sizeof(why)));
	assert_string_equal(why, "stalled: no drain completed for 12 s "
				 "(overdue after 11 s: 2 drain periods of 0.5 s + 10 s)\n");
	/* /metrics: the age of the last drain and the verdict. */
	m.drain_period_ns = S;
	assert_int_equal(metrics__render(&m, 123500000000ULL, &sb), 0);
	assert_non_null(strstr(sb.buf, "\nbpfprof_last_drain_age_seconds 3.500\n"));
	assert_non_null(strstr(sb.buf, "\nbpfprof_healthy 1\n"));
	sbuf_free(&sb);
	/* A tiny buffer still gets a terminated string. */
	assert_false(metrics__healthy(&m, 200 * S, why, 8));
	assert_string_equal(why, "stalled");
}

struct collect_arg {
	struct live *l;
	int err;
	char *body;
	size_t len;
};

static void *collector_thread(void *arg)
{
	struct collect_arg *a = arg;

	a->err = live__collect(a->l, 1, &a->body, &a->len);
	return NULL;
}

static void test_live_request_gets_fed_deltas(void **state)
{
	struct live *l = live__new(&writer_folded, 99);
	struct collect_arg a = { .l = l };
	struct profile *d = small_profile(3);
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, collector_thread, &a), 0);
	while (!live__pending(l))
		usleep(1000);
	live__feed(l, d, now_ns());		    /* before the deadline: accumulated */
	live__feed(l, d, now_ns() + 2000000000ULL); /* after: completed */
	pthread_join(t, NULL);
	assert_int_equal(a.err, 0);
	assert_non_null(a.body);
	assert_non_null(strstr(a.body, "app;main 6"));
	free(a.body);
	live__shutdown(l);
	assert_int_equal(live__collect(l, 1, &a.body, &a.len), -ESHUTDOWN);
	live__free(l);
	profile__free(d);
}

static void test_continuous_options(void **state)
{
	char *argv[16] = { "bpfprof" };
	struct errmsg err = { 0 };
	struct options o;
	uint64_t v;

	argv[1] = "--output-dir";
	argv[2] = "/tmp";
	assert_int_equal(cli__parse(3, argv, &o, &err), CLI_OK);
	assert_true(o.interval == 10); /* the default with --output-dir */
	options__free(&o);
	argv[1] = "--interval";
	argv[2] = "5";
	assert_int_equal(cli__parse(3, argv, &o, &err), CLI_USAGE);
	assert_non_null(strstr(err.msg, "needs somewhere"));
	argv[1] = "--push";
	argv[2] = "ftp://x";
	assert_int_equal(cli__parse(3, argv, &o, &err), CLI_USAGE);
	argv[1] = "--keep";
	argv[2] = "3";
	assert_int_equal(cli__parse(3, argv, &o, &err), CLI_USAGE);
	assert_non_null(strstr(err.msg, "need --output-dir"));
	argv[1] = "-o";
	argv[2] = "x.folded";
	argv[3] = "--output-dir";
	argv[4] = "/tmp";
	assert_int_equal(cli__parse(5, argv, &o, &err), CLI_USAGE);
	argv[1] = "--cgroup";
	argv[2] = "/a";
	argv[3] = "--cgroup";
	argv[4] = "/b";
	argv[5] = "--listen";
	argv[6] = "6060";
	assert_int_equal(cli__parse(7, argv, &o, &err), CLI_OK);
	assert_int_equal(o.nr_cgroups, 2);
	assert_string_equal(o.cgroups[1], "/b");
	/* --listen's address kept as parsed (say_listening's URL is from it) */
	assert_int_equal(o.listen_len, sizeof(struct sockaddr_in));
	assert_int_equal(o.listen_addr.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&o.listen_addr)->sin_port), 6060);
	assert_int_equal(ntohl(((struct sockaddr_in *)&o.listen_addr)->sin_addr.s_addr),
			 INADDR_LOOPBACK);
	options__free(&o);
	assert_int_equal(cli__parse_size("512K", &v), 0);
	assert_int_equal(v, 512 * 1024);
	assert_int_equal(cli__parse_size("2G", &v), 0);
	assert_true(v == 2ULL << 30);
	assert_int_equal(cli__parse_size("100MiB", &v), 0);
	assert_int_equal(cli__parse_size("0", &v), -EINVAL);
	assert_int_equal(cli__parse_size("12X", &v), -EINVAL);
	assert_int_equal(cli__parse_size("-1", &v), -EINVAL);
}

static void test_cgroup2_mount(void **state)
{
	char out[256];

	assert_int_equal(
		cgroup__v2_mount("22 1 0:20 / /sys rw - sysfs sysfs rw\n"
				 "36 25 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:9 - "
				 "cgroup2 cgroup2 rw,nsdelegate\n",
				 out, sizeof(out)),
		0);
	assert_string_equal(out, "/sys/fs/cgroup/unified");
	assert_int_equal(
		cgroup__v2_mount("22 1 0:20 / /sys rw - sysfs sysfs rw\n", out, sizeof(out)),
		-ENOENT);
	assert_int_equal(cgroup__v2_mount("garbage - cgroup2", out, sizeof(out)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_names_and_keep),
		cmocka_unit_test(test_store_max_disk_and_errors),
		cmocka_unit_test(test_push_series_name),
		cmocka_unit_test(test_listen_parsing),
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_health_verdict),
		cmocka_unit_test(test_live_request_gets_fed_deltas),
		cmocka_unit_test(test_continuous_options),
		cmocka_unit_test(test_cgroup2_mount),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
