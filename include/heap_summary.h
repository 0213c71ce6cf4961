/*
 * A malloc heap summed up: its chunks by state (in use, in a tcache, a
 * fastbin, ...), the arenas' system memory and their own headers, the
 * chunks mapped one by one, and what glibc's mallinfo2() says of it all.
 * The heap walker makes one of a live process (glibc_heap.h); a snapshot
 * of a process carries one (snapshot.h) for `top` to print, in the same
 * words as `dmprof heap`.
 */
#ifndef DMPROF_HEAP_SUMMARY_H
#define DMPROF_HEAP_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "json_write.h"

/* What a chunk is.  Tcache and fastbin chunks look in use to the chunk
 * after them (its PREV_INUSE bit); only their lists say.  To mallinfo2,
 * tcache chunks are in use (uordblks), fastbin ones free (fordblks and
 * fsmblks). */
enum heap_state {
	HEAP_IN_USE,
	HEAP_TCACHE,
	HEAP_FASTBIN,
	HEAP_UNSORTED,
	HEAP_BIN,      /* a small or a large bin */
	HEAP_TOP,
	/* Free by its neighbour's PREV_INUSE bit, yet in no list: a list
	 * cut by corruption, or a thread stopped inside free(). */
	HEAP_UNLISTED,
	HEAP_NSTATES
};

/* "in-use", "tcache", ...: for output. */
const char *heap_state_name(enum heap_state state);
/* The state of that name (LEN bytes at NAME), or -1. */
int heap_state_lookup(const char *name, size_t len);

/* Counts and bytes by state; OVERHEAD (heap headers, the arena's own
 * struct, fenceposts) and UNKNOWN (past a corruption) are bytes only. */
struct heap_tally {
	uint64_t count[HEAP_NSTATES];
	uint64_t bytes[HEAP_NSTATES];
	uint64_t overhead;
	uint64_t unknown;
};

/* A whole heap: the arenas' tallies summed, mmapped chunks apart. */
/* CPython's object allocator (pymalloc.h), summed up: its arenas, their
 * free pools and alignment, the bytes no block in use holds (and of those
 * committed), the blocks in use, and sys._debugmallocstats()'s rows. */
#define PY_SUMMARY_CLASSES 64
struct py_summary {
	bool present;
	uint64_t arenas, unused_pools, alignment;
	uint64_t free, free_committed;
	uint64_t count, bytes;
	struct {
		uint64_t size, pools, used, avail;
	} classes[PY_SUMMARY_CLASSES];
};

struct heap_summary {
	struct heap_tally t;
	uint64_t system_mem;      /* what the arenas hold, as glibc counts */
	uint64_t main_top;        /* the main arena's top chunk, bytes */
	uint64_t mmapped_count, mmapped_bytes;
	size_t narenas, ntcaches;
	size_t nproblems;         /* corruptions met, things unread */
	/* Who points at the blocks in use (reach.h), when scanned:
	 * anchored (reachable from the roots), leaked, and of the leaked
	 * the unreferenced; counts and chunk bytes. */
	bool scanned;
	uint64_t anchored_count, anchored_bytes;
	uint64_t leaked_count, leaked_bytes;
	uint64_t unreferenced_count, unreferenced_bytes;
	struct py_summary py;
};

/* What mallinfo2() would return, field by field. */
struct heap_mallinfo {
	uint64_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks,
		uordblks, fordblks, keepcost;
};

/* mallinfo2()'s fields, as glibc computes them from such a state. */
void heap_summary_mallinfo(const struct heap_summary *s,
			   struct heap_mallinfo *out);

/* Add state STATE's COUNT chunks of BYTES to T. */
void heap_tally_add(struct heap_tally *t, enum heap_state state,
		    uint64_t count, uint64_t bytes);

/* T as members of the object W is in: count and bytes by state, then
 * overhead and unknown. */
void heap_tally_json(struct json_writer *w, const struct heap_tally *t);

/*
 * S as the members "total" (system_mem, then count and bytes by state,
 * overhead, unknown), "mmapped", "reach" (when scanned: anchored, leaked
 * and unreferenced, count and bytes) and "mallinfo2" of the object W is
 * in: what `dmprof heap --json` and `dmprof top --json` both say.
 */
void heap_summary_json(struct json_writer *w, const struct heap_summary *s);

#endif
