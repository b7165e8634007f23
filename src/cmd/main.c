// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * main.c - command dispatch. "bpfprof [record] OPTIONS" profiles; the other
 * commands work on profiles already written and need no privileges.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/log.h"
#include "cmd/cmd.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "record", cmd_record }, { "report", cmd_report }, { "convert", cmd_convert },
	{ "diff", cmd_diff },	  { "top", cmd_top },	    { "annotate", cmd_annotate },
	{ "count", cmd_count },
};

int main(int argc, char **argv)
{
	if (argc > 1) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[1], commands[i].name))
				return commands[i].run(argc - 1, argv + 1);
		if (argv[1][0] != '-') {
			p_err("unknown command '%s'", argv[1]);
			p_hint("see 'bpfprof --help'");
			return 2;
		}
	}
	return cmd_record(argc, argv);
}
