// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* writers.c - writer table and atomic file writing; see writer.h. */
#include "format/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/htab.h"
#include "base/text.h"
#include "base/util.h"
#include "proc/safewrite.h"

static const struct writer *const writers[] = {
	&writer_folded, &writer_svg,	    &writer_svgz,   &writer_pprof,
	&writer_pb,	&writer_speedscope, &writer_report, NULL,
};

static const struct diff_writer *const diff_writers[] = {
	&diff_writer_svg,
	&diff_writer_svgz,
	&diff_writer_report,
	NULL,
};

const struct writer *const *writer__all(void)
{
	return writers;
}

const struct writer *writer__find(const char *name)
{
	for (size_t i = 0; writers[i]; i++)
		if (!strcmp(writers[i]->name, name))
			return writers[i];
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	/* CPU.SVG and cpu.Pb.Gz name formats too (a camera's or Windows' habit). */
	return ls >= lx && !strcasecmp(s + ls - lx, suffix);
}

/* Longest matching ending wins: ".speedscope.json" before ".json". */
static size_t ext_match(const char *path, const char *const *exts, size_t n)
{
	size_t best = 0;

	for (size_t j = 0; j < n && exts[j]; j++)
		if (ends_with(path, exts[j]) && strlen(exts[j]) > best)
			best = strlen(exts[j]);
	return best;
}

const struct writer *writer__for_path(const char *path)
{
	const struct writer *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; writers[i]; i++) {
		size_t l = ext_match(path, writers[i]->exts, ARRAY_SIZE(writers[i]->exts));

		if (l > best_len) {
			best = writers[i];
			best_len = l;
		}
	}
	return best;
}

const struct diff_writer *const *writer__all_diff(void)
{
	return diff_writers;
}

const struct diff_writer *writer__find_diff(const char *name)
{
	for (size_t i = 0; diff_writers[i]; i++)
		if (!strcmp(diff_writers[i]->name, name))
			return diff_writers[i];
	return NULL;
}

const struct diff_writer *writer__diff_for_path(const char *path)
{
	const struct diff_writer *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; diff_writers[i]; i++) {
		size_t l =
			ext_match(path, diff_writers[i]->exts, ARRAY_SIZE(diff_writers[i]->exts));

		if (l > best_len) {
			best = diff_writers[i];
			best_len = l;
		}
	}
	return best;
}

const char *writer__kind_suffix(enum frame_kind kind)
{
	switch (kind) {
	case FRAME_KERNEL:
		return "_[k]";
	case FRAME_JIT:
		return "_[j]";
	case FRAME_PYTHON:
		return "_[py]";
	case FRAME_INLINE:
		return "_[i]";
	case FRAME_LISP:
		return "_[lisp]";
	case FRAME_JAVA_INTERP:
		return "_[0]"; /* async-profiler's interpreted frames */
	default:
		return "";
	}
}

const char *writer__short_file(const char *file)
{
	const char *base = path_basename(file);

	/* A package's __init__.py or __main__.py says little without its directory. */
	if (base != file && (!strcmp(base, "__init__.py") || !strcmp(base, "__main__.py"))) {
		const char *p = base - 1;

		while (p > file && p[-1] != '/')
			p--;
		return p;
	}
	return base;
}

void writer__frame_display(const struct pframe *f, bool lines, char *buf, size_t size)
{
	bool with_file = f->file && f->file[0] && (f->kind == FRAME_PYTHON || (lines && f->line));

	if (!with_file)
		snprintf(buf, size, "%s", f->name);
	else if (lines && f->line)
		snprintf(buf, size, "%s (%s:%u)", f->name, writer__short_file(f->file), f->line);
	else
		snprintf(buf, size, "%s (%s)", f->name, writer__short_file(f->file));
}

void writer__frame_label_lines(const struct pframe *f, bool lines, char *buf, size_t size)
{
	const char *suffix = writer__kind_suffix(f->kind);
	char name[4096];
	size_t i = 0;

	if (!size)
		return;
	writer__frame_display(f, lines, name, sizeof(name));
	/* Controls '?', bytes not UTF-8 U+FFFD, as in every writer; ';' separates frames. */
	writer__clean_utf8(name, buf, size);
	for (; buf[i]; i++)
		if (buf[i] == ';')
			buf[i] = ':';
	for (const char *s = suffix; *s && i + 1 < size; s++)
		buf[i++] = *s;
	buf[i] = '\0';
}

