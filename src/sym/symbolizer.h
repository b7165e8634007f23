/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * symbolizer.h - turns sampled addresses into names; the caching facade over
 * kallsyms, procmaps, elfsym (+ debuginfo, demangle) and perfmap.
 *
 * Processes are identified by (pid, start time, exec id) - the same triple
 * the BPF program puts in every sample key - so a recycled pid or an exec in
 * the same pid can never borrow another image's mappings. The BPF notice of a
 * new image also carries a signature of its address space (bp_mm_sig); the
 * mappings are only kept if /proc shows that same address space after they
 * are read, so an exec racing the read is caught too (the image is then
 * remembered as unreadable: its frames stay unnamed, never misnamed).
 * Files are cached by (device, inode), checked against size and times once
 * per drain so a reused inode number cannot serve stale symbols, and shared
 * by every process that maps them.
 *
 * Life cycle of a process entry: created by symbolizer__note_process() when
 * the BPF side reports a new image (while the process is alive, so short-lived
 * processes keep their mappings, files and JIT map), used while its samples
 * are symbolized, and dropped by symbolizer__sweep() one drain after the
 * process is seen gone: samples taken between a drain's buffer flip and the
 * exit are only drained the next time.
 *
 * Where names come from (see docs/symbols.md):
 *   - ELF .symtab/.dynsym of the mapped file (or Go's pc-line table, which
 *     also gives source lines and inlined frames), read through
 *     /proc/PID/map_files (or /proc/PID/root + dev/inode check), plus a
 *     separate debug file (build id, .gnu_debuglink; container root first,
 *     then the host's; else fetched by build id from debuginfod servers,
 *     opts.debuginfod) or MiniDebugInfo when the file is stripped; C++ and
 *     Rust names demangled;
 *   - for anonymous executable memory (and memfd or other non-ELF code): the
 *     process's perf map, /proc/PID/root/tmp/perf-NSPID.map, re-read when
 *     it grows; a map that is a symlink, not a regular file, on FUSE, owned by
 *     neither the process's euid nor root, or too large is rejected with one
 *     warning and never read;
 *   - kallsyms for the kernel, re-read when modules or BPF programs change.
 *
 * Memory is bounded at every moment, each cap held at insertion: before an
 * item is read, room is made for it under its cache's cap (symbolizer.c,
 * room_make()), and each item has a cap of its own. Process entries
 * (max_procs, least recently used out first); cached files (count: those no
 * process maps go; bytes: one file's symbols at most ELFSYM_MAX_BYTES, the
 * least recently used go first - a file still mapped keeps its entry, its
 * symbols are read again at its next lookup, at most once a drain); JIT maps
 * (bytes: one map at most PERFMAP_MAX_BYTES, the least recently used freed
 * and read again on demand, at most once a drain); files held open before
 * their symbols are read (max_held_files); Python code objects (per process
 * and in all: pyname.h).
 */
#ifndef BPFPROF_SYMBOLIZER_H
#define BPFPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/profile.h"
#include "proc/ptab.h"
#include "profile_abi.h" /* struct bp_kprog */

struct symbolizer;
struct ptab;

