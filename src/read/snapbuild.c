/*
 * The snapshot builder: records of a process's memory (snapfile.h) into
 * the snapshot and the model, whether a snapshot file's reader or a
 * core's capture gives them.  It checks what only the sum of records can
 * tell (a mapping's parts against the mapping, mappings in order) and
 * interprets META's values; the shape of each line is the reader's to
 * check.
 */
#include "snapbuild.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "scan.h"
#include "util.h"

void snapbuild_init(struct snap_builder *b, struct snapshot *snap,
		    struct model *m, struct reader_pos *pos)
{
	memset(b, 0, sizeof(*b));
	b->snap = snap;
	b->m = m;
	b->pos = pos;
	b->vma = -1;
	snap->kernel_view = true;
	snap->mmap_by_regions = true;
	snap->counts_unknown = true;
	snap->counts_live = true;
	snap->has_meta = snap->has_mmap_list = true;
}

/* ---- frames ---- */

static uint64_t named(struct snap_builder *b, const char *name, size_t len)
{
	struct frame_name fn = { name, len, NULL, 0, 0 };

	return model_named_frame(b->m, 0, &fn, 1);
}

static uint64_t named_str(struct snap_builder *b, const char *name)
{
	return named(b, name, strlen(name));
}

static uint64_t where_frame(struct snap_builder *b, int where)
{
	char name[32];

	if (where == SNAP_WHERE_MMAPPED)
		return named_str(b, "mmapped");
	if (where == SNAP_WHERE_PYMALLOC)
		return named_str(b, "pymalloc");
	snprintf(name, sizeof(name), "arena-%d", where);
	return named_str(b, name);
}

/*
 * The bucket of stack TYPE (if known), FIRST, dmprof_leaked (if LEAKED),
 * then WHERE's frame (none for SNAP_WHERE_NONE): the type is what a
 * block is known by, so it stands where an allocation's owner does.
 */
static struct bucket *kind_bucket(struct snap_builder *b,
				  enum alloc_kind kind, const char *first,
				  int where, bool leaked,
				  const struct snap_type *t, unsigned long line)
{
	const char *type = NULL;
	uint64_t frames[4];
	uint32_t n = 0;
	struct bucket *bk;

	if (t && t->kind != SNAP_TYPE_NONE) {
		type = strtab_intern(&b->m->strings, t->name, t->name_len);
		frames[n++] = named_str(b, type);
	}
	frames[n++] = named_str(b, first);
	if (leaked)
		frames[n++] = named_str(b, "dmprof_leaked");
	if (where != SNAP_WHERE_NONE)
		frames[n++] = where_frame(b, where);
	bk = model_intern_bucket(b->m, kind, frames, n, b->pos->path, line);
	if (!bk)
		read_error(b->pos, "too many stacks");
	else if (type)
		model_bucket_type(b->m, bk, t->typeinfo, type);
	return bk;
}

/* ---- META ---- */

static int meta_number(struct snap_builder *b, const char *val, size_t len,
		       uint64_t *v)
{
	if (word_u64(val, len, v) != NUM_OK || *v > INT64_MAX)
		return read_error(b->pos, "bad number '%s'",
				  read_quote(b->pos, val, len));
	return 0;
}

/* "SECONDS[.FRACTION]" since the epoch. */
static int meta_time(struct snap_builder *b, const char *val, size_t len)
{
	const char *dot = memchr(val, '.', len);
	size_t ilen = dot ? (size_t)(dot - val) : len;
	double frac = 0, scale = 0.1;
	uint64_t secs;

	if (meta_number(b, val, ilen, &secs) < 0)
		return -1;
	for (size_t i = ilen + 1; dot && i < len; i++, scale /= 10) {
		if (!is_digit(val[i]))
			return read_error(b->pos, "bad time '%s'",
					  read_quote(b->pos, val, len));
		frac += (val[i] - '0') * scale;
	}
	b->snap->time = (double)secs + frac;
	b->snap->time_from_meta = true;
	return 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
	return klen == strlen(name) && !memcmp(k, name, klen);
}

