/*
 * Stopping the process for a dump, so that a dump is one instant: the
 * blocks, the arenas, the pages and the kernel's Rss all read while no
 * thread of the program runs.
 *
 * The dumping thread (D) clones a tracer: a task that shares the process's
 * memory, files and credentials but is not one of its threads (no
 * CLONE_THREAD, no exit signal, so the program's wait() never meets it).
 * The tracer seizes every other thread with ptrace and interrupts it
 * (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal is sent, the program sees
 * nothing), lists the threads again until no new one appears, runs the
 * dump's reading while they stand still, and lets them go.  D waits for
 * it to end (wait4) meanwhile; the tracer shares its thread-local storage
 * (errno), which D does not touch while it waits.
 *
 * A thread stopped inside the recorder may hold one of its locks; then
 * the tracer lets everyone go at once, and D tries again a little later.
 * Where ptrace is not allowed (a process already traced, a seccomp
 * filter, Yama's strictest settings, a container without it), or a thread
 * does not stop in time (an uninterruptible wait), nothing is stopped and
 * the caller reads the process running, as before, and says so.
 */
#include "rec.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * glibc's clone, under the name a sanitizer's runtime does not intercept:
 * ThreadSanitizer's clone() takes the child for a child of fork() (its
 * state, in the memory both share, then says the process forked), and
 * hands it its function on the parent's stack, which is gone by then.
 */
extern int __clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);

#define TRACER_STACK (256 * 1024)
/* How long a thread may take to stop, and attempts while a lock is held. */
#define STOP_DEADLINE_NS (200 * 1000 * 1000L)
#define BUSY_TRIES 50

struct tracee {
	pid_t tid;
	bool stopped;
	bool gone;
};

struct stop {
	pid_t tgid, dumper;         /* the process, and D */
	void (*fn)(void *);
	void *arg;
	atomic_int go;              /* futex word: the tracer may start */
	const char *why;            /* set when FN did not run */
	bool busy;                  /* a recorder lock was held: try again */
	bool ran;
	struct rec_buf tids;        /* struct tracee */
	size_t counted, added;      /* (each_thread's callbacks) */
	double stopped_for;         /* seconds the threads stood still */
	unsigned held;              /* how many threads stood still */
};

static char *tracer_stack;

/* Not seen by ThreadSanitizer's runtime: see run_tracer(). */
#ifdef REC_TSAN
#define NO_TSAN __attribute__((no_sanitize("thread"), noinline))
#else
#define NO_TSAN
#endif

NO_TSAN static long futex(atomic_int *word, int op, int val, const struct timespec *t)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, t, NULL,
		       0);
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	syscall(SYS_nanosleep, &ts, NULL);
}

/* (Raw, as the tracer's every call: see rec_raw_open in rec.h.) */
static long trace(int request, pid_t tid, unsigned long data)
{
	return syscall(SYS_ptrace, request, tid, NULL, data);
}

static struct tracee *tracees(struct stop *s, size_t *n)
{
	*n = s->tids.len / sizeof(struct tracee);
	return (struct tracee *)s->tids.p;
}

static bool known(struct stop *s, pid_t tid)
{
	size_t n;
	struct tracee *t = tracees(s, &n);

	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return true;
	return false;
}

/* "/proc/N" and then SUFFIX into PATH, without stdio. */
static void proc_path(char *path, pid_t n, const char *suffix)
{
	char num[16];
	int k = sizeof(num);

	do
		num[--k] = (char)('0' + n % 10);
	while ((n /= 10) && k);
	memcpy(path, "/proc/", 6);
	memcpy(path + 6, num + k, sizeof(num) - (size_t)k);
	strcpy(path + 6 + sizeof(num) - (size_t)k, suffix);
}

/* The first bytes of /proc/TID/FILE into BUF (NUL-terminated); false if
 * it cannot be read.  (A thread's id names it under /proc too.) */
