/*
 * Page sharing between processes: how many times each page frame is
 * mapped by the other processes of a group, at a given time.
 */
#ifndef DMPROF_SHARING_H
#define DMPROF_SHARING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
int sharing_load(struct sharing *sh, const char *const *first_dumps,
		 size_t n);
void sharing_free(struct sharing *sh);

/*
 * PFN counts of the other processes at time T: for each process, the
 * snapshot closest to T (within 3 s after it, or any before it unless that
 * process had exited), summed.  OUT is (re)initialized.
 */
void sharing_at(const struct sharing *sh, double t, struct pfn_table *out);

#endif
