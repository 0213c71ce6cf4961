/*
 * A snapshot's size classes: glibc's bins one by one, then four per
 * power of two, each usable size in exactly one, without gaps.
 */
#include <criterion/criterion.h>

#include "capture.h"

Test(snapfile, size_classes_cover_every_size_once)
{
	uint64_t lo, hi, last = 0;
	unsigned prev = 0;

	snap_size_bounds(0, &lo, &hi);
	cr_assert_eq(lo, 0);
	cr_assert_eq(hi, 24);
	snap_size_bounds(1, &lo, &hi);
	cr_assert_eq(lo, 25);
	cr_assert_eq(hi, 40);
	cr_assert_eq(snap_size_class(1016), 62);
	cr_assert_eq(snap_size_class(1017), 63);
	snap_size_bounds(snap_size_class(1025), &lo, &hi);
	cr_assert_eq(lo, 1025);
	cr_assert_eq(hi, 1280);
	snap_size_bounds(snap_size_class(135152), &lo, &hi);
	cr_assert_eq(lo, 131073);
	cr_assert_eq(hi, 163840);
	for (uint64_t u = 0; u < (1u << 22); u += 1 + u / 64) {
		unsigned c = snap_size_class(u);

		snap_size_bounds(c, &lo, &hi);
		cr_assert(lo <= u && u <= hi, "%llu in %u: %llu..%llu",
			  (unsigned long long)u, c, (unsigned long long)lo,
			  (unsigned long long)hi);
		cr_assert(c == prev || c == prev + 1, "%u after %u", c, prev);
		if (c != prev)
			cr_assert_eq(lo, last + 1, "class %u starts at %llu", c,
				     (unsigned long long)lo);
		prev = c;
		last = hi;
	}
	/* (A chunk's size has 48 bits.) */
	cr_assert_lt(snap_size_class(1ULL << 48), 256);
}
