/*
 * Installation paths.  Only this file sees the configured directories, so
 * that a new PREFIX rebuilds one object (the Makefile tracks them).
 */
#include "paths.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#ifndef DMPROF_DATADIR
#define DMPROF_DATADIR "/usr/local/share/dmprof"
#endif
#ifndef DMPROF_LIBDIR
#define DMPROF_LIBDIR "/usr/local/lib/dmprof"
#endif

const char dmprof_datadir[] = DMPROF_DATADIR;
const char dmprof_libdir[] = DMPROF_LIBDIR;

char *paths_exe_dir(void)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	return xstrndup(exe, slash == exe ? 1 : (size_t)(slash - exe));
}
