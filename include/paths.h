/*
 * Where dmprof finds what it installs: the policies and the recorder are
 * looked for relative to the running binary first (a build tree, or an
 * installation under any PREFIX), then in the directories configured at
 * build time.
 */
#ifndef DMPROF_PATHS_H
#define DMPROF_PATHS_H

/* The configured DATADIR and LIBDIR (make's, tracked in build/PATHS). */
extern const char dmprof_datadir[];
extern const char dmprof_libdir[];

/* The directory of the running binary, in new memory, or NULL. */
char *paths_exe_dir(void);

#endif
