/*
 * The recorder's locks (rec_mem.c): mutual exclusion under contention,
 * and waiters that sleep while the holder cannot run.  The holder is a
 * task of its own sharing this address space (clone(2) without
 * CLONE_THREAD, as the recorder's tracer is), so that SIGSTOP stops it
 * alone; the waiters are threads of this process, whose CPU time is read
 * from /proc/self/task/TID/stat while the holder stands still for a
 * second.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/recorder/rec.h"

static rec_lock lock = REC_LOCK_INIT;

/* ---- exclusion ---- */

#define THREADS 4
#define ROUNDS 200000

static long counter;

static void *add(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		rec_lock_take(&lock);
		counter++; /* (not atomic: the lock keeps it whole) */
		rec_lock_give(&lock);
	}
	return NULL;
}

Test(reclock, exclusion)
{
	pthread_t t[THREADS];

	counter = 0;
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, add, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(counter, (long)THREADS * ROUNDS);
	cr_assert(rec_lock_free(&lock));
}

/* ---- waiters sleep while the holder is stopped ---- */

#define WAITERS 2

static atomic_int held, release, acquired;
static pid_t waiter_tid[WAITERS];

static int holder(void *arg)
{
	(void)arg;
	/* (Gone with the test, should it fail while this one is stopped.) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	rec_lock_take(&lock);
	atomic_store(&held, 1);
	while (!atomic_load(&release))
		rec_relax();
	rec_lock_give(&lock);
	return 0;
}

static void *waiter(void *arg)
{
	int i = (int)(intptr_t)arg;

	waiter_tid[i] = (pid_t)syscall(SYS_gettid);
	rec_lock_take(&lock);
	atomic_fetch_add(&acquired, 1);
	rec_lock_give(&lock);
	return NULL;
}

/* CPU time of thread TID of this process, in clock ticks. */
static long cpu_ticks(pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	cr_assert(f, "cannot read %s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Past "(comm)": state is field 3, utime 14, stime 15. */
	p = strrchr(buf, ')');
	cr_assert(p);
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
				    "%*u %lu %lu", &ut, &st), 2);
	return (long)(ut + st);
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

Test(reclock, waiters_sleep_while_the_holder_is_stopped, .timeout = 30)
{
	const size_t stack_size = 64 * 1024;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t[WAITERS];
	long before[WAITERS], after[WAITERS], hz = sysconf(_SC_CLK_TCK);
	pid_t pid;
	int st, early;

	cr_assert(stack != MAP_FAILED);
	cr_assert(rec_lock_free(&lock));
	pid = clone(holder, stack + stack_size, CLONE_VM | SIGCHLD, NULL);
	cr_assert(pid > 0);
	while (!atomic_load(&held))
		nap_ms(1);
	for (int i = 0; i < WAITERS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, waiter,
					    (void *)(intptr_t)i), 0);
	nap_ms(100); /* (the waiters are past their spins) */
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	for (int i = 0; i < WAITERS; i++)
		before[i] = cpu_ticks(waiter_tid[i]);
	nap_ms(1000);
	for (int i = 0; i < WAITERS; i++)
		after[i] = cpu_ticks(waiter_tid[i]);
	early = atomic_load(&acquired);
	/* Let the holder go on before any check can end the test. */
	atomic_store(&release, 1);
	cr_assert_eq(kill(pid, SIGCONT), 0);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(early, 0, "a waiter got a held lock");
	for (int i = 0; i < WAITERS; i++) {
		long used = after[i] - before[i];

		cr_log_info("waiter %d: %ld ticks of CPU in the stopped "
			    "holder's second (%ld a second)", i, used, hz);
		/* Asleep: at most 5% of the second (a spinning waiter
		 * takes all of it, or half on a shared core). */
		cr_assert_leq(used * 20, hz, "waiter %d used %ld of %ld ticks "
					     "while the holder stood still",
			      i, used, hz);
	}
	cr_assert_eq(atomic_load(&acquired), WAITERS);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	cr_assert(rec_lock_free(&lock));
	munmap(stack, stack_size);
}
