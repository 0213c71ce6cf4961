/*
 * Series discovery: from the first dump of a run, find the rest of it and
 * its companion files (.buckets, .maps, .symmap/).
 */
#ifndef DMPROF_SERIES_H
#define DMPROF_SERIES_H

#include <stdbool.h>
#include <stddef.h>

struct series_file {
	unsigned long counter;
	char *path;
	int part;   /* of a file holding several snapshots (see snapshot.h) */
};

struct series {
	char *prefix;          /* dump path without ".NNNN.heap" */
	unsigned long first;   /* counter of the dump the user named */
	struct series_file *dumps;   /* counter >= first, ascending */
	size_t ndumps;
	struct series_file *buckets; /* every PREFIX.N.buckets, ascending */
	size_t nbuckets;
};

/*
 * Split a dump path into prefix and counter.  Both "P.PID.NNNN.heap"
 * (Chromium) and "P.NNNN.heap" (gperftools) end in ".NNNN.heap", and the
 * pid stays in the prefix.  Returns false if PATH does not end that way.
 */
bool series_split(const char *path, char **prefix, unsigned long *counter);

/*
 * Discover the run that starts at FIRST_DUMP.  With ALL false, only
 * FIRST_DUMP itself is taken as a dump (commands that read one dump);
 * bucket files are always all found.  Returns 0 or -1 (message printed).
 */
int series_discover(struct series *s, const char *first_dump, bool all);
/*
 * The first dump (the lowest counter) of the run DUMP is of, as a new
 * string; NULL if DUMP is not of a series, or after an error (printed).
 */
char *series_first_dump(const char *dump);
/*
 * The series of exactly DUMPS (N of them, of one run, in any order:
 * they are sorted by counter, a number given twice is warned about and
 * kept once); one dump alone is discovered as with ALL false.  Returns 0
 * or -1 (message printed).
 */
int series_of(struct series *s, const char *const *dumps, size_t n);
void series_free(struct series *s);
/*
 * Every PREFIX.N.heap of S's run, ascending, whichever dumps S holds:
 * where a run with no bucket files has its buckets (dmprof record's one
 * file a dump).  Returns 0 or -1 (message printed).
 */
int series_heaps(const struct series *s, struct series_file **out,
		 size_t *n);
void series_files_free(struct series_file *v, size_t n);

/*
 * The dumps of one process of a recorded run, whose processes each
 * write PREFIX.NNNN.heap with PREFIX being RUN.PID (dmprof record's
 * RUN.PID.NNNN.heap): into S (no bucket files; S->first the lowest
 * counter, 0 with no dumps), and in *OTHERS how many dumps the run's
 * other processes left.  Returns 0 or -1 (message printed).
 */
int series_process(struct series *s, const char *prefix, size_t *others);

/*
 * The highest counter of the files PREFIX.NNNN.SUFFIX, for a producer
 * that goes on with a run: 0 if there is none (or none can be listed).
 */
unsigned long series_last(const char *prefix, const char *suffix);

/*
 * The dumps a user named, grouped by run (by prefix), runs in the order
 * they first appear and each run's dumps in the order given, a path
 * given twice once.  The groups point into DUMPS (which must outlive
 * them); series_groups_free() frees the groups.
 */
struct series_group {
	char *prefix;
	const char **dumps;
	size_t n;
};

void series_group(const char *const *dumps, size_t n,
		  struct series_group **out, size_t *nout);
void series_groups_free(struct series_group *g, size_t n);

#endif
