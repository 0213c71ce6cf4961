/*
 * A hand-off between two threads (src/core/handoff.c): one produces
 * blocks, the other consumes them, in order, through a ring of a few
 * slots.  The blocks are the caller's (a slot is an index into its own
 * array of them, each filled in place and used again once consumed), so
 * that any kind of block goes through and none is copied or allocated
 * per hand-off.
 */
#ifndef DMPROF_HANDOFF_H
#define DMPROF_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>

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
