/* Series discovery. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "series.h"
#include "util.h"

Test(series, split)
{
	char *prefix;
	unsigned long n;

	cr_assert(series_split("d/heap.01234.0001.heap", &prefix, &n));
	cr_assert_str_eq(prefix, "d/heap.01234");
	cr_assert_eq(n, 1);
	free(prefix);
	cr_assert(series_split("prof.10000.heap", &prefix, &n));
	cr_assert_str_eq(prefix, "prof");
	cr_assert_eq(n, 10000);
	free(prefix);
	cr_assert_not(series_split("prof.heap", &prefix, &n));
	cr_assert_not(series_split("prof.0001.heapx", &prefix, &n));
	cr_assert_not(series_split(".0001.heap", &prefix, &n));
	cr_assert_not(series_split("d/.0001.heap", &prefix, &n));
}

Test(series, discover_numeric_order_and_gaps)
{
	struct series s;
	char first[600];

	write_file("p.0001.heap", "x", -1);
	write_file("p.0002.heap", "x", -1);
	write_file("p.0009.heap", "x", -1);
	write_file("p.10000.heap", "x", -1);
	write_file("p.9999.heap", "x", -1);
	write_file("p_77.0003.heap", "x", -1);   /* a child: other prefix */
	write_file("p.1.2.heap", "x", -1);       /* not this run */
	write_file("p.0000.buckets", "", -1);
	write_file("p.0002.buckets", "", -1);
	snprintf(first, sizeof(first), "%s/p.0002.heap", tmpdir());
	cr_assert_eq(series_discover(&s, first, true), 0);
	cr_assert_eq(s.ndumps, 4);
	cr_assert_str_eq(s.dumps[0].path, first);
	cr_assert_eq(s.dumps[1].counter, 9);
	cr_assert_eq(s.dumps[2].counter, 9999);
	cr_assert_eq(s.dumps[3].counter, 10000);
	cr_assert_eq(s.nbuckets, 2);
	cr_assert_eq(s.buckets[0].counter, 0);
	series_free(&s);
	cr_assert_eq(series_discover(&s, first, false), 0);
	cr_assert_eq(s.ndumps, 1);
	series_free(&s);
}

Test(series, of_given_dumps_sorted_once_each)
{
	struct series s;
	char a[600], b[600], c[600], d[600];
	const char *dumps[4] = { a, b, c, d };

	write_file("q.0003.heap", "x", -1);
	write_file("q.0001.heap", "x", -1);
	write_file("q.1.heap", "x", -1);
	write_file("q.0007.heap", "x", -1);  /* not given: not in */
	write_file("q.0001.buckets", "", -1);
	snprintf(a, sizeof(a), "%s/q.0003.heap", tmpdir());
	snprintf(b, sizeof(b), "%s/q.0001.heap", tmpdir());
	snprintf(c, sizeof(c), "%s/q.1.heap", tmpdir());
	snprintf(d, sizeof(d), "%s/q.0001.heap", tmpdir());
	capture_stderr();
	cr_assert_eq(series_of(&s, dumps, 4), 0);
	cr_assert_eq(s.ndumps, 2);
	cr_assert_str_eq(s.dumps[0].path, b);
	cr_assert_str_eq(s.dumps[1].path, a);
	cr_assert_eq(s.first, 1);
	cr_assert_eq(s.nbuckets, 1);
	/* "q.1" is another spelling of 1: said; the same path twice: not. */
	cr_assert(strstr(stderr_text(), "q.1.heap: same number as "),
		  "%s", stderr_text());
	cr_assert_null(strstr(stderr_text(), "q.0001.heap: same number"));
	series_free(&s);
}

Test(series, of_dumps_of_two_runs_is_an_error)
{
	struct series s;
	const char *dumps[2] = { "r.0001.heap", "other.0002.heap" };

	capture_stderr();
	cr_assert_eq(series_of(&s, dumps, 2), -1);
	cr_assert(strstr(stderr_text(), "other.0002.heap: not a dump of the "
					"run of r.0001.heap"),
		  "%s", stderr_text());
}

