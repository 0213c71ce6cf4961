/* jemalloc (>= 4.0) heap profile dumps as snapshots (see src/read/jemalloc.c). */
#ifndef DMPROF_JEMALLOC_H
#define DMPROF_JEMALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "profile.h"
#include "snapshot.h"
#include "text.h"

/* True if the line is a jemalloc dump's first ("heap_v2/RATE"). */
bool jemalloc_claims(const char *p, size_t len);

/* Parse FB, a jemalloc dump, into SNAP.  Returns 0 or -1. */
int jemalloc_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run);

#endif
