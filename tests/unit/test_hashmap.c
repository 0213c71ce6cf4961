/* The generic hash table, string interning and the arena. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hashmap.h"
#include "strtab.h"

Test(hashmap, u64_identity_many)
{
	struct hashmap h;
	static uint64_t keys[100000];

	hashmap_init(&h, 0);
	for (size_t i = 0; i < 100000; i++) {
		keys[i] = i * 0x9e3779b97f4a7c15ULL;
		hashmap_put(&h, hash_u64(keys[i]), &keys[i]);
	}
	cr_assert_eq(h.count, 100000);
	for (size_t i = 0; i < 100000; i++)
		cr_assert_eq(hashmap_get(&h, hash_u64(keys[i]), NULL, NULL),
			     &keys[i]);
	cr_assert_null(hashmap_get(&h, hash_u64(12345), NULL, NULL));
	hashmap_free(&h);
}

Test(hashmap, replace_and_iterate)
{
	struct hashmap h;
	int a = 1, b = 2, c = 3;
	size_t pos = 0, n = 0;
	void *item;

	hashmap_init(&h, 4);
	cr_assert_null(hashmap_replace(&h, hash_u64(7), NULL, NULL, &a));
	cr_assert_eq(hashmap_replace(&h, hash_u64(7), NULL, NULL, &b), &a);
	hashmap_put(&h, hash_u64(8), &c);
	while (hashmap_next(&h, &pos, &item))
		n++;
	cr_assert_eq(n, 2);
	cr_assert_eq(hashmap_get(&h, hash_u64(7), NULL, NULL), &b);
	hashmap_free(&h);
}

Test(hashmap, bijective_mixer_spot_check)
{
	/* Distinct keys must give distinct hashes (the NULL-eq contract). */
	cr_assert_neq(hash_u64(0), hash_u64(1));
	cr_assert_neq(hash_u64(1ULL << 63), hash_u64(0));
}

Test(strtab, interning)
{
	struct arena a = ARENA_INIT;
	struct strtab t;
	const char *x, *y, *z;
	char buf[] = "hello world";

	strtab_init(&t, &a);
	x = strtab_intern(&t, buf, 5);
	y = strtab_intern_str(&t, "hello");
	z = strtab_intern(&t, "hel\0lo", 6);
	cr_assert_eq(x, y);
	cr_assert_str_eq(x, "hello");
	cr_assert_neq(x, z);
	cr_assert_eq(strtab_intern(&t, "", 0), strtab_intern_str(&t, ""));
	for (int i = 0; i < 50000; i++) {
		char s[32];

		snprintf(s, sizeof(s), "sym%d", i);
		cr_assert_str_eq(strtab_intern_str(&t, s), s);
	}
	cr_assert_eq(strtab_intern_str(&t, "sym49999"),
		     strtab_intern_str(&t, "sym49999"));
	strtab_free(&t);
	arena_free(&a);
}

Test(arena, big_and_small)
{
	struct arena a = ARENA_INIT;
	char *big = arena_alloc(&a, 3u << 20);
	char *small = arena_alloc(&a, 10);

	memset(big, 1, 3u << 20);
	memset(small, 2, 10);
	cr_assert_eq(((uintptr_t)small) % 16, 0);
	cr_assert_str_eq(arena_strndup(&a, "abcdef", 3), "abc");
	arena_free(&a);
}

/*
 * An arena of huge blocks: small requests fill a block of 2 MiB (its
 * payload past the block's header) before the next; big ones get their
 * own; all of it stays apart and is freed at once.
 */
Test(arena, huge_blocks)
{
	struct arena a = ARENA_INIT;
	char *first, *p = NULL, *big;

	a.huge = true;
	first = arena_alloc(&a, 1000);
	/* (The block's first payload byte: its header before it.) */
	cr_assert_eq(((uintptr_t)first) % (2u << 20), 16);
	for (size_t used = 1000; used + 1000 <= (2u << 20) - 16; used += 1000) {
		p = arena_alloc(&a, 1000);
		cr_assert_eq(p, first + used);
		memset(p, (int)(used / 1000), 1000);
	}
	/* The next block. */
	p = arena_alloc(&a, 1000);
	cr_assert_neq((uintptr_t)p >> 21, (uintptr_t)first >> 21);
	memset(p, 0x55, 1000);
	big = arena_alloc(&a, 1u << 20);
	memset(big, 3, 1u << 20);
	memset(first, 1, 1000);
	/* (Nothing written over another's bytes.) */
	cr_assert_eq(p[0], 0x55);
	cr_assert_eq(p[999], 0x55);
	cr_assert_eq(first[2000], 2);
	cr_assert_eq(arena_alloc(&a, 8), p + 1000);
	arena_free(&a);
	cr_assert(a.huge);
	cr_assert_null(a.blocks);
}

/*
 * An arena that grows huge (a model's): blocks of 1 MiB until it holds
 * ARENA_HUGE_FROM bytes, then blocks of 2 MiB on their own huge pages;
 * after arena_free it starts small again.
 */
Test(arena, grows_huge)
{
	struct arena a = ARENA_INIT;
	size_t held = 0;
	char *p;

	a.grows_huge = true;
	for (int round = 0; round < 2; round++) {
		for (held = 0; held < ARENA_HUGE_FROM; held += 4096) {
			p = arena_alloc(&a, 4096);
			memset(p, 7, 4096);
			cr_assert_not(a.huge);
		}
		/* (The small block in use is filled first.) */
		for (int k = 0; !a.huge && k <= 256; k++)
			p = arena_alloc(&a, 4096);
		cr_assert(a.huge);
		cr_assert_eq(((uintptr_t)p) % (2u << 20), 16);
		memset(p, 9, 4096);
		cr_assert_eq(arena_alloc(&a, 4096), p + 4096);
		arena_free(&a);
		cr_assert_not(a.huge);
		cr_assert_null(a.blocks);
	}
}
