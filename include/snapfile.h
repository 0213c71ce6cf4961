/* dmprof snapshot's files (dmprof-snapshot 1) as snapshots (see
 * src/read/snapfile.c). */
#ifndef DMPROF_SNAPFILE_H
#define DMPROF_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "input.h"
#include "profile.h"
#include "snapshot.h"

/* True if the line is a snapshot file's first ("dmprof-snapshot ..."). */
bool snapfile_claims(const char *line, size_t len);

/* Parse FB, a snapshot file, into SNAP.  Returns 0 or -1. */
int snapfile_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run);

#endif
