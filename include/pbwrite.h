/*
 * Writing protobuf (for dmprof pprof --proto): fields appended to a
 * strbuf, nested messages built in a buffer of their own and added as
 * bytes, and the gzip pprof's files always have.
 */
#ifndef DMPROF_PBWRITE_H
#define DMPROF_PBWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* A varint field NUM holding V (an int64 as its two's complement). */
void pbw_uint(struct strbuf *sb, uint32_t num, uint64_t v);
/* A length-delimited field NUM: a string, bytes, or a message. */
void pbw_bytes(struct strbuf *sb, uint32_t num, const void *data, size_t n);
/* A packed repeated varint field NUM of the N values V (none: nothing). */
void pbw_packed(struct strbuf *sb, uint32_t num, const uint64_t *v, size_t n);

/* IN[0..N) gzipped, appended to OUT (one member, level 6). */
void pbw_gzip(const void *in, size_t n, struct strbuf *out);

#endif
