/* "Did you mean": the names closest to a mistyped one. */
#ifndef DMPROF_SUGGEST_H
#define DMPROF_SUGGEST_H

#include <stddef.h>

/*
 * The candidates close enough to WORD to be what was meant, closest first
 * (edit distance with transpositions; a candidate that starts with a WORD
 * of 3 or more characters counts as close).  Up to MAX go to OUT; returns
 * how many.
 */
size_t suggest(const char *word, const char *const *cands, size_t n,
	       const char **out, size_t max);

#endif
