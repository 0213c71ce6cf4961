/*
 * Typing a heap's blocks on a made-up process image: classes by vtables
 * and typeinfos in a binary's mapping, a string's and a vector's bodies,
 * a hash table's buckets and nodes, a tree's nodes; then hostile memory
 * (cycles, counts that lie, garbage) and pieces cut anywhere.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "typing.h"
#include "helpers.h"
#include "util.h"

#define BIN 0x400000ull  /* r--p of a binary: vtables, typeinfos, names */
#define BIN_LEN 0x4000ull
#define DATA 0x600000ull /* rw-p of a binary: globals, scanned as a root */
#define DATA_LEN 0x400ull
#define HEAP 0x555500000000ull
#define HEAP_LEN 0x10000ull

#define TI_VTABLE (BIN + 0x10)  /* __cxxabiv1::__class_type_info's */

static struct fake_image f;
static struct heap h;
static struct typing t;
static uint64_t cursor = HEAP;

static void add_seg(uint64_t addr, size_t len, const char *perms,
		    const char *name)
{
	fake_image_add(&f, addr, len, perms, name);
}

static uint8_t *at(uint64_t addr)
{
	return fake_image_at(&f, addr);
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(at(addr), &v, 8);
}

/* Words at ADDR on. */
static void puts_at(uint64_t addr, const uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(addr + 8 * i, w[i]);
}

/* A chunk of SIZE after the last: its user pointer. */
static uint64_t blk(uint64_t size, enum heap_state state)
{
	struct heap_block *b;

	GROW(h.blocks, h.nblocks + 1, h.alloc);
	b = &h.blocks[h.nblocks++];
	memset(b, 0, sizeof(*b));
	b->chunk = cursor;
	b->size = size;
	b->state = state;
	put(cursor + 8, size | 1);
	cursor += size;
	return b->chunk + 16;
}

static size_t idx(uint64_t user)
{
	for (size_t i = 0; i < h.nblocks; i++)
		if (h.blocks[i].chunk + 16 == user)
			return i;
	cr_assert_fail("no block at 0x%llx", (unsigned long long)user);
	return 0;
}

static const char *type_of(uint64_t user)
{
	return t.types[t.of[idx(user)]].name;
}

/*
 * A class: its mangled NAME at N, its typeinfo at TI, its vtable at VT
 * with TOP as offset to top.  Returns the vtable's address point.
 */
static uint64_t klass(uint64_t vt, uint64_t ti, uint64_t n, const char *name,
		      int64_t top)
{
	memcpy(at(n), name, strlen(name) + 1);
	put(ti, TI_VTABLE);
	put(ti + 8, n);
	put(vt, (uint64_t)top);
	put(vt + 8, ti);
	put(vt + 16, BIN + 0x3000); /* a virtual function */
	return vt + 16;
}

static uint64_t w_session, w_conn, w_anon;
/* The blocks, by what they should be found to be. */
static uint64_t s1, s2, conn, anon, second, badname, bogus, freed;
static uint64_t body1, body2, vec, vec_empty;
static uint64_t buckets, n1, n2, n3, holder, r, a, b;
static uint64_t hb2, c1, c2, hb3, d1, d2, holder2, r2, a2, holder3, r3, a3;

#define ONE_F 0x3f800000ull /* 1.0f, a max_load_factor */

