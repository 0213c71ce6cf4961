/*
 * dmprof diff [-p POLICY] [-n N] [-b] [--json] A B, and diff FIRST_DUMP
 * (its first snapshot against its last): what grew.  Three tables, each
 * growers first (by growth), then shrinkers, then what allocated and
 * freed as much as it kept (churn): the policy's components, the
 * functions that own the bytes (flat, as top ranks them) and the stacks.
 * When A and B are dumps of one run, every dump between them is read:
 * stacks and functions that never shrank and grew at more than half the
 * steps between them are marked as leak suspects, and what the format
 * counts (blocks allocated and freed; gperftools' allocated bytes) is
 * shown between A and B.  Where both ends count the blocks in use at the
 * instant instead (dmprof snapshot's), the change in those is shown.  A
 * and B of two runs (a baseline and a candidate) are matched by their
 * stacks' function names (see stack_match_text).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "change.h"
#include "numfmt.h"
#include "json_write.h"
#include "series.h"
#include "setup.h"
#include "stacktext.h"
#include "tally.h"

enum {
	OPT_JSON = OPT_LONG_ONLY,
};

/* A function some stack of which is a leak suspect (bit 0 of a
 * tally entry's flags is stacktext_tally_functions'). */
#define SUSPECT 2u

/* Frames of a stack in the text tables; the JSON has them all. */
#define SHOWN_FRAMES 6

/* A row of any of the three tables. */
struct row {
	const char *name;       /* a stack's: NULL until asked (row_name) */
	size_t key_len;         /* a function's: its key's (a file may follow
				   the name's NUL: stacktext_tally_functions) */
	char *own_name;
	const char *file;
	uint32_t line;
	int64_t a, b;
	int64_t change;         /* b - a */
	int64_t allocs, frees;  /* blocks, between A and B */
	int64_t allocated;      /* bytes, between A and B */
	int64_t freed;          /* allocated - change */
	int64_t blocks_a, blocks_b; /* in use, at A and at B */
	int64_t blocks;         /* blocks_b - blocks_a */
	int component;          /* of a stack: its column */
	const struct change *ch; /* of a stack */
	bool suspect;           /* a leak suspect */
};

/* Growers, by growth; shrinkers, by loss; churn, by what it allocated. */
static const char *const usage[] = { "A B", "FIRST_DUMP", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICY,
	OPTION_ROWS("rows in each group of a table before the rest "
		    "goes into <other> (default 10)"),
	OPTION_BYTES,
	{ .key = OPT_JSON, .name = "json", .flags = OPT_SYNOPSIS,
	  .help = "every row, exact numbers, as JSON" },
	OPTION_OWNERS,
	OPT_END,
};

static int group_of(const struct row *r)
{
	return r->change > 0 ? 0 : r->change < 0 ? 1 : 2;
}

/* What a stack's row is called: every frame, callers first. */
static void stack_row_text(struct strbuf *sb, const struct change *ch)
{
	stack_text(sb, ch->m, ch->st, UINT64_MAX, STACK_CALLERS);
	if (!ch->st->depth)
		sb_addstr(sb, "<no stack>");
}

/*
 * A row's name.  The text tables show a stack's first frames, so its
 * whole text is built only where a sort must tell two rows apart by it:
 * a million stacks need few.
 */
static const char *row_name(struct row *r)
{
	struct strbuf sb = STRBUF_INIT;

	if (!r->name) {
		stack_row_text(&sb, r->ch);
		r->name = r->own_name = sb_detach(&sb);
	}
	return r->name;
}

static int cmp_rows(const void *x, const void *y)
{
	/* (The rows are the table's, not const: names may be built.) */
	struct row *a = (struct row *)x, *b = (struct row *)y;
	int ga = group_of(a), gb = group_of(b);
	int64_t ca = a->change, cb = b->change;

	if (ga != gb)
		return ga < gb ? -1 : 1;
	if (ga == 2 && a->allocated != b->allocated)
		return a->allocated > b->allocated ? -1 : 1;
	if (ga == 2 && a->allocs != b->allocs)
		return a->allocs > b->allocs ? -1 : 1;
	if (ca != cb)
		return (ga == 0 ? ca > cb : ca < cb) ? -1 : 1;
	return strcmp(row_name(a), row_name(b)) ?:
	       /* (Functions of one name in two files.) */
	       strcmp(a->file ? a->file : "", b->file ? b->file : "");
}

struct table {
	const char *noun, *plural;
	struct row *v;
	size_t n, alloc;
	/* After sorting: where each group ends, and what <other> sums
	 * (growers, shrinkers: change; churn: allocated). */
	size_t end[3];
	int64_t rest[3];
};

