// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* options.c - the options' one table of --unwind modes; see options.h. */
#include "session/options.h"

#include <stdlib.h>

#include "base/util.h"
#include "unwind_abi.h"

/*
 * One row per enum unwind_opt: its --unwind word and the program's mode. The
 * two enums list their values in different orders (the ABI's is fixed), so
 * every mapping goes through this table, indexed by the option.
 */
static const struct {
	const char *name;
	uint32_t mode;
} unwind_opts[] = {
	[UNWIND_OPT_AUTO] = { "auto", UNWIND_MODE_AUTO },
	[UNWIND_OPT_FP] = { "fp", UNWIND_MODE_FP },
	[UNWIND_OPT_DWARF] = { "dwarf", UNWIND_MODE_DWARF },
};
_Static_assert(ARRAY_SIZE(unwind_opts) == UNWIND_OPT_NR, "a row for every enum unwind_opt");

void options__free(struct options *o)
{
	free(o->pids);
	o->pids = NULL;
	o->nr_pids = 0;
	free(o->cgroups);
	o->cgroups = NULL;
	o->nr_cgroups = 0;
	o->cap_cgroups = 0;
}

const char *options__unwind_name(enum unwind_opt u)
{
	return (size_t)u < ARRAY_SIZE(unwind_opts) && unwind_opts[u].name ? unwind_opts[u].name
									  : "?";
}

uint32_t options__unwind_mode(enum unwind_opt u)
{
	return (size_t)u < ARRAY_SIZE(unwind_opts) && unwind_opts[u].name ? unwind_opts[u].mode
									  : UNWIND_MODE_AUTO;
}
