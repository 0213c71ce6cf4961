/*
 * dmprof snapshot [-o PREFIX] [-i SECONDS] [-n COUNT] PID: hold a running
 * process still from outside, write what it holds to
 * PREFIX.PID.NNNN.snap (every mapping with its committed bytes; its glibc
 * heap's blocks by size class and arena, its free chunks by kind), and
 * let it go.  With -n or -i, a run of them, which every command reads as
 * it reads a recorded one.  Nothing is preloaded and nothing restarts:
 * the numbers are the process's as it was found.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "capture.h"
#include "procstop.h"
#include "scan.h"
#include "series.h"
#include "setup.h"
#include "util.h"

enum {
	OPT_NO_SCAN = OPT_LONG_ONLY,
	OPT_MAX_COPY,
};

/* What the options asked for. */
struct snapshot_opts {
	const char *output;   /* -o, or NULL */
	const char *core;     /* a core file instead of a process */
	bool scan;            /* not --no-scan */
	uint64_t max_copy;    /* --max-copy */
	double interval;      /* -i */
	uint64_t count;       /* -n; 0: until the process ends */
	pid_t pid;
	/* Where the files a core names are (the symbol options). */
	const struct read_options *read;
};

/* What the run of snapshots left, for the last word. */
struct taken {
	char *prefix;         /* PREFIX.PID */
	unsigned long first, next;
	double held_max, held_sum, took_max;
	size_t n;
};

static volatile sig_atomic_t stop_asked;

static const char *const usage[] = { "PID", "CORE", NULL };
static const struct cmd_option options[] = {
	{ .key = 'o', .name = "output", .arg = "PREFIX",
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS,
	  .empty = "bad output prefix '' (a path and a file name "
		   "start, or a directory)",
	  .help = "snapshots go to PREFIX.PID.NNNN.snap; a directory: "
		  "DIR/NAME.PID..., NAME the process's" },
	{ .key = 'i', .name = "interval", .arg = "SECONDS",
	  .type = OPT_SECONDS, .flags = OPT_SYNOPSIS,
	  .bad = "bad interval '%s' (seconds)",
	  .help = "a snapshot every SECONDS (default 1); alone, until "
		  "the process ends or dmprof is interrupted" },
	{ .key = 'n', .name = "count", .arg = "COUNT",
	  .type = OPT_COUNT, .flags = OPT_SYNOPSIS, .min = 1,
	  .bad = "bad count '%s' (a number of snapshots, 1 or more)",
	  .help = "how many snapshots (default 1)" },
	{ .key = OPT_NO_SCAN, .name = "no-scan",
	  .help = "walk the heap only: no types, no leaks" },
	{ .key = OPT_MAX_COPY, .name = "max-copy", .arg = "SIZE",
	  .type = OPT_SIZE,
	  .bad = "bad size '%s' (bytes, or with k, M or G)",
	  .help = "the most the copy of the process's memory may take "
		  "(default: half the memory available); bigger, the "
		  "process is held while its heap is walked and scanned" },
	OPT_END,
};

static void ask_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
}

static int parse_options(struct cmd_args *a, struct snapshot_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = args_get(a, 'o');
	o->read = &a->read;
	o->scan = !args_has(a, OPT_NO_SCAN);
	o->max_copy = args_size(a, OPT_MAX_COPY, capture_default_max_copy());
	o->interval = args_seconds(a, 'i', 1);
	/* -i alone: until the process ends, or dmprof is interrupted. */
	o->count = args_count(a, 'n', args_has(a, 'i') ? 0 : 1);
	if ((o->core = setup_core_operand(a))) {
		if (args_has(a, 'i') || (args_has(a, 'n') && o->count != 1))
			return cmd_usage_error(a, "a core is one instant: no "
						  "-i, no -n");
		return 0;
	}
	return setup_pid(a, &o->pid);
}

/* The name a core gives its process, as a file name, or "core". */
static char *core_name(const struct capture *s)
{
	const char *base = strrchr(s->core->command, '/');
	char *name = xstrdup(s->core->command[0] ? base ? base + 1
						   : s->core->command
					   : "core");

	for (char *p = name; *p; p++)
		if (*p == '/' || *p == ' ' || (unsigned char)*p < 32)
			*p = '_';
	return name;
}

/* PREFIX.PID of the run, its next number after those already there. */
static int start_run(const struct snapshot_opts *o, const struct capture *s,
		     struct taken *t)
{
	char *name = o->core ? core_name(s) : xstrdup(s->name);
	char *prefix = setup_output_prefix(o->output, name);

	free(name);
	if (!prefix)
		return -1;
	t->prefix = xasprintf("%s.%05d", prefix, (int)s->pid);
	free(prefix);
	t->first = t->next = series_last(t->prefix, "snap") + 1;
	return 0;
}