/*
 * Move the best K rows of V[0, N) to its front, in order (the others
 * follow in no order): a table of a million stacks prints ten of each
 * group, and a sort of them all would cost more than the rest of diff.
 */
static void best_first(struct row *v, size_t n, size_t k)
{
	struct row tmp;

	if (k >= n) {
		if (n > 1)
			qsort(v, n, sizeof(*v), cmp_rows);
		return;
	}
	if (!k)
		return;
	qsort(v, k, sizeof(*v), cmp_rows);
	for (size_t i = k; i < n; i++) {
		size_t j = k - 1;

		if (cmp_rows(&v[i], &v[j]) >= 0)
			continue;
		/* (In at the end of the K, then up to its place.) */
		tmp = v[j];
		v[j] = v[i];
		v[i] = tmp;
		for (; j > 0 && cmp_rows(&v[j], &v[j - 1]) < 0; j--) {
			tmp = v[j];
			v[j] = v[j - 1];
			v[j - 1] = tmp;
		}
	}
}

/*
 * Each row's change and what it freed; then the rows in groups, each
 * group's first ROWS in order (or, for ALL, every row in order), with
 * what each group's <other> row (past ROWS) sums.
 */
static void finish(struct table *t, size_t rows, bool all, bool *overflow)
{
	size_t n[3] = { 0, 0, 0 }, at[3];
	struct row *by_group;

	for (size_t i = 0; i < t->n; i++) {
		struct row *r = &t->v[i];

		r->change = sub64(r->b, r->a, overflow);
		r->freed = sub64(r->allocated, r->change, overflow);
		r->blocks = sub64(r->blocks_b, r->blocks_a, overflow);
		n[group_of(r)]++;
	}
	/* The groups in turn, each in the order the rows came. */
	by_group = xcalloc(t->n ? t->n : 1, sizeof(*by_group));
	at[0] = 0;
	at[1] = n[0];
	at[2] = n[0] + n[1];
	for (size_t i = 0; i < t->n; i++)
		by_group[at[group_of(&t->v[i])]++] = t->v[i];
	free(t->v);
	t->v = by_group;
	t->alloc = t->n ? t->n : 1;
	for (size_t g = 0, start = 0; g < 3; start += n[g++]) {
		t->end[g] = start + n[g];
		t->rest[g] = 0;
		best_first(t->v + start, n[g], all ? n[g] : rows);
		for (size_t i = start + rows; i < t->end[g]; i++)
			t->rest[g] = add64(t->rest[g],
					   g == 2 ? t->v[i].allocated
						  : t->v[i].change,
					   overflow);
	}
}

struct diff {
	struct changes c;
	const struct policy *p;
	size_t rows;            /* -n */
	bool exact, json;
	struct table comps, funcs, stacks;
	/* Of a heap walked from outside at both ends: its blocks in use by
	 * type, their bytes (chunks) and count at A and B. */
	struct table types;
	bool has_types;
	struct tally ftally;    /* the functions, by name */
	struct strbuf texts;    /* the stacks' texts, NUL-separated */
	size_t *text_at;        /* offsets into texts, by stack row */
	int64_t total_a, total_b, total_change;
	bool overflow;          /* a sum of sizes saturated */
	size_t suspects;
	int64_t suspect_growth;
	struct owners owners;   /* --owner, --own, --alloc-fn */
	struct tally passed;    /* -v: allocator wrappers passed over */
	/* diff FIRST: where the run's teardown is, the dump after it
	 * (has_after), and the run's shape (has_shape). */
	struct run_teardown td;
	bool first_form;
	struct change_end after;
	bool has_after;
	struct run_shape shape;
	bool has_shape;
	/* The run's stacks run on an interpreter (Python): its teardown is
	 * its finalization, not atexit handlers and static destructors; on
	 * node, what follows its exit event. */
	bool interpreter, node;
};

static struct row *add_row(struct table *t)
{
	GROW(t->v, t->n + 1, t->alloc);
	memset(&t->v[t->n], 0, sizeof(t->v[t->n]));
	t->v[t->n].component = -1;
	return &t->v[t->n++];
}

/* Do both ends count the blocks in use (and so no allocs or frees)? */
static bool has_live(const struct diff *d)
{
	return d->c.has & CHANGES_LIVE;
}

/* ---- building the tables ---- */

/*
 * The sums a stack's change adds to the functions' tally: flat change
 * (and cum), a, b, allocated, and a pair of block counts: allocs and
 * frees, or, where the ends count blocks in use instead, those at A and
 * at B.  (A tally entry has room for one pair, and no format counts
 * both.)
 */
