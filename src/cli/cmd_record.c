/*
 * dmprof record [options] [--] CMD [ARGS]: run CMD with the recorder
 * preloaded, so that it writes deep dumps to PREFIX.PID.NNNN.heap, and say
 * what it wrote.  The recorder is configured through the environment
 * variables it shares with the original producer (HEAPPROFILE, ...), so
 * CMD's own children record too, each to its own pid.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "deep.h"
#include "paths.h"
#include "series.h"
#include "scan.h"
#include "setup.h"
#include "util.h"

#define RECORDER "libdmprof-recorder.so"

/*
 * The recorder: $DMPROF_RECORDER; beside this binary (a build tree);
 * in ../lib/dmprof from it (installed under any PREFIX); in the
 * configured LIBDIR.
 */

static char *find_recorder(void)
{
	const char *env = getenv("DMPROF_RECORDER");
	char *dir = paths_exe_dir(), *path = NULL;
	const char *const where[] = { "", "/../lib/dmprof" };

	if (env && *env) {
		if (access(env, R_OK) < 0) {
			error("DMPROF_RECORDER=%s: %s", env, strerror(errno));
			free(dir);
			return NULL;
		}
		free(dir);
		return xstrdup(env);
	}
	for (size_t i = 0; dir && i < ARRAY_SIZE(where); i++) {
		path = xasprintf("%s%s/%s", dir, where[i], RECORDER);
		if (access(path, R_OK) == 0)
			goto found;
		free(path);
	}
	path = xasprintf("%s/%s", dmprof_libdir, RECORDER);
	if (access(path, R_OK) == 0)
		goto found;
	error("cannot find %s (beside dmprof, in ../lib/dmprof from it, or "
	      "in %s); set DMPROF_RECORDER to its path",
	      RECORDER, dmprof_libdir);
	free(path);
	path = NULL;
found:
	free(dir);
	return path;
}

/*
 * A signal a program can spare for dumps: by name, by number, or "none"
 * (0).  Not the ones that report faults or that the system needs (KILL,
 * STOP, SEGV, PIPE, CHLD, ...), nor glibc's own below SIGRTMIN.
 */
static int signal_number(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		{ "URG", SIGURG },   { "PROF", SIGPROF }, { "WINCH", SIGWINCH },
		{ "VTALRM", SIGVTALRM }, { "PWR", SIGPWR },
	};
	uint64_t v;

	if (!strcasecmp(s, "none"))
		return 0;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].sig;
	if (word_u64(s, strlen(s), &v) != NUM_OK)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if ((uint64_t)names[i].sig == v)
			return (int)v;
	if (v >= (uint64_t)SIGRTMIN && v <= (uint64_t)SIGRTMAX)
		return (int)v;
	return -1;
}

/* The program being recorded, for the signal handler. */
static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* What the dumps of the program say of themselves (their META). */
struct cost {
	double dump, stopped;  /* the longest */
	unsigned running;      /* read with the threads running */
	char why[128];         /* why, the first time */
};

/* Why the dumps were taken, where it helps to know which is which. */
struct reasons {
	unsigned peaks;          /* at new highs in use */
	unsigned long teardown;  /* the number of the dump before teardown */
	char teardown_why[64];   /* "main returned", "exit called"... */
	unsigned long crash;     /* the number of the dump of a crash */
	char crash_why[64];      /* "crash: SIGSEGV" */
};

static void add_cost(struct cost *c, const struct deep_meta *m)
{
	if (m->dump_seconds > c->dump)
		c->dump = m->dump_seconds;
	if (m->stopped_seconds > c->stopped)
		c->stopped = m->stopped_seconds;
	if (m->running && !c->running++)
		snprintf(c->why, sizeof(c->why), "%s", m->running_why);
}

/* Dump number K's reason, the recorder's words (rec_hooks.c, rec_exit.c). */
static void add_reason(struct reasons *r, const struct deep_meta *m,
		       unsigned long k)
{
	if (!strcmp(m->reason, "peak")) {
		r->peaks++;
	} else if (m->moment == MOMENT_BEFORE_TEARDOWN) {
		r->teardown = k;
		snprintf(r->teardown_why, sizeof(r->teardown_why), "%s",
			 m->reason);
	} else if (!strncmp(m->reason, "crash: ", 7)) {
		r->crash = k;
		snprintf(r->crash_why, sizeof(r->crash_why), "%s",
			 m->reason + 7);
	}
}

/*
 * Which dumps to read first: the peaks give the shape of the growth,
 * and the dump before teardown what the program still held at its end
 * (the last one, "Exiting", comes after the static destructors).
 */
