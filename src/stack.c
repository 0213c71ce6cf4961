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
	hashmap_init(&t->map, 4096);
	t->arena = arena;
}

void frames_free(struct frame_table *t)
{
	hashmap_free(&t->map);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

uint32_t frames_intern(struct frame_table *t, uint64_t addr)
{
	uint64_t h = hash_u64(addr);
	struct frame *f = hashmap_get(&t->map, h, NULL, NULL);

	if (f)
		return f->id;
	if (t->n >= UINT32_MAX)
		die("too many distinct frames");
	f = arena_alloc(t->arena, sizeof(*f));
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->id = (uint32_t)t->n;
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n++] = f;
	hashmap_put(&t->map, h, f);
	return f->id;
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

const struct stack *stacks_intern(struct stack_table *t,
				  const uint32_t *frames, uint32_t depth)
{
	struct stack_key key = { frames, depth };
	uint64_t h = hash_bytes(frames, depth * sizeof(*frames));
	struct stack *s = hashmap_get(&t->map, h, stack_eq, &key);

	if (s)
		return s;
	if (t->n >= UINT32_MAX)
		die("too many distinct stacks");
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

void frame_add_func(struct strbuf *sb, const struct frame *f, uint32_t k)
{
	const char *func = k < f->ninline ? f->inl[k].func : f->func;

	if (func)
		sb_addstr(sb, func);
	else
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
