/*
 * Suggestions for mistyped names: commands, subcommands, components,
 * policies.  Names are short, so a quadratic distance is fine.
 */
#include "suggest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Optimal string alignment distance; SIZE_MAX past 64 characters. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), i, j, r;
	size_t *d;

	if (n > 64 || m > 64)
		return SIZE_MAX;
	d = xcalloc((n + 1) * (m + 1), sizeof(*d));
#define D(x, y) d[(x) * (m + 1) + (y)]
	for (i = 0; i <= n; i++)
		D(i, 0) = i;
	for (j = 0; j <= m; j++)
		D(0, j) = j;
	for (i = 1; i <= n; i++) {
		for (j = 1; j <= m; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = D(i - 1, j) + 1;

			if (D(i, j - 1) + 1 < v)
				v = D(i, j - 1) + 1;
			if (D(i - 1, j - 1) + cost < v)
				v = D(i - 1, j - 1) + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && D(i - 2, j - 2) + 1 < v)
				v = D(i - 2, j - 2) + 1;
			D(i, j) = v;
		}
	}
	r = D(n, m);
#undef D
	free(d);
	return r;
}

size_t suggest(const char *word, const char *const *cands, size_t n,
	       const char **out, size_t max)
{
	size_t len = strlen(word), limit = 2 + len / 4, found = 0;
	size_t *dist = xcalloc(n ? n : 1, sizeof(*dist));

	for (size_t i = 0; i < n; i++) {
		dist[i] = edit_distance(word, cands[i]);
		/* A prefix is a strong hint too ("stack" for stacktrace). */
		if (len >= 3 && starts_with(cands[i], word))
			dist[i] = 1;
	}
	/* Closest first; equals in the candidates' own order. */
	for (size_t d = 0; d <= limit && found < max; d++)
		for (size_t i = 0; i < n && found < max; i++)
			if (dist[i] == d && strcmp(cands[i], word))
				out[found++] = cands[i];
	free(dist);
	return found;
}
