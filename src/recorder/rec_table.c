/*
 * The recorder's tables.  Buckets sit in an open-addressing table that
 * threads search without locks; a new stack takes a lock to be inserted,
 * and when the table is half full it is copied into one twice as big and
 * the new one published (old tables stay mapped, so a reader still
 * walking one is safe; they cost as much as the newest one together).
 * Large blocks, mappings and arena heaps change rarely and take a spin
 * lock.
 */
#include "rec.h"
#include "search.h"

#include <string.h>
#include <sys/mman.h>

/* Ids are dense: by_id is a table of pages of ids, made as ids come.
 * (The unit test builds a copy with room for fewer: test_rectable.c.) */
#ifndef REC_MAX_BUCKETS
#define REC_MAX_BUCKETS (1u << 22)
#endif
#define MAX_BUCKETS REC_MAX_BUCKETS
#define ID_PAGE (1u << 14)
_Static_assert(MAX_BUCKETS % ID_PAGE == 0, "ids come in whole pages");

struct table {
	size_t mask;
	_Atomic(struct rec_bucket *) slot[];
};

static _Atomic(struct table *) table;
static _Atomic(_Atomic(struct rec_bucket *) *) by_id[MAX_BUCKETS / ID_PAGE];
static atomic_uint next_id;
static rec_lock insert_lock = REC_LOCK_INIT;

struct rec_bucket *rec_self_bucket;
struct rec_bucket *rec_arena_bucket;
struct rec_bucket *rec_header_bucket;
struct rec_bucket *rec_python_arena_bucket;
struct rec_bucket *rec_python_free_bucket;

/* (Four lanes, so that a deep stack's frames are mixed side by side,
 * not each waiting for the last: a third of the time of one lane.) */