struct symbolizer_opts {
	/*
	 * The process table every process-controlled file is read through,
	 * shared with the unwinder; NULL: the symbolizer makes its own from
	 * proc_root, host_root and warn (and sweeps it).
	 */
	struct ptab *ptab;
	const char *proc_root;	   /* default "/proc" */
	const char *kallsyms_path; /* default "<proc_root>/kallsyms" */
	size_t max_procs;	   /* cap on process entries (default 16384) */
	size_t max_files;	   /* cap on cached files (default 4096) */
	size_t max_file_bytes;	   /* symbols of cached files (default 512 MiB) */
	size_t max_perfmap_bytes;  /* JIT maps held, all processes (default 64 MiB) */
	size_t max_held_files;	   /* files held open before their first lookup (default 256) */
	/* Python code objects cached: all processes (default 128 MiB), one process
	 * (default PYNAME_MAX_BYTES, 32 MiB); both held at every insertion. */
	size_t max_python_bytes, max_python_proc_bytes;
	const char *host_root; /* the host's root for debug files (default "/") */
	const char *debug_dir; /* default "/usr/lib/debug" */
	/* Debug files from debuginfod servers (debuginfod.h; not owned), or NULL. */
	struct debuginfod *debuginfod;
	/* Called once per rejected file (perf map, mapped file) with a sentence;
	 * also with a table given, for files whose symbols cost more than their
	 * time budget (elfsym.h). */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* Processes seen gone stay (until max_procs evicts the least recently
	 * used): for a caller naming stacks long after they were taken, past
	 * sweeps (--alloc --on-cpu: the heap profile's, at the end). With keep
	 * set, only those keep(keep_ctx, pid) answers true for, asked at each
	 * sweep (the others go as without keep_gone). */
	bool keep_gone;
	bool (*keep)(void *ctx, uint32_t pid);
	void *keep_ctx;
};

/*
 * The answer for one address. Strings live until the next lookup of a user
 * address or the next sweep, kernel names until the next sweep: the caches
 * hold their caps at every insertion, so a lookup may free the symbols of
 * another file, or another process's perf map (copy the strings at once).
 */
struct sym {
	const char *name;   /* function name, or NULL if none is known */
	const char *module; /* file path, "[vdso]", kernel module, perf map path, or NULL */
	uint64_t addr;	    /* address within the module (ELF vaddr), or the ip */
	/* No name: the start of the function addr lies in (its .eh_frame FDE),
	 * which names the frame ("module+0xSTART") when func_known. */
	uint64_t func;
	bool func_known;
	enum frame_kind kind;	 /* FRAME_USER, _KERNEL, _JIT (perf map), _INLINE, _LISP */
	const uint8_t *build_id; /* of the module's file, or NULL */
	size_t build_id_len;
	const char *file;    /* source file (Go's pc-line table, DWARF), or NULL */
	uint32_t line;	     /* source line, 0 if unknown */
	uint32_t start_line; /* the function's first line (DWARF), 0 if unknown */
};

struct symbolizer_stats {
	size_t procs, files, ksyms;
	uint64_t lookups, unknown;
	size_t file_bytes; /* symbols held for cached files */
	size_t perfmaps, perfmap_bytes;
	uint64_t perfmap_scanned;   /* bytes of large perf maps scanned for wanted addresses */
	uint64_t perfmap_rescans;   /* ... of them whole again */
	uint64_t debug_files;	    /* separate debug files found and used */
	uint64_t debuginfod_files;  /* ... of them from debuginfod (fetched now or cached) */
	uint64_t jit_names;	    /* frames named from perf maps */
	uint64_t inline_frames;	    /* inlined frames added (Go, DWARF) */
	uint64_t dwarf_files;	    /* files whose DWARF was read (inlined frames, lines) */
	uint64_t dwarf_refused;	    /* ... refused: too large, unreadable */
	uint64_t dwarf_over_budget; /* lookups named without inlines: the file's CPU per drain */
	uint64_t dwz_files;	    /* files whose dwz file (.gnu_debugaltlink) was read */
	uint64_t dwz_missing;	    /* ... not: found nowhere, refused (names in it lost) */
	uint64_t inline_unnamed;    /* inlined frames left out: no name (in a dwz file not read) */
	uint64_t lisp_names;	    /* frames named from SBCL's heap (lang/sbcl.c) */
	uint64_t lisp_gc_held;	    /* ... not: a GC between their sample and drain */
	uint64_t java_names;	    /* frames named from JVM code caches (lang/hotspot.c) */
	uint64_t java_probe_ns;	    /* ... CPU ns reading JVMs' VM structures */
	uint64_t java_name_ns;	    /* ... CPU ns naming code-cache addresses */
	uint64_t py_frames;	    /* Python frames named from code objects */
	uint64_t py_unknown;	    /* ... that could not be (freed, not Python, unreadable) */
	size_t py_bytes;	    /* code-object caches, all processes */
	uint64_t py_resets;	    /* ... started over: a process's cap, or the total's */
	uint64_t py_lt_reads;	    /* line tables read again for a line past their kept start */
	uint64_t py_lt_over;	    /* ... not read: over the drain's budget */
	uint64_t rejected;	    /* files refused by the safety checks */
	uint64_t files_over_budget; /* files whose symbols took more than their time budget */
	uint64_t files_too_large;   /* ... or more memory than their cap (ELFSYM_MAX_BYTES) */
	/* Room made at insertion: symbols of files still mapped freed, and read
	 * again at a later lookup; perf maps freed (read again on demand). */
	uint64_t files_dropped, files_reread, perfmaps_dropped;
	uint64_t images_lost;	/* images that exec'd or exited before they could be read */
	uint64_t images_mapped; /* ... named from their notice's mappings all the same */
	uint64_t kernel_reloads;
	uint64_t kbpf_named;   /* BPF addresses named from the program list */
	uint64_t kbpf_unnamed; /* ... left unnamed: kallsyms' program there does not hold them */
	int kprogs_err;	       /* why there is no BPF program list (0: there is one) */
	uint64_t evicted_procs, evicted_files;
	/* Files of processes in the host's root are held open and their symbols
	 * read at their first lookup: held now; read so; read early, over the
	 * cap on held files; never read (no process maps them any more). */
	size_t files_held;
	uint64_t files_read_late, files_read_early, files_never_read;
	uint64_t lisp_over_budget; /* SBCL lookups given up: walks over their budget */
	uint64_t lisp_walked;	   /* ... and the bytes of dynamic space the walks read */
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);

/* Loads kernel symbols. 0, or -errno; kptr_restrict is not an error. */
int symbolizer__load_kernel(struct symbolizer *s);
/*
 * The same in two steps, the slow one on any thread: symbolizer__read_kernel()
 * reads kallsyms (and what says when to read it again) and changes nothing
 * in s, so s stays usable by its thread meanwhile; symbolizer__install_kernel()
 * (on s's thread) adopts what was read and returns its error.
 */
struct kernel_read {
	struct ksyms *ks;
	uint64_t mod_sig, bpf_sig;
	int err;
};
void symbolizer__read_kernel(const struct symbolizer *s, struct kernel_read *kr);
int symbolizer__install_kernel(struct symbolizer *s, struct kernel_read *kr);
/*
 * Where the loaded BPF programs' JIT images are (the collector's list): with
 * it a kernel address in BPF space is named only after the program whose
 * image holds it. fn fills a malloc'd array (programs in increasing id
 * order, then sorted here); called at most once per drain, from the thread
 * that asks for names (symbolizer__read_kernel() on another does not use it).
 */
typedef int (*symbolizer_bpf_progs_fn)(void *ctx, struct bp_kprog **progs, size_t *nr);
void symbolizer__set_bpf_progs(struct symbolizer *s, symbolizer_bpf_progs_fn fn, void *ctx);
bool symbolizer__kernel_restricted(const struct symbolizer *s);

/*
 * Snapshots the process's mappings and opens their files now; their symbols
 * are read now (a process in a container: its debug files are in its root)
 * or at their first lookup (files held open, at most max_held_files: the
 * oldest is read early). 0 or -errno (-ESRCH: gone, exec'd, or a different
 * process has the pid). Idempotent.
 */
int symbolizer__note_process(struct symbolizer *s, const struct proc_id *id);
/*
 * The same, with the mappings the image's BPF notice carried (km, may be
 * NULL: ptab__get_mapped()): a process gone before it could be read is
 * named from them, through the files already known; one read through /proc
 * teaches the table the devices the two ways disagree on (overlayfs).
 */
int symbolizer__note_process_mapped(struct symbolizer *s, const struct proc_id *id,
				    const struct procmaps *km);
/* More mappings of a new image's first samples (a PROC_EVENT_MAPS notice):
 * added to a process known from its notice's mappings; nothing for one read
 * through /proc. 0 or -errno. */
int symbolizer__more_mapped(struct symbolizer *s, const struct proc_id *id,
			    const struct procmaps *km);

/*
 * A kernel module symbol has .module set ("nf_tables", "bpf" for BPF
 * programs); sym__display() shows it as perf does: "name [module]".
 */
/* Re-reads the mappings of a known process now (it mapped something new:
 * dlopen, a JIT region), while it is alive. 0 or -errno. */
int symbolizer__refresh_process(struct symbolizer *s, const struct proc_id *id);

void symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym *out);
/*
 * leaf: ip is the sampled instruction; otherwise it is a return address and
 * ip - 1 is looked up, so a call at the very end of a function is not named
 * after the next one.
 */
