/*
 * Legacy text heap profiles, "heap profile: N: B [N: B] @ TYPE", read as
 * pprof reads them:
 *   heapprofile        gperftools' heap profiler (Debian's libtcmalloc with
 *                      HEAPPROFILE=prefix), jemalloc 3.x without sampling;
 *   heap_v2/R, heapz_v2/R  sampled (tcmalloc, jemalloc 3.x), unsampled;
 *   heap/2R            Go's runtime/pprof with debug=1 (the rate is half
 *                      the number), whose "#" comments name the frames;
 *   growth, growthz, fragmentation, fragmentationz: where the heap grew
 *                      or was lost to fragmentation, by stack.
 * What gperftools really writes is in reference/gperftools-format.md: the
 * mmap lines the header does not count, zero-frame lines, and silent
 * truncation at 1 MiB that cuts the last stack line short.
 *
 * Each stack line becomes a bucket (one per distinct stack and kind); the
 * MAPPED_LIBRARIES: trailer, or pprof's "--- Memory map: ---", is the
 * snapshot's own maps.  There is no committed/virtual split: in-use bytes
 * stand for both, and the total is the profile's own sum.
 */
#include "gperf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gperf_parse.h"
#include "reader.h"
#include "scan.h"
#include "threads.h"
#include "util.h"

#define HEADER "heap profile:"

/* Where "heap profile:" starts in the line (pprof allows a prefix). */
static const char *find_header(const char *p, size_t len)
{
	size_t n = strlen(HEADER);

	for (size_t i = 0; i + n <= len; i++)
		if (p[i] == 'h' && !memcmp(p + i, HEADER, n))
			return p + i;
	return NULL;
}

bool gperf_is_header(const char *p, size_t len)
{
	const char *h = find_header(p, len);
	struct cursor c;

	if (!h)
		return false;
	c.p = h + strlen(HEADER);
	c.end = p + len;
	cursor_skip_space(&c);
	return c.p < c.end && (is_digit(*c.p) || *c.p == '-');
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

/*
 * The same, for the common line ("  N:  B [  N:  B]", blanks and
 * digits only): where it ends, or NULL for the general parser.
 */
static const char *fast_counts(const char *p, const char *end, int64_t v[4])
{
	static const char after[4] = { ':', '[', ':', ']' };

	for (int i = 0; i < 4; i++) {
		p = skip_blanks(p, end);
		if (!(p = digits_at(p, end, &v[i])))
			return NULL;
		p = skip_blanks(p, end);
		if (p >= end || *p != after[i])
			return NULL;
		p++;
	}
	return p;
}

/*
 * pprof's rule for the allocation columns: they count only if the
 * header's differ from its in-use pair and are not 0 (tcmalloc's sampled
 * profiles print the in-use pair twice, jemalloc 3.x prints [0: 0]
 * unless prof_accum is on).  gperftools' own profiles always count them,
 * but for jemalloc's "[0: 0]".
 */
static bool alloc_columns(enum htype type, const int64_t v[4])
{
	if (type == H_GROWTH || type == H_FRAG)
		return false;
	if (type == H_GPERF)
		return v[2] || v[3] || (!v[0] && !v[1]);
	return (v[2] != v[0] && v[2] != 0) || (v[3] != v[1] && v[3] != 0);
}

/* TYPE (and /RATE) after the '@': 0, or -1 after saying why not. */
static int header_type(struct gparser *g, const char *tag, size_t tlen)
{
	static const struct {
		const char *name;
		enum htype type;
	} fixed[] = {
		{ "heapprofile", H_GPERF },   { "growth", H_GROWTH },
		{ "growthz", H_GROWTH },      { "fragmentation", H_FRAG },
		{ "fragmentationz", H_FRAG },
	};
	const char *slash = memchr(tag, '/', tlen);
	size_t nlen = slash ? (size_t)(slash - tag) : tlen;
	uint64_t rate = 0;

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!slash && tlen == strlen(fixed[i].name) &&
		    !memcmp(tag, fixed[i].name, tlen)) {
			g->type = fixed[i].type;
			return 0;
		}
	if (slash && slash + 1 < tag + tlen &&
	    word_u64(slash + 1, tlen - nlen - 1, &rate) != NUM_OK)
		return read_error(&g->pos, "invalid sampling rate '%s'",
				  read_quote(&g->pos, tag, tlen));
	if ((nlen == 7 && !memcmp(tag, "heap_v2", 7)) ||
	    (nlen == 8 && !memcmp(tag, "heapz_v2", 8))) {
		g->type = H_SAMPLED;
		g->rate = rate;
		return 0;
	}
	if (nlen == 4 && !memcmp(tag, "heap", 4)) {
		/* Go prints twice its rate; pprof halves it. */
		g->type = H_GO;
		g->rate = rate / 2;
		return 0;
	}
	return read_error(&g->pos,
			  "unknown profile type '%s' (dmprof reads "
			  "heapprofile, heap_v2/RATE, heapz_v2/RATE, "
			  "heap/RATE, growth and fragmentation)",
			  read_quote(&g->pos, tag, tlen));
}

