/*
 * The deep reader's fixed-layout stack lines (deep_fixed.c): each line
 * it takes is one the line-at-a-time fast path reads the same way, it
 * stops at the first line in any other shape, and a dump read through
 * it (its head and, when big, its tail on another thread) has the lines
 * and line numbers the general parser gives.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/read/deep_parse.h"
#include "bucketfile.h"
#include "helpers.h"
#include "profile.h"
#include "util.h"

/* The producer's line. */
#define LINE "%10lld %10lld %6d %6d @ %d\n"
/* Enough after a text for the 48-byte window (another line's start). */
#define PAD "                                                  \n"

/* How deep_fixed_lines reads TEXT (then PAD): lines taken, where it
 * stopped (from TEXT's start). */
static size_t fixed(const char *text, struct stack_line *lines,
		    uint64_t *ids, size_t room, size_t *stop)
{
	char *buf = xasprintf("%s%s", text, PAD);
	const char *end;
	size_t n = deep_fixed_lines(buf, buf + strlen(buf), lines, ids, room,
				    &end);

	*stop = (size_t)(end - buf);
	free(buf);
	return n;
}

/* LINE (one, with its newline) is taken, as deep_fast_stack_line reads
 * it. */
static void taken_as_fast(const char *line)
{
	struct stack_line sl[2], fast;
	uint64_t id[2], fast_id;
	size_t stop, n = fixed(line, sl, id, 2, &stop);
	struct line l = { .p = line, .len = strlen(line) - 1,
			  .newline = true };

	cr_assert_eq(n, 1, "'%s' not taken", line);
	cr_assert_eq(stop, strlen(line));
	cr_assert(deep_fast_stack_line(&l, &fast, &fast_id));
	cr_assert_eq(sl[0].virt, fast.virt, "'%s'", line);
	cr_assert_eq(sl[0].committed, fast.committed, "'%s'", line);
	cr_assert_eq(sl[0].alloc, fast.alloc, "'%s'", line);
	cr_assert_eq(sl[0].free, fast.free, "'%s'", line);
	cr_assert_eq(id[0], fast_id, "'%s'", line);
}

/* LINE is not taken: the run stops at its start. */
static void not_taken(const char *line)
{
	struct stack_line sl[2];
	uint64_t id[2];
	size_t stop;

	cr_assert_eq(fixed(line, sl, id, 2, &stop), 0, "'%s' taken", line);
	cr_assert_eq(stop, 0);
}

Test(deep_fixed, producer_lines)
{
	static const long long v[] = { 0, 1, 9, 10, 4096, 65536, 99999999,
				       123456789, 1234567890, 9999999999 };
	static const int c[] = { 0, 1, 7, 10, 999, 123456, 999999 };
	static const int id[] = { 0, 1, 12, 345, 6789, 98765, 123456,
				  9999999 };
	char line[128];

	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		for (size_t j = 0; j < ARRAY_SIZE(c); j++) {
			snprintf(line, sizeof(line), LINE, v[i],
				 v[ARRAY_SIZE(v) - 1 - i], c[j],
				 c[ARRAY_SIZE(c) - 1 - j],
				 id[(i + j) % ARRAY_SIZE(id)]);
			taken_as_fast(line);
		}
	/* (Leading zeros read as digits, as by the fast path.) */
	taken_as_fast("0000000010 0000000010 000001 000000 @ 0000007\n");
}