/* "Allocator: NAME" (a word of [a-z0-9_]): its mappings' frame. */
static int meta_allocator(struct snap_builder *b, const char *val,
			  size_t len)
{
	char frame[64];

	if (!len || len > 32)
		goto bad;
	for (size_t i = 0; i < len; i++)
		if (!((val[i] >= 'a' && val[i] <= 'z') ||
		      (val[i] >= '0' && val[i] <= '9') || val[i] == '_'))
			goto bad;
	snprintf(frame, sizeof(frame), "dmprof_%.*s_arena", (int)len, val);
	b->allocator_frame = strtab_intern(&b->m->strings, frame,
					   strlen(frame));
	return 0;
bad:
	return read_error(b->pos, "bad allocator '%s' (a word of a-z, 0-9 "
				  "and _)",
			  read_quote(b->pos, val, len));
}

/* META's KEY (KLEN bytes): VAL, VLEN bytes, unescaped and trimmed. */
static int put_value(struct snap_builder *b, const char *key, size_t klen,
		     const char *val, size_t vlen)
{
	struct snapshot *snap = b->snap;
	uint64_t v;

	if (key_is(key, klen, "Time"))
		return meta_time(b, val, vlen);
	if (key_is(key, klen, "CommandLine")) {
		free(snap->command_line);
		snap->command_line = xstrndup(val, vlen);
	} else if (key_is(key, klen, "Reason")) {
		free(snap->reason);
		snap->reason = xstrndup(val, vlen);
	} else if (key_is(key, klen, "Allocator") &&
		   meta_allocator(b, val, vlen) < 0) {
		return -1;
	} else if (key_is(key, klen, "PageSize")) {
		if (meta_number(b, val, vlen, &v) < 0)
			return -1;
		if (!v || v & (v - 1) || v > (1u << 30))
			return read_error(b->pos, "bad page size %" PRIu64, v);
		snap->page_size = v;
	} else {
		/* (Rss, Pss, Swap: the kernel's view, as aggregation reads
		 * it from META.) */
		if ((key_is(key, klen, "Rss") || key_is(key, klen, "Pss") ||
		     key_is(key, klen, "Swap")) &&
		    meta_number(b, val, vlen, &v) < 0)
			return -1;
		GROW(snap->meta_extra, snap->nmeta_extra + 1,
		     snap->meta_extra_alloc);
		snap->meta_extra[snap->nmeta_extra].key = xstrndup(key, klen);
		snap->meta_extra[snap->nmeta_extra++].value =
			xstrndup(val, vlen);
	}
	return 0;
}

/* KEY's value VAL (VLEN bytes, escaped: escape.h), unescaped. */
static int put_meta(struct snap_builder *b, const char *key, size_t klen,
		    const char *val, size_t vlen)
{
	char *raw;
	int rc;

	while (vlen && is_space(*val))
		val++, vlen--;
	while (vlen && is_space(val[vlen - 1]))
		vlen--;
	raw = xmalloc(vlen + 1);
	vlen = unescape_line(raw, val, vlen);
	raw[vlen] = '\0';
	rc = put_value(b, key, klen, raw, vlen);
	free(raw);
	return rc;
}

/* ---- HEAP ---- */

static int put_blocks(struct snap_builder *b, const struct snap_record *r,
		      unsigned long line)
{
	struct heap_summary *h = &b->snap->heap;
	struct sample_counts c = { 0 };
	struct stack_line *sl;
	struct bucket *bk;
	char first[64];
	int where = r->u.blocks.where;

	if (r->u.blocks.state == HEAP_IN_USE)
		snprintf(first, sizeof(first), "size-%" PRIu64 "..%" PRIu64,
			 r->u.blocks.lo, r->u.blocks.hi);
	else
		snprintf(first, sizeof(first), "free-%s",
			 heap_state_name(r->u.blocks.state));
	bk = kind_bucket(b, ALLOC_MALLOC, first, where, r->u.blocks.leaked,
			 r->u.blocks.state == HEAP_IN_USE ? &r->u.blocks.type
							  : NULL, line);
	if (!bk)
		return -1;
	c.objs = (int64_t)r->u.blocks.count;
	c.bytes = (int64_t)r->u.blocks.bytes;
	sl = read_add_sample(b->snap, bk, &c);
	sl->committed = (int64_t)r->u.blocks.committed;
	b->malloc_bytes = add64(b->malloc_bytes, sl->committed,
				&b->snap->overflow);
	if (where == SNAP_WHERE_MMAPPED) {
		h->mmapped_count += r->u.blocks.count;
		h->mmapped_bytes += r->u.blocks.bytes;
		return 0;
	}
	if (where == SNAP_WHERE_PYMALLOC) {
		h->py.count += r->u.blocks.count;
		h->py.bytes += r->u.blocks.bytes;
		return 0;
	}
	heap_tally_add(&h->t, r->u.blocks.state, r->u.blocks.count,
		       r->u.blocks.bytes);
	if (r->u.blocks.state == HEAP_TOP && where == 0)
		h->main_top += r->u.blocks.bytes;
	return 0;
}

