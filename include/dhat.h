/* Valgrind DHAT's JSON (dhat.out.PID) as snapshots (see src/read/dhat.c). */
#ifndef DMPROF_DHAT_H
#define DMPROF_DHAT_H

#include <stdbool.h>

#include "reader.h"
#include "snapshot.h"
#include "input.h"

/* True if the file is DHAT's: JSON whose first key is dhatFileVersion. */
bool dhat_claims(const struct filebuf *fb);

/*
 * Parse FB into SNAP: SNAP->part 1 is the run at its global peak (t-gmax),
 * 2 at its end (t-end).  Returns 0 or -1.
 */
int dhat_parse(struct snapshot *snap, struct filebuf *fb,
	       struct model *m, struct read_run *run);

#endif
