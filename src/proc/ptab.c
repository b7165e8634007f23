// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * ptab.c - the process table and its mapped files; see ptab.h for the rules
 * every read here follows and why.
 */
#include "proc/ptab.h"

#include <linux/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/htab.h"
#include "base/util.h"
#include "proc/elffile.h"
#include "proc/mountinfo.h"

/* Two readers asking for the same event share one read of the maps. */
#define REFRESH_SHARE_NS (20ull * 1000 * 1000)
/* Mount tables cached (one per mount namespace). */
#define MNTNS_MAX 1024
/* Liveness: pidfds held at most (and at most an eighth of the fd limit). */
#define PIDFDS_MAX 1024
/* Pidfds nobody asked about for this long are closed at the next sweep. */
#define PIDFD_IDLE_NS  (60ull * 1000 * 1000 * 1000)
#define PIDFD_SWEEP_NS (10ull * 1000 * 1000 * 1000)
/*
 * The pidfds are in one epoll set; exits are collected from it (one
 * epoll_wait) at most once per ALIVE_FRESH_NS, so a sweep that asks about
 * every known process makes one system call, not one each. An answer is
 * thus at most this old - as if the caller had taken that long to use it.
 */
#define ALIVE_FRESH_NS (1ull * 1000 * 1000)
/*
 * Processes found exited, remembered: an id (pid and start time) never runs
 * again, and the sweeps ask about an exited process a few more times before
 * they forget it - each an open of /proc/PID/stat that fails. Kept for
 * DEAD_KEEP sweeps, at most DEAD_MAX.
 */
#define DEAD_KEEP 10
#define DEAD_MAX  4096
/*
 * Device aliases (ptab__learn_mapped): an overlayfs file's inode, as a BPF
 * program finds it, is the layer's, where /proc/PID/maps shows the overlay's
 * device. Learned from processes read both ways; at most this many.
 */
#define ALIASES_MAX 4096

struct file_key {
	uint32_t major, minor;
	uint64_t inode;
};

struct mfile {
	struct ptab *t;
	struct file_key key;
	uint64_t serial;
	unsigned refs;
	/* While held: the process and mapping to open it through, when it is read. */
	struct pproc *via;
	struct procmap via_m; /* path owned */
	bool orphan;	      /* replaced in the table: freed when the last reader puts it */
	int err;	      /* a refusal, remembered; 0 if the file passed the checks */
	int fd;		      /* -1 while closed */
	Elf *elf;	      /* made on first use, ended on close */
	struct stat st;	      /* as opened: its identity beyond (dev, inode) */
	uint64_t checked_gen;
	uint64_t used_ns; /* for closing the least recently used */
	bool have_bid;
	size_t bid_len;
	uint8_t bid[BUILD_ID_MAX];
	char *path;
	void *memo[MFILE_MEMO_NR]; /* readers' verdicts on its contents */
};

struct proc_key {
	uint32_t pid, pad;
	uint64_t start_time, exec_id;
};

struct pproc {
	struct proc_id id;
	unsigned refs;
	struct pmaps *maps;
	uint64_t maps_ns; /* when the latest snapshot was read */
	uint64_t maps_gen;
	uint32_t tid;  /* a live thread whose /proc files to use (main thread exited), or 0 */
	char base[48]; /* "PID", or "PID/task/TID" */
	/*
	 * Files of mounts that may block, mapped anywhere: memory reads avoid
	 * them. Found with the text of the maps; after a query (which reads
	 * only executable mappings) at the first memory read.
	 */
	struct {
		uint64_t start, end;
	} * blocked;
	size_t nr_blocked;
	bool blocked_known;
	int blocked_err; /* their lookup failed (-errno): memory reads fail so until the next maps
			    read */
	bool have_status;
	struct proc_status status;
	int pmap_err; /* a refusal of the perf map, remembered */
	char pmap_path[40];
	/* Made from a notice's mappings (ptab__get_mapped): never read through
	 * /proc, its files only those the table has (none opened for it). */
	bool mapped;
};

/* A process's pidfd (pidfds, keyed by alive_key). */
struct alive_fd {
	int fd;
	bool exited; /* the epoll set said readable (exited, zombie included) */
	uint64_t asked_ns;
};

struct alive_key {
	uint32_t pid, pad;
	uint64_t start_time;
};

struct mntns {
	struct mountinfo mi;
	uint64_t gen;
	bool ok;
	bool self; /* the agent's own namespace: kept, read again only when changed */
	int err;   /* of the last read, when not ok */
};

struct ptab {
	char proc_root[256];
	int mnt_err;	      /* of the last mount table asked for: 0 or -errno */
	bool real_proc;	      /* proc_root is the real /proc: /proc/self, namespaces */
	struct htab *procs;   /* proc_key -> pproc */
	struct htab *files;   /* file_key -> mfile */
	struct htab *mntns;   /* mount ns (dev, inode), or a fake tree's path -> mntns */
	struct htab *pidfds;  /* alive_key -> alive_fd (the real /proc only) */
	struct htab *dead;    /* alive_key -> the sweep it was found exited at */
	struct htab *aliases; /* file_key as a BPF program sees it -> file_key of the maps */
	unsigned max_pidfds;
	uint64_t pidfd_sweep_ns;
	int epfd;	     /* the pidfds' epoll set; -1: a poll() per question */
	uint64_t harvest_ns; /* exits last collected from it */
	struct safe_root host;
	struct stat host_st;
	uint64_t self_mntns; /* inode of our mount namespace, 0 if unknown */
	int self_mi_fd;	     /* /proc/self/mountinfo, open: poll() tells of mount changes */
	uint64_t shm_mnt_id; /* the kernel's internal tmpfs (memfd files) */
	bool shm_known;
	unsigned max_open;
	bool maps_text;	     /* no PROCMAP_QUERY: opts, or the kernel said so */
	struct mfile **open; /* files with an open fd */
	size_t nr_open, cap_open;
	uint64_t gen, serial;
	void *vdso;
	size_t vdso_len;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	struct ptab_stats st;
};

static void warnf(struct ptab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct ptab *t, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	t->st.refused++;
	if (!t->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	t->warn(t->warn_ctx, msg);
}

bool ptab__refusal(int err)
{
	return err == -ELOOP || err == -EXDEV || err == -EINVAL || err == -EREMOTE ||
	       err == -EFBIG || err == -EPERM;
}

const char *ptab__reason(int err, const char *fstype)
{
	static __thread char buf[160];

	switch (err) {
	case -ELOOP:
		return "it is a symbolic link";
	case -EXDEV:
		return "its path leaves the process's root";
	case -EINVAL:
		return "it is not a regular file";
	case -EREMOTE:
		if (!fstype || !*fstype)
			return "it is on a mount whose type is unknown, which could block the profiler";
		if (!strncmp(fstype, "fuse", 4))
			snprintf(buf, sizeof(buf),
				 "it is on a FUSE file system (%s), which could block the profiler",
				 fstype);
		else
			snprintf(
				buf, sizeof(buf),
				"it is on a network file system (%s), which could block the profiler",
				fstype);
		return buf;
	case -EFBIG:
		return "it is too large";
	default:
		return strerror(-err);
	}
}

/* --- the agent's own vDSO ----------------------------------------------------- */

/* Our own vDSO is the one every native process of this kernel maps. */
static void load_vdso(struct ptab *t)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct procmaps self = { 0 };

	if (!base || procmaps__read("/proc/self/maps", &self))
		return;
	for (size_t i = 0; i < self.nr; i++) {
		const struct procmap *m = &self.maps[i];

		if (m->start != base || !m->path || strcmp(m->path, "[vdso]"))
			continue;
		t->vdso = malloc(m->end - m->start);
		if (t->vdso) {
			memcpy(t->vdso, (const void *)base, m->end - m->start);
			t->vdso_len = m->end - m->start;
		}
		break;
	}
	procmaps__free(&self);
}

const void *ptab__vdso(const struct ptab *t, size_t *len)
{
	*len = t->vdso_len;
	return t->vdso;
}

/* --- life cycle ------------------------------------------------------------------ */

/*
 * The mount id of the kernel's internal tmpfs, read off a memfd of our own:
 * memfd files (JIT code, programs exec'd from memory) live there, on a mount
 * no mount table lists.
 */
