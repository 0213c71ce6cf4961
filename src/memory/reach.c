/*
 * Who points at a heap's blocks (see reach.h): the roots taken from
 * the mappings, then one pass over the blocks in use in large reads, each
 * aligned word looked up in an index of the blocks' user bytes, the
 * references kept as a graph in two arrays, then the marking from the
 * roots, breadth first.
 *
 * The index: the user bytes of the blocks in use, in address order,
 * clipped so that none overlap (hostile memory can make them) and a word
 * apart (glibc's are anyway: the size field between), grouped into spans
 * that no gap of SPAN_GAP parts.  A span of small blocks gets a bitmap of
 * its words in use, 64 to a group with the count of blocks before it: a
 * word's block is then that count plus the starts before it in its
 * group, one memory read.  A span of big blocks, or of blocks far apart,
 * gets granules instead, each knowing the first block that reaches into
 * it.  Either takes a few bytes a block.  The lookups are batched so
 * that their cache misses overlap: the index of a big heap is far larger
 * than the caches.
 *
 * The reads: a window of up to WINDOW bytes from a block's start over the
 * blocks after it, cut wherever a whole page between two of them holds
 * no byte in use (top, large free chunks: a live process's untouched
 * pages there stay untouched).  What cannot be read is skipped with
 * probes a page, then ever further apart, then back, mapping by mapping:
 * bounded on a core whose mappings are declared terabytes long.
 */
#include "reach.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "util.h"

#define CHUNK_HDR 16
#define RED_ZONE 128
#define PAGE 4096ull
#define WINDOW (16ull << 20)
/* A gap this large between blocks in use starts a new span. */
#define SPAN_GAP (16ull << 20)
/* A span gets groups (one per 512 bytes) when they are at most
 * GROUPS_PER_BLOCK a block; else granules, at least 2^MIN_SHIFT bytes,
 * about GRANULES_PER_BLOCK a block. */
#define GROUPS_PER_BLOCK 2
#define MIN_SHIFT 5
#define GRANULES_PER_BLOCK 2
/* Steps from a granule's first block before a binary search. */
#define LINEAR_STEPS 8
/* Words looked up at a time, and together (see resolve). */
#define CHUNK_WORDS 256
#define BATCH 32
#define NONE UINT32_MAX

static uint64_t page_down(uint64_t a)
{
	return a & ~(PAGE - 1);
}

/* The page boundary at or after A, saturating at the last one. */
static uint64_t page_up(uint64_t a)
{
	return a > UINT64_MAX - (PAGE - 1) ? page_down(UINT64_MAX)
					   : page_down(a + PAGE - 1);
}

/* --- The roots ---------------------------------------------------------- */

static bool file_backed(const struct vma *v)
{
	return v->name[0] == '/';
}

static bool special(const struct vma *v)
{
	return starts_with(v->name, "[vvar") || !strcmp(v->name, "[vsyscall]");
}

