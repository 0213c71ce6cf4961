/*
 * glibc 2.36's malloc heap on x86-64, walked from outside through a
 * process image, without debug symbols.  The layouts (checked against
 * glibc-2.36's malloc/malloc.c and arena.c, and against gdb with
 * libc6-dbg on Debian 12) are the offsets here and in glibc_walk.h.
 *
 * Found by their structure:
 *   - main_arena, a struct malloc_state in libc's writable data (its
 *     file-backed rw-p mapping and the anonymous .bss after it).  Each of
 *     its 127 bins is a list head whose two links both point at the head
 *     itself (empty) or both at chunks; random data or zeros fail that.
 *     Its next chain must come back to it through arenas of the same
 *     shape, and its top must lie in [heap].  The walk from the heap's
 *     start landing exactly on top confirms it.
 *   - mp_ (struct malloc_par), the one whose sbrk_base is the main heap's
 *     start and whose counters make sense: glibc's own count of mmapped
 *     chunks, and the tcache's limits.
 *   - a thread arena's heaps: its malloc_state follows its first heap's
 *     heap_info; heaps are HEAP_MAX_SIZE (64 MiB) aligned, so the heap of
 *     its top is top & ~(64 MiB - 1), whose prev links lead back to the
 *     first.
 *   - the free lists and the tcaches (glibc_lists.c), the mmapped chunks
 *     (glibc_mmapped.c).
 *
 * Chunks are walked by size from each heap's first chunk to top (or, in
 * a heap its arena has grown past, to the fencepost at its end); whether
 * one is free is its neighbour's PREV_INUSE bit.  A corrupt header stops
 * that heap's walk, the rest of it counted as unknown.  Every loop is
 * bounded, so hostile memory ends a walk, never hangs or crashes it.
 */
#include "glibc_heap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "glibc_walk.h"
#include "util.h"

/* struct malloc_par. */
#define MP_MMAP_THRESHOLD 16
#define MP_HP_PAGESIZE 48
#define MP_N_MMAPS 60
#define MP_N_MMAPS_MAX 64
#define MP_MAX_N_MMAPS 68
#define MP_MMAPPED_MEM 80
#define MP_MAX_MMAPPED_MEM 88
#define MP_SBRK_BASE 96
#define MP_TCACHE_BINS 104
#define MP_TCACHE_MAX_BYTES 112
#define MP_TCACHE_COUNT 120
#define MP_SIZE 136

/* struct heap_info. */
#define HI_AR_PTR 0
#define HI_PREV 8
#define HI_SIZE 16
#define HI_MPROTECT_SIZE 24
#define HI_SIZEOF 48

/* Reads: a window for the walk by size. */
#define WINDOW (256u * 1024)
#define MAX_HEAPS_PER_ARENA 65536
#define MAX_LIBC_DATA (64u << 20)

/*
 * The header of chunk C for the walk by size, read a window at a time
 * but never past LIMIT (the top chunk's pages past its header are
 * untouched: reading them would map them).  BIG: the last chunk was
 * large, so the next header is likely far too; read a page only.
 */
static bool chunk_header(struct walk *w, uint64_t c, uint64_t limit,
			 bool big, uint64_t hdr[2])
{
	if (c < w->win.base || c - w->win.base + CHUNK_HDR > w->win.len) {
		uint64_t want = big ? PAGE : WINDOW;

		if (limit - c < want)
			want = limit - c;
		w->win.len = procimage_read(w->img, c, w->win.buf,
					    (size_t)want);
		w->win.base = c;
		if (w->win.len < CHUNK_HDR) {
			w->win.len = 0;
			return false;
		}
	}
	memcpy(hdr, w->win.buf + (c - w->win.base), CHUNK_HDR);
	return true;
}

/* --- Finding main_arena and mp_ ------------------------------------- */

static bool is_libc(const struct vma *v)
{
	const char *base = strrchr(v->name, '/');

	base = base ? base + 1 : v->name;
	return starts_with(base, "libc.so") ||
	       (starts_with(base, "libc-") && ends_with(base, ".so"));
}

