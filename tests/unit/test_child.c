// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_child.c - the launched command: stopped until started, exec errors
 * reported, CPU time collected, abort before and after start. */
#include "testutil.h"

#include <sys/wait.h>
#include <time.h>

#include "proc/child.h"

static void test_runs_only_when_started(void **state)
{
	char path[] = "/tmp/bpfprof-child-XXXXXX";
	char *cmd[] = { "sh", "-c", NULL, NULL };
	char script[256];
	struct child ch = CHILD_INIT;
	int fd = mkstemp(path);

	close(fd);
	unlink(path);
	snprintf(script, sizeof(script), "echo ran > %s", path);
	cmd[2] = script;
	assert_int_equal(child__spawn(&ch, cmd), 0);
	usleep(100000);
	assert_int_equal(access(path, F_OK), -1); /* not before child__start */
	child__reap(&ch, false);
	assert_false(ch.exited);
	assert_int_equal(child__start(&ch), 0);
	child__reap(&ch, true);
	assert_true(ch.exited && WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
}

static void test_exec_error_is_reported(void **state)
{
	char *cmd[] = { "/nonexistent/program", NULL };
	struct child ch = CHILD_INIT;

	assert_int_equal(child__spawn(&ch, cmd), 0);
	assert_int_equal(child__start(&ch), -ENOENT);
	child__reap(&ch, true);
	assert_true(ch.exited && WEXITSTATUS(ch.status) == 127);
}

static void test_cpu_time_and_abort(void **state)
{
	char *busy[] = { "sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done", NULL };
	char *sleeper[] = { "sleep", "30", NULL };
	struct child ch = CHILD_INIT;

	assert_int_equal(child__spawn(&ch, busy), 0);
	assert_int_equal(child__start(&ch), 0);
	child__reap(&ch, true);
	assert_true(ch.cpu_s > 0.05);

	/* Never started: exits 127 without exec. */
	ch = (struct child)CHILD_INIT;
	assert_int_equal(child__spawn(&ch, sleeper), 0);
	child__abort(&ch);
	assert_true(ch.exited && WEXITSTATUS(ch.status) == 127);

	/* Started: SIGTERM. */
	ch = (struct child)CHILD_INIT;
	assert_int_equal(child__spawn(&ch, sleeper), 0);
	assert_int_equal(child__start(&ch), 0);
	child__abort(&ch);
	assert_true(ch.exited && WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_only_when_started),
		cmocka_unit_test(test_exec_error_is_reported),
		cmocka_unit_test(test_cpu_time_and_abort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
