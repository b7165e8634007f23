// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_dwinline.c - inlined frames and lines from DWARF (sym/dwinline.h), on
 * fixtures of one function with two always-inlined callees at -O2
 * (tests/unit/fixtures/inlined.c): clang's DWARF 5, gcc's DWARF 4 with
 * compressed sections, the separate debug file; what every address of
 * outer() answers (both callees as inlined frames under outer, at their
 * lines, outer at each call's line); the size cap and the room asked for
 * first; a spent budget (nothing cached, the next lookup answers); a file
 * whose .debug_info is garbage (no frames, no crash); no DWARF at all.
 */
#include "testutil.h"

#include <fcntl.h>

#include "sym/dwinline.h"

/* Line numbers of tests/unit/fixtures/inlined.c. */
#define L_HEAVY_LOOP 7
#define L_HEAVY	     8
#define L_LIGHT_LOOP 14
#define L_LIGHT	     15
#define L_OUTER	     19
#define L_CALL_HEAVY 21
#define L_CALL_LIGHT 22

static size_t room_asked;

static void room(void *ctx, size_t bytes)
{
	(void)ctx;
	room_asked = bytes;
}

static struct dwinline *open_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct dwinline *d;

	assert_true(fd >= 0);
	d = dwinline__open_fd(fd, DWINLINE_MAX_BYTES, room, NULL);
	close(fd); /* not needed once open */
	return d;
}

static uint64_t sym_size(const char *file, const char *name)
{
	char cmd[4200], line[512];
	unsigned long long a, sz = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char sym[256], type;
		unsigned long long s;

		if (sscanf(line, "%llx %llx %c %255s", &a, &s, &type, sym) == 4 &&
		    !strcmp(sym, name))
			sz = s;
	}
	pclose(p);
	assert_true(sz > 0);
	return sz;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = s ? strlen(s) : 0, t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* Every address of outer() in bin (vaddrs of its own file), answered by d. */
static void check_outer(struct dwinline *d, const char *bin)
{
	uint64_t start = nm_addr(bin, "outer"), size = sym_size(bin, "outer");
	size_t heavy = 0, light = 0, alone = 0;

	for (uint64_t a = start; a < start + size; a++) {
		const struct dwinline_frame *f;
		struct budget b;
		size_t n;

		budget__start(&b, 1000ull * 1000 * 1000);
		assert_int_equal(dwinline__frames(d, a, &b, &f, &n), 0);
		assert_true(n >= 1 && n <= 2);
		assert_string_equal(f[n - 1].name, "outer");
		assert_int_equal(f[n - 1].decl_line, L_OUTER);
		assert_true(ends_with(f[n - 1].file, "/inlined.c"));
		if (n == 1) {
			alone++;
			continue;
		}
		assert_true(ends_with(f[0].file, "/inlined.c"));
		if (!strcmp(f[0].name, "heavy")) {
			heavy++;
			assert_int_equal(f[1].line, L_CALL_HEAVY);
			assert_true(f[0].line == L_HEAVY || f[0].line == L_HEAVY_LOOP);
		} else {
			assert_string_equal(f[0].name, "light");
			light++;
			assert_int_equal(f[1].line, L_CALL_LIGHT);
			assert_true(f[0].line == L_LIGHT || f[0].line == L_LIGHT_LOOP);
		}
	}
	assert_true(heavy > 0);
	assert_true(light > 0);
	(void)alone;
}

static void test_fixture(const char *name)
{
	const char *path = fixture_path(name);
	char bin[4096];
	struct dwinline *d;

	snprintf(bin, sizeof(bin), "%s", path);
	room_asked = 0;
	d = open_path(bin);
	assert_non_null(d);
	assert_true(room_asked > 0);
	assert_true(dwinline__bytes(d) >= room_asked);
	check_outer(d, bin);
	/* Asked again: from the cache, the same. */
	check_outer(d, bin);
	dwinline__free(d);
}

static void test_dwarf5(void **state)
{
	(void)state;
	test_fixture("inlined5");
}

static void test_dwarf4_compressed(void **state)
{
	(void)state;
	test_fixture("inlined4z");
}

