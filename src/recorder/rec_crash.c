/*
 * The last dump before a crash.  On a fatal signal (SIGSEGV, SIGBUS,
 * SIGABRT, SIGFPE, SIGILL) whose action is the default one, the recorder
 * writes one more dump, its Reason "crash: SIGSEGV", then lets the signal
 * take its course: the default action again, the same exit status and the
 * same core as without the recorder.
 *
 * The recorder's handler stays installed whatever the program installs:
 * sigaction() and signal() of those signals are the recorder's, which
 * keep the program's action aside and give it back as the old one, and
 * the handler calls the program's handler where it has one (its flags
 * and mask as it asked).  A program's crash handler that ends the way
 * most do, putting back the action it found and raising the signal again
 * (Python's faulthandler does), comes back to the default action: the
 * dump is taken then, after its own report.  One that handles the signal
 * and returns (a runtime's own use of SIGSEGV: V8's WebAssembly traps, the
 * JVM's) costs no dump; one that exits without raising leaves none.
 *
 * The dump is taken only where that is safe: not when the crash is in the
 * recorder itself (this thread inside a hook, maybe holding its locks),
 * and not after waiting more than a little for another thread's dump;
 * then it is skipped and said.  (Not in the build for ThreadSanitizer,
 * whose runtime handles these signals its own way.)
 */
#include "rec.h"

#ifndef REC_TSAN
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static const int fatal[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
#define NFATAL (sizeof(fatal) / sizeof(fatal[0]))

static const char *const fatal_name[] = { "SIGSEGV", "SIGBUS", "SIGABRT",
					  "SIGFPE", "SIGILL" };

static bool on;                     /* the handlers are installed */
static struct sigaction program[NFATAL]; /* the program's actions */
static atomic_bool crashed;         /* the dump was taken (or tried) */

static int (*real_sigaction)(int, const struct sigaction *,
			     struct sigaction *);
/* glibc's own, under the name it exports for this. */
int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static int slot_of(int sig)
{
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal[i] == sig)
			return (int)i;
	return -1;
}

static int call_sigaction(int sig, const struct sigaction *act,
			  struct sigaction *old)
{
	if (!real_sigaction)
		real_sigaction = (int (*)(int, const struct sigaction *,
					  struct sigaction *))
			dlsym(RTLD_NEXT, "sigaction");
	return real_sigaction ? real_sigaction(sig, act, old)
			      : __sigaction(sig, act, old);
}

/* The default action, for the signal to take its course. */
static void die_as_without(int sig, const siginfo_t *info)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	call_sigaction(sig, &dfl, NULL);
	/*
	 * A fault (the kernel's) happens again when the handler returns,
	 * now to the default action; a signal that was sent is sent again
	 * (blocked until then).
	 */
	if (info->si_code <= 0 || sig == SIGABRT)
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
	int k = slot_of(sig), saved = errno;
	struct sigaction *p = k >= 0 ? &program[k] : NULL;

	if (p && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
		/* The program's handler, as it asked for it. */
		sigset_t mask, old;
		struct sigaction act = *p;

		mask = act.sa_mask;
		if (!(act.sa_flags & SA_NODEFER))
			sigaddset(&mask, sig);
		pthread_sigmask(SIG_BLOCK, &mask, &old);
		if (act.sa_flags & SA_RESETHAND) {
			memset(p, 0, sizeof(*p));
			p->sa_handler = SIG_DFL;
		}
		if (act.sa_flags & SA_SIGINFO)
			act.sa_sigaction(sig, info, uctx);
		else
			act.sa_handler(sig);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		errno = saved;
		return;
	}
	/* (SIG_IGN does not hold for a fault: the kernel kills anyway.) */
	if (!atomic_exchange(&crashed, true))
		rec_dump_crash(fatal_name[k >= 0 ? k : 0]);
	die_as_without(sig, info);
	errno = saved;
}

void rec_crash_init(void)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = on_fatal;
	act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&act.sa_mask);
	for (size_t i = 0; i < NFATAL; i++) {
		/* (What was there before the recorder is the program's.) */
		if (call_sigaction(fatal[i], NULL, &program[i]) != 0)
			return;
	}
	for (size_t i = 0; i < NFATAL; i++)
		call_sigaction(fatal[i], &act, NULL);
	on = true;
}

EXPORT int sigaction(int sig, const struct sigaction *act,
		     struct sigaction *old)
{
	int k = on ? slot_of(sig) : -1;

	if (k < 0)
		return call_sigaction(sig, act, old);
	/* Kept aside: the recorder's handler calls it. */
	if (old)
		*old = program[k];
	if (act)
		program[k] = *act;
	return 0;
}

/* glibc's signal(): BSD semantics, through sigaction (the one above). */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	return sigaction(sig, &act, &old) < 0 ? SIG_ERR : old.sa_handler;
}
#else
void rec_crash_init(void)
{
}
#endif