/* libc's writable mappings, and the .bss right after them, read whole. */
static int read_libc_data(struct walk *w)
{
	const struct maps *m = &w->img->maps;
	bool any = false;

	for (size_t i = 0; i < m->n && w->nlibc < ARRAY_SIZE(w->libc); i++) {
		const struct vma *v = &m->v[i];
		bool bss = i > 0 && is_libc(&m->v[i - 1]) &&
			   !v->name[0] && v->start == m->v[i - 1].end;

		if (is_libc(v))
			any = true;
		if (!vma_writable(v) || !(is_libc(v) || bss) ||
		    v->end - v->start > MAX_LIBC_DATA)
			continue;
		w->libc[w->nlibc].addr = v->start;
		w->libc[w->nlibc].data = xmalloc(v->end - v->start);
		w->libc[w->nlibc].len = procimage_read(
			w->img, v->start, w->libc[w->nlibc].data,
			v->end - v->start);
		w->nlibc++;
	}
	if (!any) {
		fault_set(&w->h->why, &(struct where){ .path = w->img->name },
			  "%s has no libc.so mapped (a static binary, or not "
			  "glibc): its malloc heap cannot be walked",
			  w->img->name);
		return -1;
	}
	return 0;
}

/* Does MS, read at A, look like a struct malloc_state? */
static bool arena_shape(const uint8_t *ms, uint64_t a)
{
	int32_t mutex = get32(ms, MS_MUTEX), flags = get32(ms, MS_FLAGS);
	int32_t fast = get32(ms, MS_HAVE_FASTCHUNKS);
	uint64_t top = get64(ms, MS_TOP), next = get64(ms, MS_NEXT);

	if (mutex < 0 || mutex > 2 || (flags & ~6) || fast < 0 || fast > 1)
		return false;
	if (!top || (top & 15 && top != a + MS_TOP) || !next || next & 7)
		return false;
	for (size_t i = 0; i < NFASTBINS; i++)
		if (get64(ms, MS_FASTBINS + 8 * i) & 15)
			return false;
	for (size_t i = 1; i < NBINS; i++) {
		uint64_t head = a + MS_BINS - CHUNK_HDR + 16 * (i - 1);
		uint64_t fd = get64(ms, MS_BINS + 16 * (i - 1));
		uint64_t bk = get64(ms, MS_BINS + 16 * (i - 1) + 8);

		if ((fd == head) != (bk == head))
			return false;
		if (fd != head && (!fd || !bk || fd & 15 || bk & 15))
			return false;
	}
	return true;
}

static bool read_arena(struct walk *w, uint64_t a, uint8_t ms[MS_SIZE])
{
	return procimage_read_all(w->img, a, ms, MS_SIZE) && arena_shape(ms, a);
}

static bool same_addr(const void *item, const void *key)
{
	return ((const struct chain_known *)item)->addr ==
	       *(const uint64_t *)key;
}

static const struct chain_known *chain_lookup(const struct walk *w,
					      uint64_t a)
{
	return w->chains.slots ? hashmap_get(&w->chains, hash_u64(a),
					     same_addr, &a)
			       : NULL;
}

/* Remember that the chains of the N arenas at V come back (in a ring of
 * RING), or (RING 0) that they do not. */
static void chain_remember(struct walk *w, const uint64_t *v, size_t n,
			   size_t ring)
{
	if (!w->chains.slots)
		hashmap_init(&w->chains, 64);
	for (size_t i = 0; i < n; i++) {
		struct chain_known *k;

		if (chain_lookup(w, v[i]))
			continue;
		k = xmalloc(sizeof(*k));
		k->addr = v[i];
		k->returns = ring != 0;
		k->n = ring;
		hashmap_put(&w->chains, hash_u64(v[i]), k);
	}
}

/*
 * Does the next chain from the arena at A (read as MS) come back to A
 * through arenas of the same shape?  Their number in *N.  Each arena's
 * answer is remembered: the members of a ring come back in it, those of
 * a chain that meets a bad arena, or a known ring, do not (a chain too
 * long says nothing of its members: it may end in a ring of its own).
 */
