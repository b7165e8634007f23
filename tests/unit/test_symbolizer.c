// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_symbolizer.c - the caching facade on a fake /proc tree: a process
 * that maps the PIE fixture at a high address, checked lookups, identity
 * (start time) checks, device/inode checks, non-executable and anonymous
 * memory, and the two-sweep life cycle.
 */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "sym/procfs.h"
#include "sym/symbolizer.h"

#define PID	 4242
#define TICKS	 12345
#define TEXT	 0x555555555000ULL /* where the fixture's r-x segment (offset 0x1000) lives */
#define ANON	 0x7f0000000000ULL

static char root[64];

static uint64_t start_ns(uint64_t ticks)
{
	return ticks * (1000000000ULL / sysconf(_SC_CLK_TCK));
}

static void write_at(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void write_stat(uint64_t ticks)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "%d (fake prog) S 1 %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", PID,
		 PID, PID, (unsigned long long)ticks);
	write_at("4242/stat", text);
}

/* maps with the fixture's real device and inode (plus `ino_delta`). */
static void write_maps(const char *fixture, long ino_delta)
{
	struct stat st;
	char text[2048];

	assert_int_equal(stat(fixture, &st), 0);
	snprintf(text, sizeof(text),
		 "555555554000-555555555000 r--p 00000000 %02x:%02x %lu %s\n"
		 "555555555000-555555556000 r-xp 00001000 %02x:%02x %lu %s\n"
		 "555555556000-555555557000 r--p 00002000 %02x:%02x %lu %s\n"
		 "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
		 "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]\n",
		 major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino + ino_delta, fixture,
		 major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino + ino_delta, fixture,
		 major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino + ino_delta, fixture);
	write_at("4242/maps", text);
}

static int setup(void **state)
{
	char path[256], fixture[4096];

	snprintf(root, sizeof(root), "/tmp/bpfprof-fakeproc-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/4242", root);
	assert_int_equal(mkdir(path, 0755), 0);
	/* /proc/PID/root of a host process is "/": the fallback open path uses it. */
	snprintf(path, sizeof(path), "%s/4242/root", root);
	assert_int_equal(symlink("/", path), 0);
	assert_non_null(realpath(fixture_path("pie"), fixture));
	write_stat(TICKS);
	write_maps(fixture, 0);
	*state = strdup(fixture);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	free(*state);
	return 0;
}

/* Address of symbol `name` in the fixture (ELF vaddr), via nm. */
static uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[4200], line[512];
	uint64_t addr = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char sym[256], type;
		unsigned long long a;

		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strcmp(sym, name))
			addr = a;
	}
	pclose(p);
	assert_true(addr != 0);
	return addr;
}

static struct symbolizer *new_sym(void)
{
	struct symbolizer_opts o = { .proc_root = root };
	struct symbolizer *s = symbolizer__new(&o);

	assert_non_null(s);
	return s;
}

/* vaddr -> runtime address in the fake process: the r-x segment maps 0x1000 at TEXT. */
static uint64_t rt(uint64_t vaddr)
{
	return TEXT + vaddr - 0x1000;
}

static void test_names_leaf_and_return_addresses(void **state)
{
	const char *fixture = *state;
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha"), beta = nm_addr(fixture, "fixture_beta");
	uint64_t gamma = nm_addr(fixture, "fixture_static_gamma");
	struct symbolizer *s = new_sym();
	struct sym r;
	char buf[256];

	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	assert_string_equal(r.module, fixture);
	symbolizer__user(s, &id, rt(alpha) + 5, true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	/* A return address equal to beta's start belongs to the call in alpha's
	 * last bytes (alpha is directly before beta): ip - 1 is looked up. */
	if (beta > alpha) {
		symbolizer__user(s, &id, rt(beta), false, &r);
		assert_string_equal(r.name, "fixture_alpha");
		symbolizer__user(s, &id, rt(beta), true, &r);
		assert_string_equal(r.name, "fixture_beta");
	}
	/* Static functions come from .symtab. */
	symbolizer__user(s, &id, rt(gamma) + 1, true, &r);
	assert_string_equal(r.name, "fixture_static_gamma");
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "fixture_static_gamma");

	/* Anonymous executable memory: no module, no name. */
	symbolizer__user(s, &id, ANON + 0x10, true, &r);
	assert_null(r.name);
	assert_null(r.module);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	/* Non-executable memory (a junk frame pointer walk): unknown, not "[stack]+0x..". */
	symbolizer__user(s, &id, 0x7ffffffde100ULL, true, &r);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	/* Outside every mapping. */
	symbolizer__user(s, &id, 0x1000, true, &r);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	symbolizer__free(s);
}

