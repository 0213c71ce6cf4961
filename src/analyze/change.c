/*
 * Changes between two snapshots (see change.h).  In one run, stacks are
 * the model's own, so a pass over each snapshot from A to B sums the
 * bytes of its items into arrays by stack id; a stack grew at a step
 * when a pass found more than the one before, and shrank when less.  Across runs,
 * each end is summed alone and the stacks are joined by the text of
 * their frames (function names only: line numbers move between builds).
 */
#include "change.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "blocktypes.h"
#include "numfmt.h"
#include "stacktext.h"
#include "tally.h"
#include "input.h"
#include "util.h"

/* (In a stack's count of the steps it grew at: it shrank at one.) */
#define SHRANK 0x80000000u

/*
 * A stack through the passes of a run: its bytes at the last pass that
 * had it, which pass that was, and at how many steps it grew (SHRANK: it
 * shrank at one).  One entry, so that a pass visits each of its stacks
 * once, and the stacks it lacks are not visited at all: that one of them
 * dropped to nothing is seen when it comes back, or at the end.
 */
struct step {
	int64_t last;
	uint32_t pass;  /* 0: none yet */
	uint32_t first; /* the pass it first had bytes at */
	uint32_t grown;
};

/* Block counts by stack id, at one end (allocs: the blocks in use, where
 * the lines count those): kept only for the stacks the end's lines have
 * (a tenth of a deep run's million, say: by id, 100 MB for both ends,
 * each page faulted in and cleared). */
struct count {
	int64_t allocs, frees, alloc_bytes;
};
struct counts {
	uint32_t *slot;           /* by stack id: its count's index + 1, 0
				     where no stack line had the stack */
	struct count *v;
	size_t n, alloc;
};

/*
 * Sums by stack id over one snapshot's items.  A value is this pass's
 * when its stamp is: nothing is cleared between passes, and only the
 * stacks a snapshot has are visited.
 */
struct sums {
	/* (Together: an item costs one cache miss, not three.) */
	struct sum {
		int64_t bytes;
		uint32_t stamp;
		int col;          /* of its last item with bytes, or first */
	} *v;
	uint32_t *touched;        /* the ids this pass wrote */
	size_t ntouched, touched_alloc;
};

struct pass {
	const struct policy *p;
	size_t n;                 /* stacks covered */
	uint32_t k;               /* this pass's stamp: 1, 2, ... */
	struct sums cur;
	struct counts *counting;  /* at an end, else NULL */
	size_t ncounts;           /* what ends' counts cover */
	struct counts ends[2];
	const struct stack_line *lines_end; /* of the snapshot summed */
	const struct stack_line *lines;     /* its lines, */
	size_t nlines;
	const uint32_t *line_stack;         /* and their stacks' ids */
	/* This pass's totals: bytes with stacks, blocks allocated and
	 * freed (each line once). */
	int64_t heap, allocs, frees;
	const struct stack_line *counted_line;
	bool overflow;
};

static void sums_fit(struct sums *s, size_t old, size_t n)
{
	s->v = xrecallocarray(s->v, old, n, sizeof(*s->v));
}

static void counts_fit(struct counts *c, size_t old, size_t n)
{
	c->slot = xrecallocarray(c->slot, old, n, sizeof(*c->slot));
}

/* Did a stack line of C's end have stack ID? */
static bool counted_at(const struct counts *c, size_t id)
{
	return c->slot[id] != 0;
}

/* Stack ID's counts at C's end (all 0 where its lines lacked it). */
static const struct count *count_of(const struct counts *c, size_t id)
{
	static const struct count none;

	return c->slot[id] ? &c->v[c->slot[id] - 1] : &none;
}

/* Make room for every stack of M. */
static void pass_fit(struct pass *s, const struct model *m)
{
	size_t n = m->stacks.n;

	if (n <= s->n)
		return;
	sums_fit(&s->cur, s->n, n);
	s->n = n;
}

static void counts_free(struct counts *c)
{
	FREE_ALL(c->slot, c->v);
}

static void sums_free(struct sums *s)
{
	free(s->v);
	free(s->touched);
}