static bool chain_returns(struct walk *w, uint64_t a, const uint8_t *ms,
			  size_t *n)
{
	const struct chain_known *k = chain_lookup(w, a);
	uint8_t other[MS_SIZE];
	uint64_t p = get64(ms, MS_NEXT), *seen;
	bool bad = false;

	if (k) {
		*n = k->n;
		return k->returns;
	}
	seen = xcalloc(HEAP_MAX_ARENAS + 1, sizeof(*seen));
	seen[0] = a;
	for (*n = 1; p != a; (*n)++) {
		if (*n >= HEAP_MAX_ARENAS)
			break;
		/* (A ring that is known and is not A's: A leads into it.) */
		if ((k = chain_lookup(w, p))) {
			bad = true;
			break;
		}
		if (!read_arena(w, p, other)) {
			bad = true;
			break;
		}
		seen[*n] = p;
		p = get64(other, MS_NEXT);
	}
	if (p == a)
		chain_remember(w, seen, *n, *n);
	else if (bad)
		chain_remember(w, seen, *n, 0);
	free(seen);
	return p == a;
}

/* main_arena's address, or 0 with why there is none in W->h->why. */
static uint64_t find_main_arena(struct walk *w)
{
	uint64_t unused = 0;

	for (size_t k = 0; k < w->nlibc; k++)
		for (size_t off = 0; off + MS_SIZE <= w->libc[k].len;
		     off += 8) {
			const uint8_t *ms = w->libc[k].data + off;
			uint64_t a = w->libc[k].addr + off, top;
			size_t n;

			if (!arena_shape(ms, a) || !chain_returns(w, a, ms, &n))
				continue;
			top = get64(ms, MS_TOP);
			if (top == a + MS_TOP) {
				unused = a;
				continue;
			}
			if (in_span(&w->heap_vma, top) || !w->heap_vma.end)
				return a;
		}
	if (unused)
		fault_set(&w->h->why,
			  &(struct where){ .path = w->img->name,
					   .has_addr = true, .addr = unused },
			  "%s: glibc's malloc has never been used (its main "
			  "arena at 0x%" PRIx64 " is empty): the process "
			  "allocates with another allocator (tcmalloc, "
			  "jemalloc?)", w->img->name, unused);
	else
		fault_set(&w->h->why, &(struct where){ .path = w->img->name },
			  "%s: no glibc malloc arena found in libc's data: "
			  "another allocator (tcmalloc, jemalloc?), or a "
			  "glibc other than 2.36", w->img->name);
	return 0;
}

/* Does P, read at an address in libc, look like mp_ for a main heap
 * starting at SBRK_BASE? */
static bool params_shape(const uint8_t *p, uint64_t sbrk_base)
{
	int32_t n = get32(p, MP_N_MMAPS), nmax = get32(p, MP_N_MMAPS_MAX);
	int32_t maxn = get32(p, MP_MAX_N_MMAPS);
	uint64_t mem = get64(p, MP_MMAPPED_MEM);
	uint64_t hp = get64(p, MP_HP_PAGESIZE);

	return get64(p, MP_SBRK_BASE) == sbrk_base && n >= 0 && nmax >= 0 &&
	       maxn >= n && mem <= get64(p, MP_MAX_MMAPPED_MEM) &&
	       mem % PAGE == 0 && (n == 0) == (mem == 0) &&
	       get64(p, MP_TCACHE_BINS) <= TCACHE_MAX_BINS &&
	       get64(p, MP_TCACHE_COUNT) <= UINT16_MAX &&
	       get64(p, MP_TCACHE_MAX_BYTES) <= 1032 &&
	       get64(p, MP_MMAP_THRESHOLD) <= HEAP_MAX_SIZE / 2 &&
	       (hp & (hp - 1)) == 0;
}

/* mp_, whose sbrk_base is one of BASES (0s ignored). */
static void find_params(struct walk *w, const uint64_t bases[2])
{
	struct heap_params *mp = &w->h->mp;

	for (size_t k = 0; k < w->nlibc; k++)
		for (size_t off = 0; off + MP_SIZE <= w->libc[k].len;
		     off += 8)
			for (size_t b = 0; b < 2; b++) {
				const uint8_t *p = w->libc[k].data + off;

				if (!bases[b] || !params_shape(p, bases[b]))
					continue;
				mp->found = true;
				mp->addr = w->libc[k].addr + off;
				mp->mmap_threshold =
					get64(p, MP_MMAP_THRESHOLD);
				mp->n_mmaps = (uint64_t)get32(p, MP_N_MMAPS);
				mp->mmapped_mem = get64(p, MP_MMAPPED_MEM);
				mp->sbrk_base = bases[b];
				mp->tcache_bins = get64(p, MP_TCACHE_BINS);
				mp->tcache_count = get64(p, MP_TCACHE_COUNT);
				if (get64(p, MP_HP_PAGESIZE))
					w->heap_max =
						4 * get64(p, MP_HP_PAGESIZE);
				return;
			}
}