/* pymalloc's sums, and the bytes of its arenas no block in use holds:
 * what it keeps beyond the objects it serves. */
static int put_pymalloc(struct snap_builder *b, const struct snap_record *r,
			unsigned long line)
{
	struct py_summary *py = &b->snap->heap.py;
	struct sample_counts c = { 0 };
	struct stack_line *sl;
	struct bucket *bk;

	py->present = true;
	py->arenas = r->u.pymalloc.arenas;
	py->unused_pools = r->u.pymalloc.unused_pools;
	py->alignment = r->u.pymalloc.alignment;
	py->free = r->u.pymalloc.free;
	py->free_committed = r->u.pymalloc.free_committed;
	bk = kind_bucket(b, ALLOC_MALLOC, "dmprof_python_object_free",
			 SNAP_WHERE_NONE, false, NULL, line);
	if (!bk)
		return -1;
	c.bytes = (int64_t)r->u.pymalloc.free;
	sl = read_add_sample(b->snap, bk, &c);
	sl->committed = (int64_t)r->u.pymalloc.free_committed;
	b->malloc_bytes = add64(b->malloc_bytes, sl->committed,
				&b->snap->overflow);
	return 0;
}

static void put_reach(struct snap_builder *b, const struct snap_record *r)
{
	struct heap_summary *h = &b->snap->heap;

	h->anchored_count = r->u.reach.anchored_count;
	h->anchored_bytes = r->u.reach.anchored_bytes;
	h->leaked_count = r->u.reach.leaked_count;
	h->leaked_bytes = r->u.reach.leaked_bytes;
	h->unreferenced_count = r->u.reach.unreferenced_count;
	h->unreferenced_bytes = r->u.reach.unreferenced_bytes;
	h->scanned = true;
}

static int put_listed(struct snap_builder *b, const struct snap_record *r,
		      unsigned long line)
{
	struct snapshot *snap = b->snap;
	struct listed_block lb = { 0 };
	uint64_t usable, lo, hi;
	char first[64];

	lb.addr = r->u.listed.addr;
	lb.size = r->u.listed.size;
	lb.unreferenced = r->u.listed.unreferenced;
	lb.nhead = r->u.listed.nhead;
	memcpy(lb.head, r->u.listed.head, lb.nhead);
	usable = lb.size - (r->u.listed.where == SNAP_WHERE_MMAPPED ? 16 : 8);
	snap_size_bounds(snap_size_class(usable), &lo, &hi);
	snprintf(first, sizeof(first), "size-%" PRIu64 "..%" PRIu64, lo, hi);
	lb.bucket = kind_bucket(b, ALLOC_MALLOC, first, r->u.listed.where,
				true, &r->u.listed.type, line);
	if (!lb.bucket)
		return -1;
	GROW(snap->listed, snap->nlisted + 1, snap->listed_alloc);
	snap->listed[snap->nlisted++] = lb;
	return 0;
}

/* ---- MAPS ---- */

static void add_region(struct snap_builder *b, uint64_t start, uint64_t end,
		       int64_t committed, struct bucket *bk,
		       unsigned long line)
{
	struct snapshot *snap = b->snap;
	struct region *r;

	r = PUSH_ZEROED(snap->regions, snap->nregions, snap->regions_alloc);
	r->start = start;
	r->end = end;
	r->kind = bk ? REGION_HOOKED : REGION_UNHOOKED;
	r->vma = (uint32_t)b->vma;
	r->has_committed = true;
	r->committed = committed;
	r->has_bucket = bk != NULL;
	r->bucket_id = bk ? bk->id : 0;
	r->bucket = bk;
	r->line = line;
}

