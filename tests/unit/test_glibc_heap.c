/*
 * The glibc heap walker on a made-up process image: libc's data holding
 * main_arena and mp_, a [heap] of known chunks (a tcache with a mangled
 * list, a fastbin, the unsorted bin, a small bin, top), a thread arena's
 * heap, mmapped chunks; then the same broken in the ways hostile memory
 * breaks it (a bad size, a cycle, a pointer out of the arena).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "glibc_heap.h"
#include "helpers.h"
#include "util.h"

#define LIBC 0x7f0000000000ull
#define MAIN (LIBC + 0x1000)
#define MP (LIBC + 0x100)
#define KEY_AT (LIBC + 0x3000)
#define KEY 0x1234567890abcdefull
#define HEAP 0x555500000000ull
#define HEAP_LEN 0x20000ull
#define THREAD 0x7e0000000000ull /* 64 MiB aligned */
#define THREAD_LEN 0x10000ull
#define THREAD_ARENA (THREAD + 48)
#define THREAD_FIRST (THREAD + 0x8d0)
#define MMAPPED 0x7f1000000000ull
#define MERGED 0x7f2000000000ull

/* The chunks of the main heap. */
#define C_TCACHE HEAP                /* tcache_perthread_struct, 0x290 */
#define C_A (HEAP + 0x290)           /* in use, 0x20 */
#define C_B (HEAP + 0x2b0)           /* in tcache bin 1, 0x30 */
#define C_G (HEAP + 0x2e0)           /* in use, 0x20 */
#define C_C (HEAP + 0x300)           /* unsorted, 0x90 */
#define C_D (HEAP + 0x390)           /* in use, 0x30 */
#define C_E (HEAP + 0x3c0)           /* fastbin 0, 0x20 */
#define C_F (HEAP + 0x3e0)           /* small bin 16, 0x100 */
#define C_H (HEAP + 0x4e0)           /* in use, 0x20 */
#define C_TOP (HEAP + 0x500)

static struct fake_image f;
static struct heap h;

static void add_seg(uint64_t addr, size_t len, const char *name)
{
	fake_image_add(&f, addr, len, "rw-p", name);
}

static uint8_t *at(uint64_t addr)
{
	return fake_image_at(&f, addr);
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(at(addr), &v, 8);
}

static void chunk(uint64_t c, uint64_t prev_size, uint64_t size)
{
	put(c, prev_size);
	put(c + 8, size);
}

/* Safe-linking: what glibc stores at POS for a link to PTR. */
static uint64_t mangle(uint64_t pos, uint64_t ptr)
{
	return (pos >> 12) ^ ptr;
}

/* An empty arena at A: every bin pointing at itself. */
static void arena(uint64_t a, uint64_t top, uint64_t next,
		  uint64_t system_mem)
{
	for (unsigned i = 1; i < 128; i++) {
		put(a + 112 + 16 * (i - 1), a + 96 + 16 * (i - 1));
		put(a + 112 + 16 * (i - 1) + 8, a + 96 + 16 * (i - 1));
	}
	put(a + 96, top);
	put(a + 2160, next);
	put(a + 2176, 1);
	put(a + 2184, system_mem);
	put(a + 2192, system_mem);
}

/* Chunk C, free, at the head of bin I of arena A (alone in it). */
static void in_bin(uint64_t a, unsigned i, uint64_t c)
{
	uint64_t head = a + 96 + 16 * (i - 1);

	put(a + 112 + 16 * (i - 1), c);
	put(a + 112 + 16 * (i - 1) + 8, c);
	put(c + 16, head);
	put(c + 24, head);
}

static void params(uint64_t n_mmaps, uint64_t mmapped_mem)
{
	uint32_t n = (uint32_t)n_mmaps, nmax = 65536;

	put(MP + 16, 128 * 1024);        /* mmap_threshold */
	memcpy(at(MP + 60), &n, 4);      /* n_mmaps */
	memcpy(at(MP + 64), &nmax, 4);   /* n_mmaps_max */
	memcpy(at(MP + 68), &n, 4);      /* max_n_mmaps */
	put(MP + 80, mmapped_mem);
	put(MP + 88, mmapped_mem);
	put(MP + 96, HEAP);              /* sbrk_base */
	put(MP + 104, 64);               /* tcache_bins */
	put(MP + 112, 1032);
	put(MP + 120, 7);                /* tcache_count */
}

