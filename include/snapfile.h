/* dmprof snapshot's files (dmprof-snapshot 1) as snapshots (see
 * src/read/snapfile.c). */
#ifndef DMPROF_SNAPFILE_H
#define DMPROF_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "reader.h"
#include "snapshot.h"

/* True if the line is a snapshot file's first ("dmprof-snapshot ..."). */
bool snapfile_claims(const char *line, size_t len);

/* Parse FB, a snapshot file, into SNAP.  Returns 0 or -1. */
int snapfile_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run);

/*
 * Size classes of blocks in use, by usable bytes: one per chunk size up
 * to 1016 (glibc's bins: 0..24, 25..40, ...), then four per power of
 * two (1017..1024, 1025..1280, ...).  The class of USABLE, and the
 * bounds of class CLS.
 */
unsigned snap_size_class(uint64_t usable);
void snap_size_bounds(unsigned cls, uint64_t *lo, uint64_t *hi);

#endif
