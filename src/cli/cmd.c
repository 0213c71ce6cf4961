/*
 * The command table, per-command help and option parsing shared by all
 * commands.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "symbol.h"
#include "util.h"

#define POLICY_OPT \
	"  -p, --policy POLICY  policies by label or path, comma-separated\n"

const struct cmd commands[] = {
	{ "buckets", cmd_buckets, "buckets [-p POLICY] FIRST_DUMP",
	  "print every bucket of the run with its symbolized stack",
	  "  -p, --policy POLICY  also print the component each bucket lands "
	  "in\n" },
	{ "csv", cmd_csv,
	  "csv [-p POLICY] [--bytes] FIRST_DUMP [SHARED_FIRST_DUMP...]",
	  "print the timeline as CSV, a row per snapshot",
	  POLICY_OPT "  -b, --bytes          exact bytes instead of MiB\n" },
	{ "expand", cmd_expand, "expand [-l] DUMP POLICY COMPONENT DEPTH",
	  "print the stacks behind one component of a dump",
	  "  -l, --lines          source file and line of each frame\n" },
	{ "json", cmd_json,
	  "json [-p POLICY] FIRST_DUMP [SHARED_FIRST_DUMP...]",
	  "print the timeline as JSON (JSON_DEEP_2)", POLICY_OPT },
	{ "list", cmd_list,
	  "list [-p POLICY] FIRST_DUMP [SHARED_FIRST_DUMP...]",
	  "print every component of every snapshot, in bytes", POLICY_OPT },
	{ "map", cmd_map, "map FIRST_DUMP POLICY",
	  "print what each address range was in each snapshot", NULL },
	{ "policy", cmd_policy,
	  "policy check FILE...\npolicy convert FILE\npolicy list",
	  "check, convert (from JSON) or list policies", NULL },
	{ "pprof", cmd_pprof, "pprof [-c COMPONENT] DUMP POLICY",
	  "convert a dump to a legacy pprof heap profile",
	  "  -c, --component COMPONENT  only this component\n" },
	{ "record", cmd_record,
	  "record [-o PREFIX] [-i SECONDS] [OPTIONS] [--] CMD [ARGS...]",
	  "run CMD with the recorder, which writes deep dumps of it",
	  "  -o, --output PREFIX   dumps go to PREFIX.PID.NNNN.heap "
	  "(default: ./CMD)\n"
	  "  -i, --interval SECONDS  a dump every SECONDS (default 5; 0: "
	  "none)\n"
	  "      --alloc-interval BYTES  a dump each time BYTES more were "
	  "allocated\n"
	  "                        (default 1G; 0: never; k, M, G allowed)\n"
	  "      --inuse-interval BYTES  a dump each time BYTES more are in "
	  "use\n"
	  "                        (default 100M; 0: never)\n"
	  "      --signal SIG      dump when CMD (or dmprof record) gets SIG "
	  "(default USR2;\n"
	  "                        none: no signal)\n"
	  "      --depth N         frames per stack, 1 to 64 (default 32)\n"
	  "      --no-mmap         do not record mmap calls\n"
	  "      --pageframe[=2]   list the page frames of each region "
	  "(needs root);\n"
	  "                        2: with their share counts\n" },
	{ "stacktrace", cmd_stacktrace, "stacktrace DUMP",
	  "print each stack line of a dump with its stack", NULL },
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

/* Options every command takes: how to symbolize. */
enum {
	OPT_SYMFS = 0x100,
	OPT_ALT_DIRS,
	OPT_NO_CACHE,
	OPT_FULL_NAMES,
	OPT_NO_INLINE,
};

static const struct option common[] = {
	{ "symfs", required_argument, NULL, OPT_SYMFS },
	{ "alternative-dirs", required_argument, NULL, OPT_ALT_DIRS },
	{ "no-symbol-cache", no_argument, NULL, OPT_NO_CACHE },
	{ "full-names", no_argument, NULL, OPT_FULL_NAMES },
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The command's long options followed by the common ones. */
static const struct option *merged(const struct option *own)
{
	static struct option buf[64];
	size_t n = 0;

	for (; own && own->name && n < ARRAY_SIZE(buf) - ARRAY_SIZE(common);
	     own++)
		if (strcmp(own->name, "help"))
			buf[n++] = *own;
	memcpy(buf + n, common, sizeof(common));
	return buf;
}

static int common_option(const char *name, int c, int *status)
{
	switch (c) {
	case OPT_SYMFS:
		sym_opts.symfs = optarg;
		return 1;
	case OPT_ALT_DIRS:
		if (sym_options_alternative_dirs(optarg) < 0) {
			*status = cmd_usage_error(name, "bad --alternative-dirs");
			return -1;
		}
		return 1;
	case OPT_NO_CACHE:
		sym_opts.no_cache = true;
		return 1;
	case OPT_FULL_NAMES:
		sym_opts.full_names = true;
		return 1;
	case OPT_NO_INLINE:
		sym_opts.no_inline = true;
		return 1;
	}
	return 0;
}

int cmd_getopt(const char *name, int argc, char **argv, const char *shortopts,
	       const struct option *longopts, int *status)
{
	struct strbuf so = STRBUF_INIT;
	int c, handled;

	/* "+": stop at the first operand; ":": report missing arguments. */
	sb_addf(&so, "+:h%s", shortopts ? shortopts : "");
	opterr = 0;
	do {
		c = getopt_long(argc, argv, so.buf, merged(longopts), NULL);
		handled = common_option(name, c, status);
	} while (handled == 1);
	sb_release(&so);
	if (handled < 0)
		return -2;
	switch (c) {
	case 'h':
		*status = cmd_help(name);
		return -2;
	case '?': {
		const char *arg = argv[optind - 1];
		const char *eq = strchr(arg, '=');

		/* glibc sets optopt for "--flag=value" of a valueless flag. */
		if (starts_with(arg, "--") && eq)
			*status = cmd_usage_error(name, "option '%.*s' takes "
							"no value",
						  (int)(eq - arg), arg);
		else if (starts_with(arg, "--") || !optopt)
			*status = cmd_usage_error(name, "unknown option '%s'",
						  arg);
		else
			*status = cmd_usage_error(name, "unknown option '-%c'",
						  optopt);
		return -2;
	}
	case ':':
		*status = cmd_usage_error(name, "option '%s' needs a value",
					  argv[optind - 1]);
		return -2;
	default:
		return c;
	}
}