void symbolizer__user(struct symbolizer *s, const struct proc_id *id, uint64_t ip, bool leaf,
		      struct sym *out);

/*
 * The Lisp function (SBCL) at ip of process pid (its newest live image):
 * the instructions of its simple-fun, [*start, *end), read from the process
 * into *bytes (malloc'd, the caller frees). 0 or -errno (-ESRCH: no live
 * image of pid, -ENOENT: no SBCL or no Lisp function at ip, -EFBIG: longer
 * than max bytes, a read's error).
 */
int symbolizer__lisp_code(struct symbolizer *s, uint32_t pid, uint64_t ip, size_t max,
			  uint64_t *start, uint64_t *end, uint8_t **bytes);

/* The kernel function containing ip: [*start, *end). 0 or -ENOENT. */
int symbolizer__kernel_range(struct symbolizer *s, uint64_t ip, uint64_t *start, uint64_t *end);

/*
 * The files behind a module of a process the symbolizer knows, for reading
 * its code and DWARF (annotate): the file the process maps as `module` (a
 * struct sym.module path), opened now the way its symbols were read
 * (map_files, or the process's root with device and inode checked), and its
 * separate debug file if one exists (by build id or .gnu_debuglink,
 * container root first), whether or not the binary has a symbol table.
 * Needs the process alive. The debug file must be readable by the process
 * and by the binary's owner (debuginfo.h). With them, the process's root
 * and credentials: what the source files its line table names are to be
 * opened in and checked against (safeopen__in_root_as). 0 or -errno
 * (-ESRCH: no live image of pid known, -ENOENT: it maps no such file, or a
 * safety check's error); sym_files__close() either way.
 */
