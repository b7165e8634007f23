// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_symbolizer.c - the caching facade on a fake /proc tree: a process
 * that maps the PIE fixture at a high address, checked lookups, identity
 * (start time) checks, device/inode checks, non-executable and anonymous
 * memory, and the two-sweep life cycle. A second fake process (4343) lives in
 * its own root directory, a "container": JIT perf maps (NSpid, growth,
 * symlinks, owners, FIFOs), separate debug files, exec races, kernel module
 * names and kallsyms reloads, and the memory caps.
 */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fcntl.h>
#include <sys/time.h>
#include <time.h>

#include "proc/elfnote.h"
#include "sym/elfsym.h"
#include "sym/perfmap.h"
#include "proc/procfs.h"
#include "sym/symbolizer.h"

#define PID   4242
#define TICKS 123
#define TEXT  0x555555555000ULL /* where the fixture's r-x segment (offset 0x1000) lives */
#define ANON  0x7f0000000000ULL

static char root[64];

static uint64_t start_ns(uint64_t ticks)
{
	return ticks * (1000000000ULL / sysconf(_SC_CLK_TCK));
}

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

static void write_stat(uint64_t ticks)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "%d (fake prog) S 1 %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", PID,
		 PID, PID, (unsigned long long)ticks);
	write_at("4242/stat", text);
}

/* maps with the fixture's real device and inode (plus `ino_delta`). */
static void write_maps(const char *fixture, long ino_delta)
{
	struct stat st;
	char text[2048];

	assert_int_equal(stat(fixture, &st), 0);
	snprintf(
		text, sizeof(text),
		"555555554000-555555555000 r--p 00000000 %02x:%02x %lu %s\n"
		"555555555000-555555556000 r-xp 00001000 %02x:%02x %lu %s\n"
		"555555556000-555555557000 r--p 00002000 %02x:%02x %lu %s\n"
		"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
		"7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]\n",
		major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino + ino_delta, fixture,
		major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino + ino_delta, fixture,
		major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino + ino_delta, fixture);
	write_at("4242/maps", text);
}

#define CPID	 4343
#define CNSPID	 77
#define CTICKS	 234 /* ticks after boot: a machine up for 3 s runs these tests */
#define JIT	 0x7e0000001000ULL
#define DBG_TEXT 0x560000001000ULL /* dbgprog's r-x segment (offset 0x1000) */

static char croot[128];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd))
		fail_msg("command failed: %s", cmd);
}

/* A full stat line: start time and the mm fields bp_mm_sig() hashes. */
static void write_cstat(uint64_t ticks, uint64_t start_code)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "%d (jit prog) S 1 %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0 "
		 "18446744073709551615 %llu %llu 140730000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "
		 "4096 8192 1048576 140730000001000 140730000002000 140730000002000 "
		 "140730000003000 0\n",
		 CPID, CPID, CPID, (unsigned long long)ticks, (unsigned long long)start_code,
		 (unsigned long long)start_code + 0x1000);
	write_at("4343/stat", text);
}

static uint64_t cstat_sig(void)
{
	struct proc_stat st;

	assert_int_equal(procfs__stat(root, "4343", &st), 0);
	assert_int_equal(st.start_time, CTICKS);
	assert_true(st.start_code != 0);
	return procfs__mm_sig(&st);
}

static void write_cstatus(uint32_t euid)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "Name:\tjit prog\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t1\n"
		 "Uid:\t%u\t%u\t%u\t%u\nNSpid:\t%d\t%d\n",
		 CPID, CPID, euid, euid, euid, euid, CPID, CNSPID);
	write_at("4343/status", text);
}

/* The container's process: dbgprog (stripped) at /bin/dbgprog in its root, and JIT memory. */
static void write_cmaps(void)
{
	char path[256], text[2048];
	struct stat st;

	snprintf(path, sizeof(path), "%s/bin/dbgprog", croot);
	assert_int_equal(stat(path, &st), 0);
	snprintf(text, sizeof(text),
		 "560000000000-560000001000 r--p 00000000 %02x:%02x %lu /bin/dbgprog\n"
		 "560000001000-560000002000 r-xp 00001000 %02x:%02x %lu /bin/dbgprog\n"
		 "7e0000000000-7e0000010000 r-xp 00000000 00:00 0 \n"
		 "7e0000010000-7e0000020000 rw-p 00000000 00:00 0 \n",
		 major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, major(st.st_dev),
		 minor(st.st_dev), (unsigned long)st.st_ino);
	write_at("4343/maps", text);
}

/* A perf map in the container's /tmp (croot is root's "rootfs"). */
static void write_perfmap(const char *name, const char *text)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "rootfs/tmp/%s", name);
	write_at(rel, text);
}

static void setup_container(void)
{
	char path[256];

	snprintf(croot, sizeof(croot), "%s/rootfs", root);
	sh("mkdir -p %s/4343 %s/bin %s/tmp %s/usr/lib/debug", root, croot, croot, croot);
	sh("cp '%s' %s/bin/dbgprog", fixture_path("dbgprog"), croot);
	snprintf(path, sizeof(path), "%s/4343/root", root);
	assert_int_equal(symlink(croot, path), 0);
	write_cstat(CTICKS, 0x560000001000ULL);
	write_cstatus(geteuid());
	write_cmaps();
}

static int setup(void **state)
{
	char path[256], fixture[4096];

	snprintf(root, sizeof(root), "/tmp/bpfprof-fakeproc-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/4242", root);
	assert_int_equal(mkdir(path, 0755), 0);
	/* /proc/PID/root of a host process is "/": the fallback open path uses it. */
	snprintf(path, sizeof(path), "%s/4242/root", root);
	assert_int_equal(symlink("/", path), 0);
	assert_non_null(realpath(fixture_path("pie"), fixture));
	write_stat(TICKS);
	write_maps(fixture, 0);
	setup_container();
	*state = strdup(fixture);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	free(*state);
	return 0;
}

static struct symbolizer *new_sym(void)
{
	struct symbolizer_opts o = { .proc_root = root };
	struct symbolizer *s = symbolizer__new(&o);

	assert_non_null(s);
	return s;
}

/* vaddr -> runtime address in the fake process: the r-x segment maps 0x1000 at TEXT. */
static uint64_t rt(uint64_t vaddr)
{
	return TEXT + vaddr - 0x1000;
}

