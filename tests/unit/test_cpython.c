// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_cpython.c - CPython layouts and Python frame names: the 3.11 table
 * against the installed 3.11 headers; _Py_DebugOffsets blocks of 3.13 and
 * 3.14 as those releases lay them out; the 3.11 location table on tables
 * recorded from Debian's python3.11; str objects; and, on a live python3.11
 * child, finding the interpreter and naming code objects from its memory
 * (a code object replaced at its address is never named after the new one);
 * stopped before they run (at the exec; with the libpython mapped and not
 * relocated), Debian's python3.11 and one built against the shared libpython
 * are "not yet" Python, and found once they run; one that exec'd after its
 * mappings were read is gone, not a Python of an unknown layout.
 */
#include "testutil.h"

#include <gelf.h>
#include <limits.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang/cpython.h"
#include "proc/ptab.h"
#include "sym/pyname.h"

/* The test's child process, while it runs. */
static pid_t child;

static int reap_child(void **state)
{
	(void)state;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	return 0;
}

static void test_311_table_matches_headers(void **state)
{
	const struct cpython_layout *l = cpython__table(CPY_VERSION(3, 11) | 0x0207f0);
	char cmd[4200], name[64];
	size_t value, checked = 0;
	FILE *f;

	(void)state;
	assert_non_null(l);
	snprintf(cmd, sizeof(cmd), "%s", fixture_path("py311_offsets"));
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fscanf(f, "%63s %zu", name, &value) == 2) {
		static const struct {
			const char *name;
			size_t off;
		} fields[] = {
#define F(x) { #x, offsetof(struct cpython_layout, x) }
			F(runtime_interp_head),	 F(interp_next),      F(interp_threads_head),
			F(tstate_next),		 F(tstate_interp),    F(tstate_native_tid),
			F(tstate_frame),	 F(cframe_current),   F(frame_code),
			F(frame_previous),	 F(frame_instr),      F(frame_owner),
			F(code_filename),	 F(code_name),	      F(code_qualname),
			F(code_linetable),	 F(code_firstlineno), F(code_adaptive),
			F(unicode_length),	 F(unicode_state),    F(unicode_ascii_data),
			F(unicode_compact_data), F(bytes_size),	      F(bytes_data),
			F(runtime_tss_key),
#undef F
		};

		for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
			if (strcmp(name, fields[i].name))
				continue;
			if (*(const uint16_t *)((const char *)l + fields[i].off) != value)
				fail_msg("%s: table %u, headers %zu", name,
					 *(const uint16_t *)((const char *)l + fields[i].off),
					 value);
			checked++;
		}
		/* What cpython.c reads PyCode_Type's member table with. */
		if (!strcmp(name, "type_basicsize"))
			assert_int_equal(value, 32);
		if (!strcmp(name, "type_members"))
			assert_int_equal(value, 240);
		if (!strcmp(name, "member_size"))
			assert_int_equal(value, 40);
		if (!strcmp(name, "member_offset"))
			assert_int_equal(value, 16);
		/* What cpython__tls() reads a Py_tss_t as: {int _is_initialized; key}. */
		if (!strcmp(name, "tss_key_initialized"))
			assert_int_equal(value, 0);
		if (!strcmp(name, "tss_key_key"))
			assert_int_equal(value, 4);
	}
	assert_int_equal(pclose(f), 0);
	assert_int_equal(checked, 25);
	assert_null(cpython__table(CPY_VERSION(3, 10)));
	assert_non_null(cpython__table(CPY_VERSION(3, 12)));
	/* The checksum window: from co_firstlineno, 64 bytes, before anything that changes. */
	assert_int_equal(cpython__csum_off(l), 72);
	assert_int_equal(cpython__csum_off(l) + 64, l->code_qualname + 8);
}

static void put64(uint8_t *b, size_t at, uint64_t v)
{
	memcpy(b + at, &v, 8);
}

