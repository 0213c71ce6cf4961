/*
 * Single blocks, read while the memory is at hand (see inspect.h): where
 * each address lies once the heap is walked, the words that point into
 * it as the scan offers them, its bytes and what they point at, or the
 * first bytes of every block of a type, once the typing is done.
 */
#include "inspect.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pymalloc.h"
#include "search.h"
#include "snapfile.h"
#include "util.h"

/* x86-64's struct user_regs_struct, in order. */
static const char *const reg_names[IMAGE_NREGS] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9",
	"r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs",
	"eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
};

const char *inspect_reg_name(int reg)
{
	return reg >= 0 && reg < IMAGE_NREGS ? reg_names[reg] : "?";
}

const char *inspect_type_name(const struct capture *s, size_t i,
			      struct strbuf *sb)
{
	const struct heap_block *b = &s->h.blocks[i];
	uint64_t lo, hi;

	if (s->scanned && i < s->types.nblocks && s->types.of[i])
		return s->types.types[s->types.of[i]].name;
	/* (As a snapshot names the blocks of no known type.) */
	snap_size_bounds(snap_size_class(heap_block_usable(b)), &lo, &hi);
	sb_reset(sb);
	sb_addf(sb, "size-%" PRIu64 "..%" PRIu64, lo, hi);
	return sb->buf;
}

/* The chunk holding ADDR (header included), or -1. */
static ptrdiff_t chunk_at(const struct heap *h, uint64_t addr)
{
	size_t i = PARTITION_POINT(h->nblocks, k, h->blocks[k].chunk <= addr);
	const struct heap_block *b;

	if (!i)
		return -1;
	b = &h->blocks[i - 1];
	return addr - b->chunk < b->size ? (ptrdiff_t)(i - 1) : -1;
}

/* The mapping of IMG holding ADDR, or -1. */
static ptrdiff_t vma_at(const struct procimage *img, uint64_t addr)
{
	const struct vma *v = maps_find(&img->maps, addr);

	return v ? v - img->maps.v : -1;
}

/* The thread whose stack pointer is the lowest in mapping V, or -1. */
static ptrdiff_t stack_thread(const struct procimage *img, const struct vma *v)
{
	ptrdiff_t best = -1;

	for (size_t i = 0; i < img->nthreads; i++) {
		uint64_t sp = img->threads[i].sp;

		if (sp >= v->start && sp < v->end &&
		    (best < 0 || sp < img->threads[best].sp))
			best = (ptrdiff_t)i;
	}
	return best;
}

static bool walked_py(const struct heap *h)
{
	return h->py && h->py->walked;
}

/* The Python type of block I of S (glibc's), or NULL; its type object's
 * address in *ADDR. */
static const char *py_type_of(const struct capture *s, size_t i,
			      uint64_t *addr)
{
	const struct block_type *bt;

	if (!s->scanned || i >= s->types.nblocks || !s->types.of[i])
		return NULL;
	bt = &s->types.types[s->types.of[i]];
	*addr = bt->typeinfo;
	return bt->kind == TYPE_PYTHON ? bt->name : NULL;
}

/* A Python object's value, for people, from its first LEN bytes. */
static char *py_value(const struct capture *s, const char *name,
		      uint64_t type, const uint8_t *bytes, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	if (!name || !walked_py(&s->h))
		return NULL;
	pymalloc_value(s->h.py, name, type, bytes, len, &sb);
	return sb_detach(&sb);
}

/* Where T's address lies, and what references into it are. */
static void place(struct capture *s, struct inspect_target *t)
{
	const struct heap *h = &s->h;
	uint64_t a = t->addr;
	ptrdiff_t i;

	t->block = t->vma = t->thread = -1;
	t->lo = t->hi = 0;
	t->vma = vma_at(s->img, a);
	if (s->walked && (i = heap_find_block(h, a)) >= 0) {
		const struct heap_block *b = &h->blocks[i];

		t->place = PLACE_BLOCK;
		t->block = i;
		t->lo = b->chunk + 16;
		t->hi = t->lo + heap_block_usable(b);
		return;
	}
	if (s->walked && (i = chunk_at(h, a)) >= 0) {
		const struct heap_block *b = &h->blocks[i];

		t->block = i;
		if (b->state == HEAP_IN_USE) {
			t->place = PLACE_HEADER;
			t->lo = b->chunk + 16;
			t->hi = t->lo + heap_block_usable(b);
		} else {
			/* (glibc's lists point at a free chunk's header.) */
			t->place = PLACE_FREE;
			t->lo = b->chunk;
			t->hi = b->chunk + b->size;
		}
		return;
	}
	if (walked_py(h) && (i = pymalloc_find(h->py, a)) >= 0) {
		const struct pymalloc *py = h->py;

		t->place = PLACE_PYBLOCK;
		t->block = i;
		t->lo = py_block_addr(py->blocks[i]);
		t->hi = t->lo + py_class_size(py, py_block_class(py->blocks[i]));
		return;
	}
	if (pymalloc_in_arenas(h->py, a)) {
		t->place = PLACE_PYFREE;
		return;
	}
	for (size_t k = 0; s->walked && k < h->nextents; k++)
		if (a >= h->extents[k].start && a < h->extents[k].end) {
			t->place = PLACE_HEAP;
			t->arena = h->extents[k].arena;
			return;
		}
	if (t->vma < 0) {
		t->place = PLACE_NONE;
		return;
	}
	t->thread = stack_thread(s->img, &s->img->maps.v[t->vma]);
	t->place = t->thread >= 0 ? PLACE_STACK : PLACE_MAPPING;
}

