/*
 * The snapshot builder: a snapshot of a process's memory filled a record
 * at a time (snapfile.h's records), the one way into the model for what
 * dmprof snapshot writes and for a core read directly.  The reader of
 * snapshot files checks each line and hands it here; a core's capture
 * hands its records with no text in between.
 *
 * In the model a mapping is an unhooked region, but the heap's parts,
 * which are hooked regions of the stack dmprof record gives glibc's
 * arenas (the frame dmprof_glibc_malloc_arena, then arena-K or mmapped),
 * and the threads' stacks (dmprof_thread_stack).  A record of blocks is
 * a malloc stack line whose frames say what is known of them: the type
 * (where known: what a block is, standing where an owner does), then
 * size-LO..HI, dmprof_leaked when leaked, and where they are (in use);
 * or free-STATE and the arena (free chunks, which policies may count
 * apart).  The type is the bucket's type too, for rules on types.
 */
#ifndef DMPROF_SNAPBUILD_H
#define DMPROF_SNAPBUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "reader.h"
#include "snapfile.h"
#include "snapshot.h"

struct snap_builder {
	struct snapshot *snap;
	struct model *m;
	/* Where the records come from, for what is said about them: the
	 * reader's position in its file, or a core's path, line 0. */
	struct reader_pos *pos;
	/* The mapping whose parts may follow: its index (-1: none), where
	 * its parts have got to (0: none yet), their committed bytes, and
	 * the mapping's own, and where it was said. */
	int64_t vma;
	uint64_t part_end;
	int64_t part_sum, vma_committed;
	unsigned long vma_line;
	int64_t malloc_bytes;   /* the blocks' committed, for GLOBAL_STATS */
	/* The frame of the other allocator's mappings (META's Allocator:
	 * dmprof_NAME_arena, interned), or NULL. */
	const char *allocator_frame;
};

/*
 * Start filling SNAP (snapshot_init'ed), its buckets interned in M, with
 * records from where POS says (POS outlives the builder).
 */
void snapbuild_init(struct snap_builder *b, struct snapshot *snap,
		    struct model *m, struct reader_pos *pos);
/*
 * Record R, said at LINE of the input (0: none): 0, or -1 after saying
 * what is wrong with it where POS says (a META value that does not
 * parse, a part that does not go on from the one before, a mapping out
 * of order, too many stacks).  Records of blocks must name arenas the
 * HEAP section has said (the reader checks that of its lines).
 */
int snapbuild_put(struct snap_builder *b, const struct snap_record *r,
		  unsigned long line);
/*
 * The mapping recorded last is complete (a record of a mapping ends the
 * one before by itself; a reader that says so before it reads the next
 * line says what is wrong with the one before first).  0, or -1 after
 * saying why (its parts fall short of it).
 */
int snapbuild_end_vma(struct snap_builder *b);
/* The records' sum: the last mapping checked, GLOBAL_STATS as a deep dump
 * has them.  0, or -1 after saying why. */
int snapbuild_finish(struct snap_builder *b);

/* The snapshot's heap's arenas so far (records of blocks name them). */
static inline size_t snapbuild_arenas(const struct snap_builder *b)
{
	return b->snap->heap.narenas;
}

#endif