static int parse_header(struct gparser *g, const struct line *l)
{
	struct cursor c = cursor_of(l);
	const char *tag, *h = find_header(l->p, l->len);
	size_t tlen;
	int64_t v[4];
	enum num_status st;

	g->pos.line = l->no;
	/* (The front decides on a file's first line that does not start
	 * with '#'; a comment here may be indented.) */
	if (!h)
		return read_error(&g->pos, "expected a 'heap profile:' header, "
					   "found '%s'",
				  read_quote(&g->pos, l->p, l->len));
	c.p = h + strlen(HEADER);
	st = counts(&c, v);
	if (st != NUM_OK)
		return read_error(&g->pos, "%s header '%s'",
				  st == NUM_RANGE ? "number out of range in"
						  : "malformed heap profile",
				  read_quote(&g->pos, l->p, l->len));
	cursor_skip_space(&c);
	if (!cursor_eat(&c, "@"))
		return read_error(&g->pos,
				  "heap profile header without '@ TYPE'");
	cursor_skip_space(&c);
	if (!cursor_word(&c, &tag, &tlen))
		return read_error(&g->pos,
				  "heap profile header without '@ TYPE'");
	g->header_objs = v[0];
	g->header_bytes = v[1];
	if (header_type(g, tag, tlen) < 0)
		return -1;
	g->has_alloc = alloc_columns(g->type, v);
	return 0;
}

static const char *const type_names[] = {
	[H_GPERF] = "heapprofile", [H_SAMPLED] = "sampled heap",
	[H_GO] = "Go heap", [H_GROWTH] = "heap growth",
	[H_FRAG] = "heap fragmentation",
};

/* Is the profile sampled, its values estimates? */
static bool sampled(const struct gparser *g)
{
	return (g->type == H_SAMPLED || g->type == H_GO) && g->rate > 1;
}


/* The held line's frames. */
static uint64_t *held_frames(const struct gparser *g)
{
	return g->frames[g->cur];
}

/*
 * One stack line into *OUT, its frames into the spare frames (see hold).
 * CUT says whether gperftools may have stopped writing it short: then a
 * broken last frame is dropped instead of being an error, and at the end
 * of the file the last word goes even when it reads as hex (it may be
 * the start of a longer address).  LIMIT: how far past the line its
 * memory may be read.
 */
static int parse_stack_line(struct gparser *g, const struct line *l,
			    enum cut cut, const char *limit,
			    struct gline *out)
{
	return gperf_parse_stack_line_into(g, l, cut, limit, out,
					   &g->frames[1 - g->cur],
					   &g->frames_alloc[1 - g->cur]);
}

int gperf_parse_stack_line_into(struct gparser *g, const struct line *l,
				enum cut cut, const char *limit,
				struct gline *out, uint64_t **frames,
				size_t *alloc)
{
	struct cursor c = cursor_of(l);
	struct gline gl;
	const char *w;
	size_t wl;
	int64_t v[4];
	enum num_status st;

	memset(&gl, 0, sizeof(gl));
	gl.no = g->pos.line = l->no;
	c.p = fast_counts(l->p, c.end, v);
	if (c.p) {
		st = NUM_OK;
	} else {
		c.p = l->p;
		st = counts(&c, v);
	}
	cursor_skip_space(&c);
	if (st != NUM_OK || !cursor_eat(&c, "@"))
		return read_error(&g->pos, "%s stack line '%s'",
				  st == NUM_RANGE
				      ? "number out of range in"
				      : "expected 'N: B [N: B] @ FRAMES', "
					"found",
				  read_quote(&g->pos, l->p, l->len));
	if (sampled(g) && ((!v[0] && v[1]) || (g->has_alloc && !v[2] && v[3])))
		return read_error(&g->pos,
				  "0 objects holding bytes in a sampled "
				  "profile: '%s'",
				  read_quote(&g->pos, l->p, l->len));
	gl.objs = v[0];
	gl.bytes = v[1];
	gl.alloc_objs = v[2];
	gl.alloc_bytes = v[3];
	gl.cut = cut != NOT_CUT;
	/* Most frames at once (see hex_words_run), then the rest. */
	if (cut != CUT_AT_EOF &&
	    (size_t)(c.end - c.p) / 4 < UINT32_MAX - 1) {
		size_t n;

		GROW(*frames, (size_t)(c.end - c.p) / 4 + 1, *alloc);
		c.p = hex_words_run(c.p, c.end, limit, false, *frames, &n);
		gl.depth = (uint32_t)n;
	}
	for (;;) {
		uint64_t addr;
		size_t n;

		/* The common word first, 8 bytes at a time. */
		c.p = skip_blanks(c.p, c.end);
		if (cut != CUT_AT_EOF && (n = hex_word(c.p, c.end, limit, &addr))) {
			c.p += n;
			goto add;
		}
		if (!cursor_word(&c, &w, &wl))
			break;
		if (cut == CUT_AT_EOF && cursor_at_end(&c))
			break; /* perhaps part of a word */
		if (wl == 5 && !memcmp(w, "(nil)", 5))
			continue; /* glibc's %p of NULL (tcmalloc) */
		st = word_hex(w, wl, &addr, true);
		if (st != NUM_OK) {
			if (cut && cursor_at_end(&c))
				break; /* cut in the middle of this word */
			return read_error(&g->pos, "%s frame address '%s'",
					  st == NUM_RANGE ? "out-of-range"
							  : "invalid",
					  read_quote(&g->pos, w, wl));
		}
add:
		if (gl.depth == UINT32_MAX)
			return read_error(&g->pos, "stack too deep");
		GROW(*frames, gl.depth + 1, *alloc);
		(*frames)[gl.depth++] = addr;
	}
	*out = gl;
	return 0;
}

