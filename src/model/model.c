/*
 * The model every reader fills: frames, stacks and buckets of one run,
 * interned.  Interning can fail only when a table would pass 2^32
 * entries (ids are 32 bits); then the functions say so and return NULL.
 */
#include "model.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "util.h"

/* Where the addresses of frames named without one start: past user
 * space, so they never meet a real one. */
#define SYNTHETIC_BASE 0xffffff0000000000ULL

void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	/*
	 * A million stacks' model is a few hundred megabytes of arena,
	 * filled and read in no order: in small pages it was 30,000 page
	 * faults to fill, misses of the TLB to read (classifying a million
	 * buckets went through four pointers each), and 12 ms of a
	 * 480 ms run at exit giving back each page (3 in huge ones).
	 */
	m->arena.grows_huge = true;
	m->string_arena.grows_huge = true;
	strtab_init(&m->strings, &m->string_arena);
	frames_init(&m->frames, &m->arena);
	stacks_init(&m->stacks, &m->arena);
	bucket_set_init(&m->buckets);
	hashmap_init(&m->named, 64);
	m->next_synthetic = SYNTHETIC_BASE;
}

void model_free(struct model *m)
{
	bucket_set_free(&m->buckets);
	free(m->anon);
	free(m->places);
	free(m->place_files);
	hashmap_free(&m->named);
	free(m->bins);
	stacks_free(&m->stacks);
	frames_free(&m->frames);
	strtab_free(&m->strings);
	arena_free(&m->string_arena);
	arena_free(&m->arena);
}

void model_trim(struct model *m)
{
	frames_trim(&m->frames);
	stacks_trim(&m->stacks);
	/* (A million stacks' map is 8 MB.) */
	free(m->anon);
	m->anon = NULL;
	m->nanon = 0;
	m->anon_stale = true;
}

/* The map of (stack, kind) to bucket again after model_trim, from the
 * buckets made of a stack (those without a place: no producer's number). */
static void anon_ready(struct model *m)
{
	size_t n = 1024;

	m->anon_stale = false;
	while (n < m->stacks.n)
		n = st_mult(n, 2);
	m->anon = xcalloc(st_mult(n, 2), sizeof(*m->anon));
	m->nanon = n;
	for (size_t i = 0; i < m->buckets.n; i++) {
		const struct bucket *b = m->buckets.v[i];
		uint32_t *slot;

		if (!b->stack || b->stack->id >= n ||
		    (b->index < m->nplaces && m->places[b->index].file))
			continue;
		slot = &m->anon[2 * (size_t)b->stack->id +
				(b->kind == ALLOC_MMAP)];
		if (!*slot)
			*slot = b->index + 1;
	}
}

const struct stack *model_intern_stack(struct model *m,
				       const uint64_t *frames, uint32_t depth)
{
	uint32_t stackbuf[64], *ids = stackbuf;
	const struct stack *stack = NULL;
	uint32_t i;

	if (depth > ARRAY_SIZE(stackbuf))
		ids = xcalloc(depth, sizeof(*ids));
	/* The table's slots are far apart: ask for them all, then wait
	 * once instead of once a frame. */
	for (i = 0; i < depth && i < 16; i++)
		frames_prefetch(&m->frames, frames[i]);
	for (i = 0; i < depth; i++) {
		if (i + 16 < depth)
			frames_prefetch(&m->frames, frames[i + 16]);
		if ((ids[i] = frames_intern(&m->frames, frames[i])) ==
		    FRAME_NONE)
			break;
	}
	if (i < depth)
		error("more than %" PRIu32 " distinct frames", UINT32_MAX - 1);
	else if (!(stack = stacks_intern(&m->stacks, depth ? ids : NULL,
					 depth)))
		error("more than %" PRIu32 " distinct stacks", UINT32_MAX);
	if (ids != stackbuf)
		free(ids);
	return stack;
}

