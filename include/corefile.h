/* ELF core files read as snapshots by every command (see
 * src/memory/corefile.c). */
#ifndef DMPROF_COREFILE_H
#define DMPROF_COREFILE_H

#include <stdbool.h>

#include "input.h"
#include "reader.h"
#include "snapshot.h"

/* True if FB starts as an ELF file does (a core, or what is refused as
 * none by name). */
bool corefile_claims(const struct filebuf *fb);

/* Read the core at PATH into SNAP, as `dmprof snapshot CORE` would
 * write it.  Returns 0 or -1. */
int corefile_parse(struct snapshot *snap, const char *path, struct model *m,
		   struct read_run *run);

#endif
