/*
 * Arena: bump allocation in 1 MiB blocks; an oversized request gets a block
 * of its own so a huge string does not waste the rest of the current one.
 */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define ARENA_BLOCK (1u << 20)
#define ARENA_ALIGN 8

struct arena_block {
	struct arena_block *next;
	/* The payload follows, aligned by the allocation's own alignment. */
	max_align_t data[];
};

/* The payload of A's blocks. */
static size_t block_size(const struct arena *a)
{
	return a->huge ? HUGE_PAGE - sizeof(struct arena_block)
		       : ARENA_BLOCK;
}

static char *new_block(struct arena *a, size_t payload)
{
	struct arena_block *b =
		a->huge ? xmalloc_huge(HUGE_PAGE)
			: xmalloc(st_add(sizeof(*b), payload));

	b->next = a->blocks;
	a->blocks = b;
	return (char *)b->data;
}

void *arena_alloc(struct arena *a, size_t size)
{
	char *p;

	size = st_add(size, ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (size == 0)
		size = ARENA_ALIGN;
	a->total += size;
	if (size > block_size(a) / 4) {
		/*
		 * Big: own block, linked behind the current one so the
		 * current block keeps serving small requests.
		 */
		struct arena_block *b = xmalloc(st_add(sizeof(*b), size));

		if (a->blocks) {
			b->next = a->blocks->next;
			a->blocks->next = b;
		} else {
			b->next = NULL;
			a->blocks = b;
			a->cur = a->end = NULL;
		}
		return b->data;
	}
	if (!a->cur || (size_t)(a->end - a->cur) < size) {
		/* (Its blocks in huge pages from then on: see grows_huge.) */
		if (a->grows_huge && a->total >= ARENA_HUGE_FROM)
			a->huge = true;
		a->cur = new_block(a, block_size(a));
		a->end = a->cur + block_size(a);
	}
	p = a->cur;
	a->cur += size;
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, st_add(n, 1));

	if (n)
		memcpy(p, s, n); /* (S may be NULL when N is 0) */
	p[n] = '\0';
	return p;
}

void arena_free(struct arena *a)
{
	struct arena_block *b = a->blocks;

	while (b) {
		struct arena_block *next = b->next;

		free(b);
		b = next;
	}
	a->blocks = NULL;
	a->cur = a->end = NULL;
	a->total = 0;
	if (a->grows_huge)
		a->huge = false;
}
