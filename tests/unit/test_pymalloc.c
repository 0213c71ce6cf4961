/*
 * pymalloc walked from outside, on a made-up image of a CPython 3.11
 * process: the arenas' table found from the interpreter's data, pools
 * counted as sys._debugmallocstats() counts them, blocks in use those the
 * free list leaves, objects typed by their layout; and what a hostile
 * image holds (a pool header of another arena or no size class, a free
 * list that loops or leaves its pool, a type whose type is a cycle, an
 * arena outside the image) said or passed over, never followed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "heap.h"
#include "helpers.h"
#include "pymalloc.h"

#define MODULE "/fake/python3.11"
#define DATA 0x600000ull      /* the interpreter's data: the pointer */
#define TABLE 0x700010ull     /* the arenas' table, a malloc'd block */
#define TYPES 0x800000ull     /* type objects */
#define TYPE_TYPE (TYPES + 0x1000)
#define ARENA 0x10000000ull
#define POOL 16384
#define READY (1ull << 12)
#define HAVE_GC (1ull << 14)
#define MANAGED_DICT (1ull << 4)
#define DICT_SUBCLASS (1ull << 29)

static struct fake_image f;
static struct heap h;
static struct heap_block table_block;

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(fake_image_at(&f, addr), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(fake_image_at(&f, addr), &v, 4);
}

/* A type object at T, of type META, named NAME, with FLAGS. */
static void type_at(uint64_t t, uint64_t meta, const char *name,
		    uint64_t flags)
{
	put64(t, 1);
	put64(t + 8, meta);
	put64(t + 24, t + 0x200);
	put64(t + 168, flags | READY);
	strcpy((char *)fake_image_at(&f, t + 0x200), name);
}

/* Pool K of arena 0: size class SZ, COUNT in use, CARVED blocks carved,
 * its free list FREE (block indexes, -1 ended). */
static uint64_t pool(unsigned k, unsigned sz, unsigned count,
		     unsigned carved, const int *free_list)
{
	uint64_t p = ARENA + (uint64_t)k * POOL, size = (sz + 1) * 16;
	uint64_t link = p + 8; /* where the next free block is said */

	put32(p, count);
	put32(p + 32, 0);
	put32(p + 36, sz);
	put32(p + 40, (uint32_t)(48 + carved * size));
	put32(p + 44, (uint32_t)(POOL - size));
	for (const int *b = free_list; *b >= 0; b++) {
		uint64_t at = p + 48 + (uint64_t)*b * size;

		put64(link, at);
		link = at;
	}
	return p;
}

static void setup(void)
{
	fake_image_init(&f, "fake");
	fake_image_add(&f, DATA, 4096, "rw-p", MODULE);
	fake_image_add(&f, TABLE - 0x10, 4096, "rw-p", "");
	fake_image_add(&f, TYPES, 8192, "rw-p", "");
	fake_image_add(&f, ARENA, 1 << 20, "rw-p", "");
	put64(DATA + 0x100, TABLE);
	/* Arena 0: 4 pools carved, 60 free (of 64). */
	put64(TABLE, ARENA);
	put64(TABLE + 8, ARENA + 4 * POOL);
	put32(TABLE + 16, 60);
	put32(TABLE + 20, 64);
	type_at(TYPE_TYPE, TYPE_TYPE, "type", HAVE_GC);
	type_at(TYPES, TYPE_TYPE, "Widget", 0);
	type_at(TYPES + 0x400, TYPE_TYPE, "Gadget", HAVE_GC);
	type_at(TYPES + 0x800, TYPE_TYPE, "Plain", HAVE_GC | MANAGED_DICT);
	type_at(TYPES + 0xc00, TYPE_TYPE, "Bag", HAVE_GC | DICT_SUBCLASS);
	/* The table's block, of 16 arena_objects (768 bytes). */
	table_block.chunk = TABLE - 16;
	table_block.size = 784;
	table_block.state = HEAP_IN_USE;
	memset(&h, 0, sizeof(h));
	h.blocks = &table_block;
	h.nblocks = 1;
}

static void teardown(void)
{
	fake_image_release(&f);
}

TestSuite(pymalloc, .init = setup, .fini = teardown);

static struct pymalloc *walk(void)
{
	struct pymalloc *p = pymalloc_new(MODULE, 3, 11, 2, TYPE_TYPE);

	pymalloc_run(p, &f.img, &h);
	return p;
}

