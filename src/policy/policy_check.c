/*
 * The checks that make a loaded policy safe to apply: every rule names a
 * column, every column has a meaning, the markers pair up, every
 * allocator has a catch-all (so every byte lands in a component), and the
 * components between the markers count no byte twice.
 */
#include "policy_load.h"

#include <string.h>

#include "util.h"

static bool rule_is_catch_all(const struct rule *r)
{
	if (r->sharing || r->broken)
		return false;
	for (int f = 0; f < COND_NFIELDS; f++)
		if (r->cond[f] && !r->cond[f]->match_all)
			return false;
	return true;
}

void policy_check(struct loader *ld)
{
	char **rule_names = ld->names;
	unsigned long *rule_cols = ld->name_cols;
	struct policy *p = ld->p;
	long catch_all[RULE_NALLOC] = { -1, -1, -1 };

	for (size_t i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];
		int c = policy_column(p, rule_names[i]);

		if (c < 0) {
			lerr(ld, r->line, rule_cols[i],
			     "rule assigns '%s', which is not in columns",
			     rule_names[i]);
			r->broken = true;
		} else if (p->cols[c].builtin != B_NONE) {
			lerr(ld, r->line, rule_cols[i],
			     "'%s' is computed by dmprof; a rule cannot "
			     "assign it", rule_names[i]);
			r->broken = true;
		} else {
			r->column = (uint32_t)c;
			p->cols[c].assigned = true;
		}
		if (catch_all[r->alloc] >= 0)
			warning("%s:%lu: rule '%s' never matches: the catch-all "
				"rule at line %ld comes first",
				ld->name, r->line, rule_names[i],
				catch_all[r->alloc]);
		else if (rule_is_catch_all(r))
			catch_all[r->alloc] = (long)r->line;
		for (int f = 0; f < COND_NFIELDS; f++)
			if (r->cond[f])
				p->uses[f] = true;
		if (r->sharing)
			p->uses_sharing = true;
	}
	for (size_t i = 0; i < p->ncols; i++) {
		struct column *c = &p->cols[i];

		if (c->builtin == B_NONE && !c->assigned)
			lerr(ld, c->line, c->col,
			     "column '%s' is neither assigned by a rule nor "
			     "computed by dmprof (see dmprof-policy(5))",
			     c->name);
	}
	if ((p->from_marker < 0) != (p->until_marker < 0)) {
		const struct column *m =
			&p->cols[p->from_marker >= 0 ? p->from_marker
						     : p->until_marker];

		lerr(ld, m->line, m->col, "FROM_HERE_FOR_TOTAL and "
					  "UNTIL_HERE_FOR_TOTAL go together");
	} else if (p->from_marker > p->until_marker) {
		const struct column *m = &p->cols[p->until_marker];

		lerr(ld, m->line, m->col,
		     "UNTIL_HERE_FOR_TOTAL comes before FROM_HERE_FOR_TOTAL");
	}
	for (int a = 0; a < RULE_NALLOC; a++)
		if (catch_all[a] < 0)
			lerr(ld, 1, 0,
			     "no catch-all rule for %s %s: every byte must "
			     "land in a component, so end them with a rule "
			     "without conditions (\"rule NAME %s\")",
			     rule_alloc_name(a),
			     a == RULE_MALLOC ? "buckets" : "regions",
			     rule_alloc_name(a));
}
