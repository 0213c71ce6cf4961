/*
 * A text heap profile read on two cores where there are two (see
 * gperf_parse_on_two below): the reader's pipeline, on the thread
 * module's hand-off.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gperf_parse.h"
#include "threads.h"
#include "util.h"

/*
 * A profile is read on two cores where there are two: a thread takes its
 * lines and parses the stack lines the fast way takes (most), into
 * blocks of records handed to this one (threads.h), which interns them
 * and takes any other line as parse_lines would.  A line the fast way
 * does not take goes as text; the thread stops at the maps' header (this
 * one reads the rest of the file) or the end.  So the order of things,
 * and what is said, are the same as on one core.
 *
 * The thread also gives each address its frame id, from a table of its
 * own (the model's, copied when it starts, and the addresses it met
 * since): a million stacks of 17 frames look up their frames there,
 * beside this thread, which only interns the stacks by a hash of their
 * ids and, in order, the frames the thread met first.  Those get the
 * ids the thread gave them, unless this thread interned frames of its
 * own meanwhile (a line the fast way did not take): then the thread's
 * ids are translated.  Until then the thread's table is the model's
 * own: those frames are only added to the model, not looked up again (a
 * profile of 82,000 frames met once each spent a quarter of this
 * thread's time building a second table of them, mostly in page faults),
 * and the thread's table becomes the model's at the end.
 */
enum rec_kind {
	REC_STACK,  /* a stack line, parsed: its frames' ids follow, then
		       (8-aligned) the addresses of those met first */
	REC_TEXT,   /* any other line: its text follows */
	REC_MAPS,   /* the maps' header; the thread has stopped */
};

struct rec {
	uint32_t kind;
	int which;             /* REC_MAPS: gperf_maps_header()'s */
	struct gline gl;       /* REC_STACK; gl.no is any record's line */
	uint32_t nnew;         /* REC_STACK: frames the thread met first */
	uint64_t first;        /* REC_STACK: its first frame's address */
	size_t len;            /* REC_TEXT: its bytes */
	bool newline;          /* REC_TEXT */
};

/*
 * A block's size: a file's thirty-second, from 64 KiB to 1 MiB.  This
 * thread starts once the first block is full, and a profile of 1.9 MB
 * (82,000 frames) made 2 MiB of records: in blocks of 1 MiB, this one
 * waited 1.8 ms for the first, and the other faulted in 2 MiB of blocks
 * it could have used again.  A big file's blocks stay big (fewer
 * hand-offs).
 */
#define PIPE_BLOCK_MIN (64u << 10)
#define PIPE_BLOCK_MAX (1u << 20)
#define PIPE_BLOCKS 4

/* What take_block stops with (besides going on, 0). */
enum { TAKEN_ALL = 1, TAKEN_MAPS };

/*
 * Both threads touch their part of it for every line: each part, and
 * each block, on cache lines of its own (or one thread's writes would
 * take the other's line away each time).
 */
#define LINE_ALIGNED __attribute__((aligned(64)))

struct pipe {
	struct gparser *g;      /* (the thread reads only its header) */
	struct pipe_block {
		char *buf;
		size_t cap, len;
	} LINE_ALIGNED b[PIPE_BLOCKS]; /* the hand-off's slots */
	size_t block;           /* their size (see PIPE_BLOCK_MIN) */
	/* the thread's */
	struct handoff *h LINE_ALIGNED;
	struct pipe_block *cur;
	/* A line's frames and their hashes, in turn: each line's ids are
	 * looked up once the next is parsed, so that the slots it asked
	 * for early are there (see pipe_main). */
	uint64_t *frames[2], *hashes[2];
	size_t frames_alloc[2], hashes_alloc[2];
	int fcur;
	bool pending;           /* the other is a line's, to send */
	struct rec pend;        /* its record */
	struct frame_slot *slots; /* address -> id + 1 (see above) */
	size_t mask;
	uint32_t next_id;       /* the next frame's */
	bool no_ids;            /* ran out of them: all goes as text */
	/* this one's */
	bool after_stack LINE_ALIGNED; /* the last line taken was a stack
					  line */
	int rc;                 /* TAKEN_ALL: the lines' end */
	int which;              /* TAKEN_MAPS: gperf_maps_header()'s, */
	unsigned long maps_no;  /* at this line */
	uint32_t base;          /* the model's frames when the thread began */
	uint32_t met_next;      /* the thread's id of the next frame met */
	uint32_t *xlat;         /* its ids from base on: the model's */
	size_t xlat_alloc;
	bool translate;         /* some differ */
	bool appending;         /* the frames met are only appended (their
				   ids the thread's, nothing else interned) */
	bool appended;          /* some were: the model's table let go */
	uint32_t *tmp;
	size_t tmp_alloc;
};

