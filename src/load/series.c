/*
 * Series discovery by listing the directory rather than probing
 * PREFIX.0001, PREFIX.0002, ...: gaps of any length are tolerated, counters
 * past 9999 sort right, and one readdir serves both dumps and buckets.
 * What a dump's name may end in is the readers' table's to say.
 */
#include "series.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "util.h"

/*
 * The suffix PATH ends in (".SUFFIX"), of a reader's row (what follows
 * the counter in the names its producer gives a run's dumps), or NULL.
 */
static const char *dump_suffix(const char *path)
{
	const struct profile_traits *t;
	size_t len = strlen(path);

	for (size_t i = 0; (t = profile_reader(i)); i++)
		for (const char *const *s = t->suffixes; s && *s; s++) {
			size_t n = strlen(*s);

			if (len > n + 1 && path[len - n - 1] == '.' &&
			    !strcmp(path + len - n, *s))
				return *s;
		}
	return NULL;
}

/*
 * Where the counter ends in NAME, of LEN bytes, if it ends in ".SUFFIX":
 * before the suffix, or before what a row of that suffix puts between
 * the two (jemalloc's ".KIND").  0 if NAME does not end so.
 */
static size_t counter_end(const char *name, size_t len, const char *suffix)
{
	const struct profile_traits *t;
	size_t n = strlen(suffix), end, k;

	if (len < n + 2 || name[len - n - 1] != '.' ||
	    strcmp(name + len - n, suffix))
		return 0;
	end = len - n - 1;
	for (size_t i = 0; (t = profile_reader(i)); i++)
		for (const char *const *s = t->suffixes; s && *s; s++)
			if (t->infix && !strcmp(*s, suffix) &&
			    (k = t->infix(name, end)))
				return end - k;
	return end;
}

