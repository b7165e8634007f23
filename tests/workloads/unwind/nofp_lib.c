// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * libuw_nofp.so - a library built the way distributions build theirs: gcc
 * -O2, no frame pointers, .eh_frame only. Used by uw_mixed:
 *
 *     nofp_outer -> nofp_inner -> cb (a frame-pointer function of the caller)
 *
 * The functions keep rbp as a general register (volatile work needing many
 * registers), so frame-pointer unwinding through them is impossible.
 */
typedef void (*nofp_cb)(unsigned);

static volatile unsigned long sink;

__attribute__((noinline)) void nofp_inner(nofp_cb cb, unsigned n)
{
	unsigned long a = sink, b = a * 3, c = b ^ 7, d = c + a, e = d * b, f = e ^ c;

	for (unsigned i = 0; i < n; i++) {
		a += i;
		b ^= a;
		c += b;
		d ^= c;
		e += d;
		f ^= e;
		if ((i & 255) == 0)
			cb(i);
	}
	sink = a + b + c + d + e + f;
}

__attribute__((noinline)) void nofp_outer(nofp_cb cb, unsigned n)
{
	nofp_inner(cb, n);
	sink++;
}
