/*
 * The command table.  Each command declares itself in its own file
 * (src/cli/cmd_NAME.c); adding one is that file and a line here.
 */
#include "cli.h"

extern const struct cmd_entry cmd_buckets, cmd_csv, cmd_diff, cmd_expand,
	cmd_folded, cmd_html, cmd_json, cmd_list, cmd_map, cmd_policy, cmd_pprof,
	cmd_record, cmd_stacktrace, cmd_top;

const struct cmd_entry *const commands[] = {
	&cmd_buckets, &cmd_csv, &cmd_diff,	  &cmd_expand, &cmd_folded, &cmd_html, &cmd_json,
	&cmd_list,    &cmd_map,	  &cmd_policy, &cmd_pprof,  &cmd_record,
	&cmd_stacktrace, &cmd_top, NULL,
};
