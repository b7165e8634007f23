// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * symbolizer.c - symbol caches in front of the parsers: per process image
 * (its mappings and the symbols of the files behind them, its JIT map), per
 * file (symbols, by the mfile's serial), and the kernel's; see symbolizer.h
 * for the life cycle of entries and where names come from.
 *
 * Everything a process controls - its /proc files, the files it maps, its
 * perf map, its root for debug files - is read through the process table
 * (proc/ptab.h), which opens and checks it; nothing here opens such a path.
 */
#include "sym/symbolizer.h"

#include <linux/bpf.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/htab.h"
#include "lang/hotspot.h"
#include "lang/sbcl.h"
#include "sym/debuginfo.h"
#include "sym/debuginfod.h"
#include "sym/dwinline.h"
#include "sym/dwzalt.h"
#include "sym/elfsym.h"
#include "sym/kallsyms.h"
#include "proc/mountinfo.h"
#include "sym/perfmap.h"
#include "sym/pyname.h"
#include "proc/procfs.h"
#include "proc/procmaps.h"
#include "proc/safeopen.h"
#include "base/util.h"

#define PERFMAP_READ_CHUNK (4u << 20)
/* A miss in JIT memory re-reads the map at most this often per process. */
#define PERFMAP_RETRY_NS (50u * 1000 * 1000)
/*
 * A perf map larger than this is not held whole: a process can write
 * hundreds of megabytes of it. Only entries that sampled addresses need are
 * kept (perfmap.h, wanted mode); addresses missing from them are looked for
 * in what was appended since the last read, and in the whole file again at
 * most every PERFMAP_RESCAN_NS per process, PERFMAP_RESCAN_RATE bytes a
 * second over all processes, except in the last drain.
 */
#define PERFMAP_WHOLE_MAX   (8u << 20)
#define PERFMAP_RESCAN_NS   (10ULL * 1000 * 1000 * 1000)
#define PERFMAP_RESCAN_RATE (256ULL << 20)
/* Addresses of one process waiting for a scan (more are left for the next one). */
#define PERFMAP_MAX_PENDING 16384
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
/*
 * Files held open, symbols not read yet (see get_file): over this many the
 * oldest is read now, so descriptors stay bounded.
 */
#define HELD_FILES_MAX 256
/* Give freed memory back to the system after this much was freed. */
#define TRIM_AFTER_BYTES (16u << 20)
/*
 * Caches make room at insertion (room_make): when an item might not fit,
 * victims go until the item fits with this share of the cap to spare, so a
 * cache under pressure is scanned once per share inserted, not per item.
 */
#define ROOM_SLACK_SHARE 16

/*
 * CPU one file's DWARF (inlined frames, lines) may take per drain: opening
 * it, indexing its units, lookups. Past it, frames of that file are named
 * without inlines until the next drain.
 */
#define DWARF_DRAIN_CPU_NS (500ull * 1000 * 1000)
/* ... and all files' DWARF together, per drain. */
#define DWARF_ALL_DRAIN_CPU_NS (1000ull * 1000 * 1000)

/* Python code-object caches of all processes together, at most (pyname.h). */
#define SYM_PY_MAX_BYTES (128u << 20)
/* Line tables read again past their kept start (pyname.h), bytes per drain in all. */
#define SYM_PY_LT_BUDGET (16u << 20)

struct symfile {
	struct elfsym *es; /* NULL when unreadable or not ELF (or not read yet) */
	int err;
	unsigned refs; /* process entries pointing at it */
	bool is_vdso;
	/* Its symbols were freed to make room for another file's: read again
	 * at its next lookup, through a process that maps it, once a drain. */
	bool dropped;
	uint64_t read_gen; /* 1 + the drain its symbols were last read in for a lookup */
	uint64_t used_gen;
	uint64_t serial; /* the mfile's: a reused inode is another serial */
	bool dbgd_wait;	 /* its debug file was asked of debuginfod: merged when it comes */
	/* Symbols not read yet: the file, held open until its first lookup;
	 * in the symbolizer's list of held files, oldest first. */
	struct mfile *held;
	struct symfile *older, *newer;
	/* Its DWARF, for inlined frames and lines (dwinline.h), opened at the
	 * first lookup (of the binary, else of its debug file); dwi_err the
	 * verdict when there is none (-ENOENT, too large...): not tried again.
	 * Freed with the symbols to make room, opened again on demand, at most
	 * once a drain (dwi_gen); dwi_cpu_ns spent on it in drain dwi_cpu_gen. */
	struct dwinline *dwi;
	int dwi_err;
	uint64_t dwi_gen, dwi_cpu_gen, dwi_cpu_ns;
	/* dwi read without its dwz file, which was asked of debuginfod: dwi is
	 * read again once the file is in the cache (dwz_id_len 0: not waiting). */
	uint8_t dwz_id[BUILD_ID_MAX];
	uint8_t dwz_id_len;
};

struct symproc {
	struct proc_id id;
	struct pproc *pp;	/* the process table's entry; NULL when dead */
	struct pmaps *maps;	/* the snapshot files[] follows; NULL when dead */
	struct symfile **files; /* per mapping; NULL if not a readable file */
	bool gone;		/* seen gone at a sweep: freed at the next */
	bool refreshed;		/* maps re-read since the last sweep */
	bool dead;		/* image could not be read (exited, exec'd): names nothing */
	bool jit;		/* has executable memory that is not an ELF file */
	int8_t host_root;	/* sees the host's root: 1, 0, or -1 not asked yet */
	uint64_t used_gen;
	/* The JIT perf map. */
	struct perfmap *pmap;
	size_t pmap_bytes;
	uint64_t pmap_dev, pmap_ino;
	uint64_t pmap_read_ns;	/* last read attempt (now_ns), 0: never */
	uint64_t pmap_read_gen; /* 1 + the drain it was last read or scanned in for a lookup */
	bool pmap_dropped;	/* freed to make room for another's: read again, once a drain */
	bool pmap_rejected;
	/* Python: the interpreter found in it, and its code objects. */
	struct pynamer *py;
	int py_err;	    /* of the last probe: 0 not tried (or found), -ENOENT not Python, ... */
	uint64_t py_try_ns; /* when a probe of an uninitialized interpreter may run again */
	bool pmap_wanted;   /* too large to hold: wanted mode (PERFMAP_WHOLE_MAX) */
	uint64_t pmap_rescan_ns; /* last scan of the whole file, 0: never */
	uint64_t *pending;	 /* wanted mode: addresses announced, not yet looked for */
	size_t nr_pending, cap_pending;
	bool listed; /* in symbolizer.want_procs */
	/* SBCL: the runtime found in it (lang/sbcl.c), and its Lisp functions' names. */
	struct sbcl_proc *sbcl;
	int sbcl_err; /* of the last probe: 0 not tried (or found), -ENOENT not SBCL, ... */
	uint64_t sbcl_try_ns;
	uint64_t sbcl_gen; /* the drain (gen + lisp_drains + 1) sbcl__new_drain was last called for
			    */
	/* its time naming Lisp frames in budget lisp_window (symbolizer__lisp_deadline) */
	uint64_t lisp_window, lisp_spent;
	/* HotSpot: the JVM found in it (lang/hotspot.c), and its code blobs' names. */
	struct hotspot_proc *jvm;
	int jvm_err; /* of the last probe: 0 not tried (or found), -ENOENT no JVM, ... */
	uint64_t jvm_try_ns;
};

struct proc_key {
	uint32_t pid, pad;
	uint64_t start_time, exec_id;
};

struct symbolizer {
	char proc_root[256];
	char kallsyms_path[256];
	char debug_dir[256];
	bool real_proc; /* proc_root is the real /proc: BPF ids */
	struct ptab *pt;
	bool own_pt;	/* made here (no ptab in the options): freed and swept here */
	bool keep_gone; /* opts.keep_gone */
	bool (*keep)(void *ctx, uint32_t pid);
	void *keep_ctx;
	size_t max_procs, max_files, max_file_bytes, max_perfmap_bytes;
	size_t max_py_bytes, max_py_proc_bytes;
	struct ksyms *ks;
	struct ksyms *retired[KSYMS_RETIRED_MAX];
	size_t nr_retired;
	uint64_t kmod_sig, kbpf_sig, kcheck_gen, core_end, kbpf_reload_ns;
	bool no_modules; /* the real /proc has no modules file */
	bool kmiss;	 /* a lookup missed in module/BPF space since the last sweep */
	/* The BPF programs' JIT images (symbolizer__set_bpf_progs), by start;
	 * read at most once per drain (kprogs_gen), signature of their ids. */
	symbolizer_bpf_progs_fn bpf_progs;
	void *bpf_progs_ctx;
	struct bp_kprog *kprogs;
	size_t nr_kprogs;
	uint64_t kprogs_gen, kprogs_sig;
	int kprogs_err;
	uint64_t kbpf_unnamed; /* program symbols whose image does not hold the address */
	uint64_t kbpf_named;   /* addresses named from the program list */
	struct htab *procs;    /* proc_key -> symproc */
	struct htab *files;    /* mfile serial -> symfile */
	struct symfile vdso;
	/* Files held, symbols not read yet (get_file): oldest, newest, count. */
	struct symfile *held_oldest, *held_newest;
	size_t nr_held, max_held;
	uint64_t held_read, held_forced, held_dropped;
	uint64_t gen;
	uint64_t lisp_drains; /* symbolizer__lisp_drain: drains of SBCL names alone */
	size_t file_bytes, pmap_bytes, freed_bytes;
	uint64_t lisp_over_budget, lisp_walked;
	/* symbolizer__lisp_budget: the time SBCL's names may take to read (0:
	 * no bound), the time they took, the frames given SYM_LISP_UNNAMED
	 * past it; each SBCL process's share of it (the budget over the SBCL
	 * processes known when it was set, and one more), in budget lisp_window */
	uint64_t lisp_budget, lisp_used, lisp_unnamed;
	uint64_t lisp_share, lisp_window;
	uint64_t lookups, unknown, debug_files, jit_names, lisp_names, java_names, images_lost,
		images_mapped, lisp_gc_held;
	uint64_t kernel_reloads, evicted_procs, evicted_files;
	/* JVMs' tables read in this drain (gen), and how long that took: at most
	 * HS_MAX_TABLE_NS a drain, however many processes pass for JVMs. */
	uint64_t jvm_probe_gen, jvm_probe_ns;
	uint64_t java_probe_ns, java_name_ns; /* CPU time in all, for the stats */
	/* Made room at insertion: symbols of files still mapped freed (and read
	 * again), perf maps freed, files refused for their own cap. */
	uint64_t files_dropped, files_reread, pmaps_dropped, files_too_large;
	uint64_t inline_frames;
	uint64_t dwarf_files, dwarf_refused, dwarf_over_budget;
	/* Files whose dwz file was read, not (found nowhere, refused); inlined
	 * frames left out for want of a name (in a dwz file not read). */
	uint64_t dwz_files, dwz_missing, inline_unnamed;
	bool dwz_warned;
	/* The dwz file the last DWARF opened asked debuginfod for (len 0: none). */
	uint8_t dwz_want[BUILD_ID_MAX];
	size_t dwz_want_len;
	uint64_t dwarf_cpu_gen,
		dwarf_cpu_ns; /* all files' DWARF: CPU spent in drain dwarf_cpu_gen */
	uint64_t py_frames, py_unknown;
	/* Python code-object caches: their bytes together (kept at every change), how
	 * often one started over; line-table bytes that may still be read this drain. */
	size_t py_bytes, py_lt_budget;
	uint64_t py_resets, py_lt_reads, py_lt_over;
	/* Files whose symbols were given up on: more work than their budget. */
	uint64_t files_over_budget;
	/* Debug files from debuginfod: the fetcher, its count of files fetched
	 * when last looked at, debug files used from it. */
	struct debuginfod *dbgd;
	uint64_t dbgd_done, dbgd_files;
	uint64_t dbgd_retry_ns; /* when to look at the files waiting again, fetched or not */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* Wanted-mode perf maps: processes with pending addresses; scan budget. */
	struct symproc **want_procs;
	size_t nr_want_procs, cap_want_procs;
	uint64_t rescan_ok_ns; /* no whole-file rescan before (PERFMAP_RESCAN_RATE) */
	uint64_t pmap_scanned_bytes, pmap_rescans;
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

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	const char *root = opts && opts->proc_root ? opts->proc_root : "/proc";
	const void *vdso;
	size_t vdso_len;

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
	s->keep_gone = opts && opts->keep_gone;
	s->keep = opts ? opts->keep : NULL;
	s->keep_ctx = opts ? opts->keep_ctx : NULL;
	s->max_files = opts && opts->max_files ? opts->max_files : 4096;
	s->max_file_bytes = opts && opts->max_file_bytes ? opts->max_file_bytes : 512u << 20;
	s->max_perfmap_bytes =
		opts && opts->max_perfmap_bytes ? opts->max_perfmap_bytes : 64u << 20;
	s->max_py_bytes =
		opts && opts->max_python_bytes ? opts->max_python_bytes : SYM_PY_MAX_BYTES;
	s->max_py_proc_bytes = opts && opts->max_python_proc_bytes ? opts->max_python_proc_bytes
								   : PYNAME_MAX_BYTES;
	s->py_lt_budget = SYM_PY_LT_BUDGET;
	s->max_held = opts && opts->max_held_files ? opts->max_held_files : HELD_FILES_MAX;
	s->warn = opts ? opts->warn : NULL;
	s->warn_ctx = opts ? opts->warn_ctx : NULL;
	s->dbgd = opts ? opts->debuginfod : NULL;
	if (opts && opts->ptab) {
		s->pt = opts->ptab;
	} else {
		struct ptab_opts po = {
			.proc_root = root,
			.host_root = opts ? opts->host_root : NULL,
			.warn = opts ? opts->warn : NULL,
			.warn_ctx = opts ? opts->warn_ctx : NULL,
		};

		s->pt = ptab__new(&po);
		s->own_pt = true;
	}
	s->procs = htab__new();
	s->files = htab__new();
	if (!s->pt || !s->procs || !s->files) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->vdso.is_vdso = true;
	s->vdso.err = -ENOENT;
	vdso = ptab__vdso(s->pt, &vdso_len);
	if (vdso) {
		s->vdso.es = elfsym__open_mem(vdso, vdso_len);
		s->vdso.err = s->vdso.es ? 0 : -errno;
	}
	return s;
}

/* Takes f off the list of held files: the file's reference is the caller's (or NULL). */
static struct mfile *unlink_held(struct symbolizer *s, struct symfile *f)
{
	struct mfile *mf = f->held;

	if (!mf)
		return NULL;
	if (f->older)
		f->older->newer = f->newer;
	else
		s->held_oldest = f->newer;
	if (f->newer)
		f->newer->older = f->older;
	else
		s->held_newest = f->older;
	f->older = f->newer = NULL;
	s->nr_held--;
	f->held = NULL;
	return mf;
}

/* What a file's cache entry holds: its symbols and its DWARF. */
static size_t symfile_bytes(const struct symfile *f)
{
	return elfsym__bytes(f->es) + dwinline__bytes(f->dwi);
}

static void symfile_free(struct symbolizer *s, struct symfile *f)
{
	if (!f || f->is_vdso)
		return;
	mfile__put(s->pt, unlink_held(s, f)); /* its symbols stay unread */
	s->file_bytes -= MIN(s->file_bytes, symfile_bytes(f));
	elfsym__free(f->es);
	dwinline__free(f->dwi);
	free(f);
}

/* A file whose symbols were never read is not kept once no process maps it. */
static void symfile_unref(struct symbolizer *s, struct symfile *f)
{
	if (!f || !f->refs || --f->refs || !f->held)
		return;
	htab__remove(s->files, &f->serial, sizeof(f->serial));
	symfile_free(s, f);
	s->held_dropped++;
}

static void release_files(struct symbolizer *s, struct symproc *p)
{
	for (size_t i = 0; p->files && p->maps && i < p->maps->m.nr; i++)
		symfile_unref(s, p->files[i]);
	free(p->files);
	p->files = NULL;
}

static void symproc_free(struct symbolizer *s, struct symproc *p)
{
	if (!p)
		return;
	release_files(s, p);
	pmaps__put(p->maps);
	ptab__put(s->pt, p->pp);
	s->pmap_bytes -= MIN(s->pmap_bytes, p->pmap_bytes);
	perfmap__free(p->pmap);
	s->py_bytes -= MIN(s->py_bytes, pynamer__bytes(p->py));
	s->py_resets += pynamer__resets(p->py);
	pynamer__free(p->py);
	sbcl__proc_free(p->sbcl);
	free(p->sbcl);
	hotspot__proc_free(p->jvm);
	free(p->jvm);
	if (p->listed) {
		for (size_t i = 0; i < s->nr_want_procs; i++)
			if (s->want_procs[i] == p)
				s->want_procs[i] = s->want_procs[--s->nr_want_procs];
	}
	free(p->pending);
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
			symproc_free(s, e->value);
	pos = 0;
	if (s->files)
		while ((e = htab__next(s->files, &pos)))
			symfile_free(s, e->value);
	htab__free(s->procs);
	htab__free(s->files);
	elfsym__free(s->vdso.es);
	ksyms__free(s->ks);
	free(s->kprogs);
	for (size_t i = 0; i < s->nr_retired; i++)
		ksyms__free(s->retired[i]);
	if (s->own_pt)
		ptab__free(s->pt);
	free(s->want_procs);
	free(s);
}

/* --- room at insertion ------------------------------------------------------------ */

/*
 * Every cache of what processes control holds its cap at every moment
 * (threat model rule 4): before an item that may take up to `need` more is
 * read, room_make() frees victims, lowest key first, until what the cache
 * holds plus `need` is a ROOM_SLACK_SHARE of the cap under it; it does
 * nothing while the item fits. The item the room is for is never a victim.
 * Each cache says which of its items may go, in which turn, and how (a file
 * no process maps is forgotten, a mapped file's symbols are freed and read
 * again at its next lookup, a perf map is freed, a Python cache starts
 * over): what goes is freed before the item is read, not at the next sweep.
 * Names handed out for user frames may go with it: they live until the next
 * lookup (symbolizer.h).
 */
struct room {
	struct htab *from;			    /* the candidates: its values */
	size_t (*held)(const struct symbolizer *s); /* what the cache holds now */
	size_t cap, need;
	const void *keep; /* the item the room is for */
	/* Whether item may go, and its turn (lowest first). */
	bool (*victim)(const struct symbolizer *s, const void *item, uint64_t *key);
	void (*evict)(struct symbolizer *s, void *item);
};

struct victim {
	uint64_t key;
	void *item;
};

static int victim_cmp(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static void room_make(struct symbolizer *s, const struct room *r)
{
	size_t target, n = 0, pos = 0;
	struct htab_entry *e;
	struct victim *v;
	uint64_t key;

	if (r->held(s) + r->need <= r->cap)
		return;
	target = r->cap - MIN(r->cap, r->need);
	target -= MIN(target, r->cap / ROOM_SLACK_SHARE);
	v = malloc((htab__count(r->from) + 1) * sizeof(*v));
	while ((e = htab__next(r->from, &pos))) {
		if (e->value == r->keep || !r->victim(s, e->value, &key))
			continue;
		if (!v) { /* out of memory: in the table's order rather than not at all */
			r->evict(s, e->value);
			if (r->held(s) <= target)
				return;
			continue;
		}
		v[n].key = key;
		v[n++].item = e->value;
	}
	if (!v)
		return;
	qsort(v, n, sizeof(*v), victim_cmp);
	for (size_t i = 0; i < n && r->held(s) > target; i++)
		r->evict(s, v[i].item);
	free(v);
}

/* Files: the bytes of their symbols, and how many are cached. */
static size_t files_bytes(const struct symbolizer *s)
{
	return s->file_bytes;
}

static size_t files_count(const struct symbolizer *s)
{
	return htab__count(s->files);
}

/* Files with symbols: least recently used first, at one age the unmapped first. */
static bool file_victim(const struct symbolizer *s, const void *item, uint64_t *key)
{
	const struct symfile *f = item;

	(void)s;
	*key = f->used_gen << 1 | (f->refs != 0);
	return f->es != NULL || f->dwi != NULL;
}

/* Files no process entry maps (whatever their state): least recently used first. */
static bool file_unmapped(const struct symbolizer *s, const void *item, uint64_t *key)
{
	const struct symfile *f = item;

	(void)s;
	*key = f->used_gen;
	return !f->refs;
}

/* Forgets a file no process maps; frees a mapped file's symbols (read again on demand). */
static void file_evict(struct symbolizer *s, void *item)
{
	struct symfile *f = item;
	size_t b = symfile_bytes(f);

	s->freed_bytes += b;
	if (!f->refs) {
		htab__remove(s->files, &f->serial, sizeof(f->serial));
		symfile_free(s, f);
		s->evicted_files++;
		return;
	}
	s->file_bytes -= MIN(s->file_bytes, b);
	elfsym__free(f->es);
	f->es = NULL;
	dwinline__free(f->dwi);
	f->dwi = NULL;
	f->dwi_err = 0;
	f->dropped = true;
	s->files_dropped++;
}

/* Room for one more file's symbols (its own cap, ELFSYM_MAX_BYTES), besides keep's. */
static void files_room(struct symbolizer *s, const struct symfile *keep)
{
	struct room r = {
		.from = s->files,
		.held = files_bytes,
		.cap = s->max_file_bytes,
		.need = ELFSYM_MAX_BYTES,
		.keep = keep,
		.victim = file_victim,
		.evict = file_evict,
	};

	room_make(s, &r);
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
static uint64_t modules_signature(const struct symbolizer *s, bool *absent)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char path[300], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "%s/modules", s->proc_root);
	err = read_file(path, 16u << 20, &buf, &len);
	if (!err) {
		h = fnv1a(h, buf, len);
		free(buf);
	}
	*absent = err == -ENOENT && !strcmp(s->proc_root, "/proc");
	return h;
}

/* The BPF program set cannot be listed (no CAP_SYS_ADMIN, as after bpfprof
 * drops it): every rate-limited check then counts as a change. */
#define BPF_SIG_UNKNOWN UINT64_MAX

static int kprog_cmp(const void *a, const void *b)
{
	const struct bp_kprog *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The program list, read at most once per drain: its signature hashes the
 * programs' ids in increasing order, as bpf_signature() does, so the two
 * agree. 0, or why there is no list.
 */
static int kprogs_read(struct symbolizer *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t n;

	if (!s->bpf_progs)
		return s->kprogs_err = -EOPNOTSUPP;
	if (s->kprogs_gen == s->gen + 1)
		return s->kprogs_err;
	s->kprogs_gen = s->gen + 1;
	free(s->kprogs);
	s->kprogs = NULL;
	s->nr_kprogs = 0;
	s->kprogs_err = s->bpf_progs(s->bpf_progs_ctx, &s->kprogs, &s->nr_kprogs);
	if (s->kprogs_err)
		return s->kprogs_err;
	for (size_t i = 0; i < s->nr_kprogs; i++) {
		uint32_t id = s->kprogs[i].id;

		if (!s->kprogs[i].sub)
			h = fnv1a(h, &id, sizeof(id));
	}
	s->kprogs_sig = h == BPF_SIG_UNKNOWN ? h - 1 : h;
	n = 0;
	for (size_t i = 0; i < s->nr_kprogs; i++) {
		if (!s->kprogs[i].len)
			continue; /* not in kallsyms (no image): nothing to find */
		s->kprogs[n] = s->kprogs[i];
		s->kprogs[n++].name[KPROG_NAME_LEN - 1] = '\0';
	}
	s->nr_kprogs = n;
	qsort(s->kprogs, s->nr_kprogs, sizeof(*s->kprogs), kprog_cmp);
	return 0;
}

void symbolizer__set_bpf_progs(struct symbolizer *s, symbolizer_bpf_progs_fn fn, void *ctx)
{
	s->bpf_progs = fn;
	s->bpf_progs_ctx = ctx;
	s->kprogs_gen = 0;
}

/*
 * The listed BPF image that holds ip, or NULL: no list (kernels before 5.9),
 * or no loaded program holds it. kallsyms gives programs no sizes, and a
 * program loaded since it was read sits in a gap of a program pack right
 * after an older one: looked up there it would be named as that one.
 */
static const struct bp_kprog *kprog_find(struct symbolizer *s, uint64_t ip)
{
	size_t lo = 0, hi;

	if (kprogs_read(s))
		return NULL;
	hi = s->nr_kprogs;
	while (lo < hi) { /* the last image starting at or below ip */
		size_t mid = lo + (hi - lo) / 2;

		if (s->kprogs[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || ip - s->kprogs[lo - 1].start >= s->kprogs[lo - 1].len)
		return NULL;
	return &s->kprogs[lo - 1];
}

static bool is_bpf_prog(const struct ksym *k)
{
	return k && k->module && !strcmp(k->module, "bpf") && !strncmp(k->name, "bpf_prog_", 9);
}

static uint64_t bpf_signature(const struct symbolizer *s)
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

/* The same from the program list when there is one (it works without
 * CAP_SYS_ADMIN, which bpfprof drops); on s's own thread only. */
static uint64_t kbpf_signature(struct symbolizer *s)
{
	return kprogs_read(s) ? bpf_signature(s) : s->kprogs_sig;
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

/* Reads only what symbolizer__new() set: s may be in use on another thread. */
void symbolizer__read_kernel(const struct symbolizer *s, struct kernel_read *kr)
{
	bool absent;

	kr->mod_sig = modules_signature(s, &absent);
	kr->bpf_sig = bpf_signature(s);
	kr->ks = ksyms__load(s->kallsyms_path);
	kr->err = kr->ks ? 0 : -errno;
}

int symbolizer__install_kernel(struct symbolizer *s, struct kernel_read *kr)
{
	struct ksyms *ks = kr->ks;

	kr->ks = NULL;
	if (!ks)
		return kr->err ? kr->err : -EINVAL;
	kernel_install(s, ks);
	s->kmod_sig = kr->mod_sig;
	s->kbpf_sig = kr->bpf_sig;
	s->kcheck_gen = s->gen + 1;
	return 0;
}

int symbolizer__load_kernel(struct symbolizer *s)
{
	struct kernel_read kr;

	symbolizer__read_kernel(s, &kr);
	return symbolizer__install_kernel(s, &kr);
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
	/* A kernel built without modules never has them: not looked for again
	 * (a missing /proc entry costs ~15 us to look up, every drain). */
	mod = s->no_modules ? s->kmod_sig : modules_signature(s, &s->no_modules);
	if (miss && (!s->kbpf_reload_ns || now - s->kbpf_reload_ns >= KSYMS_BPF_RELOAD_NS))
		bpf = kbpf_signature(s);
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
	const struct bp_kprog *bp = NULL;

	/*
	 * Beyond the core kernel's text: module and BPF JIT space. BPF programs
	 * are named from the collector's list of their images when there is
	 * one; a miss may be a module (or, without the list, a program) loaded
	 * after kallsyms was read.
	 */
	if (s->ks && !ksyms__restricted(s->ks) && ip >= s->core_end) {
		bp = kprog_find(s, ip);
		/* With the program list, a program symbol whose image does not hold
		 * ip is a neighbour of a newer program, or unloaded: no name. */
		if (!bp && is_bpf_prog(k) && !s->kprogs_err) {
			k = NULL;
			s->kbpf_unnamed++;
		} else if (!bp && !k) {
			s->kmiss = true;
			k = kernel_refresh(s, true) ? ksyms__lookup(s->ks, ip) : NULL;
			if (is_bpf_prog(k) && !s->kprogs_err) {
				k = NULL;
				s->kbpf_unnamed++;
			}
		}
	}
	s->lookups++;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_KERNEL;
	out->addr = ip;
	out->name = k ? k->name : NULL;
	out->module = k ? k->module : NULL;
	if (bp) {
		out->name = bp->name[0] ? bp->name : NULL;
		out->module = "bpf";
		s->kbpf_named++;
	}
	if (!out->name)
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

/* --- files -------------------------------------------------------------------- */

/*
 * Executable mappings are all a lookup ever names (the table keeps only
 * those); these may be a JIT's code, named from its perf map.
 */
static bool jit_candidate(const struct procmap *m)
{
	return !m->path ||
	       (!procmap__is_file(m) && strcmp(m->path, "[vdso]") && strcmp(m->path, "[vsyscall]"));
}

static bool is_memfd(const struct procmap *m)
{
	return m->path && !strncmp(m->path, "/memfd:", 7);
}

/*
 * The separate debug file of mf (whose symbols es holds), or NULL: looked up
 * in pp's root first (its packages match its binaries), then in the host's
 * (only there without pp). fd_out (if set) keeps the debug file open for the
 * caller. The file's build id and debug link are its own bytes: what they
 * name is read only if mf's owner could read it (and proc, if set: the
 * process's credentials); the verdict is then the file's own, the same for
 * every process that maps it, as the symbols cached per file need.
 */
/*
 * The roots a file of pp's is looked for in: roots[0] pp's (the host's when
 * there is no pp or its root cannot be opened), roots[1] the host's (fd -1
 * when roots[0] is already it). *root holds what was opened: ptab__root_close() it.
 */
static void debug_roots(struct symbolizer *s, struct pproc *pp, struct safe_root *root,
			struct safe_root roots[2])
{
	const struct safe_root *host = ptab__host_root(s->pt);

	root->fd = -1;
	if (!pp || ptab__root_open(s->pt, pp, root)) {
		roots[0] = *host; /* a process whose root we cannot open still has the host's */
		roots[1].fd = -1;
	} else {
		roots[0] = *root;
		roots[1] = *host;
		if (ptab__root_is_host(s->pt, root))
			roots[1].fd = -1;
	}
}

static struct elfsym *find_debug_file_at(struct symbolizer *s, struct pproc *pp, struct mfile *mf,
					 const struct elfsym *es, const struct safe_cred *proc,
					 int *fd_out, char *found, size_t found_size, int *root_out,
					 char *path_out)
{
	const struct stat *st = mfile__stat(mf);
	const struct safe_cred owner = { .uid = st->st_uid, .gid = st->st_gid };
	const struct safe_cred *readers[2] = { &owner, proc };
	struct safe_root root;
	struct elfsym *dbg;
	struct debuginfo_query q = {
		.bin = es,
		.path = mfile__path(mf),
		.dev = (uint64_t)st->st_dev,
		.ino = (uint64_t)st->st_ino,
		.debug_dir = s->debug_dir,
		.fd_out = fd_out,
		.readers = readers,
		.nr_readers = proc ? 2 : 1,
	};

	q.root_out = root_out;
	q.path_out = path_out;
	debug_roots(s, pp, &root, q.roots);
	dbg = debuginfo__find(&q, found, found_size);
	ptab__root_close(&root);
	return dbg;
}

static struct elfsym *find_debug_file(struct symbolizer *s, struct pproc *pp, struct mfile *mf,
				      const struct elfsym *es, const struct safe_cred *proc,
				      int *fd_out, char *found, size_t found_size)
{
	return find_debug_file_at(s, pp, mf, es, proc, fd_out, found, found_size, NULL, NULL);
}

/*
 * The debug file of f (stripped, symbols read) from debuginfod's cache, or
 * NULL: then asked for, and f waits for it (merged at a sweep after it comes).
 */
static struct elfsym *fetched_debug_file(struct symbolizer *s, struct symfile *f)
{
	size_t len;
	const uint8_t *id = elfsym__build_id(f->es, &len);
	struct elfsym *dbg;
	int fd, err;

	f->dbgd_wait = false;
	if (!id)
		return NULL;
	fd = debuginfod__open(s->dbgd, id, len);
	if (fd >= 0) {
		dbg = debuginfo__from_fd(f->es, fd);
		close(fd);
		if (dbg) {
			s->dbgd_files++;
			return dbg;
		}
	}
	err = debuginfod__want(s->dbgd, id, len);
	f->dbgd_wait = !err || err == -EALREADY;
	return NULL;
}

/* Symbols of the stripped file mf's separate debug file, merged into f's. */
static void load_debug_file(struct symbolizer *s, struct pproc *pp, struct mfile *mf,
			    struct symfile *f)
{
	char found[PATH_MAX];
	struct elfsym *dbg = find_debug_file(s, pp, mf, f->es, NULL, NULL, found, sizeof(found));

	if (!dbg && s->dbgd)
		dbg = fetched_debug_file(s, f);
	if (dbg && !elfsym__merge(f->es, dbg))
		s->debug_files++;
}

/*
 * Reads f's symbols from mf (and its debug file, looked for in pp's root and
 * the host's), room made for each first: the cache's cap holds while they
 * are read.
 */
static void read_symbols(struct symbolizer *s, struct pproc *pp, struct symfile *f,
			 struct mfile *mf)
{
	Elf *elf = mfile__elf(mf);
	size_t before;

	files_room(s, f);
	f->dropped = false;
	f->es = elf ? elfsym__open_elf(elf, (uint64_t)mfile__stat(mf)->st_size) : NULL;
	f->err = f->es ? 0 : -errno;
	/* Refused for its cost: remembered (f stays cached), said once. */
	if (f->err == -ETIMEDOUT || f->err == -E2BIG) {
		if (f->err == -ETIMEDOUT)
			s->files_over_budget++;
		else
			s->files_too_large++;
		if (s->warn) {
			char msg[PATH_MAX + 200];

			snprintf(msg, sizeof(msg), "%s: %s; its frames are shown as file+offset",
				 mfile__path(mf) ? mfile__path(mf) : "a mapped file",
				 elfsym__strerror(-f->err));
			s->warn(s->warn_ctx, msg);
		}
	}
	s->file_bytes += elfsym__bytes(f->es);
	if (f->es && !elfsym__has_symtab(f->es) &&
	    (elfsym__build_id(f->es, NULL) || elfsym__debuglink(f->es, NULL))) {
		files_room(s, f); /* the debug file's symbols, then both together */
		before = elfsym__bytes(f->es);
		load_debug_file(s, pp, mf, f);
		s->file_bytes += elfsym__bytes(f->es) - before;
	}
}

/*
 * The symbols of a mapped file that were freed to make room, read again
 * through p (which maps f at m) - at most once a drain, so files that do not
 * fit together cost one read each per drain, not one per lookup.
 */
static void reread(struct symbolizer *s, struct symproc *p, const struct procmap *m,
		   struct symfile *f)
{
	struct mfile *mf;

	if (f->read_gen == s->gen + 1 || p->gone || !p->pp)
		return;
	f->read_gen = s->gen + 1;
	if (ptab__file(s->pt, p->pp, m, &mf))
		return;
	/* The same file (not one that replaced it), and one that can be opened
	 * now: otherwise another process may read it later. */
	if (mfile__serial(mf) == f->serial && mfile__elf(mf)) {
		read_symbols(s, p->pp, f, mf);
		s->files_reread++;
	}
	mfile__put(s->pt, mf);
}

/* The symbols of a held file, read now (pp: whose root to look for a debug file in). */
static void read_held(struct symbolizer *s, struct pproc *pp, struct symfile *f)
{
	struct mfile *mf = unlink_held(s, f);

	if (!mf)
		return;
	read_symbols(s, pp, f, mf);
	mfile__put(s->pt, mf);
}

/*
 * Holds mf for f, symbols unread; over the cap the oldest held file is read
 * now. Its process may be gone, so its debug file is looked for in the
 * host's root only, which is what its process saw (only files of processes
 * in the host's root are held).
 */
static void hold(struct symbolizer *s, struct symfile *f, struct mfile *mf)
{
	f->held = mf;
	f->older = s->held_newest;
	if (s->held_newest)
		s->held_newest->newer = f;
	else
		s->held_oldest = f;
	s->held_newest = f;
	s->nr_held++;
	while (s->nr_held > s->max_held) {
		read_held(s, NULL, s->held_oldest);
		s->held_forced++;
	}
}

/*
 * A file held with its symbols unread: if it is stripped, its debug file is
 * asked of debuginfod now, so that it may be there by its first lookup (a
 * one-shot run's first drain).
 */
static void prefetch_debug_file(struct symbolizer *s, struct mfile *mf)
{
	uint8_t id[BUILD_ID_MAX];
	Elf *elf = s->dbgd ? mfile__elf(mf) : NULL;
	size_t len = elf ? debuginfo__fetchable(elf, id) : 0;

	if (len && !debuginfo__local(s->debug_dir, id, len))
		debuginfod__want(s->dbgd, id, len);
}

/*
 * The symbols of the file behind mapping m, read once per file; NULL if
 * unreadable. A program image maps a dozen files or more and its samples
 * land in few of them: a file of a process in the host's root (lazy) is
 * held open, its symbols read at its first lookup (read_held()), which
 * names it the same even after the process exited. A container's process
 * has its files read now: a debug file in its root is found only while it
 * lives.
 */
static struct symfile *get_file(struct symbolizer *s, struct symproc *p, const struct procmap *m)
{
	struct pproc *pp = p->pp;
	struct htab_entry *e;
	struct symfile *f;
	struct mfile *mf;
	uint64_t serial;
	bool created;
	int fd;

	if (ptab__file(s->pt, pp, m, &mf))
		return NULL; /* refused (the table warned once), or not readable now */
	serial = mfile__serial(mf);
	/*
	 * A process known from its notice alone, or one that exited since its
	 * maps were read (a short-lived compiler under -a: the table had
	 * closed the file, and opens it again through this process): the
	 * symbols read for the file before, or from the descriptor the table
	 * still has open; it cannot be opened again through this process, and
	 * a failure here must not be kept for the processes that can (it was:
	 * libc unnamed in every process for the rest of the run).
	 */
	if (!htab__find(s->files, &serial, sizeof(serial)) && (fd = mfile__fd(mf)) < 0 &&
	    (pproc__mapped(pp) || fd == -ENOENT || fd == -ESRCH)) {
		mfile__put(s->pt, mf);
		return NULL;
	}
	e = htab__upsert(s->files, &serial, sizeof(serial), &created);
	if (!e) {
		mfile__put(s->pt, mf);
		return NULL;
	}
	if (!created) {
		f = e->value;
		f->used_gen = s->gen;
		mfile__put(s->pt, mf);
		return f;
	}
	if (htab__count(s->files) > s->max_files) {
		/* The count's cap too, at insertion: files no process maps go. */
		struct room r = {
			.from = s->files,
			.held = files_count,
			.cap = s->max_files,
			.need = 1,
			.keep = NULL,
			.victim = file_unmapped,
			.evict = file_evict,
		};

		htab__remove(s->files, &serial, sizeof(serial));
		room_make(s, &r);
		e = htab__upsert(s->files, &serial, sizeof(serial), &created);
		if (!e) {
			mfile__put(s->pt, mf);
			return NULL;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		htab__remove(s->files, &serial, sizeof(serial));
		mfile__put(s->pt, mf);
		return NULL;
	}
	e->value = f;
	f->serial = serial;
	f->used_gen = s->gen;
	if (procmap__is_file(m) && !jit_candidate(m)) {
		if (p->host_root < 0)
			p->host_root = ptab__in_host_root(s->pt, pp);
		/* Open now, while the process lives (a cached file may be closed). */
		if (p->host_root && mfile__fd(mf) >= 0) {
			prefetch_debug_file(s, mf);
			hold(s, f, mf); /* the reference is the list's now */
			return f;
		}
	}
	read_symbols(s, pp, f, mf);
	mfile__put(s->pt, mf);
	return f;
}

/* --- JIT perf maps ------------------------------------------------------------- */

static void drop_perfmap(struct symbolizer *s, struct symproc *p)
{
	s->pmap_bytes -= MIN(s->pmap_bytes, p->pmap_bytes);
	perfmap__free(p->pmap);
	p->pmap = NULL;
	p->pmap_bytes = 0;
}

/* What p's map holds now, in the total. */
static void pmap_account(struct symbolizer *s, struct symproc *p)
{
	s->pmap_bytes -= MIN(s->pmap_bytes, p->pmap_bytes);
	p->pmap_bytes = perfmap__bytes(p->pmap);
	s->pmap_bytes += p->pmap_bytes;
}

static size_t pmaps_bytes(const struct symbolizer *s)
{
	return s->pmap_bytes;
}

/* Maps of processes gone first, then of dead images, then the least recently used. */
static bool pmap_victim(const struct symbolizer *s, const void *item, uint64_t *key)
{
	const struct symproc *p = item;
	uint64_t rank = p->gone ? 0 : p->dead ? 1 : 2;

	(void)s;
	*key = rank << 56 | p->used_gen;
	return p->pmap != NULL;
}

/* Frees a map; it is read again if its process's code is looked up (once a drain). */
static void pmap_evict(struct symbolizer *s, void *item)
{
	struct symproc *p = item;

	s->freed_bytes += p->pmap_bytes;
	drop_perfmap(s, p);
	p->pmap_dropped = true;
	p->pmap_read_ns = 0;
	s->pmaps_dropped++;
}

/* Room for p's map to grow to its own cap (PERFMAP_MAX_BYTES), before it is read. */
static void pmaps_room(struct symbolizer *s, struct symproc *p)
{
	struct room r = {
		.from = s->procs,
		.held = pmaps_bytes,
		.cap = s->max_perfmap_bytes,
		.need = PERFMAP_MAX_BYTES - MIN((size_t)PERFMAP_MAX_BYTES, p->pmap_bytes),
		.keep = p,
		.victim = pmap_victim,
		.evict = pmap_evict,
	};

	room_make(s, &r);
	p->pmap_dropped = false;
}

/*
 * Reads p's map whole, from where it was read up to: 0, or -E2BIG if it would
 * take more than its own cap (PERFMAP_MAX_BYTES), -ENOMEM.
 */
static int read_whole(struct symbolizer *s, struct symproc *p, const struct safe_file *sf)
{
	struct perfmap *pm = p->pmap;
	char *buf;
	int err = 0;

	pmaps_room(s, p);
	if (!pm && !(pm = p->pmap = perfmap__new()))
		return -ENOMEM;
	p->pmap_dev = (uint64_t)sf->st.st_dev;
	p->pmap_ino = (uint64_t)sf->st.st_ino;
	buf = malloc(PERFMAP_READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	/* Up to the size seen at open: a file still growing is read next time. */
	while (!err && perfmap__consumed(pm) < (size_t)sf->st.st_size) {
		size_t off = perfmap__consumed(pm);
		size_t want = MIN((size_t)sf->st.st_size - off, (size_t)PERFMAP_READ_CHUNK);
		ssize_t n = pread(sf->fd, buf, want, (off_t)off);

		if (n <= 0)
			break;
		err = perfmap__add(pm, buf, (size_t)n);
		if (!err && perfmap__consumed(pm) == off)
			break; /* no complete line in a whole chunk: nothing more to take */
	}
	free(buf);
	if (err != -E2BIG)
		perfmap__finish(pm);
	return err;
}

/* Reads (more of) the process's perf map. Called with the process alive. */
static void load_perfmap(struct symbolizer *s, struct symproc *p)
{
	struct safe_file sf;
	int err;

	if (p->pmap_rejected || !p->pp)
		return;
	p->pmap_read_ns = now_ns();
	err = ptab__open_perfmap(s->pt, p->pp, &sf);
	if (err) {
		if (ptab__refusal(err)) {
			/* The table warned; this map is never read for this image. */
			p->pmap_rejected = true;
			drop_perfmap(s, p);
		}
		return;
	}
	/* A different file, or one that shrank (rewritten): start over. */
	if (p->pmap &&
	    ((uint64_t)sf.st.st_dev != p->pmap_dev || (uint64_t)sf.st.st_ino != p->pmap_ino ||
	     (size_t)sf.st.st_size < perfmap__consumed(p->pmap)))
		drop_perfmap(s, p);
	if (!p->pmap_wanted && (uint64_t)sf.st.st_size <= PERFMAP_WHOLE_MAX &&
	    read_whole(s, p, &sf) != -E2BIG)
		goto out;
	/*
	 * Too large to hold (the file, or the entries read from it): from now
	 * on only what sampled addresses need, found by scans (scan_wanted),
	 * none of it read here.
	 */
	if (!p->pmap_wanted)
		drop_perfmap(s, p);
	p->pmap_wanted = true;
	if (!p->pmap && !(p->pmap = perfmap__new_wanted()))
		goto out;
	p->pmap_dev = (uint64_t)sf.st.st_dev;
	p->pmap_ino = (uint64_t)sf.st.st_ino;
out:
	close(sf.fd);
	pmap_account(s, p);
}

/* Reads [from, to) of the file in chunks through scan; false on a read error. */
static bool scan_file(struct symbolizer *s, int fd, size_t from, size_t to, char *buf,
		      bool (*scan)(void *ctx, const char *buf, size_t len, size_t *used), void *ctx)
{
	while (from < to) {
		size_t want = MIN(to - from, (size_t)PERFMAP_READ_CHUNK), used;
		ssize_t n = pread(fd, buf, want, (off_t)from);

		if (n <= 0)
			return false;
		s->pmap_scanned_bytes += (size_t)n;
		if (!scan(ctx, buf, (size_t)n, &used) || !used)
			return false; /* no complete line in a whole chunk */
		from += used;
	}
	return true;
}

struct tail_scan {
	struct perfmap *pm;
	const uint64_t *want;
	size_t n;
};

static bool tail_chunk(void *ctx, const char *buf, size_t len, size_t *used)
{
	struct tail_scan *t = ctx;
	size_t before = perfmap__consumed(t->pm);

	perfmap__scan_tail(t->pm, buf, len, t->want, t->n);
	*used = perfmap__consumed(t->pm) - before;
	return true;
}

struct full_scan {
	struct perfmap *pm;
	const uint64_t *want;
	size_t n;
	uint64_t line;
};

static bool full_chunk(void *ctx, const char *buf, size_t len, size_t *used)
{
	struct full_scan *f = ctx;
	uint64_t lines;

	*used = perfmap__scan(f->pm, buf, len, f->line, f->want, f->n, true, &lines);
	f->line += lines;
	return true;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts want[0..n), drops duplicates and what the kept entries already name. */
static size_t still_wanted(const struct perfmap *pm, uint64_t *want, size_t n)
{
	size_t k = 0;

	qsort(want, n, sizeof(*want), u64_cmp);
	for (size_t i = 0; i < n; i++)
		if ((!k || want[i] != want[k - 1]) && !perfmap__lookup(pm, want[i], NULL))
			want[k++] = want[i];
	return k;
}

/*
 * Wanted mode: looks for want[0..n) (modified) in p's perf map. What was
 * appended since the last scan is always read (with anything over kept code);
 * the part read before only if an address is still missing, and then at most
 * every PERFMAP_RESCAN_NS per process and PERFMAP_RESCAN_RATE over all,
 * unless final (the run's last drain). The process must be alive.
 */
static void scan_wanted(struct symbolizer *s, struct symproc *p, uint64_t *want, size_t n,
			bool final)
{
	struct perfmap *pm = p->pmap;
	struct safe_file sf;
	size_t old_end;
	char *buf = NULL;
	uint64_t now = now_ns();

	if (!p->pmap_wanted || !n || p->pmap_rejected || !p->pp || !ptab__alive(s->pt, &p->id))
		return;
	if (pm)
		n = still_wanted(pm, want, n);
	else if (!final && ((p->pmap_rescan_ns && now - p->pmap_rescan_ns < PERFMAP_RESCAN_NS) ||
			    now < s->rescan_ok_ns))
		return; /* freed to make room: found again by a scan of the whole file */
	if (!n)
		return;
	if (ptab__open_perfmap(s->pt, p->pp, &sf)) {
		load_perfmap(s, p); /* says why, once, and marks a refusal */
		return;
	}
	if (pm && ((uint64_t)sf.st.st_dev != p->pmap_dev || (uint64_t)sf.st.st_ino != p->pmap_ino ||
		   (size_t)sf.st.st_size < perfmap__consumed(pm))) {
		/* Rewritten: what was kept may name other code now. */
		drop_perfmap(s, p);
		pm = NULL;
	}
	pmaps_room(s, p);
	if (!pm) {
		pm = p->pmap = perfmap__new_wanted();
		p->pmap_dev = (uint64_t)sf.st.st_dev;
		p->pmap_ino = (uint64_t)sf.st.st_ino;
		if (!pm)
			goto out;
		/* Read from the start: as a scan of the whole file, within its limits. */
		p->pmap_rescan_ns = now;
		s->pmap_rescans++;
		s->rescan_ok_ns = now + (uint64_t)sf.st.st_size * NS_PER_SEC / PERFMAP_RESCAN_RATE;
	}
	buf = malloc(PERFMAP_READ_CHUNK);
	if (!buf)
		goto out;
	p->pmap_read_ns = now;
	old_end = perfmap__consumed(pm);
	{
		struct tail_scan t = { .pm = pm, .want = want, .n = n };

		scan_file(s, sf.fd, old_end, (size_t)sf.st.st_size, buf, tail_chunk, &t);
	}
	perfmap__finish(pm);
	n = still_wanted(pm, want, n);
	if (n && old_end &&
	    (final || ((!p->pmap_rescan_ns || now - p->pmap_rescan_ns >= PERFMAP_RESCAN_NS) &&
		       now >= s->rescan_ok_ns))) {
		/* To the end, not only the part read before: a line after an entry
		 * found now that overlaps it is newer, and must be kept with it. */
		size_t end = perfmap__consumed(pm);
		struct full_scan f = { .pm = pm, .want = want, .n = n };

		p->pmap_rescan_ns = now;
		s->pmap_rescans++;
		s->rescan_ok_ns = now + (uint64_t)end * NS_PER_SEC / PERFMAP_RESCAN_RATE;
		scan_file(s, sf.fd, 0, end, buf, full_chunk, &f);
		perfmap__finish(pm);
	}
out:
	free(buf);
	close(sf.fd);
	pmap_account(s, p);
}

/* --- processes ------------------------------------------------------------------ */

/* Takes the process table's latest snapshot of p's mappings and resolves their files. */
static int attach_maps(struct symbolizer *s, struct symproc *p)
{
	struct pmaps *maps = ptab__maps(s->pt, p->pp);
	struct symfile **files;

	if (p->maps == maps) {
		pmaps__put(maps);
		return 0;
	}
	files = calloc(maps->m.nr ? maps->m.nr : 1, sizeof(*files));
	if (!files) {
		pmaps__put(maps);
		return -ENOMEM;
	}
	p->jit = false;
	for (size_t i = 0; i < maps->m.nr; i++) {
		const struct procmap *m = &maps->m.maps[i];

		if (m->path && !strcmp(m->path, "[vdso]"))
			files[i] = s->vdso.es ? &s->vdso : NULL;
		else if (procmap__is_file(m) || (is_memfd(m) && m->inode))
			files[i] = get_file(s, p, m);
		if (files[i])
			files[i]->refs++;
		if (jit_candidate(m) && (!files[i] || !files[i]->es))
			p->jit = true;
	}
	/* Release the old snapshot only after the new one took its references. */
	release_files(s, p);
	pmaps__put(p->maps);
	p->maps = maps;
	p->files = files;
	if (p->jit)
		load_perfmap(s, p);
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

static struct symproc *add_proc(struct symbolizer *s, const struct proc_id *id,
				const struct procmaps *km, int *errp)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e;
	struct symproc *p;
	bool created, mapped = false;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p) {
		*errp = -ENOMEM;
		return NULL;
	}
	p->id = *id;
	p->used_gen = s->gen;
	p->host_root = -1;
	err = ptab__get(s->pt, id, &p->pp);
	if (!err && km)
		ptab__learn_mapped(s->pt, p->pp, km);
	if (err == -ESRCH && km && km->nr && !ptab__get_mapped(s->pt, id, km, &p->pp)) {
		/* Gone already: its notice's mappings, with the files known. */
		mapped = true;
		err = 0;
		s->images_lost++;
		s->images_mapped++;
	}
	if (!err) {
		p->id = *pproc__id(p->pp);
		err = attach_maps(s, p);
	}
	if (err == -ENOMEM) {
		symproc_free(s, p);
		*errp = err;
		return NULL;
	}
	if (err) {
		/* Remembered, so its samples do not retry (and cannot misname). */
		ptab__put(s->pt, p->pp);
		p->pp = NULL;
		p->dead = true;
		s->images_lost += !mapped;
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

int symbolizer__note_process_mapped(struct symbolizer *s, const struct proc_id *id,
				    const struct procmaps *km)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e = htab__find(s->procs, &k, sizeof(k));
	struct symproc *old;
	int err;

	if (e) {
		old = e->value;
		if (!old->dead)
			return 0;
		/*
		 * Given up on at a sample that came before its notice (taken
		 * inside the execve(), whose notice waits for its end), while
		 * the image before the exec was still held: without the
		 * signature the two cannot be told apart. The notice has it,
		 * so this image is looked for again, once.
		 */
		if (old->id.mm_sig || !id->mm_sig)
			return -ESRCH;
		htab__remove(s->procs, &k, sizeof(k));
		symproc_free(s, old);
		s->images_lost -= MIN(s->images_lost, (uint64_t)1); /* again if this fails too */
	}
	add_proc(s, id, km, &err);
	return err;
}

int symbolizer__note_process(struct symbolizer *s, const struct proc_id *id)
{
	return symbolizer__note_process_mapped(s, id, NULL);
}

int symbolizer__more_mapped(struct symbolizer *s, const struct proc_id *id,
			    const struct procmaps *km)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e = htab__find(s->procs, &k, sizeof(k));
	struct symproc *p;
	struct pproc *pp;
	int err;

	if (!e)
		return symbolizer__note_process_mapped(s, id, km);
	p = e->value;
	if (p->pp && !pproc__mapped(p->pp)) {
		/* Read through /proc: it has every mapping; these teach the
		 * devices the two ways disagree on (the program's own, when the
		 * notice's sample was in the dynamic loader). */
		ptab__learn_mapped(s->pt, p->pp, km);
		return 0;
	}
	err = ptab__get_mapped(s->pt, id, km, &pp);
	if (err)
		return err;
	if (p->pp) {
		ptab__put(s->pt, pp); /* the same entry: one reference is enough */
	} else {
		/* Its notice named nothing the table knew; this does. */
		p->pp = pp;
		p->dead = false;
		s->images_mapped++;
	}
	return attach_maps(s, p);
}

/* Re-reads p's mappings (through the table) and resolves new files. */
static int refresh(struct symbolizer *s, struct symproc *p)
{
	int err;

	if (p->dead || p->gone || !ptab__alive(s->pt, &p->id))
		return -ESRCH;
	err = ptab__refresh(s->pt, p->pp);
	return err ? err : attach_maps(s, p);
}

int symbolizer__refresh_process(struct symbolizer *s, const struct proc_id *id)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e = htab__find(s->procs, &k, sizeof(k));

	if (!e)
		return symbolizer__note_process(s, id);
	return refresh(s, e->value);
}

/*
 * A perf map name for addr. On a miss the JIT may have written more since the
 * map was read: read on (from where the complete lines ended), but at most
 * every PERFMAP_RETRY_NS per process, so code it never names costs little.
 */
static const char *jit_name(struct symbolizer *s, struct symproc *p, uint64_t addr)
{
	const char *name = perfmap__lookup(p->pmap, addr, NULL);
	uint64_t now;

	if (name || p->pmap_rejected || p->gone)
		return name;
	/* Freed to make room after it was read this drain: not before the next. */
	if (!p->pmap && p->pmap_dropped && p->pmap_read_gen == s->gen + 1)
		return NULL;
	now = now_ns();
	if (p->pmap_read_ns && now - p->pmap_read_ns < PERFMAP_RETRY_NS)
		return NULL;
	/* Still this image: after an exec the same path names the next program's code. */
	if (!ptab__alive(s->pt, &p->id))
		return NULL;
	p->pmap_read_gen = s->gen + 1;
	if (p->pmap_wanted) {
		/* Not announced (symbolizer__want_user): looked for on its own. */
		scan_wanted(s, p, &addr, 1, false);
		return perfmap__lookup(p->pmap, addr, NULL);
	}
	load_perfmap(s, p);
	if (p->pmap_wanted) /* it just turned out too large */
		scan_wanted(s, p, &addr, 1, false);
	return perfmap__lookup(p->pmap, addr, NULL);
}

#define SBCL_RETRY_NS NS_PER_SEC /* a runtime whose heap is not set up yet */

/* SBCL: the GC count as of the drain's start (symbolizer__drain_begin, else its first lookup). */
static void sbcl_drain(struct symbolizer *s, struct symproc *p)
{
	if (p->sbcl && p->sbcl_gen != s->gen + s->lisp_drains + 1) {
		p->sbcl_gen = s->gen + s->lisp_drains + 1;
		sbcl__new_drain(p->sbcl);
	}
}

static const char *lisp_name_read(struct symbolizer *s, struct symproc *p, uint64_t addr);

/* The Lisp function at addr of an SBCL process (lang/sbcl.c), or NULL; the
 * runtime is looked for at the process's first frame in code of no ELF file.
 * Under a deadline, an SBCL process past its share of the budget is not read
 * either (its frames SYM_LISP_UNNAMED): a tenant's many stacks leave the
 * other processes theirs, whichever come first. */
static const char *lisp_name(struct symbolizer *s, struct symproc *p, uint64_t addr)
{
	const char *name;
	uint64_t t0;

	if (!s->lisp_budget)
		return lisp_name_read(s, p, addr);
	if (p->lisp_window != s->lisp_window) {
		p->lisp_window = s->lisp_window;
		p->lisp_spent = 0;
	}
	if (p->sbcl && p->lisp_spent >= s->lisp_share) {
		s->lisp_unnamed++;
		return SYM_LISP_UNNAMED;
	}
	t0 = now_ns();
	name = lisp_name_read(s, p, addr);
	t0 = now_ns() - t0;
	p->lisp_spent += t0;
	s->lisp_used += t0;
	return name;
}

static const char *lisp_name_read(struct symbolizer *s, struct symproc *p, uint64_t addr)
{
	const char *name;
	char why[256];
	uint64_t held, over, walked;
	int err;

	/* The caller's budget spent: no read, of a heap known to be SBCL's or
	 * to find one (another process's frames go on to perf maps, ...). */
	if (s->lisp_budget && s->lisp_used >= s->lisp_budget) {
		if (!p->sbcl)
			return NULL;
		s->lisp_unnamed++;
		return SYM_LISP_UNNAMED;
	}
	if (!p->sbcl && p->pp && !p->dead &&
	    (!p->sbcl_err || (p->sbcl_err == -EAGAIN && now_ns() >= p->sbcl_try_ns))) {
		p->sbcl = calloc(1, sizeof(*p->sbcl));
		err = p->sbcl ? sbcl__probe(s->pt, p->pp, p->sbcl, why, sizeof(why)) : -ENOMEM;
		if (err) {
			free(p->sbcl);
			p->sbcl = NULL;
			p->sbcl_try_ns = now_ns() + SBCL_RETRY_NS;
			if (err == -ENOTSUP && why[0] && s->warn) {
				char msg[320];

				snprintf(msg, sizeof(msg), "process %" PRIu32 ": %s", p->id.pid,
					 why);
				s->warn(s->warn_ctx, msg);
			}
		}
		p->sbcl_err = err;
	}
	if (!p->sbcl)
		return NULL;
	sbcl_drain(s, p);
	held = p->sbcl->gc_dropped;
	over = p->sbcl->h.dyn_over;
	walked = p->sbcl->h.dyn_walked;
	name = sbcl__name(p->sbcl, addr);
	s->lisp_gc_held += p->sbcl->gc_dropped - held;
	s->lisp_over_budget += p->sbcl->h.dyn_over - over;
	s->lisp_walked += p->sbcl->h.dyn_walked - walked;
	return name;
}

#define JVM_RETRY_NS NS_PER_SEC /* a JVM whose tables are not filled yet */

/* p's HotSpot JVM (lang/hotspot.c), probed now if not yet (once per
 * JVM_RETRY_NS while its tables are not filled, within the drain's time
 * for JVM tables), or NULL. */
static struct hotspot_proc *java_proc(struct symbolizer *s, struct symproc *p)
{
	char why[320];
	int err;

	if (!p->jvm && p->pp && !p->dead &&
	    (!p->jvm_err || (p->jvm_err == -EAGAIN && now_ns() >= p->jvm_try_ns))) {
		uint64_t t0 = now_ns(), c0 = thread_cputime_ns();

		if (s->jvm_probe_gen != s->gen) {
			s->jvm_probe_gen = s->gen;
			s->jvm_probe_ns = 0;
		}
		if (s->jvm_probe_ns >= HS_MAX_TABLE_NS) {
			/* This drain's time for JVM tables spent: the next drain's. */
			p->jvm_err = -EAGAIN;
			p->jvm_try_ns = t0;
			return NULL;
		}
		p->jvm = calloc(1, sizeof(*p->jvm));
		err = p->jvm ? hotspot__probe(s->pt, p->pp, p->jvm, why, sizeof(why)) : -ENOMEM;
		s->jvm_probe_ns += now_ns() - t0;
		s->java_probe_ns += thread_cputime_ns() - c0;
		if (err) {
			free(p->jvm);
			p->jvm = NULL;
			p->jvm_try_ns = now_ns() + JVM_RETRY_NS;
			if (err == -ENOTSUP && why[0] && s->warn) {
				char msg[360];

				snprintf(msg, sizeof(msg), "process %" PRIu32 ": %s", p->id.pid,
					 why);
				s->warn(s->warn_ctx, msg);
			}
		}
		p->jvm_err = err;
	}
	return p->jvm;
}

/* The Java methods at addr of a HotSpot JVM (lang/hotspot.c), innermost
 * first (those the JIT inlined there, then the compiled one), or a stub's
 * name; their number. The JVM is looked for at the process's first frame
 * in code of no ELF file. */
static size_t java_frames(struct symbolizer *s, struct symproc *p, uint64_t addr,
			  const char **names, size_t max)
{
	struct hotspot_proc *jvm = java_proc(s, p);
	uint64_t c0 = thread_cputime_ns();
	size_t n;

	if (!jvm)
		return 0;
	n = hotspot__frames(jvm, addr, names, max);
	s->java_name_ns += thread_cputime_ns() - c0;
	return n;
}

/*
 * An interpreted Java frame the BPF walker recorded by its Method*
 * (hotspot_abi.h BP_HS_INTERP_MARK; method without the mark): named
 * "package.Class.method", kind FRAME_JAVA_INTERP (hotspot__method()); else
 * "Interpreter", kind FRAME_JIT, as the interpreter's code is named - never
 * a name the method does not have. Unnamed while the process's JVM is not
 * read yet (as its compiled frames are): a later drain names it.
 */
static size_t java_interp(struct symbolizer *s, struct symproc *p, uint64_t method, struct sym *out)
{
	struct hotspot_proc *jvm;
	uint64_t c0;

	out->addr = 0; /* no address: the slot is the tagged Method* */
	if (!p || p->dead) {
		out->kind = FRAME_JIT;
		out->name = "Interpreter";
		return 1;
	}
	jvm = java_proc(s, p);
	if (!jvm) {
		if (p->jvm_err == -EAGAIN) {
			s->unknown++;
			return 1;
		}
		out->kind = FRAME_JIT;
		out->name = "Interpreter";
		return 1;
	}
	c0 = thread_cputime_ns();
	out->name = hotspot__method(jvm, method);
	s->java_name_ns += thread_cputime_ns() - c0;
	out->kind = out->name ? FRAME_JAVA_INTERP : FRAME_JIT;
	if (out->name)
		s->java_names++;
	else
		out->name = "Interpreter";
	return 1;
}

void symbolizer__want_user(struct symbolizer *s, const struct proc_id *id, uint64_t ip, bool leaf)
{
	struct proc_key k = proc_key_of(id);
	uint64_t addr = leaf ? ip : ip - 1;
	struct htab_entry *e = htab__find(s->procs, &k, sizeof(k));
	const struct procmap *m;
	struct symproc *p;
	struct symfile *f;

	/* Only processes already known in wanted mode: the rest name as before.
	 * An interpreted frame's Method* (hotspot_abi.h) is no address. */
	p = e ? e->value : NULL;
	if (bp_hs_is_interp(ip))
		return;
	if (!p || p->dead || !p->pmap_wanted || p->pmap_rejected || !p->maps)
		return;
	m = procmaps__find(&p->maps->m, addr);
	if (!m || !(m->perms & PROCMAP_X) || !jit_candidate(m))
		return;
	f = p->files[m - p->maps->m.maps];
	if ((f && f->es) || perfmap__lookup(p->pmap, addr, NULL))
		return;
	if (p->nr_pending >= PERFMAP_MAX_PENDING)
		return;
	if (array_grow((void **)&p->pending, &p->cap_pending, p->nr_pending + 1,
		       sizeof(*p->pending)))
		return;
	if (!p->listed) {
		if (array_grow((void **)&s->want_procs, &s->cap_want_procs, s->nr_want_procs + 1,
			       sizeof(*s->want_procs)))
			return;
		s->want_procs[s->nr_want_procs++] = p;
		p->listed = true;
	}
	p->pending[p->nr_pending++] = addr;
}

void symbolizer__want_flush(struct symbolizer *s, bool final)
{
	for (size_t i = 0; i < s->nr_want_procs; i++) {
		struct symproc *p = s->want_procs[i];

		if (p->pmap || !p->pmap_dropped || p->pmap_read_gen != s->gen + 1) {
			p->pmap_read_gen = s->gen + 1;
			scan_wanted(s, p, p->pending, p->nr_pending, final);
		}
		p->nr_pending = 0;
		p->listed = false;
	}
	s->nr_want_procs = 0;
}

void symbolizer__user(struct symbolizer *s, const struct proc_id *id, uint64_t ip, bool leaf,
		      struct sym *out)
{
	symbolizer__user_frames(s, id, ip, leaf, out, 1);
}

/* Source lines and inlined frames of a Go binary: out[0] is the resolved frame. */
static size_t go_frames(struct symbolizer *s, const struct symfile *f, uint64_t vaddr,
			struct sym *out, size_t max)
{
	struct gosrc src[SYM_MAX_FRAMES];
	size_t n = elfsym__source(f->es, vaddr, src, MIN(max, ARRAY_SIZE(src)));
	struct sym outer;

	if (!n)
		return 1;
	/* The function itself last; the inlined ones before it, innermost first. */
	outer = out[0];
	outer.file = src[n - 1].file;
	outer.line = src[n - 1].line;
	if (!outer.name)
		outer.name = src[n - 1].name;
	for (size_t i = 0; i + 1 < n; i++) {
		out[i] = outer;
		out[i].kind = FRAME_INLINE;
		out[i].name = src[i].name;
		out[i].file = src[i].file;
		out[i].line = src[i].line;
	}
	out[n - 1] = outer;
	s->inline_frames += n - 1;
	return n;
}

/* Room for a file's DWARF (dwinline__open_fd's callback), besides the file's own. */
struct dwarf_room {
	struct symbolizer *s;
	struct symfile *f;
};

static void dwarf_room(void *ctx, size_t bytes)
{
	struct dwarf_room *dr = ctx;
	struct room r = {
		.from = dr->s->files,
		.held = files_bytes,
		.cap = dr->s->max_file_bytes,
		.need = bytes,
		.keep = dr->f,
		.victim = file_victim,
		.evict = file_evict,
	};

	room_make(dr->s, &r);
}

/* The debug file of f from debuginfod's cache (its DWARF), or -1. */
static int fetched_dwarf_fd(struct symbolizer *s, const struct symfile *f)
{
	size_t len;
	const uint8_t *id = s->dbgd ? elfsym__build_id(f->es, &len) : NULL;
	int fd = id ? debuginfod__open(s->dbgd, id, len) : -1;

	return fd >= 0 ? fd : -1;
}

/* A dwz file by its build id from debuginfod's cache (asked for if not there), or -1. */
static int dwz_fetch(void *ctx, const uint8_t *id, size_t len)
{
	struct symbolizer *s = ctx;
	int fd = debuginfod__open(s->dbgd, id, len), err;

	if (fd >= 0)
		return fd;
	err = debuginfod__want(s->dbgd, id, len);
	if ((!err || err == -EALREADY) && len <= sizeof(s->dwz_want)) {
		memcpy(s->dwz_want, id, len);
		s->dwz_want_len = len;
	}
	return -1;
}

/* Counts what became of a file's dwz file, and says the first failure once. */
static void dwz_note(struct symbolizer *s, struct mfile *mf, const struct dwinline *d)
{
	const char *why;
	char msg[PATH_MAX + 200];
	int st;

	if (!d)
		return;
	st = dwinline__alt(d, NULL);
	if (st == 1)
		return;
	if (!st) {
		s->dwz_files++;
		return;
	}
	s->dwz_missing++;
	/* Asked of debuginfod: read again when it comes (debuginfod_poll), not said. */
	if (s->dwz_warned || !s->warn || s->dwz_want_len)
		return;
	s->dwz_warned = true;
	why = st == -ESTALE   ? "a file of another build id"
	      : st == -EFBIG  ? "too large"
	      : st == -ENOENT ? "not found"
	      : st == -EINVAL ? "not a regular file, or a malformed link"
			      : strerror(-st);
	snprintf(msg, sizeof(msg),
		 "%s: its dwz file (.gnu_debugaltlink) not read (%s); inlined functions named "
		 "only there are left out (said once; -v counts the others)",
		 mfile__path(mf) ? mfile__path(mf) : "a mapped file", why);
	s->warn(s->warn_ctx, msg);
}

/*
 * f's DWARF, opened through p (which maps it at m): the file's own
 * .debug_info, else its separate debug file's (found as its symbols' is,
 * readable by the file's owner). Tried at most once a drain while the file
 * cannot be opened; a verdict (no DWARF, too large, unreadable) is kept.
 */
static void dwarf_open(struct symbolizer *s, struct symproc *p, const struct procmap *m,
		       struct symfile *f)
{
	struct dwarf_room room = { .s = s, .f = f };
	struct dwzalt_query alt = { 0 };
	struct safe_root root, roots[2];
	const struct safe_cred *readers[2];
	struct safe_cred owner, holder;
	struct mfile *mf;
	int err, dfd = -1;

	if (f->dwi || f->dwi_err || f->dwi_gen == s->gen + 1 || !p->pp)
		return;
	f->dwi_gen = s->gen + 1;
	if (ptab__file(s->pt, p->pp, m, &mf))
		return;
	if (mfile__serial(mf) != f->serial || mfile__fd(mf) < 0) {
		mfile__put(s->pt, mf);
		return;
	}
	owner = (struct safe_cred){ .uid = mfile__stat(mf)->st_uid,
				    .gid = mfile__stat(mf)->st_gid };
	readers[0] = &owner;
	s->dwz_want_len = 0;
	/* Its dwz file: looked for as its debug file is, readable by the file's owner. */
	debug_roots(s, p->pp, &root, roots);
	alt.roots[0] = &roots[0];
	alt.roots[1] = &roots[1];
	alt.path = mfile__path(mf);
	alt.link_root = 0;
	alt.debug_dir = s->debug_dir;
	alt.readers = readers;
	alt.nr_readers = 1;
	alt.fetch = s->dbgd ? dwz_fetch : NULL;
	alt.fetch_ctx = s;
	f->dwi = dwinline__open_fd_alt(mfile__fd(mf), DWINLINE_MAX_BYTES, dwarf_room, &room, &alt);
	err = f->dwi ? 0 : -errno;
	if (err == -ENOENT && (elfsym__build_id(f->es, NULL) || elfsym__debuglink(f->es, NULL))) {
		char found[PATH_MAX], dpath[PATH_MAX];
		int droot = -1;

		elfsym__free(find_debug_file_at(s, p->pp, mf, f->es, NULL, &dfd, found,
						sizeof(found), &droot, dpath));
		alt.path = droot >= 0 ? dpath : NULL;
		alt.link_root = droot;
		if (dfd >= 0) {
			struct stat dst;

			/*
			 * The link is the debug file's bytes, which its owner (a
			 * tenant, with its own mount namespace over DEBUG_DIR)
			 * chose: the dwz file must be readable by that owner too,
			 * not only by the binary's (root's, for /usr/bin) (rule 1).
			 */
			if (fstat(dfd, &dst)) {
				close(dfd);
				dfd = -1;
			} else {
				holder = (struct safe_cred){ .uid = dst.st_uid, .gid = dst.st_gid };
				readers[1] = &holder;
				alt.nr_readers = 2;
			}
		} else {
			/* debuginfod's: chosen by the binary's build id, read as its owner. */
			dfd = fetched_dwarf_fd(s, f);
		}
		if (dfd >= 0) {
			f->dwi = dwinline__open_fd_alt(dfd, DWINLINE_MAX_BYTES, dwarf_room, &room,
						       &alt);
			err = f->dwi ? 0 : -errno;
			close(dfd);
		}
	}
	ptab__root_close(&root);
	dwz_note(s, mf, f->dwi);
	f->dwz_id_len = 0;
	if (f->dwi && dwinline__alt(f->dwi, NULL) < 0 && s->dwz_want_len) {
		memcpy(f->dwz_id, s->dwz_want, s->dwz_want_len);
		f->dwz_id_len = (uint8_t)s->dwz_want_len;
	}
	/* Not kept while debuginfod may still bring the file: tried again a drain later. */
	f->dwi_err = err == -ENOENT && f->dbgd_wait ? 0 : err;
	s->file_bytes += dwinline__bytes(f->dwi);
	s->dwarf_files += f->dwi != NULL;
	if (err && err != -ENOENT) {
		s->dwarf_refused++;
		if (s->warn) {
			char msg[PATH_MAX + 200];

			snprintf(msg, sizeof(msg),
				 "%s: DWARF not read (%s); its frames are named without inlined "
				 "functions and lines",
				 mfile__path(mf) ? mfile__path(mf) : "a mapped file",
				 err == -E2BIG ? "debug sections over 256 MiB" : strerror(-err));
			s->warn(s->warn_ctx, msg);
		}
	}
	mfile__put(s->pt, mf);
}

/*
 * Inlined frames and source lines of a native file from its DWARF: out[0]
 * is the resolved frame (named from the symbol table), turned into
 * out[0..n-2] the inlined functions, innermost first, and out[n-1] itself,
 * each with its file and line. 1 when the DWARF has nothing for vaddr.
 */
static size_t dwarf_frames(struct symbolizer *s, struct symproc *p, const struct procmap *m,
			   struct symfile *f, uint64_t vaddr, struct sym *out, size_t max)
{
	const struct dwinline_frame *fr;
	uint64_t t0 = thread_cputime_ns();
	size_t before, n, k;
	struct budget b;
	struct sym outer;
	int err;

	uint64_t left;

	if (f->dwi_cpu_gen != s->gen) {
		f->dwi_cpu_gen = s->gen;
		f->dwi_cpu_ns = 0;
	}
	if (s->dwarf_cpu_gen != s->gen) {
		s->dwarf_cpu_gen = s->gen;
		s->dwarf_cpu_ns = 0;
	}
	if (f->dwi_cpu_ns >= DWARF_DRAIN_CPU_NS || s->dwarf_cpu_ns >= DWARF_ALL_DRAIN_CPU_NS) {
		s->dwarf_over_budget++;
		return 1;
	}
	left = MIN(DWARF_DRAIN_CPU_NS - f->dwi_cpu_ns, DWARF_ALL_DRAIN_CPU_NS - s->dwarf_cpu_ns);
	dwarf_open(s, p, m, f);
	if (!f->dwi) {
		f->dwi_cpu_ns += thread_cputime_ns() - t0;
		s->dwarf_cpu_ns += thread_cputime_ns() - t0;
		return 1;
	}
	/* Room for what the lookup may add, first (an eighth of the cap at most: a
	 * small cap is held after the lookup, as for a demangled name). */
	dwarf_room(&(struct dwarf_room){ .s = s, .f = f },
		   MIN(DWINLINE_MAX_LOOKUP_BYTES, s->max_file_bytes / 8));
	budget__start(&b, left);
	before = dwinline__bytes(f->dwi);
	err = dwinline__frames(f->dwi, vaddr, &b, &fr, &n);
	s->file_bytes = s->file_bytes - MIN(s->file_bytes, before) + dwinline__bytes(f->dwi);
	t0 = thread_cputime_ns() - t0;
	f->dwi_cpu_ns += t0;
	s->dwarf_cpu_ns += t0;
	if (s->file_bytes > s->max_file_bytes)
		files_room(s, f);
	if (err) {
		s->dwarf_over_budget += err == -ETIMEDOUT;
		return 1;
	}
	/* The outermost ones when they do not all fit: the function stays last. */
	k = MIN(n, max);
	fr += n - k;
	outer = out[0];
	outer.file = fr[k - 1].file;
	outer.line = fr[k - 1].line;
	outer.start_line = fr[k - 1].decl_line;
	if (!outer.name)
		outer.name = fr[k - 1].name;
	/*
	 * An inlined function without a name (its name in a dwz file that could
	 * not be read) is left out: named file+0xADDR it would split one stack
	 * into one per address; its caller's frame, with the line, remains.
	 */
	n = 0;
	for (size_t i = 0; i + 1 < k; i++) {
		if (!fr[i].name) {
			s->inline_unnamed++;
			continue;
		}
		out[n] = outer;
		out[n].kind = FRAME_INLINE;
		out[n].name = fr[i].name;
		out[n].file = fr[i].file;
		out[n].line = fr[i].line;
		out[n].start_line = fr[i].decl_line;
		n++;
	}
	out[n] = outer;
	s->inline_frames += n;
	return n + 1;
}

size_t symbolizer__user_frames(struct symbolizer *s, const struct proc_id *id, uint64_t ip,
			       bool leaf, struct sym *out, size_t max)
{
	struct proc_key k = proc_key_of(id);
	uint64_t addr = leaf ? ip : ip - 1, fileoff, vaddr;
	const struct procmap *m = NULL;
	struct htab_entry *e;
	struct symproc *p = NULL;
	struct symfile *f;
	size_t before;
	bool elf_code;
	int err;

	if (!max)
		return 0;
	s->lookups++;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_USER;
	out->addr = ip;

	e = htab__find(s->procs, &k, sizeof(k));
	p = e ? e->value : add_proc(s, id, NULL, &err);
	if (p && !p->dead)
		p->used_gen = s->gen;
	if (bp_hs_is_interp(ip))
		return java_interp(s, p, ip & BP_HS_ADDR_MASK, out);
	if (p && !p->dead) {
		m = procmaps__find(&p->maps->m, addr);
		/* Mapped after our snapshot (dlopen, new JIT region)? Re-read once per drain. */
		if (!m && !p->refreshed && !p->gone) {
			p->refreshed = true;
			if (!refresh(s, p))
				m = procmaps__find(&p->maps->m, addr);
		}
	}
	/* Frame-pointer walks through code built without them yield junk that
	 * lands in data, stack or heap: only executable mappings name frames. */
	if (!m || !(m->perms & PROCMAP_X)) {
		s->unknown++;
		return 1;
	}
	f = p->files[m - p->maps->m.maps];
	if (f && f->held) {
		f->read_gen = s->gen + 1;
		read_held(s, p->pp, f); /* its first lookup */
		s->held_read++;
	} else if (f && f->dropped) {
		reread(s, p, m, f);
	}
	/*
	 * An SBCL process's heap is read before its perf map (sb-perf's
	 * write-perfmap): a Lisp function gets one name and one kind however
	 * its addresses are covered, and code a GC moved after the map was
	 * written keeps no name of the map's. The map names what the heap
	 * does not (a version without a layout).
	 */
	if ((!f || !f->es) && jit_candidate(m) && (out->name = lisp_name(s, p, addr))) {
		out->kind = FRAME_LISP;
		out->module = m->path;
		s->lisp_names += strcmp(out->name, SYM_LISP_UNNAMED) != 0;
		return 1;
	}
	if ((!f || !f->es) && jit_candidate(m)) {
		const char *name = jit_name(s, p, addr);

		if (name) {
			out->kind = FRAME_JIT;
			out->name = name;
			out->module = pproc__perfmap_path(p->pp);
			s->jit_names++;
			return 1;
		}
	}
	if ((!f || !f->es) && jit_candidate(m)) {
		const char *names[HS_MAX_INLINE];
		size_t nj =
			java_frames(s, p, addr, names, max < HS_MAX_INLINE ? max : HS_MAX_INLINE);

		for (size_t i = 0; i < nj; i++) {
			out[i] = out[0];
			out[i].kind = i + 1 < nj ? FRAME_INLINE : FRAME_JIT;
			out[i].name = names[i];
			out[i].module = m->path;
		}
		if (nj) {
			s->java_names++;
			s->inline_frames += nj - 1;
			return nj;
		}
	}
	/*
	 * Code of an ELF file is what one of its PT_LOAD segments holds. Bytes
	 * past them are no code of its: SBCL's core appended to its executable
	 * by save-lisp-and-die :executable t is mapped from there. Such an
	 * address is never named after the file's C symbols.
	 */
	fileoff = addr - m->start + m->offset;
	elf_code = f && f->es && !elfsym__off_to_vaddr(f->es, fileoff, &vaddr);
	if (!elf_code && (out->name = lisp_name(s, p, addr))) {
		out->kind = FRAME_LISP;
		out->module = m->path;
		s->lisp_names += strcmp(out->name, SYM_LISP_UNNAMED) != 0;
		return 1;
	}
	if (!m->path) {
		s->unknown++;
		return 1;
	}
	out->module = m->path;
	if (!elf_code) {
		out->addr = fileoff + (leaf ? 0 : 1);
		s->unknown++;
		return 1;
	}
	f->used_gen = s->gen;
	out->build_id = elfsym__build_id(f->es, &out->build_id_len);
	before = elfsym__bytes(f->es);
	out->name = elfsym__lookup_demangled(f->es, vaddr, NULL);
	if (elfsym__bytes(f->es) != before) {
		/* A name demangled and kept: an insertion too (within the file's cap). */
		s->file_bytes += elfsym__bytes(f->es) - before;
		if (s->file_bytes > s->max_file_bytes)
			files_room(s, f);
	}
	out->addr = vaddr + (leaf ? 0 : 1);
	if (elfsym__gopclntab(f->es))
		return go_frames(s, f, vaddr, out, max);
	if (f->dwi || !f->dwi_err) {
		size_t n = dwarf_frames(s, p, m, f, vaddr, out, max);

		if (n > 1 || out->name)
			return n;
	}
	if (!out->name) {
		s->unknown++;
		/* One name for every address of an unnamed function. */
		out->func_known = !elfsym__fde_start(f->es, vaddr, &out->func);
	}
	return 1;
}

/* --- files for annotate --------------------------------------------------------- */

/* The newest live image of pid (an exec'd one is another image), or NULL. */
static struct symproc *live_image(struct symbolizer *s, uint32_t pid)
{
	struct symproc *p = NULL;
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(s->procs, &pos))) {
		struct symproc *q = e->value;

		if (q->id.pid == pid && !q->dead && !q->gone &&
		    (!p || q->id.exec_id > p->id.exec_id || q->id.start_time > p->id.start_time))
			p = q;
	}
	return p && ptab__alive(s->pt, &p->id) ? p : NULL;
}

int symbolizer__lisp_code(struct symbolizer *s, uint32_t pid, uint64_t ip, size_t max,
			  uint64_t *start, uint64_t *end, uint8_t **bytes)
{
	struct symproc *p = live_image(s, pid);
	int err;

	*bytes = NULL;
	if (!p)
		return -ESRCH;
	/* Named once: its heap is known (lisp_name probed it). */
	if (!lisp_name(s, p, ip) || !p->sbcl)
		return -ENOENT;
	p->sbcl->h.bytes_read = 0;
	err = sbcl__fun_range(&p->sbcl->h, ip, start, end);
	if (err)
		return err;
	if (*end - *start > max)
		return -EFBIG;
	*bytes = malloc(*end - *start);
	if (!*bytes)
		return -ENOMEM;
	err = sbcl__read_code(&p->sbcl->h, *start, *bytes, *end - *start);
	if (err) {
		free(*bytes);
		*bytes = NULL;
	}
	return err;
}

int symbolizer__open_files(struct symbolizer *s, uint32_t pid, const char *module,
			   struct sym_files *out)
{
	struct symproc *p = NULL;
	const struct procmap *m = NULL;
	struct htab_entry *e;
	struct elfsym *es;
	struct mfile *mf;
	size_t pos = 0;
	Elf *elf;
	int err, fd;

	memset(out, 0, sizeof(*out));
	out->fd = out->debug_fd = out->root.fd = -1;
	/* The newest live image of the pid (an exec'd one is another image). */
	while ((e = htab__next(s->procs, &pos))) {
		struct symproc *q = e->value;

		if (q->id.pid == pid && !q->dead && !q->gone &&
		    (!p || q->id.exec_id > p->id.exec_id || q->id.start_time > p->id.start_time))
			p = q;
	}
	if (!p || !ptab__alive(s->pt, &p->id))
		return -ESRCH;
	for (size_t i = 0; i < p->maps->m.nr && !m; i++)
		if (p->maps->m.maps[i].path && !strcmp(p->maps->m.maps[i].path, module))
			m = &p->maps->m.maps[i];
	if (!m)
		return -ENOENT;
	/* Its credentials now, and still this image after reading them. */
	err = ptab__cred(s->pt, p->pp, &out->cred);
	if (err)
		return err;
	err = ptab__file(s->pt, p->pp, m, &mf);
	if (err)
		return err;
	fd = mfile__fd(mf);
	out->fd = fd < 0 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (out->fd < 0) {
		err = fd < 0 ? fd : -errno;
		mfile__put(s->pt, mf);
		return err;
	}
	/* The debug file even when the binary has symbols: its DWARF is what counts. */
	elf = mfile__elf(mf);
	es = elf ? elfsym__open_elf(elf, (uint64_t)mfile__stat(mf)->st_size) : NULL;
	if (es && (elfsym__build_id(es, NULL) || elfsym__debuglink(es, NULL)))
		elfsym__free(find_debug_file(s, p->pp, mf, es, &out->cred, &out->debug_fd,
					     out->debug_path, sizeof(out->debug_path)));
	elfsym__free(es);
	mfile__put(s->pt, mf);
	/* Where its source files are: a root it cannot be opened in reads none. */
	if (ptab__root_open(s->pt, p->pp, &out->root))
		ptab__root_close(&out->root);
	return 0;
}

void sym_files__close(struct sym_files *sf)
{
	if (sf->fd >= 0)
		close(sf->fd);
	if (sf->debug_fd >= 0)
		close(sf->debug_fd);
	sf->fd = sf->debug_fd = -1;
	ptab__root_close(&sf->root);
}

/* --- Python ------------------------------------------------------------------------ */

static size_t py_held(const struct symbolizer *s)
{
	return s->py_bytes;
}

/* Caches with code objects in them: the largest first. */
static bool py_victim(const struct symbolizer *s, const void *item, uint64_t *key)
{
	const struct symproc *p = item;

	(void)s;
	*key = UINT64_MAX - pynamer__bytes(p->py);
	return p->py && pynamer__count(p->py);
}

/* A cache starts over: freed now. */
static void py_evict(struct symbolizer *s, void *item)
{
	struct symproc *p = item;
	size_t b = pynamer__bytes(p->py);

	s->freed_bytes += b;
	pynamer__reset(p->py);
	s->py_bytes = s->py_bytes - MIN(s->py_bytes, b) + pynamer__bytes(p->py);
	s->py_resets++;
}

/*
 * Makes room for one more code object under the cap on all processes'
 * caches. Called before a lookup, when nothing of the lookup is handed out
 * yet, so the caller's own cache may go too.
 */
static void python_room(struct symbolizer *s)
{
	struct room r = {
		.from = s->procs,
		.held = py_held,
		.cap = s->max_py_bytes,
		.need = PYNAME_ITEM_MAX,
		.keep = NULL,
		.victim = py_victim,
		.evict = py_evict,
	};

	room_make(s, &r);
}

/* A probe of an interpreter that was not initialized yet runs again after this. */
#define PY_RETRY_NS (100u * 1000 * 1000)

static struct pynamer *python_of(struct symbolizer *s, struct symproc *p)
{
	struct cpython_proc cp;
	char why[256];
	uint64_t now;
	int err;

	if (p->py || !p->pp || p->dead)
		return p->py;
	if (p->py_err && p->py_err != -EAGAIN)
		return NULL;
	now = now_ns();
	if (p->py_err == -EAGAIN && now < p->py_try_ns)
		return NULL;
	/* No warning here: the unwinder, which decides whether frames are walked, says why. */
	err = cpython__probe(s->pt, p->pp, &cp, why, sizeof(why));
	p->py_err = err;
	p->py_try_ns = now + PY_RETRY_NS;
	if (!err) {
		p->py = pynamer__new(&cp);
		if (!p->py) {
			p->py_err = -ENOMEM;
			return NULL;
		}
		pynamer__set_caps(p->py, PYNAME_MAX_CODES, s->max_py_proc_bytes);
		s->py_bytes += pynamer__bytes(p->py);
	}
	return p->py;
}

void symbolizer__python(struct symbolizer *s, const struct proc_id *id, uint64_t code,
			uint64_t meta, struct sym *out)
{
	struct proc_key k = proc_key_of(id);
	struct htab_entry *e;
	struct symproc *p;
	struct pynamer *py;
	struct pyframe f;
	size_t before, budget;
	int err;

	s->lookups++;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_PYTHON;
	out->addr = code;
	e = htab__find(s->procs, &k, sizeof(k));
	p = e ? e->value : add_proc(s, id, NULL, &err);
	py = p ? python_of(s, p) : NULL;
	if (!py || !code) {
		s->py_unknown++;
		s->unknown++;
		return;
	}
	python_room(s);
	before = pynamer__bytes(py);
	budget = s->py_lt_budget;
	err = pynamer__name(py, s->pt, p->gone ? NULL : p->pp, code, (uint32_t)meta,
			    (uint32_t)(meta >> 32), &budget, &f);
	s->py_lt_reads += budget < s->py_lt_budget;
	s->py_lt_over += !err && f.over_budget;
	s->py_lt_budget = budget;
	/* The total follows every insertion (and a cache that started over). */
	s->py_bytes = s->py_bytes - MIN(s->py_bytes, before) + pynamer__bytes(py);
	if (err) {
		s->py_unknown++;
		s->unknown++;
		return;
	}
	p->used_gen = s->gen;
	s->py_frames++;
	out->name = f.name;
	out->file = f.file;
	out->line = f.line;
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
		snprintf(buf, size, "%s+0x%" PRIx64, path_basename(sym->module),
			 sym->func_known ? sym->func : sym->addr);
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

		bytes += symfile_bytes(f);
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
		size_t b = symfile_bytes(cand[i]);

		/* Oldest first: once under the caps, the rest are newer than idle. */
		if (count <= s->max_files && bytes <= s->max_file_bytes &&
		    cand[i]->used_gen + FILE_IDLE_GENS >= s->gen)
			break;
		htab__remove(s->files, &cand[i]->serial, sizeof(cand[i]->serial));
		bytes -= MIN(bytes, b);
		s->freed_bytes += b;
		count--;
		symfile_free(s, cand[i]);
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
	for (size_t i = 0; i < k && s->pmap_bytes > s->max_perfmap_bytes; i++)
		pmap_evict(s, all[i]); /* read again from the start if it is needed */
	free(all);
}

/*
 * Says the fetcher's warnings; when files were fetched since the last look,
 * merges the debug files of those waiting for one (room made for each first);
 * every DEBUGINFOD_RETRY_NS the waiting files ask again (failed fetches are
 * retried then).
 */
static void debuginfod_poll(struct symbolizer *s)
{
	char msg[DEBUGINFOD_MAX_URL + 600];
	uint64_t done, *serials = NULL;
	size_t n = 0, cap = 0, pos = 0;
	struct htab_entry *e;

	if (!s->dbgd)
		return;
	while (debuginfod__warning(s->dbgd, msg, sizeof(msg)))
		if (s->warn)
			s->warn(s->warn_ctx, msg);
	done = debuginfod__done(s->dbgd);
	/* Also now and then: a fetch that failed is asked again (DEBUGINFOD_RETRY_NS). */
	if (done == s->dbgd_done && now_ns() < s->dbgd_retry_ns)
		return;
	s->dbgd_done = done;
	s->dbgd_retry_ns = now_ns() + DEBUGINFOD_RETRY_NS;
	/* By serial: making room for one may free another. */
	while ((e = htab__next(s->files, &pos))) {
		struct symfile *f = e->value;

		if (((f->dbgd_wait && f->es) || (f->dwz_id_len && f->dwi)) &&
		    !array_grow((void **)&serials, &cap, n + 1, sizeof(*serials)))
			serials[n++] = f->serial;
	}
	for (size_t i = 0; i < n; i++) {
		struct symfile *f;
		struct elfsym *dbg;
		size_t before;
		int fd;

		e = htab__find(s->files, &serials[i], sizeof(serials[i]));
		f = e ? e->value : NULL;
		if (f && f->dwz_id_len && f->dwi &&
		    (fd = debuginfod__open(s->dbgd, f->dwz_id, f->dwz_id_len)) >= 0) {
			/* Its dwz file came: its DWARF is read again at its next lookup. */
			close(fd);
			s->file_bytes -= MIN(s->file_bytes, dwinline__bytes(f->dwi));
			dwinline__free(f->dwi);
			f->dwi = NULL;
			f->dwi_err = 0;
			f->dwi_gen = 0;
			f->dwz_id_len = 0;
		}
		if (!f || !f->dbgd_wait || !f->es)
			continue;
		files_room(s, f);
		before = elfsym__bytes(f->es);
		dbg = fetched_debug_file(s, f);
		if (dbg && !elfsym__merge(f->es, dbg))
			s->debug_files++;
		s->file_bytes += elfsym__bytes(f->es) - before;
	}
	free(serials);
}

size_t symbolizer__debuginfod_wait(struct symbolizer *s, unsigned timeout_ms)
{
	size_t left;

	if (!s->dbgd)
		return 0;
	left = debuginfod__wait(s->dbgd, timeout_ms);
	debuginfod_poll(s);
	return left;
}

void symbolizer__drain_begin(struct symbolizer *s)
{
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(s->procs, &pos)))
		sbcl_drain(s, e->value);
}

void symbolizer__lisp_budget(struct symbolizer *s, uint64_t ns)
{
	struct htab_entry *e;
	size_t pos = 0, n = 0;

	s->lisp_budget = ns;
	s->lisp_used = 0;
	if (!ns)
		return;
	while ((e = htab__next(s->procs, &pos))) {
		const struct symproc *p = e->value;

		n += p->sbcl && !p->dead;
	}
	/* one share more: an SBCL process not known as one yet (its runtime's
	 * first name in this write: the drains' budget spent on another's) */
	s->lisp_share = ns / (n + 1);
	s->lisp_window++;
}

uint64_t symbolizer__lisp_used(const struct symbolizer *s)
{
	return s->lisp_used;
}

uint64_t symbolizer__lisp_unnamed(const struct symbolizer *s)
{
	return s->lisp_unnamed;
}

void symbolizer__lisp_drain(struct symbolizer *s)
{
	s->lisp_drains++;
	symbolizer__drain_begin(s);
}

void symbolizer__sweep(struct symbolizer *s)
{
	struct htab_entry *e;
	size_t pos = 0;

	s->gen++;
	while ((e = htab__next(s->procs, &pos))) {
		struct symproc *p = e->value;

		if (p->gone && (!s->keep_gone || (s->keep && !s->keep(s->keep_ctx, p->id.pid)))) {
			struct proc_key k = proc_key_of(&p->id);

			htab__remove(s->procs, &k, sizeof(k));
			s->freed_bytes += p->pmap_bytes + (p->maps ? p->maps->m.nr * 64 : 0);
			symproc_free(s, p);
			continue;
		}
		p->refreshed = false;
		if (!ptab__alive(s->pt, &p->id))
			p->gone = true;
	}
	evict_files(s);
	debuginfod_poll(s);
	evict_perfmaps(s);
	s->py_lt_budget = SYM_PY_LT_BUDGET;
	if (s->own_pt)
		ptab__sweep(s->pt);
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

void symbolizer__cached(const struct symbolizer *s, size_t *procs, size_t *files)
{
	*procs = htab__count(s->procs);
	*files = htab__count(s->files);
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
		st->file_bytes += symfile_bytes(e->value);
	pos = 0;
	while ((e = htab__next(s->procs, &pos))) {
		st->perfmaps += ((struct symproc *)e->value)->pmap != NULL;
		st->py_resets += pynamer__resets(((struct symproc *)e->value)->py);
	}
	st->perfmap_bytes = s->pmap_bytes;
	st->perfmap_scanned = s->pmap_scanned_bytes;
	st->perfmap_rescans = s->pmap_rescans;
	st->debug_files = s->debug_files;
	st->debuginfod_files = s->dbgd_files;
	st->jit_names = s->jit_names;
	st->lisp_names = s->lisp_names;
	st->lisp_over_budget = s->lisp_over_budget;
	st->lisp_walked = s->lisp_walked;
	st->lisp_gc_held = s->lisp_gc_held;
	st->java_names = s->java_names;
	st->java_probe_ns = s->java_probe_ns;
	st->java_name_ns = s->java_name_ns;
	st->inline_frames = s->inline_frames;
	st->py_frames = s->py_frames;
	st->py_unknown = s->py_unknown;
	st->py_bytes = s->py_bytes;
	st->py_resets = s->py_resets;
	st->py_lt_reads = s->py_lt_reads;
	st->py_lt_over = s->py_lt_over;
	st->files_over_budget = s->files_over_budget;
	st->dwarf_files = s->dwarf_files;
	st->dwarf_refused = s->dwarf_refused;
	st->dwarf_over_budget = s->dwarf_over_budget;
	st->dwz_files = s->dwz_files;
	st->dwz_missing = s->dwz_missing;
	st->inline_unnamed = s->inline_unnamed;
	st->files_too_large = s->files_too_large;
	st->files_dropped = s->files_dropped;
	st->files_reread = s->files_reread;
	st->perfmaps_dropped = s->pmaps_dropped;
	{
		struct ptab_stats ps;

		ptab__stats(s->pt, &ps);
		st->rejected = ps.refused;
	}
	st->images_lost = s->images_lost;
	st->images_mapped = s->images_mapped;
	st->kernel_reloads = s->kernel_reloads;
	st->kbpf_unnamed = s->kbpf_unnamed;
	st->kbpf_named = s->kbpf_named;
	st->kprogs_err = s->bpf_progs ? s->kprogs_err : -EOPNOTSUPP;
	st->evicted_procs = s->evicted_procs;
	st->evicted_files = s->evicted_files;
	st->files_held = s->nr_held;
	st->files_read_late = s->held_read;
	st->files_read_early = s->held_forced;
	st->files_never_read = s->held_dropped;
}
