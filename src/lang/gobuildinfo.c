// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * gobuildinfo.c - Go's build information; see gobuildinfo.h. The layout
 * follows debug/buildinfo (Go 1.18 and later) and cmd/link's writer.
 */
#include "lang/gobuildinfo.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/util.h"

#define MAGIC	    "\xff Go buildinf:"
#define MAGIC_LEN   14
#define HEADER_LEN  32
#define FLAG_INLINE 2

/* An unsigned varint at *pos of buf[0, len): at most 10 bytes. 0 or -EINVAL. */
static int uvarint(const unsigned char *buf, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0, shift = 0; i < 10; i++, shift += 7) {
		unsigned char b;

		if (*pos >= len)
			return -EINVAL;
		b = buf[(*pos)++];
		if (i == 9 && b > 1)
			return -EINVAL; /* over 64 bits */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* "go1.N..." (after an optional "devel "): N. 0 or -EINVAL. */
static int minor_of(const char *v, unsigned *minor)
{
	unsigned n = 0;
	size_t i;

	if (!strncmp(v, "devel ", 6))
		v += 6;
	if (strncmp(v, "go1.", 4))
		return -EINVAL;
	for (i = 4; v[i] >= '0' && v[i] <= '9'; i++) {
		if (i >= 8)
			return -EINVAL; /* four digits are plenty */
		n = n * 10 + (unsigned)(v[i] - '0');
	}
	if (i == 4)
		return -EINVAL;
	*minor = n;
	return 0;
}

int gobuildinfo__parse(const void *buf, size_t len, struct gobuild *out)
{
	const unsigned char *b = buf;

	for (size_t at = 0; len >= HEADER_LEN && at <= len - HEADER_LEN; at += 16) {
		size_t pos = at + HEADER_LEN;
		uint64_t n;

		if (memcmp(b + at, MAGIC, MAGIC_LEN))
			continue;
		if (!(b[at + MAGIC_LEN + 1] & FLAG_INLINE))
			return -ENOTSUP;
		if (uvarint(b, len, &pos, &n) || !n || n > GOBUILDINFO_MAX_VERSION || n > len - pos)
			return -EINVAL;
		memcpy(out->version, b + pos, (size_t)n);
		out->version[n] = '\0';
		if (strlen(out->version) != n)
			return -EINVAL; /* a NUL inside */
		return minor_of(out->version, &out->minor);
	}
	return -ENOENT;
}

bool gobuildinfo__matches_pclntab(unsigned minor, enum gopclntab_version v)
{
	switch (v) {
	case GOPCLNTAB_V12:
		return minor >= 2 && minor <= 15;
	case GOPCLNTAB_V116:
		return minor == 16 || minor == 17;
	case GOPCLNTAB_V118:
		return minor == 18 || minor == 19;
	case GOPCLNTAB_V120:
		return minor >= 20;
	}
	return false;
}

int gobuildinfo__mprof_malloc_args(unsigned minor, unsigned *p_arg, unsigned *size_arg)
{
	if (minor < 17)
		return -ENOTSUP;
	if (minor < 23) { /* mProf_Malloc(p unsafe.Pointer, size uintptr) */
		*p_arg = 0;
		*size_arg = 1;
	} else { /* (mp *m, p, size) in 1.23 and 1.24, (mp, p, size, typ) later */
		*p_arg = 1;
		*size_arg = 2;
	}
	return 0;
}

int gobuildinfo__free_special_args(unsigned minor, unsigned *p_arg, unsigned *size_arg)
{
	if (minor < 17)
		return -ENOTSUP;
	*p_arg = 1; /* freeSpecial(s *special, p unsafe.Pointer, size uintptr) */
	*size_arg = 2;
	return 0;
}

/*
 * struct special { next *special; offset uint16; kind byte } and the kinds
 * (finalizer 1, profile 2, reachable 3) of runtime/mheap.go, per release
 * verified: Go 1.19.8 (Debian 12's golang-1.19), the runtime's DWARF of
 * goalloc (runtime.special.kind at 10) and its mheap.go.
 */
static const struct {
	unsigned minor, kind_off, profile_kind;
} special_kinds[] = {
	{ 19, 10, 2 },
};

int gobuildinfo__special_kind(unsigned minor, unsigned *kind_off, unsigned *profile_kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(special_kinds); i++)
		if (special_kinds[i].minor == minor) {
			*kind_off = special_kinds[i].kind_off;
			*profile_kind = special_kinds[i].profile_kind;
			return 0;
		}
	return -ENOTSUP;
}

/*
 * runtime.bucket and memRecord of runtime/mprof.go, per release verified:
 * Go 1.19.8, the DWARF of goalloc (runtime.bucket: typ at 16, size at 32,
 * nstk at 40, 48 bytes; memProfile = 1) and setprofilebucket(p, b) in AX, BX.
 */
