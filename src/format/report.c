// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * report.c - a text summary for a terminal, in the spirit of
 * `perf report --stdio` but short: the hottest functions by self samples
 * (the function was running) and by total samples (it was on the stack,
 * counted once per stack even when it recurses), then samples per process.
 * Also the differential table of "bpfprof diff -f report", and instead of
 * the tables, with --callers, --callees or --call-graph, the call graph of
 * some functions (below).
 *
 * A profile with off-CPU time (--off-cpu) gets the same tables twice: for
 * the on-CPU samples, then for the off-CPU time in microseconds (self: the
 * frame that waited, total: waiting there or below); -f report with
 * --view picks one of them, or the wall-clock view.
 *
 * Functions are (kind, name, module file name): two programs' main() are
 * two rows. Rows fit 80 columns; longer C++ signatures lose template
 * arguments and parameter lists first (other names, a Python function's
 * "<locals>" or a Go method's "(*T)", keep theirs), then names lose their
 * end ("…").
 */
#include "format/writer.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/htab.h"
#include "base/util.h"
#include "format/view.h"

#define REPORT_WIDTH 80
/* The Module column: as wide as its longest name, between these (it was 12,
 * and cut libstdc++.so.6.0.30 where two versions differ). */
#define MODULE_MIN 12
#define MODULE_MAX 40
/* A wider Module column takes its columns from the name, down to this; then
 * the line grows past 80. */
#define NAME_MIN 24

struct fstat {
	const char *name;   /* the profile's string */
	const char *module; /* basename, or NULL */
	enum frame_kind kind;
	uint64_t self, total;
	uint64_t seen; /* last sample (+1) that counted it in total */
};

struct fstats {
	struct fstat *v;
	size_t nr;
	uint64_t no_frames; /* samples with only a process name */
};

static void fstats_free(struct fstats *fs)
{
	free(fs->v);
	fs->v = NULL;
}

/*
 * Self and total samples per function (lines of one function are one row);
 * fn_of_out (may be NULL) receives each frame's function + 1 (frame id ->
 * index in fs->v), for the caller to free.
 * by_module: functions of the same name in different files are different rows
 * (report); else they are one (diff), except Python functions, whose file is
 * part of their name.
 */
static int fstats_build(const struct profile *p, bool by_module, struct fstats *fs,
			uint32_t **fn_of_out)
{
	size_t nr_frames = profile__nr_frames(p), cap = 0;
	uint32_t *fn_of = calloc(nr_frames + 1, sizeof(*fn_of)); /* frame -> function + 1 */
	struct htab *idx = htab__new();
	struct sbuf key = { 0 };
	int err = 0;

	memset(fs, 0, sizeof(*fs));
	if (!fn_of || !idx) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t id = 0; id < nr_frames && !err; id++) {
		const struct pframe *f = profile__frame_get(p, id);
		const char *mod = by_module && f->module ? path_basename(f->module) : NULL;
		struct htab_entry *e;
		bool created;
		char kind = (char)('0' + f->kind);

		/* A Python function is known by its file: "run" in two scripts is two rows. */
		if (f->kind == FRAME_PYTHON && f->file)
			mod = writer__short_file(f->file);
		sbuf_reset(&key);
		/* kind, module, NUL, name: unambiguous since names have no NUL. */
		if (sbuf_add(&key, &kind, 1) || sbuf_puts(&key, mod ? mod : "") ||
		    sbuf_add(&key, "", 1) || sbuf_puts(&key, f->name)) {
			err = -ENOMEM;
			break;
		}
		e = htab__upsert(idx, key.buf, key.len + 1, &created);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		if (created) {
			if (array_grow((void **)&fs->v, &cap, fs->nr + 1, sizeof(*fs->v))) {
				err = -ENOMEM;
				break;
			}
			fs->v[fs->nr] =
				(struct fstat){ .name = f->name, .module = mod, .kind = f->kind };
			e->value = (void *)(uintptr_t)fs->nr++;
		}
		fn_of[id] = (uint32_t)(uintptr_t)e->value + 1;
	}
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);
		const uint32_t *fr;
		uint32_t n;

		if (!s->count)
			continue;
		fr = profile__stack_get(p, s->stack, &n);
		if (!n) {
			fs->no_frames += s->count;
			continue;
		}
		fs->v[fn_of[fr[n - 1]] - 1].self += s->count;
		for (uint32_t j = 0; j < n; j++) {
			struct fstat *st = &fs->v[fn_of[fr[j]] - 1];

			if (st->seen == i + 1)
				continue; /* recursion: once per stack */
			st->seen = i + 1;
			st->total += s->count;
		}
	}
out:
	if (err)
		fstats_free(fs);
	if (!err && fn_of_out)
		*fn_of_out = fn_of;
	else
		free(fn_of);
	htab__free(idx);
	sbuf_free(&key);
	return err;
}

static int cmp_self(const void *a, const void *b)
{
	const struct fstat *x = a, *y = b;
	int c;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->module ? x->module : "", y->module ? y->module : "");
}

