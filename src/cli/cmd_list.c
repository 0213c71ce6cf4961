/*
 * dmprof list [-p POLICY] DUMP...: every
 * snapshot under every policy, one column per line, in bytes.  The time
 * columns are measured from the first snapshot (the original measured each
 * dump from itself and always printed 0).
 */
#include <inttypes.h>
#include <stdio.h>

#include "setup.h"

static const char *const usage[] = { "DUMP [DUMP...]", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICIES,
	OPT_END,
};

static int list_out(const struct timeline *tl, bool bytes UNUSED)
{
	for (size_t p = 0; p < tl->set.n; p++) {
		const struct policy *pol = tl->set.v[p];

		for (size_t i = 0; i < tl->n; i++) {
			const int64_t *row = tl->rows[p] + i * pol->ncols;

			printf("%s for %s:\n", pol->label, tl->snaps[i].path);
			for (size_t c = 0; c < pol->ncols; c++) {
				const struct column *col = &pol->cols[c];

				if (builtin_is_time(col->builtin))
					printf("%40s %12.3f\n", col->name,
					       timeline_time_value(
						       tl, i, col->builtin));
				else
					printf("%40s %12" PRId64 "\n",
					       col->name, row[c]);
			}
		}
	}
	return 0;
}

static int cmd_list_run(struct cmd_args *a)
{
	return setup_timeline(a, false, list_out);
}

const struct cmd_entry cmd_list = { .name = "list", .run = cmd_list_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print every component of every snapshot, in bytes" };