static bool read_proc(pid_t tid, const char *file, char *buf, size_t size)
{
	char path[64];
	int fd;
	ssize_t n;

	proc_path(path, tid, file);
	fd = rec_raw_open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? rec_raw_read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		rec_raw_close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

/* Does another tracer hold thread TID?  (Its status says TracerPid.) */
static bool traced(pid_t tid)
{
	char buf[2048];
	const char *p;

	if (!read_proc(tid, "/status", buf, sizeof(buf)) ||
	    !(p = strstr(buf, "TracerPid:")))
		return false;
	for (p += 10; *p == ' ' || *p == '\t'; p++)
		;
	return *p >= '1' && *p <= '9';
}

/* Has thread TID ended, but for its entry (a zombie: a main thread that
 * called pthread_exit)?  Its stat's state, after the name, says. */
static bool ended(pid_t tid)
{
	char buf[512];
	const char *p;

	if (!read_proc(tid, "/stat", buf, sizeof(buf)) ||
	    !(p = strrchr(buf, ')')))
		return false;
	return p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/*
 * Call FN(S, TID) for each thread of the process but the dumping one,
 * until it returns non-zero (that value is returned); -1 (S->why set)
 * when the threads cannot be listed.
 */
static int each_thread(struct stop *s, int (*fn)(struct stop *, pid_t))
{
	char path[64], buf[4096];
	int fd, rc = 0;
	long n;

	proc_path(path, s->tgid, "/task");
	fd = rec_raw_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		s->why = "cannot list the process's threads";
		return -1;
	}
	while (!rc && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; !rc && off < n;) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			unsigned short reclen;
			const char *name = buf + off + 19;
			pid_t tid = 0;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (*name < '0' || *name > '9')
				continue;
			for (; *name >= '0' && *name <= '9'; name++)
				tid = tid * 10 + (*name - '0');
			if (tid != s->dumper)
				rc = fn(s, tid);
		}
	rec_raw_close(fd);
	return rc;
}

static int count_one(struct stop *s, pid_t tid)
{
	(void)tid;
	s->counted++;
	return 0;
}

/* How many threads the process has (but the dumping one), about. */
static size_t count_threads(struct stop *s)
{
	s->counted = 0;
	each_thread(s, count_one);
	return s->counted;
}

/* Seize and interrupt TID, if not yet: 0, or -1 (S->why set). */
static int seize_one(struct stop *s, pid_t tid)
{
	struct tracee t;

	if (known(s, tid))
		return 0;
	if (trace(PTRACE_SEIZE, tid, 0) < 0) {
		if (errno == ESRCH || (errno == EPERM && ended(tid)))
			return 0; /* (it ended) */
		s->why = errno != EPERM ? "ptrace failed"
			 : traced(tid)	? "the program is traced already (a "
					  "debugger, strace?)"
					: "ptrace is not allowed here";
		return -1;
	}
	/* (The room was made before any thread stood still.) */
	if (s->tids.cap - s->tids.len < sizeof(t)) {
		trace(PTRACE_DETACH, tid, 0);
		s->why = "threads kept starting";
		return -1;
	}
	t.tid = tid;
	t.stopped = t.gone = false;
	rec_buf_add(&s->tids, &t, sizeof(t));
	s->added++;
	if (trace(PTRACE_INTERRUPT, tid, 0) < 0 && errno != ESRCH) {
		s->why = "ptrace failed";
		return -1;
	}
	return 0;
}

/* Seize every thread of the process not seized yet; how many were new,
 * or -1 (S->why set). */
static int seize_new(struct stop *s)
{
	s->added = 0;
	return each_thread(s, seize_one) < 0 ? -1 : (int)s->added;
}

/* Wait until every seized thread stands still (or has ended). */
static bool wait_stopped(struct stop *s)
{
	double deadline = seconds() + STOP_DEADLINE_NS / 1e9;

	for (;;) {
		size_t n, waiting = 0;
		struct tracee *t = tracees(s, &n);

		for (size_t i = 0; i < n; i++) {
			int st;
			pid_t r;

			if (t[i].stopped || t[i].gone)
				continue;
			r = (pid_t)syscall(SYS_wait4, t[i].tid, &st,
					   __WALL | WNOHANG, NULL);
			if (r == 0 || (r < 0 && errno == EINTR)) {
				waiting++;
				continue;
			}
			if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
				t[i].gone = true;
				continue;
			}
			if (!WIFSTOPPED(st))
				continue;
			if (st >> 16 == PTRACE_EVENT_STOP) {
				t[i].stopped = true;
				continue;
			}
			/* A signal on its way to it: let it go on its way,
			 * then stop the thread again. */
			trace(PTRACE_CONT, t[i].tid, (unsigned long)WSTOPSIG(st));
			trace(PTRACE_INTERRUPT, t[i].tid, 0);
			waiting++;
		}
		if (!waiting)
			return true;
		if (seconds() > deadline) {
			s->why = "a thread did not stop in time (an "
				 "uninterruptible wait?)";
			return false;
		}
		nap_us(50);
	}
}

