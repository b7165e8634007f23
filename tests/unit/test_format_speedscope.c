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

/* The processes the per-process writers (speedscope, report) split a profile into. */
static void test_processes(void **state)
{
	struct profile *p = profile__new();
	struct wproc *v;
	size_t nr;

	FX(p, "b", 2, 0, 5, FX_NOMOD("f"));
	FX(p, "a", 3, 0, 5, FX_NOMOD("f"));
	FX(p, "a", 1, 0, 5, FX_NOMOD("g"));
	FX(p, "c", 4, 0, 9, FX_NOMOD("f"));
	FX(p, "b", 2, 7, 1, FX_NOMOD("g"));
	assert_int_equal(writer__processes(p, false, &v, &nr), 0);
	/* Most samples first; a tie by comm, then pid. */
	assert_int_equal(nr, 4);
	assert_string_equal(v[0].comm, "c");
	assert_int_equal(v[0].total, 9);
	assert_string_equal(v[1].comm, "b");
	assert_int_equal(v[1].pid, 2);
	assert_int_equal(v[1].total, 6);
	assert_int_equal(v[1].nr, 2);
	assert_string_equal(profile__sample(p, v[1].samples[1])->comm, "b");
	assert_string_equal(v[2].comm, "a");
	assert_int_equal(v[2].pid, 1);
	assert_int_equal(v[3].pid, 3);
	writer__processes_free(v, nr);
	assert_int_equal(writer__processes(p, true, &v, &nr), 0);
	assert_int_equal(nr, 1);
	assert_string_equal(v[0].comm, "all processes");
	assert_int_equal(v[0].pid, 0);
	assert_int_equal(v[0].total, 25);
	assert_int_equal(v[0].nr, profile__nr_samples(p));
	writer__processes_free(v, nr);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_speedscope_per_process_golden),
		cmocka_unit_test(test_speedscope_merged_golden),
		cmocka_unit_test(test_speedscope_empty),
		cmocka_unit_test(test_processes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
