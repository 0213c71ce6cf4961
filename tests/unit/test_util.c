/* Unit tests for the allocation helpers of util.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

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
