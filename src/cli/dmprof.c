/*
 * Entry point: top-level options, dispatch, "did you mean", and
 * the final check that everything written to stdout really got out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "suggest.h"
#include "util.h"

static int unknown_command(const char *name)
{
	const char *names[64], *best;
	size_t n = 0;

	for (const struct cmd_entry *const *c = commands;
	     *c && n < ARRAY_SIZE(names); c++)
		names[n++] = (*c)->name;
	error("'%s' is not a dmprof command", name);
	if (suggest(name, names, n, &best, 1))
		fprintf(stderr, "\nThe most similar command is\n\t%s\n", best);
	else
		fprintf(stderr, "See 'dmprof help'.\n");
	return EXIT_USAGE;
}

static int finish(int status)
{
	/* A full disk must not pass for a short but complete output. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		error_errno("error writing standard output");
		return 1;
	}
	if (fclose(stdout) != 0) {
		error_errno("error closing standard output");
		return 1;
	}
	return status;
}

/* "dmprof help [COMMAND [SUBCOMMAND]]" */
static int help(int argc, char **argv)
{
	const struct cmd_entry *c;
	struct strbuf name = STRBUF_INIT;

	if (argc < 2) {
		cli_overview(stdout);
		return 0;
	}
	c = cmd_find(commands, argv[1]);
	if (!c)
		return unknown_command(argv[1]);
	sb_addstr(&name, c->name);
	if (argc > 2 && c->subcommands) {
		const struct cmd_entry *sub = cmd_find(c->subcommands, argv[2]);

		if (!sub) {
			error("'%s %s' is not a dmprof command", argv[1],
			      argv[2]);
			sb_release(&name);
			return EXIT_USAGE;
		}
		sb_addf(&name, " %s", sub->name);
		c = sub;
	}
	cmd_help(stdout, c, name.buf);
	sb_release(&name);
	return 0;
}

int main(int argc, char **argv)
{
	const struct cmd_entry *c;
	const char *name;

	static char outbuf[1 << 16];

	malloc_setup();
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (argc < 2) {
		cli_overview(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "--version") || !strcmp(name, "-V") ||
	    !strcmp(name, "version")) {
		printf("dmprof %s\n", DMPROF_VERSION);
		return finish(0);
	}
	if (!strcmp(name, "help") || !strcmp(name, "--help") ||
	    !strcmp(name, "-h"))
		return finish(help(argc - 1, argv + 1));
	if (name[0] == '-') {
		error("unknown option '%s'", name);
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	c = cmd_find(commands, name);
	if (!c)
		return unknown_command(name);
	return finish(cmd_main(c, c->name, argc - 1, argv + 1));
}
