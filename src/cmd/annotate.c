// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * annotate.c - "bpfprof annotate": one function's disassembly with the
 * samples that landed on each instruction and the source lines they belong
 * to, as `perf annotate` prints it, without a perf.data file:
 *
 *   bpfprof annotate -p PID -d 10 FUNCTION     sample now (like record), then annotate
 *   bpfprof annotate PROFILE FUNCTION          a pprof written with record --addresses
 *
 * The samples are the function's self samples: those whose leaf (innermost
 * non-inlined) frame is the function; each carries its leaf address. A live
 * run samples exactly like record (session/record.h's phases) with addresses kept,
 * and reads the process's binary and debug file through the symbolizer,
 * which opens them the way it read their symbols (never by a path the
 * process controls). A saved profile's binaries are opened by path, as the
 * user names them (--symfs DIR puts them under DIR), and must have the build
 * id the profile recorded.
 *
 * Kernel functions: their text is read from /proc/kcore when the kernel
 * offers it; when it does not, the per-address counts are printed without
 * instructions, and the output says why.
 */
#include "cmd/cmd.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

#include "base/htab.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/text.h"
#include "base/util.h"
#include "cmd/cli.h"
#include "session/record.h"
#include "session/stop.h"
#include "tui/termcolor.h"
#include "format/reader.h"
#include "format/writer.h"
#include "proc/ptab.h"
#include "proc/safeopen.h"
#include "sym/annotation.h"
#include "sym/disasm.h"
#include "sym/debuginfo.h"
#include "sym/elfcode.h"
#include "sym/elfsym.h"
#include "sym/kallsyms.h"
#include "sym/srcline.h"
#include "sym/symbolizer.h"

#define KCORE "/proc/kcore"
/* Instructions at or above this share of the function's samples are marked hot. */
#define HOT_SHARE 5.0
/* Source files shown line by line: at most this big. */
#define SOURCE_MAX_BYTES (16u << 20)

enum {
	OPT_SYMFS = OPT_CMD_FIRST,
	OPT_NO_SOURCE,
	OPT_SOURCE_DIR,
	OPT_STDIO,
};

struct annotate_opts {
	struct options o; /* sampling (live mode) */
	const char *symfs;
	bool no_source;
	const char *source_dir; /* --source-dir: source files are read there, and only there */
	int source_dir_fd;	/* it, O_PATH; -1 */
	bool color;
	const char *profile_path; /* NULL: live */
	const char *function;
	const struct safe_root *host; /* "/" through the process-and-file layer */
};

static void annotate_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof annotate [OPTIONS] -p PID [-d SECS] FUNCTION\n"
		"       bpfprof annotate [OPTIONS] PROFILE FUNCTION\n"
		"\n"
		"Prints FUNCTION's disassembly with the share of its samples on each instruction\n"
		"(the hottest marked \">>\"), and the source lines from DWARF (the binary's own, "
		"or\n"
		"its separate debug file) interleaved, as perf annotate does. The samples are the\n"
		"function's self samples: it was running.\n"
		"\n"
		"Live: samples like bpfprof record (same targets and options), then annotates.\n"
		"  -p, --pid PID[,PID...]  the processes to sample (or -a, -C LIST, --cgroup "
		"PATH)\n"
		"  -d, --duration SECS     how long (default: until Ctrl-C)\n"
		"  -F, --freq HZ           samples per second (default 99; more gives finer "
		"counts)\n"
		"\n"
		"From a profile written with 'bpfprof record --addresses -o FILE.pb.gz':\n"
		"      --symfs DIR         look for the profile's binaries under DIR\n"
		"\n"
		"FUNCTION is the name as profiles show it (C++ demangled, e.g.\n"
		"'ns::Box<int>::get(int) const'); without its parameter list, or a part of the\n"
		"name, if that names one function. A live run whose FUNCTION names several\n"
		"saves its samples (bpfprof-annotate.PID.pb.gz, in the working directory) and\n"
		"prints the command that annotates each of them from there.\n"
		"\n"
		"      --no-source         no source lines\n"
		"      --source-dir DIR    read source files from DIR (DIR/PATH, else DIR/NAME),\n"
		"                          as you may; without it, a source file is read only if\n"
		"                          the process and the owner of the file holding the line\n"
		"                          table could read it (else the output says so)\n"
		"  -q, --quiet             only errors\n"
		"  -v, --verbose           more messages\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  sudo bpfprof annotate -p 1234 -d 10 parse_header\n"
		"  sudo bpfprof annotate -F 999 -p 1234 -d 5 'wl::Accumulator<double>::spin'\n"
		"  sudo bpfprof record -p 1234 -d 30 --addresses -o app.pb.gz\n"
		"  bpfprof annotate app.pb.gz parse_header\n"
		"\n"
		"Kernel functions are disassembled from /proc/kcore; where the kernel does not\n"
		"offer it, their samples are printed per address. Lisp functions (SBCL) are\n"
		"disassembled from the process's heap, live only: 'bpfprof annotate -p PID -d 5\n"
		"MYPKG::HOT-LOOP'.\n"
		"\n"
		"Exit status: 0 printed, 1 failure (no samples in FUNCTION, binary unreadable),\n"
		"2 usage error.\n");
}

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "bpfprof annotate: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nHINT: see 'bpfprof annotate --help'\n");
	return 2;
}

