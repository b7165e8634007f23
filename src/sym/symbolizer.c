// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * symbolizer.c - process and file caches in front of the parsers; see
 * symbolizer.h for the life cycle of entries.
 *
 * Files are opened through /proc/PID/map_files/START-END when possible: that
 * is the very file object the process mapped, even if it was deleted,
 * replaced, or lives in another mount namespace. Otherwise through
 * /proc/PID/root/PATH, and then only if its device and inode match the maps
 * entry, so a different binary at the same path is never used.
 */
#include "sym/symbolizer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "htab.h"
#include "sym/elfsym.h"
#include "sym/kallsyms.h"
#include "sym/procfs.h"
#include "sym/procmaps.h"
#include "util.h"

#define MAPS_MAX (64u << 20)

struct symfile {
	struct elfsym *es; /* NULL when unreadable or not ELF */
	int err;
	unsigned refs; /* process entries pointing at it */
	uint64_t used_gen;
};

struct symproc {
	struct proc_id id;
	struct procmaps maps;
	struct symfile **files; /* per mapping; NULL if not a readable file */
	bool gone;		/* seen gone at a sweep: freed at the next */
	bool refreshed;		/* maps re-read since the last sweep */
};

struct file_key {
	uint32_t major, minor;
	uint64_t inode;
};

struct proc_key {
	uint32_t pid, pad;
	uint64_t start_time, exec_id;
};

struct symbolizer {
	char proc_root[256];
	char kallsyms_path[256];
	size_t max_procs, max_files;
	struct ksyms *ks;
	struct htab *procs; /* proc_key -> symproc */
	struct htab *files; /* file_key -> symfile */
	struct symfile vdso;
	uint64_t gen;
	uint64_t lookups, unknown;
};

static struct proc_key proc_key_of(const struct proc_id *id)
{
	struct proc_key k;

	memset(&k, 0, sizeof(k));
	k.pid = id->pid;
	k.start_time = id->start_time;
	k.exec_id = id->exec_id;
	return k;
}

/* Our own vDSO is the one every native process of this kernel maps. */
static void load_vdso(struct symbolizer *s)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct procmaps self = { 0 };
	int fd;

	s->vdso.err = -ENOENT;
	if (!base || procmaps__read("/proc/self/maps", &self))
		return;
	for (size_t i = 0; i < self.nr; i++) {
		const struct procmap *m = &self.maps[i];

		if (m->start != base || !m->path || strcmp(m->path, "[vdso]"))
			continue;
		fd = memfd_create("bpfprof-vdso", MFD_CLOEXEC);
		if (fd < 0)
			break;
		if (write(fd, (const void *)base, m->end - m->start) == (ssize_t)(m->end - m->start)) {
			s->vdso.es = elfsym__open_fd(fd);
			s->vdso.err = s->vdso.es ? 0 : -errno;
		}
		close(fd);
		break;
	}
	procmaps__free(&self);
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	const char *root = opts && opts->proc_root ? opts->proc_root : "/proc";

	if (!s)
		return NULL;
	snprintf(s->proc_root, sizeof(s->proc_root), "%s", root);
	if (opts && opts->kallsyms_path)
		snprintf(s->kallsyms_path, sizeof(s->kallsyms_path), "%s", opts->kallsyms_path);
	else
		snprintf(s->kallsyms_path, sizeof(s->kallsyms_path), "%s/kallsyms", root);
	s->max_procs = opts && opts->max_procs ? opts->max_procs : 16384;
	s->max_files = opts && opts->max_files ? opts->max_files : 4096;
	s->procs = htab__new();
	s->files = htab__new();
	if (!s->procs || !s->files) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	load_vdso(s);
	return s;
}

static void symfile_free(struct symfile *f)
{
	if (!f)
		return;
	elfsym__free(f->es);
	free(f);
}

static void symproc_free(struct symproc *p)
{
	if (!p)
		return;
	for (size_t i = 0; p->files && i < p->maps.nr; i++)
		if (p->files[i] && p->files[i]->refs)
			p->files[i]->refs--;
	free(p->files);
	procmaps__free(&p->maps);
	free(p);
}

