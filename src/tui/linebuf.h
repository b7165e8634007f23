/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * linebuf.h - a line of text built without printf, for what `bpfprof top`
 * formats at every refresh: strings, integers and fixed-point numbers in
 * columns, the bytes "%-*.*s", "%*" PRIu64 and "%*.*f" print
 * (tests/unit/test_linebuf.c compares them). snprintf() was ~8% of top's
 * CPU in a perf profile, and its code is large for a refresh that runs once
 * a second on a cold cache.
 *
 * The buffer is the caller's; what does not fit is dropped, and
 * linebuf__end() NUL-terminates the line.
 */
#ifndef BPFPROF_LINEBUF_H
#define BPFPROF_LINEBUF_H

#include <stddef.h>
#include <stdint.h>

struct linebuf {
	char *p, *end; /* end: the last byte, kept for the NUL */
};

/* b writes into buf[0..size), size >= 1. */
void linebuf__init(struct linebuf *b, char *buf, size_t size);
void linebuf__ch(struct linebuf *b, char c);
void linebuf__pad(struct linebuf *b, int n); /* n spaces */
/* "%-*.*s": s left-aligned in width columns, at most max bytes of it (max < 0: all). */
void linebuf__str(struct linebuf *b, const char *s, int width, int max);
/* "%*" PRIu64 */
void linebuf__u64(struct linebuf *b, uint64_t v, int width);
/* "%*.*f" for 0 <= decimals <= 3 (other values, and v negative, huge or not
 * a number, go through snprintf). */
void linebuf__fixed(struct linebuf *b, double v, int decimals, int width);
/* NUL-terminates the line that started at buf; its length. */
size_t linebuf__end(struct linebuf *b, const char *buf);

#endif
