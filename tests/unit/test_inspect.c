/*
 * Single blocks on a made-up process image (inspect.h), its hook called
 * as a capture calls it: where each address lies (a block in use, a
 * chunk's header, a free chunk, an arena's headers, a thread's stack, a
 * binary's mapping, nothing), the words that point into a block (from a
 * block, a root, a register; two addresses in one block both given
 * them), what a block points at, its bytes; the blocks of a type.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "inspect.h"
#include "util.h"

#define BIN 0x400000ull
#define HEAP 0x555500000000ull
#define STACK 0x7ffff0000000ull

static struct fake_image f;
static struct capture s;
static struct inspect in;
static uint64_t a, b, c, fr;

static void put(uint64_t addr, uint64_t v)
{
	memcpy(fake_image_at(&f, addr), &v, 8);
}

static uint64_t blk(uint64_t at, uint64_t size, enum heap_state state)
{
	struct heap_block *hb;

	GROW(s.h.blocks, s.h.nblocks + 1, s.h.alloc);
	hb = &s.h.blocks[s.h.nblocks++];
	memset(hb, 0, sizeof(*hb));
	hb->chunk = at;
	hb->size = size;
	hb->state = state;
	return at + 16;
}

static void build(void)
{
	uint64_t regs[IMAGE_NREGS] = { 0 };

	memset(&s, 0, sizeof(s));
	fake_image_init(&f, "fake");
	fake_image_add(&f, BIN, 0x1000, "r--p", "/usr/bin/prog");
	fake_image_add(&f, HEAP, 0x1000, "rw-p", "[heap]");
	fake_image_add(&f, STACK, 0x1000, "rw-p", "[stack]");
	s.img = &f.img;
	s.walked = s.scanned = true;
	/* The arena's headers, then A, B (free), C pointing into A. */
	s.h.extents = xcalloc(1, sizeof(*s.h.extents));
	s.h.extents[0] = (struct heap_extent){ HEAP, HEAP + 0x1000, 0 };
	s.h.nextents = 1;
	a = blk(HEAP + 0x100, 0x40, HEAP_IN_USE);
	fr = blk(HEAP + 0x140, 0x30, HEAP_TCACHE);
	c = blk(HEAP + 0x170, 0x30, HEAP_IN_USE);
	b = blk(HEAP + 0x1a0, 0x30, HEAP_IN_USE);
	put(c, a + 8);
	put(c + 8, 0x1234);
	put(c + 16, b);
	/* A register of thread 42 holds A; its stack pointer. */
	regs[14] = a; /* rdi */
	procimage_add_thread(&f.img, 42, STACK + 0x800, regs, IMAGE_NREGS);
	s.roots.values = xmemdup(regs, sizeof(regs));
	s.roots.nvalues = IMAGE_NREGS;
	s.scan.state = xcalloc(s.h.nblocks, 1);
	s.scan.state[0] = s.scan.state[2] = REACH_ANCHORED;
	s.scan.state[3] = REACH_LEAKED;
}

static void teardown(void)
{
	inspect_release(&in);
	free(s.h.blocks);
	free(s.h.extents);
	free(s.roots.values);
	free(s.scan.state);
	fake_image_release(&f);
}

/* The hook as a capture calls it: walked, the scan's pieces, at hand. */
static void run(void)
{
	const struct capture_hook *h = &in.hook;
	struct heap_root_range root = { STACK, STACK + 0x1000, ROOT_STACK };
	uint64_t w[16];

	h->walked(&s, h->ctx);
	for (size_t i = 0; i < s.h.nblocks; i++) {
		const struct heap_block *hb = &s.h.blocks[i];
		size_t n = heap_block_usable(hb) / 8;

		if (hb->state != HEAP_IN_USE)
			continue;
		memcpy(w, fake_image_at(&f, hb->chunk + 16), 8 * n);
		h->visitor.block(h->visitor.ctx, i, 0, w, n);
	}
	/* A stack word pointing at A's end, another at nothing. */
	w[0] = a + 0x37;
	w[1] = a + 0x38;
	h->visitor.root(h->visitor.ctx, &root, STACK + 0x900, w, 2);
	h->at_hand(&s, h->ctx);
}

TestSuite(inspect, .init = build, .fini = teardown);

Test(inspect, places)
{
	uint64_t addrs[] = { a + 8, a - 8, fr + 16, HEAP + 0x20, STACK + 0x900,
			     STACK + 0x100, BIN + 0x10, 0x10 };
	static const enum inspect_place want[] = {
		PLACE_BLOCK, PLACE_HEADER, PLACE_FREE, PLACE_HEAP, PLACE_STACK,
		PLACE_STACK, PLACE_MAPPING, PLACE_NONE,
	};

	inspect_init(&in, addrs, ARRAY_SIZE(addrs), NULL);
	run();
	for (size_t k = 0; k < ARRAY_SIZE(addrs); k++)
		cr_assert_eq(in.targets[k].place, want[k], "0x%llx",
			     (unsigned long long)addrs[k]);
	cr_assert_eq(in.targets[0].block, 0);
	cr_assert_eq(in.targets[1].block, 0);
	cr_assert_eq(in.targets[2].block, 1);
	cr_assert_eq(in.targets[4].thread, 0);
	cr_assert_eq(in.targets[6].vma, 0);
	cr_assert_eq(in.targets[7].vma, -1);
}

Test(inspect, references)
{
	uint64_t addrs[] = { a + 8, a, c };
	const struct inspect_target *t;

	inspect_init(&in, addrs, ARRAY_SIZE(addrs), NULL);
	run();
	/* Both addresses in A: C's word, the stack's, the register. */
	for (int k = 0; k < 2; k++) {
		t = &in.targets[k];
		cr_assert_eq(t->in_count, 3, "target %d", k);
		cr_assert_eq(t->in[0].block, 2);
		cr_assert_eq(t->in[0].at, c);
		cr_assert_eq(t->in[0].value, a + 8);
		cr_assert_eq(t->in[1].block, -1);
		cr_assert_eq(t->in[1].root, ROOT_STACK);
		cr_assert_eq(t->in[1].at, STACK + 0x900);
		cr_assert_eq(t->in[2].root, ROOT_REGISTERS);
		cr_assert_eq(t->in[2].thread, 0);
		cr_assert_str_eq(inspect_reg_name(t->in[2].reg), "rdi");
		cr_assert_eq(t->nbytes, 0x38);
	}
	/* C points into A and at B; its bytes read. */
	t = &in.targets[2];
	cr_assert_eq(t->in_count, 0);
	cr_assert_eq(t->out_count, 2);
	cr_assert_eq(t->out[0].block, 0);
	cr_assert_eq(t->out[0].at, c);
	cr_assert_eq(t->out[1].block, 3);
	cr_assert_eq(t->out[1].at, c + 16);
	cr_assert_eq(t->nbytes, 0x28);
}

Test(inspect, blocks_of_a_type)
{
	struct strbuf sb = STRBUF_INIT;

	/* (No typing: blocks are known by their size class.) */
	s.scanned = false;
	cr_assert_str_eq(inspect_type_name(&s, 2, &sb), "size-25..40");
	inspect_init(&in, NULL, 0, "size-25..40");
	run();
	cr_assert(in.type_known);
	cr_assert_eq(in.nblocks, 2);
	cr_assert_eq(in.blocks[0].block, 2);
	cr_assert_eq(in.blocks[1].block, 3);
	cr_assert_eq(in.blocks[0].nhead, 40);
	cr_assert_eq(memcmp(in.blocks[0].head, fake_image_at(&f, c), 40), 0);
	sb_release(&sb);
}
