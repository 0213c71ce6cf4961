/*
 * The leak scan on a made-up process image: a binary's data and .bss,
 * libc's, a [heap], a thread arena's heap, an mmapped chunk, a stack,
 * other memory; blocks laid out by hand (no walk), pointers put where a
 * test wants them.  Then the same against a plain search over random
 * heaps, and broken in the ways hostile memory breaks it.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "reach.h"
#include "helpers.h"
#include "util.h"

#define PROG 0x555400000000ull   /* /usr/bin/prog rw-p, then its .bss */
#define HEAP 0x555500000000ull   /* [heap], the main arena's */
#define HEAP_LEN 0x20000ull
#define THREAD 0x7e0000000000ull /* a thread arena's heap */
#define THREAD_LEN 0x10000ull
#define MMAP 0x7f1000000000ull   /* an mmapped chunk */
#define MMAP_LEN 0x2000ull
#define ANON 0x7f2000000000ull   /* the program's own mmap */
#define LIBC 0x7f3000000000ull   /* r--p, then rw-p */
#define STACK 0x7ffd00000000ull  /* [stack] */
#define STACK_LEN 0x4000ull
#define SP (STACK + 0x3000)
#define VVAR 0x7ffd10000000ull
#define GUARD 0x7ffd20000000ull

struct seg {
	uint64_t addr, len;
	uint8_t *data;   /* NULL: mapped, but cannot be read */
};

struct fake {
	struct procimage img; /* first: the scan's pointer is ours */
	struct seg segs[32];
	size_t nsegs;
	/* The reads made (the first MAX_READS), and their bytes. */
	struct {
		uint64_t addr, len, got;
	} reads[4096];
	size_t nreads;
};

static struct fake f;
static struct heap h;
static struct reach_roots r;
static struct reach_scan s;

/* (The last one added wins: a hole in a mapping.) */
static const struct seg *seg_at(uint64_t addr)
{
	for (size_t i = f.nsegs; i-- > 0;)
		if (addr >= f.segs[i].addr &&
		    addr - f.segs[i].addr < f.segs[i].len)
			return &f.segs[i];
	return NULL;
}

/* As a live process reads: on through adjacent mappings, up to the
 * first byte that cannot be read. */
static size_t fake_read(struct procimage *img, uint64_t addr, void *buf,
			size_t len)
{
	struct fake *fk = (struct fake *)img;
	size_t got = 0;

	while (got < len) {
		const struct seg *sg = seg_at(addr + got);
		uint64_t off, n;

		if (!sg || !sg->data)
			break;
		off = addr + got - sg->addr;
		n = sg->len - off < len - got ? sg->len - off : len - got;
		/* (Up to a hole added after it.) */
		for (const struct seg *o = sg + 1; o < fk->segs + fk->nsegs;
		     o++)
			if (o->addr > addr + got && o->addr - (addr + got) < n)
				n = o->addr - (addr + got);
		memcpy((char *)buf + got, sg->data + off, n);
		got += n;
	}
	if (fk->nreads < ARRAY_SIZE(fk->reads)) {
		fk->reads[fk->nreads].addr = addr;
		fk->reads[fk->nreads].len = len;
		fk->reads[fk->nreads++].got = got;
	}
	return got;
}

/* A mapping; READABLE or not, its bytes zero. */
static void map(uint64_t addr, uint64_t len, const char *perms,
		const char *name, bool readable)
{
	struct vma v = { 0 };

	v.start = addr;
	v.end = addr + len;
	memcpy(v.perms, perms, 5);
	v.name = strtab_intern_str(&f.img.strings, name);
	maps_add(&f.img.maps, &v);
	maps_sort(&f.img.maps, "fake");
	cr_assert_lt(f.nsegs, ARRAY_SIZE(f.segs));
	f.segs[f.nsegs].addr = addr;
	f.segs[f.nsegs].len = len;
	f.segs[f.nsegs++].data = readable ? xcalloc(1, len) : NULL;
}

/* Bytes of a mapping that cannot be read (a core's cut segment). */
static void hole(uint64_t addr, uint64_t len)
{
	cr_assert_lt(f.nsegs, ARRAY_SIZE(f.segs));
	f.segs[f.nsegs].addr = addr;
	f.segs[f.nsegs].len = len;
	f.segs[f.nsegs++].data = NULL;
}

static void extent(uint64_t start, uint64_t len, unsigned arena)
{
	h.extents = xreallocarray(h.extents, h.nextents + 1,
				  sizeof(*h.extents));
	h.extents[h.nextents].start = start;
	h.extents[h.nextents].end = start + len;
	h.extents[h.nextents++].arena = arena;
}

