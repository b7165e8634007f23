/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * writer.h - the table of profile writers and how a file gets written.
 *
 * Each format has one file in src/format/ (NAME_write.c, or NAME.c for
 * formats only written) that provides a struct writer. The
 * format of "-o FILE" comes from its extension unless -f names one; without
 * -o, folded text goes to stdout.
 *
 * Files are written atomically: into a temporary file in the same directory,
 * fsync'd, then renamed over the target, so a reader (or a crash, or a full
 * disk) never sees half a profile. Targets that are not regular files (a
 * FIFO, /dev/null, /dev/stdout) are written directly. The path may be in a
 * directory other users can write (/tmp): it is resolved under the rules of
 * proc/safewrite.h - no symlink, FIFO or device of another user there is
 * followed or opened, files are created O_EXCL relative to the directory's
 * descriptor, and no open() blocks (a FIFO nobody reads is -ENXIO).
 */
#ifndef BPFPROF_FORMAT_WRITER_H
#define BPFPROF_FORMAT_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/errmsg.h"
#include "base/profile.h"
#include "format/view.h"

struct out_opts {
	const char *title; /* flame graph title, NULL for a default */
	bool inverted;	   /* icicle graph */
	bool merge;	   /* speedscope: one profile for all processes */
	unsigned top;	   /* report: rows per table, 0 for all */
	const char *sort;  /* report: "self" or "total", NULL for both tables */
	bool lines;	   /* folded, svg: one frame per source line */
	enum view view;	   /* a profile with off-CPU time, for writers of one value */
	/* report: the call graph instead of the tables - callers and callees of the
	 * functions these name (writer__name_match), or of the top functions */
	const char *callers, *callees;
	bool call_graph;
	/* report: "sb-sprof" for one flat table in the layout of SBCL's
	 * sb-sprof (Self, Total, Cumul), NULL for the tables */
	const char *style;
};

/* Rows per report table when no options are given (o == NULL). */
#define OUT_DEFAULT_TOP 20

struct writer {
	const char *name;	 /* for -f */
	const char *exts[4];	 /* file name endings that select it */
	const char *description; /* one line for --help */
	int (*write)(const struct profile *p, FILE *f, const struct out_opts *o);
	/* Writes on-CPU samples and off-CPU time itself (pprof, report); the
	 * others get the view o->view of a profile with off-CPU time. */
	bool all_values;
};

/* The writer called name, or NULL. */
const struct writer *writer__find(const char *name);
/* The writer whose extension ends path (in any case: .SVG is .svg), or NULL. */
const struct writer *writer__for_path(const char *path);
/* Writers in table order, NULL-terminated. */
const struct writer *const *writer__all(void);

/*
 * Writes p to path ("-" or NULL: stdout) atomically as described above,
 * through the view o->view when p has off-CPU time and w shows one value.
 * Returns 0 or -errno; on error no partial file is left behind. A refused
 * path is -EACCES with em (may be NULL) saying what was refused.
 */
int writer__write_path(const struct writer *w, const struct profile *p, const char *path,
		       const struct out_opts *o, struct errmsg *em);

/*
 * Writes p into a new temporary file for name in the directory dirfd
 * ("NAME.tmp.XXXXXX", made O_EXCL), fsync'd; tmp receives its name and size
 * (may be NULL) its size. The caller renames it into place
 * (safewrite__rename) or removes it. On error nothing is left behind.
 */
int writer__write_tmp(const struct writer *w, const struct profile *p, const struct out_opts *o,
		      int dirfd, const char *name, char *tmp, size_t tmp_size, uint64_t *size);

/*
 * When writing path failed (its directory gone, a full disk, a path that
 * cannot hold a file): writes p to a new file "bpfprof-XXXXXX-NAME" (NAME:
 * path's last component, so the format reads back) in $TMPDIR, else /tmp,
 * made O_CREAT | O_EXCL | O_NOFOLLOW with mode 0600 in a directory opened
 * under proc/safewrite.h's rules (safewrite__spare_dir: a trusted owner,
 * sticky if others can write it). written receives its path. 0 or -errno
 * (em may say why the last directory was refused).
 */
int writer__write_fallback(const struct writer *w, const struct profile *p, const char *path,
			   const struct out_opts *o, char *written, size_t size, struct errmsg *em);

/* Writes p to f with w, through the view o->view where w needs one (as above). */
int writer__write_file(const struct writer *w, const struct profile *p, FILE *f,
		       const struct out_opts *o);

