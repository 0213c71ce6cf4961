/*
 * The deep-dump reader: Chromium's DUMP_DEEP_5 and DUMP_DEEP_6, which
 * dmprof record writes too (see src/read/deep.c).
 */
#ifndef DMPROF_DEEP_H
#define DMPROF_DEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "reader.h"
#include "snapshot.h"
#include "input.h"

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
 * What a deep dump's META says of why and how it was taken, in the keys
 * dmprof record's recorder writes (src/recorder/rec_dump.c).
 */
struct deep_meta {
	char reason[64];         /* Reason: "peak", "main returned", "exit
				    called", "Exiting", ...; "" if unsaid */
	enum dump_moment moment; /* what the Reason says of when */
	double dump_seconds;     /* DumpSeconds: how long the dump took */
	double stopped_seconds;  /* StoppedSeconds: how long the program's
				    threads stood still for it */
	bool running;            /* "Stopped: no (WHY)": read with the
				    threads running, for this */
	char running_why[128];   /* WHY */
	char runtime[16];        /* Runtime: "python", "node" ("" if
				    unsaid) */
};

/*
 * The META of the deep dump at PATH into M (what is unsaid, or a file
 * that cannot be read, zero), from its head only (up to MMAP_LIST, 64 KB
 * at most): a run of a hundred dumps of 6 MB is not read for it.
 */
void deep_meta(const char *path, struct deep_meta *m);

/* When the deep dump at PATH was taken, as its META Reason says. */
enum dump_moment deep_moment(const char *path);

/* Decode a pageframe token ("<ASNF#B>"); false if malformed. */
bool pageframe_parse(const char *tok, size_t len, struct pageframe *pf,
		     uint64_t page_size);

#endif
