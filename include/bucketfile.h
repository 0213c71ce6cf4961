/*
 * The .buckets reader: bucket definitions ("ID malloc|mmap [tTYPE]
 * [nNAME] 0xFRAME...") into the model.
 */
#ifndef DMPROF_BUCKETFILE_H
#define DMPROF_BUCKETFILE_H

#include <stddef.h>

#include "model.h"
#include "util.h"

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

/*
 * The maps a run's dumps hold themselves: the last MAPS section of the
 * dumps bucketfile_load_dumps read (TEXT empty: none), from line LINE of
 * PATH on.
 */
struct dump_maps {
	struct strbuf text;
	char *path;
	unsigned long line;
};

/*
 * A run whose dumps hold their buckets themselves (dmprof record's one
 * file a dump): the BUCKETS sections of DUMPS, N of them in order (a
 * dump's sections come after META, before its data), as
 * bucketfile_load_many loads files (*LOADED counts the dumps read), and
 * their last MAPS section into *MAPS (initialized by the caller, freed
 * with dump_maps_release).
 */
int bucketfile_load_dumps(struct model *m, const char *const *dumps, size_t n,
			  size_t *loaded, struct dump_maps *maps);
void dump_maps_release(struct dump_maps *maps);

#endif