static void say_reasons(const struct reasons *r, const char *prefix)
{
	if (r->peaks && r->teardown)
		inform("record", "%u at new peaks in use; before teardown "
				 "(%s): %s.%04lu.heap",
		       r->peaks, r->teardown_why, prefix, r->teardown);
	else if (r->teardown)
		inform("record", "before teardown (%s): %s.%04lu.heap",
		       r->teardown_why, prefix, r->teardown);
	else if (r->peaks)
		inform("record", "%u at new peaks in use", r->peaks);
	if (r->crash)
		inform("record", "the last one, of the crash (%s): %s.%04lu.heap",
		       r->crash_why, prefix, r->crash);
}

static void say_cost(const struct cost *c, size_t dumps)
{
	struct strbuf sb = STRBUF_INIT;

	if (!dumps || c->dump <= 0)
		return;
	sb_addf(&sb, "a dump took up to %.3f s", c->dump);
	if (c->running < dumps)
		sb_addf(&sb, ", the program's threads standing still up to "
			     "%.3f s",
			c->stopped);
	inform("record", "%s", sb.buf);
	sb_release(&sb);
	if (c->running)
		inform("record", "%u dump%s read with the threads running: %s",
		       c->running, c->running == 1 ? " was" : "s were",
		       c->why);
}

/*
 * Say which dumps the run left, per process, and what they cost; how
 * many there are of every process.
 */
static size_t report(const char *prefix, pid_t main_pid)
{
	char *mine = xasprintf("%s.%05d", prefix, (int)main_pid);
	struct series s;
	struct cost cost;
	struct reasons why;
	size_t others, total;

	memset(&cost, 0, sizeof(cost));
	memset(&why, 0, sizeof(why));
	if (series_process(&s, mine, &others) < 0) {
		free(mine);
		return 0;
	}
	for (size_t i = 0; i < s.ndumps; i++) {
		struct deep_meta m;

		deep_meta(s.dumps[i].path, &m);
		add_cost(&cost, &m);
		add_reason(&why, &m, s.dumps[i].counter);
	}
	if (s.ndumps == 1)
		inform("record", "1 dump of pid %d: %s.%04lu.heap",
		       (int)main_pid, mine, s.first);
	else if (s.ndumps)
		inform("record", "%zu dumps of pid %d: %s.0001.heap .. "
				 "%s.%04lu.heap",
		       s.ndumps, (int)main_pid, mine, mine,
		       s.dumps[s.ndumps - 1].counter);
	say_reasons(&why, mine);
	say_cost(&cost, s.ndumps);
	if (others)
		inform("record", "%zu more dump%s by other processes "
				 "(children, or earlier runs) under %s.*.heap",
		       others, others == 1 ? "" : "s", prefix);
	total = s.ndumps + others;
	series_free(&s);
	free(mine);
	return total;
}

/* What the options asked for. */
struct record_opts {
	const char *output;     /* -o, or NULL */
	double interval;
	bool has_alloc, has_inuse;
	uint64_t alloc, inuse;  /* byte counts, when given */
	int pageframe;
	int signal;
	uint64_t depth;
	bool mmap;
	bool no_peaks;
	bool separate;          /* --separate-files */
	bool pss;
};

enum {
	OPT_ALLOC = OPT_LONG_ONLY,
	OPT_INUSE,
	OPT_PAGEFRAME,
	OPT_DEPTH,
	OPT_NO_MMAP,
	OPT_NO_PEAKS,
	OPT_SIGNAL,
	OPT_SEPARATE,
	OPT_PSS,
};

static const char *const pageframe_choices[] = { "1", "2", NULL };

