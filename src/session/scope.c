// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* scope.c - the processes -a and --cgroup look at (scope.h). */
#include "session/scope.h"

#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

int scope__open_cgroups(const char **paths, size_t n, int *fds)
{
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	for (size_t i = 0; i < n; i++) {
		char resolved[1024];
		int fd = cgroup__open_v2(NULL, paths[i], resolved, sizeof(resolved));

		if (fd < 0) {
			p_err("--cgroup %s: %s", paths[i],
			      fd == -ENOTDIR ? "not a cgroup v2 directory" : strerror(-fd));
			p_hint("give a path under the cgroup2 mount, e.g. /system.slice/docker-ID.scope");
			return 1;
		}
		fds[i] = fd;
		p_debug("--cgroup %s: %s", paths[i], resolved);
	}
	return 0;
}

int scope__pids(const char **paths, const int *fds, size_t n, uint32_t *pids, size_t max,
		size_t *nr, const char *what)
{
	size_t got = 0, k;
	int err;

	if (!n) {
		err = procfs__pids("/proc", pids, max, &got);
		if (err && !what)
			return err;
		if (err) {
			p_err("cannot list the processes: %s", strerror(-err));
			return 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		err = cgroup__pids(fds[i], pids + got, max - got, &k);
		got += k;
		if (err && !what) {
			if (err != -E2BIG)
				return err;
		} else if (err == -E2BIG) {
			p_warn("--cgroup %s: more than %u cgroups below it: the processes of the first "
			       "ones looked at",
			       paths[i], CGROUP_WALK_DIRS);
		} else if (err) {
			p_err("--cgroup %s: cannot list its processes: %s", paths[i],
			      strerror(-err));
			return 1;
		}
	}
	*nr = got;
	if (!what)
		return 0;
	p_info("%zu process%s looked at for %s", got, got == 1 ? "" : "es", what);
	if (!got) {
		p_err("no process in %s", n ? "the cgroups" : "/proc");
		p_hint("the files are found through the processes that map them: start one first");
		return 1;
	}
	return 0;
}