/* GL, just parsed, becomes the held line (the one before is interned). */
static void hold(struct gparser *g, const struct gline *gl)
{
	g->cur = 1 - g->cur;
	g->held = *gl;
	g->holding = true;
	g->held_by_id = false;
}

/* The line that did not parse, parsed again (CUT) and said if wrong. */
static int parse_broken(struct gparser *g, enum cut cut)
{
	struct line l = { g->broken.buf, g->broken.len, g->broken_no, true };
	struct gline gl;

	g->has_broken = false;
	/* (No reading past it: the general parser takes every word.) */
	if (parse_stack_line(g, &l, cut, l.p + l.len, &gl) < 0)
		return -1;
	hold(g, &gl);
	return 0;
}

/* SYM belongs to the stack line held. */
static void add_sym(struct gparser *g, const struct gsym *sym)
{
	GROW(g->syms, g->nsyms + 1, g->syms_alloc);
	g->syms[g->nsyms++] = *sym;
}

/* Keep LEN bytes at P with the comments' names: their offset. */
static size_t keep_text(struct gparser *g, const char *p, size_t len)
{
	size_t at = g->symtext.len;

	sb_add(&g->symtext, p, len);
	return at;
}

/*
 * A comment line: Go's "#<TAB>0xPC<TAB>FUNC+0xOFF<TAB>FILE:LINE" names a
 * frame of the stack line above it; any other comment is skipped.
 */
static void parse_comment(struct gparser *g, const struct line *l)
{
	struct cursor c = cursor_of(l);
	struct gsym sym;
	const char *w, *plus, *colon;
	size_t wl;

	cursor_skip_space(&c);
	cursor_eat(&c, "#");
	if (!g->holding || !is_space(c.p < c.end ? *c.p : 0))
		return;
	cursor_skip_space(&c);
	memset(&sym, 0, sizeof(sym));
	if (!cursor_word(&c, &w, &wl) ||
	    word_hex(w, wl, &sym.pc, true) != NUM_OK)
		return;
	if (!cursor_word(&c, &w, &wl)) {
		/* An unnamed frame ("#\t0x4a1f2c"): shown, not named. */
		add_sym(g, &sym);
		return;
	}
	plus = w + wl;
	while (plus > w && plus[-1] != '+')
		plus--;
	sym.func_len = plus > w + 1 ? (size_t)(plus - 1 - w) : wl;
	sym.func = keep_text(g, w, sym.func_len);
	cursor_skip_space(&c);
	w = c.p;
	wl = (size_t)(c.end - c.p);
	while (wl && is_space(w[wl - 1]))
		wl--;
	colon = wl ? w + wl : NULL;
	while (colon && colon > w && colon[-1] != ':')
		colon--;
	if (colon && colon > w + 1) {
		uint64_t line;

		if (word_u64(colon, (size_t)(w + wl - colon), &line) == NUM_OK &&
		    line <= UINT32_MAX) {
			sym.line = (uint32_t)line;
			wl = (size_t)(colon - 1 - w);
		}
	}
	sym.file_len = wl;
	sym.file = keep_text(g, w, wl);
	add_sym(g, &sym);
}

static struct frame_name sym_name(const struct gparser *g,
				  const struct gsym *sym)
{
	struct frame_name n = {
		g->symtext.buf + sym->func, sym->func_len,
		sym->file_len ? g->symtext.buf + sym->file : NULL,
		sym->file_len, sym->line,
	};

	return n;
}

/*
 * Name the held line's frames from its Go comments.  Go prints, for each
 * return address of the stack, the functions at the call before it
 * (PC - 1), inlined ones first, but leaves out the runtime's frames at
 * the top (the allocator: pprof drops them too) and runtime.goexit.  So
 * the stack starts at the first frame with a comment, and a frame without
 * one stays for the symbolizer.
 */
static void name_frames(struct gparser *g)
{
	struct gline *gl = &g->held;
	struct frame_name names[64];
	size_t k = 0, end = g->nsyms;
	uint32_t first = UINT32_MAX;
	uint64_t *frames = held_frames(g);

	for (uint32_t i = 0; i < gl->depth && k < end; i++) {
		uint64_t a = frames[i];
		uint32_t n = 0;
		size_t j = k;

		/* (A comment naming another address: skip to ours.) */
		while (j < end && g->syms[j].pc != a - 1 && g->syms[j].pc != a)
			j++;
		if (j == end)
			continue;
		if (first == UINT32_MAX)
			first = i;
		for (k = j; k < end && g->syms[k].pc == g->syms[j].pc; k++)
			if (g->syms[k].func_len && n < ARRAY_SIZE(names))
				names[n++] = sym_name(g, &g->syms[k]);
		if (n)
			frames[i] = model_named_frame(g->m, a, names, n);
	}
	if (first != UINT32_MAX && first) {
		memmove(frames, frames + first,
			(gl->depth - first) * sizeof(*frames));
		gl->depth -= first;
	}
}