static uint64_t count_of(const struct pymalloc *p, const char *name)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(p->types[i].name, name))
			return p->types[i].count;
	return 0;
}

Test(pymalloc, counts_and_types)
{
	static const int none[] = { -1 }, second[] = { 2, -1 };
	uint64_t p0 = pool(0, 1, 3, 4, second);
	uint64_t p2 = pool(2, 4, 2, 2, none);
	struct pymalloc *p;

	/* Pool 0 (32 bytes): a Widget (no GC header), garbage, free, a
	 * Gadget (after a PyGC_Head). */
	put64(p0 + 48, 1);
	put64(p0 + 48 + 8, TYPES);
	put64(p0 + 48 + 32, ~0ull);
	put64(p0 + 48 + 96 + 16, 2);
	put64(p0 + 48 + 96 + 24, TYPES + 0x400);
	/* Pool 1: emptied (count 0): an unused pool, as the table says. */
	pool(1, 3, 0, 5, none);
	/* Pool 2 (80 bytes): a Plain (managed dict: values, dict, GC
	 * header, then the object) whose values are in pool 3, and a Bag
	 * whose keys are. */
	put64(p2 + 48, ARENA + 3 * POOL + 48 + 8);
	put64(p2 + 48 + 32, 1);
	put64(p2 + 48 + 40, TYPES + 0x800);
	put64(p2 + 128 + 16, 1);
	put64(p2 + 128 + 24, TYPES + 0xc00);
	put64(p2 + 128 + 16 + 32, ARENA + 3 * POOL + 48 + 64);
	pool(3, 3, 2, 2, none);
	p = walk();
	cr_assert(p->walked, "%s", p->why.what);
	cr_assert_eq(p->table, TABLE);
	cr_assert_eq(p->table_ptr, DATA + 0x100);
	cr_assert_eq(p->narenas, 1);
	cr_assert_eq(p->unused_pools, 60);
	cr_assert_eq(p->classes[1].pools, 1);
	cr_assert_eq(p->classes[1].used, 3);
	cr_assert_eq(p->classes[1].avail, (POOL - 48) / 32 - 3);
	cr_assert_eq(p->classes[3].pools, 1); /* (pool 1 is unused) */
	cr_assert_eq(p->nblocks, 7);
	cr_assert_eq(p->nproblems, 0, "%s", p->problems[0].f.what);
	cr_assert_eq(count_of(p, "Widget"), 1);
	cr_assert_eq(count_of(p, "Gadget"), 1);
	cr_assert_eq(count_of(p, "Plain"), 1);
	cr_assert_eq(count_of(p, "Bag"), 1);
	cr_assert_eq(count_of(p, "Plain values"), 1);
	cr_assert_eq(count_of(p, "Bag keys"), 1);
	cr_assert_eq(p->types[0].count, 1); /* the garbage */
	cr_assert_eq(pymalloc_find(p, p0 + 48 + 40), 1);
	cr_assert_eq(pymalloc_find(p, p0 + 48 + 64), -1); /* free */
	pymalloc_free(p);
}

Test(pymalloc, hostile_pools)
{
	static const int loop[] = { 1, 0, -1 }, none[] = { -1 };
	uint64_t p0 = pool(0, 1, 1, 3, loop), p1, p2;
	struct pymalloc *p;

	/* Pool 0's free list loops back to its first block. */
	put64(p0 + 48 + 0 * 32, p0 + 48 + 32);
	/* Pool 1: no size class; pool 2: another arena's. */
	p1 = pool(1, 40, 1, 1, none);
	p2 = pool(2, 1, 1, 1, none);
	put32(p2 + 32, 7);
	/* Pool 3: its free list leaves the pool. */
	put64(pool(3, 1, 1, 2, none) + 8, 0x12345678);
	p = walk();
	cr_assert(p->walked);
	cr_assert_geq(p->nproblems, 4);
	cr_assert(strstr(p->problems[0].f.what, "free list"),
		  "%s", p->problems[0].f.what);
	for (size_t i = 0; i < p->nproblems; i++)
		if (p->problems[i].f.where.addr == p1)
			cr_assert(strstr(p->problems[i].f.what,
					 "size class 40"));
	pymalloc_free(p);
}

