/*
 * dmprof top [-p POLICY] [-c COMPONENT] [-n N] [--json] DUMP: what is
 * eating memory in one dump.  First the policy's components (those
 * between the markers: they partition the process), largest first, with
 * their share of them all; then the functions, as pprof --text ranks
 * them: flat bytes (allocated there: the first frame of a stack that is
 * not the allocator's own) and cumulative ones (there or in what it
 * called), with a running sum of flat.  The components come from the
 * aggregation that csv prints, the functions from the same
 * classification, so the numbers agree with csv's.  Rows past N go into
 * one "<other>" row that says how many it holds.
 *
 * --tree shows the components alone, as the tree of their names
 * (comptree.h) with a subtotal at every level, instead of the tables.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "blocktypes.h"
#include "change.h"
#include "comptree.h"
#include "numfmt.h"
#include "json_write.h"
#include "profile.h"
#include "series.h"
#include "setup.h"
#include "stacktext.h"
#include "tally.h"

enum {
	OPT_JSON = OPT_LONG_ONLY,
	OPT_TREE,
	OPT_LINES,
	OPT_BY_TYPE,
};

struct top {
	struct setup *o;
	const struct snapshot *snap;
	int col;               /* -c, or -1 */
	size_t n;              /* rows before <other> */
	bool json;
	bool exact;            /* -b */
	bool tree;             /* --tree */
	/* --by-type: each column's blocks in use by type (its committed
	 * bytes), and the nodes the tree shows them in, while it prints. */
	bool by_type;
	struct tally *coltypes;
	bool lines;            /* --lines */
	struct comptree ctree;
	int64_t *values;       /* the csv row */
	struct agg_builtins builtins;
	int64_t total;         /* of the components of the partition */
	struct tally funcs;    /* v[0] flat, v[1] cum */
	/* A walked heap's blocks in use, by type (blocktypes.h): in
	 * scope, each stack line once. */
	struct tally types;
	bool has_types;
	struct owners owners;  /* --owner, --own, --alloc-fn */
	struct tally passed;   /* -v: allocator wrappers passed over */
	int64_t stack_bytes;   /* the bytes with stacks, in scope */
	struct strbuf sb;
	int *cols;             /* the components shown, largest first */
	struct run_shape shape; /* of a run that says where it ended */
	bool has_shape;
	struct cut {
		size_t n, shown;   /* rows, rows before <other> */
		int64_t rest;      /* in <other> */
	} comps, fns, tys;
};

static const char *const usage[] = { "DUMP", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICY,
	OPTION_COMPONENT("only this component, and the functions of "
			 "its stacks"),
	OPTION_ROWS("rows in each table (with --tree, children of "
		    "each node) before the rest goes into <other> "
		    "(default 15)"),
	OPTION_BYTES,
	{ .key = OPT_JSON, .name = "json", .flags = OPT_SYNOPSIS,
	  .help = "exact numbers, as JSON" },
	{ .key = OPT_LINES, .name = "lines", .flags = OPT_SYNOPSIS,
	  .help = "the owners' bytes by the line that allocated them, not "
		  "by function" },
	{ .key = OPT_TREE, .name = "tree", .flags = OPT_SYNOPSIS,
	  .help = "the components alone, as a tree of their names' "
		  "parts split at '-' (or '/'), with subtotals" },
	{ .key = OPT_BY_TYPE, .name = "by-type",
	  .help = "with --tree: each component of a snapshot or a core "
		  "split into the types of its blocks" },
	OPTION_OWNERS,
	OPT_END,
};

static int add_item(void *ctx, const struct item *it)
{
	struct top *t = ctx;

	if (it->kind != ITEM_MALLOC && it->kind != ITEM_HOOKED)
		return 0; /* no stack */
	/*
	 * The components' stacks only: the allocator's arenas (outside the
	 * partition) hold the malloc'd blocks a second time.
	 */
	if (t->col >= 0 ? !column_counts(t->o->policy, t->col, it->kind,
					 it->col)
			: !policy_in_partition(t->o->policy, it->col))
		return 0;
	/* (A block counts whatever the core or the pages hold of it.) */
	if (t->has_types && it->kind == ITEM_MALLOC && it->line)
		blocktypes_add(&t->types, &t->o->run.model, it->line);
	if (!it->bytes || stack_is_marker(&t->o->run.model, it->bucket->stack))
		return 0;
	stacktext_tally_functions(&t->funcs, &t->o->run.model,
				  it->bucket->stack, &it->bytes, 1, true);
	t->stack_bytes = add64(t->stack_bytes, it->bytes, &t->funcs.overflow);
	return 0;
}

/* The components shown, largest first: indices into the policy. */
static size_t components(const struct top *t, int *out)
{
	const struct policy *p = t->o->policy;
	size_t n = 0;

	for (size_t c = 0; c < p->ncols; c++)
		if (t->col >= 0 ? (int)c == t->col
				: policy_in_partition(p, (int)c) && t->values[c])
			out[n++] = (int)c;
	/* (A few dozen at most.) */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && t->values[out[k - 1]] <
						    t->values[out[k]]; k--) {
			int x = out[k];

			out[k] = out[k - 1];
			out[k - 1] = x;
		}
	return n;
}

