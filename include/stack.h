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

/* A function inlined at a frame's address (from DWARF). */
struct inline_frame {
	const char *func;
	const char *file;
	uint32_t line;
	uint32_t func_len;    /* strlen(func), set with the frame's */
};

struct frame {
	uint64_t addr;
	uint32_t id;     /* dense */
	/* The binary mapped at addr, as model_binary() names it: 0 when
	 * not known (set by symbolization). */
	uint32_t bin;
	/*
	 * Filled by symbolization.  func NULL means unresolved (printed as
	 * 0x%016x); file NULL means no source information (printed "?").
	 * They describe the function the address is in; functions inlined
	 * into it at the address come first, innermost first, as logical
	 * frames of their own.
	 */
	const char *func;
	const char *file;
	const struct inline_frame *inl;
	uint32_t line;
	uint32_t func_len;    /* strlen(func), or 0 if unknown: stacks are
				 joined often */
	uint16_t ninline;
	bool symbolized;
	/* (56 bytes, the fields in this order: a run has a million.) */
};

/* Logical frames of F: the inlined functions, then F's own. */
static inline uint32_t frame_nlogical(const struct frame *f)
{
	return (uint32_t)f->ninline + 1;
}

struct frame_slot {
	uint64_t addr;
	uint32_t id;        /* + 1; 0: an empty slot */
};

struct frame_table {
	/* addr -> id: open addressing, the id in the slot itself (a bucket
	 * file has tens of millions of frames to look up). */
	struct frame_slot *slots;
	size_t mask;
	struct frame **v;   /* dense, by id */
	size_t n, alloc;
	struct arena *arena;
	bool stale;         /* slots let go (see frames_trim) */
};

struct stack {
	uint32_t id;     /* dense */
	uint32_t depth;
	uint32_t frames[]; /* frame ids, innermost (allocation site) first */
};

struct stack_slot {
	uint32_t tag;       /* the hash's high half (see stack.c) */
	uint32_t id;        /* + 1; 0: an empty slot */
};

struct stack_table {
	/* frames -> id (see stack.c) */
	struct stack_slot *slots;
	size_t mask;
	struct stack **v;
	size_t n, alloc;
	struct arena *arena;
	bool stale;         /* slots let go (see stacks_trim) */
};

/* SLOTS (MASK + 1 of them, ids by hash_u64 of the address), twice as
 * many (for a table of one's own, as a reader thread keeps). */
void frame_slots_grow(struct frame_slot **slots, size_t *mask);

void frames_init(struct frame_table *t, struct arena *arena);
void frames_free(struct frame_table *t);
/* The id of ADDR's frame; FRAME_NONE when 2^32 - 1 ids are taken. */
#define FRAME_NONE UINT32_MAX
uint32_t frames_intern(struct frame_table *t, uint64_t addr);
/* The same, ADDR's hash_u64 H known. */
uint32_t frames_intern_hashed(struct frame_table *t, uint64_t addr,
			      uint64_t h);
/* Ask for the slot of ADDR early, to intern it soon. */
static inline void frames_prefetch(const struct frame_table *t, uint64_t addr)
{
	prefetch(&t->slots[(size_t)hash_u64(addr) & t->mask]);
}
/* The same, of hash H: H. */
static inline uint64_t frames_prefetch_hashed(const struct frame_table *t,
					      uint64_t h)
{
	prefetch(&t->slots[(size_t)h & t->mask]);
	return h;
}
/*
 * The id of ADDR's frame, which the caller knows is not interned: its
 * slot is not made, and the address table is let go (as frames_trim) for
 * frames_adopt to give it one, else for the next frames_intern to build.
 */
uint32_t frames_append(struct frame_table *t, uint64_t addr);
/*
 * SLOTS (MASK + 1 of them, from xmalloc) as T's address table, let go
 * since: the caller's, that holds exactly T's frames.
 */
void frames_adopt(struct frame_table *t, struct frame_slot *slots,
		  size_t mask);
/* Forget the frames from id N on (a reader's failed file). */
void frames_truncate(struct frame_table *t, size_t n);
/*
 * Let the address table go while no frame is interned (its frames stay):
 * it is built again when one is.  frames_ready builds it now, for a
 * reader of the slots.
 */
void frames_trim(struct frame_table *t);
void frames_ready(struct frame_table *t);
static inline struct frame *frame_get(const struct frame_table *t, uint32_t id)
{
	return t->v[id];
}

void stacks_init(struct stack_table *t, struct arena *arena);
void stacks_free(struct stack_table *t);
/* The interned stack; NULL when 2^32 stacks exist already. */
const struct stack *stacks_intern(struct stack_table *t,
				  const uint32_t *frames, uint32_t depth);
/* The same in steps, for batches: the hash, a prefetch, the intern. */
uint64_t stacks_hash(const uint32_t *frames, uint32_t depth);
void stacks_prefetch(const struct stack_table *t, uint64_t hash);
const struct stack *stacks_intern_hashed(struct stack_table *t,
					 const uint32_t *frames,
					 uint32_t depth, uint64_t hash);

/* Room for N stacks in all: the table made as big as it would grow to
 * (no table made and let go on the way: fresh memory is a page fault
 * and a page zeroed). */
void stacks_reserve(struct stack_table *t, size_t n);
/* Forget the stacks from id N on. */
void stacks_truncate(struct stack_table *t, size_t n);
/* The same as frames_trim, for stacks. */
void stacks_trim(struct stack_table *t);

/*
 * Append logical frame K of F: its function name ("0x%016x" of the address
 * when unresolved), or its source file ("?" when unknown).
 */
void frame_add_func(struct strbuf *sb, const struct frame *f, uint32_t k);
void frame_add_file(struct strbuf *sb, const struct frame *f, uint32_t k);
/* Its line number, 0 when unknown. */
uint32_t frame_line(const struct frame *f, uint32_t k);

#endif
