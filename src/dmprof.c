/*
 * Entry point: the command table, dispatch, help, and the final check that
 * everything written to stdout really got out.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "util.h"

const struct cmd commands[] = {
	{ "buckets", cmd_buckets, "buckets FIRST_DUMP",
	  "print every bucket of the run with its symbolized stack", NULL },
	{ "stacktrace", cmd_stacktrace, "stacktrace DUMP",
	  "print each stack line of one dump with its symbolized stack",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

const struct cmd *cmd_find(const char *name)
{
	for (const struct cmd *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static void print_synopsis(FILE *fp, const struct cmd *c)
{
	const char *s = c->synopsis;
	bool first = true;

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);

		fprintf(fp, "%s dmprof %.*s\n", first ? "usage:" : "      ",
			(int)n, s);
		first = false;
		s += n + (nl ? 1 : 0);
	}
}

int cmd_help(const char *name)
{
	const struct cmd *c = cmd_find(name);

	print_synopsis(stdout, c);
	printf("\n%s.\n", c->summary);
	if (c->options)
		printf("\noptions:\n%s", c->options);
	printf("\nSee dmprof(1) for details.\n");
	return 0;
}

int cmd_usage_error(const char *name, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "dmprof: %s: %s\n", name, sb.buf);
	print_synopsis(stderr, cmd_find(name));
	sb_release(&sb);
	return EXIT_USAGE;
}

int cmd_getopt(const char *name, int argc, char **argv, const char *shortopts,
	       const struct option *longopts, int *status)
{
	static const struct option help_only[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct strbuf so = STRBUF_INIT;
	int c;

	/* "+": stop at the first operand; ":": report missing arguments. */
	sb_addf(&so, "+:h%s", shortopts ? shortopts : "");
	opterr = 0;
	c = getopt_long(argc, argv, so.buf, longopts ? longopts : help_only,
			NULL);
	sb_release(&so);
	switch (c) {
	case 'h':
		*status = cmd_help(name);
		return -2;
	case '?':
		if (optopt)
			*status = cmd_usage_error(name, "unknown option '-%c'",
						  optopt);
		else
			*status = cmd_usage_error(name, "unknown option '%s'",
						  argv[optind - 1]);
		return -2;
	case ':':
		*status = cmd_usage_error(name, "option '%s' needs a value",
					  argv[optind - 1]);
		return -2;
	default:
		return c;
	}
}

static void usage(FILE *fp)
{
	fprintf(fp, "usage: dmprof COMMAND [OPTIONS] ARGS\n"
		    "       dmprof help [COMMAND]\n"
		    "       dmprof --version\n\n"
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