static void test_debug_offsets(void **state)
{
	uint8_t b[1024];
	struct cpython_layout l;
	uint32_t v;

	(void)state;
	/* 3.13: the block as 3.13 lays it out (fields read from it, at their places). */
	memset(b, 0, sizeof(b));
	memcpy(b, "xdebugpy", 8);
	put64(b, 8, 0x030d03f0);
	put64(b, 40, 40);   /* runtime_state.interpreters_head */
	put64(b, 64, 0);    /* interpreter_state.next */
	put64(b, 72, 7168); /* threads_head */
	put64(b, 168, 8);   /* thread_state.next */
	put64(b, 176, 16);
	put64(b, 184, 72);  /* current_frame */
	put64(b, 200, 160); /* native_thread_id */
	put64(b, 232, 8);   /* interpreter_frame.previous */
	put64(b, 240, 0);
	put64(b, 248, 56);
	put64(b, 264, 70);
	put64(b, 280, 112); /* code_object.filename */
	put64(b, 288, 120);
	put64(b, 296, 128);
	put64(b, 304, 136);
	put64(b, 312, 68);
	put64(b, 344, 200);
	put64(b, 520, 16); /* bytes_object.ob_size */
	put64(b, 528, 32);
	put64(b, 544, 32); /* unicode_object.state */
	put64(b, 552, 16);
	put64(b, 560, 40);
	assert_int_equal(cpython__debug_offsets(b, sizeof(b), &l, &v), 0);
	assert_int_equal(v, 0x030d03f0);
	assert_int_equal(l.interp_threads_head, 7168);
	assert_int_equal(l.tstate_frame, 72);
	assert_false(l.has_cframe);
	assert_int_equal(l.tstate_native_tid, 160);
	assert_int_equal(l.frame_owner, 70);
	assert_int_equal(l.owner_entry, 3);
	assert_int_equal(l.code_adaptive, 200);
	assert_int_equal(l.unicode_ascii_data, 40);
	assert_int_equal(l.unicode_compact_data, 56);
	assert_false(l.tagged_code);
	/* An offset that cannot be one: refused. */
	put64(b, 232, 1ull << 40);
	assert_int_equal(cpython__debug_offsets(b, sizeof(b), &l, &v), -EINVAL);
	put64(b, 232, 8);
	/* 3.14: the same fields further on, and tagged frame executables. */
	memset(b + 16, 0, sizeof(b) - 16);
	put64(b, 8, 0x030e00f0);
	put64(b, 72, 7000);
	put64(b, 208, 72);
	put64(b, 224, 152);
	put64(b, 256, 8);
	put64(b, 272, 56);
	put64(b, 288, 74);
	put64(b, 352, 68);
	put64(b, 384, 208);
	put64(b, 640, 40);
	assert_int_equal(cpython__debug_offsets(b, sizeof(b), &l, &v), 0);
	assert_int_equal(l.interp_threads_head, 7000);
	assert_int_equal(l.tstate_native_tid, 152);
	assert_int_equal(l.frame_owner, 74);
	assert_int_equal(l.code_adaptive, 208);
	assert_true(l.tagged_code);
	/* A version whose block is not known; no cookie; too short. */
	put64(b, 8, 0x030f0000);
	assert_int_equal(cpython__debug_offsets(b, sizeof(b), &l, &v), -ENOTSUP);
	assert_int_equal(v, 0x030f0000);
	memcpy(b, "xdebugpx", 8);
	assert_int_equal(cpython__debug_offsets(b, sizeof(b), &l, &v), -ENOENT);
	memcpy(b, "xdebugpy", 8);
	put64(b, 8, 0x030d0000);
	assert_int_equal(cpython__debug_offsets(b, 300, &l, &v), -EINVAL);
}

