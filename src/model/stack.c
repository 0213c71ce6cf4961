/*
 * Frame and stack interning.  Stacks are hashed over their frame ids, so
 * two buckets with the same backtrace share one stack and one
 * classification.
 */
#include "stack.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void frames_init(struct frame_table *t, struct arena *arena)
{
	memset(t, 0, sizeof(*t));
	t->mask = 4095;
	t->slots = xcalloc(t->mask + 1, sizeof(*t->slots));
	t->arena = arena;
}

void frames_free(struct frame_table *t)
{
	free(t->slots);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

void frame_slots_grow(struct frame_slot **slots, size_t *mask)
{
	size_t m = *mask * 2 + 1;
	struct frame_slot *s = xcalloc_table(m + 1, sizeof(*s));

	for (size_t i = 0; i <= *mask; i++) {
		size_t k;

		if (!(*slots)[i].id)
			continue;
		k = (size_t)hash_u64((*slots)[i].addr) & m;
		while (s[k].id)
			k = (k + 1) & m;
		s[k] = (*slots)[i];
	}
	free(*slots);
	*slots = s;
	*mask = m;
}

/* A new frame for ADDR, the next id's (which must be free). */
static struct frame *frame_new(struct frame_table *t, uint64_t addr)
{
	struct frame *f = arena_alloc(t->arena, sizeof(*f));

	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->id = (uint32_t)t->n;
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n++] = f;
	return f;
}

uint32_t frames_intern(struct frame_table *t, uint64_t addr)
{
	return frames_intern_hashed(t, addr, hash_u64(addr));
}

uint32_t frames_intern_hashed(struct frame_table *t, uint64_t addr,
			      uint64_t h)
{
	size_t k;
	struct frame *f;

	frames_ready(t);
	k = (size_t)h & t->mask;
	while (t->slots[k].id) {
		if (t->slots[k].addr == addr)
			return t->slots[k].id - 1;
		k = (k + 1) & t->mask;
	}
	if (t->n >= FRAME_NONE - 1)
		return FRAME_NONE;
	f = frame_new(t, addr);
	t->slots[k].addr = addr;
	t->slots[k].id = f->id + 1;
	if (t->n * 2 > t->mask)
		frame_slots_grow(&t->slots, &t->mask);
	return f->id;
}

uint32_t frames_append(struct frame_table *t, uint64_t addr)
{
	if (t->n >= FRAME_NONE - 1)
		return FRAME_NONE;
	if (!t->stale)
		frames_trim(t);
	return frame_new(t, addr)->id;
}

void frames_adopt(struct frame_table *t, struct frame_slot *slots,
		  size_t mask)
{
	if (!t->stale)
		BUG("frames adopted over a table in use");
	free(t->slots);
	t->slots = slots;
	t->mask = mask;
	t->stale = false;
}

/* Put frame F's address in the (large enough) table. */
static void frames_place(struct frame_table *t, const struct frame *f)
{
	size_t k = (size_t)hash_u64(f->addr) & t->mask;

	while (t->slots[k].id)
		k = (k + 1) & t->mask;
	t->slots[k].addr = f->addr;
	t->slots[k].id = f->id + 1;
}

void frames_truncate(struct frame_table *t, size_t n)
{
	if (n >= t->n)
		return;
	t->n = n;
	if (t->stale)
		return;
	memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
	for (size_t i = 0; i < n; i++)
		frames_place(t, t->v[i]);
}

void frames_trim(struct frame_table *t)
{
	/* (A slot of its own: frames_prefetch may still ask for one.) */
	free(t->slots);
	t->slots = xcalloc(1, sizeof(*t->slots));
	t->mask = 0;
	t->stale = true;
}

void frames_ready(struct frame_table *t)
{
	size_t mask = 4095;

	if (!t->stale)
		return;
	while (t->n * 2 > mask)
		mask = mask * 2 + 1;
	free(t->slots);
	t->slots = xcalloc_table(mask + 1, sizeof(*t->slots));
	t->mask = mask;
	t->stale = false;
	for (size_t i = 0; i < t->n; i++)
		frames_place(t, t->v[i]);
}

/*
 * The stack table is open addressing over (tag, id) slots of 8 bytes: a
 * million stacks are common, and the generic table's 16-byte slots would
 * be 32 MB of them.  The tag is the hash's high half, and its low bits
 * pick the slot, so that the table grows without hashing a stack again
 * (the tag tells a stack from those of its slot by the bits above).
 */
#define STACK_SLOTS0 4096

static inline uint32_t stack_tag(uint64_t h)
{
	return (uint32_t)(h >> 32);
}

static void stacks_alloc(struct stack_table *t, size_t nslots)
{
	t->slots = xcalloc_table(nslots, sizeof(*t->slots));
	t->mask = nslots - 1;
}

void stacks_init(struct stack_table *t, struct arena *arena)
{
	memset(t, 0, sizeof(*t));
	stacks_alloc(t, STACK_SLOTS0);
	t->arena = arena;
}