static void build(void)
{
	uint64_t w_second, w_badname, nothing = BIN + 0x900;

	memset(&h, 0, sizeof(h));
	cursor = HEAP;
	fake_image_init(&f, "fake");
	add_seg(BIN, BIN_LEN, "r--p", "/usr/bin/prog");
	add_seg(DATA, DATA_LEN, "rw-p", "/usr/bin/prog");
	add_seg(HEAP, HEAP_LEN, "rw-p", "[heap]");

	w_session = klass(BIN + 0x300, BIN + 0x200, BIN + 0x800, "7Session",
			  0);
	w_conn = klass(BIN + 0x340, BIN + 0x220, BIN + 0x840, "N2ns4ConnIiEE",
		       0);
	/* GCC's mark of internal linkage. */
	w_anon = klass(BIN + 0x380, BIN + 0x240, BIN + 0x880,
		       "*N12_GLOBAL__N_13FooE", 0);
	/* Session's secondary vtable: not a complete object's start. */
	put(BIN + 0x3c0, (uint64_t)-16);
	put(BIN + 0x3c8, BIN + 0x200);
	w_second = BIN + 0x3d0;
	w_badname = klass(BIN + 0x400, BIN + 0x260, BIN + 0x8c0, "7Sess ion",
			  0);

	s1 = blk(0x30, HEAP_IN_USE);
	put(s1, w_session);
	s2 = blk(0x30, HEAP_IN_USE);
	put(s2, w_session);
	body2 = blk(0x20, HEAP_IN_USE);
	conn = blk(0x40, HEAP_IN_USE);
	/* A std::string member: 17 bytes in a capacity of 20. */
	puts_at(conn, (uint64_t[]){ w_conn, body2, 17, 20 }, 4);
	anon = blk(0x20, HEAP_IN_USE);
	put(anon, w_anon);
	second = blk(0x20, HEAP_IN_USE);
	put(second, w_second);
	badname = blk(0x20, HEAP_IN_USE);
	put(badname, w_badname);
	bogus = blk(0x20, HEAP_IN_USE);
	put(bogus, nothing);
	freed = blk(0x40, HEAP_TCACHE);
	put(freed, w_session);

	/* Globals: a string, a vector, an empty vector with capacity, a
	 * vector whose "body" is a class (the class wins). */
	body1 = blk(0x30, HEAP_IN_USE); /* usable 40: capacity 30 fits */
	vec = blk(0x50, HEAP_IN_USE);   /* usable 72: 64 bytes fit */
	vec_empty = blk(0x30, HEAP_IN_USE);
	puts_at(DATA, (uint64_t[]){ body1, 20, 30, vec, vec + 24, vec + 64,
				    vec_empty, vec_empty, vec_empty + 32,
				    s1, s1 + 8, s1 + 40 }, 12);

	/* An unordered_map of three: 13 buckets (104 bytes, usable 104). */
	buckets = blk(0x70, HEAP_IN_USE);
	n1 = blk(0x20, HEAP_IN_USE);
	n2 = blk(0x20, HEAP_IN_USE);
	n3 = blk(0x20, HEAP_IN_USE);
	puts_at(n1, (uint64_t[]){ n2, 1, 10 }, 3);
	puts_at(n2, (uint64_t[]){ n3, 2, 20 }, 3);
	puts_at(n3, (uint64_t[]){ 0, 3, 30 }, 3);
	put(buckets + 8, DATA + 8 * 14);
	puts_at(DATA + 8 * 12, (uint64_t[]){ buckets, 13, n1, 3, ONE_F, 13, 0 },
		7);

	/* A std::map of three inside a heap block: {compare, header,
	 * node_count}. */
	holder = blk(0x40, HEAP_IN_USE);
	r = blk(0x40, HEAP_IN_USE);
	a = blk(0x40, HEAP_IN_USE);
	b = blk(0x40, HEAP_IN_USE);
	puts_at(holder, (uint64_t[]){ 0, 0, r, a, b, 3 }, 6);
	/* Red nodes whose padding holds an old free-list link. */
	puts_at(r, (uint64_t[]){ 1, holder + 8, a, b, 42 }, 5);
	puts_at(a, (uint64_t[]){ 0x5555500000000ull, r, 0, 0, 41 }, 5);
	puts_at(b, (uint64_t[]){ 0, r, 0, 0, 43 }, 5);

	/* Hostile: a chain that loops, one shorter than its count, a
	 * tree whose count lies, a tree whose child points back up. */
	hb2 = blk(0x70, HEAP_IN_USE);
	c1 = blk(0x20, HEAP_IN_USE);
	c2 = blk(0x20, HEAP_IN_USE);
	put(c1, c2);
	put(c2, c1);
	puts_at(DATA + 8 * 20, (uint64_t[]){ hb2, 13, c1, 3, ONE_F, 0, 0 },
		7);
	hb3 = blk(0x70, HEAP_IN_USE);
	d1 = blk(0x20, HEAP_IN_USE);
	d2 = blk(0x20, HEAP_IN_USE);
	put(d1, d2);
	put(d2, 0);
	puts_at(DATA + 8 * 28, (uint64_t[]){ hb3, 13, d1, 3, ONE_F, 0, 0 },
		7);
	holder2 = blk(0x40, HEAP_IN_USE);
	r2 = blk(0x40, HEAP_IN_USE);
	a2 = blk(0x40, HEAP_IN_USE);
	puts_at(holder2, (uint64_t[]){ 0, 0, r2, a2, r2, 5 }, 6);
	puts_at(r2, (uint64_t[]){ 1, holder2 + 8, a2, 0 }, 4);
	puts_at(a2, (uint64_t[]){ 0, r2, 0, 0 }, 4);
	holder3 = blk(0x40, HEAP_IN_USE);
	r3 = blk(0x40, HEAP_IN_USE);
	a3 = blk(0x40, HEAP_IN_USE);
	puts_at(holder3, (uint64_t[]){ 0, 0, r3, a3, r3, 2 }, 6);
	puts_at(r3, (uint64_t[]){ 1, holder3 + 8, a3, 0 }, 4);
	puts_at(a3, (uint64_t[]){ 0, r3, r3, 0 }, 4);
}