/*
 * pprof's unsampling (and Go's, the same): an allocation of average size
 * S was sampled with probability 1 - exp(-S/RATE).  Like pprof, the
 * estimates are truncated, not rounded, and a pair with a zero is zero.
 */
static void unsample(double rate, int64_t *objs, int64_t *bytes,
		     bool *overflow)
{
	double scale, o, b;

	if (!*objs || !*bytes) {
		*objs = *bytes = 0;
		return;
	}
	scale = 1 / (1 - exp(-((double)*bytes / (double)*objs) / rate));
	o = (double)*objs * scale;
	b = (double)*bytes * scale;
	if (fabs(o) >= 9.2e18 || fabs(b) >= 9.2e18) {
		*overflow = true;
		return;
	}
	*objs = (int64_t)o;
	*bytes = (int64_t)b;
}

/*
 * The most lines whose buckets are made as they are read: the buckets,
 * and the map that finds them by stack, are then held beside the tables
 * that find frames and stacks by content, which go before build (see
 * model_trim).  With no limit, a profile of 10^7 stacks peaked 194 MB
 * higher (1976 -> 2170 MB); with this one, as before (1976 MB); 10^6
 * stacks' peak is elsewhere (+0.1 MB).
 */
#define EARLY_MOST ((size_t)1 << 21)

/*
 * Intern the held stack line, now that its comments are in, as the
 * snapshot's next line.  Its bucket waits for the maps (see build).
 */
static int intern_held(struct gparser *g)
{
	struct gline *gl = &g->held;
	struct snapshot *snap = g->snap;
	const struct stack *stack;
	struct sample_counts c;
	struct bucket *b = NULL;
	uint64_t first;

	if (!g->holding)
		return 0;
	g->holding = false;
	if (g->held_by_id && g->nsyms) {
		/* Comments name its frames: by address, as they are. */
		GROW(g->frames[g->cur], gl->depth, g->frames_alloc[g->cur]);
		for (uint32_t i = 0; i < gl->depth; i++)
			g->frames[g->cur][i] =
				frame_get(&g->m->frames, g->held_ids[i])->addr;
		g->held_by_id = false;
	}
	first = !gl->depth	? 0
		: g->held_by_id ? g->held_first
				: held_frames(g)[0];
	if (g->nsyms) {
		name_frames(g);
		g->nsyms = 0;
		sb_reset(&g->symtext);
	}
	if (sampled(g)) {
		unsample((double)g->rate, &gl->objs, &gl->bytes,
			 &snap->overflow);
		unsample((double)g->rate, &gl->alloc_objs, &gl->alloc_bytes,
			 &snap->overflow);
	}
	stack = g->held_by_id ? model_intern_stack_ids(g->m, g->held_ids,
						       gl->depth, g->held_hash)
			      : model_intern_stack(g->m, held_frames(g),
						   gl->depth);
	if (!stack)
		return -1;
	if (gl->cut)
		g->cut_line = snap->nlines;
	GROW(g->stack_ids, snap->nlines + 1, g->ids_alloc);
	GROW(g->nos, snap->nlines + 1, g->nos_alloc);
	GROW(g->firsts, snap->nlines + 1, g->firsts_alloc);
	g->stack_ids[snap->nlines] = stack->id;
	g->nos[snap->nlines] = gl->no;
	g->firsts[snap->nlines] = first;
	c = (struct sample_counts){ gl->objs, gl->bytes, g->has_alloc,
				    gl->alloc_objs, gl->alloc_bytes };
	/* (A zero-frame line's kind is the cut line's: left to build, and
	 * the lines after it, in order; so are those past EARLY_MOST.) */
	if (g->early && ((!gl->depth && g->type == H_GPERF) ||
			 g->early_n == EARLY_MOST))
		g->early = false;
	if (g->early) {
		/* (As line_kind will say, unless the maps hold libtcmalloc
		 * after all: then build makes them again.) */
		b = model_stack_bucket(g->m, ALLOC_MALLOC, stack, g->pos.path,
				       gl->no);
		if (!b)
			return -1;
		GROW(g->keys, snap->nlines + 1, g->keys_alloc);
		g->keys[snap->nlines] = bucket_key(b);
		g->early_n++;
	}
	read_add_sample(snap, b, &c);
	return 0;
}

void gperf_expect_lines(struct gparser *g, size_t n)
{
	struct snapshot *snap = g->snap;
	size_t at = snap->nlines;

#define RESERVE(ptr, alloc)                                                 \
	do {                                                                \
		if (n > (alloc)) {                                          \
			(ptr) = xreserve_huge((ptr), at < (alloc) ? at : (alloc), \
					      n, sizeof(*(ptr)));             \
			(alloc) = n;                                        \
		}                                                           \
	} while (0)
	RESERVE(snap->lines, snap->lines_alloc);
	RESERVE(g->stack_ids, g->ids_alloc);
	RESERVE(g->nos, g->nos_alloc);
	RESERVE(g->firsts, g->firsts_alloc);
	if (g->early)
		RESERVE(g->keys, g->keys_alloc);
#undef RESERVE
}

