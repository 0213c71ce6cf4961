/*
 * The bucket set: buckets by the producer's id (an array for the small
 * ids producers count from 0, a map for the rest) and by dense index.
 */
#include "bucket.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *alloc_kind_name(enum alloc_kind k)
{
	return k == ALLOC_MMAP ? "mmap" : "malloc";
}

void bucket_set_init(struct bucket_set *s)
{
	memset(s, 0, sizeof(*s));
	hashmap_init(&s->by_id, 1024);
	s->by_index = true;
}

void bucket_set_free(struct bucket_set *s)
{
	hashmap_free(&s->by_id);
	free(s->dense);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/*
 * Producers count ids from 0, so they go in an array; but the array only
 * grows to a few times the number of buckets, so that one stray large id
 * costs a map entry, not megabytes.  Others go in the map.
 */
#define DENSE_SLACK 4
#define DENSE_FREE ((size_t)1 << 16)

struct bucket *bucket_set_find(const struct bucket_set *s, uint64_t id)
{
	if (s->by_index)
		return id && id <= s->n ? s->v[id - 1] : NULL;
	if (id < s->ndense && s->dense[id].b)
		return s->dense[id].b;
	if (!s->nsparse)
		return NULL;
	return hashmap_get(&s->by_id, hash_u64(id), NULL, NULL);
}

struct bucket *bucket_set_find_note(const struct bucket_set *s, uint64_t id,
				    struct bucket_note *n)
{
	struct bucket *b;

	if (!s->by_index && id < s->ndense && s->dense[id].b) {
		*n = s->dense[id].note;
		return s->dense[id].b;
	}
	b = bucket_set_find(s, id);
	*n = bucket_note(b);
	return b;
}

void bucket_set_renote(struct bucket_set *s, const struct bucket *b)
{
	if (!s->by_index && b->id < s->ndense && s->dense[b->id].b == b)
		s->dense[b->id].note = bucket_note(b);
}

static void add_by_id(struct bucket_set *s, struct bucket *b);

void bucket_set_add(struct bucket_set *s, struct bucket *b)
{
	/*
	 * Readers that number buckets themselves number them 1, 2, ... in
	 * the order they are made: no table for those.  The first bucket
	 * that is not so puts every bucket in the tables.
	 */
	if (s->by_index && b->id == (uint64_t)b->index + 1)
		return;
	if (s->by_index) {
		s->by_index = false;
		for (size_t i = 0; i < s->n; i++)
			if (s->v[i] != b)
				add_by_id(s, s->v[i]);
	}
	add_by_id(s, b);
}

static void add_by_id(struct bucket_set *s, struct bucket *b)
{
	size_t room = s->n < (SIZE_MAX - DENSE_FREE) / DENSE_SLACK
			      ? s->n * DENSE_SLACK + DENSE_FREE
			      : SIZE_MAX;

	if (b->id >= s->ndense && b->id < room) {
		size_t n = s->ndense ? s->ndense : 1024;

		while (n <= b->id)
			n *= 2;
		s->dense = xrecallocarray(s->dense, s->ndense, n,
					  sizeof(*s->dense));
		s->ndense = n;
	}
	if (b->id < s->ndense) {
		s->dense[b->id] = (struct bucket_slot){ b, bucket_note(b) };
	} else {
		hashmap_put(&s->by_id, hash_u64(b->id), b);
		s->nsparse++;
	}
}

static int cmp_bucket_id(const void *a, const void *b)
{
	const struct bucket *x = *(const struct bucket *const *)a;
	const struct bucket *y = *(const struct bucket *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

struct bucket **bucket_set_sorted(const struct bucket_set *s)
{
	struct bucket **v = xcalloc(s->n, sizeof(*v));

	if (s->n)
		memcpy(v, s->v, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), cmp_bucket_id);
	return v;
}