void stacks_free(struct stack_table *t)
{
	free(t->slots);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

uint64_t stacks_hash(const uint32_t *frames, uint32_t depth)
{
	return hash_bytes(frames, depth * sizeof(*frames));
}

void stacks_prefetch(const struct stack_table *t, uint64_t hash)
{
	prefetch(&t->slots[stack_tag(hash) & t->mask]);
}

/* The slot of the stack FRAMES (hash H), or of the empty one it would
 * take. */
static struct stack_slot *stacks_slot(const struct stack_table *t,
				      const uint32_t *frames, uint32_t depth,
				      uint64_t h)
{
	uint32_t tag = stack_tag(h);
	size_t k = tag & t->mask;

	for (;; k = (k + 1) & t->mask) {
		struct stack_slot *slot = &t->slots[k];
		const struct stack *s;

		if (!slot->id)
			return slot;
		if (slot->tag != tag)
			continue;
		s = t->v[slot->id - 1];
		/* (An empty stack may have no frames array at all.) */
		if (s->depth == depth &&
		    (!depth || !memcmp(s->frames, frames,
				       depth * sizeof(*frames))))
			return slot;
	}
}

/* The slots of OLD (NOLD of them) whose stacks are below N, in a table
 * of NSLOTS. */
static void stacks_rehash(struct stack_table *t, struct stack_slot *old,
			  size_t nold, size_t n, size_t nslots)
{
	stacks_alloc(t, nslots);
	for (size_t i = 0; i < nold; i++) {
		size_t k = old[i].tag & t->mask;

		if (!old[i].id || old[i].id > n)
			continue;
		while (t->slots[k].id)
			k = (k + 1) & t->mask;
		t->slots[k] = old[i];
	}
	free(old);
}

const struct stack *stacks_intern(struct stack_table *t,
				  const uint32_t *frames, uint32_t depth)
{
	return stacks_intern_hashed(t, frames, depth,
				    stacks_hash(frames, depth));
}

/* The slots, built again after stacks_trim. */
static void stacks_ready(struct stack_table *t)
{
	size_t nslots = STACK_SLOTS0;

	if (!t->stale)
		return;
	while (t->n * 4 > nslots * 3)
		nslots = st_mult(nslots, 2);
	free(t->slots);
	stacks_alloc(t, nslots);
	t->stale = false;
	for (size_t i = 0; i < t->n; i++) {
		const struct stack *s = t->v[i];
		uint64_t h = stacks_hash(s->depth ? s->frames : NULL, s->depth);
		size_t k = stack_tag(h) & t->mask;

		while (t->slots[k].id)
			k = (k + 1) & t->mask;
		t->slots[k].tag = stack_tag(h);
		t->slots[k].id = s->id + 1;
	}
}

void stacks_trim(struct stack_table *t)
{
	/* (A slot of its own: stacks_prefetch may still ask for one.) */
	free(t->slots);
	stacks_alloc(t, 1);
	t->stale = true;
}

const struct stack *stacks_intern_hashed(struct stack_table *t,
					 const uint32_t *frames,
					 uint32_t depth, uint64_t h)
{
	struct stack_slot *slot;
	struct stack *s;

	stacks_ready(t);
	slot = stacks_slot(t, frames, depth, h);
	if (slot->id)
		return t->v[slot->id - 1];
	if (t->n >= UINT32_MAX - 1)
		return NULL;
	s = arena_alloc(t->arena,
			st_add(sizeof(*s), st_mult(depth, sizeof(*frames))));
	s->id = (uint32_t)t->n;
	s->depth = depth;
	if (depth)
		memcpy(s->frames, frames, depth * sizeof(*frames));
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n++] = s;
	slot->tag = stack_tag(h);
	slot->id = s->id + 1;
	/* (At most three quarters full: probes stay short.) */
	if (t->n * 4 > (t->mask + 1) * 3)
		stacks_rehash(t, t->slots, t->mask + 1, t->n,
			      st_mult(t->mask + 1, 2));
	return s;
}

void stacks_reserve(struct stack_table *t, size_t n)
{
	size_t nslots = t->mask + 1;

	if (t->stale)
		return; /* (built for what it holds when asked) */
	while (st_mult(n, 4) > st_mult(nslots, 3))
		nslots = st_mult(nslots, 2);
	if (nslots > t->mask + 1)
		stacks_rehash(t, t->slots, t->mask + 1, t->n, nslots);
	if (n > t->alloc) {
		t->v = xreserve_huge(t->v, t->n, n, sizeof(*t->v));
		t->alloc = n;
	}
}

void stacks_truncate(struct stack_table *t, size_t n)
{
	if (n >= t->n)
		return;
	t->n = n;
	if (t->stale)
		return;
	stacks_rehash(t, t->slots, t->mask + 1, n, t->mask + 1);
}

void frame_add_func(struct strbuf *sb, const struct frame *f, uint32_t k)
{
	const char *func = k < f->ninline ? f->inl[k].func : f->func;

	if (func) {
		uint32_t len = k < f->ninline ? f->inl[k].func_len
					      : f->func_len;

		/* (0: not known, as for names set by hand.) */
		sb_add(sb, func, len ? len : strlen(func));
	} else
		sb_addf(sb, "0x%016" PRIx64, f->addr);
}

void frame_add_file(struct strbuf *sb, const struct frame *f, uint32_t k)
{
	const char *file = k < f->ninline ? f->inl[k].file : f->file;

	sb_addstr(sb, file ? file : "?");
}

uint32_t frame_line(const struct frame *f, uint32_t k)
{
	return k < f->ninline ? f->inl[k].line : f->line;
}