/*
 * The mapping before: whole, or its parts complete.  (Said at the line
 * of the mapping.)
 */
static int end_vma(struct snap_builder *b)
{
	const struct vma *v;
	int64_t i = b->vma;

	if (i < 0)
		return 0;
	v = &b->snap->vmas[i];
	if (!b->part_end) {
		add_region(b, v->start, v->end, b->vma_committed, NULL,
			   b->vma_line);
		b->vma = -1;
		return 0;
	}
	b->vma = -1;
	b->pos->line = b->vma_line;
	if (b->part_end != v->end)
		return read_error(b->pos, "its parts end at %" PRIx64 ", the "
					  "mapping at %" PRIx64,
				  b->part_end, v->end);
	if (b->part_sum != b->vma_committed)
		return read_error(b->pos, "its parts hold %" PRId64
					  " committed bytes, the mapping %"
					  PRId64,
				  b->part_sum, b->vma_committed);
	return 0;
}

int snapbuild_end_vma(struct snap_builder *b)
{
	return end_vma(b);
}

static int put_vma(struct snap_builder *b, const struct snap_record *r,
		   unsigned long line)
{
	struct snapshot *snap = b->snap;
	struct vma v = r->u.vma.v;
	const char *name = v.name;
	size_t len = strlen(name);

	if (end_vma(b) < 0)
		return -1;
	b->pos->line = line;
	if (snap->nvmas && v.start < snap->vmas[snap->nvmas - 1].end)
		return read_error(b->pos, "mapping %" PRIx64 "-%" PRIx64
					  " overlaps or comes before the one "
					  "before it",
				  v.start, v.end);
	if (snap->nvmas >= UINT32_MAX)
		return read_error(b->pos, "too many mappings");
	/* (As a maps line's name: the rest of the line, trimmed.) */
	while (len && is_space(*name))
		name++, len--;
	while (len && is_space(name[len - 1]))
		len--;
	v.name = strtab_intern(&b->m->strings, name, len);
	GROW(snap->vmas, snap->nvmas + 1, snap->vmas_alloc);
	snap->vmas[snap->nvmas] = v;
	b->vma = (int64_t)snap->nvmas++;
	b->vma_line = line;
	b->vma_committed = (int64_t)r->u.vma.committed;
	b->part_end = 0;
	b->part_sum = 0;
	return 0;
}

static int put_part(struct snap_builder *b, const struct snap_record *r,
		    unsigned long line)
{
	const struct vma *v;
	struct bucket *bk = NULL;
	uint64_t start = r->u.part.start, end = r->u.part.end;
	int where = r->u.part.where;

	if (b->vma < 0)
		return read_error(b->pos, "a part before any mapping");
	v = &b->snap->vmas[b->vma];
	if (start != (b->part_end ? b->part_end : v->start) || end > v->end)
		return read_error(b->pos, "part %" PRIx64 "-%" PRIx64 " does "
					  "not go on from %" PRIx64 " in its "
					  "mapping",
				  start, end,
				  b->part_end ? b->part_end : v->start);
	if (where == SNAP_WHERE_THREAD_STACK)
		bk = kind_bucket(b, ALLOC_MMAP, "dmprof_thread_stack",
				 SNAP_WHERE_NONE, false, NULL, line);
	else if (where == SNAP_WHERE_ALLOCATOR && !b->allocator_frame)
		return read_error(b->pos, "an allocator's part, but META names "
					  "no Allocator");
	else if (where == SNAP_WHERE_ALLOCATOR)
		bk = kind_bucket(b, ALLOC_MMAP, b->allocator_frame,
				 SNAP_WHERE_NONE, false, NULL, line);
	else if (where == SNAP_WHERE_PYMALLOC)
		bk = kind_bucket(b, ALLOC_MMAP, "dmprof_python_object_arena",
				 SNAP_WHERE_NONE, false, NULL, line);
	else if (where != SNAP_WHERE_NONE)
		bk = kind_bucket(b, ALLOC_MMAP, "dmprof_glibc_malloc_arena",
				 where, false, NULL, line);
	if (where != SNAP_WHERE_NONE && !bk)
		return -1;
	add_region(b, start, end, (int64_t)r->u.part.committed, bk, line);
	b->part_end = end;
	b->part_sum = add64(b->part_sum, (int64_t)r->u.part.committed,
			    &b->snap->overflow);
	return 0;
}

