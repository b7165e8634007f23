// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * perfscript_read.c - reads the text `perf script` prints for a perf.data
 * recording, the input of stackcollapse-perf.pl, so a perf recording
 * becomes a bpfprof report, flame graph, pprof or diff.
 *
 * The layout, perf's default fields and the ones -F adds or removes:
 *
 *     # header lines (perf script --header), before the first sample
 *     COMM  TID|PID/TID  [CPU]  SECONDS.MICROS:  PERIOD  EVENT:  [IP SYM+OFF (DSO)]
 *     \t    IP SYM+OFF (DSO)          one line per frame, leaf first
 *       FILE:LINE                     after a frame, with -F +srcline
 *     (a blank line ends a sample)
 *
 * COMM may hold spaces ("V8 WorkerThread"); the process/thread field is the
 * first number (or number/number) after it that a CPU, a time or an event
 * follows. Without a call graph (perf record without -g) the leaf is on the
 * sample's own line and samples are not separated by blank lines; with -F
 * ip,sym the sample line is empty. Frames: a DSO in brackets is the kernel
 * ([kernel.kallsyms]) or a kernel module, except the user-space pseudo-files
 * ([vdso], [heap], ...); /tmp/perf-PID.map is JIT code, and its "py::f:file"
 * entries (CPython 3.12's perf trampolines) are Python functions; "(inlined)"
 * (--call-graph dwarf) is a function inlined into the next frame. An
 * unnamed frame in a known file is "file+0xADDR" with the address perf
 * printed; the +0xOFF after a name is dropped, as stackcollapse-perf does.
 *
 * Each sample counts once (its PERIOD is not a count; perf's own -F
 * decides it). Events are not mixed: only one event's samples are read -
 * the one asked for (input_opts.event), else the one with the most samples
 * (a first pass counts them) - and the others are counted in a note (see
 * reader.h). perf's default fields carry thread ids only: the samples then
 * have no pid (0) and their tid.
 *
 * The text is hostile input like any profile: lines are parsed with
 * lengths, numbers strictly, at most INPUT_MAX_DEPTH frames a sample, and
 * only INPUT_MAX_EVENTS distinct events are named in the note. perf prints
 * command and symbol names as they are, so a process can put what looks
 * like perf's fields, or a new line, in its own name: a line that is not
 * understood leaves its sample out, counted in the note (the first one's
 * line and reason said), and only a file with no sample understood is an
 * error. A name can still make its sample misread, or add lines that read
 * as samples (perf script's text cannot tell); whatever a name does, what
 * is left out is counted in the note.
 */
#include "format/reader.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define INPUT_MAX_EVENTS 16 /* distinct events named in the note or an error */
#define PID_FIELD_END	 40 /* where the pid field starts at the latest (see start_sample) */

/* A frame of the sample being read; strings are offsets into ps.arena (NONE: none). */
#define NONE SIZE_MAX
struct pend {
	size_t name, module, file;
	uint32_t line;
	enum frame_kind kind;
};

struct ps_event {
	char name[64];
	uint64_t samples;
};

struct ps {
	struct profile *p;
	struct errmsg *em;
	const char *want; /* the event to read, NULL: the first one seen */
	size_t lineno;

	/*
	 * The sample being read: its frames leaf first, as perf prints them,
	 * kept until the sample ends - a source line may follow a frame, and
	 * an inlined frame's file is that of the frame after it - with their
	 * strings in one arena; then interned (root first) and added.
	 */
	bool in_sample, skip;
	uint32_t pid, tid;
	char *comm;
	size_t comm_cap;
	struct pend *pend;
	size_t nr_frames, cap_pend;
	struct sbuf arena;
	uint32_t *ids;
	size_t cap_ids;

	struct ps_event events[INPUT_MAX_EVENTS];
	size_t nr_events;
	uint64_t other_events; /* samples of events past the table */
	int reading;	       /* index of the event read, -1 until one is chosen */
	bool exact;	       /* want is an event name counted in the first pass */
	bool counting;	       /* the first pass: only the events' samples are counted */
	uint64_t read, first_ns, last_ns;

	/* Samples left out because a line of theirs was not understood. */
	bool sample_bad;
	uint64_t bad;
	int bad_err;
	char bad_msg[128]; /* the first one's reason, "line N: ..." */
};

static bool is_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool is_hex(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'f')))
			return false;
	return true;
}

