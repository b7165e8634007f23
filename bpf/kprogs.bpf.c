// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * kprogs.bpf.c - lists the loaded BPF programs' JIT images (start, length,
 * id) for the symbolizer. /proc/kallsyms names them but gives no sizes, and a
 * program loaded after it was read sits in a gap of a program pack, right
 * after an older one: without extents it would be named as that one. The
 * list is an iterator (iter/bpf_prog), created once at start-up; reading it
 * needs no capability, so it still works after bpfprof drops CAP_SYS_ADMIN,
 * which BPF_PROG_GET_NEXT_ID needs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "profile_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Appends r for one program or function (its own aux->ksym). */
static void put(struct seq_file *seq, struct bp_kprog *r, struct bpf_prog *p)
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

SEC("iter/bpf_prog")
int kprogs(struct bpf_iter__bpf_prog *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct bpf_prog *prog = ctx->prog;
	struct bpf_prog **funcs;
	struct bp_kprog r = {};
	__u32 n;

	if (!prog)
		return 0;
	r.id = BPF_CORE_READ(prog, aux, id);
	put(seq, &r, prog);
	n = BPF_CORE_READ(prog, aux, func_cnt);
	funcs = BPF_CORE_READ(prog, aux, func);
	if (!funcs)
		return 0;
	r.sub = 1;
	for (__u32 i = 0; i < KPROGS_MAX_FUNCS && i < n; i++) {
		struct bpf_prog *f = NULL;

		if (bpf_probe_read_kernel(&f, sizeof(f), funcs + i) || !f)
			break;
		put(seq, &r, f);
	}
	return 0;
}
