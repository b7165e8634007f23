// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* termcolor.c - terminfo colors for text output; see termcolor.h. */
#include "tui/termcolor.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

static bool usable(const char *cap)
{
	return cap && cap != (const char *)-1;
}

void termcolor__init(struct termcolor *tc, bool on)
{
	const char *setaf, *sgr0, *dim;
	int err;

	memset(tc, 0, sizeof(*tc));
	if (!on || setupterm(NULL, STDOUT_FILENO, &err) != OK)
		return;
	setaf = tigetstr("setaf");
	sgr0 = tigetstr("sgr0");
	dim = tigetstr("dim");
	if (usable(setaf) && usable(sgr0)) {
		snprintf(tc->red, sizeof(tc->red), "%s", tiparm(setaf, COLOR_RED));
		snprintf(tc->green, sizeof(tc->green), "%s", tiparm(setaf, COLOR_GREEN));
		snprintf(tc->reset, sizeof(tc->reset), "%s", sgr0);
		if (usable(dim))
			snprintf(tc->dim, sizeof(tc->dim), "%s", dim);
	}
	del_curterm(cur_term);
}
