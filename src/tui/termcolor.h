/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * termcolor.h - the escape sequences of a few text attributes for stdout,
 * from the terminal's terminfo entry (ncurses' tinfo), never hand-written:
 * empty strings when stdout is not a terminal or the terminal has no colors.
 * Kept apart because <term.h> defines macros (lines, columns, ...) that
 * collide with ordinary names.
 */
#ifndef BPFPROF_TERMCOLOR_H
#define BPFPROF_TERMCOLOR_H

#include <stdbool.h>

struct termcolor {
	char red[32], green[32], dim[32], reset[32];
};

/* Fills tc for stdout when on (else, or without terminfo, all empty). */
void termcolor__init(struct termcolor *tc, bool on);

#endif