/* A number for people, right-aligned in W columns. */
static const char *human(struct top *t, int64_t v, int w)
{
	struct strbuf num = STRBUF_INIT;

	if (t->exact)
		sb_addf(&num, "%" PRId64, v);
	else
		format_bytes(&num, v, false);
	sb_reset(&t->sb);
	sb_addf(&t->sb, "%*s", w, num.buf);
	sb_release(&num);
	return t->sb.buf;
}

static const char *pct(struct top *t, int64_t part, int64_t whole)
{
	struct strbuf num = STRBUF_INIT;

	format_percent(&num, part, whole, false);
	sb_reset(&t->sb);
	sb_addf(&t->sb, "%6s", num.buf);
	sb_release(&num);
	return t->sb.buf;
}

/* The heap of a process walked from outside (dmprof snapshot's), first:
 * blocks in use, free space by kind, the arenas' own. */
static void print_heap(struct top *t)
{
	const struct heap_summary *h = &t->snap->heap;
	const char *none = snapshot_meta(t->snap, "Heap");

	if (!t->snap->has_heap) {
		if (none)
			printf("heap: %s\n\n", none);
		return;
	}
	printf("heap: %zu arena%s holding %s, %zu tcache%s", h->narenas,
	       h->narenas == 1 ? "" : "s", human(t, (int64_t)h->system_mem, 0),
	       h->ntcaches, h->ntcaches == 1 ? "" : "s");
	if (h->nproblems)
		printf("; %zu problem%s in the walk", h->nproblems,
		       h->nproblems == 1 ? "" : "s");
	printf("\n\n%10s %10s  %s\n", "bytes", "blocks", "heap");
	printf("%s %10" PRIu64 "  in use\n",
	       human(t, (int64_t)h->t.bytes[HEAP_IN_USE], 10),
	       h->t.count[HEAP_IN_USE]);
	printf("%s %10" PRIu64 "  in use, mapped one by one\n",
	       human(t, (int64_t)h->mmapped_bytes, 10), h->mmapped_count);
	for (int s = HEAP_IN_USE + 1; s < HEAP_NSTATES; s++)
		if (s != HEAP_UNLISTED || h->t.count[s])
			printf("%s %10" PRIu64 "  free: %s\n",
			       human(t, (int64_t)h->t.bytes[s], 10),
			       h->t.count[s], heap_state_name(s));
	printf("%s %10s  the arenas' own headers\n",
	       human(t, (int64_t)h->t.overhead, 10), "");
	if (h->t.unknown)
		printf("%s %10s  unknown, past a corruption\n",
		       human(t, (int64_t)h->t.unknown, 10), "");
	if (h->py.present) {
		printf("%s %10" PRIu64 "  in use: Python's objects (pymalloc, "
		       "%" PRIu64 " arena%s)\n",
		       human(t, (int64_t)h->py.bytes, 10), h->py.count,
		       h->py.arenas, h->py.arenas == 1 ? "" : "s");
		printf("%s %10s  free in pymalloc's arenas\n",
		       human(t, (int64_t)h->py.free, 10), "");
	}
	if (h->scanned) {
		printf("%s %10" PRIu64 "  in use, leaked: nothing reachable "
		       "points at them\n",
		       human(t, (int64_t)h->leaked_bytes, 10), h->leaked_count);
		printf("%s %10" PRIu64 "  of those unreferenced: no leaked "
		       "block points at them either\n",
		       human(t, (int64_t)h->unreferenced_bytes, 10),
		       h->unreferenced_count);
	}
	printf("\n");
}

/* The line that says what the components add up to, and what is not in
 * them. */
static void print_heading(struct top *t)
{
	const struct policy *p = t->o->policy;
	/* (Outside the components, in the kernel's Rss: say how much.) */
	int profiler = policy_column(p, "profiler");

	printf("%s in the components of policy %s (%s)",
	       human(t, t->total, 0), p->label, t->snap->path);
	if (t->builtins.v[B_RSS])
		printf("; the kernel's Rss %s",
		       human(t, t->builtins.v[B_RSS], 0));
	if (snapshot_meta(t->snap, "Core"))
		printf("; a core: what it holds stands for what was resident");
	if (profiler >= 0 && t->values[profiler] &&
	    !policy_in_partition(p, profiler))
		printf("; not in them: the profiler's own %s",
		       human(t, t->values[profiler], 0));
	printf("\n");
}

/*
 * The blocks in use by type, largest first: what a heap walked from
 * outside knows its blocks by (a class, a layout, a runtime's object
 * type; a size class where nothing is known), with how many of each
 * are leaked where the heap was scanned.
 */
