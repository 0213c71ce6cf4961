/*
 * Why memory went where it did: the rules tried on a stack or a region,
 * the condition that failed in each rule before the one that took it,
 * and where that rule's patterns matched (dmprof policy explain); and
 * which rules a set of dumps exercises (policy check with dumps).
 */
#ifndef DMPROF_EXPLAIN_H
#define DMPROF_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "classify.h"
#include "hashmap.h"
#include "policy.h"

/* What explain_span found. */
enum span_kind {
	SPAN_ANY,    /* the pattern matches anything (".*"): no part */
	SPAN_PART,   /* what the pattern's own text matched */
	SPAN_WHOLE,  /* the part could not be told: the whole field */
};

/*
 * Where PAT, which matches the whole of S[0..LEN), matched: the part of
 * S that the pattern's text matched once a leading ".*" and a trailing
 * ".*" (of each top-level alternative) are left out, those being what
 * lets a pattern match anywhere in a stack; the leftmost such part.
 * Sets [*START, *END) and returns a span_kind, or -1 after a pattern
 * failed (a match limit; said).
 */
int explain_span(const struct policy *p, const struct pattern *pat,
		 const char *s, size_t len, size_t *start, size_t *end);

/*
 * Where PAT, which does not match S[0..LEN), fails, S's logical frames
 * starting at STARTS: the first frame after which no text could make
 * it match (PCRE2's partial matching on S cut after each frame).
 * Returns that frame's index; STARTS->n when S ends before a match
 * could; -1 when no frame can tell (PAT begins with ".*" or cannot be
 * matched partially); -2 after a pattern failed (said).
 */
long explain_fail_frame(const struct policy *p, const struct pattern *pat,
			const char *s, size_t len,
			const struct frame_starts *starts);

/*
 * One distinct thing rules are tried on: a malloc bucket, a hooked
 * region (its bucket and mapping), an unhooked region (its mapping),
 * each with the page category it was classified with.
 */
struct explain_subject {
	enum item_kind kind;
	const struct bucket *bucket; /* NULL: unhooked, or an unknown bucket */
	uint64_t bucket_id;          /* its id, known or not; 0: unhooked */
	const char *path;            /* a region's mapping (interned) */
	char perms[5];
	unsigned sharing;            /* SHARE_* bit, 0: unknown */
	int col;                     /* the classifier's; -1: no bucket */
	int rule;                    /* the rule that took it (explain_rules),
					-1: none */
	int64_t bytes;
	size_t items;                /* lines or regions summed */
};

/* Subjects, each once. */
struct explain_set {
	struct explain_subject *v;
	size_t n, alloc;
	struct hashmap index;        /* (an index + 1) */
};

void explain_set_init(struct explain_set *set);
void explain_set_free(struct explain_set *set);
/* The entry of KEY's subject (KEY's col and bytes aside), or NULL. */
struct explain_subject *explain_set_find(const struct explain_set *set,
					 const struct explain_subject *key);
/* The same, added with KEY's col and no bytes if new. */
struct explain_subject *explain_set_get(struct explain_set *set,
					const struct explain_subject *key);
/* Largest first, then malloc before regions, then by bucket id, path. */
void explain_set_sort(struct explain_set *set);

/*
 * Every item of SNAP as C classifies it into SET, bytes summed by
 * subject: a region's pages by their sharing where the dump's own page
 * counts tell it, as expand (and csv, without other processes) sees
 * them.  C must not have classified regions before (a new one): their
 * subjects are learnt as it does.  0, or -1 after an error (said).
 */
int explain_collect(struct classifier *c, const struct snapshot *snap,
		    struct explain_set *set);
/*
 * Every subject that aggregating SNAP classifies, as csv does (a
 * region's pages by their sharing where the dump tells it), into SET,
 * once each: what C had not classified before.  Bytes are not kept.
 * 0, or -1 after an error.
 */
int explain_collect_subjects(struct classifier *c,
			     const struct snapshot *snap,
			     struct explain_set *set);

/* A rule's verdict on a subject; 0 .. COND_NFIELDS - 1: that field's
 * pattern did not match. */
enum {
	VERDICT_NOT_TRIED = -3, /* another allocator's, or after the taker */
	VERDICT_SHARING = -1,   /* its shared= list does not hold */
	VERDICT_TAKES = COND_NFIELDS, /* every condition holds */
};

/* Replaying a classifier's policy, rule by rule. */
struct explainer {
	struct classifier *c;
	struct matcher mt;
	struct subject subj;      /* the last subject's, */
	struct subject_text text; /* and its fields, */
	struct vma vma;           /* and mapping */
	struct strbuf what;
	int *verdict;             /* by rule */
};

void explainer_init(struct explainer *x, struct classifier *c);
void explainer_free(struct explainer *x);

/* The allocator of a subject of KIND (malloc for a line, mmap for a
 * hooked region, unhooked). */
enum rule_alloc explain_alloc(enum item_kind kind);

/*
 * Try the rules of S's allocator on S in order, each until the one that
 * takes it (ALL: every one of them), X->verdict getting each rule's.
 * Sets and returns S->rule: -1 for an unknown bucket (no rule is
 * tried), -2 after a pattern failed (said).  X->subj and X->text hold
 * S's subject until the next call.  The rule must be the one whose
 * column the classifier gave S: anything else is a bug.
 */
int explain_rules(struct explainer *x, struct explain_subject *s, bool all);

/* How a rule fares over a set of subjects (policy check with dumps). */
struct rule_use {
	size_t matched;  /* subjects it matches */
	size_t taken;    /* those it took: no earlier rule matched */
	int by[3];       /* the first rules that took what it matched */
	size_t nby;      /* how many distinct ones (may be more than 3) */
};

struct coverage {
	const struct policy *p;
	struct rule_use *rules;      /* by rule */
	size_t subjects[RULE_NALLOC];
	uint8_t *pairs;              /* [r * nrules + t]: t took one r matched */
};

void coverage_init(struct coverage *cv, const struct policy *p);
void coverage_free(struct coverage *cv);
/* Try every rule on every subject of SET (classified by C, under CV's
 * policy) and count.  0, or -1 after a pattern failed. */
int coverage_add(struct coverage *cv, struct classifier *c,
		 struct explain_set *set);

#endif
