// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_cgroup.c - container ids and cgroup paths from /proc/PID/cgroup text. */
#include "testutil.h"

#include "proc/cgroup.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void expect(const char *text, const char *path, const char *id, const char *runtime)
{
	struct cgroup_info ci;

	assert_int_equal(cgroup__parse(text, &ci), 0);
	assert_string_equal(ci.path, path);
	assert_string_equal(ci.container_id, id);
	assert_string_equal(ci.runtime, runtime);
}

static void test_runtimes(void **state)
{
	expect("0::/system.slice/docker-" ID ".scope\n", "/system.slice/docker-" ID ".scope", ID,
	       "docker");
	expect("12:cpu,cpuacct:/docker/" ID "\n1:name=systemd:/docker/" ID "\n", "/docker/" ID, ID,
	       "docker");
	expect("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/"
	       "cri-containerd-" ID ".scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/"
	       "cri-containerd-" ID ".scope",
	       ID, "containerd");
	expect("3:memory:/kubepods/burstable/pod8a2f-11/" ID "\n",
	       "/kubepods/burstable/pod8a2f-11/" ID, ID, "containerd");
	expect("0::/kubepods.slice/crio-" ID ".scope\n", "/kubepods.slice/crio-" ID ".scope", ID,
	       "cri-o");
	expect("0::/machine.slice/libpod-" ID ".scope/container\n",
	       "/machine.slice/libpod-" ID ".scope/container", ID, "podman");
	expect("0::/weird/runtime-" ID "\n", "/weird/runtime-" ID, ID, "");
}

static void test_not_containers(void **state)
{
	expect("0::/user.slice/user-1000.slice/session-2.scope\n",
	       "/user.slice/user-1000.slice/session-2.scope", "", "");
	expect("0::/\n", "/", "", "");
	/* Hybrid host: v2 root, the v1 memory hierarchy says more. */
	expect("4:memory:/process_api/2dd2\n1:cpu:/\n0::/\n", "/process_api/2dd2", "", "");
	/* 63 or 65 hex digits, upper case: not ids. */
	expect("0::/docker-" ID "a.scope\n", "/docker-" ID "a.scope", "", "");
	expect("0::/docker-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.scope\n",
	       "/docker-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.scope", "",
	       "");
}

static void test_malformed(void **state)
{
	struct cgroup_info ci;

	assert_int_equal(cgroup__parse("", &ci), -EINVAL);
	assert_int_equal(cgroup__parse("garbage\nno colons here\n", &ci), -EINVAL);
	assert_int_equal(cgroup__parse("0::relative\n", &ci), -EINVAL);
	assert_int_equal(cgroup__read("/proc", getpid(), &ci), 0);
	assert_true(ci.path[0] == '/');
}

/* Whether the unified line alone was there (labels key cgroups by v2 id then). */
static void test_v2_only(void **state)
{
	struct cgroup_info ci;

	(void)state;
	assert_int_equal(cgroup__parse("0::/system.slice/cron.service\n", &ci), 0);
	assert_true(ci.v2_only);
	assert_int_equal(cgroup__parse("4:memory:/process_api/2dd2\n1:cpu:/\n0::/\n", &ci), 0);
	assert_false(ci.v2_only);
	assert_int_equal(cgroup__parse("12:cpu,cpuacct:/docker/" ID "\n", &ci), 0);
	assert_false(ci.v2_only);
	assert_int_equal(cgroup__parse("garbage\n0::/a\n", &ci), 0);
	assert_true(ci.v2_only); /* a line that does not parse is no hierarchy */
}

static void expect_v2(const char *text, const char *want)
{
	char out[512];

	assert_int_equal(cgroup__parse_v2(text, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

/* The v2 path alone (the share of files probed of --alloc -a), cut at a container or a
 * user's delegation: the cgroups made inside them are theirs. */
static void test_parse_v2(void **state)
{
	char out[8];

	(void)state;
	expect_v2("0::/\n", "/");
	expect_v2("4:memory:/process_api/x\n0::/\n", "/"); /* hybrid: v2's, not v1's */
	expect_v2("0::/system.slice/cron.service\n", "/system.slice/cron.service");
	expect_v2("0::/system.slice/docker-" ID ".scope/a/b\n",
		  "/system.slice/docker-" ID ".scope");
	expect_v2("0::/machine.slice/libpod-" ID ".scope/container\n",
		  "/machine.slice/libpod-" ID ".scope");
	expect_v2("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x-1.scope\n",
		  "/user.slice/user-1000.slice/user@1000.service");
	expect_v2("0::/a/user@.service/b\n", "/a/user@.service/b"); /* no uid: not systemd's */
	assert_int_equal(cgroup__parse_v2("4:memory:/x\n", out, sizeof(out)), -ENOENT);
	assert_int_equal(cgroup__parse_v2("", out, sizeof(out)), -ENOENT);
	assert_int_equal(cgroup__parse_v2("0::/abcdefgh\n", out, sizeof(out)), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtimes),  cmocka_unit_test(test_not_containers),
		cmocka_unit_test(test_malformed), cmocka_unit_test(test_v2_only),
		cmocka_unit_test(test_parse_v2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