static void release_all(struct stop *s)
{
	size_t n;
	struct tracee *t = tracees(s, &n);

	/*
	 * The stopped ones; a thread not stopped yet may be on its way to
	 * a signal-delivery-stop whose signal a detach would drop: the
	 * kernel lets it go with its signal when the tracer ends.
	 */
	for (size_t i = 0; i < n; i++)
		if (t[i].stopped && !t[i].gone)
			trace(PTRACE_DETACH, t[i].tid, 0);
	rec_buf_free(&s->tids);
}

/* No lock of the recorder is held (every other thread stands still). */
static bool locks_free(void)
{
	return rec_mem_locks_free() && rec_table_locks_free() &&
	       rec_count_locks_free() && rec_hooks_locks_free();
}

/* How many threads stand still now. */
static unsigned standing(struct stop *s)
{
	size_t n;
	struct tracee *t = tracees(s, &n);
	unsigned held = 0;

	for (size_t i = 0; i < n; i++)
		held += t[i].stopped && !t[i].gone;
	return held;
}

static void trace_all(struct stop *s)
{
	int rounds = 0, added;
	double t0;

	/*
	 * If D goes, its process is going: nothing is left to stop (and
	 * if it went already, the tracer has a new parent).  Out of the
	 * program's process group, no terminal signal is meant for it.
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != s->tgid)
		return;
	setpgid(0, 0);
	/* Room for every thread, before any stands still: growing the
	 * list takes a lock a stopped thread might hold. */
	if (!rec_buf_reserve(&s->tids, (count_threads(s) * 2 + 64) *
					       sizeof(struct tracee))) {
		s->why = "out of memory";
		goto out;
	}
	/* Seize, stop, and again for threads started meanwhile. */
	do {
		added = seize_new(s);
		if (added < 0 || !wait_stopped(s))
			goto out;
	} while (added > 0 && ++rounds < 64);
	if (added > 0) {
		s->why = "threads kept starting";
		goto out;
	}
	t0 = seconds();
	if (!locks_free()) {
		s->busy = true;
		goto out;
	}
	s->held = standing(s);
	s->fn(s->arg);
	s->ran = true;
	s->stopped_for = seconds() - t0;
out:
	release_all(s);
}

/*
 * The hand-over between D and the tracer.  In the build for
 * ThreadSanitizer both run in the runtime's state of D (the tracer shares
 * its thread-local storage), which is not made for two tasks at once: an
 * atomic operation, a function's entry or an interceptor in one, while the
 * other sets its ignore flags or pushes its shadow stack, loses the
 * other's update (seen: the tracer's reads reported as races, then a
 * report that died in the tracer with the runtime's registry lock and a
 * recorder lock held, and every thread waiting on them).  So the state
 * has one user at a time: until D says go, the tracer runs only code the
 * runtime does not see (NO_TSAN: not instrumented); from then on D runs
 * only such code, in raw system calls, until the tracer has ended.
 */
NO_TSAN static int tracer(void *p)
{
	struct stop *s = p;

	while (!atomic_load(&s->go))
		futex(&s->go, FUTEX_WAIT, 0, NULL);
#ifdef REC_TSAN
	/*
	 * The runtime takes a lock of its own for each atomic operation on
	 * a variable (and elsewhere), which a stopped thread may hold: the
	 * tracer's reads, writes and synchronization are not the runtime's
	 * to see (the stop orders them, which it cannot know of).
	 */
	AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
	AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
	AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
	trace_all(p);
#ifdef REC_TSAN
	AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
	AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
	AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
#endif
	return 0;
}

/* D's part: let the tracer go, and wait until it has ended. */
NO_TSAN static void run_tracer(struct stop *s, pid_t pid, bool yama)
{
	int st;

	/* Yama's ptrace_scope 1: this process lets its tracer in (and
	 * forgets whom it let in before: there is no asking). */
	if (yama)
		syscall(SYS_prctl, PR_SET_PTRACER, pid, 0, 0, 0);
	atomic_store(&s->go, 1);
	futex(&s->go, FUTEX_WAKE, 1, NULL);
	while (syscall(SYS_wait4, pid, &st, __WALL, NULL) < 0 && errno == EINTR)
		;
	if (yama)
		syscall(SYS_prctl, PR_SET_PTRACER, 0, 0, 0, 0);
}