/* What names the profiler's library (libtcmalloc.so.4, and _minimal). */
static const char tcmalloc_name[] = "libtcmalloc";

/* The mappings of the last lines' first frames, and what each is: a
 * profile's frames are in a few mappings, its lines' first ones in any
 * of them, in no order (a name searched at each line was a tenth of
 * gperf-1m's build of its buckets). */
#define KIND_MEMO 4
struct kind_memo {
	const struct vma *v[KIND_MEMO];
	bool tcmalloc[KIND_MEMO];
	unsigned next;
};

/*
 * gperftools' mmap lines (HEAP_PROFILE_MMAP=1) keep the profiler's hook
 * frames, which live in libtcmalloc, at the top; malloc lines have them
 * stripped.  Zero-frame lines are mmap regions recorded before unwinding
 * worked.  Other producers record allocations only.
 */
static enum alloc_kind line_kind(const struct gparser *g, size_t i,
				 const struct stack *stack, uint64_t first,
				 struct kind_memo *memo)
{
	const struct snapshot *snap = g->snap;
	const struct vma *v;
	unsigned k;

	if (g->type != H_GPERF)
		return ALLOC_MALLOC;
	/*
	 * gperftools 2.10 writes the mmap lines first, so a line it cut
	 * before its first frame is a malloc one.
	 */
	if (!stack->depth)
		return i == g->cut_line ? ALLOC_MALLOC : ALLOC_MMAP;
	for (k = 0; k < KIND_MEMO; k++) {
		v = memo->v[k];
		if (v && first >= v->start && first < v->end)
			return memo->tcmalloc[k] ? ALLOC_MMAP : ALLOC_MALLOC;
	}
	v = snap->has_own_maps ? maps_find(&snap->own_maps, first) : NULL;
	if (!v)
		return ALLOC_MALLOC;
	k = memo->next++ % KIND_MEMO;
	memo->v[k] = v;
	memo->tcmalloc[k] = strstr(v->name, tcmalloc_name) != NULL;
	return memo->tcmalloc[k] ? ALLOC_MMAP : ALLOC_MALLOC;
}

/* Does the file's end name libtcmalloc?  (Its maps are there: where
 * they do not, no line is mmap's but a zero-frame one.) */
static bool tail_names_tcmalloc(const struct line_stream *s)
{
	char buf[64 << 10];
	size_t len;

	if (!s->regular || !s->size)
		return true; /* (unknown) */
	len = s->size < sizeof(buf) ? s->size : sizeof(buf);
	if (pread_full(s->fd, buf, len, (uint64_t)(s->size - len)) != len)
		return true;
	return memmem(buf, len, tcmalloc_name, sizeof(tcmalloc_name) - 1) !=
	       NULL;
}

/* Do the maps read hold libtcmalloc? */
static bool maps_hold_tcmalloc(const struct snapshot *snap)
{
	for (size_t i = 0; snap->has_own_maps && i < snap->own_maps.n; i++)
		if (strstr(snap->own_maps.v[i].name, tcmalloc_name))
			return true;
	return false;
}

/* Each line's bucket, now that the maps are read (the first EARLY_N
 * made already, if they were right); 0, or -1 after an error. */
static int build(struct gparser *g)
{
	struct snapshot *snap = g->snap;
	struct model *m = g->m;
	int64_t malloc_bytes = 0, mmap_bytes = 0;
	struct kind_memo memo = { { NULL }, { false }, 0 };

	if (g->early_n && g->type == H_GPERF && maps_hold_tcmalloc(snap)) {
		/* (Their maps longer than the end looked at.) */
		if (!model_drop_stack_buckets(m, g->early_from))
			BUG("%s: the buckets made early stay", g->pos.path);
		for (size_t i = 0; i < g->early_n; i++)
			snap->lines[i].bucket = NULL;
		g->early_n = 0;
	}
	GROW(g->keys, snap->nlines, g->keys_alloc);
	for (size_t i = 0; i < snap->nlines; i++) {
		struct stack_line *sl = &snap->lines[i];
		const struct stack *stack;
		enum alloc_kind kind;

		if (i < g->early_n) {
			malloc_bytes = add64(malloc_bytes, sl->committed,
					     &snap->overflow);
			continue;
		}
		stack = m->stacks.v[g->stack_ids[i]];
		kind = line_kind(g, i, stack, g->firsts[i], &memo);
		sl->bucket = model_stack_bucket(m, kind, stack, g->pos.path,
						g->nos[i]);
		if (!sl->bucket)
			return -1;
		g->keys[i] = bucket_key(sl->bucket);
		if (kind == ALLOC_MMAP)
			mmap_bytes = add64(mmap_bytes, sl->committed,
					   &snap->overflow);
		else
			malloc_bytes = add64(malloc_bytes, sl->committed,
					     &snap->overflow);
	}
	/*
	 * gperftools' header counts malloc only.  Lines that add up to less
	 * than it mean lost buckets: the 1 MiB cap drops the smallest ones.
	 */
	if (g->type == H_GPERF && malloc_bytes < g->header_bytes)
		warning("%s: its stack lines hold %" PRId64 " of the %" PRId64
			" bytes in use the header counts; the rest was lost "
			"(gperftools 2.10-2.15 cut profiles at 1 MiB)",
			g->pos.path, malloc_bytes, g->header_bytes);
	/* (A line whose bucket has no key: none, as snapshot_index_lines
	 * would have it.) */
	for (size_t i = 0; g->keys && i < snap->nlines; i++)
		if (g->keys[i] == BUCKET_KEY_NONE) {
			free(g->keys);
			g->keys = NULL;
		}
	if (snap->nlines && g->keys && !snap->line_index) {
		snap->line_index = g->keys;
		g->keys = NULL;
	}
	read_finish_profile(snap, malloc_bytes, mmap_bytes, g->has_alloc,
			    g->has_alloc);
	/* (gperftools' header counts malloc in full, lost lines too.) */
	if (g->type == H_GPERF)
		snap->gs.row[GS_PROFILED_MALLOC].virt =
			snap->gs.row[GS_PROFILED_MALLOC].committed =
				g->header_bytes;
	return 0;
}

