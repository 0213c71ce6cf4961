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

struct strbuf;

enum owner_rule {
	OWNER_PROGRAM, /* the first frame of the program's own code */
	OWNER_PPROF,   /* the first frame past the allocator, as pprof */
};

/*
 * An allocator wrapper: a function that only passes an allocation on
 * (redis's zmalloc, GLib's g_malloc, xmalloc), named by a PCRE2 pattern
 * on the function's name, whole.  Its frames own nothing under the
 * program rule: their caller does.
 */
struct alloc_fn {
	char *pattern;
	char *origin;      /* "built-in redis", "--alloc-fn", "FILE:LINE" */
	void *code;        /* (pcre2_code *) */
};

struct owners {
	enum owner_rule rule;
	/* --own: more of the program's own code, as fnmatch(3) patterns on
	 * a binary's path or a source file's (a pattern without a wildcard
	 * is a prefix: a directory, a path). */
	const char **own;
	size_t nown;
	/* Allocator wrappers: the built-in list, then --alloc-fn's, then
	 * the policies'.  (Empty: none.) */
	struct alloc_fn *fns;
	size_t nfns;
	void *any;         /* (pcre2_code *) all of them in one pattern */
	void *mctx;        /* (pcre2_match_context *) with limits */
	void *md;          /* (pcre2_match_data *): one thread at a time */
};

/* The built-in allocator wrappers: a family's name and its pattern, for
 * owners_builtin_wrappers() and the man page; NULL-terminated. */
struct wrapper_family {
	const char *family;
	const char *pattern;
};
extern const struct wrapper_family owner_wrapper_families[];

/* pprof's rule: what struct owners is when zeroed, too. */
extern const struct owners owners_pprof;

/*
 * Is logical frame K of F (in M) the program's own code under O: named
 * (not an address), not the allocator's, of the executable or of a
 * binary outside the system's library directories (any, where the
 * profile names its frames itself and no binary is known), whose source
 * file, where known, is outside the system's include directories and
 * is not a Python module of the interpreter or of an installed package
 * (its standard library, site-packages), whose function is not of the C++
 * runtime (std::, __gnu_cxx::, __cxa_), and not of the binary of an
 * interpreter the program's interpreted frames run on (CPython's: see
 * model_note_runtime).  A --own pattern that matches the binary or the source file makes a
 * frame the program's whatever its directory.  (An allocator wrapper of
 * the program's is its own code, shown as such; only the owner passes
 * over it: see owner_wrapper.)
 */
bool owner_frame_is_own(const struct owners *o, const struct model *m,
			const struct frame *f, uint32_t k);

/*
 * Is FUNC the C++ runtime's (std::, __gnu_cxx::, __cxxabiv1::, __cxa_)
 * or the allocator's?  (NULL: no.)
 */
bool owner_runtime_name(const char *func);

/*
 * Is FUNC the C runtime keeping its own state, whoever called it: stdio
 * allocating a stream's buffer, the dynamic loader its tables or a
 * thread's TLS?  (NULL: no.)  A program's function that caused it (main
 * printing, a dlopen) owns those bytes, but they are not its data.
 */
bool owner_runtime_state(const char *func);

/*
 * Parse "program" or "pprof" into O's rule; -1 if it is neither.
 */
int owners_rule(struct owners *o, const char *name);

/*
 * Add allocator wrapper PATTERN (a PCRE2 pattern that must match a
 * function's whole name), said to come from ORIGIN, to O.  0, or -1 with
 * what is wrong with the pattern in ERR (PCRE2's message and the offset).
 */
int owners_add_wrapper(struct owners *o, const char *pattern,
		       const char *origin, struct strbuf *err);
/* Add the built-in wrappers (owner_wrapper_families). */
void owners_builtin_wrappers(struct owners *o);
/*
 * Which of O's wrappers FUNC (LEN bytes; its parameters, from "(" on,
 * are left out) is: its index, or -1 when it is none.
 */
long owner_wrapper(const struct owners *o, const char *func, size_t len);
/* Free what O holds (not O). */
void owners_release(struct owners *o);

/* The system's: binaries, then source files (for the man page, tests). */
extern const char *const owner_system_lib_dirs[];
extern const char *const owner_system_include_dirs[];

#endif