/* Room for N more bytes of records in the thread's block, which goes to
 * this thread when full: false when it takes no more. */
static bool pipe_room(struct pipe *pp, size_t n)
{
	struct pipe_block *b = pp->cur;
	size_t slot;

	if (b && b->len + n <= b->cap)
		return true;
	pp->cur = NULL;
	if ((b && !handoff_put(pp->h)) ||
	    (slot = handoff_slot(pp->h)) == SIZE_MAX)
		return false;
	b = pp->cur = &pp->b[slot];
	b->len = 0;
	if (b->cap < n) {
		/* (A line longer than a block: a block of its size.) */
		b->cap = n > pp->block ? n : pp->block;
		free(b->buf);
		b->buf = xmalloc(b->cap);
	}
	return true;
}

/* Add record R and N bytes at P after it (8-aligned): false when this
 * thread takes no more. */
static bool pipe_put(struct pipe *pp, const struct rec *r, const void *p,
		     size_t n)
{
	size_t size = sizeof(*r) + ((n + 7) & ~(size_t)7);
	char *at;

	if (!pipe_room(pp, size))
		return false;
	at = pp->cur->buf + pp->cur->len;
	memcpy(at, r, sizeof(*r));
	if (n)
		memcpy(at + sizeof(*r), p, n);
	pp->cur->len += size;
	return true;
}

/* Hash line buffer B's N addresses, and ask for their slots. */
static void pipe_prefetch(struct pipe *pp, int b, uint32_t n)
{
	const uint64_t *a = pp->frames[b];
	uint64_t *h;

	GROW(pp->hashes[b], n, pp->hashes_alloc[b]);
	h = pp->hashes[b];
	for (uint32_t i = 0; i < n; i++) {
		h[i] = hash_u64(a[i]);
		prefetch(&pp->slots[(size_t)h[i] & pp->mask]);
	}
}

/*
 * The ids of line buffer B's N frames into IDS, the addresses met first
 * into MET (*NMET of them, N at most).  (Room for their ids was made
 * sure of: see pipe_main.)
 */
static void pipe_ids(struct pipe *pp, int b, uint32_t n, uint32_t *ids,
		     uint64_t *met, uint32_t *nmet)
{
	const uint64_t *a = pp->frames[b], *h = pp->hashes[b];

	*nmet = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t k = (size_t)h[i] & pp->mask;

		while (pp->slots[k].id && pp->slots[k].addr != a[i])
			k = (k + 1) & pp->mask;
		if (!pp->slots[k].id) {
			pp->slots[k].addr = a[i];
			pp->slots[k].id = ++pp->next_id;
			met[(*nmet)++] = a[i];
		}
		ids[i] = pp->slots[k].id - 1;
		if ((size_t)pp->next_id * 2 > pp->mask)
			frame_slots_grow(&pp->slots, &pp->mask);
	}
}

/* Where a stack record's addresses met first start, after its DEPTH ids
 * (8-aligned). */
static size_t met_offset(uint32_t depth)
{
	return ((size_t)depth * sizeof(uint32_t) + 7) & ~(size_t)7;
}

/*
 * The line parsed before, if any, to this thread: false when it takes
 * no more.  Its ids and the addresses met first are written in the
 * block where they go, room made for all its frames met first (a copy
 * of each line's ids, a call to memcpy of a size not known, was a sixth
 * of this thread's time).
 */
static bool pipe_flush(struct pipe *pp)
{
	struct rec *r = &pp->pend;
	int b = 1 - pp->fcur;
	uint32_t depth = r->gl.depth;
	size_t ids_at = sizeof(*r), met_at = ids_at + met_offset(depth);
	char *at;

	if (!pp->pending)
		return true;
	pp->pending = false;
	if (!pipe_room(pp, met_at + (size_t)depth * sizeof(uint64_t)))
		return false;
	at = pp->cur->buf + pp->cur->len;
	pipe_ids(pp, b, depth, (uint32_t *)(at + ids_at),
		 (uint64_t *)(at + met_at), &r->nnew);
	r->first = depth ? pp->frames[b][0] : 0;
	memcpy(at, r, sizeof(*r));
	pp->cur->len += met_at + (size_t)r->nnew * sizeof(uint64_t);
	return true;
}

