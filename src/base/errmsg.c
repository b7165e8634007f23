// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* errmsg.c - see errmsg.h. */
#include "base/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int errmsg_set(struct errmsg *em, int err, const char *fmt, ...)
{
	va_list ap;

	if (!em)
		return err;
	em->err = err;
	va_start(ap, fmt);
	vsnprintf(em->msg, sizeof(em->msg), fmt, ap);
	va_end(ap);
	em->hint[0] = '\0';
	return err;
}

void errmsg_clear(struct errmsg *em)
{
	if (em) {
		em->err = 0;
		em->msg[0] = '\0';
		em->hint[0] = '\0';
	}
}

bool errmsg_said(const struct errmsg *em)
{
	return em && em->msg[0];
}

void errmsg_hint(struct errmsg *em, const char *fmt, ...)
{
	va_list ap;

	if (!em)
		return;
	va_start(ap, fmt);
	vsnprintf(em->hint, sizeof(em->hint), fmt, ap);
	va_end(ap);
}
