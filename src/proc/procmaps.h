/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * procmaps.h - parser for /proc/PID/maps.
 *
 * Line format: "start-end perms offset major:minor inode   path". The path is
 * everything after the inode column's padding, spaces included; a trailing
 * " (deleted)" is stripped and recorded. Paths may be pseudo names ("[vdso]",
 * "[heap]", "[anon:name]", "/memfd:x (deleted)"). Malformed lines are skipped
 * and counted, never fatal: bad hex or decimal, a range with start >= end,
 * perms other than [r-][w-][x-][ps], a path containing NUL. Blank lines are
 * ignored. '\r' is kept (it is a legal file name character and the kernel
 * does not escape it).
 *
 * " (deleted)" is ambiguous: the kernel appends it unescaped, so a file named
 * "x (deleted)" reads exactly like a deleted "x". One suffix is always
 * stripped and `deleted` set; a caller that needs certainty stats the
 * stripped path and compares dev/inode (a deleted file's path may also name
 * a newer file by now, e.g. after a package upgrade).
 *
 * The result is ordered by start and non-overlapping: if a racing read of a
 * live process produced unordered or overlapping lines, they are sorted and
 * the overlapping ones dropped (and counted as bad).
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
	char *path;	/* NULL for anonymous memory; owned by the procmaps */
};

struct procmaps {
	struct procmap *maps; /* sorted by start, as the kernel prints them */
	size_t nr;
	size_t bad_lines;
};

/*
 * Parses buf[0..len) (need not be NUL-terminated); 0 or -ENOMEM. *out must be
 * zeroed or freed first; it is zeroed on error.
 */
int procmaps__parse(const char *buf, size_t len, struct procmaps *out);
/*
 * Reads <proc_root>/PID/maps; when the main thread has exited (its maps file
 * is empty), a live thread's <proc_root>/PID/task/TID/maps, with *tid (if
 * given) set to that TID, else 0. 0 or -errno.
 */
int procmaps__read_pid(const char *proc_root, uint32_t pid, struct procmaps *out, uint32_t *tid);

/*
 * The same through the PROCMAP_QUERY ioctl (Linux 6.11+) on the maps file
 * at path: the kernel filters and formats only what is asked for, a few
 * times cheaper than the text. what: PROCMAPS_Q_EXEC, the executable
 * mappings with their names (as procmaps__read + procmaps__keep(PROCMAP_X),
 * but a newline in a name is itself, not "\012", and [vsyscall], which is
 * not in the address space's tree, is left out);
 * PROCMAPS_Q_FILES, every file-backed mapping without names (paths NULL,
 * `deleted` unknown).
 * -EOPNOTSUPP on an older kernel (read the text then), -ENAMETOOLONG for a
 * name over PATH_MAX, -EFBIG past 131072 mappings or 64 MiB of names; no
 * address space (a zombie) reads as no mappings, as the text does.
 */
#define PROCMAPS_Q_EXEC	 1
#define PROCMAPS_Q_FILES 2
int procmaps__query(const char *path, unsigned what, struct procmaps *out);
/* procmaps__read_pid with procmaps__query. */
int procmaps__query_pid(const char *proc_root, uint32_t pid, unsigned what, struct procmaps *out,
			uint32_t *tid);

/* Reads (at most 64 MiB, else -EFBIG) and parses a maps file; 0 or -errno. */
int procmaps__read(const char *path, struct procmaps *out);
void procmaps__free(struct procmaps *m);

/*
 * Keeps only the mappings that have every permission in perms (e.g.
 * PROCMAP_X), in a new block of just their size with copies of their paths:
 * perms 0 makes one block of a list whose paths are borrowed (the array is
 * freed, the strings are not). 0 or -ENOMEM (m unchanged).
 */
int procmaps__keep(struct procmaps *m, uint32_t perms);

/* The mapping containing addr, or NULL (binary search). */
const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr);

/*
 * True for a mapping backed by a regular file we can read symbols from: the
 * path starts with '/', the inode is not 0, and it is not a kernel-internal
 * file that only looks like a path ("/memfd:", "/SYSV", "/anon_hugepage",
 * "/[aio]", "/dmabuf:") or under /dev (device nodes, POSIX shared memory in
 * /dev/shm, and shared anonymous memory, shown as "/dev/zero (deleted)").
 * The device major is not used: btrfs, overlayfs and NFS files have major 0
 * too. Deleted files count as files (see `deleted`). This is a cheap
 * pre-filter: the reader must still open without blocking, fstat() and
 * require S_ISREG and the ELF magic (elfsym__open does).
 */
bool procmap__is_file(const struct procmap *pm);

#endif