static bool shm_mount_id(uint64_t *id)
{
	struct statx sx;
	bool ok = false;
	int fd = memfd_create("bpfprof-probe", MFD_CLOEXEC);

	if (fd < 0)
		return false;
	if (!statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) &&
	    (sx.stx_mask & STATX_MNT_ID)) {
		*id = sx.stx_mnt_id;
		ok = true;
	}
	close(fd);
	return ok;
}

/* Pidfds for liveness: the option, else an eighth of the fd limit, at most PIDFDS_MAX. */
static unsigned pidfd_budget(const struct ptab_opts *opts)
{
	struct rlimit rl;
	uint64_t n = PIDFDS_MAX;

	if (opts && opts->max_pidfds)
		return opts->max_pidfds < 0 ? 0 : (unsigned)opts->max_pidfds;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 8 < n)
		n = rl.rlim_cur / 8;
	return (unsigned)n;
}

struct ptab *ptab__new(const struct ptab_opts *opts)
{
	struct ptab *t = calloc(1, sizeof(*t));
	const char *host = opts && opts->host_root ? opts->host_root : "/";
	struct stat ns;

	if (!t)
		return NULL;
	snprintf(t->proc_root, sizeof(t->proc_root), "%s",
		 opts && opts->proc_root ? opts->proc_root : "/proc");
	t->real_proc = !strcmp(t->proc_root, "/proc");
	t->max_open = opts && opts->max_open ? opts->max_open : 8;
	t->maps_text = opts && opts->maps_text;
	t->max_pidfds = pidfd_budget(opts);
	if (opts) {
		t->warn = opts->warn;
		t->warn_ctx = opts->warn_ctx;
	}
	t->procs = htab__new();
	t->files = htab__new();
	t->mntns = htab__new();
	t->dead = htab__new();
	t->aliases = htab__new();
	t->epfd = -1;
	/* Opened before the first read of it: a change after that is flagged. */
	t->self_mi_fd = t->real_proc ? open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC) : -1;
	if (t->real_proc && t->max_pidfds) {
		t->pidfds = htab__new();
		t->epfd = epoll_create1(EPOLL_CLOEXEC);
	}
	t->host.fd = safeopen__dir(host);
	if (t->host.fd >= 0 && fstat(t->host.fd, &t->host_st)) {
		close(t->host.fd);
		t->host.fd = -1;
	}
	if (t->real_proc && !stat("/proc/self/ns/mnt", &ns))
		t->self_mntns = ns.st_ino;
	t->shm_known = shm_mount_id(&t->shm_mnt_id);
	t->host.shm_mnt_id = t->shm_mnt_id;
	t->host.shm_known = t->shm_known;
	if (!t->procs || !t->files || !t->mntns || !t->dead || !t->aliases ||
	    (t->max_pidfds && t->real_proc && !t->pidfds)) {
		ptab__free(t);
		errno = ENOMEM;
		return NULL;
	}
	load_vdso(t);
	return t;
}

static void mfile_close(struct ptab *t, struct mfile *f)
{
	if (f->elf) {
		elffile__end(f->elf, NULL);
		f->elf = NULL;
	}
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
		for (size_t i = 0; i < t->nr_open; i++)
			if (t->open[i] == f) {
				t->open[i] = t->open[--t->nr_open];
				break;
			}
	}
}

static void mfile_free(struct ptab *t, struct mfile *f)
{
	if (!f)
		return;
	mfile_close(t, f);
	free(f->via_m.path);
	free(f->path);
	for (size_t i = 0; i < MFILE_MEMO_NR; i++)
		free(f->memo[i]);
	free(f);
}

static void pmaps_free(struct pmaps *m)
{
	procmaps__free(&m->m);
	free(m);
}

void pmaps__put(struct pmaps *m)
{
	if (m && !--m->refs)
		pmaps_free(m);
}

static void aliases_clear(struct ptab *t)
{
	struct htab_entry *e;
	size_t pos = 0;

	while (t->aliases && (e = htab__next(t->aliases, &pos))) {
		free(e->value);
		htab__remove(t->aliases, e->key, e->klen);
	}
}

static void pproc_free(struct pproc *p)
{
	pmaps__put(p->maps);
	free(p->blocked);
	free(p);
}

void ptab__free(struct ptab *t)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!t)
		return;
	while (t->procs && (e = htab__next(t->procs, &pos)))
		pproc_free(e->value);
	pos = 0;
	while (t->files && (e = htab__next(t->files, &pos)))
		mfile_free(t, e->value);
	pos = 0;
	while (t->mntns && (e = htab__next(t->mntns, &pos))) {
		struct mntns *m = e->value;

		mountinfo__free(&m->mi);
		free(m);
	}
	if (t->self_mi_fd >= 0)
		close(t->self_mi_fd);
	pos = 0;
	while (t->pidfds && (e = htab__next(t->pidfds, &pos))) {
		struct alive_fd *a = e->value;

		close(a->fd);
		free(a);
	}
	htab__free(t->procs);
	htab__free(t->files);
	htab__free(t->mntns);
	htab__free(t->pidfds);
	htab__free(t->dead);
	aliases_clear(t);
	htab__free(t->aliases);
	if (t->epfd >= 0)
		close(t->epfd);
	if (t->host.fd >= 0)
		close(t->host.fd);
	free(t->open);
	free(t->vdso);
	free(t);
}

/* --- mount tables and roots ---------------------------------------------------- */

/* The agent ran out of descriptors or memory: a passing state, not the file's fault. */
static bool short_of_resources(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM;
}

/*
 * Whether the agent's own mount table changed since this was last asked (or
 * since self_mi_fd was opened): the kernel flags POLLPRI on a mountinfo file
 * once per change of its namespace's mounts. An error counts as a change.
 */
static bool self_mounts_changed(struct ptab *t)
{
	struct pollfd pf = { .fd = t->self_mi_fd, .events = POLLPRI };

	return poll(&pf, 1, 0) != 0;
}

/*
 * The mount table of <proc>/<rel>, one read per mount namespace per drain;
 * the agent's own namespace's only when poll() says it changed (the first
 * use in a drain asks). proc is the table's proc root, or the real /proc for
 * the agent's own.
 */
static const struct mountinfo *mounts_in(struct ptab *t, const char *proc, const char *rel)
{
	char path[PATH_MAX];
	struct htab_entry *e;
	struct mntns *m;
	struct stat st;
	uint64_t key[2];
	const void *k = key;
	size_t klen = sizeof(key);
	bool created;

	snprintf(path, sizeof(path), "%s/%s/ns/mnt", proc, rel);
	if (!stat(path, &st)) {
		key[0] = st.st_dev;
		key[1] = st.st_ino;
	} else {
		/* No namespace to key by (a fake tree): key by the path. */
		k = rel;
		klen = strlen(rel);
	}
	e = htab__upsert(t->mntns, k, klen, &created);
	if (!e)
		return NULL;
	if (created) {
		m = calloc(1, sizeof(*m));
		if (!m) {
			htab__remove(t->mntns, k, klen);
			return NULL;
		}
		e->value = m;
		m->gen = t->gen + 1;
		m->self = k == key && t->self_mi_fd >= 0 && t->self_mntns &&
			  (uint64_t)key[1] == t->self_mntns;
		if (m->self)
			self_mounts_changed(t); /* what the read below sees is not news */
	}
	m = e->value;
	/* Mounts change: read again once per drain (ours: once it changed). */
	if (!created && m->gen != t->gen && m->self && m->ok && !self_mounts_changed(t))
		m->gen = t->gen;
	if (created || m->gen != t->gen) {
		t->st.mount_reads++;
		mountinfo__free(&m->mi);
		/* Ours through our own file: the process asking for it may be gone. */
		if (m->self)
			snprintf(path, sizeof(path), "/proc/self/mountinfo");
		else
			snprintf(path, sizeof(path), "%s/%s/mountinfo", proc, rel);
		m->err = mountinfo__read(path, &m->mi);
		m->ok = !m->err;
		/* Out of descriptors or memory says nothing about the mounts:
		 * not kept for the drain, the next call reads again. */
		m->gen = short_of_resources(m->err) ? t->gen - 1 : t->gen;
	}
	t->mnt_err = m->ok ? 0 : m->err;
	return m->ok ? &m->mi : NULL;
}

static const struct mountinfo *mounts_of(struct ptab *t, const char *rel)
{
	return mounts_in(t, t->proc_root, rel);
}

