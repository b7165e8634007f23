// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* dwzalt.c - dwz files, opened safely and shared; see dwzalt.h. */
#include "sym/dwzalt.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/elffile.h"
#include "proc/elfnote.h"
#include "sym/debuginfo.h"
#include "sym/dwinline.h"

struct dwzalt {
	struct dwzalt *next;
	uint64_t dev, ino;
	/* What the file was when read: a held file is shared only while it still is. */
	int64_t size, mtime_ns, ctime_ns;
	/*
	 * Kept open while held: the inode cannot be freed, so its number cannot
	 * be reused by another file (another tenant's) while this is shared.
	 */
	int fd;
	uint8_t id[BUILD_ID_MAX];
	size_t id_len;
	size_t refs;
	size_t bytes;
	Elf *elf;
	Dwarf *dw;
	char path[PATH_MAX];
};

/* Held files: a few (one per dwz'd package in use); a list is enough. */
static struct dwzalt *held;
static size_t nr_held;

/*
 * Files refused after a read (another build id, not ELF or DWARF libdw reads
 * safely, debug sections over the room asked with): remembered for the run,
 * by what the file is, so a file many others name (a tenant's bomb) is read
 * once, not once per file naming it. A ring: the oldest verdict goes first.
 */
struct refusal {
	uint64_t dev, ino;
	int64_t size, mtime_ns, ctime_ns;
	uint8_t id[BUILD_ID_MAX];
	size_t id_len;
	int err;
	size_t bytes; /* -EFBIG: the room it needs (more room: read again) */
};
static struct refusal refused[DWZALT_MAX_REFUSED];
static size_t nr_refused, next_refused;
static size_t files_read;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

/* .gnu_debugaltlink's name and build id; -EINVAL if unreadable, 1 if none. */
static int read_link(Elf *elf, char name[ALTLINK_NAME_MAX], uint8_t id[BUILD_ID_MAX],
		     size_t *id_len)
{
	size_t shstrndx, n = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 1;
	while ((scn = elf_nextscn(elf, scn)) && n++ < 65536) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(sname = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(sname, ".gnu_debugaltlink"))
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_size > ALTLINK_NAME_MAX + 1 + BUILD_ID_MAX ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			return -EINVAL;
		return elfnote__altlink(d->d_buf, d->d_size, name, id, id_len);
	}
	return 1;
}

static int64_t ns(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct dwzalt *held_find(const struct stat *st, const uint8_t *id, size_t id_len)
{
	for (struct dwzalt *a = held; a; a = a->next)
		if (a->dev == (uint64_t)st->st_dev && a->ino == (uint64_t)st->st_ino &&
		    a->size == (int64_t)st->st_size && a->mtime_ns == ns(st->st_mtim) &&
		    a->ctime_ns == ns(st->st_ctim) && a->id_len == id_len &&
		    !memcmp(a->id, id, id_len))
			return a;
	return NULL;
}

static bool same_file(const struct refusal *r, const struct stat *st, const uint8_t *id,
		      size_t id_len)
{
	return r->dev == (uint64_t)st->st_dev && r->ino == (uint64_t)st->st_ino &&
	       r->size == (int64_t)st->st_size && r->mtime_ns == ns(st->st_mtim) &&
	       r->ctime_ns == ns(st->st_ctim) && r->id_len == id_len && !memcmp(r->id, id, id_len);
}

/* A verdict kept for this file: its -errno, or 0 (none; read it). Under held_lock. */
static int refusal_find(const struct stat *st, const uint8_t *id, size_t id_len, size_t max_bytes)
{
	for (size_t i = 0; i < nr_refused; i++) {
		const struct refusal *r = &refused[i];

		if (!same_file(r, st, id, id_len))
			continue;
		if (r->err == -EFBIG && r->bytes <= max_bytes)
			return 0;
		return r->err;
	}
	return 0;
}

static void refusal_add(const struct stat *st, const uint8_t *id, size_t id_len, int err,
			size_t bytes)
{
	struct refusal *r = NULL;

	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < nr_refused && !r; i++)
		if (same_file(&refused[i], st, id, id_len))
			r = &refused[i];
	if (!r) {
		r = &refused[next_refused];
		next_refused = (next_refused + 1) % DWZALT_MAX_REFUSED;
		if (nr_refused < DWZALT_MAX_REFUSED)
			nr_refused++;
	}
	*r = (struct refusal){ .dev = (uint64_t)st->st_dev,
			       .ino = (uint64_t)st->st_ino,
			       .size = (int64_t)st->st_size,
			       .mtime_ns = ns(st->st_mtim),
			       .ctime_ns = ns(st->st_ctim),
			       .id_len = id_len,
			       .err = err,
			       .bytes = bytes };
	memcpy(r->id, id, id_len);
	pthread_mutex_unlock(&held_lock);
}

