/*
 * A process's malloc heap walked from outside, through a process image
 * (src/memory/heap.c): its blocks, the memory they are carved from, its
 * arenas, what was found wrong, whatever allocator's it is; and the
 * allocators' walkers, a row each in heap.c's table (glibc's today:
 * glibc_heap.c), the first that finds its heap in the image walking it.
 */
#ifndef DMPROF_HEAP_H
#define DMPROF_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap_summary.h"
#include "procimage.h"
#include "util.h"

#define HEAP_MMAPPED_ARENA 4095 /* the arena of an mmapped chunk */
#define HEAP_PYMALLOC_ARENA 4094 /* CPython's arenas (an extent's) */
#define HEAP_MAX_ARENAS 4094

/* One chunk.  The user's pointer is CHUNK + 16. */
struct heap_block {
	uint64_t chunk;
	uint64_t size : 48;  /* the chunk's size, flags cleared */
	uint64_t state : 4;  /* enum heap_state */
	uint64_t arena : 12; /* index in heap.arenas, or
				HEAP_MMAPPED_ARENA */
};

/* The bytes an in-use block offers its user (malloc_usable_size): of
 * glibc's chunks, a header of 16 bytes, 8 of them the user's but in a
 * chunk mapped alone.  (Inline: the scan and the typing ask it for every
 * block.) */
static inline uint64_t heap_block_usable(const struct heap_block *b)
{
	if (b->arena == HEAP_MMAPPED_ARENA)
		return b->size - 16;
	return b->size - 8;
}

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

/* A corruption found, or what could not be read: where (the image and
 * an address), and what (its words whole, the address in them). */
struct heap_problem {
	struct fault f;
	int arena;            /* -1: not an arena's */
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

/* Memory the heap holds: an arena's heap, or an mmapped chunk. */
struct heap_extent {
	uint64_t start, end;
	unsigned arena;       /* or HEAP_MMAPPED_ARENA */
};

struct heap {
	/* Every chunk walked, sorted by address (mmapped ones too). */
	struct heap_block *blocks;
	size_t nblocks, alloc;
	/* What the chunks are carved from, sorted by address: the first
	 * chunk of an arena's heap may come after its headers, but the
	 * heap is all the arena's. */
	struct heap_extent *extents;
	size_t nextents;
	struct heap_arena *arenas; /* [0] is main_arena */
	size_t narenas;
	uint64_t mmapped_count, mmapped_bytes; /* whole mappings */
	/* glibc's: its malloc_par, and its tcaches (see glibc_heap.c). */
	struct heap_params mp;
	uint64_t *tcaches;         /* the tcache_perthread_structs found */
	size_t ntcaches;
	uint64_t tcache_key;
	struct heap_problem *problems;
	size_t nproblems, problems_alloc;
	struct fault why;          /* why there was nothing to walk */
	/* Then, the malloc the process uses where it is known to be another
	 * one (jemalloc, tcmalloc, mimalloc: from the libraries mapped or
	 * the executable's symbols), or NULL. */
	const char *allocator;
	/* CPython's object allocator, walked beside glibc's heap where an
	 * interpreter is mapped (pymalloc.h), or NULL. */
	struct pymalloc *py;
};

/*
 * An allocator's walker: WALK finds its heap in IMG and walks it into H
 * (0), or says in the fault H->why why there is none of its kind to walk
 * (-1); corruption is no error (H->problems).  Either way H is released
 * with heap_release.  A walker is a file of its own defining one (const
 * struct walker walker_NAME) and a row of heap.c's table.
 */
struct walker {
	const char *name;
	int (*walk)(struct heap *h, struct procimage *img);
};

/*
 * The heap of IMG, by the first walker that finds one: 0, or -1 with
 * H->why saying why there is nothing to walk (the first walker's words).
 */
int heap_walk(struct heap *h, struct procimage *img);

/*
 * The malloc IMG's process uses, where it is another allocator than
 * glibc's: "jemalloc", "tcmalloc" or "mimalloc", from a library of it
 * mapped (its path into *FROM) or the executable's exported symbols; or
 * NULL.
 */
const char *heap_allocator(const struct procimage *img, const char **from);
void heap_release(struct heap *h);

/* Was an arena locked at the instant (a thread inside malloc or free:
 * its lists may be mid-update, and a walk a little later may do better)? */
bool heap_locked(const struct heap *h);

/* H summed up: the arenas' tallies, mmapped chunks apart. */
void heap_summarize(const struct heap *h, struct heap_summary *out);

#endif
