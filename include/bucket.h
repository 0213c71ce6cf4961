/*
 * Buckets: an allocation site (stack + allocator kind + optional type), the
 * unit that dumps account bytes to and that policies classify.
 */
#ifndef DMPROF_BUCKET_H
#define DMPROF_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "stack.h"

enum alloc_kind {
	ALLOC_MALLOC,
	ALLOC_MMAP,
};

const char *alloc_kind_name(enum alloc_kind k);

/* What a producer recorded of a bucket's type (deep dumps). */
struct bucket_type {
	uint64_t typeinfo;         /* address of the std::type_info; 0 = none */
	const char *name;          /* the n... word, interned; "" if absent */
	const char *sym;           /* symbolized type, set by symbolization */
	bool has_typeinfo;         /* a t... word was present */
};

/* (32 bytes: a million of them is common.  Where one a producer
 * numbered was defined is the model's: model_bucket_place.) */
struct bucket {
	uint64_t id;               /* the producer's id */
	const struct stack *stack;
	struct bucket_type *type;  /* NULL: none recorded */
	uint32_t index;            /* dense 0..n-1, for per-bucket caches */
	uint8_t kind;              /* enum alloc_kind */
};

static inline uint64_t bucket_typeinfo(const struct bucket *b)
{
	return b->type ? b->type->typeinfo : 0;
}

static inline const char *bucket_type_name(const struct bucket *b)
{
	return b->type ? b->type->name : "";
}

/* The symbolized type, "no typeinfo" for none (NULL before
 * symbolization). */
static inline const char *bucket_type_sym(const struct bucket *b)
{
	return b->type ? b->type->sym : NULL;
}

/*
 * What a stack line notes of its bucket, to be summed without fetching
 * the bucket (snapshot.line_index, line_stack): its key, the index of a
 * malloc bucket, BUCKET_KEY_MMAP for an mmap bucket, BUCKET_KEY_NONE for
 * none (or for an index too big to tell from these two: such a line has
 * no key); and its stack's id (BUCKET_KEY_NONE: none).
 */
enum { BUCKET_KEY_MMAP = UINT32_MAX - 1, BUCKET_KEY_NONE = UINT32_MAX };

struct bucket_note {
	uint32_t key, stack;
};

static inline uint32_t bucket_key(const struct bucket *b)
{
	if (!b || b->index >= BUCKET_KEY_MMAP)
		return BUCKET_KEY_NONE;
	return b->kind == ALLOC_MMAP ? BUCKET_KEY_MMAP : b->index;
}

static inline struct bucket_note bucket_note(const struct bucket *b)
{
	struct bucket_note n = { bucket_key(b), BUCKET_KEY_NONE };

	if (b && b->stack)
		n.stack = b->stack->id;
	return n;
}

/* A bucket by id, with its note beside it. */
struct bucket_slot {
	struct bucket *b;
	struct bucket_note note;
};

struct bucket_set {
	/* Every bucket's id is its index + 1 (as readers that number them
	 * give them): found by index, in no table. */
	bool by_index;
	/* Else id -> bucket: small ids (producers count from 0) in an
	 * array, others in a map (hash_u64 identity). */
	struct bucket_slot *dense;
	size_t ndense;
	struct hashmap by_id;
	size_t nsparse;       /* entries in by_id */
	struct bucket **v;    /* by index */
	size_t n, alloc;
};

void bucket_set_init(struct bucket_set *s);
void bucket_set_free(struct bucket_set *s);
/* Ask for the table entry of ID early (see find_buckets in deep.c). */
static inline void bucket_set_prefetch(const struct bucket_set *s, uint64_t id)
{
	if (id < s->ndense)
		prefetch(&s->dense[id]);
}
struct bucket *bucket_set_find(const struct bucket_set *s, uint64_t id);
/* The same, and its bucket_note in *N (from the table, where the ids
 * are small: the bucket is not fetched). */
struct bucket *bucket_set_find_note(const struct bucket_set *s, uint64_t id,
				    struct bucket_note *n);
/* Add B, the last of V, by its id (no bucket of that id may be there
 * yet). */
void bucket_set_add(struct bucket_set *s, struct bucket *b);
/* B's kind or stack set (a definition, a redefinition): its note with
 * them. */
void bucket_set_renote(struct bucket_set *s, const struct bucket *b);
/* Buckets sorted by id (a new array the caller frees). */
struct bucket **bucket_set_sorted(const struct bucket_set *s);

#endif
