// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_speedscope.c - the speedscope writer: golden JSON with one
 * profile per process and with --merge. (The schema itself is checked by
 * the integration tests with the schema file speedscope ships.)
 */
#include "outfixture.h"

static void test_speedscope_per_process_golden(void **state)
{
	struct profile *p = fx_profile();
	char *json = fx_write(&writer_speedscope, p, NULL, NULL);

	assert_golden("fixture.speedscope.json", json, strlen(json));
	/* Threads of a process are one profile, its stacks summed. */
	assert_non_null(strstr(json, "\"name\":\"app (pid 100)\""));
	assert_null(strstr(json, "pid 101"));
	free(json);
	profile__free(p);
}

static void test_speedscope_merged_golden(void **state)
{
	struct profile *p = fx_profile();
	struct out_opts o = { .merge = true };
	char *json = fx_write(&writer_speedscope, p, &o, NULL);

	assert_golden("fixture_merged.speedscope.json", json, strlen(json));
	assert_non_null(strstr(json, "\"name\":\"all processes\""));
	assert_non_null(strstr(json, "\"endValue\":110"));
	free(json);
	profile__free(p);
}

static void test_speedscope_empty(void **state)
{
	struct profile *p = profile__new();
	char *json = fx_write(&writer_speedscope, p, NULL, NULL);

	assert_string_equal(
		json,
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
		"\"exporter\":\"bpfprof\",\"name\":\"CPU profile\",\"activeProfileIndex\":0,\n"
		"\"profiles\":[\n],\n\"shared\":{\"frames\":[\n]}}\n");
	free(json);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_speedscope_per_process_golden),
		cmocka_unit_test(test_speedscope_merged_golden),
		cmocka_unit_test(test_speedscope_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
