/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * collector_int.h - what the collector's rooms share (collector.c lists
 * them): struct collector, and each room's functions the others call. Not
 * for outside src/collector/: collector.h is the interface.
 */
#ifndef BPFPROF_COLLECTOR_INT_H
#define BPFPROF_COLLECTOR_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/errmsg.h"
#include "collector/collector.h"
#include "collector/sampling.h"
#include "collector/slotset.h"
#include "unwind/korc.h"
#include "unwind/unwinder.h"
#include "profile.skel.h"

#define FD_LIMIT_HINT "raise it with 'ulimit -n 4096' (LimitNOFILE= in a systemd unit)"

struct prefill;

struct collector {
	struct collector_opts opts;
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	struct event {
		int fd; /* perf event; -1 once closed (the figures below stay) */
		struct bpf_link *link;
		int cpu;
		struct perf_event_mmap_page *ring; /* its records (event_ring()), or NULL */
		uint64_t throttles;		   /* ... of throttling, seen so far */
		uint64_t run_ns;		   /* running time, at the last read */
		uint64_t off_base, steal_base;	   /* its CPU's /proc/stat ticks at attach */
		uint64_t off, steal;		   /* ... at the last read */
	} * events;
	size_t nr_events, cap_events;
	uint32_t active; /* mirror of bss->active_buf */
	int counts_fd[PROFILE_NR_BUFS];
	int stacks_fd[PROFILE_NR_BUFS];
	collector_proc_fn proc_fn;
	void *proc_ctx;
	uint64_t drains, drain_ns, drain_ns_total, missing_stacks, flips, stacks_read;
	struct htab *stacks_seen; /* stack id -> its copy, read from the active set */
	/* collector__stats() is asked several times a drain (rates, metrics):
	 * its last answer, reused while no drain or detach came in between and
	 * it is younger than STATS_REUSE_NS (each answer reads every event's
	 * count - an IPI to its CPU - and /proc/stat). */
	struct collector_stats last_stats;
	uint64_t last_stats_ns;
	/* What the events took against what they should have (events__measure()):
	 * measured once sampling has run a second, then at most every
	 * MEASURE_EVERY_NS while sampling: each time costs tens of us of CPU
	 * (2 CPUs: a cold /proc/stat read ~55 us, the event reads ~20-35
	 * more), a good part of a bpfprof top refresh. The last measurement,
	 * the one before, and the profile's samples not taken by cause. */
	struct sampling_figures acct, acct_prev;
	uint64_t attach_ns;
	uint64_t not_taken_throttled, not_taken_late;
	uint64_t *off_now, *steal_now; /* /proc/stat by CPU: idle + iowait, steal; or NULL */
	struct target_cpu {	       /* -p: each target's CPU time (ticks) */
		uint32_t pid;
		uint64_t start;	     /* its start time: the same process */
		uint64_t base, last; /* at attach, at the last read */
	} * tcpu;
	/* -d: the thread that stops the events at the deadline (deadline.c),
	 * and the figures it took then. */
	struct deadline {
		pthread_t th;
		pthread_mutex_t mu;
		pthread_cond_t cv;
		bool started, cancel, fired, stat_ok;
		uint64_t at, fired_ns;
		uint64_t *off, *steal; /* /proc/stat by CPU at the deadline */
		uint64_t *tlast;       /* the targets' CPU ticks then, where tok */
		bool *tok;
	} dl;
	/* Count slots (profile_abi.h): the arrays' mmaps, and what the drain
	 * knows of the active set's slots. */
	struct bp_slot_region *slot_next;
	uint64_t *slot_counts;
	struct bp_sample_key *slot_keys;
	size_t slot_next_len, slot_counts_len, slot_keys_len;
	uint32_t regions, per_region; /* possible CPUs + 1, slots per region and set */
	uint32_t *taken;	      /* per region: slots taken in the set being read */
	struct slotset *sset;
	size_t flip_at;	      /* keys in the active set that make the next drain flip */
	bool sampling;	      /* attached: runs may still come */
	uint32_t unwind_mode; /* in effect (auto falls back to fp if the walker cannot load) */
	int unwind_err;	      /* why it fell back */
	bool fp_walker;	      /* frame pointers walked by the program, not bpf_get_stack() */
	int chunk_fd[UNWIND_MAX_CHUNKS]; /* unwind slot pool chunks, 0 = none */
	bool chunk0_spare;		 /* chunk 0 installed ahead, not asked for yet */
	struct prefill *prefill;	 /* the map-in-map slots filled during the load */
	bool prefill_tried;
	bool prefilled;	  /* ... and they were */
	struct korc korc; /* kernel ORC table, until it is in the kernel */
	size_t korc_entries;
	uint64_t open_ns, korc_ns; /* collector__open, and the ORC table's part of it */
	bool kprogs_off;	   /* the BPF program list (kprogs.bpf.h) is not loaded */
	struct bpf_link *kprogs_link;
	int kprogs_err;
	int korc_load_err; /* 0: the table came from the cache, else why not */
	int korc_save_err; /* built: 0 saved in the cache, else why not */
	uint64_t korc_tramp[3];
	int kw_err;	 /* why it does not (0: it does) */
	int ncpu;	 /* possible CPUs: entries of cpu_state */
	void *cpu_state; /* its mmap, NULL: read by lookups (and no hot slots) */
	size_t cpu_state_len;
	struct bpf_link *offcpu_links[2]; /* --off-cpu: sched_switch, sched_process_fork */
	struct bpf_link *target_links[2]; /* -p, -- COMMAND: sched_process_exit, ..._fork */
	uint64_t offcpu_carried;
};

