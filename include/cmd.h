/*
 * Subcommands.  Each lives in src/cmd_<name>.c and returns the process
 * exit status: 0 ok, 1 error, 2 usage.
 */
#ifndef DMPROF_CMD_H
#define DMPROF_CMD_H

#include <stdio.h>

#include "util.h"

#define EXIT_USAGE 2

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis; /* after "dmprof "; lines separated by \n */
	const char *summary;
	const char *options;  /* option help, or NULL */
};

extern const struct cmd commands[];
const struct cmd *cmd_find(const char *name);

/* "dmprof NAME -h": synopsis, summary and options on stdout; returns 0. */
int cmd_help(const char *name);
/*
 * A usage mistake: "dmprof: NAME: MESSAGE" and the synopsis on stderr;
 * returns EXIT_USAGE.
 */
int cmd_usage_error(const char *name, const char *fmt, ...) PRINTF(2, 3);

/*
 * Option parsing shared by commands: getopt_long with "-h/--help" added;
 * unknown options become usage errors.  Returns the option character, -1
 * at the end of options, or -2 with *status set when the command should
 * return *status now.
 */
struct option;
int cmd_getopt(const char *name, int argc, char **argv, const char *shortopts,
	       const struct option *longopts, int *status);

int cmd_buckets(int argc, char **argv);
int cmd_stacktrace(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_csv(int argc, char **argv);
int cmd_json(int argc, char **argv);
int cmd_expand(int argc, char **argv);
int cmd_map(int argc, char **argv);
int cmd_pprof(int argc, char **argv);
int cmd_record(int argc, char **argv);

#endif