static void setup(void)
{
	memset(&f, 0, sizeof(f));
	memset(&h, 0, sizeof(h));
	memset(&r, 0, sizeof(r));
	memset(&s, 0, sizeof(s));
	procimage_init(&f.img, "fake", fake_read);
	map(PROG, 0x1000, "rw-p", "/usr/bin/prog", true);
	map(PROG + 0x1000, 0x1000, "rw-p", "", true);
	map(HEAP, HEAP_LEN, "rw-p", "[heap]", true);
	map(THREAD, THREAD_LEN, "rw-p", "", true);
	map(THREAD + THREAD_LEN, 0x10000, "---p", "", false);
	map(MMAP, MMAP_LEN, "rw-p", "", true);
	map(ANON, 0x1000, "rw-p", "", true);
	map(LIBC, 0x1000, "r--p", "/usr/lib/libc.so.6", true);
	map(LIBC + 0x1000, 0x1000, "rw-p", "/usr/lib/libc.so.6", true);
	map(STACK, STACK_LEN, "rw-p", "[stack]", true);
	map(VVAR, 0x1000, "rw-p", "[vvar]", true); /* (by its name) */
	map(GUARD, 0x1000, "---p", "", false);
	extent(HEAP, HEAP_LEN, 0);
	extent(THREAD, THREAD_LEN, 1);
	extent(MMAP, MMAP_LEN, HEAP_MMAPPED_ARENA);
}

static void teardown(void)
{
	reach_scan_release(&s);
	reach_roots_release(&r);
	free(h.blocks);
	free(h.extents);
	for (size_t i = 0; i < f.nsegs; i++)
		free(f.segs[i].data);
	procimage_close(&f.img);
}

TestSuite(reach, .init = setup, .fini = teardown);

static uint8_t *at(uint64_t addr)
{
	const struct seg *sg = seg_at(addr);

	cr_assert(sg && sg->data, "no bytes at 0x%llx",
		  (unsigned long long)addr);
	return sg->data + (addr - sg->addr);
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(at(addr), &v, 8);
}

static uint64_t user(uint64_t chunk)
{
	return chunk + 16;
}

/* A chunk at C of SIZE, in STATE, of ARENA: its index.  (Added in
 * address order; its header written where it can be.) */
static size_t blk_in(uint64_t c, uint64_t size, enum heap_state state,
		     unsigned arena)
{
	const struct seg *sg = seg_at(c);

	GROW(h.blocks, h.nblocks + 1, h.alloc);
	h.blocks[h.nblocks].chunk = c;
	h.blocks[h.nblocks].size = size;
	h.blocks[h.nblocks].state = state;
	h.blocks[h.nblocks].arena = arena;
	if (sg && sg->data && c + 16 <= sg->addr + sg->len)
		put(c + 8, size | 1);
	return h.nblocks++;
}

static size_t blk(uint64_t c, uint64_t size, enum heap_state state)
{
	return blk_in(c, size, state, 0);
}

static bool have_roots;

static void roots(const uint64_t *sps, const uint64_t *regs, size_t nregs,
		  size_t nthreads)
{
	have_roots = true;
	reach_roots_build(&r, &f.img, &h, sps, regs, nregs, nthreads);
}

/* The pieces the visitor was offered. */
static struct piece {
	bool root;
	size_t i;            /* a block's index */
	uint64_t addr;       /* a block's offset, or a root's address */
	size_t nwords;
	uint64_t word0;
} pieces[4096];
static size_t npieces;

static void on_block(void *ctx, size_t i, uint64_t offset,
		     const uint64_t *words, size_t nwords)
{
	(void)ctx;
	cr_assert_lt(npieces, ARRAY_SIZE(pieces));
	pieces[npieces++] = (struct piece){ false, i, offset, nwords,
					    words[0] };
}

static void on_root(void *ctx, const struct heap_root_range *range,
		    uint64_t addr, const uint64_t *words, size_t nwords)
{
	(void)ctx;
	(void)range;
	cr_assert_lt(npieces, ARRAY_SIZE(pieces));
	pieces[npieces++] = (struct piece){ true, 0, addr, nwords, words[0] };
}

/* The scan, with the roots of one thread at SP and no registers unless
 * roots() was called. */
static void scan(void)
{
	struct reach_visitor v = { on_block, on_root, NULL };
	uint64_t sp = SP;

	if (!have_roots)
		roots(&sp, NULL, 0, 1);
	npieces = 0;
	cr_assert_eq(reach_scan_run(&s, &h, &f.img, &r, &v), 0);
}

static enum heap_reach reach(size_t i)
{
	return (enum heap_reach)s.state[i];
}

/* Does block I refer to block J? */
static bool edge(size_t i, size_t j)
{
	for (uint64_t e = s.first[i]; e < s.first[i + 1]; e++)
		if (s.to[e] == j)
			return true;
	return false;
}

static size_t nedges_of(size_t i)
{
	return (size_t)(s.first[i + 1] - s.first[i]);
}

static const struct heap_root_range *range_at(uint64_t addr)
{
	for (size_t i = 0; i < r.nranges; i++)
		if (addr >= r.ranges[i].start && addr < r.ranges[i].end)
			return &r.ranges[i];
	return NULL;
}

/* --- The roots ---------------------------------------------------------- */