Test(pymalloc, hostile_types)
{
	static const int none[] = { -1 };
	uint64_t p0 = pool(0, 1, 3, 3, none);
	struct pymalloc *p;

	/* Two types whose types are each other: no type. */
	type_at(TYPES + 0x1400, TYPES + 0x1800, "Ouro", 0);
	type_at(TYPES + 0x1800, TYPES + 0x1400, "Boros", 0);
	put64(p0 + 48, 1);
	put64(p0 + 48 + 8, TYPES + 0x1400);
	/* A type pointer outside the image, and one at a type whose name
	 * is not text. */
	put64(p0 + 80, 1);
	put64(p0 + 80 + 8, 0x7fff00000000);
	type_at(TYPES + 0x1c00, TYPE_TYPE, "x", 0);
	*fake_image_at(&f, TYPES + 0x1c00 + 0x200) = '\n';
	put64(p0 + 112, 1);
	put64(p0 + 112 + 8, TYPES + 0x1c00);
	p = walk();
	cr_assert(p->walked);
	cr_assert_eq(p->nblocks, 3);
	cr_assert_eq(p->types[0].count, 3);
	pymalloc_free(p);
}

Test(pymalloc, no_table)
{
	struct pymalloc *p;

	/* An arena outside the image: no table agrees. */
	put64(TABLE, 0x7f0000000000);
	put64(TABLE + 8, 0x7f0000000000 + 4 * POOL);
	p = walk();
	cr_assert(!p->walked);
	cr_assert(strstr(p->why.what, "no pymalloc arenas found"),
		  "%s", p->why.what);
	pymalloc_free(p);
}

Test(pymalloc, unknown_version)
{
	struct pymalloc *p = pymalloc_new(MODULE, 3, 9, 0, TYPE_TYPE);

	pymalloc_run(p, &f.img, &h);
	cr_assert(!p->walked);
	cr_assert(strstr(p->why.what, "python 3.9"), "%s", p->why.what);
	pymalloc_free(p);
}

/* The value of an object of type NAME (its type object at 0x7000) whose
 * block's first LEN bytes are BYTES. */
static char *value_of(struct pymalloc *p, const char *name,
		      const uint8_t *bytes, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	pymalloc_value(p, name, 0x7000, bytes, len, &sb);
	return sb_detach(&sb);
}

static void set64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

Test(pymalloc, values)
{
	struct pymalloc *p = pymalloc_new(MODULE, 3, 11, 2, TYPE_TYPE);
	uint8_t b[256] = { 0 };
	uint32_t st = 1u << 2 | 1u << 5 | 1u << 6 | 1u << 7, d[2] = { 5, 1 };
	char *v;

	/* A compact ASCII str (no collector header), quote escaped. */
	set64(b, 8, 0x7000);
	set64(b, 16, 6);
	memcpy(b + 32, &st, 4);
	memcpy(b + 48, "it's\n!", 6);
	v = value_of(p, "str", b, sizeof(b));
	cr_expect_str_eq(v, "str 'it\\'s\\x0a!'");
	free(v);
	/* Longer than it says: 40 characters, then the length. */
	set64(b, 16, 1000);
	memset(b + 48, 'a', 200);
	v = value_of(p, "str", b, sizeof(b));
	cr_expect(strstr(v, "'... (1000 characters)") != NULL, "%s", v);
	free(v);
	/* Cut short by the bytes read: what they hold. */
	v = value_of(p, "str", b, 52);
	cr_expect_str_eq(v, "str 'aaaa'... (1000 characters)");
	free(v);
	/* A dict after its PyGC_Head: its length. */
	memset(b, 0, sizeof(b));
	set64(b, 16 + 8, 0x7000);
	set64(b, 16 + 16, 3);
	v = value_of(p, "dict", b, sizeof(b));
	cr_expect_str_eq(v, "dict len=3");
	free(v);
	/* An int of two 30-bit digits, negative. */
	memset(b, 0, sizeof(b));
	set64(b, 8, 0x7000);
	set64(b, 16, (uint64_t)-2);
	memcpy(b + 24, d, 8);
	v = value_of(p, "int", b, sizeof(b));
	cr_expect_str_eq(v, "int -1073741829");
	free(v);
	/* A type pointer that is not the type's: the name alone. */
	set64(b, 8, 0x7008);
	v = value_of(p, "int", b, sizeof(b));
	cr_expect_str_eq(v, "int");
	free(v);
	/* Fewer bytes than a header: the name alone. */
	v = value_of(p, "float", b, 8);
	cr_expect_str_eq(v, "float");
	free(v);
	pymalloc_free(p);
}