static int cmp_total(const void *a, const void *b)
{
	const struct fstat *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return cmp_self(a, b);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* Display width of UTF-8 text, one column per code point. */
static size_t columns(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/*
 * Whether name is a C++ (or Rust) signature, the only names whose template
 * arguments and parameter lists may go: a user, JIT or inlined frame with
 * "::" or a parameter list at its end. A Python function's "<locals>" and
 * "<lambda>", a Go method's "(*T)" and a process name are names, kept (as
 * flamegraph.js does).
 */
static bool is_signature(const char *name, enum frame_kind kind)
{
	size_t len = strlen(name);
	const char *q;

	if (kind != FRAME_USER && kind != FRAME_JIT && kind != FRAME_INLINE)
		return false;
	if (strstr(name, "::"))
		return true;
	for (bool cut = true; cut;) {
		static const char *const quals[] = { " const", " volatile", " noexcept", " &&",
						     " &" };

		cut = false;
		for (size_t i = 0; i < ARRAY_SIZE(quals); i++) {
			size_t l = strlen(quals[i]);

			if (len > l && !memcmp(name + len - l, quals[i], l)) {
				len -= l;
				cut = true;
			}
		}
	}
	if (!len || name[len - 1] != ')')
		return false;
	/* f(int): a parameter list right after a name, not Go's "pkg.(*T)". */
	for (q = name + 1; q < name + len; q++)
		if (*q == '(' && (isalnum((unsigned char)q[-1]) || strchr("_>]", q[-1])))
			return true;
	return false;
}

/* Drops template arguments and parameter lists: ns::f<T>(int) -> ns::f(). */
static void simplify(char *s)
{
	static const char anon[] = "(anonymous namespace)";
	int angle = 0, paren = 0;
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (!angle && !paren && !strncmp(r, anon, sizeof(anon) - 1)) {
			memmove(w, r, sizeof(anon) - 1);
			w += sizeof(anon) - 1;
			r += sizeof(anon) - 2;
		} else if (*r == '<' && !(r - s >= 8 && !strncmp(r - 8, "operator", 8)))
			angle++;
		else if (*r == '>' && angle)
			angle--;
		else if (*r == '(' && !angle) {
			if (!paren++)
				*w++ = '(';
		} else if (*r == ')' && paren) {
			if (!--paren)
				*w++ = ')';
		} else if (!angle && !paren)
			*w++ = *r;
	}
	*w = '\0';
}

/* Prints name cleaned and fitted to width columns; a C++ signature of a frame
 * of this kind (FRAME_OTHER for process names) is shortened first. */
static void put_name(FILE *f, const char *name, enum frame_kind kind, size_t width)
{
	size_t size = 3 * strlen(name) + 4, cols;
	char *buf = malloc(size);

	if (!buf)
		return;
	writer__clean_utf8(name, buf, size);
	if (columns(buf) > width) {
		if (is_signature(buf, kind))
			simplify(buf);
		if (columns(buf) > width && width > 1) {
			/* Cut at a code point boundary after width - 1 columns. */
			char *p = buf;

			for (cols = 0; *p && cols < width - 1; p++)
				cols += ((unsigned char)*p & 0xc0) != 0x80;
			while (((unsigned char)*p & 0xc0) == 0x80)
				p++;
			strcpy(p, "\u2026");
		}
	}
	fputs(buf, f);
	free(buf);
}

static const char *module_col(const struct fstat *st)
{
	if (st->kind == FRAME_KERNEL)
		return st->module ? st->module : "[kernel]";
	if (st->kind == FRAME_JIT)
		return "[jit]";
	return st->module ? st->module : "";
}

/* The Module column's width for the modules of rows st[0..n), or of one row. */
static size_t module_width(size_t width, const struct fstat *st)
{
	char mod[3 * MODULE_MAX + 4];
	size_t c;

	/* A name longer than the maximum is cut anyway: a prefix tells. */
	writer__clean_utf8(module_col(st), mod, sizeof(mod));
	c = columns(mod);
	if (c > MODULE_MAX)
		c = MODULE_MAX;
	return c > width ? c : width;
}

/*
 * Prints st's module cleaned, padded to width columns, or cut in the middle
 * with an ellipsis when longer: both the library's name (its start) and its
 * version (its end) stay, which is what tells two apart.
 */
static void put_module(FILE *f, const struct fstat *st, size_t width)
{
	const char *m = module_col(st);
	size_t size = 3 * strlen(m) + 4, cols;
	char *buf = malloc(size);

	if (!buf)
		return;
	writer__clean_utf8(m, buf, size);
	cols = columns(buf);
	if (cols > width && width > 2) {
		size_t tail = (width - 1) / 2, head = width - 1 - tail;
		char *h = buf, *t;

		for (size_t c = 0; c < head; h++)
			c += ((unsigned char)*h & 0xc0) != 0x80;
		while (((unsigned char)*h & 0xc0) == 0x80)
			h++;
		/* The start of the last tail code points. */
		t = buf + strlen(buf);
		for (size_t c = 0; c < tail;)
			c += ((unsigned char)*--t & 0xc0) != 0x80;
		fprintf(f, "%.*s\u2026%s", (int)(h - buf), buf, t);
		cols = width;
	} else
		fputs(buf, f);
	for (; cols < width; cols++)
		fputc(' ', f);
	free(buf);
}

/* Columns for the name after numbers w wide and a module column mw wide. */
static size_t name_width(int w, size_t mw)
{
	long cols = REPORT_WIDTH - 49 - 2L * (w - 9) - (long)(mw - MODULE_MIN);

	return cols > NAME_MIN ? (size_t)cols : NAME_MIN;
}

static void put_count(FILE *f, int width, uint64_t v)
{
	char digits[32], out[48];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v), k = 0;

	for (int i = 0; i < n; i++) {
		out[k++] = digits[i];
		if ((n - i - 1) % 3 == 0 && i + 1 < n)
			out[k++] = ',';
	}
	out[k] = '\0';
	fprintf(f, "%*s", width, out);
}

