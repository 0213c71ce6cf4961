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
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "symbol.h"
#include "util.h"

#define EXIT_USAGE 2

enum {
	OPT_OPTIONAL = 1 << 1, /* a value only as --name=VALUE */
	OPT_SYNOPSIS = 1 << 2, /* shown in the usage line; the others are
				  summed up as [OPTIONS] */
};

/*
 * What an option's value is.  The parser converts each value given as its
 * type says, after -h and before the command runs, and a value that does
 * not convert is a usage error said in one place (cli.c), in the words
 * the option declares (.bad); the command then takes it converted
 * (args_seconds, args_count, ...).
 */
enum opt_type {
	OPT_FLAG,      /* no value */
	OPT_STRING,    /* a value, as it is */
	OPT_SECONDS,   /* a duration: 0 to 10^9 seconds, fractions too */
	OPT_SIZE,      /* bytes: 4096, or with k, M, G (KiB, MiB, GiB) */
	OPT_COUNT,     /* a whole number, from .min to .max */
	OPT_CHOICE,    /* one of .choices */
	OPT_REGEX,     /* a PCRE2 pattern that compiles, to match whole
			  names (see pattern.h) */
};

/*
 * One option.  KEY is its short letter, or a number from OPT_LONG_ONLY on
 * for an option with a long name only; the command asks for it by KEY.
 * Declared with designated initializers: what is not said is 0.
 */
struct cmd_option {
	int key;
	const char *name;  /* long name, or NULL */
	const char *arg;   /* the value's name in help ("POLICY"), or NULL */
	enum opt_type type;
	unsigned flags;
	const char *help;  /* one line */
	/* A value that does not convert: a format of one %s, the value (an
	 * OPT_REGEX's has a second, what is wrong with it). */
	const char *bad;
	/* An empty value: this (a format of no %), or NULL: allowed (as a
	 * value of its type, if it is one). */
	const char *empty;
	uint64_t min, max;            /* OPT_COUNT's bounds */
	const char *const *choices;   /* OPT_CHOICE's, NULL-ended */
};
#define OPT_LONG_ONLY 256
#define OPT_END { .key = 0 }

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
	/* The value converted, as the option's type says. */
	union {
		double seconds;  /* OPT_SECONDS */
		uint64_t n;      /* OPT_SIZE, OPT_COUNT */
		int choice;      /* OPT_CHOICE: its index in .choices */
	} as;
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
/* Its last value, converted (an option of that type), or DFLT. */
double args_seconds(const struct cmd_args *a, int key, double dflt);
uint64_t args_count(const struct cmd_args *a, int key, uint64_t dflt);
uint64_t args_size(const struct cmd_args *a, int key, uint64_t dflt);
int args_choice(const struct cmd_args *a, int key, int dflt);

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
