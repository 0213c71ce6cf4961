/*
 * Interned strings are stored as a length followed by the bytes, so the
 * equality test is a length compare and a memcmp.
 */
#include "strtab.h"

#include <string.h>

#include "util.h"

struct interned {
	size_t len;
	char s[];
};

struct key {
	const char *s;
	size_t len;
};

static bool eq(const void *item, const void *k)
{
	const struct interned *i = item;
	const struct key *key = k;

	return i->len == key->len && memcmp(i->s, key->s, key->len) == 0;
}

void strtab_init(struct strtab *t, struct arena *arena)
{
	hashmap_init(&t->map, 1024);
	t->arena = arena;
	t->shared = false;
	pthread_mutex_init(&t->lock, NULL);
}

void strtab_free(struct strtab *t)
{
	hashmap_free(&t->map);
	pthread_mutex_destroy(&t->lock);
}

void strtab_share(struct strtab *t, bool shared)
{
	t->shared = shared;
}

static const char *intern(struct strtab *t, const char *s, size_t len,
			  uint64_t h)
{
	struct key key = { s, len };
	struct interned *i = hashmap_get(&t->map, h, eq, &key);

	if (i)
		return i->s;
	i = arena_alloc(t->arena, st_add(sizeof(*i), st_add(len, 1)));
	i->len = len;
	memcpy(i->s, s, len);
	i->s[len] = '\0';
	hashmap_put(&t->map, h, i);
	return i->s;
}

const char *strtab_intern(struct strtab *t, const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len);
	const char *r;

	if (!t->shared)
		return intern(t, s, len, h);
	/* (Hashed before the lock is taken: held less long.) */
	pthread_mutex_lock(&t->lock);
	r = intern(t, s, len, h);
	pthread_mutex_unlock(&t->lock);
	return r;
}

const char *strtab_intern_str(struct strtab *t, const char *s)
{
	return strtab_intern(t, s, strlen(s));
}

void *strtab_alloc(struct strtab *t, size_t size)
{
	void *p;

	if (!t->shared)
		return arena_alloc(t->arena, size);
	pthread_mutex_lock(&t->lock);
	p = arena_alloc(t->arena, size);
	pthread_mutex_unlock(&t->lock);
	return p;
}
