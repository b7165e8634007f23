// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * symbolizer.c - process, file, mount-table and kernel caches in front of the
 * parsers; see symbolizer.h for the life cycle of entries and where names
 * come from.
 *
 * Files are opened through /proc/PID/map_files/START-END when possible: that
 * is the very file object the process mapped, even if it was deleted,
 * replaced, or lives in another mount namespace. Otherwise through
 * /proc/PID/root/PATH (safeopen: no escape from that root, no magic links,
 * nothing on FUSE), and then only if its device and inode match the maps
 * entry, so a different binary at the same path is never used.
 */
#include "sym/symbolizer.h"

#include <linux/bpf.h>
#include <linux/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/htab.h"
#include "sym/debuginfo.h"
#include "sym/elfsym.h"
#include "sym/kallsyms.h"
#include "proc/mountinfo.h"
#include "sym/perfmap.h"
#include "proc/procfs.h"
#include "proc/procmaps.h"
#include "proc/safeopen.h"
#include "base/util.h"

/* A perf map larger than this is refused (Node's grow to tens of MiB). */
#define PERFMAP_MAX_FILE  (256u << 20)
#define PERFMAP_READ_CHUNK (4u << 20)
/* A miss in JIT memory re-reads the map at most this often per process. */
#define PERFMAP_RETRY_NS (50u * 1000 * 1000)
/* Mount tables cached (one per mount namespace). */
#define MNTNS_MAX 1024
/* Kallsyms tables retired mid-drain, freed at the next sweep. */
#define KSYMS_RETIRED_MAX 4
/* Reloads of kallsyms for new BPF programs: at most this often. */
#define KSYMS_BPF_RELOAD_NS (10ULL * 1000 * 1000 * 1000)
/*
 * A file no process entry has mapped for this many drains (~seconds) is
 * dropped even under the caps: memory follows the live working set, and a
 * program run again later costs one more read of its symbols.
 */
#define FILE_IDLE_GENS 30
/* Give freed memory back to the system after this much was freed. */
#define TRIM_AFTER_BYTES (16u << 20)

struct file_key {
	uint32_t major, minor;
	uint64_t inode;
};

struct symfile {
	struct elfsym *es; /* NULL when unreadable or not ELF */
	int err;
	unsigned refs;	   /* process entries pointing at it */
	bool orphan;	   /* replaced in the cache: freed when refs drop to 0 */
	bool is_vdso;
	uint64_t used_gen, checked_gen;
	uint64_t size;	   /* identity beyond (dev, inode): a reused inode differs */
	struct timespec mtime, ctime;
	struct file_key key;
};

struct symproc {
	struct proc_id id;
	struct procmaps maps;	/* executable mappings only */
	struct symfile **files; /* per mapping; NULL if not a readable file */
	bool gone;		/* seen gone at a sweep: freed at the next */
	bool refreshed;		/* maps re-read since the last sweep */
	bool dead;		/* image could not be read (exited, exec'd): names nothing */
	bool jit;		/* has executable memory that is not an ELF file */
	uint64_t used_gen;
	/* The JIT perf map. */
	struct perfmap *pmap;
	size_t pmap_bytes;
	uint64_t pmap_dev, pmap_ino;
	uint64_t pmap_read_ns; /* last read attempt (now_ns), 0: never */
	bool pmap_rejected;
	bool have_status;
	uint32_t ns_pid, euid;
	char pmap_path[40];
	uint32_t tid; /* a live thread whose /proc files to use (main thread exited), or 0 */
};

struct proc_key {
	uint32_t pid, pad;
	uint64_t start_time, exec_id;
};

struct mntns {
	struct mountinfo mi;
	uint64_t gen;
	bool ok;
};

/* What file opens for one process need, gathered once per operation. */
struct pctx {
	uint32_t pid;
	char base[48]; /* "PID", or "PID/task/TID" once the main thread has exited */
	int root_fd;			/* /proc/PID/root, O_PATH; -1 if unavailable */
	const struct mountinfo *mi;	/* the process's mount table, or NULL */
	const struct mountinfo *host_mi;
	bool root_is_host;
};

