/*
 * What commands open before they print: one run under one policy
 * (expand, map, pprof), or the timeline of a run under its policies
 * (csv, list, json), from their command lines.
 */
#ifndef DMPROF_SETUP_H
#define DMPROF_SETUP_H

#include "classify.h"
#include "cli.h"
#include "policyset.h"
#include "run.h"
#include "timeline.h"

struct onedump {
	struct run run;
	struct policy *policy;
	struct classifier cls;
	bool has_cls;
};

/*
 * Open the run of DUMP (ALL: and every later dump), load POLICY (NULL:
 * the default one) and symbolize, with lines if A's options or the
 * policy need them.  Returns 0, or -1 after printing why.
 */
int onedump_open(struct onedump *o, struct cmd_args *a, const char *dump,
		 const char *policy, bool all);
void onedump_close(struct onedump *o);

/*
 * The column of P named COMPONENT, for a command that shows the stacks
 * behind it (expand, pprof -c): a component rules assign, or a computed
 * column that sums such stacks (malloc-total, no-bucket, ...).  Returns
 * -1 after an error that says why not: no such component (with the
 * nearest names), or a column computed from no stacks (with what it is
 * computed from).
 */
int component_column(const struct policy *p, const char *component);

/*
 * csv, list, json: build the timeline of A's dumps under its -p policies
 * and print it with OUT.  Returns the exit status.
 */
int timeline_command(struct cmd_args *a,
		     int (*out)(const struct timeline *tl, bool bytes));

/* DUMP with -p (or the default policy), or the original's DUMP POLICY:
 * sets *POLICY; returns 0 or a usage error. */
int policy_operand(struct cmd_args *a, const char **policy);

/* -p, --policy: several policies (csv, list, json), or one. */
#define OPT_POLICY 'p'
#define OPTION_POLICIES                                                     \
	{ OPT_POLICY, "policy", "POLICY", OPT_VALUE | OPT_SYNOPSIS,         \
	  "policies by label or path, comma-separated (default: the "      \
	  "index's defaults)" }
#define OPTION_POLICY                                                       \
	{ OPT_POLICY, "policy", "POLICY", OPT_VALUE | OPT_SYNOPSIS,         \
	  "the policy, by label or path (default: the index's default)" }

#endif