bool series_split(const char *path, char **prefix, unsigned long *counter)
{
	const char *suffix = dump_suffix(path);
	size_t len = strlen(path), end, i;
	unsigned long n = 0;

	if (!suffix || len < strlen(suffix) + 3)
		return false;
	i = end = counter_end(path, len, suffix);
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
 * Does REST, a file name after "PREFIX.", read "<digits>.SUFFIX" (or
 * "<digits>.INFIX.SUFFIX", as a row of the suffix allows: jemalloc's
 * ".KIND")?  The number into *COUNTER.
 */
static bool dump_rest(const char *rest, const char *suffix,
		      unsigned long *counter)
{
	const char *p;
	int digits = 0;

	*counter = 0;
	for (p = rest; *p >= '0' && *p <= '9'; p++) {
		if (++digits > 9)
			return false;
		*counter = *counter * 10 + (unsigned long)(*p - '0');
	}
	return digits && *p == '.' &&
	       counter_end(rest, strlen(rest), suffix) == (size_t)(p - rest);
}

/*
 * List the files PREFIX.REST in PREFIX's directory whose REST MATCH
 * keeps (with ARG), sorted by the number it gives (not lexically: 10000
 * follows 9999).  Empty files are included; the caller decides.
 * Returns 0, or -1 if the directory cannot be read.
 */
static int scan(const char *prefix,
		bool (*match)(const char *rest, void *arg,
			      unsigned long *counter),
		void *arg, struct series_file **out, size_t *n)
{
	const char *slash = strrchr(prefix, '/');
	char *dir = slash ? xstrndup(prefix, (size_t)(slash - prefix + 1))
			  : xstrdup("./");
	const char *base = slash ? slash + 1 : prefix;
	size_t blen = strlen(base), alloc = 0;
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
		const char *name = de->d_name;
		size_t nlen = strlen(name);
		unsigned long counter;

		if (strncmp(name, base, blen) != 0 || name[blen] != '.' ||
		    !match(name + blen + 1, arg, &counter))
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

static bool match_suffix(const char *rest, void *suffix,
			 unsigned long *counter)
{
	return dump_rest(rest, suffix, counter);
}

/* The files PREFIX.<digits>.SUFFIX (see scan()). */
static int series_scan(const char *prefix, const char *suffix,
		       struct series_file **out, size_t *n)
{
	return scan(prefix, match_suffix, (void *)suffix, out, n);
}

/* The process whose dumps a scan of a recorded run keeps. */
struct process {
	const char *pid;  /* as its dumps spell it */
	size_t others;    /* dumps of other processes */
};

/* REST: "PID.<digits>.heap". */
static bool match_process(const char *rest, void *arg,
			  unsigned long *counter)
{
	struct process *pr = arg;
	size_t n = strspn(rest, "0123456789");

	if (!n || rest[n] != '.' || !dump_rest(rest + n + 1, "heap", counter))
		return false;
	if (n == strlen(pr->pid) && !memcmp(rest, pr->pid, n))
		return true;
	pr->others++;
	return false;
}

int series_process(struct series *s, const char *prefix, size_t *others)
{
	const char *dot = strrchr(prefix, '.');
	char *run;
	struct process pr;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!dot || dot[1] < '0' || dot[1] > '9' ||
	    dot[1 + strspn(dot + 1, "0123456789")] || strchr(dot, '/'))
		BUG("'%s' is no PREFIX.PID", prefix);
	run = xstrndup(prefix, (size_t)(dot - prefix));
	pr.pid = dot + 1;
	pr.others = 0;
	rc = scan(run, match_process, &pr, &s->dumps, &s->ndumps);
	free(run);
	if (rc < 0)
		return -1;
	s->prefix = xstrdup(prefix);
	s->first = s->ndumps ? s->dumps[0].counter : 0;
	*others = pr.others;
	return 0;
}

void series_files_free(struct series_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

int series_heaps(const struct series *s, struct series_file **out,
		 size_t *n)
{
	return series_scan(s->prefix, "heap", out, n);
}

unsigned long series_last(const char *prefix, const char *suffix)
{
	struct series_file *found;
	size_t n;
	unsigned long last = 0;

	if (series_scan(prefix, suffix, &found, &n) < 0)
		return 0;
	if (n)
		last = found[n - 1].counter;
	series_files_free(found, n);
	return last;
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
	    (all && series_scan(s->prefix, dump_suffix(first_dump), &found,
				&nfound) < 0)) {
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

char *series_first_dump(const char *dump)
{
	char *prefix = NULL, *first = NULL;
	struct series_file *found = NULL;
	unsigned long counter;
	size_t n = 0;

	if (!series_split(dump, &prefix, &counter)) {
		free(prefix);
		return NULL;
	}
	if (series_scan(prefix, dump_suffix(dump), &found, &n) == 0 && n)
		first = found[0].counter < counter ? xstrdup(found[0].path)
						   : xstrdup(dump);
	series_files_free(found, n);
	free(prefix);
	return first;
}

static int cmp_counter(const void *a, const void *b)
{
	const struct series_file *x = a, *y = b;

	return x->counter < y->counter ? -1 : x->counter > y->counter;
}

int series_of(struct series *s, const char *const *dumps, size_t n)
{
	memset(s, 0, sizeof(*s));
	if (n == 1)
		return series_discover(s, dumps[0], false);
	if (!series_split(dumps[0], &s->prefix, &s->first))
		return error("%s: not a dump of a series (PREFIX.NNNN.heap, PREFIX.NNNN.pb.gz)",
			     dumps[0]);
	s->dumps = xcalloc(n, sizeof(*s->dumps));
	for (size_t i = 0; i < n; i++) {
		char *prefix = NULL;
		unsigned long counter;
		bool same = series_split(dumps[i], &prefix, &counter) &&
			    !strcmp(prefix, s->prefix);

		free(prefix);
		if (!same) {
			series_free(s);
			return error("%s: not a dump of the run of %s",
				     dumps[i], dumps[0]);
		}
		s->dumps[s->ndumps].counter = counter;
		s->dumps[s->ndumps++].path = xstrdup(dumps[i]);
	}
	/* (A stable sort keeps the first spelling of a number first.) */
	for (size_t i = 1; i < s->ndumps; i++)
		for (size_t k = i; k > 0 && cmp_counter(&s->dumps[k - 1],
							&s->dumps[k]) > 0; k--) {
			struct series_file t = s->dumps[k];

			s->dumps[k] = s->dumps[k - 1];
			s->dumps[k - 1] = t;
		}
	for (size_t i = 1, out = 1; i <= s->ndumps; i++) {
		if (i == s->ndumps) {
			s->ndumps = out;
			break;
		}
		if (s->dumps[i].counter == s->dumps[out - 1].counter) {
			/* The same file twice, or "P.0002" and "P.2". */
			if (strcmp(s->dumps[i].path, s->dumps[out - 1].path))
				warning("%s: same number as %s; ignored",
					s->dumps[i].path,
					s->dumps[out - 1].path);
			free(s->dumps[i].path);
			continue;
		}
		s->dumps[out++] = s->dumps[i];
	}
	s->first = s->dumps[0].counter;
	if (series_scan(s->prefix, "buckets", &s->buckets, &s->nbuckets) < 0) {
		series_free(s);
		return -1;
	}
	return 0;
}

/* The prefix that names the run of DUMP. */
static char *run_prefix(const char *dump)
{
	char *prefix;
	unsigned long counter;

	if (series_split(dump, &prefix, &counter))
		return prefix;
	return xstrdup(dump);
}

void series_group(const char *const *dumps, size_t n,
		  struct series_group **out, size_t *nout)
{
	struct series_group *g = NULL;
	size_t ng = 0;

	for (size_t i = 0; i < n; i++) {
		char *prefix = run_prefix(dumps[i]);
		size_t k;

		for (k = 0; k < ng; k++)
			if (!strcmp(g[k].prefix, prefix))
				break;
		if (k == ng) {
			g = xreallocarray(g, ng + 1, sizeof(*g));
			g[ng].prefix = prefix;
			g[ng].dumps = xcalloc(n, sizeof(*g[ng].dumps));
			g[ng].n = 0;
			ng++;
		} else {
			free(prefix);
		}
		/* (The same path twice is one dump.) */
		for (size_t j = 0; j < g[k].n; j++)
			if (!strcmp(g[k].dumps[j], dumps[i]))
				goto next;
		g[k].dumps[g[k].n++] = dumps[i];
next:;
	}
	*out = g;
	*nout = ng;
}

void series_groups_free(struct series_group *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(g[i].prefix);
		free(g[i].dumps);
	}
	free(g);
}

void series_free(struct series *s)
{
	series_files_free(s->dumps, s->ndumps);
	series_files_free(s->buckets, s->nbuckets);
	free(s->prefix);
	memset(s, 0, sizeof(*s));
}
