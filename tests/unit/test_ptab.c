// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_ptab.c - the process-and-file layer, attacked the way a profiled
 * process could: a mapped file on a FUSE mount (refused once, for every
 * reader and every process, with the mount type in the warning; a gone
 * process whose notice names it gets nothing and opens nothing), memory
 * reads that would page in such a file, reads out of bounds; and what it
 * promises its readers: a file opened once for all of them, one libelf
 * handle, the build id, a file replaced under the same inode getting a new
 * serial.
 *
 * Tests on the real /proc use this test process itself; the attacks use a
 * fake /proc tree naming this process's pid, whose mount table says the
 * test's files are on FUSE.
 */
#include "testutil.h"

#include <linux/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>

#include "base/util.h"
#include "proc/mountinfo.h"
#include "proc/procfs.h"
#include "proc/ptab.h"
#include "sym/elfsym.h"

struct warnings {
	int n;
	char last[512];
};

static void on_warn(void *ctx, const char *msg)
{
	struct warnings *w = ctx;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
}

static struct pproc *get_self(struct ptab *t)
{
	struct proc_id id = { .pid = (uint32_t)getpid(), .exec_id = PROC_EXEC_ANY };
	struct pproc *p;

	assert_int_equal(ptab__get(t, &id, &p), 0);
	return p;
}

/* The executable mapping of the file whose path ends in `suffix`. */
static const struct procmap *mapping_of(const struct pmaps *pm, const char *suffix)
{
	for (size_t i = 0; i < pm->m.nr; i++) {
		const char *p = pm->m.maps[i].path;

		if (p && strlen(p) >= strlen(suffix) &&
		    !strcmp(p + strlen(p) - strlen(suffix), suffix))
			return &pm->m.maps[i];
	}
	fail_msg("no mapping of *%s", suffix);
	return NULL;
}

/* A child that changes its root (chroot) or mount namespace, then waits; -1 if it cannot. */
static pid_t child_elsewhere(bool new_ns, const char *dir)
{
	int pfd[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(pfd[0]);
		c = (new_ns ? unshare(CLONE_NEWNS) : chroot(dir)) ? 'n' : 'y';
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1 || c != 'y') {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(pfd[0]);
	return pid;
}

/* Whether a process sees the host's root: itself yes; a chroot or another mount namespace no. */
static void test_a_process_in_the_host_root_is_told_apart(void **state)
{
	char dir[] = "/tmp/bpfprof-chroot-XXXXXX";
	struct ptab *t = ptab__new(NULL);
	struct pproc *p = get_self(t);
	bool new_ns[] = { false, true }, in_host;
	int err;

	(void)state;
	assert_true(ptab__in_host_root(t, p));
	ptab__put(t, p);
	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < ARRAY_SIZE(new_ns); i++) {
		pid_t pid = child_elsewhere(new_ns[i], dir);
		struct proc_id id = { .exec_id = PROC_EXEC_ANY };

		if (pid < 0) {
			assert_true(geteuid() != 0); /* only root may chroot or unshare */
			continue;
		}
		id.pid = (uint32_t)pid;
		p = NULL;
		err = ptab__get(t, &id, &p);
		in_host = !err && ptab__in_host_root(t, p);
		ptab__put(t, p);
		/* Before asserting: a child left waiting holds the runner's pipe. */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		assert_int_equal(err, 0);
		assert_false(in_host);
	}
	rmdir(dir);
	ptab__free(t);
}

static bool has_mount_point(const struct mountinfo *mi, const char *point)
{
	for (size_t i = 0; mi && i < mi->nr; i++)
		if (!strcmp(mi->ents[i].point, point))
			return true;
	return false;
}

/*
 * The agent's own mount table is read again only when the kernel says it
 * changed (poll() on /proc/self/mountinfo), not every drain; a new mount is
 * in the table at the next drain. In a private copy of the namespace, so
 * that nothing else on the machine mounts meanwhile (root only; otherwise
 * only the first read is checked).
 */
static void test_own_mount_table_is_read_again_only_when_changed(void **state)
{
	char dir[] = "/tmp/bpfprof-mnt-XXXXXX";
	bool isolated = geteuid() == 0 && !unshare(CLONE_NEWNS) &&
			!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	struct ptab *t = ptab__new(NULL);
	struct ptab_stats st;

	(void)state;
	assert_non_null(t);
	assert_non_null(ptab__host_root(t)->mi);
	ptab__stats(t, &st);
	assert_int_equal(st.mount_reads, 1);
	if (!isolated) {
		ptab__free(t);
		return;
	}
	for (int i = 0; i < 5; i++) {
		ptab__sweep(t);
		assert_non_null(ptab__host_root(t)->mi);
	}
	ptab__stats(t, &st);
	assert_int_equal(st.mount_reads, 1); /* nothing changed: kept over 5 drains */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mount("bpfprof-test", dir, "tmpfs", 0, "size=64k"), 0);
	/* Within a drain the table stays as read; the next drain reads it again. */
	assert_false(has_mount_point(ptab__host_root(t)->mi, dir));
	ptab__sweep(t);
	assert_true(has_mount_point(ptab__host_root(t)->mi, dir));
	ptab__stats(t, &st);
	assert_int_equal(st.mount_reads, 2);
	assert_int_equal(umount(dir), 0);
	ptab__sweep(t);
	assert_false(has_mount_point(ptab__host_root(t)->mi, dir));
	ptab__sweep(t);
	assert_non_null(ptab__host_root(t)->mi);
	ptab__stats(t, &st);
	assert_int_equal(st.mount_reads, 3);
	rmdir(dir);
	ptab__free(t);
}

