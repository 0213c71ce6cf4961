/*
 * A prefilter for regular expressions: the literal strings one of which
 * every match must contain, and an Aho-Corasick automaton that finds, in
 * one pass over a subject, which of many such strings it contains.  A
 * policy runs a rule's regex only when the subject holds one of the
 * rule's literals; most rules of a policy are ".*Name.*" over stacks of
 * hundreds of bytes, so most never run.
 */
#ifndef DMPROF_LITERALS_H
#define DMPROF_LITERALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What each match contains: for every group, one of its literals (an AND
 * of ORs; GROUP gives each literal's group, 0 to NGROUPS - 1).
 */
struct literals {
	char **v;
	size_t *len;
	uint32_t *group;
	size_t n;
	uint32_t ngroups;
	/* The regex is ".*LIT.*" or ".*(LIT|LIT...).*" (a whole-string
	 * match, dot matching all): containing one IS matching. */
	bool exact;
};

/*
 * The required literals of RE (PCRE2 syntax, case-sensitive, no
 * extended mode), each at least MIN_LEN bytes long.  Returns true and
 * fills OUT, or false when the regex is not understood well enough to
 * say (which is always safe).
 */
bool regex_literals(const char *re, size_t len, size_t min_len,
		    struct literals *out);
void literals_free(struct literals *l);

/* ---- the automaton ---- */

struct acm;

struct acm *acm_new(void);
/* Add a string; returns its id (0, 1, ...; the same string, the same
 * id).  Before acm_build only. */
uint32_t acm_add(struct acm *a, const char *s, size_t len);
void acm_build(struct acm *a);
uint32_t acm_count(const struct acm *a);
/* The id of string S, or UINT32_MAX if it was not added. */
uint32_t acm_find(const struct acm *a, const char *s, size_t len);
/* Set bit id in FOUND (acm_words() words, cleared by the caller) for each
 * string that occurs in S. */
size_t acm_words(const struct acm *a);
void acm_scan(const struct acm *a, const char *s, size_t len,
	      uint64_t *found);
/* The same, a piece at a time: from state ST (0 at the start), returns
 * the state after S. */
uint32_t acm_feed(const struct acm *a, uint32_t st, const char *s,
		  size_t len, uint64_t *found);
void acm_free(struct acm *a);

#endif