const struct stack *model_intern_stack_ids(struct model *m,
					   const uint32_t *ids, uint32_t depth,
					   uint64_t hash)
{
	const struct stack *stack =
		stacks_intern_hashed(&m->stacks, depth ? ids : NULL, depth,
				     hash);

	if (!stack)
		error("more than %" PRIu32 " distinct stacks", UINT32_MAX);
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

struct bucket_place model_bucket_place(const struct model *m,
				       const struct bucket *b)
{
	if (b->index >= m->nplaces || !m->places[b->index].file)
		return (struct bucket_place){ NULL, 0 };
	return (struct bucket_place){ m->place_files[m->places[b->index].file -
						     1],
				      m->places[b->index].line };
}

/* B was defined at SOURCE:LINE (interned).  (A line past 2^32 - 1, of
 * a file of a hundred GB, is no place.) */
static void place(struct model *m, const struct bucket *b, const char *source,
		  unsigned long line)
{
	size_t f = m->nplace_files;

	/* (A file defines thousands: the last one first.) */
	if (f && m->place_files[f - 1] == source)
		f--;
	else
		for (f = 0; f < m->nplace_files; f++)
			if (m->place_files[f] == source)
				break;
	if (f == m->nplace_files) {
		GROW(m->place_files, f + 1, m->place_files_alloc);
		m->place_files[m->nplace_files++] = source;
	}
	if (b->index >= m->nplaces) {
		size_t n = m->nplaces ? m->nplaces : 1024;

		while (n <= b->index)
			n = st_mult(n, 2);
		m->places = xrecallocarray(m->places, m->nplaces, n,
					   sizeof(*m->places));
		m->nplaces = n;
	}
	m->places[b->index].file = line <= UINT32_MAX ? (uint32_t)f + 1 : 0;
	m->places[b->index].line = (uint32_t)line;
}

void model_expect_buckets(struct model *m, size_t n, bool by_stack)
{
	size_t total = st_add(m->buckets.n, n),
	       stacks = st_add(m->stacks.n, n);

	stacks_reserve(&m->stacks, stacks);
	/* (The map of stacks to buckets too, as many as said, in huge
	 * pages: doubled to the next power of two, a million stacks' map
	 * was 16 MB, faulted in and copied as it grew.) */
	if (by_stack && !m->anon_stale && stacks > m->nanon) {
		uint32_t *a = xreserve_huge(m->anon, st_mult(m->nanon, 2),
					    st_mult(stacks, 2), sizeof(*a));

		memset(a + 2 * m->nanon, 0,
		       (stacks - m->nanon) * 2 * sizeof(*a));
		m->anon = a;
		m->nanon = stacks;
	}
	if (total > m->buckets.alloc) {
		m->buckets.v = xreserve_huge(m->buckets.v, m->buckets.n, total,
					     sizeof(*m->buckets.v));
		m->buckets.alloc = total;
	}
}

/* model_define_stack_bucket, where a place is kept if PLACED. */
static struct bucket *define(struct model *m, uint64_t id,
			     enum alloc_kind kind, bool has_typeinfo,
			     uint64_t typeinfo, const char *type_name,
			     const struct stack *stack, const char *source,
			     unsigned long line, bool placed)
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
		b->kind = kind;
		GROW(m->buckets.v, m->buckets.n + 1, m->buckets.alloc);
		m->buckets.v[m->buckets.n++] = b;
		bucket_set_add(&m->buckets, b);
	} else if (b->stack != stack || b->kind != kind) {
		/*
		 * The producer writes each bucket once per process; a
		 * different redefinition means files of two runs are mixed.
		 */
		struct bucket_place was = model_bucket_place(m, b);

		if (was.source)
			warning("%s:%lu: bucket %" PRIu64 " redefined "
				"(previously at %s:%lu); using the later "
				"definition",
				source, line, id, was.source, was.line);
		else
			warning("%s:%lu: bucket %" PRIu64 " redefined; using "
				"the later definition",
				source, line, id);
	}
	b->kind = kind;
	if (!b->type && (has_typeinfo || typeinfo || *type_name)) {
		b->type = arena_alloc(&m->arena, sizeof(*b->type));
		memset(b->type, 0, sizeof(*b->type));
		m->typed++;
		/* (Symbolized already, as a bucket without one.) */
		if (b->index < m->buckets_done)
			b->type->sym = strtab_intern_str(&m->strings,
							 "no typeinfo");
	}
	if (b->type) {
		/* (A redefinition keeps the type symbolized before.) */
		b->type->has_typeinfo = has_typeinfo;
		b->type->typeinfo = typeinfo;
		b->type->name = type_name;
	}
	b->stack = stack;
	bucket_set_renote(&m->buckets, b);
	if (placed)
		place(m, b, source, line);
	return b;
}

struct bucket *model_define_stack_bucket(struct model *m, uint64_t id,
					 enum alloc_kind kind,
					 bool has_typeinfo, uint64_t typeinfo,
					 const char *type_name,
					 const struct stack *stack,
					 const char *source, unsigned long line)
{
	return define(m, id, kind, has_typeinfo, typeinfo, type_name, stack,
		      source, line, true);
}