static void print_types(struct top *t)
{
	bool leaks = t->snap->heap.scanned;
	int64_t blocks = 0, bytes = 0;
	bool over = false;

	for (size_t i = 0; i < t->types.n; i++) {
		blocks = add64(blocks, t->types.v[i]->allocs, &over);
		bytes = add64(bytes, t->types.v[i]->bytes, &over);
	}
	printf("\ntypes of the %" PRId64 " block%s in use", blocks,
	       blocks == 1 ? "" : "s");
	printf(", %s in their chunks (a block of no known type by its "
	       "size)\n", human(t, bytes, 0));
	if (!t->types.n) {
		printf("  (none: %s)\n", t->col >= 0 ? "the component holds no "
						       "block in use"
						     : "no block in use");
		return;
	}
	printf("%10s %10s", "bytes", "blocks");
	if (leaks)
		printf(" %8s", "leaked");
	printf("  type\n");
	for (size_t i = 0; i < t->tys.shown; i++) {
		const struct tally_entry *e = t->types.v[i];

		printf("%s %10" PRId64, human(t, e->bytes, 10), e->allocs);
		if (leaks)
			printf(" %8" PRId64, e->v[BLOCKTYPES_LEAKED]);
		printf("  %s\n", e->key);
	}
	if (t->tys.n > t->tys.shown) {
		size_t more = t->tys.n - t->tys.shown;
		int64_t rest_blocks = 0;

		for (size_t i = t->tys.shown; i < t->tys.n; i++)
			rest_blocks = add64(rest_blocks, t->types.v[i]->allocs,
					    &over);
		printf("%s %10" PRId64, human(t, t->tys.rest, 10),
		       rest_blocks);
		if (leaks)
			printf(" %8s", "");
		printf("  <other: %zu more type%s>\n", more,
		       more == 1 ? "" : "s");
	}
}

/* The types table, as JSON: every type shown, and what <other> holds. */
static void types_json(struct top *t, struct json_writer *w)
{
	int64_t rest_blocks = 0;
	bool over = false;

	json_key(w, "types");
	json_array(w);
	for (size_t i = 0; i < t->tys.shown; i++) {
		const struct tally_entry *e = t->types.v[i];

		json_object_line(w);
		json_member_string(w, "name", e->key);
		json_member_int(w, "count", e->allocs);
		json_member_int(w, "bytes", e->bytes);
		if (t->snap->heap.scanned) {
			json_key(w, "leaked");
			json_object_line(w);
			json_member_int(w, "count", e->v[BLOCKTYPES_LEAKED]);
			json_member_int(w, "bytes",
					e->v[BLOCKTYPES_LEAKED_BYTES]);
			json_end(w);
		}
		json_end(w);
	}
	json_end(w);
	for (size_t i = t->tys.shown; i < t->tys.n; i++)
		rest_blocks = add64(rest_blocks, t->types.v[i]->allocs, &over);
	json_key(w, "other_types");
	json_object_line(w);
	json_member_uint(w, "types", t->tys.n - t->tys.shown);
	json_member_int(w, "count", rest_blocks);
	json_member_int(w, "bytes", t->tys.rest);
	json_end(w);
}

/* E's flat bytes by the line they were allocated at. */
static void lines_json(struct json_writer *w, const struct tally_entry *e)
{
	size_t n;
	struct tally_line **v = tally_lines_sorted(e, &n);

	json_key(w, "lines");
	json_array_line(w);
	for (size_t i = 0; i < n; i++) {
		json_object_line(w);
		if (v[i]->file)
			json_member_string(w, "file", v[i]->file);
		json_member_uint(w, "line", v[i]->line);
		json_member_int(w, "flat", v[i]->bytes);
		json_end(w);
	}
	json_end(w);
	free(v);
}

/* One function's line, for --lines. */
struct fline {
	const struct tally_entry *e;
	const struct tally_line *l;
};

static int fline_cmp(const void *a, const void *b)
{
	const struct fline *x = a, *y = b;
	int c;

	if (x->l->bytes != y->l->bytes)
		return x->l->bytes > y->l->bytes ? -1 : 1;
	if ((c = strcmp(x->e->key, y->e->key)))
		return c;
	return (x->l->line > y->l->line) - (x->l->line < y->l->line);
}

/*
 * --lines: the owners' bytes by the line that allocated them, ranked as
 * the functions are (pprof's -lines granularity; tracemalloc's 'lineno'
 * statistics, for a Python program).
 */
