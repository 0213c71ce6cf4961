/*
 * The second part of a big STACKTRACES section of a deep dump, read on
 * another core (a task of the thread module) while the parser reads the
 * first: the reader's pipeline.
 */
#include <stdlib.h>
#include <string.h>

#include "deep_parse.h"
#include "scan.h"
#include "util.h"

/* Sections smaller than this are read in one piece. */
#define TAIL_MIN (1u << 20)

static void tail_main(void *arg)
{
	enum { AHEAD = 16 };
	struct tail *t = arg;
	struct line_reader r;
	struct line l;

	lines_init(&r, t->p, (size_t)(t->end - t->p));
	t->stop = t->end;
	for (;;) {
		struct stack_line sl;
		uint64_t id;
		/* (Most lines, many at once; then one the general way.) */
		size_t n = deep_fixed_lines(r.p, r.end, t->lines + t->n,
					    t->ids + t->n, t->room - t->n,
					    &r.p);

		for (size_t i = 0; i < n; i++)
			t->nos[t->n + i] = t->no + t->n + i + 1;
		t->n += n;
		if (!lines_next(&r, &l))
			break;
		if (t->n == t->room || !l.newline ||
		    !deep_fast_stack_line(&l, &sl, &id)) {
			t->stop = l.p;
			break;
		}
		t->lines[t->n] = sl;
		t->ids[t->n] = id;
		t->nos[t->n] = t->no + t->n + 1;
		t->n++;
	}
	/* (A found bucket's note goes where its id was: find_buckets
	 * takes it there.) */
	for (size_t i = 0; i < t->n; i++) {
		struct bucket_note note;

		if (i + AHEAD < t->n)
			bucket_set_prefetch(&t->m->buckets, t->ids[i + AHEAD]);
		t->lines[i].bucket = bucket_set_find_note(&t->m->buckets,
							  t->ids[i], &note);
		if (t->lines[i].bucket)
			t->ids[i] = deep_note_pack(note);
	}
}

/* The newlines in [P, END). */
static size_t count_newlines(const char *p, const char *end)
{
	const uint64_t ones = 0x0101010101010101ULL, high = ones << 7;
	size_t n = 0;

	for (; end - p >= 8; p += 8) {
		uint64_t w = load8(p) ^ (ones * '\n');
		/* (The high bit of each byte that is not 0: exact, no
		 * borrow from one byte to the next.) */
		uint64_t nonzero = (((w & ~high) + ~high) | w) & high;

		/* (A byte's 0 or 1, summed by the multiply: not
		 * __builtin_popcountll, a call into libgcc without
		 * -mpopcnt, for every 8 bytes of a deep run's dumps.) */
		n += (size_t)((((~nonzero & high) >> 7) * ones) >> 56);
	}
	for (; p < end; p++)
		n += *p == '\n';
	return n;
}

/* Room for N lines in the parser's arrays. */
static void lines_room(struct parser *p, size_t n)
{
	struct snapshot *snap = p->snap;

	if (n > snap->lines_alloc) {
		snap->lines = xreallocarray(snap->lines, n,
					    sizeof(*snap->lines));
		snap->lines_alloc = n;
	}
	if (n > p->ids_alloc) {
		p->ids = xreallocarray(p->ids, n, sizeof(*p->ids));
		p->ids_alloc = n;
	}
	if (n > p->nos_alloc) {
		p->nos = xreallocarray(p->nos, n, sizeof(*p->nos));
		p->nos_alloc = n;
	}
}

/*
 * The section STACKTRACES, the rest of R: room for its lines, and its
 * second part to a thread when it is big.  The reader R then stops where
 * that starts (see tail_take).
 */
void deep_tail_start(struct parser *p, struct line_reader *r)
{
	struct snapshot *snap = p->snap;
	size_t bytes = (size_t)(r->end - r->p), head, nhead;
	const char *mid = NULL;
	struct tail *t;

	/*
	 * The tail gets the bigger part: this thread has read the file and
	 * will find its own lines' buckets after, and its part's (the
	 * bench run's thread times came out even so).
	 */
	head = bytes / 5 * 2;
	if (bytes >= TAIL_MIN && threads_wanted() > 1)
		mid = memchr(r->p + head, '\n', bytes - head);
	if (!mid || mid + 1 >= r->end) {
		/* (A producer's line is 40 bytes or more: no doubling.) */
		lines_room(p, snap->nlines + bytes / 32 + 1);
		return;
	}
	mid++;
	/*
	 * The tail's lines go where they will stay if every line before
	 * them is a stack line (else they move down, see tail_join): after
	 * room for one line per line of the first part.  A line is 12
	 * bytes or more ("0 0 0 0 @ 0"): so many may come.
	 */
	nhead = count_newlines(r->p, mid);
	t = xcalloc(1, sizeof(*t));
	t->m = p->m;
	t->p = mid;
	t->end = r->end;
	t->base = snap->nlines + nhead;
	t->room = (size_t)(r->end - mid) / 12 + 1;
	t->no = r->no + nhead;
	lines_room(p, t->base + t->room);
	t->lines = snap->lines + t->base;
	t->ids = p->ids + t->base;
	t->nos = p->nos + t->base;
	if (!task_start(&t->task, tail_main, t, false)) {
		free(t);
		return;
	}
	p->tail = t;
	r->end = mid;
}

/*
 * Wait for the tail; its lines are the snapshot's if KEEP (then those
 * before it were all read: none moves the arrays meanwhile, there is
 * room).  Where it stopped (NULL: no tail).
 */
const char *deep_tail_join(struct parser *p, bool keep)
{
	struct tail *t = p->tail;
	struct snapshot *snap = p->snap;
	const char *stop;

	if (!t)
		return NULL;
	task_release(&t->task);
	p->tail = NULL;
	stop = t->stop;
	if (keep && t->n) {
		size_t at = snap->nlines;

		/* (Lines before it that were no stack lines: down.) */
		if (at < t->base) {
			memmove(snap->lines + at, t->lines,
				t->n * sizeof(*t->lines));
			memmove(p->ids + at, t->ids, t->n * sizeof(*t->ids));
			memmove(p->nos + at, t->nos, t->n * sizeof(*t->nos));
		}
		p->found_from = at;
		p->found_to = at + t->n;
		snap->nlines = at + t->n;
	}
	free(t);
	return stop;
}

/*
 * The reader R stopped where the tail starts: the tail's lines are the
 * section's if it goes on there, and R goes on after them.  True if R
 * has more.
 */
bool deep_tail_take(struct parser *p, struct line_reader *r,
		    const char *end)
{
	bool keep = p->sec == SEC_STACKTRACES;
	size_t before = p->snap->nlines;
	const char *stop = deep_tail_join(p, keep);

	if (keep) {
		r->p = stop;
		r->no += (unsigned long)(p->snap->nlines - before);
	}
	r->end = end;
	return r->p < r->end;
}

