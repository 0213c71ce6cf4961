/*
 * The page's data (see pagedata.h).  At each kept snapshot every policy's
 * items are reduced to cells (component, stack, bytes), sorted; each
 * component keeps the stacks that are among its largest at any kept
 * snapshot, and their bytes are looked up in every snapshot's cells, so a
 * kept stack has its exact bytes everywhere.  Only kept stacks are turned
 * into text: frames are interned once, and a stack is its list of frame
 * numbers.
 */
#include "pagedata.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "comptree.h"
#include "numfmt.h"
#include "json_write.h"
#include "stacktext.h"
#include "tally.h"
#include "util.h"

/* Ids of what has no stack (a mapping no hook saw, an unknown bucket):
 * a text of its own, kept in the pseudo tally. */
#define PSEUDO 0x80000000u

struct cell {
	uint32_t comp;  /* column */
	uint32_t id;    /* model stack id, or PSEUDO | pseudo entry */
	int64_t bytes;
};

struct cells {
	struct cell *v;
	size_t n, alloc;
};

/* A component's kept stacks, with their bytes at each kept snapshot. */
struct kept {
	uint32_t *ids;
	int64_t *bytes;      /* [stack * nat + j] */
	size_t n;
};

struct page {
	struct timeline *tl;
	const struct pagedata_options *opt;
	size_t *at;          /* kept snapshots: indices into tl->snaps */
	size_t nat;
	size_t peak;         /* the snapshot of the run's peak (top's) */
	size_t total_peak;   /* where the total of policy first is highest */
	struct run_teardown td;
	size_t b;            /* the snapshot before teardown, else the last */
	struct cells *cells; /* [policy * nat + j] */
	struct tally pseudo; /* texts of the PSEUDO ids */
	struct tally frames; /* frame texts; ref = index + 1; flags: FRAME_*,
				file: the library's path, if not the
				executable's */
	struct tally stacks; /* frame index lists (binary); ref = index + 1 */
	uint32_t *page_stack; /* by model stack id: page stack + 1 */
	size_t npage_stack;
	struct strbuf key;
	/* for the item callback */
	const struct policy *p;
	struct cells *fill;
	bool overflow;
};

static size_t snap_of_dump(const struct timeline *tl, size_t d);

/* ---- which snapshots keep stacks ---- */

static int64_t total_at(const struct timeline *tl, size_t p, size_t i,
		       bool *overflow)
{
	const struct policy *pol = tl->set.v[p];
	const int64_t *row = tl->rows[p] + i * pol->ncols;
	int64_t t = 0;

	for (size_t c = 0; c < pol->ncols; c++)
		if (policy_in_partition(pol, (int)c))
			t = add64(t, row[c], overflow);
	return t;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The snapshot of the run shape's peak, or SIZE_MAX (none: not known,
 * or no byte in use with a stack at any dump). */
static size_t peak_snapshot(const struct page *pg)
{
	const struct run_shape *sh = pg->opt->shape;

	if (!sh || !sh->peak.path || sh->peak.heap <= 0)
		return SIZE_MAX;
	for (size_t i = 0; i < pg->tl->n; i++)
		if (!strcmp(pg->tl->snaps[i].path, sh->peak.path))
			return i;
	return SIZE_MAX;
}

/*
 * The first, the last, the peak, where the total of the policy named
 * first is highest, and some evenly between: at most opt->snapshots
 * (and those), in order, each once.
 */
static void choose(struct page *pg)
{
	size_t n = pg->tl->n, max = pg->opt->snapshots < 3 ? 3
							 : pg->opt->snapshots;
	size_t peak = 0, k = 0;

	size_t p = pg->tl->set.first;

	for (size_t i = 1; i < n; i++)
		if (total_at(pg->tl, p, i, &pg->overflow) >
		    total_at(pg->tl, p, peak, &pg->overflow))
			peak = i;
	pg->total_peak = peak;
	/* (The total's, where the run's shape is not known.) */
	pg->peak = peak_snapshot(pg) != SIZE_MAX ? peak_snapshot(pg) : peak;
	pg->at = xcalloc(max + 3, sizeof(*pg->at));
	pg->at[k++] = 0;
	if (n > 1)
		pg->at[k++] = n - 1;
	if (pg->peak && pg->peak != n - 1)
		pg->at[k++] = pg->peak;
	if (peak && peak != n - 1 && peak != pg->peak)
		pg->at[k++] = peak;
	if (pg->b < n && pg->b && pg->b != n - 1 && pg->b != peak &&
	    pg->b != pg->peak)
		pg->at[k++] = pg->b;
	for (size_t s = 1; k < max && s + 1 < max && n > 2; s++)
		pg->at[k++] = (size_t)((double)s * (double)(n - 1) /
				       (double)(max - 1) + 0.5);
	qsort(pg->at, k, sizeof(*pg->at), cmp_size);
	pg->nat = 0;
	for (size_t i = 0; i < k; i++)
		if (!pg->nat || pg->at[pg->nat - 1] != pg->at[i])
			pg->at[pg->nat++] = pg->at[i];
}

