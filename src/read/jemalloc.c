/*
 * jemalloc's heap profile dumps (jemalloc >= 4.0, prof:true): a first line
 * "heap_v2/RATE", the process's totals ("t*:") and each thread's ("tN:",
 * perhaps with its name), then each stack ("@ 0x... 0x...", innermost
 * first) with its totals over threads ("t*:") and per thread ("tN:"), and
 * the maps after "MAPPED_LIBRARIES:".  Counts are "objs: bytes [objs:
 * bytes]", in use then accumulated; the accumulated pair is "[0: 0]"
 * unless jemalloc ran with prof_accum.
 *
 * Values are a sample, one every RATE bytes on average, unsampled as
 * jeprof does: each stack's pair times 1 / (1 - exp(-(bytes/objs)/RATE)),
 * kept as real numbers and cut to whole bytes only at the end.  Here the
 * cut is spread over the lines so that the snapshot's total is jeprof's
 * (each line's share is within one byte of its estimate).  A pair with
 * a zero is zero, as pprof has it (jeprof divides by zero).
 */
#include "jemalloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "scan.h"
#include "util.h"

bool jemalloc_claims(const char *p, size_t len)
{
	return len > 8 && !memcmp(p, "heap_v2/", 8) && is_digit(p[8]);
}

size_t jemalloc_dump_kind(const char *name, size_t end)
{
	size_t i = end;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i < 2 || !name[i - 1] || !strchr("fimu", name[i - 1]) ||
	    name[i - 2] != '.' || (name[i - 1] == 'f' && i != end))
		return 0;
	return end - i + 2;
}

struct jstack {
	uint64_t *frames;
	uint32_t depth;
	unsigned long no;
	bool counted;             /* its t*: line was seen */
	double v[4];              /* objs, bytes, accum objs, accum bytes */
};

struct jparser {
	struct reader_pos pos;
	struct snapshot *snap;
	uint64_t rate;
	struct jstack *v;
	size_t n, alloc;
	bool accum;               /* some accumulated count is not 0 */
	/* The estimates summed so far, and the cuts (see sample). */
	double sum[4];
	int64_t done[4];
};

/* "tX: N: B [N: B]" after the "t": 0 (V filled, ALL: X is '*'), -1. */
static int counts_line(struct cursor *c, uint64_t v[4], bool *all)
{
	static const char *const after[4] = { ":", "[", ":", "]" };

	*all = cursor_eat(c, "*");
	if (!*all && parse_u64(c, &v[0]) != NUM_OK)
		return -1;
	if (!cursor_eat(c, ":"))
		return -1;
	for (int i = 0; i < 4; i++) {
		cursor_skip_space(c);
		if (parse_u64(c, &v[i]) != NUM_OK)
			return -1;
		cursor_skip_space(c);
		if (!cursor_eat(c, after[i]))
			return -1;
	}
	return 0;
}

static int parse_stack(struct jparser *j, const struct line *l,
		       struct cursor *c)
{
	struct jstack s;
	const char *w;
	size_t wl, alloc = 0;

	memset(&s, 0, sizeof(s));
	s.no = l->no;
	while (cursor_word(c, &w, &wl)) {
		uint64_t addr;

		if (word_hex(w, wl, &addr, true) != NUM_OK) {
			free(s.frames);
			return read_error(&j->pos, "invalid frame address in: "
					  "'%s'",
					  read_quote(&j->pos, l->p, l->len));
		}
		if (s.depth == UINT32_MAX) {
			free(s.frames);
			return read_error(&j->pos, "stack too deep: '%s'",
					  read_quote(&j->pos, l->p, l->len));
		}
		GROW(s.frames, s.depth + 1, alloc);
		s.frames[s.depth++] = addr;
	}
	GROW(j->v, j->n + 1, j->alloc);
	j->v[j->n++] = s;
	return 0;
}

/* jeprof's estimate of a sampled pair (objs, bytes), as reals. */
static void unsample(uint64_t rate, const uint64_t in[2], double out[2])
{
	double scale = 1;

	if (rate > 1 && (!in[0] || !in[1]))
		scale = 0; /* (objects of no size: 0/0 in the formula) */
	else if (rate > 1)
		scale = 1 / (1 - exp(-((double)in[1] / (double)in[0]) /
				     (double)rate));
	out[0] = (double)in[0] * scale;
	out[1] = (double)in[1] * scale;
}