/* The thread: 0 at the end of the lines or the maps' header, -1 after a
 * read error (said). */
static int pipe_main(struct handoff *h, void *arg)
{
	struct pipe *pp = arg;
	const struct gparser *g = pp->g;
	struct gparser pg;
	struct line l;
	struct rec r;
	int got;

	/* (The header's figures, for the fast parse; nothing is said.) */
	memset(&pg, 0, sizeof(pg));
	pg.pos.path = g->pos.path;
	pg.type = g->type;
	pg.rate = g->rate;
	pg.has_alloc = g->has_alloc;
	pg.pos.quiet = true;
	pp->h = h;
	while ((got = stream_line(g->s, &l)) > 0) {
		int b = pp->fcur;

		memset(&r, 0, sizeof(r));
		if (l.newline && !pp->no_ids && gperf_stack_start(&l) &&
		    gperf_parse_stack_line_into(&pg, &l, NOT_CUT,
						stream_limit(g->s), &r.gl,
						&pp->frames[b],
						&pp->frames_alloc[b]) == 0) {
			uint64_t ids_at_most = (uint64_t)pp->next_id +
					       r.gl.depth +
					       (pp->pending ? pp->pend.gl.depth
							    : 0);

			/* (Ids for all its frames, and the line's before,
			 * or it goes as text, and all after it.) */
			pp->no_ids = ids_at_most >= FRAME_NONE - 1;
		}
		if (l.newline && !pp->no_ids && r.gl.no) {
			r.kind = REC_STACK;
			pipe_prefetch(pp, b, r.gl.depth);
			if (!pipe_flush(pp))
				break;
			pp->pend = r;
			pp->pending = true;
			pp->fcur = 1 - b;
			continue;
		}
		if (!pipe_flush(pp))
			break;
		memset(&r, 0, sizeof(r));
		r.gl.no = l.no;
		/* (A line with a NUL is said wrong before it is looked at.) */
		if (!memchr(l.p, '\0', l.len) &&
		    (r.which = gperf_maps_header(&l))) {
			r.kind = REC_MAPS;
			pipe_put(pp, &r, NULL, 0);
			break;
		}
		r.kind = REC_TEXT;
		r.len = l.len;
		r.newline = l.newline;
		if (!pipe_put(pp, &r, l.p, l.len))
			break;
	}
	if (got <= 0)
		pipe_flush(pp);
	if (pp->cur)
		handoff_put(h); /* (the last block) */
	read_pos_release(&pg.pos);
	return got < 0 ? -1 : 0;
}

/*
 * The frames the thread met first, N at A, in its order: interned (0),
 * or -1 after saying why not.
 */
static int take_met(struct pipe *pp, const uint64_t *a, uint32_t n)
{
	struct frame_table *t = &pp->g->m->frames;

	/* Nothing interned here since (no frame added, nor the table built
	 * again by frames_intern): the thread's ids are the next ones. */
	if (pp->appending && t->n == pp->met_next &&
	    (!pp->appended || t->stale)) {
		GROW(pp->xlat, (size_t)pp->met_next - pp->base + n,
		     pp->xlat_alloc);
		for (uint32_t i = 0; i < n; i++) {
			if (frames_append(t, a[i]) == FRAME_NONE)
				return error("more than %" PRIu32
					     " distinct frames",
					     UINT32_MAX - 1);
			pp->xlat[pp->met_next - pp->base] = pp->met_next;
			pp->met_next++;
		}
		pp->appended |= n > 0;
		return 0;
	}
	pp->appending = false;
	for (uint32_t i = 0; i < n; i++)
		frames_prefetch(t, a[i]);
	GROW(pp->xlat, (size_t)pp->met_next - pp->base + n, pp->xlat_alloc);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = frames_intern(t, a[i]);

		if (id == FRAME_NONE)
			return error("more than %" PRIu32 " distinct frames",
				     UINT32_MAX - 1);
		pp->translate |= id != pp->met_next;
		pp->xlat[pp->met_next++ - pp->base] = id;
	}
	return 0;
}

/* The record R's stack line, of the thread's ids IDS: held.  (HASH:
 * theirs, if AHEAD hashed them.) */