/* Decimal s[0..n) into *v, at most max; false if it is not one. */
static bool num(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	char buf[24];

	if (!is_digits(s, n) || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return !parse_u64(buf, 10, v) && *v <= max;
}

/* "1156.754781:" (or with nanoseconds) -> ns; false if the token is not a time. */
static bool time_token(const char *s, size_t n, uint64_t *ns)
{
	const char *dot = memchr(s, '.', n);
	uint64_t sec, frac;
	size_t fl;

	if (n < 4 || s[n - 1] != ':' || !dot)
		return false;
	fl = (size_t)(s + n - 1 - (dot + 1));
	if (!num(s, (size_t)(dot - s), UINT64_MAX / NS_PER_SEC - 1, &sec) || !fl || fl > 9 ||
	    !num(dot + 1, fl, UINT64_MAX, &frac))
		return false;
	while (fl++ < 9)
		frac *= 10;
	*ns = sec * 1000000000ull + frac;
	return true;
}

/* "[001]" */
static bool cpu_token(const char *s, size_t n)
{
	return n >= 3 && s[0] == '[' && s[n - 1] == ']' && is_digits(s + 1, n - 2);
}

/* "1234" or "1234/1235" */
static bool pid_token(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);

	if (!slash)
		return is_digits(s, n);
	return is_digits(s, (size_t)(slash - s)) &&
	       is_digits(slash + 1, (size_t)(s + n - slash - 1));
}

struct tok {
	const char *s;
	size_t n;
};

/* Splits s at runs of spaces and tabs into at most max tokens; returns how many. */
static size_t tokens(const char *s, struct tok *t, size_t max)
{
	size_t nr = 0;

	while (*s && nr < max) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		t[nr].s = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		t[nr].n = (size_t)(s - t[nr].s);
		nr++;
	}
	return nr;
}

/* --- frames ---------------------------------------------------------------- */

/* User-space files perf shows in brackets; other bracketed names in kernel space are modules. */
static bool user_pseudo_file(const char *dso)
{
	static const char *const names[] = { "[vdso]",	  "[vsyscall]", "[vectors]",
					     "[heap]",	  "[stack]",	"[uprobes]",
					     "[sigpage]", "[vvar]",	"[unknown]" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(dso, names[i]))
			return true;
	return !strncmp(dso, "[anon", 5) || !strncmp(dso, "[stack:", 7);
}

static bool is_perf_map(const char *dso)
{
	const char *base = path_basename(dso);
	size_t n = strlen(base);

	return n > 9 && !strncmp(base, "perf-", 5) && !strcmp(base + n - 4, ".map") &&
	       is_digits(base + 5, n - 9);
}

static enum frame_kind kind_of(const char *dso, uint64_t addr)
{
	size_t n = strlen(dso);

	if (!strncmp(dso, "[kernel.", 8) || !strncmp(dso, "[guest.kernel.", 14) ||
	    !strcmp(path_basename(dso), "vmlinux") || !strncmp(path_basename(dso), "vmlinux-", 8))
		return FRAME_KERNEL;
	/* A kernel module, "[nf_conntrack]": in the kernel's half of the address space. */
	if (n > 2 && dso[0] == '[' && dso[n - 1] == ']' && !user_pseudo_file(dso) && (addr >> 63))
		return FRAME_KERNEL;
	if (is_perf_map(dso))
		return FRAME_JIT;
	return FRAME_USER;
}

/* Copies s (NULL: none) into the arena; its offset, NONE, or SIZE_MAX - 1 out of memory. */
static size_t keep(struct ps *st, const char *s)
{
	size_t at = st->arena.len;

	if (!s)
		return NONE;
	return sbuf_add(&st->arena, s, strlen(s) + 1) ? SIZE_MAX - 1 : at;
}