/* --- Arenas and their heaps ----------------------------------------- */

static void add_unknown(struct walk *w, unsigned arena, uint64_t start,
			uint64_t end)
{
	if (end <= start)
		return;
	GROW(w->unknown, w->nunknown + 1, w->unknown_alloc);
	w->unknown[w->nunknown].start = start;
	w->unknown[w->nunknown++].end = end;
	if (arena < w->h->narenas)
		w->h->arenas[arena].t.unknown += end - start;
}

/* The main arena's heap: [start, top's end) in [heap]. */
static void main_heap(struct walk *w, uint64_t top, uint64_t system_mem)
{
	struct heap_arena *a = &w->h->arenas[0];
	uint64_t top_hdr[2], start, end, bases[2];
	struct region r = { 0 };

	if (!procimage_read_all(w->img, top, top_hdr, sizeof(top_hdr)) ||
	    !in_span(&w->heap_vma, top)) {
		walk_problem(w, 0, top,
			     "main arena: its top 0x%" PRIx64 " is not "
			     "in a readable [heap] (a main arena that is not "
			     "contiguous is not walked yet)",
			     top);
		a->t.unknown = system_mem;
		return;
	}
	end = top + (top_hdr[1] & ~(uint64_t)SIZE_FLAGS);
	start = end - system_mem;
	bases[0] = start;
	bases[1] = w->heap_vma.start;
	find_params(w, bases);
	if (w->h->mp.found && w->h->mp.sbrk_base != start) {
		walk_problem(w, 0, start,
			     "main arena: its top and system_mem put "
			     "its start at 0x%" PRIx64
			     ", but glibc's sbrk_base is "
			     "0x%" PRIx64 " (sbrk called by someone else?)",
			     start, w->h->mp.sbrk_base);
		start = w->h->mp.sbrk_base;
	}
	if (start > top || start < w->heap_vma.start ||
	    end > w->heap_vma.end) {
		walk_problem(w, 0, start,
			     "main arena: its heap 0x%" PRIx64 "-0x%" PRIx64
			     " is not inside [heap]",
			     start, end);
		a->t.unknown = system_mem;
		return;
	}
	a->nheaps = 1;
	r.start = start;
	r.end = end;
	r.first = (start + 15) & ~(uint64_t)15;
	r.top = top;
	r.arena = 0;
	walk_add_region(w, &r);
	w->first_chunks[0] = r.first;
}

/* Is the heap_info HI, read at H, one of arena A's? */
static bool heap_info_ok(struct walk *w, uint64_t hp, const uint8_t *hi,
			 uint64_t a)
{
	uint64_t size = get64(hi, HI_SIZE);

	return !(hp & (w->heap_max - 1)) && get64(hi, HI_AR_PTR) == a &&
	       size >= HI_SIZEOF + MINSIZE && size <= w->heap_max &&
	       get64(hi, HI_MPROTECT_SIZE) >= size;
}

/*
 * Thread arena K at A (read as MS): its heaps, from the one holding its
 * top back along prev to the first, which holds the arena itself.
 */
