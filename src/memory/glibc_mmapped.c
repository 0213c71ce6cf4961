/*
 * glibc's mmapped chunks (requests over mp_.mmap_threshold), each a
 * mapping of its own, found in the anonymous rw-p mappings outside the
 * arenas' heaps: a chunk begins at its mapping's start with prev_size 0,
 * flags exactly IS_MMAPPED and a size of whole pages that fits.  The
 * kernel merges adjacent mappings, so where one chunk ends another may
 * begin; and when what is found differs from glibc's own count (mp_'s
 * n_mmaps and mmapped_mem), a chunk mapped right after some other memory
 * is looked for at every page of what is left, until the counts agree.
 * An aligned block over the threshold (memalign) is seen at its mapping's
 * start, where glibc's first header of it still is.
 */
#include "glibc_walk.h"

#include <stdlib.h>

#include "procimage.h"

#define SEARCH_BATCH 512

/* The size of the mmapped chunk of header HDR at POS, starting its
 * mapping and fitting before END, or 0. */
static uint64_t mmapped_size(const uint64_t hdr[2], uint64_t pos,
			     uint64_t end)
{
	uint64_t size = hdr[1] & ~(uint64_t)SIZE_FLAGS;

	if (hdr[0] != 0 || (hdr[1] & SIZE_FLAGS) != IS_MMAPPED ||
	    size < PAGE || size % PAGE || size > end - pos)
		return 0;
	return size;
}

static uint64_t mmapped_at(struct walk *w, uint64_t pos, uint64_t end)
{
	uint64_t hdr[2];

	if (!procimage_read_all(w->img, pos, hdr, sizeof(hdr)))
		return 0;
	return mmapped_size(hdr, pos, end);
}

static void add_mmapped(struct walk *w, uint64_t pos, uint64_t size)
{
	struct region r = { pos, pos + size, pos, 0, HEAP_MMAPPED_ARENA };

	walk_add_region(w, &r);
	w->h->mmapped_count++;
	w->h->mmapped_bytes += size;
}

static int cmp_span(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* What the arenas hold or reserve: [heap], and each thread heap's whole
 * HEAP_MAX_SIZE, sorted. */
static struct span *arena_spans(const struct walk *w, size_t *n)
{
	struct span *v = xcalloc(w->nregions + 1, sizeof(*v));

	*n = 0;
	if (w->heap_vma.end)
		v[(*n)++] = w->heap_vma;
	for (size_t i = 0; i < w->nregions; i++) {
		uint64_t lo = w->regions[i].start & ~(w->heap_max - 1);

		if (w->regions[i].arena != 0) {
			v[*n].start = lo;
			v[(*n)++].end = lo + w->heap_max;
		}
	}
	qsort(v, *n, sizeof(*v), cmp_span);
	return v;
}

/*
 * Chunks from POS on, each where the last ended, until END or something
 * else; what is left goes to REST.
 */
static void mmapped_run(struct walk *w, uint64_t pos, uint64_t end,
			struct span **rest, size_t *nrest, size_t *alloc)
{
	uint64_t size;

	while (pos < end && (size = mmapped_at(w, pos, end))) {
		add_mmapped(w, pos, size);
		pos += size;
	}
	if (pos < end) {
		GROW(*rest, *nrest + 1, *alloc);
		(*rest)[*nrest].start = pos;
		(*rest)[(*nrest)++].end = end;
	}
}

/* Are the mmapped chunks found all those glibc counts? */
bool glibc_mmapped_complete(const struct walk *w)
{
	const struct heap *h = w->h;

	return h->mp.found && h->mmapped_count == h->mp.n_mmaps &&
	       h->mmapped_bytes == h->mp.mmapped_mem;
}

/*
 * mmapped chunks at any page of [POS, END), until glibc's count is met:
 * the first 16 bytes of each page, read a batch at a time (and, in a
 * live process, only of pages present: those never touched or swapped
 * out hold no chunk header, which glibc writes and keeps).
 */
static void search_pages(struct walk *w, uint64_t pos, uint64_t end)
{
	uint64_t addrs[SEARCH_BATCH], hdrs[SEARCH_BATCH][2];
	bool ok[SEARCH_BATCH];

	while (pos < end && !glibc_mmapped_complete(w)) {
		size_t n = 0;

		for (; n < SEARCH_BATCH && pos + n * PAGE < end; n++)
			addrs[n] = pos + n * PAGE;
		procimage_gather(w->img, addrs, n, CHUNK_HDR,
				 (uint8_t *)hdrs, ok);
		pos += n * PAGE;
		for (size_t i = 0; i < n; i++) {
			uint64_t size = ok[i] ? mmapped_size(hdrs[i], addrs[i],
							     end)
					      : 0;

			if (!size)
				continue;
			add_mmapped(w, addrs[i], size);
			pos = addrs[i] + size;
			break;
		}
	}
}

/*
 * mmapped chunks in the anonymous rw-p mappings, outside the arenas:
 * at the start of each stretch and where each chunk ends; then, unless
 * that is all glibc counts, at every page of what is left.
 */
void glibc_mmapped_find(struct walk *w)
{
	const struct maps *m = &w->img->maps;
	struct span *rest = NULL, *arenas;
	size_t nrest = 0, alloc = 0, narenas, k = 0;

	arenas = arena_spans(w, &narenas);
	for (size_t i = 0; i < m->n; i++) {
		const struct vma *v = &m->v[i];
		uint64_t pos = v->start;

		if (v->name[0] || strcmp(v->perms, "rw-p"))
			continue;
		while (k < narenas && arenas[k].end <= pos)
			k++;
		for (size_t j = k; j < narenas && arenas[j].start < v->end;
		     j++) {
			if (arenas[j].start > pos)
				mmapped_run(w, pos, arenas[j].start, &rest,
					    &nrest, &alloc);
			if (arenas[j].end > pos)
				pos = arenas[j].end;
		}
		if (pos < v->end)
			mmapped_run(w, pos, v->end, &rest, &nrest, &alloc);
	}
	for (size_t i = 0; i < nrest && w->h->mp.found &&
			   !glibc_mmapped_complete(w); i++)
		search_pages(w, rest[i].start + PAGE, rest[i].end);
	free(rest);
	free(arenas);
}