static int hexval(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

static void test_location_table(void **state)
{
	FILE *f = fopen("tests/unit/data/py311_linetables.txt", "r");
	char line[8192];
	size_t codes = 0;

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *name = strtok(line, " "), *first, *hex, *lines, *tok, *save = NULL;
		uint8_t table[2048];
		size_t n = 0;
		uint32_t instr = 0, got;

		if (!name || name[0] == '#')
			continue;
		first = strtok(NULL, " ");
		hex = strtok(NULL, " ");
		lines = strtok(NULL, " \n");
		assert_non_null(lines);
		for (size_t i = 0; hex[i] && hex[i + 1]; i += 2)
			table[n++] = (uint8_t)(hexval(hex[i]) << 4 | hexval(hex[i + 1]));
		for (tok = strtok_r(lines, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save), instr++) {
			int rc = cpython__line(table, n, (uint32_t)atoi(first), instr, &got);

			if (!strcmp(tok, "-") || !strcmp(tok, "0")) {
				assert_int_equal(rc, -ENOENT);
				continue;
			}
			if (rc || got != (uint32_t)atoi(tok))
				fail_msg("%s instr %u: want line %s, got %d/%u", name, instr, tok,
					 rc, got);
		}
		/* Past the end, and every truncation: an answer or an error, never a read past. */
		assert_int_equal(cpython__line(table, n, 1, instr + 100, &got), -ERANGE);
		for (size_t cut = 0; cut < n; cut++)
			for (uint32_t i = 0; i < instr; i += 3)
				(void)cpython__line(table, cut, 1, i, &got);
		codes++;
	}
	fclose(f);
	assert_int_equal(codes, 3);
	assert_int_equal(cpython__line((const uint8_t *)"\x01", 1, 1, 0, &(uint32_t){ 0 }),
			 -EINVAL);
}

static void test_str(void **state)
{
	const struct cpython_layout *l = cpython__table(CPY_VERSION(3, 11));
	uint8_t obj[256];
	char out[64];
	uint64_t len;
	uint32_t st;

	(void)state;
	memset(obj, 0, sizeof(obj));
	len = 5;
	memcpy(obj + l->unicode_length, &len, 8);
	st = 1u << 2 | 1u << 5 | 1u << 6; /* kind 1, compact, ascii */
	memcpy(obj + l->unicode_state, &st, 4);
	memcpy(obj + l->unicode_ascii_data, "alpha", 5);
	assert_int_equal(cpython__str(l, obj, sizeof(obj), out, sizeof(out)), 5);
	assert_string_equal(out, "alpha");
	/* UCS-2, not ASCII: data after the compact header, as UTF-8. */
	st = 2u << 2 | 1u << 5;
	memcpy(obj + l->unicode_state, &st, 4);
	len = 2;
	memcpy(obj + l->unicode_length, &len, 8);
	memcpy(obj + l->unicode_compact_data, "\xe9\x00\x3b\x26", 4); /* é ☻ */
	assert_int_equal(cpython__str(l, obj, sizeof(obj), out, sizeof(out)), 5);
	assert_string_equal(out, "\xc3\xa9\xe2\x98\xbb");
	/* Not compact; a kind that does not exist; a length past what was read. */
	st = 1u << 2;
	memcpy(obj + l->unicode_state, &st, 4);
	assert_int_equal(cpython__str(l, obj, sizeof(obj), out, sizeof(out)), -EINVAL);
	st = 3u << 2 | 1u << 5;
	memcpy(obj + l->unicode_state, &st, 4);
	assert_int_equal(cpython__str(l, obj, sizeof(obj), out, sizeof(out)), -EINVAL);
	st = 1u << 2 | 1u << 5 | 1u << 6;
	memcpy(obj + l->unicode_state, &st, 4);
	len = 1000;
	memcpy(obj + l->unicode_length, &len, 8);
	assert_int_equal(cpython__str(l, obj, sizeof(obj), out, sizeof(out)), -EINVAL);
	/* Truncated to the output's size, still NUL-terminated. */
	len = 100;
	memcpy(obj + l->unicode_length, &len, 8);
	memset(obj + l->unicode_ascii_data, 'x', 100);
	assert_int_equal(cpython__str(l, obj, sizeof(obj), out, 8), 7);
}

/* --- a live python3.11 ------------------------------------------------------------------ */

static const char SCRIPT[] = "import sys, time\n"
			     "def alpha_leaf():\n"
			     "    return sum(range(10))\n"
			     "class Box:\n"
			     "    def m\xc3\xa9"
			     "thod(self):\n"
			     "        pass\n"
			     "print(hex(id(alpha_leaf.__code__)), hex(id(Box.m\xc3\xa9"
			     "thod.__code__)), flush=True)\n"
			     "sys.stdin.read()\n";