static const struct {
	unsigned minor;
	struct gobucket_layout l;
} bucket_layouts[] = {
	{ 19,
	  { .p_arg = 0,
	    .b_arg = 1,
	    .hdr = 48,
	    .typ_off = 16,
	    .size_off = 32,
	    .nstk_off = 40,
	    .mem_type = 1 } },
};

int gobuildinfo__bucket_layout(unsigned minor, struct gobucket_layout *l)
{
	for (size_t i = 0; i < ARRAY_SIZE(bucket_layouts); i++)
		if (bucket_layouts[i].minor == minor) {
			*l = bucket_layouts[i].l;
			return (int)i;
		}
	return -ENOTSUP;
}

int gobuildinfo__bucket_layout_at(unsigned i, struct gobucket_layout *l)
{
	if (i >= ARRAY_SIZE(bucket_layouts))
		return -ENOENT;
	*l = bucket_layouts[i].l;
	return 0;
}

static uint64_t word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int gobucket__parse(const void *buf, size_t len, const struct gobucket_layout *l,
		    struct gobucket *out)
{
	const uint8_t *b = buf;
	uint64_t nstk;

	if (len < l->hdr || l->hdr < l->nstk_off + 8 || l->hdr < l->size_off + 8 ||
	    l->hdr < l->typ_off + 8)
		return len < l->hdr ? -ENODATA : -EINVAL;
	nstk = word(b + l->nstk_off);
	out->size = word(b + l->size_off);
	if (word(b + l->typ_off) != l->mem_type || nstk > GOBUCKET_MAX_STACK || !out->size ||
	    out->size > GOBUCKET_MAX_SIZE)
		return -EINVAL;
	if (len < l->hdr + 8 * nstk)
		return -ENODATA;
	out->nstk = (uint32_t)nstk;
	for (uint32_t i = 0; i < out->nstk; i++)
		out->stk[i] = word(b + l->hdr + 8 * i);
	out->active_off = l->hdr + 8 * out->nstk;
	return 0;
}

void gobucket__inuse(const uint64_t active[4], int64_t rate, double *objects, double *bytes)
{
	double n = active[1] < active[0] ? (double)(active[0] - active[1]) : 0;
	double s = active[3] < active[2] ? (double)(active[2] - active[3]) : 0;
	double p;

	*objects = *bytes = 0;
	if (!n || !s)
		return;
	if (rate > 1) {
		p = -expm1(-(s / n) / (double)rate);
		if (p > 0) {
			n /= p;
			s /= p;
		}
	}
	if (isfinite(n) && isfinite(s)) {
		*objects = n;
		*bytes = s;
	}
}

/* `op r64, [rip + disp32]` at code[i] (REX.W, REX.W + R; opcode op): its
 * target (the next instruction's address + disp32) into *t. */
static bool rip_op(const uint8_t *code, size_t len, size_t i, uint64_t vaddr, uint8_t op,
		   uint64_t *t)
{
	int32_t d;

	if (i > len || len - i < 7 || (code[i] != 0x48 && code[i] != 0x4c) || code[i + 1] != op ||
	    (code[i + 2] & 0xc7) != 0x05)
		return false;
	memcpy(&d, code + i + 3, sizeof(d));
	*t = vaddr + i + 7 + (uint64_t)(int64_t)d;
	return true;
}

int gobuildinfo__x86_memprof_lea(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t typ,
				 uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t found = 0, t;

	if (typ > 0x7f)
		return -ENOENT;
	for (size_t i = 0; len >= 4 && i <= len - 4; i++) {
		size_t j = i + 4;

		/* cmp r64, imm8: REX.W (+ B) 83 /7 ib, register operand */
		if ((code[i] != 0x48 && code[i] != 0x49) || code[i + 1] != 0x83 ||
		    (code[i + 2] & 0xf8) != 0xf8 || code[i + 3] != typ)
			continue;
		if (j + 2 <= len && code[j] == 0x75) /* jne rel8 */
			j += 2;
		else if (j + 6 <= len && code[j] == 0x0f && code[j + 1] == 0x85) /* jne rel32 */
			j += 6;
		else
			continue;
		if (!rip_op(code, len, j, vaddr, 0x8d, &t) || t < lo || t >= hi)
			continue;
		if (found && found != t)
			return -ENOENT; /* two answers: none */
		found = t;
	}
	if (!found)
		return -ENOENT;
	*out = found;
	return 0;
}

int gobuildinfo__x86_first_rip_load(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo,
				    uint64_t hi, uint64_t *out)
{
	uint64_t t;

	for (size_t i = 0; i < len; i++)
		if (rip_op(code, len, i, vaddr, 0x8b, &t) && t >= lo && t < hi) {
			*out = t;
			return 0;
		}
	return -ENOENT;
}
