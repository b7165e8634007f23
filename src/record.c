// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record.c - "bpfprof record": checks the machine, starts the collector (and
 * the command, if any), waits, drains, symbolizes, writes. Owns the user-facing
 * messages of a profiling run; the modules it drives only return errors.
 */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collector.h"
#include "htab.h"
#include "log.h"
#include "out/output.h"
#include "profile.h"
#include "sym/procfs.h"
#include "sym/symbolizer.h"
#include "util.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	if (stop_signal) {
		/* Second Ctrl-C: the user wants out now. */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* --- preflight ------------------------------------------------------------ */

static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int check_privileges(void)
{
	if (geteuid() == 0 || has_cap(CAP_SYS_ADMIN))
		return 0;
	if (has_cap(CAP_BPF) && has_cap(CAP_PERFMON))
		return 0;
	p_err("bpfprof needs root (missing %s%s%s)", has_cap(CAP_BPF) ? "" : "CAP_BPF",
	      !has_cap(CAP_BPF) && !has_cap(CAP_PERFMON) ? " and " : "",
	      has_cap(CAP_PERFMON) ? "" : "CAP_PERFMON");
	p_hint("run it with sudo, or grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_SYSLOG");
	return -EPERM;
}

static int check_freq(uint32_t freq)
{
	char *buf;
	uint64_t max;

	if (read_file("/proc/sys/kernel/perf_event_max_sample_rate", 64, &buf, NULL))
		return 0;
	buf[strcspn(buf, "\n")] = '\0';
	if (!parse_u64(buf, 10, &max) && freq > max) {
		free(buf);
		p_err("-F %u is above the kernel's limit of %" PRIu64 " samples per second", freq,
		      max);
		p_hint("use a lower -F, or raise it: sysctl -w kernel.perf_event_max_sample_rate=%u",
		       freq);
		return -EINVAL;
	}
	free(buf);
	return 0;
}

static int check_pids(const struct options *o)
{
	for (size_t i = 0; i < o->nr_pids; i++) {
		struct proc_status st;
		int err = procfs__status("/proc", o->pids[i], &st);

		if (err == -ENOENT || err == -ESRCH) {
			p_err("process %u does not exist", o->pids[i]);
			return -ESRCH;
		}
		if (err) {
			p_err("cannot read /proc/%u/status: %s", o->pids[i], strerror(-err));
			return err;
		}
		if (st.tgid != o->pids[i]) {
			p_err("%u is a thread of process %u, not a process", o->pids[i], st.tgid);
			p_hint("use -p %u (all threads are profiled)", st.tgid);
			return -EINVAL;
		}
	}
	return 0;
}

static bool *parse_cpus(const char *list, int *nr_out)
{
	int nr = sysconf(_SC_NPROCESSORS_CONF);
	char *buf;
	bool *mask;
	int err;

	/* Possible CPUs, not online ones: ids go up to the highest possible. */
	if (!read_file("/sys/devices/system/cpu/possible", 256, &buf, NULL)) {
		const char *last = strrchr(buf, '-') ? strrchr(buf, '-') + 1 : buf;

		nr = atoi(last) + 1;
		free(buf);
	}
	if (nr <= 0)
		nr = 1;
	mask = calloc(nr, sizeof(*mask));
	if (!mask)
		return NULL;
	err = parse_cpulist(list, mask, nr);
	if (err) {
		p_err("invalid CPU list '%s': this machine has CPUs 0-%d", list, nr - 1);
		free(mask);
		return NULL;
	}
	*nr_out = nr;
	return mask;
}

/* --- the command ----------------------------------------------------------- */

struct child {
	pid_t pid;
	int go_fd;   /* write a byte: the child may exec */
	int err_fd;  /* exec errno, or EOF when exec succeeded */
	bool exited;
	int status;
};

static int child_spawn(struct child *ch, char **cmd)
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

/* Lets the child exec; returns 0 or the exec errno (negated). */
static int child_start(struct child *ch)
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

static void child_reap(struct child *ch, bool block)
{
	int status;

	if (!ch->pid || ch->exited)
		return;
	if (waitpid(ch->pid, &status, block ? 0 : WNOHANG) == ch->pid) {
		ch->exited = true;
		ch->status = status;
	}
}

static void child_abort(struct child *ch)
{
	if (!ch->pid)
		return;
	if (ch->go_fd >= 0)
		close(ch->go_fd); /* not started: it sees EOF and exits 127 without exec */
	else
		kill(ch->pid, SIGTERM);
	ch->go_fd = -1;
	child_reap(ch, true);
}

/* --- symbolization ------------------------------------------------------- */

struct record_ctx {
	struct profile *prof;
	struct symbolizer *sym;
	const struct options *o;
	uint64_t notices;
	uint64_t frames; /* symbolized */
};