static void test_names_leaf_and_return_addresses(void **state)
{
	const char *fixture = *state;
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha"), beta = nm_addr(fixture, "fixture_beta");
	uint64_t gamma = nm_addr(fixture, "fixture_static_gamma");
	struct symbolizer *s = new_sym();
	struct sym r;
	char buf[256];

	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	assert_string_equal(r.module, fixture);
	symbolizer__user(s, &id, rt(alpha) + 5, true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	/* A return address equal to beta's start belongs to the call in alpha's
	 * last bytes (alpha is directly before beta): ip - 1 is looked up. */
	if (beta > alpha) {
		symbolizer__user(s, &id, rt(beta), false, &r);
		assert_string_equal(r.name, "fixture_alpha");
		symbolizer__user(s, &id, rt(beta), true, &r);
		assert_string_equal(r.name, "fixture_beta");
	}
	/* Static functions come from .symtab. */
	symbolizer__user(s, &id, rt(gamma) + 1, true, &r);
	assert_string_equal(r.name, "fixture_static_gamma");
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "fixture_static_gamma");

	/* Anonymous executable memory: no module, no name. */
	symbolizer__user(s, &id, ANON + 0x10, true, &r);
	assert_null(r.name);
	assert_null(r.module);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	/* Non-executable memory (a junk frame pointer walk): unknown, not "[stack]+0x..". */
	symbolizer__user(s, &id, 0x7ffffffde100ULL, true, &r);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	/* Outside every mapping. */
	symbolizer__user(s, &id, 0x1000, true, &r);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	symbolizer__free(s);
}

static void test_pid_reuse_is_detected(void **state)
{
	struct proc_id other = { .pid = PID, .start_time = start_ns(TICKS + 1), .exec_id = 1 };
	struct symbolizer *s = new_sym();
	struct symbolizer_stats st;
	struct sym r;

	/* The sample's process started at another time: the pid was recycled. */
	assert_int_equal(symbolizer__note_process(s, &other), -ESRCH);
	assert_int_equal(symbolizer__note_process(s, &other), -ESRCH);
	symbolizer__user(s, &other, rt(nm_addr(*state, "fixture_alpha")), true, &r);
	assert_null(r.name);
	/* Remembered as unreadable (its samples do not retry), then swept. */
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.images_lost, 1);
	symbolizer__sweep(s);
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 0);
	symbolizer__free(s);
}

/*
 * A process gone before its notice is taken is named from the mappings the
 * notice carried (as the kernel had them), through the file the live
 * process 4242 made known: the same device and inode, at another address.
 * A notice whose mappings name no known file leaves it unnamed; a later
 * PROC_EVENT_MAPS with a known one names it after all.
 */
static void test_a_gone_process_is_named_from_its_notice(void **state)
{
	const char *fixture = *state;
	struct proc_id live = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	struct proc_id gone = { .pid = 4244, .start_time = start_ns(77), .exec_id = 1 };
	struct proc_id gone2 = { .pid = 4245, .start_time = start_ns(78), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha"), at = 0x560000001000ULL;
	struct symbolizer *s = new_sym();
	struct symbolizer_stats st;
	struct stat fst;
	struct procmap m[2];
	struct procmaps km = { .maps = m, .nr = 1 };
	struct sym r;

	assert_int_equal(stat(fixture, &fst), 0);
	m[0] = (struct procmap){ .start = at,
				 .end = at + 0x1000,
				 .offset = 0x1000,
				 .inode = fst.st_ino,
				 .dev_major = major(fst.st_dev),
				 .dev_minor = minor(fst.st_dev) };
	m[1] = m[0];
	m[1].inode += 12345; /* a file nobody read */
	/* Before any process mapped the file: nothing to name it with. */
	assert_int_equal(symbolizer__note_process_mapped(s, &gone, &km), -ESRCH);
	assert_int_equal(symbolizer__note_process(s, &live), 0);
	symbolizer__user(s, &live, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	/* gone2's notice: the fixture at another address. */
	assert_int_equal(symbolizer__note_process_mapped(s, &gone2, &km), 0);
	symbolizer__user(s, &gone2, at + alpha - 0x1000, true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	assert_string_equal(r.module, fixture);
	symbolizer__user(s, &gone2, at + 0x2000, true, &r); /* past what it carried */
	assert_null(r.name);
	/* gone was given up (its notice knew nothing); its more mappings name it. */
	symbolizer__user(s, &gone, at + alpha - 0x1000, true, &r);
	assert_null(r.name);
	km.maps = &m[1];
	assert_int_equal(symbolizer__more_mapped(s, &gone, &km), -ESRCH); /* still nothing known */
	km.maps = m;
	km.nr = 2;
	assert_int_equal(symbolizer__more_mapped(s, &gone, &km), 0);
	symbolizer__user(s, &gone, at + alpha - 0x1000, true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	/* A process read through /proc takes nothing from its notice. */
	assert_int_equal(symbolizer__more_mapped(s, &live, &km), 0);
	symbolizer__user(s, &live, at + alpha - 0x1000, true, &r);
	assert_null(r.name);
	symbolizer__stats(s, &st);
	assert_int_equal(st.images_lost, 2);
	assert_int_equal(st.images_mapped, 2);
	symbolizer__free(s);
}

static void test_inode_mismatch_rejects_file(void **state)
{
	const char *fixture = *state;
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha");
	struct symbolizer *s;
	struct sym r;
	char buf[256], want[64];

	/* The file at that path is not the one the process mapped: never use it. */
	write_maps(fixture, 1);
	s = new_sym();
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_null(r.name);
	snprintf(want, sizeof(want), "pie+0x%llx", (unsigned long long)alpha);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), want);
	symbolizer__free(s);
	write_maps(fixture, 0);
}

static void test_sweep_keeps_exited_process_for_one_drain(void **state)
{
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(*state, "fixture_alpha");
	struct symbolizer *s = new_sym();
	struct symbolizer_stats st;
	struct sym r;

	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_int_equal(symbolizer__note_process(s, &id), 0); /* idempotent */
	write_stat(TICKS + 99); /* the process is gone; its pid now names another */
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 1); /* kept: samples from before the exit may still come */
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 0);
	write_stat(TICKS);
	symbolizer__free(s);
}

/*
 * A symbolizer whose kernel symbols come from the fixture: its kallsyms (read
 * again on a reload, so the path outlives the call) and, if given, modules.
 */
static char kallsyms_path[256];

static struct symbolizer *new_ksym(const char *kallsyms, const char *modules)
{
	struct symbolizer_opts o = { .proc_root = root, .kallsyms_path = kallsyms_path };
	struct symbolizer *s;

	snprintf(kallsyms_path, sizeof(kallsyms_path), "%s/kallsyms", root);
	write_at("kallsyms", kallsyms);
	if (modules)
		write_at("modules", modules);
	s = symbolizer__new(&o);
	assert_non_null(s);
	assert_int_equal(symbolizer__load_kernel(s), 0);
	return s;
}

