// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * execstop.c - the links that stop a started command for its probes; see
 * execstop.h.
 */
#include "collector/execstop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "base/util.h"

int execstop__attach_exec(struct execstop *s, struct bpf_program *prog, struct errmsg *em)
{
	s->exec = bpf_program__attach(prog);
	if (!s->exec) {
		int err = -errno;

		return errmsg_set(em, err, "cannot attach to sched_process_exec: %s",
				  strerror(-err));
	}
	return 0;
}

int execstop__attach_entry(struct execstop *s, struct bpf_program *prog, const char *path,
			   uint64_t off, int pid, struct errmsg *em)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o);
	struct bpf_link *l;

	if (array_grow((void **)&s->entries, &s->cap_entries, s->nr_entries + 1,
		       sizeof(*s->entries)))
		return errmsg_set(em, -ENOMEM, "out of memory");
	l = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &o);
	if (!l) {
		int err = -errno;

		return errmsg_set(em, err, "cannot attach a uprobe at the entry point: %s",
				  strerror(-err));
	}
	s->entries[s->nr_entries++] = l;
	return 0;
}

void execstop__detach_entries(struct execstop *s)
{
	for (size_t i = 0; i < s->nr_entries; i++)
		bpf_link__destroy(s->entries[i]);
	s->nr_entries = 0;
}

void execstop__free(struct execstop *s)
{
	execstop__detach_entries(s);
	free(s->entries);
	bpf_link__destroy(s->exec);
	memset(s, 0, sizeof(*s));
}