static void change_sums(struct diff *d, const struct change *ch,
			int64_t add[6])
{
	add[0] = sub64(ch->b, ch->a, &d->overflow);
	add[1] = ch->a;
	add[2] = ch->b;
	add[3] = ch->allocated;
	add[4] = has_live(d) ? ch->blocks_a : ch->allocs;
	add[5] = has_live(d) ? ch->blocks_b : ch->frees;
}

/* Does any frame of M know its source file? */
static bool any_source(const struct model *m)
{
	for (size_t i = 0; i < m->frames.n; i++) {
		const struct frame *f = m->frames.v[i];

		if (f->file)
			return true;
		for (uint16_t k = 0; k < f->ninline; k++)
			if (f->inl[k].file)
				return true;
	}
	return false;
}

static void build_components(struct diff *d)
{
	for (size_t c = 0; c < d->p->ncols; c++) {
		int64_t a = d->c.a.values[c], b = d->c.b.values[c];
		struct row *r;

		if (!policy_in_partition(d->p, (int)c))
			continue;
		d->total_a = add64(d->total_a, a, &d->overflow);
		d->total_b = add64(d->total_b, b, &d->overflow);
		if (a == b)
			continue;
		r = add_row(&d->comps);
		r->name = d->p->cols[c].name;
		r->a = a;
		r->b = b;
	}
}

/* A type's row: T's entry at A (EA) and at B (EB), either NULL. */
static void type_row(struct diff *d, const struct tally_entry *ea,
		     const struct tally_entry *eb)
{
	const struct tally_entry *e = eb ? eb : ea;
	struct row *r;

	if (ea && eb && ea->bytes == eb->bytes)
		return;
	r = add_row(&d->types);
	r->name = e->key;
	r->a = ea ? ea->bytes : 0;
	r->b = eb ? eb->bytes : 0;
	r->blocks_a = ea ? ea->allocs : 0;
	r->blocks_b = eb ? eb->allocs : 0;
}

/*
 * The types whose blocks' bytes changed, where both ends are heaps
 * walked from outside (snapshots, cores).
 */
static void build_types(struct diff *d)
{
	const struct tally *ta = &d->c.a.types, *tb = &d->c.b.types;

	d->has_types = d->c.a.has_types && d->c.b.has_types;
	if (!d->has_types)
		return;
	d->overflow |= ta->overflow || tb->overflow;
	for (size_t i = 0; i < tb->n; i++)
		type_row(d, tally_find(ta, tb->v[i]->key, tb->v[i]->len),
			 tb->v[i]);
	for (size_t i = 0; i < ta->n; i++)
		if (!tally_find(tb, ta->v[i]->key, ta->v[i]->len))
			type_row(d, ta->v[i], NULL);
}

static void build_stacks_and_functions(struct diff *d)
{
	struct strbuf text = STRBUF_INIT;

	d->text_at = xcalloc(d->c.n + 1, sizeof(*d->text_at));
	for (size_t i = 0; i < d->c.n; i++) {
		const struct change *ch = &d->c.v[i];
		int64_t add[6];
		struct tally_entry *f;
		struct row *r;

		change_sums(d, ch, add);
		/* (Flat only: diff shows no cum; see place_calls.) */
		f = stacktext_tally_functions(&d->ftally, ch->m, ch->st, add, 6,
					      false);
		if (!f || (!add[0] && !ch->allocated && !ch->allocs &&
			   !ch->frees))
			continue; /* unchanged, or no code's */
		if (ch->suspect) {
			f->flags |= SUSPECT;
			d->suspects++;
			d->suspect_growth = add64(d->suspect_growth, add[0],
						  &d->overflow);
		}
		r = add_row(&d->stacks);
		if (d->json) {
			/* (Every row's name is printed.) */
			d->text_at[d->stacks.n - 1] = d->texts.len;
			sb_reset(&text);
			stack_row_text(&text, ch);
			sb_add(&d->texts, text.buf, text.len);
			sb_addch(&d->texts, '\0');
		}
		r->a = ch->a;
		r->b = ch->b;
		r->allocs = ch->allocs;
		r->frees = ch->frees;
		r->allocated = ch->allocated;
		r->blocks_a = ch->blocks_a;
		r->blocks_b = ch->blocks_b;
		r->component = ch->col;
		r->suspect = ch->suspect;
		r->ch = ch;
	}
	/* The texts are complete: point the rows at them. */
	for (size_t i = 0; d->json && i < d->stacks.n; i++)
		d->stacks.v[i].name = d->texts.buf + d->text_at[i];
	for (size_t i = 0; i < d->ftally.n; i++) {
		const struct tally_entry *e = d->ftally.v[i];
		struct row *r;

		/* (Blocks in use are held, not allocated: a function whose
		 * bytes did not change has no row, as a stack has none.) */
		if (!e->v[0] && !e->v[4] &&
		    (has_live(d) || (!e->v[5] && !e->v[6])))
			continue;
		r = add_row(&d->funcs);
		r->name = e->key;
		r->key_len = e->len;
		r->file = e->file;
		r->line = e->line;
		r->a = e->v[2];
		r->b = e->v[3];
		r->allocated = e->v[4];
		if (has_live(d)) {
			r->blocks_a = e->v[5];
			r->blocks_b = e->v[6];
		} else {
			r->allocs = e->v[5];
			r->frees = e->v[6];
		}
		r->suspect = e->flags & SUSPECT;
	}
	sb_release(&text);
}

