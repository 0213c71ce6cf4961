/*
 * Stacks as text, in the forms the reports print, and the functions a
 * stack runs through: which frame owns its bytes (the first that is not
 * the allocator's own, as pprof decides) and which functions it counts
 * under.
 */
#ifndef DMPROF_STACKTEXT_H
#define DMPROF_STACKTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "model.h"
#include "owner.h"
#include "tally.h"

enum stack_form {
	STACK_ORIGINAL,       /* "func(@file) " each: the original's expand */
	STACK_ORIGINAL_LINES, /* the same with ":line" where known */
	STACK_CALLERS,        /* "func (file:line) <- caller <- ...": the
				 innermost first, file:line where known */
	STACK_FOLDED,         /* "root;...;func": outermost first, names */
};

/* With STACK_CALLERS: source files by their base name (summaries). */
#define STACK_BASE_NAMES 0x100

/*
 * ST as the program's reader wants it (STACK_CALLERS, base names): each
 * run of two frames or more that are not the program's own code under O
 * (see owner.h) as one marker, "... 6 frames in libstdc++"; the first
 * SHOWN entries (frames or markers; SIZE_MAX: all), then " <- ..." if
 * more.  A stack without a frame of the program's own is shown whole.
 */
void stack_text_compact(struct strbuf *sb, const struct model *m,
			const struct stack *st, const struct owners *o,
			size_t shown);

/* Append the base name of PATH up to ".so" ("libstdc++" of
 * /usr/lib/x86_64-linux-gnu/libstdc++.so.6), as stacks name libraries. */
void library_name(struct strbuf *sb, const char *path);

/*
 * The first DEPTH + 1 logical frames of ST (UINT64_MAX: all; innermost
 * first, inlined functions as frames of their own) in FORM, appended to
 * SB.  STACK_FOLDED takes the DEPTH + 1 innermost too.
 */
void stack_text(struct strbuf *sb, const struct model *m,
		const struct stack *st, uint64_t depth, unsigned form);

/*
 * What the bytes of item IT are, as the reports print it: its stack in
 * FORM (as stack_text; "<no stack>" when empty), "PERMS PATH" for a
 * mapping no hook saw, "<bucket ID, defined in no .buckets file>".
 */
void item_text(struct strbuf *sb, const struct model *m, const struct item *it,
	       uint64_t depth, enum stack_form form);

/*
 * What matches ST to a stack of another run of the program, whose
 * addresses differ: its names, root first, as STACK_FOLDED, but a frame
 * without a name is the base name of the file MAPS maps it to and its
 * offset there ("libc.so.6+0x2724a"), or "?" outside any (MAPS may be
 * NULL).
 */
void stack_match_text(struct strbuf *sb, const struct model *m,
		      const struct stack *st, const struct maps *maps);

/*
 * Is FUNC one of the allocator's own functions (malloc, operator new,
 * tcmalloc's, glibc's __libc_*, Rust's __rust_alloc, the recorder's
 * markers), which own no bytes: pprof's list, so that flat bytes agree
 * with pprof's.
 */
bool frame_is_allocator(const char *func, size_t len);
/* The same functions as one RE2 pattern, for pprof's drop_frames. */
void allocator_pattern(struct strbuf *sb);

/*
 * Is ST a profiler's marker, no code's stack: one frame of a function
 * whose name starts with "dmprof_" (dmprof record's synthetic buckets:
 * pymalloc's free space, its own memory)?  Owners and functions leave
 * such stacks out; the components keep their bytes.
 */
bool stack_is_marker(const struct model *m, const struct stack *st);

/*
 * Add stack ST's sums ADD[0..N) to FUNCS, keyed by function name: ADD[0]
 * (its bytes) to v[0] (flat) of the first frame that is not the
 * allocator's (the last frame when all are), its owner, and, if CUM,
 * once to v[1] (cum) of each function of the stack; ADD[k] for k >= 1 to
 * the owner's v[k + 1].  An entry's file/line is the place of its largest
 * flat stack, or, if it has none, of its largest call (by |ADD[0]|: only
 * with CUM, which visits the calls); bit 0 of the entries' flags is this
 * function's, the others the caller's.  Returns the owner; NULL, and
 * nothing added, for a stack that is no code's (stack_is_marker).
 */
struct tally_entry *stacktext_tally_functions(struct tally *funcs,
					      const struct model *m,
					      const struct stack *st,
					      const int64_t *add, size_t n,
					      bool cum);
/*
 * Does ST hold the program's own bytes under FUNCS' owner rule: is its
 * owner (as stacktext_tally_functions finds it) a frame of the program's
 * own code, reached from the allocator through no function of the C runtime
 * keeping its own state (owner_runtime_state: main's stdout buffer, the
 * loader's tables for a dlopen)?  No for a stack whose owner is not the
 * program's (an unresolved address, a library's or the runtime's
 * function), and for every stack under pprof's rule.
 */
bool stacktext_programs_bytes(struct tally *funcs, const struct model *m,
			      const struct stack *st);
/*
 * Functions by flat bytes (v[0]), then cumulative (v[1]), then name:
 * pprof's order, top's (on struct tally_entry *const *).
 */
int stacktext_cmp_flat(const void *a, const void *b);
/* Has E the place of a flat stack of its (else of a call, or none)? */
bool stacktext_placed_flat(const struct tally_entry *e);

/*
 * Call FN with the text of each logical frame of ST, innermost first, as
 * STACK_CALLERS shows it ("func (file:line)"), and the frame (F, K) it
 * is.  Returns how many.
 */
size_t stack_frames(const struct model *m, const struct stack *st,
		    void (*fn)(void *ctx, const char *text, size_t len,
			       const struct frame *f, uint32_t k),
		    void *ctx);

/*
 * " (FILE:LINE)", " (FILE)" without a line, nothing without a file; with
 * BASE, FILE's base name only.
 */
void place_text(struct strbuf *sb, const char *file, uint32_t line,
		bool base);

/* How many logical frames ST has (inlined functions count). */
size_t stack_depth(const struct model *m, const struct stack *st);

/* The name a frame goes by in reports: its function, or its address. */
void frame_name(struct strbuf *sb, const struct frame *f, uint32_t k);

#endif
