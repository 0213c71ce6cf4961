/*
 * The recorder's counters: allocations, frees and live bytes per bucket.
 *
 * Every thread counts in pages of its own (512 buckets each, by id, made
 * when the thread first counts one of them), with plain stores: no locked
 * instruction and no cache line bouncing between cores in the hooks, and
 * memory for what each thread touches only.  A dump adds up all threads' arrays.  A block freed
 * by another thread than the one that allocated it counts there as a
 * negative live size; the sums are right all the same.  When a thread
 * ends its counters go to a pool that the next new thread takes over, so
 * their number follows the most threads alive at once, not how many ever
 * were.
 */
#include "rec.h"

#include <pthread.h>
#include <string.h>

#define PAGE_CELLS 512

struct page {
	struct rec_cell v[PAGE_CELLS];
};

/* A thread's pages, by id / PAGE_CELLS (NULL: none yet). */
struct pages {
	uint32_t n;
	_Atomic(struct page *) p[];
};

/* Totals not yet in rec_allocated and rec_inuse. */
struct pending {
	int64_t alloc, inuse;
};

struct counters {
	struct rec_pooled pooled; /* (first) */
	_Atomic(struct pages *) pages;
	int64_t headers;          /* header bytes live (a thread's part) */
	struct pending pending;
	void *scratch;            /* rec_count_scratch's */
};

atomic_uint_fast64_t rec_allocated;
atomic_int_fast64_t rec_inuse;

static struct rec_pool pool = { REC_LOCK_INIT, NULL, NULL };
static pthread_key_t key;
static bool have_key;
static __thread struct counters *mine;

/* Plain loads and stores that a dump may read from another thread. */
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ADD(x, d) __atomic_store_n(&(x), GET(x) + (d), __ATOMIC_RELAXED)

/* Pending totals into the global ones. */
static void flush(struct pending *p)
{
	atomic_fetch_add_explicit(&rec_allocated, (uint64_t)p->alloc,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&rec_inuse, p->inuse, memory_order_relaxed);
	p->alloc = p->inuse = 0;
}

static void retire(void *arg)
{
	struct counters *c = arg;

	/* The thread's pending totals first, then the counters to the pool. */
	flush(&c->pending);
	if (mine == c)
		mine = NULL;
	rec_pool_put(&pool, c);
}

void rec_count_init(void)
{
	have_key = pthread_key_create(&key, retire) == 0;
}

static struct counters *get(void)
{
	struct counters *c = mine;

	if (__builtin_expect(c != NULL, 1))
		return c;
	c = rec_pool_get(&pool, sizeof(*c));
	if (!c)
		return NULL;
	mine = c;
	if (have_key) {
		rec_busy++; /* (it may allocate) */
		pthread_setspecific(key, c);
		rec_busy--;
	}
	return c;
}

/* The cell of bucket ID in C, its page made now. */
static __attribute__((noinline)) struct rec_cell *new_cell(struct counters *c,
							uint32_t id)
{
	struct pages *a = atomic_load_explicit(&c->pages, memory_order_relaxed);
	uint32_t pi = id / PAGE_CELLS;
	struct page *pg;

	if (!a || pi >= a->n) {
		/* A longer table of pages; the old one stays (a dump may be
		 * reading it), and it is small. */
		uint32_t n = a ? a->n : 16;
		struct pages *b;

		while (n <= pi)
			n *= 2;
		b = rec_alloc(sizeof(*b) + (size_t)n * sizeof(b->p[0]));
		if (!b)
			return NULL;
		b->n = n;
		for (uint32_t i = 0; a && i < a->n; i++)
			atomic_store_explicit(&b->p[i], atomic_load(&a->p[i]),
					      memory_order_relaxed);
		atomic_store_explicit(&c->pages, b, memory_order_release);
		a = b;
	}
	pg = atomic_load_explicit(&a->p[pi], memory_order_relaxed);
	if (!pg) {
		pg = rec_alloc_line(sizeof(*pg));
		if (!pg)
			return NULL;
		atomic_store_explicit(&a->p[pi], pg, memory_order_release);
	}
	return &pg->v[id % PAGE_CELLS];
}

/* The cell of bucket ID in this thread's counters (NULL: no memory).
 * The hooks' path, inline: three loads when the page is there. */
