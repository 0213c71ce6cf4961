/*
 * pprof protobuf profiles (profile.proto, gzipped or not) as snapshots
 * (see src/read/pbread.c), and the gzip and protobuf wire helpers the
 * reader and the writer (dmprof pprof --proto) share.
 */
#ifndef DMPROF_PBREAD_H
#define DMPROF_PBREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "snapshot.h"
#include "input.h"

/* True if the file's first bytes are gzip's or a profile.proto's. */
bool pb_claims(const struct filebuf *fb);

/* Parse FB, a pprof protobuf profile, into SNAP.  Returns 0 or -1. */
int pb_parse(struct snapshot *snap, struct filebuf *fb,
	     struct model *m, struct read_run *run);

/*
 * Inflate gzip data (every member) into OUT, a new buffer the caller
 * frees, of at most MAX bytes.  Returns 0, or -1 with the fault F set:
 * where (PATH, at the byte the member that does not inflate starts),
 * and why not.
 */
int pb_gunzip(const unsigned char *in, size_t n, size_t max,
	      unsigned char **out, size_t *outn, const char *path,
	      struct fault *f);

#endif
