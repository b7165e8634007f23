// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * symbench - symbolizes a synthetic whole-machine profile, cold and warm.
 *
 * For every process on the machine, every executable file mapping gets
 * FRAMES_PER_MAPPING addresses spread over it (user frames), and as many
 * kernel addresses are drawn from kallsyms' text: the mix a whole-machine
 * profile asks a symbolizer for, over every process and library that runs.
 *
 *   cold: a new symbolizer: kallsyms, every process's maps, every file's
 *         symbols (and debug files), then every frame;
 *   warm: the same frames again through the same symbolizer.
 *
 * Prints one line of key=value pairs (tools/bench_symbolize.py reads it).
 *
 * --note PID...: what noting a new program image costs - for each process,
 * a new symbolizer and CPU time of symbolizer__note_process() (its maps, its
 * files opened; symbols are read at a file's first lookup), then of one
 * lookup in every executable file it maps (each file's symbols read); one
 * line per process.
 *
 * --maps PID...: what reading a process's mappings costs - CPU time per read
 * of the text of /proc/PID/maps (every mapping) and of its code mappings
 * through PROCMAP_QUERY (what a notice reads on Linux 6.11+), 2,000 reads
 * each; one line per process.
 *
 * Usage: symbench [FRAMES_PER_MAPPING]   (root: other processes' files)
 *        symbench --note PID...
 *        symbench --maps PID...
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sym/kallsyms.h"
#include "proc/procfs.h"
#include "proc/procmaps.h"
#include "sym/symbolizer.h"
#include "base/util.h"

struct frame {
	struct proc_id id; /* pid 0: kernel */
	uint64_t ip;
};

static struct frame *frames;
static size_t nr_frames, cap_frames;

static void add(const struct proc_id *id, uint64_t ip)
{
	if (nr_frames == cap_frames) {
		cap_frames = cap_frames ? 2 * cap_frames : 65536;
		frames = realloc(frames, cap_frames * sizeof(*frames));
		if (!frames)
			exit(1);
	}
	frames[nr_frames].id = *id;
	frames[nr_frames].ip = ip;
	nr_frames++;
}

static uint64_t rnd(void)
{
	static uint64_t x = 0x9e3779b97f4a7c15ULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static size_t collect(int per_mapping)
{
	struct proc_id kid = { 0 };
	size_t procs = 0, user = 0;
	struct ksyms *ks;
	struct dirent *de;
	DIR *d = opendir("/proc");

	while (d && (de = readdir(d))) {
		struct proc_id id = { 0 };
		struct procmaps m = { 0 };
		char path[64];
		uint64_t ticks, sig;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		id.pid = (uint32_t)strtoul(de->d_name, NULL, 10);
		snprintf(path, sizeof(path), "/proc/%u/maps", id.pid);
		if (procfs__image("/proc", id.pid, &ticks, &sig) || procmaps__read(path, &m))
			continue;
		id.start_time = ticks * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
		id.exec_id = 1;
		id.mm_sig = sig;
		for (size_t i = 0; i < m.nr; i++) {
			const struct procmap *pm = &m.maps[i];

			if (!(pm->perms & PROCMAP_X) || !procmap__is_file(pm))
				continue;
			for (int k = 0; k < per_mapping; k++, user++)
				add(&id, pm->start + rnd() % (pm->end - pm->start));
		}
		procs += m.nr > 0;
		procmaps__free(&m);
	}
	if (d)
		closedir(d);
	/* As many kernel frames as user frames, at symbol starts plus a little. */
	ks = ksyms__load("/proc/kallsyms");
	if (ks && ksyms__count(ks)) {
		const struct ksym *s;

		for (size_t k = 0; k < user; k++) {
			uint64_t a = 0xffffffff81000000ULL + rnd() % (32u << 20);

			s = ksyms__lookup(ks, a);
			add(&kid, s ? s->addr + rnd() % 64 : a);
		}
	}
	ksyms__free(ks);
	return procs;
}

static double ms_since(uint64_t t0)
{
	return (now_ns() - t0) / 1e6;
}

/* CPU time of this process, ns: on a busy machine wall time says little. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static size_t pass(struct symbolizer *s, bool note)
{
	size_t named = 0;
	struct sym r;
	char buf[512];

	for (size_t i = 0; i < nr_frames; i++) {
		const struct frame *f = &frames[i];

		if (!f->id.pid) {
			symbolizer__kernel(s, f->ip, &r);
		} else {
			if (note)
				symbolizer__note_process(s, &f->id);
			symbolizer__user(s, &f->id, f->ip, true, &r);
		}
		named += strcmp(sym__display(&r, buf, sizeof(buf)), "[unknown]") != 0 && r.name;
	}
	return named;
}

static int note(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		struct proc_id id = { .pid = (uint32_t)strtoul(argv[i], NULL, 10), .exec_id = 1 };
		struct symbolizer *s = symbolizer__new(NULL);
		struct procmaps m = { 0 };
		struct symbolizer_stats st;
		char path[64];
		uint64_t ticks, sig, c0;
		double note_ms, read_ms;
		size_t files = 0, held;
		struct sym r;
		int err;

		snprintf(path, sizeof(path), "/proc/%u/maps", id.pid);
		if (!s || procfs__image("/proc", id.pid, &ticks, &sig) || procmaps__read(path, &m)) {
			fprintf(stderr, "symbench: cannot read process %s\n", argv[i]);
			symbolizer__free(s);
			return 1;
		}
		id.start_time = ticks * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
		id.mm_sig = sig;
		c0 = cpu_ns();
		err = symbolizer__note_process(s, &id);
		note_ms = (cpu_ns() - c0) / 1e6;
		symbolizer__stats(s, &st);
		held = st.files_held;
		c0 = cpu_ns();
		for (size_t k = 0; k < m.nr; k++) {
			if (!(m.maps[k].perms & PROCMAP_X) || !procmap__is_file(&m.maps[k]))
				continue;
			symbolizer__user(s, &id, m.maps[k].start, true, &r);
			files++;
		}
		read_ms = (cpu_ns() - c0) / 1e6;
		symbolizer__stats(s, &st);
		printf("pid=%u err=%d exec_mappings=%zu files=%zu note_cpu_ms=%.2f "
		       "first_lookups_cpu_ms=%.2f held_after_note=%zu\n",
		       id.pid, err, files, st.files, note_ms, read_ms, held);
		procmaps__free(&m);
		symbolizer__free(s);
	}
	return 0;
}

static int maps(int argc, char **argv)
{
	enum { READS = 2000 };

	for (int i = 0; i < argc; i++) {
		uint32_t pid = (uint32_t)strtoul(argv[i], NULL, 10), tid;
		size_t n_text = 0, n_query = 0;
		uint64_t c0, text_ns, query_ns;
		struct procmaps m;
		int err = 0;

		c0 = cpu_ns();
		for (int k = 0; k < READS && !err; k++) {
			err = procmaps__read_pid("/proc", pid, &m, &tid);
			n_text = m.nr;
			procmaps__free(&m);
		}
		text_ns = cpu_ns() - c0;
		c0 = cpu_ns();
		for (int k = 0; k < READS && !err; k++) {
			err = procmaps__query_pid("/proc", pid, PROCMAPS_Q_EXEC, &m, &tid);
			n_query = m.nr;
			procmaps__free(&m);
		}
		query_ns = cpu_ns() - c0;
		if (err) {
			fprintf(stderr, "symbench: cannot read the maps of process %s: %s\n", argv[i],
				strerror(-err));
			return 1;
		}
		printf("pid=%u mappings=%zu text_us=%.1f code_mappings=%zu query_us=%.1f\n", pid,
		       n_text, text_ns / 1e3 / READS, n_query, query_ns / 1e3 / READS);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int per = argc > 1 ? atoi(argv[1]) : 20;
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct rusage ru;
	size_t procs, named;
	double cold, warm, cold_cpu, warm_cpu;
	uint64_t t0, c0;

	if (argc > 1 && !strcmp(argv[1], "--note"))
		return note(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--maps"))
		return maps(argc - 2, argv + 2);
	procs = collect(per > 0 ? per : 20);
	t0 = now_ns();
	c0 = cpu_ns();
	s = symbolizer__new(NULL);
	if (!s || symbolizer__load_kernel(s))
		return 1;
	named = pass(s, true);
	cold = ms_since(t0);
	cold_cpu = (cpu_ns() - c0) / 1e6;
	t0 = now_ns();
	c0 = cpu_ns();
	pass(s, false);
	warm = ms_since(t0);
	warm_cpu = (cpu_ns() - c0) / 1e6;
	symbolizer__stats(s, &st);
	getrusage(RUSAGE_SELF, &ru);
	printf("processes=%zu files=%zu frames=%zu named=%zu cold_ms=%.1f warm_ms=%.1f "
	       "cold_cpu_ms=%.1f warm_cpu_ms=%.1f cold_fps=%.0f warm_fps=%.0f debug_files=%" PRIu64
	       " file_kib=%zu maxrss_kib=%ld\n",
	       procs, st.files, nr_frames, named, cold, warm, cold_cpu, warm_cpu,
	       nr_frames / (cold_cpu / 1e3), nr_frames / (warm_cpu / 1e3), st.debug_files,
	       st.file_bytes >> 10, ru.ru_maxrss);
	symbolizer__free(s);
	free(frames);
	return 0;
}
