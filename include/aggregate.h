/*
 * Aggregation: one snapshot under one policy becomes one row of column
 * values.  Malloc lines and MMAP_LIST regions land in the columns their
 * rules pick; the rest are computed (dmprof-policy(5) gives the formulas).
 */
#ifndef DMPROF_AGGREGATE_H
#define DMPROF_AGGREGATE_H

#include <stdint.h>

#include "classify.h"
#include "sharing.h"
#include "snapshot.h"

struct agg_stats {
	unsigned long tc_unused_clamped; /* snapshots where it was < 0 */
	unsigned long malloc_unused_clamped;
	int64_t hidden_no_bucket;        /* no-bucket bytes, no column */
	unsigned long no_kernel_view;    /* snapshots without Rss & co. */
	unsigned long no_pss;            /* with Rss, without Pss (dmprof
					    record without --pss) */
};

/* Values of every builtin, whether or not the policy lists it. */
struct agg_builtins {
	int64_t v[B_LAST + 1];
};

/*
 * Fill VALUES (one per column of C's policy) for SNAP; time columns hold 0
 * (the writers print them from the snapshot times).  GROUP is the other
 * processes' PFN counts, NULL when no other process was given: then page
 * sharing is known only from the dump's own map counts.  BUILTINS
 * may be NULL.  Returns 0, or -1 after an error (a pattern hit its match
 * limit, or the sizes add up to more than 64 bits hold).
 */
int aggregate_snapshot(struct classifier *c, const struct snapshot *snap,
		       const struct pfn_table *group, int64_t *values,
		       struct agg_builtins *builtins, struct agg_stats *stats);

/* What a snapshot's bytes are in, as expand and pprof go through them. */
enum item_kind {
	ITEM_MALLOC,           /* a stack line of a malloc bucket */
	ITEM_HOOKED,           /* a hooked region, or a profile's mmap line */
	ITEM_UNHOOKED,         /* an unhooked region */
	ITEM_LINE_NO_BUCKET,   /* a stack line of an unknown bucket */
	ITEM_REGION_NO_BUCKET, /* a hooked region of an unknown bucket */
};

/* One item, classified. */
struct item {
	enum item_kind kind;
	int col;                     /* the rules' column; -1: no bucket */
	const struct bucket *bucket; /* NULL: no bucket, or unhooked */
	uint64_t bucket_id;          /* of an unknown bucket */
	const struct vma *vma;       /* of a region (or vma_unknown) */
	const struct stack_line *line; /* of a stack line, else NULL */
	int64_t bytes;               /* committed */
	/* Its bucket's stack's id, where the snapshot noted it for a sink
	 * that asked (aggregate_items_by_stack_id); else BUCKET_KEY_NONE,
	 * and bucket->stack->id tells. */
	uint32_t stack_id;
};

/* Say that the sizes of SNAP overflow when added up; returns 1 (a status). */
int sizes_overflow(const struct snapshot *snap);

/*
 * Every item of SNAP, classified by C, to FN, which returns 0 to go on.
 * With BY_PAGE, a region whose pages' sharing is known (and may decide
 * their column, as in the aggregation; GROUP as there) comes as one item
 * per run of pages of one column; else whole (the original's expand and
 * pprof).  Returns 0, or -1 after a classification error or when FN
 * returned non-zero.
 */
int aggregate_items(struct classifier *c, const struct snapshot *snap,
		    const struct pfn_table *group, bool by_page,
		    int (*fn)(void *ctx, const struct item *it), void *ctx);
/*
 * The same for a FN that looks at a stack by its id only: where the
 * snapshot noted its lines' stack ids (snapshot.line_stack), items carry
 * them, and neither buckets nor stacks are fetched for FN.
 */
int aggregate_items_by_stack_id(struct classifier *c,
				const struct snapshot *snap,
				const struct pfn_table *group, bool by_page,
				int (*fn)(void *ctx, const struct item *it),
				void *ctx);

/*
 * Does column C of P count an item of KIND that the rules put in column
 * COL (-1: none, the bucket is unknown)?  A column rules assign counts
 * its own items; computed columns that sum items count those (no-bucket,
 * malloc-total, mmap-total, the *-log sums, tc-total); malloc-unused
 * counts the lines rules give it (free chunks), the rest of it being a
 * difference; the others (the GLOBAL_STATS rows, differences, the
 * kernel's view) count none, and column_sums_items() says so.
 */
bool column_counts(const struct policy *p, int c, enum item_kind kind,
		   int col);
bool column_sums_items(const struct policy *p, int c);

/*
 * Compare GLOBAL_STATS with what MMAP_LIST adds up to and warn about each
 * row that differs (the original's sanity check).
 */
void aggregate_verify(const struct snapshot *snap);

#endif