struct symbolizer {
	char proc_root[256];
	char kallsyms_path[256];
	char debug_dir[256];
	bool real_proc; /* proc_root is the real /proc: BPF ids, /proc/self */
	size_t max_procs, max_files, max_file_bytes, max_perfmap_bytes;
	struct ksyms *ks;
	struct ksyms *retired[KSYMS_RETIRED_MAX];
	size_t nr_retired;
	uint64_t kmod_sig, kbpf_sig, kcheck_gen, core_end, kbpf_reload_ns;
	bool kmiss; /* a lookup missed in module/BPF space since the last sweep */
	struct htab *procs; /* proc_key -> symproc */
	struct htab *files; /* file_key -> symfile */
	struct htab *mntns; /* mount ns inode -> mntns */
	struct mountinfo scratch_mi;
	struct symfile vdso;
	int host_fd;
	struct stat host_st;
	uint64_t self_mntns; /* inode of our mount namespace, 0 if unknown */
	uint64_t gen;
	size_t file_bytes, pmap_bytes, freed_bytes;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	uint64_t lookups, unknown, debug_files, jit_names, rejected, images_lost;
	uint64_t kernel_reloads, evicted_procs, evicted_files;
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

static void warnf(struct symbolizer *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct symbolizer *s, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	s->rejected++;
	if (!s->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->warn(s->warn_ctx, msg);
}

/* Our own vDSO is the one every native process of this kernel maps. */
static void load_vdso(struct symbolizer *s)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct procmaps self = { 0 };
	int fd;

	s->vdso.err = -ENOENT;
	s->vdso.is_vdso = true;
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
	const char *host = opts && opts->host_root ? opts->host_root : "/";

	if (!s)
		return NULL;
	snprintf(s->proc_root, sizeof(s->proc_root), "%s", root);
	s->real_proc = !strcmp(s->proc_root, "/proc");
	if (opts && opts->kallsyms_path)
		snprintf(s->kallsyms_path, sizeof(s->kallsyms_path), "%s", opts->kallsyms_path);
	else
		snprintf(s->kallsyms_path, sizeof(s->kallsyms_path), "%s/kallsyms", root);
	snprintf(s->debug_dir, sizeof(s->debug_dir), "%s",
		 opts && opts->debug_dir ? opts->debug_dir : "/usr/lib/debug");
	s->max_procs = opts && opts->max_procs ? opts->max_procs : 16384;
	s->max_files = opts && opts->max_files ? opts->max_files : 4096;
	s->max_file_bytes = opts && opts->max_file_bytes ? opts->max_file_bytes : 512u << 20;
	s->max_perfmap_bytes =
		opts && opts->max_perfmap_bytes ? opts->max_perfmap_bytes : 256u << 20;
	if (opts) {
		s->warn = opts->warn;
		s->warn_ctx = opts->warn_ctx;
	}
	s->procs = htab__new();
	s->files = htab__new();
	s->mntns = htab__new();
	s->host_fd = safeopen__dir(host);
	if (s->host_fd >= 0 && fstat(s->host_fd, &s->host_st)) {
		close(s->host_fd);
		s->host_fd = -1;
	}
	{
		struct stat ns;

		if (s->real_proc && !stat("/proc/self/ns/mnt", &ns))
			s->self_mntns = ns.st_ino;
	}
	if (!s->procs || !s->files || !s->mntns) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	load_vdso(s);
	return s;
}

static void symfile_free(struct symfile *f)
{
	if (!f || f->is_vdso)
		return;
	elfsym__free(f->es);
	free(f);
}

static void symfile_unref(struct symfile *f)
{
	if (!f || !f->refs)
		return;
	if (--f->refs == 0 && f->orphan)
		symfile_free(f);
}

static void release_files(struct symproc *p)
{
	for (size_t i = 0; p->files && i < p->maps.nr; i++)
		symfile_unref(p->files[i]);
	free(p->files);
	p->files = NULL;
}

static void symproc_free(struct symbolizer *s, struct symproc *p)
{
	if (!p)
		return;
	release_files(p);
	procmaps__free(&p->maps);
	if (s)
		s->pmap_bytes -= MIN(s->pmap_bytes, p->pmap_bytes);
	perfmap__free(p->pmap);
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
			symproc_free(NULL, e->value);
	pos = 0;
	if (s->files)
		while ((e = htab__next(s->files, &pos)))
			symfile_free(e->value);
	pos = 0;
	if (s->mntns)
		while ((e = htab__next(s->mntns, &pos))) {
			struct mntns *m = e->value;

			mountinfo__free(&m->mi);
			free(m);
		}
	htab__free(s->procs);
	htab__free(s->files);
	htab__free(s->mntns);
	mountinfo__free(&s->scratch_mi);
	elfsym__free(s->vdso.es);
	ksyms__free(s->ks);
	for (size_t i = 0; i < s->nr_retired; i++)
		ksyms__free(s->retired[i]);
	if (s->host_fd >= 0)
		close(s->host_fd);
	free(s);
}

/* --- kernel ----------------------------------------------------------------- */

/* FNV-1a, to notice that a text changed. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/*
 * What kallsyms depends on, cheaply: the module list, and the ids of the
 * loaded BPF programs (their JIT images are "[bpf]" symbols). Reading and
 * parsing kallsyms costs ~50-100 ms; these cost a few syscalls.
 */
static uint64_t modules_signature(struct symbolizer *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char path[300], *buf;
	size_t len;

	snprintf(path, sizeof(path), "%s/modules", s->proc_root);
	if (!read_file(path, 16u << 20, &buf, &len)) {
		h = fnv1a(h, buf, len);
		free(buf);
	}
	return h;
}

/* The BPF program set cannot be listed (no CAP_SYS_ADMIN, as after bpfprof
 * drops it): every rate-limited check then counts as a change. */
#define BPF_SIG_UNKNOWN UINT64_MAX

static uint64_t bpf_signature(struct symbolizer *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	union bpf_attr attr;
	uint32_t id = 0;

	if (!s->real_proc)
		return 0;
	for (int n = 0; n < 100000; n++) {
		memset(&attr, 0, sizeof(attr));
		attr.start_id = id;
		if (syscall(__NR_bpf, BPF_PROG_GET_NEXT_ID, &attr, sizeof(attr))) {
			if (errno == EPERM || errno == EACCES)
				return BPF_SIG_UNKNOWN;
			break; /* ENOENT at the end */
		}
		id = attr.next_id;
		h = fnv1a(h, &id, sizeof(id));
	}
	return h == BPF_SIG_UNKNOWN ? h - 1 : h;
}

static void kernel_install(struct symbolizer *s, struct ksyms *ks)
{
	const struct ksym *et;

	if (s->ks) {
		if (s->nr_retired == KSYMS_RETIRED_MAX) {
			ksyms__free(s->retired[0]);
			memmove(s->retired, s->retired + 1,
				(KSYMS_RETIRED_MAX - 1) * sizeof(*s->retired));
			s->nr_retired--;
		}
		/* Names handed out this drain stay valid until the sweep. */
		s->retired[s->nr_retired++] = s->ks;
	}
	s->ks = ks;
	et = ksyms__find(ks, "_etext");
	s->core_end = et ? et->addr : 0;
}

int symbolizer__load_kernel(struct symbolizer *s)
{
	uint64_t mod = modules_signature(s), bpf = bpf_signature(s);
	struct ksyms *ks = ksyms__load(s->kallsyms_path);

	if (!ks)
		return -errno;
	kernel_install(s, ks);
	s->kmod_sig = mod;
	s->kbpf_sig = bpf;
	s->kcheck_gen = s->gen + 1;
	return 0;
}

bool symbolizer__kernel_restricted(const struct symbolizer *s)
{
	return s->ks && ksyms__restricted(s->ks);
}

/*
 * Re-reads kallsyms if it changed: at most once per drain, always when the
 * module list changed, and for BPF programs only after a lookup missed in
 * module/BPF space (`miss`) and at most every KSYMS_BPF_RELOAD_NS, because
 * hosts load and unload BPF programs all the time and a reload costs tens of
 * milliseconds.
 */
static bool kernel_refresh(struct symbolizer *s, bool miss)
{
	uint64_t mod, bpf = s->kbpf_sig, now = now_ns();
	struct ksyms *ks;

	if (!s->ks || s->kcheck_gen == s->gen + 1)
		return false;
	s->kcheck_gen = s->gen + 1;
	mod = modules_signature(s);
	if (miss && (!s->kbpf_reload_ns || now - s->kbpf_reload_ns >= KSYMS_BPF_RELOAD_NS))
		bpf = bpf_signature(s);
	if (mod == s->kmod_sig && bpf == s->kbpf_sig &&
	    !(bpf == BPF_SIG_UNKNOWN && miss &&
	      (!s->kbpf_reload_ns || now - s->kbpf_reload_ns >= KSYMS_BPF_RELOAD_NS)))
		return false;
	ks = ksyms__load(s->kallsyms_path);
	if (!ks)
		return false;
	kernel_install(s, ks);
	if (bpf != s->kbpf_sig || bpf == BPF_SIG_UNKNOWN)
		s->kbpf_reload_ns = now;
	s->kmod_sig = mod;
	s->kbpf_sig = bpf;
	s->kernel_reloads++;
	return true;
}

void symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym *out)
{
	const struct ksym *k = s->ks ? ksyms__lookup(s->ks, ip) : NULL;

	/*
	 * Beyond the core kernel's text: module and BPF JIT space. A miss there
	 * may be a module or program loaded after kallsyms was read.
	 */
	if (!k && s->ks && !ksyms__restricted(s->ks) && ip >= s->core_end) {
		s->kmiss = true;
		if (kernel_refresh(s, true))
			k = ksyms__lookup(s->ks, ip);
	}
	s->lookups++;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_KERNEL;
	out->addr = ip;
	out->name = k ? k->name : NULL;
	out->module = k ? k->module : NULL;
	if (!k)
		s->unknown++;
}