static const struct option long_opts[] = {
	CLI_SAMPLING_OPTIONS,
	{ "symfs", required_argument, NULL, OPT_SYMFS },
	{ "no-source", no_argument, NULL, OPT_NO_SOURCE },
	{ "source-dir", required_argument, NULL, OPT_SOURCE_DIR },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* 0 to go on, 1 to exit 0 (help), or 2. */
static int parse(int argc, char **argv, struct annotate_opts *a)
{
	struct errmsg em = { 0 };
	bool live_target = false;
	int c, rc, nargs;

	memset(a, 0, sizeof(*a));
	a->source_dir_fd = -1;
	cli__sampling_defaults(&a->o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" CLI_SAMPLING_SHORT "qvh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_SYMFS:
			a->symfs = optarg;
			continue;
		case OPT_NO_SOURCE:
			a->no_source = true;
			continue;
		case OPT_SOURCE_DIR:
			a->source_dir = optarg;
			continue;
		case OPT_STDIO:
			continue; /* perf's flag: this is always text */
		case 'q':
			a->o.verbosity = -1;
			continue;
		case 'v':
			a->o.verbosity = a->o.verbosity < 0 ? 1 : a->o.verbosity + 1;
			continue;
		case 'h':
			return 1;
		case ':':
			return usage("option '%s' needs a value", argv[optind - 1]);
		case '?':
			return usage("unknown option '%s'", argv[optind - 1]);
		}
		rc = cli__sampling_option(c, optarg, &a->o, &em);
		if (rc == CLI_USAGE)
			return usage("%s", em.msg);
		if (rc != CLI_OK)
			return usage("unknown option '%s'", argv[optind - 1]);
		if (c == 'p' || c == 'a' || c == 'C' || c == OPT_CGROUP)
			live_target = true;
	}
	nargs = argc - optind;
	if (nargs == 2) {
		if (live_target || a->o.duration)
			return usage("%s", "a PROFILE is annotated as it is: -p, -a, -C, --cgroup "
					   "and -d are for live runs");
		a->profile_path = argv[optind];
		a->function = argv[optind + 1];
	} else if (nargs == 1) {
		a->function = argv[optind];
		if (a->symfs)
			return usage("%s", "--symfs is for annotating a PROFILE");
	} else {
		return usage("%s",
			     nargs ? "too many arguments" : "which FUNCTION? (see the examples)");
	}
	if (!*a->function)
		return usage("%s", "empty FUNCTION");
	if (a->source_dir && a->no_source)
		return usage("%s", "--source-dir and --no-source: which one?");
	if (a->source_dir) {
		/* Opened now: a typo is told before a live run, not after it. */
		a->source_dir_fd = safeopen__dir(a->source_dir);
		if (a->source_dir_fd < 0) {
			char msg[PATH_MAX + 64];

			snprintf(msg, sizeof(msg), "--source-dir %s: %s", a->source_dir,
				 strerror(-a->source_dir_fd));
			a->source_dir_fd = -1;
			return usage("%s", msg);
		}
	}
	a->o.addresses = true;
	if (!a->profile_path && cli__validate(&a->o, &em))
		return usage("%s", em.msg);
	return 0;
}

/* --- choosing the function ----------------------------------------------------- */

/* One function's self samples: its leaf addresses and counts, and its best process. */
struct fn_samples {
	const struct pframe *f;
	uint64_t self, no_addr;
	struct ann_count *counts;
	size_t nr, cap;
	uint32_t pid; /* the process with most of them */
	uint64_t pid_count;
	int tier; /* how FUNCTION matched: 0 exact ... 2 part of the name */
};

/* The frame a sample's own code is in: the leaf, below inlined frames. */
static const struct pframe *leaf_function(const struct profile *p, const struct psample *s)
{
	const uint32_t *fr;
	uint32_t n;

	fr = profile__stack_get(p, s->stack, &n);
	while (n > 0) {
		const struct pframe *f = profile__frame_get(p, fr[n - 1]);

		if (f->kind != FRAME_INLINE)
			return f;
		n--;
	}
	return NULL;
}

/* 0 exact, 1 the name without its parameter list, 2 a part of it, -1 no match. */
static int match_tier(const char *name, const char *want)
{
	size_t wl = strlen(want);

	if (!strcmp(name, want))
		return 0;
	if (!strncmp(name, want, wl) && (name[wl] == '(' || name[wl] == ' '))
		return 1;
	return strstr(name, want) ? 2 : -1;
}

static int add_count(struct fn_samples *fs, uint64_t addr, uint64_t n)
{
	if (fs->nr == fs->cap &&
	    array_grow((void **)&fs->counts, &fs->cap, fs->nr + 1, sizeof(*fs->counts)))
		return -ENOMEM;
	fs->counts[fs->nr++] = (struct ann_count){ addr, n };
	return 0;
}

/* Functions of the profile matching `want`, keyed by their frame (kind, name, module). */
static int collect(const struct profile *p, const char *want, struct fn_samples **out,
		   size_t *nr_out)
{
	struct htab *idx = htab__new();
	struct htab *pids = htab__new();
	struct fn_samples *v = NULL;
	size_t nr = 0, cap = 0;
	int err = 0;

	if (!idx || !pids) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);
		const struct pframe *f = leaf_function(p, s);
		struct {
			uintptr_t name, module, kind;
		} key;
		struct {
			uintptr_t fn;
			uint32_t pid, pad;
		} pk;
		struct htab_entry *e;
		struct fn_samples *fs;
		int tier;
		bool created;

		if (!f || !s->count || (tier = match_tier(f->name, want)) < 0)
			continue;
		memset(&key, 0, sizeof(key));
		key.name = (uintptr_t)f->name;
		key.module = (uintptr_t)f->module;
		key.kind = f->kind;
		e = htab__upsert(idx, &key, sizeof(key), &created);
		if (!e || (created && array_grow((void **)&v, &cap, nr + 1, sizeof(*v)))) {
			err = -ENOMEM;
			break;
		}
		if (created) {
			memset(&v[nr], 0, sizeof(v[nr]));
			v[nr].f = f;
			v[nr].tier = tier;
			e->value = (void *)(uintptr_t)nr++;
		}
		fs = &v[(uintptr_t)e->value];
		fs->self += s->count;
		if (!s->addr) {
			fs->no_addr += s->count;
			continue;
		}
		err = add_count(fs, s->addr, s->count);
		/* Which process has most of them: its files are the ones to read. */
		memset(&pk, 0, sizeof(pk));
		pk.fn = (uintptr_t)e->value;
		pk.pid = s->pid;
		e = htab__upsert(pids, &pk, sizeof(pk), NULL);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		e->value = (void *)((uintptr_t)e->value + s->count);
		if ((uint64_t)(uintptr_t)e->value > fs->pid_count) {
			fs->pid_count = (uintptr_t)e->value;
			fs->pid = s->pid;
		}
	}
