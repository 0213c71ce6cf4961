/* Sums by text (see tally.h): one hash map, entries in an arena. */
#include "tally.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct key {
	const char *s;
	size_t len;
};

static bool entry_eq(const void *item, const void *k)
{
	const struct tally_entry *e = item;
	const struct key *key = k;

	return e->len == key->len && !memcmp(e->key, key->s, key->len);
}

void tally_init(struct tally *t)
{
	memset(t, 0, sizeof(*t));
	hashmap_init(&t->map, 256);
}

void tally_free(struct tally *t)
{
	hashmap_free(&t->map);
	FREE_ALL(t->v, t->by_id, t->flag_by_id, t->lframes, t->multi_at,
		 t->mentry, t->mflag);
	arena_free(&t->arena);
	memset(t, 0, sizeof(*t));
}

void tally_line_add(struct tally *t, struct tally_entry *e, const char *file,
		    uint32_t line, int64_t bytes)
{
	struct tally_line *l;

	for (l = e->lines; l; l = l->next)
		if (l->file == file && l->line == line)
			break;
	if (!l) {
		l = arena_alloc(&t->arena, sizeof(*l));
		*l = (struct tally_line){ file, line, 0, e->lines };
		e->lines = l;
	}
	l->bytes = add64(l->bytes, bytes, &t->overflow);
}

static int line_cmp(const void *a, const void *b)
{
	const struct tally_line *x = *(struct tally_line *const *)a;
	const struct tally_line *y = *(struct tally_line *const *)b;
	int c;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
	return c ? c : (x->line > y->line) - (x->line < y->line);
}

struct tally_line **tally_lines_sorted(const struct tally_entry *e, size_t *n)
{
	struct tally_line **v;
	size_t k = 0;

	for (const struct tally_line *l = e->lines; l; l = l->next)
		k++;
	v = xcalloc(k + 1, sizeof(*v));
	k = 0;
	for (struct tally_line *l = e->lines; l; l = l->next)
		v[k++] = l;
	qsort(v, k, sizeof(*v), line_cmp);
	*n = k;
	return v;
}

struct tally_entry *tally_find(const struct tally *t, const char *s,
			       size_t len)
{
	struct key k = { s, len };

	return hashmap_get(&t->map, hash_bytes(s, len), entry_eq, &k);
}

struct tally_entry *tally_get(struct tally *t, const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len);
	struct key k = { s, len };
	struct tally_entry *e = hashmap_get(&t->map, h, entry_eq, &k);

	if (e)
		return e;
	e = arena_alloc(&t->arena, sizeof(*e));
	memset(e, 0, sizeof(*e));
	e->key = arena_strndup(&t->arena, s, len);
	e->len = len;
	hashmap_put(&t->map, h, e);
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n++] = e;
	return e;
}

void tally_sort(struct tally *t, int (*cmp)(const void *, const void *))
{
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp);
}

int tally_key_cmp(const struct tally_entry *x, const struct tally_entry *y)
{
	int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

int tally_cmp_bytes(const void *a, const void *b)
{
	const struct tally_entry *x = *(const struct tally_entry *const *)a;
	const struct tally_entry *y = *(const struct tally_entry *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return tally_key_cmp(x, y); /* ties: stable, readable order */
}