Test(deep_fixed, other_shapes_stop)
{
	/* Negative, wider, a field of blanks, blanks inside a field. */
	not_taken("       -10         10      1      0 @ 1\n");
	not_taken("12345678901         10      1      0 @ 1\n");
	not_taken("                   10      1      0 @ 1\n");
	not_taken("     1 000         10      1      0 @ 1\n");
	not_taken("        10         10   1  1      0 @ 1\n");
	not_taken("        10         10      1      0 @ 1 \n");
	/* The id: none, eight digits, not one. */
	not_taken("        10         10      1      0 @ \n");
	not_taken("        10         10      1      0 @ 12345678\n");
	not_taken("        10         10      1      0 @ x\n");
	/* Separators, '@', the end of the line. */
	not_taken("        10\t        10      1      0 @ 1\n");
	not_taken("        10         10      1      0 # 1\n");
	not_taken("        10         10      1      0 @1 \n");
	not_taken("        10         10      1      0 @ 1\r\n");
	not_taken("        10         10      1      0 @ 1");
	not_taken("   virtual  committed\n");
	not_taken("# a comment, long enough for the window to see it\n");
}

Test(deep_fixed, stops_at_room_window_and_odd_line)
{
	const char *two = "        10         10      1      0 @ 1\n"
			  "        20         20      2      0 @ 2\n";
	char *text = xasprintf("%s# x\n%s", two, two);
	struct stack_line sl[8];
	uint64_t id[8];
	size_t stop;
	const char *end;

	/* The odd line stops it, where it starts. */
	cr_assert_eq(fixed(text, sl, id, 8, &stop), 2);
	cr_assert_eq(stop, strlen(two));
	cr_assert_eq(id[1], 2);
	cr_assert_eq(sl[1].committed, 20);
	cr_assert_eq(sl[1].alloc, 2);
	/* So does the room. */
	cr_assert_eq(fixed(text, sl, id, 1, &stop), 1);
	cr_assert_eq(stop, strlen(two) / 2);
	cr_assert_eq(fixed(text, sl, id, 0, &stop), 0);
	cr_assert_eq(stop, 0);
	/* And the end: fewer than 48 bytes left is not looked at. */
	cr_assert_eq(deep_fixed_lines(two, two + strlen(two), sl, id, 8,
				      &end), 1);
	cr_assert_eq(end, two + strlen(two) / 2);
	free(text);
}

/* ---- through the reader ---- */

static struct model m;
static struct read_run run;
static struct snapshot snap;

static void setup(void)
{
	struct strbuf sb = { 0 };

	/* Buckets 1 to 100, the tens mmap ones. */
	for (int i = 1; i <= 100; i++)
		sb_addf(&sb, "%d %s 0x%x\n", i, i % 10 ? "malloc" : "mmap",
			0x1000 + i);
	model_init(&m);
	memset(&run, 0, sizeof(run));
	cr_assert_eq(bucketfile_load(&m, write_file("r.buckets", sb.buf, -1)),
		     0);
	sb_release(&sb);
}

static void teardown(void)
{
	snapshot_release(&snap);
	model_free(&m);
}

TestSuite(deep_fixed, .init = setup, .fini = teardown);

#define HEAD "heap profile: DUMP_DEEP_6\nGLOBAL_STATS:\ntotal 1 2\n" \
	     "STACKTRACES:\n   virtual  committed\n"
/* The line of HEAD's last line. */
#define HEAD_LINES 5

/*
 * A dump of N stack lines, line I of bucket I % 100 + 1 and I bytes,
 * but for ODD[0..NODD): lines written otherwise (a comment, blanks
 * unaligned, a bucket unknown), each of bucket 100 when a stack line.
 * Its path.
 */
static const char *big_dump(size_t n, const size_t *odd, size_t nodd)
{
	struct strbuf sb = { 0 };
	const char *p;

	sb_addstr(&sb, HEAD);
	for (size_t i = 0, k = 0; i < n; i++) {
		if (k < nodd && odd[k] == i) {
			switch (k++ % 3) {
			case 0:
				sb_addstr(&sb, "# a comment\n");
				break;
			case 1:
				sb_addf(&sb, "%zu %zu 1 0 @ 100\n", i, i);
				break;
			default:
				sb_addf(&sb, LINE, (long long)i, (long long)i,
					1, 0, 4242);
				break;
			}
			continue;
		}
		sb_addf(&sb, LINE, (long long)i, (long long)i, 1, 0,
			(int)(i % 100 + 1));
	}
	p = write_file("d.0001.heap", sb.buf, (long)sb.len);
	sb_release(&sb);
	return p;
}