int symbolizer__kernel_range(struct symbolizer *s, uint64_t ip, uint64_t *start, uint64_t *end)
{
	const struct ksym *k = s->ks ? ksyms__lookup(s->ks, ip) : NULL;

	if (!k)
		return -ENOENT;
	*start = k->addr;
	*end = ksyms__end(s->ks, k);
	return 0;
}

/* --- mount tables, process roots -------------------------------------------- */

static const struct mountinfo *mounts_of(struct symbolizer *s, const char *rel)
{
	char path[PATH_MAX];
	struct htab_entry *e;
	struct mntns *m;
	struct stat st;
	uint64_t key[2];
	bool created;

	snprintf(path, sizeof(path), "%s/%s/ns/mnt", s->proc_root, rel);
	if (stat(path, &st)) {
		/* No namespace id to cache by (a test tree): read it for this use only. */
		mountinfo__free(&s->scratch_mi);
		snprintf(path, sizeof(path), "%s/%s/mountinfo", s->proc_root, rel);
		return mountinfo__read(path, &s->scratch_mi) ? NULL : &s->scratch_mi;
	}
	key[0] = st.st_dev;
	key[1] = st.st_ino;
	e = htab__upsert(s->mntns, key, sizeof(key), &created);
	if (!e)
		return NULL;
	if (created) {
		m = calloc(1, sizeof(*m));
		if (!m) {
			htab__remove(s->mntns, key, sizeof(key));
			return NULL;
		}
		e->value = m;
		m->gen = s->gen + 1;
	}
	m = e->value;
	/* Mounts change: one read per mount namespace per drain. */
	if (created || m->gen != s->gen) {
		mountinfo__free(&m->mi);
		snprintf(path, sizeof(path), "%s/%s/mountinfo", s->proc_root, rel);
		m->ok = !mountinfo__read(path, &m->mi);
		m->gen = s->gen;
	}
	return m->ok ? &m->mi : NULL;
}

/*
 * tid != 0: the main thread has exited, and with it /proc/PID/root, map_files
 * and mountinfo; a live thread's /proc/PID/task/TID/ has them.
 */
static void pctx_open(struct symbolizer *s, uint32_t pid, uint32_t tid, struct pctx *c)
{
	char path[PATH_MAX];
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	if (tid)
		snprintf(c->base, sizeof(c->base), "%u/task/%u", pid, tid);
	else
		snprintf(c->base, sizeof(c->base), "%u", pid);
	snprintf(path, sizeof(path), "%s/%s/root", s->proc_root, c->base);
	c->root_fd = safeopen__dir(path);
	/* The host table first: the process's may live in the scratch slot. */
	c->host_mi = s->real_proc ? mounts_of(s, "self") : NULL;
	c->mi = mounts_of(s, c->base);
	c->root_is_host = c->root_fd >= 0 && s->host_fd >= 0 && !fstat(c->root_fd, &st) &&
			  st.st_dev == s->host_st.st_dev && st.st_ino == s->host_st.st_ino;
	/* The same root directory seen from another mount namespace is another view. */
	snprintf(path, sizeof(path), "%s/%s/ns/mnt", s->proc_root, c->base);
	if (c->root_is_host && s->self_mntns && !stat(path, &st) && st.st_ino != s->self_mntns)
		c->root_is_host = false;
}

