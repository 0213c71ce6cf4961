/*
 * Aggregation: one snapshot under one policy becomes one row of column
 * values.  Malloc lines and MMAP_LIST regions land in the columns their
 * rules pick; the rest are computed (dmprof-policy(5) gives the formulas).
 */
#ifndef DMPROF_AGGREGATE_H
#define DMPROF_AGGREGATE_H

#include <stdint.h>

#include "classify.h"
#include "dump.h"
#include "hashmap.h"

/* How many times each page frame is mapped: sorted by pfn, unique. */
struct pfn_count {
	uint64_t pfn;
	uint64_t count;
};

struct pfn_table {
	struct pfn_count *v;
	size_t n;
};

void pfn_table_free(struct pfn_table *t);
uint64_t pfn_table_count(const struct pfn_table *t, uint64_t pfn);

/*
 * Page frames of other processes ("shared first dumps"): for each process,
 * its snapshots' PFN counts, to tell private pages from shared ones.
 */
struct pfn_snapshot {
	double time;
	bool exiting;          /* Reason: Exiting */
	struct pfn_table pfns;
};

struct pfn_process {
	char *prefix;
	struct pfn_snapshot *snaps;
	size_t n;
};

struct sharing {
	struct pfn_process *procs;
	size_t nprocs;
};

/* Read every dump of each run in FIRST_DUMPS.  Returns 0 or -1. */
int sharing_load(struct sharing *sh, char **first_dumps, int n);
void sharing_free(struct sharing *sh);

/*
 * PFN counts of the other processes at time T: for each process, the
 * snapshot closest to T (within 3 s after it, or any before it unless that
 * process had exited), summed.  OUT is (re)initialized.
 */
void sharing_at(const struct sharing *sh, double t, struct pfn_table *out);

struct agg_stats {
	unsigned long tc_unused_clamped; /* snapshots where it was < 0 */
	unsigned long malloc_unused_clamped;
	int64_t hidden_no_bucket;        /* no-bucket bytes, no column */
	unsigned long no_kernel_view;    /* snapshots without Rss & co. */
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

/*
 * Compare GLOBAL_STATS with what MMAP_LIST adds up to and warn about each
 * row that differs (the original's sanity check).
 */
void aggregate_verify(const struct snapshot *snap);

#endif
