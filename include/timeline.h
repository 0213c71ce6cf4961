/*
 * The timeline: every snapshot of a run under every selected policy, as
 * rows of column values.  Snapshots are read one at a time and folded into
 * the rows, so memory grows with buckets, not with snapshots.  Shared by
 * list, csv and json.
 */
#ifndef DMPROF_TIMELINE_H
#define DMPROF_TIMELINE_H

#include <stdint.h>

#include "aggregate.h"
#include "policyset.h"
#include "run.h"

struct tl_snapshot {
	char *path;
	unsigned long counter;
	double time;
};

struct timeline {
	struct run run;
	struct policy_set set;
	struct sharing sharing;
	struct tl_snapshot *snaps;
	size_t n;
	int64_t **rows;              /* [policy][snapshot * ncols + column] */
	struct agg_builtins **builtins; /* [policy][snapshot] */
	/* [policy]: each bucket's column, kept for a later pass over the
	 * snapshots (the html page's) so that it classifies none again. */
	struct classifier *cls;
	bool skipped_errors;         /* a later dump could not be read */
};

struct timeline_options {
	const char *policy;  /* -p, or NULL for the defaults */
	/* The run: one dump (and every later one of its run), or several
	 * of one run (exactly those). */
	const char *const *dumps;
	size_t ndumps;
	/* Other processes' first dumps, for page sharing. */
	const char *const *shared;
	size_t nshared;
	/* How to symbolize; want_source is set if a policy needs lines. */
	struct sym_options *sym;
	/* How to read the dumps (NULL: the defaults). */
	const struct read_options *read;
	/* Before snapshot I of N is read, and once after the last (I == N);
	 * may be NULL. */
	void (*progress)(size_t i, size_t n, const char *path);
	/* With each snapshot read, dump I of TL's run, once the policies
	 * summed it (may be NULL): a caller's pass over the same dumps,
	 * read once.  A negative return ends the build with an error. */
	int (*each)(void *ctx, struct timeline *tl, size_t i,
		    const struct snapshot *snap);
	void *ctx;
};

/*
 * Build the timeline of OPT's run.  Returns 0, or -1 after printing why.
 * A later dump that cannot be read is skipped with a message and sets
 * skipped_errors.
 */
int timeline_build(struct timeline *tl, const struct timeline_options *opt);
void timeline_free(struct timeline *tl);

/* The value of time column COL (seconds, minutes or hours). */
double timeline_time_value(const struct timeline *tl, size_t i,
			   enum builtin b);

#endif
