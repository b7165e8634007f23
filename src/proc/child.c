// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * child.c - the command of "bpfprof -- COMMAND": forked stopped (it blocks on
 * a pipe), so the profiler can attach its per-task event before the first
 * instruction of the command runs; exec errors come back through a second,
 * close-on-exec pipe (EOF means the exec succeeded).
 */
#include "proc/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

int child__spawn(struct child *ch, char **cmd)
{
	int go[2], ep[2];

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ep, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	ch->pid = fork();
	if (ch->pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(ep[0]);
		close(ep[1]);
		return err;
	}
	if (ch->pid == 0) {
		char b;
		int e;

		close(go[1]);
		close(ep[0]);
		signal(SIGPIPE, SIG_DFL);
		/* Wait until the profiler is attached (EOF: it gave up). */
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		execvp(cmd[0], cmd);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	ch->go_fd = go[1];
	ch->err_fd = ep[0];
	return 0;
}

int child__start(struct child *ch)
{
	int e = 0;
	ssize_t n;

	if (write(ch->go_fd, "g", 1) != 1)
		return -errno;
	close(ch->go_fd);
	ch->go_fd = -1;
	n = read(ch->err_fd, &e, sizeof(e));
	close(ch->err_fd);
	ch->err_fd = -1;
	return n == sizeof(e) ? -e : 0;
}

void child__reap(struct child *ch, bool block)
{
	struct rusage ru;
	int status;

	if (!ch->pid || ch->exited)
		return;
	if (wait4(ch->pid, &status, block ? 0 : WNOHANG, &ru) == ch->pid) {
		ch->exited = true;
		ch->status = status;
		ch->cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / US_PER_SEC_F +
			    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / US_PER_SEC_F;
	}
}

int child__wait_stopped(struct child *ch, int timeout_ms)
{
	for (int waited = 0;; waited++) {
		siginfo_t si = { 0 };

		if (!waitid(P_PID, (id_t)ch->pid, &si, WSTOPPED | WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid == ch->pid) {
			if (si.si_code == CLD_STOPPED) {
				waitid(P_PID, (id_t)ch->pid, &si, WSTOPPED | WNOHANG);
				return 0;
			}
			child__reap(ch, true);
			return -ECHILD;
		}
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

void child__abort(struct child *ch)
{
	if (!ch->pid)
		return;
	if (ch->go_fd >= 0)
		close(ch->go_fd); /* not started: it sees EOF and exits 127 without exec */
	else {
		kill(ch->pid, SIGTERM);
		kill(ch->pid, SIGCONT); /* stopped (child__wait_stopped): it must run to end */
	}
	ch->go_fd = -1;
	child__reap(ch, true);
}
