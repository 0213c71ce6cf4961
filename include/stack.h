/*
 * Frames and stacks, interned (Valgrind's ExeContext idea): each distinct
 * code address is one frame, each distinct frame sequence one stack, so
 * symbolization and classification run once per distinct thing.
 */
#ifndef DMPROF_STACK_H
#define DMPROF_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "hashmap.h"
#include "util.h"

struct frame {
	uint64_t addr;
	uint32_t id;     /* dense */
	/*
	 * Filled by symbolization.  func NULL means unresolved (printed as
	 * 0x%016x); file NULL means no source information (printed "?").
	 */
	const char *func;
	const char *file;
	uint32_t line;
	bool symbolized;
};

struct frame_table {
	struct hashmap map; /* addr -> struct frame * (hash_u64 identity) */
	struct frame **v;   /* dense, by id */
	size_t n, alloc;
	struct arena *arena;
};

struct stack {
	uint32_t id;     /* dense */
	uint32_t depth;
	uint32_t frames[]; /* frame ids, innermost (allocation site) first */
};

struct stack_table {
	struct hashmap map;
	struct stack **v;
	size_t n, alloc;
	struct arena *arena;
};

void frames_init(struct frame_table *t, struct arena *arena);
void frames_free(struct frame_table *t);
uint32_t frames_intern(struct frame_table *t, uint64_t addr);
static inline struct frame *frame_get(const struct frame_table *t, uint32_t id)
{
	return t->v[id];
}

void stacks_init(struct stack_table *t, struct arena *arena);
void stacks_free(struct stack_table *t);
const struct stack *stacks_intern(struct stack_table *t,
				  const uint32_t *frames, uint32_t depth);

/* Append a frame's function name ("0x%016x" when unresolved). */
void frame_add_func(struct strbuf *sb, const struct frame *f);
/* Append a frame's source file ("?" when unknown). */
void frame_add_file(struct strbuf *sb, const struct frame *f);

#endif