/* The agent's own table: where mount ids other tables lack are looked up. */
static const struct mountinfo *host_mounts(struct ptab *t)
{
	return mounts_in(t, "/proc", "self");
}

const struct safe_root *ptab__host_root(struct ptab *t)
{
	t->host.mi = t->host.host_mi = host_mounts(t);
	return &t->host;
}

/*
 * The mount tables of /proc/<base> and the host's, in r (with no root
 * directory yet): every field set, whatever is returned. Without a table
 * every file would be refused as on an unknown mount: when the agent is
 * only short of descriptors or memory, that error, and nothing is refused.
 */
static int tables_of(struct ptab *t, const char *base, struct safe_root *r)
{
	*r = (struct safe_root){ .fd = -1, .shm_mnt_id = t->shm_mnt_id, .shm_known = t->shm_known };
	/* The host table first: both are cached, neither moves. */
	r->host_mi = host_mounts(t);
	if (!r->host_mi && short_of_resources(t->mnt_err))
		return t->mnt_err;
	r->mi = mounts_of(t, base);
	if (!r->mi && short_of_resources(t->mnt_err))
		return t->mnt_err;
	return 0;
}

/* The root of /proc/<base>: fd, the process's table, the host's (fd -1 on errors). */
static int root_open(struct ptab *t, const char *base, struct safe_root *r)
{
	char path[PATH_MAX];
	int err = tables_of(t, base, r);

	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/%s/root", t->proc_root, base);
	r->fd = safeopen__dir(path);
	return r->fd < 0 ? r->fd : 0;
}

int ptab__root_open(struct ptab *t, struct pproc *p, struct safe_root *root)
{
	return root_open(t, p->base, root);
}

void ptab__root_close(struct safe_root *root)
{
	if (root->fd >= 0)
		close(root->fd);
	root->fd = -1;
}

bool ptab__root_is_host(struct ptab *t, const struct safe_root *root)
{
	struct stat st;

	if (root->fd < 0 || t->host.fd < 0 || fstat(root->fd, &st) ||
	    st.st_dev != t->host_st.st_dev || st.st_ino != t->host_st.st_ino)
		return false;
	/*
	 * The same directory seen from another mount namespace is another view:
	 * only a root whose table is ours counts as the host's.
	 */
	return !t->self_mntns || root->mi == root->host_mi;
}

/*
 * Without opening anything that could block: the process's root directory
 * (/proc/PID/root, O_PATH; attributes the kernel has cached) is the host's,
 * and on the real /proc its mount namespace is ours.
 */
bool ptab__in_host_root(struct ptab *t, struct pproc *p)
{
	char path[PATH_MAX];
	struct statx sx;
	struct stat ns;
	bool same;
	int fd;

	if (t->host.fd < 0)
		return false;
	if (t->self_mntns) {
		snprintf(path, sizeof(path), "%s/%s/ns/mnt", t->proc_root, p->base);
		if (stat(path, &ns) || ns.st_ino != t->self_mntns)
			return false;
	}
	snprintf(path, sizeof(path), "%s/%s/root", t->proc_root, p->base);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	same = !statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &sx) &&
	       makedev(sx.stx_dev_major, sx.stx_dev_minor) == t->host_st.st_dev &&
	       sx.stx_ino == t->host_st.st_ino;
	close(fd);
	return same;
}

/* --- processes ----------------------------------------------------------------- */

static struct proc_key key_of(const struct proc_id *id)
{
	struct proc_key k;

	memset(&k, 0, sizeof(k));
	k.pid = id->pid;
	k.start_time = id->start_time;
	k.exec_id = id->exec_id;
	return k;
}

int ptab__starttime(struct ptab *t, uint32_t pid, uint64_t *ticks)
{
	return procfs__starttime(t->proc_root, pid, ticks);
}

int ptab__image(struct ptab *t, uint32_t pid, uint64_t *ticks, uint64_t *mm_sig)
{
	return procfs__image(t->proc_root, pid, ticks, mm_sig);
}

/*
 * The check itself: /proc/PID/stat is there and shows id's start time. *gone
 * (if given) says whether a no is for good: the process is not there, or
 * another took its pid - not a read that failed (descriptors, memory,
 * permissions).
 */
static bool stat_alive(struct ptab *t, const struct proc_id *id, bool *gone)
{
	uint64_t ticks;
	int err;

	t->st.alive_stat++;
	err = procfs__starttime(t->proc_root, id->pid, &ticks);
	if (gone)
		*gone = !err || err == -ENOENT || err == -ESRCH;
	if (err)
		return false;
	return !id->start_time || ticks == procfs__ns_to_ticks(id->start_time);
}

/* Exited ids older than DEAD_KEEP sweeps go (all of them if all). */
static void dead_forget(struct ptab *t, bool all)
{
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(t->dead, &pos)))
		if (all || (uint64_t)(uintptr_t)e->value + DEAD_KEEP < t->gen)
			htab__remove(t->dead, e->key, e->klen);
}

static void pidfd_drop(struct ptab *t, const struct alive_key *k)
{
	struct alive_fd *a = htab__remove(t->pidfds, k, sizeof(*k));

	if (a) {
		/* Out of the set before the close: a copy of the descriptor (a
		 * child between fork and exec) would keep it registered, and its
		 * event would name freed memory. */
		if (t->epfd >= 0)
			epoll_ctl(t->epfd, EPOLL_CTL_DEL, a->fd, NULL);
		close(a->fd);
		free(a);
	}
}

/*
 * Marks the pidfds the epoll set reports readable (each reported once:
 * EPOLLONESHOT). One epoll_wait that returns at once, whatever the number
 * of pidfds held.
 */
static void harvest(struct ptab *t, uint64_t now)
{
	struct epoll_event ev[64];
	int n;

	t->harvest_ns = now;
	t->st.alive_harvests++;
	do {
		n = epoll_wait(t->epfd, ev, (int)ARRAY_SIZE(ev), 0);
		for (int i = 0; i < n; i++)
			((struct alive_fd *)ev[i].data.ptr)->exited = true;
	} while (n == (int)ARRAY_SIZE(ev));
}

/*
 * Closes the pidfds of processes that exited (the epoll set's word, else
 * one poll() over all of them) or that nobody asked about for PIDFD_IDLE_NS.
 */
static void pidfd_sweep(struct ptab *t, uint64_t now)
{
	size_t n = htab__count(t->pidfds), i = 0, pos = 0;
	struct alive_key *keys;
	struct pollfd *pf;
	struct htab_entry *e;

	t->pidfd_sweep_ns = now;
	if (!n)
		return;
	if (t->epfd >= 0)
		harvest(t, now);
	pf = calloc(n, sizeof(*pf));
	keys = calloc(n, sizeof(*keys));
	while (pf && keys && i < n && (e = htab__next(t->pidfds, &pos))) {
		struct alive_fd *a = e->value;

		memcpy(&keys[i], e->key, sizeof(keys[i]));
		/* Idle and exited ones are dropped whatever poll says: fd -1 is skipped. */
		pf[i].fd = now - a->asked_ns > PIDFD_IDLE_NS || a->exited ? -1 : a->fd;
		pf[i].events = POLLIN;
		i++;
	}
	if (pf && keys && (t->epfd >= 0 || poll(pf, i, 0) >= 0))
		for (size_t j = 0; j < i; j++)
			if (pf[j].fd < 0 || pf[j].revents)
				pidfd_drop(t, &keys[j]);
	free(pf);
	free(keys);
}

/*
 * A pidfd for id, to be kept once a check after this shows the pid still
 * id's (pidfd_keep); -1 if none is to be had or id holds one already,
 * -ESRCH if the pid is not there (id has exited: it held the pid when
 * sampled).
 */
static int pidfd_open_for(struct ptab *t, const struct proc_id *id, const struct alive_key *k,
			  uint64_t now)
{
	int fd;

	if (!t->pidfds || !id->start_time || !id->pid || htab__find(t->pidfds, k, sizeof(*k)))
		return -1;
	if (htab__count(t->pidfds) >= t->max_pidfds)
		pidfd_sweep(t, now);
	if (htab__count(t->pidfds) >= t->max_pidfds)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, (pid_t)id->pid, 0);
	if (fd < 0 && errno == ESRCH)
		return -ESRCH;	 /* no such pid: exited and reaped */
	return fd < 0 ? -1 : fd; /* no pidfds (kernel < 5.3), or out of descriptors: /proc it is */
}

