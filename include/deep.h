/*
 * The deep-dump reader: Chromium's DUMP_DEEP_5 and DUMP_DEEP_6, which
 * dmprof record writes too (see src/read/deep.c).
 */
#ifndef DMPROF_DEEP_H
#define DMPROF_DEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "profile.h"
#include "profile.h"
#include "snapshot.h"
#include "text.h"

/* Is LINE (the first that is not blank or a comment) a deep dump's? */
bool deep_claims(const char *line, size_t len);

/*
 * Parse FB into SNAP, resolving bucket ids against M (load the .buckets
 * files first).  Errors name FILE:LINE and return -1; recoverable oddities
 * are warnings.
 */
int deep_parse(struct snapshot *snap, struct filebuf *fb,
	       struct model *m, struct read_run *run);

/*
 * When the deep dump at PATH was taken, as its META Reason line says
 * (dmprof record's "main returned", "exit called", "Exiting"), from the
 * lines before MMAP_LIST only: a run of a hundred dumps of 6 MB is not
 * read for it.
 */
enum dump_moment deep_moment(const char *path);

/* Decode a pageframe token ("<ASNF#B>"); false if malformed. */
bool pageframe_parse(const char *tok, size_t len, struct pageframe *pf,
		     uint64_t page_size);

#endif