/* How a view's unit reads: "us" is "µs". */
static const char *unit_label(const char *unit)
{
	return !strcmp(unit, "us") ? "\u00b5s" : unit;
}

/* "bpfprof report: 1,980 samples, 3 lost" then "host, date, 10.0 s at 99 Hz". */
static void header(FILE *f, const char *what, const struct profile *p)
{
	const struct profile_meta *m = profile__meta_c(p);
	const char *sep = "";

	fprintf(f, "%s ", what);
	put_count(f, 0, profile__total(p));
	if (m->unit[0])
		fprintf(f, " %s of %s", unit_label(m->unit), m->value_name);
	else
		fputs(profile__total(p) == 1 ? " sample" : " samples", f);
	if (m->lost) {
		fputs(", ", f);
		put_count(f, 0, m->lost);
		fputs(" lost", f);
	}
	fputc('\n', f);
	if (m->hostname[0]) {
		char host[64];

		writer__clean_utf8(m->hostname, host, sizeof(host));
		fprintf(f, "%s", host);
		sep = ", ";
	}
	if (m->start_ns) {
		time_t t = (time_t)(m->start_ns / NS_PER_SEC);
		struct tm tm;
		char when[32];

		if (gmtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm)) {
			fprintf(f, "%s%s", sep, when);
			sep = ", ";
		}
	}
	if (m->duration_ns) {
		fprintf(f, "%s%.1f s", sep, m->duration_ns / NS_PER_SEC_F);
		sep = " at ";
	}
	if (m->freq_hz)
		fprintf(f, "%s%u Hz", m->duration_ns ? " at " : sep, m->freq_hz);
	if (m->hostname[0] || m->start_ns || m->duration_ns || m->freq_hz)
		fputc('\n', f);
}

/* Width of the count columns: 9, or what the total needs (microseconds of
 * off-CPU time run to ten digits and more); the name column gives way. */
static int count_width(uint64_t total)
{
	int digits = 1;

	while (total >= 10) {
		total /= 10;
		digits++;
	}
	digits += (digits - 1) / 3; /* thousands separators */
	return digits > 9 ? digits : 9;
}

static void function_table(FILE *f, const struct profile_meta *m, struct fstats *fs, uint64_t total,
			   bool by_total, unsigned top)
{
	int w = count_width(total);
	size_t rows = 0, mw = MODULE_MIN;
	char what[96];

	if (fs->nr)
		qsort(fs->v, fs->nr, sizeof(*fs->v), by_total ? cmp_total : cmp_self);
	for (size_t i = 0; i < fs->nr; i++)
		rows += (by_total ? fs->v[i].total : fs->v[i].self) != 0;
	if (top && rows > top)
		rows = top;
	if (!m->unit[0])
		snprintf(what, sizeof(what), "%s",
			 by_total ? "total samples (running or calling)"
				  : "self samples (running)");
	else
		snprintf(what, sizeof(what), "%s %s (%s, %s)", by_total ? "total" : "self",
			 m->value_name, unit_label(m->unit),
			 by_total ? "there or in a callee" : "the leaf frame");
	fprintf(f, "\nTop %zu function%s by %s:\n", rows, plural_s(rows), what);
	for (size_t i = 0; i < rows; i++)
		mw = module_width(mw, &fs->v[i]);
	/* 49 columns of numbers and module (as wide as its names: the line
	 * grows with them), 31 for the name. */
	fprintf(f, "%*s %6s %*s %6s  %-*s  %s\n", w, "Self", "%", w, "Total", "%", (int)mw,
		"Module", "Function");
	for (size_t i = 0; i < rows; i++) {
		const struct fstat *st = &fs->v[i];

		put_count(f, w, st->self);
		fprintf(f, " %6.2f ", pct(st->self, total));
		put_count(f, w, st->total);
		fprintf(f, " %6.2f  ", pct(st->total, total));
		put_module(f, st, mw);
		fputs("  ", f);
		put_name(f, st->name, st->kind, name_width(w, mw));
		fputc('\n', f);
	}
	if (fs->no_frames && !by_total) {
		put_count(f, w, fs->no_frames);
		fprintf(f, " %6.2f  samples with no frames (process name only)\n",
			pct(fs->no_frames, total));
	}
}

