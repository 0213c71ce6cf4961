/*
 * Region allocator for data that lives as long as a run: strings, stacks,
 * symbols.  Many small allocations, one free at the end.
 */
#ifndef DMPROF_ARENA_H
#define DMPROF_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *blocks;
	char *cur;
	char *end;
	size_t total; /* bytes handed out, for statistics */
	/* Blocks of 2 MiB in huge pages (xmalloc_huge), for an arena that
	 * fills megabytes at once: one fault a block, not 512. */
	bool huge;
	/* Huge once it holds ARENA_HUGE_FROM bytes (a model's: small for a
	 * small run, hundreds of megabytes for a big one). */
	bool grows_huge;
};
#define ARENA_INIT { NULL, NULL, NULL, 0, false, false }
#define ARENA_HUGE_FROM ((size_t)8 << 20)

/* SIZE bytes aligned to 8 (nothing kept in an arena needs more); never
 * fails (dies on out-of-memory). */
void *arena_alloc(struct arena *a, size_t size);
/* Copy N bytes into the arena and NUL-terminate them. */
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* Release every block; the arena may be reused afterwards. */
void arena_free(struct arena *a);

#endif