static void thread_heaps(struct walk *w, unsigned k, uint64_t a,
			 const uint8_t *ms)
{
	uint64_t top = get64(ms, MS_TOP), sum = 0;
	uint64_t hp = top & ~(w->heap_max - 1);
	uint64_t system_mem = get64(ms, MS_SYSTEM_MEM);
	struct heap_arena *ar = &w->h->arenas[k];
	size_t first = w->nregions;

	for (unsigned n = 0; hp; n++) {
		uint8_t hi[HI_SIZEOF];
		struct region r = { 0 };

		if (n == MAX_HEAPS_PER_ARENA ||
		    !procimage_read_all(w->img, hp, hi, sizeof(hi)) ||
		    !heap_info_ok(w, hp, hi, a) ||
		    sum + get64(hi, HI_SIZE) > system_mem) {
			walk_problem(w, (int)k, hp,
				     "arena %u: no heap_info of "
				     "it at 0x%" PRIx64 " (its heap list is "
				     "broken)",
				     k, hp);
			break;
		}
		r.start = hp;
		r.end = hp + get64(hi, HI_SIZE);
		r.top = top >= r.start && top < r.end ? top : 0;
		r.arena = k;
		r.first = hp + HI_SIZEOF;
		if (hp + HI_SIZEOF == a) {
			/* The arena's own struct, then the first chunk,
			 * aligned so that its user pointer is. */
			r.first = a + MS_SIZE;
			r.first += (16 - ((r.first + CHUNK_HDR) & 15)) & 15;
			w->first_chunks[k] = r.first;
		}
		sum += r.end - r.start;
		walk_add_region(w, &r);
		ar->nheaps++;
		hp = hp + HI_SIZEOF == a ? 0 : get64(hi, HI_PREV);
	}
	if (first == w->nregions || sum != system_mem) {
		if (sum < system_mem)
			ar->t.unknown += system_mem - sum;
		if (first != w->nregions)
			walk_problem(w, (int)k, a,
				     "arena %u: its heaps hold %" PRIu64
				     " bytes, its system_mem says %" PRIu64,
				     k, sum, system_mem);
	}
}

/* Every arena along main_arena's next chain. */
static void find_arenas(struct walk *w, uint64_t main_arena)
{
	struct heap *h = w->h;
	uint8_t ms[MS_SIZE];
	uint64_t a = main_arena;

	do {
		struct heap_arena *ar;

		if (!read_arena(w, a, ms)) {
			walk_problem(w, -1, a,
				     "the arena at 0x%" PRIx64 " changed "
				     "under the walk (is the process stopped?)",
				     a);
			break;
		}
		h->arenas = xreallocarray(h->arenas, h->narenas + 1,
					  sizeof(*h->arenas));
		w->first_chunks = xreallocarray(w->first_chunks,
						h->narenas + 1,
						sizeof(*w->first_chunks));
		ar = &h->arenas[h->narenas];
		memset(ar, 0, sizeof(*ar));
		w->first_chunks[h->narenas] = 0;
		ar->addr = a;
		ar->top = get64(ms, MS_TOP);
		ar->system_mem = get64(ms, MS_SYSTEM_MEM);
		ar->attached_threads = get64(ms, MS_ATTACHED);
		ar->locked = get32(ms, MS_MUTEX) != 0;
		h->narenas++;
		if (a == main_arena)
			main_heap(w, ar->top, ar->system_mem);
		else
			thread_heaps(w, (unsigned)h->narenas - 1, a, ms);
		a = get64(ms, MS_NEXT);
	} while (a != main_arena && h->narenas < HEAP_MAX_ARENAS);
}

/* --- The walk by size ----------------------------------------------- */

static size_t add_block(struct heap *h, uint64_t chunk, uint64_t size,
			enum heap_state state, unsigned arena)
{
	GROW(h->blocks, h->nblocks + 1, h->alloc);
	h->blocks[h->nblocks].chunk = chunk;
	h->blocks[h->nblocks].size = size;
	h->blocks[h->nblocks].state = state;
	h->blocks[h->nblocks].arena = arena;
	return h->nblocks++;
}

/* Block I's state from the header after it (HDR): in use or free. */
static void settle(struct walk *w, size_t i, const uint64_t hdr[2])
{
	struct heap_block *b = &w->h->blocks[i];

	if (hdr[1] & PREV_INUSE)
		return;
	b->state = HEAP_UNLISTED;
	if (hdr[0] != b->size)
		walk_problem(
		    w, (int)b->arena, b->chunk,
		    "arena %u: chunk at 0x%" PRIx64
		    " is free, but the next one's prev_size is 0x%" PRIx64
		    ", not its size 0x%" PRIx64,
		    (unsigned)b->arena, b->chunk, hdr[0], (uint64_t)b->size);
}