static void test_live_interpreter(void **state)
{
	char *path = write_temp_str(SCRIPT);
	int in[2], out[2];
	pid_t pid;
	FILE *rd;
	unsigned long long a, b;
	struct ptab *t;
	struct pproc *p;
	struct proc_id id = { 0 };
	struct cpython_proc cp;
	struct pynamer *n;
	struct pyframe f;
	char why[256];
	__u64 window[BP_PY_CSUM_WORDS], hash;
	uint32_t csum;

	(void)state;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	child = pid; /* killed by reap_child() if an assertion ends the test */
	assert_true(pid >= 0);
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]); /* else stdin never ends */
		close(out[0]);
		execl("/usr/bin/python3.11", "python3.11", path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	rd = fdopen(out[0], "r");
	assert_int_equal(fscanf(rd, "%llx %llx", &a, &b), 2);

	t = ptab__new(&(struct ptab_opts){ 0 });
	assert_non_null(t);
	id.pid = (uint32_t)pid;
	id.exec_id = PROC_EXEC_ANY;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	assert_int_equal(cpython__probe(t, p, &cp, why, sizeof(why)), 0);
	assert_int_equal(cp.version >> 16, 0x030b);
	assert_int_equal(cp.l.code_qualname, 128); /* from PyCode_Type's members */
	assert_int_equal(cp.l.code_adaptive, 184); /* tp_basicsize */
	assert_true(cp.eval[0][0] < cp.eval[0][1]);

	n = pynamer__new(&cp);
	assert_int_equal(ptab__read_mem(t, p, a + cp.csum_off, window, sizeof(window)), 64);
	assert_int_equal(ptab__read_mem(t, p, window[7] + BP_PY_STR_HASH, &hash, 8), 8);
	csum = bp_py_csum(window, hash);
	assert_int_equal(pynamer__name(n, t, p, a, 2, csum, NULL, &f), 0);
	assert_string_equal(f.name, "alpha_leaf");
	assert_string_equal(f.file, path);
	assert_int_equal(f.line, 3); /* instruction 2: the body */
	assert_int_equal(pynamer__name(n, t, p, a, 0, csum, NULL, &f), 0);
	assert_int_equal(f.line, 2); /* RESUME: the def line */
	/* Another checksum: not this object; and a code object's neighbour is not one. */
	assert_int_equal(pynamer__name(n, t, p, a, 0, csum ^ 1, NULL, &f), -ESTALE);
	assert_int_equal(pynamer__name(n, t, p, a + 16, 0, csum, NULL, &f), -EINVAL);
	assert_int_equal(ptab__read_mem(t, p, b + cp.csum_off, window, sizeof(window)), 64);
	assert_int_equal(ptab__read_mem(t, p, window[7] + BP_PY_STR_HASH, &hash, 8), 8);
	assert_int_equal(
		pynamer__name(n, t, p, b, BP_PY_NO_INSTR, bp_py_csum(window, hash), NULL, &f), 0);
	assert_string_equal(f.name, "Box.m\xc3\xa9thod");
	assert_int_equal(f.line, 0);
	/* Cached: named without the process. */
	assert_int_equal(pynamer__name(n, t, NULL, a, 2, csum, NULL, &f), 0);
	assert_string_equal(f.name, "alpha_leaf");
	pynamer__free(n);
	ptab__put(t, p);
	ptab__free(t);
	close(in[1]);
	fclose(rd);
	waitpid(pid, NULL, 0);
	child = 0;
	unlink(path);
	free(path);
}

/*
 * Each thread's state in its thread-specific data, where the walker reads
 * it (cpython__tls: the interpreter's key, glibc's slot layout from its
 * libthread_db descriptors): from each thread's pointer (pthread_self(),
 * the FS base the kernel keeps), two reads lead to its PyThreadState - for
 * the main thread and for a thread started later.
 */
static const char TLS_SCRIPT[] =
	"import ctypes, sys, threading\n"
	"libc = ctypes.CDLL(None)\n"
	"libc.pthread_self.restype = ctypes.c_void_p\n"
	"ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p\n"
	"def show():\n"
	"    print(hex(libc.pthread_self()), hex(ctypes.pythonapi.PyThreadState_Get()), flush=True)\n"
	"show()\n"
	"t = threading.Thread(target=lambda: (show(), sys.stdin.read()))\n"
	"t.start()\n"
	"t.join()\n";

