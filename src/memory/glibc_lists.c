/*
 * glibc's free lists, walked to tell each free chunk's list: every
 * arena's fastbins (singly linked, safe-linking mangled: stored = (the
 * link's address >> 12) ^ pointer), its unsorted, small and large bins
 * (doubly linked, walked backwards as mallinfo does, each fd checked),
 * and the tcaches, each a thread's tcache_perthread_struct: an in-use
 * chunk of size 0x290 whose counts and mangled entries agree, whose
 * entries are chunks of their bin's size carrying the same key, a word
 * found in libc's data too (tcache_key).  Each step must be a chunk the
 * walk by size found, in the right arena, state and size; a list is
 * followed only as far as that holds, and the state each step sets is
 * what stops a cycle.
 */
#include "glibc_walk.h"

#include <inttypes.h>
#include <stdio.h>

#include "procimage.h"
#include "search.h"

#define MIN_LARGE_SIZE 1024

/* The block whose chunk is at C, or NULL. */
static struct heap_block *find_block(const struct heap *h, uint64_t c)
{
	size_t i = PARTITION_POINT(h->nblocks, k, h->blocks[k].chunk < c);

	return i < h->nblocks && h->blocks[i].chunk == c ? &h->blocks[i]
							 : NULL;
}

/*
 * Is B, taken for in use, the last chunk before a corrupt header, which
 * would have said whether it is free?  Then a bin may well hold it.
 */
static bool unsettled(const struct walk *w, const struct heap_block *b,
		      enum heap_state want)
{
	if (want != HEAP_UNLISTED || b->state != HEAP_IN_USE)
		return false;
	for (size_t i = 0; i < w->nunknown; i++)
		if (w->unknown[i].start == b->chunk + b->size)
			return true;
	return false;
}

/*
 * The chunk at C as the next entry of list LIST (for messages) of arena
 * K (or any arena, for a tcache, K < 0), expected in state WANT and of
 * size SIZE (0: any).  NULL when it is not one (said, unless C lies in
 * what the walk could not reach).
 */
static struct heap_block *list_entry(struct walk *w, const char *list, int k,
				     uint64_t c, enum heap_state want,
				     uint64_t size, enum heap_state mark)
{
	struct heap_block *b = find_block(w->h, c);
	const char *why = NULL;

	if (!b && walk_in_unknown(w, c))
		return NULL;
	if (!b || b->arena == HEAP_MMAPPED_ARENA ||
	    (k >= 0 && b->arena != (unsigned)k))
		why = "is not a chunk of the arena";
	else if (b->state == mark)
		why = "is in it twice: the list has a cycle";
	else if (b->state != want && !unsettled(w, b, want))
		why = "is not free";
	else if (size && b->size != size)
		why = "has the wrong size";
	if (!why)
		return b;
	walk_problem(w, k, c,
		     "%s: chunk 0x%" PRIx64 " %s; the rest of the list "
		     "is not walked",
		     list, c, why);
	return NULL;
}

static void walk_fastbins(struct walk *w, unsigned k, const uint8_t *ms)
{
	for (unsigned i = 0; i < NFASTBINS; i++) {
		uint64_t p = get64(ms, MS_FASTBINS + 8 * i), stored;
		char list[64];

		snprintf(list, sizeof(list), "arena %u: fastbin %u", k, i);
		while (p) {
			struct heap_block *b = list_entry(
				w, list, (int)k, p, HEAP_IN_USE,
				MINSIZE + 16 * i, HEAP_FASTBIN);

			if (!b)
				break;
			b->state = HEAP_FASTBIN;
			if (!walk_word(w, p + CHUNK_HDR, &stored)) {
				walk_problem(w, (int)k, p,
					     "%s: cannot read 0x%" PRIx64, list,
					     p + CHUNK_HDR);
				break;
			}
			p = stored ^ ((p + CHUNK_HDR) >> 12);
		}
	}
}

/* glibc's bin_index(): which bin holds free chunks of SIZE. */
static unsigned bin_index(uint64_t size)
{
	if (size < MIN_LARGE_SIZE)
		return (unsigned)(size >> 4);
	if ((size >> 6) <= 48)
		return 48 + (unsigned)(size >> 6);
	if ((size >> 9) <= 20)
		return 91 + (unsigned)(size >> 9);
	if ((size >> 12) <= 10)
		return 110 + (unsigned)(size >> 12);
	if ((size >> 15) <= 4)
		return 119 + (unsigned)(size >> 15);
	if ((size >> 18) <= 2)
		return 124 + (unsigned)(size >> 18);
	return 126;
}

/* Bin I (1: unsorted) of arena K at A, walked backwards as mallinfo
 * does, each chunk's fd checked against where the walk came from. */
static void walk_bin(struct walk *w, unsigned k, uint64_t a, unsigned i,
		     const uint8_t *ms)
{
	uint64_t head = a + MS_BINS - CHUNK_HDR + 16 * (i - 1);
	uint64_t p = get64(ms, MS_BINS + 16 * (i - 1) + 8), from = head;
	enum heap_state st = i == 1 ? HEAP_UNSORTED : HEAP_BIN;
	char list[64];

	snprintf(list, sizeof(list), "arena %u: bin %u", k, i);
	while (p != head) {
		struct heap_block *b = list_entry(w, list, (int)k, p,
						  HEAP_UNLISTED, 0, st);
		uint64_t links[2];

		if (!b)
			return;
		if (i > 1 && bin_index(b->size) != i) {
			walk_problem(w, (int)k, p,
				     "%s: chunk 0x%" PRIx64 " of size "
				     "0x%" PRIx64 " belongs in bin %u",
				     list, p, (uint64_t)b->size,
				     bin_index(b->size));
			return;
		}
		if (!walk_read(w, p + CHUNK_HDR, links, sizeof(links)) ||
		    links[0] != from) {
			walk_problem(w, (int)k, p,
				     "%s: chunk 0x%" PRIx64 ": its fd "
				     "does not point back to 0x%" PRIx64,
				     list, p, from);
			return;
		}
		b->state = st;
		from = p;
		p = links[1];
	}
}

