// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* util.c - see util.h. */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int read_fd(int fd, size_t max, char **bufp, size_t *lenp)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int err = 0;

	for (;;) {
		ssize_t n;

		/* Grown when full, a byte kept for the NUL: /proc files have no size to ask. */
		if (len + 1 >= cap &&
		    array_grow((void **)&buf, &cap, MAX(len + 2, (size_t)4097), 1)) {
			err = -ENOMEM;
			break;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += n;
		if (len > max) {
			err = -EFBIG;
			break;
		}
	}
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*bufp = buf;
	if (lenp)
		*lenp = len;
	return 0;
}

/* read_file() relative to dirfd (AT_FDCWD: the working directory). */
static int read_file_at(int dirfd, const char *path, size_t max, char **bufp, size_t *lenp)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err;

	if (fd < 0)
		return -errno;
	err = read_fd(fd, max, bufp, lenp);
	close(fd);
	return err;
}

int read_file(const char *path, size_t max, char **buf, size_t *len)
{
	return read_file_at(AT_FDCWD, path, max, buf, len);
}

static int sbuf_grow(struct sbuf *sb, size_t extra)
{
	if (extra > SIZE_MAX - 1 - sb->len)
		return -ENOMEM;
	return array_grow((void **)&sb->buf, &sb->cap, sb->len + extra + 1, 1);
}

int sbuf_add(struct sbuf *sb, const char *s, size_t n)
{
	if (sbuf_grow(sb, n))
		return -ENOMEM;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int sbuf_puts(struct sbuf *sb, const char *s)
{
	return sbuf_add(sb, s, strlen(s));
}

int sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (sbuf_grow(sb, n))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	va_end(ap);
	sb->len += n;
	return 0;
}

void sbuf_reset(struct sbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void sbuf_free(struct sbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

int parse_u64(const char *s, int base, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -EINVAL;
		if (d >= (unsigned)base)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

int parse_hex_n(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	if (i == n)
		return -EINVAL;
	for (; i < n; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -EINVAL;
		if (v >> 60)
			return -ERANGE;
		v = (v << 4) | d;
	}
	*out = v;
	return 0;
}

static int parse_cpu_num(const char **sp, int *out)
{
	const char *s = *sp;
	long v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s - '0');
		if (v > 1 << 20)
			return -ERANGE;
		s++;
	}
	*sp = s;
	*out = (int)v;
	return 0;
}

int parse_cpulist(const char *s, bool *mask, int nr)
{
	int err;

	if (!s || !*s)
		return -EINVAL;
	for (int i = 0; mask && i < nr; i++)
		mask[i] = false;
	while (*s) {
		int a, b;

		err = parse_cpu_num(&s, &a);
		if (err)
			return err;
		b = a;
		if (*s == '-') {
			s++;
			err = parse_cpu_num(&s, &b);
			if (err)
				return err;
			if (b < a)
				return -EINVAL;
		}
		if (mask && b >= nr)
			return -ERANGE;
		for (int i = a; mask && i <= b; i++)
			mask[i] = true;
		if (*s == ',') {
			s++;
			if (!*s)
				return -EINVAL;
		} else if (*s && *s != '\n') {
			return -EINVAL;
		} else if (*s == '\n') {
			break;
		}
	}
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t thread_cputime_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

uint64_t boottime_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

uint64_t realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int possible_cpus(void)
{
	char *buf;
	int nr = 0;

	/* "0-127" or "0,2-3": the highest id counts, offline or not. */
	if (!read_file("/sys/devices/system/cpu/possible", 4096, &buf, NULL)) {
		const char *p = buf + strlen(buf);

		while (p > buf && (p[-1] < '0' || p[-1] > '9'))
			p--;
		while (p > buf && p[-1] >= '0' && p[-1] <= '9')
			p--;
		nr = atoi(p) + 1;
		free(buf);
	}
	if (nr <= 0)
		nr = (int)sysconf(_SC_NPROCESSORS_CONF);
	return nr > 0 ? nr : 1;
}

uint64_t roundup_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int array_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (!elem || ncap > SIZE_MAX / elem)
		return -ENOMEM; /* the byte count would wrap */
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

void array_trim(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t keep = n ? n : 1;
	void *p;

	if (n >= *cap || !elem)
		return;
	p = realloc(*arr, keep * elem);
	if (!p)
		return;
	*arr = p;
	*cap = keep;
}

bool next_token(const char **p, const char *end, const char **tok, size_t *n)
{
	const char *s = *p;

	while (s < end && is_blank(*s))
		s++;
	if (s == end)
		return false;
	*tok = s;
	while (s < end && !is_blank(*s))
		s++;
	*n = (size_t)(s - *tok);
	*p = s;
	return true;
}