struct sym_files {
	int fd;		       /* the mapped file, read-only */
	int debug_fd;	       /* its separate debug file, or -1 */
	char debug_path[512];  /* where that was found, "" if none */
	struct safe_root root; /* the process's root (fd -1 if it could not be opened) */
	struct safe_cred cred; /* the credentials the process opens files with */
};
int symbolizer__open_files(struct symbolizer *s, uint32_t pid, const char *module,
			   struct sym_files *out);
void sym_files__close(struct sym_files *sf);

/*
 * A Python frame the sampler recorded (python_abi.h): the code object's
 * address and (meta) its checksum << 32 | instruction index. Named
 * qualname, with file (co_filename) and line, kind FRAME_PYTHON; name NULL
 * when the object cannot be read or is not the one sampled. Its strings live
 * until the next lookup (or sweep), as a user frame's: a cache that starts
 * over to make room is freed then.
 */
void symbolizer__python(struct symbolizer *s, const struct proc_id *id, uint64_t code,
			uint64_t meta, struct sym *out);

/* Frames one address can stand for: inlined levels and the function itself. */
#define SYM_MAX_FRAMES 33

/*
 * The same, with the functions the compiler inlined at ip (Go's pc-line
 * table; DWARF of native files, dwinline.h): out[0..n-2] innermost first,
 * kind FRAME_INLINE, then out[n-1] as symbolizer__user() answers, each with
 * its source file and line when known. Returns n, at least 1 when max is.
 * An interpreted Java frame the BPF walker recorded by its Method*
 * (hotspot_abi.h BP_HS_INTERP_MARK) is named "package.Class.method", kind
 * FRAME_JAVA_INTERP; else "Interpreter" (FRAME_JIT), never another name;
 * unnamed while its JVM is not read yet.
 */