void glibc_lists_walk(struct walk *w)
{
	struct heap *h = w->h;
	uint8_t ms[MS_SIZE];

	for (unsigned k = 0; k < h->narenas; k++) {
		if (!procimage_read_all(w->img, h->arenas[k].addr, ms,
					sizeof(ms)))
			continue;
		walk_fastbins(w, k, ms);
		for (unsigned i = 1; i < NBINS; i++)
			walk_bin(w, k, h->arenas[k].addr, i, ms);
	}
}

/* --- Tcaches -------------------------------------------------------- */

struct tcache {
	uint64_t addr; /* the struct (user pointer) */
	uint16_t counts[TCACHE_MAX_BINS];
	uint64_t entries[TCACHE_MAX_BINS];
};

/* The key of the tcache entry at E (its second word), or 0. */
static uint64_t entry_key(struct walk *w, uint64_t e)
{
	uint64_t key;

	return walk_word(w, e + 8, &key) ? key : 0;
}

/*
 * Do T's counts and entries agree, each list head a chunk of its bin's
 * size, in use, carrying the key?  An empty one counts only where glibc
 * puts a thread's first: its arena's first chunk (FIRST).
 */
static bool tcache_shape(struct walk *w, const struct tcache *t, bool first)
{
	const struct heap_params *mp = &w->h->mp;
	uint64_t max_count = mp->found ? mp->tcache_count : UINT16_MAX;
	uint64_t bins = mp->found ? mp->tcache_bins : TCACHE_MAX_BINS;
	bool any = false;

	for (unsigned i = 0; i < TCACHE_MAX_BINS; i++) {
		struct heap_block *b;
		uint64_t e = t->entries[i], key;

		if ((t->counts[i] == 0) != (e == 0) ||
		    t->counts[i] > max_count || (i >= bins && e) || e & 15)
			return false;
		if (!e)
			continue;
		b = find_block(w->h, e - CHUNK_HDR);
		if (!b || b->arena == HEAP_MMAPPED_ARENA ||
		    b->state != HEAP_IN_USE || b->size != MINSIZE + 16 * i)
			return false;
		key = entry_key(w, e);
		if (!w->h->tcache_key && key && walk_in_libc(w, key))
			w->h->tcache_key = key;
		if (!key || key != w->h->tcache_key)
			return false;
		any = true;
	}
	return any || first;
}

/* Mark the chunks of T's lists, stopping a list where it goes wrong. */
static void walk_tcache(struct walk *w, const struct tcache *t)
{
	for (unsigned i = 0; i < TCACHE_MAX_BINS; i++) {
		uint64_t e = t->entries[i], link[2];
		char list[80];
		unsigned n;

		snprintf(list, sizeof(list), "tcache 0x%" PRIx64 ": bin %u",
			 t->addr, i);
		for (n = 0; n < t->counts[i] && e; n++) {
			struct heap_block *b = list_entry(
				w, list, -1, e - CHUNK_HDR, HEAP_IN_USE,
				MINSIZE + 16 * i, HEAP_TCACHE);

			if (!b)
				break;
			if (!walk_read(w, e, link, sizeof(link)) ||
			    link[1] != w->h->tcache_key) {
				walk_problem(w, (int)b->arena, e,
					     "%s: chunk 0x%" PRIx64
					     " does not carry the tcache key "
					     "(written to after free?)",
					     list, e - CHUNK_HDR);
				break;
			}
			b->state = HEAP_TCACHE;
			e = link[0] ^ (e >> 12);
		}
		if (n == t->counts[i] && e)
			walk_problem(w, -1, t->addr,
				     "%s: longer than its count, %u", list,
				     t->counts[i]);
		else if (n < t->counts[i] && !e)
			walk_problem(w, -1, t->addr,
				     "%s: %u chunks for a count of "
				     "%u",
				     list, n, t->counts[i]);
	}
}

static bool is_first_chunk(const struct walk *w, const struct heap_block *b)
{
	return b->arena < w->h->narenas &&
	       w->first_chunks[b->arena] == b->chunk;
}

void glibc_lists_tcaches(struct walk *w)
{
	struct heap *h = w->h;
	size_t alloc = 0;

	for (size_t i = 0; i < h->nblocks; i++) {
		const struct heap_block *b = &h->blocks[i];
		uint8_t raw[TCACHE_STRUCT_SIZE];
		struct tcache t;

		if (b->arena == HEAP_MMAPPED_ARENA || b->state != HEAP_IN_USE ||
		    b->size != TCACHE_STRUCT_CHUNK)
			continue;
		t.addr = b->chunk + CHUNK_HDR;
		if (!walk_read(w, t.addr, raw, sizeof(raw)))
			continue;
		memcpy(t.counts, raw, sizeof(t.counts));
		memcpy(t.entries, raw + sizeof(t.counts), sizeof(t.entries));
		if (!tcache_shape(w, &t, is_first_chunk(w, b)))
			continue;
		GROW(h->tcaches, h->ntcaches + 1, alloc);
		h->tcaches[h->ntcaches++] = t.addr;
		walk_tcache(w, &t);
	}
}