int snapbuild_put(struct snap_builder *b, const struct snap_record *r,
		  unsigned long line)
{
	struct heap_summary *h = &b->snap->heap;

	switch (r->kind) {
	case SNAP_META:
		return put_meta(b, r->u.meta.key, r->u.meta.key_len,
				r->u.meta.value, r->u.meta.value_len);
	case SNAP_HEAP:
		b->snap->has_heap = true;
		return 0;
	case SNAP_ARENA:
		if (r->u.arena.index != h->narenas)
			BUG("arena %" PRIu64 " where arena %zu comes",
			    r->u.arena.index, h->narenas);
		h->narenas++;
		h->system_mem += r->u.arena.system;
		h->t.overhead += r->u.arena.overhead;
		h->t.unknown += r->u.arena.unknown;
		return 0;
	case SNAP_TCACHES:
		h->ntcaches = (size_t)r->u.tcaches;
		return 0;
	case SNAP_BLOCKS:
		return put_blocks(b, r, line);
	case SNAP_REACH:
		put_reach(b, r);
		return 0;
	case SNAP_LISTED:
		return put_listed(b, r, line);
	case SNAP_PROBLEM:
		/* (Its arena and message: for people to read.) */
		h->nproblems++;
		return 0;
	case SNAP_PYMALLOC:
		return put_pymalloc(b, r, line);
	case SNAP_PYCLASS:
		h->py.present = true;
		h->py.classes[r->u.pyclass.index].size = r->u.pyclass.size;
		h->py.classes[r->u.pyclass.index].pools = r->u.pyclass.pools;
		h->py.classes[r->u.pyclass.index].used = r->u.pyclass.used;
		h->py.classes[r->u.pyclass.index].avail = r->u.pyclass.avail;
		return 0;
	case SNAP_MAPS:
		return 0;
	case SNAP_VMA:
		return put_vma(b, r, line);
	case SNAP_PART:
		return put_part(b, r, line);
	}
	BUG("snapshot record of kind %d", (int)r->kind);
}

/* GLOBAL_STATS as a deep dump has them, from the regions and lines. */
static void global_stats(struct snap_builder *b)
{
	static const int rows[][2] = {
		[VMA_FILE_EXEC] = { GS_FILE_EXEC, GS_NP_FILE_EXEC },
		[VMA_FILE_NONEXEC] = { GS_FILE_NONEXEC, GS_NP_FILE_NONEXEC },
		[VMA_ANONYMOUS] = { GS_ANONYMOUS, GS_NP_ANONYMOUS },
		[VMA_STACK] = { GS_STACK, GS_NP_STACK },
		[VMA_OTHER] = { GS_OTHER, GS_NP_OTHER },
	};
	struct snapshot *snap = b->snap;
	struct gstat *gs = snap->gs.row;
	bool *over = &snap->overflow;

	for (size_t i = 0; i < snap->nregions; i++) {
		const struct region *r = &snap->regions[i];
		const int *row = rows[vma_classify(&snap->vmas[r->vma])];
		int total = r->kind == REGION_HOOKED ? GS_PROFILED_MMAP
						     : GS_NP_TOTAL;
		int64_t c = r->committed;

		gs[GS_TOTAL].committed = add64(gs[GS_TOTAL].committed, c, over);
		gs[row[0]].committed = add64(gs[row[0]].committed, c, over);
		gs[total].committed = add64(gs[total].committed, c, over);
		if (r->kind == REGION_UNHOOKED)
			gs[row[1]].committed = add64(gs[row[1]].committed, c,
						     over);
	}
	gs[GS_PROFILED_MALLOC].committed = b->malloc_bytes;
	snap->gs.present = (1u << GS_NROWS) - 1;
	snap->has_global_stats = true;
}

int snapbuild_finish(struct snap_builder *b)
{
	struct snapshot *snap = b->snap;

	if (end_vma(b) < 0)
		return -1;
	if (!snap->lines)
		snap->lines = xcalloc(1, sizeof(*snap->lines));
	global_stats(b);
	return 0;
}
