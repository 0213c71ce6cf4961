/*
 * A walked heap, whatever allocator's: released, summed up; and the
 * walkers' table.  A new allocator's walker is a file of its own, which
 * defines its struct walker, and a row here.
 */
#include "heap.h"

#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "pymalloc.h"

/* The allocators' walkers, tried in order. */
extern const struct walker walker_glibc;
static const struct walker *const walkers[] = {
	&walker_glibc,
};

int heap_walk(struct heap *h, struct procimage *img)
{
	struct fault why = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(walkers); i++) {
		if (walkers[i]->walk(h, img) == 0) {
			fault_release(&why);
			/* (Its arenas are carved from mmaps, its table from
			 * glibc's heap.) */
			h->py = pymalloc_walk(img, h);
			return 0;
		}
		/* (The first walker's words say why, if none finds one.) */
		if (!why.what) {
			why = h->why;
			memset(&h->why, 0, sizeof(h->why));
		}
		if (i + 1 < ARRAY_SIZE(walkers))
			heap_release(h);
	}
	fault_release(&h->why);
	h->why = why;
	{
		const char *from = NULL, *name = heap_allocator(img, &from);

		if (name) {
			/* Said for what it is: another malloc. */
			free(h->why.what);
			h->why.what = xasprintf(
				"%s: malloc is %s's (%s), whose heap dmprof "
				"does not walk (glibc's only)",
				img->name, name, from);
			h->allocator = name;
		}
	}
	return -1;
}

/* Other allocators, by a library's name or a symbol only they export. */
static const struct {
	const char *name, *lib, *symbol;
} others[] = {
	{ "jemalloc", "libjemalloc.so", "mallctl" },
	{ "tcmalloc", "libtcmalloc", "tc_malloc" },
	{ "mimalloc", "libmimalloc.so", "mi_malloc" },
};

const char *heap_allocator(const struct procimage *img, const char **from)
{
	const struct maps *m = &img->maps;
	const char *exe = NULL;

	for (size_t i = 0; i < m->n; i++) {
		const char *path = m->v[i].name, *base = strrchr(path, '/');

		if (!base)
			continue;
		if (!exe)
			exe = path; /* (mapped first: the executable) */
		for (size_t k = 0; k < ARRAY_SIZE(others); k++) {
			if (!strncmp(base + 1, others[k].lib,
				     strlen(others[k].lib))) {
				*from = path;
				return others[k].name;
			}
		}
	}
	/* Linked in: its symbols in the executable's (a static redis). */
	for (size_t k = 0; exe && k < ARRAY_SIZE(others); k++) {
		if (elf_exports(exe, others[k].symbol) == 1) {
			*from = exe;
			return others[k].name;
		}
	}
	return NULL;
}

void heap_release(struct heap *h)
{
	for (size_t i = 0; i < h->nproblems; i++)
		fault_release(&h->problems[i].f);
	free(h->problems);
	free(h->blocks);
	free(h->extents);
	fault_release(&h->why);
	free(h->arenas);
	free(h->tcaches);
	pymalloc_free(h->py);
	memset(h, 0, sizeof(*h));
}

bool heap_locked(const struct heap *h)
{
	for (size_t k = 0; k < h->narenas; k++)
		if (h->arenas[k].locked)
			return true;
	return false;
}

void heap_summarize(const struct heap *h, struct heap_summary *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t k = 0; k < h->narenas; k++) {
		const struct heap_tally *t = &h->arenas[k].t;

		for (int s = 0; s < HEAP_NSTATES; s++)
			heap_tally_add(&out->t, s, t->count[s], t->bytes[s]);
		out->t.overhead += t->overhead;
		out->t.unknown += t->unknown;
		out->system_mem += h->arenas[k].system_mem;
	}
	out->main_top = h->narenas ? h->arenas[0].t.bytes[HEAP_TOP] : 0;
	out->mmapped_count = h->mmapped_count;
	out->mmapped_bytes = h->mmapped_bytes;
	out->narenas = h->narenas;
	out->ntcaches = h->ntcaches;
	out->nproblems = h->nproblems;
}