out:
	htab__free(idx);
	htab__free(pids);
	if (err) {
		for (size_t i = 0; i < nr; i++)
			free(v[i].counts);
		free(v);
		return err;
	}
	*out = v;
	*nr_out = nr;
	return 0;
}

static void free_fns(struct fn_samples *v, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(v[i].counts);
	free(v);
}

static int cmp_self(const void *a, const void *b)
{
	const struct fn_samples *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier - y->tier;
	return x->self < y->self ? 1 : x->self > y->self ? -1 : strcmp(x->f->name, y->f->name);
}

static const char *kind_label(const struct pframe *f)
{
	return f->kind == FRAME_KERNEL ? "[kernel]" : f->module ? path_basename(f->module) : "?";
}

/*
 * s with what a terminal would obey as '?' (base/text.h): names and paths
 * are the profiled processes' and their files' own bytes. Two buffers in
 * turn, so one printf() can show two.
 */
static const char *shown(const char *s)
{
	static char bufs[2][PATH_MAX];
	static unsigned k;
	char *buf = bufs[k++ % 2];

	snprintf(buf, sizeof(bufs[0]), "%s", s ? s : "");
	text__clean(buf, false);
	return buf;
}

/* The hottest functions, for a FUNCTION that names none. */
static void hint_hottest(const struct profile *p)
{
	struct fn_samples *v;
	size_t nr;

	if (collect(p, "", &v, &nr) || !nr)
		return;
	qsort(v, nr, sizeof(*v), cmp_self);
	fprintf(stderr, "HINT: the hottest functions (self samples):");
	for (size_t i = 0; i < nr && i < 5; i++)
		fprintf(stderr, "%s %s (%" PRIu64 ", %s)", i ? ";" : "", shown(v[i].f->name),
			v[i].self, kind_label(v[i].f));
	fprintf(stderr, "\n");
	free_fns(v, nr);
}

/* s quoted for a shell (single quotes), shown() as well: a command to copy. */
static const char *shell_quoted(const char *s)
{
	static char buf[2 * PATH_MAX];
	const char *c = shown(s);
	size_t n = 0;

	buf[n++] = '\'';
	for (; *c && n + 6 < sizeof(buf); c++) {
		if (*c == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *c;
		}
	}
	buf[n++] = '\'';
	buf[n] = '\0';
	return buf;
}

/*
 * A live run whose FUNCTION names several functions: the samples are kept
 * (a pprof with addresses in the working directory, a new name) and a
 * command per candidate annotates it without sampling again.
 */
static void save_candidates(const struct profile *p, const struct fn_samples *all, size_t n)
{
	const struct writer *w = writer__find("pprof");
	struct errmsg em = { 0 };
	char path[64];
	int err;

	snprintf(path, sizeof(path), "bpfprof-annotate.%ld.pb.gz", (long)getpid());
	err = w ? writer__write_path(w, p, path, NULL, &em) : -ENOTSUP;
	if (err) {
		p_err("cannot keep the samples in %s: %s", path,
		      em.msg[0] ? em.msg : strerror(-err));
		return;
	}
	fprintf(stderr, "bpfprof: the samples are saved in %s; annotate one of them with:\n", path);
	for (size_t i = 0; i < n && i < 10; i++)
		fprintf(stderr, "  bpfprof annotate %s %s\n", path, shell_quoted(all[i].f->name));
}

/* The one function FUNCTION names; NULL after printing why (*several: it names more). */
static struct fn_samples *choose(const struct profile *p, const char *want, struct fn_samples **all,
				 size_t *nr, size_t *several)
{
	size_t n_best = 0;

	if (collect(p, want, all, nr)) {
		p_err("out of memory");
		return NULL;
	}
	if (!*nr) {
		p_err("no samples of a function named '%s' (it never ran, or is not a leaf)", want);
		hint_hottest(p);
		return NULL;
	}
	qsort(*all, *nr, sizeof(**all), cmp_self);
	while (n_best < *nr && (*all)[n_best].tier == (*all)[0].tier)
		n_best++;
	if (n_best > 1) {
		p_err("'%s' matches %zu functions; name one of them:", want, n_best);
		for (size_t i = 0; i < n_best && i < 10; i++)
			fprintf(stderr, "  %s  (%s, %" PRIu64 " samples)\n",
				shown((*all)[i].f->name), kind_label((*all)[i].f), (*all)[i].self);
		*several = n_best;
		return NULL;
	}
	return &(*all)[0];
}

/* --- output ---------------------------------------------------------------------- */

/*
 * Source text. A line table is the binary's own bytes: the paths it names
 * are a tenant's choice ("#line 1 \"/etc/shadow\""). So a source file is read
 * only if each reader could read it itself (threat model rule 1): the owner
 * of the file the line table came from, and for a live process the process
 * too (its credentials, in its own root); or from the directory the
 * operator names with --source-dir. Only the lines shown are kept, each cut
 * to what is printed.
 */
/* Source files read for one function, at most; bytes of one file, of all. */
#define SOURCE_MAX_FILES 64
#define SOURCE_MAX_TOTAL (128u << 20)
/* Bytes of one line kept (100 columns of up to 4-byte sequences). */
#define SOURCE_LINE_BYTES 400
/* Bytes of all the lines kept. */
#define SOURCE_MAX_TEXT (16u << 20)

/* A line the listing shows, and its text (NULL: none). */
struct src_text {
	const char *file;
	uint32_t line;
	char *text;
};

struct sources {
	bool off;
	bool operator_dir;     /* root is --source-dir: read there, with no reader's check */
	struct safe_root root; /* where the line table's paths are; fd -1: nowhere */
	struct safe_cred cred[2];
	const struct safe_cred *readers[2]; /* cred[0..nr_readers) */
	char who[2][PATH_MAX + 64]; /* "pid 1234 (uid 1001)", "uid 1001, the owner of PATH" */
	size_t nr_readers;
	struct src_text *v; /* sorted by file, then line */
	size_t nr;
	char withheld[PATH_MAX + 200]; /* the first file withheld, and why */
	size_t nr_withheld;
};