/* By the start of what references point into. */
static int cmp_by_lo(const void *a, const void *b, void *targets)
{
	const struct inspect_target *t = targets;
	uint64_t x = t[*(const size_t *)a].lo, y = t[*(const size_t *)b].lo;

	return (x > y) - (x < y);
}

/* The targets references are looked for, by LO, and their span. */
static void order_targets(struct inspect *in)
{
	in->norder = 0;
	in->span_lo = UINT64_MAX;
	in->span_hi = 0;
	for (size_t k = 0; k < in->ntargets; k++) {
		const struct inspect_target *t = &in->targets[k];

		if (t->hi <= t->lo)
			continue;
		in->order[in->norder++] = k;
		if (t->lo < in->span_lo)
			in->span_lo = t->lo;
		if (t->hi > in->span_hi)
			in->span_hi = t->hi;
	}
	qsort_r(in->order, in->norder, sizeof(*in->order), cmp_by_lo,
		in->targets);
}

static void walked(struct capture *s, void *ctx)
{
	struct inspect *in = ctx;

	/* (From here on again on a retry: a capture tries again while an
	 * arena is locked.) */
	in->h = &s->h;
	for (size_t k = 0; k < in->ntargets; k++) {
		struct inspect_target *t = &in->targets[k];
		uint64_t addr = t->addr;

		FREE_ALL(t->bytes, t->value, t->in, t->out);
		memset(t, 0, sizeof(*t));
		t->addr = addr;
		place(s, t);
	}
	order_targets(in);
	for (size_t k = 0; k < in->nblocks; k++)
		free(in->blocks[k].value);
	in->nblocks = 0;
	in->type_known = false;
}

static struct inspect_ref *add_ref(struct inspect_ref **v, size_t *n,
				   size_t *alloc, uint64_t *count)
{
	struct inspect_ref *r;

	++*count;
	if (*n >= INSPECT_MAX_REFS)
		return NULL;
	r = PUSH_ZEROED(*v, *n, *alloc);
	r->block = -1;
	return r;
}

/*
 * Words at ADDR that point into a target: incoming references.  Every
 * word of the heap and the roots comes here, so most leave at the span's
 * test; the rest find their target by a search (targets in one block
 * share its range: each of them is given the word).
 */
static void look(struct inspect *in, uint64_t addr, const uint64_t *w,
		 size_t n, ptrdiff_t block, enum heap_root_kind root)
{
	const struct inspect_target *tg = in->targets;
	const size_t *order = in->order;
	uint64_t span_lo = in->span_lo, span = in->span_hi - in->span_lo;

	if (!in->norder)
		return;
	for (size_t j = 0; j < n; j++) {
		uint64_t v = w[j];
		size_t p;

		if (v - span_lo >= span)
			continue;
		p = PARTITION_POINT(in->norder, i, tg[order[i]].lo <= v);
		for (size_t q = p; q && tg[order[q - 1]].lo == tg[order[p - 1]].lo;
		     q--) {
			struct inspect_target *t = &in->targets[order[q - 1]];
			struct inspect_ref *r;

			if (v >= t->hi)
				continue;
			r = add_ref(&t->in, &t->nin, &t->in_alloc,
				    &t->in_count);
			if (!r)
				continue;
			r->at = addr + 8 * j;
			r->value = v;
			r->block = block;
			r->root = root;
		}
	}
}

static void visit_block(void *ctx, size_t i, uint64_t offset,
			const uint64_t *words, size_t nwords)
{
	struct inspect *in = ctx;
	const struct heap_block *b = &in->h->blocks[i];

	look(in, b->chunk + 16 + offset, words, nwords, (ptrdiff_t)i,
	     ROOT_NKINDS);
}

static void visit_root(void *ctx, const struct heap_root_range *range,
		       uint64_t addr, const uint64_t *words, size_t nwords)
{
	struct inspect *in = ctx;

	look(in, addr, words, nwords, -1, range ? range->kind : ROOT_OTHER);
}