static void teardown(void)
{
	typing_release(&t);
	free(h.blocks);
	memset(&h, 0, sizeof(h));
	fake_image_release(&f);
}

/* WORDS (N) at ADDR to the visitor in pieces of PIECE words (0: whole). */
static void offer_words(const struct reach_visitor *v, bool block, size_t i,
			const struct heap_root_range *range, uint64_t addr,
			size_t n, size_t piece)
{
	uint64_t *w = xcalloc(n ? n : 1, 8);

	memcpy(w, at(addr), 8 * n);
	if (!piece)
		piece = n;
	for (size_t off = 0; off < n; off += piece) {
		size_t m = n - off < piece ? n - off : piece;

		if (block)
			v->block(v->ctx, i, 8 * off, w + off, m);
		else
			v->root(v->ctx, range, addr + 8 * off, w + off, m);
	}
	free(w);
}

/* The scan, as reach_scan_run offers it: the blocks in use in address
 * order, then the root (or the root first). */
static void offer(size_t piece, bool root_first)
{
	struct reach_visitor v = typing_visitor(&t);
	struct heap_root_range range = { DATA, DATA + DATA_LEN, ROOT_DATA };

	if (root_first)
		offer_words(&v, false, 0, &range, DATA, DATA_LEN / 8, piece);
	for (size_t i = 0; i < h.nblocks; i++) {
		const struct heap_block *hb = &h.blocks[i];

		if (hb->state == HEAP_IN_USE)
			offer_words(&v, true, i, NULL, hb->chunk + 16,
				    heap_block_usable(hb) / 8, piece);
	}
	if (!root_first)
		offer_words(&v, false, 0, &range, DATA, DATA_LEN / 8, piece);
}

static void type_all(size_t piece, bool root_first)
{
	typing_init(&t, &h, &f.img);
	offer(piece, root_first);
	typing_finish(&t, NULL);
}

static const struct block_type *type_named(const char *name)
{
	for (size_t k = 0; k < t.ntypes; k++)
		if (!strcmp(t.types[k].name, name))
			return &t.types[k];
	return NULL;
}

TestSuite(typing, .init = build, .fini = teardown);

Test(typing, classes_by_vtable)
{
	const struct block_type *k;

	type_all(0, false);
	cr_assert_str_eq(type_of(s1), "Session");
	cr_assert_str_eq(type_of(s2), "Session");
	cr_assert_str_eq(type_of(conn), "ns::Conn<int>");
	cr_assert_str_eq(type_of(anon), "(anonymous namespace)::Foo");
	k = type_named("Session");
	cr_assert(k);
	cr_assert_eq(k->kind, TYPE_CLASS);
	cr_assert_eq(k->typeinfo, BIN + 0x200);
	cr_assert_eq(k->count, 2);
	cr_assert_eq(k->bytes, 0x60);
	/* One read of each vtable: the cache knows the rest. */
	cr_assert_eq(t.vtables.count, 6);
}

Test(typing, not_classes)
{
	type_all(0, false);
	cr_assert_str_eq(type_of(second), "unknown", "secondary vtable");
	cr_assert_str_eq(type_of(badname), "unknown", "bad mangled name");
	cr_assert_str_eq(type_of(bogus), "unknown", "no typeinfo");
	cr_assert_eq(t.of[idx(freed)], 0, "a free block is typed");
}

/*
 * make_shared's block: the shared_ptr's control block, a
 * std::_Sp_counted_ptr_inplace<T, ...> whose vtable comes first, then
 * the object: named by T, whatever T's own vtable says.
 */
