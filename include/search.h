/*
 * Binary search, once for every sorted table (VMAs, symbols, page frames,
 * symbol-map ranges, the recorder's mappings and unwind tables).
 */
#ifndef DMPROF_SEARCH_H
#define DMPROF_SEARCH_H

#include <stddef.h>

/*
 * The partition point of [0, N): how many leading indices I satisfy
 * BEFORE, an expression of I that holds for a prefix of the range and
 * not after it.  Over an array sorted by KEY:
 *
 *   PARTITION_POINT(n, i, v[i].key < x)   the first element >= x
 *   PARTITION_POINT(n, i, v[i].key <= x)  one past the last element <= x
 *
 * (A statement expression: no call, no callback; the recorder uses it
 * too.)
 */
#define PARTITION_POINT(n, i, before)                                       \
	({                                                                  \
		size_t lo_ = 0, hi_ = (n);                                  \
		while (lo_ < hi_) {                                         \
			size_t i = lo_ + (hi_ - lo_) / 2;                   \
			if (before)                                         \
				lo_ = i + 1;                                \
			else                                                \
				hi_ = i;                                    \
		}                                                           \
		lo_;                                                        \
	})

#endif