static int parse_lines(struct jparser *j, struct snapshot *snap,
		       const struct filebuf *fb, struct model *m)
{
	struct line_reader r;
	struct line l;

	lines_init(&r, fb->data, fb->size);
	while (lines_next(&r, &l)) {
		struct cursor c = cursor_of(&l);
		uint64_t v[4];
		bool all;

		j->pos.line = l.no;
		if (memchr(l.p, '\0', l.len))
			return read_error(&j->pos, "NUL byte in line: '%s'",
					  read_quote(&j->pos, l.p, l.len));
		cursor_skip_space(&c);
		if (l.no == 1) {
			c.p += 8;
			if (parse_u64(&c, &j->rate) != NUM_OK ||
			    !cursor_at_end(&c))
				return read_error(&j->pos, "expected "
						  "'heap_v2/RATE': '%s'",
						  read_quote(&j->pos, l.p,
							     l.len));
			continue;
		}
		if (cursor_at_end(&c))
			continue;
		if (cursor_eat(&c, "MAPPED_LIBRARIES:")) {
			snap->has_own_maps =
				maps_parse(&snap->own_maps, r.p,
					   (size_t)(r.end - r.p), j->pos.path,
					   l.no + 1, &m->strings, true) == 0;
			return snap->has_own_maps ? 0 : -1;
		}
		if (cursor_eat(&c, "@")) {
			if (parse_stack(j, &l, &c) < 0)
				return -1;
			continue;
		}
		if (!cursor_eat(&c, "t") || counts_line(&c, v, &all) < 0)
			return read_error(&j->pos, "expected 'tN: N: B [N: B]' "
					  "or '@ FRAMES', found: '%s'",
					  read_quote(&j->pos, l.p, l.len));
		/* (A thread line may end in the thread's name.) */
		if (!j->n || !all)
			continue; /* the process's or a thread's totals */
		if (j->v[j->n - 1].counted)
			return read_error(&j->pos, "a second 't*:' line for "
					  "the stack above: '%s'",
					  read_quote(&j->pos, l.p, l.len));
		if (v[2] || v[3])
			j->accum = true;
		unsample(j->rate, v, j->v[j->n - 1].v);
		unsample(j->rate, v + 2, j->v[j->n - 1].v + 2);
		j->v[j->n - 1].counted = true;
	}
	return 0;
}

/*
 * jemalloc's own frames lead every stack (its profiler records from
 * inside malloc); where jemalloc is a shared library (LD_PRELOAD) its
 * internal functions have no names to tell them by, but the maps say
 * which frames are in it.  Those frames go: what called malloc owns the
 * bytes, as jeprof shows them.  (The last one is kept if all are.)
 */
static void drop_own_frames(const struct snapshot *snap, struct jstack *s)
{
	uint32_t k = 0;

	if (!snap->has_own_maps)
		return;
	while (k + 1 < s->depth) {
		const struct vma *v = maps_find(&snap->own_maps, s->frames[k]);
		const char *base = v ? strrchr(v->name, '/') : NULL;

		if (!base || strncmp(base + 1, "libjemalloc", 11))
			break;
		k++;
	}
	if (!k)
		return;
	memmove(s->frames, s->frames + k, (s->depth - k) * sizeof(*s->frames));
	s->depth -= k;
}

/*
 * Stack I as a sample, in order (see read_samples).  Each value is cut
 * so that the running sum of the cuts is the running sum of the
 * estimates, cut.
 */
static int sample(void *ctx, size_t i, struct read_sample *out)
{
	struct jparser *j = ctx;
	struct jstack *s = &j->v[i];
	int64_t now[4];

	if (!s->counted) {
		j->pos.line = s->no;
		return read_error(&j->pos, "a stack without its 't*:' line");
	}
	drop_own_frames(j->snap, s);
	for (int k = 0; k < 4; k++) {
		j->sum[k] += s->v[k];
		if (j->sum[k] >= 9.2e18) {
			j->snap->overflow = true;
			j->sum[k] = 9.2e18;
		}
		now[k] = (int64_t)j->sum[k] - j->done[k];
		j->done[k] += now[k];
	}
	out->frames = s->frames;
	out->depth = s->depth;
	out->line = s->no;
	out->c = (struct sample_counts){ now[0], now[1], j->accum, now[2],
					 now[3] };
	return 0;
}

int jemalloc_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run)
{
	struct jparser j;
	int64_t total;
	int rc;

	memset(&j, 0, sizeof(j));
	j.pos.path = fb->path;
	j.snap = snap;
	rc = parse_lines(&j, snap, fb, m);
	if (rc == 0)
		rc = read_samples(snap, m, j.pos.path, j.n, sample, &j, &total);
	if (rc == 0)
		read_finish_profile(snap, total, 0, j.accum, j.accum);
	if (rc == 0 && !snap->has_own_maps)
		warning("%s: no MAPPED_LIBRARIES: section; its frames cannot "
			"be symbolized", j.pos.path);
	if (rc == 0 && read_warn_first(run, READ_WARNED_PROFILE)) {
		if (j.rate > 1)
			warning("%s: a jemalloc heap profile sampled every "
				"%" PRIu64 " bytes on average: sizes and "
				"counts are estimates, unsampled as jeprof "
				"does; total is the profile's own sum%s",
				j.pos.path, j.rate,
				j.accum ? "" : "; it does not count "
					       "allocations (prof_accum off)");
		else
			warning("%s: a jemalloc heap profile of every "
				"allocation: total is the profile's own "
				"sum%s", j.pos.path,
				j.accum ? "" : "; it does not count "
					       "allocations (prof_accum off)");
	}
	for (size_t i = 0; i < j.n; i++)
		free(j.v[i].frames);
	free(j.v);
	read_pos_release(&j.pos);
	return rc;
}
