/*
 * The command table.  Each command declares itself in its own file
 * (src/cli/cmd_NAME.c); adding one is that file and a line here.  The
 * order is the one help shows: a newcomer's path first (record, then
 * what is big, what grew, the page), then the drill-downs and the
 * original's views.
 */
#include "cli.h"

extern const struct cmd_entry cmd_buckets, cmd_csv, cmd_diff, cmd_expand,
	cmd_folded, cmd_html, cmd_json, cmd_list, cmd_map, cmd_policy, cmd_pprof,
	cmd_record, cmd_stacktrace, cmd_top;
extern const struct cmd_entry cmd_describe, cmd_heap, cmd_snapshot;

const struct cmd_entry *const commands[] = {
	&cmd_record, &cmd_snapshot, &cmd_top,	  &cmd_diff,
	&cmd_html,   &cmd_expand,   &cmd_describe, &cmd_folded, &cmd_csv,
	&cmd_list,   &cmd_json,	    &cmd_map,	 &cmd_pprof,
	&cmd_stacktrace, &cmd_buckets, &cmd_heap, &cmd_policy, NULL,
};