static void pctx_close(struct pctx *c)
{
	if (c->root_fd >= 0)
		close(c->root_fd);
	c->root_fd = -1;
}

/* --- files -------------------------------------------------------------------- */

static bool is_memfd(const struct procmap *m)
{
	return m->path && !strncmp(m->path, "/memfd:", 7);
}

/* Opens the file behind mapping m of the process; -errno if it cannot be trusted. */
static int open_mapped_file(struct symbolizer *s, const struct pctx *c, const struct procmap *m,
			    struct safe_file *f)
{
	char path[PATH_MAX];
	bool dev_ok, ino_ok;
	int opath, err;

	snprintf(path, sizeof(path), "%s/%s/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, c->base,
		 m->start, m->end);
	/* O_PATH: the magic link is procfs's own; no filesystem open runs yet. */
	opath = open(path, O_PATH | O_CLOEXEC);
	if (opath >= 0) {
		err = safeopen__reopen(opath, c->mi, f);
		close(opath);
		if (err)
			return err;
	} else {
		/* No map_files (no CAP_SYS_ADMIN, or an old kernel): by path, then checked. */
		if (m->deleted || !procmap__is_file(m))
			return -ENOENT;
		if (c->root_fd < 0)
			return -EACCES;
		err = safeopen__in_root(c->root_fd, c->mi, m->path, 0, f);
		if (err)
			return err;
	}
	/*
	 * The file must be the one the maps line names. overlayfs reports its
	 * own device (and, with xino, its own inode numbers) for a file whose
	 * maps line shows the layer's: one of the two matching is enough.
	 */
	dev_ok = major(f->st.st_dev) == m->dev_major && minor(f->st.st_dev) == m->dev_minor;
	ino_ok = f->st.st_ino == m->inode;
	if (!(dev_ok && ino_ok) && (opath < 0 || (!dev_ok && !ino_ok))) {
		close(f->fd);
		f->fd = -1;
		return -ESTALE;
	}
	return 0;
}

static bool rejection(int err)
{
	return err == -ELOOP || err == -EXDEV || err == -EINVAL || err == -EREMOTE;
}

static const char *reason(int err)
{
	switch (err) {
	case -ELOOP:
		return "it is a symbolic link";
	case -EXDEV:
		return "its path leaves the process's root";
	case -EINVAL:
		return "it is not a regular file";
	case -EREMOTE:
		return "it is on a FUSE file system, which could block the profiler";
	case -EFBIG:
		return "it is too large";
	default:
		return strerror(-err);
	}
}

static void load_file(struct symbolizer *s, const struct pctx *c, const struct procmap *m,
		      struct symfile *f)
{
	struct safe_file sf;
	struct elfsym *dbg;
	char found[PATH_MAX];
	int err;

	err = open_mapped_file(s, c, m, &sf);
	if (err) {
		f->err = err;
		if (rejection(err))
			warnf(s, "not reading %s mapped by process %u: %s", m->path, c->pid,
			      reason(err));
		return;
	}
	f->size = (uint64_t)sf.st.st_size;
	f->mtime = sf.st.st_mtim;
	f->ctime = sf.st.st_ctim;
	f->es = elfsym__open_fd(sf.fd);
	f->err = f->es ? 0 : -errno;
	if (f->es && !elfsym__has_symtab(f->es) &&
	    (elfsym__build_id(f->es, NULL) || elfsym__debuglink(f->es, NULL))) {
		struct debuginfo_query q = {
			.bin = f->es,
			.path = m->path,
			.dev = (uint64_t)sf.st.st_dev,
			.ino = (uint64_t)sf.st.st_ino,
			.roots = { { c->root_fd, c->mi },
				   { c->root_is_host || c->root_fd < 0 ? -1 : s->host_fd,
				     c->host_mi } },
			.debug_dir = s->debug_dir,
		};

		/* A process whose root we cannot open still has the host's files. */
		if (c->root_fd < 0) {
			q.roots[0].fd = s->host_fd;
			q.roots[0].mi = c->host_mi;
		}
		dbg = debuginfo__find(&q, found, sizeof(found));
		if (dbg && !elfsym__merge(f->es, dbg))
			s->debug_files++;
	}
	close(sf.fd);
}

/* Whether cached file f is still what (dev, inode) names now; false if unsure it is not. */
static bool file_changed(struct symbolizer *s, const struct pctx *c, const struct procmap *m,
			 const struct symfile *f)
{
	char path[PATH_MAX];
	struct statx sx;
	int fd;

	if (f->err)
		return false;
	snprintf(path, sizeof(path), "%s/%s/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, c->base,
		 m->start, m->end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_SIZE | STATX_MTIME | STATX_CTIME,
		  &sx)) {
		close(fd);
		return false;
	}
	close(fd);
	return sx.stx_size != f->size || sx.stx_mtime.tv_sec != f->mtime.tv_sec ||
	       sx.stx_mtime.tv_nsec != (uint32_t)f->mtime.tv_nsec ||
	       sx.stx_ctime.tv_sec != f->ctime.tv_sec ||
	       sx.stx_ctime.tv_nsec != (uint32_t)f->ctime.tv_nsec;
}

static struct symfile *get_file(struct symbolizer *s, const struct pctx *c, const struct procmap *m)
{
	struct file_key k = { .major = m->dev_major, .minor = m->dev_minor, .inode = m->inode };
	struct htab_entry *e;
	struct symfile *f;
	bool created;