/* open_load.c: an mmapable array map mapped whole (*len: the mapping's
 * length; NULL with errno), and written whole. */
void *map_array(struct bpf_map *m, int prot, size_t *len);
int fill_mmap(struct bpf_map *m, const void *data, size_t len);

/* kwalk.c: c->korc for the kernel stack walk (0 or why not), before the
 * load; after it, into the program's maps (then the copy is dropped). */
int kwalk__prepare(struct collector *c);
int kwalk__fill(struct collector *c, struct errmsg *em);

/* prefill.c: the buffer sets' map-in-map slots. __start makes the maps and
 * fills them on threads (NULL: it could not), __reuse hands them to an
 * opened skeleton, __finish (after the load) takes the fill's result or
 * fills them now. uw_chunk_map: a new unwind table chunk. */
int uw_chunk_map(void);
struct prefill *prefill__start(struct collector *c);
bool prefill__reuse(struct prefill *p, struct profile_bpf *s);
void prefill__free(struct prefill *p);
int prefill__finish(struct collector *c, struct errmsg *em);

/* offcpu.c: --off-cpu's part; __fill, __attach and __detach do nothing
 * without it, __configure keeps its maps small then. */
void offcpu__configure(struct collector *c);		  /* before the load */
int offcpu__fill(struct collector *c, struct errmsg *em); /* its filters, after */
int offcpu__attach(struct collector *c, struct errmsg *em);
void offcpu__detach(struct collector *c); /* counts the waits still going, then stops */
/* At a flip: the user stacks of the tasks blocked now, from the old set's
 * stacks map into the new one's (their waits end in the new set). */
int offcpu__carry(struct collector *c, int from_fd, int to_fd);
int offcpu__pending(struct collector *c, uint64_t *n); /* adds the waits going on now */

/* drain.c: the count slots' mmaps and the drain's view of them; the stacks
 * kept from the active set. */
int drain__open(struct collector *c, struct errmsg *em);
void drain__close(struct collector *c);
void drain__forget_stacks(struct collector *c);

/* events.c: a perf event per CPU, attached; -p's CPU time (with base,
 * where it stands at attach: the number of targets found); what the events
 * took against what they should have, into c->acct. */
int events__attach(struct collector *c, struct errmsg *em);
size_t events__targets_read(struct collector *c, bool base);
void events__measure(struct collector *c, bool read_targets);

/* stats.c: the program's counters on one CPU (STAT_MAX values). */
bool stats__cpu_counters(struct collector *c, int cpu, uint64_t *v);

/* deadline.c: -d's thread; its snapshot, used by events.c once taken. */
void deadline__cancel(struct collector *c);
void deadline__free(struct collector *c);
bool deadline__stat(const struct collector *c, uint64_t *off, uint64_t *steal);
bool deadline__targets(struct collector *c);

#endif
