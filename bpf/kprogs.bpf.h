/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * kprogs.bpf.h - lists the loaded BPF programs' JIT images (start, length,
 * kallsyms name) for the symbolizer. /proc/kallsyms gives programs no sizes,
 * and a program loaded after it was read sits in a gap of a program pack,
 * right after an older one: without extents it would be named as that one.
 * The list is an iterator (iter/bpf_prog) made once at start-up; reading it
 * needs no capability, so it still works after bpfprof drops CAP_SYS_ADMIN,
 * which BPF_PROG_GET_NEXT_ID needs. Part of profile.bpf.c's object, so
 * loading it costs no second parse of the kernel's BTF; a program's
 * functions are walked by bpf_loop() (a bounded loop of 256 made the
 * verifier take ~370 ms). Not loaded on kernels without the bpf_prog
 * iterator or bpf_loop() (5.17).
 */
#ifndef BPFPROF_KPROGS_BPF_H
#define BPFPROF_KPROGS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "profile_abi.h"

/* Appends r for one program or function (its own aux->ksym). */
static __always_inline void kprogs_put(struct seq_file *seq, struct bp_kprog *r, struct bpf_prog *p)
{
	struct bpf_prog_aux *aux = BPF_CORE_READ(p, aux);
	__u64 start, end;

	if (!aux)
		return;
	start = BPF_CORE_READ(aux, ksym.start);
	end = BPF_CORE_READ(aux, ksym.end);
	r->start = start;
	r->len = end > start && end - start < (1u << 30) ? (__u32)(end - start) : 0;
	r->name[0] = '\0';
	bpf_core_read_str(r->name, sizeof(r->name), &aux->ksym.name);
	bpf_seq_write(seq, r, sizeof(*r));
}

struct kprogs_loop {
	struct seq_file *seq;
	struct bpf_prog **funcs;
	struct bp_kprog r;
};

/* One function of a program with BPF-to-BPF calls (a bpf_loop() callback:
 * verified once, whatever the number of functions). */
static long kprogs_func(__u32 i, void *arg)
{
	struct kprogs_loop *l = arg;
	struct bpf_prog *f = NULL;

	if (bpf_probe_read_kernel(&f, sizeof(f), l->funcs + i) || !f)
		return 1;
	kprogs_put(l->seq, &l->r, f);
	return 0;
}

SEC("iter/bpf_prog")
int kprogs(struct bpf_iter__bpf_prog *ctx)
{
	struct bpf_prog *prog = ctx->prog;
	struct kprogs_loop l = {};
	__u32 n;

	if (!prog)
		return 0;
	l.seq = ctx->meta->seq;
	l.r.id = BPF_CORE_READ(prog, aux, id);
	kprogs_put(l.seq, &l.r, prog);
	n = BPF_CORE_READ(prog, aux, func_cnt);
	l.funcs = BPF_CORE_READ(prog, aux, func);
	if (!l.funcs || !n)
		return 0;
	l.r.sub = 1;
	bpf_loop(n < KPROGS_MAX_FUNCS ? n : KPROGS_MAX_FUNCS, kprogs_func, &l, 0);
	return 0;
}

#endif /* BPFPROF_KPROGS_BPF_H */
