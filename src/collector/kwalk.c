// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * kwalk.c - the kernel's ORC table for the program's kernel stack walk
 * (bpf/kwalk.bpf.h): from the cache (unwind/korc_cache.h) if it agrees with
 * the kernel, else read out of kernel memory (kread.bpf.c) and reshaped
 * (unwind/korc.h); handed to the program's maps after the load.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "base/util.h"
#include "collector/collector_int.h"
#include "sym/kallsyms.h"
#include "sym/kbuildid.h"
#include "unwind/korc_cache.h"
#include "kread.skel.h"

#define KALLSYMS_PATH "/proc/kallsyms"

/* --- kernel stacks with the kernel's ORC table (src/unwind/korc.h) --------- */

#if defined(__x86_64__)
#define IS_X86_64 1
#else
#define IS_X86_64 0
#endif

/* The orc_entry layout the walker decodes (KORC_* in profile_abi.h), 6.3+. */
static int orc_layout_ok(void)
{
	static const struct {
		const char *name;
		uint32_t off, bits;
	} want[] = { { "sp_offset", 0, 0 }, { "bp_offset", 16, 0 }, { "sp_reg", 32, 4 },
		     { "bp_reg", 36, 4 },   { "type", 40, 3 },	    { "signal", 43, 1 } };
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id, ok = 0;

	if (!btf)
		return -errno ? -errno : -ENOENT;
	id = btf__find_by_name_kind(btf, "orc_entry", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (!t || t->size != 6 || btf_vlen(t) < ARRAY_SIZE(want)) {
		btf__free(btf);
		return -ENOTSUP;
	}
	m = btf_members(t);
	for (uint32_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *name = btf__name_by_offset(btf, m[i].name_off);

		if (name && !strcmp(name, want[i].name) &&
		    btf_member_bit_offset(t, i) == want[i].off &&
		    btf_member_bitfield_size(t, i) == want[i].bits)
			ok++;
	}
	btf__free(btf);
	return ok == (int)ARRAY_SIZE(want) ? 0 : -ENOTSUP;
}

/* Copies len bytes of kernel memory at addr (kread.bpf.c). */
static int kread(struct kread_bpf *sk, void *dst, uint64_t addr, size_t len)
{
	struct bp_kread_args a = { 0 };

	for (size_t off = 0; off < len;) {
		size_t n = MIN(len - off, sizeof(sk->bss->buf));
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

		a.addr = addr + off;
		a.len = (uint32_t)n;
		if (bpf_prog_test_run_opts(bpf_program__fd(sk->progs.kread), &o))
			return -errno;
		if (o.retval)
			return (int)o.retval;
		memcpy((char *)dst + off, sk->bss->buf, n);
		off += n;
	}
	return 0;
}

/* A kallsyms line for the ORC walker: core kernel symbols only. */
static int take_korc_sym(void *ctx, const struct kallsyms_line *l)
{
	if (!l->module)
		korc__syms_take(ctx, l->name, l->name_len, l->addr);
	return 0;
}

/* Builds c->korc from the running kernel's tables; m: what it was built from. */
static int kw_build(struct collector *c, struct korc_meta *m)
{
	struct korc_syms ks = { 0 };
	struct kread_bpf *sk = NULL;
	int32_t *ip = NULL;
	uint8_t *orc = NULL;
	size_t n;
	long r;
	int err;

	r = kallsyms__parse(KALLSYMS_PATH, 256u << 20, take_korc_sym, &ks);
	if (r < 0)
		return (int)r;
	if (!ks.orc_ip_start || !ks.orc_ip_stop || !ks.orc_start || !ks.stext || !ks.etext ||
	    ks.orc_ip_stop <= ks.orc_ip_start)
		return -ENOENT; /* no ORC (frame-pointer kernel), or kptr_restrict */
	err = orc_layout_ok();
	if (err)
		return err;
	n = (ks.orc_ip_stop - ks.orc_ip_start) / 4;
	if (n > (8u << 20))
		return -E2BIG;
	ip = malloc(n * 4);
	orc = malloc(n * 6);
	sk = kread_bpf__open_and_load();
	if (!sk)
		err = -errno;
	else if (!ip || !orc)
		err = -ENOMEM;
	else
		err = kread(sk, ip, ks.orc_ip_start, n * 4);
	if (!err)
		err = kread(sk, orc, ks.orc_start, n * 6);
	if (!err)
		err = korc__build(ip, orc, (uint32_t)n, ks.orc_ip_start, ks.stext, ks.etext,
				  &c->korc);
	kread_bpf__destroy(sk);
	free(ip);
	free(orc);
	*m = (struct korc_meta){ .stext = ks.stext,
				 .orc_ip_start = ks.orc_ip_start,
				 .orc_start = ks.orc_start,
				 .nr_orc = (uint32_t)n };
	memcpy(m->tramp, ks.trampolines, sizeof(m->tramp));
	return err;
}

struct stext {
	uint64_t addr;
	bool found;
};

static int take_stext(void *ctx, const struct kallsyms_line *l)
{
	struct stext *st = ctx;

	if (!l->module && l->name_len == 6 && !memcmp(l->name, "_stext", 6)) {
		st->addr = l->addr;
		st->found = true;
		return -1; /* found: stop */
	}
	return 0;
}
/*
 * _stext, from the head of /proc/kallsyms: the core kernel's text comes
 * first, so a few lines do, where the whole file costs tens of milliseconds.
 */
static int kallsyms_stext(uint64_t *stext)
{
	struct stext st = { 0 };
	long r = kallsyms__parse_head(KALLSYMS_PATH, 16384, take_stext, &st);

	*stext = st.addr;
	if (r < 0 && !st.found)
		return (int)r;	     /* the file could not be read */
	return *stext ? 0 : -ENOENT; /* 0: not among the first lines, or addresses hidden */
}

static uint64_t orc_raw(const uint8_t *e)
{
	uint64_t v = 0;

	for (int i = 5; i >= 0; i--)
		v = v << 8 | e[i];
	return v;
}

/*
 * A table from the cache must say what the kernel's own table says: entries
 * spread over the whole table are read from kernel memory and looked up.
 * 0, or -ESTALE at the first disagreement.
 */
#define KW_CHECKS 64

static int kw_check(const struct korc *k, const struct korc_meta *m)
{
	struct kread_bpf *sk;
	int err = 0, checked = 0;

	if (m->nr_orc < 2)
		return -ESTALE;
	sk = kread_bpf__open_and_load();
	if (!sk)
		return -errno;
	for (uint32_t j = 0; j < KW_CHECKS && !err; j++) {
		uint32_t i = (uint32_t)((uint64_t)j * (m->nr_orc - 1) / KW_CHECKS);
		int32_t rel[2];
		uint8_t e[6];
		uint64_t ip, next, raw;

		err = kread(sk, rel, m->orc_ip_start + 4ull * i, sizeof(rel));
		if (!err)
			err = kread(sk, e, m->orc_start + 6ull * i, sizeof(e));
		if (err)
			break;
		ip = m->orc_ip_start + 4ull * i + (int64_t)rel[0];
		next = m->orc_ip_start + 4ull * (i + 1) + (int64_t)rel[1];
		if (ip < m->stext || ip >= k->end || next == ip)
			continue; /* outside the walked range, or a later entry wins */
		if (korc__lookup(k, ip, &raw) || raw != orc_raw(e))
			err = -ESTALE;
		checked++;
	}
	kread_bpf__destroy(sk);
	return err ? err : checked >= KW_CHECKS / 2 ? 0 : -ESTALE;
}

/*
 * c->korc: from the cache for this kernel build if it is there and agrees
 * with the kernel (unwind/korc_cache.h), else built from the kernel's
 * tables and saved there for the next start. 0 or -errno.
 */
int kwalk__prepare(struct collector *c)
{
	char bid[BUILDID_HEX_MAX], path[PATH_MAX] = "";
	struct korc_meta m;
	uint64_t stext;
	int err;

	if (!IS_X86_64)
		return -ENOTSUP; /* the walker and the orc_entry decoding are x86-64's */
	err = buildid__kernel(bid);
	if (!err)
		err = kallsyms_stext(&stext);
	if (!err)
		err = korc_cache__path(bid, path, sizeof(path));
	if (!err)
		err = korc_cache__load(path, bid, stext, &c->korc, &m);
	if (!err)
		err = kw_check(&c->korc, &m);
	c->korc_load_err = c->korc_save_err = err;
	if (!err) {
		memcpy(c->korc_tramp, m.tramp, sizeof(c->korc_tramp));
		return 0;
	}
	korc__free(&c->korc);
	err = kw_build(c, &m);
	memcpy(c->korc_tramp, m.tramp, sizeof(c->korc_tramp));
	if (!err && path[0])
		c->korc_save_err = korc_cache__save(path, bid, &c->korc, &m);
	return err;
}

/* Hands the kernel ORC table to its maps, then drops the copy. */
int kwalk__fill(struct collector *c, struct errmsg *em)
{
	int err;

	if (!c->skel->rodata->kw_enabled)
		return 0;
	err = fill_mmap(c->skel->maps.korc_ents, c->korc.ents,
			c->korc.nents * sizeof(*c->korc.ents));
	if (!err)
		err = fill_mmap(c->skel->maps.korc_uniq, c->korc.uniq,
				c->korc.nuniq * sizeof(*c->korc.uniq));
	if (!err)
		err = fill_mmap(c->skel->maps.korc_blocks, c->korc.blocks,
				c->korc.nblocks * sizeof(*c->korc.blocks));
	if (err) {
		errmsg_set(em, err, "cannot fill the kernel unwind table: %s", strerror(-err));
		return err;
	}
	c->korc_entries = c->korc.nents;
	korc__free(&c->korc);
	return 0;
}
