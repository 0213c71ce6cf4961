/*
 * glibc's malloc heap (2.36, x86-64) walked from outside, through a
 * process image, into a struct heap (heap.h): every arena, every chunk,
 * which free list holds each free one, and what glibc's own mallinfo2()
 * would count.  No debug symbols are needed: the arenas and the tcaches
 * are found by their structure (see glibc_heap.c).
 */
#ifndef DMPROF_GLIBC_HEAP_H
#define DMPROF_GLIBC_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap.h"

/* A thread arena's heaps: this big at most, and aligned to it (the rest
 * of each such stretch is reserved PROT_NONE). */
#define HEAP_THREAD_HEAP_MAX (64ull << 20)
/* sizeof(struct malloc_state), an arena's own struct (2.36, x86-64). */
#define HEAP_ARENA_SIZE 2200

/*
 * Walk the glibc heap of IMG into H (the glibc walker's walk: see
 * struct walker): no libc mapped (a static binary?), no main_arena
 * (another allocator, or glibc's never used) is -1 with H->why.
 */
int glibc_heap_walk(struct heap *h, struct procimage *img);

#endif
