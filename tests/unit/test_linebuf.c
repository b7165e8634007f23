// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_linebuf.c - lines built without printf are the bytes printf makes:
 * "%*.*f" on random values, exact ties (printf rounds the binary value, a
 * tie to even), shares as top computes them, tiny and large values;
 * integers and strings in columns; a line cut at the buffer's end.
 */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>

#include "tui/linebuf.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void check_fixed(double v, int decimals, int width)
{
	char want[512], got[512];
	struct linebuf b;

	snprintf(want, sizeof(want), "%*.*f", width, decimals, v);
	linebuf__init(&b, got, sizeof(got));
	linebuf__fixed(&b, v, decimals, width);
	linebuf__end(&b, got);
	if (strcmp(want, got)) {
		print_error("%.17g with %d decimals: printf '%s', linebuf '%s'\n", v, decimals,
			    want, got);
		fail();
	}
}

static void test_fixed_as_printf(void **state)
{
	static const double fixed[] = { 0,	0.005,	0.015,	  0.125,      0.375, 2.5,
					3.5,	7.125,	99.995,	  100,	      0.5,   1.5,
					1e-300, 5e-324, 999999.5, 1e14 + 0.5, 1e15,  1e300,
					-1.5,	-0.0,	NAN,	  INFINITY };

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		for (int d = 0; d <= 4; d++)
			check_fixed(fixed[i], d, 6);
	for (int i = 0; i < 200000; i++) {
		uint64_t r = rnd64();
		double v;

		switch (i % 5) {
		case 0: /* a share, as top computes it */
		{
			uint64_t of = 1 + rnd64() % 100000, n = rnd64() % (of + 1);

			v = 100.0 * n / of;
			break;
		}
		case 1: /* a tie in binary: k / 2^j */
			v = ldexp((double)(r % 100000), -(int)(rnd64() % 12));
			break;
		case 2: /* any bits in [0, 1e15) */
			v = ldexp((double)(r >> 11), -(int)(rnd64() % 64));
			break;
		case 3: /* near a decimal tie */
			v = (double)(r % 1000000) / 1000 + 0.0005;
			break;
		default: /* a rate */
			v = (double)(r % 100000000) / (1 + (double)(rnd64() % 3000) / 1000);
		}
		check_fixed(v, (int)(rnd64() % 4), (int)(rnd64() % 10));
	}
}

static void test_columns(void **state)
{
	char got[128], want[128];
	struct linebuf b;
	size_t n;

	linebuf__init(&b, got, sizeof(got));
	linebuf__pad(&b, 2);
	linebuf__u64(&b, 1234, 7);
	linebuf__ch(&b, '|');
	linebuf__u64(&b, UINT64_MAX, 3);
	linebuf__ch(&b, '|');
	linebuf__u64(&b, 0, 1);
	linebuf__ch(&b, '|');
	linebuf__str(&b, "libc.so.6", 18, 18);
	linebuf__str(&b, "a_very_long_module_name.so", 18, 18);
	linebuf__ch(&b, '|');
	linebuf__str(&b, "abcdef123456789", 0, 12);
	linebuf__str(&b, "x", 0, -1);
	n = linebuf__end(&b, got);
	snprintf(want, sizeof(want), "  %7u|%3" PRIu64 "|%1u|%-18.18s%-18.18s|%.12s%s", 1234,
		 UINT64_MAX, 0, "libc.so.6", "a_very_long_module_name.so", "abcdef123456789", "x");
	assert_string_equal(got, want);
	assert_int_equal(n, strlen(want));
}

/* What does not fit is dropped; the line stays NUL-terminated. */
static void test_cut(void **state)
{
	char got[8];
	struct linebuf b;

	got[7] = 'X';
	linebuf__init(&b, got, sizeof(got));
	linebuf__str(&b, "abcdef", 0, -1);
	linebuf__fixed(&b, 12.345, 2, 6);
	linebuf__u64(&b, 99, 4);
	assert_int_equal(linebuf__end(&b, got), 7);
	assert_string_equal(got, "abcdef ");
	linebuf__init(&b, got, 1);
	linebuf__str(&b, "abc", 5, -1);
	assert_int_equal(linebuf__end(&b, got), 0);
	assert_string_equal(got, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_as_printf),
		cmocka_unit_test(test_columns),
		cmocka_unit_test(test_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