static void test_pid_reuse_is_detected(void **state)
{
	struct proc_id other = { .pid = PID, .start_time = start_ns(TICKS + 1), .exec_id = 1 };
	struct symbolizer *s = new_sym();
	struct symbolizer_stats st;
	struct sym r;

	/* The sample's process started at another time: the pid was recycled. */
	assert_int_equal(symbolizer__note_process(s, &other), -ESRCH);
	symbolizer__user(s, &other, rt(nm_addr(*state, "fixture_alpha")), true, &r);
	assert_null(r.name);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 0);
	symbolizer__free(s);
}

static void test_inode_mismatch_rejects_file(void **state)
{
	const char *fixture = *state;
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha");
	struct symbolizer *s;
	struct sym r;
	char buf[256], want[64];

	/* The file at that path is not the one the process mapped: never use it. */
	write_maps(fixture, 1);
	s = new_sym();
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_null(r.name);
	snprintf(want, sizeof(want), "pie+0x%llx", (unsigned long long)alpha);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), want);
	symbolizer__free(s);
	write_maps(fixture, 0);
}

static void test_sweep_keeps_exited_process_for_one_drain(void **state)
{
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(*state, "fixture_alpha");
	struct symbolizer *s = new_sym();
	struct symbolizer_stats st;
	struct sym r;

	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_int_equal(symbolizer__note_process(s, &id), 0); /* idempotent */
	write_stat(TICKS + 99); /* the process is gone; its pid now names another */
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 1); /* kept: samples from before the exit may still come */
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 0);
	write_stat(TICKS);
	symbolizer__free(s);
}

static void test_kernel_lookup_with_fixture_kallsyms(void **state)
{
	char path[256];
	struct symbolizer_opts o = { .proc_root = root, .kallsyms_path = path };
	struct symbolizer *s;
	struct sym r;

	snprintf(path, sizeof(path), "%s/kallsyms", root);
	write_at("kallsyms", "ffffffff81000000 T _stext\n"
			     "ffffffff81000100 T vfs_read\n"
			     "ffffffff81000200 t read_zero\n"
			     "ffffffff81001000 T _etext\n"
			     "ffffffffc0000000 t nf_hook [nf_tables]\n");
	s = symbolizer__new(&o);
	assert_int_equal(symbolizer__load_kernel(s), 0);
	assert_false(symbolizer__kernel_restricted(s));
	symbolizer__kernel(s, 0xffffffff81000150ULL, &r);
	assert_string_equal(r.name, "vfs_read");
	assert_int_equal(r.kind, FRAME_KERNEL);
	symbolizer__kernel(s, 0xffffffffc0000010ULL, &r);
	assert_string_equal(r.name, "nf_hook");
	assert_string_equal(r.module, "nf_tables");
	symbolizer__free(s);

	write_at("kallsyms", "0000000000000000 T _stext\n0000000000000000 T vfs_read\n");
	s = symbolizer__new(&o);
	assert_int_equal(symbolizer__load_kernel(s), 0);
	assert_true(symbolizer__kernel_restricted(s));
	symbolizer__kernel(s, 0xffffffff81000150ULL, &r);
	assert_null(r.name);
	symbolizer__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_leaf_and_return_addresses),
		cmocka_unit_test(test_pid_reuse_is_detected),
		cmocka_unit_test(test_inode_mismatch_rejects_file),
		cmocka_unit_test(test_sweep_keeps_exited_process_for_one_drain),
		cmocka_unit_test(test_kernel_lookup_with_fixture_kallsyms),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
