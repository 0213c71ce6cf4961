/* .buckets files into the model. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "bucketfile.h"
#include "model.h"
#include "util.h"

static struct model m;

static void setup(void)
{
	model_init(&m);
}

static void teardown(void)
{
	model_free(&m);
}

TestSuite(buckets, .init = setup, .fini = teardown);

Test(buckets, all_forms)
{
	const char *p = write_file("a.buckets",
		"4 mmap t0x0 nno_typeinfo 0x7f6306ff0571 0x7f630c5d52da\n"
		"2 malloc t0x7f630ff7e718 nN7WebCore8RuleDataE 0x7f630b0e1c3c\n"
		"\n"
		"9 malloc 0x10 0x20 0x10\n"
		"10 malloc\n", -1);
	struct bucket *b;

	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_eq(m.buckets.n, 4);
	b = bucket_set_find(&m.buckets, 4);
	cr_assert_eq(b->kind, ALLOC_MMAP);
	cr_assert(b->type && b->type->has_typeinfo);
	cr_assert_eq(bucket_typeinfo(b), 0);
	cr_assert_str_eq(bucket_type_name(b), "no_typeinfo");
	cr_assert_eq(b->stack->depth, 2);
	cr_assert_eq(frame_get(&m.frames, b->stack->frames[1])->addr,
		     0x7f630c5d52daULL);
	b = bucket_set_find(&m.buckets, 2);
	cr_assert_eq(bucket_typeinfo(b), 0x7f630ff7e718ULL);
	cr_assert_str_eq(bucket_type_name(b), "N7WebCore8RuleDataE");
	b = bucket_set_find(&m.buckets, 9);
	cr_assert_null(b->type);
	cr_assert_str_eq(bucket_type_name(b), "");
	/* Frames and stacks are interned: 0x10 twice is one frame. */
	cr_assert_eq(b->stack->frames[0], b->stack->frames[2]);
	cr_assert_eq(bucket_set_find(&m.buckets, 10)->stack->depth, 0);
	cr_assert_null(bucket_set_find(&m.buckets, 3));
}

Test(buckets, same_stack_shares_one)
{
	const char *p = write_file("s.buckets", "1 malloc 0x1 0x2\n"
						"2 malloc 0x1 0x2\n"
						"3 mmap 0x1 0x2\n", -1);

	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_eq(m.stacks.n, 1);
	cr_assert_eq(m.frames.n, 2);
	cr_assert_eq(bucket_set_find(&m.buckets, 1)->stack,
		     bucket_set_find(&m.buckets, 3)->stack);
}

Test(buckets, redefinition_later_wins)
{
	const char *a = write_file("r1.buckets", "1 malloc 0x1\n", -1);
	const char *b = write_file("r2.buckets", "1 malloc 0x1\n"
						 "1 mmap 0x2\n", -1);

	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, a), 0);
	cr_assert_eq(bucketfile_load(&m, b), 0);
	cr_assert_eq(m.buckets.n, 1);
	cr_assert_eq(bucket_set_find(&m.buckets, 1)->kind, ALLOC_MMAP);
	/* The same definition again is quiet; a different one is not. */
	cr_assert(strstr(stderr_text(), "r2.buckets:2: bucket 1 redefined "
					"(previously at "));
	/* (Where the model kept it: the last definition's place.) */
	cr_assert(strstr(stderr_text(), "r2.buckets:1); using the later"),
		  "%s", stderr_text());
	cr_assert_null(strstr(stderr_text(), "r2.buckets:1: "));
}

/* A bucket's note (what a stack line keeps of it: its key, its stack)
 * follows its kind and stack through a redefinition, in the table of
 * ids as out of it. */