/* How a profile shows kernel address addr; NULL when nothing names it. */
static const char *kname(struct symbolizer *s, uint64_t addr)
{
	static char buf[256];
	struct sym r;

	symbolizer__kernel(s, addr, &r);
	return r.name ? sym__display(&r, buf, sizeof(buf)) : NULL;
}

static void test_kernel_lookup_with_fixture_kallsyms(void **state)
{
	struct symbolizer *s;
	struct sym r;

	s = new_ksym("ffffffff81000000 T _stext\n"
		     "ffffffff81000100 T vfs_read\n"
		     "ffffffff81000200 t read_zero\n"
		     "ffffffff81001000 T _etext\n"
		     "ffffffffc0000000 t nf_hook [nf_tables]\n",
		     NULL);
	assert_false(symbolizer__kernel_restricted(s));
	symbolizer__kernel(s, 0xffffffff81000150ULL, &r);
	assert_string_equal(r.name, "vfs_read");
	assert_int_equal(r.kind, FRAME_KERNEL);
	symbolizer__kernel(s, 0xffffffffc0000010ULL, &r);
	assert_string_equal(r.name, "nf_hook");
	assert_string_equal(r.module, "nf_tables");
	symbolizer__free(s);

	s = new_ksym("0000000000000000 T _stext\n0000000000000000 T vfs_read\n", NULL);
	assert_true(symbolizer__kernel_restricted(s));
	assert_null(kname(s, 0xffffffff81000150ULL));
	symbolizer__free(s);
}

/* --- the "container" process ------------------------------------------------ */

struct warnings {
	int n;
	char last[1024];
};

static void on_warn(void *ctx, const char *msg)
{
	struct warnings *w = ctx;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
}

static struct symbolizer *new_csym(struct warnings *w)
{
	char host[256];
	struct symbolizer_opts o = {
		.proc_root = root, .warn = on_warn, .warn_ctx = w, .host_root = host
	};
	struct symbolizer *s;

	/* An empty host root: debug files come from the container's root only. */
	snprintf(host, sizeof(host), "%s/hostroot", root);
	mkdir(host, 0755);
	memset(w, 0, sizeof(*w));
	s = symbolizer__new(&o);
	assert_non_null(s);
	return s;
}

static struct proc_id cid(void)
{
	struct proc_id id = { .pid = CPID, .start_time = start_ns(CTICKS), .exec_id = 3 };

	return id;
}

/* A perf map of more than 8 MiB: only what announced addresses need is kept. */
static void test_jit_perf_map_too_large_to_hold(void **state)
{
	struct proc_id id = cid();
	struct symbolizer_stats st;
	struct warnings w;
	struct symbolizer *s;
	char path[256];
	struct sym r;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tmp/perf-77.map", croot);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "7e0000002000 80 early_fn\n");
	for (int i = 0; i < 100000; i++)
		fprintf(f, "%x 40 filler_%06d_%080d\n", 0x10000000 + i * 0x40, i, i);
	fprintf(f, "7e0000001000 100 hot_fn\n");
	fprintf(f, "7e0000003000 40 third_fn\n");
	fclose(f);
	s = new_csym(&w);
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	/* A drain announces its addresses; one scan names them. */
	symbolizer__want_user(s, &id, JIT + 0x10, true);
	symbolizer__want_user(s, &id, JIT + 0x20, true);
	symbolizer__want_flush(s, false);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_int_equal(r.kind, FRAME_JIT);
	assert_string_equal(r.name, "hot_fn");
	symbolizer__stats(s, &st);
	assert_true(st.perfmap_bytes < (64u << 10)); /* not the 10 MB file */
	assert_true(st.perfmap_scanned > (8u << 20));
	assert_int_equal(st.perfmap_rescans, 0);
	/* Not announced, in code read before: the whole file again, once ... */
	usleep(60000);
	symbolizer__user(s, &id, JIT + 0x1010, true, &r);
	assert_string_equal(r.name, "early_fn");
	symbolizer__stats(s, &st);
	assert_int_equal(st.perfmap_rescans, 1);
	/* ... and then not for 10 s, but in the last drain regardless. */
	usleep(60000);
	symbolizer__user(s, &id, JIT + 0x2010, true, &r);
	assert_null(r.name);
	symbolizer__want_user(s, &id, JIT + 0x2010, true);
	symbolizer__want_flush(s, true);
	symbolizer__user(s, &id, JIT + 0x2010, true, &r);
	assert_string_equal(r.name, "third_fn");
	/* Appended over kept code: newer, so it names that code from the next
	 * read on (as with a map held whole, a read comes with a miss). */
	f = fopen(path, "a");
	assert_non_null(f);
	fprintf(f, "7e0000001000 8 replaced_fn\n");
	fprintf(f, "7e0000004000 40 fourth_fn\n");
	fclose(f);
	usleep(60000);
	symbolizer__want_user(s, &id, JIT + 0x3010, true);
	symbolizer__want_flush(s, false);
	symbolizer__user(s, &id, JIT + 0x3010, true, &r);
	assert_string_equal(r.name, "fourth_fn");
	symbolizer__user(s, &id, JIT + 0x0, true, &r);
	assert_string_equal(r.name, "replaced_fn");
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_string_equal(r.name, "hot_fn");
	assert_int_equal(w.n, 0);
	symbolizer__free(s);
	unlink(path);
}