Test(reach, roots_by_kind_less_the_heap)
{
	uint64_t sp = SP, regs[3] = { 1, 2, 3 };

	map(HEAP + HEAP_LEN, 0x1000, "rw-p", "", true);
	roots(&sp, regs, 3, 1);
	cr_assert_eq(range_at(PROG)->kind, ROOT_DATA);
	cr_assert_eq(range_at(PROG + 0x1000)->kind, ROOT_DATA, "the .bss");
	cr_assert_eq(range_at(LIBC + 0x1000)->kind, ROOT_DATA);
	cr_assert_null(range_at(LIBC), "read-only");
	cr_assert_eq(range_at(ANON)->kind, ROOT_OTHER);
	cr_assert_null(range_at(HEAP));
	cr_assert_null(range_at(THREAD));
	cr_assert_null(range_at(MMAP));
	cr_assert_null(range_at(THREAD + THREAD_LEN), "---p");
	cr_assert_null(range_at(VVAR));
	cr_assert_null(range_at(GUARD));
	/* Past the heap's extent, the rest of a mapping is memory too. */
	cr_assert_eq(range_at(HEAP + HEAP_LEN)->kind, ROOT_OTHER);
	cr_assert_eq(range_at(SP)->kind, ROOT_STACK);
	cr_assert_eq(range_at(SP)->start, SP - 128);
	cr_assert_eq(range_at(SP)->end, STACK + STACK_LEN);
	cr_assert_null(range_at(SP - 129));
	for (size_t i = 1; i < r.nranges; i++)
		cr_assert_leq(r.ranges[i - 1].end, r.ranges[i].start);
	cr_assert_eq(r.nvalues, 3);
	cr_assert_eq(r.values[2], 3);
}

Test(reach, roots_stack_from_the_lowest_sp_and_not_below_its_mapping)
{
	uint64_t sps[3] = { SP, STACK + 0x40, ANON + 0x800 };

	roots(sps, NULL, 0, 3);
	cr_assert_eq(range_at(SP)->start, STACK, "red zone clipped");
	cr_assert_eq(range_at(SP)->kind, ROOT_STACK);
	cr_assert_eq(range_at(ANON + 0x800)->kind, ROOT_STACK);
	cr_assert_null(range_at(ANON + 0x800 - 129));
	cr_assert_eq(range_at(ANON + 0x800 - 128)->start, ANON + 0x800 - 128);
}

Test(reach, roots_with_no_threads_and_a_stack_pointer_nowhere)
{
	uint64_t sp = 0x1234;

	roots(&sp, NULL, 0, 1);
	cr_assert_eq(range_at(SP)->kind, ROOT_OTHER, "no thread's");
	reach_roots_release(&r);
	roots(NULL, NULL, 0, 0);
	cr_assert_eq(r.nvalues, 0);
	cr_assert(range_at(PROG));
}

/* --- Finding a block ---------------------------------------------------- */

Test(reach, find_block_by_any_byte_of_its_user_bytes)
{
	size_t a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	size_t b = blk(HEAP + 0x30, 0x30, HEAP_TCACHE);
	size_t c = blk(HEAP + 0x60, 0x40, HEAP_IN_USE);
	size_t m = blk_in(MMAP, MMAP_LEN, HEAP_IN_USE, HEAP_MMAPPED_ARENA);

	(void)b;
	cr_assert_eq(heap_find_block(&h, user(HEAP + 0x10)), (ptrdiff_t)a);
	/* Usable: the chunk less 8, into the next one's prev_size. */
	cr_assert_eq(heap_find_block(&h, HEAP + 0x10 + 0x20 + 7), (ptrdiff_t)a);
	cr_assert_eq(heap_find_block(&h, HEAP + 0x10 + 0x20 + 8), -1);
	cr_assert_eq(heap_find_block(&h, user(HEAP + 0x30)), -1, "free");
	cr_assert_eq(heap_find_block(&h, user(HEAP + 0x60) + 0x21),
		     (ptrdiff_t)c);
	cr_assert_eq(heap_find_block(&h, HEAP + 0x60 + 8), -1, "its header");
	cr_assert_eq(heap_find_block(&h, HEAP), -1);
	cr_assert_eq(heap_find_block(&h, 5), -1);
	cr_assert_eq(heap_find_block(&h, user(MMAP) + MMAP_LEN - 17),
		     (ptrdiff_t)m);
	cr_assert_eq(heap_find_block(&h, user(MMAP) + MMAP_LEN - 16), -1);
	cr_assert_eq(heap_find_block(&h, UINT64_MAX), -1);
}

/* --- The scan ----------------------------------------------------------- */