/*
 * Keeps fd (pidfd_open_for) as k's. Opened first, checked after: the pid
 * was id's before (a sample saw it) and the caller found it still id's
 * after the open, so it was id's when the fd was opened.
 */
static void pidfd_keep(struct ptab *t, const struct alive_key *k, int fd, uint64_t now)
{
	struct alive_fd *a;
	struct htab_entry *e;
	bool created;

	if (fd < 0)
		return;
	a = malloc(sizeof(*a));
	e = a ? htab__upsert(t->pidfds, k, sizeof(*k), &created) : NULL;
	if (!e || !created) {
		free(a);
		close(fd);
		return;
	}
	a->fd = fd;
	a->exited = false;
	a->asked_ns = now;
	if (t->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = a };

		/* Not in the set, not kept: its exit would go unseen. */
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			htab__remove(t->pidfds, k, sizeof(*k));
			free(a);
			close(fd);
			return;
		}
	}
	e->value = a;
}

/* Keeps a pidfd for id, alive a moment ago. */
static void pidfd_take(struct ptab *t, const struct proc_id *id, const struct alive_key *k,
		       uint64_t now)
{
	int fd = pidfd_open_for(t, id, k, now);

	if (fd < 0)
		return;
	if (stat_alive(t, id, NULL))
		pidfd_keep(t, k, fd, now);
	else
		close(fd);
}

/*
 * Whether id's process still runs. The answer is /proc/PID/stat's (there,
 * with id's start time); a process asked about once holds a pidfd, and
 * while that is not readable (the process has not exited) the answer is yes
 * without a look at /proc, which costs an open, a read and a close through
 * a path walk (~10 us) - what the sweeps of a live view spent their time
 * on. Readable is the epoll set's word, collected at most ALIVE_FRESH_NS
 * ago (without an epoll set, a poll() of the one pidfd). A readable pidfd - exited, zombie included
 * - is dropped and /proc answers, as for processes without one: a pidfd names one process, never
 * another that took its pid after it.
 */
/* An id found exited: not asked of /proc again. */
static void dead_note(struct ptab *t, const struct alive_key *k)
{
	struct htab_entry *e;

	if (htab__count(t->dead) >= DEAD_MAX)
		dead_forget(t, true);
	e = htab__upsert(t->dead, k, sizeof(*k), NULL);
	if (e)
		e->value = (void *)(uintptr_t)t->gen;
}

bool ptab__alive(struct ptab *t, const struct proc_id *id)
{
	struct alive_key k = { .pid = id->pid, .start_time = id->start_time };
	struct htab_entry *e;
	uint64_t now;
	bool alive, gone;

	if (!id->start_time || !id->pid)
		return stat_alive(t, id, NULL); /* the pid alone: it may be another's later */
	if (htab__find(t->dead, &k, sizeof(k))) {
		t->st.alive_dead++;
		return false;
	}
	if (!t->pidfds) {
		alive = stat_alive(t, id, &gone);
		if (!alive && gone)
			dead_note(t, &k);
		return alive;
	}
	now = now_ns();
	if (now - t->pidfd_sweep_ns > PIDFD_SWEEP_NS)
		pidfd_sweep(t, now);
	e = htab__find(t->pidfds, &k, sizeof(k));
	if (e) {
		struct alive_fd *a = e->value;
		struct pollfd pf = { .fd = a->fd, .events = POLLIN };
		bool running;

		if (t->epfd >= 0) {
			if (now - t->harvest_ns >= ALIVE_FRESH_NS)
				harvest(t, now);
			running = !a->exited;
		} else {
			running = poll(&pf, 1, 0) == 0;
		}
		if (running) {
			a->asked_ns = now;
			t->st.alive_pidfd++;
			return true;
		}
		pidfd_drop(t, &k);
		alive = stat_alive(t, id, &gone); /* a zombie is still there */
		if (!alive && gone)
			dead_note(t, &k);
		return alive;
	}
	alive = stat_alive(t, id, &gone);
	if (alive)
		pidfd_take(t, id, &k, now);
	else if (gone)
		dead_note(t, &k);
	return alive;
}

int ptab__cgroup(struct ptab *t, const struct proc_id *id, struct cgroup_info *ci)
{
	int err;

	if (!ptab__alive(t, id))
		return -ESRCH;
	err = cgroup__read(t->proc_root, id->pid, ci);
	/* Read from the process asked for, not one that took its pid meanwhile. */
	if (!err && !ptab__alive(t, id))
		err = -ESRCH;
	return err;
}

int ptab__cgroup_v2(struct ptab *t, const struct proc_id *id, char *out, size_t size)
{
	int err;

	if (!ptab__alive(t, id))
		return -ESRCH;
	err = cgroup__read_v2(t->proc_root, id->pid, out, size);
	if (!err && !ptab__alive(t, id))
		err = -ESRCH;
	return err;
}

/* The image /proc shows now is id's: same start time, same address space. */
static int image_check(struct ptab *t, const struct proc_id *id, uint64_t *sig)
{
	struct alive_key k = { .pid = id->pid, .start_time = id->start_time };
	uint64_t ticks;
	int err = procfs__image(t->proc_root, id->pid, &ticks, sig);

	if (err || (id->start_time && ticks != procfs__ns_to_ticks(id->start_time))) {
		/* Exited (or its pid is another's): the sweeps need not look again. */
		if (id->start_time && id->pid && (!err || err == -ENOENT || err == -ESRCH))
			dead_note(t, &k);
		return -ESRCH;
	}
	if (id->mm_sig && *sig && *sig != id->mm_sig)
		return -ESRCH;
	return 0;
}

/* Forgets p's blocked mappings: known (none) or to be found at the next memory read. */
static void blocked_reset(struct pproc *p, bool known)
{
	free(p->blocked);
	p->blocked = NULL;
	p->nr_blocked = 0;
	p->blocked_known = known;
	p->blocked_err = 0;
}

/* The file-backed mappings on mounts that may block (any permissions). */
static int find_blocked(struct ptab *t, struct pproc *p, const struct procmaps *all)
{
	const struct mountinfo *mi = mounts_of(t, p->base);
	size_t n = 0;

	blocked_reset(p, true);
	for (size_t i = 0; i < all->nr; i++) {
		const struct procmap *m = &all->maps[i];

		/* Without the process's table every file mapping is suspect. */
		if (m->inode && (!mi || mountinfo__dev_may_block(mi, m->dev_major, m->dev_minor)))
			n++;
	}
	if (!n)
		return 0;
	p->blocked = calloc(n, sizeof(*p->blocked));
	if (!p->blocked) {
		p->blocked_known = false;
		return -ENOMEM;
	}
	for (size_t i = 0; i < all->nr; i++) {
		const struct procmap *m = &all->maps[i];

		if (m->inode && (!mi || mountinfo__dev_may_block(mi, m->dev_major, m->dev_minor))) {
			p->blocked[p->nr_blocked].start = m->start;
			p->blocked[p->nr_blocked].end = m->end;
			p->nr_blocked++;
		}
	}
	return 0;
}

/* Makes maps (taken) p's latest snapshot, in pm; readers of the old one keep it. */
static void install_maps(struct pproc *p, struct pmaps *pm, struct procmaps *maps)
{
	pm->m = *maps;
	pm->refs = 1;
	pm->gen = ++p->maps_gen;
	pmaps__put(p->maps);
	p->maps = pm;
	p->maps_ns = now_ns();
}