void symbolizer__free(struct symbolizer *s)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!s)
		return;
	if (s->procs)
		while ((e = htab__next(s->procs, &pos)))
			symproc_free(e->value);
	pos = 0;
	if (s->files)
		while ((e = htab__next(s->files, &pos)))
			symfile_free(e->value);
	htab__free(s->procs);
	htab__free(s->files);
	elfsym__free(s->vdso.es);
	ksyms__free(s->ks);
	free(s);
}

int symbolizer__load_kernel(struct symbolizer *s)
{
	struct ksyms *ks = ksyms__load(s->kallsyms_path);

	if (!ks)
		return -errno;
	ksyms__free(s->ks);
	s->ks = ks;
	return 0;
}

bool symbolizer__kernel_restricted(const struct symbolizer *s)
{
	return s->ks && ksyms__restricted(s->ks);
}

/* Opens the file behind mapping m of pid; -errno if it cannot be trusted. */
static int open_mapped_file(struct symbolizer *s, uint32_t pid, const struct procmap *m)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, pid,
		 m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (m->deleted)
			return -ENOENT;
		if (snprintf(path, sizeof(path), "%s/%u/root%s", s->proc_root, pid, m->path) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) || st.st_ino != m->inode || major(st.st_dev) != m->dev_major ||
		    minor(st.st_dev) != m->dev_minor) {
			close(fd);
			return -ESTALE;
		}
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static struct symfile *get_file(struct symbolizer *s, uint32_t pid, const struct procmap *m)
{
	struct file_key k = { .major = m->dev_major, .minor = m->dev_minor, .inode = m->inode };
	struct htab_entry *e;
	struct symfile *f;
	bool created;
	int fd;

	e = htab__upsert(s->files, &k, sizeof(k), &created);
	if (!e)
		return NULL;
	if (!created) {
		f = e->value;
		f->used_gen = s->gen;
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		htab__remove(s->files, &k, sizeof(k));
		return NULL;
	}
	e->value = f;
	f->used_gen = s->gen;
	fd = open_mapped_file(s, pid, m);
	if (fd < 0) {
		f->err = fd;
		return f;
	}
	f->es = elfsym__open_fd(fd);
	f->err = f->es ? 0 : -errno;
	close(fd);
	return f;
}

static int read_maps(struct symbolizer *s, uint32_t pid, struct procmaps *out)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int err;

	snprintf(path, sizeof(path), "%s/%u/maps", s->proc_root, pid);
	err = procmaps__read(path, out);
	if (err || out->nr)
		return err;
	/* The main thread has exited: its maps file is empty, other threads' are not. */
	snprintf(path, sizeof(path), "%s/%u/task", s->proc_root, pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%u/task/%s/maps", s->proc_root, pid, de->d_name);
		procmaps__free(out);
		if (!procmaps__read(path, out) && out->nr)
			break;
	}
	closedir(dir);
	return 0;
}

static bool proc_matches(struct symbolizer *s, const struct proc_id *id)
{
	uint64_t ticks;

	if (procfs__starttime(s->proc_root, id->pid, &ticks))
		return false;
	return !id->start_time || ticks == procfs__ns_to_ticks(id->start_time);
}

/* (Re)reads the mappings of p and resolves the files they map. */
static int load_maps(struct symbolizer *s, struct symproc *p)
{
	struct procmaps maps = { 0 };
	struct symfile **files;
	int err;

	err = read_maps(s, p->id.pid, &maps);
	if (err)
		return err;
	files = calloc(maps.nr ? maps.nr : 1, sizeof(*files));
	if (!files) {
		procmaps__free(&maps);
		return -ENOMEM;
	}
	for (size_t i = 0; i < maps.nr; i++) {
		const struct procmap *m = &maps.maps[i];

		if (!(m->perms & PROCMAP_X) || !m->path)
			continue;
		if (!strcmp(m->path, "[vdso]"))
			files[i] = s->vdso.es ? &s->vdso : NULL;
		else if (procmap__is_file(m))
			files[i] = get_file(s, p->id.pid, m);
		if (files[i])
			files[i]->refs++;
	}
	/* Release the old snapshot only after the new one took its references. */
	for (size_t i = 0; p->files && i < p->maps.nr; i++)
		if (p->files[i] && p->files[i]->refs)
			p->files[i]->refs--;
	free(p->files);
	procmaps__free(&p->maps);
	p->maps = maps;
	p->files = files;
	return 0;
}