/* The registers that point into a target: the roots' values (IMAGE_NREGS
 * a thread, in the image's order). */
static void registers(struct capture *s, struct inspect *in)
{
	const struct reach_roots *r = &s->roots;

	for (size_t k = 0; k < in->ntargets; k++) {
		struct inspect_target *t = &in->targets[k];

		for (size_t i = 0; t->hi > t->lo && i < r->nvalues; i++) {
			struct inspect_ref *ref;

			if (r->values[i] - t->lo >= t->hi - t->lo)
				continue;
			ref = add_ref(&t->in, &t->nin, &t->in_alloc,
				      &t->in_count);
			if (!ref)
				continue;
			ref->value = r->values[i];
			ref->root = ROOT_REGISTERS;
			ref->thread = i / IMAGE_NREGS;
			ref->reg = (int)(i % IMAGE_NREGS);
		}
	}
}

/* A word W at AT of T's block: an outgoing reference, if it points into
 * a block in use (glibc's or pymalloc's). */
static void out_ref(const struct capture *s, struct inspect_target *t,
		    uint64_t at, uint64_t w)
{
	struct inspect_ref *r;
	ptrdiff_t j = heap_find_block(&s->h, w);
	bool py = false;

	if (j < 0 && walked_py(&s->h) &&
	    (j = pymalloc_find(s->h.py, w)) >= 0)
		py = true;
	if (j < 0)
		return;
	r = add_ref(&t->out, &t->nout, &t->out_alloc, &t->out_count);
	if (!r)
		return;
	r->at = at;
	r->value = w;
	r->block = j;
	r->py = py;
}

/* T's block's bytes, the blocks in use they point into, and, of a Python
 * object, its value. */
static void read_target(struct capture *s, struct inspect_target *t)
{
	const struct heap_block *b = NULL;
	uint64_t start, len, type = 0;
	const char *pyname = NULL;

	if (t->place == PLACE_PYBLOCK) {
		const struct pymalloc *py = s->h.py;
		const struct py_type *pt = &py->types[py->type_of[t->block]];

		start = t->lo;
		len = t->hi - t->lo;
		if (py->type_of[t->block])
			pyname = pt->name, type = pt->addr;
	} else {
		b = &s->h.blocks[t->block];
		start = b->chunk + 16;
		len = b->state == HEAP_IN_USE ? heap_block_usable(b)
					      : b->size - 16;
		if (b->state == HEAP_IN_USE)
			pyname = py_type_of(s, (size_t)t->block, &type);
	}
	if (len > INSPECT_MAX_BYTES)
		len = INSPECT_MAX_BYTES;
	t->bytes = xmalloc(len ? len : 1);
	t->nbytes = procimage_read(s->img, start, t->bytes, len);
	t->unread = t->nbytes < len;
	if (b && b->state != HEAP_IN_USE)
		return; /* (what a free chunk holds is stale) */
	t->value = py_value(s, pyname, type, t->bytes, t->nbytes);
	for (size_t off = 0; off + 8 <= t->nbytes; off += 8)
		out_ref(s, t, start + off, load_u64(t->bytes + off));
}

static void add_block(struct inspect *in, size_t i, bool py, uint64_t addr,
		      uint64_t size)
{
	struct inspect_block *ib;

	ib = PUSH_ZEROED(in->blocks, in->nblocks, in->blocks_alloc);
	ib->block = i;
	ib->py = py;
	ib->addr = addr;
	ib->size = size;
}

/* IN's blocks of pymalloc's, of its type: a Python type, or for a block
 * of none, its size's name, as the snapshot counts it (count_python). */
static void type_py_blocks(struct capture *s, struct inspect *in)
{
	const struct pymalloc *py = s->h.py;
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; walked_py(&s->h) && i < py->nblocks; i++) {
		uint64_t b = py->blocks[i];
		uint64_t size = py_class_size(py, py_block_class(b)), lo, hi;
		const char *name = py->types[py->type_of[i]].name;

		if (!py->type_of[i]) {
			snap_size_bounds(snap_size_class(size), &lo, &hi);
			sb_reset(&sb);
			sb_addf(&sb, "size-%" PRIu64 "..%" PRIu64, lo, hi);
			name = sb.buf;
		}
		if (!strcmp(name, in->type))
			add_block(in, i, true, py_block_addr(b), size);
	}
	sb_release(&sb);
}

/* The Python type of IB, or NULL; its type object in *TYPE. */
static const char *block_py_type(const struct capture *s,
				 const struct inspect_block *ib,
				 uint64_t *type)
{
	const struct py_type *pt;

	if (!ib->py)
		return py_type_of(s, ib->block, type);
	if (!s->h.py->type_of[ib->block])
		return NULL;
	pt = &s->h.py->types[s->h.py->type_of[ib->block]];
	*type = pt->addr;
	return pt->name;
}

