/*
 * dmprof csv [-p POLICY] [-b] DUMP...: the timeline as CSV, a row per
 * snapshot, a block per policy, for charting.
 * By default the original's layout: sizes in MiB with 5 decimals, time
 * columns in their unit, blocks padded to the widest policy.  --bytes
 * prints exact byte counts.  Fields that need quoting go through libcsv.
 */
#include <csv.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "setup.h"

static void field(const char *s, bool first)
{
	if (!first)
		putchar(',');
	if (strpbrk(s, ",\"\r\n") || (*s && (s[0] == ' ' ||
					     s[strlen(s) - 1] == ' ')))
		csv_fwrite(stdout, s, strlen(s));
	else
		fputs(s, stdout);
}

static void pad(size_t n)
{
	while (n--)
		putchar(',');
}

static int csv_out(const struct timeline *tl, bool bytes)
{
	size_t max = 0;
	char buf[64];

	for (size_t p = 0; p < tl->set.n; p++)
		if (tl->set.v[p]->ncols > max)
			max = tl->set.v[p]->ncols;
	for (size_t p = 0; p < tl->set.n; p++) {
		const struct policy *pol = tl->set.v[p];

		if (tl->set.n > 1) {
			field(pol->label, true);
			pad(max - 1);
			putchar('\n');
		}
		for (size_t c = 0; c < pol->ncols; c++)
			field(pol->cols[c].name, c == 0);
		pad(max - pol->ncols);
		putchar('\n');
		for (size_t i = 0; i < tl->n; i++) {
			const int64_t *row = tl->rows[p] + i * pol->ncols;

			for (size_t c = 0; c < pol->ncols; c++) {
				const struct column *col = &pol->cols[c];

				if (builtin_is_time(col->builtin))
					snprintf(buf, sizeof(buf), "%.5f",
						 timeline_time_value(
							 tl, i, col->builtin));
				else if (bytes)
					snprintf(buf, sizeof(buf), "%" PRId64,
						 row[c]);
				else
					snprintf(buf, sizeof(buf), "%.5f",
						 row[c] / 1048576.0);
				field(buf, c == 0);
			}
			pad(max - pol->ncols);
			putchar('\n');
		}
	}
	return 0;
}

static int run(struct cmd_args *a)
{
	return setup_timeline(a, csv_out);
}

static const struct cmd_option options[] = {
	OPTION_POLICIES,
	{ 'b', "bytes", NULL, OPT_SYNOPSIS, "exact bytes instead of MiB" },
	OPT_END,
};

static const char *const usage[] = { "DUMP [DUMP...]", NULL };

const struct cmd_entry cmd_csv = {
	"csv", "print the timeline as CSV, a row per snapshot", usage,
	options, CMD_READS_DUMPS, NULL, run,
};
