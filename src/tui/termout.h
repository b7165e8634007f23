/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * termout.h - screen rows written through the terminal's terminfo entry
 * (cursor address, attributes, clear to end of line), for `bpfprof top`.
 * It keeps what each row shows and writes only the spans that changed,
 * buffered and written at once: ncurses' refresh recomputed the cheapest
 * cursor motion for every span (a dozen tparm() calls each), most of a
 * refresh's CPU. ncurses still sets the terminal up, reads keys, follows
 * resizes and restores the terminal; call these between its newterm() and
 * endwin() (or after setupterm()). Kept apart because <term.h> defines
 * macros (lines, columns, ...) that collide with ordinary names.
 *
 * A refresh is termout__begin(), termout__row() for the rows it shows,
 * termout__end(). Rows are cut at the right edge (the last cell of the
 * screen is never written: it may scroll), control characters show as '?'.
 * Column arithmetic is by bytes: a row with a byte outside ASCII is written
 * whole, and cleared and written whole again the next time.
 */
#ifndef BPFPROF_TERMOUT_H
#define BPFPROF_TERMOUT_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

/* The terminal can be driven this way (it has a cursor address). */
bool termout__ok(void);
/*
 * A refresh of an h x w screen (rows x columns) starts. true: the caller must clear
 * the screen first (the first refresh, a resize, or the last write failed);
 * every row is then taken as blank.
 */
bool termout__begin(int h, int w);
/* Row y shows s in attr (A_NORMAL, or attributes and a colour pair). */
void termout__row(int y, const char *s, attr_t attr);
/* Rows not given since termout__begin() are cleared; all of it is written
 * to stdout in one write. 0 or -errno (the next refresh then starts over). */
int termout__end(void);
void termout__free(void);

#endif
