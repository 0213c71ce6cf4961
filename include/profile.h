/*
 * Loading a snapshot: the one front for every input format.  It tells the
 * formats apart by content (the first line that is not blank or a
 * comment) and hands the file to that format's reader; each reader fills
 * the same snapshot and model.
 */
#ifndef DMPROF_PROFILE_H
#define DMPROF_PROFILE_H

#include "snapshot.h"

/*
 * The format of the file at PATH.  Returns 0, or -1 after saying why: it
 * cannot be read, it is empty, or it is no profile dmprof reads (the
 * message lists those it reads).
 */
int profile_probe(const char *path, enum dump_format *format);

/*
 * Read the profile at PATH into SNAP, resolving what it names against M
 * (for deep dumps, load the .buckets files first).  Errors name FILE:LINE
 * and return -1, with SNAP released; recoverable oddities are warnings.
 */
int profile_load(struct snapshot *snap, const char *path, struct model *m);
/* The same for snapshot PART of a file that holds several (DHAT's). */
int profile_load_part(struct snapshot *snap, const char *path, int part,
		      struct model *m);
/*
 * The same if the file is in format ONLY; else -2, with nothing read
 * or said.
 */
int profile_load_part_as(struct snapshot *snap, const char *path, int part,
			 struct model *m, enum dump_format only);

#endif