/* Is row I of table T printed (the first rows of its group, or all for
 * JSON)? */
static bool printed(const struct diff *d, const struct table *t, size_t i)
{
	size_t start = 0, g = 0;

	while (g < 2 && i >= t->end[g])
		start = t->end[g++];
	return d->json || i - start < d->rows;
}

/*
 * The functions' places came from their flat stacks alone, the calls not
 * visited.  A printed function without one shows the place of its
 * largest call, as top has it: found, where some frame knows its source,
 * in a pass over every call.
 */
static void place_calls(struct diff *d)
{
	struct tally all;
	const struct model *seen[2] = { NULL, NULL };
	bool want = false, source = false;

	for (size_t i = 0; i < d->funcs.n && !want; i++)
		want = printed(d, &d->funcs, i) &&
		       !stacktext_placed_flat(tally_find(
			       &d->ftally, d->funcs.v[i].name,
			       d->funcs.v[i].key_len));
	for (size_t i = 0; want && i < d->c.n && !source; i++) {
		const struct model *m = d->c.v[i].m;

		if (m == seen[0] || m == seen[1])
			continue;
		seen[seen[0] ? 1 : 0] = m;
		source = any_source(m);
	}
	if (!want || !source)
		return;
	tally_init(&all);
	all.owners = &d->owners;
	for (size_t i = 0; i < d->c.n; i++) {
		int64_t add[6];

		change_sums(d, &d->c.v[i], add);
		stacktext_tally_functions(&all, d->c.v[i].m, d->c.v[i].st,
					  add, 6, true);
	}
	for (size_t i = 0; i < d->funcs.n; i++) {
		struct row *r = &d->funcs.v[i];
		const struct tally_entry *e;

		if (!printed(d, &d->funcs, i) ||
		    stacktext_placed_flat(tally_find(&d->ftally, r->name,
						 r->key_len)))
			continue;
		e = tally_find(&all, r->name, r->key_len);
		r->file = e->file;
		r->line = e->line;
	}
	tally_free(&all);
}

/* ---- printing ---- */

static const char *bytes(struct diff *d, struct strbuf *sb, int64_t v,
			 bool sign)
{
	sb_reset(sb);
	if (d->exact)
		sb_addf(sb, sign && v > 0 ? "+%" PRId64 : "%" PRId64, v);
	else
		format_bytes(sb, v, sign);
	return sb->buf;
}

static bool has_bytes(const struct diff *d)
{
	return d->c.has & CHANGES_ALLOC_BYTES;
}

static bool has_counts(const struct diff *d)
{
	return (d->c.has & CHANGES_COUNTS) && !has_bytes(d);
}

static void print_header(struct diff *d, const struct table *t,
			 const char *what, size_t group)
{
	static const char *const titles[] = { "that grew", "that shrank",
					       "that freed all they allocated" };

	printf("\n%s %s\n", what, titles[group]);
	printf("%11s %10s %10s", "change", "A", "B");
	if (t == &d->comps)
		printf(" %7s", "%");
	else if (t == &d->types)
		printf(" %8s", "blocks");
	else if (has_bytes(d))
		printf(" %10s %10s", "allocated", "freed");
	else if (has_counts(d))
		printf(" %8s %8s", "allocs", "frees");
	else if (has_live(d))
		printf(" %8s", "blocks");
	printf("  %s%s\n",
	       (d->c.has & CHANGES_SERIES) && t != &d->types ? "  " : "",
	       t->noun);
}

/*
 * A stack's first SHOWN_FRAMES frames, files by their base names; runs
 * of library frames as one, unless pprof's view is asked for.
 */