static void pass_free(struct pass *s)
{
	sums_free(&s->cur);
	counts_free(&s->ends[0]);
	counts_free(&s->ends[1]);
	memset(s, 0, sizeof(*s));
}

/* Bytes of stack ID in S, at pass K. */
static int64_t at(const struct sums *s, uint32_t id, uint32_t k)
{
	return s->v[id].stamp == k ? s->v[id].bytes : 0;
}

static int add_item(void *ctx, const struct item *it)
{
	struct pass *s = ctx;
	struct sums *c = &s->cur;
	uint32_t id;

	if (it->kind != ITEM_MALLOC && it->kind != ITEM_HOOKED)
		return 0; /* no stack */
	/* The components' stacks only, as top counts them. */
	if (!policy_in_partition(s->p, it->col))
		return 0;
	/* (The sums of a line's stack a few lines on: fetched now; by the
	 * ids the snapshot noted, else from the buckets.) */
	if (it->line && s->line_stack) {
		size_t i = (size_t)(it->line - s->lines);

		if (i + 8 < s->nlines && s->line_stack[i + 8] < s->n)
			prefetch(&c->v[s->line_stack[i + 8]]);
	} else if (it->line && it->line + 4 < s->lines_end &&
		   it->line[4].bucket) {
		prefetch(&c->v[it->line[4].bucket->stack->id]);
	}
	id = it->stack_id != BUCKET_KEY_NONE ? it->stack_id
					     : it->bucket->stack->id;
	if (c->v[id].stamp != s->k) {
		c->v[id].stamp = s->k;
		c->v[id].bytes = 0;
		c->v[id].col = it->col;
		GROW(c->touched, c->ntouched + 1, c->touched_alloc);
		c->touched[c->ntouched++] = id;
	}
	c->v[id].bytes = add64(c->v[id].bytes, it->bytes, &s->overflow);
	s->heap = add64(s->heap, it->bytes, &s->overflow);
	if (it->line && it->line != s->counted_line) {
		s->counted_line = it->line;
		s->allocs = add64(s->allocs, it->line->alloc, &s->overflow);
		s->frees = add64(s->frees, it->line->free, &s->overflow);
	}
	if (it->bytes)
		c->v[id].col = it->col;
	if (s->counting && it->line) {
		struct counts *n = s->counting;
		struct count *e;

		if (!n->slot[id]) {
			PUSH_ZEROED(n->v, n->n, n->alloc);
			n->slot[id] = (uint32_t)n->n;
		}
		e = &n->v[n->slot[id] - 1];
		e->allocs = add64(e->allocs, it->line->alloc, &s->overflow);
		e->frees = add64(e->frees, it->line->free, &s->overflow);
		e->alloc_bytes = add64(e->alloc_bytes, it->line->alloc_bytes,
				       &s->overflow);
	}
	return 0;
}

/* Read one end's path, time and columns; its totals are S's pass. */
static int end_of(struct change_end *e, struct classifier *cls,
		  const struct snapshot *snap, const struct pass *s)
{
	struct agg_stats stats;

	memset(&stats, 0, sizeof(stats));
	e->heap = s->heap;
	e->allocs = s->allocs;
	e->frees = s->frees;
	e->counted = !snap->counts_unknown;
	e->live = snap->counts_live;
	e->path = xstrdup(snap->path);
	if ((e->has_types = snap->has_heap)) {
		tally_init(&e->types);
		blocktypes_add_snapshot(&e->types, cls->m, snap);
	}
	e->time = snap->time;
	e->instructions = snap->time_instructions;
	e->values = xcalloc(cls->p->ncols, sizeof(*e->values));
	return aggregate_snapshot(cls, snap, NULL, e->values, &e->builtins,
				  &stats);
}

