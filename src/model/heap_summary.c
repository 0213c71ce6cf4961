/*
 * A malloc heap's summary: the names of the chunks' states, mallinfo2()'s
 * arithmetic over them (glibc 2.36's malloc.c, int_mallinfo), and the one
 * JSON form of it all, so that `heap` and `top` say the same numbers the
 * same way.
 */
#include "heap_summary.h"

#include <string.h>

#include "util.h"

static const char *const state_names[HEAP_NSTATES] = {
	"in-use", "tcache", "fastbin", "unsorted", "bin", "top", "unlisted",
};

const char *heap_state_name(enum heap_state state)
{
	return (unsigned)state < HEAP_NSTATES ? state_names[state] : "?";
}

int heap_state_lookup(const char *name, size_t len)
{
	for (int s = 0; s < HEAP_NSTATES; s++)
		if (strlen(state_names[s]) == len &&
		    !memcmp(state_names[s], name, len))
			return s;
	return -1;
}

void heap_tally_add(struct heap_tally *t, enum heap_state state,
		    uint64_t count, uint64_t bytes)
{
	t->count[state] += count;
	t->bytes[state] += bytes;
}

/*
 * glibc counts a free chunk of each bin and the top of each arena in
 * ordblks, the fastbins apart; what is not free of the system memory is
 * in use to it, tcache chunks and its own headers included.
 */
void heap_summary_mallinfo(const struct heap_summary *s,
			   struct heap_mallinfo *m)
{
	const struct heap_tally *t = &s->t;

	memset(m, 0, sizeof(*m));
	m->arena = s->system_mem;
	m->ordblks = s->narenas + t->count[HEAP_UNSORTED] + t->count[HEAP_BIN];
	m->smblks = t->count[HEAP_FASTBIN];
	m->fsmblks = t->bytes[HEAP_FASTBIN];
	m->hblks = s->mmapped_count;
	m->hblkhd = s->mmapped_bytes;
	m->fordblks = t->bytes[HEAP_TOP] + t->bytes[HEAP_UNSORTED] +
		      t->bytes[HEAP_BIN] + t->bytes[HEAP_FASTBIN];
	m->uordblks = s->system_mem - m->fordblks;
	m->keepcost = s->main_top;
}

static void json_mallinfo(struct json_writer *w, const struct heap_summary *s)
{
	struct heap_mallinfo m;

	heap_summary_mallinfo(s, &m);
	json_key(w, "mallinfo2");
	json_object(w);
	json_member_uint(w, "arena", m.arena);
	json_member_uint(w, "ordblks", m.ordblks);
	json_member_uint(w, "smblks", m.smblks);
	json_member_uint(w, "hblks", m.hblks);
	json_member_uint(w, "hblkhd", m.hblkhd);
	json_member_uint(w, "usmblks", m.usmblks);
	json_member_uint(w, "fsmblks", m.fsmblks);
	json_member_uint(w, "uordblks", m.uordblks);
	json_member_uint(w, "fordblks", m.fordblks);
	json_member_uint(w, "keepcost", m.keepcost);
	json_end(w);
}

/* "NAME": { "count": COUNT, "bytes": BYTES } */
static void count_and_bytes(struct json_writer *w, const char *name,
			    uint64_t count, uint64_t bytes)
{
	json_key(w, name);
	json_object_line(w);
	json_member_uint(w, "count", count);
	json_member_uint(w, "bytes", bytes);
	json_end(w);
}

void heap_tally_json(struct json_writer *w, const struct heap_tally *t)
{
	for (int s = 0; s < HEAP_NSTATES; s++)
		count_and_bytes(w, heap_state_name(s), t->count[s],
				t->bytes[s]);
	json_member_uint(w, "overhead", t->overhead);
	json_member_uint(w, "unknown", t->unknown);
}

/* "python": pymalloc as sys._debugmallocstats() counts it. */
static void py_summary_json(struct json_writer *w, const struct py_summary *p)
{
	json_key(w, "python");
	json_object(w);
	json_member_uint(w, "arenas", p->arenas);
	json_member_uint(w, "unused_pools", p->unused_pools);
	json_member_uint(w, "arena_alignment_bytes", p->alignment);
	count_and_bytes(w, "in_use", p->count, p->bytes);
	json_member_uint(w, "free_bytes", p->free);
	json_member_uint(w, "free_committed", p->free_committed);
	json_key(w, "classes");
	json_array(w);
	for (unsigned k = 0; k < PY_SUMMARY_CLASSES; k++) {
		if (!p->classes[k].pools)
			continue;
		json_object_line(w);
		json_member_uint(w, "class", k);
		json_member_uint(w, "size", p->classes[k].size);
		json_member_uint(w, "pools", p->classes[k].pools);
		json_member_uint(w, "blocks", p->classes[k].used);
		json_member_uint(w, "avail", p->classes[k].avail);
		json_end(w);
	}
	json_end(w);
	json_end(w);
}

void heap_summary_json(struct json_writer *w, const struct heap_summary *s)
{
	json_key(w, "total");
	json_object(w);
	json_member_uint(w, "system_mem", s->system_mem);
	heap_tally_json(w, &s->t);
	json_end(w);
	count_and_bytes(w, "mmapped", s->mmapped_count, s->mmapped_bytes);
	if (s->scanned) {
		json_key(w, "reach");
		json_object(w);
		count_and_bytes(w, "anchored", s->anchored_count,
				s->anchored_bytes);
		count_and_bytes(w, "leaked", s->leaked_count, s->leaked_bytes);
		count_and_bytes(w, "unreferenced", s->unreferenced_count,
				s->unreferenced_bytes);
		json_end(w);
	}
	json_mallinfo(w, s);
	if (s->py.present)
		py_summary_json(w, &s->py);
}