Test(buckets, note_follows_a_redefinition)
{
	const char *p = write_file("k.buckets", "5 malloc 0x1\n"
						"0 mmap 0x2\n"
						"5 mmap 0x3\n"
						"0 malloc 0x4\n", -1);
	struct bucket_note n;

	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_not(m.buckets.by_index);
	cr_assert_not_null(bucket_set_find_note(&m.buckets, 5, &n));
	cr_assert_eq(n.key, BUCKET_KEY_MMAP);
	cr_assert_eq(n.stack, bucket_set_find(&m.buckets, 5)->stack->id);
	cr_assert_eq(frame_get(&m.frames, m.stacks.v[n.stack]->frames[0])->addr,
		     0x3);
	cr_assert_not_null(bucket_set_find_note(&m.buckets, 0, &n));
	cr_assert_eq(n.key, bucket_set_find(&m.buckets, 0)->index);
	cr_assert_eq(frame_get(&m.frames, m.stacks.v[n.stack]->frames[0])->addr,
		     0x4);
	cr_assert_null(bucket_set_find_note(&m.buckets, 9, &n));
	cr_assert_eq(n.key, BUCKET_KEY_NONE);
	cr_assert_eq(n.stack, BUCKET_KEY_NONE);
}

static void expect_error(const char *content, const char *msg);

/*
 * Frames of every width (1 to 16 digits, either case), runs of one
 * width and widths that change at every frame, blanks of one space or
 * more, a tab: each bucket's frames what a digit-at-a-time reading
 * gives.  (The reader guesses where the next frame is from the width of
 * the last one.)
 */
Test(buckets, frames_of_any_width_and_blank)
{
	enum { LINES = 3000, MAXD = 40 };
	struct strbuf sb = STRBUF_INIT;
	static uint64_t want[LINES][MAXD];
	static uint32_t depth[LINES];
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < LINES; i++) {
		depth[i] = (uint32_t)(seed % MAXD);
		sb_addf(&sb, "%d %s", i + 1, i % 7 ? "malloc" : "mmap");
		frames_text(&sb, &seed, depth[i], i % 2, want[i]);
		sb_addstr(&sb, i % 5 == 0 ? " \n" : "\n");
	}
	cr_assert_eq(bucketfile_load(&m, write_file("w.buckets", sb.buf,
						    (long)sb.len)),
		     0);
	sb_release(&sb);
	for (int i = 0; i < LINES; i++) {
		const struct bucket *b = bucket_set_find(&m.buckets,
							 (uint64_t)i + 1);

		cr_assert_not_null(b, "bucket %d", i + 1);
		cr_assert_eq(b->stack->depth, depth[i], "bucket %d", i + 1);
		for (uint32_t k = 0; k < depth[i]; k++)
			cr_assert_eq(frame_get(&m.frames,
					       b->stack->frames[k])->addr,
				     want[i][k], "bucket %d frame %u", i + 1,
				     k);
	}
}

/* Seventeen digits after frames of a width the reader guessed. */
Test(buckets, too_many_digits_after_a_run)
{
	expect_error("1 malloc 0x123456789abc 0x123456789abc 0x123456789abc "
		     "0x123456789abc0ffff 0x1\n",
		     "bad.buckets:1: out-of-range frame address "
		     "'0x123456789abc0ffff'");
	expect_error("1 malloc 0x123456789abc 0x123456789abc 0x123456789abc "
		     "0x12345678z 0x1\n",
		     "bad.buckets:1: invalid frame address '0x12345678z'");
}

static void expect_error(const char *content, const char *msg)
{
	const char *p = write_file("bad.buckets", content, -1);

	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, p), -1, "accepted %s", content);
	cr_assert(strstr(stderr_text(), msg), "stderr: %s", stderr_text());
}

Test(buckets, errors)
{
	expect_error("x malloc 0x1\n", "bad.buckets:1: invalid bucket id 'x'");
	expect_error("1 malloc 0x1\n99999999999999999999 malloc\n",
		     "bad.buckets:2: out-of-range bucket id");
	expect_error("1 calloc 0x1\n", "unknown allocator 'calloc'");
	expect_error("1\n", "bucket 1 has no allocator");
	expect_error("1 malloc 0x1 zz\n", "invalid frame address 'zz'");
	expect_error("1 malloc 0x1 t0x5\n", "invalid frame address 't0x5'");
	expect_error("1 malloc 0x10000000000000000\n",
		     "out-of-range frame address");
	expect_error("1 malloc tq 0x1\n", "invalid typeinfo 'tq'");
}

Test(buckets, nul_byte)
{
	const char *p = write_file("nul.buckets", "1 malloc 0x1\0 0x2\n", 18);

	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, p), -1);
	cr_assert(strstr(stderr_text(), "nul.buckets:1: NUL byte"));
}