static void short_stack(struct diff *d, struct strbuf *sb,
			const struct change *ch)
{
	sb_reset(sb);
	if (!ch->st->depth) {
		sb_addstr(sb, "<no stack>");
		return;
	}
	if (d->owners.rule == OWNER_PROGRAM) {
		stack_text_compact(sb, ch->m, ch->st, &d->owners,
				   SHOWN_FRAMES);
		return;
	}
	stack_text(sb, ch->m, ch->st, SHOWN_FRAMES - 1,
		   STACK_CALLERS | STACK_BASE_NAMES);
	if (stack_depth(ch->m, ch->st) > SHOWN_FRAMES)
		sb_addstr(sb, " <- ...");
}

static void print_row(struct diff *d, const struct table *t,
		      const struct row *r)
{
	struct strbuf sb = STRBUF_INIT;

	printf("%11s", bytes(d, &sb, r->change, true));
	printf(" %10s", bytes(d, &sb, r->a, false));
	printf(" %10s", bytes(d, &sb, r->b, false));
	if (t == &d->comps) {
		sb_reset(&sb);
		format_percent(&sb, r->change, r->a, true);
		printf(" %7s", r->a ? sb.buf : "new");
	} else if (t == &d->types) {
		printf(r->blocks > 0 ? " %+8" PRId64 : " %8" PRId64,
		       r->blocks);
	} else if (has_bytes(d)) {
		printf(" %10s", bytes(d, &sb, r->allocated, false));
		printf(" %10s", bytes(d, &sb, r->freed, false));
	} else if (has_counts(d)) {
		printf(" %8" PRId64 " %8" PRId64, r->allocs, r->frees);
	} else if (has_live(d)) {
		printf(r->blocks > 0 ? " %+8" PRId64 : " %8" PRId64,
		       r->blocks);
	}
	printf("  %s", !(d->c.has & CHANGES_SERIES) || t == &d->types ? ""
		       : r->suspect ? "* "
				    : "  ");
	if (t == &d->stacks) {
		short_stack(d, &sb, r->ch);
		printf("%s", sb.buf);
	} else {
		sb_reset(&sb);
		place_text(&sb, r->file, r->line, true);
		printf("%s%s", r->name, sb.buf ? sb.buf : "");
	}
	putchar('\n');
	sb_release(&sb);
}

static void print_table(struct diff *d, struct table *t, const char *what)
{
	for (size_t g = 0, start = 0; g < 3; start = t->end[g++]) {
		size_t n = t->end[g] - start, shown = n < d->rows ? n : d->rows;

		if (!n)
			continue;
		print_header(d, t, what, g);
		for (size_t k = start; k < start + shown; k++)
			print_row(d, t, &t->v[k]);
		if (n > shown) {
			struct strbuf sb = STRBUF_INIT;

			printf("%11s  <other: %zu more %s>\n",
			       g == 2 ? "" : bytes(d, &sb, t->rest[g], true),
			       n - shown, n - shown == 1 ? t->noun : t->plural);
			sb_release(&sb);
		}
	}
}

static void print_duration(double s)
{
	if (s < 120)
		printf("%.1f s", s);
	else if (s < 7200)
		printf("%.1f min", s / 60);
	else
		printf("%.1f h", s / 3600);
}

/* The components' total at the dump after teardown. */
static int64_t after_total(struct diff *d)
{
	int64_t t = 0;

	for (size_t c = 0; c < d->p->ncols; c++)
		if (policy_in_partition(d->p, (int)c))
			t = add64(t, d->after.values[c], &d->overflow);
	return t;
}

/* Is the run's shape worth a line: does the run say where it ended? */
static bool shape_shown(const struct diff *d)
{
	return d->has_shape && (d->td.said || d->td.at_exit);
}

/*
 * diff FIRST: which dump B is, where teardown is concerned, and what
 * teardown freed, in a line (none when the run says nothing of it).
 */
static void print_teardown(struct diff *d)
{
	struct strbuf x = STRBUF_INIT, y = STRBUF_INIT, z = STRBUF_INIT;
	const char *last = d->has_after ? d->after.path : NULL;

	if (!d->first_form || !(d->td.said || d->td.at_exit))
		return;
	if (!d->has_after && d->td.said)
		return; /* B is the last, and before teardown */
	if (!d->has_after) {
		printf("B is the last dump, %s at exit, after atexit handlers "
		       "and static destructors: what they freed shows as "
		       "shrinking (the run has no other dump before teardown "
		       "but A)\n",
		       d->td.last_said ? "written" : "which the format writes");
		return;
	}
	if (d->td.said && d->node)
		printf("B is the last dump before teardown, at node's exit "
		       "event; then the disposal of its isolate (the "
		       "JavaScript heap, the Buffers), by %s, took ", last);
	else if (d->td.said && d->interpreter)
		printf("B is the last dump before teardown; then the "
		       "interpreter's finalization (its modules cleared), by "
		       "%s, took ", last);
	else if (d->td.said)
		printf("B is the last dump before teardown; then atexit "
		       "handlers and static destructors, by %s, took ", last);
	else
		printf("B is the dump before the last: %s was written at "
		       "exit, after static destructors (the dumps do not say "
		       "where teardown began); into it went ", last);
	bytes(d, &x, d->c.b.heap, false);
	bytes(d, &y, d->after.heap, false);
	printf("the bytes with stacks from %s to %s, ", x.buf, y.buf);
	bytes(d, &x, d->total_b, false);
	bytes(d, &y, after_total(d), false);
	bytes(d, &z, sub64(after_total(d), d->total_b, &d->overflow), true);
	printf("the components from %s to %s (%s)\n", x.buf, y.buf, z.buf);
	sb_release(&x);
	sb_release(&y);
	sb_release(&z);
}

