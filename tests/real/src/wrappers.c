/*
 * A C program that allocates through wrappers (tests/real/wrappers.sh):
 * GLib's (g_new, g_strdup, g_ptr_array_add, in Debian's libglib), a
 * built-in family's defined in the program itself (xmalloc, as git's),
 * and one of its own that only --alloc-fn names (pool_take).  Each
 * caller's bytes are known; it prints them as "NAME BYTES" lines to the
 * file named by its argument, and keeps every block, written to (so that
 * each is committed), to the end.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record {
	long id;
	double value;
	char tag[16];
};

static void *keep[4096];
static size_t nkeep;

__attribute__((noinline)) void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) void *pool_take(size_t n)
{
	return xmalloc(n);
}

__attribute__((noinline)) size_t load_records(void)
{
	struct record *r = g_new(struct record, 1000);

	memset(r, 1, 1000 * sizeof(*r));
	keep[nkeep++] = r;
	return 1000 * sizeof(*r);
}

__attribute__((noinline)) size_t copy_names(void)
{
	size_t bytes = 0;

	for (int i = 0; i < 100; i++) {
		char name[32];

		snprintf(name, sizeof(name), "name-%d", i);
		keep[nkeep++] = g_strdup(name);
		bytes += strlen(name) + 1;
	}
	return bytes;
}

__attribute__((noinline)) GPtrArray *collect(void)
{
	GPtrArray *a = g_ptr_array_new();

	for (int i = 0; i < 1000; i++)
		g_ptr_array_add(a, keep[i % nkeep]);
	return a;
}

__attribute__((noinline)) size_t parse_args(void)
{
	for (int i = 0; i < 30; i++) {
		keep[nkeep] = xmalloc(100);
		memset(keep[nkeep++], 2, 100);
	}
	return 30 * 100;
}

__attribute__((noinline)) size_t make_requests(void)
{
	for (int i = 0; i < 50; i++) {
		keep[nkeep] = pool_take(256);
		memset(keep[nkeep++], 3, 256);
	}
	return 50 * 256;
}

int main(int argc, char **argv)
{
	FILE *out = fopen(argc > 1 ? argv[1] : "/dev/null", "w");
	size_t records, names, args, requests;
	GPtrArray *a;

	if (!out)
		return 1;
	records = load_records();
	names = copy_names();
	args = parse_args();
	requests = make_requests();
	a = collect();
	fprintf(out, "load_records %zu\ncopy_names %zu\nparse_args %zu\n"
		     "make_requests %zu\ncollect %u\n",
		records, names, args, requests, a->len);
	fclose(out);
	return 0;
}
