/*
 * dmprof record [options] [--] CMD [ARGS]: run CMD with the recorder
 * preloaded, so that it writes deep dumps to PREFIX.PID.NNNN.heap, and say
 * what it wrote.  The recorder is configured through the environment
 * variables it shares with the original producer (HEAPPROFILE, ...), so
 * CMD's own children record too, each to its own pid.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "text.h"
#include "util.h"

#ifndef DMPROF_LIBDIR
#define DMPROF_LIBDIR "/usr/local/lib/dmprof"
#endif

#define RECORDER "libdmprof-recorder.so"

/* The recorder: $DMPROF_RECORDER, next to this binary, or installed. */
static char *find_recorder(void)
{
	const char *env = getenv("DMPROF_RECORDER");
	char self[PATH_MAX];
	ssize_t n;
	char *path;

	if (env && *env) {
		if (access(env, R_OK) < 0) {
			error("DMPROF_RECORDER=%s: %s", env, strerror(errno));
			return NULL;
		}
		return xstrdup(env);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		path = xasprintf("%s/%s", dirname(self), RECORDER);
		if (access(path, R_OK) == 0)
			return path;
		free(path);
	}
	path = xasprintf("%s/%s", DMPROF_LIBDIR, RECORDER);
	if (access(path, R_OK) == 0)
		return path;
	error("cannot find %s (next to dmprof or in %s); "
	      "set DMPROF_RECORDER to its path",
	      RECORDER, DMPROF_LIBDIR);
	free(path);
	return NULL;
}

/* mkdir -p for the directory part of PREFIX. */
static int make_dirs(const char *prefix)
{
	char *dir = xstrdup(prefix), *slash = strrchr(dir, '/');
	int rc = 0;

	if (!slash || slash == dir) {
		free(dir);
		return 0;
	}
	*slash = 0;
	for (char *p = dir + 1;; p++) {
		char c = *p;

		if (c != '/' && c)
			continue;
		*p = 0;
		if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
			rc = error("cannot create directory %s: %s", dir,
				   strerror(errno));
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	free(dir);
	return rc;
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

static bool parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e9)
		return false;
	*out = v;
	return true;
}

static bool parse_bytes(const char *s, uint64_t *out)
{
	uint64_t v, mul = 1;
	size_t n = strlen(s);
	char *num;
	bool ok;

	if (n && strchr("kKmMgG", s[n - 1])) {
		mul = strchr("kK", s[n - 1])   ? 1ULL << 10
		      : strchr("mM", s[n - 1]) ? 1ULL << 20
					       : 1ULL << 30;
		n--;
	}
	num = xstrndup(s, n);
	ok = (word_u64(num, strlen(num), &v) == NUM_OK) && !__builtin_mul_overflow(v, mul, out);
	free(num);
	return ok;
}

static pid_t child;
static int forward_sig;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* Say which dumps the run left, per process. */
static unsigned report(const char *prefix, pid_t main_pid)
{
	char *dir = xstrdup(prefix), *base;
	const char *slash = strrchr(prefix, '/');
	size_t blen;
	DIR *d;
	struct dirent *e;
	unsigned total = 0, mine = 0, others = 0, last = 0;
	char pid5[32];

	if (slash) {
		dir[slash - prefix] = 0;
		if (!*dir)
			strcpy(dir, "/");
		base = xstrdup(slash + 1);
	} else {
		strcpy(dir, ".");
		base = xstrdup(prefix);
	}
	blen = strlen(base);
	snprintf(pid5, sizeof(pid5), ".%05d.", (int)main_pid);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		const char *n = e->d_name, *rest = n + blen;
		size_t len = strlen(n);

		if (strncmp(n, base, blen) || len < blen + 16 ||
		    strcmp(n + len - 5, ".heap") || rest[0] != '.')
			continue;
		total++;
		if (!strncmp(rest, pid5, strlen(pid5))) {
			unsigned k = (unsigned)atoi(rest + strlen(pid5));

			mine++;
			if (k > last)
				last = k;
		} else {
			others++;
		}
	}
	if (d)
		closedir(d);
	if (mine == 1)
		fprintf(stderr, "dmprof record: 1 dump of pid %d: "
				"%s.%05d.%04u.heap\n",
			(int)main_pid, prefix, (int)main_pid, last);
	else if (mine)
		fprintf(stderr, "dmprof record: %u dumps of pid %d: "
				"%s.%05d.0001.heap .. %s.%05d.%04u.heap\n",
			mine, (int)main_pid, prefix, (int)main_pid, prefix,
			(int)main_pid, last);
	if (others)
		fprintf(stderr,
			"dmprof record: %u more dump%s by other processes "
			"(children, or earlier runs) under %s.*.heap\n",
			others, others == 1 ? "" : "s", prefix);
	free(dir);
	free(base);
	return total;
}