Test(buckets, truncated_last_line_skipped)
{
	const char *p = write_file("t.buckets", "1 malloc 0x1\n2 malloc 0x", -1);

	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_eq(m.buckets.n, 1);
	cr_assert(strstr(stderr_text(), "t.buckets:2: last line has no "
					"newline (file truncated?); skipped"));
}

Test(buckets, crlf)
{
	const char *p = write_file("c.buckets", "1 malloc 0x1 0x2\r\n", -1);

	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_eq(bucket_set_find(&m.buckets, 1)->stack->depth, 2);
}

Test(buckets, missing_file)
{
	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, "/nonexistent.buckets"), -1);
	cr_assert(strstr(stderr_text(), "/nonexistent.buckets: No such file"));
}

Test(buckets, small_and_large_ids)
{
	const char *p = write_file("ids.buckets", "5 malloc 0x1\n"
						  "1099511627776 malloc 0x2\n"
						  "67108863 mmap 0x3\n"
						  "3 malloc 0x4\n"
						  "18446744073709551615 malloc\n",
				   -1);

	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_eq(m.buckets.n, 5);
	cr_assert_eq(bucket_set_find(&m.buckets, 5)->stack->depth, 1);
	cr_assert_eq(bucket_set_find(&m.buckets, 3)->id, 3);
	cr_assert_eq(bucket_set_find(&m.buckets, 1099511627776ULL)->id,
		     1099511627776ULL);
	cr_assert_eq(bucket_set_find(&m.buckets, 67108863)->kind, ALLOC_MMAP);
	cr_assert_not_null(bucket_set_find(&m.buckets, UINT64_MAX));
	cr_assert_null(bucket_set_find(&m.buckets, 4));
	cr_assert_null(bucket_set_find(&m.buckets, 67108862));
	/* The one large id did not size the table. */
	cr_assert_lt(m.buckets.ndense, 1u << 20);
}

/* Files of many batches, an empty one, in order: later files win. */
Test(buckets, load_many)
{
	struct strbuf a = STRBUF_INIT;
	const char *paths[3];
	size_t loaded = 0;

	for (unsigned i = 0; i < 100000; i++)
		sb_addf(&a, "%u malloc 0x%x 0x%x\n", i, i % 977, i % 13);
	paths[0] = write_file("m1.buckets", a.buf, (long)a.len);
	paths[1] = write_file("m2.buckets", "", 0);
	paths[2] = write_file("m3.buckets", "7 mmap 0x5\n", -1);
	capture_stderr();
	cr_assert_eq(bucketfile_load_many(&m, paths, 3, &loaded), 0);
	cr_assert_eq(loaded, 2);
	cr_assert_eq(m.buckets.n, 100000);
	cr_assert_eq(bucket_set_find(&m.buckets, 99999)->stack->depth, 2);
	cr_assert_eq(frame_get(&m.frames,
			       bucket_set_find(&m.buckets, 99999)->stack->frames[0])
			     ->addr,
		     99999 % 977);
	cr_assert_eq(bucket_set_find(&m.buckets, 7)->kind, ALLOC_MMAP);
	cr_assert(strstr(stderr_text(), "m3.buckets:1: bucket 7 redefined"));
	sb_release(&a);
}

/* No files (a run of heap profiles): nothing loaded, nothing said, the
 * model as it was. */
Test(buckets, load_none)
{
	size_t loaded = 7;

	capture_stderr();
	cr_assert_eq(bucketfile_load_many(&m, NULL, 0, &loaded), 0);
	cr_assert_eq(loaded, 0);
	cr_assert_eq(m.buckets.n, 0);
	cr_assert_str_eq(stderr_text(), "");
	cr_assert_eq(bucketfile_load_many(&m, NULL, 0, NULL), 0);
}

/* An error stops the load; what the files said before it comes first. */
Test(buckets, load_many_messages_in_order)
{
	const char *paths[3];

	paths[0] = write_file("o1.buckets", "1 malloc 0x1\n2 malloc 0x", -1);
	paths[1] = write_file("o2.buckets", "3 malloc 0x1\nbad\n", -1);
	paths[2] = write_file("o3.buckets", "4 malloc 0x1\n", -1);
	capture_stderr();
	cr_assert_eq(bucketfile_load_many(&m, paths, 3, NULL), -1);
	const char *t = stderr_text();
	const char *w = strstr(t, "o1.buckets:2: last line has no newline");
	const char *e = strstr(t, "o2.buckets:2: invalid bucket id 'bad'");

	cr_assert(w && e && w < e, "stderr: %s", t);
	cr_assert_null(strstr(t, "o3.buckets"));
	cr_assert_null(bucket_set_find(&m.buckets, 4));
}

