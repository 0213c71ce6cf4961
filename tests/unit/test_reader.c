/* What every reader shares (reader.h): where it is, said. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "reader.h"

Test(reader, error_names_file_line_and_column)
{
	struct reader_pos pos = { .path = "d/p.0001.heap" };

	capture_stderr();
	cr_assert_eq(read_error(&pos, "empty %s", "dump"), -1);
	pos.line = 12;
	read_error(&pos, "bad word '%s'", read_quote(&pos, "a\tb", 3));
	pos.col = 7;
	read_error(&pos, "bad token");
	cr_assert_str_eq(stderr_text(),
			 "dmprof: d/p.0001.heap: empty dump\n"
			 "dmprof: d/p.0001.heap:12: bad word 'a\\x09b'\n"
			 "dmprof: d/p.0001.heap:12:7: bad token\n");
	read_pos_release(&pos);
}

Test(reader, quiet_says_nothing)
{
	struct reader_pos pos = { .path = "p.pb", .line = 3, .quiet = true };

	capture_stderr();
	cr_assert_eq(read_error(&pos, "not said"), -1);
	cr_assert_str_eq(stderr_text(), "");
}

Test(reader, a_sample_without_allocation_counts_counts_blocks_in_use)
{
	struct snapshot snap;
	struct sample_counts in_use = { 3, 4096, false, 0, 0 };
	struct sample_counts both = { 3, 4096, true, 10, 9000 };
	const struct stack_line *a, *b;

	snapshot_init(&snap, "p.0001.heap");
	a = read_add_sample(&snap, NULL, &in_use);
	cr_assert_eq(a->virt, 4096);
	cr_assert_eq(a->committed, 4096);
	cr_assert_eq(a->alloc, 3);
	cr_assert_eq(a->free, 0);
	b = read_add_sample(&snap, NULL, &both);
	cr_assert_eq(b->alloc, 10);
	cr_assert_eq(b->free, 7);
	cr_assert_eq(b->alloc_bytes, 9000);
	cr_assert_eq(snap.nlines, 2);
	snapshot_release(&snap);
}

/* Samples 0 and 2 share a stack; FAIL_AT says no. */
struct three {
	uint64_t frames[2][2];
	size_t fail_at;
};

static int three_sample(void *ctx, size_t i, struct read_sample *out)
{
	struct three *t = ctx;

	if (i == t->fail_at)
		return -1;
	out->frames = t->frames[i % 2];
	out->depth = 2;
	out->line = i + 1;
	out->c = (struct sample_counts){ 1, (int64_t)(i + 1) * 100, false,
					 0, 0 };
	return 0;
}

Test(reader, samples_are_lines_of_their_stacks_buckets)
{
	struct three t = { { { 0x401000, 0x402000 }, { 0x403000, 0 } }, 9 };
	struct snapshot snap;
	struct model m;
	int64_t total;

	model_init(&m);
	snapshot_init(&snap, "p.pb");
	cr_assert_eq(read_samples(&snap, &m, "p.pb", 3, three_sample, &t,
				  &total), 0);
	cr_assert_eq(snap.nlines, 3);
	cr_assert_eq(total, 600);
	cr_assert_eq(snap.lines[0].bucket, snap.lines[2].bucket);
	cr_assert_neq(snap.lines[0].bucket, snap.lines[1].bucket);
	cr_assert_null(model_bucket_place(&m, snap.lines[1].bucket).source);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC);
	snapshot_release(&snap);
	t.fail_at = 1;
	snapshot_init(&snap, "p.pb");
	cr_assert_eq(read_samples(&snap, &m, "p.pb", 3, three_sample, &t,
				  &total), -1);
	snapshot_release(&snap);
	model_free(&m);
}

Test(reader, a_finished_profile_says_what_it_counts)
{
	struct snapshot snap;

	snapshot_init(&snap, "p.0001.heap");
	read_finish_profile(&snap, 4096, 100, true, false);
	cr_assert_not_null(snap.lines);
	cr_assert_not(snap.counts_unknown);
	cr_assert_not(snap.has_alloc_bytes);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].virt, 100);
	/* The profile's own sum, not a process total: not present. */
	cr_assert_eq(snap.gs.row[GS_TOTAL].committed, 4196);
	cr_assert_not(snap.gs.present & (1u << GS_TOTAL));
	snapshot_release(&snap);
}

Test(reader, warnings_are_said_once_a_run)
{
	struct read_run a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	cr_assert(read_warn_first(&a, READ_WARNED_PROFILE));
	cr_assert_not(read_warn_first(&a, READ_WARNED_PROFILE));
	cr_assert(read_warn_first(&a, READ_WARNED_GSTATS));
	/* Another run has said nothing yet. */
	cr_assert(read_warn_first(&b, READ_WARNED_PROFILE));
}
