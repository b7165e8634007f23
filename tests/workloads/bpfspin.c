// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * bpfspin - loads a BPF program after a delay and keeps it busy, for the
 * "[bpf]" kernel symbol test: an eBPF socket filter named "bpfprof_spin"
 * (a bounded loop of 20000 additions) is attached to a UDP socket on the
 * loopback device, and the process sends itself datagrams, so the filter
 * runs in this process's kernel stacks. Its JIT image shows in kallsyms as
 * "bpf_prog_<tag>_bpfprof_spin [bpf]" only from the moment it is loaded: a
 * profiler that read kallsyms before must notice and read it again.
 *
 * Usage: bpfspin DELAY_SECONDS SECONDS
 */
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ATTACH_BPF
#define SO_ATTACH_BPF 50
#endif

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
						.off = (o), .imm = (i) })

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int load_prog(void)
{
	struct bpf_insn prog[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 0),	   /* r1 = 0 */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),	   /* r0 = 0 */
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, BPF_REG_0, BPF_REG_1, 0, 0), /* r0 += r1 */
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, 1),	   /* r1 += 1 */
		INSN(BPF_JMP | BPF_JLT | BPF_K, BPF_REG_1, 0, -3, 20000),    /* loop */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0xffff), /* keep the packet */
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	static char log[65536];
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (unsigned long)prog;
	attr.insn_cnt = sizeof(prog) / sizeof(prog[0]);
	attr.license = (unsigned long)"GPL";
	strncpy(attr.prog_name, "bpfprof_spin", sizeof(attr.prog_name) - 1);
	fd = (int)syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0) {
		/* Again with the verifier's log, to say why. */
		perror("BPF_PROG_LOAD");
		attr.log_buf = (unsigned long)log;
		attr.log_size = sizeof(log);
		attr.log_level = 1;
		if (syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr)) < 0)
			fprintf(stderr, "%.2000s\n", log);
	}
	return fd;
}

int main(int argc, char **argv)
{
	double delay = argc > 1 ? atof(argv[1]) : 1, secs = argc > 2 ? atof(argv[2]) : 5;
	double start = now();
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t alen = sizeof(addr);
	char buf[64] = "x";
	int prog, rx, tx;

	while (now() < start + delay)
		usleep(10000);
	prog = load_prog();
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (prog < 0 || rx < 0 || tx < 0)
		return 1;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(rx, (struct sockaddr *)&addr, sizeof(addr)) ||
	    getsockname(rx, (struct sockaddr *)&addr, &alen) ||
	    setsockopt(rx, SOL_SOCKET, SO_ATTACH_BPF, &prog, sizeof(prog))) {
		perror("socket setup");
		return 1;
	}
	printf("loaded\n");
	fflush(stdout);
	while (now() < start + delay + secs) {
		if (sendto(tx, buf, 1, 0, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
		    recv(rx, buf, sizeof(buf), 0) < 0)
			return 1;
	}
	return 0;
}
