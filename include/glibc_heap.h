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

#include "heap_summary.h"
#include "procimage.h"

#define HEAP_MMAPPED_ARENA 4095 /* the arena of an mmapped chunk */
#define HEAP_MAX_ARENAS 4095
/* A thread arena's heaps: this big at most, and aligned to it (the rest
 * of each such stretch is reserved PROT_NONE). */
#define HEAP_THREAD_HEAP_MAX (64ull << 20)
/* sizeof(struct malloc_state), an arena's own struct (2.36, x86-64). */
#define HEAP_ARENA_SIZE 2200

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

struct glibc_heap {
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
	struct heap_params mp;
	uint64_t *tcaches;         /* the tcache_perthread_structs found */
	size_t ntcaches;
	uint64_t tcache_key;
	struct heap_problem *problems;
	size_t nproblems, problems_alloc;
	struct fault why;          /* why there was nothing to walk */
};

/*
 * Walk the glibc heap of IMG into H.  0 with H filled (corruption is not
 * an error: it is in H->problems, and what could not be walked is counted
 * as unknown); -1 with the fault H->why saying why there is nothing to
 * walk (for the caller to say, as an error or not): no libc mapped (a
 * static binary?), no main_arena (another allocator, or glibc's never
 * used).
 * Either way H is released with glibc_heap_release.
 */
int glibc_heap_walk(struct glibc_heap *h, struct procimage *img);
void glibc_heap_release(struct glibc_heap *h);

/* Was an arena locked at the instant (a thread inside malloc or free:
 * its lists may be mid-update, and a walk a little later may do better)? */
bool glibc_heap_locked(const struct glibc_heap *h);

/* H summed up: the arenas' tallies, mmapped chunks apart. */
void glibc_heap_summary(const struct glibc_heap *h, struct heap_summary *out);

#endif