static void test_jit_perf_map(void **state)
{
	struct proc_id id = cid();
	struct symbolizer_stats st;
	struct warnings w;
	struct symbolizer *s;
	struct sym r;
	char buf[256];

	(void)state;
	/* Named with the pid the process sees (NSpid); the host-pid name is a decoy. */
	write_perfmap("perf-77.map", "7e0000001000 100 LazyCompile:*hot app.js:1\n"
				     "0x7e0000002000 0x80 Interpreter\r\n");
	write_perfmap("perf-4343.map", "7e0000001000 100 decoy\n");
	s = new_csym(&w);
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_int_equal(r.kind, FRAME_JIT);
	assert_string_equal(r.name, "LazyCompile:*hot app.js:1");
	assert_string_equal(r.module, "/tmp/perf-77.map");
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "LazyCompile:*hot app.js:1");
	symbolizer__user(s, &id, JIT + 0x1001, false, &r);
	assert_string_equal(r.name, "Interpreter");
	/* Anonymous executable memory the map does not cover: unknown. */
	symbolizer__user(s, &id, JIT + 0x5000, true, &r);
	assert_null(r.name);
	assert_string_equal(sym__display(&r, buf, sizeof(buf)), "[unknown]");
	/* Writable anonymous memory is never named, even if the map says so. */
	symbolizer__user(s, &id, 0x7e0000010010ULL, true, &r);
	assert_null(r.name);

	/* The JIT adds code: a miss re-reads the grown map (at most every 50 ms). */
	write_perfmap("perf-77.map", "7e0000001000 100 LazyCompile:*hot app.js:1\n"
				     "0x7e0000002000 0x80 Interpreter\r\n"
				     "7e0000003000 40 LazyCompile:*later app.js:9\n"
				     "7e0000004000 40 partial_line_not_yet");
	usleep(60000);
	symbolizer__user(s, &id, JIT + 0x2010, true, &r);
	assert_string_equal(r.name, "LazyCompile:*later app.js:9");
	symbolizer__user(s, &id, JIT + 0x3010, true, &r);
	assert_null(r.name); /* the writer has not finished that line */
	write_perfmap("perf-77.map", "7e0000001000 100 LazyCompile:*hot app.js:1\n"
				     "0x7e0000002000 0x80 Interpreter\r\n"
				     "7e0000003000 40 LazyCompile:*later app.js:9\n"
				     "7e0000004000 40 partial_line_now_done\n");
	symbolizer__user(s, &id, JIT + 0x3010, true, &r);
	assert_null(r.name); /* re-read just now: not again yet */
	usleep(60000);
	symbolizer__user(s, &id, JIT + 0x3010, true, &r);
	assert_string_equal(r.name, "partial_line_now_done");
	symbolizer__stats(s, &st);
	assert_int_equal(st.perfmaps, 1);
	assert_true(st.perfmap_bytes > 0);
	assert_true(st.jit_names >= 4);
	assert_int_equal(w.n, 0);
	symbolizer__free(s);

	/* A map last written before the process started is an earlier process's. */
	{
		char path[256];
		struct timespec now_b, now_r;
		struct timeval tv[2];

		clock_gettime(CLOCK_BOOTTIME, &now_b);
		clock_gettime(CLOCK_REALTIME, &now_r);
		snprintf(path, sizeof(path), "%s/tmp/perf-77.map", croot);
		/* The fake process started CTICKS (2.34 s) after boot; this is before boot. */
		tv[0].tv_sec = tv[1].tv_sec = now_r.tv_sec - now_b.tv_sec - 3600;
		tv[0].tv_usec = tv[1].tv_usec = 0;
		assert_int_equal(utimes(path, tv), 0);
		s = new_csym(&w);
		symbolizer__user(s, &id, JIT + 0x10, true, &r);
		assert_null(r.name);
		assert_int_equal(w.n, 0); /* not hostile, just not this process's */
		symbolizer__free(s);
	}
	sh("rm -f %s/tmp/perf-*.map", croot);
}

/* Expects the perf map to be refused with one warning containing `why`. */
static void expect_rejected(const char *why)
{
	struct proc_id id = cid();
	struct warnings w;
	struct symbolizer *s = new_csym(&w);
	struct sym r;

	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_null(r.name);
	assert_int_equal(r.kind, FRAME_USER);
	symbolizer__sweep(s);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_null(r.name);
	/* One warning, however often it is asked. */
	if (w.n != 1)
		fail_msg("%d warnings for %s", w.n, why);
	if (!strstr(w.last, why) || !strstr(w.last, "perf-77.map"))
		fail_msg("warning '%s' does not say '%s'", w.last, why);
	/* The rest of the process is still symbolized. */
	symbolizer__user(s, &id, DBG_TEXT + 8, true, &r);
	assert_string_equal(r.module, "/bin/dbgprog");
	symbolizer__free(s);
}

static void test_hostile_perf_maps(void **state)
{
	char path[256];

	(void)state;
	/* A symlink, even to a perfectly good map inside the root. */
	write_perfmap("real.map", "7e0000001000 100 via_symlink\n");
	snprintf(path, sizeof(path), "%s/tmp/perf-77.map", croot);
	assert_int_equal(symlink("/tmp/real.map", path), 0);
	expect_rejected("symbolic link");
	unlink(path);
	/* A symlinked /tmp. */
	sh("mv %s/tmp %s/realtmp && ln -s realtmp %s/tmp", croot, croot, croot);
	write_perfmap("perf-77.map", "7e0000001000 100 via_symlinked_dir\n");
	expect_rejected("symbolic link");
	sh("rm %s/tmp && mv %s/realtmp %s/tmp && rm %s/tmp/perf-77.map", croot, croot, croot,
	   croot);
	/* A FIFO: opening it must not wait for a writer. */
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_rejected("not a regular file");
	unlink(path);
	/* A directory. */
	assert_int_equal(mkdir(path, 0755), 0);
	expect_rejected("not a regular file");
	rmdir(path);
	/* Owned by someone who is neither the process's euid nor root. */
	write_perfmap("perf-77.map", "7e0000001000 100 other_owner\n");
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
	} else {
		write_cstatus(geteuid() + 1);
	}
	expect_rejected("owned by uid");
	write_cstatus(geteuid());
	unlink(path);
	sh("rm -f %s/tmp/real.map", croot);
}

static void test_separate_debug_file_in_container(void **state)
{
	char *full = strdup(fixture_path("dbgprog.full")), rel[256], hex[160];
	uint64_t gamma = nm_addr(full, "fixture_static_gamma");
	struct proc_id id = cid();
	struct symbolizer_stats st;
	struct elfsym *es = elfsym__open(fixture_path("dbgprog"));
	const uint8_t *bid;
	struct warnings w;
	struct symbolizer *s;
	struct sym r;
	size_t len;

	(void)state;
	assert_non_null(es);
	bid = elfsym__build_id(es, &len);
	elfnote__build_id_hex(bid, len, hex, sizeof(hex));
	snprintf(rel, sizeof(rel), "usr/lib/debug/.build-id/%s.debug", hex);
	/* Without the debug file: a static function has no name in a stripped binary. */
	s = new_csym(&w);
	symbolizer__user(s, &id, DBG_TEXT + gamma - 0x1000, true, &r);
	assert_null(r.name);
	symbolizer__free(s);
	/* A -dbgsym package in the container. */
	sh("mkdir -p $(dirname %s/%s) && cp '%s' %s/%s", croot, rel, fixture_path("dbgprog.debug"),
	   croot, rel);
	s = new_csym(&w);
	/* A container's files are read at the notice: its root is there while it lives. */
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__stats(s, &st);
	assert_int_equal(st.files_held, 0);
	assert_true(st.file_bytes > 0);
	symbolizer__user(s, &id, DBG_TEXT + gamma - 0x1000, true, &r);
	assert_non_null(r.name);
	assert_string_equal(r.name, "fixture_static_gamma");
	assert_non_null(r.build_id);
	assert_int_equal(r.build_id_len, len);
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files, 1);
	symbolizer__free(s);
	sh("rm -rf %s/usr/lib/debug/.build-id", croot);
	elfsym__free(es);
	free(full);
}

