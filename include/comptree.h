/*
 * The components of a policy's partition as a tree, as Firefox's
 * about:memory shows memory: names split into segments ("malloc-cxx-string"
 * is malloc, cxx, string), a subtotal at every level, and each subtree's
 * catch-all marked as its unclassified part.
 */
#ifndef DMPROF_COMPTREE_H
#define DMPROF_COMPTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/*
 * Segments past this many stay together in the last one (a JSON writer
 * nests two levels a node, and has 32).
 */
#define COMPTREE_MAX_DEPTH 12

struct comptree_node {
	/*
	 * The node's segment: "cxx", or several where a node without a
	 * component of its own had one child ("thread-stacks" for
	 * mmap-thread-stacks, when no other mmap-thread-* exists); "" for the
	 * root, "<self>" for a component's own bytes (SELF).
	 */
	const char *name;
	/*
	 * The name down to here, as the policy spells it: "malloc-cxx"; a
	 * component's full name at its node (and at its <self>); "" for the
	 * root.
	 */
	const char *path;
	int col;              /* the policy's column, or -1 (inner nodes) */
	int64_t bytes;        /* col's value, or the sum of the children */
	/*
	 * A catch-all's column: a rule assigns it with no condition, so it
	 * holds what the rules of that kind did not classify (about:memory's
	 * heap-unclassified).
	 */
	bool unclassified;
	/*
	 * A component whose name is also a prefix of others' (malloc and
	 * malloc-app): its own bytes are the child "<self>", the one with
	 * SELF set, so that every inner node is the sum of its children and
	 * only leaves are columns.
	 */
	bool leaf_and_parent;
	bool self;
	unsigned depth;       /* the root's is 0 */
	int first;            /* the first column under it, in policy order */
	struct comptree_node *parent;
	/* Largest first, ties in policy order (after comptree_fill). */
	struct comptree_node **children;
	size_t nchildren, children_alloc;
};

struct comptree {
	struct comptree_node *root;  /* bytes: the partition's total */
	struct comptree_node **all;  /* every node, for comptree_free */
	size_t nall, all_alloc;
};

/*
 * Build the tree of P's partition (the columns policy_in_partition
 * names): a name with a '/' splits at '/' (its '-' stay in the
 * segments), any other at '-'; a separator at either end or doubled
 * splits nothing.  VALUES, one per column of P (as aggregate_snapshot
 * fills them), or NULL for zeros, go through comptree_fill.  Returns -1
 * after an error when two names make one node ("a-b" and "a/b") or the
 * sums overflow; T then holds nothing to free.  Nodes and their strings
 * belong to T.
 */
int comptree_build(struct comptree *t, const struct policy *p,
		   const int64_t *values);
/*
 * Set the bytes from another row of VALUES (another snapshot under the
 * same policy) and sort the children again.  Returns -1 if a sum
 * overflows (the bytes are then saturated: say so, print nothing).
 */
int comptree_fill(struct comptree *t, const int64_t *values);
void comptree_free(struct comptree *t);

/* The node whose path is PATH ("" is the root; a <self> is not found:
 * its parent is), or NULL. */
const struct comptree_node *comptree_find(const struct comptree *t,
					  const char *path);
/* No component under N holds a byte (N and all below it are 0). */
bool comptree_empty(const struct comptree_node *n);
/* Does a rule assign P's column C with no condition at all? */
bool comptree_unclassified(const struct policy *p, int c);

#endif
