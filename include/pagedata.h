/*
 * The data behind dmprof html's page, as one JSON object: every
 * snapshot's components under each policy (the components that partition
 * the process, as top shows them), those components as top --tree's tree
 * of their names (comptree.h) with every node's bytes at every snapshot,
 * and, at a few snapshots (the first, the peak, the last and some
 * between), each component's largest stacks with their bytes at every
 * one of those snapshots, so that the page can show them, draw their
 * flame graph and diff two of those snapshots exactly.  What a component holds beyond its kept stacks is its
 * "other".  Classified as csv classifies, so the numbers add up to
 * csv's.  First, the answer, as top and diff give it, for the policy
 * named first: the run's shape and its peak (top's: the dump with the
 * most bytes in use with stacks), the owners there as top ranks them,
 * what grew up to the last dump before teardown (leak suspects marked),
 * what teardown freed; the snapshot where the components' total is
 * highest, where that is another.
 */
#ifndef DMPROF_PAGEDATA_H
#define DMPROF_PAGEDATA_H

#include <stddef.h>

#include "change.h"
#include "owner.h"
#include "timeline.h"

struct tally;

struct pagedata_options {
	size_t stacks;     /* kept per component at each of those snapshots */
	size_t snapshots;  /* how many snapshots keep stacks, at most */
	const char *title;
	const struct owners *owners; /* who owns a stack's bytes */
	/* Where the owners at the peak count the allocator wrappers they
	 * passed over (tally.h), or NULL. */
	struct tally *passed;
	/* Where the run's teardown is, and what grew from its first dump
	 * to the last before teardown (else its last) under the policy
	 * named first: html walks them while the timeline reads the dumps;
	 * NULL when it could not (then the page has no growth). */
	const struct run_teardown *td;
	const struct changes *grew;
	/* The run's shape as diff FIRST has it (its peak: the dump with the
	 * most bytes in use with stacks, top's and diff's), or NULL: then
	 * the peak is where the components' total is highest. */
	const struct run_shape *shape;
};

/*
 * Append the data of TL (built, its run still open: the kept snapshots
 * are read again) to OUT.  Returns 0, or -1 after printing why.
 */
int pagedata_write(struct strbuf *out, struct timeline *tl,
	      const struct pagedata_options *opt);

#endif
