// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * cpython.c - CPython layouts by version, _Py_DebugOffsets, the 3.11
 * location table, str objects, and finding all of it in a running process;
 * see cpython.h.
 *
 * Process memory is read only through the process table (ptab__read_mem:
 * bounded process_vm_readv, no FUSE-backed pages), files only through its
 * libelf handles.
 */
#include "lang/cpython.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/budget.h"
#include "base/bytes.h"
#include "base/util.h"
#include "proc/elffile.h"
#include "proc/ptab.h"

/*
 * Symbols read from one file, at most (a table that would take it past is
 * not read), and the CPU time its read may take (each file its own: one
 * file's cost never decides another's verdict); files whose symbols one
 * probe reads, at most (a Python maps two: python3.X and libpython3.X). A
 * file's verdict is remembered with it (mfile__memo): read once, whatever
 * the number of processes and tries.
 */
#define MAX_SYMS	(4u << 20)
#define FILE_CPU_NS	(500ull * 1000 * 1000)
#define PROBE_MAX_FILES 4
/* PyCode_Type's member table: entries read, and their name length. */
#define MAX_MEMBERS 64
#define MEMBER_NAME 32
/* A str read for a name: bytes past its header (and so characters, at most). */
#define STR_MAX 1024

/* --- tables ------------------------------------------------------------------ */

/* From Debian's python3.11 (3.11.2) headers: tests/unit/test_cpython.c compiles them. */
static const struct cpython_layout py311 = {
	.version = CPY_VERSION(3, 11),
	.runtime_interp_head = 40,
	.interp_next = 0,
	.interp_threads_head = 16,
	.tstate_next = 8,
	.tstate_interp = 16,
	.tstate_native_tid = 160,
	.tstate_frame = 56,
	.cframe_current = 8,
	.has_cframe = true,
	.frame_code = 32,
	.frame_previous = 48,
	.frame_instr = 56,
	.frame_owner = 68,
	.owner_entry = 1,
	.entry_flag = true,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_firstlineno = 72,
	.code_adaptive = 184,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 48,
	.unicode_compact_data = 72,
	.bytes_size = 16,
	.bytes_data = 32,
	.runtime_tss_key = 592,
};

/*
 * CPython 3.12 as released: PyThreadState (cframe 56, native_thread_id 144),
 * PyInterpreterState (threads.head 72), _PyRuntimeState (interpreters.head
 * 40), _PyInterpreterFrame (f_code 0, previous 8, prev_instr 56, owner 70,
 * FRAME_OWNED_BY_CSTACK 3), PyCodeObject, PyASCIIObject without wstr.
 */
static const struct cpython_layout py312 = {
	.version = CPY_VERSION(3, 12),
	.runtime_interp_head = 40,
	.interp_next = 0,
	.interp_threads_head = 72,
	.tstate_next = 8,
	.tstate_interp = 16,
	.tstate_native_tid = 144,
	.tstate_frame = 56,
	.cframe_current = 0,
	.has_cframe = true,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_instr = 56,
	.frame_owner = 70,
	.owner_entry = 3,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_firstlineno = 68,
	.code_adaptive = 192,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 40,
	.unicode_compact_data = 56,
	.bytes_size = 16,
	.bytes_data = 32,
	.runtime_tss_key = 1544, /* _PyRuntimeState.autoTSSkey as measured on 3.12.4 */
};

const struct cpython_layout *cpython__table(uint32_t version)
{
	version &= 0xffff0000u;
	if (version == py311.version)
		return &py311;
	if (version == py312.version)
		return &py312;
	return NULL;
}

/* --- _Py_DebugOffsets (3.13+) ----------------------------------------------------- */

/*
 * Byte offsets of the fields we use inside the _Py_DebugOffsets block, per
 * layout of the block (3.13 and 3.14 differ: 3.14 added fields in the
 * middle of several sections).
 */
struct dbg_fields {
	uint32_t version;
	uint16_t interpreters_head, interp_next, threads_head;
	uint16_t ts_next, ts_interp, ts_current_frame, ts_native_tid;
	uint16_t fr_previous, fr_executable, fr_instr, fr_owner;
	uint16_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_adaptive;
	uint16_t by_size, by_sval, un_state, un_length, un_ascii_size;
	uint8_t owner_cstack;
	bool tagged;
};

