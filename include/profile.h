/*
 * Loading a snapshot: the one front for every input format, files and
 * cores alike.  It tells the formats apart by content (the first line
 * that is not blank or a comment) and hands the file to that format's
 * reader; each reader fills the same snapshot and model.  What a reader
 * is handed (read_options, read_run) is in reader.h.
 */
#ifndef DMPROF_PROFILE_H
#define DMPROF_PROFILE_H

#include "reader.h"
#include "snapshot.h"

/*
 * What the front and the run need to know of a format, beside its
 * reader: a row of the readers' table.  Analysis asks the snapshot
 * (kernel_view, mmap_by_regions), never the format.
 */
struct profile_traits {
	enum dump_format format;
	/* The reader's name, which its fuzz target has (tests/fuzz/fuzz.c:
	 * make fuzz builds fuzz_NAME for each row). */
	const char *name;
	/* How its producer names the dumps of a run: PREFIX.NNNN.SUFFIX,
	 * SUFFIX one of these (NULL-ended; NULL: a run is one file). */
	const char *const *suffixes;
	/* What its producer may put between NNNN and ".SUFFIX", if
	 * anything: the length of what ends NAME[0..END) as such, else 0.
	 * NULL: nothing. */
	size_t (*infix)(const char *name, size_t end);
	bool self_contained; /* brings its own stacks and maps: no .buckets
				or .maps files are looked for */
	int parts;           /* snapshots one file holds (DHAT: 2, the peak
				and the end), 1 for the others */
	bool read_ahead;     /* its reader leaves the model alone but for
				interned strings and the bucket table: a run
				reads its next dump on another core */
	/* When the dump at PATH was taken, from its head; NULL: its
	 * format does not say. */
	enum dump_moment (*moment)(const char *path);
	/* Does the producer of the run whose first dump is PATH write its
	 * last dump at exit, after teardown, without saying so?  NULL: no. */
	bool (*last_at_exit)(const char *path);
	/* The binaries the dump at PATH maps, found without reading it
	 * (new strings, *N of them), so that symbolization gets ready while
	 * it is read; NULL: not known before. */
	char **(*binaries)(const char *path, size_t *n);
};
const struct profile_traits *profile_traits(enum dump_format format);
/* Row I of the readers' table, in order; NULL past the last. */
const struct profile_traits *profile_reader(size_t i);

/*
 * The format of the file at PATH.  Returns 0, or -1 after saying why: it
 * cannot be read, it is empty, or it is no profile dmprof reads (the
 * message lists those it reads).
 */
int profile_probe(const char *path, enum dump_format *format);

/*
 * Read the profile at PATH into SNAP, resolving what it names against M
 * (for deep dumps, load the .buckets files first), as a dump of RUN
 * (NULL: a dump alone, read with the default options).  Errors name
 * FILE:LINE and return -1, with SNAP released; recoverable oddities are
 * warnings.
 */
int profile_load(struct snapshot *snap, const char *path, struct model *m,
		 struct read_run *run);
/* The same for snapshot PART of a file that holds several (DHAT's). */
int profile_load_part(struct snapshot *snap, const char *path, int part,
		      struct model *m, struct read_run *run);
/*
 * The same if the file is in format ONLY; else -1 with *OTHER set and
 * nothing read or said (a reader ahead, that reads only the run's
 * format, leaves any other to be read in turn).
 */
int profile_load_part_as(struct snapshot *snap, const char *path, int part,
			 struct model *m, struct read_run *run,
			 enum dump_format only, bool *other);

#endif
