/*
 * gperftools heap profiles ("heap profile: N: B [N: B] @ heapprofile"), as
 * Debian's libtcmalloc writes them with HEAPPROFILE=prefix, and sampled
 * "heap_v2/RATE" profiles, unsampled as pprof does.  What the profiler
 * really writes is in reference/gperftools-format.md: the mmap lines the
 * header does not count, zero-frame lines, and silent truncation at 1 MiB
 * that cuts the last stack line short.
 *
 * Each stack line becomes a bucket (one per distinct stack and kind); the
 * MAPPED_LIBRARIES: trailer is the snapshot's own maps.  There is no
 * committed/virtual split: in-use bytes stand for both.
 */
#include "gperf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "util.h"

bool gperf_is_header(const char *p, size_t len)
{
	struct cursor c = { p, p + len };

	if (!cursor_eat(&c, "heap profile:"))
		return false;
	cursor_skip_space(&c);
	return c.p < c.end && (is_digit(*c.p) || *c.p == '-');
}

struct gline {
	int64_t objs, bytes, alloc_objs, alloc_bytes;
	uint64_t *frames;
	uint32_t depth;
	unsigned long no;
	bool cut;           /* gperftools may have stopped writing it short */
};

struct gparser {
	struct snapshot *snap;
	struct model *m;
	const char *path;
	struct strbuf q;
	double rate;        /* heap_v2 sampling period; 0 = unsampled */
	int64_t header_objs, header_bytes;
	struct gline *lines;
	size_t n, alloc;
	bool cut;           /* the last stack line may be incomplete */
};

static int gerr(struct gparser *g, unsigned long line, const char *fmt, ...)
	PRINTF(3, 4);
static int gerr(struct gparser *g, unsigned long line, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	error("%s:%lu: %s", g->path, line, sb.buf);
	sb_release(&sb);
	return -1;
}

/* "N: B [N: B]" with any spacing. */
static enum num_status counts(struct cursor *c, int64_t v[4])
{
	static const char *const after[4] = { ":", "[", ":", "]" };
	enum num_status st;

	for (int i = 0; i < 4; i++) {
		cursor_skip_space(c);
		if ((st = parse_i64(c, &v[i])) != NUM_OK)
			return st;
		cursor_skip_space(c);
		if (!cursor_eat(c, after[i]))
			return NUM_NONE;
	}
	return NUM_OK;
}

static int parse_header(struct gparser *g, const struct line *l)
{
	struct cursor c = cursor_of(l);
	const char *tag;
	size_t tlen;
	int64_t v[4];
	enum num_status st;

	cursor_eat(&c, "heap profile:");
	st = counts(&c, v);
	if (st != NUM_OK)
		return gerr(g, l->no, "%s header '%s'",
			    st == NUM_RANGE ? "number out of range in"
					    : "malformed gperftools",
			    quote_for_msg(l->p, l->len, &g->q));
	cursor_skip_space(&c);
	if (!cursor_eat(&c, "@") || !cursor_word(&c, &tag, &tlen))
		return gerr(g, l->no, "gperftools header without '@ TYPE'");
	g->header_objs = v[0];
	g->header_bytes = v[1];
	if ((tlen == 11 && !memcmp(tag, "heapprofile", 11)) ||
	    (tlen == 4 && !memcmp(tag, "heap", 4)))
		return 0;
	if (tlen > 8 && !memcmp(tag, "heap_v2/", 8)) {
		uint64_t rate;

		if (word_u64(tag + 8, tlen - 8, &rate) != NUM_OK || !rate)
			return gerr(g, l->no, "invalid sampling period '%s'",
				    quote_for_msg(tag, tlen, &g->q));
		g->rate = (double)rate;
		return 0;
	}
	if (tlen == 6 && !memcmp(tag, "growth", 6))
		return gerr(g, l->no, "a heap growth profile records where the "
				      "heap grew, not what it holds: not a "
				      "snapshot dmprof can account");
	return gerr(g, l->no, "unknown profile type '%s' (dmprof reads "
			      "heapprofile, heap and heap_v2/RATE)",
		    quote_for_msg(tag, tlen, &g->q));
}

enum cut {
	NOT_CUT,
	CUT_AT_CAP, /* the last line before the maps, no blank line between */
	CUT_AT_EOF, /* the file ends inside it */
};

/*
 * One stack line.  CUT says whether gperftools may have stopped writing
 * it short: then a broken last frame is dropped instead of being an
 * error, and at the end of the file the last word goes even when it
 * reads as hex (it may be the start of a longer address).
 */
static int parse_stack_line(struct gparser *g, const struct line *l,
			    enum cut cut)
{
	struct cursor c = cursor_of(l);
	struct gline gl;
	const char *w;
	size_t wl, alloc = 0;
	int64_t v[4];
	enum num_status st;