static void test_thread_state_in_thread_data(void **state)
{
	char *path = write_temp_str(TLS_SCRIPT);
	unsigned long long tp[2], ts[2];
	struct cpython_tls_cache cache = { 0 };
	struct proc_id id = { 0 };
	struct cpython_proc cp;
	int in[2], out[2];
	struct pproc *p;
	struct ptab *t;
	char why[256];
	FILE *rd;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	child = pid;
	assert_true(pid >= 0);
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/usr/bin/python3.11", "python3.11", path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	rd = fdopen(out[0], "r");
	for (int i = 0; i < 2; i++)
		assert_int_equal(fscanf(rd, "%llx %llx", &tp[i], &ts[i]), 2);
	t = ptab__new(&(struct ptab_opts){ 0 });
	assert_non_null(t);
	id.pid = (uint32_t)pid;
	id.exec_id = PROC_EXEC_ANY;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	assert_int_equal(cpython__probe(t, p, &cp, why, sizeof(why)), 0);
	assert_false(cp.tls);
	assert_int_equal(cpython__tls(t, p, &cp, &cache), 0);
	assert_true(cp.tls);
	for (int i = 0; i < 2; i++) {
		uint64_t block = 0, got = 0;

		assert_int_equal(ptab__read_mem(t, p, tp[i] + cp.tls_l1, &block, 8), 8);
		assert_int_equal(ptab__read_mem(t, p, block + cp.tls_l2, &got, 8), 8);
		assert_int_equal(got, ts[i]);
	}
	/* What the walker is told. */
	{
		struct bp_pyproc bp;

		cpython__bpf(&cp, &bp);
		assert_true(bp.flags & PYPROC_F_TLS);
		assert_int_equal(bp.tls_l1, cp.tls_l1);
		assert_int_equal(bp.tls_l2, cp.tls_l2);
	}
	/* Again, from what the cache remembers of the libc: the same. */
	{
		uint16_t l1 = cp.tls_l1, l2 = cp.tls_l2;

		assert_true(cache.e[0].used);
		assert_int_equal(cache.e[0].err, 0);
		assert_int_equal(cache.next, 1);
		cp.tls = false;
		assert_int_equal(cpython__tls(t, p, &cp, &cache), 0);
		assert_int_equal(cache.next, 1);
		assert_true(cp.tls && cp.tls_l1 == l1 && cp.tls_l2 == l2);
		assert_int_equal(cpython__tls(t, p, &cp, NULL), 0);
		assert_true(cp.tls && cp.tls_l1 == l1 && cp.tls_l2 == l2);
	}
	/* A layout without the key: no thread data. */
	cp.l.runtime_tss_key = 0;
	assert_int_equal(cpython__tls(t, p, &cp, &cache), -ENOENT);
	assert_false(cp.tls);
	ptab__put(t, p);
	ptab__free(t);
	close(in[1]);
	fclose(rd);
	waitpid(pid, NULL, 0);
	child = 0;
	unlink(path);
	free(path);
}

/*
 * exe stopped before it ran - at its exec (ptrace), or with audit (an
 * LD_AUDIT library) where the loader stops it: "not yet" (-EAGAIN: probe
 * again), neither "not Python" (-ENOENT) nor "a layout bpfprof does not
 * know" (-ENOTSUP). file_found: the interpreter's file is mapped already
 * (out->runtime set), so the unwinder's retries read no mappings again. Let
 * go, it is found once initialized - by cpython__recheck() (its memory only)
 * where the file was found, with a full probe of its mappings read again
 * where it was not. Each file's symbols are read once over all the probes
 * (its verdict is remembered with it): at most the executable and its
 * libpython.
 */
