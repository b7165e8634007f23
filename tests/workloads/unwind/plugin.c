// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* libuw_plugin.so - loaded by uw_dlopen with dlopen() after it started:
 * plugin_work -> plugin_leaf, built without frame pointers. */
static volatile unsigned long sink;

__attribute__((noinline)) void plugin_leaf(unsigned x)
{
	unsigned long a = sink, b = a + 1, c = b * 5, d = c ^ a;

	for (unsigned i = 0; i < 5000; i++) {
		a += i ^ x;
		b ^= a;
		c += b;
		d ^= c;
	}
	sink = a + b + c + d;
}

__attribute__((noinline)) void plugin_work(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		plugin_leaf(i);
	sink++;
}
