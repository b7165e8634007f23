/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * toptable.h - what "bpfprof top" shows, computed from the profiles of its
 * window (one per drain): the functions with their self and total samples,
 * and the processes, under the view's filter (process name, pid or
 * container; one zoomed-in process) and frame selection (all, user only,
 * kernel only, with bcc profile -U/-K semantics: every sample still counts,
 * the other side's frames are dropped, so the leaf moves).
 *
 * The window is a list of slices, one per drain: a profile and what each of
 * its samples gained in that drain (top keeps one profile for many drains,
 * so a stack is symbolized and interned once, and each slice is a list of
 * (sample, count) pairs). Functions are (kind, module file name, name)
 * across the slices; "total" counts a function once per stack even when it
 * recurses. Rows point at strings of the profiles they were built from: a
 * table is valid until one of them is freed (rebuild after the window moves).
 *
 * top refreshes through a struct toptable, which keeps what it counted: a
 * refresh adds the slices that joined the window and takes away those that
 * left, instead of counting the whole window again, and sorts only the rows
 * shown (view.rows), from the last order (a refresh moves few rows). It
 * counts again from nothing when the view's filter, zoom or frames change,
 * when a profile leaves the window (rows may point at its strings), or when
 * a slice cannot be followed (id 0, no deltas).
 */
#ifndef BPFPROF_TOPTABLE_H
#define BPFPROF_TOPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/profile.h"

enum top_frames {
	TOP_FRAMES_ALL = 0,
	TOP_FRAMES_USER,   /* kernel frames dropped */
	TOP_FRAMES_KERNEL, /* user frames dropped */
};

enum top_sort {
	TOP_SORT_SELF = 0,
	TOP_SORT_TOTAL,
};

struct top_view {
	const char *filter; /* digits: a pid; else a part of the process name, or the
			     * start of a container id; NULL or "": every process */
	uint32_t zoom_pid;  /* 0: every process */
	enum top_frames frames;
	enum top_sort sort;
	size_t rows; /* the table holds the first this many rows (0: all of them) */
};

struct top_row {
	const char *name;
	const char *module; /* basename, or NULL */
	enum frame_kind kind;
	uint64_t self, total;
	uint32_t id; /* toptable's: which function this row counts */
};

struct top_proc {
	uint32_t pid;
	const char *comm;
	const char *container; /* NULL when none */
	uint64_t samples;
};

struct top_table {
	struct top_row *rows; /* sorted by the view's sort; at most the view's rows */
	size_t nr;
	struct top_proc *procs; /* by samples, most first */
	size_t nr_procs;
	uint64_t samples;   /* samples the view covers (the shares' denominator) */
	uint64_t no_frames; /* ... of which had no frame of the selected kind */
};

/* What sample `sample` of a slice's profile gained in its drain. */
struct top_delta {
	uint32_t sample;
	uint64_t count;
};

struct top_slice {
	const struct profile *p;
	const struct top_delta *d; /* NULL: every sample of p, with its count */
	size_t n;
	/* For toptable__update: a slice's id names the same p, d and n at every
	 * update (ids grow along the window); 0: not followed. */
	uint64_t id;
};

/* Builds t from slices[0..n) under v. 0 or -ENOMEM (t is then empty). */
int toptable__build(struct top_table *t, const struct top_slice *slices, size_t n,
		    const struct top_view *v);
void toptable__free(struct top_table *t);

/* What the last update counted; see the top of this file. */
struct toptable;

struct toptable *toptable__new(void);
void toptable__delete(struct toptable *tt);
/*
 * Brings the table to slices[0..n) under v, as toptable__build would build
 * it. The slices of the last update that are not in this one must still be
 * valid during this call (their counts are taken away): free them after it.
 * 0 or -ENOMEM (the table is then empty, and the next update counts again).
 */
int toptable__update(struct toptable *tt, const struct top_slice *slices, size_t n,
		     const struct top_view *v);
/* The table of the last update; valid until the next update or delete. */
const struct top_table *toptable__table(const struct toptable *tt);
/* Updates so far, and how many of them counted the window from nothing. */
void toptable__stats(const struct toptable *tt, uint64_t *updates, uint64_t *recounts);

#endif