static int cmp_src_text(const void *a, const void *b)
{
	const struct src_text *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	return c ? c : x->line < y->line ? -1 : x->line > y->line;
}

static void note_withheld(struct sources *ss, const char *path, int err, size_t denied,
			  const char *fstype)
{
	if (err == -ENOENT || err == -ENOTDIR)
		return; /* not on this machine: nothing to say */
	if (ss->nr_withheld++)
		return;
	if (err == -EACCES && denied < ss->nr_readers)
		snprintf(ss->withheld, sizeof(ss->withheld), "%s is not readable by %s",
			 shown(path), ss->who[denied]);
	else if (err == -EPERM)
		snprintf(ss->withheld, sizeof(ss->withheld), "%s is on a pseudo file system",
			 shown(path));
	else if (err == -EFBIG)
		snprintf(ss->withheld, sizeof(ss->withheld), "%s is over %u MB", shown(path),
			 SOURCE_MAX_BYTES >> 20);
	else
		snprintf(ss->withheld, sizeof(ss->withheld), "%s: %s", shown(path),
			 ptab__reason(err, fstype));
}

/* One source file's bytes (at most SOURCE_MAX_BYTES), opened as the rules above say. */
static int read_source(struct sources *ss, const char *path, char **buf, size_t *len)
{
	char alt[PATH_MAX];
	struct safe_file f;
	size_t denied = SIZE_MAX, n = 0;
	int err;

	if (ss->root.fd < 0)
		return -ENOENT;
	if (ss->operator_dir) {
		/* DIR/PATH, else DIR/NAME: a tree copied whole, or the files side by side. */
		snprintf(alt, sizeof(alt), "%s%s", path[0] == '/' ? "" : "/", path);
		err = safeopen__in_root_as(&ss->root, alt, 0, NULL, 0, &f, NULL);
		if (err == -ENOENT || err == -ENOTDIR) {
			snprintf(alt, sizeof(alt), "/%s", path_basename(path));
			err = safeopen__in_root_as(&ss->root, alt, 0, NULL, 0, &f, NULL);
		}
	} else if (path[0] != '/') {
		err = -ENOENT; /* relative to a directory the line table did not name */
	} else {
		err = safeopen__in_root_as(&ss->root, path, 0, ss->readers, ss->nr_readers, &f,
					   &denied);
	}
	if (!err && f.st.st_size > SOURCE_MAX_BYTES) {
		close(f.fd);
		err = -EFBIG;
	}
	if (!err && !(*buf = malloc((size_t)f.st.st_size + 1))) {
		close(f.fd);
		err = -ENOMEM;
	}
	if (err) {
		note_withheld(ss, path, err, denied, f.fstype);
		return err;
	}
	while (n < (size_t)f.st.st_size) {
		ssize_t r = pread(f.fd, *buf + n, (size_t)f.st.st_size - n, (off_t)n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(f.fd);
	(*buf)[n] = '\0';
	*len = n;
	return 0;
}

/* Keeps the text of v[0..nr) (one file's lines, ascending) from its bytes. */
static void keep_lines(struct src_text *v, size_t nr, char *buf, size_t len, size_t *kept)
{
	uint32_t line = 1;
	size_t i = 0;

	for (char *p = buf; p < buf + len && i < nr;) {
		char *nl = memchr(p, '\n', (size_t)(buf + len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(buf + len - p);

		while (i < nr && v[i].line < line)
			i++;
		if (i < nr && v[i].line == line && *kept < SOURCE_MAX_TEXT) {
			n = MIN(n, (size_t)SOURCE_LINE_BYTES);
			v[i].text = malloc(n + 1);
			if (v[i].text) {
				memcpy(v[i].text, p, n);
				v[i].text[n] = '\0';
				*kept += n + 1;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
		line++;
	}
}

/* The text of every line the listing shows, read now (so the header can say what was withheld). */
static void sources_load(struct sources *ss, const struct annotation *an)
{
	size_t files = 0, total = 0, kept = 0, nr = 0;

	if (ss->off || !an->nr)
		return;
	ss->v = calloc(an->nr, sizeof(*ss->v));
	if (!ss->v)
		return;
	for (size_t i = 0; i < an->nr; i++) {
		const struct srcline_row *r = an->insns[i].src;

		if (r && r->line)
			ss->v[nr++] = (struct src_text){ r->file, r->line, NULL };
	}
	qsort(ss->v, nr, sizeof(*ss->v), cmp_src_text);
	for (size_t i = 0; i < nr; i++)
		if (!ss->nr || cmp_src_text(&ss->v[ss->nr - 1], &ss->v[i]))
			ss->v[ss->nr++] = ss->v[i];
	for (size_t i = 0, j; i < ss->nr; i = j) {
		char *buf;
		size_t len;

		for (j = i + 1; j < ss->nr && !strcmp(ss->v[j].file, ss->v[i].file); j++)
			;
		if (files >= SOURCE_MAX_FILES || total >= SOURCE_MAX_TOTAL)
			break; /* enough: the rest show no text */
		files++;
		if (read_source(ss, ss->v[i].file, &buf, &len))
			continue;
		total += len;
		keep_lines(&ss->v[i], j - i, buf, len, &kept);
		free(buf);
	}
}

static const char *source_line(const struct sources *ss, const char *path, uint32_t line)
{
	struct src_text key = { path, line, NULL }, *t;

	if (ss->off || !path || !line || !ss->nr)
		return NULL;
	t = bsearch(&key, ss->v, ss->nr, sizeof(*ss->v), cmp_src_text);
	return t ? t->text : NULL;
}

static void sources_free(struct sources *ss)
{
	for (size_t i = 0; i < ss->nr; i++)
		free(ss->v[i].text);
	free(ss->v);
	ss->v = NULL;
	ss->nr = 0;
	ptab__root_close(&ss->root);
}

/* Prints s with controls and bytes not UTF-8 as '?' and tabs as spaces, at most max
 * columns (a UTF-8 sequence is one). */
static void put_clean(const char *s, size_t max)
{
	size_t col = 0;

	while (*s && col < max) {
		uint32_t cp;
		size_t n = text__seq(s, &cp);

		if (n == 1 && cp == '\t') {
			do
				putchar(' ');
			while (++col % 8 && col < max);
			s++;
			continue;
		}
		if (!n || text__is_control(cp))
			putchar('?'); /* what a terminal would obey: base/text.h */
		else
			fwrite(s, 1, n, stdout);
		col++;
		s += n ? n : 1;
	}
}

struct line_stat {
	const char *file;
	uint32_t line;
	uint64_t count;
};

static int cmp_line_stat(const void *a, const void *b)
{
	const struct line_stat *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : (int)x->line - (int)y->line;
}

/* The hottest source lines: where the samples are, in the programmer's terms. */
static void print_hot_lines(const struct annotation *an, struct sources *ss)
{
	struct line_stat *v = NULL;
	size_t nr = 0, cap = 0;

	for (size_t i = 0; i < an->nr; i++) {
		const struct srcline_row *r = an->insns[i].src;
		size_t j;

		if (!r || !r->line || !an->insns[i].count)
			continue;
		for (j = 0; j < nr; j++)
			if (v[j].line == r->line && !strcmp(v[j].file, r->file))
				break;
		if (j == nr) {
			if (array_grow((void **)&v, &cap, nr + 1, sizeof(*v)))
				break;
			v[nr++] = (struct line_stat){ r->file, r->line, 0 };
		}
		v[j].count += an->insns[i].count;
	}
	if (!nr) {
		free(v);
		return;
	}
	qsort(v, nr, sizeof(*v), cmp_line_stat);
	printf("\nHottest source lines:\n");
	for (size_t i = 0; i < nr && i < 5; i++) {
		const char *text = source_line(ss, v[i].file, v[i].line);

		printf("  %6.2f%%  %7" PRIu64 "  %s:%u", 100.0 * v[i].count / an->total, v[i].count,
		       shown(path_basename(v[i].file)), v[i].line);
		if (text) {
			printf("  ");
			put_clean(text + strspn(text, " \t"), 60);
		}
		putchar('\n');
	}
	free(v);
}

static void print_listing(const struct annotation *an, const struct termcolor *c,
			  struct sources *ss)
{
	const struct srcline_row *last = NULL;
	uint64_t hottest = 0;

	for (size_t i = 0; i < an->nr; i++)
		hottest = MAX(hottest, an->insns[i].count);
	printf("\n    Share  Samples  Offset    Instruction\n");
	for (size_t i = 0; i < an->nr; i++) {
		const struct ann_insn *in = &an->insns[i];
		double share = an->total ? 100.0 * in->count / an->total : 0;
		const char *col = share >= HOT_SHARE ? c->red : share >= 0.5 ? c->green : "";
		bool hot = in->count && (share >= HOT_SHARE || in->count == hottest);

		if (in->src && in->src->line &&
		    (!last || last->line != in->src->line || strcmp(last->file, in->src->file))) {
			const char *text = source_line(ss, in->src->file, in->src->line);

			printf("%s%30s%s:%-5u ", c->dim, "", shown(path_basename(in->src->file)),
			       in->src->line);
			if (text)
				put_clean(text, 100);
			printf("%s\n", c->reset);
		}
		if (in->src)
			last = in->src;
		printf("%s%s %6.2f%% %8" PRIu64 "  +0x%-6" PRIx64 "  %s%s\n", col,
		       hot ? ">>" : "  ", share, in->count, in->addr - an->start, in->text,
		       col[0] ? c->reset : "");
	}
}

/* Per-address counts when there are no instructions to show. */
static void print_addresses(const struct fn_samples *fs, uint64_t start, bool have_start)
{
	struct ann_count *v = malloc((fs->nr ? fs->nr : 1) * sizeof(*v));
	size_t nr = 0;

	if (!v)
		return;
	/* Sum repeats (several processes, several stacks). */
	for (size_t i = 0; i < fs->nr; i++) {
		size_t j;

		for (j = 0; j < nr && v[j].addr != fs->counts[i].addr; j++)
			;
		if (j == nr)
			v[nr++] = fs->counts[i];
		else
			v[j].count += fs->counts[i].count;
	}
	for (size_t i = 1; i < nr; i++)
		for (size_t j = i; j > 0 && v[j - 1].addr > v[j].addr; j--) {
			struct ann_count t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	printf("\n    Share  Samples  Offset    Address\n");
	for (size_t i = 0; i < nr; i++) {
		uint64_t total = fs->self - fs->no_addr;

		printf("   %6.2f%% %8" PRIu64 "  ", total ? 100.0 * v[i].count / total : 0,
		       v[i].count);
		if (have_start)
			printf("+0x%-6" PRIx64, v[i].addr - start);
		else
			printf("%-9s", "?");
		printf("  %#" PRIx64 "\n", v[i].addr);
	}
	free(v);
}

/* --- the function's files -------------------------------------------------------- */

struct code_files {
	int fd, debug_fd; /* the binary, its separate debug file (-1: none) */
	char debug_path[PATH_MAX];
	struct elfsym *es; /* its symbols (with the debug file's merged in) */
	struct elfcode *code;
	struct srcline *lines;
	const char *lines_from;	   /* which file the lines came from */
	int lines_fd;		   /* and its descriptor: its owner is a reader of the sources */
	struct safe_root src_root; /* where the line table's paths are (fd owned, -1: none) */
	uint32_t pid;		   /* live: the process, whose credentials are proc */
	struct safe_cred proc;
};

static void code_files_close(struct code_files *cf)
{
	srcline__free(cf->lines);
	elfcode__free(cf->code);
	elfsym__free(cf->es);
	if (cf->fd >= 0)
		close(cf->fd);
	if (cf->debug_fd >= 0)
		close(cf->debug_fd);
	ptab__root_close(&cf->src_root);
}

static bool same_build_id(const struct elfsym *es, const char *hex)
{
	char have[2 * 64 + 1];
	const uint8_t *id;
	size_t len;

	id = elfsym__build_id(es, &len);
	if (!id || !hex)
		return !hex; /* no build id recorded: nothing to check */
	len = MIN(len, (size_t)64);
	for (size_t i = 0; i < len; i++)
		snprintf(have + 2 * i, 3, "%02x", id[i]);
	have[2 * len] = '\0';
	return !strcmp(have, hex);
}

/* A saved profile's binary, by path (the user's file), and its debug file. */
static int open_by_path(const struct annotate_opts *a, const struct profile *p, const char *module,
			struct code_files *cf)
{
	char path[PATH_MAX], dbgdir[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", a->symfs ? a->symfs : "", module);
	cf->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (cf->fd < 0 || fstat(cf->fd, &st) || !S_ISREG(st.st_mode)) {
		p_err("cannot read %s: %s", path,
		      cf->fd < 0 ? strerror(errno) : "not a regular file");
		p_hint("annotate on the machine the profile was taken on, or give --symfs DIR with "
		       "the binaries under DIR");
		return 1;
	}
	cf->es = elfsym__open_fd(cf->fd);
	if (!cf->es) {
		p_err("cannot read %s: %s", path, elfsym__strerror(errno));
		return 1;
	}
	if (!same_build_id(cf->es, profile__build_id(p, module))) {
		p_err("%s is not the binary that was profiled (build id differs from %s)", path,
		      profile__build_id(p, module));
		return 1;
	}
	snprintf(dbgdir, sizeof(dbgdir), "%s/usr/lib/debug", a->symfs ? a->symfs : "");
	{
		/* The debug link is the binary's bytes: its owner must be able to read what it
		 * names. */
		const struct safe_cred owner = { .uid = st.st_uid, .gid = st.st_gid };
		const struct safe_cred *readers[1] = { &owner };
		struct debuginfo_query q = {
			.bin = cf->es,
			.path = path,
			.dev = (uint64_t)st.st_dev,
			.ino = (uint64_t)st.st_ino,
			.roots = { *a->host, { .fd = -1 } },
			.debug_dir = dbgdir,
			.fd_out = &cf->debug_fd,
			.readers = readers,
			.nr_readers = 1,
		};
		struct elfsym *dbg = debuginfo__find(&q, cf->debug_path, sizeof(cf->debug_path));

		if (dbg)
			elfsym__merge(cf->es, dbg);
		/* The root is the host's here, not a process's. */
		if (!strncmp(cf->debug_path, "(process root) ", 15))
			memmove(cf->debug_path, cf->debug_path + 15,
				strlen(cf->debug_path + 15) + 1);
	}
	/* The profile's machine is under --symfs DIR, if given: its line tables' paths too. */
	cf->src_root = *a->host;
	cf->src_root.fd =
		a->symfs ? safeopen__dir(a->symfs) : fcntl(a->host->fd, F_DUPFD_CLOEXEC, 0);
	if (cf->src_root.fd < 0)
		cf->src_root.fd = -1;
	return 0;
}

/* A live process's binary and debug file, through the symbolizer. */
static int open_live(struct symbolizer *sym, uint32_t pid, const char *module,
		     struct code_files *cf)
{
	struct sym_files sf;
	int err = symbolizer__open_files(sym, pid, module, &sf);

	if (err) {
		sym_files__close(&sf);
		p_err("cannot read %s of process %u: %s", module, pid,
		      err == -ESRCH ? "the process has exited" : strerror(-err));
		return 1;
	}
	cf->fd = sf.fd;
	cf->debug_fd = sf.debug_fd;
	snprintf(cf->debug_path, sizeof(cf->debug_path), "%s", sf.debug_path);
	cf->src_root = sf.root; /* the process's own root: its paths mean what they mean to it */
	cf->pid = pid;
	cf->proc = sf.cred;
	cf->es = elfsym__open_fd(cf->fd);
	if (!cf->es) {
		p_err("cannot read %s: %s", module, elfsym__strerror(errno));
		return 1;
	}
	if (cf->debug_fd >= 0) {
		struct elfsym *dbg = elfsym__open_fd(cf->debug_fd);

		if (dbg)
			elfsym__merge(cf->es, dbg);
	}
	return 0;
}

/* Where a function's source files are read and who must be able to read them. */
static void sources_setup(struct sources *ss, const struct annotate_opts *a, struct code_files *cf)
{
	struct stat st;

	if (a->source_dir_fd >= 0) {
		ss->operator_dir = true;
		ss->root = *a->host;
		ss->root.fd = fcntl(a->source_dir_fd, F_DUPFD_CLOEXEC, 0);
		if (ss->root.fd < 0)
			ss->root.fd = -1;
		return;
	}
	ss->root = cf->src_root;
	cf->src_root.fd = -1;
	if (cf->pid) {
		ss->cred[ss->nr_readers] = cf->proc;
		snprintf(ss->who[ss->nr_readers++], sizeof(ss->who[0]), "pid %u (uid %u)", cf->pid,
			 cf->proc.uid);
	}
	/* Who wrote the line table: its file's owner (a tenant cannot chown to another). */
	if (fstat(cf->lines_fd, &st)) {
		ptab__root_close(&ss->root);
		return;
	}
	ss->cred[ss->nr_readers] = (struct safe_cred){ .uid = st.st_uid, .gid = st.st_gid };
	snprintf(ss->who[ss->nr_readers++], sizeof(ss->who[0]), "uid %u, the owner of %s",
		 (unsigned)st.st_uid, shown(cf->lines_from));
	for (size_t i = 0; i < ss->nr_readers; i++)
		ss->readers[i] = &ss->cred[i];
}

/* --- annotating ----------------------------------------------------------------- */

static uint64_t hottest_addr(const struct fn_samples *fs)
{
	uint64_t best = 0, addr = 0;

	for (size_t i = 0; i < fs->nr; i++)
		if (fs->counts[i].count > best) {
			best = fs->counts[i].count;
			addr = fs->counts[i].addr;
		}
	return addr;
}

static void print_header(const struct fn_samples *fs, const struct profile *p, const char *where)
{
	uint64_t total = profile__total(p);

	printf("%s  (%s)\n", shown(fs->f->name), shown(where));
	printf("  %" PRIu64 " self samples, %.1f%% of the %" PRIu64 " in the profile", fs->self,
	       total ? 100.0 * fs->self / total : 0, total);
	if (profile__meta_c(p)->freq_hz)
		printf(" (%u Hz)", profile__meta_c(p)->freq_hz);
	printf("\n");
}

static int annotate_user(const struct annotate_opts *a, const struct profile *p,
			 const struct fn_samples *fs, struct symbolizer *sym, struct termcolor *c)
{
	struct code_files cf = { .fd = -1, .debug_fd = -1, .lines_fd = -1, .src_root.fd = -1 };
	struct annotation an;
	struct sources ss = { .off = a->no_source, .root.fd = -1 };
	uint64_t start, end, hot = hottest_addr(fs);
	int ret = 1, err;

	if (!fs->f->module) {
		p_err("'%s' has no file to read its code from", fs->f->name);
		return 1;
	}
	if (fs->f->kind == FRAME_JIT) {
		p_err("'%s' is JIT code (named by a perf map): there is no file to disassemble",
		      fs->f->name);
		return 1;
	}
	if (sym ? open_live(sym, fs->pid, fs->f->module, &cf)
		: open_by_path(a, p, fs->f->module, &cf))
		goto out;
	if (elfsym__range(cf.es, hot, &start, &end)) {
		p_err("no symbol of %s covers the sampled address %#" PRIx64, fs->f->module, hot);
		goto out;
	}
	cf.code = elfcode__open_fd(cf.fd);
	if (!cf.code) {
		p_err("cannot read the code of %s: %s", fs->f->module, strerror(errno));
		goto out;
	}
	if (!a->no_source) {
		if (cf.debug_fd >= 0 && (cf.lines = srcline__open_fd(cf.debug_fd)))
			cf.lines_from = cf.debug_path, cf.lines_fd = cf.debug_fd;
		else if ((cf.lines = srcline__open_fd(cf.fd)))
			cf.lines_from = fs->f->module, cf.lines_fd = cf.fd;
	}
	err = annotation__build(&an, cf.code, cf.lines, start, end, fs->counts, fs->nr);
	if (err) {
		p_err("cannot disassemble %s at %#" PRIx64 "-%#" PRIx64 ": %s", fs->f->module,
		      start, end,
		      err == -EFBIG	? "the function is too large"
		      : err == -ELIBACC ? (disasm__unavailable() ?: "no disassembler")
					: strerror(-err));
		goto out;
	}
	print_header(fs, p, fs->f->module);
	printf("  %" PRIx64 "-%" PRIx64 " (%" PRIu64 " bytes, %zu instructions)", start, end,
	       end - start, an.nr);
	if (an.nr_rows)
		printf("; source lines from %s%s", shown(cf.lines_from),
		       cf.lines_from == cf.debug_path ? " (separate debug file)" : "");
	else if (!a->no_source)
		printf("; no source lines (no DWARF: build with -g, or install its debug file)");
	printf("\n");
	if (an.outside || fs->no_addr)
		printf("  not shown: %" PRIu64 " samples outside %" PRIx64 "-%" PRIx64 ", %" PRIu64
		       " without an address\n",
		       an.outside, start, end, fs->no_addr);
	if (an.nr_rows && !a->no_source) {
		sources_setup(&ss, a, &cf);
		sources_load(&ss, &an);
		if (ss.nr_withheld == 1)
			printf("  source withheld: %s\n", ss.withheld);
		else if (ss.nr_withheld)
			printf("  source withheld: %s (and %zu more file%s)\n", ss.withheld,
			       ss.nr_withheld - 1, ss.nr_withheld > 2 ? "s" : "");
	}
	print_listing(&an, c, &ss);
	print_hot_lines(&an, &ss);
	annotation__free(&an);
	ret = 0;
out:
	sources_free(&ss);
	code_files_close(&cf);
	return ret;
}

/*
 * A Lisp function (SBCL): its code is in the process's heap, not in a file:
 * the instructions of its simple-fun read from the process (live runs only;
 * through the process-and-file layer, at most ANNOTATION_MAX_BYTES), no
 * source lines. Code a GC moved during the run has its earlier samples
 * outside the range read.
 */
static int annotate_lisp(const struct profile *p, const struct fn_samples *fs,
			 struct symbolizer *sym, struct termcolor *c)
{
	uint64_t start, end, hot = hottest_addr(fs);
	struct annotation an;
	uint8_t *bytes = NULL;
	char where[64];
	int err;

	if (!sym) {
		p_err("'%s' is Lisp code: its instructions are in its process's heap, read by a "
		      "live run only",
		      shown(fs->f->name));
		p_hint("bpfprof annotate -p PID -d 10 FUNCTION");
		return 1;
	}
	err = symbolizer__lisp_code(sym, fs->pid, hot, ANNOTATION_MAX_BYTES, &start, &end, &bytes);
	if (err) {
		p_err("cannot read the code of '%s' from process %" PRIu32 ": %s",
		      shown(fs->f->name), fs->pid,
		      err == -ESRCH    ? "it has ended"
		      : err == -EFBIG  ? "the function is too large"
		      : err == -ENOENT ? "no Lisp function's instructions hold its hottest address"
				       : strerror(-err));
		return 1;
	}
	err = annotation__build_bytes(&an, bytes, (size_t)(end - start), EM_X86_64, true, NULL,
				      start, end, fs->counts, fs->nr);
	free(bytes);
	if (err) {
		p_err("cannot disassemble '%s': %s", shown(fs->f->name),
		      err == -ELIBACC ? (disasm__unavailable() ?: "no disassembler")
				      : strerror(-err));
		return 1;
	}
	snprintf(where, sizeof(where), "Lisp, process %" PRIu32, fs->pid);
	print_header(fs, p, where);
	printf("  %" PRIx64 "-%" PRIx64 " (%" PRIu64
	       " bytes, %zu instructions), read from the process's heap\n",
	       start, end, end - start, an.nr);
	if (an.outside || fs->no_addr)
		printf("  not shown: %" PRIu64 " samples outside %" PRIx64 "-%" PRIx64 " (other "
		       "processes, code the GC moved), %" PRIu64 " without an address\n",
		       an.outside, start, end, fs->no_addr);
	print_listing(&an, c, &(struct sources){ .off = true });
	annotation__free(&an);
	return 0;
}

static int annotate_kernel(const struct profile *p, const struct fn_samples *fs,
			   struct symbolizer *sym, struct termcolor *c)
{
	uint64_t start = 0, end = 0, hot = hottest_addr(fs);
	struct ksyms *ks = NULL;
	struct elfcode *code = NULL;
	struct annotation an;
	bool have_range = false;
	int fd = -1, err;
	const char *why;

	if (sym) {
		have_range = !symbolizer__kernel_range(sym, hot, &start, &end);
	} else if ((ks = ksyms__load("/proc/kallsyms"))) {
		const struct ksym *k = ksyms__lookup(ks, hot);

		/* The profile's addresses are this boot's only if they fall in its symbol. */
		if (k && match_tier(fs->f->name, k->name) >= 0) {
			start = k->addr;
			end = ksyms__end(ks, k);
			have_range = end > start;
		}
	}
	print_header(fs, p, "kernel");
	if (ks && ksyms__restricted(ks))
		printf("  kernel addresses are hidden here (kernel.kptr_restrict): run as root to place them\n");
	else if (!have_range)
		printf("  the running kernel has no symbol at these addresses (a profile of another boot?)\n");
	ksyms__free(ks);
	fd = open(KCORE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		why = errno == ENOENT ? "this kernel has no " KCORE : strerror(errno);
	else if (!(code = elfcode__open_fd(fd)))
		why = "cannot read " KCORE;
	else
		why = NULL;
	if (have_range && !why) {
		err = annotation__build(&an, code, NULL, start, end, fs->counts, fs->nr);
		if (!err) {
			printf("  %" PRIx64 "-%" PRIx64 " (%" PRIu64
			       " bytes, %zu instructions), from %s\n",
			       start, end, end - start, an.nr, KCORE);
			print_listing(&an, c, &(struct sources){ .off = true });
			annotation__free(&an);
			goto out;
		}
		why = err == -ELIBACC ? (disasm__unavailable() ?: "no disassembler")
				      : strerror(-err);
	}
	if (why)
		printf("  kernel text is not readable (%s): samples per address\n", why);
	print_addresses(fs, start, have_range);
out:
	elfcode__free(code);
	if (fd >= 0)
		close(fd);
	return 0;
}

static int annotate_profile(const struct annotate_opts *a, const struct profile *p,
			    struct symbolizer *sym)
{
	struct fn_samples *all = NULL, *fs;
	struct termcolor c;
	size_t nr = 0, several = 0;
	int ret;

	fs = choose(p, a->function, &all, &nr, &several);
	if (!fs) {
		if (several && !a->profile_path)
			save_candidates(p, all, several);
		free_fns(all, nr);
		return 1;
	}
	if (!fs->nr) {
		p_err("the samples of '%s' have no addresses", fs->f->name);
		p_hint("record the profile with --addresses (pprof output), or annotate live: "
		       "bpfprof annotate -p PID -d 10 FUNCTION");
		free_fns(all, nr);
		return 1;
	}
	termcolor__init(&c, isatty(STDOUT_FILENO));
	ret = fs->f->kind == FRAME_KERNEL ? annotate_kernel(p, fs, sym, &c)
	      : fs->f->kind == FRAME_LISP ? annotate_lisp(p, fs, sym, &c)
					  : annotate_user(a, p, fs, sym, &c);
	free_fns(all, nr);
	return ret;
}

/* Samples like record (its phases), addresses kept, then annotates. */
static int annotate_live(struct annotate_opts *a)
{
	struct record r = { .ch = CHILD_INIT, .t_main = now_ns() };
	struct collector_stats st;
	int ret;

	r.o = a->o;
	memset(&a->o, 0, sizeof(a->o)); /* r owns the option arrays now */
	stop__install();
	ret = record__run(&r);
	if (!ret) {
		collector__stats(r.col, &st);
		record__fill_meta(r.rc.prof, &r.rc, profile__meta(r.rc.prof)->start_ns,
				  r.t_stop - r.t_start, record__lost(&st));
		p_info("%" PRIu64 " sample%s in %.1f s, %" PRIu64 " lost", st.v[STAT_SAMPLES],
		       plural_s(st.v[STAT_SAMPLES]), (r.t_stop - r.t_start) / NS_PER_SEC_F,
		       record__lost(&st));
		fflush(stderr);
		a->host = ptab__host_root(r.rc.pt);
		ret = annotate_profile(a, r.rc.prof, r.rc.sym);
	}
	record__close(&r);
	return ret;
}

static int annotate_main(struct annotate_opts *a)
{
	struct errmsg em = { 0 };
	struct profile *p;
	struct ptab *pt;
	int ret;

	if (!a->profile_path)
		return annotate_live(a);
	p = reader__read_path(a->profile_path, &em);
	if (!p) {
		p_err("cannot read %s: %s", a->profile_path, em.msg);
		options__free(&a->o);
		return 1;
	}
	/* The host's root and mounts, as the process-and-file layer sees them:
	 * debug files and source files are opened through it. */
	pt = ptab__new(NULL);
	if (!pt) {
		p_err("out of memory");
		profile__free(p);
		options__free(&a->o);
		return 1;
	}
	a->host = ptab__host_root(pt);
	ret = annotate_profile(a, p, NULL);
	ptab__free(pt);
	profile__free(p);
	options__free(&a->o);
	return ret;
}

int cmd_annotate(int argc, char **argv)
{
	struct annotate_opts a;
	int ret;

	ret = parse(argc, argv, &a);
	if (ret == 1) {
		annotate_usage(stdout);
		options__free(&a.o);
		return 0;
	}
	if (ret) {
		if (a.source_dir_fd >= 0)
			close(a.source_dir_fd);
		options__free(&a.o);
		return ret;
	}
	log_set_level(a.o.verbosity < 0 ? LOG_ERROR : a.o.verbosity == 0 ? LOG_INFO : LOG_DEBUG);
	ret = annotate_main(&a);
	if (a.source_dir_fd >= 0)
		close(a.source_dir_fd);
	return ret;
}
