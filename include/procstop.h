/*
 * Holding a live process still from outside, every thread of it, so that
 * what is read of its memory is one instant: ptrace's PTRACE_SEIZE and
 * PTRACE_INTERRUPT (no signal the program or its parent could see), and
 * PTRACE_DETACH to let it go.  A core file needs none of this: reading
 * (procimage.h) is kept apart from stopping.
 */
#ifndef DMPROF_PROCSTOP_H
#define DMPROF_PROCSTOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procstop {
	pid_t pid;
	pid_t *tids;  /* the threads held */
	int *sigs;    /* a signal each was stopped with, to give back */
	size_t n, alloc;
	pid_t *skipped; /* threads found dead (zombies): not held */
	size_t nskipped, skipped_alloc;
	/* CLOCK_MONOTONIC, ns: the first interrupt, all stopped, all let go */
	uint64_t t_start, t_stopped, t_released;
};

/*
 * Stop every thread of PID, listing /proc/PID/task again until no new
 * thread appears; a thread has TIMEOUT_MS to stop.  -1 after saying why
 * not, naming the fix where there is one (ptrace_scope, another user's
 * process, a process already traced, no such process, a process that
 * exits meanwhile); nothing is held then.
 */
int procstop_stop(struct procstop *s, pid_t pid, unsigned timeout_ms);

/*
 * Let every held thread go, giving back the signals they were stopped
 * with, and free what S holds.  Threads gone meanwhile are no error.
 */
void procstop_release(struct procstop *s);

/*
 * The registers of held thread I, where the architecture's are known
 * (x86-64, arm64): its stack pointer (the mapping it is in is the
 * thread's stack) and its general registers as words, at most MAX of
 * them into REGS, their number into *NREGS.
 */
bool procstop_registers(const struct procstop *s, size_t i, uint64_t *sp,
			uint64_t *regs, size_t max, size_t *nregs);

/* Has process PID exited: gone, its memory let go, or no thread of it
 * alive (a zombie)? */
bool procstop_exited(pid_t pid);

/* How long the process was held: from the first thread stopped to the
 * last let go (or to now while held), in seconds. */
double procstop_held_seconds(const struct procstop *s);
/* How long stopping every thread took, in seconds. */
double procstop_stopping_seconds(const struct procstop *s);

#endif
