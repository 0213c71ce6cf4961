/*
 * Stacks as text, in the forms the reports print, and the functions a
 * stack runs through: which frame owns its bytes (the first that is not
 * the allocator's own, as pprof decides) and which functions it counts
 * under.
 */
#ifndef DMPROF_STACKS_H
#define DMPROF_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "model.h"
#include "tally.h"

enum stack_form {
	STACK_ORIGINAL,       /* "func(@file) " each: the original's expand */
	STACK_ORIGINAL_LINES, /* the same with ":line" where known */
	STACK_CALLERS,        /* "func (file:line) <- caller <- ...": the
				 innermost first, file:line where known */
	STACK_FOLDED,         /* "root;...;func": outermost first, names */
};

/*
 * The first DEPTH + 1 logical frames of ST (UINT64_MAX: all; innermost
 * first, inlined functions as frames of their own) in FORM, appended to
 * SB.  STACK_FOLDED takes the DEPTH + 1 innermost too.
 */
void stack_text(struct strbuf *sb, const struct model *m,
		const struct stack *st, uint64_t depth, enum stack_form form);

/*
 * What the bytes of item IT are, as the reports print it: its stack in
 * FORM (as stack_text; "<no stack>" when empty), "PERMS PATH" for a
 * mapping no hook saw, "<bucket ID, defined in no .buckets file>".
 */
void item_text(struct strbuf *sb, const struct model *m, const struct item *it,
	       uint64_t depth, enum stack_form form);

/*
 * Is FUNC one of the allocator's own functions (malloc, operator new,
 * tcmalloc's, glibc's __libc_*, the recorder's markers), which own no
 * bytes: pprof's list, so that flat bytes agree with pprof's.
 */
bool frame_is_allocator(const char *func, size_t len);

/*
 * Add BYTES of stack ST to FUNCS, keyed by function name: v[0] (flat) to
 * the first frame that is not the allocator's (the last frame when all
 * are), v[1] (cum) once to each function of the stack.  An entry's
 * file/line is the place of its largest flat stack, or, if it has none,
 * of its largest call; FUNCS's flags belong to this function.
 */
void tally_functions(struct tally *funcs, const struct model *m,
		     const struct stack *st, int64_t bytes);

/* The name a frame goes by in reports: its function, or its address. */
void frame_name(struct strbuf *sb, const struct frame *f, uint32_t k);

#endif
