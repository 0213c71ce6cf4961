/*
 * glibc's malloc heap (2.36, x86-64) walked from outside, through a
 * process image: every arena, every chunk, which free list holds each
 * free one, and what glibc's own mallinfo2() would count.  No debug
 * symbols are needed: the arenas and the tcaches are found by their
 * structure (see glibc_heap.c).
 */
#ifndef DMPROF_GLIBC_HEAP_H
#define DMPROF_GLIBC_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procimage.h"

/* What a chunk is.  Tcache and fastbin chunks look in use to glibc's
 * bookkeeping (and to mallinfo2's uordblks); only their lists say. */
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

#define HEAP_MMAPPED_ARENA 4095 /* the arena of an mmapped chunk */
#define HEAP_MAX_ARENAS 4095

/* One chunk.  The user's pointer is CHUNK + 16. */
struct heap_block {
	uint64_t chunk;
	uint64_t size : 48;  /* the chunk's size, flags cleared */
	uint64_t state : 4;  /* enum heap_state */
	uint64_t arena : 12; /* index in glibc_heap.arenas, or
				HEAP_MMAPPED_ARENA */
};

/* The bytes an in-use block offers its user (malloc_usable_size). */
uint64_t heap_block_usable(const struct heap_block *b);

/* Counts and bytes by state; OVERHEAD (heap headers, the arena's own
 * struct, fenceposts) and UNKNOWN (past a corruption) are bytes only. */
struct heap_tally {
	uint64_t count[HEAP_NSTATES];
	uint64_t bytes[HEAP_NSTATES];
	uint64_t overhead;
	uint64_t unknown;
};

struct heap_arena {
	uint64_t addr;        /* its struct malloc_state */
	uint64_t system_mem;  /* glibc's count of the memory it holds */
	uint64_t top;
	unsigned nheaps;      /* mmapped heaps (heap_info): 0 for main */
	uint64_t attached_threads;
	bool locked;          /* its mutex was held: lists may be mid-update */
	bool corrupt;         /* a walk of it stopped early */
	struct heap_tally t;
};

/* A corruption found, or what could not be read: where, and what. */
struct heap_problem {
	uint64_t addr;
	int arena;            /* -1: not an arena's */
	char *msg;
};

/* glibc's struct malloc_par, mp_, when found: the mmapped chunks as
 * glibc counts them, and the tcache's limits. */
struct heap_params {
	bool found;
	uint64_t addr;
	uint64_t mmap_threshold;
	uint64_t n_mmaps, mmapped_mem;
	uint64_t sbrk_base;
	uint64_t tcache_bins, tcache_count;
};

/* What mallinfo2() would return, field by field, from the walk. */
struct heap_mallinfo {
	uint64_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks,
		uordblks, fordblks, keepcost;
};

struct glibc_heap {
	/* Every chunk walked, sorted by address (mmapped ones too). */
	struct heap_block *blocks;
	size_t nblocks, alloc;
	struct heap_arena *arenas; /* [0] is main_arena */
	size_t narenas;
	uint64_t mmapped_count, mmapped_bytes; /* whole mappings */
	struct heap_params mp;
	uint64_t *tcaches;         /* the tcache_perthread_structs found */
	size_t ntcaches;
	uint64_t tcache_key;
	struct heap_problem *problems;
	size_t nproblems, problems_alloc;
};

/*
 * Walk the glibc heap of IMG into H.  0 with H filled (corruption is not
 * an error: it is in H->problems, and what could not be walked is counted
 * as unknown); -1 after saying why there is nothing to walk: no libc
 * mapped (a static binary?), no main_arena (another allocator, or glibc's
 * never used).
 */
int glibc_heap_walk(struct glibc_heap *h, struct procimage *img);
void glibc_heap_release(struct glibc_heap *h);

/* The arenas' tallies summed, mmapped chunks apart. */
void glibc_heap_total(const struct glibc_heap *h, struct heap_tally *out,
		      uint64_t *system_mem);
/* mallinfo2()'s fields, as glibc would compute them from this state. */
void glibc_heap_mallinfo(const struct glibc_heap *h,
			 struct heap_mallinfo *out);

#endif
