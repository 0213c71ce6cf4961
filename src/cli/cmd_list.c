/*
 * dmprof list [-p POLICY] FIRST_DUMP [SHARED_FIRST_DUMP...]: every
 * snapshot under every policy, one column per line, in bytes.  The time
 * columns are measured from the first snapshot (the original measured each
 * dump from itself and always printed 0).
 */
#include <inttypes.h>
#include <stdio.h>

#include "cmd.h"
#include "timeline.h"

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

int cmd_list(int argc, char **argv)
{
	return timeline_main("list", argc, argv, list_out, false);
}
