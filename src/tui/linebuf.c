// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* linebuf.c - see linebuf.h. */
#include "tui/linebuf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void linebuf__init(struct linebuf *b, char *buf, size_t size)
{
	b->p = buf;
	b->end = buf + size - 1;
	*b->p = '\0';
}

void linebuf__ch(struct linebuf *b, char c)
{
	if (b->p < b->end)
		*b->p++ = c;
}

void linebuf__pad(struct linebuf *b, int n)
{
	while (n-- > 0)
		linebuf__ch(b, ' ');
}

void linebuf__str(struct linebuf *b, const char *s, int width, int max)
{
	size_t n = max < 0 ? strlen(s) : strnlen(s, (size_t)max);
	size_t room = (size_t)(b->end - b->p);

	memcpy(b->p, s, n < room ? n : room);
	b->p += n < room ? n : room;
	linebuf__pad(b, width - (int)n);
}

/* digits[0..n) right-aligned in width columns. */
static void right(struct linebuf *b, const char *digits, int n, int width)
{
	linebuf__pad(b, width - n);
	for (int i = 0; i < n; i++)
		linebuf__ch(b, digits[i]);
}

/* v's decimal digits into out (24 bytes); their count. */
static int digits(char *out, uint64_t v)
{
	char tmp[24];
	int n = 0, k = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		out[k++] = tmp[--n];
	return k;
}

void linebuf__u64(struct linebuf *b, uint64_t v, int width)
{
	char d[24];

	right(b, d, digits(d, v), width);
}

/*
 * v * 10^decimals rounded to an integer the way printf rounds: from v's
 * exact binary value, a tie to even. v = m / 2^shift with m the significand
 * (53 bits at most); m * 10^3 < 2^63, so the product and its remainder are
 * exact. For 0 <= v < 2^52 (IEEE 754 binary64).
 */
static uint64_t scaled(double v, int decimals)
{
	static const uint64_t pow10[] = { 1, 10, 100, 1000 };
	uint64_t bits, m, q, r, half;
	int exp, shift;

	memcpy(&bits, &v, sizeof(bits));
	exp = (int)(bits >> 52 & 0x7ff);
	m = bits & ((1ull << 52) - 1);
	if (exp) /* else subnormal: m / 2^1074 */
		m |= 1ull << 52;
	shift = 1075 - (exp ? exp : 1);
	m *= pow10[decimals];
	if (shift <= 0)
		return m << -shift;
	if (shift >= 64)
		return 0; /* m < 2^63 <= half */
	q = m >> shift;
	r = m & ((1ull << shift) - 1);
	half = 1ull << (shift - 1);
	return q + (r > half || (r == half && (q & 1)));
}

void linebuf__fixed(struct linebuf *b, double v, int decimals, int width)
{
	static const uint64_t pow10[] = { 1, 10, 100, 1000 };
	char d[48];
	uint64_t h;
	int n;

	if (signbit(v) || !(v < 1e15) || decimals < 0 || decimals > 3) {
		char all[512];

		n = snprintf(all, sizeof(all), "%*.*f", width, decimals, v);
		for (int i = 0; i < n && i < (int)sizeof(all) - 1; i++)
			linebuf__ch(b, all[i]);
		return;
	}
	h = scaled(v, decimals);
	n = digits(d, h / pow10[decimals]);
	if (decimals) {
		uint64_t f = h % pow10[decimals];

		d[n++] = '.';
		for (int i = decimals - 1; i >= 0; i--, f /= 10)
			d[n + i] = (char)('0' + f % 10);
		n += decimals;
	}
	right(b, d, n, width);
}

size_t linebuf__end(struct linebuf *b, const char *buf)
{
	*b->p = '\0';
	return (size_t)(b->p - buf);
}
