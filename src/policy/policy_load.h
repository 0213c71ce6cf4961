/*
 * Inside the policy module (src/policy/): what the readers of the two
 * formats, the checks and the front share while a policy is loaded.
 */
#ifndef DMPROF_POLICY_LOAD_H
#define DMPROF_POLICY_LOAD_H

#include "policy.h"

/* Enough for any sane pattern; a catastrophic one fails in milliseconds. */
#define MATCH_LIMIT 5000000
#define DEPTH_LIMIT 100000

/* One policy being loaded: problems are counted, not fatal, so that
 * `policy check` reports them all. */
struct loader {
	struct policy *p;
	const char *name;       /* file name for diagnostics */
	int errors;
	/* Each rule's component name and its column in the file, resolved
	 * once every column is known. */
	char **names;
	unsigned long *name_cols;
	size_t names_alloc;
};

/* "NAME:LINE:COL: MSG" (COL 0: none), counted as an error. */
void lerr(struct loader *ld, unsigned long line, unsigned long col,
	  const char *fmt, ...) PRINTF(4, 5);

void add_column(struct loader *ld, const char *name, unsigned long line,
		unsigned long col);
/* A rule for column NAME (written at NAME_COL), resolved later. */
struct rule *add_rule(struct loader *ld, const char *name,
		      unsigned long name_col, enum rule_alloc alloc,
		      unsigned long line);
/*
 * Compile TEXT as a whole-string pattern.  COLS gives the source column of
 * each byte of TEXT (and one past it), so PCRE2's error offset becomes a
 * column; without it, COL is the column of the first byte.  NULL after an
 * error.
 */
struct pattern *compile_pattern(struct loader *ld, const char *text,
				size_t len, unsigned long line,
				unsigned long col, const unsigned long *cols);
void pattern_free(struct pattern *pat);

/* Which conditions make sense for which allocator. */
bool field_allowed(enum rule_alloc a, enum cond_field f);
int field_lookup(const char *key, size_t len);

/* The two readers. */
void policy_parse_text(struct loader *ld, const char *text, size_t len);
void policy_parse_json(struct loader *ld, const char *text, size_t len);

/*
 * What needs the whole policy: rules name columns, columns have a
 * meaning, markers pair up, every allocator has a catch-all, and the
 * components between the markers count no byte twice.
 */
void policy_check(struct loader *ld);

/* Does FOUND hold one of the N literal ids LITS of each of the NGROUPS
 * groups (GROUP: each literal's)? */
static inline bool lits_held(const uint32_t *lits, const uint8_t *group,
			     size_t n, uint32_t ngroups,
			     const uint64_t *found)
{
	uint64_t groups = 0;

	for (size_t k = 0; k < n; k++)
		if (found[lits[k] / 64] >> (lits[k] % 64) & 1)
			groups |= 1ULL << group[k];
	return groups == (ngroups == 64 ? UINT64_MAX : (1ULL << ngroups) - 1);
}

/* The literal prefilter of P's patterns (see literals.h). */
void policy_build_prefilter(struct policy *p);
/* The frame-by-frame form of P's patterns that have one (policy_seq.c),
 * after the prefilter: where it decides, no need. */
void policy_build_seqs(struct policy *p);
void pattern_seq_free(struct pattern *pat);

/* Say that PAT failed with RC (a match limit) on a subject of LEN bytes,
 * unless MT is quiet; -1. */
int pattern_failed(const struct policy *p, const struct matcher *mt,
		   const struct pattern *pat, int rc, size_t len,
		   const char *what, const struct subject *subj);

#endif
