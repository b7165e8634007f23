// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * launch.c - "-- COMMAND" started and stopped where its probes go in:
 * at its exec, then at its entry point (launch.h).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "base/log.h"
#include "proc/procfs.h"
#include "session/launch.h"

int launch__start(struct child *ch, char **cmd, struct ptab *ptab, const struct launch_stops *stops)
{
	struct errmsg em = { 0 };
	struct proc_id id = { .exec_id = PROC_EXEC_ANY };
	uint64_t entry;
	struct pproc *p = NULL;
	struct pmaps *pm = NULL;
	int err;

	err = child__spawn(ch, cmd);
	if (err) {
		p_err("cannot start '%s': %s", cmd[0], strerror(-err));
		return 1;
	}
	id.pid = (uint32_t)ch->pid;
	err = stops->at_exec(stops->ctx, id.pid, &em);
	if (err) {
		p_err("%s", errmsg_said(&em) ? em.msg : strerror(-err));
		goto out_abort;
	}
	err = child__start(ch);
	if (err) {
		p_err("cannot run '%s': %s", cmd[0], strerror(-err));
		child__reap(ch, true);
		return 1;
	}
	err = child__wait_stopped(ch, LAUNCH_STOP_WAIT_MS);
	if (err)
		goto out_gone;
	/* Stopped after its exec: its entry point, where the loader hands over. */
	err = procfs__entry("/proc", id.pid, &entry);
	if (!err)
		err = ptab__get(ptab, &id, &p);
	if (!err) {
		pm = ptab__maps(ptab, p);
		err = -ENOENT;
		for (size_t i = 0; i < pm->m.nr; i++) {
			const struct procmap *m = &pm->m.maps[i];
			struct mfile *f;
			char kpath[64];

			if (entry < m->start || entry >= m->end || !m->path)
				continue;
			err = ptab__file(ptab, p, m, &f);
			if (err)
				break;
			err = mfile__kernel_path(f, kpath, sizeof(kpath));
			if (!err)
				err = stops->at_entry(stops->ctx, kpath,
						      entry - m->start + m->offset, (int)id.pid,
						      &em);
			mfile__put(ptab, f);
			break;
		}
		pmaps__put(pm);
	}
	if (err) {
		p_err("'%s': cannot stop it at its entry point: %s", cmd[0],
		      errmsg_said(&em) ? em.msg : strerror(-err));
		goto out_put;
	}
	kill(ch->pid, SIGCONT);
	err = child__wait_stopped(ch, LAUNCH_STOP_WAIT_MS);
	if (err)
		goto out_gone;
	stops->detach(stops->ctx);
	err = ptab__refresh(ptab, p);
	ptab__put(ptab, p);
	p = NULL;
	if (err)
		goto out_gone;
	return 0;

out_gone:
	if (err == -ECHILD) {
		p_err("'%s' exited before its probes could be attached", cmd[0]);
		return 1;
	}
	p_err("'%s' did not stop to have its probes attached: %s", cmd[0], strerror(-err));
out_put:
	if (p)
		ptab__put(ptab, p);
out_abort:
	child__abort(ch);
	return 1;
}