static const char *const usage[] = { "[--] CMD [ARGS...]", NULL };
static const struct cmd_option options[] = {
	{ .key = 'o', .name = "output", .arg = "PREFIX",
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS,
	  .help = "dumps go to PREFIX.PID.NNNN.heap; a directory: "
		  "DIR/CMD.PID..." },
	{ .key = 'i', .name = "interval", .arg = "SECONDS",
	  .type = OPT_SECONDS, .flags = OPT_SYNOPSIS,
	  .bad = "bad interval '%s' (seconds)",
	  .help = "a dump every SECONDS (default 5; 0: none)" },
	{ .key = OPT_ALLOC, .name = "alloc-interval", .arg = "BYTES",
	  .type = OPT_SIZE,
	  .bad = "bad size '%s' (bytes, or with k, M, G)",
	  .help = "a dump each time BYTES more were allocated "
		  "(default 1G; 0: never; k, M, G allowed)" },
	{ .key = OPT_INUSE, .name = "inuse-interval", .arg = "BYTES",
	  .type = OPT_SIZE,
	  .bad = "bad size '%s' (bytes, or with k, M, G)",
	  .help = "a dump each time BYTES more are in use, instead of "
		  "at new peaks (0: never)" },
	{ .key = OPT_NO_PEAKS, .name = "no-peaks",
	  .help = "no dumps at new peaks in use (1M, then twice the "
		  "last one's); a dump each 100M more in use "
		  "instead" },
	{ .key = OPT_SIGNAL, .name = "signal", .arg = "SIG",
	  .type = OPT_STRING,
	  .help = "dump when CMD (or dmprof record) gets SIG (default "
		  "USR2; none: no signal)" },
	{ .key = OPT_DEPTH, .name = "depth", .arg = "N",
	  .type = OPT_COUNT, .min = 1, .max = 64,
	  .bad = "bad depth '%s' (1 to 64)",
	  .help = "frames per stack, 1 to 64 (default 32)" },
	{ .key = OPT_NO_MMAP, .name = "no-mmap",
	  .help = "do not record mmap calls" },
	{ .key = OPT_SEPARATE, .name = "separate-files",
	  .help = "each dump's new buckets in PREFIX.PID.NNNN.buckets and "
		  "the maps in PREFIX.PID.maps, as the original wrote "
		  "them (default: in the dump)" },
	{ .key = OPT_PSS, .name = "pss",
	  .help = "the kernel's Pss in each dump too, for the pss column "
		  "(the kernel walks every page for it, the threads "
		  "standing still: 2 GB held 31 ms, not 12)" },
	{ .key = OPT_PAGEFRAME, .name = "pageframe", .arg = "2",
	  .type = OPT_CHOICE, .choices = pageframe_choices,
	  .flags = OPT_OPTIONAL,
	  .bad = "bad --pageframe '%s' (1 or 2)",
	  .help = "list the page frames of each region (needs root); "
		  "2: with their share counts" },
	OPT_END,
};

/* The options' values (converted when given); 0, or a usage error's
 * status. */
static int parse_options(struct cmd_args *a, struct record_opts *o)
{
	const char *sig = args_get(a, OPT_SIGNAL);

	memset(o, 0, sizeof(*o));
	o->output = args_get(a, 'o');
	o->interval = args_seconds(a, 'i', 5);
	o->has_alloc = args_has(a, OPT_ALLOC);
	o->alloc = args_size(a, OPT_ALLOC, 0);
	o->has_inuse = args_has(a, OPT_INUSE);
	o->inuse = args_size(a, OPT_INUSE, 0);
	/* (--pageframe alone is 1.) */
	o->pageframe = args_has(a, OPT_PAGEFRAME)
			       ? args_choice(a, OPT_PAGEFRAME, 0) + 1
			       : 0;
	o->depth = args_count(a, OPT_DEPTH, 32);
	o->mmap = !args_has(a, OPT_NO_MMAP);
	o->no_peaks = args_has(a, OPT_NO_PEAKS);
	o->separate = args_has(a, OPT_SEPARATE);
	o->pss = args_has(a, OPT_PSS);
	o->signal = SIGUSR2;
	if (sig && (o->signal = signal_number(sig)) < 0)
		return cmd_usage_error(a, "bad signal '%s' (USR1, USR2, HUP, "
					  "URG, PROF, WINCH, VTALRM, PWR, a "
					  "real-time one, or none)", sig);
	return 0;
}

/*
 * The absolute prefix of the dump files, its directories made: -o PREFIX;
 * -o DIR (an existing directory, or a path ending in '/') for DIR/NAME;
 * ./NAME by default; NAME being the command's.  Returns NULL after an
 * error.
 */
static char *dump_prefix(const struct record_opts *o, const char *cmd)
{
	char *copy = xstrdup(cmd), *name = xstrdup(basename(copy)), *prefix;
	char cwd[PATH_MAX];

	free(copy);
	prefix = setup_output_prefix(o->output, name);
	free(name);
	if (!prefix)
		return NULL;
	/* The child may change directory: give it an absolute prefix. */
	if (prefix[0] != '/') {
		char *abs;

		if (!getcwd(cwd, sizeof(cwd))) {
			error("cannot get the current directory: %s",
			      strerror(errno));
			free(prefix);
			return NULL;
		}
		abs = xasprintf("%s/%s", cwd, prefix);
		free(prefix);
		prefix = abs;
	}
	return prefix;
}

