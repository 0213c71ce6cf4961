/*
 * Whose code a frame is (see owner.h): the one place that decides it, for
 * every report that ranks owners.  The program's own code is found by
 * where it lives, as a person reading a stack would: not in the system's
 * directories, not in the system's headers, not the C++ runtime's names.
 */
#include "owner.h"

#include <fnmatch.h>
#include <string.h>

#include "stacktext.h"
#include "util.h"

const struct owners owners_pprof = { OWNER_PPROF, NULL, 0 };

/* Where Debian (and most distributions) install libraries. */
const char *const owner_system_lib_dirs[] = {
	"/lib/", "/lib32/", "/lib64/", "/libx32/", "/usr/lib/", "/usr/lib32/",
	"/usr/lib64/", "/usr/libx32/", "/usr/libexec/", NULL,
};

/*
 * Where a source file is the system's: headers (libstdc++'s templates in
 * /usr/include/c++, gcc's own in /usr/lib/gcc), and the sources packages
 * ship (Go's runtime in /usr/lib/go-N and /usr/share/go-N).
 */
const char *const owner_system_include_dirs[] = {
	"/usr/include/", "/usr/local/include/", "/usr/share/", "/usr/src/",
	NULL,
};

/* Namespaces and prefixes of the C++ runtime: libstdc++ and the ABI's. */
static const char *const runtime_names[] = {
	"std::", "__gnu_cxx::", "__cxxabiv1::", "__cxa_", "__gnu_debug::",
	NULL,
};

static bool has_prefix(const char *s, const char *const *prefixes)
{
	for (; *prefixes; prefixes++)
		if (!strncmp(s, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

/* A pattern without a wildcard is a prefix (a directory, a path). */
static bool pattern_matches(const char *pattern, const char *path)
{
	if (!strpbrk(pattern, "*?["))
		return !strncmp(path, pattern, strlen(pattern));
	return fnmatch(pattern, path, 0) == 0;
}

static bool named_own(const struct owners *o, const char *path)
{
	for (size_t i = 0; path && i < o->nown; i++)
		if (pattern_matches(o->own[i], path))
			return true;
	return false;
}

static bool system_file(const char *file)
{
	return has_prefix(file, owner_system_include_dirs) ||
	       has_prefix(file, owner_system_lib_dirs);
}

bool owner_runtime_name(const char *func)
{
	return func && (has_prefix(func, runtime_names) ||
			frame_is_allocator(func, strlen(func)));
}

bool owner_frame_is_own(const struct owners *o, const struct model *m,
			const struct frame *f, uint32_t k)
{
	const char *func = k < f->ninline ? f->inl[k].func : f->func;
	const char *file = k < f->ninline ? f->inl[k].file : f->file;
	const char *bin = f->bin ? m->bins[f->bin] : NULL;

	if (!func || frame_is_allocator(func, strlen(func)))
		return false;
	if (named_own(o, bin) || named_own(o, file))
		return true;
	if (has_prefix(func, runtime_names))
		return false;
	if (file && system_file(file))
		return false;
	if (!bin)
		return true; /* named by the profile (Go, DHAT): by its name */
	return f->bin == m->main_bin ||
	       (*bin == '/' && !has_prefix(bin, owner_system_lib_dirs));
}

int owners_rule(struct owners *o, const char *name)
{
	if (!strcmp(name, "program"))
		o->rule = OWNER_PROGRAM;
	else if (!strcmp(name, "pprof"))
		o->rule = OWNER_PPROF;
	else
		return -1;
	return 0;
}