Test(reach, chain_from_a_root_with_pointers_back)
{
	size_t a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	size_t b = blk(HEAP + 0x30, 0x30, HEAP_IN_USE);
	size_t c = blk(HEAP + 0x60, 0x40, HEAP_IN_USE);
	size_t d = blk(HEAP + 0xa0, 0x20, HEAP_IN_USE);
	size_t top = blk(HEAP + 0xc0, HEAP_LEN - 0xc0, HEAP_TOP);

	put(PROG + 0x100, user(HEAP + 0x10));
	put(user(HEAP + 0x10), user(HEAP + 0x30));
	put(user(HEAP + 0x30) + 8, user(HEAP + 0x60) + 0x10);
	put(user(HEAP + 0x30) + 16, user(HEAP + 0x10));
	put(user(HEAP + 0x30) + 24, user(HEAP + 0x60)); /* twice: one edge */
	put(user(HEAP + 0x60), user(HEAP + 0x30));
	scan();
	cr_assert_eq(reach(a), REACH_ANCHORED);
	cr_assert_eq(reach(b), REACH_ANCHORED);
	cr_assert_eq(reach(c), REACH_ANCHORED);
	cr_assert_eq(reach(d), REACH_UNREFERENCED);
	cr_assert_eq(reach(top), REACH_NONE);
	cr_assert(edge(a, b) && edge(b, c) && edge(b, a) && edge(c, b));
	cr_assert_eq(nedges_of(a), 1);
	cr_assert_eq(nedges_of(b), 2);
	cr_assert_eq(nedges_of(c), 1);
	cr_assert_eq(nedges_of(d), 0);
	cr_assert_eq(s.nedges, 4);
	cr_assert_eq(s.first[s.nblocks], s.nedges);
	cr_assert_eq(s.count[REACH_ANCHORED], 3);
	cr_assert_eq(s.bytes[REACH_ANCHORED], 0x20 + 0x30 + 0x40);
	cr_assert_eq(s.count[REACH_LEAKED], 1);
	cr_assert_eq(s.count[REACH_UNREFERENCED], 1);
	cr_assert_eq(s.bytes[REACH_UNREFERENCED], 0x20);
	cr_assert_eq(s.count[REACH_NONE], 1);
	cr_assert_eq(s.root_refs[ROOT_DATA], 1);
	cr_assert_eq(s.root_blocks[ROOT_DATA], 1);
	cr_assert_eq(s.root_refs[ROOT_STACK], 0);
	cr_assert_eq(s.unread_blocks, 0);
	cr_assert_eq(s.unread_root_bytes, 0);
}

Test(reach, leaked_cycle_is_leaked_not_unreferenced)
{
	size_t a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	size_t b = blk(HEAP + 0x30, 0x20, HEAP_IN_USE);
	size_t c = blk(HEAP + 0x50, 0x20, HEAP_IN_USE);
	size_t self = blk(HEAP + 0x70, 0x20, HEAP_IN_USE);

	put(user(HEAP + 0x10), user(HEAP + 0x30));
	put(user(HEAP + 0x30), user(HEAP + 0x10));
	put(user(HEAP + 0x50), user(HEAP + 0x30) + 4);
	put(user(HEAP + 0x70), user(HEAP + 0x70));
	scan();
	cr_assert_eq(reach(a), REACH_LEAKED);
	cr_assert_eq(reach(b), REACH_LEAKED);
	cr_assert_eq(reach(c), REACH_UNREFERENCED);
	cr_assert_eq(reach(self), REACH_UNREFERENCED, "itself is no one");
	cr_assert_eq(nedges_of(self), 0);
	cr_assert_eq(s.count[REACH_LEAKED], 4);
	cr_assert_eq(s.count[REACH_UNREFERENCED], 2);
	cr_assert_eq(s.count[REACH_ANCHORED], 0);
}

Test(reach, interior_pointers_and_their_limits)
{
	size_t a = blk(HEAP + 0x10, 0x30, HEAP_IN_USE);
	size_t b = blk(HEAP + 0x40, 0x30, HEAP_IN_USE);
	size_t c = blk(HEAP + 0x70, 0x30, HEAP_IN_USE);
	size_t d = blk(HEAP + 0xa0, 0x30, HEAP_IN_USE);

	/* A's last usable byte: in B's prev_size field; so C's chunk
	 * address is B's; one past B's bytes is C's size field. */
	put(ANON, user(HEAP + 0x10) + 0x28 - 1);
	put(ANON + 8, HEAP + 0x70);
	put(ANON + 16, user(HEAP + 0x40) + 0x28);
	/* Unaligned words are no words. */
	memcpy(at(ANON + 0x21), &(uint64_t){ user(HEAP + 0xa0) }, 8);
	scan();
	cr_assert_eq(reach(a), REACH_ANCHORED);
	cr_assert_eq(reach(b), REACH_ANCHORED);
	cr_assert_eq(reach(c), REACH_UNREFERENCED);
	cr_assert_eq(reach(d), REACH_UNREFERENCED);
	cr_assert_eq(s.root_refs[ROOT_OTHER], 2);
}