/* The recorder's configuration, in the original's variables. */
static void set_environment(const struct record_opts *o,
			    const char *recorder, const char *prefix)
{
	const char *old = getenv("LD_PRELOAD");
	char *preload = old && *old ? xasprintf("%s:%s", recorder, old)
				    : xstrdup(recorder);
	char num[64];

	setenv("LD_PRELOAD", preload, 1);
	free(preload);
	setenv("HEAPPROFILE", prefix, 1);
	setenv("DEEP_HEAP_PROFILE", "1", 1);
	/* (Half-written files of gone processes: record removes them.) */
	setenv("DMPROF_LEFTOVERS_BY_RECORD", "1", 1);
	setenv("HEAP_PROFILE_MMAP", o->mmap ? "1" : "0", 1);
	/* (The recorder reads plain decimals: no exponents.) */
	snprintf(num, sizeof(num), "%.6f", o->interval);
	setenv("HEAP_PROFILE_TIME_INTERVAL", num, 1);
	if (o->has_alloc) {
		snprintf(num, sizeof(num), "%" PRIu64, o->alloc);
		setenv("HEAP_PROFILE_ALLOCATION_INTERVAL", num, 1);
	}
	if (o->has_inuse) {
		snprintf(num, sizeof(num), "%" PRIu64, o->inuse);
		setenv("HEAP_PROFILE_INUSE_INTERVAL", num, 1);
	}
	/* (Otherwise the environment's say, on by default.) */
	if (o->no_peaks)
		setenv("DMPROF_PEAK_DUMPS", "0", 1);
	if (o->separate)
		setenv("DMPROF_SEPARATE_FILES", "1", 1);
	if (o->pss)
		setenv("DMPROF_PSS", "1", 1);
	snprintf(num, sizeof(num), "%d", o->pageframe);
	setenv("DEEP_HEAP_PROFILE_PAGEFRAME", num, 1);
	snprintf(num, sizeof(num), "%" PRIu64, o->depth);
	setenv("DMPROF_STACK_DEPTH", num, 1);
	snprintf(num, sizeof(num), "%d", o->signal);
	setenv("HEAPPROFILESIGNAL", num, 1);
}

/*
 * node programs: dmprof's hook for node (dmprof-node.js, beside the
 * recorder) required by every node the command starts, through
 * NODE_OPTIONS (which node's children inherit), after what it holds
 * already.  The hook names node to the recorder and asks for the dump
 * before teardown at the exit event (src/recorder/rec_node.c); any other
 * program ignores the variable.  A path with a space, a quote or a
 * backslash is quoted as node reads NODE_OPTIONS.
 */
static void require_node_hook(const char *recorder)
{
	char *copy = xstrdup(recorder), *hook;
	const char *old = getenv("NODE_OPTIONS");
	struct strbuf opts = STRBUF_INIT;

	hook = xasprintf("%s/dmprof-node.js", dirname(copy));
	free(copy);
	if (access(hook, R_OK) < 0) {
		free(hook);
		return;
	}
	if (old && *old)
		sb_addf(&opts, "%s ", old);
	sb_addstr(&opts, "--require ");
	if (strpbrk(hook, " \t\"\\")) {
		sb_addch(&opts, '"');
		for (const char *p = hook; *p; p++) {
			if (*p == '"' || *p == '\\')
				sb_addch(&opts, '\\');
			sb_addch(&opts, *p);
		}
		sb_addch(&opts, '"');
	} else {
		sb_addstr(&opts, hook);
	}
	setenv("NODE_OPTIONS", opts.buf, 1);
	sb_release(&opts);
	free(hook);
}

/*
 * The recorder's notices come here, to this command's stderr, never to
 * the program's (whose output must be what it is unrecorded): a copy of
 * fd 2 out of the way of the program's own descriptors, which it and its
 * children inherit, named in DMPROF_RECORDER_NOTICES with what it is
 * (device and inode), so that a recorder whose program closed or reused
 * that number writes to the run's log instead.  Returns the copy, or -1
 * (no stderr: the notices go to the log).
 */
static int pass_stderr(void)
{
	struct stat st;
	char val[96];
	int fd;

	if (fstat(2, &st) < 0)
		return -1;
	fd = fcntl(2, F_DUPFD, 100);
	if (fd < 0)
		fd = fcntl(2, F_DUPFD, 3);
	if (fd < 0)
		return -1;
	snprintf(val, sizeof(val), "%d:%ju:%ju", fd, (uintmax_t)st.st_dev,
		 (uintmax_t)st.st_ino);
	setenv("DMPROF_RECORDER_NOTICES", val, 1);
	return fd;
}

/*
 * Run ARGV and wait for it.  Like time(1): ^C and ^\ are for the program;
 * TERM and HUP sent here, and the dump signal SIG, are passed on to it.
 * Returns its pid (its wait status in *WSTATUS), or -1 if it could not
 * start.
 */
