/*
 * dmprof policy list: the policies -p can name, and the defaults.
 */
#include <stdio.h>

#include "cmd_policy.h"

static int list(struct cmd_args *a)
{
	struct index_entry *idx;
	size_t n;

	if (a->argc)
		return cmd_usage_error(a, "list takes no arguments");
	if (policy_index(&idx, &n) < 0)
		return 1;
	printf("search path: %s\n", policy_search_path());
	for (size_t i = 0; i < n; i++)
		printf("%-18s %s%s\n", idx[i].label, idx[i].path,
		       idx[i].is_default ? "  (default)" : "");
	policy_index_free(idx, n);
	return 0;
}


const struct cmd_entry cmd_policy_list = { .name = "list", .run = list,
	.summary = "list the policies -p can name" };