/* Why chunk C of region R, of header HDR, cannot be, or NULL. */
static const char *bad_chunk(const struct region *r, uint64_t c,
			     const uint64_t hdr[2])
{
	uint64_t size = hdr[1] & ~(uint64_t)SIZE_FLAGS;
	uint64_t limit = r->top ? r->top : r->end - CHUNK_HDR;

	if (size < MINSIZE)
		return "too small";
	if (size & 15)
		return "not a multiple of 16";
	if (size > limit - c)
		return r->top ? "runs past the top chunk"
			      : "runs past the end of the heap";
	if (hdr[1] & IS_MMAPPED)
		return "has IS_MMAPPED set in an arena";
	if (r->arena == 0 && hdr[1] & NON_MAIN_ARENA)
		return "has NON_MAIN_ARENA set in the main arena";
	return NULL;
}

enum step { STEP_CHUNK, STEP_DONE, STEP_FENCEPOST, STEP_BAD };

/*
 * What the header HDR at C is besides a chunk: the top chunk, reaching
 * the heap's end; or, in a heap its arena has grown past, the fencepost
 * glibc leaves there, a 16-byte chunk then a header of size 0 in the
 * heap's last 16 bytes.
 */
static enum step heap_end(struct walk *w, const struct region *r,
			  uint64_t c, const uint64_t hdr[2])
{
	struct heap_arena *a = &w->h->arenas[r->arena];
	uint64_t size = hdr[1] & ~(uint64_t)SIZE_FLAGS;

	if (c == r->top) {
		if (size == r->end - c) {
			add_block(w->h, c, size, HEAP_TOP, r->arena);
			return STEP_DONE;
		}
		walk_problem(w, (int)r->arena, c,
			     "arena %u: the top chunk at 0x%" PRIx64
			     " has size 0x%" PRIx64
			     ", but the heap ends 0x%" PRIx64 " bytes after it",
			     r->arena, c, size, r->end - c);
		return STEP_BAD;
	}
	if (r->top)
		return STEP_CHUNK;
	if (c == r->end - CHUNK_HDR && size == 0) {
		a->t.overhead += CHUNK_HDR;
		return STEP_DONE;
	}
	if (c == r->end - 2 * CHUNK_HDR && size == CHUNK_HDR) {
		a->t.overhead += CHUNK_HDR;
		return STEP_FENCEPOST;
	}
	return STEP_CHUNK;
}

/* Walk region R by size, from its first chunk to its top or its end. */
static void walk_heap(struct walk *w, const struct region *r)
{
	struct heap_arena *a = &w->h->arenas[r->arena];
	uint64_t limit = r->top ? r->top + CHUNK_HDR : r->end;
	size_t pending = SIZE_MAX;
	uint64_t c = r->first, size = 0;

	a->t.overhead += r->first - r->start;
	w->win.len = 0;
	for (;;) {
		uint64_t hdr[2];
		const char *why;
		enum step step;

		if (c > limit - CHUNK_HDR ||
		    !chunk_header(w, c, limit, size >= WINDOW / 4, hdr)) {
			walk_problem(w, (int)r->arena, c,
				     "arena %u: cannot read "
				     "the chunk header at 0x%" PRIx64,
				     r->arena, c);
			break;
		}
		step = heap_end(w, r, c, hdr);
		if (step == STEP_BAD)
			break;
		if (step == STEP_CHUNK && (why = bad_chunk(r, c, hdr))) {
			walk_problem(w, (int)r->arena, c,
				     "arena %u: chunk at 0x%" PRIx64
				     ": size field 0x%" PRIx64 " %s; the "
				     "rest of its heap (0x%" PRIx64
				     " bytes) is "
				     "counted as unknown",
				     r->arena, c, hdr[1], why, r->end - c);
			break;
		}
		/* (A corrupt header says nothing of the chunk before.) */
		if (pending != SIZE_MAX)
			settle(w, pending, hdr);
		pending = SIZE_MAX;
		if (step == STEP_DONE)
			return;
		if (step == STEP_FENCEPOST) {
			c += CHUNK_HDR;
			continue;
		}
		size = hdr[1] & ~(uint64_t)SIZE_FLAGS;
		pending = add_block(w->h, c, size, HEAP_IN_USE, r->arena);
		c += size;
	}
	add_unknown(w, r->arena, c, r->end);
}