/* Reads p's mappings into a new snapshot, the image checked before and after. */
static int read_maps(struct ptab *t, struct pproc *p)
{
	struct alive_key k = { .pid = p->id.pid, .start_time = p->id.start_time };
	struct procmaps maps = { 0 };
	uint64_t sig0 = 0, sig1 = 0;
	bool known = p->id.mm_sig != 0, queried;
	struct pmaps *pm;
	uint32_t tid;
	int err, pfd;

	/*
	 * With the image's signature known (a BPF notice), the check after the
	 * read is enough: it finds that image (start time, signature) or the
	 * read is thrown away. Without it, the check before learns the
	 * signature, so that one after can tell an exec during the read.
	 */
	if (known) {
		sig0 = p->id.mm_sig;
	} else {
		err = image_check(t, &p->id, &sig0);
		if (err)
			return err;
	}
	/* The liveness pidfd comes along: the check after the read vouches for it. */
	pfd = pidfd_open_for(t, &p->id, &k, now_ns());
	if (pfd == -ESRCH) {
		/* Gone (most short processes are by their notice): nothing to read. */
		dead_note(t, &k);
		return -ESRCH;
	}
	t->st.maps_reads++;
	err = -EOPNOTSUPP;
	if (!t->maps_text) {
		err = procmaps__query_pid(t->proc_root, p->id.pid, PROCMAPS_Q_EXEC, &maps, &tid);
		if (err == -EOPNOTSUPP)
			t->maps_text = true; /* a kernel before 6.11 (or a fake tree) */
	}
	queried = !err;
	t->st.maps_queried += queried;
	if (err == -EOPNOTSUPP || err == -ENAMETOOLONG)
		err = procmaps__read_pid(t->proc_root, p->id.pid, &maps, &tid);
	if (err) {
		if (pfd >= 0)
			close(pfd);
		/* No such pid: exited (the sweeps need not look again). */
		if (err == -ENOENT && p->id.start_time && p->id.pid)
			dead_note(t, &k);
		return err == -ENOENT ? -ESRCH : err;
	}
	/* An exec (or exit) while we read: these mappings may be the next image's.
	 * (A signature of 0: the main thread has exited, its stat shows no mm.) */
	if (image_check(t, &p->id, &sig1) || (!known && sig1 != sig0)) {
		if (pfd >= 0)
			close(pfd);
		procmaps__free(&maps);
		return -ESRCH;
	}
	pidfd_keep(t, &k, pfd, now_ns());
	/*
	 * No mappings at all: the address space is gone (a zombie, or a process
	 * in its exit), while /proc still shows the pid with its start time. An
	 * empty snapshot would replace the one its samples need.
	 */
	if (!maps.nr) {
		procmaps__free(&maps);
		return -ESRCH;
	}
	if (!p->id.mm_sig)
		p->id.mm_sig = sig0; /* later reads must find this same image */
	p->tid = tid;
	if (tid)
		snprintf(p->base, sizeof(p->base), "%u/task/%u", p->id.pid, tid);
	else
		snprintf(p->base, sizeof(p->base), "%u", p->id.pid);
	if (queried) {
		/* Executable mappings only: the blocked ones at the first memory read. */
		blocked_reset(p, false);
		err = 0;
	} else {
		err = find_blocked(t, p, &maps);
		if (!err)
			err = procmaps__keep(&maps, PROCMAP_X);
	}
	pm = err ? NULL : calloc(1, sizeof(*pm));
	if (!pm) {
		procmaps__free(&maps);
		return err ? err : -ENOMEM;
	}
	install_maps(p, pm, &maps);
	return 0;
}

/* Another image of the same process is held: without mm_sig, id's cannot be told apart. */
static bool other_image_held(struct ptab *t, const struct proc_id *id)
{
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(t->procs, &pos))) {
		const struct pproc *p = e->value;

		if (p->id.pid == id->pid && p->id.start_time == id->start_time &&
		    p->id.exec_id != id->exec_id)
			return true;
	}
	return false;
}