static void alt_free(struct dwzalt *a)
{
	if (!a)
		return;
	if (a->dw)
		dwarf_end(a->dw);
	elffile__end(a->elf, NULL);
	if (a->fd >= 0)
		close(a->fd);
	free(a);
}

/* Errors by how much they say: a file that was there but wrong beats none. */
static int worse(int have, int err)
{
	static const int order[] = { -ENOENT, -EACCES, -EINVAL, -ENOEXEC, -EFBIG, -ESTALE };
	int rh = -1, re = -1;

	for (int i = 0; i < (int)(sizeof(order) / sizeof(order[0])); i++) {
		if (order[i] == have)
			rh = i;
		if (order[i] == err)
			re = i;
	}
	if (re < 0) /* another errno (EREMOTE, ELOOP, EPERM...): not a regular, readable file */
		re = 2;
	if (rh < 0)
		rh = have ? 2 : -1;
	return re > rh ? err : have;
}

/*
 * Reads the dwz file open at fd (not closed) as id's; 0 and *out (held, one
 * reference), or -errno.
 */
static int adopt(int fd, const char *path, const uint8_t *id, size_t id_len, size_t max_bytes,
		 void (*room)(void *ctx, size_t bytes), void *ctx, struct dwzalt **out)
{
	uint8_t got[BUILD_ID_MAX];
	struct dwzalt *a, *b;
	struct stat st;
	bool has_info;
	size_t bytes;
	int err;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	pthread_mutex_lock(&held_lock);
	a = held_find(&st, id, id_len);
	if (a && a->bytes > max_bytes) {
		/* Held for a file with more room than this one has. */
		pthread_mutex_unlock(&held_lock);
		return -EFBIG;
	}
	if (a)
		a->refs++;
	err = a ? 0 : refusal_find(&st, id, id_len, max_bytes);
	pthread_mutex_unlock(&held_lock);
	if (err)
		return err;
	if (a) {
		if (room)
			room(ctx, a->bytes);
		*out = a;
		return 0;
	}
	if ((uint64_t)st.st_size > DEBUGINFO_MAX_FILE)
		return -EFBIG;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->dev = (uint64_t)st.st_dev;
	a->ino = (uint64_t)st.st_ino;
	a->size = (int64_t)st.st_size;
	a->mtime_ns = ns(st.st_mtim);
	a->ctime_ns = ns(st.st_ctim);
	a->fd = -1;
	memcpy(a->id, id, id_len);
	a->id_len = id_len;
	a->refs = 1;
	snprintf(a->path, sizeof(a->path), "%s", path);
	bytes = 0;
	a->elf = elffile__begin(fd);
	__atomic_add_fetch(&files_read, 1, __ATOMIC_RELAXED);
	err = -ENOEXEC;
	if (!a->elf || elf_kind(a->elf) != ELF_K_ELF)
		goto out_free;
	err = -ESTALE;
	if (elffile__build_id(a->elf, got) != id_len || memcmp(got, id, id_len))
		goto out_free;
	bytes = dwinline__debug_bytes(a->elf, &has_info);
	err = -ENOEXEC;
	if (!has_info || bytes == SIZE_MAX)
		goto out_free;
	err = -EFBIG;
	if (bytes > max_bytes)
		goto out_free;
	if (room)
		room(ctx, bytes);
	a->bytes = bytes;
	err = -ENOEXEC;
	a->dw = dwarf_begin_elf(a->elf, DWARF_C_READ, NULL);
	/* Its own dwz file, if it names one, is never looked for. */
	if (!a->dw || !srcline__strings_terminated(a->elf) || !srcline__no_dwz(a->dw))
		goto out_free;
	/* libdw has read every section it uses: fd is the caller's again. */
	elf_cntl(a->elf, ELF_C_FDDONE);
	pthread_mutex_lock(&held_lock);
	/* Read meanwhile by another caller: share that one (one copy held). */
	if ((b = held_find(&st, id, id_len))) {
		b->refs++;
		pthread_mutex_unlock(&held_lock);
		alt_free(a);
		*out = b;
		return 0;
	}
	if (nr_held >= DWZALT_MAX_HELD) {
		pthread_mutex_unlock(&held_lock);
		err = -EMFILE;
		goto out_free;
	}
	a->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (a->fd < 0) {
		err = -errno;
		pthread_mutex_unlock(&held_lock);
		goto out_free;
	}
	a->next = held;
	held = a;
	nr_held++;
	pthread_mutex_unlock(&held_lock);
	*out = a;
	return 0;
out_free:
	if (err == -ENOEXEC || err == -ESTALE || err == -EFBIG)
		refusal_add(&st, id, id_len, err, bytes);
	alt_free(a);
	return err;
}

