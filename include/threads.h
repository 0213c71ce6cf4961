/*
 * Work on the other cores (src/core/threads.c), the one way dmprof runs
 * any: how many threads a run wants; a task (one piece of work on a
 * thread of its own, joined later: reading the next dump, the second
 * part of a big section, inflating a section); a pool (N shares of one
 * piece of work, one on this thread, the others on threads of their
 * own: classification); the hand-off (a producer thread and this one
 * consuming its blocks in order: the readers' two-core pipelines).
 * Each falls back to running the work on this thread when one thread is
 * wanted or none can be had, and what the work says on another thread
 * is said where it would have been said on this one.
 */
#ifndef DMPROF_THREADS_H
#define DMPROF_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* Threads worth running: online cores, or DMPROF_THREADS (1 to 16). */
size_t threads_wanted(void);

/* ---- a task ---- */

struct task {
	pthread_t tid;
	bool running;         /* started, not joined yet */
	bool capture;         /* what it says is kept in SAID */
	void (*fn)(void *arg);
	void *arg;
	struct strbuf said;
};

/*
 * Start FN(ARG) on a thread of its own, when more than one thread is
 * wanted and one can be had: true.  False: nothing started, the caller
 * does the work itself (or does without it).  CAPTURE: what FN says is
 * kept in T->said, for the caller to say (report_replay) or drop once
 * it is joined; else it is said as it comes.
 */
bool task_start(struct task *t, void (*fn)(void *arg), void *arg,
		bool capture);
/* Wait for T, if it was started.  (T->said stays the caller's.) */
void task_join(struct task *t);
void task_release(struct task *t);

/* ---- a count to wait on ---- */

/*
 * How far one thread's work has got, for another that waits on it (a
 * batch's answers, read while the later ones are written).  Raising it
 * is two plain atomic operations unless someone waits.  Only one thread
 * waits at a time.
 */
struct progress {
	_Atomic size_t done;
	_Atomic bool waiting;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

void progress_init(struct progress *p);
void progress_free(struct progress *p);
/* DONE is done (and what was written before it is there to read); 0
 * starts again. */
void progress_set(struct progress *p, size_t done);
/* Wait until N is done. */
void progress_wait(struct progress *p, size_t n);

/* ---- a pool ---- */

/*
 * FN(CTX, I, HERE) for each I below N (at most 16): I = 0 on this
 * thread, the others on threads of their own, and those that could not
 * be started on this thread too, after I = 0 (HERE says it ran on this
 * thread).  Returns when all are done.
 */
void pool_run(size_t n, void (*fn)(void *ctx, size_t i, bool here),
	      void *ctx);

/* ---- the hand-off ---- */

/*
 * A hand-off between two threads: one produces blocks, the other
 * consumes them, in order, through a ring of a few slots.  The blocks
 * are the caller's (a slot is an index into its own array of them, each
 * filled in place and used again once consumed), so that any kind of
 * block goes through and none is copied or allocated per hand-off.
 */

struct handoff;

/*
 * Run PRODUCE(H, CTX) on a thread of its own while CONSUME(CTX, SLOT)
 * takes here, in order, the blocks it puts; NSLOTS of them may be full
 * at once.  CONSUME returns 0 to go on, anything else to take no more:
 * the producer is then stopped (see handoff_slot) and waited for.  What
 * the producer says (its diagnostics) is said here, in order with the
 * rest: after the block it was filling is consumed, or, said after its
 * last block, once it has returned (nothing, if the consumer stopped).
 * With one thread wanted (see threads_wanted) or none to be had, PRODUCE
 * runs on this thread and each block is consumed as it is put.  Returns
 * what CONSUME stopped with, else what PRODUCE returned.  (Not from a
 * thread whose diagnostics are kept: see report_capture.)
 */
int handoff_run(size_t nslots, int (*produce)(struct handoff *h, void *ctx),
		int (*consume)(void *ctx, size_t slot), void *ctx);

/*
 * The producer's: the slot to fill next, once the consumer is done with
 * it; SIZE_MAX when the consumer takes no more (the producer should then
 * return).
 */
size_t handoff_slot(struct handoff *h);
/* The slot handoff_slot gave is full: the consumer's.  False when the
 * consumer takes no more. */
bool handoff_put(struct handoff *h);

#endif