static inline uint64_t lane(uint64_t h, uintptr_t f)
{
	h = (h ^ f) * 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

static uint64_t hash_stack(enum rec_kind kind, const uintptr_t *f, unsigned n)
{
	uint64_t a = 0x9e3779b97f4a7c15ULL ^ (uint64_t)kind ^ ((uint64_t)n << 8),
		 b = 0x6a09e667f3bcc909ULL, c = 0xbb67ae8584caa73bULL,
		 d = 0x3c6ef372fe94f82bULL;
	unsigned i = 0;

	for (; i + 4 <= n; i += 4) {
		a = lane(a, f[i]);
		b = lane(b, f[i + 1]);
		c = lane(c, f[i + 2]);
		d = lane(d, f[i + 3]);
	}
	if (i < n)
		a = lane(a, f[i++]);
	if (i < n)
		b = lane(b, f[i++]);
	if (i < n)
		c = lane(c, f[i]);
	a ^= (b << 16 | b >> 48) ^ (c << 32 | c >> 32) ^ (d << 48 | d >> 16);
	a *= 0x94d049bb133111ebULL;
	return a ^ (a >> 31);
}

static struct table *table_new(size_t slots)
{
	struct table *t = rec_alloc(sizeof(*t) + slots * sizeof(t->slot[0]));

	/*
	 * Written now: probing reads empty slots anywhere, and reading
	 * untouched memory maps the zero page, which would muddle the
	 * committed bytes.
	 */
	if (t) {
		memset(t->slot, 0, slots * sizeof(t->slot[0]));
		t->mask = slots - 1;
	}
	return t;
}

static struct rec_bucket *marker(enum rec_kind kind, void (*fn)(void))
{
	/* A return address just inside the marker function. */
	uintptr_t frame = (uintptr_t)fn + 1;

	return rec_bucket_get(kind, &frame, 1);
}

bool rec_table_init(void)
{
	struct table *t = table_new(4096);

	if (!t)
		return false;
	atomic_store(&table, t);
	rec_self_bucket = marker(REC_MMAP, dmprof_recorder_self);
	rec_arena_bucket = marker(REC_MMAP, dmprof_glibc_malloc_arena);
	rec_header_bucket = marker(REC_MALLOC, dmprof_recorder_block_headers);
	rec_python_arena_bucket = marker(REC_MMAP, dmprof_python_object_arena);
	rec_python_free_bucket = marker(REC_MALLOC, dmprof_python_object_free);
	return rec_self_bucket && rec_arena_bucket && rec_header_bucket &&
	       rec_python_arena_bucket && rec_python_free_bucket;
}

/* The slot of id ID, its page made if MAKE (insert lock held). */
static _Atomic(struct rec_bucket *) *id_slot(uint32_t id, bool make)
{
	_Atomic(struct rec_bucket *) *page =
		atomic_load_explicit(&by_id[id / ID_PAGE], memory_order_acquire);

	if (!page && make) {
		page = rec_alloc(ID_PAGE * sizeof(*page));
		if (page)
			atomic_store_explicit(&by_id[id / ID_PAGE], page,
					      memory_order_release);
	}
	return page ? &page[id % ID_PAGE] : NULL;
}

static bool same(const struct rec_bucket *s, uint64_t h, enum rec_kind kind,
		 const uintptr_t *frames, unsigned depth)
{
	return s->hash == h && s->kind == kind && s->depth == depth &&
	       !memcmp(s->frames, frames, depth * sizeof(uintptr_t));
}

/* The bucket in T, or NULL; *SLOT is where the search ended. */
static struct rec_bucket *find(struct table *t, uint64_t h,
			       enum rec_kind kind, const uintptr_t *frames,
			       unsigned depth, size_t *slot)
{
	size_t i = (size_t)h & t->mask;

	for (;;) {
		struct rec_bucket *s = atomic_load_explicit(
			&t->slot[i], memory_order_acquire);

		if (!s || same(s, h, kind, frames, depth)) {
			*slot = i;
			return s;
		}
		i = (i + 1) & t->mask;
	}
}

/* Copy T into a table twice as big and publish it (insert lock held). */
static struct table *grow(struct table *t)
{
	struct table *n = table_new((t->mask + 1) * 2);
	uint32_t ids = atomic_load(&next_id);

	if (!n)
		return t;
	for (uint32_t id = 0; id < ids && id < MAX_BUCKETS; id++) {
		_Atomic(struct rec_bucket *) *slot = id_slot(id, false);
		struct rec_bucket *b = slot ? atomic_load(slot) : NULL;
		size_t i;

		if (b) {
			i = (size_t)b->hash & n->mask;
			while (atomic_load_explicit(&n->slot[i],
						    memory_order_relaxed))
				i = (i + 1) & n->mask;
			atomic_store_explicit(&n->slot[i], b,
					      memory_order_relaxed);
		}
	}
	atomic_store_explicit(&table, n, memory_order_release);
	return n;
}

/*
 * Each thread's buckets of late, by hash: a stack the thread came to
 * lately is found there, without a probe of the table of every stack (a
 * miss of the processor's caches, in a program of thousands of stacks).
 */
#define RECENT 256
static __thread struct rec_bucket *recent[RECENT];

struct rec_bucket *rec_bucket_get(enum rec_kind kind, const uintptr_t *frames,
				  unsigned depth)
{
	uint64_t h = hash_stack(kind, frames, depth);
	struct table *t = atomic_load_explicit(&table, memory_order_acquire);
	struct rec_bucket *b, **r = &recent[h >> 56];
	uint32_t id;
	size_t i;
	uint64_t jit_at;

	if (*r && same(*r, h, kind, frames, depth))
		return *r;
	if (!t)
		return NULL;
	b = find(t, h, kind, frames, depth, &i);
	if (b)
		return *r = b;
	/* (Outside the lock: a system call, where a JIT runs.) */
	jit_at = rec_perfmap_now();

	/* A new stack (or one another thread just added). */
	rec_lock_take(&insert_lock);
	t = atomic_load_explicit(&table, memory_order_acquire);
	b = find(t, h, kind, frames, depth, &i);
	if (b)
		goto out;
	id = atomic_load(&next_id);
	/* (The last id is no bucket's: a block header's "untracked".) */
	if (id >= MAX_BUCKETS - 1) {
		b = NULL; /* full: the block goes untracked */
		goto out;
	}
	if ((id + 1) * 2 > t->mask + 1) {
		t = grow(t);
		find(t, h, kind, frames, depth, &i);
		if ((id + 1) * 4 > (t->mask + 1) * 3) {
			b = NULL; /* no memory to grow into, nearly full */
			goto out;
		}
	}
	b = id_slot(id, true) ? rec_alloc(sizeof(*b) + depth * sizeof(uintptr_t))
			      : NULL;
	if (!b)
		goto out;
	b->hash = h;
	b->kind = (uint8_t)kind;
	b->depth = (uint16_t)depth;
	b->jit_at = jit_at;
	memcpy(b->frames, frames, depth * sizeof(uintptr_t));
	b->id = id;
	atomic_store_explicit(id_slot(id, false), b, memory_order_release);
	atomic_store_explicit(&next_id, id + 1, memory_order_release);
	atomic_store_explicit(&t->slot[i], b, memory_order_release);
out:
	rec_lock_give(&insert_lock);
	if (b)
		*r = b;
	return b;
}

uint32_t rec_bucket_count(void)
{
	return atomic_load_explicit(&next_id, memory_order_acquire);
}

struct rec_bucket *rec_bucket_by_id(uint32_t id)
{
	_Atomic(struct rec_bucket *) *slot =
		id < MAX_BUCKETS ? id_slot(id, false) : NULL;

	return slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
}

/* ---- large blocks: an open-addressing table with tombstones ---- */

#define TOMB ((uintptr_t)1)

static struct rec_large *large;
static size_t large_cap, large_used, large_live;
static rec_lock large_lock = REC_LOCK_INIT;

static size_t large_slot(uintptr_t p, size_t cap)
{
	uint64_t h = p * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 20) & (cap - 1);
}