/*
 * --style sb-sprof: one flat table in the layout of SBCL's sb-sprof
 * (report :type :flat), so a Lisp user reads it as they read that one:
 * rows by self samples (by total with --sort total), each with its self
 * and total samples and their percentages and Cumul, the self samples of
 * this row and those above; Calls is "-" (bpfprof counts no calls); then
 * "elsewhere", the self samples of the rows not shown (--top) and of
 * samples with no frames. Names whole, as the profile has them, without
 * their kind's suffix.
 */
static void sbsprof_table(FILE *f, struct fstats *fs, uint64_t total, bool by_total, unsigned top)
{
	uint64_t cumul = 0;
	size_t rows = 0;

	if (fs->nr)
		qsort(fs->v, fs->nr, sizeof(*fs->v), by_total ? cmp_total : cmp_self);
	for (size_t i = 0; i < fs->nr; i++)
		rows += fs->v[i].total != 0;
	if (top && rows > top)
		rows = top;
	fputs("\n           Self        Total        Cumul\n"
	      "  Nr  Count     %  Count     %  Count     %    Calls  Function\n",
	      f);
	for (int c = 0; c < 72; c++)
		fputc('-', f);
	fputc('\n', f);
	for (size_t i = 0; i < rows; i++) {
		const struct fstat *st = &fs->v[i];

		cumul += st->self;
		fprintf(f, "%4zu %6" PRIu64 " %5.1f %6" PRIu64 " %5.1f %6" PRIu64 " %5.1f %8s  ",
			i + 1, st->self, pct(st->self, total), st->total, pct(st->total, total),
			cumul, pct(cumul, total), "-");
		put_name(f, st->name, st->kind, SIZE_MAX); /* whole, as sb-sprof prints it */
		fputc('\n', f);
	}
	for (int c = 0; c < 72; c++)
		fputc('-', f);
	fprintf(f, "\n%11" PRIu64 " %5.1f%36s elsewhere\n", total - cumul,
		pct(total - cumul, total), "");
}

static int process_table(FILE *f, const struct profile *p, unsigned top)
{
	const struct profile_meta *m = profile__meta_c(p);
	struct wproc *v = NULL;
	size_t nr = 0, rows;
	int err = writer__processes(p, false, &v, &nr), w = count_width(profile__total(p));

	if (!err) {
		rows = top && nr > top ? top : nr;
		if (m->unit[0]) {
			/* "Off-CPU time by process (µs, ...)", "Memory in use by process
			 * (bytes, ...)": the value's name, its column named by its unit. */
			char col[sizeof(m->unit)];

			snprintf(col, sizeof(col), "%s", !strcmp(m->unit, "us") ? "Time" : m->unit);
			col[0] = (char)toupper((unsigned char)col[0]);
			fprintf(f, "\n%c%s by process (%s, %zu of %zu):\n",
				toupper((unsigned char)m->value_name[0]), m->value_name + 1,
				unit_label(m->unit), rows, nr);
			fprintf(f, "%*s %6s %8s  %s\n", w, col, "%", "PID", "Command");
		} else {
			fprintf(f, "\nSamples by process (%zu of %zu):\n", rows, nr);
			fprintf(f, "%*s %6s %8s  %s\n", w, "Samples", "%", "PID", "Command");
		}
		for (size_t i = 0; i < rows; i++) {
			put_count(f, w, v[i].total);
			fprintf(f, " %6.2f ", pct(v[i].total, profile__total(p)));
			if (v[i].pid)
				fprintf(f, "%8u  ", v[i].pid);
			else
				fprintf(f, "%8s  ", "-");
			put_name(f, v[i].comm[0] ? v[i].comm : "[unknown]", FRAME_OTHER,
				 REPORT_WIDTH - 28 - (w - 9));
			fputc('\n', f);
		}
	}
	writer__processes_free(v, nr);
	return err;
}

/* --- call graph -------------------------------------------------------------
 *
 * report --callers, --callees and --call-graph: a function's line (self and
 * total, as in the tables) with its callers above and its callees below,
 * as pprof's -peek and gprof's call graph print them. An edge is two
 * different functions next to each other on a stack (the caller nearer the
 * root); its weight is the samples of the stacks that hold it, each stack
 * counted once however often the pair recurs in it, and a function calling
 * itself directly is no edge (its samples are in its total once): pprof's
 * rules, so a function's callers add up to its total, less the samples
 * where it is the root, more where one stack reaches it from two callers.
 * Inlined frames are functions like the others: an inlined callee is its
 * own line, under the function it was inlined into.
 */