/* Which map section the line opens: 1 gperftools', 2 pprof's, else 0. */
int gperf_maps_header(const struct line *l)
{
	static const char *const heads[] = { "MAPPED_LIBRARIES:",
					     "--- Memory map: ---" };

	/* (Anywhere in the line: a line cut at the cap runs into it.  Both
	 * have an 'M', which no stack line has.) */
	if (!memchr(l->p, 'M', l->len))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(heads); i++)
		if (memmem(l->p, l->len, heads[i], strlen(heads[i])))
			return (int)i + 1;
	return 0;
}

static bool comment(const struct line *l)
{
	size_t i = 0;

	while (i < l->len && is_space(l->p[i]))
		i++;
	return i < l->len && l->p[i] == '#';
}

/* Say once per run what the profile's sizes are. */
static void say_what(struct gparser *g)
{
	static const char *const rest =
		"no committed/virtual split; total is the profile's own sum "
		"of bytes in use, and what the kernel or GLOBAL_STATS would "
		"give (rss, swap, ...) reads 0";
	if (!read_warn_first(g->run, READ_WARNED_PROFILE))
		return;
	switch (g->type) {
	case H_GPERF:
		warning("%s: a gperftools heap profile: sizes are the bytes "
			"the program asked for, every allocation counted; %s",
			g->pos.path, rest);
		break;
	case H_SAMPLED:
	case H_GO:
		if (!sampled(g))
			warning("%s: a %sheap profile of every allocation "
				"(rate %" PRIu64 "): sizes are the bytes the "
				"program asked for; %s", g->pos.path,
				g->type == H_GO ? "Go " : "", g->rate, rest);
		else
			warning("%s: a sampled %sheap profile (a sample every "
				"%" PRIu64 " bytes on average): sizes and "
				"counts are estimates from the sample, "
				"unsampled as pprof does; %s", g->pos.path,
				g->type == H_GO ? "Go " : "", g->rate, rest);
		break;
	case H_GROWTH:
		warning("%s: a heap growth profile: sizes are how much the "
			"heap grew under each stack, not blocks in use; %s",
			g->pos.path, rest);
		break;
	case H_FRAG:
		warning("%s: a heap fragmentation profile: sizes are bytes "
			"lost to fragmentation under each stack; %s",
			g->pos.path, rest);
		break;
	}
}

/*
 * The maps section opens at line NO (WHICH as gperf_maps_header says), right
 * after a stack line if AFTER_STACK: then gperftools' buffer may have run
 * out inside that line.  The maps are the rest of the file.
 */
int gperf_read_maps(struct gparser *g, int which, unsigned long no,
		    bool after_stack)
{
	struct snapshot *snap = g->snap;
	const char *rest;
	size_t len;
	int rc = 0;

	if (after_stack) {
		/* Only gperftools' own trailer cuts lines. */
		bool cap = which == 1 && g->type == H_GPERF;

		g->cut = cap;
		if (g->has_broken)
			rc = parse_broken(g, cap ? CUT_AT_CAP : NOT_CUT);
		else
			g->held.cut = cap;
	}
	if (rc == 0)
		rc = intern_held(g);
	if (rc == 0)
		rc = stream_rest(g->s, &rest, &len);
	if (rc == 0 && len && which == 1)
		rc = maps_parse(&snap->own_maps, rest, len, g->pos.path, no + 1,
				&g->m->strings, true);
	else if (rc == 0 && len)
		rc = maps_parse_pprof(&snap->own_maps, rest, len, g->pos.path,
				      &g->m->strings);
	snap->has_own_maps = rc == 0;
	return rc;
}

