/*
 * The recorder's table of stacks (rec_table.c), built with room for
 * 16,384 ids instead of four million (REC_MAX_BUCKETS, Makefile): filled
 * to the last id, across the table's growths, a new stack then has no
 * bucket (its blocks go untracked) while every stack it has keeps its
 * own, and the last id stays no bucket's (a block header's "untracked").
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "../../src/recorder/rec.h"

#define ROOM 16384u /* as the Makefile builds rec_table_small.o */

/* The synthetic buckets' markers (rec_hooks.c's, not linked here). */
void dmprof_recorder_self(void) {}
void dmprof_glibc_malloc_arena(void) {}
void dmprof_recorder_block_headers(void) {}
void dmprof_python_object_arena(void) {}
void dmprof_python_object_free(void) {}

/* Stack K: three frames, the first one of its own. */
static unsigned stack_of(unsigned k, uintptr_t *f)
{
	f[0] = 0x400000u + 16u * k;
	f[1] = 0x7f0000001234u;
	f[2] = 0x7f0000005678u;
	return 3;
}

Test(rectable, fills_to_the_last_id_then_refuses)
{
	uintptr_t f[3];
	uint32_t first, k, n = 0;
	struct rec_bucket *b;

	cr_assert(rec_table_init());
	first = rec_bucket_count(); /* the markers' */
	cr_assert_eq(first, 5);
	for (k = 0;; k++) {
		unsigned depth = stack_of(k, f);

		b = rec_bucket_get(REC_MALLOC, f, depth);
		if (!b)
			break;
		cr_assert_eq(b->id, first + k, "stack %u: id %u", k, b->id);
		cr_assert_eq(b->depth, depth);
		n++;
	}
	/* Every id but the last one, which means "untracked". */
	cr_assert_eq(first + n, ROOM - 1, "%u stacks, %u markers", n, first);
	cr_assert_eq(rec_bucket_count(), ROOM - 1);
	cr_assert_null(rec_bucket_by_id(ROOM - 1));
	cr_assert_null(rec_bucket_by_id(ROOM));
	/* Full: a new stack again has none, of either kind. */
	stack_of(n + 1, f);
	cr_assert_null(rec_bucket_get(REC_MALLOC, f, 3));
	cr_assert_null(rec_bucket_get(REC_MMAP, f, 3));
	cr_assert_eq(rec_bucket_count(), ROOM - 1);
	/* Those it has are found, by stack and by id, across the growths
	 * (4,096 slots at first, twice as many at each half-full). */
	for (k = 0; k < n; k += 97) {
		stack_of(k, f);
		b = rec_bucket_get(REC_MALLOC, f, 3);
		cr_assert_not_null(b, "stack %u lost", k);
		cr_assert_eq(b->id, first + k);
		cr_assert_eq(rec_bucket_by_id(first + k), b);
		cr_assert_eq(b->frames[0], f[0]);
	}
	/* The same frames as another kind are another stack. */
	stack_of(7, f);
	cr_assert_neq(rec_bucket_get(REC_MALLOC, f, 3), NULL);
	cr_assert_null(rec_bucket_get(REC_MMAP, f, 3));
}