/*
 * Parses "IP SYM+0xOFF (DSO)", "IP SYM", "IP (DSO)" (s NUL-terminated, cut
 * in place) into *out; -EINVAL if s is not one.
 */
static int parse_frame(struct ps *st, char *s, struct pend *out)
{
	char *end, *sym, *dso = NULL, *plus, name[512];
	struct pframe pf = { 0 };
	size_t addr_len;
	uint64_t addr;

	while (*s == ' ' || *s == '\t')
		s++; /* perf right-aligns the address */
	end = s + strlen(s);
	addr_len = strspn(s, "0123456789abcdefABCDEF");

	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	if (!addr_len || (s[addr_len] && s[addr_len] != ' ' && s[addr_len] != '\t') ||
	    addr_len > 16 || parse_hex_n(s, addr_len, &addr))
		return -EINVAL;
	sym = s + addr_len;
	/* The DSO: the bracketed group that ends the line, after a space. */
	if (end > sym && end[-1] == ')') {
		int depth = 0;

		for (char *q = end - 1; q > sym; q--) {
			if (*q == ')')
				depth++;
			else if (*q == '(' && --depth == 0) {
				if (q[-1] == ' ' || q[-1] == '\t') {
					dso = q + 1;
					end[-1] = '\0';
					*q = '\0';
					end = q;
				}
				break;
			}
		}
	}
	while (*sym == ' ' || *sym == '\t')
		sym++;
	while (end > sym && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	/* "sym+0x1d": the offset goes (stackcollapse-perf does the same). */
	plus = strrchr(sym, '+');
	if (plus && plus > sym && plus[1] == '0' && plus[2] == 'x' &&
	    is_hex(plus + 3, strlen(plus + 3)))
		*plus = '\0';
	if (dso && !*dso)
		dso = NULL;
	pf.kind = dso ? kind_of(dso, addr) : FRAME_USER;
	pf.name = *sym ? sym : "[unknown]";
	if (dso && pf.kind == FRAME_KERNEL) {
		size_t n = strlen(dso);

		/* [kernel.kallsyms] is the kernel itself; "[mod]" a module. */
		if (dso[0] == '[' && dso[n - 1] == ']' && strncmp(dso, "[kernel.", 8) &&
		    strncmp(dso, "[guest.kernel.", 14)) {
			dso[n - 1] = '\0';
			pf.module = dso + 1;
		}
	} else if (dso && !strcmp(dso, "inlined")) {
		pf.kind = FRAME_INLINE; /* its file: the caller's (end_sample()) */
	} else if (dso && strcmp(dso, "[unknown]")) {
		pf.module = dso;
	}
	if (pf.kind == FRAME_JIT && !strncmp(pf.name, "py::", 4)) {
		/* "py::qualname:/path/app.py", CPython 3.12's perf map entries */
		char *colon = strrchr(pf.name + 4, ':');

		if (colon && colon > pf.name + 4 && colon[1]) {
			*colon = '\0';
			pf.file = colon + 1;
			pf.name += 4;
			pf.kind = FRAME_PYTHON;
			pf.module = NULL;
		}
	}
	if (!strcmp(pf.name, "[unknown]") && pf.module && pf.kind != FRAME_KERNEL) {
		/* bpfprof's name for an address without a symbol */
		snprintf(name, sizeof(name), "%s+0x%llx", path_basename(pf.module),
			 (unsigned long long)addr);
		pf.name = name;
	}
	out->kind = pf.kind;
	out->line = 0;
	out->name = keep(st, pf.name);
	out->module = keep(st, pf.module);
	out->file = keep(st, pf.file);
	if (out->name == SIZE_MAX - 1 || out->module == SIZE_MAX - 1 || out->file == SIZE_MAX - 1)
		return -ENOMEM;
	return 0;
}

/* "  cxxwork.cc:19": a source line perf script -F +srcline prints after a frame. */
static bool is_srcline(const char *line, const char **file, size_t *file_len, uint64_t *no)
{
	const char *s = line, *colon;
	size_t n;

	if (*s != ' ')
		return false;
	while (*s == ' ')
		s++;
	n = strlen(s);
	colon = n ? memrchr(s, ':', n) : NULL;
	if (!colon || colon == s || !num(colon + 1, strlen(colon + 1), UINT32_MAX, no))
		return false;
	*file = s;
	*file_len = (size_t)(colon - s);
	return true;
}

/* The source line of the frame before it: 1 if line was one, 0 if not, or -errno. */
static int srcline(struct ps *st, const char *line)
{
	struct pend *f;
	const char *file;
	size_t file_len, at = st->arena.len;
	uint64_t no;

	if (!is_srcline(line, &file, &file_len, &no))
		return 0;
	if (st->counting || st->skip || !st->nr_frames)
		return 1;
	f = &st->pend[st->nr_frames - 1];
	if (f->line || !no || !strncmp(file, "??", 2))
		return 1; /* already has one, or perf knew no line */
	if (sbuf_add(&st->arena, file, file_len) || sbuf_add(&st->arena, "", 1))
		return -ENOMEM;
	f->file = at;
	f->line = (uint32_t)no;
	return 1;
}

static int add_frame(struct ps *st, char *s)
{
	int rc;

	if (st->counting) {
		st->nr_frames++;
		return 0;
	}
	if (st->nr_frames >= INPUT_MAX_DEPTH)
		return errmsg_set(st->em, -EFBIG, "line %zu: more than %d frames in a sample",
				  st->lineno, INPUT_MAX_DEPTH);
	if (array_grow((void **)&st->pend, &st->cap_pend, st->nr_frames + 1, sizeof(*st->pend)))
		return -ENOMEM;
	rc = parse_frame(st, s, &st->pend[st->nr_frames]);
	if (rc == -EINVAL)
		return errmsg_set(st->em, -EINVAL,
				  "line %zu: expected a frame, \"ADDRESS SYMBOL (FILE)\"",
				  st->lineno);
	if (rc)
		return rc;
	st->nr_frames++;
	return 0;
}

/* --- samples ---------------------------------------------------------------- */

static const char *str(const struct ps *st, size_t at)
{
	return at == NONE ? NULL : st->arena.buf + at;
}

static int end_sample(struct ps *st)
{
	struct psample id = { .pid = st->pid, .tid = st->tid };
	size_t n = st->nr_frames, module = NONE;
	int rc;

	if (!st->in_sample)
		return 0;
	st->in_sample = false;
	st->nr_frames = 0;
	if (st->sample_bad && !st->counting)
		st->bad++;
	if (st->skip || st->sample_bad || st->counting) {
		st->sample_bad = false;
		sbuf_reset(&st->arena);
		return 0;
	}
	if (array_grow((void **)&st->ids, &st->cap_ids, n + 1, sizeof(*st->ids)))
		return -ENOMEM;
	/* Root first, as profiles hold stacks; perf printed the leaf first. */
	for (size_t i = n; i-- > 0;) {
		struct pend *f = &st->pend[i];
		struct pframe pf = { .name = str(st, f->name),
				     .kind = f->kind,
				     .module = str(st, f->module),
				     .file = str(st, f->file),
				     .line = f->line };
		int64_t fid;

		/* An inlined frame is in the file of the frame it was inlined into. */
		if (f->kind == FRAME_INLINE && f->module == NONE)
			pf.module = str(st, module);
		else if (f->kind != FRAME_INLINE)
			module = f->module;
		fid = profile__frame_src(st->p, &pf);
		if (fid < 0)
			return (int)fid;
		st->ids[n - 1 - i] = (uint32_t)fid;
	}
	sbuf_reset(&st->arena);
	id.comm = st->comm && st->comm[0] ? st->comm : "[unknown]";
	rc = profile__add(st->p, &id, st->ids, (uint32_t)n, 1);
	st->read++;
	return rc;
}

static bool event_matches(const char *event, const char *want)
{
	size_t n = strlen(want);

	/* "cpu-clock" reads "cpu-clock:ppp" (perf's modifiers after the name). */
	return !strcmp(event, want) || (!strncmp(event, want, n) && event[n] == ':');
}

/* Counts a sample of event and says whether it is read. */
static bool count_event(struct ps *st, const char *event, size_t n)
{
	char name[sizeof(st->events[0].name)];
	size_t i;

	snprintf(name, sizeof(name), "%.*s", (int)MIN(n, sizeof(name) - 1), event);
	for (i = 0; i < st->nr_events; i++)
		if (!strcmp(st->events[i].name, name))
			break;
	if (i == st->nr_events) {
		if (i == INPUT_MAX_EVENTS) {
			st->other_events++;
			return false;
		}
		snprintf(st->events[i].name, sizeof(st->events[i].name), "%s", name);
		st->nr_events++;
	}
	st->events[i].samples++;
	if (st->reading < 0 &&
	    (!st->want || (st->exact ? !strcmp(name, st->want) : event_matches(name, st->want))))
		st->reading = (int)i;
	return st->reading == (int)i;
}

static int set_comm(struct ps *st, const char *s, size_t n)
{
	if (array_grow((void **)&st->comm, &st->comm_cap, n + 1, 1))
		return -ENOMEM;
	memcpy(st->comm, s, n);
	st->comm[n] = '\0';
	return 0;
}

static bool ends_in_colon(const struct tok *t)
{
	return t->s[t->n - 1] == ':';
}

/*
 * How well t[i..nt) reads as what follows the pid: 2 for [CPU] TIME:
 * [PERIOD] EVENT: and the rest (or nothing after the time); 1 for what is
 * left when -F removed fields - [CPU] EVENT:, [CPU] alone, nothing; 0 if it
 * is neither. Digits and a time in a command name ("x 1 1.0: y", perf
 * prints names as they are) mostly are not followed by all of that.
 */
static int fields_follow(const struct tok *t, size_t nt, size_t i)
{
	uint64_t ns;
	bool cpu = i < nt && cpu_token(t[i].s, t[i].n);

	i += cpu;
	if (i == nt)
		return 1;
	if (time_token(t[i].s, t[i].n, &ns)) {
		i++;
		if (i + 1 < nt && is_digits(t[i].s, t[i].n) && ends_in_colon(&t[i + 1]))
			i++; /* the period */
		return i == nt || ends_in_colon(&t[i]) ? 2 : 0;
	}
	return cpu || ends_in_colon(&t[i]);
}

/* A sample's own line: COMM PID[/TID] [CPU] TIME: PERIOD EVENT: [frame]. */
static int start_sample(struct ps *st, char *line)
{
	struct tok t[24];
	size_t nt = tokens(line, t, ARRAY_SIZE(t)), k = SIZE_MAX, i;
	const char *event = "", *rest = NULL;
	int best = 0;
	size_t event_len = 0;
	uint64_t v, ns;
	int rc;

	st->in_sample = true;
	st->skip = false;
	st->sample_bad = false;
	st->nr_frames = 0;
	st->pid = st->tid = 0;
	if (!nt) { /* -F ip,sym: an empty line before the frames */
		st->skip = !count_event(st, "", 0);
		return set_comm(st, "", 0);
	}
	/*
	 * The pid: a number after the name that perf's fields follow (a time
	 * and an event over what -F leaves). Of those that start where a
	 * command name can end (16 bytes, padded; more escaped), the last, as
	 * the name may hold such a number itself; else the first anywhere,
	 * else the first number.
	 */
	for (i = 1; i < nt && t[i].s - line <= PID_FIELD_END; i++) {
		int score = pid_token(t[i].s, t[i].n) ? fields_follow(t, nt, i + 1) : 0;

		if (score && score >= best) { /* the best-scoring, the last of them */
			best = score;
			k = i;
		}
	}
	for (i = 1; i < nt && k == SIZE_MAX; i++)
		if (pid_token(t[i].s, t[i].n) && fields_follow(t, nt, i + 1))
			k = i;
	for (i = 1; i < nt && k == SIZE_MAX; i++)
		if (pid_token(t[i].s, t[i].n))
			k = i;
	if (k == SIZE_MAX && pid_token(t[0].s, t[0].n))
		k = 0;
	if (k == SIZE_MAX)
		return errmsg_set(st->em, -EINVAL,
				  "line %zu: expected a sample, \"COMMAND PID/TID TIME: EVENT:\"",
				  st->lineno);
	/* The name: everything before, spaces inside kept. */
	if (k) {
		const char *b = t[0].s, *e = t[k].s;

		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		rc = set_comm(st, b, (size_t)(e - b));
	} else {
		rc = set_comm(st, "", 0);
	}
	if (rc)
		return rc;
	{
		const char *slash = memchr(t[k].s, '/', t[k].n);

		if (slash) {
			if (!num(t[k].s, (size_t)(slash - t[k].s), UINT32_MAX, &v))
				goto bad_pid;
			st->pid = (uint32_t)v;
			if (!num(slash + 1, (size_t)(t[k].s + t[k].n - slash - 1), UINT32_MAX, &v))
				goto bad_pid;
			st->tid = (uint32_t)v;
		} else {
			if (!num(t[k].s, t[k].n, UINT32_MAX, &v))
				goto bad_pid;
			st->tid = (uint32_t)v;
		}
	}
	/* Then [CPU], TIME:, PERIOD, EVENT: - each optional - and maybe the leaf. */
	i = k + 1;
	if (i < nt && cpu_token(t[i].s, t[i].n))
		i++;
	if (i < nt && time_token(t[i].s, t[i].n, &ns)) {
		if (!st->first_ns || ns < st->first_ns)
			st->first_ns = ns;
		st->last_ns = MAX(st->last_ns, ns);
		i++;
	}
	if (i + 1 < nt && is_digits(t[i].s, t[i].n) && ends_in_colon(&t[i + 1]))
		i++; /* the period */
	if (i < nt && ends_in_colon(&t[i])) {
		event = t[i].s;
		event_len = t[i].n - 1;
		i++;
	}
	if (i < nt)
		rest = t[i].s;
	st->skip = !count_event(st, event, event_len);
	if (rest && !st->skip) {
		/* No call graph: the sample's only frame is on its line. A
		 * tracepoint's fields are not a frame and are left out. */
		char *r = (char *)rest;
		size_t n = strspn(r, "0123456789abcdefABCDEF");

		if (n && (r[n] == ' ' || r[n] == '\t'))
			return add_frame(st, r);
	}
	return 0;
bad_pid:
	return errmsg_set(st->em, -EINVAL, "line %zu: bad process or thread id", st->lineno);
}

/* --- the file ---------------------------------------------------------------- */

/*
 * A line not understood (rc -EINVAL, or -EFBIG: too many frames) leaves its
 * sample out, counted, and reading goes on: one odd line - perf prints names
 * as they are - costs that sample, not the file. Other errors stop.
 */
static int bad_line(struct ps *st, int rc)
{
	if (rc != -EINVAL && rc != -EFBIG)
		return rc;
	if (!st->counting && !st->bad && !st->sample_bad) {
		st->bad_err = rc;
		snprintf(st->bad_msg, sizeof(st->bad_msg), "%.100s", st->em ? st->em->msg : "");
	}
	errmsg_clear(st->em);
	st->sample_bad = true;
	st->skip = true;
	return 0;
}

static int read_line(struct ps *st, char *line, size_t len, bool *header)
{
	size_t i = 0;
	int rc;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len) /* blank: the end of a sample */
		return end_sample(st);
	if (*header && line[0] == '#')
		return 0;
	*header = false;
	if (line[0] == '\t') {
		/* Frames without a sample line before them: -F ip,sym. */
		if (!st->in_sample && (rc = start_sample(st, line + len)))
			return rc;
		return st->skip ? 0 : bad_line(st, add_frame(st, line + 1));
	}
	if (st->in_sample && (rc = srcline(st, line)))
		return rc < 0 ? rc : 0;
	rc = end_sample(st);
	return rc ? rc : bad_line(st, start_sample(st, line));
}

