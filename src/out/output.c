// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* output.c - writer table and atomic file writing; see output.h. */
#include "out/output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static const struct writer *const writers[] = {
	&writer_folded,
	NULL,
};

const struct writer *const *output__all(void)
{
	return writers;
}

const struct writer *output__find(const char *name)
{
	for (size_t i = 0; writers[i]; i++)
		if (!strcmp(writers[i]->name, name))
			return writers[i];
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

const struct writer *output__for_path(const char *path)
{
	const struct writer *best = NULL;
	size_t best_len = 0;

	/* Longest matching ending wins: ".speedscope.json" before ".json". */
	for (size_t i = 0; writers[i]; i++)
		for (size_t j = 0; j < ARRAY_SIZE(writers[i]->exts) && writers[i]->exts[j]; j++) {
			const char *x = writers[i]->exts[j];

			if (ends_with(path, x) && strlen(x) > best_len) {
				best = writers[i];
				best_len = strlen(x);
			}
		}
	return best;
}

void output__frame_label(const struct pframe *f, char *buf, size_t size)
{
	const char *suffix = f->kind == FRAME_KERNEL ? "_[k]" : f->kind == FRAME_JIT ? "_[j]" : "";
	size_t i = 0;

	if (!size)
		return;
	for (const char *s = f->name; *s && i + 1 < size; s++) {
		unsigned char c = *s;

		buf[i++] = (c == ';') ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	for (const char *s = suffix; *s && i + 1 < size; s++)
		buf[i++] = *s;
	buf[i] = '\0';
}

static int dir_of(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return snprintf(dir, size, ".") >= (int)size ? -ENAMETOOLONG : 0;
	if (slash == path)
		return snprintf(dir, size, "/") >= (int)size ? -ENAMETOOLONG : 0;
	if ((size_t)(slash - path) >= size)
		return -ENAMETOOLONG;
	memcpy(dir, path, slash - path);
	dir[slash - path] = '\0';
	return 0;
}

int output__check_path(const char *path)
{
	char dir[PATH_MAX];
	struct stat st;
	int err;

	if (!path || !strcmp(path, "-"))
		return 0;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (!S_ISREG(st.st_mode))
			return access(path, W_OK) ? -errno : 0;
	}
	err = dir_of(path, dir, sizeof(dir));
	if (err)
		return err;
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(dir, W_OK) ? -errno : 0;
}

static int write_stream(const struct writer *w, const struct profile *p, FILE *f,
			const struct out_opts *o)
{
	int err = w->write(p, f, o);

	if (fflush(f) && !err)
		err = -errno;
	if (ferror(f) && !err)
		err = -EIO;
	return err;
}

int output__write_path(const struct writer *w, const struct profile *p, const char *path,
		       const struct out_opts *o)
{
	char tmp[PATH_MAX];
	struct stat st;
	FILE *f;
	int fd, err;

	if (!path || !strcmp(path, "-"))
		return write_stream(w, p, stdout, o);

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		f = fopen(path, "w");
		if (!f)
			return -errno;
		err = write_stream(w, p, f, o);
		if (fclose(f) && !err)
			err = -errno;
		return err;
	}

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fchmod(fd, 0644);
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	err = write_stream(w, p, f, o);
	if (!err && fsync(fileno(f)))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	/* rename() replaces a symlink at path rather than writing through it. */
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