Test(series, group_by_run_in_order_of_appearance)
{
	const char *dumps[] = { "d/a.00001.0002.heap", "d/a.00002.0001.heap",
				"d/a.00001.0001.heap", "lone.heap",
				"d/a.00002.0003.heap" };
	struct series_group *g;
	size_t n;

	series_group(dumps, ARRAY_SIZE(dumps), &g, &n);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(g[0].prefix, "d/a.00001");
	cr_assert_eq(g[0].n, 2);
	cr_assert_str_eq(g[0].dumps[0], "d/a.00001.0002.heap");
	cr_assert_str_eq(g[0].dumps[1], "d/a.00001.0001.heap");
	cr_assert_str_eq(g[1].prefix, "d/a.00002");
	cr_assert_eq(g[1].n, 2);
	cr_assert_str_eq(g[2].prefix, "lone.heap");
	cr_assert_eq(g[2].n, 1);
	series_groups_free(g, n);
}

Test(series, one_process_of_a_recorded_run)
{
	struct series s;
	char mine[600];
	size_t others = 99;

	write_file("rec.01234.0001.heap", "x", -1);
	write_file("rec.01234.0010.heap", "x", -1);
	write_file("rec.01234.0002.heap", "x", -1);
	write_file("rec.01234.0003.heap.tmp", "x", -1); /* not a dump */
	write_file("rec.01234.0001.buckets", "", -1);
	write_file("rec.1234.0004.heap", "x", -1);      /* another spelling */
	write_file("rec.00077.0001.heap", "x", -1);     /* a child's */
	write_file("rec.00077.0002.heap", "x", -1);
	write_file("rec.0001.heap", "x", -1);           /* no pid: not */
	write_file("record.01234.0001.heap", "x", -1);  /* another run */
	snprintf(mine, sizeof(mine), "%s/rec.01234", tmpdir());
	cr_assert_eq(series_process(&s, mine, &others), 0);
	cr_assert_str_eq(s.prefix, mine);
	cr_assert_eq(s.ndumps, 3);
	cr_assert_eq(s.first, 1);
	cr_assert_eq(s.dumps[1].counter, 2);
	cr_assert_eq(s.dumps[2].counter, 10);
	cr_assert(ends_with(s.dumps[2].path, "/rec.01234.0010.heap"));
	cr_assert_eq(s.nbuckets, 0);
	cr_assert_eq(others, 3);
	series_free(&s);
	snprintf(mine, sizeof(mine), "%s/rec.00555", tmpdir());
	cr_assert_eq(series_process(&s, mine, &others), 0);
	cr_assert_eq(s.ndumps, 0);
	cr_assert_eq(s.first, 0);
	cr_assert_eq(others, 6);
	series_free(&s);
}

/* What follows the counter is the readers' table's to say. */
Test(series, names_the_readers_give_their_dumps)
{
	static const struct {
		const char *path, *prefix;
		unsigned long n;
	} ok[] = {
		{ "d/jeprof.123.4.i2.heap", "d/jeprof.123", 4 },
		{ "jeprof.123.17.f.heap", "jeprof.123", 17 },
		{ "jeprof.123.5.u0.heap", "jeprof.123", 5 },
		{ "p.0003.pb.gz", "p", 3 },
		{ "p.12.pb", "p", 12 },
		{ "mem.0002.pprof.gz", "mem", 2 },
		{ "mem.0002.prof", "mem", 2 },
	};
	static const char *const not[] = {
		"p.0003.txt", "jeprof.123.4.x2.heap", "jeprof.123.4.f1.heap",
		"p.0003.gz", "dhat.out.1234",
	};
	char *prefix;
	unsigned long n;

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		cr_assert(series_split(ok[i].path, &prefix, &n), "%s",
			  ok[i].path);
		cr_assert_str_eq(prefix, ok[i].prefix);
		cr_assert_eq(n, ok[i].n, "%s", ok[i].path);
		free(prefix);
	}
	for (size_t i = 0; i < sizeof(not) / sizeof(*not); i++)
		cr_assert_not(series_split(not[i], &prefix, &n), "%s", not[i]);
}

Test(series, discover_jemalloc_kinds_beside_plain_counters)
{
	/* The last two are not of the run: no kind of jemalloc's, and
	 * another format's suffix. */
	static const char *const names[] = {
		"jeprof.9.0.i0.heap", "jeprof.9.1.i1.heap", "jeprof.9.2.m0.heap",
		"jeprof.9.3.heap",    "jeprof.9.4.f.heap",  "jeprof.9.5.x5.heap",
		"jeprof.9.6.pb",
	};
	struct series s;
	char first[600];

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		write_file(names[i], "x", -1);
	snprintf(first, sizeof(first), "%s/jeprof.9.0.i0.heap", tmpdir());
	cr_assert_eq(series_discover(&s, first, true), 0);
	cr_assert_eq(s.ndumps, 5);
	cr_assert_eq(s.dumps[4].counter, 4);
	series_free(&s);
}
