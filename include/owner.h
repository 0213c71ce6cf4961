/*
 * Whose code a frame is: the program's own, or the system's (the
 * allocator, the C and C++ runtime, libraries installed in the system's
 * directories, templates inlined from the system's headers).  It decides
 * which frame of a stack owns its bytes in top, diff and html: the first
 * of the program's own code from the allocation upward.
 */
#ifndef DMPROF_OWNER_H
#define DMPROF_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum owner_rule {
	OWNER_PROGRAM, /* the first frame of the program's own code */
	OWNER_PPROF,   /* the first frame past the allocator, as pprof */
};

struct owners {
	enum owner_rule rule;
	/* --own: more of the program's own code, as fnmatch(3) patterns on
	 * a binary's path or a source file's (a pattern without a wildcard
	 * is a prefix: a directory, a path). */
	const char **own;
	size_t nown;
};

/* pprof's rule: what struct owners is when zeroed, too. */
extern const struct owners owners_pprof;

/*
 * Is logical frame K of F (in M) the program's own code under O: named
 * (not an address), not the allocator's, of the executable or of a
 * binary outside the system's library directories (any, where the
 * profile names its frames itself and no binary is known), whose source
 * file, where known, is outside the system's include directories, and
 * whose function is not of the C++ runtime (std::, __gnu_cxx::, __cxa_).
 * A --own pattern that matches the binary or the source file makes a
 * frame the program's whatever its directory.
 */
bool owner_frame_is_own(const struct owners *o, const struct model *m,
			const struct frame *f, uint32_t k);

/*
 * Is FUNC the C++ runtime's (std::, __gnu_cxx::, __cxxabiv1::, __cxa_)
 * or the allocator's?  (NULL: no.)
 */
bool owner_runtime_name(const char *func);

/*
 * Parse "program" or "pprof" into O's rule; -1 if it is neither.
 */
int owners_rule(struct owners *o, const char *name);

/* The system's: binaries, then source files (for the man page, tests). */
extern const char *const owner_system_lib_dirs[];
extern const char *const owner_system_include_dirs[];

#endif
