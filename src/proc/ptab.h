/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ptab.h - the process table: the one place through which bpfprof reads what
 * a profiled process controls - its /proc/PID files, the files it maps, its
 * perf map, its root and mount table, its memory. The symbolizer (names), the
 * unwinder (CFI tables) and the runtime readers all go through here, so the
 * hostile-input rules below hold for every reader by construction; a lint
 * check (tests/lint/opens.py) fails the build if code outside src/proc/
 * opens such a path itself.
 *
 * Processes. An entry is one program image, keyed by (pid, start time, exec
 * id) - the triple the BPF program puts in every sample - so a recycled pid
 * or an exec in the same pid never borrows another image's files. Its
 * executable mappings are read when the entry is made, and only kept if
 * /proc shows the same image (start time, address-space signature) after the
 * read - and, for an id without a signature, the same before and after: an
 * exec racing the read yields -ESRCH, never the next program's mappings. The
 * mappings are an immutable, reference-counted snapshot; a refresh (dlopen,
 * new JIT code) makes a new one, so a reader holding the old one is never
 * surprised. When the main thread has exited,
 * a live thread's /proc/PID/task/TID/ files are used. An image gone before
 * it could be read is made from the mappings its BPF notice carried (the
 * kernel's, at its first samples), with the files the table already has
 * under their device and inode: nothing is opened or read for it.
 *
 * Mapped files. One mfile per (device, inode) of a maps line, opened once:
 * through /proc/PID/map_files/START-END (the very file the process mapped,
 * even deleted or in another mount namespace) or else by path inside the
 * process's root (openat2 RESOLVE_IN_ROOT) and then only if device and inode
 * match the maps line. Either way O_PATH first, checked to be a regular file
 * on a mount that cannot block (not FUSE, not a network file system: see
 * safeopen.h), and only then re-opened for reading, non-blocking; readers get
 * a libelf handle (pread, never mmap) or bounded preads. A refused file is
 * warned about once, with its reason, and refused again without a word for
 * every other reader and process. Each drain (ptab__sweep) the identity of a
 * cached file is checked again (size, mtime, ctime): a reused inode number
 * gets a new mfile (and a new serial), so caches keyed by serial never serve
 * another file's contents.
 *
 * Bounds. Open descriptors: at most max_open files are kept open while
 * nobody holds them (least recently used closed first); roots are opened per
 * operation. Memory: entries live as long as a reader holds them; mount
 * tables one per mount namespace, read once per drain, dropped when unused
 * for a drain (the agent's own kept, and read again only when poll() on
 * /proc/self/mountinfo says it changed); snapshots
 * hold executable mappings only. Time: nothing here opens, stats or reads a
 * file that could block; /proc files are bounded reads of kernel text.
 */
#ifndef BPFPROF_PROC_PTAB_H
#define BPFPROF_PROC_PTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <libelf.h>

#include "proc/cgroup.h"
#include "proc/procfs.h"
#include "proc/procmaps.h"
#include "proc/safeopen.h"

/* An exec id that matches any image (an entry installed before the first sample). */
#define PROC_EXEC_ANY UINT64_MAX

struct proc_id {
	uint32_t pid;
	uint64_t start_time; /* task start_boottime, ns; 0 = unknown, not checked */
	uint64_t exec_id;    /* PROC_EXEC_ANY: unknown */
	uint64_t mm_sig;     /* bp_mm_sig() from the BPF notice; 0 = unknown */
	/* Not part of the identity: the notice saw a vfork() child before its
	 * exec, running in its parent's address space (BP_NOTICE_VFORK). */
	bool vfork;
};

struct ptab_opts {
	const char *proc_root; /* default "/proc" (tests use a fake tree) */
	const char *host_root; /* the host's root, for debug files (default "/") */
	unsigned max_open;     /* files kept open while unheld (default 8) */
	/* Pidfds held for liveness checks: 0 the default (an eighth of the fd
	 * limit, at most 1024), -1 none. */
	int max_pidfds;
	/* Called once per refused file or perf map, with one sentence. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* Read the text of /proc/PID/maps even where PROCMAP_QUERY works (tests). */
	bool maps_text;
};

struct ptab_stats {
	size_t procs, files, open_files, mount_tables;
	uint64_t maps_reads;	/* /proc/PID/maps read */
	uint64_t maps_queried;	/* of them through PROCMAP_QUERY (the rest as text) */
	uint64_t images_lost;	/* gone, exec'd or pid reused before it could be read */
	uint64_t images_mapped; /* of them, known from their notice's mappings (ptab__get_mapped) */
	uint64_t files_opened;	/* mapped files opened (re-opens included) */
	uint64_t refused;	/* files and perf maps refused by the safety checks */
	uint64_t changed;	/* cached files found replaced (inode reused) */
	uint64_t alive_stat;	/* liveness answered by /proc/PID/stat */
	uint64_t alive_pidfd;	/* liveness answered by a pidfd that was not readable */
	uint64_t alive_harvests;  /* exits collected from the pidfds' epoll set */
	uint64_t alive_dead;	  /* liveness answered by an exit seen before */
	uint64_t mount_reads;	  /* mount tables read (the agent's own: only when changed) */
	uint64_t blocked_skipped; /* memory reads' maps reads saved: no mount may block */
	size_t pidfds;		  /* pidfds held now */
};

struct ptab;
struct pproc;
struct mfile;

struct ptab *ptab__new(const struct ptab_opts *opts);
void ptab__free(struct ptab *t);

/* --- processes ----------------------------------------------------------- */

/*
 * The image id names, with its executable mappings read: made now if new.
 * 0 and a reference (ptab__put it), or -ESRCH (gone, exec'd, pid reused, or
 * - without mm_sig - another image of the pid is held, so this one cannot
 * be told apart), -ENOMEM.
 */
int ptab__get(struct ptab *t, const struct proc_id *id, struct pproc **out);
void ptab__put(struct ptab *t, struct pproc *p);
/*
 * A process that is gone before it could be read, from the mappings its
 * BPF notice carries (km: as the kernel had them at its first sample; only
 * start, end, offset, device and inode are used, and a path only as
 * "[vdso]"). Only files the table has are kept - nothing is opened, as
 * there is no process to open them through - under the path they were
 * first mapped at; the vDSO too. 0 and a reference, -ESRCH if no mapping
 * could be kept, -ENOMEM. Asked again for the same id (more mappings of its
 * first samples), the entry gets a new snapshot with those added; -EEXIST
 * if the id was read through /proc. ptab__file() of such a process gives
 * the cached file of the device and inode, or -ENOENT.
 */
int ptab__get_mapped(struct ptab *t, const struct proc_id *id, const struct procmaps *km,
		     struct pproc **out);
/* Whether p was made by ptab__get_mapped(). */
bool pproc__mapped(const struct pproc *p);
/*
 * p's mappings were read through /proc, and km is what its notice carried:
 * where the same mapping (start, end, offset, inode number) has another
 * device (an overlayfs file: the kernel's mapping has the layer's device,
 * /proc/PID/maps the overlay's), the pair is remembered, and
 * ptab__get_mapped() translates it.
 */
void ptab__learn_mapped(struct ptab *t, struct pproc *p, const struct procmaps *km);
/* The id, with mm_sig filled in from the first read. */
const struct proc_id *pproc__id(const struct pproc *p);

/* A snapshot of executable mappings; immutable, shared, reference-counted. */
struct pmaps {
	struct procmaps m;
	uint64_t gen; /* increases with every read of this process's maps */
	unsigned refs;
};
/* The latest snapshot of p, referenced: pmaps__put() it. */
struct pmaps *ptab__maps(struct ptab *t, struct pproc *p);
void pmaps__put(struct pmaps *m);
/*
 * Re-reads p's mappings now (still the same image), unless they were read
 * within the last few milliseconds (two readers asking for the same event).
 * 0, or -ESRCH if the image is gone.
 */
int ptab__refresh(struct ptab *t, struct pproc *p);

/*
 * Whether the process id names still runs that image (start time check in
 * /proc/PID/stat; a pidfd held per process answers without it while the
 * process has not exited, see ptab.c). An exit is seen at most 1 ms late:
 * exits are collected for all pidfds at once.
 */
bool ptab__alive(struct ptab *t, const struct proc_id *id);
/* 0 while p runs the image its mappings were read from; -ESRCH once it has
 * exec'd or exited (one read of /proc/PID/stat). */
int ptab__check_image(struct ptab *t, struct pproc *p);
/* The process's cgroup labels (proc/cgroup.h); -ESRCH if it is not id's process. */
int ptab__cgroup(struct ptab *t, const struct proc_id *id, struct cgroup_info *ci);
/* The same for its v2 path alone (cgroup__read_v2). */
int ptab__cgroup_v2(struct ptab *t, const struct proc_id *id, char *out, size_t size);
/* Start time of pid in clock ticks (/proc/PID/stat). 0 or -errno. */
int ptab__starttime(struct ptab *t, uint32_t pid, uint64_t *ticks);
/* pid's image as /proc/PID/stat shows it now: its start time in clock ticks
 * and its address space's signature (bp_mm_sig: another after an exec; 0:
 * not known). 0 or -errno. */
int ptab__image(struct ptab *t, uint32_t pid, uint64_t *ticks, uint64_t *mm_sig);
/*
 * The credentials p opens files with (procfs__cred), read now - not cached:
 * a process may change them - and only if p still runs the same image after
 * the read (an exec of a setuid program is another image). 0, -ESRCH, -errno.
 */
int ptab__cred(struct ptab *t, struct pproc *p, struct safe_cred *c);
/* 0 if the process's executable is x86-64 ELF64; -ENOTSUP another machine or class. */
int ptab__check_x86_64(struct ptab *t, uint32_t pid);

/*
 * Opens the root of p (its /proc/PID/root: the container's file system, as
 * the process sees it) with its mount table and the host's. 0, or -errno
 * with root->fd -1; ptab__root_close() either way.
 */
int ptab__root_open(struct ptab *t, struct pproc *p, struct safe_root *root);
void ptab__root_close(struct safe_root *root);
/* The host's root (fd owned by the table), for files looked up outside containers. */
const struct safe_root *ptab__host_root(struct ptab *t);
/* Whether root (from ptab__root_open) is the host's own root, in the host's mount namespace. */
bool ptab__root_is_host(struct ptab *t, const struct safe_root *root);
/*
 * Whether p sees the host's root (not a container or chroot): what a debug
 * file looked up for it finds is then the same after it exits. No file
 * system is asked (an O_PATH open and cached attributes).
 */
bool ptab__in_host_root(struct ptab *t, struct pproc *p);

/*
 * The process's perf map, /tmp/perf-NSPID.map in its own root (NSPID: its
 * pid in its namespace), opened with no symlink anywhere on the path and
 * checked: a regular file owned by the process's effective uid or root, at
 * most PTAB_PERFMAP_MAX bytes, written since the process started (else it
 * is an earlier process's: -ENOENT, no warning). 0 and f; -ENOENT none; any
 * other error is a refusal, warned about once and returned again for this
 * image without opening anything.
 */
#define PTAB_PERFMAP_MAX (256ull << 20)
int ptab__open_perfmap(struct ptab *t, struct pproc *p, struct safe_file *f);
/* "/tmp/perf-NSPID.map" as the process names it, or "" before the first open. */
const char *pproc__perfmap_path(const struct pproc *p);

/*
 * Reads len bytes of p's memory at addr (process_vm_readv), at most
 * PTAB_MEM_MAX per call, only from anonymous or file mappings whose file
 * passed the checks above (a page of a file on a blocked FUSE mount would
 * block the read). Returns the bytes read (short at an unmapped page) or
 * -errno (-EFAULT nothing readable, -E2BIG len too large).
 */
#define PTAB_MEM_MAX (1u << 20)
ssize_t ptab__read_mem(struct ptab *t, struct pproc *p, uint64_t addr, void *buf, size_t len);
/*
 * n pieces of len bytes each (len at most 4096) of p's memory, piece i at addrs[i] into bufs + i *
 * len, with as few process_vm_readv calls as the pieces allow (up to 1024 pieces a call, a piece
 * that cannot be read skipped): ok[i] says which were read whole. The same checks as
 * ptab__read_mem. How many were, or -errno. Once PTAB_MEMV_FAILS pieces have failed the rest
 * are not read (each failure costs a call: a process's unreadable pieces must not make it
 * quadratic).
 */
#define PTAB_MEMV_FAILS 64
/*
 * ptab__read_memv from piece first on (first < n), wrapping around to piece 0: the pieces
 * left unread by the bound are then not always the same ones when the caller starts the next
 * read where this one stopped. *stop (if not NULL): how many pieces, counted from first, were
 * tried (n: all; piece (first + k) % n for k >= *stop was not, its ok false).
 */
ssize_t ptab__read_memv_from(struct ptab *t, struct pproc *p, const uint64_t *addrs, size_t n,
			     size_t len, void *bufs, bool *ok, size_t first, size_t *stop);
ssize_t ptab__read_memv(struct ptab *t, struct pproc *p, const uint64_t *addrs, size_t n,
			size_t len, void *bufs, bool *ok);

/* --- mapped files ------------------------------------------------------------ */

/*
 * The file behind mapping m of p (from a snapshot of p), opened and checked
 * as above: 0 and a reference (mfile__put it), or -errno: -ELOOP, -EXDEV,
 * -EINVAL, -EREMOTE, -EFBIG are refusals (warned about once per file),
 * others (-ENOENT, -EACCES, -ESTALE: not the file the maps line names,
 * -ESRCH) mean it cannot be read now.
 */
int ptab__file(struct ptab *t, struct pproc *p, const struct procmap *m, struct mfile **out);
void mfile__put(struct ptab *t, struct mfile *f);
/* A number no other mfile has had: what caches of file contents key by. */
uint64_t mfile__serial(const struct mfile *f);
/* The file as opened (fstat). */
const struct stat *mfile__stat(const struct mfile *f);
/* The path the first mapping of it named. */
const char *mfile__path(const struct mfile *f);
/* A descriptor for bounded preads (O_RDONLY | O_NONBLOCK); valid while held. */
int mfile__fd(struct mfile *f);
/*
 * A path the kernel resolves to this very file, whatever happens to the
 * name it was mapped under (/proc/self/fd/N of the descriptor above): what
 * a uprobe is attached by, so a tenant renaming or replacing the file after
 * its checks cannot point the probe elsewhere. Valid while f is held.
 * 0, or -errno from mfile__fd() (-ENOSPC: buf too small).
 */
int mfile__kernel_path(struct mfile *f, char *buf, size_t size);
/*
 * The libelf handle (elffile.h: pread, no mmap), made on first use and
 * shared by every reader holding f at the time; valid while held, ended
 * when the last reader puts f (it holds the sections readers loaded). NULL
 * with errno (ENOEXEC: not ELF).
 */
Elf *mfile__elf(struct mfile *f);
/* Its GNU build id (read once): the length (0: none), *id pointing into f. */
size_t mfile__build_id(struct mfile *f, const uint8_t **id);

/*
 * What a reader concluded from the file's contents, kept with the file: one
 * slot per reader, a malloc'd block freed with the file. Per device and
 * inode for as long as the table has the file (a replaced file is a new
 * mfile, without memos), for every process that maps it: a verdict such as
 * "no interpreter here" costs one read of the file, not one per process or
 * per try.
 */
enum mfile_memo {
	MFILE_MEMO_CPYTHON, /* lang/cpython.c: the interpreter's symbols, or that there are none */
	MFILE_MEMO_SBCL,    /* lang/sbcl.c: an SBCL runtime's exported variables, or none */
	MFILE_MEMO_HOTSPOT, /* lang/hotspot.c: a libjvm's exported gHotSpotVM* variables, or none */
	MFILE_MEMO_NR,
};
/* slot's memo, or NULL. */
const void *mfile__memo(const struct mfile *f, enum mfile_memo slot);
/* Takes data (malloc'd; NULL forgets) as slot's memo, freeing the one before. */
void mfile__set_memo(struct mfile *f, enum mfile_memo slot, void *data);

/* A sentence for an error of ptab__file() or ptab__open_perfmap(). */
const char *ptab__reason(int err, const char *fstype);
/* Whether err from ptab__file() is a refusal by the safety checks. */
bool ptab__refusal(int err);

/* --- the agent's own vDSO ------------------------------------------------------ */

/* Our vDSO image, which every native process of this kernel maps; NULL if unknown. */
const void *ptab__vdso(const struct ptab *t, size_t *len);

/* --- upkeep -------------------------------------------------------------------- */

/*
 * After a drain: cached files are checked for replacement again at their next
 * use, unheld files are closed, unused mount tables dropped.
 */
void ptab__sweep(struct ptab *t);
void ptab__stats(const struct ptab *t, struct ptab_stats *st);

#endif
