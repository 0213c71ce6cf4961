/*
 * dmprof buckets FIRST_DUMP: every bucket of the run, by id, in the
 * original's text form.
 */
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "run.h"

int cmd_buckets(int argc, char **argv)
{
	struct strbuf sb = STRBUF_INIT;
	struct bucket **sorted;
	struct run r;
	int c, status = 0;

	while ((c = cmd_getopt("buckets", argc, argv, NULL, NULL, &status)) !=
	       -1)
		if (c == -2)
			return status;
	if (argc - optind != 1)
		return cmd_usage_error("buckets", argc - optind
						  ? "too many arguments"
						  : "which dump?");
	if (run_open(&r, argv[optind], 0) < 0) {
		run_close(&r);
		return 1;
	}
	run_symbolize(&r);
	sorted = bucket_set_sorted(&r.model.buckets);
	for (size_t i = 0; i < r.model.buckets.n; i++) {
		sb_reset(&sb);
		sb_addf(&sb, "%" PRIu64 ": ", sorted[i]->id);
		bucket_describe(&sb, &r.model, sorted[i]);
		sb_addch(&sb, '\n');
		fwrite(sb.buf, 1, sb.len, stdout);
	}
	free(sorted);
	sb_release(&sb);
	run_close(&r);
	return 0;
}