static void print_lines(struct top *t)
{
	struct fline *v = NULL;
	struct strbuf place = STRBUF_INIT;
	size_t n = 0, alloc = 0, shown;
	int64_t sum = 0, rest = 0;

	for (size_t i = 0; i < t->funcs.n; i++)
		for (const struct tally_line *l = t->funcs.v[i]->lines; l;
		     l = l->next) {
			if (!l->bytes)
				continue;
			GROW(v, n + 1, alloc);
			v[n].e = t->funcs.v[i];
			v[n++].l = l;
		}
	if (n)
		qsort(v, n, sizeof(*v), fline_cmp);
	shown = n < t->n ? n : t->n;
	printf("%10s %6s %6s  %s\n", "flat", "flat%", "sum%", "line");
	for (size_t i = 0; i < n; i++) {
		if (i >= shown) {
			rest = add64(rest, v[i].l->bytes, &t->funcs.overflow);
			continue;
		}
		sum = add64(sum, v[i].l->bytes, &t->funcs.overflow);
		sb_reset(&place);
		place_text(&place, v[i].l->file, v[i].l->line, true);
		printf("%s ", human(t, v[i].l->bytes, 10));
		printf("%s ", pct(t, v[i].l->bytes, t->stack_bytes));
		printf("%s  ", pct(t, sum, t->stack_bytes));
		printf("%s%s\n", v[i].e->key, place.buf ? place.buf : "");
	}
	if (n > shown) {
		printf("%s ", human(t, rest, 10));
		printf("%s %6s  <other: %zu more line%s>\n",
		       pct(t, rest, t->stack_bytes), "", n - shown,
		       n - shown == 1 ? "" : "s");
	}
	sb_release(&place);
	free(v);
}

static void print_text(struct top *t)
{
	const struct policy *p = t->o->policy;
	int64_t sum = 0;
	struct strbuf share = STRBUF_INIT;

	if (t->has_shape) {
		run_shape_text(&share, &t->shape, t->exact);
		printf("%s\n", share.buf);
		sb_reset(&share);
	}
	print_heap(t);
	if (t->col >= 0) {
		format_percent(&share, t->values[t->col], t->total, false);
		printf("%s: %s, ", p->cols[t->col].name,
		       human(t, t->values[t->col], 0));
		printf("%s of the %s in the components of policy %s (%s)\n",
		       share.buf, human(t, t->total, 0), p->label,
		       t->snap->path);
	} else {
		print_heading(t);
		printf("\n%10s %6s  %s\n", "bytes", "%", "component");
		for (size_t i = 0; i < t->comps.shown; i++) {
			int64_t v = t->values[t->cols[i]];

			printf("%s ", human(t, v, 10));
			printf("%s  %s\n", pct(t, v, t->total),
			       p->cols[t->cols[i]].name);
		}
		if (t->comps.n > t->comps.shown) {
			size_t more = t->comps.n - t->comps.shown;

			printf("%s ", human(t, t->comps.rest, 10));
			printf("%s  <other: %zu more component%s>\n",
			       pct(t, t->comps.rest, t->total), more,
			       more == 1 ? "" : "s");
		}
	}
	if (t->has_types)
		print_types(t);
	if (!t->stack_bytes && t->col < 0) {
		/* (A snapshot of a heap not walked, a dump of mappings
		 * only: no table at all, rather than one of nothing.) */
		printf("\n%s: none (%s holds no allocation stacks; dmprof "
		       "record gives them)\n", t->lines ? "lines" : "functions",
		       t->snap->path);
		sb_release(&share);
		return;
	}
	if (t->lines)
		printf("\nlines, over the %s that have stacks (flat: allocated "
		       "there)\n", human(t, t->stack_bytes, 0));
	else
		printf("\nfunctions, over the %s that have stacks (flat: "
		       "allocated there; cum: there and in what it called)\n",
		       human(t, t->stack_bytes, 0));
	if (!t->funcs.n) {
		printf("  (none: %s)\n", t->col >= 0 ? "the component holds no "
						       "stacks"
						     : "no stacks");
		sb_release(&share);
		return;
	}
	if (t->lines) {
		print_lines(t);
		sb_release(&share);
		return;
	}
	printf("%10s %6s %6s %10s %6s  %s\n", "flat", "flat%", "sum%", "cum",
	       "cum%", "function");
	for (size_t i = 0; i < t->fns.shown; i++) {
		const struct tally_entry *e = t->funcs.v[i];

		sum += e->v[0]; /* (cut() added them up already) */
		printf("%s ", human(t, e->v[0], 10));
		printf("%s ", pct(t, e->v[0], t->stack_bytes));
		printf("%s ", pct(t, sum, t->stack_bytes));
		printf("%s ", human(t, e->v[1], 10));
		sb_reset(&share);
		place_text(&share, e->file, e->line, true);
		printf("%s  %s%s\n", pct(t, e->v[1], t->stack_bytes), e->key,
		       share.buf ? share.buf : "");
	}
	if (t->fns.n > t->fns.shown) {
		size_t more = t->fns.n - t->fns.shown;

		printf("%s ", human(t, t->fns.rest, 10));
		printf("%s %6s %10s %6s  <other: %zu more function%s>\n",
		       pct(t, t->fns.rest, t->stack_bytes), "", "", "", more,
		       more == 1 ? "" : "s");
	}
	sb_release(&share);
}