static int take_stack(struct pipe *pp, const struct rec *r,
		      const uint32_t *ids, bool ahead, uint64_t hash)
{
	uint32_t depth = r->gl.depth;

	/* (Hashed ahead only while no id was translated: translate, once
	 * set, stays.) */
	if (ahead && !pp->translate)
		return gperf_fast_ids_line(pp->g, &r->gl, ids, hash, r->first,
					   &pp->after_stack);
	if (pp->translate) {
		GROW(pp->tmp, depth, pp->tmp_alloc);
		for (uint32_t i = 0; i < depth; i++)
			pp->tmp[i] = ids[i] < pp->base
					     ? ids[i]
					     : pp->xlat[ids[i] - pp->base];
		ids = pp->tmp;
	}
	/* (Hashed here: the other thread has more to do.) */
	return gperf_fast_ids_line(pp->g, &r->gl, ids, stacks_hash(ids, depth),
				   r->first, &pp->after_stack);
}

/* The records of block SLOT: 0 to go on, else TAKEN_ALL (the lines
 * taken, pp->rc set) or TAKEN_MAPS (at the maps' header). */
/* The bytes of record R and of what follows it. */
static size_t rec_size(const struct rec *r)
{
	return sizeof(*r) + (r->kind == REC_STACK
				     ? met_offset(r->gl.depth) +
					       r->nnew * sizeof(uint64_t)
				     : r->kind == REC_TEXT
				     ? (r->len + 7) & ~(size_t)7
				     : 0);
}

/*
 * A stack's slot in the model's table, asked for a few records before it
 * is interned: asked for one line ahead (gperf_fast_ids_line), the slot's
 * load was 88% of the interning's samples (a million stacks, a slot of
 * 16 MB of them each: one trip to memory a stack, not hidden).  So the
 * records ahead are hashed, and their slots asked for, AHEAD_RECS ahead.
 */
#define AHEAD_RECS 8

struct ahead {
	size_t at;      /* the next record to hash */
	unsigned n;     /* records hashed, not yet taken */
	unsigned first; /* the ring's slot of the next one taken */
	struct {
		uint64_t hash;
		bool hashed;
	} ring[AHEAD_RECS];
};

static void ahead_fill(struct pipe *pp, const struct pipe_block *b,
		       struct ahead *a)
{
	while (a->n < AHEAD_RECS && a->at < b->len) {
		struct rec r;
		unsigned k = (a->first + a->n++) % AHEAD_RECS;

		memcpy(&r, b->buf + a->at, sizeof(r));
		a->ring[k].hashed = r.kind == REC_STACK && !pp->translate;
		if (a->ring[k].hashed) {
			a->ring[k].hash = stacks_hash(
				(const uint32_t *)(b->buf + a->at + sizeof(r)),
				r.gl.depth);
			stacks_prefetch(&pp->g->m->stacks, a->ring[k].hash);
		}
		a->at += rec_size(&r);
		if (r.kind == REC_MAPS)
			a->at = b->len;
	}
}

static int take_block(void *arg, size_t slot)
{
	struct pipe *pp = arg;
	struct gparser *g = pp->g;
	const struct pipe_block *b = &pp->b[slot];
	struct ahead a = { 0 };

	for (size_t at = 0; at < b->len;) {
		struct rec r;
		const char *p = b->buf + at + sizeof(r);
		struct line l;
		int which, rc;
		unsigned k;

		ahead_fill(pp, b, &a);
		k = a.first;
		a.first = (a.first + 1) % AHEAD_RECS;
		a.n--;
		memcpy(&r, b->buf + at, sizeof(r));
		at += rec_size(&r);
		switch (r.kind) {
		case REC_STACK:
			if ((pp->rc = take_met(
				     pp,
				     (const uint64_t *)(p + met_offset(
								    r.gl.depth)),
				     r.nnew)) < 0 ||
			    (pp->rc = take_stack(pp, &r, (const uint32_t *)p,
						 a.ring[k].hashed,
						 a.ring[k].hash)) < 0)
				return TAKEN_ALL;
			break;
		case REC_TEXT:
			l = (struct line){ p, r.len, r.gl.no, r.newline };
			/* (No reading past it: the general parser takes
			 * every word.) */
			rc = gperf_slow_line(g, &l, &pp->after_stack,
					     l.p + l.len, &which);
			if (rc == 2)
				BUG("%s:%lu: the maps' header went as text",
				    g->pos.path, l.no);
			if (rc < 0 || rc == 1) {
				/* (1: the last line, the end follows.) */
				pp->rc = rc < 0 ? -1 : gperf_end_of_lines(g);
				return TAKEN_ALL;
			}
			break;
		default: /* REC_MAPS: the thread has stopped after it */
			pp->which = r.which;
			pp->maps_no = r.gl.no;
			return TAKEN_MAPS;
		}
	}
	return 0;
}