/* ---- cells ---- */

static int add_item(void *ctx, const struct item *it)
{
	struct page *pg = ctx;
	const struct policy *p = pg->p;
	int comp = it->col;
	uint32_t id;
	struct cell *c;

	if (it->kind == ITEM_LINE_NO_BUCKET ||
	    it->kind == ITEM_REGION_NO_BUCKET)
		comp = p->col_no_bucket;
	if (comp < 0 || !policy_in_partition(p, comp) || !it->bytes)
		return 0;
	if (it->kind == ITEM_MALLOC || it->kind == ITEM_HOOKED) {
		id = it->bucket->stack->id;
	} else {
		struct tally_entry *e;

		sb_reset(&pg->key);
		item_text(&pg->key, &pg->tl->run.model, it, UINT64_MAX,
			  STACK_CALLERS);
		e = tally_get(&pg->pseudo, pg->key.buf, pg->key.len);
		if (!e->ref)
			e->ref = pg->pseudo.n;
		id = PSEUDO | (uint32_t)(e->ref - 1);
	}
	GROW(pg->fill->v, pg->fill->n + 1, pg->fill->alloc);
	c = &pg->fill->v[pg->fill->n++];
	c->comp = (uint32_t)comp;
	c->id = id;
	c->bytes = it->bytes;
	return 0;
}

static int cmp_cell(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	return CMP(x->comp, y->comp) ?: CMP(x->id, y->id);
}

/*
 * Sort CS by (component, id), as cmp_cell orders: by the bytes of the
 * key, least first, each pass stable (a snapshot's hundred thousand
 * cells, for each kept snapshot and policy: qsort took a tenth of html).
 */
static void sort_cells(struct cells *cs)
{
	struct cell *tmp, *from = cs->v, *to;
	uint32_t max_id = 0, max_comp = 0;

	for (size_t i = 0; i < cs->n; i++) {
		max_id |= cs->v[i].id;
		max_comp |= cs->v[i].comp;
	}
	to = tmp = xreallocarray(NULL, cs->n ? cs->n : 1, sizeof(*tmp));
	for (int pass = 0; pass < 8; pass++) {
		/* Bytes 0-3 of the id, then of the component. */
		uint32_t key_max = pass < 4 ? max_id : max_comp;
		int shift = 8 * (pass % 4);
		size_t count[256] = { 0 }, at = 0;

		if (!(key_max >> shift))
			continue; /* (all zeros: in order already) */
		for (size_t i = 0; i < cs->n; i++)
			count[((pass < 4 ? from[i].id : from[i].comp) >>
			       shift) & 0xff]++;
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < cs->n; i++)
			to[count[((pass < 4 ? from[i].id : from[i].comp) >>
				  shift) & 0xff]++] = from[i];
		to = from;
		from = from == cs->v ? tmp : cs->v;
	}
	if (from != cs->v)
		memcpy(cs->v, from, cs->n * sizeof(*cs->v));
	free(tmp);
}

/* Sort CS and add up the cells of one (component, stack). */
static void merge(struct page *pg, struct cells *cs)
{
	size_t k = 0;

	sort_cells(cs);
	for (size_t i = 0; i < cs->n; i++) {
		if (k && !cmp_cell(&cs->v[k - 1], &cs->v[i]))
			cs->v[k - 1].bytes = add64(cs->v[k - 1].bytes,
						   cs->v[i].bytes,
						   &pg->overflow);
		else
			cs->v[k++] = cs->v[i];
	}
	cs->n = k;
}

/* The index in TL's run of kept snapshot J of PG (ndumps: none). */
static size_t kept_dump(const struct page *pg, size_t j)
{
	const struct series *s = &pg->tl->run.series;
	size_t d = 0;

	if (j >= pg->nat)
		return SIZE_MAX;
	while (d < s->ndumps &&
	       s->dumps[d].counter != pg->tl->snaps[pg->at[j]].counter)
		d++;
	return d;
}

