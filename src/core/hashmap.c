/*
 * Open-addressing hash table.  The full 64-bit hash is kept in each slot so
 * that probing compares integers and the caller's equality function runs
 * only on real candidates; growth never re-hashes keys.
 */
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

uint64_t hash_seed;

static void seed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s))
		s = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	hash_seed = s | 1;
}

void hashmap_init(struct hashmap *map, size_t expected)
{
	size_t cap = 16;

	if (!hash_seed)
		seed();
	while (cap / 4 * 3 < expected)
		cap = st_mult(cap, 2);
	map->slots = xcalloc_table(cap, sizeof(*map->slots));
	map->mask = cap - 1;
	map->count = 0;
}

void hashmap_free(struct hashmap *map)
{
	free(map->slots);
	map->slots = NULL;
	map->mask = 0;
	map->count = 0;
}

static void grow(struct hashmap *map)
{
	struct hashmap_slot *old = map->slots;
	size_t i, oldcap = map->slots ? map->mask + 1 : 0;

	hashmap_init(map, oldcap ? st_mult(oldcap, 2) / 4 * 3 : 0);
	for (i = 0; i < oldcap; i++)
		if (old[i].item)
			hashmap_put(map, old[i].hash, old[i].item);
	free(old);
}

static struct hashmap_slot *find_slot(const struct hashmap *map, uint64_t hash,
				      hashmap_eq_fn eq, const void *key)
{
	size_t i = (size_t)hash & map->mask;

	for (;;) {
		struct hashmap_slot *s = &map->slots[i];

		if (!s->item)
			return s;
		if (s->hash == hash && (!eq || eq(s->item, key)))
			return s;
		i = (i + 1) & map->mask;
	}
}

void *hashmap_get(const struct hashmap *map, uint64_t hash, hashmap_eq_fn eq,
		  const void *key)
{
	if (!map->slots)
		return NULL;
	return find_slot(map, hash, eq, key)->item;
}

void hashmap_prefetch(const struct hashmap *map, uint64_t hash)
{
	if (map->slots)
		prefetch(&map->slots[(size_t)hash & map->mask]);
}

void hashmap_put(struct hashmap *map, uint64_t hash, void *item)
{
	size_t i;

	if (!map->slots || (map->count + 1) > (map->mask + 1) / 4 * 3)
		grow(map);
	i = (size_t)hash & map->mask;
	while (map->slots[i].item)
		i = (i + 1) & map->mask;
	map->slots[i].hash = hash;
	map->slots[i].item = item;
	map->count++;
}

void *hashmap_replace(struct hashmap *map, uint64_t hash, hashmap_eq_fn eq,
		      const void *key, void *item)
{
	struct hashmap_slot *s;
	void *old;

	if (map->slots) {
		s = find_slot(map, hash, eq, key);
		if (s->item) {
			old = s->item;
			s->item = item;
			return old;
		}
	}
	hashmap_put(map, hash, item);
	return NULL;
}

bool hashmap_next(const struct hashmap *map, size_t *pos, void **item)
{
	size_t cap = map->slots ? map->mask + 1 : 0;

	while (*pos < cap) {
		struct hashmap_slot *s = &map->slots[(*pos)++];

		if (s->item) {
			*item = s->item;
			return true;
		}
	}
	return false;
}

/*
 * A simple, fast hash for short strings: 8 bytes at a time through a
 * multiply-xorshift mix; the tail is read bytewise so it never reads past
 * the end of the input.
 */
uint64_t hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (len * 0xff51afd7ed558ccdULL);

	if (!hash_seed)
		seed();

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = (h ^ hash_u64(w)) * 0x9e3779b97f4a7c15ULL;
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, p, len);
		h = (h ^ hash_u64(w ^ len)) * 0x9e3779b97f4a7c15ULL;
	}
	return hash_u64(h);
}