static void print_text(struct diff *d)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, ch = STRBUF_INIT;
	double dt = d->c.b.time - d->c.a.time;

	if (shape_shown(d)) {
		run_shape_text(&a, &d->shape, d->exact);
		printf("%s\n", a.buf);
		sb_reset(&a);
	}

	printf("A %s -> B %s: ", d->c.a.path, d->c.b.path);
	if (!(d->c.has & CHANGES_RUN)) {
		printf("another run");
	} else if (d->c.a.instructions && d->c.b.instructions) {
		/* (Valgrind's clock: instructions run, not seconds.) */
		printf("%.0f instructions %s", dt < 0 ? -dt : dt,
		       dt < 0 ? "earlier" : "later");
	} else {
		print_duration(dt < 0 ? -dt : dt);
		printf(dt < 0 ? " earlier" : " later");
	}
	if (d->c.snapshots > 2)
		printf(", %zu snapshots", d->c.snapshots);
	printf(", policy %s\n", d->p->label);
	format_percent(&ch, d->total_change, d->total_a, true);
	printf("the components: %s -> %s", bytes(d, &a, d->total_a, false),
	       bytes(d, &b, d->total_b, false));
	printf(", %s (%s)\n", bytes(d, &a, d->total_change, true),
	       ch.buf);
	print_teardown(d);
	if (!d->comps.n)
		printf("\nno component changed\n");
	print_table(d, &d->comps, "components");
	if (d->has_types && !d->types.n)
		printf("\nno type of block in use changed\n");
	print_table(d, &d->types, "types");
	if (!d->funcs.n)
		printf("\nno stack changed\n");
	print_table(d, &d->funcs, "functions");
	print_table(d, &d->stacks, "stacks");
	if (d->c.has & CHANGES_SERIES) {
		printf("\n");
		if (d->suspects)
			printf("* a leak suspect: from A to B it never shrank, "
			       "and grew at more than half the %zu steps "
			       "between snapshots (%zu stack%s, %s)\n",
			       d->c.snapshots - 1, d->suspects,
			       d->suspects == 1 ? "" : "s",
			       bytes(d, &a, d->suspect_growth, true));
		else
			printf("no leak suspect: no stack kept growing over "
			       "the %zu steps between snapshots\n",
			       d->c.snapshots - 1);
	}
	sb_release(&a);
	sb_release(&b);
	sb_release(&ch);
}

static void json_rows(struct diff *d, struct json_writer *w, const char *key,
		      const struct table *t)
{
	json_key(w, key);
	json_array(w);
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->v[i];

		json_object_line(w);
		json_member_string(w, t == &d->stacks ? "stack" : "name",
				   r->name);
		if (r->component >= 0)
			json_member_string(w, "component",
					   d->p->cols[r->component].name);
		if (r->file) {
			json_member_string(w, "file", r->file);
			if (r->line)
				json_member_uint(w, "line", r->line);
		}
		json_member_int(w, "a", r->a);
		json_member_int(w, "b", r->b);
		json_member_int(w, "change", r->change);
		if (t != &d->comps && t != &d->types &&
		    (d->c.has & CHANGES_COUNTS)) {
			json_member_int(w, "allocs", r->allocs);
			json_member_int(w, "frees", r->frees);
		}
		if (t != &d->comps && t != &d->types && has_bytes(d)) {
			json_member_int(w, "allocated", r->allocated);
			json_member_int(w, "freed", r->freed);
		}
		if (t != &d->comps && (has_live(d) || t == &d->types)) {
			json_member_int(w, "blocks_a", r->blocks_a);
			json_member_int(w, "blocks_b", r->blocks_b);
		}
		if (t != &d->comps && t != &d->types &&
		    (d->c.has & CHANGES_SERIES))
			json_member_bool(w, "leak_suspect", r->suspect);
		json_end(w);
	}
	json_end(w);
}