/* A note of the events not read, or an error if the one asked for is absent. */
static int events_note(struct ps *st)
{
	char list[200] = "";
	size_t l = 0;

	for (size_t i = 0; i < st->nr_events; i++) {
		if ((int)i == st->reading)
			continue;
		l += (size_t)snprintf(list + l, sizeof(list) - MIN(l, sizeof(list)), "%s%s %llu",
				      l ? ", " : "",
				      st->events[i].name[0] ? st->events[i].name : "(none)",
				      (unsigned long long)st->events[i].samples);
		if (l >= sizeof(list))
			break;
	}
	if (st->other_events && l < sizeof(list))
		snprintf(list + l, sizeof(list) - l, "%sothers %llu", l ? ", " : "",
			 (unsigned long long)st->other_events);
	if (!st->read && st->bad)
		return errmsg_set(st->em, st->bad_err, "%s", st->bad_msg);
	if (st->want && !st->exact && st->reading < 0)
		return errmsg_set(st->em, -EINVAL, "no samples of event '%.64s' (it has %s)",
				  st->want, list[0] ? list : "none");
	if (st->reading < 0)
		return errmsg_set(st->em, -EINVAL, "no samples in the file");
	if (list[0] && st->exact) {
		errmsg_set(st->em, 0,
			   "read the %llu samples of %.64s, the event with the most; "
			   "left out %.120s",
			   (unsigned long long)st->events[st->reading].samples,
			   st->events[st->reading].name[0] ? st->events[st->reading].name
							   : "(none)",
			   list);
		errmsg_hint(st->em, "events are not mixed: --event NAME reads another one");
	}
	if (st->bad) {
		char note[sizeof(st->em->msg)];

		snprintf(note, sizeof(note),
			 "%.100s%sleft out %llu unreadable sample%s (first: %.90s)", st->em->msg,
			 st->em->msg[0] ? "; " : "", (unsigned long long)st->bad,
			 st->bad == 1 ? "" : "s", st->bad_msg);
		errmsg_set(st->em, 0, "%s", note);
	}
	return 0;
}