Test(reach, free_chunks_neither_refer_nor_are_referred_to)
{
	size_t a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	size_t fr = blk(HEAP + 0x30, 0x100, HEAP_BIN);
	size_t b = blk(HEAP + 0x130, 0x20, HEAP_IN_USE);

	put(PROG + 8, user(HEAP + 0x30));             /* to a free chunk */
	put(user(HEAP + 0x30) + 0x20, user(HEAP + 0x10)); /* stale */
	put(user(HEAP + 0x130), user(HEAP + 0x30) + 8);
	scan();
	cr_assert_eq(reach(fr), REACH_NONE);
	cr_assert_eq(reach(a), REACH_UNREFERENCED);
	cr_assert_eq(reach(b), REACH_UNREFERENCED);
	cr_assert_eq(s.nedges, 0);
	cr_assert_eq(s.root_refs[ROOT_DATA], 0);
	cr_assert_eq(s.count[REACH_NONE], 1);
	cr_assert_eq(s.bytes[REACH_NONE], 0x100);
}

Test(reach, registers_alone_anchor)
{
	size_t a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	size_t b = blk(THREAD + 0x10, 0x40, HEAP_IN_USE);
	size_t c = blk(THREAD + 0x50, 0x40, HEAP_IN_USE);
	uint64_t sps[2] = { SP, ANON + 0xf00 };
	uint64_t regs[4] = { 0, user(THREAD + 0x10) + 0x30, 7, 0 };

	h.blocks[b].arena = h.blocks[c].arena = 1;
	put(user(THREAD + 0x10), user(THREAD + 0x50));
	roots(sps, regs, 2, 2);
	scan();
	cr_assert_eq(reach(a), REACH_UNREFERENCED);
	cr_assert_eq(reach(b), REACH_ANCHORED);
	cr_assert_eq(reach(c), REACH_ANCHORED);
	cr_assert_eq(s.root_refs[ROOT_REGISTERS], 1);
	cr_assert_eq(s.root_blocks[ROOT_REGISTERS], 1);
}

Test(reach, stack_from_its_red_zone_only)
{
	size_t a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	size_t b = blk(HEAP + 0x30, 0x20, HEAP_IN_USE);
	size_t c = blk(HEAP + 0x50, 0x20, HEAP_IN_USE);

	put(SP - 128, user(HEAP + 0x10));
	put(SP - 136, user(HEAP + 0x30));
	put(STACK + STACK_LEN - 8, user(HEAP + 0x50));
	put(STACK + STACK_LEN - 16, user(HEAP + 0x50));
	scan();
	cr_assert_eq(reach(a), REACH_ANCHORED);
	cr_assert_eq(reach(b), REACH_UNREFERENCED);
	cr_assert_eq(reach(c), REACH_ANCHORED);
	cr_assert_eq(s.root_refs[ROOT_STACK], 3);
	cr_assert_eq(s.root_blocks[ROOT_STACK], 2);
}