/* The values of IN's blocks that are Python objects (one gather). */
#define VALUE_BYTES 256
static void type_values(struct capture *s, struct inspect *in)
{
	uint64_t *addrs = xcalloc(in->nblocks, sizeof(*addrs)), type;
	uint8_t *out = xcalloc(in->nblocks, VALUE_BYTES);
	bool *ok = xcalloc(in->nblocks, sizeof(*ok));

	for (size_t k = 0; k < in->nblocks; k++)
		addrs[k] = in->blocks[k].addr;
	procimage_gather(s->img, addrs, in->nblocks, VALUE_BYTES, out, ok);
	for (size_t k = 0; k < in->nblocks; k++) {
		struct inspect_block *ib = &in->blocks[k];
		const char *name = block_py_type(s, ib, &type);

		if (ok[k] && name)
			ib->value = py_value(s, name, type,
					     out + k * VALUE_BYTES,
					     ib->size < VALUE_BYTES ? ib->size
								   : VALUE_BYTES);
	}
	free(addrs);
	free(out);
	free(ok);
}

static int cmp_block_addr(const void *a, const void *b)
{
	const struct inspect_block *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The blocks of IN's type, by address, their first bytes (one gather),
 * and a Python object's value. */
static void type_blocks(struct capture *s, struct inspect *in)
{
	struct strbuf sb = STRBUF_INIT;
	uint64_t *addrs;
	uint8_t *out;
	bool *ok;

	for (size_t i = 0; i < s->h.nblocks; i++) {
		const struct heap_block *b = &s->h.blocks[i];

		if (b->state == HEAP_IN_USE &&
		    !strcmp(inspect_type_name(s, i, &sb), in->type))
			add_block(in, i, false, b->chunk + 16, b->size);
	}
	sb_release(&sb);
	type_py_blocks(s, in);
	in->type_known = in->nblocks > 0;
	if (!in->nblocks)
		return;
	qsort(in->blocks, in->nblocks, sizeof(*in->blocks), cmp_block_addr);
	addrs = xcalloc(in->nblocks, sizeof(*addrs));
	out = xcalloc(in->nblocks, INSPECT_HEAD);
	ok = xcalloc(in->nblocks, sizeof(*ok));
	for (size_t k = 0; k < in->nblocks; k++)
		addrs[k] = in->blocks[k].addr;
	procimage_gather(s->img, addrs, in->nblocks, INSPECT_HEAD, out, ok);
	for (size_t k = 0; k < in->nblocks; k++) {
		struct inspect_block *ib = &in->blocks[k];
		uint64_t u = ib->py ? ib->size
				    : heap_block_usable(&s->h.blocks[ib->block]);

		if (!ok[k])
			continue;
		ib->nhead = (uint8_t)(u < INSPECT_HEAD ? u : INSPECT_HEAD);
		memcpy(ib->head, out + k * INSPECT_HEAD, ib->nhead);
	}
	free(addrs);
	free(out);
	free(ok);
	type_values(s, in);
}

static void at_hand(struct capture *s, void *ctx)
{
	struct inspect *in = ctx;

	if (s->scanned)
		registers(s, in);
	for (size_t k = 0; k < in->ntargets; k++)
		if (in->targets[k].block >= 0)
			read_target(s, &in->targets[k]);
	if (in->type && s->walked)
		type_blocks(s, in);
}

void inspect_init(struct inspect *in, const uint64_t *addrs, size_t n,
		  const char *type)
{
	memset(in, 0, sizeof(*in));
	in->targets = xcalloc(n ? n : 1, sizeof(*in->targets));
	in->order = xcalloc(n ? n : 1, sizeof(*in->order));
	in->ntargets = n;
	for (size_t k = 0; k < n; k++)
		in->targets[k].addr = addrs[k];
	in->type = type;
	in->hook.walked = walked;
	in->hook.visitor.block = visit_block;
	in->hook.visitor.root = visit_root;
	in->hook.visitor.ctx = in;
	in->hook.at_hand = at_hand;
	in->hook.ctx = in;
}

void inspect_release(struct inspect *in)
{
	for (size_t k = 0; k < in->nblocks; k++)
		free(in->blocks[k].value);
	for (size_t k = 0; k < in->ntargets; k++) {
		FREE_ALL(in->targets[k].value, in->targets[k].bytes,
			 in->targets[k].in, in->targets[k].out);
	}
	free(in->targets);
	free(in->order);
	free(in->blocks);
	memset(in, 0, sizeof(*in));
}
