// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record_samples.c - what the collector hands "bpfprof record": process
 * notices (read /proc and load unwind tables while the process is alive) and
 * drained samples (symbolized, labelled with their cgroup, added to the
 * profile). See record.h.
 */
#include "session/record.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "base/htab.h"
#include "base/profile.h"
#include "python_abi.h"
#include "base/util.h"
#include "format/pprof_proto.h"
#include "proc/cgroup.h"
#include "proc/labels.h"
#include "sym/symbolizer.h"
#include "unwind/unwinder.h"

/* The mappings a notice carries, as procmaps lists them (paths: the vDSO's only). */
static size_t notice_maps(const struct bp_proc_event *e, struct procmap *out)
{
	size_t n = 0;

	for (uint32_t i = 0; i < e->nr_vmas && i < BP_NOTICE_VMAS; i++) {
		const struct bp_vma *v = &e->vmas[i];

		out[n] = (struct procmap){ .start = v->start,
					   .end = v->end,
					   .offset = v->offset,
					   .inode = v->inode,
					   .dev_major = v->dev >> 20,
					   .dev_minor = v->dev & 0xfffff,
					   .perms = PROCMAP_R | PROCMAP_X | PROCMAP_P };
		if (v->flags & BP_VMA_VDSO)
			out[n].path = (char *)"[vdso]"; /* copied, never freed */
		if (v->inode || out[n].path)
			n++;
	}
	return n;
}

void record__on_proc_notice(void *ctx, const struct bp_proc_event *e)
{
	struct record_ctx *rc = ctx;
	struct proc_id id = { .pid = e->tgid,
			      .start_time = e->start_time,
			      .exec_id = e->exec_id,
			      .mm_sig = e->mm_sig,
			      .vfork = e->flags & BP_NOTICE_VFORK };
	struct procmap vmas[BP_NOTICE_VMAS];
	struct procmaps km = { .maps = vmas };

	if (e->kind == PROC_EVENT_REFRESH) {
		/* A pc in no known mapping (dlopen, new JIT code): re-read it now,
		 * while the process is alive, for the walker and for names. */
		if (rc->uw && unwinder__refresh(rc->uw, &id) == 1)
			return; /* re-read a moment ago, or backing off: nothing new came */
		symbolizer__refresh_process(rc->sym, &id);
		return;
	}
	km.nr = notice_maps(e, vmas);
	if (e->kind == PROC_EVENT_MAPS) {
		/* More of a new image's first mappings: for names, if it is gone. */
		if (km.nr)
			symbolizer__more_mapped(rc->sym, &id, &km);
		return;
	}
	rc->notices++;
	/* Tables first: until they are in, the process's stacks use frame pointers. */
	if (rc->uw)
		unwinder__note_process(rc->uw, &id);
	/* Read what we need from /proc now, while the process is alive; if it
	 * is gone, its sampled mappings name what they can. */
	symbolizer__note_process_mapped(rc->sym, &id, km.nr ? &km : NULL);
	labels__note(rc->labels, e->tgid, e->start_time, e->cgroup_id);
}

static int64_t frame_of(struct record_ctx *rc, const struct sym *s)
{
	char buf[512];
	const char *name = sym__display(s, buf, sizeof(buf));

	/* pprof mappings carry build ids (servers such as Parca symbolize by them):
	 * the symbolizer read them from the very file the process mapped. */
	if (s->build_id && s->build_id_len && s->module && s->kind != FRAME_KERNEL &&
	    !profile__build_id(rc->prof, s->module)) {
		char hex[2 * 64 + 1];
		size_t n = MIN(s->build_id_len, (size_t)64);

		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", s->build_id[i]);
		hex[2 * n] = '\0';
		profile__set_build_id(rc->prof, s->module, hex);
	}

	return profile__frame_src(rc->prof, &(struct pframe){ .name = name,
							      .module = s->module,
							      .kind = s->kind,
							      .file = s->file,
							      .line = s->line,
							      .start_line = s->start_line });
}

/* Frames of a user stack with the inlined functions added (Go). */
#define USER_FRAMES_MAX (2 * PROFILE_MAX_DEPTH)