void model_bucket_type(struct model *m, struct bucket *b, uint64_t typeinfo,
		       const char *sym)
{
	if (!b->type) {
		b->type = arena_alloc(&m->arena, sizeof(*b->type));
		memset(b->type, 0, sizeof(*b->type));
		m->typed++;
	}
	b->type->has_typeinfo = typeinfo != 0;
	b->type->typeinfo = typeinfo;
	b->type->name = sym;
	b->type->sym = sym;
}

struct bucket *model_intern_bucket(struct model *m, enum alloc_kind kind,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line)
{
	const struct stack *stack = model_intern_stack(m, frames, depth);

	return stack ? model_stack_bucket(m, kind, stack, source, line) : NULL;
}

struct bucket *model_stack_bucket(struct model *m, enum alloc_kind kind,
				  const struct stack *stack,
				  const char *source, unsigned long line)
{
	struct bucket *b;
	uint32_t *slot;

	if (m->anon_stale)
		anon_ready(m);
	/* (By stack id: a new stack's is the next, not a cache miss.) */
	if (stack->id >= m->nanon) {
		size_t n = m->nanon ? m->nanon : 1024;

		while (n <= stack->id)
			n = st_mult(n, 2);
		m->anon = xrecallocarray(m->anon, 2 * m->nanon, st_mult(n, 2),
					 sizeof(*m->anon));
		m->nanon = n;
	}
	slot = &m->anon[2 * (size_t)stack->id + (kind == ALLOC_MMAP)];
	if (*slot)
		return m->buckets.v[*slot - 1];
	if (!m->empty)
		m->empty = strtab_intern_str(&m->strings, "");
	/* (No place kept: the next number is never defined again.) */
	b = define(m, m->buckets.n + 1, kind, false, 0, m->empty, stack,
		   source, line, false);
	if (b)
		*slot = b->index + 1;
	return b;
}

bool model_drop_stack_buckets(struct model *m, size_t n)
{
	if (!m->buckets.by_index || n > m->buckets.n || n < m->buckets_done)
		return false;
	/* (After model_trim the map is made again from the buckets kept.) */
	for (size_t i = n; !m->anon_stale && i < m->buckets.n; i++) {
		const struct bucket *b = m->buckets.v[i];
		uint32_t *slot;

		if (!b->stack || b->stack->id >= m->nanon)
			BUG("bucket %zu was not made by model_stack_bucket", i);
		slot = &m->anon[2 * (size_t)b->stack->id +
				(b->kind == ALLOC_MMAP)];
		if (*slot != i + 1)
			BUG("bucket %zu was not made by model_stack_bucket", i);
		*slot = 0;
	}
	/* (Their memory stays in the arena, as the model's does.) */
	m->buckets.n = n;
	return true;
}

void model_mark(const struct model *m, struct model_mark *mark)
{
	mark->frames = m->frames.n;
	mark->stacks = m->stacks.n;
	mark->next_synthetic = m->next_synthetic;
}

/* A named frame: its address as the profile gave it, and the frame. */
struct named_entry {
	uint64_t given;
	struct frame *f;
};

struct named_key {
	uint64_t given;
	const struct frame *want; /* names to compare, in a frame */
};

static bool same_names(const struct frame *a, const struct frame *b)
{
	if (a->func != b->func || a->file != b->file || a->line != b->line ||
	    a->ninline != b->ninline)
		return false;
	for (uint16_t k = 0; k < a->ninline; k++)
		if (a->inl[k].func != b->inl[k].func ||
		    a->inl[k].file != b->inl[k].file ||
		    a->inl[k].line != b->inl[k].line)
			return false;
	return true;
}

static bool named_eq(const void *item, const void *key)
{
	const struct named_entry *e = item;
	const struct named_key *k = key;

	return e->given == k->given && same_names(e->f, k->want);
}

static uint64_t names_hash(uint64_t given, const struct frame *f)
{
	uint64_t h = hash_u64(given ^ (uintptr_t)f->func) ^ f->line;

	for (uint16_t k = 0; k < f->ninline; k++)
		h = hash_u64(h ^ (uintptr_t)f->inl[k].func) ^ f->inl[k].line;
	return h;
}

/* Give F (still unnamed) the names of WANT. */
static void name_frame(struct frame *f, const struct frame *want)
{
	f->func = want->func;
	f->func_len = want->func_len;
	f->file = want->file;
	f->line = want->line;
	f->ninline = want->ninline;
	f->inl = want->inl;
	f->symbolized = true;
}