static const struct dbg_fields dbg313 = {
	.version = CPY_VERSION(3, 13),
	.interpreters_head = 40,
	.interp_next = 64,
	.threads_head = 72,
	.ts_next = 168,
	.ts_interp = 176,
	.ts_current_frame = 184,
	.ts_native_tid = 200,
	.fr_previous = 232,
	.fr_executable = 240,
	.fr_instr = 248,
	.fr_owner = 264,
	.co_filename = 280,
	.co_name = 288,
	.co_qualname = 296,
	.co_linetable = 304,
	.co_firstlineno = 312,
	.co_adaptive = 344,
	.by_size = 520,
	.by_sval = 528,
	.un_state = 544,
	.un_length = 552,
	.un_ascii_size = 560,
	.owner_cstack = 3,
};

static const struct dbg_fields dbg314 = {
	.version = CPY_VERSION(3, 14),
	.interpreters_head = 40,
	.interp_next = 64,
	.threads_head = 72,
	.ts_next = 192,
	.ts_interp = 200,
	.ts_current_frame = 208,
	.ts_native_tid = 224,
	.fr_previous = 256,
	.fr_executable = 264,
	.fr_instr = 272,
	.fr_owner = 288,
	.co_filename = 320,
	.co_name = 328,
	.co_qualname = 336,
	.co_linetable = 344,
	.co_firstlineno = 352,
	.co_adaptive = 384,
	.by_size = 600,
	.by_sval = 608,
	.un_state = 624,
	.un_length = 632,
	.un_ascii_size = 640,
	.owner_cstack = 3,
	.tagged = true,
};

/* A process's memory, in its (x86-64: little-endian) byte order. */
static uint64_t mrd64(const uint8_t *p)
{
	return rd64(p, false);
}

static uint32_t mrd32(const uint8_t *p)
{
	return rd32(p, false);
}

/* An offset read from the block: it must fit the uint16_t fields (objects are small). */
static bool dbg_off(const uint8_t *b, size_t len, uint16_t at, uint16_t *out)
{
	uint64_t v;

	if ((size_t)at + 8 > len)
		return false;
	v = mrd64(b + at);
	if (v > 0xfff0)
		return false;
	*out = (uint16_t)v;
	return true;
}

int cpython__debug_offsets(const void *buf, size_t len, struct cpython_layout *out,
			   uint32_t *version)
{
	const uint8_t *b = buf;
	const struct dbg_fields *d;
	uint64_t hex;
	uint16_t ascii = 0;
	bool ok = true;

	if (len < 16 || memcmp(b, "xdebugpy", 8))
		return -ENOENT;
	hex = mrd64(b + 8);
	*version = (uint32_t)hex;
	if ((hex & 0xffff0000u) == dbg313.version)
		d = &dbg313;
	else if ((hex & 0xffff0000u) == dbg314.version)
		d = &dbg314;
	else
		return -ENOTSUP;
	memset(out, 0, sizeof(*out));
	out->version = d->version;
	ok &= dbg_off(b, len, d->interpreters_head, &out->runtime_interp_head);
	ok &= dbg_off(b, len, d->interp_next, &out->interp_next);
	ok &= dbg_off(b, len, d->threads_head, &out->interp_threads_head);
	ok &= dbg_off(b, len, d->ts_next, &out->tstate_next);
	ok &= dbg_off(b, len, d->ts_interp, &out->tstate_interp);
	ok &= dbg_off(b, len, d->ts_current_frame, &out->tstate_frame);
	ok &= dbg_off(b, len, d->ts_native_tid, &out->tstate_native_tid);
	ok &= dbg_off(b, len, d->fr_previous, &out->frame_previous);
	ok &= dbg_off(b, len, d->fr_executable, &out->frame_code);
	ok &= dbg_off(b, len, d->fr_instr, &out->frame_instr);
	ok &= dbg_off(b, len, d->fr_owner, &out->frame_owner);
	ok &= dbg_off(b, len, d->co_filename, &out->code_filename);
	ok &= dbg_off(b, len, d->co_name, &out->code_name);
	ok &= dbg_off(b, len, d->co_qualname, &out->code_qualname);
	ok &= dbg_off(b, len, d->co_linetable, &out->code_linetable);
	ok &= dbg_off(b, len, d->co_firstlineno, &out->code_firstlineno);
	ok &= dbg_off(b, len, d->co_adaptive, &out->code_adaptive);
	ok &= dbg_off(b, len, d->by_size, &out->bytes_size);
	ok &= dbg_off(b, len, d->by_sval, &out->bytes_data);
	ok &= dbg_off(b, len, d->un_state, &out->unicode_state);
	ok &= dbg_off(b, len, d->un_length, &out->unicode_length);
	ok &= dbg_off(b, len, d->un_ascii_size, &ascii);
	if (!ok || ascii < 24 || ascii > 256)
		return -EINVAL;
	out->unicode_ascii_data = ascii;
	out->unicode_compact_data = ascii + 16; /* utf8_length, utf8 */
	out->owner_entry = d->owner_cstack;
	out->tagged_code = d->tagged;
	return 0;
}

