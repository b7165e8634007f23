// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* libwl.so - the shared library of pieapp: wl_compute -> wl_leaf. */

static volatile double sink;

__attribute__((noinline)) double wl_leaf(unsigned i)
{
	return (double)i * 1.0000001;
}

__attribute__((noinline)) double wl_compute(unsigned n)
{
	double acc = 0;

	for (unsigned i = 0; i < n; i++)
		acc += wl_leaf(i);
	sink = acc;
	return acc;
}
