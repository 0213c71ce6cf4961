/*
 * The .buckets reader: bucket definitions ("ID malloc|mmap [tTYPE]
 * [nNAME] 0xFRAME...") into the model.
 */
#ifndef DMPROF_BUCKETFILE_H
#define DMPROF_BUCKETFILE_H

#include <stddef.h>

#include "model.h"

/*
 * Parse one .buckets file into M.  Malformed lines are errors naming
 * FILE:LINE; returns 0 or -1.
 */
int bucketfile_load(struct model *m, const char *path);
/*
 * Load PATHS in order (empty files skipped; *LOADED counts the others),
 * reading ahead in a thread of its own (threads.h).  Returns 0, or -1
 * after the first error (messages come out in file order).
 */
int bucketfile_load_many(struct model *m, const char *const *paths, size_t n,
		      size_t *loaded);

#endif