	e = htab__upsert(s->files, &k, sizeof(k), &created);
	if (!e)
		return NULL;
	if (!created) {
		f = e->value;
		if (f->checked_gen != s->gen + 1) {
			f->checked_gen = s->gen + 1;
			if (file_changed(s, c, m, f)) {
				/* An inode number reused by a new file: start over. */
				f->orphan = true;
				if (!f->refs)
					symfile_free(f);
				created = true;
			}
		}
		if (!created) {
			f->used_gen = s->gen;
			return f;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		htab__remove(s->files, &k, sizeof(k));
		return NULL;
	}
	e->value = f;
	f->key = k;
	f->used_gen = s->gen;
	f->checked_gen = s->gen + 1;
	load_file(s, c, m, f);
	return f;
}

/* --- JIT perf maps ------------------------------------------------------------- */

/* Whether a file was last written before the process started (1 s of slack). */
static bool stale_for(const struct symproc *p, const struct stat *st)
{
	uint64_t start_real, mtime;

	if (!p->id.start_time)
		return false;
	/* start_time is CLOCK_BOOTTIME; file times are CLOCK_REALTIME. */
	start_real = realtime_ns() - boottime_ns() + p->id.start_time;
	mtime = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + (uint64_t)st->st_mtim.tv_nsec;
	return mtime + 1000000000ULL < start_real;
}

/* Reads (more of) the process's perf map. Called with the process alive. */
static void load_perfmap(struct symbolizer *s, struct symproc *p, const struct pctx *c)
{
	struct proc_status ps;
	struct safe_file sf;
	struct perfmap *pm;
	char *buf = NULL;
	size_t before;
	int err;

	if (p->pmap_rejected)
		return;
	p->pmap_read_ns = now_ns();
	if (!p->have_status) {
		if (procfs__status(s->proc_root, p->id.pid, &ps))
			return;
		p->ns_pid = ps.ns_pid;
		p->euid = ps.euid;
		p->have_status = true;
		/* The process writes it in its own /tmp, named with its own pid. */
		snprintf(p->pmap_path, sizeof(p->pmap_path), "/tmp/perf-%u.map", p->ns_pid);
	}
	if (c->root_fd < 0)
		return;
	err = safeopen__in_root(c->root_fd, c->mi, p->pmap_path, SAFEOPEN_NO_SYMLINKS, &sf);
	if (err == -ENOENT || err == -ENOTDIR)
		return;
	/*
	 * Left behind by an earlier process with this pid (JITs do not remove
	 * their maps): not this process's until it writes it again.
	 */
	if (!err && stale_for(p, &sf.st)) {
		close(sf.fd);
		return;
	}
	if (!err && sf.st.st_uid != p->euid && sf.st.st_uid != 0)
		err = -EPERM;
	if (!err && (uint64_t)sf.st.st_size > PERFMAP_MAX_FILE)
		err = -EFBIG;
	if (err) {
		p->pmap_rejected = true;
		s->pmap_bytes -= MIN(s->pmap_bytes, p->pmap_bytes);
		perfmap__free(p->pmap);
		p->pmap = NULL;
		p->pmap_bytes = 0;
		if (err == -EPERM)
			warnf(s, "ignoring JIT map %s of process %u: owned by uid %u, the process runs as uid %u",
			      p->pmap_path, p->id.pid, (unsigned)sf.st.st_uid, p->euid);
		else
			warnf(s, "ignoring JIT map %s of process %u: %s", p->pmap_path, p->id.pid,
			      reason(err));
		if (sf.fd >= 0)
			close(sf.fd);
		return;
	}
	pm = p->pmap;
	/* A different file, or one that shrank (rewritten): start over. */
	if (pm && ((uint64_t)sf.st.st_dev != p->pmap_dev || (uint64_t)sf.st.st_ino != p->pmap_ino ||
		   (size_t)sf.st.st_size < perfmap__consumed(pm))) {
		perfmap__free(pm);
		pm = NULL;
	}
	if (!pm && !(pm = perfmap__new()))
		goto out;
	p->pmap = pm;
	p->pmap_dev = (uint64_t)sf.st.st_dev;
	p->pmap_ino = (uint64_t)sf.st.st_ino;
	buf = malloc(PERFMAP_READ_CHUNK);
	if (!buf)
		goto out;
	/* Up to the size seen at open: a file still growing is read next time. */
	while (perfmap__consumed(pm) < (size_t)sf.st.st_size) {
		size_t off = perfmap__consumed(pm);
		size_t want = MIN((size_t)sf.st.st_size - off, (size_t)PERFMAP_READ_CHUNK);
		ssize_t n = pread(sf.fd, buf, want, (off_t)off);

		if (n <= 0)
			break;
		before = off;
		if (perfmap__add(pm, buf, (size_t)n))
			break;
		if (perfmap__consumed(pm) == before)
			break; /* no complete line in a whole chunk: nothing more to take */
	}
	perfmap__finish(pm);
out:
	free(buf);
	close(sf.fd);
	s->pmap_bytes -= MIN(s->pmap_bytes, p->pmap_bytes);
	p->pmap_bytes = perfmap__bytes(p->pmap);
	s->pmap_bytes += p->pmap_bytes;
}

/* --- processes ------------------------------------------------------------------ */

/* Reads the maps of pid; *tid is set to the thread used if the main thread has exited. */
static int read_maps(struct symbolizer *s, uint32_t pid, struct procmaps *out, uint32_t *tid)
{
	return procmaps__read_pid(s->proc_root, pid, out, tid);
}

/* The process with this id is still there (a recycled pid is not it). */
static bool proc_matches(struct symbolizer *s, const struct proc_id *id)
{
	uint64_t ticks;

	if (procfs__starttime(s->proc_root, id->pid, &ticks))
		return false;
	return !id->start_time || ticks == procfs__ns_to_ticks(id->start_time);
}

/* The image /proc shows now is id's: same start time, same address space. */
static int image_check(struct symbolizer *s, const struct proc_id *id, uint64_t *sig)
{
	uint64_t ticks;

	if (procfs__image(s->proc_root, id->pid, &ticks, sig))
		return -ESRCH;
	if (id->start_time && ticks != procfs__ns_to_ticks(id->start_time))
		return -ESRCH;
	if (id->mm_sig && *sig && *sig != id->mm_sig)
		return -ESRCH;
	return 0;
}

/* Executable mappings are all a lookup ever names: keep only those. */
static bool jit_candidate(const struct procmap *m)
{
	return !m->path || (!procmap__is_file(m) && strcmp(m->path, "[vdso]") &&
			    strcmp(m->path, "[vsyscall]"));
}

/* (Re)reads the mappings of p and resolves the files they map. */
static int load_maps(struct symbolizer *s, struct symproc *p)
{
	struct procmaps maps = { 0 };
	struct symfile **files;
	uint64_t sig0 = 0, sig1 = 0;
	uint32_t tid;
	struct pctx c;
	int err;

	err = image_check(s, &p->id, &sig0);
	if (err)
		return err;
	err = read_maps(s, p->id.pid, &maps, &tid);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	/* An exec (or exit) while we read: these mappings may be the next image's. */
	if (image_check(s, &p->id, &sig1) || sig1 != sig0) {
		procmaps__free(&maps);
		return -ESRCH;
	}
	if (!p->id.mm_sig)
		p->id.mm_sig = sig0; /* later refreshes must find this same image */
	err = procmaps__keep(&maps, PROCMAP_X);
	if (err) {
		procmaps__free(&maps);
		return err;
	}
	files = calloc(maps.nr ? maps.nr : 1, sizeof(*files));
	if (!files) {
		procmaps__free(&maps);
		return -ENOMEM;
	}
	p->tid = tid;
	pctx_open(s, p->id.pid, p->tid, &c);
	p->jit = false;
	for (size_t i = 0; i < maps.nr; i++) {
		const struct procmap *m = &maps.maps[i];

		if (m->path && !strcmp(m->path, "[vdso]"))
			files[i] = s->vdso.es ? &s->vdso : NULL;
		else if (procmap__is_file(m) || (is_memfd(m) && m->inode))
			files[i] = get_file(s, &c, m);
		if (files[i])
			files[i]->refs++;
		if (jit_candidate(m) && (!files[i] || !files[i]->es))
			p->jit = true;
	}
	/* Release the old snapshot only after the new one took its references. */
	release_files(p);
	procmaps__free(&p->maps);
	p->maps = maps;
	p->files = files;
	if (p->jit)
		load_perfmap(s, p, &c);
	pctx_close(&c);
	return 0;
}

/* Makes room for one more process entry: gone and dead ones first, then the least used. */
static int proc_cmp(const void *a, const void *b)
{
	const struct symproc *x = *(const struct symproc *const *)a;
	const struct symproc *y = *(const struct symproc *const *)b;
	int rx = x->gone ? 0 : x->dead ? 1 : 2, ry = y->gone ? 0 : y->dead ? 1 : 2;

	if (rx != ry)
		return rx - ry;
	return x->used_gen < y->used_gen ? -1 : x->used_gen > y->used_gen;
}

static void evict_procs(struct symbolizer *s)
{
	size_t n = htab__count(s->procs), k = 0, pos = 0, drop;
	struct symproc **all = malloc((n + 1) * sizeof(*all));
	struct htab_entry *e;

	if (!all)
		return;
	while ((e = htab__next(s->procs, &pos)))
		all[k++] = e->value;
	qsort(all, k, sizeof(*all), proc_cmp);
	drop = MAX(k / 8, (size_t)1);
	for (size_t i = 0; i < drop && i < k; i++) {
		struct proc_key pk = proc_key_of(&all[i]->id);

		htab__remove(s->procs, &pk, sizeof(pk));
		symproc_free(s, all[i]);
		s->evicted_procs++;
	}
	free(all);
}

/* Another image of the same process is known: the current one may not be id's. */
static bool other_image_known(struct symbolizer *s, const struct proc_id *id)
{
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(s->procs, &pos))) {
		const struct symproc *p = e->value;

		if (p->id.pid == id->pid && p->id.start_time == id->start_time &&
		    p->id.exec_id != id->exec_id)
			return true;
	}
	return false;
}

