/*
 * The subcommands of dmprof policy (src/cli/cmd_policy_NAME.c), and what
 * more than one of them says alike (cmd_policy.c).
 */
#ifndef DMPROF_CMD_POLICY_H
#define DMPROF_CMD_POLICY_H

#include <stddef.h>

#include "cli.h"
#include "policyset.h"
#include "util.h"

extern const struct cmd_entry cmd_policy_check, cmd_policy_convert,
	cmd_policy_explain, cmd_policy_list, cmd_policy_show;

/* "private,group": the categories of BITS (SHARE_*). */
void cmd_policy_add_sharing(struct strbuf *sb, unsigned bits);
/* "N things": THING's plural by an 's'. */
void cmd_policy_add_count(struct strbuf *sb, size_t n, const char *thing);

#endif