/* Both documents' start: what was read, under which policy. */
static void json_begin(struct top *t, struct json_writer *w,
		       struct strbuf *out)
{
	json_write_init(w, out, stdout, false);
	json_object(w);
	json_member_string(w, "dump", t->snap->path);
	json_member_string(w, "policy", t->o->policy->label);
	/* (Whatever bytes it holds, as they were: json_bytes.) */
	if (t->snap->command_line && *t->snap->command_line) {
		json_key(w, "command_line");
		json_bytes(w, t->snap->command_line);
	}
}

static void print_json(struct top *t)
{
	const struct policy *p = t->o->policy;
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_begin(t, &w, &out);
	if (t->col >= 0)
		json_member_string(&w, "component", p->cols[t->col].name);
	if (t->snap->has_heap) {
		const struct heap_summary *h = &t->snap->heap;

		json_key(&w, "heap");
		json_object(&w);
		json_member_uint(&w, "arenas", h->narenas);
		json_member_uint(&w, "tcaches", h->ntcaches);
		json_member_uint(&w, "problems", h->nproblems);
		heap_summary_json(&w, h);
		json_end(&w);
	}
	if (t->has_shape) {
		json_key(&w, "run");
		run_shape_json(&w, &t->shape);
	}
	json_member_int(&w, "total", t->total);
	if (t->builtins.v[B_RSS])
		json_member_int(&w, "rss", t->builtins.v[B_RSS]);
	json_key(&w, "components");
	json_array(&w);
	for (size_t i = 0; i < t->comps.shown; i++) {
		json_object_line(&w);
		json_member_string(&w, "name", p->cols[t->cols[i]].name);
		json_member_int(&w, "bytes", t->values[t->cols[i]]);
		json_end(&w);
	}
	json_end(&w);
	json_key(&w, "other_components");
	json_object_line(&w);
	json_member_uint(&w, "count", t->comps.n - t->comps.shown);
	json_member_int(&w, "bytes", t->comps.rest);
	json_end(&w);
	if (t->has_types)
		types_json(t, &w);
	json_member_int(&w, "stack_bytes", t->stack_bytes);
	json_key(&w, "functions");
	json_array(&w);
	for (size_t i = 0; i < t->fns.shown; i++) {
		const struct tally_entry *e = t->funcs.v[i];

		json_object_line(&w);
		json_member_string(&w, "name", e->key);
		if (e->file) {
			json_member_string(&w, "file", e->file);
			if (e->line)
				json_member_uint(&w, "line", e->line);
		}
		json_member_int(&w, "flat", e->v[0]);
		json_member_int(&w, "cum", e->v[1]);
		lines_json(&w, e);
		json_end(&w);
	}
	json_end(&w);
	json_key(&w, "other_functions");
	json_object_line(&w);
	json_member_uint(&w, "count", t->fns.n - t->fns.shown);
	json_member_int(&w, "flat", t->fns.rest);
	json_end(&w);
	json_end(&w);
	json_write_finish(&w);
	sb_release(&out);
}

/*
 * The children of N worth a row of their own, into KIDS: those that hold
 * a byte, largest first, down to 1% of the total and at most T's N, and
 * the unclassified one whatever it holds (the part a policy's author
 * works to shrink); the rest go into one <other> row, *MORE of them
 * holding *REST (never one alone: that one is shown instead).  Returns
 * how many are shown, the first of KIDS.
 */
static size_t tree_cut(const struct top *t, const struct comptree_node *n,
		       const struct comptree_node **kids, size_t *more,
		       int64_t *rest)
{
	size_t nkids = 0, shown = 0, big = 0;
	bool overflow = false; /* (parts of a sum that fits) */
	/* (A component split into its types, the one node with a column
	 * and children: 1% of it, else a small component shows none.) */
	double whole = (double)(n->col >= 0 ? n->bytes : t->total);

	for (size_t i = 0; i < n->nchildren; i++) {
		const struct comptree_node *c = n->children[i];

		if (comptree_empty(c))
			continue;
		if (big == nkids && big < t->n && (double)c->bytes * 100 >= whole)
			big++;
		kids[nkids++] = c;
	}
	/* The unclassified ones past the big ones move up, in order. */
	shown = big;
	for (size_t i = big; i < nkids; i++)
		if (kids[i]->unclassified) {
			const struct comptree_node *c = kids[i];

			memmove(&kids[shown + 1], &kids[shown],
				(i - shown) * sizeof(*kids));
			kids[shown++] = c;
		}
	if (nkids - shown == 1)
		shown++;
	*more = nkids - shown;
	*rest = 0;
	for (size_t i = shown; i < nkids; i++)
		*rest = add64(*rest, kids[i]->bytes, &overflow);
	return shown;
}

/* --by-type: an item's blocks in use to its column's types. */
static int add_type_item(void *ctx, const struct item *it)
{
	struct top *t = ctx;
	struct tally *ct;
	struct tally_entry *e;
	const char *name;

	if (it->kind != ITEM_MALLOC || !it->line ||
	    !policy_in_partition(t->o->policy, it->col))
		return 0;
	name = blocktypes_name(&t->o->run.model, it->bucket);
	if (!name)
		return 0;
	ct = &t->coltypes[it->col];
	e = tally_get(ct, name, strlen(name));
	e->bytes = add64(e->bytes, it->bytes, &ct->overflow);
	e->allocs = add64(e->allocs, sub64(it->line->alloc, it->line->free,
					   &ct->overflow),
			  &ct->overflow);
	return 0;
}