	memset(&gl, 0, sizeof(gl));
	gl.no = l->no;
	st = counts(&c, v);
	cursor_skip_space(&c);
	if (st != NUM_OK || !cursor_eat(&c, "@"))
		return gerr(g, l->no, "%s stack line '%s'",
			    st == NUM_RANGE ? "number out of range in"
					    : "expected 'N: B [N: B] @ FRAMES', "
					      "found",
			    quote_for_msg(l->p, l->len, &g->q));
	gl.objs = v[0];
	gl.bytes = v[1];
	gl.alloc_objs = v[2];
	gl.alloc_bytes = v[3];
	gl.cut = cut != NOT_CUT;
	while (cursor_word(&c, &w, &wl)) {
		uint64_t addr;

		if (cut == CUT_AT_EOF && cursor_at_end(&c))
			break; /* perhaps part of a word */
		st = word_hex(w, wl, &addr, true);
		if (st != NUM_OK) {
			if (cut && cursor_at_end(&c))
				break; /* cut in the middle of this word */
			free(gl.frames);
			return gerr(g, l->no, "%s frame address '%s'",
				    st == NUM_RANGE ? "out-of-range"
						    : "invalid",
				    quote_for_msg(w, wl, &g->q));
		}
		if (gl.depth == UINT32_MAX) {
			free(gl.frames);
			return gerr(g, l->no, "stack too deep");
		}
		GROW(gl.frames, gl.depth + 1, alloc);
		gl.frames[gl.depth++] = addr;
	}
	GROW(g->lines, g->n + 1, g->alloc);
	g->lines[g->n++] = gl;
	return 0;
}

/*
 * pprof's unsampling for heap_v2 profiles: an allocation of average size
 * S was sampled with probability 1 - exp(-S/RATE).
 */
static void unsample(double rate, int64_t *objs, int64_t *bytes,
		     bool *overflow)
{
	double scale;

	if (*objs <= 0 || *bytes <= 0)
		return;
	scale = 1.0 / (1.0 - exp(-((double)*bytes / (double)*objs) / rate));
	if ((double)*objs * scale >= 9.2e18 || (double)*bytes * scale >= 9.2e18) {
		*overflow = true;
		return;
	}
	*objs = (int64_t)llround((double)*objs * scale);
	*bytes = (int64_t)llround((double)*bytes * scale);
}

/*
 * mmap lines (HEAP_PROFILE_MMAP=1) keep the profiler's hook frames, which
 * live in libtcmalloc, at the top; malloc lines have them stripped.
 * Zero-frame lines are mmap regions recorded before unwinding worked.
 */
static enum alloc_kind line_kind(const struct snapshot *snap,
				 const struct gline *gl)
{
	const struct vma *v;

	/*
	 * gperftools 2.10 writes the mmap lines first, so a line it cut
	 * before its first frame is a malloc one.
	 */
	if (!gl->depth)
		return gl->cut ? ALLOC_MALLOC : ALLOC_MMAP;
	v = snap->has_own_maps ? maps_find(&snap->own_maps, gl->frames[0])
			       : NULL;
	if (v && strstr(v->name, "libtcmalloc"))
		return ALLOC_MMAP;
	return ALLOC_MALLOC;
}

/* The snapshot from the parsed lines; 0, or -1 after an error. */
static int build(struct gparser *g)
{
	struct snapshot *snap = g->snap;
	int64_t malloc_bytes = 0, mmap_bytes = 0;

	snap->lines = xcalloc(g->n ? g->n : 1, sizeof(*snap->lines));
	for (size_t i = 0; i < g->n; i++) {
		struct gline *gl = &g->lines[i];
		struct stack_line *sl = &snap->lines[snap->nlines++];
		enum alloc_kind kind = line_kind(snap, gl);

		if (g->rate) {
			unsample(g->rate, &gl->objs, &gl->bytes, &snap->overflow);
			unsample(g->rate, &gl->alloc_objs, &gl->alloc_bytes,
				 &snap->overflow);
		}
		sl->bucket = model_intern_bucket(g->m, kind, gl->frames,
						 gl->depth, g->path, gl->no);
		if (!sl->bucket)
			return -1;
		sl->bucket_id = sl->bucket->id;
		sl->virt = sl->committed = gl->bytes;
		sl->alloc = gl->alloc_objs;
		sl->alloc_bytes = gl->alloc_bytes;
		sl->free = sub64(gl->alloc_objs, gl->objs, &snap->overflow);
		sl->line = gl->no;
		if (kind == ALLOC_MMAP)
			mmap_bytes = add64(mmap_bytes, gl->bytes, &snap->overflow);
		else
			malloc_bytes = add64(malloc_bytes, gl->bytes,
					     &snap->overflow);
	}
	snap->lines_alloc = g->n ? g->n : 1;
	snap->has_alloc_bytes = true;
	/*
	 * The header counts malloc only.  Lines that add up to less than it
	 * mean lost buckets: the 1 MiB cap drops the smallest ones.
	 */
	if (!g->rate && malloc_bytes < g->header_bytes)
		warning("%s: its stack lines hold %" PRId64 " of the %" PRId64
			" bytes in use the header counts; the rest was lost "
			"(gperftools 2.10-2.15 cut profiles at 1 MiB)",
			g->path, malloc_bytes, g->header_bytes);
	/* What GLOBAL_STATS would say, as far as a profile tells. */
	snap->gs.row[GS_PROFILED_MALLOC].virt =
		snap->gs.row[GS_PROFILED_MALLOC].committed =
			g->rate ? malloc_bytes : g->header_bytes;
	snap->gs.row[GS_PROFILED_MMAP].virt =
		snap->gs.row[GS_PROFILED_MMAP].committed = mmap_bytes;
	snap->gs.present = 1u << GS_PROFILED_MALLOC | 1u << GS_PROFILED_MMAP;
	return 0;
}