static void probe_stopped(const char *exe, const char *audit, bool file_found)
{
	struct proc_id id = { 0 };
	struct cpython_proc cp, full;
	struct ptab *t;
	struct pproc *p;
	char why[256];
	int status, err = 0;
	unsigned reads;
	pid_t pid;

	pid = fork();
	child = pid; /* killed by reap_child() if an assertion ends the test */
	assert_true(pid >= 0);
	if (!pid) {
		if (audit)
			setenv("LD_AUDIT", audit, 1);
		else
			ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(exe, "python3.11", "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	assert_int_equal(WSTOPSIG(status), audit ? SIGSTOP : SIGTRAP);
	t = ptab__new(&(struct ptab_opts){ 0 });
	assert_non_null(t);
	id.pid = (uint32_t)pid;
	id.exec_id = PROC_EXEC_ANY;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	assert_int_equal(cpython__probe(t, p, &cp, why, sizeof(why)), -EAGAIN);
	assert_int_equal(cp.runtime != 0, file_found);
	assert_true(cp.files_read >= 1);
	reads = cp.files_read;
	if (audit)
		assert_int_equal(kill(pid, SIGCONT), 0);
	else
		assert_int_equal(ptrace(PTRACE_DETACH, pid, NULL, NULL), 0);
	for (int i = 0; i < 500; i++) {
		if (file_found) {
			err = cpython__recheck(t, p, &cp, why, sizeof(why));
		} else {
			assert_int_equal(ptab__refresh(t, p), 0);
			err = cpython__probe(t, p, &cp, why, sizeof(why));
			reads += cp.files_read;
		}
		if (err != -EAGAIN)
			break;
		usleep(10000);
	}
	assert_int_equal(err, 0);
	assert_int_equal(cp.version >> 16, 0x030b);
	assert_true(reads <= 2);
	/* The memory-only retry finds what a full probe finds - which reads no file again. */
	assert_int_equal(cpython__probe(t, p, &full, why, sizeof(why)), 0);
	assert_int_equal(full.files_read, 0);
	assert_int_equal(cp.runtime, full.runtime);
	assert_int_equal(cp.code_type, full.code_type);
	assert_int_equal(cp.version, full.version);
	assert_int_equal(cp.csum_off, full.csum_off);
	assert_memory_equal(&cp.l, &full.l, sizeof(cp.l));
	assert_memory_equal(cp.eval, full.eval, sizeof(cp.eval));
	assert_string_equal(cp.module, full.module);
	ptab__put(t, p);
	ptab__free(t);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	child = 0;
}

/* Debian's python3.11 at its exec: the interpreter is in the executable, not initialized. */
static void test_interpreter_not_initialized(void **state)
{
	(void)state;
	probe_stopped("/usr/bin/python3.11", NULL, true);
}

/* A python3.11 built --enable-shared, at its exec: its libpython is not mapped yet. */
static void test_libpython_not_mapped_yet(void **state)
{
	(void)state;
	probe_stopped(fixture_path("pyshared/python3.11"), NULL, false);
}

/* ... and with its libpython mapped, not relocated: PyCode_Type's members unrelocated. */
static void test_libpython_not_relocated_yet(void **state)
{
	char audit[4096];

	(void)state;
	snprintf(audit, sizeof(audit), "%s", fixture_path("stopatload.so"));
	probe_stopped(fixture_path("pyshared/python3.11"), audit, true);
}

/*
 * A fork()ed Python that runs a command: its mappings read while it was the
 * Python, its memory read after the exec. Not "a Python without the layout
 * bpfprof expects" (a warning about a process that is no Python), but gone.
 */
static void test_exec_after_the_mappings_were_read(void **state)
{
	struct proc_id id = { .exec_id = PROC_EXEC_ANY };
	struct cpython_proc cp, before;
	char why[256], exe[PATH_MAX], link[64];
	struct ptab *t;
	struct pproc *p;
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	child = pid; /* killed by reap_child() if an assertion ends the test */
	assert_true(pid >= 0);
	if (!pid) {
		execl("/usr/bin/python3.11", "python3.11", "-c",
		      "import os, signal; os.kill(os.getpid(), signal.SIGSTOP); "
		      "os.execv('/bin/sleep', ['sleep', '30'])",
		      (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	t = ptab__new(&(struct ptab_opts){ 0 });
	assert_non_null(t);
	id.pid = (uint32_t)pid;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	assert_int_equal(ptab__check_image(t, p), 0);
	assert_int_equal(cpython__probe(t, p, &before, why, sizeof(why)), 0);
	assert_int_equal(kill(pid, SIGCONT), 0);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 500; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		if (strstr(exe, "sleep"))
			break;
		usleep(10000);
	}
	assert_non_null(strstr(exe, "sleep"));
	usleep(100000); /* the exec finished: sleep is in its nanosleep() */
	assert_int_equal(ptab__check_image(t, p), -ESRCH);
	assert_int_equal(cpython__probe(t, p, &cp, why, sizeof(why)), -ESRCH);
	/* A retry that reads only memory: the same (what it found before is stale). */
	assert_int_equal(cpython__recheck(t, p, &before, why, sizeof(why)), -ESRCH);
	ptab__put(t, p);
	ptab__free(t);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	child = 0;
}

static uint8_t *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	*len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(*len);
	assert_true(buf && fread(buf, 1, *len, f) == *len);
	fclose(f);
	return buf;
}

/* cpython__needs_libpython() on an image (copied: libelf reads it in place). */
static bool needs_in(const uint8_t *img, size_t len)
{
	char *copy = malloc(len);
	Elf *elf;
	bool needs;

	assert_non_null(copy);
	memcpy(copy, img, len);
	elf = elf_memory(copy, len);
	needs = elf && cpython__needs_libpython(elf);
	if (elf)
		elf_end(elf);
	free(copy);
	return needs;
}

/*
 * The DT_NEEDED check reads a process's executable (untrusted): the
 * shared-libpython python3.11 needs it, Debian's does not; a corrupt name
 * offset, a .dynamic section claiming 2^60 bytes or one longer than
 * MAX_DYN entries, and a truncated file are answered, not crashed on.
 */
static void test_needs_libpython_hostile(void **state)
{
	uint8_t *img, *bad;
	Elf64_Ehdr *eh;
	Elf64_Shdr *dyn = NULL;
	Elf64_Dyn *d;
	size_t len;

	(void)state;
	elf_version(EV_CURRENT);
	img = read_whole(fixture_path("pyshared/python3.11"), &len);
	bad = malloc(len);
	assert_non_null(bad);
	assert_true(needs_in(img, len));
	eh = (Elf64_Ehdr *)img;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff + i * eh->e_shentsize);

		if (sh->sh_type == SHT_DYNAMIC)
			dyn = sh;
	}
	assert_non_null(dyn);
	/* Every DT_NEEDED name offset out of the string table. */
	memcpy(bad, img, len);
	d = (Elf64_Dyn *)(bad + dyn->sh_offset);
	for (size_t i = 0; i < dyn->sh_size / sizeof(*d); i++)
		if (d[i].d_tag == DT_NEEDED)
			d[i].d_un.d_val = 0xfffffff0;
	assert_false(needs_in(bad, len));
	/* .dynamic claiming 2^60 bytes; then as many entries as fit, none a DT_NULL. */
	memcpy(bad, img, len);
	((Elf64_Shdr *)(bad + ((uint8_t *)dyn - img)))->sh_size = 1ull << 60;
	assert_false(needs_in(bad, len));
	memcpy(bad, img, len);
	d = (Elf64_Dyn *)(bad + dyn->sh_offset);
	for (size_t i = 0; i < dyn->sh_size / sizeof(*d); i++)
		d[i].d_tag = DT_DEBUG;
	assert_false(needs_in(bad, len));
	/* Cut off in the middle of the section headers. */
	assert_false(needs_in(img, eh->e_shoff + eh->e_shentsize / 2));
	free(bad);
	free(img);
	/* Debian's python3.11 has its interpreter in the executable. */
	img = read_whole("/usr/bin/python3.11", &len);
	assert_false(needs_in(img, len));
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_311_table_matches_headers),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_location_table),
		cmocka_unit_test(test_str),
		cmocka_unit_test_teardown(test_live_interpreter, reap_child),
		cmocka_unit_test_teardown(test_thread_state_in_thread_data, reap_child),
		cmocka_unit_test_teardown(test_interpreter_not_initialized, reap_child),
		cmocka_unit_test_teardown(test_libpython_not_mapped_yet, reap_child),
		cmocka_unit_test_teardown(test_libpython_not_relocated_yet, reap_child),
		cmocka_unit_test(test_needs_libpython_hostile),
		cmocka_unit_test_teardown(test_exec_after_the_mappings_were_read, reap_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