int writer__name_match(const char *name, const char *pattern)
{
	size_t pl = strlen(pattern);

	if (!pl)
		return -1;
	if (!strcmp(name, pattern))
		return 0;
	if (!strncmp(name, pattern, pl) && (name[pl] == '(' || name[pl] == ' '))
		return 1;
	if (strpbrk(pattern, "*?[") && !fnmatch(pattern, name, 0))
		return 2;
	return strstr(name, pattern) ? 3 : -1;
}

/* peer calls fn (a caller) or fn calls peer (a callee); w: samples of that call. */
struct link {
	uint32_t fn, peer;
	uint64_t w;
};

struct cgraph {
	struct fstats fs;      /* indexes are function ids: never sorted */
	uint32_t *fn_of;       /* frame -> function + 1 */
	struct link *in, *out; /* callers and callees, by fn, then by weight */
	size_t nr;
};

static void cgraph_free(struct cgraph *cg)
{
	fstats_free(&cg->fs);
	free(cg->fn_of);
	free(cg->in);
	free(cg->out);
}

static int cmp_by_total(const void *a, const void *b, void *ctx)
{
	const struct fstat *v = ctx;

	return cmp_total(&v[*(const uint32_t *)a], &v[*(const uint32_t *)b]);
}

static int cmp_by_self(const void *a, const void *b, void *ctx)
{
	const struct fstat *v = ctx;

	return cmp_self(&v[*(const uint32_t *)a], &v[*(const uint32_t *)b]);
}

/* By function, then heaviest first, then by the peer's name. */
static int cmp_link(const void *a, const void *b, void *ctx)
{
	const struct link *x = a, *y = b;
	const struct fstat *v = ctx;
	const struct fstat *px = &v[x->peer], *py = &v[y->peer];
	int c;

	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	c = strcmp(px->name, py->name);
	if (!c)
		c = strcmp(px->module ? px->module : "", py->module ? py->module : "");
	return c ? c : (px->kind > py->kind) - (px->kind < py->kind);
}

/*
 * The edges into or out of the functions in want (cg->fs and cg->fn_of
 * built): cg->in and cg->out, sorted. 0 or -ENOMEM.
 */
static int cgraph_edges(const struct profile *p, const bool *want, struct cgraph *cg)
{
	struct edge {
		uint32_t from, to;
		uint64_t w, seen; /* seen: last sample (+1) that counted it */
	} *e = NULL;
	struct htab *idx = htab__new();
	size_t nr = 0, cap = 0;
	int err = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);
		const uint32_t *fr;
		uint32_t n;

		if (!s->count)
			continue;
		fr = profile__stack_get(p, s->stack, &n);
		for (uint32_t j = 0; j + 1 < n; j++) {
			uint32_t k[2] = { cg->fn_of[fr[j]] - 1, cg->fn_of[fr[j + 1]] - 1 };
			struct edge *ed;
			bool created;
			size_t at;

			if (k[0] == k[1] || !(want[k[0]] || want[k[1]]))
				continue;
			if (!htab__index(idx, k, sizeof(k), &at, &created, &nr, (void **)&e, &cap,
					 sizeof(*e))) {
				err = -ENOMEM;
				break;
			}
			ed = &e[at];
			if (created)
				*ed = (struct edge){ .from = k[0], .to = k[1] };
			if (ed->seen == i + 1)
				continue; /* recursion: once per stack */
			ed->seen = i + 1;
			ed->w += s->count;
		}
	}
	if (!err) {
		cg->in = calloc(nr + 1, sizeof(*cg->in));
		cg->out = calloc(nr + 1, sizeof(*cg->out));
		if (!cg->in || !cg->out)
			err = -ENOMEM;
	}
	if (!err) {
		for (size_t i = 0; i < nr; i++) {
			cg->in[i] = (struct link){ .fn = e[i].to, .peer = e[i].from, .w = e[i].w };
			cg->out[i] = (struct link){ .fn = e[i].from, .peer = e[i].to, .w = e[i].w };
		}
		cg->nr = nr;
		qsort_r(cg->in, nr, sizeof(*cg->in), cmp_link, cg->fs.v);
		qsort_r(cg->out, nr, sizeof(*cg->out), cmp_link, cg->fs.v);
	}
	free(e);
	htab__free(idx);
	return err;
}

/* The links of fn in v[0..nr) (sorted by fn): the first, and *n of them. */
static const struct link *links_of(const struct link *v, size_t nr, uint32_t fn, size_t *n)
{
	size_t lo = 0, hi = nr, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].fn < fn)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < nr && v[end].fn == fn; end++)
		;
	*n = end - lo;
	return v + lo;
}

/* One section: the functions a pattern names, or the top ones. */
struct cg_section {
	const char *pattern; /* NULL: the top functions */
	bool callers, callees;
	uint32_t *fns; /* function ids, in the order shown */
	size_t nr, matched;
	bool named; /* a frame of the whole profile (all views) matches pattern */
};

/*
 * The functions of the section: the best tier of pattern's matches, most
 * total first, or the top ones by self or total; at most top (0: all).
 */
