/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * profile.h - the in-memory profile every writer reads and every reader builds.
 *
 * A profile is a multiset of samples. Each sample has its process identity
 * (pid, tid, comm, optional cgroup and container labels), a stack of frames
 * (root first), and two values: a count of on-CPU samples and, for profiles
 * recorded with --off-cpu (meta.offcpu), the time the stack spent blocked
 * in ns. A sample may hold either or both; writers of one value per stack
 * take a view of the profile (format/view.h). Strings, frames and stacks are interned: equal
 * frames have one id, equal stacks one id, and adding a sample whose identity
 * and stack already exist adds to its count. That makes merging profiles
 * (intervals, several input files) and writing any format cheap.
 *
 * Ownership: the profile owns every string it returns; they live until
 * profile__free(). Ids are dense indexes from 0.
 */
#ifndef BPFPROF_PROFILE_H
#define BPFPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum frame_kind {
	FRAME_USER = 0, /* native user code */
	FRAME_KERNEL,	/* kernel (folded: "_[k]" suffix) */
	FRAME_JIT,	/* JIT code named by a perf map (folded: "_[j]") */
	FRAME_OTHER,	/* [unknown], process roots, markers */
	FRAME_PYTHON,	/* a Python function; file is its source (folded: "name (app.py)_[py]") */
	FRAME_INLINE,	/* native code the compiler inlined into the frame below it ("_[i]") */
	FRAME_LISP,	/* a Lisp function named from SBCL's heap; module: its core ("_[lisp]") */
	FRAME_JAVA_INTERP, /* an interpreted Java method, named by its Method* ("_[0]") */
	FRAME_KIND_MAX,
};

/*
 * A frame is identified by all of its fields: the same function at two
 * source lines is two frames (writers without a place for lines merge them
 * by their label).
 */
struct pframe {
	const char *name;   /* never NULL */
	const char *module; /* file or kernel module, or NULL */
	enum frame_kind kind;
	const char *file; /* source file (Go, Python, DWARF), or NULL */
	uint32_t line;	  /* source line, 0 if unknown */
	/* The function's first line (DWARF's DW_AT_decl_line), 0 if unknown; not
	 * part of the frame's identity: the first one seen is kept. */
	uint32_t start_line;
};

/*
 * Allocation values (bpfprof --alloc, pprof heap profiles): allocations and
 * their bytes, and those still in use, each sampled allocation scaled by
 * the inverse of its probability of being sampled (estimates of the truth).
 * Each sums up to INT64_MAX at most (pprof's values are int64).
 */
struct palloc {
	uint64_t alloc_objects, alloc_bytes;
	uint64_t inuse_objects, inuse_bytes;
};

struct psample {
	uint32_t pid, tid;     /* tid 0 when not collected */
	const char *comm;      /* never NULL */
	const char *cgroup;    /* NULL when unknown */
	const char *container; /* container id, NULL when none */
	uint32_t stack;	       /* stack id */
	uint64_t count;	       /* on-CPU samples */
	uint64_t offcpu_ns;    /* off-CPU (blocked) time, ns */
	struct palloc alloc;   /* allocations (meta.alloc_period set) */
	/*
	 * The leaf frame's address, when the profile keeps addresses (record
	 * --addresses, pprof Location.address): the ELF virtual address in the
	 * leaf's module file (what addr2line and objdump take), or the kernel
	 * address of a kernel leaf. 0: not kept. Part of the sample's identity:
	 * one sample per distinct leaf address, so per-instruction counts
	 * (annotate) survive while every writer that ignores it sums them.
	 */
	uint64_t addr;
};

/* Descriptive data about the whole profile; set by whoever builds it. */
struct profile_meta {
	uint32_t freq_hz;     /* sampling frequency, 0 if unknown */
	uint64_t start_ns;    /* CLOCK_REALTIME at start, 0 if unknown */
	uint64_t duration_ns; /* 0 if unknown */
	uint64_t lost;	      /* samples the kernel could not count */
	char hostname[256];
	char unwind[16];	/* "fp", "dwarf", ... ("" if unknown) */
	bool offcpu;		/* recorded with --off-cpu: samples carry offcpu_ns */
	uint64_t offcpu_min_ns; /* shorter waits were left out (0 if unknown) */
	uint64_t offcpu_lost;	/* waits the kernel could not count */
	/* What count means, for writers that show one value: "" samples, else
	 * a unit ("us": microseconds) and what was measured ("off-CPU time",
	 * "wall-clock time"); set by views (format/view.h). */
	char unit[8];
	char value_name[24];
	/* An allocation profile (--alloc, a pprof heap profile): the mean bytes
	 * between samples; samples carry alloc values. 0: not one. */
	uint64_t alloc_period;
	/* A note for the profile's readers ("": none): pprof's comment
	 * "bpfprof note=...", e.g. --alloc -a's guard. */
	char note[192];
	/* An allocation profile: the time of its span (duration_ns) the
	 * probes were in (--alloc -a's guard takes them out; without it the
	 * whole span). 0: not one, or unknown. */
	uint64_t alloc_on_ns;
};

