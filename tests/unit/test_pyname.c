// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_pyname.c - the Python namer's bounds on a live python3.11 (a
 * tenant's, in the attack this guards against): code objects whose
 * qualnames and file names are as long as the agent reads, and a line
 * table longer than what is kept of it. Each cap holds after every
 * insertion (one namer's, and the symbolizer's over all processes), not at
 * a later sweep; one name costs at most PYNAME_ITEM_MAX; a line past the
 * kept start of a table is read when asked, out of a budget, and
 * remembered.
 */
#include "testutil.h"

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang/cpython.h"
#include "proc/ptab.h"
#include "sym/pyname.h"
#include "sym/symbolizer.h"

#define NCODES	 48
#define MAX_KIDS 2

/*
 * NCODES code objects with 1004-character qualnames (4 bytes each in
 * UTF-8) and 1011-character file names (1.5 KiB), each file ending in its
 * own base name; and `big`, whose line table is several KiB: the start of
 * an instruction of its last lines, and that line.
 */
static const char SCRIPT[] =
	"import sys, types\n"
	"E = '\\U0001F600'\n"
	"def template(k):\n"
	"    return k + 1\n"
	"fs = [types.FunctionType(template.__code__.replace(\n"
	"          co_qualname=E * 1000 + '%04d' % k,\n"
	"          co_filename='/' + '\\u00e9/' * 501 + 'f%04d.py' % k), {})\n"
	"      for k in range(48)]\n"
	"src = 'def big(x):\\n' + ''.join('    x = x + %d\\n' % i for i in range(600)) + '    "
	"return x\\n'\n"
	"ns = {}\n"
	"exec(compile(src, '/tmp/big.py', 'exec'), ns)\n"
	"big = ns['big'].__code__\n"
	"start, end, line = list(big.co_lines())[-3]\n"
	"print(' '.join(hex(id(f.__code__)) for f in fs))\n"
	"print(hex(id(big)), start // 2, line, len(big.co_linetable), flush=True)\n"
	"sys.stdin.read()\n";

struct kid {
	pid_t pid;
	int in;
	uint64_t code[NCODES];
	uint64_t big;
	unsigned big_instr, big_line, big_table;
};

static struct kid kids[MAX_KIDS];
static char *script;

static int reap(void **state)
{
	(void)state;
	for (int i = 0; i < MAX_KIDS; i++) {
		if (kids[i].pid > 0) {
			kill(kids[i].pid, SIGKILL);
			waitpid(kids[i].pid, NULL, 0);
			close(kids[i].in);
		}
		kids[i].pid = 0;
	}
	if (script) {
		unlink(script);
		free(script);
		script = NULL;
	}
	return 0;
}

