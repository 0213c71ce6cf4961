/*
 * Series discovery by listing the directory rather than probing
 * PREFIX.0001, PREFIX.0002, ...: gaps of any length are tolerated, counters
 * past 9999 sort right, and one readdir serves both dumps and buckets.
 */
#include "series.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

bool series_split(const char *path, char **prefix, unsigned long *counter)
{
	size_t len = strlen(path), end, i;
	unsigned long n = 0;

	if (len < 7 || strcmp(path + len - 5, ".heap") != 0)
		return false;
	end = len - 5;
	i = end;
	while (i > 0 && path[i - 1] >= '0' && path[i - 1] <= '9')
		i--;
	if (i == end || i < 2 || path[i - 1] != '.' || end - i > 9)
		return false;
	for (size_t k = i; k < end; k++)
		n = n * 10 + (unsigned long)(path[k] - '0');
	/* A prefix must name something: "dir/.0001.heap" has none. */
	if (path[i - 2] == '/')
		return false;
	*prefix = xstrndup(path, i - 1);
	*counter = n;
	return true;
}

static int cmp_file(const void *a, const void *b)
{
	const struct series_file *x = a, *y = b;

	if (x->counter != y->counter)
		return x->counter < y->counter ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * List the files PREFIX.<digits>.SUFFIX in PREFIX's directory, sorted by
 * the number (not lexically: 10000 follows 9999).  Empty files are
 * included; the caller decides.  Returns 0, or -1 if the directory cannot
 * be read.
 */
static int series_scan(const char *prefix, const char *suffix,
		       struct series_file **out, size_t *n)
{
	const char *slash = strrchr(prefix, '/');
	char *dir = slash ? xstrndup(prefix, (size_t)(slash - prefix + 1))
			  : xstrdup("./");
	const char *base = slash ? slash + 1 : prefix;
	size_t blen = strlen(base), slen = strlen(suffix), alloc = 0;
	struct series_file *v = NULL;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir(dir[1] == '\0' && dir[0] == '/' ? "/" : dir);
	if (!d) {
		error_errno("cannot list '%s'", dir);
		free(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name, *p;
		size_t nlen = strlen(name);
		unsigned long counter = 0;
		int digits = 0;

		if (nlen < blen + slen + 3 || memcmp(name, base, blen) != 0 ||
		    name[blen] != '.')
			continue;
		for (p = name + blen + 1; *p >= '0' && *p <= '9'; p++) {
			if (++digits > 9)
				break;
			counter = counter * 10 + (unsigned long)(*p - '0');
		}
		if (!digits || digits > 9 || *p != '.' || strcmp(p + 1, suffix))
			continue;
		GROW(v, *n + 1, alloc);
		v[*n].counter = counter;
		v[*n].path = xmalloc(strlen(dir) + nlen + 1);
		strcpy(v[*n].path, slash ? dir : "");
		strcat(v[*n].path, name);
		(*n)++;
	}
	closedir(d);
	free(dir);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_file);
	*out = v;
	return 0;
}

static void series_files_free(struct series_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

int series_discover(struct series *s, const char *first_dump, bool all)
{
	struct series_file *found = NULL;
	size_t nfound = 0, i;

	memset(s, 0, sizeof(*s));
	if (!series_split(first_dump, &s->prefix, &s->first)) {
		/*
		 * A lone dump without a counter: the series is that file and
		 * the prefix its name without ".heap".
		 */
		size_t len = strlen(first_dump);

		if (len > 5 && !strcmp(first_dump + len - 5, ".heap"))
			len -= 5;
		s->prefix = xstrndup(first_dump, len);
		all = false;
	}
	if (series_scan(s->prefix, "buckets", &s->buckets, &s->nbuckets) < 0 ||
	    (all && series_scan(s->prefix, "heap", &found, &nfound) < 0)) {
		series_free(s);
		return -1;
	}
	/* The named dump always comes first, spelled as the user wrote it. */
	s->dumps = xcalloc(nfound + 1, sizeof(*s->dumps));
	s->dumps[0].counter = s->first;
	s->dumps[0].path = xstrdup(first_dump);
	s->ndumps = 1;
	for (i = 0; i < nfound; i++) {
		if (found[i].counter <= s->first ||
		    (s->ndumps > 1 &&
		     found[i].counter == s->dumps[s->ndumps - 1].counter)) {
			/* "P.0002.heap" and "P.2.heap" are one snapshot. */
			if (found[i].counter > s->first)
				warning("%s: same number as %s; ignored",
					found[i].path,
					s->dumps[s->ndumps - 1].path);
			free(found[i].path);
			continue;
		}
		s->dumps[s->ndumps++] = found[i];
	}
	free(found);
	return 0;
}

void series_free(struct series *s)
{
	series_files_free(s->dumps, s->ndumps);
	series_files_free(s->buckets, s->nbuckets);
	free(s->prefix);
	memset(s, 0, sizeof(*s));
}
