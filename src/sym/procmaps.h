/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * procmaps.h - parser for /proc/PID/maps.
 *
 * Line format: "start-end perms offset major:minor inode   path". The path is
 * everything after the inode column's padding, spaces included; a trailing
 * " (deleted)" is stripped and recorded. Paths may be pseudo names ("[vdso]",
 * "[heap]", "[anon:name]", "/memfd:x (deleted)"). Malformed lines are skipped
 * and counted, never fatal.
 */
#ifndef BPFPROF_PROCMAPS_H
#define BPFPROF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROCMAP_R 1
#define PROCMAP_W 2
#define PROCMAP_X 4
#define PROCMAP_P 8 /* private (copy on write); else shared */

struct procmap {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t perms; /* PROCMAP_* */
	bool deleted;	/* path ended in " (deleted)" */
	char *path;	/* NULL for anonymous memory */
};

struct procmaps {
	struct procmap *maps; /* sorted by start, as the kernel prints them */
	size_t nr;
	size_t bad_lines;
};

/* Parses buf[0..len); 0 or -ENOMEM. *out must be zeroed or freed first. */
int procmaps__parse(const char *buf, size_t len, struct procmaps *out);
/* Reads and parses a maps file; 0 or -errno. */
int procmaps__read(const char *path, struct procmaps *out);
void procmaps__free(struct procmaps *m);

/* The mapping containing addr, or NULL (binary search). */
const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr);

/* True for a mapping backed by a regular file we can read symbols from. */
bool procmap__is_file(const struct procmap *pm);

#endif
