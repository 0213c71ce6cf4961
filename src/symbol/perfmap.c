/*
 * Perf maps (see perfmap.h): a JIT's names of the code it made, read
 * whole, each range given the name of the last line that names it; and
 * the frames of a run in code of no binary named from them before the
 * symbolizer, which knows only binaries, sees them (as the Python frames
 * of .buckets files are named, through model_named_frame).
 */
#include "perfmap.h"
#include "perfmap_name.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deep.h"
#include "scan.h"
#include "search.h"
#include "util.h"

/* ---- reading ---- */

struct entry {
	uint64_t start, end;
	const char *name;
	size_t len;
};

/* A range starting or ending at POS: entry ID (its line's order). */
struct event {
	uint64_t pos;
	size_t id;
	bool end;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A max-heap of entry ids: the latest line first. */
static void heap_push(size_t *h, size_t *n, size_t id)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2] < id) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = id;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t last = h[--*n], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= last)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
}

static void add_range(struct perfmap *pm, size_t *alloc, uint64_t start,
		      uint64_t end, const struct entry *e)
{
	struct perfmap_range *last = pm->n ? &pm->v[pm->n - 1] : NULL;

	if (last && last->end == start && last->name == e->name) {
		last->end = end;
		return;
	}
	GROW(pm->v, pm->n + 1, *alloc);
	pm->v[pm->n++] = (struct perfmap_range){ start, end, e->name, e->len };
}

/*
 * The entries' ranges cut where they overlap, each piece the latest
 * entry's that covers it: a sweep over the ranges' ends with the entries
 * that cover the point in a heap by their order (a JIT's map has few
 * overlaps; this is n log n whatever their number).
 */
static void resolve(struct perfmap *pm, const struct entry *e, size_t n)
{
	struct event *ev = xcalloc(2 * n + 1, sizeof(*ev));
	size_t *heap = xcalloc(n + 1, sizeof(*heap)), nh = 0, alloc = 0;
	bool *gone = xcalloc(n + 1, sizeof(*gone));

	for (size_t i = 0; i < n; i++) {
		ev[2 * i] = (struct event){ e[i].start, i, false };
		ev[2 * i + 1] = (struct event){ e[i].end, i, true };
	}
	qsort(ev, 2 * n, sizeof(*ev), cmp_event);
	for (size_t i = 0; i < 2 * n;) {
		uint64_t pos = ev[i].pos;

		for (; i < 2 * n && ev[i].pos == pos; i++) {
			if (ev[i].end)
				gone[ev[i].id] = true;
			else
				heap_push(heap, &nh, ev[i].id);
		}
		while (nh && gone[heap[0]])
			heap_pop(heap, &nh);
		if (nh && i < 2 * n)
			add_range(pm, &alloc, pos, ev[i].pos, &e[heap[0]]);
	}
	free(gone);
	free(heap);
	free(ev);
}

/* "START SIZE NAME": hex numbers, "0x" or not; false if it is not. */
static bool parse_line(const struct line *l, struct entry *e)
{
	const char *p = l->p, *end = l->p + l->len, *w;
	uint64_t size;

	w = p;
	while (p < end && *p != ' ')
		p++;
	if (p == end || word_hex(w, (size_t)(p - w), &e->start, true) != NUM_OK)
		return false;
	w = ++p;
	while (p < end && *p != ' ')
		p++;
	if (p == end || word_hex(w, (size_t)(p - w), &size, true) != NUM_OK ||
	    size > UINT64_MAX - e->start)
		return false;
	e->end = e->start + size;
	e->name = p + 1;
	e->len = (size_t)(end - p - 1);
	return e->len > 0;
}

int perfmap_parse(struct perfmap *pm, const char *data, size_t size,
		  const char *path)
{
	struct line_reader lr;
	struct line l;
	struct entry *e = NULL;
	size_t n = 0, alloc = 0, bad = 0;
	struct line first_bad = { NULL, 0, 0, false };

	lines_init(&lr, data, size);
	while (lines_next(&lr, &l)) {
		struct entry one;

		/* (The map copied as a line was written: not all of it.) */
		if (!l.newline || line_is_blank(&l))
			continue;
		/* (A JIT's name may hold a newline: what follows it is no
		 * line of the map; the rest of the map still names.) */
		if (!parse_line(&l, &one)) {
			if (!bad++)
				first_bad = l;
			continue;
		}
		if (one.end == one.start)
			continue;
		GROW(e, n + 1, alloc);
		e[n++] = one;
	}
	if (bad)
		warning("%s:%lu: expected 'START SIZE NAME' (hex numbers and a "
			"name), not '%.*s'; %zu such line%s left out",
			path, first_bad.no,
			(int)(first_bad.len > 60 ? 60 : first_bad.len),
			first_bad.p, bad, bad == 1 ? "" : "s");
	pm->lines = n;
	resolve(pm, e, n);
	free(e);
	return 0;
}