struct profile;

struct profile *profile__new(void);
void profile__free(struct profile *p);

struct profile_meta *profile__meta(struct profile *p);
const struct profile_meta *profile__meta_c(const struct profile *p);

/* Frame id for (kind, name, module); -ENOMEM on failure. */
int64_t profile__frame(struct profile *p, enum frame_kind kind, const char *name,
		       const char *module);
/* Frame id for all of f's fields (name NULL: "[unknown]"); -ENOMEM on failure. */
int64_t profile__frame_src(struct profile *p, const struct pframe *f);

/*
 * Adds count to the sample with this identity and stack. id->stack is set by
 * the call from frames/n; comm/cgroup/container need not be interned.
 * Returns 0 or -ENOMEM.
 */
int profile__add(struct profile *p, const struct psample *id, const uint32_t *frames, uint32_t n,
		 uint64_t count);
/*
 * The same, returning the sample's index (for profile__sample and
 * profile__add_count), or -ENOMEM. Indexes stay valid until profile__sort()
 * (which bumps profile__layout_gen()).
 */
int64_t profile__add_idx(struct profile *p, const struct psample *id, const uint32_t *frames,
			 uint32_t n, uint64_t count);
/* Adds count to sample i (an index profile__add_idx gave); 0 or -EINVAL. */
int profile__add_count(struct profile *p, size_t i, uint64_t count);
/* The same three for off-CPU time: ns added to the sample's offcpu_ns. */
int profile__add_offcpu(struct profile *p, const struct psample *id, const uint32_t *frames,
			uint32_t n, uint64_t ns);
int64_t profile__add_offcpu_idx(struct profile *p, const struct psample *id, const uint32_t *frames,
				uint32_t n, uint64_t ns);
int profile__add_offcpu_count(struct profile *p, size_t i, uint64_t ns);
/* The same for allocation values: v added to the sample's alloc. */
int profile__add_alloc(struct profile *p, const struct psample *id, const uint32_t *frames,
		       uint32_t n, const struct palloc *v);
/* Adds v to sample i's alloc values (an index profile__find_all or
 * profile__copy_if gave; nothing allocated, so it cannot fail on memory); 0 or -EINVAL. */
int profile__add_alloc_at(struct profile *p, size_t i, const struct palloc *v);
/* For each sample i of src, at[i] (nr_samples entries): the index of p's
 * sample with its identity (frames compared by value), -1: p has none.
 * Nothing added to p. 0 or -ENOMEM. */
int profile__find_all(const struct profile *p, const struct profile *src, int64_t *at);
/* Changes whenever sample indexes do (profile__sort): what caches of indexes check. */
uint64_t profile__layout_gen(const struct profile *p);
/* A number no other profile of this process has had (0 for NULL): caches tell
 * profiles apart by it, not by an address a freed profile may hand on. */
uint64_t profile__serial(const struct profile *p);
/* Adds every sample of src into dst (frames re-interned, both values). 0 or -ENOMEM. */
int profile__merge(struct profile *dst, const struct profile *src);
/* The same for the samples keep() accepts (keep NULL: all). */
int profile__merge_if(struct profile *dst, const struct profile *src,
		      bool (*keep)(const struct psample *s, void *ctx), void *ctx);
/*
 * Copies the samples i of src with keep[i] into dst without their values
 * (count and offcpu_ns 0): what they are, not what they counted. map[i]
 * (src's nr_samples entries) gets each sample's index in dst, -1 if not
 * copied. 0 or -ENOMEM (map then partly filled).
 */
int profile__copy_if(struct profile *dst, const struct profile *src, const bool *keep,
		     int64_t *map);

size_t profile__nr_samples(const struct profile *p);
const struct psample *profile__sample(const struct profile *p, size_t i);
size_t profile__nr_frames(const struct profile *p);
const struct pframe *profile__frame_get(const struct profile *p, uint32_t id);
size_t profile__nr_stacks(const struct profile *p);
const uint32_t *profile__stack_get(const struct profile *p, uint32_t id, uint32_t *n);
uint64_t profile__total(const struct profile *p);	 /* sum of counts */
uint64_t profile__total_offcpu(const struct profile *p); /* sum of offcpu_ns */

/* Sorts samples by (comm, pid, frames...) so writers give stable output. */
void profile__sort(struct profile *p);

/*
 * Build ids of modules (the files frames name in pframe.module), as lower-case
 * hex, for writers that carry them (pprof mappings). Optional: a module
 * without one simply has none. profile__merge() copies them.
 */
int profile__set_build_id(struct profile *p, const char *module, const char *hex);
/* The build id of module, or NULL. */
const char *profile__build_id(const struct profile *p, const char *module);

#endif
