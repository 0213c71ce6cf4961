/*
 * The checks that make a loaded policy safe to apply: every rule names a
 * column, every column has a meaning, the markers pair up, every
 * allocator has a catch-all (so every byte lands in a component), and the
 * components between the markers count no byte twice; and, for `policy
 * check`, the rules an earlier one shadows whatever the memory.
 */
#include "policy_load.h"

#include <limits.h>
#include <string.h>

#include "snapshot.h"
#include "util.h"

bool rule_is_catch_all(const struct rule *r)
{
	if (r->sharing || r->broken)
		return false;
	for (int f = 0; f < COND_NFIELDS; f++)
		if (r->cond[f] && !r->cond[f]->match_all)
			return false;
	return true;
}

/*
 * The computed columns that are parts of the partition: what no component
 * counts (no-bucket, nonprofiled-absent, the arenas' unused bytes) and
 * the error term (mustbezero).
 */
static bool partition_part(const struct column *c)
{
	switch (c->builtin) {
	case B_NO_BUCKET:
	case B_MUSTBEZERO:
	case B_TC_UNUSED:
	case B_MALLOC_UNUSED:
		return true;
	case B_STAT:
		return c->stat_row == GS_NP_ABSENT && !c->stat_virtual;
	default:
		return false;
	}
}

static bool between(const struct policy *p, int c)
{
	return c > p->from_marker && c < p->until_marker;
}

/*
 * The components between the markers partition the process's memory:
 * they must not count a byte twice.  A computed column there would count
 * bytes they count already; the profiler's own memory, which
 * total-exclude-profiler leaves out, would make them add up to more than
 * it; and the allocator's arenas hold the malloc'd bytes, so with malloc
 * components there the arenas must be a column of their own outside (the
 * original's mmap-tcmalloc, or allocator-arena), with malloc-unused (or
 * tc-unused) inside for what they hold beyond the live blocks.  Without
 * such a column the arenas land in the mmap catch-all: a double count when
 * that is between the markers.
 */
static void check_partition(struct loader *ld)
{
	struct policy *p = ld->p;
	int arena = p->col_mmap_tcmalloc;
	long first_malloc = -1, first_mmap = -1, unused = -1;

	if (p->from_marker < 0 || p->until_marker < p->from_marker)
		return; /* (said already) */
	for (int c = p->from_marker + 1; c < p->until_marker; c++) {
		const struct column *col = &p->cols[c];
		enum column_kind kind = column_kind(col);

		if (kind == COLUMN_TIME)
			lerr(ld, col->line, col->col,
			     "'%s' between FROM_HERE_FOR_TOTAL and "
			     "UNTIL_HERE_FOR_TOTAL is a time, not bytes; list "
			     "it outside them", col->name);
		else if (kind == COLUMN_COMPUTED && !partition_part(col))
			lerr(ld, col->line, col->col,
			     "'%s' between FROM_HERE_FOR_TOTAL and "
			     "UNTIL_HERE_FOR_TOTAL counts bytes the components "
			     "there count already (it is %s); list it after "
			     "UNTIL_HERE_FOR_TOTAL", col->name, column_doc(col));
		else if (c == p->col_mmap_profiler ||
			 c == p->col_mmap_type_profiler)
			lerr(ld, col->line, col->col,
			     "'%s' between FROM_HERE_FOR_TOTAL and "
			     "UNTIL_HERE_FOR_TOTAL: the profiler's own memory "
			     "is what total-exclude-profiler leaves out, so "
			     "the components there would add up to more; list "
			     "it outside them", col->name);
		if (col->builtin == B_TC_UNUSED || col->builtin == B_MALLOC_UNUSED)
			unused = c;
	}
	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];

		/* Without a rule of their own, the arenas take the mmap
		 * catch-all: that column is the one to look at. */
		if (r->alloc == RULE_MMAP && first_mmap < 0 &&
		    rule_is_catch_all(r))
			first_mmap = between(p, (int)r->column) ? (long)i
							       : LONG_MAX;
		if (r->broken || !between(p, (int)r->column))
			continue;
		if (r->alloc == RULE_MALLOC && first_malloc < 0)
			first_malloc = (long)i;
	}
	if (first_mmap == LONG_MAX)
		first_mmap = -1;
	if (arena >= 0 && between(p, arena) && (first_malloc >= 0 || unused >= 0)) {
		const struct column *col = &p->cols[arena];

		lerr(ld, col->line, col->col,
		     "'%s' between FROM_HERE_FOR_TOTAL and UNTIL_HERE_FOR_TOTAL "
		     "holds the malloc'd bytes that '%s' counts there too; "
		     "list it after UNTIL_HERE_FOR_TOTAL (malloc-unused counts "
		     "what it holds beyond the live blocks)", col->name,
		     first_malloc >= 0
			     ? p->cols[p->rules[first_malloc].column].name
			     : p->cols[unused].name);
	} else if (arena < 0 && first_malloc >= 0 && first_mmap >= 0) {
		const struct rule *r = &p->rules[first_mmap];

		lerr(ld, r->line, ld->name_cols[first_mmap],
		     "malloc components ('%s') and the mmap catch-all ('%s') "
		     "between FROM_HERE_FOR_TOTAL and UNTIL_HERE_FOR_TOTAL, "
		     "but no allocator-arena column: the allocator's arenas "
		     "are mappings that hold the malloc'd bytes, and without "
		     "a rule of their own they land in an mmap component "
		     "there and count those bytes a second time; give them "
		     "one ('rule allocator-arena mmap stack=...') and list "
		     "allocator-arena after UNTIL_HERE_FOR_TOTAL",
		     p->cols[p->rules[first_malloc].column].name,
		     p->cols[r->column].name);
	}
}

/*
 * Does rule J take everything rule R would?  It does when it applies to
 * the same memory and each of its conditions is either no condition at
 * all or one of R's, word for word: whatever matches R matches J.  (A
 * catch-all is the case of no conditions.)  Only the text is compared:
 * whether one regular expression holds another is not asked.
 */
static bool rule_covers(const struct rule *j, const struct rule *r)
{
	if (j->broken || j->alloc != r->alloc)
		return false;
	if (j->sharing && (!r->sharing || (r->sharing & ~j->sharing)))
		return false;
	for (int f = 0; f < COND_NFIELDS; f++) {
		const struct pattern *a = j->cond[f], *b = r->cond[f];

		if (!a || a->match_all)
			continue;
		if (!b || a->len != b->len || memcmp(a->text, b->text, a->len))
			return false;
	}
	return true;
}

long policy_rule_shadowed_by(const struct policy *p, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (rule_covers(&p->rules[j], &p->rules[i]))
			return (long)j;
	return -1;
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
		} else if (p->cols[c].builtin == B_MALLOC_UNUSED &&
			   r->alloc != RULE_MALLOC) {
			lerr(ld, r->line, rule_cols[i],
			     "'%s' takes malloc lines only (free space a "
			     "heap walk found), not %s memory", rule_names[i],
			     rule_alloc_name(r->alloc));
			r->broken = true;
		} else if (p->cols[c].builtin != B_NONE &&
			   p->cols[c].builtin != B_MALLOC_UNUSED) {
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
	} else {
		check_partition(ld);
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