static void test_a_file_is_opened_once_for_every_reader(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct mfile *a, *b;
	struct ptab_stats st;
	const uint8_t *id;
	struct elfsym *es;
	const struct procmap *m;
	struct pproc *p;
	struct pmaps *pm;
	size_t len, es_len;

	(void)state;
	assert_non_null(t);
	p = get_self(t);
	pm = ptab__maps(t, p);
	m = mapping_of(pm, "/libc.so.6");
	assert_true(m->perms & PROCMAP_X);
	/* The symbolizer, then the unwinder, for the same notice. */
	assert_int_equal(ptab__file(t, p, m, &a), 0);
	assert_int_equal(ptab__file(t, p, m, &b), 0);
	assert_ptr_equal(a, b);
	ptab__stats(t, &st);
	assert_int_equal(st.files_opened, 1);
	/* One libelf handle for both, and the build id from it. */
	assert_non_null(mfile__elf(a));
	assert_ptr_equal(mfile__elf(a), mfile__elf(b));
	len = mfile__build_id(a, &id);
	es = elfsym__open_elf(mfile__elf(a), (uint64_t)mfile__stat(a)->st_size);
	assert_non_null(es);
	assert_int_equal(len, 20); /* Debian builds with --build-id=sha1 */
	assert_memory_equal(elfsym__build_id(es, &es_len), id, len);
	assert_int_equal(es_len, len);
	elfsym__free(es);
	mfile__put(t, a);
	mfile__put(t, b);
	/* After a drain it is closed; a reader that only needs its serial opens nothing. */
	ptab__sweep(t);
	assert_int_equal(ptab__file(t, p, m, &a), 0);
	ptab__stats(t, &st);
	assert_int_equal(st.files_opened, 1);
	assert_int_equal(st.open_files, 0);
	/* One that reads it gets it opened again, checked again. */
	assert_true(mfile__fd(a) >= 0);
	ptab__stats(t, &st);
	assert_int_equal(st.files_opened, 2);
	mfile__put(t, a);
	pmaps__put(pm);
	ptab__put(t, p);
	ptab__free(t);
}

static void test_read_mem_is_bounded(void **state)
{
	static char big[PTAB_MEM_MAX + 1];
	struct ptab *t = ptab__new(NULL);
	char secret[] = "what the walker reads", got[sizeof(secret)];
	struct pproc *p;

	(void)state;
	p = get_self(t);
	assert_int_equal(ptab__read_mem(t, p, (uintptr_t)secret, got, sizeof(got)),
			 (ssize_t)sizeof(got));
	assert_string_equal(got, secret);
	assert_int_equal(ptab__read_mem(t, p, (uintptr_t)big, big, sizeof(big)), -E2BIG);
	assert_int_equal(ptab__read_mem(t, p, 0, got, sizeof(got)), -EFAULT);
	assert_int_equal(ptab__read_mem(t, p, UINT64_MAX - 3, got, sizeof(got)), -EFAULT);
	ptab__put(t, p);
	ptab__free(t);
}

/* Failing pieces: each costs a call, so after PTAB_MEMV_FAILS the rest is not read. */
static void test_read_memv_fails_bounded(void **state)
{
	enum { N = PTAB_MEMV_FAILS + 2 };
	struct ptab *t = ptab__new(NULL);
	static uint64_t addrs[N];
	static char bufs[N][8];
	static bool ok[N];
	char word[8] = "readable";
	struct pproc *p;

	(void)state;
	p = get_self(t);
	addrs[0] = (uintptr_t)word; /* read */
	for (size_t i = 1; i < N - 1; i++)
		addrs[i] = 8;		/* unmapped: PTAB_MEMV_FAILS of them */
	addrs[N - 1] = (uintptr_t)word; /* past the bound: not read */
	assert_int_equal(ptab__read_memv(t, p, addrs, N, 8, bufs, ok), 1);
	assert_true(ok[0]);
	assert_memory_equal(bufs[0], word, 8);
	for (size_t i = 1; i < N; i++)
		assert_false(ok[i]);
	/* fewer failures: the rest read */
	addrs[N - 2] = (uintptr_t)word;
	assert_int_equal(ptab__read_memv(t, p, addrs, N, 8, bufs, ok), 3);
	assert_true(ok[N - 1]);
	ptab__put(t, p);
	ptab__free(t);
}

/* The bound's unread pieces are said (stop), and a read from where the last one stopped
 * reads them (review9 L3: they were always the same ones, the last), wrapping around. */
static void test_read_memv_from_rotates(void **state)
{
	enum { N = PTAB_MEMV_FAILS + 4 };
	struct ptab *t = ptab__new(NULL);
	static uint64_t addrs[N];
	static char bufs[N][8];
	static bool ok[N];
	char word[8] = "readable";
	struct pproc *p;
	size_t stop = 7;

	(void)state;
	p = get_self(t);
	for (size_t i = 0; i < N; i++) /* PTAB_MEMV_FAILS unmapped, then 4 readable */
		addrs[i] = i < PTAB_MEMV_FAILS ? 8 : (uintptr_t)word;
	assert_int_equal(ptab__read_memv_from(t, p, addrs, N, 8, bufs, ok, 0, &stop), 0);
	assert_int_equal(stop, PTAB_MEMV_FAILS); /* the 4 readable ones not tried */
	for (size_t i = 0; i < N; i++)
		assert_false(ok[i]);
	/* from there: the 4 read, then the failures (wrapped to 0) to the end */
	assert_int_equal(ptab__read_memv_from(t, p, addrs, N, 8, bufs, ok, stop, &stop), 4);
	assert_int_equal(stop, N);
	for (size_t i = 0; i < N; i++)
		assert_true(ok[i] == (i >= PTAB_MEMV_FAILS));
	assert_memory_equal(bufs[N - 1], word, 8);
	/* from N - 2: 2 read, the failures from 0, the bound before N - 4 and N - 3 */
	assert_int_equal(ptab__read_memv_from(t, p, addrs, N, 8, bufs, ok, N - 2, &stop), 2);
	assert_int_equal(stop, 2 + PTAB_MEMV_FAILS);
	assert_true(ok[N - 2] && ok[N - 1]);
	assert_false(ok[N - 4] || ok[N - 3]);
	/* first past n: from 0; the plain call is from 0 */
	assert_int_equal(ptab__read_memv_from(t, p, addrs, N, 8, bufs, ok, N + 5, &stop), 0);
	assert_int_equal(stop, PTAB_MEMV_FAILS);
	ptab__put(t, p);
	ptab__free(t);
}

