/*
 * The partition's components as a tree of their names' segments, with
 * subtotals: what top --tree prints, the way about:memory shows memory.
 */
#include "comptree.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

bool comptree_unclassified(const struct policy *p, int c)
{
	/* (As policy check's catch-all: where the bytes go that the rules
	 * before it did not claim.) */
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].column == (uint32_t)c &&
		    rule_is_catch_all(&p->rules[i]))
			return true;
	return false;
}

static struct comptree_node *new_node(struct comptree *t,
				      struct comptree_node *parent, char *path,
				      size_t name_off, int first)
{
	struct comptree_node *n = xcalloc(1, sizeof(*n));

	n->path = path;
	n->name = path + name_off;
	n->col = -1;
	n->first = first;
	n->parent = parent;
	if (parent) {
		n->depth = parent->depth + 1;
		GROW(parent->children, parent->nchildren + 1,
		     parent->children_alloc);
		parent->children[parent->nchildren++] = n;
	}
	GROW(t->all, t->nall + 1, t->all_alloc);
	t->all[t->nall++] = n;
	return n;
}

/*
 * The end of the segment of NAME that starts at S: at the next SEP that
 * has a segment on both sides, or the end.  The last segment a tree may
 * have holds the rest.
 */
static size_t segment_end(const char *name, size_t s, char sep, unsigned depth)
{
	size_t i = s;

	if (depth + 1 >= COMPTREE_MAX_DEPTH)
		return strlen(name);
	for (; name[i]; i++)
		if (name[i] == sep && i > s && name[i + 1] &&
		    name[i + 1] != sep)
			break;
	return i;
}

static struct comptree_node *child_named(const struct comptree_node *n,
					 const char *seg, size_t len)
{
	for (size_t i = 0; i < n->nchildren; i++) {
		struct comptree_node *c = n->children[i];

		if (!c->self && strlen(c->name) == len &&
		    !memcmp(c->name, seg, len))
			return c;
	}
	return NULL;
}

/* Column C's node: made, with the nodes above it, where none is yet. */
static int add_column(struct comptree *t, const struct policy *p, int c)
{
	const char *name = p->cols[c].name;
	char sep = strchr(name, '/') ? '/' : '-';
	struct comptree_node *n = t->root, *k;
	size_t s = 0, e;

	for (;;) {
		e = segment_end(name, s, sep, n->depth);
		k = child_named(n, name + s, e - s);
		if (!k)
			k = new_node(t, n, xstrndup(name, e), s, c);
		n = k;
		if (!name[e])
			break;
		s = e + 1;
	}
	if (n->col >= 0)
		return error("%s:%lu:%lu: components '%s' and '%s' make one "
			     "node of the tree: rename one",
			     p->path ? p->path : p->label, p->cols[c].line,
			     p->cols[c].col, p->cols[n->col].name, name);
	n->col = c;
	n->unclassified = comptree_unclassified(p, c);
	return 0;
}

/* A component that others' names extend: its bytes become a child. */
static void split_self(struct comptree *t, struct comptree_node *n)
{
	struct comptree_node *self;

	self = new_node(t, n, xstrdup(n->path), 0, n->col);
	self->name = "<self>";
	self->self = true;
	self->col = n->col;
	self->unclassified = n->unclassified;
	n->col = -1;
	n->unclassified = false;
	n->leaf_and_parent = true;
}

/*
 * A node that is no component and has one child is that child: one row
 * "thread-stacks", not "thread" above "stacks".  Its name grows to the
 * child's end (the segments are the same, so the offsets are too).
 */
static void merge_chains(struct comptree_node *n)
{
	for (size_t i = 0; i < n->nchildren; i++) {
		struct comptree_node *c = n->children[i], *g;

		while (c->col < 0 && c->nchildren == 1) {
			size_t off = (size_t)(c->name - c->path);

			g = c->children[0];
			free((char *)c->path);
			c->path = g->path;
			c->name = c->path + off;
			g->path = NULL; /* (g stays in T->all, a husk) */
			c->col = g->col;
			c->unclassified = g->unclassified;
			c->leaf_and_parent = g->leaf_and_parent;
			free(c->children);
			c->children = g->children;
			c->nchildren = g->nchildren;
			c->children_alloc = g->children_alloc;
			g->children = NULL;
			g->nchildren = 0;
			for (size_t k = 0; k < c->nchildren; k++)
				c->children[k]->parent = c;
		}
		c->depth = n->depth + 1;
		merge_chains(c);
	}
}

int comptree_build(struct comptree *t, const struct policy *p,
		   const int64_t *values)
{
	size_t n;

	memset(t, 0, sizeof(*t));
	t->root = new_node(t, NULL, xstrdup(""), 0, -1);
	for (size_t c = 0; c < p->ncols; c++)
		if (policy_in_partition(p, (int)c) &&
		    add_column(t, p, (int)c) < 0) {
			comptree_free(t);
			return -1;
		}
	n = t->nall;
	for (size_t i = 0; i < n; i++)
		if (t->all[i]->col >= 0 && t->all[i]->nchildren)
			split_self(t, t->all[i]);
	merge_chains(t->root);
	if (comptree_fill(t, values) < 0) {
		comptree_free(t);
		return error("the components' sums do not fit in 64 bits");
	}
	return 0;
}

static int cmp_child(const void *a, const void *b)
{
	const struct comptree_node *x = *(const struct comptree_node *const *)a;
	const struct comptree_node *y = *(const struct comptree_node *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

static void fill(struct comptree_node *n, const int64_t *values, bool *overflow)
{
	if (!n->nchildren) {
		n->bytes = values && n->col >= 0 ? values[n->col] : 0;
		return;
	}
	n->bytes = 0;
	for (size_t i = 0; i < n->nchildren; i++) {
		fill(n->children[i], values, overflow);
		n->bytes = add64(n->bytes, n->children[i]->bytes, overflow);
	}
	qsort(n->children, n->nchildren, sizeof(*n->children), cmp_child);
}

int comptree_fill(struct comptree *t, const int64_t *values)
{
	bool overflow = false;

	fill(t->root, values, &overflow);
	return overflow ? -1 : 0;
}

void comptree_free(struct comptree *t)
{
	for (size_t i = 0; i < t->nall; i++) {
		free((char *)t->all[i]->path);
		free(t->all[i]->children);
		free(t->all[i]);
	}
	free(t->all);
	memset(t, 0, sizeof(*t));
}

const struct comptree_node *comptree_find(const struct comptree *t,
					  const char *path)
{
	for (size_t i = 0; i < t->nall; i++) {
		const struct comptree_node *n = t->all[i];

		if (n->path && !n->self && !strcmp(n->path, path))
			return n;
	}
	return NULL;
}

bool comptree_empty(const struct comptree_node *n)
{
	if (n->bytes)
		return false;
	for (size_t i = 0; i < n->nchildren; i++)
		if (!comptree_empty(n->children[i]))
			return false;
	return true;
}
