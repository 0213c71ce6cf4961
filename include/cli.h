/*
 * The command line: each command declares itself once (name, summary,
 * operand forms, options) in a struct cmd_entry next to its code, and
 * parsing, usage errors, `-h` and `dmprof help` are all generated from
 * that declaration.  Options may come anywhere among the operands (GNU
 * permutation); "--" ends them.
 */
#ifndef DMPROF_CLI_H
#define DMPROF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile.h"
#include "symbol.h"
#include "util.h"

#define EXIT_USAGE 2

enum {
	OPT_VALUE = 1 << 0,    /* takes a value: -p POLICY, --policy=POLICY */
	OPT_OPTIONAL = 1 << 1, /* a value only as --name=VALUE */
	OPT_SYNOPSIS = 1 << 2, /* shown in the usage line; the others are
				  summed up as [OPTIONS] */
};

/*
 * One option.  KEY is its short letter, or a number from OPT_LONG_ONLY on
 * for an option with a long name only; the command asks for it by KEY.
 */
struct cmd_option {
	int key;
	const char *name;  /* long name, or NULL */
	const char *arg;   /* the value's name in help ("POLICY"), or NULL */
	unsigned flags;
	const char *help;  /* one line */
};
#define OPT_LONG_ONLY 256
#define OPT_END { 0, NULL, NULL, 0, NULL }

enum {
	CMD_READS_DUMPS = 1 << 0, /* takes the reading and symbol options
				     and -v */
	CMD_STOP = 1 << 1,        /* options end at the first operand
				     (record: the rest is a command line) */
};

struct cmd_args;

struct cmd_entry {
	const char *name;
	const char *summary;         /* lower case, no period */
	/* Operand forms, one per usage line, after the options. */
	const char *const *usage;
	const struct cmd_option *options; /* ended by OPT_END, or NULL */
	unsigned flags;
	/* A command made of subcommands ("policy check"): NULL-terminated. */
	const struct cmd_entry *const *subcommands;
	/* Returns the exit status: 0 ok, 1 error, 2 usage. */
	int (*run)(struct cmd_args *a);
};

struct cmd_value {
	int key;
	const char *value; /* NULL for a flag */
};

struct cmd_args {
	const struct cmd_entry *cmd;
	const char *path;          /* "policy check": for messages */
	char **argv;               /* the operands */
	int argc;
	struct cmd_value *v;       /* options, in the order given */
	size_t nv;
	struct sym_options sym;    /* CMD_READS_DUMPS: the symbol options */
	struct read_options read;  /* and the readers' */
	int verbose;               /* -v given this many times */
	bool progress;             /* standard error is a terminal */
};

/* Every command, sorted by name, ended by NULL. */
extern const struct cmd_entry *const commands[];
const struct cmd_entry *cmd_find(const struct cmd_entry *const *table,
				 const char *name);

/*
 * Parse ARGV (ARGV[0] is the command's name) for CMD and run it, or its
 * subcommand; usage errors and -h are handled here.  NAME is the command
 * as the user wrote it ("policy check"), for messages.
 */
int cmd_main(const struct cmd_entry *cmd, const char *name, int argc,
	     char **argv);

/* Was option KEY given?  Its last value, or NULL. */
bool args_has(const struct cmd_args *a, int key);
const char *args_get(const struct cmd_args *a, int key);

/*
 * A usage mistake: "dmprof: NAME: MESSAGE" and the usage lines on stderr;
 * returns EXIT_USAGE.
 */
int cmd_usage_error(const struct cmd_args *a, const char *fmt, ...)
	PRINTF(2, 3);

/* The help of CMD (usage, summary, options) on FP. */
void cmd_help(FILE *fp, const struct cmd_entry *cmd, const char *name);
/* "dmprof help": every command and the options they share. */
void cli_overview(FILE *fp);
/* The three lines of the top-level usage. */
void cli_usage(FILE *fp);

#endif