static bool is_maps_header(const struct line *l)
{
	static const char *const heads[] = { "MAPPED_LIBRARIES:",
					     "--- Memory map: ---" };

	for (size_t i = 0; i < ARRAY_SIZE(heads); i++) {
		size_t n = strlen(heads[i]);

		if (l->len >= n && !memcmp(l->p, heads[i], n))
			return true;
	}
	return false;
}

static bool blank(const struct line *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (!is_space(l->p[i]))
			return false;
	return true;
}

int gperf_parse(struct snapshot *snap, const struct filebuf *fb,
		struct model *m)
{
	struct gparser g;
	struct line_reader r;
	struct line l, pending;
	bool header = false, in_maps = false, have_pending = false;
	int rc = 0;

	memset(&g, 0, sizeof(g));
	g.snap = snap;
	g.m = m;
	g.path = fb->path;
	lines_init(&r, fb->data, fb->size);
	/*
	 * A stack line is parsed when the next line shows whether it was
	 * the last before the maps with no blank line between: then
	 * gperftools' buffer ran out inside it.
	 */
	while (lines_next(&r, &l) && rc == 0) {
		if (memchr(l.p, '\0', l.len)) {
			rc = gerr(&g, l.no, "NUL byte in line");
			break;
		}
		if (!header) {
			if (blank(&l))
				continue;
			if (l.len && l.p[0] == '%') {
				/* pprof's commands; %warn is for the user. */
				if (l.len > 6 && !memcmp(l.p, "%warn ", 6))
					warning("%s:%lu: the profile warns: "
						"%.*s", g.path, l.no,
						(int)(l.len - 6), l.p + 6);
				continue;
			}
			rc = parse_header(&g, &l);
			header = true;
			continue;
		}
		if (is_maps_header(&l)) {
			if (have_pending) {
				g.cut = true;
				rc = parse_stack_line(&g, &pending,
						      CUT_AT_CAP);
				have_pending = false;
			}
			if (rc == 0 && r.p < r.end)
				rc = maps_parse(&snap->own_maps, r.p,
						(size_t)(r.end - r.p), g.path,
						l.no + 1, &m->strings, true);
			snap->has_own_maps = rc == 0;
			in_maps = true;
			break;
		}
		if (have_pending) {
			rc = parse_stack_line(&g, &pending, NOT_CUT);
			have_pending = false;
			if (rc)
				break;
		}
		if (blank(&l))
			continue;
		if (!l.newline) {
			/* The file ends inside a stack line. */
			g.cut = true;
			rc = parse_stack_line(&g, &l, CUT_AT_EOF);
			break;
		}
		pending = l;
		have_pending = true;
	}
	if (rc == 0 && have_pending)
		rc = parse_stack_line(&g, &pending, NOT_CUT);
	if (rc == 0 && !header)
		rc = gerr(&g, 1, "empty profile (no 'heap profile:' line)");
	if (rc == 0 && !in_maps)
		warning("%s: no MAPPED_LIBRARIES: section (file cut short?); "
			"its frames cannot be symbolized", g.path);
	if (rc == 0 && g.cut)
		warning("%s:%lu: the last stack line is cut short (gperftools "
			"2.10-2.15 cut profiles at 1 MiB); its stack may be "
			"incomplete", g.path,
			g.n ? g.lines[g.n - 1].no : 1UL);
	if (rc == 0) {
		snap->page_size = 4096;
		rc = build(&g);
	}
	if (rc == 0) {
		if (!(m->warned & MODEL_WARNED_GPERF)) {
			warning("%s: a gperftools heap profile: sizes are the "
				"bytes the program asked for, with no "
				"committed/virtual split and no process "
				"totals (columns from GLOBAL_STATS, and rss, "
				"pss and swap, read 0)",
				g.path);
			m->warned |= MODEL_WARNED_GPERF;
		}
	}
	for (size_t i = 0; i < g.n; i++)
		free(g.lines[i].frames);
	free(g.lines);
	sb_release(&g.q);
	return rc;
}