/*
 * Checks early (before profiling) that path can be written, under the same
 * rules, without opening it; 0 or -errno (a refusal: -EACCES and em).
 */
int writer__check_path(const char *path, struct errmsg *em);

/*
 * How well FUNCTION (report --callers, --callees) names a function: 0 its
 * name, 1 its name but for a parameter list ("f" names "f(int)"), 2 a glob
 * (*, ?, [...]) that matches the whole name, 3 a part of the name; -1 not
 * at all (an empty FUNCTION matches nothing). A report shows the functions
 * of the best tier any function reaches.
 */
int writer__name_match(const char *name, const char *pattern);

/* The writers. */
extern const struct writer writer_folded;
extern const struct writer writer_svg;
extern const struct writer writer_svgz;
extern const struct writer writer_pprof;
extern const struct writer writer_pb; /* pprof uncompressed */
extern const struct writer writer_speedscope;
extern const struct writer writer_report;

/*
 * Differential writers ("bpfprof diff"): two profiles of the same program,
 * before and after a change. Shares are normalized to each profile's total,
 * so profiles of different lengths compare.
 */
struct diff_writer {
	const char *name;
	const char *exts[4];
	const char *description;
	int (*write)(const struct profile *before, const struct profile *after, FILE *f,
		     const struct out_opts *o);
};

extern const struct diff_writer diff_writer_svg;
extern const struct diff_writer diff_writer_svgz;
extern const struct diff_writer diff_writer_report;

const struct diff_writer *writer__find_diff(const char *name);
const struct diff_writer *writer__diff_for_path(const char *path);
const struct diff_writer *const *writer__all_diff(void);
/* As writer__write_path(), for a differential writer. */
int writer__write_diff_path(const struct diff_writer *w, const struct profile *before,
			    const struct profile *after, const char *path, const struct out_opts *o,
			    struct errmsg *em);

/*
 * Shared by the text writers: a frame name as folded/flame graph tools see it
 * (kernel "_[k]", JIT "_[j]", Python "_[py]", inlined "_[i]", Lisp "_[lisp]",
 * interpreted Java "_[0]" suffixes; ';' and control characters replaced). A
 * Python frame shows its file, "name (app.py)"; with lines, any frame with a
 * file and line shows both, "name (app.py:12)", "main.leaf (main.go:30)".
 */
void writer__frame_label(const struct pframe *f, char *buf, size_t size);
void writer__frame_label_lines(const struct pframe *f, bool lines, char *buf, size_t size);
/* The same without the kind suffix and without cleaning (for labelled formats). */
void writer__frame_display(const struct pframe *f, bool lines, char *buf, size_t size);
/* "_[k]", "_[j]", "_[py]", "_[i]", "_[lisp]", "_[0]" or "". */
const char *writer__kind_suffix(enum frame_kind kind);
/* A source file as labels show it: its base name ("pkg/__init__.py" for a package). */
const char *writer__short_file(const char *file);

/* One process of a profile, as the writers that split by process see it. */
struct wproc {
	const char *comm;
	uint32_t pid;
	uint64_t total;	 /* its samples' count */
	size_t *samples; /* indexes of its samples (those with a count) in the profile */
	size_t nr, cap;
};

/*
 * p's samples with a count grouped by process (comm, pid), or all in one
 * ("all processes", pid 0) when merge: *out[0..*nr), most samples first,
 * then by comm and pid; free with writer__processes_free(). 0 or -ENOMEM.
 */
int writer__processes(const struct profile *p, bool merge, struct wproc **out, size_t *nr);
void writer__processes_free(struct wproc *v, size_t nr);

/* Writes len bytes of data to f gzip-compressed (RFC 1952, mtime 0, so the
 * same input gives the same bytes); 0 or -errno. */
int writer__gzip(FILE *f, const void *data, size_t len);

/*
 * Writes s as a JSON string literal (quotes included). Invalid UTF-8 becomes
 * U+FFFD, so the result is always valid JSON; '<', '>' and '&' are escaped
 * too, so the literal is safe inside XML/HTML (CDATA, <script>); controls
 * (C1 and bidirectional formatting too: base/text.h) as \uXXXX.
 */
void writer__json_string(FILE *f, const char *s);
/* Copies s with invalid UTF-8 replaced by U+FFFD and control characters
 * (C0, DEL, C1, bidirectional formatting: base/text.h) by '?'. */
void writer__clean_utf8(const char *s, char *buf, size_t size);

#endif