static void test_exec_race_names_nothing(void **state)
{
	struct proc_id id = cid(), lazy = cid();
	struct symbolizer_stats st;
	struct warnings w;
	struct symbolizer *s;
	struct sym r;

	(void)state;
	write_perfmap("perf-77.map", "7e0000001000 100 jit_fn\n");
	/* The notice was about an address space /proc no longer shows: an exec. */
	id.mm_sig = cstat_sig() ^ 1;
	s = new_csym(&w);
	assert_int_equal(symbolizer__note_process(s, &id), -ESRCH);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_null(r.name);
	symbolizer__user(s, &id, DBG_TEXT + 8, true, &r);
	assert_null(r.module);
	symbolizer__stats(s, &st);
	assert_int_equal(st.images_lost, 1);
	/* The image after the exec (new exec id, its own signature) is fine. */
	id.exec_id++;
	id.mm_sig = cstat_sig();
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_string_equal(r.name, "jit_fn");
	/* A sample of a third image without a notice, while another is known: refused. */
	lazy.exec_id = id.exec_id + 5;
	symbolizer__user(s, &lazy, JIT + 0x10, true, &r);
	assert_null(r.name);
	symbolizer__stats(s, &st);
	assert_int_equal(st.images_lost, 2);
	/* Its notice comes after: the sample was taken inside its execve(), and
	 * the notice waited for the exec's end. With the signature it is told
	 * apart from the image held, and named from then on. */
	lazy.mm_sig = cstat_sig();
	assert_int_equal(symbolizer__note_process(s, &lazy), 0);
	lazy.mm_sig = 0; /* samples carry no signature */
	symbolizer__user(s, &lazy, JIT + 0x10, true, &r);
	assert_string_equal(r.name, "jit_fn");
	symbolizer__stats(s, &st);
	assert_int_equal(st.images_lost, 1);
	/* An image given up on with its signature known is not looked for again. */
	id.exec_id = lazy.exec_id + 1;
	id.mm_sig = cstat_sig() ^ 1;
	assert_int_equal(symbolizer__note_process(s, &id), -ESRCH);
	id.mm_sig = cstat_sig();
	assert_int_equal(symbolizer__note_process(s, &id), -ESRCH);
	symbolizer__free(s);
	/* With no other image known, a lost notice is read lazily. */
	s = new_csym(&w);
	symbolizer__user(s, &lazy, JIT + 0x10, true, &r);
	assert_string_equal(r.name, "jit_fn");
	symbolizer__free(s);
	sh("rm -f %s/tmp/perf-77.map", croot);
}

static void test_process_cap(void **state)
{
	struct symbolizer_opts o = { .proc_root = root, .max_procs = 4 };
	struct symbolizer_stats st;
	struct symbolizer *s = symbolizer__new(&o);
	struct proc_id id = cid();

	(void)state;
	assert_non_null(s);
	id.mm_sig = cstat_sig();
	for (int i = 0; i < 20; i++) {
		id.exec_id = 100 + i;
		assert_int_equal(symbolizer__note_process(s, &id), 0);
		symbolizer__stats(s, &st);
		assert_true(st.procs <= 4);
	}
	assert_true(st.evicted_procs >= 16);
	symbolizer__free(s);
}

static void test_file_cap_evicts_unused(void **state)
{
	struct symbolizer_opts o = { .proc_root = root, .max_files = 1 };
	struct proc_id a = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	struct proc_id b = cid();
	struct symbolizer_stats st;
	struct symbolizer *s = symbolizer__new(&o);
	struct sym r;

	assert_non_null(s);
	assert_int_equal(symbolizer__note_process(s, &a), 0);
	assert_int_equal(symbolizer__note_process(s, &b), 0);
	/* Its symbols read (a file never looked up is not cached: see below). */
	symbolizer__user(s, &a, rt(nm_addr(*state, "fixture_alpha")), true, &r);
	symbolizer__stats(s, &st);
	assert_int_equal(st.files, 2); /* both in use: over the cap, nothing evictable */
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.files, 2);
	/* 4242 exits: its entry goes after two sweeps, its file after that. */
	write_stat(TICKS + 1);
	for (int i = 0; i < 4; i++)
		symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.files, 1);
	assert_true(st.evicted_files >= 1);
	write_stat(TICKS);
	symbolizer__free(s);
}

static void test_idle_files_are_dropped_under_the_caps(void **state)
{
	struct symbolizer_opts o = { .proc_root = root };
	struct proc_id a = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	struct symbolizer_stats st;
	struct symbolizer *s = symbolizer__new(&o);
	struct sym r;

	assert_non_null(s);
	assert_int_equal(symbolizer__note_process(s, &a), 0);
	symbolizer__user(s, &a, rt(nm_addr(*state, "fixture_alpha")), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	write_stat(TICKS + 1); /* it exits */
	for (int i = 0; i < 10; i++)
		symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.procs, 0);
	assert_int_equal(st.files, 1); /* cached: another process may map it soon */
	for (int i = 0; i < 40; i++)
		symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.files, 0); /* unused for ~30 drains: dropped */
	write_stat(TICKS);
	symbolizer__free(s);
}

/* 4242 maps the PIE fixture (at TEXT) and, at LIB_TEXT, a copy of libfix.so at lib. */
#define LIB_TEXT 0x7f1000001000ULL /* libfix.so's r-x segment (offset 0x1000) */

static void write_maps_with_lib(const char *fixture, const char *lib)
{
	struct stat st, sl;
	char text[4096];

	assert_int_equal(stat(fixture, &st), 0);
	assert_int_equal(stat(lib, &sl), 0);
	snprintf(text, sizeof(text),
		 "555555555000-555555556000 r-xp 00001000 %02x:%02x %lu %s\n"
		 "7f1000001000-7f1000002000 r-xp 00001000 %02x:%02x %lu %s\n",
		 major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, fixture,
		 major(sl.st_dev), minor(sl.st_dev), (unsigned long)sl.st_ino, lib);
	write_at("4242/maps", text);
}

static struct symbolizer_stats stats_of(struct symbolizer *s)
{
	struct symbolizer_stats st;

	symbolizer__stats(s, &st);
	return st;
}

/*
 * A process in the host's root has its files opened at its notice and their
 * symbols read at their first lookup: one whose samples never land in a file
 * never has that file's symbols read, and a file deleted (and its process
 * gone) before the lookup is still named from the descriptor held.
 */
