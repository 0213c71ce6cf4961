/*
 * What changed between two snapshots, stack by stack: the bytes each
 * stack kept at A and at B, what it allocated and freed in between where
 * the format counts that, the blocks it had in use at A and at B where
 * the format counts those instead (dmprof snapshot's), and whether it is
 * a leak suspect: from A to B it never shrank and grew at more than half
 * the steps from a snapshot to the next.  A and B are two dumps of one
 * run (every dump between them is read) or of two runs of one program,
 * whose stacks are matched by their symbolized frames.  Only the stacks
 * of the components that partition the process count (as in top),
 * classified as csv classifies them.
 */
#ifndef DMPROF_CHANGE_H
#define DMPROF_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "classify.h"
#include "json_write.h"
#include "run.h"
#include "tally.h"

struct change {
	const struct model *m;    /* of ST */
	const struct stack *st;
	int col;                  /* its component at B (at A if gone) */
	int64_t a, b;             /* bytes kept at A, at B */
	int64_t allocs, frees;    /* blocks allocated, freed from A to B */
	int64_t allocated;        /* bytes allocated from A to B */
	int64_t blocks_a, blocks_b; /* blocks in use at A, at B */
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
	CHANGES_LIVE = 1 << 4,        /* blocks_a, blocks_b (both ends
					 count blocks in use) */
};

/* One end: a snapshot's path, time and every column's value. */
struct change_end {
	char *path;
	double time;
	bool instructions;             /* time is a count of them */
	int64_t *values;              /* by column, as csv's row */
	struct agg_builtins builtins;
	int64_t heap;                 /* bytes with stacks (as top's) */
	/* Blocks allocated and freed since the process started, where
	 * the format counts them (counted). */
	int64_t allocs, frees;
	bool counted;
	bool live;                    /* it counts blocks in use */
	/* A heap walked from outside (has_types): its blocks in use by
	 * type (blocktypes.h). */
	struct tally types;
	bool has_types;
};

/* The dump with the most bytes with stacks among those read. */
struct change_peak {
	char *path;
	double time;
	int64_t heap;
};

struct changes {
	struct change *v;             /* a stack each, in no order */
	size_t n, alloc;
	struct change_end a, b;
	unsigned has;
	size_t snapshots;             /* read, A and B included */
	struct change_peak peak;      /* one run: of the dumps read */
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
 * The same in steps, for a caller that reads the dumps itself (html,
 * while it builds its timeline): begin a walk of STEPS + 1 snapshots of
 * M, classified by CLS, from A to B (FORWARD: A comes first in the run);
 * add snapshot K (0: A, STEPS: B) in order, a snapshot that could not
 * be read left out; end, with RC the first error met (then C is
 * released).  end returns 0, or -1 if RC says so or A or B is missing.
 */
struct change_walk {
	struct changes *c;
	const struct model *m;
	struct classifier *cls;
	size_t steps;
	bool forward, count, alloc_bytes;
	struct pass *s;
	int64_t *a_bytes;
	int *a_col;
	struct step *step;
	size_t n;
};
void change_walk_begin(struct change_walk *w, struct changes *c,
		       const struct model *m, struct classifier *cls,
		       size_t steps, bool forward);
int change_walk_add(struct change_walk *w, size_t k,
		    const struct snapshot *snap);
int change_walk_end(struct change_walk *w, int rc);

/*
 * The first dump of run RA, classified by CA, against the first dump of
 * run RB, classified by CB (the same policy, loaded for each): stacks
 * are matched by the text of their frames.  Returns 0, or -1.
 */
int changes_across(struct changes *c, struct run *ra, struct classifier *ca,
		   struct run *rb, struct classifier *cb);
/*
 * Dump I of run R alone, classified by CLS, as an end (E, released by
 * change_end_free).  Returns 0, or -1 after printing why.
 */
int changes_end_at(struct change_end *e, struct run *r,
		   struct classifier *cls, size_t i);
/* The same of SNAP, read by the caller: its model M, classified by CLS. */
int changes_end_of(struct change_end *e, struct classifier *cls,
		   const struct model *m, const struct snapshot *snap);
void change_end_free(struct change_end *e);
void changes_free(struct changes *c);

/*
 * A run's shape, as heaptrack_print's closing lines give it: its peak,
 * what it still held before teardown and after it, the blocks it
 * allocated and freed.  Bytes are bytes with stacks, as top counts them.
 */
struct run_shape {
	size_t dumps;
	double start;            /* the first dump's time */
	bool instructions;       /* times count instructions (DHAT's) */
	struct change_peak peak;
	bool has_before;         /* the dump before teardown is known */
	int64_t before;
	bool has_after;          /* and one after it */
	int64_t after;           /* (or at the last dump) */
	bool at_exit;            /* the last dump is after teardown */
	int64_t allocs, frees;   /* since the start, at the last dump */
	bool counted;
};

/*
 * The shape of run R (every dump read, classified by CLS), whose teardown
 * is TD.  Returns 0, or -1 after printing why.
 */
int changes_shape(struct run_shape *sh, struct run *r,
		  struct classifier *cls, const struct run_teardown *td);
/*
 * The same from the changes C of a run from its first dump to the one
 * before teardown (TD's), and, if AFTER, its last dump after teardown.
 */
void changes_to_shape(struct run_shape *sh, const struct changes *c,
		      const struct change_end *after,
		      const struct run_teardown *td);
/*
 * Count E, a dump of the run read after the changes' B and before the
 * last (a dump during teardown), into SH: one more dump, and the peak if
 * it is one.
 */
void run_shape_note(struct run_shape *sh, const struct change_end *e);
/*
 * The same of dumps FROM to TO (not included) of run R, classified by
 * CLS, read one by one (empty ones left out).  Returns 0, or -1 after
 * printing why.
 */
int changes_shape_between(struct run_shape *sh, struct run *r,
			  struct classifier *cls, size_t from, size_t to);
/* One line, for people: "the run: ..."; EXACT: sizes in bytes. */
void run_shape_text(struct strbuf *sb, const struct run_shape *sh,
		    bool exact);
/* As a JSON object: dumps, peak (dump, time, bytes), before_teardown,
 * after_teardown (or last), allocs, frees where known. */
void run_shape_json(struct json_writer *w, const struct run_shape *sh);
void run_shape_free(struct run_shape *sh);

#endif