int ptab__get(struct ptab *t, const struct proc_id *id, struct pproc **out)
{
	struct proc_key k = key_of(id);
	struct htab_entry *e = htab__find(t->procs, &k, sizeof(k));
	struct pproc *p;
	bool created;
	int err;

	*out = NULL;
	if (e) {
		p = e->value;
		if (p->mapped)
			return -ESRCH; /* gone before it could be read: nothing else to learn */
		p->refs++;
		*out = p;
		return 0;
	}
	if (!id->mm_sig && id->exec_id != PROC_EXEC_ANY && other_image_held(t, id)) {
		t->st.images_lost++;
		return -ESRCH;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->id = *id;
	err = read_maps(t, p);
	if (err) {
		if (err == -ESRCH)
			t->st.images_lost++;
		pproc_free(p);
		return err;
	}
	e = htab__upsert(t->procs, &k, sizeof(k), &created);
	if (!e) {
		pproc_free(p);
		return -ENOMEM;
	}
	e->value = p;
	p->refs = 1;
	*out = p;
	return 0;
}

/* --- processes known from a notice's mappings ---------------------------------- */

static struct file_key key_of_map(const struct procmap *m)
{
	return (struct file_key){ .major = m->dev_major, .minor = m->dev_minor, .inode = m->inode };
}

/* The file key /proc/PID/maps would show for a mapping a BPF program saw. */
static struct file_key maps_key(struct ptab *t, const struct procmap *km)
{
	struct file_key k = key_of_map(km);
	struct htab_entry *e = htab__find(t->aliases, &k, sizeof(k));

	return e ? *(const struct file_key *)e->value : k;
}

void ptab__learn_mapped(struct ptab *t, struct pproc *p, const struct procmaps *km)
{
	const struct procmaps *m = p->maps ? &p->maps->m : NULL;

	for (size_t i = 0; m && km && i < km->nr; i++) {
		const struct procmap *a = &km->maps[i], *b;
		struct file_key ka, kb, *v;
		struct htab_entry *e;
		bool created;

		/* The same mapping as far as can be told, and the same inode
		 * number (overlayfs passes the layer's through, without xino): a
		 * file mapped over the range between the sample and the read
		 * must not become another file's alias. */
		if (!a->inode || !(b = procmaps__find(m, a->start)) || b->start != a->start ||
		    b->end != a->end || b->offset != a->offset || b->inode != a->inode)
			continue;
		ka = key_of_map(a);
		kb = key_of_map(b);
		if (!memcmp(&ka, &kb, sizeof(ka)))
			continue;
		if (htab__count(t->aliases) >= ALIASES_MAX)
			aliases_clear(t);
		e = htab__upsert(t->aliases, &ka, sizeof(ka), &created);
		if (!e)
			return;
		if (created) {
			if (!(v = malloc(sizeof(*v)))) {
				htab__remove(t->aliases, &ka, sizeof(ka));
				return;
			}
			e->value = v;
		}
		*(struct file_key *)e->value = kb;
	}
}

/* Adds km's mappings the table can name to maps (sorted, no start twice). */
static void add_mapped(struct ptab *t, const struct procmaps *km, struct procmaps *maps)
{
	for (size_t i = 0; i < km->nr; i++) {
		const struct procmap *a = &km->maps[i];
		struct procmap *b = &maps->maps[maps->nr];
		const struct mfile *f;
		struct htab_entry *e;
		struct file_key fk;

		if (a->end <= a->start || procmaps__find(maps, a->start))
			continue; /* empty, or listed already */
		*b = *a;
		b->path = NULL;
		if (a->path && !a->inode) {
			/* The vDSO: named from the agent's own copy, nothing opened. */
			if (strcmp(a->path, "[vdso]"))
				continue;
			b->path = a->path;
		} else if (a->inode) {
			/* Only a file the table has: it cannot be opened through a
			 * process that is gone, and its path is the one to show. */
			fk = maps_key(t, a);
			e = htab__find(t->files, &fk, sizeof(fk));
			f = e ? e->value : NULL;
			if (!f || f->err || !f->path)
				continue;
			b->path = f->path;
			b->dev_major = fk.major;
			b->dev_minor = fk.minor;
			b->inode = fk.inode;
		} else {
			continue; /* anonymous code: only a live process's perf map names it */
		}
		b->perms = PROCMAP_R | PROCMAP_X | PROCMAP_P;
		b->deleted = false;
		maps->nr++;
		/* Kept in address order, as the kernel lists them. */
		for (size_t j = maps->nr - 1;
		     j > 0 && maps->maps[j - 1].start > maps->maps[j].start; j--) {
			struct procmap tmp = maps->maps[j];

			maps->maps[j] = maps->maps[j - 1];
			maps->maps[j - 1] = tmp;
		}
	}
}

int ptab__get_mapped(struct ptab *t, const struct proc_id *id, const struct procmaps *km,
		     struct pproc **out)
{
	struct proc_key k = key_of(id);
	struct htab_entry *e = htab__find(t->procs, &k, sizeof(k));
	struct pproc *p = e ? e->value : NULL;
	const struct procmaps *old = p && p->maps ? &p->maps->m : NULL;
	struct procmaps maps = { 0 };
	struct pmaps *pm;
	bool created;

	*out = NULL;
	if (p && !p->mapped)
		return -EEXIST; /* read through /proc: it has them all */
	maps.maps = calloc((old ? old->nr : 0) + km->nr + 1, sizeof(*maps.maps));
	if (!maps.maps)
		return -ENOMEM;
	/*
	 * An entry made before keeps what it had (a snapshot is never changed:
	 * the new one has both). The paths are borrowed (the old snapshot's,
	 * the files') until the list is made one block of its own below.
	 */
	for (size_t i = 0; old && i < old->nr; i++)
		maps.maps[maps.nr++] = old->maps[i];
	add_mapped(t, km, &maps);
	if (p && maps.nr == old->nr) {
		procmaps__free(&maps); /* nothing new it can name */
		p->refs++;
		*out = p;
		return 0;
	}
	if (!maps.nr) {
		procmaps__free(&maps);
		return -ESRCH;
	}
	if (procmaps__keep(&maps, 0)) {
		procmaps__free(&maps);
		return -ENOMEM;
	}
	pm = calloc(1, sizeof(*pm));
	if (!p) {
		p = pm ? calloc(1, sizeof(*p)) : NULL;
		e = p ? htab__upsert(t->procs, &k, sizeof(k), &created) : NULL;
		if (!e) {
			procmaps__free(&maps);
			free(pm);
			free(p);
			return -ENOMEM;
		}
		p->id = *id;
		p->mapped = true;
		p->blocked_known = true; /* no memory is read: nothing to avoid */
		snprintf(p->base, sizeof(p->base), "%u", id->pid);
		e->value = p;
		t->st.images_mapped++;
	} else if (!pm) {
		procmaps__free(&maps);
		return -ENOMEM;
	}
	install_maps(p, pm, &maps);
	p->refs++;
	*out = p;
	return 0;
}

bool pproc__mapped(const struct pproc *p)
{
	return p->mapped;
}

void ptab__put(struct ptab *t, struct pproc *p)
{
	struct proc_key k;

	if (!p || --p->refs)
		return;
	k = key_of(&p->id);
	htab__remove(t->procs, &k, sizeof(k));
	pproc_free(p);
}

const struct proc_id *pproc__id(const struct pproc *p)
{
	return &p->id;
}

struct pmaps *ptab__maps(struct ptab *t, struct pproc *p)
{
	(void)t;
	p->maps->refs++;
	return p->maps;
}

int ptab__check_image(struct ptab *t, struct pproc *p)
{
	uint64_t sig;

	return image_check(t, &p->id, &sig);
}

int ptab__refresh(struct ptab *t, struct pproc *p)
{
	if (now_ns() - p->maps_ns < REFRESH_SHARE_NS)
		return 0;
	if (!ptab__alive(t, &p->id))
		return -ESRCH;
	return read_maps(t, p);
}

/* Fields of /proc/PID/status (cached per entry). 0 or -errno. */
static int pproc__status(struct ptab *t, struct pproc *p, struct proc_status *st)
{
	int err;

	if (!p->have_status) {
		err = procfs__status(t->proc_root, p->id.pid, &p->status);
		if (err)
			return err;
		p->have_status = true;
	}
	*st = p->status;
	return 0;
}

int ptab__cred(struct ptab *t, struct pproc *p, struct safe_cred *c)
{
	int err = procfs__cred(t->proc_root, p->id.pid, c);

	if (err)
		return err == -ENOENT ? -ESRCH : err;
	return ptab__check_image(t, p);
}

int ptab__check_x86_64(struct ptab *t, uint32_t pid)
{
	unsigned char id[20];
	struct safe_file f;
	struct safe_root r;
	char rel[24], path[PATH_MAX];
	ssize_t n;
	int opath, err;

	snprintf(rel, sizeof(rel), "%u", pid);
	snprintf(path, sizeof(path), "%s/%u/exe", t->proc_root, pid);
	/* O_PATH on the magic link: procfs's own; the file system is not asked yet. */
	opath = open(path, O_PATH | O_CLOEXEC);
	if (opath < 0)
		return -errno;
	err = tables_of(t, rel, &r);
	if (!err)
		err = safeopen__reopen(opath, &r, &f);
	close(opath);
	if (err)
		return err;
	n = pread(f.fd, id, sizeof(id), 0);
	close(f.fd);
	if (n != (ssize_t)sizeof(id) || memcmp(id, "\177ELF", 4))
		return -ENOEXEC;
	if (id[4] != 2 /* ELFCLASS64 */ || id[5] != 1 /* LSB */ || id[18] != 62 /* EM_X86_64 */)
		return -ENOTSUP;
	return 0;
}

/* --- perf maps ------------------------------------------------------------------ */

/* Whether a file was last written before the process started (1 s of slack). */
static bool stale_for(const struct pproc *p, const struct stat *st)
{
	uint64_t start_real, mtime;

	if (!p->id.start_time)
		return false;
	/* start_time is CLOCK_BOOTTIME; file times are CLOCK_REALTIME. */
	start_real = realtime_ns() - boottime_ns() + p->id.start_time;
	mtime = (uint64_t)st->st_mtim.tv_sec * NS_PER_SEC + (uint64_t)st->st_mtim.tv_nsec;
	return mtime + NS_PER_SEC < start_real;
}

const char *pproc__perfmap_path(const struct pproc *p)
{
	return p->pmap_path;
}

int ptab__open_perfmap(struct ptab *t, struct pproc *p, struct safe_file *f)
{
	struct proc_status ps;
	struct safe_root root;
	uint64_t sig;
	int err;

	f->fd = -1;
	if (p->pmap_err)
		return p->pmap_err;
	/* Still this image: after an exec the same path names the next program's map. */
	if (image_check(t, &p->id, &sig))
		return -ESRCH;
	err = pproc__status(t, p, &ps);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	/* The process writes it in its own /tmp, named with its own pid. */
	snprintf(p->pmap_path, sizeof(p->pmap_path), "/tmp/perf-%u.map", ps.ns_pid);
	err = ptab__root_open(t, p, &root);
	if (!err)
		err = safeopen__in_root(&root, p->pmap_path, SAFEOPEN_NO_SYMLINKS, f);
	ptab__root_close(&root);
	if (err == -ENOENT || err == -ENOTDIR || err == -EBADF || err == -EACCES)
		return err == -ENOTDIR ? -ENOENT : err;
	/*
	 * Left behind by an earlier process with this pid (JITs do not remove
	 * their maps): not this process's until it writes it again.
	 */
	if (!err && stale_for(p, &f->st)) {
		close(f->fd);
		f->fd = -1;
		return -ENOENT;
	}
	if (!err && f->st.st_uid != ps.euid && f->st.st_uid != 0)
		err = -EPERM;
	if (!err && (uint64_t)f->st.st_size > PTAB_PERFMAP_MAX)
		err = -EFBIG;
	if (!err)
		return 0;
	if (err == -EPERM)
		warnf(t,
		      "ignoring JIT map %s of process %u: owned by uid %u, the process runs as uid %u",
		      p->pmap_path, p->id.pid, (unsigned)f->st.st_uid, ps.euid);
	else
		warnf(t, "ignoring JIT map %s of process %u: %s", p->pmap_path, p->id.pid,
		      ptab__reason(err, f->fstype));
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	p->pmap_err = err;
	return err;
}

/* --- memory ---------------------------------------------------------------------- */

/*
 * The blocked mappings of a snapshot that was queried (executable mappings
 * only): every file-backed mapping, without names; 0 or -errno (no memory
 * is read without them).
 */
static int load_blocked(struct ptab *t, struct pproc *p)
{
	const struct mountinfo *mi = mounts_of(t, p->base);
	struct procmaps all;
	char path[PATH_MAX];
	int err;

	/* No mount of its table may block: no mapping can be on one (what
	 * find_blocked() would find, without the maps read - ~80 queries for a
	 * Python, each of its probes while it starts up). */
	if (mi && !mi->any_block) {
		blocked_reset(p, true);
		t->st.blocked_skipped++;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s/maps", t->proc_root, p->base);
	t->st.maps_reads++;
	err = procmaps__query(path, PROCMAPS_Q_FILES, &all);
	if (err == -EOPNOTSUPP)
		err = procmaps__read(path, &all);
	else
		t->st.maps_queried++;
	if (err)
		return err;
	err = find_blocked(t, p, &all);
	procmaps__free(&all);
	return err;
}

ssize_t ptab__read_mem(struct ptab *t, struct pproc *p, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (len > PTAB_MEM_MAX)
		return -E2BIG;
	if (!len)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	if (!p->blocked_known && !p->blocked_err) {
		int err = load_blocked(t, p);

		/* A gone process, too many mappings, no access: not retried per read. */
		if (err && err != -ENOMEM)
			p->blocked_err = err == -ENOENT || err == -ESRCH ? -ESRCH : -EREMOTE;
		if (err)
			return err == -ENOENT || err == -ESRCH ? -ESRCH : -EREMOTE;
	}
	if (!p->blocked_known)
		return p->blocked_err;
	/* A page of a file on a mount that may block would block this read. */
	for (size_t i = 0; i < p->nr_blocked; i++)
		if (addr < p->blocked[i].end && addr + len > p->blocked[i].start)
			return -EREMOTE;
	n = process_vm_readv((pid_t)p->id.pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return n;
}

ssize_t ptab__read_memv(struct ptab *t, struct pproc *p, const uint64_t *addrs, size_t n,
			size_t len, void *bufs, bool *ok)
{
	return ptab__read_memv_from(t, p, addrs, n, len, bufs, ok, 0, NULL);
}

ssize_t ptab__read_memv_from(struct ptab *t, struct pproc *p, const uint64_t *addrs, size_t n,
			     size_t len, void *bufs, bool *ok, size_t first, size_t *stop)
{
	enum { PIECES = 1024 };
	struct iovec local[PIECES], remote[PIECES];
	size_t i = 0, got = 0, fails = 0;
	ssize_t r;

	if (stop)
		*stop = 0;
	if (!len || len > 4096)
		return -E2BIG;
	if (first >= n)
		first = 0;
	for (size_t j = 0; j < n; j++)
		ok[j] = false;
		/* i counts the pieces from first: piece (first + i) % n (AT(i)) */
#define AT(k) ((first + (k)) % n)
	/* the checks (blocked mounts): a piece that fails them alone, by ptab__read_mem */
	/* each failed piece costs a call (of up to PIECES pieces): bounded, the rest not read */
	while (i < n && fails < PTAB_MEMV_FAILS) {
		size_t m = 0;

		/* a call's pieces do not wrap (its buffers in the caller's order) */
		while (i + m < n && m < PIECES && (!m || AT(i + m) == AT(i) + m)) {
			uint64_t a = addrs[AT(i + m)];
			bool blocked = a + len < a;

			for (size_t b = 0; !blocked && p->blocked_known && b < p->nr_blocked; b++)
				blocked = a < p->blocked[b].end && a + len > p->blocked[b].start;
			if (blocked || !p->blocked_known)
				break;
			local[m] = (struct iovec){ .iov_base = (char *)bufs + AT(i + m) * len,
						   .iov_len = len };
			remote[m] =
				(struct iovec){ .iov_base = (void *)(uintptr_t)a, .iov_len = len };
			m++;
		}
		if (!m) { /* the first piece alone: ptab__read_mem checks (and loads the list) */
			r = ptab__read_mem(t, p, addrs[AT(i)], (char *)bufs + AT(i) * len, len);
			if (r == -ESRCH)
				goto gone;
			if (r == (ssize_t)len) {
				ok[AT(i)] = true;
				got++;
			} else {
				fails++;
			}
			i++;
			continue;
		}
		r = process_vm_readv((pid_t)p->id.pid, local, (unsigned long)m, remote,
				     (unsigned long)m, 0);
		if (r < 0 && errno == ESRCH)
			goto gone;
		if (r < 0)
			r = 0;
		/* whole pieces read, then the one that stopped it (skipped) */
		for (size_t k = 0; k < (size_t)r / len; k++)
			ok[AT(i + k)] = true;
		got += (size_t)r / len;
		i += (size_t)r / len;
		if ((size_t)r / len < m) {
			i++;
			fails++;
		}
	}
#undef AT
	if (stop)
		*stop = i;
	return (ssize_t)got;
gone:
	if (stop)
		*stop = i;
	return got ? (ssize_t)got : -ESRCH;
}

/* --- mapped files ----------------------------------------------------------------- */

uint64_t mfile__serial(const struct mfile *f)
{
	return f->serial;
}

const struct stat *mfile__stat(const struct mfile *f)
{
	return &f->st;
}

const char *mfile__path(const struct mfile *f)
{
	return f->path ? f->path : "";
}

static int mfile_open(struct ptab *t, struct pproc *p, const struct procmap *m, struct mfile *f);

int mfile__kernel_path(struct mfile *f, char *buf, size_t size)
{
	int fd = mfile__fd(f);

	if (fd < 0)
		return fd;
	if ((size_t)snprintf(buf, size, "/proc/self/fd/%d", fd) >= size)
		return -ENOSPC;
	return 0;
}

int mfile__fd(struct mfile *f)
{
	int err;

	if (f->fd >= 0)
		return f->fd;
	if (!f->via)
		return -EBADF;
	err = mfile_open(f->t, f->via, &f->via_m, f);
	return err ? err : f->fd;
}

Elf *mfile__elf(struct mfile *f)
{
	int fd;

	if (!f->elf) {
		fd = mfile__fd(f);
		if (fd < 0) {
			errno = -fd;
			return NULL;
		}
		f->elf = elffile__begin(fd);
	}
	return f->elf;
}

const void *mfile__memo(const struct mfile *f, enum mfile_memo slot)
{
	return f->memo[slot];
}

void mfile__set_memo(struct mfile *f, enum mfile_memo slot, void *data)
{
	free(f->memo[slot]);
	f->memo[slot] = data;
}

size_t mfile__build_id(struct mfile *f, const uint8_t **id)
{
	Elf *elf;

	if (!f->have_bid && (elf = mfile__elf(f))) {
		f->bid_len = elffile__build_id(elf, f->bid);
		f->have_bid = true;
	}
	*id = f->bid;
	return f->have_bid ? f->bid_len : 0;
}

/* Closes the least recently used files nobody holds, down to max_open - 1. */
static void make_room(struct ptab *t)
{
	while (t->nr_open >= t->max_open) {
		struct mfile *victim = NULL;

		for (size_t i = 0; i < t->nr_open; i++)
			if (!t->open[i]->refs && (!victim || t->open[i]->used_ns < victim->used_ns))
				victim = t->open[i];
		if (!victim)
			return; /* all held: go over the cap rather than fail */
		mfile_close(t, victim);
	}
}

static int track_open(struct ptab *t, struct mfile *f)
{
	if (array_grow((void **)&t->open, &t->cap_open, t->nr_open + 1, sizeof(*t->open)))
		return -ENOMEM;
	t->open[t->nr_open++] = f;
	return 0;
}

/*
 * Opens the file behind mapping m of p; -errno if it cannot be trusted. The
 * file must be the one the maps line names.
 */
static int open_mapped(struct ptab *t, struct pproc *p, const struct procmap *m,
		       struct safe_file *sf)
{
	char path[PATH_MAX];
	struct safe_root r;
	bool dev_ok, ino_ok;
	int opath, err;

	snprintf(path, sizeof(path), "%s/%s/map_files/%" PRIx64 "-%" PRIx64, t->proc_root, p->base,
		 m->start, m->end);
	/* O_PATH: the magic link is procfs's own; no file system open runs yet. */
	opath = open(path, O_PATH | O_CLOEXEC);
	err = root_open(t, p->base, &r);
	if (short_of_resources(err)) {
		/* No tables to check the file against: not opened, not refused. */
		if (opath >= 0)
			close(opath);
		return err;
	}
	if (opath >= 0) {
		err = safeopen__reopen(opath, &r, sf);
		close(opath);
	} else if (m->deleted || !procmap__is_file(m)) {
		/* No map_files (no CAP_SYS_ADMIN, or an old kernel) and no path to use. */
		err = -ENOENT;
	} else if (!err) {
		err = safeopen__in_root(&r, m->path, 0, sf);
	}
	ptab__root_close(&r);
	if (err)
		return err;
	/*
	 * overlayfs reports its own device (and, with xino, its own inode
	 * numbers) for a file whose maps line shows the layer's: through
	 * map_files (the very file) one of the two matching is enough.
	 */
	dev_ok = major(sf->st.st_dev) == m->dev_major && minor(sf->st.st_dev) == m->dev_minor;
	ino_ok = sf->st.st_ino == m->inode;
	if (!(dev_ok && ino_ok) && (opath < 0 || (!dev_ok && !ino_ok))) {
		close(sf->fd);
		sf->fd = -1;
		return -ESTALE;
	}
	return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Whether cached f is no longer what (dev, inode) names: an inode number reused. */
static bool changed(struct ptab *t, struct pproc *p, const struct procmap *m, const struct mfile *f)
{
	char path[PATH_MAX];
	struct statx sx;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/map_files/%" PRIx64 "-%" PRIx64, t->proc_root, p->base,
		 m->start, m->end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return false; /* cannot tell: keep it */
	/* DONT_SYNC: cached attributes, no file system is asked. */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_SIZE | STATX_MTIME | STATX_CTIME, &sx)) {
		close(fd);
		return false;
	}
	close(fd);
	memset(&st, 0, sizeof(st));
	st.st_size = (off_t)sx.stx_size;
	st.st_mtim.tv_sec = sx.stx_mtime.tv_sec;
	st.st_mtim.tv_nsec = sx.stx_mtime.tv_nsec;
	st.st_ctim.tv_sec = sx.stx_ctime.tv_sec;
	st.st_ctim.tv_nsec = sx.stx_ctime.tv_nsec;
	return !same_file(&st, &f->st);
}

/* (Re)opens f through p's mapping m; 0 or -errno (a refusal is remembered). */
static int mfile_open(struct ptab *t, struct pproc *p, const struct procmap *m, struct mfile *f)
{
	struct safe_file sf;
	bool first = !f->serial;
	int err;

	make_room(t);
	err = open_mapped(t, p, m, &sf);
	if (err == -EMFILE || err == -ENFILE) {
		/* Out of descriptors: give back every file nobody holds, once. */
		for (size_t i = t->nr_open; i-- > 0;)
			if (!t->open[i]->refs)
				mfile_close(t, t->open[i]);
		err = open_mapped(t, p, m, &sf);
	}
	if (ptab__refusal(err)) {
		f->err = err;
		warnf(t, "not reading %s mapped by process %u: %s", m->path ? m->path : "?",
		      p->id.pid, ptab__reason(err, sf.fstype));
		return err;
	}
	if (err)
		return err;
	/* A re-open must find the file it had: else the caller starts a new one. */
	if (!first && !same_file(&sf.st, &f->st)) {
		close(sf.fd);
		return -ESTALE;
	}
	if (track_open(t, f)) {
		close(sf.fd);
		return -ENOMEM;
	}
	f->fd = sf.fd;
	f->st = sf.st;
	t->st.files_opened++;
	if (first)
		f->serial = ++t->serial;
	return 0;
}

static struct mfile *mfile_new(struct ptab *t, const struct file_key *k, const struct procmap *m)
{
	struct mfile *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->t = t;
	f->key = *k;
	f->fd = -1;
	f->checked_gen = t->gen;
	f->path = m->path ? strdup(m->path) : NULL;
	return f;
}

/* Replaces f in the table by nothing: its readers keep it until they put it. */
static void mfile_orphan(struct ptab *t, struct mfile *f)
{
	htab__remove(t->files, &f->key, sizeof(f->key));
	t->st.changed++;
	if (f->refs)
		f->orphan = true;
	else
		mfile_free(t, f);
}

/* Remembers p and m as the way to open f when it is read; 0 or -ENOMEM. */
static int hold_via(struct mfile *f, struct pproc *p, const struct procmap *m)
{
	char *path = NULL;

	if (f->refs)
		return 0; /* the first holder's way is as good as any */
	if (m->path && !(path = strdup(m->path)))
		return -ENOMEM;
	free(f->via_m.path);
	f->via_m = *m;
	f->via_m.path = path;
	f->via = p;
	p->refs++;
	return 0;
}

int ptab__file(struct ptab *t, struct pproc *p, const struct procmap *m, struct mfile **out)
{
	struct file_key k = { .major = m->dev_major, .minor = m->dev_minor, .inode = m->inode };
	struct htab_entry *e;
	struct mfile *f;
	bool created;
	int err;

	*out = NULL;
	if (!m->inode)
		return -ENOENT;
	if (p->mapped) {
		/*
		 * A process known from its notice alone is gone: what it mapped
		 * is the file the table has under that device and inode, as far
		 * as anything can tell now (the check below needs the process).
		 * Not marked checked: files only such processes use are
		 * forgotten as any unused file is.
		 */
		e = htab__find(t->files, &k, sizeof(k));
		f = e ? e->value : NULL;
		if (!f)
			return -ENOENT;
		if (f->err)
			return f->err;
		goto hold;
	}
	e = htab__upsert(t->files, &k, sizeof(k), &created);
	if (!e)
		return -ENOMEM;
	if (!created) {
		f = e->value;
		if (f->err) {
			f->checked_gen = t->gen; /* still in use: keep remembering it */
			return f->err;		 /* refused: warned once, not opened again */
		}
		/* Once per drain: is it still the file we read? (statx, nothing opened) */
		if (f->checked_gen != t->gen) {
			f->checked_gen = t->gen;
			if (changed(t, p, m, f)) {
				mfile_orphan(t, f);
				return ptab__file(t, p, m, out);
			}
		}
		/* Opened again only when a reader reads it (mfile__fd, mfile__elf). */
	} else {
		f = mfile_new(t, &k, m);
		if (!f) {
			htab__remove(t->files, &k, sizeof(k));
			return -ENOMEM;
		}
		e->value = f;
		err = mfile_open(t, p, m, f);
		if (err && !f->err) {
			/* Not readable now (gone, no access): nothing to remember. */
			htab__remove(t->files, &k, sizeof(k));
			mfile_free(t, f);
			return err;
		}
		if (err)
			return err;
	}
hold:
	if (hold_via(f, p, m))
		return -ENOMEM;
	f->refs++;
	f->used_ns = now_ns();
	*out = f;
	return 0;
}

void mfile__put(struct ptab *t, struct mfile *f)
{
	struct pproc *via;

	if (!f || !f->refs || --f->refs)
		return;
	via = f->via;
	f->via = NULL;
	if (f->orphan) {
		mfile_free(t, f);
	} else {
		f->used_ns = now_ns();
		/*
		 * The libelf handle holds every section a reader loaded (symbol
		 * tables, .eh_frame: megabytes for a large binary): end it now,
		 * keep only the descriptor for the next reader.
		 */
		if (f->elf) {
			elffile__end(f->elf, NULL);
			f->elf = NULL;
		}
		if (t->nr_open > t->max_open)
			mfile_close(t, f);
	}
	ptab__put(t, via);
}

/* --- upkeep ---------------------------------------------------------------------------- */

void ptab__sweep(struct ptab *t)
{
	struct htab_entry *e;
	size_t pos = 0;

	t->gen++;
	dead_forget(t, false);
	/* Unheld files are closed (re-opened, and checked, at their next use). */
	for (size_t i = t->nr_open; i-- > 0;)
		if (!t->open[i]->refs)
			mfile_close(t, t->open[i]);
	/*
	 * Files no process used for 30 drains are forgotten (refusals too: a
	 * fixed file is read again); readers keep their own caches by serial.
	 */
	while ((e = htab__next(t->files, &pos))) {
		struct mfile *f = e->value;

		if (!f->refs && f->checked_gen + 30 < t->gen) {
			htab__remove(t->files, &f->key, sizeof(f->key));
			mfile_free(t, f);
		}
	}
	pos = 0;
	while ((e = htab__next(t->mntns, &pos))) {
		struct mntns *m = e->value;

		if (m->self && m->ok)
			continue; /* kept: read again only when it changed */
		if (m->gen + 1 < t->gen || htab__count(t->mntns) > MNTNS_MAX) {
			htab__remove(t->mntns, e->key, e->klen);
			mountinfo__free(&m->mi);
			free(m);
		}
	}
}

void ptab__stats(const struct ptab *t, struct ptab_stats *st)
{
	*st = t->st;
	st->procs = htab__count(t->procs);
	st->files = htab__count(t->files);
	st->open_files = t->nr_open;
	st->mount_tables = htab__count(t->mntns);
	st->pidfds = t->pidfds ? htab__count(t->pidfds) : 0;
}
