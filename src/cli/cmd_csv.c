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

enum {
	OPT_LONG = OPT_LONG_ONLY,
};

static const char *const usage[] = { "DUMP [DUMP...]", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICIES,
	{ .key = 'b', .name = "bytes", .flags = OPT_SYNOPSIS,
	  .help = "exact bytes instead of MiB" },
	{ .key = OPT_LONG, .name = "long", .flags = OPT_SYNOPSIS,
	  .help = "a row per run, pid, snapshot, time, policy, "
		  "component, bytes: every run named on its own" },
	OPT_END,
};

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

/* The run's pid, from its dumps' names: P.PID (deep dumps, the
 * recorder's) or P_PID (a gperftools child); "" when they have none. */
static void pid_of(const char *prefix, char *out, size_t size)
{
	const char *end = prefix + strlen(prefix), *p = end;

	while (p > prefix && p[-1] >= '0' && p[-1] <= '9')
		p--;
	*out = '\0';
	if (p == end || p == prefix || (p[-1] != '.' && p[-1] != '_'))
		return;
	while (p + 1 < end && *p == '0') /* (deep dumps write %05d) */
		p++;
	if ((size_t)(end - p) < size)
		memcpy(out, p, (size_t)(end - p) + 1);
}

/*
 * --long: a row per (run, pid, snapshot, time, policy, component,
 * bytes), time in seconds since the run's first snapshot; every column
 * but the markers and the time columns; exact bytes.
 */
static bool long_header;

static int long_out(const struct timeline *tl, bool bytes)
{
	char pid[32], buf[64];

	(void)bytes;
	if (!long_header)
		puts("run,pid,snapshot,time,policy,component,bytes");
	long_header = true;
	pid_of(tl->run.series.prefix, pid, sizeof(pid));
	for (size_t i = 0; i < tl->n; i++) {
		double t = tl->snaps[i].time - tl->snaps[0].time;

		for (size_t p = 0; p < tl->set.n; p++) {
			const struct policy *pol = tl->set.v[p];
			const int64_t *row = tl->rows[p] + i * pol->ncols;

			for (size_t c = 0; c < pol->ncols; c++) {
				enum column_kind k = column_kind(&pol->cols[c]);

				if (k == COLUMN_MARKER || k == COLUMN_TIME)
					continue;
				field(tl->run.series.prefix, true);
				field(pid, false);
				snprintf(buf, sizeof(buf), "%lu",
					 tl->snaps[i].counter);
				field(buf, false);
				snprintf(buf, sizeof(buf), "%.3f", t);
				field(buf, false);
				field(pol->label, false);
				field(pol->cols[c].name, false);
				snprintf(buf, sizeof(buf), "%" PRId64, row[c]);
				field(buf, false);
				putchar('\n');
			}
		}
	}
	return 0;
}

static int cmd_csv_run(struct cmd_args *a)
{
	if (args_has(a, OPT_LONG))
		return setup_timeline(a, true, long_out);
	return setup_timeline(a, false, csv_out);
}

const struct cmd_entry cmd_csv = { .name = "csv", .run = cmd_csv_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print the timeline as CSV, a row per snapshot" };
