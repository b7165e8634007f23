// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* cli.c - option parsing for "bpfprof record"; see cli.h. */
#include "cmd/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/httpd.h"
#include "format/writer.h"
#include "base/log.h"
#include "base/util.h"

static const struct option long_opts[] = {
	CLI_SAMPLING_OPTIONS,
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "max-disk", required_argument, NULL, OPT_MAX_DISK },
	{ "push", required_argument, NULL, OPT_PUSH },
	{ "app-name", required_argument, NULL, OPT_APP_NAME },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "debuginfod", required_argument, NULL, OPT_DEBUGINFOD },
	{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
	{ "addresses", no_argument, NULL, OPT_ADDRESSES },
	{ "off-cpu", no_argument, NULL, OPT_OFFCPU },
	{ "off-cpu-min", required_argument, NULL, OPT_OFFCPU_MIN },
	{ "off-cpu-tasks", required_argument, NULL, OPT_OFFCPU_TASKS },
	{ "alloc", optional_argument, NULL, OPT_ALLOC },
	{ "alloc-budget", required_argument, NULL, OPT_ALLOC_BUDGET },
	{ "on-cpu", no_argument, NULL, OPT_ON_CPU },
	{ "help", no_argument, NULL, 'h' },
	CLI_OUT_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

void cli__usage(FILE *f)
{
	const struct writer *const *w;

	fprintf(f,
		"Usage: bpfprof [record] [OPTIONS] [-- COMMAND [ARGS...]]\n"
		"       bpfprof top|annotate|count|report|convert|diff ...   (see bpfprof COMMAND --help)\n"
		"\n"
		"Samples the CPU with BPF (perf_event cpu-clock), counts kernel + user stacks in\n"
		"the kernel, and writes symbolized stacks when it stops.\n"
		"\n"
		"Targets (default: the whole machine, -a):\n"
		"  -a, --all-cpus          every online CPU\n"
		"  -p, --pid PID[,PID...]  only these processes (all their threads); stops\n"
		"                          when they have all exited; repeatable (-p 1 -p 2)\n"
		"  -C, --cpu LIST          only these CPUs, e.g. 0-3,8\n"
		"  -- COMMAND [ARGS...]    run COMMAND and profile it and everything it starts;\n"
		"                          stops when it exits. With -a, -C or -p (as perf\n"
		"                          record does): profile that target while COMMAND runs.\n"
		"                          bpfprof then exits with COMMAND's status (128+N if\n"
		"                          signal N killed it), 0 if bpfprof ended it (-d).\n"
		"                          Looked up in $PATH (sudo's own, secure_path): a\n"
		"                          program here is ./prog\n"
		"\n"
		"Sampling:\n"
		"  -F, --freq HZ           samples per second per CPU (default 99)\n"
		"  -d, --duration SECONDS  stop after this long (also 500ms, 2m, 1h); default:\n"
		"                          until Ctrl-C, SIGTERM or the command's exit\n"
		"  -U, --user-only         drop kernel frames (every sample is still counted)\n"
		"  -K, --kernel-only       drop user frames (every sample is still counted)\n"
		"      --include-idle      count the idle task too (excluded by default)\n"
		"      --per-thread        keep threads apart (tid in the key)\n"
		"      --max-stacks N      kernel stack map size (default: 2 x entries)\n"
		"      --max-entries N     kernel count map size: distinct (process, stacks) pairs\n"
		"                          kept in the kernel, split evenly among the CPUs and\n"
		"                          emptied when one CPU's share is half full (default:\n"
		"                          F x CPUs x 4 rounded up to a power of two, 1024-65536)\n"
		"      --unwind MODE       user stacks: auto (.eh_frame tables where available, frame\n"
		"                          pointers elsewhere; default), fp (frame pointers only),\n"
		"                          dwarf (tables only)\n"
		"      --no-python         Python processes: native frames only (by default their\n"
		"                          Python functions are walked too, CPython 3.11+)\n"
		"  -g                      accepted for perf's sake: stacks are always collected\n"
		"      --call-graph fp|dwarf[,SIZE]\n"
		"                          perf's spelling of --unwind fp|dwarf (SIZE is not needed:\n"
		"                          no stack is copied, it is walked in place)\n"
		"      --kernel-unwind MODE\n"
		"                          kernel stacks: orc (walked by the program with the\n"
		"                          kernel's own ORC table, the same frames for less;\n"
		"                          default), kernel (bpf_get_stack() for every sample)\n"
		"\n"
		"Off-CPU (where threads wait, in the same profile):\n"
		"      --off-cpu           also count the time target threads spend blocked (sleeps,\n"
		"                          I/O, locks), by the stacks they blocked in; pprof gets\n"
		"                          off_cpu and wall sample types, folded/svg show --view\n"
		"      --off-cpu-min TIME  count only waits at least this long (default 1ms; 0: all);\n"
		"                          shorter ones are counted in the summary (200us, 1ms, 2s;\n"
		"                          a bare number is milliseconds)\n"
		"      --off-cpu-tasks N   slots for blocked threads (default 16384, rounded up to a\n"
		"                          power of two; thread id modulo N: a thread blocking\n"
		"                          into a slot holding another's wait evicts it, counted)\n"
		"\n"
		"Memory (instead of the CPU, or beside it with --on-cpu):\n"
		"      --alloc[=BYTES]     where the C library's allocator is called (malloc, calloc,\n"
		"                          realloc, posix_memalign, aligned_alloc, memalign; free):\n"
		"                          allocations sampled by bytes, one every BYTES on average\n"
		"                          (default 512K; K, M, G suffixes), each weighed by its\n"
		"                          sampling probability; frees of sampled blocks matched,\n"
		"                          so what is still in use is known. Needs -p, a command,\n"
		"                          -a (every process) or --cgroup; pprof gets Go's heap\n"
		"                          profile types, the other formats a --view (default\n"
		"                          alloc-space). Go programs: the runtime's own samples\n"
		"                          (Go 1.19: read from the runtime's buckets, polled -\n"
		"                          stripped x86-64 too, the list found in the runtime's\n"
		"                          code - else runtime.setprofilebucket probed; other\n"
		"                          releases: runtime.mProf_Malloc, no in-use), with its\n"
		"                          MemProfileRate, which BYTES does not change. SBCL\n"
		"                          2.2.9: each allocation region's bytes as it fills, and\n"
		"                          large objects (in-use not measured: its GC moves them).\n"
		"                          With --interval, --output-dir or --listen: a heap profile\n"
		"                          per interval (.heap.pb.gz), /debug/pprof/heap and\n"
		"                          /allocs; --push: Pyroscope memory profiles\n"
		"      --alloc-budget CALLS  with -a or --cgroup: at most CALLS allocator calls per\n"
		"                          second across the CPUs trap (default 100000; 0: no\n"
		"                          guard); over it the probes are on part of each second\n"
		"                          and allocations scaled by the time on (biased for\n"
		"                          bursty programs); in-use is then not measured\n"
		"      --on-cpu            with --alloc, -p, -a (--cgroup) or a command: the CPU\n"
		"                          profile too, in the same run; -o FILE gets the CPU's,\n"
		"                          the heap profile goes beside it with .heap before the\n"
		"                          ending\n"
		"                          (p.pb.gz, p.heap.pb.gz; out.svg, out.heap.svg). Without\n"
		"                          -o, on a terminal: both reports, the CPU's first.\n"
		"                          Continuous mode: both per interval (bpfprof-T.pb.gz\n"
		"                          and bpfprof-T.heap.pb.gz), --listen serves\n"
		"                          /debug/pprof/profile, /heap and /allocs, --push\n"
		"                          sends Pyroscope CPU and memory profiles\n"
		"\n"
		"Output:\n"
		"  -o, --output FILE       write here instead of stdout (written atomically; if\n"
		"                          FILE cannot be written, saved in $TMPDIR or /tmp)\n"
		"  -f, --format NAME       output format; default from FILE's ending (below, in\n"
		"                          any case), folded for stdout or a FILE without one\n"
		"                          (another ending is an error: name the format with\n"
		"                          -f); report (the top functions) for a terminal,\n"
		"                          which never gets pprof, pb or svgz (binary): use -o\n"
		"                          or '>'\n"
		"      --addresses         keep each sample's leaf address (pprof Location.address)\n"
		"                          for 'bpfprof annotate PROFILE FUNCTION'\n"
		"      --debuginfod URLS   fetch the debug files of stripped binaries that have none\n"
		"                          on disk from these debuginfod servers (space-separated;\n"
		"                          default $DEBUGINFOD_URLS), in the background, cached in\n"
		"                          /var/cache/bpfprof/debuginfod; a run waits at most 10 s\n"
		"                          at its end for fetches still going\n"
		"      --no-debuginfod     never fetch debug files, whatever $DEBUGINFOD_URLS says\n");
	for (w = writer__all(); *w; w++) {
		char exts[64] = "";

		for (size_t i = 0; i < ARRAY_SIZE((*w)->exts) && (*w)->exts[i]; i++) {
			size_t l = strlen(exts);

			snprintf(exts + l, sizeof(exts) - l, "%s%s", i ? " " : "", (*w)->exts[i]);
		}
		fprintf(f, "      %-10s %-28s %s\n", (*w)->name, exts, (*w)->description);
	}
	cli__out_usage(f);
	fprintf(f,
		"\n"
		"Continuous mode (always on):\n"
		"      --interval SECS     drain and emit a profile every SECS (default 10 with\n"
		"                          --output-dir, --push, or --listen without -o)\n"
		"      --output-dir DIR    write one gzip pprof per interval, named by UTC start\n"
		"                          time (bpfprof-YYYYMMDDTHHMMSSZ.pb.gz; --alloc:\n"
		"                          .heap.pb.gz), atomically; DIR (made if missing) must\n"
		"                          belong to root or you and be writable by no one else\n"
		"      --keep N            keep at most N of bpfprof's files in DIR (oldest\n"
		"                          removed first; no other file is ever removed)\n"
		"      --max-disk SIZE     keep DIR's profiles under SIZE bytes (K, M, G suffixes)\n"
		"      --push URL          send each interval to a Pyroscope server (URL/ingest),\n"
		"                          one series per container; never blocks sampling\n"
		"      --app-name NAME     series name for --push (default bpfprof)\n"
		"      --token-file FILE   bearer token for --push (or $BPFPROF_PUSH_TOKEN)\n"
		"      --listen [ADDR:]PORT  serve /debug/pprof/profile?seconds=N (--alloc:\n"
		"                          /debug/pprof/heap and /allocs), /metrics and\n"
		"                          /healthz (ADDR defaults to 127.0.0.1); the URL is\n"
		"                          printed at the start\n"
		"      --cgroup PATH       only tasks in this cgroup v2 (and its descendants);\n"
		"                          repeatable; PATH absolute or relative to the cgroup2 mount\n");
	fprintf(f,
		"\n"
		"General:\n"
		"  -v, --verbose           more messages (twice: libbpf and verifier messages)\n"
		"  -q, --quiet             only errors\n"
		"      --version           print the version\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  sudo bpfprof -F 99 -a -d 10 > cpu.folded     whole machine for 10 s, folded\n"
		"  sudo bpfprof -p 1234 -d 30 -o app.folded     one process (all threads), 30 s\n"
		"  sudo bpfprof -p 1234,5678 -U                 two processes, user stacks, Ctrl-C to stop\n"
		"  sudo bpfprof -p \"$(pgrep -d, nginx)\" -d 10  every nginx process (pids joined by ',')\n"
		"  sudo bpfprof -C 0-1 -K -d 5                  kernel stacks of CPUs 0 and 1\n"
		"  sudo bpfprof -o run.folded -- ./my-benchmark --iterations 100\n"
		"  sudo bpfprof -F 99 -a -g -- sleep 10         whole machine while 'sleep 10' runs\n"
		"  sudo bpfprof -p 1234 -- sleep 30             process 1234 for 30 s\n"
		"  sudo bpfprof -p 1234 -d 30 -o app.svg        interactive flame graph (open in a browser)\n"
		"  sudo bpfprof -p 1234 -d 30 -o app.pb.gz      pprof: go tool pprof -top app.pb.gz\n"
		"  sudo bpfprof -a -d 10 -f report              top functions and processes as text\n"
		"  sudo bpfprof -p 1234 --unwind fp -d 10       user stacks by frame pointers only\n"
		"  flamegraph.pl cpu.folded > cpu.svg           (any folded-stack tool reads the output)\n"
		"  sudo bpfprof -F 99 -a --interval 10 --output-dir /var/lib/bpfprof --keep 8640\n"
		"  sudo bpfprof -a --push http://pyroscope:4040 --listen 6060   always on, shipped\n"
		"  sudo bpfprof --alloc -p 1234 --output-dir /var/lib/bpfprof   heap profiles, always on\n"
		"  sudo bpfprof --alloc -p 1234 --listen 6060   go tool pprof localhost:6060/debug/pprof/heap\n"
		"  sudo bpfprof --alloc --on-cpu -p 1234 -d 30 -o p.pb.gz   p.pb.gz (CPU), p.heap.pb.gz\n"
		"\n"
		"Exit status: 0 profile written, 1 failure, 2 usage error.\n");
}

static int usage_err(struct errmsg *em, const char *fmt, ...)
{
	char msg[sizeof(em->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errmsg_set(em, -EINVAL, "%s", msg);
	return CLI_USAGE;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int cli__parse_pids(const char *s, uint32_t **pids, size_t *nr)
{
	uint32_t *arr = NULL;
	size_t n = 0, cap = 0;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		char num[16];
		size_t len = strcspn(p, ",");
		uint64_t v;

		if (len == 0 || len >= sizeof(num))
			goto err_inval;
		memcpy(num, p, len);
		num[len] = '\0';
		if (parse_u64(num, 10, &v))
			goto err_inval;
		if (v == 0 || v > 4194304) { /* PID_MAX_LIMIT */
			free(arr);
			return -ERANGE;
		}
		if (array_grow((void **)&arr, &cap, n + 1, sizeof(*arr))) {
			free(arr);
			return -ENOMEM;
		}
		arr[n++] = (uint32_t)v;
		p += len;
		if (*p == ',') {
			p++;
			if (!*p)
				goto err_inval;
		}
	}
	qsort(arr, n, sizeof(*arr), cmp_u32);
	{
		size_t w = 0;

		for (size_t i = 0; i < n; i++)
			if (!w || arr[w - 1] != arr[i])
				arr[w++] = arr[i];
		n = w;
	}
	*pids = arr;
	*nr = n;
	return 0;
err_inval:
	free(arr);
	return -EINVAL;
}

/* cli__parse_pids() of s, added to the *nr already in *pids (sorted, unique). */
static int add_pids(const char *s, uint32_t **pids, size_t *nr)
{
	uint32_t *add = NULL, *all;
	size_t n = 0, w = 0;
	int rc = cli__parse_pids(s, &add, &n);

	if (rc || !*nr) {
		if (!rc) {
			free(*pids);
			*pids = add;
			*nr = n;
		}
		return rc;
	}
	all = realloc(*pids, (*nr + n) * sizeof(*all));
	if (!all) {
		free(add);
		return -ENOMEM;
	}
	memcpy(all + *nr, add, n * sizeof(*all));
	free(add);
	n += *nr;
	qsort(all, n, sizeof(*all), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (!w || all[w - 1] != all[i])
			all[w++] = all[i];
	*pids = all;
	*nr = w;
	return 0;
}

int cli__parse_wait(const char *s, uint64_t *ns)
{
	double v, mult = NS_PER_MS_F; /* bare: milliseconds */
	char *end;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	if (!strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ms") || !*end)
		mult = NS_PER_MS_F;
	else if (!strcmp(end, "s"))
		mult = NS_PER_SEC_F;
	else
		return -EINVAL;
	if (v * mult > 3600e9)
		return -EINVAL; /* an hour: surely a typo */
	*ns = (uint64_t)(v * mult + 0.5);
	return 0;
}

int cli__parse_duration(const char *s, double *out)
{
	char *end;
	double v, mult = 1;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return -EINVAL;
	if (!strcmp(end, "ms"))
		mult = 0.001;
	else if (!strcmp(end, "s") || !*end)
		mult = 1;
	else if (!strcmp(end, "m"))
		mult = 60;
	else if (!strcmp(end, "h"))
		mult = 3600;
	else
		return -EINVAL;
	v *= mult;
	if (v <= 0 || v > 365.0 * 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_u32_opt(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, 10, &v) || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int cli__parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		mult = 1ULL << 10;
	else if (*end == 'M' || *end == 'm')
		mult = 1ULL << 20;
	else if (*end == 'G' || *end == 'g')
		mult = 1ULL << 30;
	else if (*end == 'T' || *end == 't')
		mult = 1ULL << 40;
	else if (*end)
		return -EINVAL;
	if (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))
		return -EINVAL;
	if (v == 0 || v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

int cli__parse_unwind(const char *s, enum unwind_opt *out)
{
	for (int u = 0; u < UNWIND_OPT_NR; u++) {
		if (s && !strcmp(s, options__unwind_name((enum unwind_opt)u))) {
			*out = (enum unwind_opt)u;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * perf record's --call-graph MODE[,SIZE]: fp and dwarf map to --unwind (the
 * walker reads the stack in place with the process's .eh_frame tables, so
 * SIZE, perf's stack copy per sample, is accepted and not needed).
 */
static int parse_call_graph(const char *arg, struct options *o)
{
	char mode[16];
	size_t n = strcspn(arg, ",");
	uint64_t size;

	if (n >= sizeof(mode))
		return -EINVAL;
	memcpy(mode, arg, n);
	mode[n] = '\0';
	if (!strcmp(mode, "lbr"))
		return -ENOTSUP;
	if (strcmp(mode, "fp") && strcmp(mode, "dwarf"))
		return -EINVAL;
	if (arg[n]) {
		if (strcmp(mode, "dwarf") || cli__parse_size(arg + n + 1, &size) || size > 65528)
			return -EINVAL;
		o->call_graph_size = (uint32_t)size;
	}
	return cli__parse_unwind(mode, &o->unwind);
}

enum { NOT_AN_OPTION = 2 }; /* beside CLI_OK, CLI_EXIT, CLI_USAGE */

/* Whether s is a pid: digits only (what `pgrep` prints, one a line). */
static bool is_pid_word(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s) && strlen(s) < 12;
}

/*
 * "-p 12 34" and -p "$(pgrep app)" ("12\n34"): the pids were meant as one
 * list. The hint spells it joined with commas, and how pgrep writes that.
 */
static void hint_pid_list(struct errmsg *em, const char *joined)
{
	errmsg_hint(em, "join the pids with commas: -p %s (for pgrep: -p \"$(pgrep -d, NAME)\")",
		    joined);
}

/* arg's numbers joined with commas ("12,34"), for the hint; "" if it is not only that. */
static void join_pids(const char *arg, char *out, size_t size)
{
	size_t n = 0;

	out[0] = '\0';
	for (const char *p = arg; *p;) {
		size_t len = strspn(p, "0123456789");

		if (!len) {
			if (!strchr(" \t\n\r,", *p)) {
				out[0] = '\0';
				return;
			}
			p++;
			continue;
		}
		if (n + len + 2 > size) {
			out[0] = '\0';
			return;
		}
		if (n)
			out[n++] = ',';
		memcpy(out + n, p, len);
		n += len;
		out[n] = '\0';
		p += len;
	}
}

bool cli__stray_pids(const struct options *o, int argc, char **argv, int at, struct errmsg *em)
{
	char joined[256];
	size_t n = 0;

	if (at >= argc || !o->nr_pids || !is_pid_word(argv[at]))
		return false;
	for (size_t i = 0; i < o->nr_pids && n + 12 < sizeof(joined); i++)
		n += (size_t)snprintf(joined + n, sizeof(joined) - n, "%s%u", i ? "," : "",
				      o->pids[i]);
	for (int i = at; i < argc && is_pid_word(argv[i]) && n + 12 < sizeof(joined); i++)
		n += (size_t)snprintf(joined + n, sizeof(joined) - n, ",%s", argv[i]);
	errmsg_set(em, -EINVAL, "unexpected argument '%s': -p takes one list of pids, PID[,PID...]",
		   argv[at]);
	hint_pid_list(em, joined);
	return true;
}

/*
 * Each applies one option: CLI_OK, CLI_EXIT (--help, --version), CLI_USAGE
 * with em, or NOT_AN_OPTION if c is not one of theirs.
 */

/* What is sampled, and how (record, top and annotate share them). */
static int parse_sampling_option(int c, const char *arg, struct options *o, struct errmsg *em)
{
	int rc;

	switch (c) {
	case 'F':
		if (parse_u32_opt(arg, 1, CLI_MAX_FREQ, &o->freq))
			return usage_err(
				em,
				"invalid frequency '%s': expected a whole number of Hz from 1 to %u",
				arg, CLI_MAX_FREQ);
		break;
	case 'a':
		o->all_cpus = true;
		break;
	case 'p':
		/* Repeated -p adds up (-p 12 -p 34 is -p 12,34), as --cgroup does. */
		rc = add_pids(arg, &o->pids, &o->nr_pids);
		if (rc == -ERANGE)
			return usage_err(em, "invalid pid in '%s': pids are 1 to 4194304", arg);
		if (rc) {
			char joined[256];

			join_pids(arg, joined, sizeof(joined));
			if (!joined[0] || !strpbrk(arg, " \t\n\r"))
				return usage_err(em, "invalid pid list '%s': expected PID[,PID...]",
						 arg);
			usage_err(em, "invalid pid list: pids are separated by commas, not spaces "
				      "or new lines");
			hint_pid_list(em, joined);
			return CLI_USAGE;
		}
		break;
	case 'C':
		/* Syntax now; range against this machine's CPUs in record. */
		rc = parse_cpulist(arg, NULL, 0);
		if (rc == -EINVAL)
			return usage_err(em, "invalid CPU list '%s': expected e.g. 0-3,8", arg);
		o->cpu_list = arg;
		break;
	case 'd':
		if (cli__parse_duration(arg, &o->duration))
			return usage_err(
				em,
				"invalid duration '%s': expected seconds > 0 (or 500ms, 2m, 1h)",
				arg);
		break;
	case 'U':
		o->user_only = true;
		break;
	case 'K':
		o->kernel_only = true;
		break;
	case OPT_INCLUDE_IDLE:
		o->include_idle = true;
		break;
	case OPT_PER_THREAD:
		o->per_thread = true;
		break;
	case OPT_NO_PYTHON:
		o->no_python = true;
		break;
	case OPT_ADDRESSES:
		o->addresses = true;
		break;
	case OPT_MAX_STACKS:
		if (parse_u32_opt(arg, 64, 1u << 24, &o->max_stacks))
			return usage_err(em, "invalid --max-stacks '%s': expected 64 to 16777216",
					 arg);
		break;
	case OPT_MAX_COUNTS:
		if (parse_u32_opt(arg, 64, 1u << 24, &o->max_counts))
			return usage_err(em, "invalid --max-entries '%s': expected 64 to 16777216",
					 arg);
		break;
	case OPT_UNWIND:
		if (cli__parse_unwind(arg, &o->unwind))
			return usage_err(em, "invalid --unwind '%s': expected auto, fp or dwarf",
					 arg);
		break;
	case 'g':
		break; /* perf's "with call graphs": stacks are always collected */
	case OPT_CALL_GRAPH:
		rc = parse_call_graph(arg, o);
		if (rc == -ENOTSUP)
			return usage_err(
				em,
				"--call-graph %s needs a hardware PMU's branch records: use fp or dwarf",
				arg);
		if (rc)
			return usage_err(
				em,
				"invalid --call-graph '%s': expected fp or dwarf[,SIZE] (as --unwind)",
				arg);
		break;
	case OPT_KERNEL_UNWIND:
		if (!strcmp(arg, "orc"))
			o->kernel_helper = false;
		else if (!strcmp(arg, "kernel"))
			o->kernel_helper = true;
		else
			return usage_err(em, "invalid --kernel-unwind '%s': expected orc or kernel",
					 arg);
		break;
	case OPT_CGROUP:
		if (array_grow((void **)&o->cgroups, &o->cap_cgroups, o->nr_cgroups + 1,
			       sizeof(*o->cgroups)))
			return usage_err(em, "out of memory");
		o->cgroups[o->nr_cgroups++] = arg;
		break;
	default:
		return NOT_AN_OPTION;
	}
	return CLI_OK;
}

/* --off-cpu and its settings (record only). */
static int parse_offcpu_option(int c, const char *arg, struct options *o, struct errmsg *em)
{
	switch (c) {
	case OPT_OFFCPU:
		o->offcpu = true;
		break;
	case OPT_OFFCPU_MIN:
		if (cli__parse_wait(arg, &o->offcpu_min_ns))
			return usage_err(
				em,
				"invalid --off-cpu-min '%s': expected a time such as 1ms, 200us or 0",
				arg);
		o->offcpu_min_set = true;
		break;
	case OPT_OFFCPU_TASKS:
		if (parse_u32_opt(arg, 16, 1u << 22, &o->offcpu_tasks))
			return usage_err(em, "invalid --off-cpu-tasks '%s': expected 16 to 4194304",
					 arg);
		break;
	case OPT_ALLOC:
		o->alloc_period = CLI_ALLOC_DEFAULT_PERIOD;
		if (arg && (cli__parse_size(arg, &o->alloc_period) || !o->alloc_period ||
			    o->alloc_period > CLI_ALLOC_MAX_PERIOD))
			return usage_err(
				em,
				"invalid --alloc '%s': expected bytes from 1 to 1T, e.g. 512K or 4M",
				arg);
		break;
	case OPT_ALLOC_BUDGET:
		if (parse_u64(arg, 10, &o->alloc_budget) || o->alloc_budget > CLI_ALLOC_MAX_BUDGET)
			return usage_err(
				em,
				"invalid --alloc-budget '%s': expected calls per second from 0 (no guard) to 1000000000",
				arg);
		o->alloc_budget_set = true;
		break;
	case OPT_ON_CPU:
		o->on_cpu = true;
		break;
	default:
		return NOT_AN_OPTION;
	}
	return CLI_OK;
}

/* Where profiles go (one file, or the continuous-mode sinks), and messages. */
static int parse_output_option(int c, const char *arg, struct options *o, struct errmsg *em)
{
	switch (c) {
	case 'o':
		if (!*arg)
			return usage_err(em, "empty output file name");
		o->output = arg;
		break;
	case 'f':
		if (!writer__find(arg))
			return usage_err(em, "unknown format '%s' (see --help for the list)", arg);
		o->format = arg;
		break;
	case 'v':
		if (o->verbosity < 0)
			o->verbosity = 0;
		o->verbosity++;
		break;
	case 'q':
		o->verbosity = -1;
		break;
	case OPT_VERSION:
		o->show_version = true;
		return CLI_EXIT;
	case OPT_INTERVAL:
		if (cli__parse_duration(arg, &o->interval) || o->interval < 1)
			return usage_err(em, "invalid interval '%s': expected at least 1 second",
					 arg);
		break;
	case OPT_OUTPUT_DIR:
		if (!*arg)
			return usage_err(em, "empty --output-dir");
		o->output_dir = arg;
		break;
	case OPT_KEEP: {
		uint32_t v;

		if (parse_u32_opt(arg, 1, 100000000, &v))
			return usage_err(em, "invalid --keep '%s': expected a count >= 1", arg);
		o->keep = v;
		break;
	}
	case OPT_MAX_DISK:
		if (cli__parse_size(arg, &o->max_disk))
			return usage_err(em,
					 "invalid --max-disk '%s': expected bytes, e.g. 500M or 2G",
					 arg);
		break;
	case OPT_PUSH:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			return usage_err(
				em,
				"invalid --push URL '%s': expected http://HOST[:PORT] or https://...",
				arg);
		o->push_url = arg;
		break;
	case OPT_APP_NAME:
		if (!*arg ||
		    strspn(arg,
			   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
			    strlen(arg))
			return usage_err(
				em, "invalid --app-name '%s': use letters, digits, '_', '-', '.'",
				arg);
		o->app_name = arg;
		break;
	case OPT_TOKEN_FILE:
		o->token_file = arg;
		break;
	case OPT_DEBUGINFOD:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			return usage_err(
				em,
				"invalid --debuginfod '%s': expected http://HOST[:PORT] or "
				"https://... URLs, separated by spaces",
				arg);
		o->debuginfod = arg;
		break;
	case OPT_NO_DEBUGINFOD:
		o->no_debuginfod = true;
		break;
	case OPT_LISTEN: {
		if (!*arg)
			return usage_err(em, "empty --listen");
		/* At once, as the other options: not after the BPF load. */
		if (httpd__parse_listen(arg, &o->listen_addr, &o->listen_len)) {
			usage_err(
				em,
				"invalid --listen '%s': expected [ADDR:]PORT (6060, 0.0.0.0:6060, [::1]:6060)",
				arg);
			/* Go's ":6060" is every interface: not guessed for an endpoint without auth
			 */
			if (arg[0] == ':')
				errmsg_hint(
					em,
					"name the address: %s alone is loopback, 0.0.0.0%s every "
					"interface (no authentication: see bpfprof(1))",
					arg + 1, arg);
			return CLI_USAGE;
		}
		o->listen = arg;
		break;
	}
	case 'h':
		o->show_help = true;
		return CLI_EXIT;
	default:
		return NOT_AN_OPTION;
	}
	return CLI_OK;
}

int cli__sampling_option(int c, const char *arg, struct options *o, struct errmsg *em)
{
	int rc = parse_sampling_option(c, arg, o, em);

	return rc == NOT_AN_OPTION ? 1 : rc;
}

void cli__sampling_defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->freq = 99;
	cli__out_defaults(&o->out);
}

static int parse_option(int c, const char *arg, struct options *o, struct errmsg *em)
{
	int rc = parse_sampling_option(c, arg, o, em);

	if (rc == NOT_AN_OPTION)
		rc = parse_offcpu_option(c, arg, o, em);
	if (rc == NOT_AN_OPTION)
		rc = parse_output_option(c, arg, o, em);
	if (rc == NOT_AN_OPTION) { /* the output options every command takes */
		rc = cli__out_option(c, arg, &o->out, em);
		if (rc == 1)
			rc = NOT_AN_OPTION;
	}
	return rc;
}

/* What follows the options: nothing, or "-- COMMAND ARGS". */
static int parse_command(int argc, char **argv, struct options *o, struct errmsg *em)
{
	if (optind == argc && optind > 1 && !strcmp(argv[optind - 1], "--"))
		return usage_err(em, "no command after --");
	if (optind < argc) {
		/* getopt stops at "--" (consumed) or at the first non-option. */
		if (strcmp(argv[optind - 1], "--") != 0 &&
		    cli__stray_pids(o, argc, argv, optind, em))
			return CLI_USAGE;
		if (strcmp(argv[optind - 1], "--") != 0)
			return usage_err(
				em,
				"unexpected argument '%s' (to profile a command, put it after --)",
				argv[optind]);
		o->cmd = &argv[optind];
	}
	return CLI_OK;
}

/*
 * The ending of path's file name that would name a format: what follows its
 * last '.' (not a leading one: ".hidden"), unless that is only digits - a
 * numbered copy, run.1 or cpu.$$ - which, like a name without a dot, has none.
 * NULL if none.
 */
static const char *format_ending(const char *path)
{
	const char *base = path_basename(path), *dot = strrchr(base, '.');

	if (!dot || dot == base || !dot[1] || strspn(dot + 1, "0123456789") == strlen(dot + 1))
		return NULL;
	return dot;
}

/* Appends " .a .b" (each writer's endings) or " a|b" (names) to buf. */
static void list_add(char *buf, size_t size, const char *sep, const char *item)
{
	size_t l = strlen(buf);

	snprintf(buf + l, size - l, "%s%s", l ? sep : "", item);
}

/* The usage error for a file name whose ending names no format. */
static int unknown_ending(struct errmsg *em, const char *path, const char *endings,
			  const char *names, const char *deflt)
{
	usage_err(em, "cannot tell the format of %s from its ending '%s'", path,
		  format_ending(path));
	errmsg_hint(em,
		    "end the name in %s, or choose with -f %s (a name without an ending "
		    "is %s)",
		    endings, names, deflt);
	return CLI_USAGE;
}

int cli__pick_writer(const char *format, const char *path, const struct writer **out,
		     struct errmsg *em)
{
	const struct writer *w = format ? writer__find(format) : NULL;
	char endings[256] = "", names[128] = "";

	if (format && !w)
		return usage_err(em, "unknown format '%s' (see --help for the list)", format);
	if (!w && path)
		w = writer__for_path(path);
	if (!w && path && format_ending(path)) {
		for (const struct writer *const *a = writer__all(); *a; a++) {
			list_add(names, sizeof(names), "|", (*a)->name);
			for (size_t i = 0; i < ARRAY_SIZE((*a)->exts) && (*a)->exts[i]; i++)
				list_add(endings, sizeof(endings), " ", (*a)->exts[i]);
		}
		return unknown_ending(em, path, endings, names, "folded");
	}
	*out = w ? w : &writer_folded;
	return CLI_OK;
}

/* 0 if path is a file this process may execute, else -errno (as execve says). */
static int executable(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	return access(path, X_OK) ? -errno : 0;
}

int cli__check_command(const char *name, struct errmsg *em)
{
	const char *path = getenv("PATH"), *dir, *end;
	char buf[4096];
	int err;

	if (strchr(name, '/')) {
		err = executable(name);
		if (!err)
			return CLI_OK;
		usage_err(em, "cannot run '%s': %s", name, strerror(-err));
		return CLI_USAGE;
	}
	/*
	 * execvp's search: an empty entry is the current directory. Not shared
	 * with the exec (proc/child.c calls execvp): libc does not export its
	 * search, and execv of a path found here would lose execvp's own ways
	 * (/bin/sh for a script without #!, going on past EACCES) and look twice.
	 */
	if (!path)
		path = "/bin:/usr/bin";
	for (dir = path;; dir = end + 1) {
		end = strchrnul(dir, ':');
		if ((size_t)snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(end - dir), dir,
				     end > dir ? "/" : "", name) < sizeof(buf) &&
		    !executable(buf))
			return CLI_OK;
		if (!*end)
			break;
	}
	usage_err(em, "cannot run '%s': no such command in PATH (%s)", name, path);
	if (!executable(name))
		errmsg_hint(em, "it is in this directory: run ./%s", name);
	else if (getenv("SUDO_USER"))
		errmsg_hint(em, "give its path: sudo runs bpfprof with its own PATH (secure_path)");
	else
		errmsg_hint(em, "give its path");
	return CLI_USAGE;
}

void cli__warn_mismatch(const struct writer *w, const char *format, const char *path)
{
	const struct writer *named = path ? writer__for_path(path) : NULL;

	if (format && named && named != w)
		p_warn("-f %s writes %s into %s, whose ending says %s (drop -f, or rename it)",
		       format, w->name, path, named->name);
}

int cli__check_terminal(const struct writer *w, const char *path, struct errmsg *em)
{
	const char *ext = w == &writer_pprof ? "pb.gz" : w == &writer_pb ? "pb" : "svgz";

	if (w != &writer_pprof && w != &writer_svgz && w != &writer_pb)
		return CLI_OK;
	if ((path && strcmp(path, "-")) || !isatty(STDOUT_FILENO))
		return CLI_OK;
	usage_err(em, "%s is %s: it is not written to a terminal", w->name,
		  w == &writer_pb ? "binary (profile.proto)" : "gzip-compressed binary");
	errmsg_hint(em, "name a file with -o FILE (e.g. -o cpu.%s), or redirect: > cpu.%s", ext,
		    ext);
	return CLI_USAGE;
}

int cli__pick_diff_writer(const char *format, const char *path, const struct diff_writer **out,
			  struct errmsg *em)
{
	const struct diff_writer *w = format ? writer__find_diff(format) : NULL;
	char endings[128] = "", names[64] = "";

	for (const struct diff_writer *const *a = writer__all_diff(); *a; a++) {
		list_add(names, sizeof(names), "|", (*a)->name);
		for (size_t i = 0; i < ARRAY_SIZE((*a)->exts) && (*a)->exts[i]; i++)
			list_add(endings, sizeof(endings), " ", (*a)->exts[i]);
	}
	if (format && !w)
		return usage_err(em, "unknown diff format '%s': expected %s", format, names);
	if (!w && path)
		w = writer__diff_for_path(path);
	if (!w && path && format_ending(path))
		return unknown_ending(em, path, endings, names, "report");
	*out = w ? w : &diff_writer_report;
	return CLI_OK;
}

int cli__validate(struct options *o, struct errmsg *em)
{
	const struct writer *w;

	if (o->user_only && o->kernel_only)
		return usage_err(em, "-U and -K exclude each other");
	/* As with perf: with a target, COMMAND only says how long to sample. */
	o->cmd_is_target = o->cmd && !o->all_cpus && !o->cpu_list && !o->nr_pids;
	if (o->all_cpus && o->nr_pids)
		return usage_err(
			em,
			"-a and -p exclude each other (-p already follows the process on every CPU)");
	/* Always-on modes work in intervals, so memory stays bounded. */
	if ((o->output_dir || o->push_url || (o->listen && !o->output)) && !o->interval)
		o->interval = 10;
	if (o->interval && !o->output_dir && !o->push_url && !o->listen)
		return usage_err(
			em,
			"--interval needs somewhere to send profiles: --output-dir, --push or --listen");
	if (o->output && (o->output_dir || o->push_url))
		return usage_err(
			em,
			"-o writes one profile at the end; with --output-dir or --push, profiles go there");
	/* Before sampling: a profile must not end up in a format nobody asked for. */
	if (cli__pick_writer(o->format, o->output, &w, em) != CLI_OK)
		return CLI_USAGE;
	if (!o->interval && cli__check_terminal(w, o->output, em) != CLI_OK)
		return CLI_USAGE;
	if ((o->keep || o->max_disk) && !o->output_dir)
		return usage_err(em, "--keep and --max-disk need --output-dir");
	if (o->token_file && !o->push_url)
		return usage_err(em, "--token-file needs --push");
	if (o->nr_cgroups && (o->cmd_is_target || o->nr_pids))
		return usage_err(
			em,
			"--cgroup cannot be combined with -p or a profiled command (with -a or -C, a command sets the duration)");
	if ((o->offcpu_min_set || o->offcpu_tasks) && !o->offcpu)
		return usage_err(em, "--off-cpu-min and --off-cpu-tasks need --off-cpu");
	if (o->alloc_budget_set && !o->alloc_period)
		return usage_err(em, "--alloc-budget needs --alloc");
	if (o->on_cpu && !o->alloc_period)
		return usage_err(
			em,
			"--on-cpu adds the CPU profile to --alloc's: it needs --alloc (without it, the CPU is what is profiled)");
	if (o->alloc_period) {
		bool all = o->all_cpus || o->nr_cgroups;

		if (o->cpu_list)
			return usage_err(
				em,
				"--alloc profiles processes, not CPUs: -p, -a, --cgroup or a command, not -C (both profiles of every CPU: --alloc --on-cpu -a)");
		if (all && (o->nr_pids || o->cmd))
			return usage_err(
				em,
				"--alloc with -a or --cgroup takes no -p and no command (-d sets how long)");
		if (!o->nr_pids && !o->cmd_is_target && !all)
			return usage_err(
				em,
				"--alloc needs -p PID, -a, --cgroup PATH or a command to profile");
		if (o->alloc_budget_set && !all)
			return usage_err(
				em,
				"--alloc-budget needs -a or --cgroup (with -p or a command only those processes are probed)");
		if (!o->alloc_budget_set)
			o->alloc_budget = CLI_ALLOC_DEFAULT_BUDGET;
		if (o->offcpu || o->kernel_only || o->addresses)
			return usage_err(
				em, "--alloc cannot be combined with --off-cpu, -K or --addresses");
		if (o->out.view != VIEW_AUTO && !view__is_alloc(o->out.view))
			return usage_err(
				em,
				"--alloc profiles take --view alloc-space, alloc-objects, inuse-space or inuse-objects");
		return CLI_OK;
	}
	if (view__is_alloc(o->out.view))
		return usage_err(em, "--view %s needs --alloc", view__name(o->out.view));
	if (o->out.view != VIEW_AUTO && !o->offcpu)
		return usage_err(
			em, "--view chooses between on-CPU and off-CPU values: it needs --off-cpu");
	if (o->offcpu && !o->offcpu_min_set)
		o->offcpu_min_ns = CLI_OFFCPU_MIN_DEFAULT_NS;
	return CLI_OK;
}

/* --event or --event=NAME: perf record's long spelling of -e. */
static bool is_event_option(const char *arg)
{
	return !strncmp(arg, "--event", 7) && (!arg[7] || arg[7] == '=');
}

int cli__parse(int argc, char **argv, struct options *o, struct errmsg *em)
{
	int c, rc;

	cli__sampling_defaults(o);
	optind = 1;
	opterr = 0;
	/* "+": stop at the first non-option, so "-- cmd -x" and "cmd -x" keep -x for cmd. */
	while ((c = getopt_long(argc, argv, "+:" CLI_SAMPLING_SHORT "o:f:vqh", long_opts, NULL)) !=
	       -1) {
		if (c == ':')
			return usage_err(em, "option '%s' needs a value", argv[optind - 1]);
		rc = parse_option(c, optarg, o, em);
		/* perf record -e cycles: the first thing a perf user types. */
		if (rc == NOT_AN_OPTION && (optopt == 'e' || (!optopt && optind > 1 &&
							      is_event_option(argv[optind - 1])))) {
			usage_err(em,
				  "unknown option '%s': bpfprof samples one event, the cpu-clock "
				  "timer (as perf record -e cpu-clock, or bcc's profile)",
				  optopt ? "-e" : "--event");
			errmsg_hint(em, "drop -e; the rate is -F HZ (cycles and other hardware "
					"events are not offered: VMs often have no PMU)");
			return CLI_USAGE;
		}
		if (rc == NOT_AN_OPTION && optopt)
			return usage_err(em, "unknown option '-%c'", optopt);
		if (rc == NOT_AN_OPTION)
			return usage_err(em, "unknown option '%s'", argv[optind - 1]);
		if (rc != CLI_OK)
			return rc;
	}
	rc = parse_command(argc, argv, o, em);
	return rc != CLI_OK ? rc : cli__validate(o, em);
}

void cli__out_defaults(struct out_opts *oo)
{
	memset(oo, 0, sizeof(*oo));
	oo->top = OUT_DEFAULT_TOP;
}

int cli__out_option(int opt, const char *arg, struct out_opts *oo, struct errmsg *em)
{
	uint32_t v;

	switch (opt) {
	case OPT_OUT_TITLE:
		oo->title = arg;
		return CLI_OK;
	case OPT_OUT_INVERTED:
		oo->inverted = true;
		return CLI_OK;
	case OPT_OUT_MERGE:
		oo->merge = true;
		return CLI_OK;
	case OPT_OUT_LINES:
		oo->lines = true;
		return CLI_OK;
	case OPT_OUT_VIEW:
		if (view__parse(arg, &oo->view))
			return usage_err(em,
					 "invalid --view '%s': expected cpu, off-cpu, wall, "
					 "alloc-space, alloc-objects, inuse-space or inuse-objects",
					 arg);
		return CLI_OK;
	case OPT_OUT_TOP:
		if (parse_u32_opt(arg, 0, 1000000, &v))
			return usage_err(
				em, "invalid --top '%s': expected a number of rows (0: all)", arg);
		oo->top = v;
		return CLI_OK;
	case OPT_OUT_SORT:
		if (strcmp(arg, "self") && strcmp(arg, "total"))
			return usage_err(em, "invalid --sort '%s': expected self or total", arg);
		oo->sort = arg;
		return CLI_OK;
	default:
		return 1;
	}
}

void cli__out_usage(FILE *f)
{
	fprintf(f,
		"      --title TEXT        flame graph title\n"
		"      --inverted          icicle graph: roots at the top (svg)\n"
		"      --merge             one speedscope profile for all processes, not one each\n"
		"      --top N             report: rows per table (default %u, 0: all)\n"
		"      --sort self|total   report: only the table sorted by self or total samples\n"
		"      --lines             folded, svg: one frame per source line, \"f (app.py:12)\"\n"
		"                          (Python, Go, C/C++/Rust built with -g; pprof and\n"
		"                          speedscope always carry lines)\n"
		"      --view cpu|off-cpu|wall\n"
		"                          profiles with off-CPU time (--off-cpu): what folded,\n"
		"                          svg and speedscope show - on-CPU samples, off-CPU time\n"
		"                          (us), or wall-clock time (us; default), where running\n"
		"                          and waiting add up and waiting stacks end in [off-cpu];\n"
		"                          pprof keeps only that view's sample types, report its\n"
		"                          tables (default both)\n"
		"      --view alloc-space|alloc-objects|inuse-space|inuse-objects\n"
		"                          allocation profiles (--alloc, pprof heap profiles):\n"
		"                          bytes or allocations made, or still in use when the\n"
		"                          profile ended (default alloc-space); pprof keeps all four\n"
		"                          and makes the view its default sample type\n",
		OUT_DEFAULT_TOP);
}
