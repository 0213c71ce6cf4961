/* Unit tests for the allocation helpers of util.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Grown arrays keep their elements and read zero past them, however the
 * allocator left the new memory. */
Test(util, recallocarray_keeps_and_zeroes)
{
	uint64_t *v = NULL;
	size_t n = 0;

	for (size_t want = 3; want < 100000; want = want * 3 + 1) {
		v = xrecallocarray(v, n, want, sizeof(*v));
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(v[i], i * 7 + 1, "element %zu", i);
		for (size_t i = n; i < want; i++) {
			cr_assert_eq(v[i], 0, "new element %zu of %zu", i, want);
			v[i] = i * 7 + 1;
		}
		n = want;
	}
	/* (To the same size: nothing changes.) */
	v = xrecallocarray(v, n, n, sizeof(*v));
	cr_assert_eq(v[n - 1], (n - 1) * 7 + 1);
	free(v);
}

/* Is some mapping of this process advised huge (VmFlags "hg")? */
static bool some_mapping_huge(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool hg = false;

	cr_assert_not_null(f);
	while (!hg && fgets(line, sizeof(line), f))
		hg = !strncmp(line, "VmFlags:", 8) && strstr(line, " hg");
	fclose(f);
	return hg;
}

/*
 * After malloc_setup, malloc serves as before (64 MiB in pieces of every
 * size, written and freed), and what it says it advised is advised.
 */
Test(util, malloc_setup_keeps_malloc_whole)
{
	bool advised = malloc_setup();
	char *p[64];

	cr_assert(!advised || some_mapping_huge());
	for (int i = 0; i < 64; i++) {
		size_t n = (size_t)1 << (i % 21);

		p[i] = xmalloc(n);
		memset(p[i], i, n);
	}
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(p[i][((size_t)1 << (i % 21)) - 1], (char)i);
		free(p[i]);
	}
}

/* An element whose order is not all in its key: a key, a tie-break, and
 * where it came from (which the sort must keep among equals). */
struct keyed {
	uint64_t key;
	uint32_t tie;
	uint32_t from;
};

static uint64_t keyed_key(const void *a)
{
	return ((const struct keyed *)a)->key;
}

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->tie < y->tie ? -1 : x->tie > y->tie;
}

/* The same order as a stable sort by the comparison: against a stable
 * insertion sort, on keys few and many, close and far apart, with runs
 * of equals short and long (past the insertion sort sort_run uses). */
Test(util, sort_keyed_is_a_stable_sort)
{
	static const struct {
		size_t n;
		uint64_t span;
		uint32_t ties;
	} cases[] = {
		{ 10, 100, 3 },      /* a few: by insertion */
		{ 32, 5, 3 },        /* as many as insertion takes */
		{ 100, 20, 3 },      /* below the radix sort's size: qsort */
		{ 5000, 1000, 4 },   /* runs of about 5 */
		{ 5000, 7, 3 },      /* runs of hundreds */
		{ 3000, UINT64_MAX, 2 }, /* keys over all 64 bits */
		{ 2000, 1, 1 },      /* all equal: kept as they came */
	};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t n = cases[c].n;
		struct keyed *v = calloc(n, sizeof(*v)), *want = calloc(n, sizeof(*v));

		for (size_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			v[i].key = cases[c].span == UINT64_MAX
					   ? seed
					   : (seed >> 33) % cases[c].span + (1ULL << 40);
			v[i].tie = (uint32_t)(seed >> 20) % cases[c].ties;
			v[i].from = (uint32_t)i;
		}
		memcpy(want, v, n * sizeof(*v));
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && keyed_cmp(&want[j - 1], &want[j]) > 0; j--) {
				struct keyed t = want[j];

				want[j] = want[j - 1];
				want[j - 1] = t;
			}
		sort_keyed(v, n, sizeof(*v), keyed_key, keyed_cmp);
		for (size_t i = 0; i < n; i++)
			cr_assert(v[i].key == want[i].key && v[i].tie == want[i].tie &&
					  v[i].from == want[i].from,
				  "case %zu: element %zu came from %u, not %u", c, i,
				  v[i].from, want[i].from);
		free(v);
		free(want);
	}
}