/*
 * --by-type: leaf C as a node whose children are its column's types
 * (what holds no block in use, the rest, one child of its own), into
 * *OUT with its children in KIDS (NODES: their storage, LABELS their
 * names); false when C is not split (no block in use in it).
 */
static bool typed_node(struct top *t, const struct comptree_node *c,
		       struct comptree_node *out,
		       struct comptree_node ***kids,
		       struct comptree_node **nodes, struct strbuf *labels)
{
	const struct tally *ct;
	int64_t rest;
	size_t n = 0;
	bool over = false;

	if (!t->by_type || c->nchildren || c->col < 0 ||
	    !t->coltypes[c->col].n)
		return false;
	ct = &t->coltypes[c->col];
	rest = c->bytes;
	*nodes = xcalloc(ct->n + 1, sizeof(**nodes));
	*kids = xcalloc(ct->n + 1, sizeof(**kids));
	/* (Names first: the labels' buffer moves as it grows.) */
	for (size_t i = 0; i < ct->n; i++)
		sb_addf(labels, "%s: %" PRId64 " block%s%c", ct->v[i]->key,
			ct->v[i]->allocs, ct->v[i]->allocs == 1 ? "" : "s",
			'\0');
	if (c->bytes > 0)
		sb_addf(labels, "<not blocks in use>%c", '\0');
	for (size_t i = 0, at = 0; i < ct->n; i++) {
		struct comptree_node *k = &(*nodes)[n];

		k->name = k->path = labels->buf + at;
		at += strlen(labels->buf + at) + 1;
		k->bytes = ct->v[i]->bytes;
		k->col = -1;
		k->depth = c->depth + 1;
		k->parent = out;
		rest = sub64(rest, k->bytes, &over);
		(*kids)[n++] = k;
		if (i + 1 == ct->n && rest > 0 && !over) {
			k = &(*nodes)[n];
			k->name = k->path = labels->buf + at;
			k->bytes = rest;
			k->col = -1;
			k->depth = c->depth + 1;
			k->parent = out;
			(*kids)[n++] = k;
		}
	}
	*out = *c;
	out->children = *kids;
	out->nchildren = n;
	return true;
}

/* One row of the tree: a node (or <other>) under PARENT. */
static void tree_row(struct top *t, const struct comptree_node *parent,
		     int64_t bytes, const char *prefix, bool last,
		     const char *label, const char *note)
{
	printf("%s ", human(t, bytes, 10));
	printf("%s ", pct(t, bytes, t->total));
	if (parent->depth)
		printf(" %s", pct(t, bytes, parent->bytes));
	else
		printf("%7s", ""); /* (the top level's parent is the total) */
	printf("  %s%s%s%s\n", prefix,
	       !parent->depth ? "" : last ? "`-- " : "|-- ", label, note);
}

/*
 * N's children, drawn as tree(1) draws directories (in ASCII): PREFIX
 * holds the bars of the levels above.  The top level has no bars.
 */
static void tree_text(struct top *t, const struct comptree_node *n,
		      struct strbuf *prefix)
{
	const struct comptree_node **kids;
	struct strbuf label = STRBUF_INIT;
	size_t shown, more;
	int64_t rest;

	kids = xcalloc(n->nchildren + 1, sizeof(*kids));
	shown = tree_cut(t, n, kids, &more, &rest);
	for (size_t i = 0; i < shown; i++) {
		const struct comptree_node *c = kids[i];
		bool last = i + 1 == shown && !more;
		size_t len = prefix->len;

		struct comptree_node split, **tkids = NULL, *tnodes = NULL;
		struct strbuf labels = STRBUF_INIT;
		bool typed;

		tree_row(t, n, c->bytes, prefix->buf ? prefix->buf : "", last,
			 c->name, c->unclassified ? " (unclassified)" : "");
		typed = typed_node(t, c, &split, &tkids, &tnodes, &labels);
		if (!c->nchildren && !typed)
			continue;
		if (n->depth)
			sb_addstr(prefix, last ? "    " : "|   ");
		tree_text(t, typed ? &split : c, prefix);
		free(tkids);
		free(tnodes);
		sb_release(&labels);
		if (prefix->buf) {
			prefix->len = len;
			prefix->buf[len] = '\0';
		}
	}
	if (more) {
		sb_addf(&label, "<other: %zu more>", more);
		tree_row(t, n, rest, prefix->buf ? prefix->buf : "", true,
			 label.buf, "");
	}
	sb_release(&label);
	free(kids);
}