int cmd_record(int argc, char **argv)
{
	enum {
		OPT_ALLOC = 0x200,
		OPT_INUSE,
		OPT_PAGEFRAME,
		OPT_DEPTH,
		OPT_NO_MMAP,
		OPT_SIGNAL,
	};
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "alloc-interval", required_argument, NULL, OPT_ALLOC },
		{ "inuse-interval", required_argument, NULL, OPT_INUSE },
		{ "pageframe", optional_argument, NULL, OPT_PAGEFRAME },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "no-mmap", no_argument, NULL, OPT_NO_MMAP },
		{ "signal", required_argument, NULL, OPT_SIGNAL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *prefix = NULL, *alloc = NULL, *inuse = NULL;
	double interval = 5;
	int pageframe = 0, sig = SIGUSR2, c, status = 0, wstatus;
	uint64_t depth = 32, bytes;
	bool mmap_on = true;
	char *recorder, *preload, *prefix_abs = NULL, *tmp;
	char num[64];
	struct sigaction sa, old_int, old_quit;
	pid_t pid;

	while ((c = cmd_getopt("record", argc, argv, "o:i:", longopts,
			       &status)) != -1) {
		switch (c) {
		case -2:
			return status;
		case 'o':
			prefix = optarg;
			break;
		case 'i':
			if (!parse_seconds(optarg, &interval))
				return cmd_usage_error("record", "bad interval "
						       "'%s' (seconds)", optarg);
			break;
		case OPT_ALLOC:
		case OPT_INUSE:
			if (!parse_bytes(optarg, &bytes))
				return cmd_usage_error("record", "bad size '%s' "
						       "(bytes, or with k, M, G)",
						       optarg);
			*(c == OPT_ALLOC ? &alloc : &inuse) = optarg;
			break;
		case OPT_PAGEFRAME:
			pageframe = !optarg ? 1 : !strcmp(optarg, "1") ? 1
					  : !strcmp(optarg, "2") ? 2 : -1;
			if (pageframe < 0)
				return cmd_usage_error("record", "bad --pageframe "
						       "'%s' (1 or 2)", optarg);
			break;
		case OPT_DEPTH:
			if (!(word_u64(optarg, strlen(optarg), &depth) == NUM_OK) || depth < 1 ||
			    depth > 64)
				return cmd_usage_error("record", "bad depth '%s' "
						       "(1 to 64)", optarg);
			break;
		case OPT_NO_MMAP:
			mmap_on = false;
			break;
		case OPT_SIGNAL:
			sig = signal_number(optarg);
			if (sig < 0)
				return cmd_usage_error(
					"record",
					"bad signal '%s' (USR1, USR2, HUP, URG, "
					"PROF, WINCH, VTALRM, PWR, a real-time "
					"one, or none)",
					optarg);
			break;
		}
	}
	if (optind >= argc)
		return cmd_usage_error("record", "expected a command to run");
	if (!prefix) {
		/* ./NAME.PID.NNNN.heap, NAME the command's. */
		tmp = xstrdup(argv[optind]);
		prefix_abs = xstrdup(basename(tmp));
		free(tmp);
		prefix = prefix_abs;
	}
	if (!*prefix || prefix[strlen(prefix) - 1] == '/')
		return cmd_usage_error("record", "bad output prefix '%s' "
				       "(a path and a file name start)", prefix);
	recorder = find_recorder();
	if (!recorder || make_dirs(prefix) < 0) {
		free(recorder);
		free(prefix_abs);
		return 1;
	}
	/* The child may change directory: give it an absolute prefix. */
	if (prefix[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd))) {
			error("cannot get the current directory: %s",
			      strerror(errno));
			free(recorder);
			free(prefix_abs);
			return 1;
		}
		tmp = xasprintf("%s/%s", cwd, prefix);
		free(prefix_abs);
		prefix = prefix_abs = tmp;
	}

	tmp = getenv("LD_PRELOAD");
	preload = tmp && *tmp ? xasprintf("%s:%s", recorder, tmp)
			      : xstrdup(recorder);
	setenv("LD_PRELOAD", preload, 1);
	setenv("HEAPPROFILE", prefix, 1);
	setenv("DEEP_HEAP_PROFILE", "1", 1);
	setenv("HEAP_PROFILE_MMAP", mmap_on ? "1" : "0", 1);
	/* (The recorder reads plain decimals: no exponents.) */
	snprintf(num, sizeof(num), "%.6f", interval);
	setenv("HEAP_PROFILE_TIME_INTERVAL", num, 1);
	if (alloc && parse_bytes(alloc, &bytes)) {
		snprintf(num, sizeof(num), "%" PRIu64, bytes);
		setenv("HEAP_PROFILE_ALLOCATION_INTERVAL", num, 1);
	}
	if (inuse && parse_bytes(inuse, &bytes)) {
		snprintf(num, sizeof(num), "%" PRIu64, bytes);
		setenv("HEAP_PROFILE_INUSE_INTERVAL", num, 1);
	}
	snprintf(num, sizeof(num), "%d", pageframe);
	setenv("DEEP_HEAP_PROFILE_PAGEFRAME", num, 1);
	snprintf(num, sizeof(num), "%" PRIu64, depth);
	setenv("DMPROF_STACK_DEPTH", num, 1);
	snprintf(num, sizeof(num), "%d", sig);
	setenv("HEAPPROFILESIGNAL", num, 1);
	free(preload);

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		error("cannot fork: %s", strerror(errno));
		free(recorder);
		free(prefix_abs);
		return 1;
	}
	if (!pid) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "dmprof: record: cannot run %s: %s\n",
			argv[optind], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}

	/*
	 * Like time(1): ^C and ^\ are for the program; TERM and HUP sent
	 * here, and the dump signal, are passed on to it.
	 */
	child = pid;
	forward_sig = sig;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGQUIT, &sa, &old_quit);
	sa.sa_handler = forward;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (forward_sig)
		sigaction(forward_sig, &sa, NULL);
	while (waitpid(pid, &wstatus, 0) < 0) {
		if (errno != EINTR) {
			error("waiting for %s: %s", argv[optind],
			      strerror(errno));
			wstatus = 1 << 8;
			break;
		}
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);

	if (!report(prefix, pid) &&
	    !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) >= 126))
		fprintf(stderr,
			"dmprof record: %s wrote no dumps (a static binary, "
			"a set-user-ID one, or one that never called malloc "
			"and did not exit normally?)\n",
			argv[optind]);
	free(recorder);
	free(prefix_abs);
	if (WIFSIGNALED(wstatus)) {
		fprintf(stderr, "dmprof record: %s killed by signal %d%s\n",
			argv[optind], WTERMSIG(wstatus),
			WCOREDUMP(wstatus) ? " (core dumped)" : "");
		return 128 + WTERMSIG(wstatus);
	}
	return WEXITSTATUS(wstatus);
}
