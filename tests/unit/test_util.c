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
