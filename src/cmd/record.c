// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record.c - "bpfprof record", the default command: parses the command line,
 * picks the writer, runs the phases of the run engine (session/record.h) in
 * order, and turns their outcome into the exit status (0, 1 failure, 2 usage,
 * or with -- COMMAND the command's own).
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "base/util.h"
#include "cmd/cli.h"
#include "format/writer.h"
#include "session/record.h"
#include "session/stop.h"

/* The options were validated: this only repeats what cli__validate() chose. */
static const struct writer *pick_writer(const struct options *o)
{
	const struct writer *w = &writer_folded;

	cli__pick_writer(o->format, o->output, &w, NULL);
	return w;
}

/*
 * --alloc --on-cpu: where the heap profile goes beside -o's CPU one, ".heap"
 * before the writer's ending (p.pb.gz: p.heap.pb.gz, out.svg: out.heap.svg),
 * or after the name when it has none of them (-f pprof -o prof: prof.heap).
 * NULL: no memory.
 */
static char *heap_path(const char *output, const struct writer *w)
{
	size_t len = strlen(output), cut = len;
	char *p;

	for (size_t i = 0; i < ARRAY_SIZE(w->exts) && w->exts[i]; i++) {
		size_t n = strlen(w->exts[i]);

		/* the longest ending that fits (.speedscope.json before .json) */
		if (n < len && len - n < cut && !strcmp(output + len - n, w->exts[i]))
			cut = len - n;
	}
	p = malloc(len + sizeof(".heap"));
	if (p)
		sprintf(p, "%.*s.heap%s", (int)cut, output, output + cut);
	return p;
}

/*
 * --alloc --on-cpu: two profiles, so -o names the CPU's (the heap one goes
 * beside it), or a terminal shows both reports; one stream cannot hold two.
 * heap gets the heap profile's path (NULL: the terminal). 0, or 2 (said).
 */
static int check_both(const struct record *r, char **heap)
{
	struct errmsg em = { 0 };
	int err;

	*heap = NULL;
	if (!r->o.output && r->tty_report)
		return 0;
	if (!r->o.output || !strcmp(r->o.output, "-")) {
		p_err("--alloc --on-cpu writes two profiles: %s",
		      r->o.output ? "stdout (-o -) cannot hold both"
		      : isatty(STDOUT_FILENO)
			      ? "without -o, a terminal shows both reports (-f needs -o)"
			      : "standard output cannot hold both");
		p_hint("name the CPU profile with -o FILE (e.g. -o p.pb.gz): the heap profile goes "
		       "beside it (p.heap.pb.gz)");
		return 2;
	}
	*heap = heap_path(r->o.output, r->w);
	if (!*heap) {
		p_err("out of memory");
		return 1;
	}
	err = writer__check_path(*heap, &em);
	if (err) {
		p_err("cannot write %s: %s", *heap, errmsg_said(&em) ? em.msg : strerror(-err));
		if (errmsg_said(&em) && em.hint[0])
			p_hint("%s", em.hint);
		return 2;
	}
	return 0;
}

/*
 * With -- COMMAND, a run that wrote its profile exits as the command did,
 * as perf record and time(1) do: its exit status, or 128 + the signal that
 * killed it; 0 if bpfprof ended it (-d, a stop request to bpfprof alone).
 */
static int command_status(const struct record *r)
{
	if (!r->ch.pid || !r->ch.exited || r->cmd_stopped)
		return 0;
	if (WIFEXITED(r->ch.status))
		return WEXITSTATUS(r->ch.status);
	if (WIFSIGNALED(r->ch.status))
		return 128 + WTERMSIG(r->ch.status);
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct record r = { .ch = CHILD_INIT, .t_main = now_ns() };
	struct errmsg em = { 0 };
	char *heap = NULL;
	int ret;

	ret = cli__parse(argc, argv, &r.o, &em);
	if (ret == CLI_USAGE) {
		p_err("%s", em.msg);
		p_hint("%s", em.hint[0] ? em.hint : "see 'bpfprof --help'");
		options__free(&r.o);
		return 2;
	}
	if (ret == CLI_EXIT) {
		if (r.o.show_help)
			cli__usage(stdout);
		else
			printf("bpfprof %s\n", BPFPROF_VERSION);
		options__free(&r.o);
		return 0;
	}
	/* Start and summary lines show by default; -q leaves errors only. */
	log_set_level(r.o.verbosity < 0 ? LOG_ERROR : r.o.verbosity == 0 ? LOG_INFO : LOG_DEBUG);
	/* A command that cannot run: said before "sampling ...", not after. */
	if (r.o.cmd && cli__check_command(r.o.cmd[0], &em) != CLI_OK) {
		p_errmsg(&em);
		options__free(&r.o);
		return 1;
	}
	r.w = pick_writer(&r.o);
	cli__warn_mismatch(r.w, r.o.format, r.o.output);
	/* Folded lines by the thousand would flood a terminal: it gets the top
	 * functions (as bpfprof report prints them); pipes and files get folded. */
	if (!r.o.output && !r.o.format && !r.o.interval && isatty(STDOUT_FILENO)) {
		r.w = &writer_report;
		r.tty_report = true;
	}
	if (r.o.alloc_period && !r.o.on_cpu) {
		stop__install();
		ret = cmd_record_alloc(&r.o, r.w);
		options__free(&r.o);
		return ret;
	}
	if (r.o.call_graph_size)
		p_info("--call-graph dwarf,%u: no stack copy is needed, user stacks are walked in place with .eh_frame tables",
		       r.o.call_graph_size);
	/* From here on Ctrl-C / SIGTERM stop the run cleanly (before sampling
	 * starts too: the loop then ends at once); see stop.h for repeats. */
	stop__install();

	/* One-shot: the two files of -o; continuous mode: the sinks take both kinds. */
	if (r.o.on_cpu && !r.o.interval) {
		ret = check_both(&r, &heap);
		if (ret) {
			free(heap);
			options__free(&r.o);
			return ret;
		}
	}
	ret = record__run(&r);
	if (!ret)
		ret = r.o.interval ? record__finish_continuous(&r) : record__write(&r);
	/* --alloc --on-cpu: the heap profile after the CPU's (its report below
	 * it); in continuous mode, each interval's went to the sinks with the CPU's */
	if (!ret && r.ar && r.o.interval)
		cmd_alloc_summary(r.ar);
	else if (!ret && r.ar)
		ret = cmd_alloc_report(r.ar, &r.o, r.w, heap);
	if (!ret && r.ar && r.tty_report)
		p_info("those are the tops of the two profiles: save them with -o FILE (p.svg: the "
		       "CPU's flame graph and p.heap.svg beside it; .folded, .pb.gz)");
	if (!ret)
		ret = command_status(&r);
	record__close(&r);
	free(heap);
	return ret;
}