/* --- liveness: pidfds answer for processes asked about before ---------------------- */

/* A child that waits to be killed, and its id (start time in ns, as samples have it). */
static struct proc_id spawn_idle(void)
{
	struct proc_id id = { .exec_id = PROC_EXEC_ANY };
	uint64_t ticks;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		pause();
		_exit(0);
	}
	assert_int_equal(procfs__starttime("/proc", (uint32_t)pid, &ticks), 0);
	id.pid = (uint32_t)pid;
	id.start_time = ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	assert_int_equal(procfs__ns_to_ticks(id.start_time), ticks);
	return id;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static struct ptab_stats stats_of(struct ptab *t)
{
	struct ptab_stats st;

	ptab__stats(t, &st);
	return st;
}

static void test_a_running_process_is_answered_by_its_pidfd(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct proc_id id = spawn_idle(), other;
	siginfo_t si = { 0 };
	uint64_t stat0;

	(void)state;
	assert_true(ptab__alive(t, &id));
	assert_int_equal(stats_of(t).pidfds, 1);
	stat0 = stats_of(t).alive_stat;
	for (int i = 0; i < 5; i++)
		assert_true(ptab__alive(t, &id));
	assert_int_equal(stats_of(t).alive_pidfd, 5);
	assert_int_equal(stats_of(t).alive_stat, stat0); /* no /proc read for those */

	/* The same pid with another start time is another process: never alive. */
	other = id;
	other.start_time += 1000000000ull;
	assert_false(ptab__alive(t, &other));

	/* Exited, not reaped yet: /proc still shows it, as before pidfds. */
	kill((pid_t)id.pid, SIGKILL);
	assert_int_equal(waitid(P_PID, (id_t)id.pid, &si, WEXITED | WNOWAIT), 0);
	usleep(2000); /* exits are collected at most every millisecond */
	assert_true(ptab__alive(t, &id));
	assert_int_equal(stats_of(t).alive_pidfd, 5); /* its pidfd was readable */
	waitpid((pid_t)id.pid, NULL, 0);
	assert_false(ptab__alive(t, &id));
	assert_int_equal(stats_of(t).pidfds, 0);
	ptab__free(t);
}

/*
 * A sweep over many live processes collects exits once, not once per
 * process; an exit among them is seen at the next collection, and only
 * that process is answered from /proc.
 */
static void test_exits_are_collected_once_for_all_pidfds(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct proc_id ids[6];
	struct ptab_stats st;
	uint64_t h0, stat0, t0, ms;

	(void)state;
	for (int i = 0; i < 6; i++) {
		ids[i] = spawn_idle();
		assert_true(ptab__alive(t, &ids[i])); /* takes its pidfd */
	}
	usleep(2000);
	h0 = stats_of(t).alive_harvests;
	stat0 = stats_of(t).alive_stat;
	t0 = now_ns();
	for (int round = 0; round < 10; round++)
		for (int i = 0; i < 6; i++)
			assert_true(ptab__alive(t, &ids[i]));
	ms = (now_ns() - t0) / 1000000;
	st = stats_of(t);
	assert_true(st.alive_pidfd >= 60);
	/* 60 answers: one collection, one more per millisecond they took (a
	 * preempted test) - not 60. */
	assert_in_range(st.alive_harvests - h0, 1, 1 + ms);
	assert_int_equal(st.alive_stat, stat0);

	kill((pid_t)ids[3].pid, SIGKILL);
	waitpid((pid_t)ids[3].pid, NULL, 0);
	usleep(2000);
	for (int i = 0; i < 6; i++)
		assert_int_equal(ptab__alive(t, &ids[i]), i != 3);
	st = stats_of(t);
	assert_int_equal(st.alive_stat, stat0 + 1); /* only the exited one asked /proc */
	assert_int_equal(st.pidfds, 5);
	for (int i = 0; i < 6; i++) {
		if (i == 3)
			continue;
		kill((pid_t)ids[i].pid, SIGKILL);
		waitpid((pid_t)ids[i].pid, NULL, 0);
	}
	usleep(2000);
	for (int i = 0; i < 6; i++)
		assert_false(ptab__alive(t, &ids[i]));
	assert_int_equal(stats_of(t).pidfds, 0);
	ptab__free(t);
}

/*
 * An exited process is asked about a few more times by the sweeps: /proc is
 * read once, then the exit is remembered (an id never runs again) - with
 * pidfds and without.
 */