static struct symproc *add_proc(struct symbolizer *s, const struct proc_id *id, int *errp)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e;
	struct symproc *p;
	bool created;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p) {
		*errp = -ENOMEM;
		return NULL;
	}
	p->id = *id;
	p->used_gen = s->gen;
	/*
	 * Without the notice's signature (it was lost), an exec since the
	 * sample cannot be ruled out; if another image of this process is
	 * known, refuse rather than guess.
	 */
	if (!id->mm_sig && other_image_known(s, id))
		err = -ESRCH;
	else
		err = load_maps(s, p);
	if (err == -ENOMEM) {
		symproc_free(s, p);
		*errp = err;
		return NULL;
	}
	if (err) {
		/* Remembered, so its samples do not retry (and cannot misname). */
		p->dead = true;
		s->images_lost++;
	}
	if (htab__count(s->procs) >= s->max_procs)
		evict_procs(s);
	e = htab__upsert(s->procs, &k, sizeof(k), &created);
	if (!e) {
		symproc_free(s, p);
		*errp = -ENOMEM;
		return NULL;
	}
	e->value = p;
	*errp = err;
	return p;
}

int symbolizer__note_process(struct symbolizer *s, const struct proc_id *id)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e = htab__find(s->procs, &k, sizeof(k));
	int err;

	if (e)
		return ((struct symproc *)e->value)->dead ? -ESRCH : 0;
	add_proc(s, id, &err);
	return err;
}