/* The dump of big_dump(N, ODD, NODD) reads right: every stack line in
 * order, with its bucket, and its bucket's key beside it (the index of
 * a malloc bucket, BUCKET_KEY_MMAP, BUCKET_KEY_NONE for none: what
 * summing it reads instead of the bucket). */
static void check_big(size_t n, const size_t *odd, size_t nodd)
{
	size_t at = 0, k = 0, unknown = 0;

	capture_stderr();
	cr_assert_eq(profile_load(&snap, big_dump(n, odd, nodd), &m, &run), 0,
		     "%s", stderr_text());
	cr_assert_not_null(snap.line_index);
	cr_assert_not_null(snap.line_stack);
	for (size_t i = 0; i < n; i++) {
		const struct stack_line *sl = &snap.lines[at];
		uint64_t want = i % 100 + 1;

		if (k < nodd && odd[k] == i) {
			switch (k++ % 3) {
			case 0:
				continue;
			case 1:
				want = 100;
				break;
			default:
				if (!unknown++)
					cr_assert_eq(snap.first_unknown_line,
						     HEAD_LINES + i + 1);
				cr_assert_null(sl->bucket);
				cr_assert_eq(snap.line_index[at],
					     BUCKET_KEY_NONE);
				cr_assert_eq(snap.line_stack[at],
					     BUCKET_KEY_NONE);
				at++;
				continue;
			}
		}
		cr_assert_lt(at, snap.nlines);
		cr_assert_eq(sl->committed, (int64_t)i, "line %zu", i);
		cr_assert_eq(sl->alloc, 1);
		cr_assert_not_null(sl->bucket, "line %zu", i);
		cr_assert_eq(sl->bucket->id, want, "line %zu", i);
		cr_assert_eq(snap.line_index[at],
			     want % 10 ? sl->bucket->index : BUCKET_KEY_MMAP,
			     "line %zu", i);
		cr_assert_eq(snap.line_stack[at], sl->bucket->stack->id,
			     "line %zu", i);
		at++;
	}
	cr_assert_eq(snap.nlines, at);
	cr_assert_eq(snap.nunknown, unknown);
	snapshot_release(&snap);
	memset(&snap, 0, sizeof(snap));
}

Test(deep_fixed, small_dump)
{
	static const size_t odd[] = { 0, 1, 2, 7, 8, 50, 98 };

	check_big(100, odd, ARRAY_SIZE(odd));
	check_big(3, NULL, 0);
}

Test(deep_fixed, big_dump_with_tail)
{
	/* Over a megabyte: its second part read by the tail, odd lines
	 * in both parts and where they meet. */
	static const size_t odd[] = { 5, 6, 7, 1000, 12000, 12001, 12002,
				      12003, 14000, 20000, 29998 };

	check_big(30000, odd, ARRAY_SIZE(odd));
	check_big(30000, NULL, 0);
}

Test(deep_fixed, error_line_numbers)
{
	struct strbuf sb = { 0 };

	sb_addstr(&sb, HEAD);
	for (int i = 0; i < 30000; i++)
		if (i == 25000)
			sb_addf(&sb, "%10d %10d %6d %6d @ x\n", i, i, 1, 0);
		else
			sb_addf(&sb, LINE, (long long)i, (long long)i, 1, 0,
				1);
	capture_stderr();
	cr_assert_eq(profile_load(&snap,
				  write_file("d.0001.heap", sb.buf,
					     (long)sb.len),
				  &m, &run),
		     -1);
	cr_assert(strstr(stderr_text(), "d.0001.heap:25006: invalid number "
					"in stack line"),
		  "%s", stderr_text());
	sb_release(&sb);
}