static void test_symbols_are_read_at_first_lookup(void **state)
{
	const char *fixture = *state;
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha");
	uint64_t lib_beta = nm_addr(fixture_path("libfix.so"), "fixture_lib_beta");
	char lib[256];
	struct symbolizer *s = new_sym();
	struct sym r;

	snprintf(lib, sizeof(lib), "%s/libfix-copy.so", root);
	sh("cp '%s' %s", fixture_path("libfix.so"), lib);
	write_maps_with_lib(fixture, lib);
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_int_equal(stats_of(s).files, 2);
	assert_int_equal(stats_of(s).files_held, 2);
	assert_int_equal(stats_of(s).file_bytes, 0); /* nothing read yet */
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	assert_int_equal(stats_of(s).files_held, 1);
	assert_int_equal(stats_of(s).files_read_late, 1);
	assert_true(stats_of(s).file_bytes > 0);
	/* The library is deleted and the process exits before its first sample is named. */
	assert_int_equal(unlink(lib), 0);
	write_stat(TICKS + 99);
	symbolizer__sweep(s); /* seen gone: kept for this drain */
	symbolizer__user(s, &id, LIB_TEXT + lib_beta - 0x1000, true, &r);
	assert_string_equal(r.name, "fixture_lib_beta");
	assert_int_equal(stats_of(s).files_held, 0);
	assert_int_equal(stats_of(s).files_read_late, 2);
	assert_int_equal(stats_of(s).files_never_read, 0);
	symbolizer__free(s);

	/* Never looked up: given back when the process entry goes, never read. */
	write_stat(TICKS);
	s = new_sym();
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_int_equal(stats_of(s).files_held, 1);
	write_stat(TICKS + 99);
	symbolizer__sweep(s);
	symbolizer__sweep(s);
	assert_int_equal(stats_of(s).procs, 0);
	assert_int_equal(stats_of(s).files, 0);
	assert_int_equal(stats_of(s).files_held, 0);
	assert_int_equal(stats_of(s).files_never_read, 1);
	assert_int_equal(stats_of(s).files_read_late, 0);

	/*
	 * The process table still knows the file, closed since: the next image
	 * to map it holds it open at its notice, not at the lookup, by which
	 * time it has exited and the file is deleted.
	 */
	write_stat(TICKS);
	sh("cp '%s' %s", fixture_path("libfix.so"), lib);
	write_maps_with_lib(fixture, lib);
	id.exec_id = 2;
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	write_stat(TICKS + 99);
	symbolizer__sweep(s);
	symbolizer__sweep(s);
	assert_int_equal(stats_of(s).files, 0);
	write_stat(TICKS);
	id.exec_id = 3;
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_int_equal(stats_of(s).files_held, 2);
	assert_int_equal(unlink(lib), 0);
	write_stat(TICKS + 99);
	symbolizer__user(s, &id, LIB_TEXT + lib_beta - 0x1000, true, &r);
	assert_non_null(r.name);
	assert_string_equal(r.name, "fixture_lib_beta");
	symbolizer__free(s);
	write_stat(TICKS);
	write_maps(fixture, 0);
}

/* Held files are bounded: over max_held_files the oldest is read early, names unchanged. */
static void test_held_files_are_bounded(void **state)
{
	const char *fixture = *state;
	struct symbolizer_opts o = { .proc_root = root, .max_held_files = 1 };
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha");
	uint64_t lib_gamma = nm_addr(fixture_path("libfix.so"), "fixture_lib_static_gamma");
	struct symbolizer *s = symbolizer__new(&o);
	struct sym r;

	assert_non_null(s);
	write_maps_with_lib(fixture, fixture_path("libfix.so"));
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_int_equal(stats_of(s).files, 2);
	assert_int_equal(stats_of(s).files_held, 1);
	assert_int_equal(stats_of(s).files_read_early, 1);
	assert_true(stats_of(s).file_bytes > 0);
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	symbolizer__user(s, &id, LIB_TEXT + lib_gamma - 0x1000, true, &r);
	assert_string_equal(r.name, "fixture_lib_static_gamma");
	assert_int_equal(stats_of(s).files_held, 0);
	assert_int_equal(stats_of(s).files_read_early + stats_of(s).files_read_late, 2);
	symbolizer__free(s);
	write_maps(fixture, 0);
}

static void test_kernel_modules_and_reload(void **state)
{
	struct symbolizer_stats st;
	struct symbolizer *s;

	(void)state;
	s = new_ksym("ffffffff81000000 T _stext\n"
		     "ffffffff81000100 T vfs_read\n"
		     "ffffffff81001000 T _etext\n"
		     "ffffffffc0000000 t nf_hook [nf_tables]\n"
		     "ffffffffc0002000 t bpf_prog_6deef7357e7b4530_do_sample [bpf]\n",
		     "nf_tables 1 0 - Live 0xffffffffc0000000\n");
	assert_string_equal(kname(s, 0xffffffffc0000010ULL), "nf_hook [nf_tables]");
	assert_string_equal(kname(s, 0xffffffffc0002010ULL),
			    "bpf_prog_6deef7357e7b4530_do_sample [bpf]");
	assert_string_equal(kname(s, 0xffffffff81000150ULL), "vfs_read");
	/* A module loads: its code is unknown until kallsyms is read again. */
	write_at("kallsyms", "ffffffff81000000 T _stext\n"
			     "ffffffff81000100 T vfs_read\n"
			     "ffffffff81001000 T _etext\n"
			     "ffffffffc0000000 t nf_hook [nf_tables]\n"
			     "ffffffffc0400000 t dummy_xmit [dummy]\n");
	assert_null(kname(s, 0xffffffffc0400010ULL)); /* /proc/modules did not change: no reload */
	write_at("modules", "nf_tables 1 0 - Live 0xffffffffc0000000\n"
			    "dummy 1 0 - Live 0xffffffffc0400000\n");
	assert_null(kname(s, 0xffffffffc0400010ULL)); /* checked once per drain already */
	symbolizer__sweep(s);			      /* the sweep notices the change */
	assert_string_equal(kname(s, 0xffffffffc0400010ULL), "dummy_xmit [dummy]");
	symbolizer__stats(s, &st);
	assert_int_equal(st.kernel_reloads, 1);
	/* Misses in core kernel text never trigger a reload. */
	write_at("modules", "x 1 0 - Live 0xffffffffc0200000\n");
	symbolizer__sweep(s);
	symbolizer__stats(s, &st);
	assert_int_equal(st.kernel_reloads, 2);
	symbolizer__free(s);
}

/* The collector's BPF program list, as a test sets it (err: no list). */
static struct bp_kprog fake_progs[4];
static size_t nr_fake_progs;
static int fake_progs_err;