int symbolizer__note_process(struct symbolizer *s, const struct proc_id *id)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e;
	struct symproc *p;
	bool created;
	int err;

	if (htab__find(s->procs, &k, sizeof(k)))
		return 0;
	if (!proc_matches(s, id))
		return -ESRCH;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->id = *id;
	err = load_maps(s, p);
	if (err) {
		symproc_free(p);
		return err;
	}
	/* The process may have exited while we read: then the snapshot may be empty. */
	e = htab__upsert(s->procs, &k, sizeof(k), &created);
	if (!e) {
		symproc_free(p);
		return -ENOMEM;
	}
	e->value = p;
	return 0;
}

void symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym *out)
{
	const struct ksym *k = s->ks ? ksyms__lookup(s->ks, ip) : NULL;

	s->lookups++;
	out->kind = FRAME_KERNEL;
	out->addr = ip;
	out->name = k ? k->name : NULL;
	out->module = k ? k->module : NULL;
	if (!k)
		s->unknown++;
}

void symbolizer__user(struct symbolizer *s, const struct proc_id *id, uint64_t ip, bool leaf,
		      struct sym *out)
{
	struct proc_key k = proc_key_of(id);
	uint64_t addr = leaf ? ip : ip - 1, fileoff, vaddr;
	const struct procmap *m = NULL;
	struct htab_entry *e;
	struct symproc *p = NULL;
	struct symfile *f;

	s->lookups++;
	out->kind = FRAME_USER;
	out->name = NULL;
	out->module = NULL;
	out->addr = ip;

	e = htab__find(s->procs, &k, sizeof(k));
	if (!e && !symbolizer__note_process(s, id))
		e = htab__find(s->procs, &k, sizeof(k));
	if (e) {
		p = e->value;
		m = procmaps__find(&p->maps, addr);
		/* Mapped after our snapshot (dlopen)? Re-read once per drain. */
		if (!m && !p->refreshed && !p->gone && proc_matches(s, id)) {
			p->refreshed = true;
			if (!load_maps(s, p))
				m = procmaps__find(&p->maps, addr);
		}
	}
	/* Frame-pointer walks through code built without them yield junk that
	 * lands in data, stack or heap: only executable mappings name frames. */
	if (!m || !m->path || !(m->perms & PROCMAP_X)) {
		s->unknown++;
		return;
	}
	out->module = m->path;
	fileoff = addr - m->start + m->offset;
	f = p->files[m - p->maps.maps];
	if (!f || !f->es) {
		out->addr = fileoff + (leaf ? 0 : 1);
		s->unknown++;
		return;
	}
	f->used_gen = s->gen;
	if (elfsym__off_to_vaddr(f->es, fileoff, &vaddr))
		vaddr = fileoff;
	out->name = elfsym__lookup(f->es, vaddr, NULL);
	out->addr = vaddr + (leaf ? 0 : 1);
	if (!out->name)
		s->unknown++;
}

const char *sym__display(const struct sym *sym, char *buf, size_t size)
{
	if (sym->name)
		return sym->name;
	if (sym->module && sym->kind != FRAME_KERNEL) {
		snprintf(buf, size, "%s+0x%" PRIx64, path_basename(sym->module), sym->addr);
		return buf;
	}
	return "[unknown]";
}

void symbolizer__sweep(struct symbolizer *s)
{
	struct htab_entry *e;
	size_t pos = 0;

	s->gen++;
	while ((e = htab__next(s->procs, &pos))) {
		struct symproc *p = e->value;

		if (p->gone) {
			struct proc_key k = proc_key_of(&p->id);

			htab__remove(s->procs, &k, sizeof(k));
			symproc_free(p);
			continue;
		}
		p->refreshed = false;
		if (!proc_matches(s, &p->id))
			p->gone = true;
	}
	if (htab__count(s->files) <= s->max_files)
		return;
	/* Over the cap: drop files no live process maps, least recently used first
	 * (approximated: not used in this generation). */
	pos = 0;
	while ((e = htab__next(s->files, &pos))) {
		struct symfile *f = e->value;

		if (f->refs || f->used_gen + 1 >= s->gen)
			continue;
		htab__remove(s->files, e->key, e->klen);
		symfile_free(f);
	}
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	st->procs = htab__count(s->procs);
	st->files = htab__count(s->files);
	st->ksyms = s->ks ? ksyms__count(s->ks) : 0;
	st->lookups = s->lookups;
	st->unknown = s->unknown;
}
