/* gperftools heap profiles as snapshots (see src/read/gperf.c). */
#ifndef DMPROF_GPERF_H
#define DMPROF_GPERF_H

#include <stdbool.h>
#include <stddef.h>

#include "reader.h"
#include "snapshot.h"
#include "input.h"

/* True if the line is a text heap profile's header ("heap profile: N: ..."). */
bool gperf_is_header(const char *p, size_t len);

/*
 * Read a text heap profile from S into SNAP, a line at a time (its stacks
 * are interned as they come).  Returns 0, or -1 with the model as it was.
 */
int gperf_parse(struct snapshot *snap, struct line_stream *s,
		struct model *m, struct read_run *run);

/*
 * Is the profile at PATH one of gperftools' heap profiler
 * ("heap profile: ... @ heapprofile"), which writes its last dump at exit,
 * after static destructors?  (Go's "@ heap/N" and pprof's other text
 * profiles do not.)
 */
bool gperf_last_at_exit(const char *path);

/*
 * The files of the executable mappings a profile at PATH names in its
 * MAPPED_LIBRARIES: trailer, read from the end of the file (its last 1
 * MiB) without reading the rest: new strings, *N of them; NULL when the
 * file is not a regular one or the trailer is not found there.  Silent:
 * the dump's own reading says what is wrong with it.  (For symbolization
 * to get ready while the stacks are read.)
 */
char **gperf_binaries(const char *path, size_t *n);

#endif