static void test_debug_file(void **state)
{
	char bin[4096];
	struct dwinline *d;

	(void)state;
	snprintf(bin, sizeof(bin), "%s", fixture_path("inlined5"));
	d = open_path(fixture_path("inlined5.debug"));
	assert_non_null(d);
	check_outer(d, bin);
	dwinline__free(d);
}

static void test_caps_and_budget(void **state)
{
	const char *path = fixture_path("inlined5");
	uint64_t outer = nm_addr(path, "outer");
	const struct dwinline_frame *f;
	struct dwinline *d;
	struct budget b;
	size_t n;
	int fd;

	(void)state;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	room_asked = 0;
	errno = 0;
	assert_null(dwinline__open_fd(fd, 64, room, NULL));
	assert_int_equal(errno, E2BIG);
	assert_int_equal(room_asked, 0); /* refused before any room is made */
	d = dwinline__open_fd(fd, DWINLINE_MAX_BYTES, NULL, NULL);
	close(fd);
	assert_non_null(d);
	/* A spent budget: no answer, nothing cached; a fresh one answers. */
	budget__start(&b, 0);
	while (!budget__over_now(&b))
		;
	assert_int_equal(dwinline__frames(d, outer, &b, &f, &n), -ETIMEDOUT);
	budget__start(&b, 1000ull * 1000 * 1000);
	assert_int_equal(dwinline__frames(d, outer, &b, &f, &n), 0);
	/* Outside every unit. */
	assert_int_equal(dwinline__frames(d, 8, &b, &f, &n), -ENOENT);
	dwinline__free(d);
}

/* The fixture with its .debug_info overwritten by bytes (0xff, then a pattern). */
static char *corrupt_copy(uint8_t fill, bool pattern)
{
	char cmd[8400], line[512], *tmp;
	unsigned long long off = 0, size = 0;
	FILE *p;
	int fd;

	tmp = strdup("/tmp/bpfprof-test-dwinline-XXXXXX");
	assert_non_null(tmp);
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && readelf -SW '%s'", fixture_path("inlined5"),
		 tmp, tmp);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char *s = strstr(line, ".debug_info ");
		unsigned long long addr;
		char type[64];

		if (s && sscanf(s + 12, "%63s %llx %llx %llx", type, &addr, &off, &size) == 4)
			break;
	}
	pclose(p);
	assert_true(size > 0);
	fd = open(tmp, O_WRONLY);
	assert_true(fd >= 0);
	for (unsigned long long i = 0; i < size; i++) {
		uint8_t c = pattern ? (uint8_t)(i * 37 + (i >> 3)) : fill;

		/* The pattern keeps the units' headers: the DIEs are what is garbage. */
		if (pattern && i < 12)
			continue;
		assert_int_equal(pwrite(fd, &c, 1, (off_t)(off + i)), 1);
	}
	close(fd);
	return tmp;
}

static void test_corrupt_debug_info(void **state)
{
	const char *path = fixture_path("inlined5");
	uint64_t outer = nm_addr(path, "outer");

	(void)state;
	for (int k = 0; k < 2; k++) {
		char *tmp = corrupt_copy(0xff, k == 1);
		struct dwinline *d = open_path(tmp);

		if (d) {
			for (uint64_t a = outer; a < outer + 64; a++) {
				const struct dwinline_frame *f;
				struct budget b;
				size_t n;

				budget__start(&b, 1000ull * 1000 * 1000);
				if (!dwinline__frames(d, a, &b, &f, &n))
					assert_true(n >= 1 && n <= DWINLINE_MAX_FRAMES);
			}
			dwinline__free(d);
		}
		unlink(tmp);
		free(tmp);
	}
}

static void test_no_dwarf(void **state)
{
	char *tmp = strdup("/tmp/bpfprof-test-dwinline-XXXXXX"), cmd[8400];
	int fd;

	(void)state;
	assert_non_null(tmp);
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "strip -g '%s' -o '%s'", fixture_path("inlined5"), tmp);
	assert_int_equal(system(cmd), 0);
	errno = 0;
	assert_null(open_path(tmp));
	assert_int_equal(errno, ENOENT);
	unlink(tmp);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf5),
		cmocka_unit_test(test_dwarf4_compressed),
		cmocka_unit_test(test_debug_file),
		cmocka_unit_test(test_caps_and_budget),
		cmocka_unit_test(test_corrupt_debug_info),
		cmocka_unit_test(test_no_dwarf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