static void json_change_end(struct json_writer *w, const char *key,
			    const struct change_end *e)
{
	json_key(w, key);
	json_object_line(w);
	json_member_string(w, "dump", e->path);
	json_member_double(w, "time", e->time);
	json_end(w);
}

/* The run's shape and its teardown, as the text's first lines. */
static void json_shape(struct diff *d, struct json_writer *w)
{
	json_key(w, "run");
	run_shape_json(w, &d->shape);
	json_key(w, "teardown");
	json_object_line(w);
	json_member_bool(w, "said", d->td.said);
	if (d->has_after) {
		json_member_string(w, "last", d->after.path);
		json_member_int(w, "total", after_total(d));
	}
	json_end(w);
}

static void print_json(struct diff *d)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_write_init(&w, &out, stdout, false);
	json_object(&w);
	json_change_end(&w, "a", &d->c.a);
	json_change_end(&w, "b", &d->c.b);
	json_member_string(&w, "policy", d->p->label);
	json_member_uint(&w, "snapshots", d->c.snapshots);
	json_member_bool(&w, "same_run", d->c.has & CHANGES_RUN);
	json_key(&w, "total");
	json_object_line(&w);
	json_member_int(&w, "a", d->total_a);
	json_member_int(&w, "b", d->total_b);
	json_member_int(&w, "change", d->total_change);
	json_end(&w);
	if (shape_shown(d))
		json_shape(d, &w);
	json_rows(d, &w, "components", &d->comps);
	if (d->has_types)
		json_rows(d, &w, "types", &d->types);
	json_rows(d, &w, "functions", &d->funcs);
	json_rows(d, &w, "stacks", &d->stacks);
	json_end(&w);
	json_write_finish(&w);
	sb_release(&out);
}

/* ---- the operands ---- */

/* Are dumps A and B of one run?  Sets their counters. */
static bool one_run(const char *a, const char *b, unsigned long *ca,
		    unsigned long *cb)
{
	char *pa = NULL, *pb = NULL, *ra = NULL, *rb = NULL;
	bool same = false;

	if (series_split(a, &pa, ca) && series_split(b, &pb, cb)) {
		same = !strcmp(pa, pb);
		if (!same) {
			/* (The same files by two paths.) */
			char *da = xstrdup(pa), *db = xstrdup(pb);
			char *sa = strrchr(da, '/'), *sbs = strrchr(db, '/');

			if (sa)
				*sa++ = '\0';
			if (sbs)
				*sbs++ = '\0';
			ra = realpath(sa ? da : ".", NULL);
			rb = realpath(sbs ? db : ".", NULL);
			same = ra && rb && !strcmp(ra, rb) &&
			       !strcmp(sa ? sa : da, sbs ? sbs : db);
			free(da);
			free(db);
		}
	}
	FREE_ALL(pa, pb, ra, rb);
	return same;
}

/* The index of counter C among R's dumps, or SIZE_MAX. */
static size_t index_of(const struct run *r, unsigned long c)
{
	for (size_t i = 0; i < r->series.ndumps; i++)
		if (r->series.dumps[i].counter == c)
			return i;
	return SIZE_MAX;
}

/* A and B, or the first and last dumps of A's run, in one run. */
static int in_run(struct diff *d, struct setup *o, struct cmd_args *a,
		  const char *policy)
{
	const char *first = a->argv[0];
	unsigned long ca = 0, cb = 0;
	size_t ia = 0, ib;

	if (a->argc == 2) {
		one_run(a->argv[0], a->argv[1], &ca, &cb);
		if (cb < ca)
			first = a->argv[1];
	}
	if (setup_open(o, a, first, policy, true) < 0)
		return -1;
	if (a->argc == 1) {
		/*
		 * The last dump before teardown, where that is known: what
		 * static destructors and atexit handlers free is not what
		 * the program gave back.  Else the last dump with something
		 * in it (a producer killed before it wrote leaves an empty
		 * one).
		 */
		series_teardown(&o->run.series, o->run.format, &d->td);
		d->first_form = true;
		ib = d->td.last;
		if (d->td.before != SIZE_MAX && d->td.before > 0)
			ib = d->td.before;
		if (!ib)
			return error("%s: the only dump of its run: diff needs "
				     "two ('dmprof diff A B')", first);
	} else {
		ia = index_of(&o->run, ca);
		ib = index_of(&o->run, cb);
		if (ia == SIZE_MAX || ib == SIZE_MAX)
			return error("%s: no such dump in the run of %s",
				     a->argv[ia == SIZE_MAX ? 0 : 1], first);
	}
	d->p = o->policy;
	if (changes_in_run(&d->c, &o->run, &o->cls, ia, ib) < 0)
		return -1;
	d->interpreter = o->run.model.runtime_bin != 0;
	d->node = d->interpreter && !strcmp(o->run.model.runtime, "node");
	if (!d->first_form)
		return 0;
	/* What teardown freed: the last dump, read alone. */
	if (ib < d->td.last) {
		if (changes_end_at(&d->after, &o->run, &o->cls, d->td.last) < 0)
			return -1;
		d->has_after = true;
	}
	changes_to_shape(&d->shape, &d->c, d->has_after ? &d->after : NULL,
			 &d->td);
	d->has_shape = true;
	/* The dumps between (taken during teardown): the run's peak is
	 * top's and html's, the most bytes in use among them all. */
	return changes_shape_between(&d->shape, &o->run, &o->cls, ib + 1,
				     d->td.last);
}