/* The header line: the profile's type, which all of a run share. */
static int header(struct gparser *g, const struct line *l)
{
	int kind = g->run->profile_kind;

	if (parse_header(g, l) < 0)
		return -1;
	/* (Said of line 1, wherever the header is.) */
	g->pos.line = 1;
	if (kind && kind != (int)g->type + 1)
		return read_error(&g->pos, "a %s profile among %s profiles: "
				  "not one run", type_names[g->type],
				  type_names[kind - 1]);
	return 0;
}

/*
 * Line L as it comes (not one the fast way took): 0 to go on, -1 after
 * an error, 1 when it was the last (the file ends inside it), or 2 with
 * *WHICH when the maps open there.  AFTER_STACK: the line before was a
 * stack line.  LIMIT: how far past the line its memory may be read.
 */
int gperf_slow_line(struct gparser *g, const struct line *l,
		    bool *after_stack, const char *limit, int *which)
{
	struct gline gl;

	g->pos.line = l->no;
	if (memchr(l->p, '\0', l->len))
		return read_error(&g->pos, "NUL byte in line");
	if ((*which = gperf_maps_header(l)))
		return 2;
	/* A stack line that did not parse, and was not cut. */
	if (g->has_broken)
		return parse_broken(g, NOT_CUT);
	*after_stack = false;
	if (line_is_blank(l))
		return 0;
	if (comment(l)) {
		parse_comment(g, l);
		return 0;
	}
	if (intern_held(g) < 0)
		return -1;
	if (!l->newline && g->type == H_GPERF) {
		/* The file ends inside a stack line. */
		g->cut = true;
		if (parse_stack_line(g, l, CUT_AT_EOF, limit, &gl) < 0)
			return -1;
		hold(g, &gl);
		return 1;
	}
	g->pos.quiet = true;
	if (parse_stack_line(g, l, NOT_CUT, limit, &gl) == 0) {
		hold(g, &gl);
	} else {
		/* Kept until the next line says whether gperftools cut it
		 * short (the maps follow at once) or it is an error. */
		sb_reset(&g->broken);
		sb_add(&g->broken, l->p, l->len);
		g->broken_no = l->no;
		g->has_broken = true;
	}
	g->pos.quiet = false;
	*after_stack = true;
	return 0;
}

/* The stack line GL, parsed the fast way: held. */
static int fast_line(struct gparser *g, const struct gline *gl,
		     bool *after_stack)
{
	/* A stack line that did not parse, and was not cut. */
	if (g->has_broken)
		return parse_broken(g, NOT_CUT);
	if (intern_held(g) < 0)
		return -1;
	hold(g, gl);
	*after_stack = true;
	return 0;
}

/* The same, its frames given by id: IDS, hashed as stacks_hash does,
 * the first at address FIRST. */
int gperf_fast_ids_line(struct gparser *g, const struct gline *gl,
			const uint32_t *ids, uint64_t hash, uint64_t first,
			bool *after_stack)
{
	if (fast_line(g, gl, after_stack) < 0)
		return -1;
	GROW(g->held_ids, gl->depth, g->held_ids_alloc);
	if (gl->depth)
		memcpy(g->held_ids, ids, gl->depth * sizeof(*ids));
	g->held_hash = hash;
	/* (Interned when the next line is taken: its slot asked for now.) */
	stacks_prefetch(&g->m->stacks, hash);
	g->held_first = first;
	g->held_by_id = true;
	return 0;
}

/* The end of the lines: the one held, and one that did not parse. */
int gperf_end_of_lines(struct gparser *g)
{
	if (g->has_broken)
		return parse_broken(g, NOT_CUT);
	return intern_held(g);
}

/* The lines after the header, on this thread: 0, or -1 after an error. */
static int parse_lines(struct gparser *g, bool *in_maps)
{
	struct line l;
	bool after_stack = false;
	int got, which, rc;

	while ((got = stream_line(g->s, &l)) > 0) {
		struct gline gl;

		/*
		 * The common line first: a stack line that parses whole, so
		 * holds no NUL, nor the maps' header.  The line before is
		 * interned once this one shows it was not cut short.
		 */
		if (!g->has_broken && l.newline && gperf_stack_start(&l)) {
			g->pos.quiet = true;
			rc = parse_stack_line(g, &l, NOT_CUT,
					      stream_limit(g->s), &gl);
			g->pos.quiet = false;
			if (rc == 0) {
				if (fast_line(g, &gl, &after_stack) < 0)
					return -1;
				continue;
			}
		}
		rc = gperf_slow_line(g, &l, &after_stack, stream_limit(g->s),
				     &which);
		if (rc < 0)
			return -1;
		if (rc == 2) {
			*in_maps = true;
			return gperf_read_maps(g, which, l.no, after_stack);
		}
		if (rc == 1)
			break;
	}
	if (got < 0)
		return -1;
	return gperf_end_of_lines(g);
}

int gperf_parse(struct snapshot *snap, struct line_stream *s,
		struct model *m, struct read_run *run)
{
	struct gparser g;
	struct model_mark mark;
	struct line l;
	bool header_seen = false, in_maps = false;
	int rc = 0, got;