void writer__frame_label(const struct pframe *f, char *buf, size_t size)
{
	writer__frame_label_lines(f, false, buf, size);
}

void writer__clean_utf8(const char *s, char *buf, size_t size)
{
	size_t i = 0;

	if (!size)
		return;
	while (*s) {
		uint32_t cp;
		size_t n = text__seq(s, &cp);
		bool control = n && text__is_control(cp);
		const char *put = control ? "?" : n ? s : "\xef\xbf\xbd";
		size_t len = control ? 1 : n ? n : 3;

		if (i + len + 1 > size)
			break;
		memcpy(buf + i, put, len);
		i += len;
		s += n ? n : 1;
	}
	buf[i] = '\0';
}

/* --- processes ------------------------------------------------------------- */

struct wproc_key {
	uintptr_t comm;
	uint32_t pid, pad;
};

static int cmp_wproc(const void *a, const void *b)
{
	const struct wproc *x = a, *y = b;
	int c;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	c = strcmp(x->comm, y->comm);
	if (c)
		return c;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int writer__processes(const struct profile *p, bool merge, struct wproc **out, size_t *nr_out)
{
	struct htab *idx = htab__new();
	struct wproc *v = NULL;
	size_t nr = 0, cap = 0;
	int err = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);
		struct wproc_key k = { 0 };
		struct wproc *sp;
		bool created;
		size_t at;

		if (!s->count)
			continue;
		if (!merge) {
			k.comm = (uintptr_t)s->comm;
			k.pid = s->pid;
		}
		if (!htab__index(idx, &k, sizeof(k), &at, &created, &nr, (void **)&v, &cap,
				 sizeof(*v))) {
			err = -ENOMEM;
			break;
		}
		sp = &v[at];
		if (created)
			*sp = (struct wproc){ .comm = merge ? "all processes" : s->comm,
					      .pid = merge ? 0 : s->pid };
		if (array_grow((void **)&sp->samples, &sp->cap, sp->nr + 1, sizeof(*sp->samples))) {
			err = -ENOMEM;
			break;
		}
		sp->samples[sp->nr++] = i;
		sp->total += s->count;
	}
	htab__free(idx);
	if (err) {
		writer__processes_free(v, nr);
		return err;
	}
	if (nr)
		qsort(v, nr, sizeof(*v), cmp_wproc);
	*out = v;
	*nr_out = nr;
	return 0;
}

void writer__processes_free(struct wproc *v, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(v[i].samples);
	free(v);
}

void writer__json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		uint32_t cp;
		size_t n = text__seq((const char *)p, &cp);

		if (n > 1 && text__is_control(cp)) {
			fprintf(f, "\\u%04x", (unsigned)cp); /* C1, bidirectional: text.h */
			p += n;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, f);
			p += n;
			continue;
		}
		if (!n) {
			fputs("\\ufffd", f);
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p, f);
		} else if (*p < 0x20 || *p == 0x7f || *p == '<' || *p == '>' || *p == '&') {
			fprintf(f, "\\u%04x", *p);
		} else {
			fputc(*p, f);
		}
		p++;
	}
	fputc('"', f);
}

int writer__check_path(const char *path, struct errmsg *em)
{
	struct safewrite_target t;
	int err;

	if (!path || !strcmp(path, "-"))
		return 0;
	err = safewrite__target(path, false, &t, em);
	safewrite__target_close(&t);
	return err;
}

/* What to write: one profile or a before/after pair. */
struct write_job {
	const struct writer *w;
	const struct diff_writer *dw;
	const struct profile *p, *before;
	const struct out_opts *o;
};

int writer__write_file(const struct writer *w, const struct profile *p, FILE *f,
		       const struct out_opts *o)
{
	struct profile *view;
	int err;

	if (w->all_values || (!profile__meta_c(p)->offcpu && !profile__meta_c(p)->alloc_period))
		return w->write(p, f, o);
	view = view__build(p, o ? o->view : VIEW_AUTO);
	if (!view)
		return -errno;
	err = w->write(view, f, o);
	profile__free(view);
	return err;
}

static int write_stream(const struct write_job *j, FILE *f)
{
	int err = j->w ? writer__write_file(j->w, j->p, f, j->o)
		       : j->dw->write(j->before, j->p, f, j->o);

	if (fflush(f) && !err)
		err = -errno;
	if (ferror(f) && !err)
		err = -EIO;
	return err;
}