/* Sum SNAP's items into S, as its next pass. */
static int pass_run(struct pass *s, struct classifier *cls,
		    const struct model *m, const struct snapshot *snap)
{
	s->cur.ntouched = 0;
	s->heap = s->allocs = s->frees = 0;
	s->counted_line = NULL;
	s->k++;
	pass_fit(s, m);
	if (s->counting && s->ncounts < s->n) {
		counts_fit(&s->ends[0], s->ncounts, s->n);
		counts_fit(&s->ends[1], s->ncounts, s->n);
		s->ncounts = s->n;
	}
	s->p = cls->p;
	s->lines_end = snap->lines + snap->nlines;
	s->lines = snap->lines;
	s->nlines = snap->nlines;
	s->line_stack = snap->line_stack;
	snapshot_warn_unknown_buckets(snap, "counted as no-bucket");
	if (aggregate_items_by_stack_id(cls, snap, NULL, true, add_item, s) <
	    0)
		return -1;
	if (s->overflow || snap->overflow)
		return -sizes_overflow(snap);
	return 0;
}

static struct change *add_change(struct changes *c)
{
	struct change *ch;

	ch = PUSH_ZEROED(c->v, c->n, c->alloc);
	ch->col = -1;
	return ch;
}

/* The changes of a run, from what the passes kept; CA and CB are the
 * counts of A and B. */
/*
 * A leak suspect: never shrank, and grew at two steps or more, and at
 * more than half of the STEPS since it first had bytes (the step into
 * that pass counted: a leak that starts late in a run is one, however
 * few dumps came before it).
 */
static bool suspect(const struct step *e, size_t steps)
{
	size_t since = e->first > 1 && e->first - 2 < steps
			       ? steps - (e->first - 2)
			       : steps;

	return !(e->grown & SHRANK) && e->grown >= 2 &&
	       2 * (size_t)e->grown > since;
}

static void collect(struct changes *c, const struct pass *s,
		    const struct counts *ca, const struct counts *cb,
		    const struct model *m, const int64_t *a_bytes,
		    const int *a_col, const struct step *step, size_t steps)
{
	bool live = c->has & CHANGES_LIVE;

	for (size_t id = 0; id < s->n; id++) {
		int64_t a = a_bytes[id], b = at(&s->cur, (uint32_t)id, s->k);
		bool counted = (c->has & CHANGES_COUNTS) && id < s->ncounts &&
			       (counted_at(cb, id) || !counted_at(ca, id));
		int64_t allocs = 0, frees = 0, bytes = 0;
		int64_t blocks_a = 0, blocks_b = 0;
		struct change *ch;

		if (counted) {
			const struct count *x = count_of(ca, id),
					   *y = count_of(cb, id);
			bool o = false;

			allocs = sub64(y->allocs, x->allocs, &o);
			frees = sub64(y->frees, x->frees, &o);
			bytes = sub64(y->alloc_bytes, x->alloc_bytes, &o);
			/* Counts only grow: a dump that says otherwise is not
			 * the same count. */
			if (o || allocs < 0 || frees < 0 || bytes < 0)
				allocs = frees = bytes = 0;
		}
		if (live && id < s->ncounts) {
			blocks_a = count_of(ca, id)->allocs;
			blocks_b = count_of(cb, id)->allocs;
		}
		if (!a && !b && !allocs && !frees && !bytes && !blocks_a &&
		    !blocks_b)
			continue;
		c->stacks_a += a != 0;
		c->stacks_b += b != 0;
		c->shared += a && b;
		ch = add_change(c);
		ch->m = m;
		ch->st = m->stacks.v[id];
		ch->col = s->cur.v[id].stamp == s->k ? s->cur.v[id].col
						     : a_col[id] - 1;
		ch->a = a;
		ch->b = b;
		ch->allocs = allocs;
		ch->frees = frees;
		ch->allocated = bytes;
		ch->blocks_a = blocks_a;
		ch->blocks_b = blocks_b;
		ch->suspect = (c->has & CHANGES_SERIES) &&
			      suspect(&step[id], steps);
	}
}

void change_walk_begin(struct change_walk *w, struct changes *c,
		       const struct model *m, struct classifier *cls,
		       size_t steps, bool forward)
{
	memset(w, 0, sizeof(*w));
	memset(c, 0, sizeof(*c));
	w->c = c;
	w->m = m;
	w->cls = cls;
	w->steps = steps;
	/* Counts and growth run forward: from a later A to an earlier B
	 * they say nothing (nor from A to A). */
	w->forward = forward && steps > 0;
	w->count = w->forward;
	w->alloc_bytes = true;
	w->s = xcalloc(1, sizeof(*w->s));
}