/* Yama's ptrace_scope (0 without Yama). */
static int yama_scope(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/yama/ptrace_scope",
		      O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	return c - '0';
}

/*
 * One attempt: clone the tracer, let it work, reap it.  The tracer runs
 * with every signal blocked (it inherits this thread's mask: no handler
 * of the program runs in it, and this thread's errno stays its own), and
 * is waited for with waitpid(), which returns however it ends.
 */
static bool attempt(struct stop *s)
{
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED;
	bool yama = yama_scope() == 1;
	sigset_t all, old;
	pid_t pid;

	atomic_store(&s->go, 0);
	s->why = NULL;
	s->busy = s->ran = false;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = __clone(tracer, tracer_stack + TRACER_STACK, flags, s);
	if (pid < 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		s->why = "cannot start a tracer";
		return false;
	}
	run_tracer(s, pid, yama);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->ran && !s->why && !s->busy)
		s->why = "the tracer ended early";
	return s->ran;
}

/*
 * Is the dumping thread the program's only one (the recorder's dump
 * thread aside, which changes nothing of the program's and waits for the
 * dump lock held now)?  Then nothing else runs: no tracer is needed (a
 * clone, a seize and an interrupt, half a millisecond of a short
 * process's first dump: gcc's as and cc1 under make).  No other thread
 * can appear meanwhile: only this one could start it, and it runs no
 * handler of the program's while its signals are blocked (run_alone).
 */
static int other_thread(struct stop *s, pid_t tid)
{
	(void)s;
	return tid != atomic_load(&rec_dump_thread);
}

static bool alone(struct stop *s)
{
	return each_thread(s, other_thread) == 0;
}

/* FN on this thread alone, every signal blocked: how long it took. */
static double run_alone(struct stop *s)
{
	sigset_t all, old;
	double t0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	t0 = seconds();
	s->fn(s->arg);
	t0 = seconds() - t0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return t0;
}

/*
 * Is the program run by Valgrind (which preloads its core into it)?  It
 * runs one thread at a time under a lock of its own, and runs the tracer,
 * a clone sharing the memory, as one more of its threads, that waits for
 * that lock too: a thread stopped while it held it would stop the tracer,
 * and the program, for ever (seen with callgrind on a busy Python
 * program).
 */
static bool under_valgrind(void)
{
	static int known = -1;

	if (known < 0) {
		const char *pre = getenv("LD_PRELOAD");

		known = pre && strstr(pre, "/vgpreload_core-") != NULL;
	}
	return known;
}

bool rec_stop_world(void (*fn)(void *), void *arg, const char **why,
		    double *stopped_for, unsigned *held)
{
	static struct stop s;
	int saved = errno;
	bool ok = false;

	/* A process that made itself not dumpable keeps others out of
	 * its memory: a tracer would need it dumpable for a while. */
	if (prctl(PR_GET_DUMPABLE) != 1) {
		*why = "the program is not dumpable (set-user-ID, or "
		       "PR_SET_DUMPABLE)";
		return false;
	}
	s.tgid = getpid();
	s.dumper = (pid_t)syscall(SYS_gettid);
	s.fn = fn;
	s.arg = arg;
	rec_dumper_known();
	*held = 0;
	if (alone(&s)) {
		*stopped_for = run_alone(&s);
		errno = saved;
		return true;
	}
	if (under_valgrind()) {
		*why = "run by Valgrind, whose lock a stopped thread could "
		       "hold";
		return false;
	}
	if (!tracer_stack) {
		tracer_stack = rec_alloc(TRACER_STACK);
		if (!tracer_stack) {
			*why = "out of memory";
			return false;
		}
		/* Resident before any instant it is used in. */
		memset(tracer_stack, 0, TRACER_STACK);
	}
	for (int i = 0; i < BUSY_TRIES && !ok; i++) {
		ok = attempt(&s);
		if (ok || !s.busy)
			break;
		nap_us(200); /* (a thread was in the recorder) */
	}
	if (!ok)
		*why = s.busy ? "the recorder stayed busy" : s.why;
	*stopped_for = ok ? s.stopped_for : 0;
	*held = ok ? s.held : 0;
	errno = saved;
	return ok;
}