/* Into fd, a new file (closed here), fsync'd; its size (may be NULL). */
static int write_new(const struct write_job *j, int fd, uint64_t *size)
{
	struct stat st;
	FILE *f;
	int err;

	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	err = write_stream(j, f);
	if (!err && fsync(fileno(f)))
		err = -errno;
	if (!err && size)
		*size = fstat(fileno(f), &st) ? 0 : (uint64_t)st.st_size;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* Into a new temporary file for name in dirfd, fsync'd; the caller renames it. */
static int write_tmp(const struct write_job *j, int dirfd, const char *name, char *tmp,
		     size_t tmp_size, uint64_t *size)
{
	int fd, err;

	fd = safewrite__tmpfile(dirfd, name, tmp, tmp_size);
	if (fd < 0)
		return fd;
	err = write_new(j, fd, size);
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

int writer__write_tmp(const struct writer *w, const struct profile *p, const struct out_opts *o,
		      int dirfd, const char *name, char *tmp, size_t tmp_size, uint64_t *size)
{
	struct write_job j = { .w = w, .p = p, .o = o };

	return write_tmp(&j, dirfd, name, tmp, tmp_size, size);
}

static int write_job_path(const struct write_job *j, const char *path, struct errmsg *em)
{
	struct safewrite_target t;
	char tmp[NAME_MAX + 1];
	FILE *f;
	int err;

	if (!path || !strcmp(path, "-"))
		return write_stream(j, stdout);
	err = safewrite__target(path, true, &t, em);
	if (err)
		return err;
	if (t.fd >= 0) {
		/* A FIFO, a device, our own stdout: opened without blocking. */
		f = fdopen(t.fd, "w");
		if (!f) {
			err = -errno;
			safewrite__target_close(&t);
			return err;
		}
		t.fd = -1;
		err = write_stream(j, f);
		if (fclose(f) && !err)
			err = -errno;
		return err;
	}
	err = write_tmp(j, t.dirfd, t.name, tmp, sizeof(tmp), NULL);
	/* renameat() replaces a symlink at the name rather than writing through it. */
	if (!err) {
		err = safewrite__rename(t.dirfd, tmp, t.name, false);
		if (err)
			unlinkat(t.dirfd, tmp, 0);
	}
	safewrite__target_close(&t);
	return err;
}

int writer__write_path(const struct writer *w, const struct profile *p, const char *path,
		       const struct out_opts *o, struct errmsg *em)
{
	struct write_job j = { .w = w, .p = p, .o = o };

	return write_job_path(&j, path, em);
}

int writer__write_fallback(const struct writer *w, const struct profile *p, const char *path,
			   const struct out_opts *o, char *written, size_t size, struct errmsg *em)
{
	const char *tmpdir = getenv("TMPDIR"), *dirs[] = { tmpdir, "/tmp" };
	struct write_job j = { .w = w, .p = p, .o = o };
	const char *base = path ? path_basename(path) : "";
	char suffix[NAME_MAX - 16], name[NAME_MAX + 1];
	int err = -ENOENT;

	/* The name asked for keeps its ending, so the format reads back. */
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "-"))
		snprintf(suffix, sizeof(suffix), "-profile%s", w->exts[0] ? w->exts[0] : "");
	else
		snprintf(suffix, sizeof(suffix), "-%s", base);
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		int dirfd, fd;

		if (!dirs[i] || !*dirs[i] || (i && tmpdir && !strcmp(tmpdir, dirs[i])))
			continue;
		dirfd = safewrite__spare_dir(dirs[i], em);
		if (dirfd < 0) {
			err = dirfd;
			continue;
		}
		fd = safewrite__newfile(dirfd, "bpfprof-", suffix, 0600, name, sizeof(name));
		err = fd < 0 ? fd : write_new(&j, fd, NULL);
		if (err && fd >= 0)
			unlinkat(dirfd, name, 0);
		close(dirfd);
		if (!err) {
			size_t n = strlen(dirs[i]);

			snprintf(written, size, "%s%s%s", dirs[i],
				 n && dirs[i][n - 1] == '/' ? "" : "/", name);
			return 0;
		}
	}
	return err;
}

int writer__write_diff_path(const struct diff_writer *w, const struct profile *before,
			    const struct profile *after, const char *path, const struct out_opts *o,
			    struct errmsg *em)
{
	struct write_job j = { .dw = w, .p = after, .before = before, .o = o };

	return write_job_path(&j, path, em);
}