static void say_problems(const char *path, const struct capture *s)
{
	const struct heap *h = &s->h;

	if (!h->nproblems)
		return;
	warning("%s: %zu problem%s in the heap walk, the first: %s", path,
		h->nproblems, h->nproblems == 1 ? "" : "s",
		h->problems[0].f.what);
}

/* What a cut core lacks. */
static void say_core(const struct capture *s)
{
	struct fault missing = { 0 };

	if (coreimage_missing(s->core, &missing))
		fault_warning(&missing, NULL);
	fault_release(&missing);
}

/* The end of a run: the process exited.  1. */
static int gone(pid_t pid)
{
	inform("snapshot", "process %d has exited", (int)pid);
	return 1;
}

/* One snapshot, written: 0, 1 when the process is gone, -1 (said). */
static int take_one(const struct snapshot_opts *o, struct taken *t)
{
	struct capture s;
	char *path;
	int rc;

	if (o->core) {
		if (capture_core(&s, o->core, o->read, NULL) < 0)
			return -1;
		say_core(&s);
	} else {
		if (t->n && procstop_exited(o->pid))
			return gone(o->pid);
		if (capture_process(&s, o->pid, o->scan, o->max_copy, NULL) < 0)
			return t->n && procstop_exited(o->pid) ? gone(o->pid)
							       : -1;
	}
	if (!t->prefix && start_run(o, &s, t) < 0) {
		capture_free(&s);
		return -1;
	}
	if (!s.walked && !t->n)
		capture_say_unwalked(&s, "");
	if (!t->n)
		capture_say_python(&s);
	path = xasprintf("%s.%04lu.snap", t->prefix, t->next);
	rc = capture_write(&s, path);
	if (rc == 0 && s.copy_too_big && !t->n)
		inform("snapshot", "process %d: a copy of its memory would "
				   "take %.1f MiB, more than --max-copy "
				   "(%.1f MiB): it is held while its heap is "
				   "walked and scanned",
		       (int)o->pid, (double)s.copy_wanted / 1048576,
		       (double)s.max_copy / 1048576);
	if (rc == 0) {
		say_problems(path, &s);
		t->next++;
		t->n++;
		t->held_sum += s.held;
		if (s.held > t->held_max)
			t->held_max = s.held;
		if (s.took > t->took_max)
			t->took_max = s.took;
	}
	free(path);
	capture_free(&s);
	return rc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep until AT (monotonic), unless a signal asks to stop. */
static void wait_until(double at)
{
	double left;

	while (!stop_asked && (left = at - now()) > 0) {
		struct timespec ts = { (time_t)left,
				       (long)((left - (double)(time_t)left) *
					      1e9) };

		nanosleep(&ts, NULL);
	}
}

static void report(const struct snapshot_opts *o, const struct taken *t)
{
	if (o->core && t->n)
		inform("snapshot", "%s.%04lu.snap: core %s", t->prefix,
		       t->first, o->core);
	else if (t->n == 1)
		inform("snapshot", "%s.%04lu.snap: process %d stood still "
				   "%.1f ms (the snapshot took %.1f ms)",
		       t->prefix, t->first, (int)o->pid, t->held_max * 1e3,
		       t->took_max * 1e3);
	else if (t->n)
		inform("snapshot", "%zu snapshots of process %d: %s.%04lu.snap "
				   ".. %s.%04lu.snap; it stood still up to "
				   "%.1f ms (%.1f ms on average; a snapshot "
				   "took up to %.1f ms)",
		       t->n, (int)o->pid, t->prefix, t->first, t->prefix,
		       t->next - 1, t->held_max * 1e3,
		       t->held_sum / (double)t->n * 1e3, t->took_max * 1e3);
}

static int cmd_snapshot_run(struct cmd_args *a)
{
	struct snapshot_opts o;
	struct taken t = { 0 };
	struct sigaction sa, old_int, old_term;
	double start;
	int status, rc = 0;

	if ((status = parse_options(a, &o)))
		return status;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ask_stop;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	start = now();
	for (uint64_t k = 0; !o.count || k < o.count; k++) {
		if (k)
			wait_until(start + (double)k * o.interval);
		if (stop_asked || (rc = take_one(&o, &t)) != 0)
			break;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	report(&o, &t);
	free(t.prefix);
	return rc < 0 ? 1 : 0;
}

const struct cmd_entry cmd_snapshot = { .name = "snapshot",
	.run = cmd_snapshot_run, .flags = CMD_READS_DUMPS, .usage = usage,
	.options = options,
	.summary = "hold a running process still and write what its memory "
		   "holds" };
