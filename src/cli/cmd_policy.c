/*
 * dmprof policy SUBCOMMAND: check, convert, explain, list and show, each
 * in a file of its own (cmd_policy_NAME.c); this is their table, and
 * what more than one of them says alike.
 */
#include "cmd_policy.h"

static const char *const share_names[] = { "private", "group", "others" };

/* "private,group": the categories of BITS (SHARE_*). */
void cmd_policy_add_sharing(struct strbuf *sb, unsigned bits)
{
	const char *sep = "";

	for (int i = 0; i < 3; i++)
		if (bits & (1u << i)) {
			sb_addf(sb, "%s%s", sep, share_names[i]);
			sep = ",";
		}
}

/* "N things": THING's plural by an 's'. */
void cmd_policy_add_count(struct strbuf *sb, size_t n, const char *thing)
{
	sb_addf(sb, "%zu %s%s", n, thing, n == 1 ? "" : "s");
}

static const struct cmd_entry *const subcommands[] = {
	&cmd_policy_check, &cmd_policy_convert, &cmd_policy_explain,
	&cmd_policy_list, &cmd_policy_show, NULL,
};


const struct cmd_entry cmd_policy = { .name = "policy",
	.subcommands = subcommands,
	.summary = "check, convert, explain, list or show policies" };
