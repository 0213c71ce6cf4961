/*
 * Entry point: dispatch, the command list, "did you mean", and the final
 * check that everything written to stdout really got out.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "util.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: dmprof COMMAND [OPTIONS] ARGS\n"
		    "       dmprof help [COMMAND]\n"
		    "       dmprof --version\n\n"
		    "symbol options, for every command:\n"
		    "   --symfs DIR                  read binaries under DIR\n"
		    "   --alternative-dirs T@H[:..]  read binaries of T in H\n"
		    "   --full-names                 demangled names in full\n"
		    "   --no-inline                  no inlined frames\n"
		    "   --no-symbol-cache            do not read or write the "
		    "symbol cache\n\n"
		    "commands:\n");
	for (const struct cmd *c = commands; c->name; c++)
		fprintf(fp, "   %-12s %s\n", c->name, c->summary);
	fprintf(fp, "\nSee dmprof(1) for details.\n");
}

/* Optimal string alignment distance, for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), i, j;
	size_t *d;
	size_t r;

	if (n > 64 || m > 64)
		return SIZE_MAX;
	d = xcalloc((n + 1) * (m + 1), sizeof(*d));
#define D(x, y) d[(x) * (m + 1) + (y)]
	for (i = 0; i <= n; i++)
		D(i, 0) = i;
	for (j = 0; j <= m; j++)
		D(0, j) = j;
	for (i = 1; i <= n; i++) {
		for (j = 1; j <= m; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = D(i - 1, j) + 1;

			if (D(i, j - 1) + 1 < v)
				v = D(i, j - 1) + 1;
			if (D(i - 1, j - 1) + cost < v)
				v = D(i - 1, j - 1) + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && D(i - 2, j - 2) + 1 < v)
				v = D(i - 2, j - 2) + 1;
			D(i, j) = v;
		}
	}
	r = D(n, m);
#undef D
	free(d);
	return r;
}

static int unknown_command(const char *name)
{
	const struct cmd *best = NULL;
	size_t best_d = SIZE_MAX;

	for (const struct cmd *c = commands; c->name; c++) {
		size_t d = edit_distance(name, c->name);

		/* A prefix is a strong hint too ("stack" for stacktrace). */
		if (strlen(name) >= 3 && starts_with(c->name, name))
			d = 1;
		if (d < best_d) {
			best_d = d;
			best = c;
		}
	}
	fprintf(stderr, "dmprof: '%s' is not a dmprof command\n", name);
	if (best && best_d <= 2 + strlen(name) / 4)
		fprintf(stderr, "\nThe most similar command is\n\t%s\n",
			best->name);
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

int main(int argc, char **argv)
{
	const struct cmd *c;
	const char *name;

	static char outbuf[1 << 16];

	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("dmprof %s\n", DMPROF_VERSION);
		return finish(0);
	}
	if (!strcmp(name, "help") || !strcmp(name, "--help") ||
	    !strcmp(name, "-h")) {
		if (argc > 2) {
			if (!cmd_find(argv[2]))
				return unknown_command(argv[2]);
			return finish(cmd_help(argv[2]));
		}
		usage(stdout);
		return finish(0);
	}
	c = cmd_find(name);
	if (!c)
		return unknown_command(name);
	/* The command sees itself as argv[0]. */
	optind = 1;
	return finish(c->fn(argc - 1, argv + 1));
}