static void large_grow(void)
{
	/* Mostly tombstones: the same size again, clean; else twice. */
	size_t cap = !large_cap		       ? 4096
		     : large_live < large_cap / 4 ? large_cap
						  : large_cap * 2;
	struct rec_large *t = rec_map_alloc(cap * sizeof(*t));

	if (!t)
		return;
	memset(t, 0, cap * sizeof(*t)); /* (probed, as the buckets' table) */
	for (size_t i = 0; i < large_cap; i++) {
		size_t k;

		if (large[i].p <= TOMB)
			continue;
		k = large_slot(large[i].p, cap);
		while (t[k].p)
			k = (k + 1) & (cap - 1);
		t[k] = large[i];
	}
	/* (Only ever read under the lock: it can go now.) */
	rec_map_free(large, large_cap * sizeof(*large));
	large = t;
	large_cap = cap;
	large_used = large_live;
}

void rec_large_add(const struct rec_large *l)
{
	size_t k;

	rec_lock_take(&large_lock);
	if ((large_used + 1) * 4 > large_cap * 3)
		large_grow();
	if (large) {
		k = large_slot(l->p, large_cap);
		while (large[k].p > TOMB)
			k = (k + 1) & (large_cap - 1);
		if (!large[k].p)
			large_used++;
		large[k] = *l;
		large_live++;
	}
	rec_lock_give(&large_lock);
}

void rec_large_del(uintptr_t p)
{
	rec_lock_take(&large_lock);
	if (large) {
		size_t k = large_slot(p, large_cap);

		while (large[k].p) {
			if (large[k].p == p) {
				large[k].p = TOMB;
				large_live--;
				break;
			}
			k = (k + 1) & (large_cap - 1);
		}
	}
	rec_lock_give(&large_lock);
}

/* The copies the snapshots hand out (kept from dump to dump). */
static struct rec_buf large_copy, maps_copy;

size_t rec_large_snapshot(struct rec_large **out)
{
	struct rec_buf *const b = &large_copy;
	size_t n = 0;

	rec_buf_free(b);
	rec_lock_take(&large_lock);
	for (size_t i = 0; i < large_cap; i++) {
		if (large[i].p <= TOMB)
			continue;
		rec_buf_add(b, &large[i], sizeof(large[i]));
		n++;
	}
	rec_lock_give(&large_lock);
	*out = (struct rec_large *)b->p;
	return b->len / sizeof(struct rec_large) < n
		       ? b->len / sizeof(struct rec_large)
		       : n;
}

/* ---- mappings: a sorted array ---- */

static struct rec_map *maps;
static size_t nmaps, maps_cap;
static rec_lock maps_lock = REC_LOCK_INIT;

static bool maps_room(size_t need)
{
	struct rec_map *t;
	size_t cap;

	if (need <= maps_cap)
		return true;
	cap = maps_cap ? maps_cap * 2 : 1024;
	while (cap < need)
		cap *= 2;
	t = rec_alloc(cap * sizeof(*t));
	if (!t)
		return false;
	if (nmaps)
		memcpy(t, maps, nmaps * sizeof(*t));
	maps = t;
	maps_cap = cap;
	return true;
}

/* Remove [start, end) from the list, splitting records it cuts. */
static void maps_cut(uintptr_t start, uintptr_t end)
{
	size_t i = 0;

	while (i < nmaps) {
		struct rec_map *m = &maps[i];

		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		if (m->start < start && m->end > end) {
			/* A hole in the middle: two records. */
			if (!maps_room(nmaps + 1))
				return;
			m = &maps[i];
			memmove(&maps[i + 2], &maps[i + 1],
				(nmaps - i - 1) * sizeof(*maps));
			maps[i + 1].start = end;
			maps[i + 1].end = m->end;
			maps[i + 1].bucket = m->bucket;
			m->end = start;
			nmaps++;
			return;
		}
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->start = end;
			i++;
		} else {
			memmove(&maps[i], &maps[i + 1],
				(nmaps - i - 1) * sizeof(*maps));
			nmaps--;
		}
	}
}

