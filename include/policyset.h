/*
 * Finding policies: `-p l0,t0` names policies listed in an index file
 * (policies/index) on a search path; `-p my.policy` is a path.  Without
 * -p, the index's default policies are used.
 */
#ifndef DMPROF_POLICYSET_H
#define DMPROF_POLICYSET_H

#include <stddef.h>

#include "policy.h"

struct policy_set {
	struct policy **v;   /* sorted by label, as the original's csv */
	size_t n;
	size_t first;        /* the one named first (the default: 0) */
};

/*
 * Load the policies SPEC names (comma-separated labels or paths, in that
 * order; NULL for the defaults).  Returns 0, or -1 after printing every
 * problem.
 */
int policy_set_load(struct policy_set *set, const char *spec);
void policy_set_free(struct policy_set *set);
/* Does SPEC name one policy: a label of the index, or a policy file? */
bool policy_known(const char *spec);
/* Does some policy of SET look at F (source=: symbolize with lines)? */
bool policy_set_uses(const struct policy_set *set, enum cond_field f);
/* Does some rule look at a stack's names, files or type (a pattern that
 * is not a catch-all's)?  Else a bucket's column needs no symbols. */
bool policy_set_needs_names(const struct policy_set *set);
/* Load exactly one policy (commands that show one); SPEC NULL: the
 * index's default, which must be one. */
struct policy *policy_set_load_one(const char *spec);

/* The policy directories, in search order (for `dmprof policy list`). */
struct index_entry {
	char *label;
	char *path;    /* the policy file, resolved */
	char *index;   /* the index file that lists it */
	unsigned long line;
	int is_default;
};

/*
 * Every index entry on the search path, first occurrence of a label
 * winning.  Returns 0 or -1 (a broken index file).
 */
int policy_index(struct index_entry **out, size_t *n);
void policy_index_free(struct index_entry *v, size_t n);
/* The search path, ':'-joined, for messages. */
const char *policy_search_path(void);

#endif