/* --- the location table (3.11+) ------------------------------------------------------ */

struct lt {
	const uint8_t *p, *end;
};

static bool lt_varint(struct lt *r, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned shift = 0; shift < 32; shift += 6) {
		uint8_t b;

		if (r->p >= r->end)
			return false;
		b = *r->p++;
		v |= (uint32_t)(b & 63) << shift;
		if (!(b & 64)) {
			*out = v;
			return true;
		}
	}
	return false;
}

static bool lt_svarint(struct lt *r, int32_t *out)
{
	uint32_t v;

	if (!lt_varint(r, &v))
		return false;
	*out = (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
	return true;
}

int cpython__line(const uint8_t *table, size_t len, uint32_t firstlineno, uint32_t instr,
		  uint32_t *line)
{
	struct lt r = { table, table + len };
	int64_t ln = firstlineno;
	uint64_t at = 0;

	/*
	 * Entries: a first byte 1CCCCLLL (code C, L + 1 code units), then the
	 * code's data. 15: no location; 14: long form (line delta, end line,
	 * columns); 13: line delta only; 10-12: line delta C - 10, two column
	 * bytes; 0-9: same line, one column byte. An entry cut off by the end
	 * of the bytes is -ERANGE, as the end itself: the table may go on
	 * (the caller holds its start).
	 */
	while (r.p < r.end) {
		uint8_t first = *r.p++;
		unsigned code = (first >> 3) & 15, units = (first & 7) + 1;
		int32_t delta = 0;
		uint32_t skip;
		bool has_line = code != 15, ok = true;

		if (!(first & 0x80))
			return -EINVAL;
		switch (code) {
		case 15:
			break;
		case 14:
			ok = lt_svarint(&r, &delta) && lt_varint(&r, &skip) &&
			     lt_varint(&r, &skip) && lt_varint(&r, &skip);
			break;
		case 13:
			ok = lt_svarint(&r, &delta);
			break;
		case 12:
		case 11:
		case 10:
			delta = (int32_t)code - 10;
			ok = r.end - r.p >= 2;
			r.p = ok ? r.p + 2 : r.end;
			break;
		default:
			ok = r.p < r.end;
			r.p += ok;
			break;
		}
		if (!ok)
			return r.p >= r.end ? -ERANGE : -EINVAL;
		ln += delta;
		if (instr < at + units) {
			if (!has_line || ln <= 0 || ln > UINT32_MAX)
				return -ENOENT;
			*line = (uint32_t)ln;
			return 0;
		}
		at += units;
	}
	return -ERANGE;
}

/* --- str objects --------------------------------------------------------------------- */

static size_t put_utf8(char *out, size_t size, size_t n, uint32_t cp)
{
	char tmp[4];
	size_t k;

	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd;
	if (cp < 0x80) {
		tmp[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		tmp[0] = (char)(0xc0 | cp >> 6);
		tmp[1] = (char)(0x80 | (cp & 63));
		k = 2;
	} else if (cp < 0x10000) {
		tmp[0] = (char)(0xe0 | cp >> 12);
		tmp[1] = (char)(0x80 | ((cp >> 6) & 63));
		tmp[2] = (char)(0x80 | (cp & 63));
		k = 3;
	} else {
		tmp[0] = (char)(0xf0 | cp >> 18);
		tmp[1] = (char)(0x80 | ((cp >> 12) & 63));
		tmp[2] = (char)(0x80 | ((cp >> 6) & 63));
		tmp[3] = (char)(0x80 | (cp & 63));
		k = 4;
	}
	if (n + k >= size)
		return 0;
	memcpy(out + n, tmp, k);
	return k;
}

int cpython__str(const struct cpython_layout *l, const uint8_t *obj, size_t len, char *out,
		 size_t size)
{
	uint64_t length;
	uint32_t state, kind;
	size_t data, n = 0;

	if (!size || len < (size_t)l->unicode_compact_data || len < (size_t)l->unicode_state + 4u ||
	    len < (size_t)l->unicode_length + 8u)
		return -EINVAL;
	length = mrd64(obj + l->unicode_length);
	state = mrd32(obj + l->unicode_state);
	/* interned:2, kind:3, compact:1, ascii:1 (the same bits from 3.3 to 3.14) */
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	data = ((state >> 6) & 1) ? l->unicode_ascii_data : l->unicode_compact_data;
	if (length > STR_MAX || data > len || (len - data) / kind < length)
		return -EINVAL;
	for (uint64_t i = 0; i < length; i++) {
		const uint8_t *c = obj + data + i * kind;
		uint32_t cp = kind == 1	  ? c[0]
			      : kind == 2 ? (uint32_t)(c[0] | c[1] << 8)
					  : mrd32(c);
		size_t k;

		if (cp > 0x10ffff)
			cp = 0xfffd;
		if (cp == 0)
			cp = '?';
		k = put_utf8(out, size, n, cp);
		if (!k)
			break;
		n += k;
	}
	out[n] = '\0';
	return (int)n;
}

/* --- the checksum window ----------------------------------------------------------- */

uint16_t cpython__csum_off(const struct cpython_layout *l)
{
	/*
	 * The 64 bytes ending with co_qualname: from 3.11 to 3.14 every field
	 * there is set when the code object is made and never changes (counts,
	 * co_version, the name objects); the caches and counters that do change
	 * (weak references, _co_cached, instrumentation) come after it.
	 */
	return l->code_qualname >= 56 ? (uint16_t)(l->code_qualname + 8 - 64) : 0;
}

void cpython__bpf(const struct cpython_proc *cp, struct bp_pyproc *out)
{
	const struct cpython_layout *l = &cp->l;

	memset(out, 0, sizeof(*out));
	out->runtime = cp->runtime;
	memcpy(out->eval, cp->eval, sizeof(out->eval));
	out->runtime_interp_head = l->runtime_interp_head;
	out->interp_threads_head = l->interp_threads_head;
	out->interp_next = l->interp_next;
	out->tstate_next = l->tstate_next;
	out->tstate_native_tid = l->tstate_native_tid;
	out->tstate_frame = l->tstate_frame;
	out->cframe_current = l->cframe_current;
	out->frame_code = l->frame_code;
	out->frame_previous = l->frame_previous;
	out->frame_instr = l->frame_instr;
	out->frame_owner = l->frame_owner;
	out->code_adaptive = l->code_adaptive;
	out->code_csum = cp->csum_off;
	out->owner_entry = l->owner_entry;
	out->flags = (l->entry_flag ? PYPROC_F_ENTRY_FLAG : 0) |
		     (l->has_cframe ? PYPROC_F_CFRAME : 0) |
		     (l->tagged_code ? PYPROC_F_TAGGED : 0) | (cp->tls ? PYPROC_F_TLS : 0);
	out->tls_l1 = cp->tls_l1;
	out->tls_l2 = cp->tls_l2;
}

/* --- probing a process ------------------------------------------------------------- */

enum {
	SYM_RUNTIME,
	SYM_EVAL,
	SYM_EVAL_COLD,
	SYM_CODE_TYPE,
	SYM_VERSION,
	SYM_NR,
};

static const char *const sym_names[SYM_NR] = {
	"_PyRuntime", "_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault.cold", "PyCode_Type",
	"Py_Version",
};

/* What one file holds (its memo, MFILE_MEMO_CPYTHON). */
struct pyfile {
	uint64_t value[SYM_NR], size[SYM_NR];
	bool found[SYM_NR];
	bool interp;	/* _PyRuntime, _PyEval_EvalFrameDefault and PyCode_Type */
	bool needs_lib; /* without them: a DT_NEEDED libpython3 */
};

/* The interpreter's symbols in elf's symbol tables; -ETIMEDOUT/-ECANCELED over budget. */
static int find_syms(Elf *elf, struct pyfile *s, struct budget *b)
{
	int n = elffile__find_syms(elf, sym_names, SYM_NR, ELFFILE_SYMTAB, MAX_SYMS, b, s->found,
				   s->value, s->size);

	s->interp = s->found[SYM_RUNTIME] && s->found[SYM_EVAL] && s->found[SYM_CODE_TYPE];
	return n < 0 ? n : 0;
}

/* Dynamic section entries looked at, at most. */
#define MAX_DYN 4096

/*
 * A python3.X built with --enable-shared (pyenv's, the python:3.x container
 * images', Fedora's) has its interpreter in the libpython3 it needs, mapped
 * by the dynamic loader only after the exec bpfprof may have seen the
 * process at. The file is the process's: libelf bounds the section and the
 * strings, MAX_DYN the entries.
 */
bool cpython__needs_libpython(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		n = MIN(sh.sh_size / sh.sh_entsize, (size_t)MAX_DYN);
		if (!(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < n; i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (name && !strncmp(name, "libpython3", 10))
				return true;
		}
	}
	return false;
}

/* "python3.11", "libpython3.12.so.1.0", "python3.13d": version from the name, or 0. */
static uint32_t version_from_name(const char *path)
{
	const char *base = strrchr(path, '/');
	unsigned major, minor;

	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (sscanf(base, "python%u.%u", &major, &minor) != 2 || major != 3 || minor > 99)
		return 0;
	return CPY_VERSION(major, minor);
}

static bool read_exact(struct ptab *t, struct pproc *p, uint64_t addr, void *buf, size_t len)
{
	return addr && ptab__read_mem(t, p, addr, buf, len) == (ssize_t)len;
}

static bool read_ptr(struct ptab *t, struct pproc *p, uint64_t addr, uint64_t *v)
{
	return read_exact(t, p, addr, v, 8);
}

/* The code object offsets from PyCode_Type's member table (tp_members). */
static int code_members(struct ptab *t, struct pproc *p, uint64_t type, struct cpython_layout *l,
			bool adaptive_from_basicsize)
{
	/* PyTypeObject: tp_basicsize at 32, tp_members at 240 (3.11-3.14); PyMemberDef: 40 bytes.
	 */
	uint8_t members[MAX_MEMBERS * 40];
	uint64_t basicsize, mptr;
	ssize_t got;
	int found = 0;

	if (!read_ptr(t, p, type + 32, &basicsize) || !read_ptr(t, p, type + 240, &mptr) || !mptr)
		return -EINVAL;
	got = ptab__read_mem(t, p, mptr, members, sizeof(members));
	if (got < 40)
		return -EINVAL;
	for (size_t i = 0; i + 40 <= (size_t)got; i += 40) {
		static const struct {
			const char *name;
			size_t field;
		} want[] = {
			{ "co_filename", offsetof(struct cpython_layout, code_filename) },
			{ "co_name", offsetof(struct cpython_layout, code_name) },
			{ "co_qualname", offsetof(struct cpython_layout, code_qualname) },
			{ "co_linetable", offsetof(struct cpython_layout, code_linetable) },
			{ "co_firstlineno", offsetof(struct cpython_layout, code_firstlineno) },
		};
		uint64_t name_ptr = mrd64(members + i), off = mrd64(members + i + 16);
		char name[MEMBER_NAME];

		if (!name_ptr)
			break;
		if (!read_exact(t, p, name_ptr, name, sizeof(name)) &&
		    ptab__read_mem(t, p, name_ptr, name, 16) < 16)
			continue;
		name[sizeof(name) - 1] = '\0';
		for (size_t k = 0; k < ARRAY_SIZE(want); k++) {
			if (strcmp(name, want[k].name) || off > 0xfff0)
				continue;
			*(uint16_t *)((char *)l + want[k].field) = (uint16_t)off;
			found++;
		}
	}
	if (adaptive_from_basicsize) {
		if (basicsize < 64 || basicsize > 1024)
			return -EINVAL;
		l->code_adaptive = (uint16_t)basicsize;
	}
	return found == 5 ? 0 : -EINVAL;
}

/*
 * The layout leads from _PyRuntime to an interpreter (interp, as
 * check_initialized() read it) and, once a thread exists, to a thread state
 * that points back at it.
 */
static int check_layout(struct ptab *t, struct pproc *p, const struct cpython_proc *cp,
			uint64_t interp)
{
	const struct cpython_layout *l = &cp->l;
	uint64_t tstate, back;
	uint32_t tid;

	if (!read_ptr(t, p, interp + l->interp_threads_head, &tstate))
		return -EINVAL;
	if (!tstate)
		return -EAGAIN;
	if (!read_ptr(t, p, tstate + l->tstate_interp, &back) || back != interp ||
	    !read_exact(t, p, tstate + l->tstate_native_tid, &tid, 4) || !tid || tid > (1u << 22))
		return -EINVAL;
	return 0;
}

/*
 * The first interpreter (*interp), or -EAGAIN while there is none: a
 * libpython the dynamic loader has mapped but not yet relocated has
 * unrelocated pointers (such as PyCode_Type's member table), which are no
 * sign of a layout bpfprof does not know.
 */
static int check_initialized(struct ptab *t, struct pproc *p, const struct cpython_proc *cp,
			     uint64_t *interp)
{
	if (!read_ptr(t, p, cp->runtime + cp->l.runtime_interp_head, interp))
		return -EINVAL;
	return *interp ? 0 : -EAGAIN;
}

/*
 * The interpreter's layout checked on its memory: cp as probe_file() found
 * it in the file (runtime, code_type, version). 0, -EAGAIN not initialized
 * yet, -ENOTSUP (why says why).
 */
static int check_memory(struct ptab *t, struct pproc *p, struct cpython_proc *cp, char *why,
			size_t why_len)
{
	const struct cpython_layout *table = cpython__table(cp->version);
	uint32_t hex = cp->version;
	uint64_t interp = 0;
	int err;

	if (table) {
		cp->l = *table;
		err = check_initialized(t, p, cp, &interp);
		if (!err)
			err = code_members(t, p, cp->code_type, &cp->l, true);
	} else {
		uint8_t dbg[1024];
		uint32_t dver = 0;

		if (!read_exact(t, p, cp->runtime, dbg, sizeof(dbg)))
			err = -EINVAL;
		else
			err = cpython__debug_offsets(dbg, sizeof(dbg), &cp->l, &dver);
		if (err == -ENOTSUP || err == -ENOENT) {
			snprintf(why, why_len, "Python %u.%u has no layout bpfprof knows",
				 hex >> 24, (hex >> 16) & 0xff);
			return -ENOTSUP;
		}
		if (!err)
			err = check_initialized(t, p, cp, &interp);
		if (!err)
			err = code_members(t, p, cp->code_type, &cp->l, false);
	}
	if (!err)
		err = check_layout(t, p, cp, interp);
	if (err == -EAGAIN)
		return -EAGAIN;
	if (err) {
		snprintf(why, why_len,
			 "the memory of Python %u.%u does not have the layout bpfprof "
			 "expects",
			 hex >> 24, (hex >> 16) & 0xff);
		return -ENOTSUP;
	}
	cp->csum_off = cpython__csum_off(&cp->l);
	return 0;
}

/* What one probe may still spend. */
struct probe_cost {
	unsigned files_left;
	unsigned files_read;
};

/*
 * What the file f holds: its memo, or its symbols read now (and remembered,
 * unless a stop cut the read short). NULL: not read (over the probe's
 * caps, unreadable); *tmp holds a verdict that could not be remembered.
 */
static const struct pyfile *file_syms(struct mfile *f, struct probe_cost *c, struct pyfile *tmp)
{
	const struct pyfile *memo = mfile__memo(f, MFILE_MEMO_CPYTHON);
	struct budget b;
	struct pyfile *s;
	Elf *elf;
	int err;

	if (memo)
		return memo;
	if (!c->files_left || !(elf = mfile__elf(f)))
		return NULL;
	c->files_left--;
	c->files_read++;
	memset(tmp, 0, sizeof(*tmp));
	budget__start(&b, FILE_CPU_NS);
	err = find_syms(elf, tmp, &b);
	if (err == -ECANCELED)
		return NULL;
	if (err) /* too costly: not an interpreter, for good */
		memset(tmp, 0, sizeof(*tmp));
	if (!tmp->interp && !err)
		tmp->needs_lib = cpython__needs_libpython(elf);
	s = malloc(sizeof(*s));
	if (!s)
		return tmp;
	*s = *tmp;
	mfile__set_memo(f, MFILE_MEMO_CPYTHON, s);
	return s;
}

static int probe_file(struct ptab *t, struct pproc *p, const struct procmap *m,
		      struct cpython_proc *cp, char *why, size_t why_len, bool *needs_lib,
		      struct probe_cost *c)
{
	const struct pyfile *s;
	struct pyfile tmp;
	struct mfile *f;
	uint64_t bias;
	uint32_t hex = 0;
	Elf *elf;
	int err;

	err = ptab__file(t, p, m, &f);
	if (err)
		return -ENOENT;
	s = file_syms(f, c, &tmp);
	if (!s || !s->interp) {
		*needs_lib = *needs_lib || (s && s->needs_lib);
		mfile__put(t, f);
		return -ENOENT;
	}
	elf = mfile__elf(f);
	if (!elf || elffile__load_bias(elf, m->start, m->offset, &bias)) {
		mfile__put(t, f);
		return -ENOENT;
	}
	memset(cp, 0, sizeof(*cp));
	snprintf(cp->module, sizeof(cp->module), "%s", m->path);
	cp->dev = (uint64_t)mfile__stat(f)->st_dev;
	cp->ino = (uint64_t)mfile__stat(f)->st_ino;
	cp->runtime = s->value[SYM_RUNTIME] + bias;
	cp->code_type = s->value[SYM_CODE_TYPE] + bias;
	cp->eval[0][0] = s->value[SYM_EVAL] + bias;
	cp->eval[0][1] = cp->eval[0][0] + (s->size[SYM_EVAL] ? s->size[SYM_EVAL] : 1);
	if (s->found[SYM_EVAL_COLD]) {
		cp->eval[1][0] = s->value[SYM_EVAL_COLD] + bias;
		cp->eval[1][1] =
			cp->eval[1][0] + (s->size[SYM_EVAL_COLD] ? s->size[SYM_EVAL_COLD] : 1);
	}
	/* Py_Version (3.11+) says exactly; the file name is the fallback. */
	if (!s->found[SYM_VERSION] || !read_exact(t, p, s->value[SYM_VERSION] + bias, &hex, 4))
		hex = version_from_name(m->path);
	mfile__put(t, f);
	cp->version = hex;
	if ((hex >> 24) != 3 || ((hex >> 16) & 0xff) < 11) {
		snprintf(why, why_len, "Python %u.%u is older than 3.11", hex >> 24,
			 (hex >> 16) & 0xff);
		return -ENOTSUP;
	}
	return check_memory(t, p, cp, why, why_len);
}

int cpython__probe(struct ptab *t, struct pproc *p, struct cpython_proc *out, char *why,
		   size_t why_len)
{
	struct pmaps *pm = ptab__maps(t, p);
	struct probe_cost c = { .files_left = PROBE_MAX_FILES };
	bool needs_lib = false;
	int err = -ENOENT;

	out->runtime = 0;
	out->files_read = 0;
	if (!pm)
		return -ENOENT;
	why[0] = '\0';
	for (size_t i = 0; i < pm->m.nr && err == -ENOENT; i++) {
		const struct procmap *m = &pm->m.maps[i];

		/* The interpreter's own file: python3.X or libpython3.X.so. */
		if (!m->path || !version_from_name(m->path))
			continue;
		if (i && pm->m.maps[i - 1].path && !strcmp(pm->m.maps[i - 1].path, m->path))
			continue; /* the same file, already tried */
		err = probe_file(t, p, m, out, why, why_len, &needs_lib, &c);
	}
	pmaps__put(pm);
	out->files_read = c.files_read;
	/* A python3.X whose interpreter is in a libpython the loader has yet to map. */
	if (err == -ENOENT && needs_lib)
		err = -EAGAIN;
	/* Memory that is not what the mappings say: the process exec'd (a
	 * fork()ed Python running a command) or exited since they were read.
	 * Gone, not "a Python without the layout" (nor one to try again). */
	if ((err == -ENOTSUP || err == -EAGAIN) && ptab__check_image(t, p))
		err = -ESRCH;
	return err;
}

int cpython__recheck(struct ptab *t, struct pproc *p, struct cpython_proc *cp, char *why,
		     size_t why_len)
{
	int err;

	why[0] = '\0';
	cp->files_read = 0;
	err = check_memory(t, p, cp, why, why_len);
	if ((err == -ENOTSUP || err == -EAGAIN) && ptab__check_image(t, p))
		err = -ESRCH;
	return err;
}

/* --- a thread's own state (thread-specific data) -------------------------------- */

/* glibc's descriptor of a field for libthread_db: bits (of one element), elements, offset. */
struct tdb_desc {
	uint32_t bits, n, off;
};

enum { TDB_SPECIFIC, TDB_LEVEL2, TDB_DATA, TDB_NR };

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-2.", 7) ||
	       !strncmp(base, "libpthread", 10);
}

/* n bytes at address v of an ELF file's image, from the file (a section holding them). */
static bool elf_bytes_at(Elf *elf, uint64_t v, void *out, size_t n)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    (sh.sh_flags & SHF_COMPRESSED) || v < sh.sh_addr ||
		    v - sh.sh_addr > sh.sh_size || sh.sh_size - (v - sh.sh_addr) < n)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < v - sh.sh_addr + n)
			return false;
		memcpy(out, (const char *)d->d_buf + (v - sh.sh_addr), n);
		return true;
	}
	return false;
}