static void test_an_exit_is_remembered(void **state)
{
	struct ptab_opts o = { .max_pidfds = -1 };

	(void)state;
	for (int with_pidfds = 0; with_pidfds < 2; with_pidfds++) {
		struct ptab *t = ptab__new(with_pidfds ? NULL : &o);
		struct proc_id id = spawn_idle(), other;
		uint64_t stat0;

		assert_true(ptab__alive(t, &id));
		kill((pid_t)id.pid, SIGKILL);
		waitpid((pid_t)id.pid, NULL, 0);
		usleep(2000);
		assert_false(ptab__alive(t, &id));
		stat0 = stats_of(t).alive_stat;
		for (int i = 0; i < 5; i++)
			assert_false(ptab__alive(t, &id));
		assert_int_equal(stats_of(t).alive_stat, stat0);
		assert_int_equal(stats_of(t).alive_dead, 5);
		/* Another start time under the pid is another id: asked of /proc. */
		other = id;
		other.start_time += 1000000000ull;
		assert_false(ptab__alive(t, &other));
		assert_int_equal(stats_of(t).alive_stat, stat0 + 1);
		/* Forgotten after some sweeps (then asked of /proc again, still gone). */
		for (int i = 0; i < 12; i++)
			ptab__sweep(t);
		assert_false(ptab__alive(t, &id));
		assert_int_equal(stats_of(t).alive_stat, stat0 + 2);
		ptab__free(t);
	}
}

/*
 * A notice of a process that is gone by then (most short processes' are):
 * its pid is not there, so nothing is opened or read - and it is remembered
 * as exited. Without pidfds, /proc says the same through a failed open.
 */
static void test_a_process_gone_before_its_notice_costs_no_read(void **state)
{
	struct ptab_opts o = { .max_pidfds = -1 };

	(void)state;
	for (int with_pidfds = 0; with_pidfds < 2; with_pidfds++) {
		struct ptab *t = ptab__new(with_pidfds ? NULL : &o);
		struct proc_id id = spawn_idle();
		struct pproc *p;

		kill((pid_t)id.pid, SIGKILL);
		waitpid((pid_t)id.pid, NULL, 0);
		id.exec_id = 7;
		id.mm_sig = 0x1234; /* a BPF notice's */
		assert_int_equal(ptab__get(t, &id, &p), -ESRCH);
		assert_null(p);
		assert_int_equal(stats_of(t).maps_reads, with_pidfds ? 0 : 1);
		assert_false(ptab__alive(t, &id));
		assert_int_equal(stats_of(t).alive_dead, 1);
		assert_int_equal(stats_of(t).images_lost, 1);
		ptab__free(t);
	}
}

/* A gone process's id, as its notice names it. */
static struct proc_id gone_process(void)
{
	struct proc_id id = spawn_idle();

	kill((pid_t)id.pid, SIGKILL);
	waitpid((pid_t)id.pid, NULL, 0);
	id.exec_id = 7;
	id.mm_sig = 0x1234;
	return id;
}

/*
 * A process gone before it could be read is made from the mappings its
 * notice carried: a file the table has keeps its path and is the same
 * mfile, nothing opened; an unknown file and anonymous code are left out;
 * the vDSO is kept. ptab__get() of it is -ESRCH (nothing to read), and a
 * notice with nothing known gives -ESRCH.
 */
static void test_a_gone_process_is_made_from_its_notice(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct proc_id id = gone_process(), none = gone_process();
	struct pproc *self = get_self(t), *p, *again;
	struct pmaps *pm = ptab__maps(t, self), *gm;
	const struct procmap *libc = mapping_of(pm, "/libc.so.6");
	struct procmap km_maps[4], *lm;
	struct procmaps km = { .maps = km_maps, .nr = 4 };
	struct mfile *f, *g;
	uint64_t opened;

	(void)state;
	assert_int_equal(ptab__file(t, self, libc, &f), 0);
	opened = stats_of(t).files_opened;
	/* Not in address order: the snapshot is sorted. */
	km_maps[0] = (struct procmap){ .start = 0x7f0000010000,
				       .end = 0x7f0000020000,
				       .offset = libc->offset,
				       .inode = libc->inode,
				       .dev_major = libc->dev_major,
				       .dev_minor = libc->dev_minor };
	km_maps[1] = (struct procmap){ .start = 0x400000,
				       .end = 0x401000,
				       .inode = 999999999,
				       .dev_major = libc->dev_major,
				       .dev_minor = libc->dev_minor };
	km_maps[2] = (struct procmap){ .start = 0x7ffff000ull,
				       .end = 0x7ffff000ull + 8192,
				       .path = (char *)"[vdso]" };
	km_maps[3] = (struct procmap){ .start = 0x500000, .end = 0x600000 }; /* anonymous */
	assert_int_equal(ptab__get_mapped(t, &id, &km, &p), 0);
	assert_true(pproc__mapped(p));
	assert_false(pproc__mapped(self));
	gm = ptab__maps(t, p);
	assert_int_equal(gm->m.nr, 2);
	assert_string_equal(gm->m.maps[0].path, "[vdso]");
	lm = &gm->m.maps[1];
	assert_int_equal(lm->start, 0x7f0000010000);
	assert_string_equal(lm->path, mfile__path(f));
	assert_true(lm->perms & PROCMAP_X);
	assert_int_equal(ptab__file(t, p, lm, &g), 0);
	assert_ptr_equal(g, f);
	assert_int_equal(stats_of(t).files_opened, opened);
	assert_int_equal(stats_of(t).images_mapped, 1);
	/* Asked again: the same entry; a reader that wants it read gets no. */
	assert_int_equal(ptab__get_mapped(t, &id, &km, &again), 0);
	assert_ptr_equal(again, p);
	ptab__put(t, again);
	assert_int_equal(ptab__get(t, &id, &again), -ESRCH);
	/* Nothing it mapped is known: nothing to make. */
	km.maps = &km_maps[1];
	km.nr = 1;
	assert_int_equal(ptab__get_mapped(t, &none, &km, &again), -ESRCH);
	mfile__put(t, g);
	mfile__put(t, f);
	pmaps__put(gm);
	pmaps__put(pm);
	ptab__put(t, p);
	ptab__put(t, self);
	ptab__free(t);
}