/*
 * What the reading thread says (a cut line, a bad one) and what defining
 * says (a redefinition) come in file order, the same on one thread as
 * on two.
 */
static const char *said_on(const char *threads)
{
	static char out[2][1024];
	static int k;
	const char *paths[2];
	struct model mm;

	setenv("DMPROF_THREADS", threads, 1);
	paths[0] = write_file("t1.buckets",
			      "1 malloc 0x1\n1 malloc 0x2\n2 malloc 0x", -1);
	paths[1] = write_file("t2.buckets", "3 malloc 0x1\nbad\n", -1);
	model_init(&mm);
	capture_stderr();
	cr_assert_eq(bucketfile_load_many(&mm, paths, 2, NULL), -1);
	snprintf(out[k % 2], sizeof(out[0]), "%s", stderr_text());
	model_free(&mm);
	return out[k++ % 2];
}

Test(buckets, messages_in_order_on_one_thread_or_two)
{
	const char *one = said_on("1"), *two = said_on("2");
	const char *r = strstr(one, "t1.buckets:2: bucket 1 redefined");
	const char *w = strstr(one, "t1.buckets:3: last line has no newline");
	const char *e = strstr(one, "t2.buckets:2: invalid bucket id 'bad'");

	cr_assert(r && w && e && r < w && w < e, "stderr: %s", one);
	cr_assert_str_eq(one, two);
}

/*
 * Buckets numbered 1, 2, ... in order are found without a table; the
 * first one numbered otherwise puts them all in the tables.
 */
Test(buckets, numbered_in_order_then_not)
{
	uint64_t frame = 0x10;

	for (uint64_t id = 1; id <= 3; id++)
		cr_assert_not_null(model_define_bucket(&m, id, ALLOC_MALLOC,
						       false, 0, "", &frame, 1,
						       "x", id));
	cr_assert(m.buckets.by_index);
	cr_assert_eq(bucket_set_find(&m.buckets, 2)->index, 1);
	cr_assert_null(bucket_set_find(&m.buckets, 0));
	cr_assert_null(bucket_set_find(&m.buckets, 4));
	cr_assert_not_null(model_define_bucket(&m, 1ULL << 40, ALLOC_MMAP, false,
					       0, "", &frame, 1, "x", 4));
	cr_assert_not_null(model_define_bucket(&m, 7, ALLOC_MALLOC, false, 0,
					       "", &frame, 1, "x", 5));
	cr_assert_not(m.buckets.by_index);
	for (uint64_t id = 1; id <= 3; id++)
		cr_assert_eq(bucket_set_find(&m.buckets, id)->index, id - 1);
	cr_assert_eq(bucket_set_find(&m.buckets, 1ULL << 40)->index, 3);
	cr_assert_eq(bucket_set_find(&m.buckets, 7)->index, 4);
	cr_assert_null(bucket_set_find(&m.buckets, 4));
	cr_assert_null(bucket_set_find(&m.buckets, 5));
}

/* The frames of bucket ID, as addresses, in *N of them. */
static const uint64_t *stack_of(uint64_t id, uint32_t *n)
{
	static uint64_t a[16];
	const struct stack *st = bucket_set_find(&m.buckets, id)->stack;

	cr_assert_leq(st->depth, 16);
	for (uint32_t i = 0; i < st->depth; i++)
		a[i] = frame_get(&m.frames, st->frames[i])->addr;
	*n = st->depth;
	return a;
}

static void expect_stack(uint64_t id, const uint64_t *want, uint32_t n)
{
	uint32_t got_n;
	const uint64_t *got = stack_of(id, &got_n);

	cr_assert_eq(got_n, n, "bucket %" PRIu64 ": %u frames", id, got_n);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(got[i], want[i], "bucket %" PRIu64 " frame %u",
			     id, i);
}

/* "=N": the last N frames of the bucket line before, past blank lines
 * and frames' names, whatever its kind. */
