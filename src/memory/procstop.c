/*
 * Stopping a live process from outside.  Each thread listed in
 * /proc/PID/task is seized and interrupted (PTRACE_SEIZE +
 * PTRACE_INTERRUPT: no SIGSTOP, so neither the program nor its parent
 * sees a thing), then waited for with a deadline; the list is read again
 * until it holds no new thread, since a thread not yet stopped may start
 * others.  A thread caught on its way to a signal stays stopped there and
 * gets its signal back when let go.
 *
 * When ptrace is refused the reason is looked for, in the order the
 * kernel checks (the process gone or a zombie, traced already, another
 * user's, Yama's ptrace_scope), so that the message can name the fix.
 */
#include "procstop.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Rounds of listing the threads before giving up on a process whose
 * threads keep starting faster than they can be stopped. */
#define MAX_ROUNDS 1000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The state letter of /proc/PID/task/TID/stat ('R', 'S', 'D', 'Z'...),
 * or 0 when it cannot be read (the thread is gone). */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *fp;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid,
		 (int)tid);
	if (!(fp = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	/* "TID (COMM) S ...": COMM may hold anything, so the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static bool is_dead(char state)
{
	return state == 0 || state == 'Z' || state == 'X';
}

/* Has the process let go of its memory?  (Its maps are empty from the
 * moment it did, before its threads are all zombies.) */
static bool memory_gone(pid_t pid)
{
	char path[64], c;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, &c, 1);
	close(fd);
	return n == 0;
}

bool procstop_exited(pid_t pid)
{
	char path[64];
	struct dirent *de;
	bool alive = false;
	DIR *d;

	if (memory_gone(pid))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return true;
	while (!alive && (de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]))
			alive = !is_dead(thread_state(
				pid, (pid_t)strtol(de->d_name, NULL, 10)));
	closedir(d);
	return !alive;
}

/* A number from the "NAME:\t..." line of /proc/PID/status, or -1. */
static long status_field(pid_t pid, const char *name)
{
	char path[64], line[256];
	size_t len = strlen(name);
	long v = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(fp = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, name, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(fp);
	return v;
}

static int yama_scope(void)
{
	FILE *fp = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = 0;

	if (!fp)
		return 0;
	if (fscanf(fp, "%d", &scope) != 1)
		scope = 0;
	fclose(fp);
	return scope;
}

/* Why PTRACE_SEIZE of PID failed with ERR: -1 after saying so. */
static int refusal(pid_t pid, int err)
{
	long tracer = status_field(pid, "TracerPid");
	long uid = status_field(pid, "Uid");
	int scope = yama_scope();

	if (err == ESRCH || procstop_exited(pid))
		return error("process %d has exited", (int)pid);
	if (err != EPERM)
		return error("cannot stop process %d: ptrace: %s", (int)pid,
			     strerror(err));
	if (tracer > 0)
		return error("process %d is traced already, by process %ld "
			     "(a debugger, strace?): detach that first",
			     (int)pid, tracer);
	if (uid >= 0 && geteuid() != 0 && (uid_t)uid != geteuid())
		return error("process %d belongs to user %ld: run dmprof as "
			     "that user, or as root", (int)pid, uid);
	if (scope == 3)
		return error("cannot stop process %d: ptrace is disabled "
			     "(/proc/sys/kernel/yama/ptrace_scope is 3, until "
			     "reboot)", (int)pid);
	if (scope == 2)
		return error("cannot stop process %d: "
			     "/proc/sys/kernel/yama/ptrace_scope is 2: run "
			     "dmprof as root (CAP_SYS_PTRACE)", (int)pid);
	if (scope == 1)
		return error("cannot stop process %d: "
			     "/proc/sys/kernel/yama/ptrace_scope is 1 (only "
			     "a parent may trace): run dmprof as root, or "
			     "'sysctl kernel.yama.ptrace_scope=0'", (int)pid);
	return error("cannot stop process %d: ptrace: %s (a container "
		     "without CAP_SYS_PTRACE? a seccomp filter?)", (int)pid,
		     strerror(err));
}

static bool contains(const pid_t *v, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == tid)
			return true;
	return false;
}

/* Seize and interrupt TID: 1 held, 0 skipped (it ended), -1 refused. */
static int seize(struct procstop *s, pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
		int err = errno;

		if (err == ESRCH ||
		    (err == EPERM && is_dead(thread_state(s->pid, tid)))) {
			GROW(s->skipped, s->nskipped + 1, s->skipped_alloc);
			s->skipped[s->nskipped++] = tid;
			return 0;
		}
		return refusal(s->pid, err);
	}
	if (!s->t_start)
		s->t_start = now_ns();
	GROW(s->tids, s->n + 1, s->alloc);
	s->sigs = xreallocarray(s->sigs, s->alloc, sizeof(*s->sigs));
	s->tids[s->n] = tid;
	s->sigs[s->n++] = 0;
	/* (ESRCH: it is ending; waiting for it says so.) */
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	return 1;
}

/* Forget held thread I: it has ended. */
static void drop(struct procstop *s, size_t i)
{
	s->tids[i] = s->tids[s->n - 1];
	s->sigs[i] = s->sigs[s->n - 1];
	s->n--;
}

/*
 * Wait until held thread I is stopped: 1 stopped, 0 ended (dropped),
 * -1 past DEADLINE.
 */
