/*
 * The one generic hash table: open addressing with linear probing over
 * (hash, item) slots.  Items are the caller's; the table never owns them.
 * Strings, buckets, tallies, the symbol caches and the classifier's memos
 * are built on it; frames and stacks, looked up tens of millions of times
 * a run, have tables of their own whose slots hold ids (see stack.h).
 */
#ifndef DMPROF_HASHMAP_H
#define DMPROF_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	uint64_t hash;
	void *item; /* NULL = empty */
};

struct hashmap {
	struct hashmap_slot *slots;
	size_t mask; /* capacity - 1; capacity is a power of two */
	size_t count;
};
#define HASHMAP_INIT { NULL, 0, 0 }

/*
 * Returns true when ITEM (stored with HASH) equals KEY.  When NULL is passed
 * instead of a function, equal hashes mean equal keys: right for u64 keys
 * hashed with hash_u64(), which is a bijection.
 */
typedef bool (*hashmap_eq_fn)(const void *item, const void *key);

void hashmap_init(struct hashmap *map, size_t expected);
void hashmap_free(struct hashmap *map);
void *hashmap_get(const struct hashmap *map, uint64_t hash,
		  hashmap_eq_fn eq, const void *key);
/* Adds ITEM (non-NULL); the caller has made sure no equal key is present. */
void hashmap_put(struct hashmap *map, uint64_t hash, void *item);
/* Ask for the slot of HASH early, to look it up soon. */
void hashmap_prefetch(const struct hashmap *map, uint64_t hash);
/*
 * Replace the item for an equal key, or add it.  Returns the old item or
 * NULL.
 */
void *hashmap_replace(struct hashmap *map, uint64_t hash, hashmap_eq_fn eq,
		      const void *key, void *item);

/* Iteration in table order: for (i = 0; hashmap_next(m, &i, &item);) */
bool hashmap_next(const struct hashmap *map, size_t *pos, void **item);

/*
 * A per-process random seed, set by the first hashmap_init: inputs chosen
 * to collide (a dump with crafted addresses) cannot slow a run down.
 */
extern uint64_t hash_seed;

/* A bijective 64-bit mixer (splitmix64's finalizer) of x and the seed. */
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= hash_seed;
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t hash_bytes(const void *data, size_t len);

#endif
