/* gperftools heap profiles as snapshots (see src/gperf.c). */
#ifndef DMPROF_GPERF_H
#define DMPROF_GPERF_H

#include <stdbool.h>
#include <stddef.h>

#include "snapshot.h"
#include "text.h"

/* True if the line is a text heap profile's header ("heap profile: N: ..."). */
bool gperf_is_header(const char *p, size_t len);

/* Parse FB, a gperftools profile, into SNAP.  Returns 0 or -1. */
int gperf_parse(struct snapshot *snap, const struct filebuf *fb,
		struct model *m);

/*
 * Set a heap profile's total: its own sum of bytes in use, which stands
 * for the process total it does not know.
 */
void heap_profile_total(struct snapshot *snap, int64_t total);

#endif