static void print_tree_text(struct top *t)
{
	struct strbuf prefix = STRBUF_INIT;

	print_heading(t);
	printf("\n%10s %6s %7s  %s\n", "bytes", "%", "parent%", "component");
	if (comptree_empty(t->ctree.root))
		printf("  (none: no component holds a byte)\n");
	tree_text(t, t->ctree.root, &prefix);
	sb_release(&prefix);
}

/* N and every node under it that holds a byte, exactly (with --by-type,
 * a component's types beside its children, which are components). */
static void tree_json(struct top *t, struct json_writer *w,
		      const struct comptree_node *n)
{
	bool leaf = !n->nchildren;

	if (leaf)
		json_object_line(w);
	else
		json_object(w);
	json_member_string(w, "name", n->name);
	json_member_string(w, "path", n->path);
	json_member_int(w, "bytes", n->bytes);
	if (n->unclassified)
		json_member_bool(w, "unclassified", true);
	if (n->self)
		json_member_bool(w, "self", true);
	if (t->by_type && leaf && n->col >= 0 && t->coltypes[n->col].n) {
		const struct tally *ct = &t->coltypes[n->col];

		json_key(w, "types");
		json_array_line(w);
		for (size_t i = 0; i < ct->n; i++) {
			json_object_line(w);
			json_member_string(w, "name", ct->v[i]->key);
			json_member_int(w, "count", ct->v[i]->allocs);
			json_member_int(w, "bytes", ct->v[i]->bytes);
			json_end(w);
		}
		json_end(w);
	}
	json_key(w, "children");
	if (leaf)
		json_array_line(w);
	else
		json_array(w);
	for (size_t i = 0; i < n->nchildren; i++)
		if (!comptree_empty(n->children[i]))
			tree_json(t, w, n->children[i]);
	json_end(w);
	json_end(w);
}

static void print_tree_json(struct top *t)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_begin(t, &w, &out);
	json_member_int(&w, "total", t->total);
	if (t->builtins.v[B_RSS])
		json_member_int(&w, "rss", t->builtins.v[B_RSS]);
	json_key(&w, "tree");
	tree_json(t, &w, t->ctree.root);
	json_end(&w);
	json_write_finish(&w);
	sb_release(&out);
}

/*
 * Cut a table of N rows after T's limit; REST sums what it leaves out.
 * The rows shown are added up too (their running sum is printed), so
 * that a sum that does not fit is known before anything is printed.
 */
static struct cut cut(struct top *t, size_t n,
		      int64_t (*v)(const struct top *, size_t))
{
	struct cut c = { n, n < t->n ? n : t->n, 0 };
	int64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		if (i < c.shown)
			sum = add64(sum, v(t, i), &t->funcs.overflow);
		else
			c.rest = add64(c.rest, v(t, i), &t->funcs.overflow);
	return c;
}

static int64_t comp_bytes(const struct top *t, size_t i)
{
	return t->values[t->cols[i]];
}

static int64_t func_flat(const struct top *t, size_t i)
{
	return t->funcs.v[i]->v[0];
}

static int64_t type_bytes(const struct top *t, size_t i)
{
	return t->types.v[i]->bytes;
}

/*
 * Open DUMP's run at its first dump when the run says where it ended
 * (a before-teardown or at-exit dump: dmprof record's, gperftools'), to
 * read its shape first; else DUMP alone.  As setup_dump otherwise.
 */
static int open_dump(struct top *t, struct setup *o, struct snapshot *snap,
		     struct cmd_args *a, const char *dump, const char *policy)
{
	char *first = series_first_dump(dump), *prefix = NULL;
	struct run_teardown td;
	struct series s;
	unsigned long counter = 0;
	size_t i = SIZE_MAX;
	enum dump_format format;

	if (!first)
		return setup_dump(o, snap, a, dump, policy);
	/* (Not a dump at all: said once, here.) */
	if (profile_probe(dump, &format) < 0) {
		free(first);
		return -1;
	}
	if (series_discover(&s, first, true) < 0) {
		free(first);
		return setup_dump(o, snap, a, dump, policy);
	}
	series_teardown(&s, format, &td);
	series_split(dump, &prefix, &counter);
	for (size_t k = 0; k < s.ndumps; k++)
		if (s.dumps[k].counter == counter)
			i = k;
	series_free(&s);
	free(prefix);
	if (!(td.said || td.at_exit) || !td.last || i == SIZE_MAX) {
		free(first);
		return setup_dump(o, snap, a, dump, policy);
	}
	if (setup_open(o, a, first, policy, true) < 0 ||
	    changes_shape(&t->shape, &o->run, &o->cls, &td) < 0 ||
	    run_load_dump(&o->run, i, snap) < 0) {
		free(first);
		setup_close(o);
		return -1;
	}
	free(first);
	t->has_shape = true;
	run_symbolize_snapshot(&o->run, snap);
	/* (Named as the user named it.) */
	free(snap->path);
	snap->path = xstrdup(dump);
	return 0;
}