/*
 * The three descriptors of a mapped libc (or libpthread, before glibc
 * 2.34), read from the file - not from the process, whose copy it could
 * have written over.
 */
static int tdb_descs(struct ptab *t, struct pproc *p, const struct procmap *m,
		     struct tdb_desc d[TDB_NR])
{
	static const char *const names[TDB_NR] = { "_thread_db_pthread_specific",
						   "_thread_db_pthread_key_data_level2_data",
						   "_thread_db_pthread_key_data_data" };
	uint64_t value[TDB_NR], size[TDB_NR];
	bool found[TDB_NR] = { false };
	struct budget b;
	struct mfile *f;
	int err = 0;
	Elf *elf;

	if (ptab__file(t, p, m, &f))
		return -ENOENT;
	elf = mfile__elf(f);
	budget__start(&b, FILE_CPU_NS);
	if (elf && elffile__find_syms(elf, names, TDB_NR, ELFFILE_SYMTAB, MAX_SYMS, &b, found,
				      value, size) < 0)
		elf = NULL;
	for (int k = 0; k < TDB_NR && !err; k++)
		if (!elf || !found[k] || !elf_bytes_at(elf, value[k], &d[k], sizeof(d[k])))
			err = -ENOENT;
	mfile__put(t, f);
	return err;
}

