// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * folded_read.c - reads collapsed stacks ("comm;root;...;leaf COUNT" lines), what
 * bpfprof, stackcollapse-*.pl, inferno and many other tools write.
 *
 * The count is after the last space of the line (frames may contain spaces).
 * The first frame is the process name (folded files have no pid: it is 0).
 * Frames ending in "_[k]" are kernel frames, "_[j]" JIT frames, "_[py]"
 * Python frames, "_[i]" inlined frames, "_[0]" interpreted Java frames and
 * "_[lisp]" Lisp frames (their names never split), the suffix removed; everything
 * else is a user frame. A Python frame's "name (file)" or "name (file:line)",
 * and any frame's "name (file:LINE)" (what --lines writes), are split into
 * name, file and line. So folded output of the profile read is the text read. Empty lines and CRLF
 * endings are accepted; anything else malformed is an error naming the line.
 */
#include "format/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t l = strlen(suffix);

	return len > l && !memcmp(s + len - l, suffix, l);
}

/*
 * "name (file:LINE)" -> name, file, line (any kind); "name (file)" too for a
 * Python frame. s is cut in place; f->name still points at it.
 */
static void split_source(struct pframe *f, char *s, size_t len)
{
	char *open, *colon, *end = s + len - 1;
	uint64_t line = 0;

	if (len < 5 || *end != ')')
		return;
	*end = '\0';
	open = strrchr(s, '(');
	if (!open || open < s + 2 || open[-1] != ' ' || open + 1 == end) {
		*end = ')';
		return;
	}
	colon = strrchr(open, ':');
	if (colon && colon + 1 < end && !parse_u64(colon + 1, 10, &line) && line &&
	    line <= UINT32_MAX) {
		*colon = '\0';
	} else if (f->kind != FRAME_PYTHON) {
		*end = ')';
		return;
	} else {
		line = 0;
	}
	open[-1] = '\0';
	f->file = open + 1;
	f->line = (uint32_t)line;
}

/* Parses one line (NUL-terminated, no newline) into p. */
static int read_line(char *line, size_t len, struct profile *p, uint32_t **frames, size_t *cap,
		     struct errmsg *em, size_t lineno)
{
	struct psample id = { 0 };
	char *space, *s, *next;
	uint64_t count;
	uint32_t n = 0;
	int rc;

	space = memrchr(line, ' ', len);
	if (!space || space == line)
		return errmsg_set(em, -EINVAL, "line %zu: expected \"frame;frame;... COUNT\"",
				  lineno);
	if (parse_u64(space + 1, 10, &count))
		return errmsg_set(em, -EINVAL, "line %zu: bad sample count '%.32s'", lineno,
				  space + 1);
	*space = '\0';
	if (profile__total(p) + count < profile__total(p))
		return errmsg_set(em, -ERANGE, "line %zu: sample counts overflow", lineno);
	/* The process name, then frames root first. */
	s = line;
	next = strchr(s, ';');
	if (next)
		*next++ = '\0';
	id.comm = s;
	for (s = next; s; s = next) {
		enum frame_kind kind = FRAME_USER;
		struct pframe pf;
		size_t flen;
		int64_t f;

		next = strchr(s, ';');
		if (next)
			*next++ = '\0';
		flen = strlen(s);
		if (ends_with(s, flen, "_[k]"))
			kind = FRAME_KERNEL;
		else if (ends_with(s, flen, "_[j]"))
			kind = FRAME_JIT;
		else if (ends_with(s, flen, "_[i]"))
			kind = FRAME_INLINE;
		else if (ends_with(s, flen, "_[py]"))
			kind = FRAME_PYTHON;
		else if (ends_with(s, flen, "_[lisp]"))
			kind = FRAME_LISP;
		else if (ends_with(s, flen, "_[0]"))
			kind = FRAME_JAVA_INTERP;
		if (kind != FRAME_USER)
			s[flen -= kind == FRAME_PYTHON ? 5 : kind == FRAME_LISP ? 7 : 4] = '\0';
		if (n >= INPUT_MAX_DEPTH)
			return errmsg_set(em, -EFBIG, "line %zu: more than %d frames", lineno,
					  INPUT_MAX_DEPTH);
		if (array_grow((void **)frames, cap, n + 1, sizeof(**frames)))
			return -ENOMEM;
		pf = (struct pframe){ .name = s[0] ? s : "[unknown]", .kind = kind };
		if (kind != FRAME_LISP) /* "(LAMBDA (X) :IN FOO)" has no source */
			split_source(&pf, s, flen);
		f = profile__frame_src(p, &pf);
		if (f < 0)
			return (int)f;
		(*frames)[n++] = (uint32_t)f;
	}
	/* A line with only a process name has no frames (and maybe no array yet). */
	rc = profile__add(p, &id, n ? *frames : &(uint32_t){ 0 }, n, count);
	return rc;
}

static int read_folded(const uint8_t *buf, size_t len, struct profile *p, struct errmsg *em)
{
	uint32_t *frames = NULL;
	size_t cap = 0, lineno = 0, pos = 0, lines = 0;
	char *line = NULL;
	size_t line_cap = 0;
	int rc = 0;

	errmsg_clear(em);
	if (memchr(buf, '\0', len))
		return errmsg_set(em, -EINVAL, "not a folded text file (it has NUL bytes)");
	while (pos < len && !rc) {
		const uint8_t *nl = memchr(buf + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		lineno++;
		/* A copy, NUL-terminated, without the CR and trailing blanks. */
		if (array_grow((void **)&line, &line_cap, l + 1, 1)) {
			rc = -ENOMEM;
			break;
		}
		memcpy(line, buf + pos, l);
		pos += l + (nl ? 1 : 0);
		while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
			l--;
		line[l] = '\0';
		if (!l)
			continue;
		rc = read_line(line, l, p, &frames, &cap, em, lineno);
		lines++;
	}
	free(line);
	free(frames);
	if (!rc && !lines)
		rc = errmsg_set(em, -EINVAL, "no stacks in the file");
	return rc;
}

const struct reader reader_folded = {
	.name = "folded",
	.read = read_folded,
};
