// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* termout.c - see termout.h. */
#include "tui/termout.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "base/text.h"
#include "base/util.h"

/*
 * The strings the terminal's capabilities expand to are kept: tiparm()
 * looks its format up in a search tree and interprets it at every call, and
 * vidputs() works out an attribute change the same way - about a microsecond
 * each, dozens per refresh. A row's cursor address and an attribute's on and
 * off strings never change while the terminal stays the same. They are kept
 * inline (a refresh runs once a second on a cold cache, where a hash table's
 * probe and the string it points at were a miss each): the address of a
 * row's first column in the row, then a column address (hpa) per column.
 * Kept per cell, the first move to each of a screen's thousands of cells
 * paid tiparm(): in a 30 s run a row cost 1374 cycles, 487 after.
 */
#define ATTRS_MAX 8

struct move_slot {
	unsigned char len; /* of s; 0: not expanded yet, or: */
#define MOVE_NONE 255	   /* not kept (padding in it, or too long): expanded each time */
	char s[15];
};

struct attr_slot {
	attr_t attr;
	bool kept;		       /* else vidputs() each time */
	unsigned char on_len, off_len; /* normal -> attr, attr -> normal */
	char on[32], off[32];
};

/*
 * What each row shows. A refresh compares a row's new text with it and
 * writes from the first byte that differs to the last.
 */
struct row {
	int len;       /* of text, or: */
#define ROW_BLANK   -1 /* after a clear */
#define ROW_UNKNOWN -2 /* not ASCII: cleared and written whole next time */
	attr_t attr;
	bool drawn;	       /* in this refresh */
	struct move_slot home; /* the cursor address of its first column */
	char text[];	       /* cols + 1 */
};

static char *buf; /* what this refresh writes */
static size_t len, cap;
static bool oom;   /* a byte did not fit: the rest of this refresh is dropped */
static char *rows; /* nr_lines rows of row_size bytes, then one for scratch */
static size_t row_size;
static int nr_lines, nr_cols;
static bool stale = true;      /* the screen is not what the rows say */
static struct move_slot *cols; /* column addresses, nr_cols of them, or NULL */
static struct attr_slot attrs[ATTRS_MAX];
static int nr_attrs;
static char el[16];   /* clr_eol */
static int el_len;    /* 0: not looked at, -1: not kept */
static char capt[64]; /* what a vidputs() emits, being captured */
static size_t capt_len;
static bool capt_over;

static struct row *row_at(int y)
{
	return (struct row *)(rows + (size_t)y * row_size);
}

static void out_bytes(const char *s, size_t n)
{
	if (len + n > cap && array_grow((void **)&buf, &cap, len + n, 1)) {
		oom = true;
		return;
	}
	memcpy(buf + len, s, n);
	len += n;
}

static int out_ch(int c)
{
	char ch = (char)c;

	out_bytes(&ch, 1);
	return c;
}

static void out_cap(const char *s)
{
	if (s)
		tputs(s, 1, out_ch);
}

static int capt_ch(int c)
{
	if (capt_len + 1 < sizeof(capt))
		capt[capt_len++] = (char)c;
	else
		capt_over = true;
	return c;
}

/* What vidputs(attr) emits now into to[size]: its length, or -1. */
static int capture_vid(attr_t attr, char *to, size_t size)
{
	capt_len = 0;
	capt_over = false;
	vidputs(attr, capt_ch);
	if (capt_over || capt_len > size || capt_len > UINT8_MAX ||
	    memchr(capt, '$', capt_len)) /* padding: expanded by tputs at every use */
		return -1;
	memcpy(to, capt, capt_len);
	return (int)capt_len;
}

bool termout__ok(void)
{
	return cursor_address != NULL;
}

/* Writes s (a capability's expansion, or NULL), kept in m if it can be. */
static void put_kept(struct move_slot *m, const char *s)
{
	size_t n;

	if (!s)
		return;
	if (!m->len) {
		n = strlen(s);
		if (n <= sizeof(m->s) && !strchr(s, '$')) {
			memcpy(m->s, s, n);
			m->len = (unsigned char)n;
		} else {
			m->len = MOVE_NONE;
		}
	}
	out_cap(s);
}

static bool kept(const struct move_slot *m)
{
	return m->len && m->len != MOVE_NONE;
}

/* The cursor to (y, x) of the screen (0 <= y < nr_lines, 0 <= x < nr_cols). */
static void move_to(int y, int x)
{
	struct move_slot *home = &row_at(y)->home, *col = cols && x ? &cols[x] : NULL;

	/* Without a column address that can be kept: one address, expanded each time. */
	if (x && (!col || col->len == MOVE_NONE)) {
		out_cap(tiparm(cursor_address, y, x));
		return;
	}
	if (kept(home))
		out_bytes(home->s, home->len);
	else
		put_kept(home, tiparm(cursor_address, y, 0));
	if (!col)
		return;
	if (kept(col))
		out_bytes(col->s, col->len);
	else
		put_kept(col, tiparm(column_address, x));
}

/* attr's strings, from normal and back (every text is written so). */
static const struct attr_slot *attr_strings(attr_t attr)
{
	struct attr_slot *a;
	int on, off;

	for (int i = 0; i < nr_attrs; i++)
		if (attrs[i].attr == attr)
			return &attrs[i];
	if (nr_attrs == ATTRS_MAX)
		return NULL;
	a = &attrs[nr_attrs++];
	*a = (struct attr_slot){ .attr = attr };
	vidputs(A_NORMAL, capt_ch); /* from normal, whatever came before */
	on = capture_vid(attr, a->on, sizeof(a->on));
	off = capture_vid(A_NORMAL, a->off, sizeof(a->off));
	if (on >= 0 && off >= 0) {
		a->kept = true;
		a->on_len = (unsigned char)on;
		a->off_len = (unsigned char)off;
	}
	return a;
}