static int wait_one(struct procstop *s, size_t i, uint64_t deadline)
{
	unsigned nap_us = 10;

	for (;;) {
		int st;
		pid_t r = waitpid(s->tids[i], &st, __WALL | WNOHANG);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))) {
			drop(s, i);
			return 0;
		}
		if (r > 0 && WIFSTOPPED(st)) {
			/* Not our interrupt nor a group stop: a signal on
			 * its way, given back when the thread is let go. */
			if (st >> 16 != PTRACE_EVENT_STOP)
				s->sigs[i] = WSTOPSIG(st);
			return 1;
		}
		if (now_ns() > deadline)
			return -1;
		usleep(nap_us);
		if (nap_us < 1000)
			nap_us *= 2;
	}
}

/* Threads of the process not held nor skipped yet, into *NEW. */
static int list_new(struct procstop *s, pid_t **new, size_t *nnew,
		    size_t *alloc)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
	if (!(d = opendir(path)))
		return errno == ENOENT ? error("no process %d", (int)s->pid)
				       : error_errno("cannot list the threads "
						     "of process %d",
						     (int)s->pid);
	*nnew = 0;
	while ((de = readdir(d))) {
		pid_t tid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		tid = (pid_t)strtol(de->d_name, NULL, 10);
		if (contains(s->tids, s->n, tid) ||
		    contains(s->skipped, s->nskipped, tid))
			continue;
		GROW(*new, *nnew + 1, *alloc);
		(*new)[(*nnew)++] = tid;
	}
	closedir(d);
	return 0;
}

/* Seize the threads in NEW and wait for each to stop: 0, or -1. */
static int stop_new(struct procstop *s, const pid_t *new, size_t nnew,
		    unsigned timeout_ms)
{
	size_t first = s->n;
	uint64_t deadline;

	for (size_t k = 0; k < nnew; k++)
		if (seize(s, new[k]) < 0)
			return -1;
	deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (size_t i = first; i < s->n;) {
		pid_t tid = s->tids[i];
		int r = wait_one(s, i, deadline);

		if (r < 0) {
			char state = thread_state(s->pid, tid);

			return error("process %d: thread %d did not stop "
				     "within %u ms (state '%c'%s)",
				     (int)s->pid, (int)tid, timeout_ms,
				     state ? state : '?',
				     state == 'D' ? ": an uninterruptible "
						    "wait, on a disk or a "
						    "network file system?"
						  : "");
		}
		if (r > 0)
			i++;
	}
	return 0;
}

static int stop_all(struct procstop *s, unsigned timeout_ms)
{
	pid_t *new = NULL;
	size_t nnew = 0, alloc = 0;
	int rc = 0;

	for (unsigned round = 0; !rc; round++) {
		if (round == MAX_ROUNDS) {
			rc = error("process %d: threads keep starting faster "
				   "than they can be stopped", (int)s->pid);
			break;
		}
		if ((rc = list_new(s, &new, &nnew, &alloc)) < 0 || !nnew)
			break;
		rc = stop_new(s, new, nnew, timeout_ms);
	}
	free(new);
	if (!rc && !s->n)
		rc = error("process %d has exited", (int)s->pid);
	return rc;
}

int procstop_stop(struct procstop *s, pid_t pid, unsigned timeout_ms)
{
	long tracer;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	if (pid == getpid())
		return error("process %d is dmprof itself", (int)pid);
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return error("no process %d", (int)pid);
	if (procstop_exited(pid))
		return error("process %d has exited (a zombie its parent has "
			     "not waited for)", (int)pid);
	tracer = status_field(pid, "TracerPid");
	if (tracer > 0 && tracer != getpid())
		return refusal(pid, EPERM);
	if (stop_all(s, timeout_ms) < 0) {
		procstop_release(s);
		return -1;
	}
	s->t_stopped = now_ns();
	return 0;
}

void procstop_release(struct procstop *s)
{
	for (size_t i = 0; i < s->n; i++)
		ptrace(PTRACE_DETACH, s->tids[i], NULL,
		       (void *)(uintptr_t)s->sigs[i]);
	if (s->t_start)
		s->t_released = now_ns();
	free(s->tids);
	free(s->sigs);
	free(s->skipped);
	s->tids = s->skipped = NULL;
	s->sigs = NULL;
	s->n = s->alloc = s->nskipped = s->skipped_alloc = 0;
}

bool procstop_registers(const struct procstop *s, size_t i, uint64_t *sp,
			uint64_t *regs, size_t max, size_t *nregs)
{
	struct user_regs_struct r;
	struct iovec iov = { &r, sizeof(r) };
	size_t n = sizeof(r) / sizeof(uint64_t);

	if (ptrace(PTRACE_GETREGSET, s->tids[i], (void *)NT_PRSTATUS, &iov) < 0)
		return false;
#if defined(__x86_64__)
	*sp = r.rsp;
#elif defined(__aarch64__)
	*sp = r.sp;
#else
	return false;
#endif
	if (n > max)
		n = max;
	memcpy(regs, &r, n * sizeof(uint64_t));
	*nregs = n;
	return true;
}

double procstop_held_seconds(const struct procstop *s)
{
	uint64_t end = s->t_released ? s->t_released : now_ns();

	return s->t_start ? (double)(end - s->t_start) / 1e9 : 0;
}

double procstop_stopping_seconds(const struct procstop *s)
{
	return s->t_start && s->t_stopped
		       ? (double)(s->t_stopped - s->t_start) / 1e9
		       : 0;
}