Test(typing, make_shared_by_its_class)
{
	uint64_t w_conn_ms = klass(BIN + 0x480, BIN + 0x2a0, BIN + 0xa00,
				   "St23_Sp_counted_ptr_inplaceIN2ns4ConnIiEESaI"
				   "vELN9__gnu_cxx12_Lock_policyE2EE", 0);
	uint64_t w_map_ms = klass(BIN + 0x4c0, BIN + 0x2c0, BIN + 0xb00,
				  "St23_Sp_counted_ptr_inplaceISt3mapIiiSt4less"
				  "IiESaISt4pairIKiiEEESaIvELN9__gnu_cxx12_Lock_"
				  "policyE2EE", 0);
	/* (Not make_shared's: its name stays.) */
	uint64_t w_ptr = klass(BIN + 0x500, BIN + 0x2e0, BIN + 0xc00,
			       "St15_Sp_counted_ptrIP7SessionLN9__gnu_cxx12_"
			       "Lock_policyE2EE", 0);
	uint64_t ms1 = blk(0x50, HEAP_IN_USE), ms2 = blk(0x50, HEAP_IN_USE);
	uint64_t mm = blk(0x50, HEAP_IN_USE), pt = blk(0x20, HEAP_IN_USE);

	puts_at(ms1, (uint64_t[]){ w_conn_ms, 0x100000001ull, w_conn, 7 }, 4);
	puts_at(ms2, (uint64_t[]){ w_conn_ms, 0x100000001ull, w_conn, 8 }, 4);
	put(mm, w_map_ms);
	puts_at(pt, (uint64_t[]){ w_ptr, 0x100000001ull, s1 }, 3);
	type_all(0, false);
	cr_assert_str_eq(type_of(ms1), "ns::Conn<int> (make_shared)");
	cr_assert_str_eq(type_of(ms2), "ns::Conn<int> (make_shared)");
	cr_assert_eq(type_named("ns::Conn<int> (make_shared)")->count, 2);
	cr_assert_eq(type_named("ns::Conn<int> (make_shared)")->kind,
		     TYPE_CLASS);
	cr_assert_eq(type_named("ns::Conn<int> (make_shared)")->typeinfo,
		     BIN + 0x2a0);
	cr_assert_str_eq(type_of(mm), "std::map<int, int, std::less<int>, "
				      "std::allocator<std::pair<int const, "
				      "int> > > (make_shared)");
	cr_assert_str_eq(type_of(pt), "std::_Sp_counted_ptr<Session*, "
				      "(__gnu_cxx::_Lock_policy)2>");
	cr_assert_str_eq(type_of(conn), "ns::Conn<int>");
}

Test(typing, string_and_vector_bodies)
{
	type_all(0, false);
	cr_assert_str_eq(type_of(body1), "string body");
	cr_assert_str_eq(type_of(body2), "string body");
	cr_assert_str_eq(type_of(vec), "vector body");
	cr_assert_str_eq(type_of(vec_empty), "vector body");
	cr_assert_str_eq(type_of(s1), "Session", "a layout beat a class");
	cr_assert_eq(type_named("string body")->count, 2);
	cr_assert_eq(type_named("string body")->bytes, 0x50);
}

Test(typing, unordered_map)
{
	type_all(0, false);
	cr_assert_str_eq(type_of(buckets), "unordered_map/set buckets");
	cr_assert_str_eq(type_of(n1), "unordered_map/set node");
	cr_assert_str_eq(type_of(n2), "unordered_map/set node");
	cr_assert_str_eq(type_of(n3), "unordered_map/set node");
	cr_assert_eq(type_named("unordered_map/set node")->count, 3);
}

Test(typing, map)
{
	type_all(0, false);
	cr_assert_str_eq(type_of(r), "map/set node");
	cr_assert_str_eq(type_of(a), "map/set node");
	cr_assert_str_eq(type_of(b), "map/set node");
	cr_assert_str_eq(type_of(holder), "unknown");
	cr_assert_eq(type_named("map/set node")->count, 3);
}

Test(typing, hostile_containers)
{
	type_all(0, false);
	cr_assert_str_eq(type_of(hb2), "unknown", "a looping chain");
	cr_assert_str_eq(type_of(c1), "unknown");
	cr_assert_str_eq(type_of(c2), "unknown");
	cr_assert_str_eq(type_of(hb3), "unknown", "a chain short of count");
	cr_assert_str_eq(type_of(d1), "unknown");
	cr_assert_str_eq(type_of(r2), "unknown", "node_count lies");
	cr_assert_str_eq(type_of(a2), "unknown");
	cr_assert_str_eq(type_of(r3), "unknown", "a child points up");
	cr_assert_str_eq(type_of(a3), "unknown");
}