/* The memo is of the profile as it is laid out now. */
static bool memo_current(const struct record_ctx *rc)
{
	return rc->memo && rc->memo_prof == profile__serial(rc->prof) &&
	       rc->memo_gen == profile__layout_gen(rc->prof);
}

/*
 * A key's cookie (collector_sample) is its sample's index in the profile,
 * under the memo's epoch: a key the drain hands out again is counted
 * without a lookup. Another memo (a new profile, a new layout) is another
 * epoch, and its cookies do not match.
 */
static uint64_t cookie_of(const struct record_ctx *rc, uint64_t idx)
{
	return idx < UINT32_MAX ? (uint64_t)rc->memo_epoch << 32 | idx : 0;
}

static bool cookie_valid(const struct record_ctx *rc, const struct collector_sample *s)
{
	return s->cookie && *s->cookie && *s->cookie >> 32 == rc->memo_epoch;
}

bool record__known_sample(void *ctx, const struct collector_sample *s)
{
	struct record_ctx *rc = ctx;
	struct htab_entry *e;

	if (!memo_current(rc))
		return false;
	if (cookie_valid(rc, s))
		return true;
	e = htab__find(rc->memo, s->key, sizeof(*s->key));
	if (e && s->cookie)
		*s->cookie = cookie_of(rc, (uintptr_t)e->value);
	return e;
}

void record__memo_move(struct record_ctx *rc, const struct profile *from, const struct profile *to,
		       const int64_t *map, size_t n)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!rc->memo || rc->memo_prof != profile__serial(from) ||
	    rc->memo_gen != profile__layout_gen(from))
		return; /* not from's: the next sample starts to's afresh */
	while ((e = htab__next(rc->memo, &pos))) {
		size_t i = (uintptr_t)e->value;

		if (i < n && map[i] >= 0)
			e->value = (void *)(uintptr_t)map[i];
		else
			htab__remove(rc->memo, e->key, e->klen);
	}
	rc->memo_prof = profile__serial(to);
	rc->memo_gen = profile__layout_gen(to);
	if (!++rc->memo_epoch)
		rc->memo_epoch = 1; /* the cookies name from's samples */
}

int record__want_sample(void *ctx, const struct collector_sample *s)
{
	struct record_ctx *rc = ctx;
	struct proc_id id;

	if (!s) {
		symbolizer__want_flush(rc->sym, rc->last_drain);
		return 0;
	}
	/* A key symbolized before (record__on_sample's memo) asks nothing. */
	if (record__known_sample(rc, s))
		return 0;
	id = (struct proc_id){ .pid = s->key->tgid,
			       .start_time = s->key->start_time,
			       .exec_id = s->key->exec_id };
	for (uint32_t i = 0; i < s->nr_uips; i++)
		symbolizer__want_user(rc->sym, &id, s->uips[i], i == 0);
	return 0;
}

/*
 * Symbolizes one drained key into rc->prof: the sample's index, or -errno.
 * *unnamed says whether a frame had no name (it may have one later: a JIT
 * map grew, a module or BPF program loaded, a library was dlopen()ed).
 */
