// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * jitlike - a tiny "JIT": copies a machine-code loop into anonymous
 * executable memory, names it in /tmp/perf-PID.map (PID as the process sees
 * itself, so inside a pid namespace too) and runs it:
 *
 *     main -> run_jit -> jit_hot_loop  (generated code, named by the map)
 *
 * The generated function keeps a frame pointer, so the frame-pointer walk
 * finds run_jit and main above it.
 *
 * Usage: jitlike SECONDS [MODE [NAME]]
 *   MODE normal     write the map (default)
 *        none       write no map
 *        symlink    make /tmp/perf-PID.map a symlink to a map elsewhere
 *        otheruid   write the map, then chown it to uid 65534
 *        late       write the map only after one second
 *        devzero    code in shared anonymous memory ("/dev/zero (deleted)")
 *        huge       a hostile map: $JITLIKE_LINES (default 1,800,000) entries
 *                   of 120-character names around the real one (~232 MB),
 *                   and a second function, NAME_late, named on the map's
 *                   first line, that runs instead after SIGUSR1 (a reader
 *                   keeping only what it was asked for must read it again)
 *        dense      a hostile map read whole: $JITLIKE_BYTES (default 7.5 MiB,
 *                   under the 8 MiB a map is read whole up to) of the
 *                   shortest lines a map can have, "ADDR 1 f", then the real
 *                   entry (~600,000 entries: ~45 MiB of heap each before
 *                   one map had a cap of its own); with $JITLIKE_NAME=N the
 *                   filler's names are N bytes long
 *   NAME           the symbol name to write (default jit_hot_loop)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
static const unsigned char code[] = {
	0x55,		  /* push %rbp */
	0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
	0x48, 0x89, 0xf8, /* mov %rdi,%rax */
	0x48, 0xff, 0xc8, /* 1: dec %rax */
	0x75, 0xfb,	  /* jnz 1b */
	0x5d,		  /* pop %rbp */
	0xc3,		  /* ret */
};
#elif defined(__aarch64__)
static const unsigned int code[] = {
	0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! */
	0x910003fd, /* mov x29, sp */
	0xf1000400, /* 1: subs x0, x0, #1 */
	0x54ffffe1, /* b.ne 1b */
	0xa8c17bfd, /* ldp x29, x30, [sp], #16 */
	0xd65f03c0, /* ret */
};
#else
#error "jitlike: no machine code for this architecture"
#endif

typedef unsigned long (*jit_fn)(unsigned long);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void write_map(const char *path, void *addr, const char *name)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(1);
	}
	/* A few other entries around it, as a real JIT map has. */
	fprintf(f, "%lx 10 jit_stub_before\n", (unsigned long)addr - 0x100);
	fprintf(f, "%lx %zx %s\n", (unsigned long)addr, sizeof(code), name);
	fprintf(f, "%lx 20 jit_stub_after\n", (unsigned long)addr + 0x100);
	fclose(f);
}

/* Filler: code that never runs, at addresses of its own, with long names. */
static void filler(FILE *f, unsigned long from, unsigned long to)
{
	for (unsigned long i = from; i < to; i++)
		fprintf(f, "%lx 40 LazyCompile:*filler_%09lu_%088lu\n", 0x10000000UL + i * 0x40, i,
			i);
}

static void write_huge_map(const char *path, void *addr, void *late, const char *name)
{
	const char *env = getenv("JITLIKE_LINES");
	unsigned long n = env ? strtoul(env, NULL, 10) : 1800000;
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "%lx %zx %s_late\n", (unsigned long)late, sizeof(code), name);
	filler(f, 0, n / 2);
	fprintf(f, "%lx %zx %s\n", (unsigned long)addr, sizeof(code), name);
	filler(f, n / 2, n);
	fclose(f);
}

static void write_dense_map(const char *path, void *addr, const char *name)
{
	const char *env = getenv("JITLIKE_BYTES"), *len = getenv("JITLIKE_NAME");
	long bytes = env ? strtol(env, NULL, 10) : 15l << 19;
	int n = len ? atoi(len) : 1;
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(1);
	}
	for (unsigned long i = 0; ftell(f) < bytes; i++)
		fprintf(f, "%lx 1 %0*d\n", 0x10000000UL + i, n, 0);
	fprintf(f, "%lx %zx %s\n", (unsigned long)addr, sizeof(code), name);
	fclose(f);
}

static volatile sig_atomic_t switch_to_late;

static void on_usr1(int sig)
{
	(void)sig;
	switch_to_late = 1;
}

__attribute__((noinline)) unsigned long run_jit(jit_fn fn, double until)
{
	unsigned long r = 0;

	while (now() < until && !(switch_to_late == 1))
		r += fn(2000000);
	return r;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	const char *mode = argc > 2 ? argv[2] : "normal";
	const char *name = argc > 3 ? argv[3] : "jit_hot_loop";
	char path[64], target[96];
	unsigned char *mem;
	double start = now();

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   (strcmp(mode, "devzero") ? MAP_PRIVATE : MAP_SHARED) | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	/* Not at the start of the page: the map's neighbours sit around it. */
	mem += 0x200;
	memcpy(mem, code, sizeof(code));
	__builtin___clear_cache((char *)mem, (char *)mem + sizeof(code));
	if (mprotect(mem - 0x200, 4096, PROT_READ | PROT_EXEC))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (!strcmp(mode, "normal") || !strcmp(mode, "devzero")) {
		write_map(path, mem, name);
	} else if (!strcmp(mode, "symlink")) {
		snprintf(target, sizeof(target), "/tmp/jitlike-target-%d.txt", (int)getpid());
		write_map(target, mem, name);
		unlink(path);
		if (symlink(target, path))
			return 1;
	} else if (!strcmp(mode, "otheruid")) {
		write_map(path, mem, name);
		if (chown(path, 65534, 65534))
			return 1;
	} else if (!strcmp(mode, "dense")) {
		write_dense_map(path, mem, name);
	} else if (!strcmp(mode, "late")) {
		run_jit((jit_fn)mem, start + 1);
		write_map(path, mem, name);
	} else if (!strcmp(mode, "huge")) {
		/* The second copy of the loop, in the same page, later on. */
		unsigned char *late = mem + 0x400;

		if (mprotect(mem - 0x200, 4096, PROT_READ | PROT_WRITE))
			return 1;
		memcpy(late, code, sizeof(code));
		__builtin___clear_cache((char *)late, (char *)late + sizeof(code));
		if (mprotect(mem - 0x200, 4096, PROT_READ | PROT_EXEC))
			return 1;
		signal(SIGUSR1, on_usr1);
		write_huge_map(path, mem, late, name);
		printf("%d %lx\n", (int)getpid(), (unsigned long)mem);
		fflush(stdout);
		start = now(); /* the map took a while to write */
		run_jit((jit_fn)mem, start + secs);
		switch_to_late = 2;
		run_jit((jit_fn)late, start + secs);
		return 0;
	}
	printf("%d %lx\n", (int)getpid(), (unsigned long)mem);
	fflush(stdout);
	run_jit((jit_fn)mem, start + secs);
	return 0;
}