static pid_t run_child(char **argv, int sig, int *wstatus)
{
	struct sigaction sa, old_int, old_quit;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		error("cannot fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		execvp(argv[0], argv);
		error("record: cannot run %s: %s", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child = pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGQUIT, &sa, &old_quit);
	sa.sa_handler = forward;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (sig)
		sigaction(sig, &sa, NULL);
	while (waitpid(pid, wstatus, 0) < 0) {
		if (errno != EINTR) {
			error("waiting for %s: %s", argv[0], strerror(errno));
			*wstatus = 1 << 8;
			break;
		}
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return pid;
}

/* Is the process PID (digits at P, up to a '.') gone?  *END past them. */
static bool gone_pid(const char *p, const char **end)
{
	long pid = 0;
	const char *q = p;

	for (; *q >= '0' && *q <= '9' && q - p < 10; q++)
		pid = pid * 10 + (*q - '0');
	*end = q;
	return q > p && *q == '.' && pid > 0 && kill((pid_t)pid, 0) < 0 &&
	       errno == ESRCH;
}

/*
 * Files a process of a run left half-written, which a process that ends
 * in the instant between writing a file and renaming it leaves (the
 * recorder leaves this to record when under it, rather than have each
 * process list the directory): PREFIX.PID.*.tmp, and the unwind rules'
 * .BASE.unwind.ID.PID.tmp, of processes that are gone.
 */
static void remove_leftovers(const char *prefix)
{
	const char *slash = strrchr(prefix, '/');
	const char *base = slash ? slash + 1 : prefix;
	char *dir = slash ? xstrndup(prefix, (size_t)(slash - prefix + 1))
			  : xstrdup("./");
	size_t blen = strlen(base);
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		const char *name = e->d_name, *end, *p;
		size_t len = strlen(name);

		if (len < 5 || strcmp(name + len - 4, ".tmp"))
			continue;
		if (!strncmp(name, base, blen) && name[blen] == '.' &&
		    gone_pid(name + blen + 1, &end)) {
			/* PREFIX.PID.* */
		} else if (name[0] == '.' && !strncmp(name + 1, base, blen) &&
			   !strncmp(name + 1 + blen, ".unwind.", 8)) {
			/* .BASE.unwind.ID.PID.tmp: the PID before ".tmp" */
			for (p = name + len - 4; p > name && p[-1] >= '0' &&
						 p[-1] <= '9';)
				p--;
			if (p[-1] != '.' || !gone_pid(p, &end))
				continue;
		} else {
			continue;
		}
		{
			char *path = xasprintf("%s%s", dir, name);

			unlink(path);
			free(path);
		}
	}
	if (d)
		closedir(d);
	free(dir);
}

static int cmd_record_run(struct cmd_args *a)
{
	struct record_opts o;
	char *recorder, *prefix = NULL;
	int status, wstatus, notices;
	pid_t pid;

	if ((status = parse_options(a, &o)))
		return status;
	if (a->argc < 1)
		return cmd_usage_error(a, "expected a command to run");
	if (o.output && !*o.output)
		return cmd_usage_error(a, "bad output prefix '' (a path and a "
					  "file name start, or a directory)");
	recorder = find_recorder();
	if (recorder)
		prefix = dump_prefix(&o, a->argv[0]);
	if (!prefix) {
		free(recorder);
		return 1;
	}
	set_environment(&o, recorder, prefix);
	require_node_hook(recorder);
	free(recorder);
	remove_leftovers(prefix);
	notices = pass_stderr();
	pid = run_child(a->argv, o.signal, &wstatus);
	if (notices >= 0)
		close(notices);
	if (pid < 0) {
		free(prefix);
		return 1;
	}
	remove_leftovers(prefix);
	if (!report(prefix, pid) &&
	    !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) >= 126))
		inform("record", "%s wrote no dumps (a static binary, a "
				 "set-user-ID one, or one that never called "
				 "malloc and did not exit normally?)",
		       a->argv[0]);
	free(prefix);
	if (WIFSIGNALED(wstatus)) {
		inform("record", "%s killed by signal %d%s", a->argv[0],
		       WTERMSIG(wstatus),
		       WCOREDUMP(wstatus) ? " (core dumped)" : "");
		return 128 + WTERMSIG(wstatus);
	}
	return WEXITSTATUS(wstatus);
}

const struct cmd_entry cmd_record = { .name = "record", .run = cmd_record_run,
	.flags = CMD_STOP, .usage = usage, .options = options,
	.summary = "run CMD with the recorder, which writes deep dumps of it" };
