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

static void frames_grow(struct frame_table *t)
{
	size_t mask = t->mask * 2 + 1;
	struct frame_slot *s = xcalloc_table(mask + 1, sizeof(*s));

	for (size_t i = 0; i <= t->mask; i++) {
		size_t k;

		if (!t->slots[i].id)
			continue;
		k = (size_t)hash_u64(t->slots[i].addr) & mask;
		while (s[k].id)
			k = (k + 1) & mask;
		s[k] = t->slots[i];
	}
	free(t->slots);
	t->slots = s;
	t->mask = mask;
}

uint32_t frames_intern(struct frame_table *t, uint64_t addr)
{
	size_t k = (size_t)hash_u64(addr) & t->mask;
	struct frame *f;

	while (t->slots[k].id) {
		if (t->slots[k].addr == addr)
			return t->slots[k].id - 1;
		k = (k + 1) & t->mask;
	}
	if (t->n >= FRAME_NONE - 1)
		return FRAME_NONE;
	f = arena_alloc(t->arena, sizeof(*f));
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->id = (uint32_t)t->n;
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n++] = f;
	t->slots[k].addr = addr;
	t->slots[k].id = f->id + 1;
	if (t->n * 2 > t->mask)
		frames_grow(t);
	return f->id;
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
	memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
	for (size_t i = 0; i < n; i++)
		frames_place(t, t->v[i]);
}

void stacks_init(struct stack_table *t, struct arena *arena)
{
	memset(t, 0, sizeof(*t));
	hashmap_init(&t->map, 4096);
	t->arena = arena;
}

void stacks_free(struct stack_table *t)
{
	hashmap_free(&t->map);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

struct stack_key {
	const uint32_t *frames;
	uint32_t depth;
};

static bool stack_eq(const void *item, const void *k)
{
	const struct stack *s = item;
	const struct stack_key *key = k;

	/* (An empty stack may have no frames array at all.) */
	return s->depth == key->depth &&
	       (!key->depth || memcmp(s->frames, key->frames,
				      key->depth * sizeof(*key->frames)) == 0);
}

uint64_t stacks_hash(const uint32_t *frames, uint32_t depth)
{
	return hash_bytes(frames, depth * sizeof(*frames));
}

void stacks_prefetch(const struct stack_table *t, uint64_t hash)
{
	hashmap_prefetch(&t->map, hash);
}

const struct stack *stacks_intern(struct stack_table *t,
				  const uint32_t *frames, uint32_t depth)
{
	return stacks_intern_hashed(t, frames, depth,
				    stacks_hash(frames, depth));
}

const struct stack *stacks_intern_hashed(struct stack_table *t,
					 const uint32_t *frames,
					 uint32_t depth, uint64_t h)
{
	struct stack_key key = { frames, depth };
	struct stack *s = hashmap_get(&t->map, h, stack_eq, &key);

	if (s)
		return s;
	if (t->n >= UINT32_MAX)
		return NULL;
	s = arena_alloc(t->arena,
			st_add(sizeof(*s), st_mult(depth, sizeof(*frames))));
	s->id = (uint32_t)t->n;
	s->depth = depth;
	if (depth)
		memcpy(s->frames, frames, depth * sizeof(*frames));
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n++] = s;
	hashmap_put(&t->map, h, s);
	return s;
}

void stacks_truncate(struct stack_table *t, size_t n)
{
	if (n >= t->n)
		return;
	t->n = n;
	hashmap_free(&t->map);
	hashmap_init(&t->map, n);
	for (size_t i = 0; i < n; i++)
		hashmap_put(&t->map, stacks_hash(t->v[i]->frames,
						 t->v[i]->depth), t->v[i]);
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
