/* Series discovery. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "series.h"

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
