/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mountinfo.h - the mount table of a process (/proc/PID/mountinfo), kept only
 * for one question: could opening or walking a path block on a FUSE mount?
 *
 * A FUSE daemon that never answers makes every lookup, open, stat and read
 * under its mount wait for it (OTel eBPF profiler #1600), and a container can
 * mount one wherever it likes, /tmp included. bpfprof therefore never walks
 * into, opens or reads anything on a FUSE mount of a profiled process (see
 * safeopen.h). Mount points are as the process sees them (relative to its
 * root), with the kernel's octal escapes (\040 for a space...) decoded.
 *
 * Lines are hostile-tolerant: malformed ones are skipped and counted.
 */
#ifndef BPFPROF_MOUNTINFO_H
#define BPFPROF_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mountinfo_ent {
	uint64_t id; /* mount id, as statx(STATX_MNT_ID) reports it */
	char *point; /* mount point, decoded, owned by the table */
	bool fuse;   /* fstype fuse, fuseblk or fuse.* */
};

struct mountinfo {
	struct mountinfo_ent *ents;
	size_t nr;
	size_t bad_lines;
	bool any_fuse;
};

/* Parses buf[0..len); 0 or -ENOMEM. *out must be zeroed or freed first. */
int mountinfo__parse(const char *buf, size_t len, struct mountinfo *out);
/* Reads (at most 16 MiB) and parses a mountinfo file; 0 or -errno. */
int mountinfo__read(const char *path, struct mountinfo *out);
void mountinfo__free(struct mountinfo *mi);

/* True if a FUSE mount point is path or one of its ancestors (component-wise). */
bool mountinfo__path_on_fuse(const struct mountinfo *mi, const char *path);
/* True if the mount with this id is FUSE (false if unknown). */
bool mountinfo__id_is_fuse(const struct mountinfo *mi, uint64_t id);

#endif
