/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * termout.h - screen output through the terminal's terminfo entry (cursor
 * address, attributes, clear to end of line), buffered and written at once.
 * For `bpfprof top`, which keeps what each row shows and writes only the
 * spans that changed: ncurses' refresh recomputed the cheapest cursor motion
 * for every span (a dozen tparm() calls each), most of a refresh's CPU.
 * ncurses still sets the terminal up, reads keys, follows resizes and
 * restores the terminal; call these between its newterm() and endwin().
 * Kept apart because <term.h> defines macros (lines, columns, ...) that
 * collide with ordinary names.
 */
#ifndef BPFPROF_TERMOUT_H
#define BPFPROF_TERMOUT_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

/* The terminal can be driven this way (it has a cursor address). */
bool termout__ok(void);
/* Buffered: the cursor to (y, x); text with attr (then back to normal);
 * clear from the cursor to the end of the line. */
void termout__move(int y, int x);
void termout__text(const char *s, size_t n, attr_t attr);
void termout__clear_eol(void);
/* Writes what was buffered. 0 or -errno. */
int termout__flush(void);
void termout__free(void);

#endif