/*
 * overlayfs: the kernel's mapping has the layer's device, /proc/PID/maps
 * the overlay's. A process read both ways teaches the table the pair (the
 * same start, end and offset); a mapping that is not the same teaches
 * nothing. A gone process's notice then finds the file by the alias.
 */
static void test_notice_devices_are_learned_from_a_process_read_both_ways(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct proc_id id = gone_process();
	struct pproc *self = get_self(t), *p;
	struct pmaps *pm = ptab__maps(t, self), *gm;
	const struct procmap *libc = mapping_of(pm, "/libc.so.6");
	struct procmap km_maps[2], gone_maps[1];
	struct procmaps km = { .maps = km_maps, .nr = 2 }, gk = { .maps = gone_maps, .nr = 1 };
	struct mfile *f;

	(void)state;
	assert_int_equal(ptab__file(t, self, libc, &f), 0);
	km_maps[0] = *libc;
	km_maps[0].path = NULL;
	km_maps[0].dev_major = 0xfe;
	km_maps[0].dev_minor = 3;
	km_maps[1] = km_maps[0];
	km_maps[1].dev_minor = 4;
	km_maps[1].offset += 4096; /* not the same mapping */
	gone_maps[0] = km_maps[1];
	gone_maps[0].offset = libc->offset;
	gone_maps[0].start = 0x7f0000000000;
	gone_maps[0].end = 0x7f0000100000;
	/* Before: the layer's device names no known file. */
	assert_int_equal(ptab__get_mapped(t, &id, &gk, &p), -ESRCH);
	ptab__learn_mapped(t, self, &km);
	assert_int_equal(ptab__get_mapped(t, &id, &gk, &p), -ESRCH); /* minor 4 was not learned */
	gone_maps[0].dev_minor = 3;
	assert_int_equal(ptab__get_mapped(t, &id, &gk, &p), 0);
	gm = ptab__maps(t, p);
	assert_int_equal(gm->m.nr, 1);
	assert_string_equal(gm->m.maps[0].path, mfile__path(f));
	/* Shown as /proc would: the overlay's device. */
	assert_int_equal(gm->m.maps[0].dev_major, libc->dev_major);
	assert_int_equal(gm->m.maps[0].dev_minor, libc->dev_minor);
	mfile__put(t, f);
	pmaps__put(gm);
	pmaps__put(pm);
	ptab__put(t, p);
	ptab__put(t, self);
	ptab__free(t);
}

/*
 * The mappings memory reads must avoid are looked up at the first read of a
 * queried process; if that fails (here: the process is gone), later reads
 * fail the same way without trying again, until the maps are read anew.
 */
static void test_a_failed_lookup_of_blocked_mappings_is_remembered(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct proc_id id = spawn_idle();
	struct pproc *p;
	char got[8];

	(void)state;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	if (stats_of(t).maps_queried != 1)
		fail_msg("PROCMAP_QUERY did not answer (Linux 6.11+ is needed for this test)");
	kill((pid_t)id.pid, SIGKILL);
	waitpid((pid_t)id.pid, NULL, 0);
	assert_int_equal(ptab__read_mem(t, p, 0x400000, got, sizeof(got)), -ESRCH);
	assert_int_equal(stats_of(t).maps_reads, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ptab__read_mem(t, p, 0x400000, got, sizeof(got)), -ESRCH);
	assert_int_equal(stats_of(t).maps_reads, 2);
	ptab__put(t, p);
	ptab__free(t);
}

/* A zombie's /proc/PID/maps is empty: a re-read then must keep the maps its samples need. */
static void test_a_zombie_keeps_its_maps(void **state)
{
	struct ptab *t = ptab__new(NULL);
	struct proc_id id = spawn_idle();
	siginfo_t si = { 0 };
	struct pproc *p;
	struct pmaps *m;
	size_t nr;

	(void)state;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	m = ptab__maps(t, p);
	nr = m->m.nr;
	pmaps__put(m);
	assert_true(nr > 0);
	kill((pid_t)id.pid, SIGKILL);
	assert_int_equal(waitid(P_PID, (id_t)id.pid, &si, WEXITED | WNOWAIT), 0);
	usleep(30 * 1000); /* past the window in which two readers share one read */
	assert_int_equal(ptab__refresh(t, p), -ESRCH);
	m = ptab__maps(t, p);
	assert_int_equal(m->m.nr, nr);
	pmaps__put(m);
	ptab__put(t, p);
	waitpid((pid_t)id.pid, NULL, 0);
	ptab__free(t);
}

