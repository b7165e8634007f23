/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util.h - small helpers shared by every module: bounded file reading, a
 * growable string buffer, number and CPU-list parsing, clocks.
 */
#ifndef BPFPROF_UTIL_H
#define BPFPROF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)     ((a) < (b) ? (a) : (b))
#define MAX(a, b)     ((a) > (b) ? (a) : (b))

/* Time units: integer for nanosecond arithmetic, _F (double) for conversions. */
#define NS_PER_SEC   1000000000ULL
#define NS_PER_MS    1000000ULL
#define NS_PER_SEC_F 1e9
#define NS_PER_MS_F  1e6
#define US_PER_SEC_F 1e6

/*
 * Reads at most max bytes of a file into a NUL-terminated malloc'd buffer.
 * Works for /proc files (size 0 in stat). Returns 0, -errno, or -EFBIG if the
 * file is longer than max.
 */
int read_file(const char *path, size_t max, char **buf, size_t *len);
/* The same from an open descriptor, to its end (not closed here). */
int read_fd(int fd, size_t max, char **buf, size_t *len);

/*
 * Makes room for `need` elements of `elem` bytes in a malloc'd array whose
 * capacity is *cap (doubling, from 16): the one growth helper, so no caller
 * multiplies sizes itself. 0, or -ENOMEM when memory is short or the byte
 * count would overflow (the array and *cap are then intact). Use:
 *
 *	if (array_grow((void **)&v, &cap, n + 1, sizeof(*v)))
 *		return -ENOMEM;
 *	v[n++] = x;
 */
int array_grow(void **arr, size_t *cap, size_t need, size_t elem);
/*
 * The other direction, for an array kept long after it is built: gives back
 * the capacity past its n elements (keeping room for one). A failed shrink
 * leaves the array and *cap as they were, only bigger than needed.
 */
void array_trim(void **arr, size_t *cap, size_t n, size_t elem);

/* A growable, always NUL-terminated string. Zero-initialise to start. */
struct sbuf {
	char *buf;
	size_t len, cap;
};
int sbuf_add(struct sbuf *sb, const char *s, size_t n);
int sbuf_puts(struct sbuf *sb, const char *s);
int sbuf_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_reset(struct sbuf *sb);
void sbuf_free(struct sbuf *sb);

/* "s" unless n is 1: "1 interval", "2 intervals" (and "0 samples"). */
static inline const char *plural_s(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* A space or a tab. */
static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * The next blank-separated token of [*p, end): sets *tok and *n, advances *p
 * past it. False when only blanks are left. For the line parsers of kallsyms,
 * mountinfo and perf maps.
 */
bool next_token(const char **p, const char *end, const char **tok, size_t *n);

/* Strict decimal/hex parsers: whole string, no sign, no overflow. */
int parse_u64(const char *s, int base, uint64_t *out);
/* Parses the hex digits of s[0..n) (optional 0x prefix); -EINVAL/-ERANGE. */
int parse_hex_n(const char *s, size_t n, uint64_t *out);

/*
 * Parses a CPU list ("0-3,8,10-11") into mask[nr]. -EINVAL on bad syntax,
 * -ERANGE if a CPU is >= nr. With mask NULL only the syntax is checked.
 */
int parse_cpulist(const char *s, bool *mask, int nr);

/* Number of possible CPUs (highest possible id + 1), at least 1. */
int possible_cpus(void);

/* Smallest power of two >= v (v <= 2^63). */
uint64_t roundup_pow2(uint64_t v);

/* Clocks. */
uint64_t now_ns(void);		  /* CLOCK_MONOTONIC */
uint64_t boottime_ns(void);	  /* CLOCK_BOOTTIME (what task start_boottime uses) */
uint64_t realtime_ns(void);	  /* CLOCK_REALTIME */
uint64_t thread_cputime_ns(void); /* CLOCK_THREAD_CPUTIME_ID: this thread's CPU time */

/* Basename of a path, without allocating (pointer into path). */
const char *path_basename(const char *path);

#endif
