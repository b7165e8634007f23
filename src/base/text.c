// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* text.c - see text.h. */
#include "base/text.h"

#include <string.h>

size_t text__seq(const char *str, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0];
	uint32_t v;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
	if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

bool text__is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
	       /* bidirectional: ALM, LRM, RLM, LRE..RLO, LRI..PDI */
	       cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

size_t text__clean(char *s, bool keep_space)
{
	size_t in = 0, out = 0;

	while (s[in]) {
		uint32_t cp;
		size_t n = text__seq(s + in, &cp);

		if (n && (!text__is_control(cp) || (keep_space && (cp == '\t' || cp == '\n')))) {
			memmove(s + out, s + in, n);
			out += n;
			in += n;
		} else {
			s[out++] = '?';
			in += n ? n : 1;
		}
	}
	s[out] = '\0';
	return out;
}
