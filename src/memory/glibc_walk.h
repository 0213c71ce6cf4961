/*
 * The state of one walk of a glibc heap, shared by the files that make
 * it (glibc_heap.c: arenas and chunks; glibc_lists.c: the free lists;
 * glibc_mmapped.c: mmapped chunks; glibc_walk.c: reading and problems),
 * and glibc 2.36's layouts on x86-64 that more than one of them reads.
 */
#ifndef DMPROF_GLIBC_WALK_H
#define DMPROF_GLIBC_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "glibc_heap.h"
#include "hashmap.h"
#include "util.h"

/* Chunks. */
#define CHUNK_HDR 16
#define MINSIZE 32
#define PREV_INUSE 1
#define IS_MMAPPED 2
#define NON_MAIN_ARENA 4
#define SIZE_FLAGS 7
#define PAGE 4096u
#define MIN_LARGE_SIZE 1024
#define NFASTBINS 10
#define NBINS 128
#define TCACHE_MAX_BINS 64
#define TCACHE_STRUCT_CHUNK 0x290
#define TCACHE_STRUCT_SIZE 640 /* uint16_t counts[64]; entries[64] */
#define HEAP_MAX_SIZE HEAP_THREAD_HEAP_MAX

/* struct malloc_state. */
#define MS_MUTEX 0
#define MS_FLAGS 4
#define MS_HAVE_FASTCHUNKS 8
#define MS_FASTBINS 16
#define MS_TOP 96
#define MS_BINS 112
#define MS_NEXT 2160
#define MS_ATTACHED 2176
#define MS_SYSTEM_MEM 2184
#define MS_SIZE HEAP_ARENA_SIZE

#define CACHE_PAGES 256

/* A stretch of one heap to walk, or one mmapped chunk. */
struct region {
	uint64_t start, end;
	uint64_t first;   /* the first chunk */
	uint64_t top;     /* the arena's top, when it lies here; else 0 */
	unsigned arena;   /* or HEAP_MMAPPED_ARENA */
};

struct span {
	uint64_t start, end;
};

struct walk {
	struct heap *h;
	struct procimage *img;
	uint64_t heap_max;
	struct span heap_vma;      /* [heap], or empty */
	/* libc's writable data, read once. */
	struct {
		uint64_t addr;
		uint8_t *data;
		size_t len;
	} libc[4];
	size_t nlibc;
	struct region *regions;
	size_t nregions, regions_alloc;
	struct span *unknown;      /* stretches not walked */
	size_t nunknown, unknown_alloc;
	uint64_t *first_chunks;    /* each arena's first chunk */
	struct {
		uint8_t *buf;
		uint64_t base;
		size_t len;
	} win;
	uint8_t *cache;
	uint64_t cache_tag[CACHE_PAGES]; /* page + 1; 0: empty */
	/* Arenas whose next chain was followed: whether it came back (a
	 * ring of look-alikes is followed once, not once per member). */
	struct hashmap chains;
	struct chain_known *known;
	size_t nknown, known_alloc;
};

struct chain_known {
	uint64_t addr;
	bool returns;
	size_t n;        /* the chain's arenas, when it returns */
};

static inline uint64_t get64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static inline int32_t get32(const uint8_t *p, size_t off)
{
	int32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static inline bool in_span(const struct span *s, uint64_t addr)
{
	return addr >= s->start && addr < s->end;
}

/*
 * Say what is wrong at ADDR (in ARENA, or -1), marking the arena
 * corrupt; kept in the heap's problems, the first MAX_PROBLEMS of them.
 */
void walk_problem(struct walk *w, int arena, uint64_t addr, const char *fmt,
		  ...) PRINTF(4, 5);
/* LEN bytes at ADDR through the page cache (for the lists' scattered
 * reads); false when some page cannot be read. */
bool walk_read(struct walk *w, uint64_t addr, void *out, size_t len);
bool walk_word(struct walk *w, uint64_t addr, uint64_t *v);
/* Is WORD somewhere in libc's writable data (tcache_key)? */
bool walk_in_libc(const struct walk *w, uint64_t word);
void walk_add_region(struct walk *w, const struct region *r);
/* Does ADDR lie in a stretch the walk could not reach? */
bool walk_in_unknown(const struct walk *w, uint64_t addr);

/* The mmapped chunks, as regions (see glibc_mmapped.c); are they all
 * that glibc counts? */
void glibc_mmapped_find(struct walk *w);
bool glibc_mmapped_complete(const struct walk *w);
/* Mark the chunks of every arena's fastbins and bins, then of every
 * tcache found (see glibc_lists.c). */
void glibc_lists_walk(struct walk *w);
void glibc_lists_tcaches(struct walk *w);

#endif