int perfmap_read(struct perfmap *pm, const char *path)
{
	memset(pm, 0, sizeof(*pm));
	if (file_load(&pm->fb, path) < 0)
		return -1;
	if (perfmap_parse(pm, pm->fb.data, pm->fb.size, path) < 0) {
		perfmap_release(pm);
		return -1;
	}
	return 0;
}

const struct perfmap_range *perfmap_find(const struct perfmap *pm,
					 uint64_t addr)
{
	size_t k = PARTITION_POINT(pm->n, i, pm->v[i].end <= addr);

	return k < pm->n && pm->v[k].start <= addr ? &pm->v[k] : NULL;
}

void perfmap_release(struct perfmap *pm)
{
	free(pm->v);
	file_release(&pm->fb);
	memset(pm, 0, sizeof(*pm));
}

/* ---- names ---- */

/* V8's code of its own: builtins, stubs, handlers, regular expressions. */
static const char *const v8_kinds[] = {
	"Builtin:", "BytecodeHandler:", "Bytecodes:", "Handler:", "Stub:",
	"RegExp:", "Callback:", "Interpreter", NULL,
};

void perfmap_split(const char *name, size_t len, struct frame_name *out)
{
	struct perfmap_name pn;

	perfmap_split_name(name, len, &pn);
	out->func = pn.func;
	out->func_len = pn.func_len;
	out->file = pn.file;
	out->file_len = pn.file_len;
	out->line = pn.line;
}

bool perfmap_runtime_frame(const char *func, const char *file)
{
	if (!func)
		return false;
	if (!strncmp(func, PERFMAP_UNNAMED, strlen(PERFMAP_UNNAMED)) ||
	    perfmap_prefix(func, strlen(func), v8_kinds))
		return true;
	return file && (!strncmp(file, "node:", 5) ||
			strstr(file, "/node_modules/") != NULL);
}

/* ---- a run's frames ---- */

/* Code of no binary: anonymous memory (or none, since unmapped). */
static bool no_binary(const struct maps *maps, uint64_t addr)
{
	const struct vma *v = maps_find(maps, addr);

	return !v || !v->name[0] || !strncmp(v->name, "[anon", 5);
}

/*
 * Is the run one whose dumps a JIT's code may be in: one that has the
 * perf map copied, or whose dumps say node runs it (its frames in code of
 * no binary are its JIT code, named or not)?  Others (Chromium's dumps,
 * say) keep such frames as they were.
 */
static bool jit_run(const char *first_dump, bool have_map)
{
	struct deep_meta meta;

	if (have_map)
		return true;
	deep_meta(first_dump, &meta);
	return !strcmp(meta.runtime, "node");
}

int perfmap_name_run(struct model *m, const char *prefix,
		     const char *first_dump, const struct maps *maps)
{
	char *path = xasprintf("%s.perf.map", prefix);
	struct perfmap pm;
	bool have = access(path, F_OK) == 0;
	size_t unnamed = 0;

	memset(&pm, 0, sizeof(pm));
	if (!maps || !jit_run(first_dump, have)) {
		free(path);
		return 0;
	}
	if (have && perfmap_read(&pm, path) < 0) {
		free(path);
		return -1;
	}
	for (size_t i = m->frames_done; i < m->frames.n; i++) {
		const struct frame *f = m->frames.v[i];
		/* (A return address: the call is the byte before.) */
		uint64_t at = f->addr - 1;
		const struct perfmap_range *r;
		struct frame_name fn;
		char hex[48];

		if (f->symbolized || !f->addr || !no_binary(maps, at))
			continue;
		r = have ? perfmap_find(&pm, at) : NULL;
		if (r) {
			perfmap_split(r->name, r->len, &fn);
		} else {
			snprintf(hex, sizeof(hex), PERFMAP_UNNAMED "0x%" PRIx64,
				 f->addr);
			memset(&fn, 0, sizeof(fn));
			fn.func = hex;
			fn.func_len = strlen(hex);
			unnamed++;
		}
		model_named_frame(m, f->addr, &fn, 1);
	}
	if (unnamed && !have)
		warning("%zu frame%s in JIT code stay%s '" PERFMAP_UNNAMED
			"0x...': no perf map (%s); record node with "
			"--perf-basic-prof --interpreted-frames-native-stack "
			"(see dmprof(1), RECORDING)",
			unnamed, unnamed == 1 ? "" : "s", unnamed == 1 ? "s" : "",
			path);
	else if (unnamed)
		warning("%s: %zu frame%s in JIT code in no range of it stay%s '"
			PERFMAP_UNNAMED "0x...'",
			path, unnamed, unnamed == 1 ? "" : "s",
			unnamed == 1 ? "s" : "");
	perfmap_release(&pm);
	free(path);
	return 0;
}
