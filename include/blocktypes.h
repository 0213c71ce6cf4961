/*
 * The blocks in use of a heap walked from outside (a snapshot, a core),
 * by type: the name the typing gave a block's bucket (a C++ class by its
 * vtable, a library layout, a language runtime's object type: whatever
 * names a typing gives buckets), or, where nothing is known of a block,
 * its size class (the frame "size-LO..HI" such a snapshot's blocks in
 * use carry first).  Counted from a snapshot's stack lines: top's types
 * table, diff's, top --tree --by-type, expand of a type.  Bytes are the
 * blocks' own (their chunks' sizes, resident or not), as a count of
 * blocks knows them.
 */
#ifndef DMPROF_BLOCKTYPES_H
#define DMPROF_BLOCKTYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "snapshot.h"
#include "tally.h"

/*
 * What the blocks of bucket B (of M) are known by, or NULL when they are
 * no blocks in use: free chunks, mappings, a recorded stack (whose
 * blocks are known by their stacks instead).
 */
const char *blocktypes_name(const struct model *m, const struct bucket *b);

/* Are B's blocks leaked (nothing reachable points at them)? */
bool blocktypes_leaked(const struct model *m, const struct bucket *b);

/*
 * A tally of types (tally.h): an entry's key is the type, allocs its
 * blocks, bytes their bytes, and v[BLOCKTYPES_LEAKED] and
 * v[BLOCKTYPES_LEAKED_BYTES] the leaked ones among them.
 */
enum { BLOCKTYPES_LEAKED, BLOCKTYPES_LEAKED_BYTES };

/*
 * Count stack line L of a snapshot of M into T, if its blocks are in use
 * (of a walked heap): its entry, or NULL.
 */
struct tally_entry *blocktypes_add(struct tally *t, const struct model *m,
				   const struct stack_line *l);
/* Every line of SNAP (of M) into T. */
void blocktypes_add_snapshot(struct tally *t, const struct model *m,
			     const struct snapshot *snap);

/* Largest first (bytes, then blocks), then by name: the tables' order. */
int blocktypes_cmp(const void *a, const void *b);

#endif