static void text(const char *s, size_t n, attr_t attr)
{
	const struct attr_slot *a = attr ? attr_strings(attr) : NULL;

	if (a && a->kept)
		out_bytes(a->on, a->on_len);
	else if (attr)
		vidputs(attr, out_ch);
	out_bytes(s, n);
	if (a && a->kept)
		out_bytes(a->off, a->off_len);
	else if (attr)
		vidputs(A_NORMAL, out_ch);
}

static void clear_eol(void)
{
	if (!el_len) {
		size_t n = clr_eol ? strlen(clr_eol) : 0;

		el_len = -1;
		if (n && n < sizeof(el) && !strchr(clr_eol, '$')) {
			memcpy(el, clr_eol, n);
			el_len = (int)n;
		}
	}
	if (el_len > 0)
		out_bytes(el, (size_t)el_len);
	else
		out_cap(clr_eol);
}

static void rows_free(void)
{
	free(rows);
	free(cols);
	rows = NULL;
	cols = NULL;
	nr_lines = nr_cols = 0;
}

bool termout__begin(int h, int w)
{
	bool clear = stale || !rows || h != nr_lines || w != nr_cols;

	len = 0;
	oom = false;
	if (clear) {
		h = MAX(h, 0);
		w = MAX(w, 0);
		rows_free();
		row_size = (offsetof(struct row, text) + (size_t)w + 1 + 7) & ~(size_t)7;
		rows = calloc((size_t)h + 1, row_size);
		if (rows) {
			nr_lines = h;
			nr_cols = w;
			for (int y = 0; y < h; y++)
				row_at(y)->len = ROW_BLANK;
			/* NULL (none, or out of memory): cursor addresses each time. */
			if (column_address)
				cols = calloc((size_t)w + 1, sizeof(*cols));
		}
		/* No rows (out of memory): nothing is drawn, and the next refresh
		 * starts over. */
		stale = !rows;
	}
	for (int y = 0; y < nr_lines; y++)
		row_at(y)->drawn = false;
	return clear;
}

/* How many bytes a and b have the same, from their start, and from their end
 * (8 at a time: rows differ in a few figures). */
static int same_prefix(const char *a, const char *b, int n)
{
	int i = 0;

	for (uint64_t x, y; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

static int same_suffix(const char *a, const char *b, int n)
{
	int i = 0;

	for (uint64_t x, y; i + 8 <= n; i += 8) {
		memcpy(&x, a + n - i - 8, 8);
		memcpy(&y, b + n - i - 8, 8);
		if (x != y)
			break;
	}
	while (i < n && a[n - i - 1] == b[n - i - 1])
		i++;
	return i;
}

void termout__row(int y, const char *s, attr_t attr)
{
	/* Not the last cell of the screen: writing it may scroll. */
	int w = y == nr_lines - 1 ? nr_cols - 1 : nr_cols, n = 0, from = 0, to, old;
	char *t = rows ? row_at(nr_lines)->text : NULL; /* the scratch row */
	struct row *r;
	bool ascii = true;

	if (y < 0 || y >= nr_lines || w <= 0 || !rows)
		return;
	n = (int)strnlen(s, (size_t)w);
	memcpy(t, s, (size_t)n);
	t[n] = '\0';
	for (int i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)t[i];

		/* One comparison for the usual printable ASCII byte. */
		if ((unsigned char)(ch - 0x20) >= 0x5f) {
			if (ch < 0x20 || ch == 0x7f)
				t[i] = '?';
			else
				ascii = false;
		}
	}
	r = row_at(y);
	r->drawn = true;
	if (r->len == ROW_UNKNOWN) {
		move_to(y, 0);
		clear_eol();
		r->len = ROW_BLANK;
	}
	/* Byte offsets are columns only in ASCII: other rows are written whole,
	 * with what a terminal would obey (C1, bytes not UTF-8) as '?'. */
	if (!ascii) {
		n = (int)text__clean(t, false);
		move_to(y, 0);
		text(t, (size_t)n, attr);
		r->len = ROW_UNKNOWN;
		return;
	}
	old = r->len < 0 ? 0 : r->len;
	to = n;
	if (r->len >= 0 && r->attr == attr) {
		from = same_prefix(t, r->text, MIN(n, old));
		if (n == old) {
			if (from == n)
				return; /* unchanged */
			to -= same_suffix(t + from, r->text + from, n - from);
		}
	}
	if (to > from) {
		move_to(y, from);
		text(t + from, (size_t)(to - from), attr);
	}
	if (n < old) {
		move_to(y, n);
		clear_eol();
	}
	memcpy(r->text, t, (size_t)n + 1);
	r->len = n;
	r->attr = attr;
}

static int flush(void)
{
	size_t off = 0;
	int err = oom ? -ENOMEM : 0;

	while (off < len && !err) {
		ssize_t n = write(STDOUT_FILENO, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	len = 0;
	oom = false;
	return err;
}

int termout__end(void)
{
	int err;

	for (int y = 0; y < nr_lines; y++) {
		const struct row *r = row_at(y);

		if (!r->drawn && (r->len > 0 || r->len == ROW_UNKNOWN))
			termout__row(y, "", 0);
	}
	/* Out of memory, or a short write: the screen is not what the rows say.
	 * Cleared and drawn whole next time. */
	err = flush();
	if (err)
		stale = true;
	return err;
}

void termout__free(void)
{
	rows_free();
	free(buf);
	buf = NULL;
	len = cap = 0;
	oom = false;
	stale = true;
	nr_attrs = 0;
	el_len = 0;
}
