/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cgroup.h - which cgroup and which container a process belongs to, from the
 * text of /proc/PID/cgroup (cgroup v1, v2 and hybrid hosts).
 *
 * Container ids are the 64-hex-digit ids runtimes put in cgroup names:
 *   docker      .../docker-<id>.scope (systemd driver), /docker/<id> (cgroupfs)
 *   containerd  .../cri-containerd-<id>.scope, /kubepods/.../pod<uid>/<id>
 *   CRI-O       .../crio-<id>.scope, /crio-<id>
 *   podman      .../libpod-<id>.scope, /libpod_parent/libpod-<id>
 * A 64-hex component with another prefix is reported with runtime "".
 */
#ifndef BPFPROF_CGROUP_H
#define BPFPROF_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONTAINER_ID_LEN 64

struct cgroup_info {
	char path[512];				 /* v2 path, else a v1 one; "" if none */
	char container_id[CONTAINER_ID_LEN + 1]; /* "" if not in a container */
	const char *runtime;			 /* "docker", "containerd", "cri-o", "podman", "" */
	bool v2_only; /* the text had the unified line "0::/..." alone (no v1 hierarchy) */
};

/* Parses /proc/PID/cgroup text. 0, or -EINVAL if no line parses. */
int cgroup__parse(const char *text, struct cgroup_info *out);
/*
 * Opens a cgroup v2 directory for the --cgroup filter: an absolute path that
 * exists, else a path relative to the cgroup2 mount (from mountinfo). Returns
 * an O_RDONLY|O_DIRECTORY fd, or -errno (-ENOTDIR: not cgroup v2). The path
 * used is copied to resolved.
 */
int cgroup__open_v2(const char *mountinfo_path, const char *path, char *resolved, size_t size);
/*
 * The processes of the cgroup v2 directory dirfd and its descendants (their
 * cgroup.procs), at most max into pids; *n the count. At most
 * CGROUP_WALK_DIRS directories are read (a delegated subtree can be made
 * large): -E2BIG past them, with what was found. 0 or -errno.
 */
#define CGROUP_WALK_DIRS 4096
int cgroup__pids(int dirfd, uint32_t *pids, size_t max, size_t *n);
/* The cgroup2 mount point named in a mountinfo text; 0 or -ENOENT. */
int cgroup__v2_mount(const char *mountinfo, char *out, size_t size);

/* Reads <proc_root>/PID/cgroup; 0 or -errno. */
int cgroup__read(const char *proc_root, unsigned pid, struct cgroup_info *out);
/*
 * The v2 path of /proc/PID/cgroup text (its "0::/path" line), cut after its
 * outermost component naming a container or systemd's delegation to a user,
 * user@UID.service (the cgroups made inside them are theirs): 0, -ENOENT
 * without a v2 line,
 * -ENAMETOOLONG past size. cgroup__read_v2 reads <proc_root>/PID/cgroup.
 */
int cgroup__parse_v2(const char *text, char *out, size_t size);
int cgroup__read_v2(const char *proc_root, unsigned pid, char *out, size_t size);

#endif