Test(buckets, frames_of_the_line_before)
{
	const char *p = write_file("eq.buckets",
		"1 malloc 0x1 0x2 0x3\n"
		"2 malloc 0x9 =2\n"
		"\n"
		"frame 0x7\tf\tf.py\t3\n"
		"3 mmap =3\n"
		"4 malloc t0x5 nT 0x8 0x9 =1\n"
		"5 malloc 0x6 =3\n", -1);

	capture_stderr();
	cr_assert_eq(bucketfile_load(&m, p), 0, "stderr: %s", stderr_text());
	expect_stack(2, (uint64_t[]){ 0x9, 0x2, 0x3 }, 3);
	expect_stack(3, (uint64_t[]){ 0x9, 0x2, 0x3 }, 3);
	expect_stack(4, (uint64_t[]){ 0x8, 0x9, 0x3 }, 3);
	cr_assert_str_eq(bucket_type_name(bucket_set_find(&m.buckets, 4)),
			 "T");
	expect_stack(5, (uint64_t[]){ 0x6, 0x8, 0x9, 0x3 }, 4);
	/* Shared frames are the same frames, the same stack. */
	cr_assert_eq(bucket_set_find(&m.buckets, 2)->stack,
		     bucket_set_find(&m.buckets, 3)->stack);
}

/* The line before in another batch (16,384 lines each), handed over to
 * be defined while the next is read. */
Test(buckets, frames_of_a_line_in_the_batch_before)
{
	struct strbuf a = STRBUF_INIT;
	const char *p;

	sb_addf(&a, "0 malloc 0x1 0x2 0x3\n");
	for (unsigned i = 1; i < 40000; i++)
		sb_addf(&a, "%u malloc 0x%x =3\n", i, i + 100);
	p = write_file("eqmany.buckets", a.buf, (long)a.len);
	cr_assert_eq(bucketfile_load(&m, p), 0);
	cr_assert_eq(m.buckets.n, 40000);
	for (unsigned i = 16380; i < 40000; i += i < 16400 ? 1 : 997)
		expect_stack(i, (uint64_t[]){ i + 100, 0x1, 0x2, 0x3 }, 4);
	sb_release(&a);
}

Test(buckets, frames_of_the_line_before_errors)
{
	expect_error("1 malloc 0x1 =1\n",
		     "bad.buckets:1: '=1' with no bucket line before it");
	expect_error("1 malloc 0x1\n2 malloc 0x2 =2\n",
		     "bad.buckets:2: '=2' asks for more frames than the line "
		     "before has (1)");
	expect_error("1 malloc 0x1\n2 malloc =1 0x5\n",
		     "bad.buckets:2: '0x5' after =N, which ends the line");
	expect_error("1 malloc 0x1\n2 malloc =0\n", "invalid '=0'");
	expect_error("1 malloc 0x1\n2 malloc =x\n", "invalid '=x'");
	expect_error("1 malloc 0x1\n2 malloc =\n", "invalid '='");
	expect_error("1 malloc 0x1\n2 malloc 0x1 =99999999999999999999\n",
		     "invalid '=99999999999999999999'");
}

/* A dump's BUCKETS section, or a file, starts with no line before: the
 * line before is never in another dump. */
Test(buckets, frames_of_the_line_before_not_across_dumps)
{
	const char *paths[2];
	struct dump_maps maps = { STRBUF_INIT, NULL, 0 };

	paths[0] = write_file("d.0001.heap",
			      "heap profile: DUMP_DEEP_6\nBUCKETS:\n"
			      "1 malloc 0x1 0x2\n2 malloc 0x3 =1\n"
			      "STACKTRACES:\n", -1);
	paths[1] = write_file("d.0002.heap",
			      "heap profile: DUMP_DEEP_6\nBUCKETS:\n"
			      "3 malloc 0x4 =1\nSTACKTRACES:\n", -1);
	capture_stderr();
	cr_assert_eq(bucketfile_load_dumps(&m, paths, 1, NULL, &maps), 0);
	expect_stack(2, (uint64_t[]){ 0x3, 0x2 }, 2);
	cr_assert_eq(bucketfile_load_dumps(&m, paths, 2, NULL, &maps), -1);
	cr_assert(strstr(stderr_text(), "d.0002.heap:3: '=1' with no bucket "
					"line before it"),
		  "stderr: %s", stderr_text());
	dump_maps_release(&maps);
}
