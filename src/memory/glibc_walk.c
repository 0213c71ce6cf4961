/*
 * What the parts of a glibc heap walk share: reading scattered words
 * through a page cache, libc's data, the regions to walk, and saying what
 * is wrong where.
 */
#include "glibc_walk.h"

#include <stdarg.h>

#include "procimage.h"

#define MAX_PROBLEMS 1000

void walk_problem(struct walk *w, int arena, uint64_t addr, const char *fmt,
		  ...)
{
	struct heap *h = w->h;
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (arena >= 0 && (size_t)arena < h->narenas)
		h->arenas[arena].corrupt = true;
	if (h->nproblems >= MAX_PROBLEMS)
		return;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	GROW(h->problems, h->nproblems + 1, h->problems_alloc);
	memset(&h->problems[h->nproblems], 0, sizeof(*h->problems));
	fault_set(&h->problems[h->nproblems].f,
		  &(struct where){ .path = w->img->name, .has_addr = true,
				   .addr = addr },
		  "%s", sb.buf);
	h->problems[h->nproblems++].arena = arena;
	sb_release(&sb);
}

bool walk_read(struct walk *w, uint64_t addr, void *out, size_t len)
{
	uint8_t *o = out;

	while (len) {
		uint64_t page = addr & ~(uint64_t)(PAGE - 1);
		size_t slot = (size_t)(page / PAGE) % CACHE_PAGES;
		size_t off = (size_t)(addr - page);
		size_t n = len < PAGE - off ? len : PAGE - off;
		uint8_t *data = w->cache + slot * PAGE;

		if (w->cache_tag[slot] != page + 1) {
			if (!procimage_read_all(w->img, page, data, PAGE))
				return false;
			w->cache_tag[slot] = page + 1;
		}
		memcpy(o, data + off, n);
		o += n;
		addr += n;
		len -= n;
	}
	return true;
}

bool walk_word(struct walk *w, uint64_t addr, uint64_t *v)
{
	return walk_read(w, addr, v, sizeof(*v));
}

bool walk_in_libc(const struct walk *w, uint64_t word)
{
	for (size_t k = 0; k < w->nlibc; k++)
		for (size_t off = 0; off + 8 <= w->libc[k].len; off += 8)
			if (get64(w->libc[k].data, off) == word)
				return true;
	return false;
}

void walk_add_region(struct walk *w, const struct region *r)
{
	GROW(w->regions, w->nregions + 1, w->regions_alloc);
	w->regions[w->nregions++] = *r;
}

bool walk_in_unknown(const struct walk *w, uint64_t addr)
{
	for (size_t i = 0; i < w->nunknown; i++)
		if (in_span(&w->unknown[i], addr))
			return true;
	return false;
}

