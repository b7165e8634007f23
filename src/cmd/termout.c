// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* termout.c - see termout.h. */
#include "cmd/termout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "base/htab.h"
#include "base/util.h"

/*
 * The strings the terminal's capabilities expand to, kept: tiparm() looks
 * its format up in a search tree and interprets it at every call, and
 * vidputs() works out an attribute change the same way - about a microsecond
 * each, dozens per refresh. A row's cursor address and an attribute's on and
 * off strings never change while the terminal stays the same.
 */
#define CACHE_MAX 4096

struct move_key {
	int y, x;
};

struct attr_str {
	char *on, *off; /* normal -> attr, attr -> normal */
};

static char *buf;
static size_t len, cap;
static bool oom; /* a byte did not fit: the rest of this refresh is dropped */
static struct htab *moves;  /* move_key -> its cursor_address string */
static struct htab *attrs;  /* attr_t -> struct attr_str */
static char capt[256];	    /* what a vidputs() emits, being captured */
static size_t capt_len;
static bool capt_over;

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

static void out_str(const char *s)
{
	size_t n = strlen(s);

	if (len + n > cap && array_grow((void **)&buf, &cap, len + n, 1)) {
		oom = true;
		return;
	}
	memcpy(buf + len, s, n);
	len += n;
}

static int capt_ch(int c)
{
	if (capt_len + 1 < sizeof(capt))
		capt[capt_len++] = (char)c;
	else
		capt_over = true;
	return c;
}

/* What vidputs(attr) emits now, as a string; NULL if it does not fit. */
static char *capture_vid(attr_t attr)
{
	capt_len = 0;
	capt_over = false;
	vidputs(attr, capt_ch);
	capt[capt_len] = '\0';
	return capt_over ? NULL : strdup(capt);
}

static void cache_free(void)
{
	struct htab_entry *e;
	size_t pos = 0;

	while (moves && (e = htab__next(moves, &pos)))
		free(e->value);
	pos = 0;
	while (attrs && (e = htab__next(attrs, &pos))) {
		struct attr_str *a = e->value;

		if (a) {
			free(a->on);
			free(a->off);
			free(a);
		}
	}
	htab__free(moves);
	htab__free(attrs);
	moves = attrs = NULL;
}

/* A table, emptied when it holds CACHE_MAX strings (a huge terminal). */
static struct htab *cache_of(struct htab **h)
{
	if (*h && htab__count(*h) >= CACHE_MAX)
		cache_free();
	if (!*h)
		*h = htab__new();
	return *h;
}

bool termout__ok(void)
{
	return cursor_address != NULL;
}

void termout__move(int y, int x)
{
	struct move_key k = { y, x };
	struct htab *h = cache_of(&moves);
	struct htab_entry *e = h ? htab__upsert(h, &k, sizeof(k), NULL) : NULL;
	const char *s;

	if (e && e->value) {
		out_str(e->value);
		return;
	}
	s = tiparm(cursor_address, y, x);
	if (!s)
		return;
	/* Padding (delays) in it: expanded by tputs at every use, not kept. */
	if (e && !strchr(s, '$'))
		e->value = strdup(s);
	if (e && e->value)
		out_str(e->value);
	else {
		if (e)
			htab__remove(h, &k, sizeof(k));
		out_cap(s);
	}
}

/* attr's on and off strings, from normal and back (every text is written so). */
static const struct attr_str *attr_strings(attr_t attr)
{
	struct htab *h = cache_of(&attrs);
	struct htab_entry *e = h ? htab__upsert(h, &attr, sizeof(attr), NULL) : NULL;
	struct attr_str *a;

	if (!e)
		return NULL;
	if (e->value)
		return e->value;
	a = calloc(1, sizeof(*a));
	if (a) {
		vidputs(A_NORMAL, capt_ch); /* from normal, whatever came before */
		a->on = capture_vid(attr);
		a->off = capture_vid(A_NORMAL);
	}
	if (!a || !a->on || !a->off || strchr(a->on, '$') || strchr(a->off, '$')) {
		if (a) {
			free(a->on);
			free(a->off);
			free(a);
		}
		htab__remove(h, &attr, sizeof(attr));
		return NULL;
	}
	e->value = a;
	return a;
}

void termout__text(const char *s, size_t n, attr_t attr)
{
	const struct attr_str *a = attr ? attr_strings(attr) : NULL;

	if (a)
		out_str(a->on);
	else if (attr)
		vidputs(attr, out_ch);
	if (len + n > cap && array_grow((void **)&buf, &cap, len + n, 1))
		oom = true;
	else {
		memcpy(buf + len, s, n);
		len += n;
	}
	if (a)
		out_str(a->off);
	else if (attr)
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
	cache_free();
	free(buf);
	buf = NULL;
	len = cap = 0;
}
