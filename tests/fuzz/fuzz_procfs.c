// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_procfs.c - libFuzzer target for the small /proc parsers the
 * symbolizer trusts: mountinfo (the FUSE guard), /proc/PID/stat (start time
 * and the address-space signature) and /proc/PID/status (NSpid, euid; the
 * credentials a process opens files with).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/mountinfo.h"
#include "proc/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mountinfo mi;
	struct proc_stat ps;
	struct proc_status st;
	struct safe_cred cred;
	char *text = malloc(size + 1);
	uint64_t t;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!mountinfo__parse(text, size, &mi)) {
		for (size_t i = 0; i < mi.nr; i++) {
			if (!mi.ents[i].point || mi.ents[i].point[0] != '/')
				abort();
			/* A FUSE mount covers its own mount point. */
			if (mi.ents[i].may_block &&
			    !mountinfo__path_may_block(&mi, mi.ents[i].point))
				abort();
			(void)mountinfo__find_id(&mi, mi.ents[i].id);
			(void)mountinfo__dev_may_block(&mi, mi.ents[i].major, mi.ents[i].minor);
		}
		(void)mountinfo__path_may_block(&mi, "/tmp/perf-1.map");
		mountinfo__free(&mi);
	}
	/* The stat and status parsers see NUL-terminated text, as read_file gives. */
	if (!procfs__parse_stat(text, &ps))
		(void)procfs__mm_sig(&ps);
	(void)procfs__parse_stat_starttime(text, &t);
	(void)procfs__parse_status(text, &st);
	if (!procfs__parse_cred(text, &cred) && cred.nr_groups > SAFE_CRED_MAX_GROUPS)
		abort();
	free(text);
	return 0;
}