Test(typing, counts_and_sorted_names)
{
	uint64_t count = 0, bytes = 0, used = 0, used_bytes = 0;

	type_all(0, false);
	cr_assert_str_eq(t.types[0].name, "unknown");
	cr_assert_eq(t.types[0].kind, TYPE_UNKNOWN);
	for (size_t k = 0; k < t.ntypes; k++) {
		count += t.types[k].count;
		bytes += t.types[k].bytes;
		if (k > 1)
			cr_assert_lt(strcmp(t.types[k - 1].name,
					    t.types[k].name), 0);
	}
	for (size_t i = 0; i < h.nblocks; i++) {
		if (h.blocks[i].state != HEAP_IN_USE)
			continue;
		used++;
		used_bytes += h.blocks[i].size;
	}
	cr_assert_eq(count, used);
	cr_assert_eq(bytes, used_bytes);
	cr_assert_eq(t.ntypes, 9);
}

/* Cut anywhere, offered in any order, the same heap types the same. */
Test(typing, pieces_change_nothing)
{
	static const size_t pieces[] = { 1, 2, 3, 5, 6, 7 };
	uint32_t *want;
	size_t ntypes;
	const char **names;

	type_all(0, false);
	want = xmemdup(t.of, h.nblocks * sizeof(*want));
	ntypes = t.ntypes;
	names = xcalloc(ntypes, sizeof(*names));
	for (size_t k = 0; k < ntypes; k++)
		names[k] = xstrdup(t.types[k].name);
	typing_release(&t);
	for (size_t p = 0; p < ARRAY_SIZE(pieces) * 2; p++) {
		type_all(pieces[p / 2], p % 2);
		cr_assert_eq(t.ntypes, ntypes, "pieces of %zu",
			     pieces[p / 2]);
		for (size_t k = 0; k < ntypes; k++)
			cr_assert_str_eq(t.types[k].name, names[k]);
		cr_assert_eq(memcmp(t.of, want, h.nblocks * sizeof(*want)), 0,
			     "pieces of %zu", pieces[p / 2]);
		typing_release(&t);
	}
	for (size_t k = 0; k < ntypes; k++)
		free((char *)names[k]);
	free(names);
	free(want);
}

Test(typing, released_unfinished)
{
	typing_init(&t, &h, &f.img);
	offer(0, false);
	cr_assert_not_null(t.priv, "a typing under way keeps its state");
	/* Released before typing_finish: all of it goes (ASan says
	 * nothing leaks), and T is empty, as if never started. */
	typing_release(&t);
	cr_assert_null(t.priv);
	cr_assert_null(t.of);
	cr_assert_null(t.types);
	cr_assert_eq(t.ntypes, 0);
	cr_assert_eq(t.vtables.count, 0);
	/* (teardown releases it again: nothing to do.) */
}

/*
 * Garbage: every word of every block and of the root a block's user
 * pointer, a pointer into one, into the binary, a small number or noise.
 * Whatever it makes, typing ends and counts every block in use once.
 */
Test(typing, garbage)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, count = 0, used = 0;

	for (size_t i = 0; i < h.nblocks; i++) {
		uint64_t u = h.blocks[i].chunk + 16;

		for (uint64_t o = 0; o + 8 <= h.blocks[i].size - 8; o += 8) {
			uint64_t pick, w;

			x = x * 6364136223846793005ull + 1442695040888963407ull;
			pick = x >> 61;
			w = x >> 11;
			if (pick < 3)
				w = h.blocks[w % h.nblocks].chunk + 16 +
				    8 * (pick == 2);
			else if (pick == 3)
				w = BIN + 8 * (w % (BIN_LEN / 8));
			else if (pick == 4)
				w %= 4;
			put(u + o, w);
		}
		if (i % 3 == 0)
			put(u, w_session);
	}
	for (uint64_t o = 0; o < DATA_LEN; o += 8) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		put(DATA + o, x >> 62 ? h.blocks[(x >> 20) % h.nblocks].chunk +
					      16 : (x >> 20) % 64);
	}
	type_all(0, false);
	for (size_t k = 0; k < t.ntypes; k++)
		count += t.types[k].count;
	for (size_t i = 0; i < h.nblocks; i++)
		used += h.blocks[i].state == HEAP_IN_USE;
	cr_assert_eq(count, used);
	for (size_t i = 0; i < h.nblocks; i += 3)
		if (h.blocks[i].state == HEAP_IN_USE)
			cr_assert_str_eq(t.types[t.of[i]].name, "Session");
}