/* Which event's samples are read when none is asked for: the one with the most. */
static const char *busiest_event(const struct ps *st)
{
	size_t best = 0;

	for (size_t i = 1; i < st->nr_events; i++)
		if (st->events[i].samples > st->events[best].samples)
			best = i;
	return st->nr_events ? st->events[best].name : NULL;
}

/* One pass over the text, line by line. */
static int pass(struct ps *st, const uint8_t *buf, size_t len, char **line, size_t *line_cap)
{
	size_t pos = 0;
	bool header = true;
	int rc = 0;

	st->lineno = 0;
	while (pos < len && !rc) {
		const uint8_t *nl = memchr(buf + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		st->lineno++;
		if (st->counting && buf[pos] == '\t' && st->in_sample) {
			st->nr_frames++; /* a frame: the first pass needs no more */
			pos += l + (nl ? 1 : 0);
			continue;
		}
		if (array_grow((void **)line, line_cap, l + 1, 1))
			return -ENOMEM;
		memcpy(*line, buf + pos, l);
		pos += l + (nl ? 1 : 0);
		while (l && ((*line)[l - 1] == '\r' || (*line)[l - 1] == ' '))
			l--;
		(*line)[l] = '\0';
		rc = read_line(st, *line, l, &header);
	}
	return rc ? rc : end_sample(st);
}

static int read_opts(const uint8_t *buf, size_t len, struct profile *p, const struct input_opts *io,
		     struct errmsg *em)
{
	struct ps st = { .p = p, .em = em, .want = io ? io->event : NULL, .reading = -1 };
	char *line = NULL, want[sizeof(st.events[0].name)];
	size_t line_cap = 0;
	int rc = 0;

	errmsg_clear(em);
	if (memchr(buf, '\0', len))
		return errmsg_set(em, -EINVAL, "not perf script output (it has NUL bytes)");
	/*
	 * Without --event, the event with the most samples is read: a first
	 * pass counts them. (Not simply the first one, as stackcollapse-perf
	 * takes: a process can print a sample line of its own in its name.)
	 */
	if (!st.want) {
		st.counting = true;
		rc = pass(&st, buf, len, &line, &line_cap);
		if (!rc && busiest_event(&st)) {
			snprintf(want, sizeof(want), "%s", busiest_event(&st));
			st = (struct ps){ .p = p,
					  .em = em,
					  .want = want,
					  .exact = true,
					  .reading = -1,
					  .comm = st.comm,
					  .comm_cap = st.comm_cap };
		}
		st.counting = false;
		errmsg_clear(em);
	}
	if (!rc)
		rc = pass(&st, buf, len, &line, &line_cap);
	if (!rc)
		rc = events_note(&st);
	if (!rc && st.last_ns > st.first_ns)
		profile__meta(p)->duration_ns = st.last_ns - st.first_ns;
	free(line);
	free(st.pend);
	free(st.ids);
	sbuf_free(&st.arena);
	free(st.comm);
	return rc;
}

static int read_perf_script(const uint8_t *buf, size_t len, struct profile *p, struct errmsg *em)
{
	return read_opts(buf, len, p, NULL, em);
}

const struct reader reader_perf_script = {
	.name = "perf script",
	.read = read_perf_script,
	.read_opts = read_opts,
};

/* "... 12" or "...\t12": the end of a folded line. */
static bool ends_in_count(const char *s, const char *e)
{
	while (e > s && (e[-1] == '\r' || e[-1] == ' '))
		e--;
	if (e == s || !isdigit((unsigned char)e[-1]))
		return false;
	while (e > s && isdigit((unsigned char)e[-1]))
		e--;
	return e > s && (e[-1] == ' ' || e[-1] == '\t');
}

bool perfscript__sniff(const uint8_t *buf, size_t len)
{
	const char *s = (const char *)buf, *end = s + MIN(len, (size_t)65536);
	int others = 0;

	/* Past perf script --header's comments and blank lines: the first sample. */
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s)), *e = nl ? nl : end;
		const char *q = s;
		struct tok t[24];
		char first[512];
		size_t nt, n;
		uint64_t ns;

		while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == e || *s == '#') {
			if (*s == '\t' && q < e)
				return true; /* -F ip,sym: frames after an empty line */
			s = nl ? nl + 1 : end;
			continue;
		}
		if (*s == '\t')
			return true;
		/* A folded line ends in its count; a sample line does not, or
		 * it has perf's time field, or frames follow it. */
		if (nl && nl + 1 < end && nl[1] == '\t')
			return true;
		n = MIN((size_t)(e - s), sizeof(first) - 1);
		memcpy(first, s, n);
		first[n] = '\0';
		nt = tokens(first, t, ARRAY_SIZE(t));
		for (size_t i = 1; i + 1 < nt; i++)
			if (pid_token(t[i].s, t[i].n) && time_token(t[i + 1].s, t[i + 1].n, &ns))
				return true;
		for (size_t i = 1; i + 2 < nt; i++)
			if (pid_token(t[i].s, t[i].n) && cpu_token(t[i + 1].s, t[i + 1].n) &&
			    time_token(t[i + 2].s, t[i + 2].n, &ns))
				return true;
		/*
		 * A folded line ends in its count: folded. A line that is neither
		 * may be the first part of a process name with a new line in it
		 * (perf prints names as they are): look on, a few lines at most.
		 */
		if (ends_in_count(s, e) || ++others > 8)
			return false;
		s = nl ? nl + 1 : end;
	}
	return false;
}