void rec_map_add(uintptr_t start, uintptr_t end, uint32_t bucket)
{
	size_t i;

	rec_lock_take(&maps_lock);
	/* MAP_FIXED over an old mapping replaces it. */
	maps_cut(start, end);
	if (maps_room(nmaps + 1)) {
		for (i = nmaps; i > 0 && maps[i - 1].start > start; i--)
			maps[i] = maps[i - 1];
		maps[i].start = start;
		maps[i].end = end;
		maps[i].bucket = bucket;
		nmaps++;
	}
	rec_lock_give(&maps_lock);
}

void rec_map_del(uintptr_t start, uintptr_t end)
{
	rec_lock_take(&maps_lock);
	maps_cut(start, end);
	rec_lock_give(&maps_lock);
}

bool rec_map_bucket_at(uintptr_t addr, uint32_t *bucket)
{
	size_t lo;
	bool found = false;

	rec_lock_take(&maps_lock);
	lo = PARTITION_POINT(nmaps, i, maps[i].end <= addr);
	if (lo < nmaps && maps[lo].start <= addr) {
		*bucket = maps[lo].bucket;
		found = true;
	}
	rec_lock_give(&maps_lock);
	return found;
}

size_t rec_map_snapshot(struct rec_map **out)
{
	struct rec_buf *const b = &maps_copy;
	size_t n;

	rec_buf_free(b);
	rec_lock_take(&maps_lock);
	rec_buf_add(b, maps, nmaps * sizeof(*maps));
	n = nmaps;
	rec_lock_give(&maps_lock);
	*out = (struct rec_map *)b->p;
	return b->len / sizeof(struct rec_map) < n
		       ? b->len / sizeof(struct rec_map)
		       : n;
}

size_t rec_table_room(void)
{
	size_t nl, nm;

	/*
	 * Each copy is made over under its table's lock, as the snapshot
	 * fills it: the memory a copy lets go of may come back as a table's
	 * (ThreadSanitizer sees the order through the lock).
	 */
	rec_lock_take(&large_lock);
	nl = large_live;
	rec_buf_free(&large_copy);
	rec_buf_room(&large_copy, (nl + nl / 4 + 64) * sizeof(struct rec_large));
	rec_lock_give(&large_lock);
	rec_lock_take(&maps_lock);
	nm = nmaps;
	rec_buf_free(&maps_copy);
	rec_buf_room(&maps_copy, (nm + nm / 4 + 64) * sizeof(struct rec_map));
	rec_lock_give(&maps_lock);
	return nl + nm;
}

/* ---- glibc's arena heaps ---- */

#define ARENAS_MAX 1024

/* Addresses noted once each, at most ARENAS_MAX; read without a lock
 * (an entry is written before the count that shows it). */
struct addr_set {
	uintptr_t v[ARENAS_MAX];
	atomic_size_t n;
	rec_lock lock;
};

static struct addr_set arenas = { .lock = REC_LOCK_INIT };
static struct addr_set main_exts = { .lock = REC_LOCK_INIT };

static bool has(const struct addr_set *s, size_t n, uintptr_t a)
{
	for (size_t i = 0; i < n; i++)
		if (s->v[i] == a)
			return true;
	return false;
}

static void note(struct addr_set *s, uintptr_t a)
{
	size_t n;

	if (has(s, atomic_load(&s->n), a))
		return;
	rec_lock_take(&s->lock);
	n = atomic_load(&s->n);
	if (!has(s, n, a) && n < ARENAS_MAX) {
		s->v[n] = a;
		atomic_store(&s->n, n + 1);
	}
	rec_lock_give(&s->lock);
}

void rec_arena_note(uintptr_t base)
{
	note(&arenas, base);
}

size_t rec_arena_snapshot(uintptr_t **out)
{
	*out = arenas.v;
	return atomic_load(&arenas.n);
}

void rec_main_ext_note(uintptr_t addr)
{
	note(&main_exts, addr);
}

size_t rec_main_ext_snapshot(uintptr_t **out)
{
	*out = main_exts.v;
	return atomic_load(&main_exts.n);
}

/* Around fork(): every table lock, in the order the tables take them. */
void rec_table_locks(bool take)
{
	rec_lock *all[] = { &insert_lock, &large_lock, &maps_lock,
			    &arenas.lock, &main_exts.lock };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (take)
			rec_lock_take(all[i]);
		else
			rec_lock_give(all[sizeof(all) / sizeof(all[0]) - 1 - i]);
	}
}

bool rec_table_locks_free(void)
{
	return rec_lock_free(&insert_lock) && rec_lock_free(&large_lock) &&
	       rec_lock_free(&maps_lock) && rec_lock_free(&arenas.lock) &&
	       rec_lock_free(&main_exts.lock);
}