uint64_t model_named_frame(struct model *m, uint64_t addr,
			   const struct frame_name *names, uint32_t n)
{
	struct frame want;
	struct inline_frame *inl = NULL;
	struct named_key key;
	struct named_entry *e;
	uint64_t h;
	uint32_t id;

	if (!n)
		return addr; /* nothing to name it with */
	if (n - 1 > UINT16_MAX)
		n = UINT16_MAX + 1; /* (no compiler inlines so deep) */
	memset(&want, 0, sizeof(want));
	if (n > 1)
		inl = arena_alloc(&m->arena, (n - 1) * sizeof(*inl));
	for (uint32_t k = 0; k < n; k++) {
		const struct frame_name *fn = &names[k];
		const char *func = strtab_intern(&m->strings, fn->func,
						 fn->func_len);
		const char *file = fn->file && fn->file_len
					   ? strtab_intern(&m->strings,
							   fn->file,
							   fn->file_len)
					   : NULL;

		if (k + 1 < n) {
			inl[k].func = func;
			inl[k].func_len = (uint32_t)fn->func_len;
			inl[k].file = file;
			inl[k].line = fn->line;
		} else {
			want.func = func;
			want.func_len = (uint32_t)fn->func_len;
			want.file = file;
			want.line = fn->line;
		}
	}
	want.ninline = (uint16_t)(n - 1);
	want.inl = inl;
	key.given = addr;
	key.want = &want;
	h = names_hash(addr, &want);
	e = hashmap_get(&m->named, h, named_eq, &key);
	if (e)
		return e->f->addr;
	if (addr) {
		id = frames_intern(&m->frames, addr);
		if (id == FRAME_NONE)
			return addr; /* (said when the stack is interned) */
		e = arena_alloc(&m->arena, sizeof(*e));
		e->given = addr;
		e->f = frame_get(&m->frames, id);
		if (!e->f->symbolized) {
			name_frame(e->f, &want);
			hashmap_put(&m->named, h, e);
			return addr;
		}
	} else {
		e = arena_alloc(&m->arena, sizeof(*e));
		e->given = addr;
	}
	/* An address of its own. */
	id = frames_intern(&m->frames, m->next_synthetic++);
	if (id == FRAME_NONE)
		return m->next_synthetic - 1;
	e->f = frame_get(&m->frames, id);
	name_frame(e->f, &want);
	hashmap_put(&m->named, h, e);
	return e->f->addr;
}

void model_rollback(struct model *m, const struct model_mark *mark)
{
	struct hashmap kept;
	struct named_entry *e;

	if (m->frames.n == mark->frames && m->stacks.n == mark->stacks)
		return;
	/* The anonymous buckets' slots of the stacks to go are empty:
	 * buckets are made once a reader has all its stacks. */
	stacks_truncate(&m->stacks, mark->stacks);
	frames_truncate(&m->frames, mark->frames);
	m->next_synthetic = mark->next_synthetic;
	hashmap_init(&kept, m->named.count);
	for (size_t i = 0; hashmap_next(&m->named, &i, (void **)&e);)
		if (e->f->id < mark->frames)
			hashmap_put(&kept, names_hash(e->given, e->f), e);
	hashmap_free(&m->named);
	m->named = kept;
}

void model_note_runtime(struct model *m, const struct snapshot *snap)
{
	const char *v = m->runtime_bin ? NULL : snapshot_meta(snap, "Runtime");
	const char *path;

	/* "LANGUAGE VERSION PATH": the path is the rest (it may hold
	 * spaces). */
	if (!v || !(path = strchr(v, ' ')) || !(path = strchr(path + 1, ' ')) ||
	    path[1] != '/')
		return;
	m->runtime_bin = model_binary(m, strtab_intern_str(&m->strings,
							   path + 1));
	m->runtime = strtab_intern(&m->strings, v, strcspn(v, " "));
}

uint32_t model_binary(struct model *m, const char *path)
{
	/* (A process maps a few hundred files: a look along them will do,
	 * and symbolization asks once per run of frames in one binary.) */
	for (size_t i = 1; i < m->nbins; i++)
		if (m->bins[i] == path)
			return (uint32_t)i;
	if (!m->nbins)
		m->nbins = 1;
	GROW(m->bins, m->nbins + 1, m->bins_alloc);
	m->bins[m->nbins] = path;
	return (uint32_t)m->nbins++;
}