static int fake_bpf_progs(void *ctx, struct bp_kprog **out, size_t *nr)
{
	(void)ctx;
	if (fake_progs_err)
		return fake_progs_err;
	*out = malloc(sizeof(fake_progs));
	assert_non_null(*out);
	memcpy(*out, fake_progs, sizeof(fake_progs));
	*nr = nr_fake_progs;
	return 0;
}

static struct bp_kprog fake_prog(uint64_t start, uint32_t len, uint32_t id, bool sub,
				 const char *name)
{
	struct bp_kprog p = { .start = start, .len = len, .id = id, .sub = sub };

	snprintf(p.name, sizeof(p.name), "%s", name);
	return p;
}

/*
 * BPF programs are named from the collector's list of their images: one
 * loaded after kallsyms was read, right after an older one, has its own name
 * at once, never its neighbour's; kallsyms' program symbols that hold no
 * image (unloaded) name nothing. Without the list, kallsyms' word.
 */
static void test_bpf_programs_named_by_their_images(void **state)
{
	struct symbolizer_stats st;
	struct symbolizer *s;

	(void)state;
	s = new_ksym("ffffffff81000000 T _stext\n"
		     "ffffffff81001000 T _etext\n"
		     "ffffffffc0002000 t bpf_prog_6deef7357e7b4530_do_sample [bpf]\n"
		     "ffffffffc0002400 t bpf_prog_0123456789abcdef_walk [bpf]\n"
		     "ffffffffc0004000 t bpf_prog_1111111111111111_gone [bpf]\n"
		     "ffffffffc0006000 t bpf_trampoline_6442 [bpf]\n",
		     "");
	/* do_sample (id 7) with its function walk; spin (id 9) loaded into the
	 * gap after walk since kallsyms was read; gone unloaded. */
	fake_progs[0] = fake_prog(0xffffffffc0002000ULL, 0x300, 7, false,
				  "bpf_prog_6deef7357e7b4530_do_sample");
	fake_progs[1] =
		fake_prog(0xffffffffc0002400ULL, 0x80, 7, true, "bpf_prog_0123456789abcdef_walk");
	fake_progs[2] =
		fake_prog(0xffffffffc0002500ULL, 0x100, 9, false, "bpf_prog_fedcba9876543210_spin");
	fake_progs[3] = fake_prog(0xffffffffc0003000ULL, 0, 10, false, ""); /* not JITed */
	nr_fake_progs = 4;
	fake_progs_err = 0;
	symbolizer__set_bpf_progs(s, fake_bpf_progs, NULL);
	assert_string_equal(kname(s, 0xffffffffc0002010ULL),
			    "bpf_prog_6deef7357e7b4530_do_sample [bpf]");
	assert_string_equal(kname(s, 0xffffffffc0002410ULL),
			    "bpf_prog_0123456789abcdef_walk [bpf]");
	assert_string_equal(kname(s, 0xffffffffc0002510ULL),
			    "bpf_prog_fedcba9876543210_spin [bpf]");
	/* In walk's kallsyms extent but past its image and spin's: nobody's. */
	assert_null(kname(s, 0xffffffffc0002490ULL));
	assert_null(kname(s, 0xffffffffc0004010ULL)); /* gone's */
	/* not a program: kallsyms */
	assert_string_equal(kname(s, 0xffffffffc0006010ULL), "bpf_trampoline_6442 [bpf]");
	symbolizer__stats(s, &st);
	assert_int_equal(st.kbpf_named, 3);
	assert_int_equal(st.kbpf_unnamed, 2);
	assert_int_equal(st.kprogs_err, 0);
	/* Without a list (a kernel before 5.9): kallsyms names them. */
	fake_progs_err = -EOPNOTSUPP;
	symbolizer__sweep(s);
	assert_string_equal(kname(s, 0xffffffffc0004010ULL),
			    "bpf_prog_1111111111111111_gone [bpf]");
	symbolizer__stats(s, &st);
	assert_int_equal(st.kprogs_err, -EOPNOTSUPP);
	symbolizer__free(s);
}

/*
 * The file symbols' cap holds at insertion, within one drain: before a
 * file's symbols are read, room is made for one file's worth
 * (ELFSYM_MAX_BYTES; here the cap is smaller, so every other file's go). A
 * file still mapped keeps its entry and is read again at its next lookup -
 * once a drain, so files that do not fit together cost one read each per
 * drain. Before, the cap was applied at the sweep, to unmapped files only.
 */
static void test_file_bytes_cap_held_at_insertion(void **state)
{
	const char *fixture = *state;
	struct symbolizer_opts o = { .proc_root = root, .max_file_bytes = 1024 };
	struct proc_id id = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	uint64_t alpha = nm_addr(fixture, "fixture_alpha");
	uint64_t lib_gamma = nm_addr(fixture_path("libfix.so"), "fixture_lib_static_gamma");
	struct symbolizer *s = symbolizer__new(&o);
	struct symbolizer_stats st;
	size_t exe_bytes, lib_bytes;
	struct sym r;

	assert_non_null(s);
	write_maps_with_lib(fixture, fixture_path("libfix.so"));
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	exe_bytes = stats_of(s).file_bytes;
	assert_true(exe_bytes > 0);
	symbolizer__user(s, &id, LIB_TEXT + lib_gamma - 0x1000, true, &r);
	assert_string_equal(r.name, "fixture_lib_static_gamma");
	st = stats_of(s);
	lib_bytes = st.file_bytes;
	/* The executable's symbols went before the library's were read. */
	assert_int_equal(st.files, 2);
	assert_int_equal(st.files_dropped, 1);
	assert_true(lib_bytes > 0 && lib_bytes < exe_bytes + lib_bytes);
	/* Read this drain already: not again before the next (its frames unnamed). */
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_null(r.name);
	assert_int_equal(stats_of(s).files_reread, 0);
	assert_int_equal(stats_of(s).file_bytes, lib_bytes);
	/* The next drain reads it again, and the library's go. */
	symbolizer__sweep(s);
	symbolizer__user(s, &id, rt(alpha), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	st = stats_of(s);
	assert_int_equal(st.files_reread, 1);
	assert_int_equal(st.files_dropped, 2);
	assert_int_equal(st.file_bytes, exe_bytes);
	symbolizer__free(s);
	write_maps(fixture, 0);
}

/* Files no process maps go at insertion too when the count is at its cap. */
static void test_file_count_cap_held_at_insertion(void **state)
{
	const char *fixture = *state;
	struct symbolizer_opts o = { .proc_root = root, .max_files = 1 };
	struct proc_id a = { .pid = PID, .start_time = start_ns(TICKS), .exec_id = 1 };
	struct symbolizer *s = symbolizer__new(&o);
	struct sym r;

	assert_non_null(s);
	write_maps(fixture, 0);
	assert_int_equal(symbolizer__note_process(s, &a), 0);
	symbolizer__user(s, &a, rt(nm_addr(fixture, "fixture_alpha")), true, &r);
	assert_string_equal(r.name, "fixture_alpha");
	/* 4242 exits and is forgotten: its file stays cached, mapped by nobody. */
	write_stat(TICKS + 1);
	symbolizer__sweep(s);
	symbolizer__sweep(s);
	assert_int_equal(stats_of(s).procs, 0);
	assert_int_equal(stats_of(s).files, 1);
	/* Another image with another file: the unmapped one goes as it comes in. */
	write_stat(TICKS);
	write_maps_with_lib(fixture_path("libfix.so"), fixture_path("libfix.so"));
	a.exec_id = 2;
	assert_int_equal(symbolizer__note_process(s, &a), 0);
	assert_int_equal(stats_of(s).files, 1);
	assert_true(stats_of(s).evicted_files >= 1);
	symbolizer__free(s);
	write_maps(fixture, 0);
}

/* One perf map of this many lines (~1.2 MiB of entries): "ADDR 40 jit_N". */
#define PMAP_LINES 20000

static void write_big_perfmap(void)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tmp/perf-77.map", croot);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < PMAP_LINES; i++)
		fprintf(f, "%llx 40 jit_%d\n", JIT + i * 0x40ull, i);
	fclose(f);
}