static int try_path(const struct dwzalt_query *q, const struct safe_root *r, const char *path,
		    const uint8_t *id, size_t id_len, size_t max_bytes,
		    void (*room)(void *ctx, size_t bytes), void *ctx, struct dwzalt **out)
{
	struct safe_file f;
	int err;

	if (!r || r->fd < 0)
		return -ENOENT;
	err = safeopen__in_root_as(r, path, 0, q->readers, q->nr_readers, &f, NULL);
	if (err)
		return err;
	err = adopt(f.fd, path, id, id_len, max_bytes, room, ctx, out);
	close(f.fd);
	return err;
}

int dwzalt__get(Elf *elf, const struct dwzalt_query *q, size_t max_bytes,
		void (*room)(void *ctx, size_t bytes), void *ctx, struct dwzalt **out)
{
	const char *dd = q->debug_dir ? q->debug_dir : "/usr/lib/debug";
	char name[ALTLINK_NAME_MAX], path[PATH_MAX], hex[2 * BUILD_ID_MAX + 2];
	uint8_t id[BUILD_ID_MAX];
	size_t id_len;
	int err, best = 0;

	*out = NULL;
	err = read_link(elf, name, id, &id_len);
	if (err)
		return err;
	/* The link's own path, in the root the holding file was found in. */
	if (q->link_root >= 0 && q->link_root < 2 && q->path) {
		const char *slash = strrchr(q->path, '/');
		int n = -1;

		if (name[0] == '/')
			n = snprintf(path, sizeof(path), "%s", name);
		else if (slash)
			n = snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - q->path), q->path,
				     name);
		if (n > 0 && (size_t)n < sizeof(path)) {
			err = try_path(q, q->roots[q->link_root], path, id, id_len, max_bytes, room,
				       ctx, out);
			if (!err)
				return 0;
			best = worse(best, err);
		}
	}
	/* By build id, where gdb looks too (Fedora links its dwz files there). */
	if (id_len >= 2) {
		elfnote__build_id_hex(id, id_len, hex, sizeof(hex));
		snprintf(path, sizeof(path), "%s/.build-id/%s.debug", dd, hex);
		for (int r = 0; r < 2; r++) {
			err = try_path(q, q->roots[r], path, id, id_len, max_bytes, room, ctx, out);
			if (!err)
				return 0;
			best = worse(best, err);
		}
	}
	if (q->fetch) {
		int fd = q->fetch(q->fetch_ctx, id, id_len);

		if (fd >= 0) {
			err = adopt(fd, "", id, id_len, max_bytes, room, ctx, out);
			close(fd);
			if (!err)
				return 0;
			best = worse(best, err);
		}
	}
	return best ? best : -ENOENT;
}

void dwzalt__put(struct dwzalt *a)
{
	bool last;

	if (!a)
		return;
	pthread_mutex_lock(&held_lock);
	last = !--a->refs;
	if (last)
		for (struct dwzalt **p = &held; *p; p = &(*p)->next)
			if (*p == a) {
				*p = a->next;
				nr_held--;
				break;
			}
	pthread_mutex_unlock(&held_lock);
	if (last)
		alt_free(a);
}

Dwarf *dwzalt__dwarf(const struct dwzalt *a)
{
	return a ? a->dw : NULL;
}

size_t dwzalt__bytes(const struct dwzalt *a)
{
	return a ? a->bytes : 0;
}

void dwzalt__strs(const struct dwzalt *a, struct srcline_strs *st)
{
	if (a)
		srcline__strs_add(a->elf, st);
}

const char *dwzalt__path(const struct dwzalt *a)
{
	return a ? a->path : "";
}

size_t dwzalt__reads(void)
{
	return __atomic_load_n(&files_read, __ATOMIC_RELAXED);
}

size_t dwzalt__held(void)
{
	size_t n = 0;

	pthread_mutex_lock(&held_lock);
	for (struct dwzalt *a = held; a; a = a->next)
		n++;
	pthread_mutex_unlock(&held_lock);
	return n;
}