int change_walk_add(struct change_walk *w, size_t k,
		    const struct snapshot *snap)
{
	struct changes *c = w->c;
	struct pass *s = w->s;
	int rc;

	w->alloc_bytes = w->alloc_bytes && snap->has_alloc_bytes;
	/* (Counts that a profile does not keep say nothing.) */
	if (snap->counts_unknown)
		w->count = false;
	/* The ends are counted: what was allocated and freed in between
	 * is the difference, and blocks in use are what they are then (in
	 * either direction). */
	s->counting = !w->count && !snap->counts_live ? NULL
		      : k == 0			    ? &s->ends[0]
		      : k == w->steps		    ? &s->ends[1]
						    : NULL;
	rc = pass_run(s, w->cls, w->m, snap);
	if (!rc && k == 0)
		rc = end_of(&c->a, w->cls, snap, s);
	if (!rc && k == w->steps)
		rc = end_of(&c->b, w->cls, snap, s);
	if (!rc && (!c->peak.path || s->heap > c->peak.heap)) {
		free(c->peak.path);
		c->peak.path = xstrdup(snap->path);
		c->peak.time = snap->time;
		c->peak.heap = s->heap;
	}
	if (rc)
		return rc;
	w->a_bytes = xrecallocarray(w->a_bytes, w->n, s->n,
				    sizeof(*w->a_bytes));
	w->a_col = xrecallocarray(w->a_col, w->n, s->n, sizeof(*w->a_col));
	w->step = xrecallocarray(w->step, w->n, s->n, sizeof(*w->step));
	w->n = s->n;
	for (size_t t = 0; t < s->cur.ntouched; t++) {
		uint32_t id = s->cur.touched[t];
		int64_t now = s->cur.v[id].bytes;
		struct step *e = &w->step[id];
		/* (What it had at the pass before: nothing if it was not
		 * in it.) */
		int64_t before = e->pass + 1 == s->k ? e->last : 0;

		/* (Stacks come in no order: those ahead are fetched
		 * meanwhile.) */
		if (t + 8 < s->cur.ntouched)
			prefetch(&w->step[s->cur.touched[t + 8]]);
		if (k == 0) {
			w->a_bytes[id] = now;
			w->a_col[id] = s->cur.v[id].col + 1; /* (0: none) */
		} else if (now > before) {
			e->grown++;
		}
		/* Less than before; or it went, after it had bytes, and
		 * has come back. */
		if (k && (now < before ||
			  (e->pass && e->pass + 1 < s->k && e->last > 0)))
			e->grown |= SHRANK;
		if (!e->first && now > 0)
			e->first = s->k;
		e->last = now;
		e->pass = s->k;
	}
	return 0;
}

int change_walk_end(struct change_walk *w, int rc)
{
	struct changes *c = w->c;
	struct pass *s = w->s;

	/* A and B were read. */
	if (!rc && (!c->a.path || !c->b.path))
		rc = -1;
	/* What went after it had bytes, and did not come back. */
	for (size_t id = 0; !rc && id < w->n; id++)
		if (w->step[id].pass && w->step[id].pass < s->k &&
		    w->step[id].last > 0)
			w->step[id].grown |= SHRANK;
	if (!rc) {
		/* (Passes: the dumps read, empty ones left out.) */
		c->snapshots = s->k;
		c->has = CHANGES_RUN | (w->count ? CHANGES_COUNTS : 0) |
			 (w->count && w->alloc_bytes ? CHANGES_ALLOC_BYTES : 0) |
			 (w->forward && s->k >= 3 ? CHANGES_SERIES : 0) |
			 (c->a.live && c->b.live ? CHANGES_LIVE : 0);
		/* (From A to A, A's counts are B's.) */
		collect(c, s, &s->ends[0], &s->ends[w->steps ? 1 : 0], w->m,
			w->a_bytes, w->a_col, w->step, s->k - 1);
	} else {
		changes_free(c);
	}
	pass_free(s);
	FREE_ALL(s, w->a_bytes, w->a_col, w->step);
	memset(w, 0, sizeof(*w));
	return rc ? -1 : 0;
}