/* A process that forks many children cannot make the agent hold a descriptor each. */
static void test_pidfds_are_bounded(void **state)
{
	struct ptab_opts o = { .max_pidfds = 3 };
	struct ptab *t = ptab__new(&o);
	struct proc_id ids[8];
	int fds0;

	(void)state;
	for (int i = 0; i < 8; i++)
		ids[i] = spawn_idle();
	fds0 = open_fds();
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 8; i++)
			assert_true(ptab__alive(t, &ids[i]));
	assert_int_equal(stats_of(t).pidfds, 3);
	assert_int_equal(open_fds(), fds0 + 3);
	assert_int_equal(stats_of(t).alive_pidfd, 2 * 3); /* the three holding one, after round 0 */
	for (int i = 0; i < 8; i++) {
		kill((pid_t)ids[i].pid, SIGKILL);
		waitpid((pid_t)ids[i].pid, NULL, 0);
	}
	usleep(2000); /* exits are collected at most every millisecond */
	for (int i = 0; i < 8; i++)
		assert_false(ptab__alive(t, &ids[i]));
	assert_int_equal(stats_of(t).pidfds, 0);
	assert_int_equal(open_fds(), fds0);
	ptab__free(t);

	/* -1: none at all. */
	o.max_pidfds = -1;
	t = ptab__new(&o);
	ids[0] = spawn_idle();
	assert_true(ptab__alive(t, &ids[0]));
	assert_true(ptab__alive(t, &ids[0]));
	assert_int_equal(stats_of(t).pidfds, 0);
	assert_int_equal(stats_of(t).alive_pidfd, 0);
	kill((pid_t)ids[0].pid, SIGKILL);
	waitpid((pid_t)ids[0].pid, NULL, 0);
	ptab__free(t);
}

/* --- a fake /proc whose mount table puts the test's files on FUSE ------------------ */

static char root[64], file[128], other[128];
static uint64_t file_mnt_id;