/* --- The whole walk ------------------------------------------------- */

static int cmp_region(const void *x, const void *y)
{
	const struct region *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

static void tally(struct heap *h, struct walk *w)
{
	uint64_t unlisted = 0, first = 0;

	for (size_t i = 0; i < h->nblocks; i++) {
		const struct heap_block *b = &h->blocks[i];

		if (b->arena == HEAP_MMAPPED_ARENA)
			continue;
		h->arenas[b->arena].t.count[b->state]++;
		h->arenas[b->arena].t.bytes[b->state] += b->size;
		if (b->state == HEAP_UNLISTED && !unlisted++)
			first = b->chunk;
	}
	if (unlisted)
		walk_problem(w, -1, first,
			     "%" PRIu64 " free chunks are in no list, "
			     "the first at 0x%" PRIx64,
			     unlisted, first);
	for (size_t k = 0; k < h->narenas; k++)
		if (h->arenas[k].locked)
			walk_problem(
			    w, (int)k, h->arenas[k].addr,
			    "arena %zu was "
			    "locked (a thread inside malloc or free): its "
			    "lists may be mid-update",
			    k);
}

static void walk_all(struct walk *w, uint64_t main_arena)
{
	struct heap *h = w->h;

	find_arenas(w, main_arena);
	glibc_mmapped_find(w);
	if (h->mp.found && !glibc_mmapped_complete(w))
		walk_problem(w, -1, h->mp.addr,
			     "found %" PRIu64 " mmapped chunks "
			     "of %" PRIu64 " bytes; glibc counts %" PRIu64
			     " of %" PRIu64,
			     h->mmapped_count, h->mmapped_bytes, h->mp.n_mmaps,
			     h->mp.mmapped_mem);
	if (w->nregions)
		qsort(w->regions, w->nregions, sizeof(*w->regions),
		      cmp_region);
	h->extents = xcalloc(w->nregions ? w->nregions : 1,
			     sizeof(*h->extents));
	for (size_t i = 0; i < w->nregions; i++) {
		const struct region *r = &w->regions[i];

		h->extents[h->nextents].start = r->start;
		h->extents[h->nextents].end = r->end;
		h->extents[h->nextents++].arena = r->arena;

		if (r->arena == HEAP_MMAPPED_ARENA)
			add_block(h, r->start, r->end - r->start, HEAP_IN_USE,
				  HEAP_MMAPPED_ARENA);
		else
			walk_heap(w, r);
	}
	glibc_lists_walk(w);
	glibc_lists_tcaches(w);
	tally(h, w);
}

static void walk_release(struct walk *w)
{
	for (size_t k = 0; k < w->nlibc; k++)
		free(w->libc[k].data);
	FREE_ALL(w->regions, w->unknown, w->first_chunks, w->win.buf, w->cache);
	if (w->chains.slots) {
		size_t pos = 0;
		void *item;

		while (hashmap_next(&w->chains, &pos, &item))
			free(item);
		hashmap_free(&w->chains);
	}
}

int glibc_heap_walk(struct heap *h, struct procimage *img)
{
	struct walk w = { 0 };
	const struct vma *heap = NULL;
	uint64_t main_arena;
	int rc = -1;

	memset(h, 0, sizeof(*h));
	w.h = h;
	w.img = img;
	w.heap_max = HEAP_MAX_SIZE;
	for (size_t i = 0; i < img->maps.n && !heap; i++)
		if (!strcmp(img->maps.v[i].name, "[heap]"))
			heap = &img->maps.v[i];
	if (heap) {
		w.heap_vma.start = heap->start;
		w.heap_vma.end = heap->end;
	}
	if (read_libc_data(&w) == 0 && (main_arena = find_main_arena(&w))) {
		w.win.buf = xmalloc(WINDOW);
		w.cache = xmalloc((size_t)CACHE_PAGES * PAGE);
		walk_all(&w, main_arena);
		rc = 0;
	}
	walk_release(&w);
	return rc;
}

/* glibc's row of the walkers' table (heap.c). */
const struct walker walker_glibc = {
	.name = "glibc 2.36",
	.walk = glibc_heap_walk,
};