/*
 * Drain and sweep this often while sampling, so that the symbolizer can
 * forget processes that exited (flat memory with thousands of short-lived
 * processes) and most symbolization is done before sampling ends.
 */
#define SYM_DRAIN_INTERVAL_NS 1000000000ULL

static void on_sym_warn(void *ctx, const char *msg)
{
	(void)ctx;
	p_warn("%s", msg);
}

static void on_proc_notice(void *ctx, const struct bp_proc_event *e)
{
	struct record_ctx *rc = ctx;
	struct proc_id id = { .pid = e->tgid, .start_time = e->start_time, .exec_id = e->exec_id,
			      .mm_sig = e->mm_sig };

	rc->notices++;
	symbolizer__note_process(rc->sym, &id);
}

static int64_t frame_of(struct record_ctx *rc, const struct sym *s)
{
	char buf[512];
	const char *name = sym__display(s, buf, sizeof(buf));

	return profile__frame(rc->prof, s->kind, name, s->module);
}

static int on_sample(void *ctx, const struct collector_sample *s)
{
	struct record_ctx *rc = ctx;
	const struct bp_sample_key *k = s->key;
	struct proc_id id = { .pid = k->tgid, .start_time = k->start_time, .exec_id = k->exec_id };
	uint32_t frames[2 * PROFILE_MAX_DEPTH + 1];
	char comm[PROFILE_COMM_LEN + 1];
	struct psample ps = { 0 };
	uint32_t n = 0;
	struct sym sym;
	int64_t f;

	/* Root first: outermost user frame ... user leaf, then kernel entry ... kernel leaf. */
	for (uint32_t i = s->nr_uips; i-- > 0;) {
		symbolizer__user(rc->sym, &id, s->uips[i], i == 0 && !s->nr_kips, &sym);
		rc->frames++;
		f = frame_of(rc, &sym);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	if ((k->flags & SAMPLE_F_USTACK_ERR) && !rc->o->kernel_only) {
		f = profile__frame(rc->prof, FRAME_USER, "[unknown]", NULL);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	for (uint32_t i = s->nr_kips; i-- > 0;) {
		symbolizer__kernel(rc->sym, s->kips[i], &sym);
		rc->frames++;
		f = frame_of(rc, &sym);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	memcpy(comm, k->comm, PROFILE_COMM_LEN);
	comm[PROFILE_COMM_LEN] = '\0';
	ps.pid = k->tgid;
	ps.tid = k->tid;
	ps.comm = comm;
	return profile__add(rc->prof, &ps, frames, n, s->count);
}

/* --- reporting ------------------------------------------------------------- */

static void print_summary(const struct collector_stats *st, const struct profile *prof,
			  double secs)
{
	static const struct {
		int stat;
		const char *what;
	} lost[] = {
		{ STAT_LOST_STACKS_FULL, "stack map full" },
		{ STAT_LOST_COUNTS_FULL, "count map full" },
		{ STAT_LOST_NO_MAP, "internal map error" },
	};
	uint64_t nlost = 0, samples = st->v[STAT_SAMPLES];
	struct sbuf sb = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(lost); i++)
		nlost += st->v[lost[i].stat];
	sbuf_printf(&sb, "%" PRIu64 " samples in %.1f s, %" PRIu64 " lost", samples, secs, nlost);
	if (nlost) {
		const char *sep = " (";

		for (size_t i = 0; i < ARRAY_SIZE(lost); i++) {
			if (!st->v[lost[i].stat])
				continue;
			sbuf_printf(&sb, "%s%s: %" PRIu64, sep, lost[i].what, st->v[lost[i].stat]);
			sep = ", ";
		}
		sbuf_puts(&sb, ")");
	}
	sbuf_printf(&sb, "; %zu distinct stacks", profile__nr_stacks(prof));
	if (log_level() >= LOG_WARN)
		fprintf(stderr, "bpfprof: %s\n", sb.buf);
	sbuf_free(&sb);
	if (nlost)
		p_hint("raise --max-stacks / --max-entries to keep more distinct stacks");
	if (st->v[STAT_USTACK_ERR])
		p_info("%" PRIu64 " samples had no readable user stack (shown as [unknown])",
		       st->v[STAT_USTACK_ERR]);
	if (st->v[STAT_IDLE])
		p_info("%" PRIu64 " idle samples excluded (--include-idle keeps them)",
		       st->v[STAT_IDLE]);
	if (st->missing_stacks)
		p_warn("%" PRIu64 " counted stacks were missing from the stack map", st->missing_stacks);
	if (samples != st->v[STAT_COUNTED] + nlost)
		p_warn("sample accounting mismatch: %" PRIu64 " samples, %" PRIu64
		       " counted, %" PRIu64 " lost",
		       samples, st->v[STAT_COUNTED], nlost);
}

static void describe_target(const struct options *o, const struct collector_stats *st)
{
	struct sbuf sb = { 0 };

	if (o->cmd)
		sbuf_printf(&sb, "sampling '%s' and its children", o->cmd[0]);
	else if (o->nr_pids == 1)
		sbuf_printf(&sb, "sampling process %u", o->pids[0]);
	else if (o->nr_pids)
		sbuf_printf(&sb, "sampling %zu processes", o->nr_pids);
	else
		sbuf_printf(&sb, "sampling %zu CPU%s", st->nr_events, st->nr_events == 1 ? "" : "s");
	sbuf_printf(&sb, " at %u Hz", o->freq);
	if (o->duration)
		sbuf_printf(&sb, " for %g s", o->duration);
	sbuf_puts(&sb, o->cmd ? "; stops when it exits" : "; Ctrl-C to stop");
	p_info("%s", sb.buf);
	sbuf_free(&sb);
}

/* --- the run ------------------------------------------------------------------ */

static const struct writer *pick_writer(const struct options *o)
{
	const struct writer *w = NULL;

	if (o->format)
		w = output__find(o->format);
	if (!w && o->output)
		w = output__for_path(o->output);
	return w ? w : &writer_folded;
}

int cmd_record(int argc, char **argv)
{
	struct collector_opts copts = { 0 };
	struct collector_error ce = { 0 };
	struct collector_stats st;
	struct symbolizer_opts sopts = { 0 };
	struct record_ctx rc = { 0 };
	struct child ch = { .go_fd = -1, .err_fd = -1 };
	struct collector *col = NULL;
	const struct writer *w;
	struct options o;
	uint64_t t_start, t_stop, deadline = 0, next_drain;
	bool *cpus = NULL;
	int nr_cpus = 0, ret = 1, err;
	char msg[512];

	err = cli__parse(argc, argv, &o, msg, sizeof(msg));
	if (err == CLI_USAGE) {
		p_err("%s", msg);
		p_hint("see 'bpfprof --help'");
		return 2;
	}
	if (o.show_help) {
		cli__usage(stdout);
		return 0;
	}
	if (o.show_version) {
		printf("bpfprof %s\n", BPFPROF_VERSION);
		return 0;
	}
	/* Start and summary lines show by default; -q leaves errors only. */
	log_set_level(o.verbosity < 0 ? LOG_ERROR : o.verbosity == 0 ? LOG_INFO : LOG_DEBUG);
	w = pick_writer(&o);

	/* Preflight: argument problems exit 2, machine problems exit 1. */
	if (check_freq(o.freq) || check_pids(&o)) {
		ret = 2;
		goto out;
	}
	if (o.cpu_list && !(cpus = parse_cpus(o.cpu_list, &nr_cpus))) {
		ret = 2;
		goto out;
	}
	err = output__check_path(o.output);
	if (err) {
		p_err("cannot write %s: %s", o.output, strerror(-err));
		ret = 2;
		goto out;
	}
	if (check_privileges())
		goto out;

	rc.o = &o;
	sopts.warn = on_sym_warn;
	rc.prof = profile__new();
	rc.sym = symbolizer__new(&sopts);
	if (!rc.prof || !rc.sym) {
		p_err("out of memory");
		goto out;
	}
	if (!o.user_only) {
		err = symbolizer__load_kernel(rc.sym);
		if (err)
			p_warn("cannot read /proc/kallsyms (%s): kernel frames will be [unknown]",
			       strerror(-err));
		else if (symbolizer__kernel_restricted(rc.sym)) {
			p_warn("kernel addresses are hidden by kernel.kptr_restrict: kernel frames will be [unknown]");
			p_hint("run as root, or grant CAP_SYSLOG, or sysctl -w kernel.kptr_restrict=0");
		}
	}

	if (o.cmd) {
		err = child_spawn(&ch, o.cmd);
		if (err) {
			p_err("cannot start '%s': %s", o.cmd[0], strerror(-err));
			goto out;
		}
	}

	copts.freq = o.freq;
	copts.cpus = cpus;
	copts.nr_cpus = nr_cpus;
	copts.pids = o.pids;
	copts.nr_pids = o.nr_pids;
	copts.child = ch.pid;
	copts.drop_kernel = o.user_only;
	copts.drop_user = o.kernel_only;
	copts.include_idle = o.include_idle;
	copts.per_thread = o.per_thread;
	copts.max_stacks = o.max_stacks;
	copts.max_counts = o.max_counts;
	copts.libbpf_debug = o.verbosity >= 2;

	col = collector__open(&copts, &ce);
	if (!col || collector__attach(col, &ce)) {
		p_err("%s", ce.msg);
		if (ce.hint[0])
			p_hint("%s", ce.hint);
		goto out;
	}
	install_signals();
	collector__stats(col, &st);
	describe_target(&o, &st);

	t_start = now_ns();
	profile__meta(rc.prof)->start_ns = realtime_ns();
	if (o.duration)
		deadline = t_start + (uint64_t)(o.duration * 1e9);
	if (ch.pid) {
		err = child_start(&ch);
		if (err) {
			p_err("cannot run '%s': %s", o.cmd[0], strerror(-err));
			child_reap(&ch, true);
			goto out;
		}
	}

	next_drain = t_start + SYM_DRAIN_INTERVAL_NS;
	while (!stop_signal) {
		int timeout = 200;
		uint64_t now = now_ns();

		if (now >= next_drain) {
			next_drain = now + SYM_DRAIN_INTERVAL_NS;
			collector__poll(col, 0, on_proc_notice, &rc);
			err = collector__drain(col, on_sample, &rc);
			if (err) {
				p_err("draining the kernel maps failed: %s", strerror(-err));
				goto out;
			}
			symbolizer__sweep(rc.sym);
		}

		if (deadline) {
			if (now >= deadline)
				break;
			timeout = (int)MIN((uint64_t)timeout, (deadline - now) / 1000000 + 1);
		}
		err = collector__poll(col, timeout, on_proc_notice, &rc);
		if (err < 0 && err != -EINTR) {
			p_err("polling the ring buffer failed: %s", strerror(-err));
			break;
		}
		if (ch.pid) {
			child_reap(&ch, false);
			if (ch.exited)
				break;
		}
	}
	t_stop = now_ns();
	if (stop_signal)
		p_info("stopping on %s", strsignal(stop_signal));

	/* Stop sampling, take the last notices, then drain everything. */
	collector__detach(col);
	collector__poll(col, 0, on_proc_notice, &rc);
	err = collector__drain(col, on_sample, &rc);
	if (err) {
		p_err("draining the kernel maps failed: %s", strerror(-err));
		goto out;
	}
	if (ch.pid && !ch.exited) {
		kill(ch.pid, SIGTERM); /* as perf record does with its workload */
		child_reap(&ch, true);
	}

	collector__stats(col, &st);
	{
		struct profile_meta *m = profile__meta(rc.prof);

		m->freq_hz = o.freq;
		m->duration_ns = t_stop - t_start;
		m->lost = st.v[STAT_LOST_STACKS_FULL] + st.v[STAT_LOST_COUNTS_FULL] +
			  st.v[STAT_LOST_NO_MAP];
		gethostname(m->hostname, sizeof(m->hostname) - 1);
		snprintf(m->unwind, sizeof(m->unwind), "fp");
	}
	print_summary(&st, rc.prof, (t_stop - t_start) / 1e9);
	if (profile__total(rc.prof) == 0)
		p_warn("no samples were collected: was the target idle?");
	if (ch.exited && WIFEXITED(ch.status) && WEXITSTATUS(ch.status))
		p_info("'%s' exited with status %d", o.cmd[0], WEXITSTATUS(ch.status));
	else if (ch.exited && WIFSIGNALED(ch.status))
		p_info("'%s' was killed by %s", o.cmd[0], strsignal(WTERMSIG(ch.status)));

	profile__sort(rc.prof);
	err = output__write_path(w, rc.prof, o.output, NULL);
	if (err) {
		p_err("writing %s failed: %s", o.output ? o.output : "to stdout", strerror(-err));
		goto out;
	}
	if (o.output)
		p_info("wrote %s (%s)", o.output, w->name);
	{
		struct symbolizer_stats ss;
		double ms = (now_ns() - t_stop) / 1e6;

		symbolizer__stats(rc.sym, &ss);
		p_debug("end of sampling to written profile: %.1f ms; %" PRIu64
			" frames symbolized, %" PRIu64 " unnamed",
			ms, rc.frames, ss.unknown);
		p_debug("symbols: %zu processes, %zu files (%zu KiB), %" PRIu64
			" debug files, %zu JIT maps (%zu KiB), %" PRIu64 " JIT frames, %" PRIu64
			" files rejected, %" PRIu64 " images lost, %" PRIu64 " kallsyms reloads",
			ss.procs, ss.files, ss.file_bytes >> 10, ss.debug_files, ss.perfmaps,
			ss.perfmap_bytes >> 10, ss.jit_names, ss.rejected, ss.images_lost,
			ss.kernel_reloads);
	}
	ret = 0;
out:
	if (ch.pid && !ch.exited)
		child_abort(&ch);
	collector__free(col);
	symbolizer__free(rc.sym);
	profile__free(rc.prof);
	free(cpus);
	cli__free(&o);
	return ret;
}