static int64_t symbolize(struct record_ctx *rc, const struct collector_sample *s, bool *unnamed)
{
	const struct bp_sample_key *k = s->key;
	struct proc_id id = { .pid = k->tgid, .start_time = k->start_time, .exec_id = k->exec_id };
	/* User frames with their inlined ones (at most USER_FRAMES_MAX), kernel frames. */
	uint32_t frames[USER_FRAMES_MAX + 1 + PROFILE_MAX_DEPTH];
	struct sym syms[SYM_MAX_FRAMES];
	char comm[PROFILE_COMM_LEN + 1];
	struct psample ps = { 0 };
	uint32_t n = 0;
	struct sym sym;
	int64_t f;

	/*
	 * Root first: outermost user frame ... user leaf, then kernel entry ...
	 * kernel leaf. The user leaf is the interrupted pc, not a return address,
	 * also under a kernel stack: a page fault or an interrupt stops at the
	 * instruction itself, which may be a function's first one.
	 */
	/* Python frames take two slots, code object then checksum and instruction (leaf first). */
	uint8_t py[PROFILE_MAX_DEPTH] = { 0 }; /* 1: a Python frame's first slot, 2: its second */

	for (uint32_t i = 0; i + 1 < s->nr_uips && i < PROFILE_MAX_DEPTH - 1; i++) {
		if (bp_py_is_frame(s->uips[i])) {
			py[i] = 1;
			py[++i] = 2;
		}
	}
	for (uint32_t i = s->nr_uips; i-- > 0;) {
		/* Inlined frames (Go) only while there is room for one frame per ip. */
		size_t room = USER_FRAMES_MAX - n - i, nr;

		if (i < PROFILE_MAX_DEPTH && py[i]) {
			if (py[i] == 2)
				continue;
			symbolizer__python(rc->sym, &id, s->uips[i] & BP_PY_ADDR_MASK,
					   s->uips[i + 1], &syms[0]);
			rc->frames++;
			*unnamed |= !syms[0].name;
			f = frame_of(rc, &syms[0]);
			if (f < 0)
				return (int)f;
			frames[n++] = (uint32_t)f;
			continue;
		}

		nr = symbolizer__user_frames(rc->sym, &id, s->uips[i], i == 0, syms,
					     MIN(room, ARRAY_SIZE(syms)));
		rc->frames++;
		/* The function, then what was inlined into it, innermost last. */
		for (size_t j = nr; j-- > 0;) {
			*unnamed |= !syms[j].name;
			f = frame_of(rc, &syms[j]);
			if (f < 0)
				return (int)f;
			frames[n++] = (uint32_t)f;
		}
		if (i == 0 && rc->o->addresses)
			ps.addr = syms[nr - 1].addr; /* the leaf's address in its file */
	}
	if ((k->flags & SAMPLE_F_USTACK_ERR) && !rc->o->kernel_only) {
		f = profile__frame(rc->prof, FRAME_USER, "[unknown]", NULL);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
		ps.addr = 0;
	}
	if (s->nr_kips && rc->o->addresses)
		ps.addr = s->kips[0];
	for (uint32_t i = s->nr_kips; i-- > 0;) {
		symbolizer__kernel(rc->sym, s->kips[i], &sym);
		rc->frames++;
		*unnamed |= !sym.name;
		f = frame_of(rc, &sym);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	memcpy(comm, k->comm, PROFILE_COMM_LEN);
	comm[PROFILE_COMM_LEN] = '\0';
	ps.pid = k->tgid;
	ps.tid = k->tid;
	ps.comm = comm;
	if (!(k->flags & SAMPLE_F_KTHREAD)) {
		const struct cgroup_info *ci = labels__get(rc->labels, k->tgid, k->start_time);

		if (ci) {
			ps.cgroup = ci->path[0] ? ci->path : NULL;
			ps.container = ci->container_id[0] ? ci->container_id : NULL;
		}
	}
	if (k->flags & SAMPLE_F_OFFCPU) /* --off-cpu: the count is blocked time, ns */
		return profile__add_offcpu_idx(rc->prof, &ps, frames, n, s->count);
	return profile__add_idx(rc->prof, &ps, frames, n, s->count);
}

/*
 * A drain hands out every key that gained since the last one, so a hot stack
 * comes back every second: its sample in the profile is remembered by the
 * kernel's key (process image, both stack ids, comm, flags), and a key seen
 * before only adds its count - no symbolizing, no interning. Keys with an
 * unnamed frame are symbolized again each time, so a name that appears later
 * is used. The memo belongs to one profile and its sample order.
 */
int record__on_sample(void *ctx, const struct collector_sample *s)
{
	struct record_ctx *rc = ctx;
	struct htab_entry *e = NULL;
	bool unnamed = false;
	int64_t i;

	if (!memo_current(rc)) {
		htab__free(rc->memo);
		rc->memo = htab__new();
		rc->memo_prof = profile__serial(rc->prof);
		rc->memo_gen = profile__layout_gen(rc->prof);
		if (!++rc->memo_epoch)
			rc->memo_epoch = 1; /* 0 is no epoch: cookies start at 0 */
	}
	if (rc->memo && cookie_valid(rc, s))
		i = (uint32_t)*s->cookie;
	else if (rc->memo && (e = htab__find(rc->memo, s->key, sizeof(*s->key))))
		i = (int64_t)(uintptr_t)e->value;
	else
		i = -1;
	if (i >= 0) {
		rc->memo_hits++;
		if (s->cookie)
			*s->cookie = cookie_of(rc, (uint64_t)i);
		if (s->key->flags & SAMPLE_F_OFFCPU)
			return profile__add_offcpu_count(rc->prof, (size_t)i, s->count);
		return profile__add_count(rc->prof, (size_t)i, s->count);
	}
	rc->keys_symbolized++;
	i = symbolize(rc, s, &unnamed);
	if (i < 0)
		return (int)i;
	if (!unnamed && rc->memo) {
		e = htab__upsert(rc->memo, s->key, sizeof(*s->key), NULL);
		if (e) {
			e->value = (void *)(uintptr_t)i;
			if (s->cookie)
				*s->cookie = cookie_of(rc, (uint64_t)i);
		}
	}
	return 0;
}

/*
 * "off-CPU: 1,234 waits: 456 counted (12.345 s; 3 cut at the end), 770
 * shorter than 1 ms (0.210 s), 0 lost", then what the task table dropped.
 * prof: the run's profile, to check the accounting (NULL in continuous mode,
 * where the intervals went to the sinks).
 */
void record__offcpu_summary(const struct collector_stats *st, const struct profile *prof,
			    uint64_t min_ns)
{
	static const struct {
		int stat;
		const char *what;
	} lost[] = {
		{ STAT_OFFCPU_LOST_STACKS_FULL, "stack map full" },
		{ STAT_OFFCPU_LOST_COUNTS_FULL, "count map full" },
		{ STAT_OFFCPU_LOST_USTACK, "user stack gone" },
		{ STAT_OFFCPU_LOST_OTHER, "internal map error" },
		{ STAT_OFFCPU_REPLACED, "return not seen" },
	};
	const uint64_t *v = st->v;
	uint64_t nlost = record__offcpu_lost(st);
	struct sbuf sb = { 0 };

	sbuf_printf(&sb, "off-CPU: %" PRIu64 " waits: %" PRIu64 " counted (%.3f s",
		    v[STAT_OFFCPU_BLOCKS], v[STAT_OFFCPU_KEPT],
		    v[STAT_OFFCPU_KEPT_NS] / NS_PER_SEC_F);
	if (v[STAT_OFFCPU_CUT])
		sbuf_printf(&sb, "; %" PRIu64 " still blocked at the end, counted to it",
			    v[STAT_OFFCPU_CUT]);
	sbuf_printf(&sb, "), %" PRIu64 " shorter than %g ms (%.3f s), %" PRIu64 " lost",
		    v[STAT_OFFCPU_SHORT], min_ns / NS_PER_MS_F,
		    v[STAT_OFFCPU_SHORT_NS] / NS_PER_SEC_F, nlost);
	if (nlost) {
		const char *sep = " (";

		for (size_t i = 0; i < ARRAY_SIZE(lost); i++) {
			if (!v[lost[i].stat])
				continue;
			sbuf_printf(&sb, "%s%s: %" PRIu64, sep, lost[i].what, v[lost[i].stat]);
			sep = ", ";
		}
		sbuf_printf(&sb, "; %.3f s known)", v[STAT_OFFCPU_LOST_NS] / NS_PER_SEC_F);
	}
	if (st->offcpu_evicted)
		sbuf_printf(&sb, ", %" PRIu64 " evicted from the task table", st->offcpu_evicted);
	if (st->offcpu_pending)
		sbuf_printf(&sb, ", %" PRIu64 " still blocked", st->offcpu_pending);
	p_info("%s", sb.buf ? sb.buf : "off-CPU: out of memory");
	sbuf_free(&sb);
	if (nlost > v[STAT_OFFCPU_REPLACED])
		p_hint("raise --max-stacks / --max-entries to keep more distinct stacks");
	if (st->offcpu_evicted)
		p_hint("raise --off-cpu-tasks: threads whose ids share a slot evict each other's waits");
	p_debug("off-CPU: %" PRIu64 " ns counted in the kernel, %" PRIu64
		" blocks followed, %" PRIu64 " resumed, %" PRIu64 " cut at the end, %" PRIu64
		" replaced before they resumed",
		v[STAT_OFFCPU_KEPT_NS], v[STAT_OFFCPU_BLOCKS], v[STAT_OFFCPU_RESUMES],
		v[STAT_OFFCPU_CUT], v[STAT_OFFCPU_REPLACED]);
	if (v[STAT_OFFCPU_KSTACK_ERR] || v[STAT_OFFCPU_USTACK_ERR] || st->offcpu_carried)
		p_debug("off-CPU: %" PRIu64 " waits without a kernel stack, %" PRIu64
			" without a user stack; %" PRIu64
			" user stacks carried across buffer flips",
			v[STAT_OFFCPU_KSTACK_ERR], v[STAT_OFFCPU_USTACK_ERR], st->offcpu_carried);
	if (prof && v[STAT_OFFCPU_KEPT_NS] != profile__total_offcpu(prof))
		p_warn("off-CPU accounting mismatch: %" PRIu64 " ns counted, %" PRIu64
		       " ns in the profile",
		       v[STAT_OFFCPU_KEPT_NS], profile__total_offcpu(prof));
}

uint64_t record__offcpu_lost(const struct collector_stats *st)
{
	return st->v[STAT_OFFCPU_LOST_COUNTS_FULL] + st->v[STAT_OFFCPU_LOST_STACKS_FULL] +
	       st->v[STAT_OFFCPU_LOST_USTACK] + st->v[STAT_OFFCPU_LOST_OTHER] +
	       st->v[STAT_OFFCPU_REPLACED];
}

uint64_t record__lost(const struct collector_stats *st)
{
	return st->v[STAT_LOST_STACKS_FULL] + st->v[STAT_LOST_COUNTS_FULL] +
	       st->v[STAT_LOST_NO_MAP] + st->v[STAT_LOST_STACK_ERR];
}

uint64_t record__max_sample_rate(void)
{
	uint64_t max = UINT64_MAX;
	char *buf;

	if (read_file("/proc/sys/kernel/perf_event_max_sample_rate", 64, &buf, NULL))
		return UINT64_MAX;
	buf[strcspn(buf, "\n")] = '\0';
	if (parse_u64(buf, 10, &max))
		max = UINT64_MAX;
	free(buf);
	return max;
}

const char *record__not_taken_cause(const struct sampling_window *w)
{
	if (w->throttled)
		return "throttled";
	return w->throttles_known ? "timer late" : "throttled or timer late";
}

bool record__warn_not_taken(const struct collector_stats *from, const struct collector_stats *to,
			    uint32_t freq)
{
	struct sampling_window w;
	uint64_t expected, max;

	sampling__window(from ? &from->acct : NULL, &to->acct, &w);
	if (!w.kept_not_taken)
		return false;
	expected = w.kept + w.kept_not_taken;
	p_warn("the kernel took %" PRIu64 " of %" PRIu64 " samples (%.0f Hz per CPU, not %u): "
	       "%" PRIu64 " not taken, counted as lost (%s)",
	       w.kept, expected, (double)freq * w.kept / expected, freq, w.kept_not_taken,
	       record__not_taken_cause(&w));
	max = record__max_sample_rate();
	if (w.throttled)
		p_hint("the kernel throttles sampling above kernel.perf_event_max_sample_rate "
		       "(now %" PRIu64 "; it lowers it when samples take too long): use a lower -F",
		       max);
	else if (w.throttles_known)
		p_hint("the sampling timer ran late: the machine (or its hypervisor) was too "
		       "busy for -F %u; use a lower -F",
		       freq);
	else
		p_hint("the sampling timer ran late or was throttled (above "
		       "kernel.perf_event_max_sample_rate, now %" PRIu64 "): use a lower -F",
		       max);
	return true;
}

void record__fill_meta(struct profile *p, const struct record_ctx *rc, uint64_t start_real,
		       uint64_t duration_ns, uint64_t lost)
{
	struct profile_meta *m = profile__meta(p);

	m->freq_hz = rc->o->freq;
	m->start_ns = start_real;
	m->duration_ns = duration_ns;
	m->lost = lost;
	m->offcpu = rc->o->offcpu;
	m->offcpu_min_ns = rc->o->offcpu ? rc->o->offcpu_min_ns : 0;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	snprintf(m->unwind, sizeof(m->unwind), "%s", rc->unwind_name ? rc->unwind_name : "fp");
	if (rc->kernel_build_id[0])
		profile__set_build_id(p, PPROF_KERNEL_MAPPING, rc->kernel_build_id);
}