/* Read the kept snapshots and fill the cells of every policy. */
static int read_cells(struct page *pg)
{
	struct timeline *tl = pg->tl;
	/* (The timeline's: its buckets are classified already.) */
	struct classifier *cls = tl->cls;
	struct run_reader rr;
	int rc = 0;

	pg->cells = xcalloc(tl->set.n * pg->nat, sizeof(*pg->cells));
	run_reader_init(&rr, &tl->run);
	for (size_t j = 0; j < pg->nat && !rc; j++) {
		struct snapshot snap;
		size_t d = kept_dump(pg, j);

		/* (The next kept one is read while this one is summed.) */
		if (d == tl->run.series.ndumps ||
		    run_reader_load(&rr, d, kept_dump(pg, j + 1), &snap) < 0) {
			rc = -1;
			break;
		}
		run_symbolize_snapshot(&tl->run, &snap);
		for (size_t p = 0; p < tl->set.n && !rc; p++) {
			pg->p = tl->set.v[p];
			pg->fill = &pg->cells[p * pg->nat + j];
			rc = aggregate_items(&cls[p], &snap, NULL, true,
					     add_item, pg);
			merge(pg, pg->fill);
		}
		if (!rc && (pg->overflow || snap.overflow))
			rc = -sizes_overflow(&snap);
		snapshot_release(&snap);
	}
	run_reader_end(&rr);
	return rc;
}

/* The range of component COMP in CS. */
static size_t range(const struct cells *cs, uint32_t comp, size_t *end)
{
	size_t lo = 0, hi = cs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cs->v[mid].comp < comp)
			lo = mid + 1;
		else
			hi = mid;
	}
	*end = lo;
	while (*end < cs->n && cs->v[*end].comp == comp)
		(*end)++;
	return lo;
}

static int64_t bytes_of(const struct cells *cs, uint32_t comp, uint32_t id)
{
	struct cell key = { comp, id, 0 };
	const struct cell *c = cs->n ? bsearch(&key, cs->v, cs->n,
					       sizeof(*cs->v), cmp_cell)
				     : NULL;

	return c ? c->bytes : 0;
}