/*
 * The thread's table, to begin with: the model's frames, in room for as
 * many as the rest of the file may add (a frame is 16 bytes of text or
 * so, and a table half full), up to 4 MiB.  Grown from 4,096 slots by
 * doubling, it was faulted in six times over for a profile of 82,000
 * frames, each met once.
 */
static void pipe_table(struct pipe *pp, const struct gparser *g)
{
	const struct frame_table *t = &g->m->frames;
	const struct line_stream *s = g->s;
	size_t left = s->regular && s->size > s->got ? s->size - s->got : 0;
	size_t want = (left + s->fill - s->pos) / 16 * 2, mask = t->mask;

	while (mask < want && mask < (1u << 18) - 1)
		mask = mask * 2 + 1;
	pp->mask = mask;
	if (mask == t->mask) {
		pp->slots = xreallocarray(NULL, mask + 1, sizeof(*pp->slots));
		memcpy(pp->slots, t->slots, (mask + 1) * sizeof(*pp->slots));
		return;
	}
	pp->slots = xcalloc_table(mask + 1, sizeof(*pp->slots));
	for (size_t i = 0; i < t->n; i++) {
		size_t k = (size_t)hash_u64(t->v[i]->addr) & mask;

		while (pp->slots[k].id)
			k = (k + 1) & mask;
		pp->slots[k].addr = t->v[i]->addr;
		pp->slots[k].id = t->v[i]->id + 1;
	}
}

/*
 * A big file's stacks: about as many as its lines, which its first block
 * tells the length of.  Room is made for them in the model (its stack
 * table, grown by doubling, was 5% of a million-stack profile's time in
 * fresh pages) and for the snapshot's lines, once, in huge pages.
 */
static void expect_lines(struct gparser *g)
{
	const struct line_stream *s = g->s;
	const char *p = s->buf + s->pos, *end = s->buf + s->fill;
	size_t nl = 0, est;

	if (!s->regular || s->size < (8u << 20) || end - p < 4096)
		return;
	while ((p = memchr(p, '\n', (size_t)(end - p))) && ++p < end)
		nl++;
	if (nl < 256)
		return;
	est = (size_t)((double)s->size / (double)(s->fill - s->pos) *
		       (double)nl);
	/* (An eighth more: a few lines past a room made exactly would
	 * double each array, moved, its first place left resident.) */
	est += est / 8;
	model_expect_buckets(g->m, est, true);
	gperf_expect_lines(g, est);
}

/* The lines after the header, on two threads (see struct pipe). */
int gperf_parse_on_two(struct gparser *g, bool *in_maps)
{
	struct pipe pp;
	int rc;

	expect_lines(g);
	/* (The thread that parses is the slower one: the reads not its.) */
	stream_read_behind(g->s);
	memset(&pp, 0, sizeof(pp));
	pp.g = g;
	pp.block = !g->s->regular || g->s->size / 32 > PIPE_BLOCK_MAX
			   ? PIPE_BLOCK_MAX
		   : g->s->size / 32 < PIPE_BLOCK_MIN ? PIPE_BLOCK_MIN
						       : g->s->size / 32;
	/* (The model's frames, before this thread adds any.) */
	frames_ready(&g->m->frames);
	pipe_table(&pp, g);
	pp.base = pp.met_next = pp.next_id = (uint32_t)g->m->frames.n;
	pp.appending = true;
	switch (handoff_run(PIPE_BLOCKS, pipe_main, take_block, &pp)) {
	case 0: /* the end of the file */
		rc = gperf_end_of_lines(g);
		break;
	case TAKEN_ALL:
		rc = pp.rc;
		break;
	case TAKEN_MAPS:
		/* (The thread stopped after the header: the rest of the
		 * stream is the maps.) */
		*in_maps = true;
		rc = gperf_read_maps(g, pp.which, pp.maps_no, pp.after_stack);
		break;
	default: /* a read error, said */
		rc = -1;
		break;
	}
	/* The thread's table holds the model's frames and no others. */
	if (pp.appending && pp.appended && g->m->frames.stale &&
	    g->m->frames.n == pp.next_id) {
		frames_adopt(&g->m->frames, pp.slots, pp.mask);
		pp.slots = NULL;
	}
	for (size_t i = 0; i < PIPE_BLOCKS; i++)
		free(pp.b[i].buf);
	for (int i = 0; i < 2; i++) {
		free(pp.frames[i]);
		free(pp.hashes[i]);
	}
	FREE_ALL(pp.slots, pp.xlat, pp.tmp);
	return rc < 0 ? -1 : 0;
}

