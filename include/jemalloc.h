/* jemalloc (>= 4.0) heap profile dumps as snapshots (see src/read/jemalloc.c). */
#ifndef DMPROF_JEMALLOC_H
#define DMPROF_JEMALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "reader.h"
#include "snapshot.h"
#include "input.h"

/* True if the line is a jemalloc dump's first ("heap_v2/RATE"). */
bool jemalloc_claims(const char *p, size_t len);

/*
 * jemalloc names its dumps PREFIX.PID.SEQ.KIND.heap, KIND saying why it
 * dumped: "f" at exit, "iN" every interval, "mN" when asked, "uN" at a
 * new peak; SEQ counts them all.  The length of a ".KIND" that ends
 * NAME[0..END), or 0 (the row's infix: see profile.h).
 */
size_t jemalloc_dump_kind(const char *name, size_t end);

/* Parse FB, a jemalloc dump, into SNAP.  Returns 0 or -1. */
int jemalloc_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run);

#endif