static int cg_choose(const struct fstats *fs, struct cg_section *sec, bool by_self, unsigned top)
{
	int best = 4;

	sec->fns = calloc(fs->nr + 1, sizeof(*sec->fns));
	if (!sec->fns)
		return -ENOMEM;
	for (uint32_t i = 0; i < fs->nr; i++) {
		const struct fstat *st = &fs->v[i];
		int tier;

		if (!st->total || (!sec->pattern && by_self && !st->self))
			continue;
		if (sec->pattern) {
			tier = writer__name_match(st->name, sec->pattern);
			if (tier < 0 || tier > best)
				continue;
			if (tier < best) {
				best = tier;
				sec->nr = 0;
			}
		}
		sec->fns[sec->nr++] = i;
	}
	if (sec->nr)
		qsort_r(sec->fns, sec->nr, sizeof(*sec->fns),
			!sec->pattern && by_self ? cmp_by_self : cmp_by_total, fs->v);
	sec->matched = sec->nr;
	if (top && sec->nr > top)
		sec->nr = top;
	return 0;
}

/* A row of the call graph: a function's own line, or an edge (indented). */
static void cg_row(FILE *f, int w, size_t mw, const struct fstat *st, const uint64_t *self,
		   uint64_t value, uint64_t of)
{
	size_t width = name_width(w, mw);

	if (self) {
		put_count(f, w, *self);
		fprintf(f, " %6.2f ", pct(*self, of));
	} else
		fprintf(f, "%*s %6s ", w, "", "");
	put_count(f, w, value);
	fprintf(f, " %6.2f  ", pct(value, of));
	put_module(f, st, mw);
	fprintf(f, "  %s", self ? "" : "    ");
	put_name(f, st->name, st->kind, self ? width : width - 4);
	fputc('\n', f);
}

static void cg_print(FILE *f, const struct profile_meta *m, const struct cgraph *cg,
		     const struct cg_section *sec, uint64_t total, bool by_self)
{
	const char *what = m->unit[0] ? m->value_name : "samples";
	int w = count_width(total);
	size_t mw = MODULE_MIN;
	char pat[256];

	if (sec->pattern)
		writer__clean_utf8(sec->pattern, pat, sizeof(pat));
	if (sec->pattern && !sec->nr) {
		/* Named by the profile but not in this view: a function that freed
		 * all it allocated has no memory in use. */
		if (sec->named)
			fprintf(f,
				"\n'%s': no %s there or in a callee\n(it is in the profile, "
				"not in this view).\n",
				pat, what);
		else
			fprintf(f, "\nNo function matches '%s'.\n", pat);
		return;
	}
	fputc('\n', f);
	if (sec->pattern)
		fprintf(f, "%s of '%s'",
			!sec->callers	? "Callees"
			: !sec->callees ? "Callers"
					: "Callers and callees",
			pat);
	else
		fprintf(f, "Call graph of the top %zu function%s by %s %s", sec->nr,
			plural_s(sec->nr), by_self ? "self" : "total", what);
	if (sec->pattern && sec->matched > sec->nr)
		fprintf(f, " (%zu of %zu functions; --top 0: all)", sec->nr, sec->matched);
	else if (sec->pattern)
		fprintf(f, " (%zu function%s)", sec->nr, sec->nr == 1 ? "" : "s");
	if (m->unit[0])
		fprintf(f, ", %s", unit_label(m->unit));
	fprintf(f, ":\n%s\n",
		!sec->callers	? "Callees below each function's line (self and total, % of all), "
				  "with what went\nthrough that call (% of the function's total)."
		: !sec->callees ? "Callers above each function's line (self and total, % of all), "
				  "with what went\nthrough that call (% of the function's total)."
				: "Callers above each function's line (self and total, % of all), "
				  "callees below,\nwith what went through that call (% of the "
				  "function's total).");
	for (size_t i = 0; i < sec->nr; i++) {
		uint32_t fn = sec->fns[i];
		const struct link *l;
		size_t n;

		mw = module_width(mw, &cg->fs.v[fn]);
		if (sec->callers)
			for (l = links_of(cg->in, cg->nr, fn, &n); n; n--, l++)
				mw = module_width(mw, &cg->fs.v[l->peer]);
		if (sec->callees)
			for (l = links_of(cg->out, cg->nr, fn, &n); n; n--, l++)
				mw = module_width(mw, &cg->fs.v[l->peer]);
	}
	fprintf(f, "%*s %6s %*s %6s  %-*s  %s\n", w, "Self", "%", w, "Total", "%", (int)mw,
		"Module", "Function");
	for (size_t i = 0; i < sec->nr; i++) {
		uint32_t fn = sec->fns[i];
		const struct fstat *st = &cg->fs.v[fn];
		const struct link *l;
		size_t n;

		for (int c = 0; c < REPORT_WIDTH - 1; c++)
			fputc('-', f);
		fputc('\n', f);
		if (sec->callers) {
			l = links_of(cg->in, cg->nr, fn, &n);
			for (size_t j = 0; j < n; j++)
				cg_row(f, w, mw, &cg->fs.v[l[j].peer], NULL, l[j].w, st->total);
		}
		cg_row(f, w, mw, st, &st->self, st->total, total);
		if (sec->callees) {
			l = links_of(cg->out, cg->nr, fn, &n);
			for (size_t j = 0; j < n; j++)
				cg_row(f, w, mw, &cg->fs.v[l[j].peer], NULL, l[j].w, st->total);
		}
	}
}