int symbolizer__refresh_process(struct symbolizer *s, const struct proc_id *id)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e = htab__find(s->procs, &k, sizeof(k));
	struct symproc *p;

	if (!e)
		return symbolizer__note_process(s, id);
	p = e->value;
	if (p->dead || p->gone || !proc_matches(s, &p->id))
		return -ESRCH;
	return load_maps(s, p);
}

/*
 * A perf map name for addr. On a miss the JIT may have written more since the
 * map was read: read on (from where the complete lines ended), but at most
 * every PERFMAP_RETRY_NS per process, so code it never names costs little.
 */
static const char *jit_name(struct symbolizer *s, struct symproc *p, uint64_t addr)
{
	const char *name = perfmap__lookup(p->pmap, addr, NULL);
	uint64_t now, sig = 0;
	struct pctx c;

	if (name || p->pmap_rejected || p->gone)
		return name;
	now = now_ns();
	if (p->pmap_read_ns && now - p->pmap_read_ns < PERFMAP_RETRY_NS)
		return NULL;
	p->pmap_read_ns = now;
	/* Still this image: after an exec the same path names the next program's code. */
	if (image_check(s, &p->id, &sig))
		return NULL;
	pctx_open(s, p->id.pid, p->tid, &c);
	load_perfmap(s, p, &c);
	pctx_close(&c);
	return perfmap__lookup(p->pmap, addr, NULL);
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
	int err;

	s->lookups++;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_USER;
	out->addr = ip;

	e = htab__find(s->procs, &k, sizeof(k));
	p = e ? e->value : add_proc(s, id, &err);
	if (p && !p->dead) {
		p->used_gen = s->gen;
		m = procmaps__find(&p->maps, addr);
		/* Mapped after our snapshot (dlopen, new JIT region)? Re-read once per drain. */
		if (!m && !p->refreshed && !p->gone && proc_matches(s, &p->id)) {
			p->refreshed = true;
			if (!load_maps(s, p))
				m = procmaps__find(&p->maps, addr);
		}
	}
	/* Frame-pointer walks through code built without them yield junk that
	 * lands in data, stack or heap: only executable mappings name frames. */
	if (!m || !(m->perms & PROCMAP_X)) {
		s->unknown++;
		return;
	}
	f = p->files[m - p->maps.maps];
	if ((!f || !f->es) && jit_candidate(m)) {
		const char *name = jit_name(s, p, addr);

		if (name) {
			out->kind = FRAME_JIT;
			out->name = name;
			out->module = p->pmap_path;
			s->jit_names++;
			return;
		}
	}
	if (!m->path) {
		s->unknown++;
		return;
	}
	out->module = m->path;
	fileoff = addr - m->start + m->offset;
	if (!f || !f->es) {
		out->addr = fileoff + (leaf ? 0 : 1);
		s->unknown++;
		return;
	}
	f->used_gen = s->gen;
	out->build_id = elfsym__build_id(f->es, &out->build_id_len);
	if (elfsym__off_to_vaddr(f->es, fileoff, &vaddr))
		vaddr = fileoff;
	out->name = elfsym__lookup_demangled(f->es, vaddr, NULL);
	out->addr = vaddr + (leaf ? 0 : 1);
	if (!out->name)
		s->unknown++;
}

/* --- files for annotate --------------------------------------------------------- */

int symbolizer__open_files(struct symbolizer *s, uint32_t pid, const char *module,
			   struct sym_files *out)
{
	struct symproc *p = NULL;
	const struct procmap *m = NULL;
	struct htab_entry *e;
	struct safe_file sf;
	struct pctx c;
	struct elfsym *es, *dbg;
	size_t pos = 0;
	int err;

	memset(out, 0, sizeof(*out));
	out->fd = out->debug_fd = -1;
	/* The newest live image of the pid (an exec'd one is another image). */
	while ((e = htab__next(s->procs, &pos))) {
		struct symproc *q = e->value;

		if (q->id.pid == pid && !q->dead && !q->gone &&
		    (!p || q->id.exec_id > p->id.exec_id || q->id.start_time > p->id.start_time))
			p = q;
	}
	if (!p || !proc_matches(s, &p->id))
		return -ESRCH;
	for (size_t i = 0; i < p->maps.nr && !m; i++)
		if (p->maps.maps[i].path && !strcmp(p->maps.maps[i].path, module))
			m = &p->maps.maps[i];
	if (!m)
		return -ENOENT;
	pctx_open(s, pid, p->tid, &c);
	err = open_mapped_file(s, &c, m, &sf);
	if (err) {
		pctx_close(&c);
		return err;
	}
	out->fd = sf.fd;
	/* The debug file even when the binary has symbols: its DWARF is what counts. */
	es = elfsym__open_fd(sf.fd);
	if (es && (elfsym__build_id(es, NULL) || elfsym__debuglink(es, NULL))) {
		struct debuginfo_query q = {
			.bin = es,
			.path = m->path,
			.dev = (uint64_t)sf.st.st_dev,
			.ino = (uint64_t)sf.st.st_ino,
			.roots = { { c.root_fd, c.mi },
				   { c.root_is_host || c.root_fd < 0 ? -1 : s->host_fd, c.host_mi } },
			.debug_dir = s->debug_dir,
			.fd_out = &out->debug_fd,
		};

		if (c.root_fd < 0) {
			q.roots[0].fd = s->host_fd;
			q.roots[0].mi = c.host_mi;
		}
		dbg = debuginfo__find(&q, out->debug_path, sizeof(out->debug_path));
		elfsym__free(dbg);
	}
	elfsym__free(es);
	pctx_close(&c);
	return 0;
}