size_t symbolizer__user_frames(struct symbolizer *s, const struct proc_id *id, uint64_t ip,
			       bool leaf, struct sym *out, size_t max);

/*
 * Formats the frame name: the symbol ("name [module]" for kernel module
 * symbols), else "module+0xADDR", else "[unknown]".
 */
const char *sym__display(const struct sym *sym, char *buf, size_t size);

/*
 * Before a drain reads the kernel maps: what a process's names depend on
 * is read as of then (SBCL: its GC count, lang/sbcl.h sbcl__new_drain), so
 * that the drain's samples, all taken since the last one, are judged
 * against it. Without the call, it is read at the drain's first lookup.
 */
void symbolizer__drain_begin(struct symbolizer *s);
/*
 * The same for a drain that names SBCL frames only, without a sweep (bpfprof
 * --alloc names an SBCL sample's frames as it arrives): each call starts a
 * new drain for SBCL's names (its GC count read again, its read budget
 * renewed); nothing else changes.
 */
void symbolizer__lisp_drain(struct symbolizer *s);

/* The name of an SBCL frame past symbolizer__lisp_budget (kind FRAME_LISP). */
#define SYM_LISP_UNNAMED "[unnamed: SBCL]"

/*
 * SBCL's Lisp functions named for at most ns of reading (0: no bound, the
 * default; set again: a new budget): past it, a frame in the Lisp code of a
 * process whose SBCL heap is known is named SYM_LISP_UNNAMED without a read
 * (its kept name is not checked either), and counted
 * (symbolizer__lisp_unnamed); a process not yet known as SBCL's is not
 * looked at for one. A name costs reads of the process's heap (0.05-0.5 ms,
 * its runtime's first some 50 ms): a tenant's many distinct Lisp stacks
 * cannot hold the caller (bpfprof --alloc's profile writes) past its
 * budget. Each of the N SBCL processes known when it is set gets ns / (N +
 * 1) of it (the share left for a process not known yet): one with many
 * stacks cannot spend the others', whichever order their frames come in.
 */
void symbolizer__lisp_budget(struct symbolizer *s, uint64_t ns);
/* The time spent reading names since the budget was set. */
uint64_t symbolizer__lisp_used(const struct symbolizer *s);
/* The frames named SYM_LISP_UNNAMED so far. */
uint64_t symbolizer__lisp_unnamed(const struct symbolizer *s);

/*
 * After a drain: forget processes that were already gone at the last sweep,
 * enforce the memory caps, re-read kallsyms if modules or BPF programs
 * changed, free what lookups handed out before.
 */
void symbolizer__sweep(struct symbolizer *s);

/*
 * JIT perf maps too large to hold (over 8 MiB: a process can write hundreds
 * of megabytes) keep only entries that sampled addresses need. A drain first
 * announces every user address it will ask about (symbolizer__want_user),
 * then symbolizer__want_flush() scans each such map once for all of them:
 * what was appended since the last scan always, the rest of the file again
 * at most every 10 s per process and 256 MiB/s over all - or regardless, with
 * final (the run's last drain). Lookups not announced scan on their own,
 * under the same limits. Maps up to 8 MiB are read whole, as before.
 */
void symbolizer__want_user(struct symbolizer *s, const struct proc_id *id, uint64_t ip, bool leaf);
void symbolizer__want_flush(struct symbolizer *s, bool final);

/*
 * Debug files from debuginfod: a file seen stripped asks for its debug file
 * (in the background) when it is first seen; files whose debug file arrived
 * get its symbols at the next sweep, and the sweep says the fetcher's
 * warnings. symbolizer__debuginfod_wait() waits at most timeout_ms for the
 * fetches still pending (a one-shot run's end), then does the same; it
 * returns how many are still pending.
 */
size_t symbolizer__debuginfod_wait(struct symbolizer *s, unsigned timeout_ms);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st);
/* Processes and files cached, without symbolizer__stats()'s walk over them
 * (the agent's metrics ask at every drain). */
void symbolizer__cached(const struct symbolizer *s, size_t *procs, size_t *files);

#endif