static void start_kid(struct kid *k)
{
	unsigned long long v;
	int in[2], out[2];
	FILE *rd;

	if (!script)
		script = write_temp_str(SCRIPT);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	k->pid = fork();
	assert_true(k->pid >= 0);
	if (!k->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/usr/bin/python3.11", "python3.11", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	k->in = in[1];
	rd = fdopen(out[0], "r");
	for (int i = 0; i < NCODES; i++) {
		assert_int_equal(fscanf(rd, "%llx", &v), 1);
		k->code[i] = v;
	}
	assert_int_equal(
		fscanf(rd, "%llx %u %u %u", &v, &k->big_instr, &k->big_line, &k->big_table), 4);
	k->big = v;
	fclose(rd);
	/* What the test relies on: the big table is longer than what is kept. */
	assert_true(k->big_table > 2 * PYNAME_LT_KEEP);
}

/* The checksum the sampler would have taken of the code object at code. */
static uint32_t csum_of(struct ptab *t, struct pproc *p, const struct cpython_proc *cp,
			uint64_t code)
{
	__u64 window[BP_PY_CSUM_WORDS], hash;

	assert_int_equal(ptab__read_mem(t, p, code + cp->csum_off, window, sizeof(window)), 64);
	assert_int_equal(ptab__read_mem(t, p, window[7] + BP_PY_STR_HASH, &hash, 8), 8);
	return bp_py_csum(window, hash);
}

/* A name cut to the caps: its start kept (the qualname), its end kept (the file). */
static void check_cut(const struct pyframe *f, int k)
{
	char tail[32];
	size_t n = strlen(f->name), m;

	assert_true(n <= PYNAME_NAME_MAX);
	assert_true(n > PYNAME_NAME_MAX - 8);
	assert_memory_equal(f->name, "\xf0\x9f\x98\x80", 4);
	assert_string_equal(f->name + n - 3, "...");
	assert_non_null(f->file);
	m = strlen(f->file);
	assert_true(m <= PYNAME_FILE_MAX);
	assert_memory_equal(f->file, "...", 3);
	snprintf(tail, sizeof(tail), "/f%04d.py", k);
	assert_string_equal(f->file + m - strlen(tail), tail);
	/* The cut is at a character's start: é (c3 a9) whole after the "...". */
	assert_true((f->file[3] & 0xc0) != 0x80);
}

static void test_caps_hold_at_every_insertion(void **state)
{
	struct kid *k = &kids[0];
	struct proc_id id = { 0 };
	struct cpython_proc cp;
	struct pynamer *n;
	struct pyframe f;
	struct pproc *p;
	struct ptab *t;
	char why[256];
	size_t cap = 8 * PYNAME_ITEM_MAX, heap0, budget;
	uint32_t csum;

	(void)state;
	start_kid(k);
	t = ptab__new(&(struct ptab_opts){ 0 });
	assert_non_null(t);
	id.pid = (uint32_t)k->pid;
	id.exec_id = PROC_EXEC_ANY;
	assert_int_equal(ptab__get(t, &id, &p), 0);
	assert_int_equal(cpython__probe(t, p, &cp, why, sizeof(why)), 0);
	n = pynamer__new(&cp);
	assert_non_null(n);
	pynamer__set_caps(n, 65536, cap);
	heap0 = mallinfo2().uordblks;
	for (int i = 0; i < NCODES; i++) {
		assert_int_equal(pynamer__name(n, t, p, k->code[i], 0,
					       csum_of(t, p, &cp, k->code[i]), NULL, &f),
				 0);
		check_cut(&f, i);
		/* The cap holds now, not after a sweep; so does the heap. */
		assert_true(pynamer__bytes(n) <= cap);
		assert_true(mallinfo2().uordblks <= heap0 + cap + (64u << 10));
	}
	/* 48 objects of ~1.7 KiB each do not fit in 8 of the largest: it started over. */
	assert_true(pynamer__resets(n) >= 2);
	assert_true(pynamer__count(n) < NCODES);

	/* A line past what is kept of the table: none without the budget for it... */
	csum = csum_of(t, p, &cp, k->big);
	budget = k->big_table - 1;
	assert_int_equal(pynamer__name(n, t, p, k->big, k->big_instr, csum, &budget, &f), 0);
	assert_string_equal(f.name, "big");
	assert_int_equal(f.line, 0);
	assert_true(f.over_budget);
	assert_int_equal(budget, k->big_table - 1);
	/* ... read with it, out of it ... */
	budget = 1u << 20;
	assert_int_equal(pynamer__name(n, t, p, k->big, k->big_instr, csum, &budget, &f), 0);
	assert_int_equal(f.line, k->big_line);
	assert_false(f.over_budget);
	assert_int_equal(budget, (1u << 20) - k->big_table);
	/* ... and remembered: the process need not be there to answer again. */
	assert_int_equal(pynamer__name(n, t, NULL, k->big, k->big_instr, csum, &budget, &f), 0);
	assert_int_equal(f.line, k->big_line);
	assert_int_equal(budget, (1u << 20) - k->big_table);
	/* A line in the kept start: no read (the def line's RESUME). */
	assert_int_equal(pynamer__name(n, t, NULL, k->big, 0, csum, &budget, &f), 0);
	assert_int_equal(f.line, 1);
	assert_true(pynamer__bytes(n) <= cap);

	pynamer__free(n);
	ptab__put(t, p);
	ptab__free(t);
}

static void test_symbolizer_total_holds_at_every_insertion(void **state)
{
	size_t total = 10 * PYNAME_ITEM_MAX, one = 8 * PYNAME_ITEM_MAX;
	struct symbolizer_opts so = { .max_python_bytes = total, .max_python_proc_bytes = one };
	struct cpython_proc cp[MAX_KIDS];
	struct proc_id id[MAX_KIDS];
	struct pproc *p[MAX_KIDS];
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct ptab *t;
	char why[256];
	struct sym out;

	(void)state;
	t = ptab__new(&(struct ptab_opts){ 0 });
	assert_non_null(t);
	for (int i = 0; i < MAX_KIDS; i++) {
		start_kid(&kids[i]);
		id[i] = (struct proc_id){ .pid = (uint32_t)kids[i].pid, .exec_id = PROC_EXEC_ANY };
		assert_int_equal(ptab__get(t, &id[i], &p[i]), 0);
		assert_int_equal(cpython__probe(t, p[i], &cp[i], why, sizeof(why)), 0);
	}
	s = symbolizer__new(&so);
	assert_non_null(s);
	/* Both processes in turn: each under its cap, both together under theirs, always. */
	for (int j = 0; j < NCODES; j++) {
		for (int i = 0; i < MAX_KIDS; i++) {
			uint64_t code = kids[i].code[j];
			uint64_t meta = (uint64_t)csum_of(t, p[i], &cp[i], code) << 32;

			symbolizer__python(s, &id[i], code, meta, &out);
			assert_non_null(out.name);
			check_cut(&(struct pyframe){ .name = out.name, .file = out.file }, j);
			symbolizer__stats(s, &st);
			assert_true(st.py_bytes <= total);
		}
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.py_frames, 2 * NCODES);
	assert_true(st.py_resets >= 2);
	symbolizer__free(s);
	for (int i = 0; i < MAX_KIDS; i++)
		ptab__put(t, p[i]);
	ptab__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_caps_hold_at_every_insertion, reap),
		cmocka_unit_test_teardown(test_symbolizer_total_holds_at_every_insertion, reap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
