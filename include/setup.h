/*
 * What commands open before they print: one run under one policy
 * (expand, map, pprof), or the timeline of a run under its policies
 * (csv, list, json), from their command lines.
 */
#ifndef DMPROF_SETUP_H
#define DMPROF_SETUP_H

#include <stdint.h>
#include <sys/types.h>

#include "classify.h"
#include "owner.h"
#include "cli.h"
#include "policyset.h"
#include "run.h"
#include "timeline.h"

struct tally;

struct setup {
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
int setup_open(struct setup *o, struct cmd_args *a, const char *dump,
		 const char *policy, bool all);
void setup_close(struct setup *o);
/*
 * setup_open of DUMP alone, then load DUMP into SNAP and symbolize it.
 * Returns 0 (the caller releases SNAP and closes O), or -1 after printing
 * why (O closed).
 */
int setup_dump(struct setup *o, struct snapshot *snap, struct cmd_args *a,
	       const char *dump, const char *policy);

/*
 * The column of P named COMPONENT, for a command that shows the stacks
 * behind it (expand, pprof -c): a component rules assign, or a computed
 * column that sums such stacks (malloc-total, no-bucket, ...).  Returns
 * -1 after an error that says why not: no such component (with the
 * nearest names), or a column computed from no stacks (with what it is
 * computed from).
 */
int setup_component(const struct policy *p, const char *component);

/*
 * csv, list, json: build the timeline of A's dumps under its -p policies
 * and print it with OUT: the first run's, with the others' first dumps
 * for page sharing, or, with EACH, every run's alone.  Returns the exit
 * status.
 */
int setup_timeline(struct cmd_args *a, bool each,
		   int (*out)(const struct timeline *tl, bool bytes));

/* Every -p, as one list (-p l0 -p t0 is -p l0,t0) in new memory; NULL
 * without -p. */
char *setup_policies(const struct cmd_args *a);
/* The policy of -p, or NULL; -p twice is a usage error (its status). */
int setup_one_policy(struct cmd_args *a, const char **policy);
/* DUMP with -p (or the default policy), or the original's DUMP POLICY:
 * sets *POLICY; returns 0 or a usage error. */
int setup_policy_operand(struct cmd_args *a, const char **policy);

/* -p, --policy: several policies (csv, list, json), or one. */
#define OPT_POLICY 'p'
#define OPTION_POLICIES                                                     \
	{ .key = OPT_POLICY, .name = "policy", .arg = "POLICY",             \
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS,                        \
	  .help = "policies by label or path, comma-separated (default: "  \
		  "the index's defaults)" }
/* -n N (OPTION_ROWS), or DFLT. */
size_t setup_rows(const struct cmd_args *a, size_t dflt);

/* -n, --rows, with what it does in the command. */
#define OPTION_ROWS(what)                                                   \
	{ .key = 'n', .name = "rows", .arg = "N", .type = OPT_COUNT,        \
	  .flags = OPT_SYNOPSIS, .min = 1, .max = SIZE_MAX,                 \
	  .bad = "-n wants a number of rows, not '%s'", .help = what }
/*
 * --owner RULE, --own PATTERN and --alloc-fn REGEX (OPTION_OWNERS): whose
 * frame owns a stack's bytes.  Sets O, with the built-in allocator
 * wrappers and --alloc-fn's (its --own patterns point into A's values;
 * owners_release(O) after).  (Their values were checked when given.)
 */
void setup_owners(const struct cmd_args *a, struct owners *o);
/* The allocator wrappers policy P declares, added to O. */
void setup_owners_policy(struct owners *o, const struct policy *p);
/*
 * With -v: say on stderr which frames PASSED (a tally by function name:
 * what BYTES names, and stacks in allocs) were passed over as O's
 * allocator wrappers, and by which pattern.
 */
void setup_say_passed(const struct cmd_args *a, const struct owners *o,
		      const struct tally *passed, const char *bytes);

#define OPT_OWNER (OPT_LONG_ONLY + 500)
#define OPT_OWN (OPT_LONG_ONLY + 501)
#define OPT_ALLOC_FN (OPT_LONG_ONLY + 502)
/* --owner's choices, in enum owner_rule's order. */
extern const char *const setup_owner_rules[];
#define OPTION_OWNERS                                                       \
	{ .key = OPT_OWNER, .name = "owner", .arg = "RULE",                 \
	  .type = OPT_CHOICE, .choices = setup_owner_rules,                 \
	  .bad = "--owner wants 'program' or 'pprof', not '%s'",            \
	  .help = "who owns a stack's bytes: program (its first frame of "  \
		  "the program's own code; the default) or pprof (its "    \
		  "first frame past the allocator, as google-pprof)" },     \
	{ .key = OPT_OWN, .name = "own", .arg = "PATTERN",                  \
	  .type = OPT_STRING, .empty = "--own wants a pattern",             \
	  .help = "binaries or source files matching PATTERN (a glob, or "  \
		  "a path prefix) are the program's own code too" },        \
	{ .key = OPT_ALLOC_FN, .name = "alloc-fn", .arg = "REGEX",          \
	  .type = OPT_REGEX, .empty = "--alloc-fn wants a pattern",         \
	  .bad = "--alloc-fn '%s': invalid regex: %s",                      \
	  .help = "functions whose whole name matches REGEX wrap the "      \
		  "allocator: their callers own what they allocate "        \
		  "(besides the built-in list: zmalloc, g_malloc, "         \
		  "xmalloc, palloc...)" }

/*
 * Where a command that writes a run (record, snapshot) puts its files,
 * from -o OUTPUT (NULL: none given): OUTPUT, a prefix; DIR/NAME when it
 * is a directory (one that exists, or a path ending in '/'); NAME
 * without -o.  Its directories are made.  NULL after an error.
 */
char *setup_output_prefix(const char *output, const char *name);
/* The operand when it is not a number but names a file (a core to
 * read), or NULL. */
const char *setup_core_operand(const struct cmd_args *a);

/* The one operand of a command on a live process (heap, snapshot): its
 * process id into *PID; 0, or a usage error's status. */
int setup_pid(struct cmd_args *a, pid_t *pid);

/*
 * WHAT, the operand of a command that reads a process, a core or a dump
 * (describe, expand --type): a process when it is a number that names
 * no file (its id into *PID), else a file whose format goes to *FORMAT
 * (*PID 0).  0, or a usage error's status, or 1 after saying why the
 * file cannot be read.
 */
int setup_memory_operand(struct cmd_args *a, const char *what, pid_t *pid,
			 enum dump_format *format);

/* -b, --bytes: exact byte counts for human-readable sizes. */
#define OPTION_BYTES                                                        \
	{ .key = 'b', .name = "bytes", .flags = OPT_SYNOPSIS,               \
	  .help = "sizes as exact byte counts, not KiB, MiB..." }
/* -c, --component, with what it does in the command. */
#define OPTION_COMPONENT(what)                                              \
	{ .key = 'c', .name = "component", .arg = "COMPONENT",              \
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS, .help = what }
#define OPTION_POLICY                                                       \
	{ .key = OPT_POLICY, .name = "policy", .arg = "POLICY",             \
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS,                        \
	  .help = "the policy, by label or path (default: the index's "    \
		  "default)" }

#endif
