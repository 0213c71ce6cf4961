/*
 * The blocks in use of a walked heap by type (see blocktypes.h).  A
 * snapshot's bucket of blocks in use is typed by the builder when the
 * typing knew them; else its first frame is their size class.
 */
#include "blocktypes.h"

#include <string.h>

#include "util.h"

/* The first frame of B's stack, named (a snapshot's), or NULL. */
static const char *first_frame(const struct model *m, const struct bucket *b)
{
	const struct frame *f;

	if (!b->stack->depth)
		return NULL;
	f = frame_get(&m->frames, b->stack->frames[0]);
	return f->func;
}

const char *blocktypes_name(const struct model *m, const struct bucket *b)
{
	const char *sym, *first;

	if (!b || b->kind != ALLOC_MALLOC)
		return NULL;
	sym = bucket_type_sym(b);
	if (sym && *sym)
		return sym;
	first = first_frame(m, b);
	return first && starts_with(first, "size-") ? first : NULL;
}

bool blocktypes_leaked(const struct model *m, const struct bucket *b)
{
	/* (The builder's mark, after the type and the size class.) */
	for (uint32_t i = 1; i < b->stack->depth && i < 3; i++) {
		const struct frame *f = frame_get(&m->frames,
						  b->stack->frames[i]);

		if (f->func && !strcmp(f->func, "dmprof_leaked"))
			return true;
	}
	return false;
}

struct tally_entry *blocktypes_add(struct tally *t, const struct model *m,
				   const struct stack_line *l)
{
	const char *name = l->bucket ? blocktypes_name(m, l->bucket) : NULL;
	struct tally_entry *e;
	int64_t n;

	if (!name)
		return NULL;
	e = tally_get(t, name, strlen(name));
	n = sub64(l->alloc, l->free, &t->overflow);
	e->allocs = add64(e->allocs, n, &t->overflow);
	e->bytes = add64(e->bytes, l->virt, &t->overflow);
	if (blocktypes_leaked(m, l->bucket)) {
		e->v[BLOCKTYPES_LEAKED] =
			add64(e->v[BLOCKTYPES_LEAKED], n, &t->overflow);
		e->v[BLOCKTYPES_LEAKED_BYTES] = add64(
			e->v[BLOCKTYPES_LEAKED_BYTES], l->virt, &t->overflow);
	}
	return e;
}

void blocktypes_add_snapshot(struct tally *t, const struct model *m,
			     const struct snapshot *snap)
{
	for (size_t i = 0; i < snap->nlines; i++)
		blocktypes_add(t, m, &snap->lines[i]);
}

int blocktypes_cmp(const void *a, const void *b)
{
	const struct tally_entry *x = *(const struct tally_entry *const *)a;
	const struct tally_entry *y = *(const struct tally_entry *const *)b;

	return CMP(y->bytes, x->bytes) ?: CMP(y->allocs, x->allocs) ?:
	       strcmp(x->key, y->key);
}