int changes_in_run(struct changes *c, struct run *r, struct classifier *cls,
		   size_t ia, size_t ib)
{
	size_t steps = ia <= ib ? ib - ia : ia - ib;
	struct change_walk w;
	struct run_reader rr;
	int rc = 0;

	change_walk_begin(&w, c, &r->model, cls, steps, ia < ib);
	/* (Every dump is read: a deep run's buckets at once.) */
	if (steps + 1 == r->series.ndumps)
		classify_buckets(cls);
	/*
	 * The next two dumps read while this one is summed, as csv does
	 * (deep of make bench: 1.45-1.47 s against 1.53-1.55 with one
	 * reader, 26 MB more), now that a dump's lines note their stacks'
	 * ids and its walk no longer fetches buckets and stacks.
	 */
	run_reader_init(&rr, r);
	rr.two = true;
	for (size_t k = 0; k <= steps && !rc; k++) {
		size_t i = ia <= ib ? ia + k : ia - k;
		/* (Read while this one is summed.) */
		size_t next = k == steps ? SIZE_MAX : ia <= ib ? i + 1 : i - 1;
		const char *path = r->series.dumps[i].path;
		struct snapshot snap;

		if (k && k < steps && file_empty(path)) {
			/* A producer killed before it wrote anything. */
			warning("%s: empty dump; skipped", path);
			continue;
		}
		if (run_reader_load(&rr, i, next, &snap) < 0) {
			rc = -1;
			break;
		}
		run_symbolize_snapshot(r, &snap);
		rc = change_walk_add(&w, k, &snap);
		snapshot_release(&snap);
	}
	run_reader_end(&rr);
	return change_walk_end(&w, rc);
}

/* Sum the first dump of R by stack text into T, as changes of C. */
static int side(struct changes *c, struct tally *texts, struct run *r,
		struct classifier *cls, bool is_b)
{
	struct pass s;
	struct snapshot snap;
	struct strbuf key = STRBUF_INIT;
	int rc;

	memset(&s, 0, sizeof(s));
	if (run_load_dump(r, 0, &snap) < 0)
		return -1;
	run_symbolize_snapshot(r, &snap);
	if (snap.counts_live)
		s.counting = &s.ends[0];
	rc = pass_run(&s, cls, &r->model, &snap);
	if (!rc)
		rc = end_of(is_b ? &c->b : &c->a, cls, &snap, &s);
	for (size_t t = 0; !rc && t < s.cur.ntouched; t++) {
		uint32_t id = s.cur.touched[t];
		const struct stack *st = r->model.stacks.v[id];
		int64_t bytes = s.cur.v[id].bytes;
		int64_t blocks = s.counting ? count_of(&s.ends[0], id)->allocs
					    : 0;
		struct tally_entry *e;
		struct change *ch;

		if (!bytes && !blocks)
			continue;
		sb_reset(&key);
		stack_match_text(&key, &r->model, st,
				 snap.has_own_maps ? &snap.own_maps
				 : r->has_maps	   ? &r->maps
						   : NULL);
		e = tally_get(texts, key.buf ? key.buf : "", key.len);
		if (!e->ref) {
			ch = add_change(c);
			e->ref = c->n;
		}
		ch = &c->v[e->ref - 1];
		if (bytes && is_b && !ch->b)
			c->stacks_b++;
		else if (bytes && !is_b && !ch->a)
			c->stacks_a++;
		if (bytes && is_b && !ch->b && ch->a)
			c->shared++;
		/* (At B, unless it has no bytes there: see change.h.) */
		if (bytes || !ch->st) {
			ch->m = &r->model;
			ch->st = st;
			ch->col = s.cur.v[id].col;
		}
		if (is_b) {
			ch->b = add64(ch->b, bytes, &s.overflow);
			ch->blocks_b = add64(ch->blocks_b, blocks, &s.overflow);
		} else {
			ch->a = add64(ch->a, bytes, &s.overflow);
			ch->blocks_a = add64(ch->blocks_a, blocks, &s.overflow);
		}
	}
	if (!rc && s.overflow)
		rc = -sizes_overflow(&snap);
	snapshot_release(&snap);
	sb_release(&key);
	pass_free(&s);
	return rc ? -1 : 0;
}

