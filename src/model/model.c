/*
 * The model every reader fills: frames, stacks and buckets of one run,
 * interned.  Interning can fail only when a table would pass 2^32
 * entries (ids are 32 bits); then the functions say so and return NULL.
 */
#include "model.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	strtab_init(&m->strings, &m->arena);
	frames_init(&m->frames, &m->arena);
	stacks_init(&m->stacks, &m->arena);
	bucket_set_init(&m->buckets);
	hashmap_init(&m->anon_buckets, 1024);
}

void model_free(struct model *m)
{
	bucket_set_free(&m->buckets);
	hashmap_free(&m->anon_buckets);
	stacks_free(&m->stacks);
	frames_free(&m->frames);
	strtab_free(&m->strings);
	arena_free(&m->arena);
}

/*
 * The stack of FRAMES (addresses, innermost first), interned; NULL after
 * an error (more than 2^32 distinct frames or stacks).
 */
static const struct stack *model_intern_stack(struct model *m,
					      const uint64_t *frames,
					      uint32_t depth)
{
	uint32_t stackbuf[64], *ids = stackbuf;
	const struct stack *stack = NULL;
	uint32_t i;

	if (depth > ARRAY_SIZE(stackbuf))
		ids = xcalloc(depth, sizeof(*ids));
	for (i = 0; i < depth; i++)
		if ((ids[i] = frames_intern(&m->frames, frames[i])) ==
		    FRAME_NONE)
			break;
	if (i < depth)
		error("more than %" PRIu32 " distinct frames", UINT32_MAX - 1);
	else if (!(stack = stacks_intern(&m->stacks, depth ? ids : NULL,
					 depth)))
		error("more than %" PRIu32 " distinct stacks", UINT32_MAX);
	if (ids != stackbuf)
		free(ids);
	return stack;
}

struct bucket *model_define_bucket(struct model *m, uint64_t id,
				   enum alloc_kind kind, bool has_typeinfo,
				   uint64_t typeinfo, const char *type_name,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line)
{
	const struct stack *stack = model_intern_stack(m, frames, depth);
	struct bucket *b;

	if (!stack)
		return NULL;
	b = model_define_stack_bucket(
		m, id, kind, has_typeinfo, typeinfo,
		strtab_intern_str(&m->strings, type_name ? type_name : ""),
		stack, strtab_intern_str(&m->strings, source), line);
	return b;
}

struct bucket *model_define_stack_bucket(struct model *m, uint64_t id,
					 enum alloc_kind kind,
					 bool has_typeinfo, uint64_t typeinfo,
					 const char *type_name,
					 const struct stack *stack,
					 const char *source, unsigned long line)
{
	struct bucket *b = bucket_set_find(&m->buckets, id);

	if (!b) {
		if (m->buckets.n >= UINT32_MAX) {
			error("%s:%lu: more than %" PRIu32 " buckets", source,
			      line, UINT32_MAX);
			return NULL;
		}
		b = arena_alloc(&m->arena, sizeof(*b));
		memset(b, 0, sizeof(*b));
		b->id = id;
		b->index = (uint32_t)m->buckets.n;
		GROW(m->buckets.v, m->buckets.n + 1, m->buckets.alloc);
		m->buckets.v[m->buckets.n++] = b;
		bucket_set_add(&m->buckets, b);
	} else if (b->stack != stack || b->kind != kind) {
		/*
		 * The producer writes each bucket once per process; a
		 * different redefinition means files of two runs are mixed.
		 */
		warning("%s:%lu: bucket %" PRIu64 " redefined (previously "
			"at %s:%lu); using the later definition",
			source, line, id, b->source, b->source_line);
	}
	b->kind = kind;
	b->has_typeinfo = has_typeinfo;
	b->typeinfo = typeinfo;
	b->type_name = type_name;
	b->stack = stack;
	b->source = source;
	b->source_line = line;
	return b;
}

struct anon_key {
	const struct stack *stack;
	enum alloc_kind kind;
};

static bool anon_eq(const void *item, const void *key)
{
	const struct bucket *b = item;
	const struct anon_key *k = key;

	return b->stack == k->stack && b->kind == k->kind;
}

struct bucket *model_intern_bucket(struct model *m, enum alloc_kind kind,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line)
{
	struct anon_key key;
	struct bucket *b;
	uint64_t h;

	key.stack = model_intern_stack(m, frames, depth);
	key.kind = kind;
	if (!key.stack)
		return NULL;
	h = hash_u64((uint64_t)key.stack->id << 1 | (kind == ALLOC_MMAP));
	b = hashmap_get(&m->anon_buckets, h, anon_eq, &key);
	if (b)
		return b;
	b = model_define_stack_bucket(
		m, m->buckets.n + 1, kind, false, 0,
		strtab_intern_str(&m->strings, ""), key.stack,
		strtab_intern_str(&m->strings, source), line);
	if (!b)
		return NULL;
	hashmap_put(&m->anon_buckets, h, b);
	return b;
}