/* The descriptors of m's file: remembered by its device and inode, or read. */
static int tdb_cached(struct ptab *t, struct pproc *p, const struct procmap *m,
		      struct cpython_tls_cache *c, struct tdb_desc d[TDB_NR])
{
	size_t i;
	int err;

	_Static_assert(sizeof(c->e[0].d) == TDB_NR * sizeof(struct tdb_desc), "tdb cache");
	for (i = 0; c && i < ARRAY_SIZE(c->e); i++) {
		if (c->e[i].used && c->e[i].inode == m->inode &&
		    c->e[i].dev_major == m->dev_major && c->e[i].dev_minor == m->dev_minor) {
			memcpy(d, c->e[i].d, sizeof(c->e[i].d));
			return c->e[i].err;
		}
	}
	err = tdb_descs(t, p, m, d);
	if (c && err != -ENOMEM) {
		i = c->next++ % ARRAY_SIZE(c->e);
		c->e[i].used = true;
		c->e[i].inode = m->inode;
		c->e[i].dev_major = m->dev_major;
		c->e[i].dev_minor = m->dev_minor;
		c->e[i].err = err;
		memcpy(c->e[i].d, d, sizeof(c->e[i].d));
	}
	return err;
}

int cpython__tls(struct ptab *t, struct pproc *p, struct cpython_proc *cp,
		 struct cpython_tls_cache *cache)
{
	struct {
		int32_t initialized;
		uint32_t key;
	} tss;
	struct tdb_desc d[TDB_NR];
	uint32_t slots, stride, per_block;
	uint64_t l1, l2;
	struct pmaps *pm;
	int err = -ENOENT;