static int cmp_bytes_desc(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	return CMP(y->bytes, x->bytes) ?: CMP(x->id, y->id);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The best WANT cells of V[0, M) by cmp_bytes_desc, in order, into TOP;
 * how many.  (A component has tens of thousands of stacks and keeps a
 * few dozen: no sort of them all.)
 */
static size_t best_cells(const struct cell *v, size_t m, size_t want,
			 struct cell *top)
{
	size_t n = 0;

	for (size_t i = 0; i < m; i++) {
		size_t j;

		if (n == want && cmp_bytes_desc(&v[i], &top[n - 1]) >= 0)
			continue;
		/* (In at its place; the last falls out when full.) */
		j = n < want ? n++ : n - 1;
		for (; j > 0 && cmp_bytes_desc(&v[i], &top[j - 1]) < 0; j--)
			top[j] = top[j - 1];
		top[j] = v[i];
	}
	return n;
}

/* The stacks COMP keeps: the largest at any kept snapshot. */
static void keep(struct page *pg, size_t p, uint32_t comp, struct kept *k)
{
	size_t want = pg->opt->stacks, n = 0, alloc = 0;
	uint32_t *ids = NULL;
	struct cell *top = xcalloc(want ? want : 1, sizeof(*top));

	for (size_t j = 0; j < pg->nat; j++) {
		const struct cells *cs = &pg->cells[p * pg->nat + j];
		size_t end, lo = range(cs, comp, &end);
		size_t m = want ? best_cells(cs->v + lo, end - lo, want, top)
				: 0;

		for (size_t i = 0; i < m; i++) {
			GROW(ids, n + 1, alloc);
			ids[n++] = top[i].id;
		}
	}
	free(top);
	if (n)
		qsort(ids, n, sizeof(*ids), cmp_u32);
	k->n = 0;
	for (size_t i = 0; i < n; i++)
		if (!k->n || ids[k->n - 1] != ids[i])
			ids[k->n++] = ids[i];
	k->ids = ids;
	k->bytes = xcalloc(k->n * pg->nat + 1, sizeof(*k->bytes));
	for (size_t s = 0; s < k->n; s++)
		for (size_t j = 0; j < pg->nat; j++)
			k->bytes[s * pg->nat + j] =
				bytes_of(&pg->cells[p * pg->nat + j], comp,
					 ids[s]);
}

/* ---- stacks as frame lists ---- */

struct frame_list {
	struct page *pg;
	uint32_t *v;
	size_t n, alloc;
};

static uint32_t intern(struct tally *t, const char *s, size_t len)
{
	struct tally_entry *e = tally_get(t, s, len);

	if (!e->ref)
		e->ref = t->n;
	return (uint32_t)(e->ref - 1);
}

/* (page.frames' flags) */
enum {
	PAGE_FRAME_OWN = 1,     /* the program's own code */
	PAGE_FRAME_RUNTIME = 2, /* std:: and the like, or the allocator */
};

static void add_frame(void *ctx, const char *text, size_t len,
		      const struct frame *f, uint32_t k)
{
	struct frame_list *l = ctx;
	const struct model *m = &l->pg->tl->run.model;
	struct tally_entry *e = tally_get(&l->pg->frames, text, len);

	if (!e->ref) {
		e->ref = l->pg->frames.n;
		if (f && owner_frame_is_own(l->pg->opt->owners, m, f, k))
			e->flags |= PAGE_FRAME_OWN;
		if (f && owner_runtime_name(k < f->ninline ? f->inl[k].func
							   : f->func))
			e->flags |= PAGE_FRAME_RUNTIME;
		if (f && f->bin && f->bin != m->main_bin)
			e->file = m->bins[f->bin];
	}
	GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = (uint32_t)(e->ref - 1);
}

/* The page stack of ID: its frame list, interned. */
static uint32_t page_stack(struct page *pg, uint32_t id)
{
	const struct model *m = &pg->tl->run.model;
	struct frame_list l = { pg, NULL, 0, 0 };
	uint32_t s;

	if (!(id & PSEUDO) && id < pg->npage_stack && pg->page_stack[id])
		return pg->page_stack[id] - 1;
	if (id & PSEUDO) {
		const struct tally_entry *e = pg->pseudo.v[id & ~PSEUDO];

		add_frame(&l, e->key, e->len, NULL, 0);
	} else if (m->stacks.v[id]->depth) {
		stack_frames(m, m->stacks.v[id], add_frame, &l);
	} else {
		add_frame(&l, "<no stack>", 10, NULL, 0);
	}
	s = intern(&pg->stacks, (const char *)l.v, l.n * sizeof(*l.v));
	free(l.v);
	if (!(id & PSEUDO)) {
		if (id >= pg->npage_stack) {
			size_t n = m->stacks.n > id ? m->stacks.n : id + 1;

			pg->page_stack = xrecallocarray(pg->page_stack,
							pg->npage_stack, n,
							sizeof(*pg->page_stack));
			pg->npage_stack = n;
		}
		pg->page_stack[id] = s + 1;
	}
	return s;
}

/* ---- JSON ---- */

static void json_i64s(struct json_writer *w, const int64_t *v, size_t n,
		      size_t stride)
{
	json_array(w);
	for (size_t i = 0; i < n; i++)
		json_int(w, v[i * stride]);
	json_end(w);
}

/* One component: values, kept stacks (page stack, bytes at each j). */
static void json_component(struct page *pg, struct json_writer *w, size_t p,
			   uint32_t c)
{
	const struct timeline *tl = pg->tl;
	const struct policy *pol = tl->set.v[p];
	enum column_kind kind = column_kind(&pol->cols[c]);
	struct kept k;
	/* Kept stacks that turn out to be the same text add up. */
	struct tally merged;

	json_object(w);
	json_member_string(w, "name", pol->cols[c].name);
	json_key(w, "values");
	json_i64s(w, tl->rows[p] + c, tl->n, pol->ncols);
	if (kind != COLUMN_RULE && pol->cols[c].builtin != B_NO_BUCKET) {
		json_member_string(w, "computed", column_doc(&pol->cols[c]));
		json_key(w, "stacks");
		json_array(w);
		json_end(w);
		json_end(w);
		return;
	}
	keep(pg, p, c, &k);
	tally_init(&merged);
	for (size_t s = 0; s < k.n; s++) {
		uint32_t ps = page_stack(pg, k.ids[s]);
		struct tally_entry *e = tally_get(&merged, (const char *)&ps,
						  sizeof(ps));

		if (!e->ref) {
			e->ref = s + 1;
			e->flags = ps;
			continue;
		}
		for (size_t j = 0; j < pg->nat; j++) {
			int64_t *to = &k.bytes[(e->ref - 1) * pg->nat + j];

			*to = add64(*to, k.bytes[s * pg->nat + j],
				    &pg->overflow);
		}
	}
	json_key(w, "stacks");
	json_array(w);
	for (size_t i = 0; i < merged.n; i++) {
		const struct tally_entry *e = merged.v[i];

		json_array(w);
		json_uint(w, e->flags);
		json_i64s(w, k.bytes + (e->ref - 1) * pg->nat, pg->nat, 1);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	tally_free(&merged);
	free(k.ids);
	free(k.bytes);
}

/* ---- the tree of the components ---- */

/* A node's index in T->all, where its bytes at each snapshot are kept. */
static size_t tree_index(const struct comptree *t,
			 const struct comptree_node *n)
{
	size_t k = 0;

	while (k < t->nall && t->all[k] != n)
		k++;
	if (k == t->nall)
		BUG("a node of the components' tree is not among its nodes");
	return k;
}

/* Siblings in policy order: by the first column under each. */
static int cmp_first(const void *a, const void *b)
{
	const struct comptree_node *x = *(const struct comptree_node *const *)a;
	const struct comptree_node *y = *(const struct comptree_node *const *)b;

	return (x->first > y->first) - (x->first < y->first);
}

/*
 * The bytes of the nodes of T at every snapshot: node k's at snapshot i
 * in V[k * NSNAPS + i]; HELD[k]: a component under node k holds a byte
 * at some snapshot (the tree at each snapshot shows it, as
 * comptree_empty says).
 */
struct tree_values {
	const struct comptree *t;
	int64_t *v;
	bool *held;
	size_t nsnaps;
};

static bool tree_held(struct tree_values *tv, const struct comptree_node *n)
{
	size_t k = tree_index(tv->t, n);
	bool held = false;

	for (size_t i = 0; i < n->nchildren; i++)
		held |= tree_held(tv, n->children[i]);
	for (size_t s = 0; s < tv->nsnaps && !n->nchildren && !held; s++)
		held = tv->v[k * tv->nsnaps + s] != 0;
	return tv->held[k] = held;
}

/* N's children that hold a byte at some snapshot, each with its bytes at
 * every snapshot and its own children. */
static void json_tree_children(struct json_writer *w,
			       const struct tree_values *tv,
			       const struct comptree_node *n)
{
	const struct comptree_node **kids;

	kids = xcalloc(n->nchildren + 1, sizeof(*kids));
	memcpy(kids, n->children, n->nchildren * sizeof(*kids));
	qsort(kids, n->nchildren, sizeof(*kids), cmp_first);
	json_array(w);
	for (size_t i = 0; i < n->nchildren; i++) {
		const struct comptree_node *c = kids[i];
		size_t k = tree_index(tv->t, c);

		if (!tv->held[k])
			continue;
		json_object(w);
		json_member_string(w, "name", c->name);
		json_member_string(w, "path", c->path);
		json_key(w, "values");
		json_i64s(w, tv->v + k * tv->nsnaps, tv->nsnaps, 1);
		if (c->unclassified)
			json_member_bool(w, "unclassified", true);
		if (c->self)
			json_member_bool(w, "self", true);
		if (c->nchildren) {
			json_key(w, "children");
			json_tree_children(w, tv, c);
		}
		json_end(w);
	}
	json_end(w);
	free(kids);
}

/*
 * Policy P's components as the tree top --tree shows (comptree.h), each
 * node with its bytes at every snapshot (comptree_fill at each), so that
 * the page shows it at whichever snapshot it shows.  Children in policy
 * order: the page sorts them by their bytes there, largest first, ties
 * in that order, as comptree_fill does.  Nodes with no byte at any
 * snapshot are left out, as the components are.  A policy whose names
 * make one node of two components has no tree (the page says so): its
 * chart and the rest are still worth a page.
 */
static void json_tree(struct page *pg, struct json_writer *w, size_t p)
{
	const struct timeline *tl = pg->tl;
	const struct policy *pol = tl->set.v[p];
	struct comptree t;
	struct tree_values tv;

	if (comptree_build(&t, pol, NULL) < 0) {
		warning("%s: the page shows no tree of policy '%s'",
			pg->opt->title, pol->label);
		return;
	}
	tv.t = &t;
	tv.nsnaps = tl->n;
	tv.v = xcalloc(t.nall * tl->n + 1, sizeof(*tv.v));
	tv.held = xcalloc(t.nall + 1, sizeof(*tv.held));
	for (size_t i = 0; i < tl->n; i++) {
		if (comptree_fill(&t, tl->rows[p] + i * pol->ncols) < 0)
			pg->overflow = true;
		for (size_t k = 0; k < t.nall; k++)
			tv.v[k * tl->n + i] = t.all[k]->bytes;
	}
	tree_held(&tv, t.root);
	json_key(w, "tree");
	json_tree_children(w, &tv, t.root);
	free(tv.v);
	free(tv.held);
	comptree_free(&t);
}

static void json_policy(struct page *pg, struct json_writer *w, size_t p)
{
	const struct timeline *tl = pg->tl;
	const struct policy *pol = tl->set.v[p];
	int64_t *v = xcalloc(tl->n + 1, sizeof(*v));
	bool rss = false;

	json_object(w);
	json_member_string(w, "label", pol->label);
	json_key(w, "components");
	json_array(w);
	for (size_t c = 0; c < pol->ncols; c++) {
		bool any = false;

		if (!policy_in_partition(pol, (int)c))
			continue;
		for (size_t i = 0; i < tl->n && !any; i++)
			any = tl->rows[p][i * pol->ncols + c] != 0;
		if (any)
			json_component(pg, w, p, (uint32_t)c);
	}
	json_end(w);
	json_tree(pg, w, p);
	for (size_t i = 0; i < tl->n; i++)
		v[i] = total_at(tl, p, i, &pg->overflow);
	json_key(w, "total");
	json_i64s(w, v, tl->n, 1);
	for (size_t i = 0; i < tl->n; i++) {
		v[i] = tl->builtins[p][i].v[B_RSS];
		rss = rss || v[i];
	}
	if (rss) {
		json_key(w, "rss");
		json_i64s(w, v, tl->n, 1);
	}
	json_end(w);
	free(v);
}

/* ---- the answer ---- */

/* The timeline's index of dump D of the run (SIZE_MAX: not read). */
static size_t snap_of_dump(const struct timeline *tl, size_t d)
{
	for (size_t i = 0; i < tl->n; i++)
		if (tl->snaps[i].counter == tl->run.series.dumps[d].counter)
			return i;
	return SIZE_MAX;
}

/* Functions by v[0] (their bytes, or growth), largest first. */
static int cmp_v0(const void *a, const void *b)
{
	const struct tally_entry *x = *(const struct tally_entry *const *)a;
	const struct tally_entry *y = *(const struct tally_entry *const *)b;

	if (x->v[0] != y->v[0])
		return x->v[0] > y->v[0] ? -1 : 1;
	return tally_key_cmp(x, y);
}

/*
 * Owner entry E of a stack ID with BYTES in component COMP: keeps, in
 * v[4] and v[5], the component and (model) stack of its largest (v[3])
 * stack, for the page to link to.
 */
static void note_stack(struct tally_entry *e, uint32_t comp, uint32_t id,
		       int64_t bytes)
{
	int64_t size = bytes < 0 ? -bytes : bytes;

	if (size <= e->v[3] && e->v[5])
		return;
	e->v[3] = size;
	e->v[4] = comp;
	e->v[5] = (int64_t)id + 1;
}

#define ANSWER_ROWS 5

static void json_owners(struct page *pg, struct json_writer *w,
			const char *key, struct tally *t,
			const struct policy *pol, bool growth)
{
	/* (The owners at the peak as top ranks them, growth as diff.) */
	tally_sort(t, growth ? cmp_v0 : stacktext_cmp_flat);
	json_key(w, key);
	json_array(w);
	for (size_t i = 0; i < t->n && i < ANSWER_ROWS; i++) {
		const struct tally_entry *e = t->v[i];

		if (e->v[0] <= 0)
			break;
		json_object(w);
		json_member_string(w, "name", e->key);
		if (e->file) {
			json_member_string(w, "file", e->file);
			if (e->line)
				json_member_uint(w, "line", e->line);
		}
		json_member_int(w, "bytes", e->v[0]);
		json_member_string(w, "component", pol->cols[e->v[4]].name);
		json_member_uint(w, "stack",
				 page_stack(pg, (uint32_t)(e->v[5] - 1)));
		if (growth)
			json_member_bool(w, "suspect", e->flags & 2);
		json_end(w);
	}
	json_end(w);
}

/*
 * Does stack ST, with BYTES at the peak or grown, hold the program's own
 * bytes (stacktext_programs_bytes)?  Where some stack does, the answer
 * leaves out those that do not (they stay in the components' stacks):
 * the runtime's state and unresolved frames are not what a reader of
 * the answer can act on.
 */
static bool programs(struct tally *t, const struct model *m,
		     const struct stack *st, int64_t bytes)
{
	return st && bytes > 0 && stacktext_programs_bytes(t, m, st);
}

/* The owners of the bytes at the peak, from its cells, as top ranks
 * them. */
static void peak_owners(struct page *pg, struct json_writer *w, size_t p)
{
	const struct model *m = &pg->tl->run.model;
	const struct policy *pol = pg->tl->set.v[p];
	size_t j = 0;
	const struct cells *cs;
	const struct stack **st;
	struct tally t;
	bool *mine, any = false;

	while (j < pg->nat && pg->at[j] != pg->peak)
		j++;
	cs = &pg->cells[p * pg->nat + (j < pg->nat ? j : 0)];
	tally_init(&t);
	t.owners = pg->opt->owners;
	t.passed = pg->opt->passed;
	st = xcalloc(cs->n + 1, sizeof(*st));
	mine = xcalloc(cs->n + 1, sizeof(*mine));
	for (size_t i = 0; i < cs->n; i++) {
		if (!(cs->v[i].id & PSEUDO))
			st[i] = m->stacks.v[cs->v[i].id];
		mine[i] = programs(&t, m, st[i], cs->v[i].bytes);
		any |= mine[i];
	}
	for (size_t i = 0; i < cs->n; i++) {
		struct tally_entry *e;

		if (!st[i] || (any && !mine[i]))
			continue;
		e = stacktext_tally_functions(&t, m, st[i], &cs->v[i].bytes, 1,
					      true);
		if (e)
			note_stack(e, cs->v[i].comp, cs->v[i].id,
				   cs->v[i].bytes);
	}
	json_member_uint(w, "peak", pg->peak);
	json_owners(pg, w, "owners", &t, pol, false);
	free(st);
	free(mine);
	tally_free(&t);
}

/*
 * What grew from the first dump to the last before teardown, by owner,
 * as diff FIRST has it (stacks that never shrank and grew at more than
 * half the steps: suspects), and what teardown then freed.
 */
static void growth(struct page *pg, struct json_writer *w, size_t p)
{
	struct timeline *tl = pg->tl;
	const struct policy *pol = tl->set.v[p];
	const struct run_teardown td = pg->td;
	const struct changes *c = pg->opt->grew;
	struct tally t;
	size_t sb = pg->b, sl = snap_of_dump(tl, td.last);
	bool *mine, any = false;

	if (!c || sb == SIZE_MAX)
		return;
	tally_init(&t);
	t.owners = pg->opt->owners;
	mine = xcalloc(c->n + 1, sizeof(*mine));
	for (size_t i = 0; i < c->n; i++) {
		const struct change *ch = &c->v[i];

		mine[i] = ch->col >= 0 &&
			  programs(&t, ch->m, ch->st,
				   sub64(ch->b, ch->a, &pg->overflow));
		any |= mine[i];
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct change *ch = &c->v[i];
		int64_t add = sub64(ch->b, ch->a, &pg->overflow);
		struct tally_entry *e;

		if (ch->col < 0 || (any && !mine[i]))
			continue;
		e = stacktext_tally_functions(&t, ch->m, ch->st, &add, 1,
					      false);
		if (!e)
			continue;
		if (ch->suspect && add > 0)
			e->flags |= 2;
		if (add > 0)
			note_stack(e, (uint32_t)ch->col, ch->st->id, add);
	}
	json_member_uint(w, "b", sb);
	json_owners(pg, w, "grew", &t, pol, true);
	if (td.said || td.at_exit) {
		json_key(w, "teardown");
		json_object(w);
		json_member_bool(w, "said", td.said);
		if (sl != SIZE_MAX && sl != sb)
			json_member_uint(w, "last", sl);
		json_end(w);
	}
	free(mine);
	tally_free(&t);
}

static void json_answer(struct page *pg, struct json_writer *w)
{
	size_t p = pg->tl->set.first;
	const struct run_shape *sh = pg->opt->shape;
	struct strbuf line = STRBUF_INIT;

	json_object(w);
	json_member_uint(w, "policy", p);
	/* top's and diff's first line, where they print it. */
	if (sh && (pg->td.said || pg->td.at_exit)) {
		run_shape_text(&line, sh, false);
		json_member_string(w, "run", line.buf);
	}
	peak_owners(pg, w, p);
	if (sh && peak_snapshot(pg) == pg->peak)
		json_member_int(w, "in_use", sh->peak.heap);
	if (pg->total_peak != pg->peak)
		json_member_uint(w, "total_peak", pg->total_peak);
	growth(pg, w, p);
	json_end(w);
	sb_release(&line);
}

/* What the page needs of each frame to fold runs of library frames. */
static void json_frame_info(struct page *pg, struct json_writer *w)
{
	struct strbuf lib = STRBUF_INIT;

	json_key(w, "frame_info");
	json_array(w);
	for (size_t f = 0; f < pg->frames.n; f++) {
		const struct tally_entry *e = pg->frames.v[f];

		sb_reset(&lib);
		if (e->file)
			library_name(&lib, e->file);
		json_array(w);
		json_int(w, !!(e->flags & PAGE_FRAME_OWN));
		json_int(w, !!(e->flags & PAGE_FRAME_RUNTIME));
		json_string(w, lib.buf ? lib.buf : "");
		json_end(w);
	}
	json_end(w);
	sb_release(&lib);
}

static void json_all(struct page *pg, struct strbuf *out)
{
	const struct timeline *tl = pg->tl;
	struct strbuf body = STRBUF_INIT, answer = STRBUF_INIT;
	struct json_writer w;

	/* (The policies and the answer first: they intern the frames and
	 * stacks.) */
	json_write_init(&w, &body, NULL, true);
	json_array(&w);
	for (size_t p = 0; p < tl->set.n; p++)
		json_policy(pg, &w, p);
	json_end(&w);
	json_write_finish(&w);
	json_write_init(&w, &answer, NULL, true);
	json_answer(pg, &w);
	json_write_finish(&w);

	json_write_init(&w, out, NULL, true);
	json_object(&w);
	json_member_string(&w, "title", pg->opt->title);
	json_member_uint(&w, "open", tl->set.first);
	json_key(&w, "answer");
	json_raw(&w, answer.buf, answer.len);
	json_key(&w, "snapshots");
	json_array(&w);
	for (size_t i = 0; i < tl->n; i++) {
		json_object(&w);
		json_member_string(&w, "dump", tl->snaps[i].path);
		json_member_uint(&w, "counter", tl->snaps[i].counter);
		json_member_double(&w, "time",
				   tl->snaps[i].time - tl->snaps[0].time);
		json_end(&w);
	}
	json_end(&w);
	json_key(&w, "at");
	json_array(&w);
	for (size_t j = 0; j < pg->nat; j++)
		json_uint(&w, pg->at[j]);
	json_end(&w);
	json_member_uint(&w, "kept", pg->opt->stacks);
	json_key(&w, "frames");
	json_array(&w);
	for (size_t f = 0; f < pg->frames.n; f++)
		json_string(&w, pg->frames.v[f]->key);
	json_end(&w);
	json_key(&w, "stacks");
	json_array(&w);
	for (size_t s = 0; s < pg->stacks.n; s++) {
		const struct tally_entry *e = pg->stacks.v[s];
		size_t n = e->len / sizeof(uint32_t);

		json_array(&w);
		for (size_t i = 0; i < n; i++) {
			uint32_t f;

			memcpy(&f, e->key + i * sizeof(f), sizeof(f));
			json_uint(&w, f);
		}
		json_end(&w);
	}
	json_end(&w);
	json_frame_info(pg, &w);
	json_key(&w, "policies");
	json_raw(&w, body.buf, body.len);
	json_end(&w);
	json_write_finish(&w);
	sb_release(&body);
	sb_release(&answer);
}

int pagedata_write(struct strbuf *out, struct timeline *tl,
	      const struct pagedata_options *opt)
{
	struct page pg;
	int rc;

	memset(&pg, 0, sizeof(pg));
	pg.tl = tl;
	pg.opt = opt;
	if (!tl->n)
		return error("no snapshot could be read");
	tally_init(&pg.pseudo);
	tally_init(&pg.frames);
	tally_init(&pg.stacks);
	/* (What grew is up to the last dump before teardown.) */
	if (opt->td)
		pg.td = *opt->td;
	else
		series_teardown(&tl->run.series, tl->run.format, &pg.td);
	pg.b = snap_of_dump(tl, pg.td.before != SIZE_MAX && pg.td.before > 0
					? pg.td.before
					: pg.td.last);
	choose(&pg);
	rc = read_cells(&pg);
	if (!rc)
		json_all(&pg, out);
	if (!rc && (pg.overflow || pg.frames.overflow))
		rc = error("%s: sizes add up to more than 64 bits hold",
			   opt->title);
	for (size_t i = 0; pg.cells && i < tl->set.n * pg.nat; i++)
		free(pg.cells[i].v);
	free(pg.cells);
	free(pg.at);
	free(pg.page_stack);
	sb_release(&pg.key);
	tally_free(&pg.pseudo);
	tally_free(&pg.frames);
	tally_free(&pg.stacks);
	return rc ? -1 : 0;
}