const char *sym__display(const struct sym *sym, char *buf, size_t size)
{
	if (sym->name && sym->kind == FRAME_KERNEL && sym->module) {
		snprintf(buf, size, "%s [%s]", sym->name, sym->module);
		return buf;
	}
	if (sym->name)
		return sym->name;
	if (sym->module && sym->kind != FRAME_KERNEL) {
		snprintf(buf, size, "%s+0x%" PRIx64, path_basename(sym->module), sym->addr);
		return buf;
	}
	return "[unknown]";
}

/* --- sweep ------------------------------------------------------------------------ */

static int file_cmp(const void *a, const void *b)
{
	const struct symfile *x = *(const struct symfile *const *)a;
	const struct symfile *y = *(const struct symfile *const *)b;

	return x->used_gen < y->used_gen ? -1 : x->used_gen > y->used_gen;
}

/*
 * Drops files no process entry maps: idle ones, and over a cap the least
 * recently used first.
 */
static void evict_files(struct symbolizer *s)
{
	size_t n = htab__count(s->files), k = 0, pos = 0, count = n, bytes = 0, idle = 0;
	struct symfile **cand;
	struct htab_entry *e;

	while ((e = htab__next(s->files, &pos))) {
		struct symfile *f = e->value;

		bytes += elfsym__bytes(f->es);
		idle += !f->refs && f->used_gen + FILE_IDLE_GENS < s->gen;
	}
	s->file_bytes = bytes;
	if (count <= s->max_files && bytes <= s->max_file_bytes && !idle)
		return;
	cand = malloc((n + 1) * sizeof(*cand));
	if (!cand)
		return;
	pos = 0;
	while ((e = htab__next(s->files, &pos))) {
		struct symfile *f = e->value;

		if (!f->refs && f->used_gen + 1 < s->gen)
			cand[k++] = f;
	}
	qsort(cand, k, sizeof(*cand), file_cmp);
	for (size_t i = 0; i < k; i++) {
		size_t b = elfsym__bytes(cand[i]->es);

		/* Oldest first: once under the caps, the rest are newer than idle. */
		if (count <= s->max_files && bytes <= s->max_file_bytes &&
		    cand[i]->used_gen + FILE_IDLE_GENS >= s->gen)
			break;
		htab__remove(s->files, &cand[i]->key, sizeof(cand[i]->key));
		bytes -= MIN(bytes, b);
		s->freed_bytes += b;
		count--;
		symfile_free(cand[i]);
		s->evicted_files++;
	}
	s->file_bytes = bytes;
	free(cand);
}

/* Over the JIT map budget: drop the maps of the least recently used processes. */
static void evict_perfmaps(struct symbolizer *s)
{
	size_t n = htab__count(s->procs), k = 0, pos = 0;
	struct symproc **all;
	struct htab_entry *e;

	if (s->pmap_bytes <= s->max_perfmap_bytes)
		return;
	all = malloc((n + 1) * sizeof(*all));
	if (!all)
		return;
	while ((e = htab__next(s->procs, &pos)))
		if (((struct symproc *)e->value)->pmap)
			all[k++] = e->value;
	qsort(all, k, sizeof(*all), proc_cmp);
	for (size_t i = 0; i < k && s->pmap_bytes > s->max_perfmap_bytes; i++) {
		s->pmap_bytes -= MIN(s->pmap_bytes, all[i]->pmap_bytes);
		s->freed_bytes += all[i]->pmap_bytes;
		perfmap__free(all[i]->pmap);
		all[i]->pmap = NULL;
		all[i]->pmap_bytes = 0;
		all[i]->pmap_read_ns = 0; /* read again from the start if it is needed */
	}
	free(all);
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
			s->freed_bytes += p->pmap_bytes + p->maps.nr * 64;
			symproc_free(s, p);
			continue;
		}
		p->refreshed = false;
		if (!proc_matches(s, &p->id))
			p->gone = true;
	}
	evict_files(s);
	evict_perfmaps(s);
	pos = 0;
	while ((e = htab__next(s->mntns, &pos))) {
		struct mntns *m = e->value;

		if (m->gen + 1 < s->gen || htab__count(s->mntns) > MNTNS_MAX) {
			htab__remove(s->mntns, e->key, e->klen);
			mountinfo__free(&m->mi);
			free(m);
		}
	}
	for (size_t i = 0; i < s->nr_retired; i++)
		ksyms__free(s->retired[i]);
	s->nr_retired = 0;
	/* Module unloads too: an address could now belong to another module. */
	kernel_refresh(s, s->kmiss);
	s->kmiss = false;
	/* Hand freed memory back, so RSS follows what is cached, not the peak. */
	if (s->freed_bytes > TRIM_AFTER_BYTES) {
		malloc_trim(0);
		s->freed_bytes = 0;
	}
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	struct htab_entry *e;
	size_t pos = 0;

	memset(st, 0, sizeof(*st));
	st->procs = htab__count(s->procs);
	st->files = htab__count(s->files);
	st->ksyms = s->ks ? ksyms__count(s->ks) : 0;
	st->lookups = s->lookups;
	st->unknown = s->unknown;
	while ((e = htab__next(s->files, &pos)))
		st->file_bytes += elfsym__bytes(((struct symfile *)e->value)->es);
	pos = 0;
	while ((e = htab__next(s->procs, &pos)))
		st->perfmaps += ((struct symproc *)e->value)->pmap != NULL;
	st->perfmap_bytes = s->pmap_bytes;
	st->debug_files = s->debug_files;
	st->jit_names = s->jit_names;
	st->rejected = s->rejected;
	st->images_lost = s->images_lost;
	st->kernel_reloads = s->kernel_reloads;
	st->evicted_procs = s->evicted_procs;
	st->evicted_files = s->evicted_files;
}