static int cmp_extent(const void *x, const void *y)
{
	const struct heap_extent *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* H's extents sorted, overlaps merged (hostile ones may overlap). */
static struct heap_extent *merged_extents(const struct heap *h,
					  size_t *n)
{
	struct heap_extent *e;
	size_t m = 0;

	size_t total = h->nextents + h->narenas;

	if (!total) {
		*n = 0;
		return NULL;
	}
	/*
	 * The arenas' own structs too: main_arena lies in libc's data, and
	 * its bins and top point at chunk headers, which are the last
	 * usable bytes of the blocks before them (chap leaves it out too).
	 */
	e = xcalloc(total, sizeof(*e));
	if (h->nextents)
		memcpy(e, h->extents, st_mult(h->nextents, sizeof(*e)));
	for (size_t k = 0; k < h->narenas; k++) {
		e[h->nextents + k].start = h->arenas[k].addr;
		e[h->nextents + k].end = h->arenas[k].addr + HEAP_ARENA_SIZE;
		if (e[h->nextents + k].end < h->arenas[k].addr)
			e[h->nextents + k].end = UINT64_MAX;
	}
	qsort(e, total, sizeof(*e), cmp_extent);
	for (size_t i = 0; i < total; i++) {
		if (e[i].end <= e[i].start)
			continue;
		if (m && e[i].start <= e[m - 1].end) {
			if (e[i].end > e[m - 1].end)
				e[m - 1].end = e[i].end;
			continue;
		}
		e[m++] = e[i];
	}
	*n = m;
	return e;
}

static void add_range(struct reach_roots *r, uint64_t start, uint64_t end,
		      enum heap_root_kind kind)
{
	if (start >= end)
		return;
	GROW(r->ranges, r->nranges + 1, r->alloc);
	r->ranges[r->nranges].start = start;
	r->ranges[r->nranges].end = end;
	r->ranges[r->nranges++].kind = kind;
}

/* [START, END) less the extents E (sorted, merged) as roots of KIND. */
static void add_less_extents(struct reach_roots *r, uint64_t start,
			     uint64_t end, enum heap_root_kind kind,
			     const struct heap_extent *e, size_t ne)
{
	size_t i = PARTITION_POINT(ne, k, e[k].end <= start);

	for (; i < ne && e[i].start < end && start < end; i++) {
		add_range(r, start, e[i].start, kind);
		if (e[i].end > start)
			start = e[i].end;
	}
	add_range(r, start, end, kind);
}

static int cmp_range(const void *x, const void *y)
{
	const struct heap_root_range *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Sorted, no overlaps, whatever order the maps were in. */
static void normalize_ranges(struct reach_roots *r)
{
	size_t m = 0;

	if (r->nranges < 2)
		return;
	qsort(r->ranges, r->nranges, sizeof(*r->ranges), cmp_range);
	for (size_t i = 0; i < r->nranges; i++) {
		struct heap_root_range x = r->ranges[i];

		if (m && x.start < r->ranges[m - 1].end)
			x.start = r->ranges[m - 1].end;
		if (x.start < x.end)
			r->ranges[m++] = x;
	}
	r->nranges = m;
}

void reach_roots_build(struct reach_roots *r, const struct procimage *img,
		      const struct heap *h, const uint64_t *sps,
		      const uint64_t *regs, size_t nregs, size_t nthreads)
{
	const struct maps *m = &img->maps;
	struct heap_extent *e;
	uint64_t *lowest_sp;
	size_t ne, nvalues = st_mult(nregs, nthreads);

	memset(r, 0, sizeof(*r));
	if (nvalues) {
		r->values = xmemdup(regs, st_mult(nvalues, sizeof(*regs)));
		r->nvalues = r->values_alloc = nvalues;
	}
	/* Each mapping's lowest stack pointer: a thread's stack. */
	lowest_sp = xcalloc(m->n ? m->n : 1, sizeof(*lowest_sp));
	for (size_t t = 0; sps && t < nthreads; t++) {
		const struct vma *v = maps_find(m, sps[t]);
		size_t i;

		if (!v)
			continue;
		i = (size_t)(v - m->v);
		if (!lowest_sp[i] || sps[t] < lowest_sp[i])
			lowest_sp[i] = sps[t];
	}
	e = merged_extents(h, &ne);
	for (size_t i = 0; i < m->n; i++) {
		const struct vma *v = &m->v[i], *prev = i ? &m->v[i - 1] : NULL;
		enum heap_root_kind kind = ROOT_OTHER;
		uint64_t start = v->start;

		if (v->perms[0] != 'r' || !vma_writable(v) || special(v))
			continue;
		if (lowest_sp[i]) {
			kind = ROOT_STACK;
			if (lowest_sp[i] - v->start > RED_ZONE)
				start = lowest_sp[i] - RED_ZONE;
		} else if (file_backed(v) ||
			   (!v->name[0] && prev && prev->end == v->start &&
			    file_backed(prev))) {
			kind = ROOT_DATA;
		}
		add_less_extents(r, start, v->end, kind, e, ne);
	}
	free(e);
	free(lowest_sp);
	normalize_ranges(r);
}

void reach_roots_release(struct reach_roots *r)
{
	free(r->ranges);
	free(r->values);
	memset(r, 0, sizeof(*r));
}

/* --- Finding a block ---------------------------------------------------- */

/* B's usable bytes, 0 for a size too small to have any. */
static uint64_t usable(const struct heap_block *b)
{
	return b->size < CHUNK_HDR ? 0 : heap_block_usable(b);
}

ptrdiff_t heap_find_block(const struct heap *h, uint64_t addr)
{
	const struct heap_block *b;
	size_t i;

	if (addr < CHUNK_HDR)
		return -1;
	i = PARTITION_POINT(h->nblocks, k,
			    h->blocks[k].chunk <= addr - CHUNK_HDR);
	if (!i)
		return -1;
	b = &h->blocks[i - 1];
	if (b->state != HEAP_IN_USE ||
	    addr - (b->chunk + CHUNK_HDR) >= usable(b))
		return -1;
	return (ptrdiff_t)(i - 1);
}

/* --- The scan ----------------------------------------------------------- */

/* The user bytes of a block in use, as the scan sees them: whole words,
 * and at least a word apart from the block before. */
struct range {
	uint64_t start, end;
};

/*
 * 512 bytes of a span: which of its words are some block's (COVERED,
 * bit I for the word at 8 * I), whether the word before them is
 * (CARRY), and how many blocks start before them (BEFORE).  A block
 * starts at a word covered after one that is not; so the block holding
 * a covered word is BEFORE plus the starts up to it, less one.
 */
struct group {
	uint64_t covered;
	uint32_t before;
	uint32_t carry;
};

/* Blocks in use close together, and their index. */
struct span {
	uint64_t start, end;
	uint64_t base;     /* groups: START rounded down to 512; granules:
			      START >> SHIFT */
	size_t ibase;      /* its first group's or granule's index */
	uint32_t last;     /* its last block */
	unsigned shift;    /* 0: groups; else granules of 2^SHIFT bytes */
};

struct scan {
	const struct heap *h;
	struct procimage *img;
	const struct reach_visitor *v;
	struct reach_scan *s;
	/* The blocks in use that have bytes, in address order, and their
	 * indexes in h->blocks. */
	struct range *ranges;
	uint32_t *bidx;
	size_t n;
	uint64_t lo, hi;   /* the bounds of them all */
	struct span *spans;
	size_t nspans, last_span;
	struct group *groups;
	uint32_t *granules;
	/* The window, and the words of it that may be references, with
	 * where they are (blocks' indexes in ranges), to look up together:
	 * blocks are small, and one's words alone are too few to overlap
	 * the misses of their lookups. */
	uint64_t *buf;
	uint64_t cand[CHUNK_WORDS];
	uint32_t from[CHUNK_WORDS];
	size_t ncand;
	/* The graph being built (in ranges' indexes until the blocks are
	 * read): the block whose references are being collected, and up
	 * to which block first[] is filled. */
	size_t to_alloc;
	uint32_t cur;
	size_t filled;
	/* The blocks marked anchored, in order: a queue of those whose
	 * references are still to follow. */
	uint32_t *queue;
	size_t nqueue;
	uint8_t *kinds;    /* per block: the root kinds that refer to it */
};

/* Block I (in h->blocks) is anchored; follow it later. */
static void anchor(struct scan *sc, uint32_t i)
{
	if (sc->s->state[i] == REACH_ANCHORED)
		return;
	sc->s->state[i] = REACH_ANCHORED;
	sc->queue[sc->nqueue++] = i;
}

/* Block I (in h->blocks) cannot be read, or not all of it.  (KINDS
 * serves, while the blocks are read, to count each once.) */
static void unread(struct scan *sc, uint32_t i)
{
	if (!sc->kinds[i]) {
		sc->kinds[i] = 1;
		sc->s->unread_blocks++;
	}
	anchor(sc, i);
}

/*
 * The blocks in use as ranges, clipped: each one left without bytes (a
 * size too small, or inside the one before: hostile memory) cannot be
 * scanned and counts as unread.
 */
static void index_ranges(struct scan *sc)
{
	const struct heap *h = sc->h;
	uint64_t prev_end = 0;
	size_t inuse = 0;

	for (size_t i = 0; i < h->nblocks; i++)
		inuse += h->blocks[i].state == HEAP_IN_USE;
	sc->ranges = xcalloc_table(inuse ? inuse : 1, sizeof(*sc->ranges));
	sc->bidx = xcalloc_table(inuse ? inuse : 1, sizeof(*sc->bidx));
	sc->queue = xmalloc(st_mult(inuse ? inuse : 1, sizeof(*sc->queue)));
	for (size_t i = 0; i < h->nblocks; i++) {
		const struct heap_block *b = &h->blocks[i];
		uint64_t u = b->chunk + CHUNK_HDR, len = usable(b);
		uint64_t start = (u + 7) & ~7ull, end;

		if (b->state != HEAP_IN_USE)
			continue;
		sc->s->state[i] = REACH_LEAKED;
		end = len > UINT64_MAX - u ? UINT64_MAX : u + len;
		end &= ~7ull;
		if (sc->n && start < prev_end + 8)
			start = prev_end + 8;
		if (b->chunk > UINT64_MAX - 2 * CHUNK_HDR ||
		    prev_end > UINT64_MAX - 16 || end <= start) {
			unread(sc, (uint32_t)i);
			continue;
		}
		sc->ranges[sc->n].start = start;
		sc->ranges[sc->n].end = end;
		sc->bidx[sc->n++] = (uint32_t)i;
		prev_end = end;
	}
	if (sc->n) {
		sc->lo = sc->ranges[0].start;
		sc->hi = sc->ranges[sc->n - 1].end;
	}
}

static uint64_t granule_count(uint64_t start, uint64_t end, unsigned shift)
{
	return ((end - 1) >> shift) - (start >> shift) + 1;
}

/* Set the bits of words [U0, U1) (from the span's base) in G. */
static void cover(struct group *g, uint64_t u0, uint64_t u1)
{
	for (uint64_t u = u0; u < u1;) {
		uint64_t stop = (u | 63) + 1 < u1 ? (u | 63) + 1 : u1;
		unsigned from = u & 63, n = (unsigned)(stop - u);

		g[u >> 6].covered |=
			n == 64 ? ~0ull : ((1ull << n) - 1) << from;
		u = stop;
	}
}

/* Span SP's groups, from G. */
static void index_groups(struct scan *sc, const struct span *sp,
			 uint32_t first, struct group *g)
{
	size_t ng = granule_count(sp->base, sp->end, 9);
	uint32_t k = first;

	for (uint32_t j = first; j <= sp->last; j++)
		cover(g, (sc->ranges[j].start - sp->base) >> 3,
		      (sc->ranges[j].end - sp->base) >> 3);
	for (size_t i = 0; i < ng; i++) {
		uint64_t at = sp->base + ((uint64_t)i << 9);

		while (k <= sp->last && sc->ranges[k].start < at)
			k++;
		g[i].before = k;
		g[i].carry = i && g[i - 1].covered >> 63;
	}
}

/* Span SP's granules, from G: each one's first block reaching into it. */
static void index_granules(struct scan *sc, const struct span *sp,
			   uint32_t first, uint32_t *g)
{
	size_t i = 0;

	for (uint32_t k = first; k <= sp->last; k++) {
		uint64_t upto =
			((sc->ranges[k].end - 1) >> sp->shift) - sp->base;

		while (i <= upto)
			g[i++] = k;
	}
}

/*
 * Spans of blocks, each with groups when they take no more than
 * GROUPS_PER_BLOCK a block (a heap of small blocks: exact, one read a
 * lookup), else granules, as many as GRANULES_PER_BLOCK a block (big
 * blocks, or far apart).  Memory: a few words a block either way.
 */
static void index_spans(struct scan *sc)
{
	size_t ngroups = 0, ngranules = 0, nalloc = 0;

	for (size_t k = 0; k < sc->n;) {
		struct span sp = { 0 };
		size_t j = k + 1;
		uint64_t nb;

		while (j < sc->n &&
		       sc->ranges[j].start - sc->ranges[j - 1].end < SPAN_GAP)
			j++;
		nb = j - k;
		sp.start = sc->ranges[k].start;
		sp.end = sc->ranges[j - 1].end;
		sp.last = (uint32_t)(j - 1);
		sp.base = sp.start & ~511ull;
		if (granule_count(sp.base, sp.end, 9) <=
		    nb * GROUPS_PER_BLOCK + 2) {
			sp.ibase = ngroups;
			ngroups += granule_count(sp.base, sp.end, 9);
		} else {
			sp.shift = MIN_SHIFT;
			while (granule_count(sp.start, sp.end, sp.shift) >
			       nb * GRANULES_PER_BLOCK + 2)
				sp.shift++;
			sp.base = sp.start >> sp.shift;
			sp.ibase = ngranules;
			ngranules += granule_count(sp.start, sp.end, sp.shift);
		}
		GROW(sc->spans, sc->nspans + 1, nalloc);
		sc->spans[sc->nspans++] = sp;
		k = j;
	}
	sc->groups = xcalloc_table(ngroups ? ngroups : 1, sizeof(*sc->groups));
	sc->granules = xcalloc_table(ngranules ? ngranules : 1,
				     sizeof(*sc->granules));
	for (size_t i = 0; i < sc->nspans; i++) {
		const struct span *sp = &sc->spans[i];
		uint32_t first = i ? sc->spans[i - 1].last + 1 : 0;

		if (sp->shift)
			index_granules(sc, sp, first, sc->granules + sp->ibase);
		else
			index_groups(sc, sp, first, sc->groups + sp->ibase);
	}
}

/* The span whose bounds hold X, or NULL: most often the last one. */
static inline const struct span *find_span(struct scan *sc, uint64_t x)
{
	const struct span *sp = &sc->spans[sc->last_span];
	size_t i;

	if (x - sp->start < sp->end - sp->start)
		return sp;
	i = PARTITION_POINT(sc->nspans, j, sc->spans[j].end <= x);
	if (i == sc->nspans || x < sc->spans[i].start)
		return NULL;
	sc->last_span = i;
	return &sc->spans[i];
}

/* (Without -mpopcnt GCC calls libgcc for __builtin_popcountll.) */
static inline unsigned popcount64(uint64_t x)
{
#ifdef __POPCNT__
	return (unsigned)__builtin_popcountll(x);
#else
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* The block holding X, word BIT of group G, or NONE. */
static inline uint32_t in_group(const struct group *g, unsigned bit)
{
	uint64_t starts = g->covered & ~(g->covered << 1 | g->carry);
	uint32_t k = g->before + popcount64(starts & (~0ull >> (63 - bit))) - 1;

	return g->covered >> bit & 1 ? k : NONE;
}

/*
 * The block holding X, or NONE, from K, the first block reaching into
 * X's granule: the answer is the first whose end is past X; the span's
 * LAST block ends past X, so the walk stops there.  Granules are small,
 * so a few steps do, but a hostile heap may crowd one: then a binary
 * search.
 */
static inline uint32_t in_granule(const struct scan *sc, uint64_t x,
				  uint32_t k, uint32_t last)
{
	const struct range *r = sc->ranges;

	for (unsigned step = 0; r[k].end <= x; step++) {
		if (step == LINEAR_STEPS) {
			uint32_t hi = last;

			while (k < hi) {
				uint32_t mid = k + (hi - k) / 2;

				if (r[mid].end <= x)
					k = mid + 1;
				else
					hi = mid;
			}
			break;
		}
		k++;
	}
	return r[k].start <= x ? k : NONE;
}

/*
 * The blocks (indexes in ranges) holding the N (at most CHUNK_WORDS)
 * addresses X, NONE where none does, into OUT.  The index is far larger
 * than the caches, and lookups one after the other would each wait for
 * memory: so they go in batches, in rounds, each asking for the cache
 * lines the next one reads (the group; or the granule, then the block).
 */
static void resolve(struct scan *sc, const uint64_t *x, size_t n,
		    uint32_t *out)
{
	struct {
		size_t at;      /* the group's or granule's index */
		uint32_t k;     /* the block, or NONE; or its span's last */
		unsigned bit;   /* the word in the group; 64: a granule */
	} p[BATCH];

	for (size_t i0 = 0; i0 < n; i0 += BATCH) {
		size_t m = n - i0 < BATCH ? n - i0 : BATCH;

		for (size_t j = 0; j < m; j++) {
			const struct span *sp = find_span(sc, x[i0 + j]);
			uint64_t u;

			if (!sp) {
				p[j].at = 0;
				p[j].k = NONE;
				p[j].bit = 65;
			} else if (!sp->shift) {
				u = (x[i0 + j] - sp->base) >> 3;
				p[j].at = sp->ibase + (u >> 6);
				p[j].bit = u & 63;
				prefetch(&sc->groups[p[j].at]);
			} else {
				p[j].at = sp->ibase + (x[i0 + j] >> sp->shift) -
					  sp->base;
				p[j].k = sp->last;
				p[j].bit = 64;
				prefetch(&sc->granules[p[j].at]);
			}
		}
		for (size_t j = 0; j < m; j++) {
			if (p[j].bit < 64) {
				p[j].k = in_group(&sc->groups[p[j].at],
						  p[j].bit);
			} else if (p[j].bit == 64) {
				p[j].at = sc->granules[p[j].at];
				prefetch(&sc->ranges[p[j].at]);
			}
		}
		for (size_t j = 0; j < m; j++)
			out[i0 + j] = p[j].bit != 64 ? p[j].k
				      : in_granule(sc, x[i0 + j],
						   (uint32_t)p[j].at, p[j].k);
	}
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The references of the current block collected: each target once. */
static void finish_block(struct scan *sc)
{
	struct reach_scan *s = sc->s;
	uint64_t from;
	uint32_t *t;
	size_t n, m = 0;

	if (sc->cur == NONE)
		return;
	from = s->first[sc->cur];
	t = s->to + from;
	n = (size_t)(s->nedges - from);
	if (n < 2)
		return;
	if (n <= 16) {
		for (size_t i = 1; i < n; i++) {
			uint32_t x = t[i];
			size_t j = i;

			for (; j && t[j - 1] > x; j--)
				t[j] = t[j - 1];
			t[j] = x;
		}
	} else {
		qsort(t, n, sizeof(*t), cmp_u32);
	}
	for (size_t i = 0; i < n; i++)
		if (!m || t[i] != t[m - 1])
			t[m++] = t[i];
	s->nedges = from + m;
}

/* Block K (in ranges) is the one whose references come next. */
static void start_block(struct scan *sc, size_t k)
{
	uint32_t i = sc->bidx[k];

	if (i == sc->cur)
		return;
	finish_block(sc);
	for (; sc->filled <= i; sc->filled++)
		sc->s->first[sc->filled] = sc->s->nedges;
	sc->cur = i;
}

/* The candidates looked up: the references of their blocks. */
static void flush_blocks(struct scan *sc)
{
	struct reach_scan *s = sc->s;
	uint32_t res[CHUNK_WORDS];
	uint64_t e;
	uint32_t *to;

	resolve(sc, sc->cand, sc->ncand, res);
	GROW(s->to, s->nedges + sc->ncand, sc->to_alloc);
	to = s->to;
	for (size_t j = 0; j < sc->ncand; j++) {
		uint32_t t = res[j], k = sc->from[j];

		if (t == NONE || t == k)
			continue;
		if (sc->bidx[k] != sc->cur)
			start_block(sc, k);
		/* (A repeat of the last one is cheap to drop here.) */
		e = s->nedges;
		if (e == s->first[sc->cur] || to[e - 1] != t)
			to[s->nedges++] = t;
	}
	sc->ncand = 0;
}

/* The N words of block K at ADDR (8-aligned): offered, and gathered
 * (without a branch: whether a word is one is anybody's guess). */
static void scan_piece(struct scan *sc, size_t k, uint64_t addr,
		       const uint64_t *w, size_t n)
{
	uint64_t lo = sc->lo, len = sc->hi - sc->lo;
	uint32_t self = sc->bidx[k];

	if (sc->v && sc->v->block && n)
		sc->v->block(sc->v->ctx, self,
			     addr - (sc->h->blocks[self].chunk + CHUNK_HDR), w,
			     n);
	for (size_t i = 0; i < n; i++) {
		sc->cand[sc->ncand] = w[i];
		sc->from[sc->ncand] = (uint32_t)k;
		sc->ncand += w[i] - lo < len;
		if (sc->ncand == CHUNK_WORDS)
			flush_blocks(sc);
	}
}

/* The words in [START, END) of the window read at BASE, as pointers. */
static const uint64_t *words(const struct scan *sc, uint64_t base,
			     uint64_t *start, uint64_t end, size_t *n)
{
	uint64_t a = (*start + 7) & ~7ull, b = end & ~7ull;

	*start = a;
	*n = b > a ? (size_t)((b - a) / 8) : 0;
	return sc->buf + (a - base) / 8;
}

static bool probe(struct scan *sc, uint64_t addr)
{
	uint8_t byte;

	return procimage_read(sc->img, addr, &byte, 1) == 1;
}

/*
 * P cannot be read: the first page after it below LIMIT that can, or
 * LIMIT.  Pages ever further apart, then a binary search back to the
 * first readable one after the last that was not: a few dozen reads
 * however long the stretch.  (A readable stretch between two that are
 * not may be passed over: within one mapping, only hostile memory has
 * them.)
 */
static uint64_t gallop(struct scan *sc, uint64_t p, uint64_t limit)
{
	uint64_t bad = page_down(p), step = PAGE, good, last;

	if (limit - bad <= PAGE)
		return limit;
	last = page_down(limit - 1);
	for (;; step *= 2) {
		good = limit - bad > step ? bad + step : last;
		if (probe(sc, good))
			break;
		if (good == last)
			return limit;
		bad = good;
	}
	while (good - bad > PAGE) {
		uint64_t mid = page_down(bad + (good - bad) / 2);

		if (probe(sc, mid))
			good = mid;
		else
			bad = mid;
	}
	return good;
}

/*
 * The same over the mappings: within P's mapping, else from the start of
 * each one after it (a mapping that cannot be read, then one that can:
 * a core's segment left out, or a guard page).
 */
static uint64_t next_readable(struct scan *sc, uint64_t p, uint64_t limit)
{
	const struct maps *m = &sc->img->maps;

	while (p < limit) {
		const struct vma *v = maps_find(m, p);
		uint64_t stop, got;

		if (!v) {
			size_t i = PARTITION_POINT(m->n, k, m->v[k].start <= p);

			if (i == m->n || m->v[i].start >= limit)
				return limit;
			p = m->v[i].start;
			if (probe(sc, p))
				return p;
			v = &m->v[i];
		}
		stop = v->end < limit ? v->end : limit;
		got = gallop(sc, p, stop);
		if (got < stop)
			return got;
		if ((p = stop) < limit && probe(sc, p))
			return p;
	}
	return limit;
}

/* Does a whole page lie between A and B (a gap between two blocks)? */
static bool page_between(uint64_t a, uint64_t b)
{
	return page_down(b) > page_up(a);
}

/*
 * Every block in use, read in windows.  K is the block to go on with and
 * A where in it: its start, or past a window or a stretch not read.
 */
static void scan_blocks(struct scan *sc)
{
	const struct range *r = sc->ranges;
	size_t k = 0;
	uint64_t a = sc->n ? r[0].start : 0;

	while (k < sc->n) {
		uint64_t base = a & ~7ull, end, got, stop, skip_to;
		size_t kend = k + 1;

		if (r[k].end - base > WINDOW) {
			end = base + WINDOW;
		} else {
			while (kend < sc->n && r[kend].end - base <= WINDOW &&
			       !page_between(r[kend - 1].end, r[kend].start))
				kend++;
			end = r[kend - 1].end;
		}
		got = procimage_read(sc->img, base, sc->buf, end - base);
		stop = base + got;
		for (size_t j = k; j < kend && (j == k ? a : r[j].start) < stop;
		     j++) {
			uint64_t from = j == k ? a : r[j].start;
			uint64_t to = r[j].end < stop ? r[j].end : stop;
			const uint64_t *w;
			size_t n;

			w = words(sc, base, &from, to, &n);
			scan_piece(sc, j, from, w, n);
		}
		if (got == end - base) {
			if (end < r[k].end) {
				a = end;
			} else if ((k = kend) < sc->n) {
				a = r[k].start;
			}
			continue;
		}
		/* Unread from STOP to SKIP_TO: the blocks there too. */
		skip_to = next_readable(sc, stop, sc->hi);
		while (k < sc->n && r[k].end <= stop)
			k++;
		for (; k < sc->n && r[k].start < skip_to; k++) {
			unread(sc, sc->bidx[k]);
			if (r[k].end > skip_to)
				break;
		}
		if (k < sc->n)
			a = r[k].start > skip_to ? r[k].start : skip_to;
	}
	flush_blocks(sc);
	finish_block(sc);
	for (; sc->filled <= sc->h->nblocks; sc->filled++)
		sc->s->first[sc->filled] = sc->s->nedges;
	/* (Independent reads: the processor overlaps their misses.) */
	for (uint64_t e = 0; e < sc->s->nedges; e++)
		sc->s->to[e] = sc->bidx[sc->s->to[e]];
	if (sc->s->nedges)
		sc->s->to = xreallocarray(sc->s->to, sc->s->nedges,
					  sizeof(*sc->s->to));
}

/* A reference from a root of KIND to block K (in ranges). */
static void root_ref(struct scan *sc, enum heap_root_kind kind, uint32_t k)
{
	uint32_t i = sc->bidx[k];

	sc->s->root_refs[kind]++;
	if (!(sc->kinds[i] & 1u << kind)) {
		sc->kinds[i] |= (uint8_t)(1u << kind);
		sc->s->root_blocks[kind]++;
	}
	anchor(sc, i);
}

/* The roots of KIND in the N words at W. */
static void root_words(struct scan *sc, enum heap_root_kind kind,
		       const uint64_t *w, size_t n)
{
	uint64_t lo = sc->lo, len = sc->hi - sc->lo;
	uint32_t res[CHUNK_WORDS];

	for (size_t i = 0; i < n;) {
		size_t m = 0;

		for (; i < n && m < CHUNK_WORDS; i++) {
			sc->cand[m] = w[i];
			m += w[i] - lo < len;
		}
		resolve(sc, sc->cand, m, res);
		for (size_t j = 0; j < m; j++)
			if (res[j] != NONE)
				root_ref(sc, kind, res[j]);
	}
}

static void scan_root(struct scan *sc, const struct heap_root_range *rr)
{
	uint64_t a = rr->start > UINT64_MAX - 7 ? rr->end
						  : (rr->start + 7) & ~7ull;

	while (a < rr->end) {
		uint64_t len = rr->end - a < WINDOW ? rr->end - a : WINDOW;
		uint64_t got = procimage_read(sc->img, a, sc->buf, len);
		uint64_t from = a, next;
		const uint64_t *w;
		size_t n;

		w = words(sc, a, &from, a + got, &n);
		root_words(sc, rr->kind, w, n);
		if (sc->v && sc->v->root && n)
			sc->v->root(sc->v->ctx, rr, from, w, n);
		if (got == len) {
			a += len;
			continue;
		}
		next = next_readable(sc, a + got, rr->end);
		sc->s->unread_root_bytes += next - (a + got);
		a = next;
	}
}

/*
 * From the anchored blocks, all they refer to, without recursion: the
 * anchored blocks are a queue (each enters once), and the blocks a few
 * places ahead in it have their edges, then their targets' states asked
 * for before they are reached (both are far larger than the caches).
 */
static void mark(struct scan *sc)
{
	const uint64_t *first = sc->s->first;
	const uint32_t *to = sc->s->to;
	const uint8_t *state = sc->s->state;
	uint32_t *q = sc->queue;

	for (size_t head = 0; head < sc->nqueue; head++) {
		uint32_t i = q[head];

		if (head + 16 < sc->nqueue)
			prefetch(&first[q[head + 16]]);
		if (head + 8 < sc->nqueue)
			prefetch(&to[first[q[head + 8]]]);
		if (head + 4 < sc->nqueue) {
			uint32_t j = q[head + 4];
			uint64_t e = first[j], stop = first[j + 1];

			if (stop - e > 16)
				stop = e + 16;
			for (; e < stop; e++)
				prefetch(&state[to[e]]);
		}
		for (uint64_t e = first[i]; e < first[i + 1]; e++)
			anchor(sc, to[e]);
	}
	sc->nqueue = 0;
}

/*
 * Leaked, and of those unreferenced; then the totals.  Every block not
 * anchored is leaked; those a leaked block refers to are marked (REFD,
 * for the while), the others are unreferenced.
 */
static void settle(struct scan *sc)
{
	struct reach_scan *s = sc->s;
	const struct heap_block *b = sc->h->blocks;
	const uint32_t *to = s->to;
	uint8_t *state = s->state;
	enum { REFD = 0x80 };

	for (size_t i = 0; i < s->nblocks; i++) {
		if ((state[i] & ~REFD) != REACH_LEAKED)
			continue;
		for (uint64_t e = s->first[i]; e < s->first[i + 1]; e++) {
			if (e + 32 < s->nedges)
				prefetch(&state[to[e + 32]]);
			state[to[e]] |= REFD;
		}
	}
	for (size_t i = 0; i < s->nblocks; i++) {
		unsigned st = state[i] & ~REFD;

		if (st == REACH_LEAKED && !(state[i] & REFD))
			st = REACH_UNREFERENCED;
		state[i] = (uint8_t)st;
		s->count[st]++;
		s->bytes[st] += b[i].size;
		if (st == REACH_UNREFERENCED) {
			s->count[REACH_LEAKED]++;
			s->bytes[REACH_LEAKED] += b[i].size;
		}
	}
}

int reach_scan_run(struct reach_scan *s, const struct heap *h,
		  struct procimage *img, const struct reach_roots *r,
		  const struct reach_visitor *v)
{
	struct scan sc = { 0 };

	memset(s, 0, sizeof(*s));
	if (h->nblocks >= UINT32_MAX)
		return error("%s: %zu heap blocks are too many to scan",
			     img->name, h->nblocks);
	s->nblocks = h->nblocks;
	s->state = xcalloc(h->nblocks ? h->nblocks : 1, sizeof(*s->state));
	s->first = xcalloc(h->nblocks + 1, sizeof(*s->first));
	sc.h = h;
	sc.img = img;
	sc.v = v;
	sc.s = s;
	sc.cur = NONE;
	sc.kinds = xcalloc(h->nblocks ? h->nblocks : 1, sizeof(*sc.kinds));
	index_ranges(&sc);
	index_spans(&sc);
	sc.buf = xmalloc(WINDOW);
	scan_blocks(&sc);
	/* (KINDS counted the unread blocks; now the root kinds.) */
	memset(sc.kinds, 0, h->nblocks);
	for (size_t i = 0; i < r->nranges; i++)
		scan_root(&sc, &r->ranges[i]);
	root_words(&sc, ROOT_REGISTERS, r->values, r->nvalues);
	mark(&sc);
	settle(&sc);
	FREE_ALL(sc.buf, sc.kinds, sc.queue, sc.groups, sc.granules, sc.bidx,
		 sc.spans, sc.ranges);
	return 0;
}

void reach_scan_release(struct reach_scan *s)
{
	free(s->state);
	free(s->first);
	free(s->to);
	memset(s, 0, sizeof(*s));
}
