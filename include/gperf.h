/* gperftools heap profiles as snapshots (see src/gperf.c). */
#ifndef DMPROF_GPERF_H
#define DMPROF_GPERF_H

#include <stdbool.h>
#include <stddef.h>

#include "snapshot.h"
#include "text.h"

/* True if the line is a gperftools header ("heap profile: N: ..."). */
bool gperf_is_header(const char *p, size_t len);

/* Parse FB, a gperftools profile, into SNAP.  Returns 0 or -1. */
int gperf_parse(struct snapshot *snap, const struct filebuf *fb,
		struct model *m);

#endif