static inline struct rec_cell *cell(uint32_t id)
{
	struct counters *c = mine;
	struct pages *a;
	struct page *pg;
	uint32_t pi = id / PAGE_CELLS;

	if (__builtin_expect(c != NULL, 1)) {
		a = atomic_load_explicit(&c->pages, memory_order_relaxed);
		if (__builtin_expect(a && pi < a->n, 1)) {
			pg = atomic_load_explicit(&a->p[pi],
						  memory_order_relaxed);
			if (__builtin_expect(pg != NULL, 1))
				return &pg->v[id % PAGE_CELLS];
		}
	} else {
		c = get();
		if (!c)
			return NULL;
	}
	return new_cell(c, id);
}

void *rec_count_scratch(size_t size)
{
	struct counters *c = get();

	if (c && !c->scratch)
		c->scratch = rec_alloc(size);
	return c ? c->scratch : NULL;
}

/* Totals the dump thread's triggers look at, a batch at a time. */
#define BATCH (256 * 1024)

struct rec_cell *rec_count_cell(uint32_t id)
{
	return cell(id);
}

/* A block of SIZE bytes counted in K, its totals pending in P. */
static inline void counted(struct rec_cell *k, struct pending *p,
			   uint64_t size)
{
	ADD(k->allocs, 1);
	ADD(k->live, (int64_t)size);
	p->alloc += (int64_t)size;
	p->inuse += (int64_t)size;
	if (p->alloc >= BATCH)
		flush(p);
}

static inline void uncounted(struct rec_cell *k, struct pending *p,
			     uint64_t size)
{
	ADD(k->frees, 1);
	ADD(k->live, -(int64_t)size);
	p->inuse -= (int64_t)size;
	if (p->inuse <= -BATCH)
		flush(p);
}

void rec_count_alloc_cell(struct rec_cell *k, uint64_t size, uint64_t header)
{
	ADD(mine->headers, (int64_t)header);
	counted(k, &mine->pending, size);
}

/* (Inlined into the hooks, across files: they count every block.) */
__attribute__((always_inline)) inline void
rec_count_alloc(uint32_t id, uint64_t size, uint64_t header)
{
	struct rec_cell *k = cell(id);

	if (k)
		rec_count_alloc_cell(k, size, header);
}

__attribute__((always_inline)) inline void
rec_count_free(uint32_t id, uint64_t size, uint64_t header)
{
	struct rec_cell *k = cell(id);

	if (!k)
		return;
	ADD(mine->headers, -(int64_t)header);
	uncounted(k, &mine->pending, size);
}

/*
 * pymalloc's objects: the GIL orders every call of the hooks, so that a
 * block is counted in the cell of the thread that made it, whichever
 * thread frees it (its header says which cell), with pending totals of
 * their own.
 */
static struct pending gil;

__attribute__((always_inline)) inline void
rec_count_gil_alloc(struct rec_cell *k, uint64_t size)
{
	counted(k, &gil, size);
}

void rec_count_gil_free(struct rec_cell *k, uint64_t size)
{
	uncounted(k, &gil, size);
}

uint64_t rec_count_allocated(void)
{
	uint64_t n = atomic_load_explicit(&rec_allocated, memory_order_relaxed);

	return mine ? n + (uint64_t)mine->pending.alloc : n;
}

int64_t rec_count_sum(uint32_t nb, struct rec_totals *out)
{
	int64_t headers = 0;
	struct counters *c;

	memset(out, 0, (size_t)nb * sizeof(*out));
	rec_lock_take(&pool.lock);
	c = (struct counters *)pool.all;
	rec_lock_give(&pool.lock);
	/* (The list only grows at its head: what is behind C stays.) */
	for (; c; c = (struct counters *)c->pooled.next) {
		struct pages *a = atomic_load_explicit(&c->pages,
						       memory_order_acquire);

		headers += GET(c->headers);
		for (uint32_t pi = 0; a && pi < a->n; pi++) {
			struct page *pg = atomic_load_explicit(
				&a->p[pi], memory_order_acquire);
			uint32_t base = pi * PAGE_CELLS;

			for (uint32_t k = 0; pg && k < PAGE_CELLS &&
					     base + k < nb;
			     k++) {
				out[base + k].allocs += GET(pg->v[k].allocs);
				out[base + k].frees += GET(pg->v[k].frees);
				out[base + k].live += GET(pg->v[k].live);
			}
		}
	}
	return headers;
}

void rec_count_locks(bool take)
{
	rec_pool_lock(&pool, take);
}

void rec_count_after_fork(void)
{
	/* Only this thread lives on: the others' counters are pooled, with
	 * what they had not yet told. */
	for (struct rec_pooled *it = pool.all; it; it = it->next)
		if (it != &mine->pooled)
			flush(&((struct counters *)it)->pending);
	rec_pool_after_fork(&pool, mine);
}

bool rec_count_locks_free(void)
{
	return rec_lock_free(&pool.lock);
}