Test(reach, unreadable_block_is_anchored_and_counted)
{
	size_t a, b, c, d;

	map(0x7f4000000000ull, 0x1000, "rw-p", "", false);
	map(0x7f4000001000ull, 0x1000, "rw-p", "", true);
	extent(0x7f4000000000ull, 0x1000, HEAP_MMAPPED_ARENA);
	extent(0x7f4000001000ull, 0x1000, HEAP_MMAPPED_ARENA);
	a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	b = blk(HEAP + 0x30, 0x20, HEAP_IN_USE);
	c = blk_in(0x7f4000000000ull, 0x1000, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	d = blk_in(0x7f4000001000ull, 0x1000, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	put(user(0x7f4000001000ull), user(HEAP + 0x10));
	scan();
	cr_assert_eq(reach(c), REACH_ANCHORED);
	cr_assert_eq(s.unread_blocks, 1);
	/* Read on past it: D's bytes were read, and they count. */
	cr_assert_eq(reach(d), REACH_UNREFERENCED);
	cr_assert_eq(reach(a), REACH_LEAKED);
	cr_assert_eq(reach(b), REACH_UNREFERENCED);
	for (size_t i = 0; i < npieces; i++)
		cr_assert(pieces[i].root || pieces[i].i != c);
}

Test(reach, block_partly_unreadable_keeps_what_was_read)
{
	uint64_t m = 0x7f4000000000ull;
	size_t a, big;

	map(m, 0x1000, "rw-p", "", true);
	map(m + 0x1000, 0x1000, "rw-p", "", false);
	map(m + 0x2000, 0x2000, "rw-p", "", true);
	extent(m, 0x4000, HEAP_MMAPPED_ARENA);
	a = blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	big = blk_in(m, 0x4000, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	put(m + 0x2800, user(HEAP + 0x10));
	scan();
	cr_assert_eq(s.unread_blocks, 1);
	cr_assert_eq(reach(big), REACH_ANCHORED);
	cr_assert_eq(reach(a), REACH_ANCHORED, "from the part after the hole");
	cr_assert(edge(big, a));
}

/* A run of blocks, then a hole (three mappings, or one with a hole in
 * it), then more of them: read up to it, and on from its end. */
static void blocks_around_a_hole(bool one_mapping)
{
	uint64_t m = 0x7f4000000000ull, c;
	size_t first, last, before_hole;

	if (one_mapping) {
		map(m, 0x8000, "rw-p", "", true);
		hole(m + 0x1000, 0x4000);
	} else {
		map(m, 0x1000, "rw-p", "", true);
		map(m + 0x1000, 0x4000, "rw-p", "", false);
		map(m + 0x5000, 0x3000, "rw-p", "", true);
	}
	extent(m, 0x8000, 2);
	first = h.nblocks;
	for (c = m; c < m + 0x8000 - 0x100; c += 0x100)
		blk_in(c, 0x100, HEAP_IN_USE, 2);
	last = h.nblocks - 1;
	blk_in(c, 0x100, HEAP_TOP, 2);
	before_hole = first + 0x1000 / 0x100 - 1; /* its last word unread */
	put(user(h.blocks[last].chunk), user(h.blocks[first].chunk));
	scan();
	for (size_t i = first; i <= last; i++) {
		uint64_t ch = h.blocks[i].chunk;

		if (i >= before_hole && ch < m + 0x5000)
			cr_assert_eq(reach(i), REACH_ANCHORED, "0x%llx",
				     (unsigned long long)ch);
		else if (i == first)
			cr_assert_eq(reach(i), REACH_LEAKED);
		else
			cr_assert_eq(reach(i), REACH_UNREFERENCED, "0x%llx",
				     (unsigned long long)ch);
	}
	cr_assert_eq(s.unread_blocks, 0x4000 / 0x100 + 1);
	cr_assert(edge(last, first));
	cr_assert_lt(f.img.nreads, 30);
}

Test(reach, unreadable_mapping_amid_blocks)
{
	blocks_around_a_hole(false);
}

Test(reach, unreadable_stretch_inside_a_mapping)
{
	blocks_around_a_hole(true);
}

Test(reach, unreadable_roots_counted_and_bounded)
{
	/* A mapping a core declares, a terabyte, with no bytes. */
	map(0x100000000000ull, 1ull << 40, "rw-p", "", false);
	blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	scan();
	cr_assert_eq(s.unread_root_bytes, 1ull << 40);
	cr_assert_lt(f.img.nreads, 500);
}

Test(reach, visitor_sees_every_block_once_in_order)
{
	uint64_t big = 0x7f5000000000ull, len = 40ull << 20;
	size_t nb, want = 0, p = 0, nblockpieces = 0;
	uint64_t sp = SP;

	for (uint64_t c = HEAP + 0x10; c < HEAP + 0x10000; c += 0x50)
		blk(c, 0x50, (c / 0x50) % 3 ? HEAP_IN_USE : HEAP_FASTBIN);
	map(big, len, "rw-p", "", true);
	extent(big, len, HEAP_MMAPPED_ARENA);
	nb = blk_in(big, len, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	put(user(big), 0x1111);
	put(user(big) + (16ull << 20), 0x2222);
	put(ANON, 0x3333);
	roots(&sp, NULL, 0, 1);
	scan();
	for (size_t q = 0; q < npieces; q++)
		nblockpieces += !pieces[q].root;
	for (size_t i = 0; i < h.nblocks; i++) {
		uint64_t off = 0;

		if (h.blocks[i].state != HEAP_IN_USE)
			continue;
		while (p < npieces && pieces[p].root)
			p++;
		cr_assert_lt(p, npieces);
		for (; p < npieces && !pieces[p].root && pieces[p].i == i;
		     p++) {
			cr_assert_eq(pieces[p].addr, off, "block %zu", i);
			off += pieces[p].nwords * 8;
			want += i == nb;
			nblockpieces--;
		}
		cr_assert_eq(off, heap_block_usable(&h.blocks[i]),
			     "block %zu", i);
	}
	cr_assert_eq(nblockpieces, 0, "pieces of no block in use, or late");
	cr_assert_geq(want, 3, "40 MiB in windows of at most 16");
	for (p = 0; p < npieces; p++) {
		if (pieces[p].root && pieces[p].addr == ANON)
			cr_assert_eq(pieces[p].word0, 0x3333);
		if (!pieces[p].root && pieces[p].i == nb && !pieces[p].addr)
			cr_assert_eq(pieces[p].word0, 0x1111);
		if (!pieces[p].root && pieces[p].i == nb &&
		    pieces[p].addr == 16ull << 20)
			cr_assert_eq(pieces[p].word0, 0x2222);
	}
}

Test(reach, large_reads_but_no_free_pages)
{
	uint64_t c = HEAP + 0x10, gap = 0x8000;
	size_t nheap = 0;

	for (; c < HEAP + 0x4000; c += 0x40)
		blk(c, 0x40, HEAP_IN_USE);
	blk(c, gap, HEAP_BIN);
	for (c += gap; c < HEAP + 0x10000; c += 0x40)
		blk(c, 0x40, HEAP_IN_USE);
	blk(c, HEAP_LEN - (c - HEAP), HEAP_TOP);
	scan();
	for (size_t i = 0; i < f.nreads; i++) {
		uint64_t a = f.reads[i].addr, e = a + f.reads[i].len;

		if (a >= HEAP && a < HEAP + HEAP_LEN) {
			cr_assert(e <= HEAP + 0x4000 + 0x1000 ||
				  a >= HEAP + 0x4000 + gap - 0x1000,
				  "read [0x%llx, 0x%llx) in the free chunk",
				  (unsigned long long)a,
				  (unsigned long long)e);
			cr_assert_leq(e, HEAP + 0x10000 + 0x1000, "top");
		}
	}
	/* Two reads of the heap, one for each run. */
	for (size_t i = 0; i < f.nreads; i++)
		nheap += f.reads[i].addr >= HEAP &&
			 f.reads[i].addr < HEAP + HEAP_LEN;
	cr_assert_eq(nheap, 2);
	cr_assert_eq(s.count[REACH_UNREFERENCED], h.nblocks - 2);
}

Test(reach, hostile_blocks_never_crash)
{
	uint64_t sp = SP, regs[2] = { user(HEAP + 0x100), UINT64_MAX - 3 };
	uint64_t total = 0;

	/* Out of order, overlapping, too small, huge, at the top of the
	 * address space, in memory that is not there. */
	blk(HEAP + 0x100, 0x40, HEAP_IN_USE);
	blk(HEAP + 0x110, 0x40, HEAP_IN_USE);
	blk(HEAP + 0x10, 0x20, HEAP_IN_USE);
	blk(HEAP + 0x200, 0, HEAP_IN_USE);
	blk(HEAP + 0x210, 8, HEAP_IN_USE);
	blk(HEAP + 0x220, 16, HEAP_IN_USE);
	blk(HEAP + 0x300, (1ull << 48) - 16, HEAP_IN_USE);
	blk(HEAP + 0x400, 0x20, HEAP_IN_USE);
	blk_in(UINT64_MAX - 40, 0x30, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	blk_in(UINT64_MAX - 7, 0x30, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	blk_in(0x200000000000ull, 1ull << 47, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
	blk(8, 0x20, HEAP_IN_USE);
	extent(0, UINT64_MAX, 0);
	extent(HEAP + 0x300, 1ull << 48, 1);
	put(user(HEAP + 0x100), user(HEAP + 0x300) + 0x1000);
	put(user(HEAP + 0x110), user(HEAP + 0x10));
	roots(&sp, regs, 2, 1);
	scan();
	for (int k = REACH_NONE; k <= REACH_LEAKED; k++)
		total += s.count[k];
	cr_assert_eq(total, h.nblocks);
	cr_assert_geq(s.unread_blocks, 4);
	cr_assert_lt(f.img.nreads, 2000);
	for (size_t i = 0; i < h.nblocks; i++)
		for (uint64_t e = s.first[i]; e < s.first[i + 1]; e++)
			cr_assert_lt(s.to[e], h.nblocks);
}

/* --- Against a plain search --------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random word for block memory: mostly a pointer somewhere in a block
 * (in use or not, interior or not), or near one, or noise. */
static uint64_t random_word(void)
{
	const struct heap_block *b = &h.blocks[rnd() % h.nblocks];

	switch (rnd() % 8) {
	case 0:
		return rnd();
	case 1:
		return 0;
	case 2:
		return b->chunk + rnd() % 24;
	default:
		return b->chunk + 16 + rnd() % (b->size + 16);
	}
}

/* The scan's answer by the definitions, with heap_find_block. */
static int cmp_size(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return a < b ? -1 : a > b;
}

static void check_against_plain_search(void)
{
	uint8_t *st = xcalloc(h.nblocks, 1), *inref = xcalloc(h.nblocks, 1);
	size_t *queue = xcalloc(h.nblocks, sizeof(*queue)), nq = 0;
	size_t *targets = NULL, ntargets, talloc = 0;
	uint64_t nedges = 0;

#define ANCHOR(t)                                          \
	do {                                               \
		if (st[t] != REACH_ANCHORED) {             \
			st[t] = REACH_ANCHORED;            \
			queue[nq++] = (size_t)(t);         \
		}                                          \
	} while (0)
	for (size_t i = 0; i < h.nblocks; i++) {
		const struct heap_block *b = &h.blocks[i];
		uint64_t u = b->chunk + 16;
		size_t n = 0;

		if (b->state != HEAP_IN_USE)
			continue;
		st[i] = REACH_LEAKED;
		ntargets = 0;
		for (uint64_t a = u; a < u + heap_block_usable(b); a += 8) {
			uint64_t w;
			ptrdiff_t t;

			memcpy(&w, at(a), 8);
			t = heap_find_block(&h, w);
			if (t < 0 || (size_t)t == i)
				continue;
			cr_assert(edge(i, (size_t)t),
				  "edge %zu -> %td: 0x%llx at 0x%llx", i, t,
				  (unsigned long long)w,
				  (unsigned long long)a);
			GROW(targets, ntargets + 1, talloc);
			targets[ntargets++] = (size_t)t;
		}
		if (ntargets)
			qsort(targets, ntargets, sizeof(*targets), cmp_size);
		for (size_t k = 0; k < ntargets; k++)
			n += !k || targets[k] != targets[k - 1];
		cr_assert_eq(nedges_of(i), n, "block %zu", i);
		for (uint64_t e = s.first[i] + 1; e < s.first[i + 1]; e++)
			cr_assert_lt(s.to[e - 1], s.to[e], "in order");
		nedges += n;
	}
	cr_assert_eq(nedges, s.nedges);
	for (size_t k = 0; k < r.nranges; k++) {
		const struct heap_root_range *rr = &r.ranges[k];

		for (uint64_t a = rr->start; a < rr->end; a += 8) {
			const struct seg *sg = seg_at(a);
			uint64_t w;
			ptrdiff_t t;

			if (!sg || !sg->data)
				continue;
			memcpy(&w, at(a), 8);
			if ((t = heap_find_block(&h, w)) >= 0)
				ANCHOR(t);
		}
	}
	for (size_t k = 0; k < r.nvalues; k++) {
		ptrdiff_t t = heap_find_block(&h, r.values[k]);

		if (t >= 0)
			ANCHOR(t);
	}
	for (size_t q = 0; q < nq; q++)
		for (uint64_t e = s.first[queue[q]]; e < s.first[queue[q] + 1];
		     e++)
			ANCHOR(s.to[e]);
	for (size_t i = 0; i < h.nblocks; i++)
		if (st[i] == REACH_LEAKED)
			for (uint64_t e = s.first[i]; e < s.first[i + 1]; e++)
				inref[s.to[e]] = 1;
	for (size_t i = 0; i < h.nblocks; i++) {
		if (st[i] == REACH_LEAKED && !inref[i])
			st[i] = REACH_UNREFERENCED;
		cr_assert_eq(s.state[i], st[i], "block %zu at 0x%llx", i,
			     (unsigned long long)h.blocks[i].chunk);
	}
#undef ANCHOR
	free(targets);
	free(st);
	free(inref);
	free(queue);
}

/*
 * Random heaps: small chunks densely (groups), big ones far apart and a
 * crowd of small ones after a big one (granules, and a granule holding
 * many blocks), mmapped chunks, random pointers everywhere.
 */
Test(reach, random_heaps_as_a_plain_search_finds)
{
	uint64_t sp = SP, regs[8];
	uint64_t m = 0x7f6000000000ull, mlen = 0x400000;

	map(m, mlen, "rw-p", "", true);
	extent(m, mlen, 2);
	for (int round = 0; round < 3; round++) {
		uint64_t c = HEAP + 0x10;

		h.nblocks = 0;
		reach_roots_release(&r);
		reach_scan_release(&s);
		while (c < HEAP + HEAP_LEN - 0x400) {
			uint64_t size = 0x20 + 0x10 * (rnd() % 12);

			blk(c, size, rnd() % 4 ? HEAP_IN_USE : HEAP_BIN);
			c += size;
		}
		blk(c, HEAP + HEAP_LEN - c, HEAP_TOP);
		for (c = THREAD + 0x10; c < THREAD + 0x8000; c += 0x2000)
			blk_in(c, 0x2000, HEAP_IN_USE, 1);
		blk_in(c, THREAD + THREAD_LEN - c, HEAP_TOP, 1);
		blk_in(MMAP, MMAP_LEN, HEAP_IN_USE, HEAP_MMAPPED_ARENA);
		c = m;
		blk_in(c, 0x100000, HEAP_IN_USE, 2);
		for (c += 0x100000; c < m + 0x100000 + 0x1000; c += 0x20)
			blk_in(c, 0x20, HEAP_IN_USE, 2);
		blk_in(c, 0x10000, HEAP_BIN, 2);
		c += 0x10000;
		blk_in(c, 0x10000, HEAP_IN_USE, 2);
		c += 0x10000;
		blk_in(c, m + mlen - c, HEAP_TOP, 2);
		for (size_t i = 0; i < h.nblocks; i++) {
			const struct heap_block *b = &h.blocks[i];

			for (uint64_t a = b->chunk + 16;
			     a + 8 <= b->chunk + b->size; a += 8)
				if (rnd() % 4 == 0 || b->size <= 0x200)
					put(a, random_word());
		}
		/* (The last round without roots: all of it leaked.) */
		memset(at(PROG), 0, 0x1000);
		memset(at(PROG + 0x1000), 0, 0x1000);
		for (uint64_t a = PROG; a < PROG + 0x2000 && round < 2; a += 8)
			if (rnd() % 64 == 0)
				put(a, random_word());
		for (int i = 0; i < 8; i++)
			regs[i] = round < 2 ? random_word() : 0;
		roots(&sp, regs, 8, 1);
		scan();
		check_against_plain_search();
	}
}