int changes_across(struct changes *c, struct run *ra, struct classifier *ca,
		   struct run *rb, struct classifier *cb)
{
	struct tally t;
	int rc;

	memset(c, 0, sizeof(*c));
	tally_init(&t);
	rc = side(c, &t, ra, ca, false);
	if (!rc)
		rc = side(c, &t, rb, cb, true);
	tally_free(&t);
	if (rc) {
		changes_free(c);
		return -1;
	}
	c->snapshots = 2;
	if (c->a.live && c->b.live)
		c->has |= CHANGES_LIVE;
	return 0;
}

int changes_end_of(struct change_end *e, struct classifier *cls,
		   const struct model *m, const struct snapshot *snap)
{
	struct pass s;
	int rc;

	memset(e, 0, sizeof(*e));
	memset(&s, 0, sizeof(s));
	rc = pass_run(&s, cls, m, snap);
	if (!rc)
		rc = end_of(e, cls, snap, &s);
	pass_free(&s);
	if (rc)
		change_end_free(e);
	return rc ? -1 : 0;
}

int changes_end_at(struct change_end *e, struct run *r,
		   struct classifier *cls, size_t i)
{
	struct snapshot snap;
	int rc;

	memset(e, 0, sizeof(*e));
	if (run_load_dump(r, i, &snap) < 0)
		return -1;
	run_symbolize_snapshot(r, &snap);
	rc = changes_end_of(e, cls, &r->model, &snap);
	snapshot_release(&snap);
	return rc;
}

void change_end_free(struct change_end *e)
{
	free(e->path);
	free(e->values);
	if (e->has_types)
		tally_free(&e->types);
	memset(e, 0, sizeof(*e));
}

void changes_free(struct changes *c)
{
	free(c->v);
	change_end_free(&c->a);
	change_end_free(&c->b);
	free(c->peak.path);
	memset(c, 0, sizeof(*c));
}

/* ---- a run's shape ---- */

/* (The first of equal peaks: the earlier, whatever the order they come
 * in.) */
static void shape_peak(struct run_shape *sh, const char *path, double time,
		       int64_t heap)
{
	if (sh->peak.path && (heap < sh->peak.heap ||
			      (heap == sh->peak.heap && time >= sh->peak.time)))
		return;
	free(sh->peak.path);
	sh->peak.path = xstrdup(path);
	sh->peak.time = time;
	sh->peak.heap = heap;
}

static void shape_last(struct run_shape *sh, const struct change_end *e)
{
	sh->allocs = e->allocs;
	sh->frees = e->frees;
	sh->counted = e->counted;
}

int changes_shape(struct run_shape *sh, struct run *r,
		  struct classifier *cls, const struct run_teardown *td)
{
	struct run_reader rr;
	struct pass s;
	int rc = 0;

	memset(sh, 0, sizeof(*sh));
	memset(&s, 0, sizeof(s));
	if (td->last + 1 == r->series.ndumps)
		classify_buckets(cls);
	run_reader_init(&rr, r);
	for (size_t i = 0; i <= td->last && !rc; i++) {
		struct snapshot snap;

		if (i && i < td->last && file_empty(r->series.dumps[i].path))
			continue;
		if (run_reader_load(&rr, i, i < td->last ? i + 1 : SIZE_MAX,
				    &snap) < 0) {
			rc = -1;
			break;
		}
		run_symbolize_snapshot(r, &snap);
		rc = pass_run(&s, cls, &r->model, &snap);
		if (!rc) {
			if (!sh->dumps++) {
				sh->start = snap.time;
				sh->instructions = snap.time_instructions;
			}
			shape_peak(sh, snap.path, snap.time, s.heap);
			if (i == td->before) {
				sh->has_before = true;
				sh->before = s.heap;
			}
			if (i == td->last) {
				sh->has_after = td->at_exit &&
						td->before != SIZE_MAX &&
						td->before < i;
				sh->at_exit = td->at_exit;
				sh->after = s.heap;
				sh->allocs = s.allocs;
				sh->frees = s.frees;
				sh->counted = !snap.counts_unknown;
			}
		}
		snapshot_release(&snap);
	}
	run_reader_end(&rr);
	pass_free(&s);
	if (rc)
		run_shape_free(sh);
	return rc ? -1 : 0;
}