/* Whether a frame of p has a name pattern matches. */
static bool names(const struct profile *p, const char *pattern)
{
	for (uint32_t id = 0; id < profile__nr_frames(p); id++)
		if (writer__name_match(profile__frame_get(p, id)->name, pattern) >= 0)
			return true;
	return false;
}

/* The call graph sections o asks for, of p (one view of whole). */
static int call_graph(const struct profile *p, const struct profile *whole, FILE *f,
		      const struct out_opts *o)
{
	bool by_self = o->sort && !strcmp(o->sort, "self");
	struct cg_section sec[3] = { 0 };
	struct cgraph cg = { 0 };
	size_t nr_sec = 0;
	bool *want = NULL;
	int err;

	if (o->callers && o->callees && !strcmp(o->callers, o->callees))
		sec[nr_sec++] = (struct cg_section){ .pattern = o->callers,
						     .callers = true,
						     .callees = true };
	else {
		if (o->callers)
			sec[nr_sec++] =
				(struct cg_section){ .pattern = o->callers, .callers = true };
		if (o->callees)
			sec[nr_sec++] =
				(struct cg_section){ .pattern = o->callees, .callees = true };
	}
	if (o->call_graph)
		sec[nr_sec++] = (struct cg_section){ .callers = true, .callees = true };
	err = fstats_build(p, true, &cg.fs, &cg.fn_of);
	if (err)
		return err;
	want = calloc(cg.fs.nr + 1, sizeof(*want));
	if (!want)
		err = -ENOMEM;
	for (size_t i = 0; i < nr_sec && !err; i++) {
		err = cg_choose(&cg.fs, &sec[i], by_self, o->top);
		if (!err && sec[i].pattern && !sec[i].nr)
			sec[i].named = names(whole, sec[i].pattern);
		for (size_t j = 0; !err && j < sec[i].nr; j++)
			want[sec[i].fns[j]] = true;
	}
	if (!err)
		err = cgraph_edges(p, want, &cg);
	for (size_t i = 0; i < nr_sec && !err; i++)
		cg_print(f, profile__meta_c(p), &cg, &sec[i], profile__total(p), by_self);
	for (size_t i = 0; i < nr_sec; i++)
		free(sec[i].fns);
	free(want);
	cgraph_free(&cg);
	return err;
}

/* p, or one view of whole (whole: the profile it was built from). */
static int write_one(const struct profile *p, const struct profile *whole, FILE *f,
		     const struct out_opts *o, const char *what)
{
	unsigned top = o ? o->top : OUT_DEFAULT_TOP;
	const char *sort = o ? o->sort : NULL;
	const struct profile_meta *m = profile__meta_c(p);
	struct fstats fs;
	int err;

	if (o && (o->callers || o->callees || o->call_graph)) {
		header(f, what, p);
		if (!profile__total(p)) {
			fputs(m->unit[0] ? "\nNo time.\n" : "\nNo samples.\n", f);
			return 0;
		}
		return call_graph(p, whole, f, o);
	}
	err = fstats_build(p, true, &fs, NULL);
	if (err)
		return err;
	header(f, what, p);
	if (!profile__total(p))
		fputs(m->unit[0] ? "\nNo time.\n" : "\nNo samples.\n", f);
	else if (o && o->style && !strcmp(o->style, "sb-sprof"))
		sbsprof_table(f, &fs, profile__total(p), sort && !strcmp(sort, "total"), top);
	else {
		if (!sort || !strcmp(sort, "self"))
			function_table(f, m, &fs, profile__total(p), false, top);
		if (!sort || !strcmp(sort, "total"))
			function_table(f, m, &fs, profile__total(p), true, top);
		err = process_table(f, p, top);
	}
	fstats_free(&fs);
	return err;
}

/* One view of a profile with off-CPU time. */
static int write_view(const struct profile *p, FILE *f, const struct out_opts *o, enum view v,
		      const char *what)
{
	struct profile *vp = view__build(p, v);
	int err;

	if (!vp)
		return -errno;
	err = write_one(vp, p, f, o, what);
	profile__free(vp);
	return err;
}