static void write_at(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Process pid of the fake tree maps `path` at 0x400000 (r-x) and `extra` maps lines. */
static void fake_process(unsigned pid, const char *path, const char *extra)
{
	char rel[160], text[2048], link[256];
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	snprintf(rel, sizeof(rel), "%s/%u/map_files", root, pid);
	snprintf(text, sizeof(text), "mkdir -p %s", rel);
	assert_int_equal(system(text), 0);
	snprintf(text, sizeof(text), "%u (victim) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n",
		 pid);
	snprintf(rel, sizeof(rel), "%u/stat", pid);
	write_at(rel, text);
	snprintf(text, sizeof(text), "400000-401000 r-xp 00000000 %02x:%02x %lu %s\n%s",
		 major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, path, extra);
	snprintf(rel, sizeof(rel), "%u/maps", pid);
	write_at(rel, text);
	/* The mount the files are really on, said to be FUSE. */
	snprintf(text, sizeof(text), "%llu 1 %u:%u / / rw - fuse.evil evil rw\n",
		 (unsigned long long)file_mnt_id, major(st.st_dev), minor(st.st_dev));
	snprintf(rel, sizeof(rel), "%u/mountinfo", pid);
	write_at(rel, text);
	snprintf(link, sizeof(link), "%s/%u/map_files/400000-401000", root, pid);
	assert_int_equal(symlink(path, link), 0);
	snprintf(link, sizeof(link), "%s/%u/root", root, pid);
	assert_int_equal(symlink("/", link), 0);
}

static int setup_fake(void **state)
{
	struct statx sx;
	char cmd[16384];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/bpfprof-ptab-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(file, sizeof(file), "%s/app", root);
	snprintf(other, sizeof(other), "%s/other", root);
	snprintf(cmd, sizeof(cmd), "cp '%s' %s && cp '%s' %s", fixture_path("pie"), file,
		 fixture_path("pie"), other);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(statx(AT_FDCWD, file, 0, STATX_MNT_ID, &sx), 0);
	assert_true(sx.stx_mask & STATX_MNT_ID);
	file_mnt_id = sx.stx_mnt_id;
	return 0;
}

static int teardown_fake(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_a_file_on_fuse_is_refused_once(void **state)
{
	struct warnings w = { 0 };
	struct ptab_opts o = { .proc_root = root, .warn = on_warn, .warn_ctx = &w };
	struct ptab *t;
	struct proc_id a = { .pid = 100 }, b = { .pid = 101 };
	struct pproc *pa, *pb;
	struct pmaps *ma, *mb;
	struct ptab_stats st;
	struct mfile *f;

	(void)state;
	fake_process(100, file, "");
	fake_process(101, file, "");
	t = ptab__new(&o);
	assert_non_null(t);
	assert_int_equal(ptab__get(t, &a, &pa), 0);
	assert_int_equal(ptab__get(t, &b, &pb), 0);
	ma = ptab__maps(t, pa);
	mb = ptab__maps(t, pb);
	assert_int_equal(ma->m.nr, 1);
	/* The symbolizer asks, the unwinder asks, another process maps it too. */
	assert_int_equal(ptab__file(t, pa, &ma->m.maps[0], &f), -EREMOTE);
	assert_null(f);
	assert_int_equal(ptab__file(t, pa, &ma->m.maps[0], &f), -EREMOTE);
	assert_int_equal(ptab__file(t, pb, &mb->m.maps[0], &f), -EREMOTE);
	assert_int_equal(w.n, 1);
	if (!strstr(w.last, "FUSE file system (fuse.evil)") || !strstr(w.last, "/app") ||
	    !strstr(w.last, "process 100"))
		fail_msg("warning: %s", w.last);
	ptab__stats(t, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.files_opened, 0);
	/* A process gone before its notice, whose notice names the refused file:
	 * nothing to make, nothing opened, no second warning. */
	{
		struct proc_id gone = { .pid = 102, .start_time = 1, .exec_id = 1 };
		struct procmaps km = { .maps = (struct procmap *)&ma->m.maps[0], .nr = 1 };
		struct pproc *pg;

		assert_int_equal(ptab__get_mapped(t, &gone, &km, &pg), -ESRCH);
		assert_int_equal(w.n, 1);
		assert_int_equal(stats_of(t).files_opened, 0);
	}
	pmaps__put(ma);
	pmaps__put(mb);
	ptab__put(t, pa);
	ptab__put(t, pb);
	ptab__free(t);
}

/* Leaves junk where the next calls' locals will be: an unset one is not NULL by luck. */
static void __attribute__((noinline)) dirty_stack(void)
{
	volatile unsigned char junk[16384];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0x5a;
}

/* Allows exactly one more descriptor; returns the limit to restore. */
static struct rlimit one_descriptor_left(void)
{
	struct rlimit old, rl;
	int lowest = dup(0);

	assert_true(lowest >= 0);
	close(lowest);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = (rlim_t)lowest + 1;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	return old;
}

/*
 * The agent out of descriptors (the HTTP endpoint's clients took them) with
 * one left: the mapped file's magic link opens, the mount tables to check
 * it against cannot be read. Not opened, not refused, no warning (a
 * crash once: the file was checked against a table never set); opened
 * once descriptors return.
 */
static void test_out_of_descriptors_a_file_is_neither_opened_nor_refused(void **state)
{
	struct warnings w = { 0 };
	struct ptab_opts o = { .proc_root = root, .warn = on_warn, .warn_ctx = &w };
	struct proc_id id = { .pid = 103 };
	struct stat st;
	struct rlimit old;
	struct ptab *t;
	struct pproc *p;
	struct pmaps *pm;
	struct mfile *f;
	char text[256];
	int err;

	(void)state;
	fake_process(103, file, "");
	/* Its files on an ordinary mount this time. */
	assert_int_equal(stat(file, &st), 0);
	snprintf(text, sizeof(text), "%llu 1 %u:%u / / rw - ext4 /dev/vdz rw\n",
		 (unsigned long long)file_mnt_id, major(st.st_dev), minor(st.st_dev));
	write_at("103/mountinfo", text);
	t = ptab__new(&o);
	assert_non_null(t);
	assert_int_equal(ptab__get(t, &id, &p), 0);
	pm = ptab__maps(t, p);
	assert_non_null(pm);
	assert_int_equal(pm->m.nr, 1);
	old = one_descriptor_left();
	dirty_stack();
	err = ptab__file(t, p, &pm->m.maps[0], &f);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(err, -EMFILE);
	assert_null(f);
	assert_int_equal(stats_of(t).refused, 0);
	assert_int_equal(w.n, 0);
	/* Descriptors back: the same file opens, checked as ever. */
	assert_int_equal(ptab__file(t, p, &pm->m.maps[0], &f), 0);
	assert_non_null(f);
	assert_true(mfile__fd(f) >= 0);
	assert_int_equal(stats_of(t).files_opened, 1);
	mfile__put(t, f);
	pmaps__put(pm);
	ptab__put(t, p);
	ptab__free(t);
}

static void test_memory_backed_by_a_fuse_file_is_not_read(void **state)
{
	static char buf[8192] __attribute__((aligned(4096)));
	struct proc_id id = { .pid = (uint32_t)getpid() };
	struct ptab_opts o = { .proc_root = root };
	char extra[256], got[16];
	struct ptab *t;
	struct pproc *p;
	struct stat st;
	uintptr_t a = (uintptr_t)buf;

	(void)state;
	memcpy(buf, "mapped from fuse", 16);
	memcpy(buf + 4096, "anonymous memory", 16);
	/* This process, as the fake tree tells it: buf's first page maps a FUSE file. */
	assert_int_equal(stat(other, &st), 0);
	snprintf(extra, sizeof(extra), "%lx-%lx rw-p 00000000 %02x:%02x %lu %s\n", (unsigned long)a,
		 (unsigned long)a + 4096, major(st.st_dev), minor(st.st_dev),
		 (unsigned long)st.st_ino, other);
	fake_process((unsigned)getpid(), file, extra);
	t = ptab__new(&o);
	assert_int_equal(ptab__get(t, &id, &p), 0);
	assert_int_equal(ptab__read_mem(t, p, a, got, sizeof(got)), -EREMOTE);
	assert_int_equal(ptab__read_mem(t, p, a + 4090, got, sizeof(got)), -EREMOTE);
	assert_int_equal(ptab__read_mem(t, p, a + 4096, got, sizeof(got)), (ssize_t)sizeof(got));
	assert_memory_equal(got, "anonymous memory", 16);
	ptab__put(t, p);
	ptab__free(t);
}

/*
 * Where no mount of the process's table may block, memory reads need no look
 * at its mappings (none can be on such a mount): the maps are read once, for
 * the process (PROCMAP_QUERY: its code mappings), and its memory is read.
 * With such a mount (a FUSE one left on this machine) they are looked at.
 */
static void test_memory_reads_read_no_maps_where_no_mount_may_block(void **state)
{
	static const char data[16] = "a static buffer";
	struct proc_id id = { .pid = (uint32_t)getpid(), .exec_id = PROC_EXEC_ANY };
	struct mountinfo mine = { 0 };
	struct ptab_stats st;
	struct ptab *t = ptab__new(NULL);
	struct pproc *p;
	char got[16];
	bool any;

	(void)state;
	assert_int_equal(mountinfo__read("/proc/self/mountinfo", &mine), 0);
	any = mine.any_block;
	mountinfo__free(&mine);
	assert_int_equal(ptab__get(t, &id, &p), 0);
	if (stats_of(t).maps_queried != 1)
		fail_msg("PROCMAP_QUERY did not answer (Linux 6.11+ is needed for this test)");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ptab__read_mem(t, p, (uintptr_t)data, got, sizeof(got)),
				 (ssize_t)sizeof(got));
		assert_memory_equal(got, data, sizeof(got));
	}
	ptab__stats(t, &st);
	assert_int_equal(st.maps_reads, any ? 2 : 1);
	assert_int_equal(st.blocked_skipped, any ? 0 : 1);
	ptab__put(t, p);
	ptab__free(t);
}