void changes_to_shape(struct run_shape *sh, const struct changes *c,
		      const struct change_end *after,
		      const struct run_teardown *td)
{
	memset(sh, 0, sizeof(*sh));
	sh->dumps = c->snapshots + (after != NULL);
	sh->start = c->a.time;
	sh->instructions = c->a.instructions;
	if (c->peak.path)
		shape_peak(sh, c->peak.path, c->peak.time, c->peak.heap);
	/* (B is the dump before teardown if one follows, or if the
	 * dumps say so of the last.) */
	sh->has_before = after || (td->said && td->before == td->last);
	sh->before = c->b.heap;
	sh->after = c->b.heap;
	sh->at_exit = td->at_exit;
	shape_last(sh, &c->b);
	if (after) {
		shape_peak(sh, after->path, after->time, after->heap);
		sh->has_after = true;
		sh->after = after->heap;
		shape_last(sh, after);
	}
}

void run_shape_note(struct run_shape *sh, const struct change_end *e)
{
	sh->dumps++;
	shape_peak(sh, e->path, e->time, e->heap);
}

int changes_shape_between(struct run_shape *sh, struct run *r,
			  struct classifier *cls, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		struct change_end e;

		/* (A producer killed before it wrote: as changes_shape.) */
		if (file_empty(r->series.dumps[i].path))
			continue;
		if (changes_end_at(&e, r, cls, i) < 0)
			return -1;
		run_shape_note(sh, &e);
		change_end_free(&e);
	}
	return 0;
}

static void shape_bytes(struct strbuf *sb, int64_t v, bool exact)
{
	if (exact)
		sb_addf(sb, "%" PRId64, v);
	else
		format_bytes(sb, v, false);
}

void run_shape_text(struct strbuf *sb, const struct run_shape *sh,
		    bool exact)
{
	const char *base = sh->peak.path ? strrchr(sh->peak.path, '/') : NULL;

	sb_addf(sb, "the run: %zu dump%s; peak ", sh->dumps,
		sh->dumps == 1 ? "" : "s");
	shape_bytes(sb, sh->peak.heap, exact);
	if (sh->instructions)
		sb_addf(sb, " at %.0f instructions",
			sh->peak.time - sh->start);
	else
		sb_addf(sb, " at %.1f s", sh->peak.time - sh->start);
	sb_addf(sb, " (%s)", base ? base + 1 : sh->peak.path);
	if (sh->has_before) {
		sb_addstr(sb, "; ");
		shape_bytes(sb, sh->before, exact);
		sb_addstr(sb, " before teardown");
		if (sh->has_after) {
			sb_addstr(sb, ", ");
			shape_bytes(sb, sh->after, exact);
			sb_addstr(sb, " after");
		}
	} else {
		sb_addstr(sb, "; ");
		shape_bytes(sb, sh->after, exact);
		sb_addstr(sb, sh->at_exit ? " at exit, after teardown"
					  : " at the last dump");
	}
	if (sh->counted)
		sb_addf(sb, "; %" PRId64 " allocations, %" PRId64 " frees",
			sh->allocs, sh->frees);
}

void run_shape_json(struct json_writer *w, const struct run_shape *sh)
{
	json_object_line(w);
	json_member_uint(w, "dumps", sh->dumps);
	json_key(w, "peak");
	json_object_line(w);
	json_member_string(w, "dump", sh->peak.path);
	json_member_double(w, "time", sh->peak.time);
	json_member_int(w, "bytes", sh->peak.heap);
	json_end(w);
	if (sh->has_before)
		json_member_int(w, "before_teardown", sh->before);
	json_member_int(w, sh->has_after || sh->at_exit ? "after_teardown"
							: "last",
			sh->after);
	if (sh->counted) {
		json_member_int(w, "allocs", sh->allocs);
		json_member_int(w, "frees", sh->frees);
	}
	json_end(w);
}

void run_shape_free(struct run_shape *sh)
{
	free(sh->peak.path);
	memset(sh, 0, sizeof(*sh));
}