static int write_report(const struct profile *p, FILE *f, const struct out_opts *o)
{
	enum view v = o ? o->view : VIEW_AUTO;
	int err;

	if (profile__meta_c(p)->alloc_period)
		return write_view(p, f, o, v, "bpfprof report:");
	if (!profile__meta_c(p)->offcpu)
		return write_one(p, p, f, o, "bpfprof report:");
	if (v != VIEW_AUTO)
		return write_view(p, f, o, v, "bpfprof report:");
	/* Both: what ran, then what waited. */
	err = write_view(p, f, o, VIEW_CPU, "bpfprof report, on-CPU:");
	if (!err) {
		fputc('\n', f);
		err = write_view(p, f, o, VIEW_OFFCPU, "bpfprof report, off-CPU:");
	}
	return err;
}

/* --- diff ------------------------------------------------------------------ */

struct drow {
	const char *name;
	enum frame_kind kind;
	double self[2], total[2]; /* shares in percent: [0] before, [1] after */
};

static double drow_size(const struct drow *r)
{
	double s = r->self[1] - r->self[0], t = r->total[1] - r->total[0];

	if (s < 0)
		s = -s;
	if (t < 0)
		t = -t;
	return s > t ? s : t;
}

static int cmp_drow(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	double dx = drow_size(x), dy = drow_size(y);
	int c;

	if (dx != dy)
		return dx < dy ? 1 : -1;
	c = strcmp(x->name, y->name);
	return c ? c : (x->kind > y->kind) - (x->kind < y->kind);
}

static int write_diff_report(const struct profile *before, const struct profile *after, FILE *f,
			     const struct out_opts *o)
{
	unsigned top = o ? o->top : OUT_DEFAULT_TOP;
	uint64_t tot[2] = { profile__total(before), profile__total(after) };
	struct fstats fs[2];
	struct htab *idx = NULL;
	struct drow *rows = NULL;
	size_t nr = 0, shown = 0;
	int err;

	err = fstats_build(before, false, &fs[0], NULL);
	if (err)
		return err;
	err = fstats_build(after, false, &fs[1], NULL);
	if (err) {
		fstats_free(&fs[0]);
		return err;
	}
	idx = htab__new();
	rows = calloc(fs[0].nr + fs[1].nr + 1, sizeof(*rows));
	if (!idx || !rows) {
		err = -ENOMEM;
		goto out;
	}
	for (int side = 0; side < 2 && !err; side++) {
		for (size_t i = 0; i < fs[side].nr; i++) {
			const struct fstat *st = &fs[side].v[i];
			size_t len = strlen(st->name);
			char *key = malloc(len + 2);
			struct htab_entry *e;
			bool created;

			if (!key) {
				err = -ENOMEM;
				break;
			}
			key[0] = (char)('0' + st->kind);
			memcpy(key + 1, st->name, len + 1);
			e = htab__upsert(idx, key, len + 1, &created);
			free(key);
			if (!e) {
				err = -ENOMEM;
				break;
			}
			if (created) {
				rows[nr] = (struct drow){ .name = st->name, .kind = st->kind };
				e->value = (void *)(uintptr_t)nr++;
			}
			rows[(uintptr_t)e->value].self[side] += pct(st->self, tot[side]);
			rows[(uintptr_t)e->value].total[side] += pct(st->total, tot[side]);
		}
	}
	if (err)
		goto out;
	if (nr)
		qsort(rows, nr, sizeof(*rows), cmp_drow);
	while (shown < nr && drow_size(&rows[shown]) >= 0.005 && (!top || shown < top))
		shown++;

	fputs("bpfprof diff: ", f);
	put_count(f, 0, tot[0]);
	fputs(" samples before, ", f);
	put_count(f, 0, tot[1]);
	fputs(" after\nShares are of each profile's total; changes in percentage points.\n", f);
	if (!shown) {
		fputs("\nNo function's share changed.\n", f);
		goto out;
	}
	fprintf(f, "\nBiggest changes (%zu of %zu functions):\n", shown, nr);
	fprintf(f, "%s  %s\n", "-------- Self % --------", "------- Total % --------");
	fprintf(f, "%7s %7s %8s  %7s %7s %8s  %s\n", "before", "after", "change", "before", "after",
		"change", "Function");
	for (size_t i = 0; i < shown; i++) {
		const struct drow *r = &rows[i];
		struct pframe pf = { .name = r->name, .kind = r->kind };
		char label[4096];

		fprintf(f, "%7.2f %7.2f %+8.2f  %7.2f %7.2f %+8.2f  ", r->self[0], r->self[1],
			r->self[1] - r->self[0], r->total[0], r->total[1],
			r->total[1] - r->total[0]);
		writer__frame_label(&pf, label, sizeof(label));
		put_name(f, label, r->kind, REPORT_WIDTH - 52);
		fputc('\n', f);
	}
out:
	free(rows);
	htab__free(idx);
	fstats_free(&fs[0]);
	fstats_free(&fs[1]);
	return err;
}

const struct writer writer_report = {
	.name = "report",
	.exts = { ".txt", ".report" },
	.description = "text summary: top functions (self, total), processes",
	.write = write_report,
	.all_values = true,
};

const struct diff_writer diff_writer_report = {
	.name = "report",
	.exts = { ".txt", ".report" },
	.description = "text table of the functions whose share changed most",
	.write = write_diff_report,
};