/* The main heap described at the top of this file. */
static void build(void)
{
	uint64_t b = C_B + 16, tc = C_TCACHE + 16;
	uint16_t one = 1;

	fake_image_init(&f, "fake");
	add_seg(LIBC, 0x4000, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	add_seg(HEAP, HEAP_LEN, "[heap]");
	put(KEY_AT, KEY);
	params(0, 0);
	arena(MAIN, C_TOP, MAIN, HEAP_LEN);
	chunk(C_TCACHE, 0, 0x291);
	chunk(C_A, 0, 0x21);
	chunk(C_B, 0, 0x31);
	chunk(C_G, 0, 0x21);
	chunk(C_C, 0, 0x91);
	chunk(C_D, 0x90, 0x30);
	chunk(C_E, 0, 0x21);
	chunk(C_F, 0, 0x101);
	chunk(C_H, 0x100, 0x20);
	chunk(C_TOP, 0, (HEAP_LEN - 0x500) | 1);
	/* The tcache: bin 1 holds B, whose next is a mangled NULL. */
	memcpy(at(tc + 2), &one, 2);
	put(tc + 128 + 8, b);
	put(b, mangle(b, 0));
	put(b + 8, KEY);
	/* Fastbin 0 holds E. */
	put(MAIN + 16, C_E);
	put(C_E + 16, mangle(C_E + 16, 0));
	in_bin(MAIN, 1, C_C);
	in_bin(MAIN, 16, C_F);
}

static void teardown(void)
{
	heap_release(&h);
	fake_image_release(&f);
}

TestSuite(glibc_heap, .init = build, .fini = teardown);

static const struct heap_block *block(uint64_t c)
{
	for (size_t i = 0; i < h.nblocks; i++)
		if (h.blocks[i].chunk == c)
			return &h.blocks[i];
	return NULL;
}

static void assert_block(uint64_t c, uint64_t size, enum heap_state state)
{
	const struct heap_block *b = block(c);

	cr_assert(b, "no block at 0x%llx", (unsigned long long)c);
	cr_assert_eq(b->size, size, "0x%llx: size 0x%llx",
		     (unsigned long long)c, (unsigned long long)b->size);
	cr_assert_eq(b->state, state, "0x%llx: %s, want %s",
		     (unsigned long long)c, heap_state_name(b->state),
		     heap_state_name(state));
}

static bool has_problem(uint64_t addr, const char *text)
{
	for (size_t i = 0; i < h.nproblems; i++)
		if (h.problems[i].f.where.addr == addr &&
		    strstr(h.problems[i].f.what, text))
			return true;
	return false;
}

static void walk(void)
{
	cr_assert_eq(glibc_heap_walk(&h, &f.img), 0, "%s", stderr_text());
}

Test(glibc_heap, every_chunk_in_its_state)
{
	struct heap_summary sum;
	struct heap_mallinfo m;

	walk();
	cr_assert_eq(h.narenas, 1);
	cr_assert_eq(h.arenas[0].addr, MAIN);
	cr_assert(h.mp.found);
	cr_assert_eq(h.mp.addr, MP);
	cr_assert_eq(h.nproblems, 0, "%s", h.problems[0].f.what);
	cr_assert_eq(h.nblocks, 10);
	assert_block(C_TCACHE, 0x290, HEAP_IN_USE);
	assert_block(C_A, 0x20, HEAP_IN_USE);
	assert_block(C_B, 0x30, HEAP_TCACHE);
	assert_block(C_C, 0x90, HEAP_UNSORTED);
	assert_block(C_D, 0x30, HEAP_IN_USE);
	assert_block(C_E, 0x20, HEAP_FASTBIN);
	assert_block(C_F, 0x100, HEAP_BIN);
	assert_block(C_TOP, HEAP_LEN - 0x500, HEAP_TOP);
	cr_assert_eq(h.ntcaches, 1);
	cr_assert_eq(h.tcaches[0], C_TCACHE + 16);
	cr_assert_eq(h.tcache_key, KEY);
	cr_assert_eq(heap_block_usable(block(C_A)), 0x18);
	heap_summarize(&h, &sum);
	heap_summary_mallinfo(&sum, &m);
	cr_assert_eq(m.arena, HEAP_LEN);
	cr_assert_eq(m.ordblks, 3); /* unsorted, small bin, top */
	cr_assert_eq(m.smblks, 1);
	cr_assert_eq(m.fsmblks, 0x20);
	cr_assert_eq(m.fordblks, 0x20 + 0x90 + 0x100 + HEAP_LEN - 0x500);
	cr_assert_eq(m.uordblks, 0x290 + 0x20 * 3 + 0x30 * 2);
	cr_assert_eq(m.keepcost, HEAP_LEN - 0x500);
}

Test(glibc_heap, thread_arena_and_its_heap)
{
	add_seg(THREAD, THREAD_LEN, "");
	put(THREAD, THREAD_ARENA);       /* heap_info: ar_ptr */
	put(THREAD + 16, THREAD_LEN);    /* size */
	put(THREAD + 24, THREAD_LEN);    /* mprotect_size */
	arena(THREAD_ARENA, THREAD_FIRST + 0x20, MAIN, THREAD_LEN);
	put(MAIN + 2160, THREAD_ARENA);
	chunk(THREAD_FIRST, 0, 0x25);
	chunk(THREAD_FIRST + 0x20, 0, (THREAD_LEN - 0x8f0) | 1);
	walk();
	cr_assert_eq(h.narenas, 2);
	cr_assert_eq(h.arenas[1].addr, THREAD_ARENA);
	cr_assert_eq(h.arenas[1].nheaps, 1);
	cr_assert_eq(h.arenas[1].t.overhead, 0x8d0);
	assert_block(THREAD_FIRST, 0x20, HEAP_IN_USE);
	assert_block(THREAD_FIRST + 0x20, THREAD_LEN - 0x8f0, HEAP_TOP);
	cr_assert_eq(block(THREAD_FIRST)->arena, 1);
	cr_assert_eq(h.nproblems, 0, "%s", h.problems[0].f.what);
}

Test(glibc_heap, mmapped_chunks_also_after_other_memory)
{
	/* One at its mapping's start; one after 8 KiB of something else,
	 * found by the page search because glibc counts two. */
	add_seg(MMAPPED, 0x3000, "");
	chunk(MMAPPED, 0, 0x3002);
	add_seg(MERGED, 0x5000, "");
	put(MERGED, 0x4242);
	chunk(MERGED + 0x2000, 0, 0x3002);
	params(2, 0x6000);
	walk();
	cr_assert_eq(h.mmapped_count, 2);
	cr_assert_eq(h.mmapped_bytes, 0x6000);
	cr_assert_eq(block(MMAPPED)->arena, HEAP_MMAPPED_ARENA);
	cr_assert_eq(heap_block_usable(block(MERGED + 0x2000)), 0x3000 - 16);
	cr_assert_eq(h.nproblems, 0, "%s", h.problems[0].f.what);
}

Test(glibc_heap, mmapped_count_short_of_glibcs_is_said)
{
	params(3, 0x9000);
	walk();
	cr_assert_eq(h.mmapped_count, 0);
	cr_assert(has_problem(MP, "glibc counts 3"));
}

Test(glibc_heap, size_zero_stops_the_heap)
{
	chunk(C_D, 0x90, 0);
	walk();
	cr_assert(has_problem(C_D, "size field 0x0 too small"));
	cr_assert(h.arenas[0].corrupt);
	cr_assert_eq(h.arenas[0].t.unknown, HEAP + HEAP_LEN - C_D);
	cr_assert_null(block(C_E));
	/* What the walk reached stands; the lists into the rest stop. */
	assert_block(C_C, 0x90, HEAP_UNSORTED);
}

Test(glibc_heap, size_not_a_multiple_of_16)
{
	chunk(C_G, 0, 0x29);
	walk();
	cr_assert(has_problem(C_G, "not a multiple of 16"));
	cr_assert_eq(h.arenas[0].t.unknown, HEAP + HEAP_LEN - C_G);
}

Test(glibc_heap, size_past_the_top)
{
	chunk(C_H, 0x100, 0x100000);
	walk();
	cr_assert(has_problem(C_H, "runs past the top chunk"));
}

Test(glibc_heap, tcache_cycle_stops_the_list)
{
	uint64_t b = C_B + 16, tc = C_TCACHE + 16;
	uint16_t three = 3;

	memcpy(at(tc + 2), &three, 2);
	put(b, mangle(b, b)); /* B's next is B */
	walk();
	assert_block(C_B, 0x30, HEAP_TCACHE);
	cr_assert(has_problem(C_B, "twice"), "%s",
		  h.nproblems ? h.problems[0].f.what : "no problem");
}

Test(glibc_heap, fastbin_pointer_out_of_the_arena)
{
	put(C_E + 16, mangle(C_E + 16, 0x4141414141414140ull));
	walk();
	assert_block(C_E, 0x20, HEAP_FASTBIN);
	cr_assert(has_problem(0x4141414141414140ull,
			      "is not a chunk of the arena"));
}

Test(glibc_heap, bin_with_a_broken_back_link)
{
	put(C_F + 16, C_A); /* F's fd should lead back to the bin's head */
	walk();
	cr_assert(has_problem(C_F, "does not point back"));
	assert_block(C_F, 0x100, HEAP_UNLISTED);
}

Test(glibc_heap, arena_locked_is_said)
{
	put(MAIN, 1); /* mutex */
	walk();
	cr_assert(h.arenas[0].locked);
	cr_assert(has_problem(MAIN, "locked"));
}

Test(glibc_heap, no_libc_is_a_static_binary)
{
	struct procimage img;

	procimage_init(&img, "process 1", fake_image_read);
	cr_assert_eq(glibc_heap_walk(&h, &img), -1);
	cr_assert(strstr(h.why.what, "process 1 has no libc.so mapped"), "%s",
		  h.why.what);
	procimage_close(&img);
}

Test(glibc_heap, zeros_are_no_arena)
{
	memset(at(MAIN), 0, 2200);
	cr_assert_eq(glibc_heap_walk(&h, &f.img), -1);
	cr_assert(strstr(h.why.what, "no glibc malloc arena found"), "%s", h.why.what);
}

Test(glibc_heap, arena_never_used_is_another_allocator)
{
	put(MAIN + 96, MAIN + 96); /* top: glibc's initial, the bin itself */
	cr_assert_eq(glibc_heap_walk(&h, &f.img), -1);
	cr_assert(strstr(h.why.what, "another allocator"), "%s", h.why.what);
}

/* Hostile memory: words of the heap and the arena overwritten at random
 * end a walk with problems, never a crash or a hang. */
Test(glibc_heap, random_damage, .timeout = 60)
{
	unsigned seed = 12345;

	for (int round = 0; round < 300; round++) {
		teardown();
		build();
		for (int k = 0; k < 1 + round % 5; k++) {
			uint64_t addr = round % 2 ? HEAP + 8 * (rand_r(&seed) % 0xa0)
						  : MAIN + 8 * (rand_r(&seed) % 275);
			uint64_t v = (uint64_t)rand_r(&seed) << (rand_r(&seed) % 40);

			put(addr, rand_r(&seed) % 3 ? v : HEAP + (v & 0xfff0));
		}
		capture_stderr();
		if (glibc_heap_walk(&h, &f.img) == 0)
			for (size_t i = 1; i < h.nblocks; i++)
				cr_assert_gt(h.blocks[i].chunk,
					     h.blocks[i - 1].chunk);
		heap_release(&h);
	}
}