static int cmd_top_run(struct cmd_args *a)
{
	const char *component = args_get(a, 'c'), *policy;
	struct agg_stats stats;
	struct snapshot snap;
	struct setup o;
	struct top t;
	size_t rows;
	int status;

	memset(&t, 0, sizeof(t));
	if ((status = setup_one_policy(a, &policy)))
		return status;
	rows = setup_rows(a, 15);
	setup_owners(a, &t.owners);
	if (a->argc != 1) {
		status = cmd_usage_error(a, a->argc ? "too many operands"
						    : "which dump?");
		goto early;
	}
	/* (The tree is every component's, and has no functions to own.) */
	t.tree = args_has(a, OPT_TREE);
	if (t.tree && (component || args_has(a, OPT_OWNER) ||
		       args_has(a, OPT_OWN))) {
		status = cmd_usage_error(a, "--tree shows every component and "
					    "no function: not with %s",
					 component ? "-c" : "--owner or --own");
		goto early;
	}
	t.by_type = args_has(a, OPT_BY_TYPE);
	if (t.by_type && !t.tree) {
		status = cmd_usage_error(a, "--by-type splits the tree's "
					    "components: with --tree");
		goto early;
	}
	/* file:line where the binaries say (the owner rule reads files). */
	a->sym.want_source = true;
	if (open_dump(&t, &o, &snap, a, a->argv[0], policy) < 0) {
		status = 1;
		goto early;
	}
	setup_owners_policy(&t.owners, o.policy);
	t.o = &o;
	t.snap = &snap;
	t.col = -1;
	t.n = rows;
	t.json = args_has(a, OPT_JSON);
	t.lines = args_has(a, OPT_LINES);
	t.exact = args_has(a, 'b');
	tally_init(&t.funcs);
	tally_init(&t.types);
	/* (A heap walked from outside: its blocks are known by type.) */
	t.has_types = snap.has_heap;
	t.funcs.owners = &t.owners;
	t.funcs.lines = true;
	tally_init(&t.passed);
	t.funcs.passed = a->verbose ? &t.passed : NULL;
	t.values = xcalloc(o.policy->ncols, sizeof(*t.values));
	memset(&stats, 0, sizeof(stats));
	if (component && (t.col = setup_component(o.policy, component)) < 0) {
		status = 1;
		goto out;
	}
	snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
	if (t.by_type) {
		t.coltypes = xcalloc(o.policy->ncols, sizeof(*t.coltypes));
		for (size_t c = 0; c < o.policy->ncols; c++)
			tally_init(&t.coltypes[c]);
	}
	if (aggregate_snapshot(&o.cls, &snap, NULL, t.values, &t.builtins,
			       &stats) < 0 ||
	    (!t.tree &&
	     aggregate_items(&o.cls, &snap, NULL, true, add_item, &t) < 0) ||
	    (t.by_type && aggregate_items(&o.cls, &snap, NULL, true,
					  add_type_item, &t) < 0)) {
		status = 1;
		goto out;
	}
	for (size_t c = 0; t.by_type && c < o.policy->ncols; c++) {
		tally_sort(&t.coltypes[c], tally_cmp_bytes);
		t.funcs.overflow |= t.coltypes[c].overflow;
	}
	t.cols = xcalloc(o.policy->ncols + 1, sizeof(*t.cols));
	for (size_t c = 0; c < o.policy->ncols; c++)
		if (policy_in_partition(o.policy, (int)c))
			t.total = add64(t.total, t.values[c], &t.funcs.overflow);
	if (t.funcs.overflow) {
		status = sizes_overflow(&snap);
		goto out;
	}
	if (t.tree) {
		if (comptree_build(&t.ctree, o.policy, t.values) < 0) {
			status = 1;
			goto out;
		}
		if (t.json)
			print_tree_json(&t);
		else
			print_tree_text(&t);
		goto out;
	}
	t.comps = cut(&t, components(&t, t.cols), comp_bytes);
	tally_sort(&t.funcs, stacktext_cmp_flat);
	t.fns = cut(&t, t.funcs.n, func_flat);
	tally_sort(&t.types, blocktypes_cmp);
	t.tys = cut(&t, t.types.n, type_bytes);
	if (t.funcs.overflow || t.types.overflow) {
		status = sizes_overflow(&snap);
		goto out;
	}
	if (t.json)
		print_json(&t);
	else
		print_text(&t);
	setup_say_passed(a, &t.owners, &t.passed, "bytes");
out:
	for (size_t c = 0; t.coltypes && c < o.policy->ncols; c++)
		tally_free(&t.coltypes[c]);
	free(t.coltypes);
	comptree_free(&t.ctree);
	free(t.cols);
	free(t.values);
	tally_free(&t.funcs);
	tally_free(&t.types);
	tally_free(&t.passed);
	sb_release(&t.sb);
	snapshot_release(&snap);
	setup_close(&o);
early:
	run_shape_free(&t.shape);
	owners_release(&t.owners);
	return status;
}

const struct cmd_entry cmd_top = { .name = "top", .run = cmd_top_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print what is eating memory in a dump: components, "
		   "functions" };