static int across(struct diff *d, struct setup *o, struct setup *ob,
		  struct cmd_args *a, const char *policy)
{
	if (setup_open(o, a, a->argv[0], policy, false) < 0 ||
	    setup_open(ob, a, a->argv[1], policy, false) < 0)
		return -1;
	d->p = o->policy;
	if (changes_across(&d->c, &o->run, &o->cls, &ob->run, &ob->cls) < 0)
		return -1;
	if (d->c.stacks_a && d->c.stacks_b && !d->c.shared)
		return error("%s and %s have no stack in common: dumps of two "
			     "programs? (diff matches the stacks of two runs "
			     "by their functions' names)",
			     a->argv[0], a->argv[1]);
	return 0;
}

static int cmd_diff_run(struct cmd_args *a)
{
	const char *policy;
	unsigned long ca, cb;
	size_t rows;
	struct setup o, ob;
	struct diff d;
	int status, rc;

	memset(&d, 0, sizeof(d));
	memset(&o, 0, sizeof(o));
	memset(&ob, 0, sizeof(ob));
	if ((status = setup_one_policy(a, &policy)))
		return status;
	if (a->argc < 1 || a->argc > 2)
		return cmd_usage_error(a, a->argc ? "too many operands"
						  : "which dumps?");
	rows = setup_rows(a, 10);
	setup_owners(a, &d.owners);
	d.rows = rows;
	d.exact = args_has(a, 'b');
	d.json = args_has(a, OPT_JSON);
	d.comps.noun = "component";
	d.comps.plural = "components";
	d.funcs.noun = "function";
	d.funcs.plural = "functions";
	d.stacks.noun = "stack";
	d.stacks.plural = "stacks";
	d.types.noun = "type";
	d.types.plural = "types";
	tally_init(&d.ftally);
	d.ftally.owners = &d.owners;
	tally_init(&d.passed);
	d.ftally.passed = a->verbose ? &d.passed : NULL;
	a->sym.want_source = true;
	if (a->argc == 1 || one_run(a->argv[0], a->argv[1], &ca, &cb))
		rc = in_run(&d, &o, a, policy);
	else
		rc = across(&d, &o, &ob, a, policy);
	if (!rc) {
		setup_owners_policy(&d.owners, d.p);
		build_components(&d);
		build_types(&d);
		build_stacks_and_functions(&d);
		/* (JSON prints every row, in order.) */
		finish(&d.comps, d.rows, d.json, &d.overflow);
		finish(&d.types, d.rows, d.json, &d.overflow);
		finish(&d.funcs, d.rows, d.json, &d.overflow);
		finish(&d.stacks, d.rows, d.json, &d.overflow);
		place_calls(&d);
		d.total_change = sub64(d.total_b, d.total_a, &d.overflow);
	}
	if (!rc && (d.overflow || d.ftally.overflow))
		rc = error("%s: sizes add up to more than 64 bits hold (a "
			   "corrupt dump?)", d.c.b.path);
	if (!rc) {
		if (d.json)
			print_json(&d);
		else
			print_text(&d);
		setup_say_passed(a, &d.owners, &d.passed, "bytes changed");
	}
	changes_free(&d.c);
	free(d.comps.v);
	free(d.types.v);
	free(d.funcs.v);
	for (size_t i = 0; i < d.stacks.n; i++)
		free(d.stacks.v[i].own_name);
	free(d.stacks.v);
	free(d.text_at);
	sb_release(&d.texts);
	tally_free(&d.ftally);
	tally_free(&d.passed);
	owners_release(&d.owners);
	change_end_free(&d.after);
	run_shape_free(&d.shape);
	setup_close(&ob);
	setup_close(&o);
	return rc ? 1 : 0;
}

const struct cmd_entry cmd_diff = { .name = "diff", .run = cmd_diff_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print what grew between two dumps, or over a run" };