	cp->tls = false;
	if (!cp->l.runtime_tss_key ||
	    !read_exact(t, p, cp->runtime + cp->l.runtime_tss_key, &tss, sizeof(tss)) ||
	    tss.initialized != 1 || tss.key >= 1024) /* PTHREAD_KEYS_MAX */
		return -ENOENT;
	pm = ptab__maps(t, p);
	if (!pm)
		return -ENOENT;
	for (size_t i = 0; i < pm->m.nr && err; i++) {
		const struct procmap *m = &pm->m.maps[i];

		if (!m->path || !is_libc(m->path))
			continue;
		if (i && pm->m.maps[i - 1].path && !strcmp(pm->m.maps[i - 1].path, m->path))
			continue; /* the same file, already tried */
		err = tdb_cached(t, p, m, cache, d);
	}
	pmaps__put(pm);
	if (err)
		return err;
	/*
	 * struct pthread.specific: an array of pointers to blocks of per_block
	 * key slots (specific[0] is the thread's own first block); a slot is
	 * {seq, data}, stride bytes. What libthread_db's td_thr_tsd() reads.
	 */
	slots = d[TDB_SPECIFIC].bits / 64 * d[TDB_SPECIFIC].n;
	stride = d[TDB_LEVEL2].bits / 8;
	per_block = d[TDB_LEVEL2].n;
	if (d[TDB_SPECIFIC].bits % 64 || !slots || slots > 1024 || !per_block || per_block > 1024 ||
	    stride < 8 || stride > 64 || d[TDB_DATA].bits != 64 || d[TDB_DATA].off + 8 > stride ||
	    tss.key / per_block >= slots)
		return -EINVAL;
	l1 = (uint64_t)d[TDB_SPECIFIC].off + 8ull * (tss.key / per_block);
	l2 = (uint64_t)d[TDB_LEVEL2].off + (uint64_t)stride * (tss.key % per_block) +
	     d[TDB_DATA].off;
	if (l1 > 0xfff8 || l2 > 0xfff8)
		return -EINVAL;
	cp->tls = true;
	cp->tls_l1 = (uint16_t)l1;
	cp->tls_l2 = (uint16_t)l2;
	return 0;
}
