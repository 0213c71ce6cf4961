/*
 * What changed between two snapshots, stack by stack: the bytes each
 * stack kept at A and at B, what it allocated and freed in between where
 * the format counts that, and whether it is a leak suspect: from A to B
 * it never shrank and grew at more than half the steps from a snapshot
 * to the next.  A and B are two dumps of one run (every dump between them
 * is read) or of two runs of one program, whose stacks are matched by
 * their symbolized frames.  Only the stacks of the components that partition
 * the process count (as in top), classified as csv classifies them.
 */
#ifndef DMPROF_CHANGE_H
#define DMPROF_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "classify.h"
#include "run.h"

struct change {
	const struct model *m;    /* of ST */
	const struct stack *st;
	int col;                  /* its component at B (at A if gone) */
	int64_t a, b;             /* bytes kept at A, at B */
	int64_t allocs, frees;    /* blocks allocated, freed from A to B */
	int64_t allocated;        /* bytes allocated from A to B */
	bool suspect;             /* a leak suspect: from A to B it never
				     shrank, and grew at more than half
				     the steps from one snapshot to the
				     next */
};

/* What a change set knows (changes.has). */
enum {
	CHANGES_COUNTS = 1 << 0,      /* allocs and frees (one run) */
	CHANGES_ALLOC_BYTES = 1 << 1, /* allocated, so freed bytes too */
	CHANGES_SERIES = 1 << 2,      /* suspect (3 snapshots or more) */
	CHANGES_RUN = 1 << 3,         /* A and B are of one run */
};

/* One end: a snapshot's path, time and every column's value. */
struct change_end {
	char *path;
	double time;
	bool instructions;             /* time is a count of them */
	int64_t *values;              /* by column, as csv's row */
	struct agg_builtins builtins;
};

struct changes {
	struct change *v;             /* a stack each, in no order */
	size_t n, alloc;
	struct change_end a, b;
	unsigned has;
	size_t snapshots;             /* read, A and B included */
	size_t shared;                /* stacks with bytes at both ends */
	size_t stacks_a, stacks_b;    /* stacks with bytes at A, at B */
};

/*
 * Dumps IA and IB of run R (either may come first), classified by CLS,
 * and every dump between them.  Returns 0, or -1 after printing why.
 */
int changes_in_run(struct changes *c, struct run *r, struct classifier *cls,
		   size_t ia, size_t ib);
/*
 * The first dump of run RA, classified by CA, against the first dump of
 * run RB, classified by CB (the same policy, loaded for each): stacks
 * are matched by the text of their frames.  Returns 0, or -1.
 */
int changes_across(struct changes *c, struct run *ra, struct classifier *ca,
		   struct run *rb, struct classifier *cb);
void changes_free(struct changes *c);

#endif
