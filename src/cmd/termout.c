// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* termout.c - see termout.h. */
#include "cmd/termout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "base/util.h"

static char *buf;
static size_t len, cap;
static bool oom; /* a byte did not fit: the rest of this refresh is dropped */

static int out_ch(int c)
{
	if (len + 1 > cap && array_grow((void **)&buf, &cap, len + 1, 1)) {
		oom = true;
		return c;
	}
	buf[len++] = (char)c;
	return c;
}

static void out_cap(const char *s)
{
	if (s)
		tputs(s, 1, out_ch);
}

bool termout__ok(void)
{
	return cursor_address != NULL;
}

void termout__move(int y, int x)
{
	out_cap(tiparm(cursor_address, y, x));
}

void termout__text(const char *s, size_t n, attr_t attr)
{
	if (attr)
		vidputs(attr, out_ch);
	if (len + n > cap && array_grow((void **)&buf, &cap, len + n, 1))
		oom = true;
	else {
		memcpy(buf + len, s, n);
		len += n;
	}
	if (attr)
		vidputs(A_NORMAL, out_ch);
}

void termout__clear_eol(void)
{
	out_cap(clr_eol);
}

int termout__flush(void)
{
	size_t off = 0;
	int err = oom ? -ENOMEM : 0;

	while (off < len) {
		ssize_t n = write(STDOUT_FILENO, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	len = 0;
	oom = false;
	return err;
}

void termout__free(void)
{
	free(buf);
	buf = NULL;
	len = cap = 0;
}