/*
 * The perf maps' cap holds at insertion, within one drain: 20 images of the
 * JIT process each read their map at their notice. Before, every one was
 * held until the sweep (20 maps); now room is made for one map's worth
 * (PERFMAP_MAX_BYTES; here more than the cap) before each is read.
 */
static void test_perfmap_cap_held_at_insertion(void **state)
{
	char host[256];
	struct symbolizer_opts o = { .proc_root = root, .host_root = host, .max_perfmap_bytes = 1 };
	struct proc_id id = cid();
	struct symbolizer_stats st;
	struct symbolizer *s;
	size_t one = 0;
	struct sym r;
	char path[256];

	(void)state;
	snprintf(host, sizeof(host), "%s/hostroot", root);
	mkdir(host, 0755);
	write_big_perfmap();
	s = symbolizer__new(&o);
	assert_non_null(s);
	id.mm_sig = cstat_sig();
	for (int i = 0; i < 20; i++) {
		id.exec_id = 200 + i;
		assert_int_equal(symbolizer__note_process(s, &id), 0);
		st = stats_of(s);
		if (!one)
			one = st.perfmap_bytes;
		assert_true(one > (512u << 10));
		assert_true(st.perfmap_bytes <= one);
		assert_int_equal(st.perfmaps, 1);
	}
	assert_int_equal(stats_of(s).perfmaps_dropped, 19);
	/* A map freed for room is read again when its code is looked up. */
	id.exec_id = 200;
	symbolizer__user(s, &id, JIT + 5 * 0x40 + 1, true, &r);
	assert_string_equal(r.name, "jit_5");
	/* ... once a drain: freed again, it waits for the next. */
	id.exec_id = 201;
	symbolizer__user(s, &id, JIT + 6 * 0x40 + 1, true, &r);
	assert_string_equal(r.name, "jit_6");
	id.exec_id = 200;
	symbolizer__user(s, &id, JIT + 7 * 0x40 + 1, true, &r);
	assert_null(r.name);
	symbolizer__sweep(s);
	usleep(60000);
	symbolizer__user(s, &id, JIT + 7 * 0x40 + 1, true, &r);
	assert_string_equal(r.name, "jit_7");
	assert_true(stats_of(s).perfmap_bytes <= one);
	symbolizer__free(s);
	snprintf(path, sizeof(path), "%s/tmp/perf-77.map", croot);
	unlink(path);
}

/*
 * One map has its own cap: 7 MiB of the shortest lines (under the 8 MiB a
 * map is read whole up to) would be ~40 MiB of entries. It is read in
 * wanted mode instead, and what is looked up is still named.
 */
static void test_perfmap_over_its_own_cap_is_read_wanted(void **state)
{
	struct proc_id id = cid();
	struct warnings w;
	struct symbolizer *s;
	char path[256];
	struct sym r;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tmp/perf-77.map", croot);
	f = fopen(path, "w");
	assert_non_null(f);
	for (unsigned i = 0; ftell(f) < (7l << 20); i++)
		fprintf(f, "%x 1 f\n", 0x100000 + i);
	fprintf(f, "%llx 100 wanted_fn\n", JIT);
	fclose(f);
	s = new_csym(&w);
	assert_int_equal(symbolizer__note_process(s, &id), 0);
	assert_true(stats_of(s).perfmap_bytes <= PERFMAP_MAX_BYTES);
	symbolizer__want_user(s, &id, JIT + 0x10, true);
	symbolizer__want_flush(s, false);
	symbolizer__user(s, &id, JIT + 0x10, true, &r);
	assert_string_equal(r.name, "wanted_fn");
	assert_true(stats_of(s).perfmap_bytes < (1u << 20));
	assert_int_equal(w.n, 0);
	symbolizer__free(s);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_leaf_and_return_addresses),
		cmocka_unit_test(test_pid_reuse_is_detected),
		cmocka_unit_test(test_inode_mismatch_rejects_file),
		cmocka_unit_test(test_a_gone_process_is_named_from_its_notice),
		cmocka_unit_test(test_sweep_keeps_exited_process_for_one_drain),
		cmocka_unit_test(test_kernel_lookup_with_fixture_kallsyms),
		cmocka_unit_test(test_bpf_programs_named_by_their_images),
		cmocka_unit_test(test_jit_perf_map),
		cmocka_unit_test(test_jit_perf_map_too_large_to_hold),
		cmocka_unit_test(test_hostile_perf_maps),
		cmocka_unit_test(test_separate_debug_file_in_container),
		cmocka_unit_test(test_exec_race_names_nothing),
		cmocka_unit_test(test_process_cap),
		cmocka_unit_test(test_file_cap_evicts_unused),
		cmocka_unit_test(test_idle_files_are_dropped_under_the_caps),
		cmocka_unit_test(test_symbols_are_read_at_first_lookup),
		cmocka_unit_test(test_held_files_are_bounded),
		cmocka_unit_test(test_file_bytes_cap_held_at_insertion),
		cmocka_unit_test(test_file_count_cap_held_at_insertion),
		cmocka_unit_test(test_perfmap_cap_held_at_insertion),
		cmocka_unit_test(test_perfmap_over_its_own_cap_is_read_wanted),
		cmocka_unit_test(test_kernel_modules_and_reload),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