/* The bindfs mount of the next test, taken down by its teardown even when it fails. */
static struct {
	char dir[32], src[64], mnt[64];
	pid_t daemon;
} bfs;

static int teardown_bindfs(void **state)
{
	char cmd[160];

	(void)state;
	if (bfs.daemon > 0) {
		snprintf(cmd, sizeof(cmd), "umount -l %s 2>/dev/null", bfs.mnt);
		if (system(cmd)) { /* not mounted: the daemon is stopped below */
		}
		kill(bfs.daemon, SIGKILL);
		waitpid(bfs.daemon, NULL, 0);
		bfs.daemon = 0;
	}
	if (bfs.dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", bfs.dir);
		assert_int_equal(system(cmd), 0);
		bfs.dir[0] = '\0';
	}
	return 0;
}

/*
 * The same on the real /proc, with a real FUSE mount (bindfs): the maps are
 * queried (PROCMAP_QUERY reads only the code mappings), so the blocked ones
 * are found at the first memory read; with the text read, at once. Either
 * way memory backed by the FUSE file is not read, anonymous memory is.
 */
static void test_memory_of_a_live_fuse_mapping_is_not_read(void **state)
{
	static char anon[4096] __attribute__((aligned(4096)));
	struct proc_id id = { .pid = (uint32_t)getpid(), .exec_id = PROC_EXEC_ANY };
	char got[16], path[96];
	void *fuse;
	int fd;

	(void)state;
	if (geteuid() != 0)
		return; /* mounting needs root (CI runs as root) */
	snprintf(bfs.dir, sizeof(bfs.dir), "/tmp/bpfprof-fuse-XXXXXX");
	assert_non_null(mkdtemp(bfs.dir));
	snprintf(bfs.src, sizeof(bfs.src), "%s/src", bfs.dir);
	snprintf(bfs.mnt, sizeof(bfs.mnt), "%s/mnt", bfs.dir);
	assert_int_equal(mkdir(bfs.src, 0755), 0);
	assert_int_equal(mkdir(bfs.mnt, 0755), 0);
	snprintf(path, sizeof(path), "%s/data", bfs.src);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "mapped from fuse", 16), 16);
	assert_int_equal(ftruncate(fd, 4096), 0);
	close(fd);
	bfs.daemon = fork();
	assert_true(bfs.daemon >= 0);
	if (!bfs.daemon) {
		/* Not holding the test's output open: a runner waits for its end. */
		int null = open("/dev/null", O_RDWR);

		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execlp("bindfs", "bindfs", "-f", bfs.src, bfs.mnt, (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/data", bfs.mnt);
	for (int i = 0; i < 200 && access(path, F_OK); i++)
		usleep(50 * 1000);
	if (access(path, F_OK))
		fail_msg("bindfs did not mount %s (is it installed? tools/install-deps.sh)",
			 bfs.mnt);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	fuse = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(fuse != MAP_FAILED);
	close(fd);
	assert_memory_equal(fuse, "mapped from fuse",
			    16); /* paged in: a read would not block now */
	memcpy(anon, "anonymous memory", 16);
	for (int text = 0; text < 2; text++) {
		struct ptab_opts o = { .maps_text = text };
		struct ptab *t = ptab__new(&o);
		struct ptab_stats st;
		struct pproc *p;

		assert_int_equal(ptab__get(t, &id, &p), 0);
		ptab__stats(t, &st);
		assert_int_equal(st.maps_queried, text ? 0 : 1);
		assert_int_equal(ptab__read_mem(t, p, (uintptr_t)fuse, got, sizeof(got)), -EREMOTE);
		assert_int_equal(ptab__read_mem(t, p, (uintptr_t)anon, got, sizeof(got)),
				 (ssize_t)sizeof(got));
		assert_memory_equal(got, "anonymous memory", 16);
		ptab__put(t, p);
		ptab__free(t);
	}
	munmap(fuse, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_file_is_opened_once_for_every_reader),
		/* Before the test that leaves its mount namespace: libc's mapping is
		 * on a mount of the namespace it was mapped in. */
		cmocka_unit_test(test_a_gone_process_is_made_from_its_notice),
		cmocka_unit_test(test_notice_devices_are_learned_from_a_process_read_both_ways),
		cmocka_unit_test(test_read_mem_is_bounded),
		cmocka_unit_test(test_read_memv_fails_bounded),
		cmocka_unit_test(test_read_memv_from_rotates),
		cmocka_unit_test(test_a_process_in_the_host_root_is_told_apart),
		cmocka_unit_test(test_own_mount_table_is_read_again_only_when_changed),
		cmocka_unit_test(test_a_running_process_is_answered_by_its_pidfd),
		cmocka_unit_test(test_exits_are_collected_once_for_all_pidfds),
		cmocka_unit_test(test_an_exit_is_remembered),
		cmocka_unit_test(test_a_process_gone_before_its_notice_costs_no_read),
		cmocka_unit_test(test_pidfds_are_bounded),
		cmocka_unit_test(test_a_zombie_keeps_its_maps),
		cmocka_unit_test(test_a_failed_lookup_of_blocked_mappings_is_remembered),
		cmocka_unit_test(test_memory_reads_read_no_maps_where_no_mount_may_block),
		cmocka_unit_test_teardown(test_memory_of_a_live_fuse_mapping_is_not_read,
					  teardown_bindfs),
		cmocka_unit_test_setup_teardown(test_a_file_on_fuse_is_refused_once, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(
			test_out_of_descriptors_a_file_is_neither_opened_nor_refused, setup_fake,
			teardown_fake),
		cmocka_unit_test_setup_teardown(test_memory_backed_by_a_fuse_file_is_not_read,
						setup_fake, teardown_fake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
