/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mountinfo.h - the mount table of a process (/proc/PID/mountinfo), kept only
 * for one question: could opening or walking a path block the agent?
 *
 * A FUSE daemon that never answers makes every lookup, open, stat and read
 * under its mount wait for it (OTel eBPF profiler #1600), and a container can
 * mount one wherever it likes, /tmp included; an NFS, CIFS, 9p or Ceph server
 * that stops answering does the same to a hard mount. bpfprof therefore never
 * walks into, opens or reads anything on such a mount of a profiled process
 * (see safeopen.h). Mount points are as the process sees them (relative to
 * its root), with the kernel's octal escapes (\040 for a space...) decoded.
 *
 * Lines are hostile-tolerant: malformed ones are skipped and counted.
 */
#ifndef BPFPROF_MOUNTINFO_H
#define BPFPROF_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOUNTINFO_FSTYPE_MAX 24

struct mountinfo_ent {
	uint64_t id;	       /* mount id, as statx(STATX_MNT_ID) reports it: unique system-wide */
	uint32_t major, minor; /* st_dev of its files, as /proc/PID/maps shows them */
	char *point;	       /* mount point, decoded, owned by the table */
	bool may_block;	       /* FUSE or a network file system: see mountinfo__type_may_block() */
	char fstype[MOUNTINFO_FSTYPE_MAX]; /* truncated if longer */
};

struct mountinfo {
	struct mountinfo_ent *ents;
	size_t nr;
	size_t bad_lines;
	bool any_block; /* some entry may block */
};

/* Parses buf[0..len); 0 or -ENOMEM. *out must be zeroed or freed first. */
int mountinfo__parse(const char *buf, size_t len, struct mountinfo *out);
/* Reads (at most 16 MiB) and parses a mountinfo file; 0 or -errno. */
int mountinfo__read(const char *path, struct mountinfo *out);
void mountinfo__free(struct mountinfo *mi);

/*
 * The mount that may block covering path (it is the mount point or one of its
 * ancestors, component-wise), or NULL.
 */
const struct mountinfo_ent *mountinfo__path_may_block(const struct mountinfo *mi, const char *path);
/* A mount that may block whose files have device major:minor, or NULL. */
const struct mountinfo_ent *mountinfo__dev_may_block(const struct mountinfo *mi, uint32_t major,
						     uint32_t minor);
/* The entry of mount id, or NULL if the table has none. */
const struct mountinfo_ent *mountinfo__find_id(const struct mountinfo *mi, uint64_t id);

#endif