	memset(&g, 0, sizeof(g));
	g.snap = snap;
	g.m = m;
	g.run = run;
	g.s = s;
	g.pos.path = s->path;
	g.cut_line = SIZE_MAX;
	model_mark(m, &mark);
	while (!header_seen && (got = stream_line(s, &l)) > 0) {
		g.pos.line = l.no;
		if (memchr(l.p, '\0', l.len)) {
			rc = read_error(&g.pos, "NUL byte in line");
			break;
		}
		if (line_is_blank(&l) || comment(&l))
			continue;
		if (l.len && l.p[0] == '%') {
			/* pprof's commands; %warn is for the user. */
			if (l.len > 6 && !memcmp(l.p, "%warn ", 6))
				warning("%s:%lu: the profile warns: %.*s",
					g.pos.path, l.no, (int)(l.len - 6),
					l.p + 6);
			continue;
		}
		rc = header(&g, &l);
		header_seen = true;
	}
	if (rc == 0 && !header_seen) {
		g.pos.line = 1;
		rc = got < 0 ? -1
			     : read_error(&g.pos, "empty profile (no 'heap "
						  "profile:' line)");
	}
	if (rc == 0) {
		g.early_from = m->buckets.n;
		g.early = m->buckets.by_index && !tail_names_tcmalloc(s);
		rc = threads_wanted() > 1 ? gperf_parse_on_two(&g, &in_maps)
					  : parse_lines(&g, &in_maps);
	}
	/* (Go's profiles have no maps: their comments name the frames.) */
	if (rc == 0 && !in_maps && g.type == H_GPERF)
		warning("%s: no MAPPED_LIBRARIES: section (file cut short?); "
			"its frames cannot be symbolized", g.pos.path);
	else if (rc == 0 && !in_maps && g.type != H_GO)
		warning("%s: no maps (MAPPED_LIBRARIES: or --- Memory map: "
			"---); its frames cannot be symbolized",
			g.pos.path);
	if (rc == 0 && g.cut)
		warning("%s:%lu: the last stack line is cut short (gperftools "
			"2.10-2.15 cut profiles at 1 MiB); its stack may be "
			"incomplete", g.pos.path,
			snap->nlines ? g.nos[snap->nlines - 1] : 1UL);
	if (rc == 0) {
		run->profile_kind = (int)g.type + 1;
		/*
		 * The run's last dump: its frames and stacks are all in, and
		 * the tables that found them by content go before its
		 * buckets are made (a million stacks' are 34 MB: gperf-pool
		 * of make bench peaked there, 301 MB).
		 */
		if (run->last)
			model_trim(m);
		rc = build(&g);
	} else {
		if (g.early_n && !model_drop_stack_buckets(m, g.early_from))
			BUG("%s: the buckets made early stay", g.pos.path);
		model_rollback(m, &mark);
	}
	if (rc == 0)
		say_what(&g);
	FREE_ALL(g.frames[0], g.frames[1], g.held_ids, g.stack_ids, g.nos,
		 g.syms, g.firsts, g.keys);
	sb_release(&g.symtext);
	sb_release(&g.broken);
	read_pos_release(&g.pos);
	return rc;
}

bool gperf_last_at_exit(const char *path)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	bool yes = f && fgets(buf, sizeof(buf), f) &&
		   strstr(buf, "@ heapprofile");

	if (f)
		fclose(f);
	return yes;
}

char **gperf_binaries(const char *path, size_t *n)
{
	static const char mark[] = "\nMAPPED_LIBRARIES:\n";
	/* (The list is a few KiB: its usual size read first.) */
	const size_t first = 64u << 10, most = 1u << 20;
	struct arena arena = ARENA_INIT;
	struct strtab names;
	struct stat st;
	char **v = NULL, *buf = NULL;
	const char *p, *end, *at = NULL;
	size_t len, alloc = 0;
	/* (Not blocking on a FIFO that has no writer: it is not read.) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	*n = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		goto out;
	for (size_t want = first; !at; want = most) {
		len = (uint64_t)st.st_size < want ? (size_t)st.st_size : want;
		free(buf);
		buf = xmalloc(len);
		if (pread_full(fd, buf, len, (uint64_t)st.st_size - len) != len)
			goto out;
		/* (The last one: a comment may quote the header, not end
		 * the file's lines.) */
		for (p = buf; (p = memmem(p, len - (size_t)(p - buf), mark,
					  sizeof(mark) - 1));
		     p++)
			at = p;
		if (!at && (len == (uint64_t)st.st_size || want == most))
			goto out;
	}
	strtab_init(&names, &arena);
	end = buf + len;
	for (p = at + sizeof(mark) - 1; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct vma v1;
		bool seen = false;

		if (maps_parse_line(p, l, &v1, &names) == 0 &&
		    vma_executable(&v1) && v1.name[0] == '/') {
			for (size_t i = 0; i < *n && !seen; i++)
				seen = !strcmp(v[i], v1.name);
			if (!seen) {
				GROW(v, *n + 1, alloc);
				v[(*n)++] = xstrdup(v1.name);
			}
		}
		p += l + 1;
	}
	strtab_free(&names);
	arena_free(&arena);
out:
	free(buf);
	close(fd);
	return v;
}
