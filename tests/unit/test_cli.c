/*
 * The command line: option parsing from a struct cmd_entry (permutation,
 * "--", clusters, values joined or apart), usage errors, help, and the
 * suggestions for mistyped names.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "helpers.h"
#include "suggest.h"
#include "util.h"

/* What the command under test saw, kept by its run(). */
static struct {
	int argc;
	char operands[8][32];
	bool l;
	char p[32];
	char opt[32];
	bool has_opt;
	int verbose;
	char symfs[32];
	double secs;
	uint64_t size, count;
	int mode;
} seen;

static int run(struct cmd_args *a)
{
	memset(&seen, 0, sizeof(seen));
	seen.argc = a->argc;
	for (int i = 0; i < a->argc && i < 8; i++)
		snprintf(seen.operands[i], 32, "%s", a->argv[i]);
	seen.l = args_has(a, 'l');
	snprintf(seen.p, 32, "%s", args_get(a, 'p') ? args_get(a, 'p') : "");
	seen.has_opt = args_has(a, OPT_LONG_ONLY);
	snprintf(seen.opt, 32, "%s",
		 args_get(a, OPT_LONG_ONLY) ? args_get(a, OPT_LONG_ONLY) : "");
	seen.verbose = a->verbose;
	snprintf(seen.symfs, 32, "%s", a->sym.symfs ? a->sym.symfs : "");
	seen.secs = args_seconds(a, 'i', -1);
	seen.size = args_size(a, 's', 7);
	seen.count = args_count(a, 'n', 5);
	seen.mode = args_choice(a, 'm', -1);
	return 0;
}

static const char *const modes[] = { "fast", "slow", NULL };

static const struct cmd_option options[] = {
	{ .key = 'p', .name = "policy", .arg = "POLICY", .type = OPT_STRING,
	  .flags = OPT_SYNOPSIS, .help = "a policy" },
	{ .key = 'l', .name = "lines", .flags = OPT_SYNOPSIS, .help = "lines" },
	{ .key = OPT_LONG_ONLY, .name = "level", .arg = "N",
	  .type = OPT_STRING, .flags = OPT_OPTIONAL, .help = "a level" },
	/* Typed: converted before run, or a usage error in these words. */
	{ .key = 'i', .name = "interval", .arg = "SECONDS",
	  .type = OPT_SECONDS, .bad = "bad interval '%s' (seconds)",
	  .help = "seconds" },
	{ .key = 's', .name = "size", .arg = "BYTES", .type = OPT_SIZE,
	  .bad = "bad size '%s'", .help = "bytes" },
	{ .key = 'n', .name = "count", .arg = "N", .type = OPT_COUNT,
	  .min = 1, .max = 9, .bad = "bad count '%s' (1 to 9)",
	  .help = "a count" },
	{ .key = 'm', .name = "mode", .arg = "MODE", .type = OPT_CHOICE,
	  .choices = modes, .bad = "bad mode '%s'", .help = "a mode" },
	{ .key = 'r', .name = "re", .arg = "REGEX", .type = OPT_REGEX,
	  .empty = "--re wants a pattern", .bad = "--re '%s': %s",
	  .help = "a regex" },
	OPT_END,
};

static const char *const usage[] = { "DUMP [DEPTH]", "DUMP POLICY", NULL };

static const struct cmd_entry cmd = {
	.name = "try",
	.summary = "try the parser",
	.usage = usage,
	.options = options,
	.flags = CMD_READS_DUMPS,
	.run = run,
};

static int parse(const char *line)
{
	char buf[512], *argv[32];
	int argc = 0;

	snprintf(buf, sizeof(buf), "try %s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	memset(&seen, 0, sizeof(seen));
	seen.argc = -1;
	return cmd_main(&cmd, "try", argc, argv);
}

Test(cli, options_anywhere_and_double_dash)
{
	cr_assert_eq(parse("a.heap -p l1 3 -l"), 0);
	cr_assert_eq(seen.argc, 2);
	cr_assert_str_eq(seen.operands[0], "a.heap");
	cr_assert_str_eq(seen.operands[1], "3");
	cr_assert_str_eq(seen.p, "l1");
	cr_assert(seen.l);
	cr_assert_eq(parse("-- -l -p"), 0);
	cr_assert_eq(seen.argc, 2);
	cr_assert_str_eq(seen.operands[0], "-l");
	cr_assert_not(seen.l);
	/* A lone "-" is an operand (standard input, by convention). */
	cr_assert_eq(parse("- -l"), 0);
	cr_assert_str_eq(seen.operands[0], "-");
}

Test(cli, values_joined_apart_clustered_and_last_wins)
{
	cr_assert_eq(parse("-pl0 x"), 0);
	cr_assert_str_eq(seen.p, "l0");
	cr_assert_eq(parse("-lp l2 x"), 0);
	cr_assert(seen.l);
	cr_assert_str_eq(seen.p, "l2");
	cr_assert_eq(parse("--policy=l1 --policy l2 x"), 0);
	cr_assert_str_eq(seen.p, "l2");
	/* An optional value only joined by '='. */
	cr_assert_eq(parse("--level x"), 0);
	cr_assert(seen.has_opt);
	cr_assert_str_eq(seen.opt, "");
	cr_assert_str_eq(seen.operands[0], "x");
	cr_assert_eq(parse("--level=2 x"), 0);
	cr_assert_str_eq(seen.opt, "2");
}

Test(cli, symbol_options_and_verbose)
{
	cr_assert_eq(parse("x -vv --symfs /r -v"), 0);
	cr_assert_eq(seen.verbose, 3);
	cr_assert_str_eq(seen.symfs, "/r");
}

Test(cli, usage_errors)
{
	static const struct {
		const char *line, *msg;
	} bad[] = {
		{ "-x a", "dmprof: try: unknown option '-x'\n" },
		{ "--frob a", "dmprof: try: unknown option '--frob'\n" },
		{ "--lines=3 a", "dmprof: try: option '--lines' takes no value\n" },
		{ "a -p", "dmprof: try: option '-p' needs a value\n" },
		{ "a --policy", "dmprof: try: option '--policy' needs a value\n" },
		/* (The symbol options say what is wrong themselves.) */
		{ "--alternative-dirs nope a", "" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char path[600];
		FILE *f;
		char buf[1024] = "";

		snprintf(path, sizeof(path), "%s/err", tmpdir());
		fflush(stderr);
		cr_assert_not_null(freopen(path, "w", stderr));
		capture_stderr();
		cr_assert_eq(parse(bad[i].line), EXIT_USAGE, "%s", bad[i].line);
		cr_assert_eq(seen.argc, -1, "ran on %s", bad[i].line);
		fflush(stderr);
		f = fopen(path, "r");
		cr_assert_not_null(f);
		cr_assert_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
		fclose(f);
		/* The message through the report routine, like any. */
		cr_assert(strstr(stderr_text(), bad[i].msg), "%s: %s",
			  bad[i].line, stderr_text());
		if (!*bad[i].msg)
			cr_assert(strstr(stderr_text(), "--alternative-dirs: "
							"expected TARGET@HOST"),
				  "%s", stderr_text());
		/* Then the usage lines, generated from the declaration. */
		cr_assert(strstr(buf, "usage: dmprof try [-p POLICY] [-l] "
				      "[OPTIONS] DUMP [DEPTH]\n"
				      "       dmprof try [-l] [OPTIONS] DUMP "
				      "POLICY\n"),
			  "%s", buf);
	}
}

Test(cli, typed_values_converted_before_the_command_runs)
{
	cr_assert_eq(parse("-i 1.5 -s 4k -n 9 -m slow -r x.*y a"), 0);
	cr_assert_float_eq(seen.secs, 1.5, 1e-9);
	cr_assert_eq(seen.size, 4096);
	cr_assert_eq(seen.count, 9);
	cr_assert_eq(seen.mode, 1);
	/* Not given: the command's defaults; the last given wins. */
	cr_assert_eq(parse("a -n 2 -n 3 -s 1G"), 0);
	cr_assert_float_eq(seen.secs, -1, 1e-9);
	cr_assert_eq(seen.size, 1ULL << 30);
	cr_assert_eq(seen.count, 3);
	cr_assert_eq(seen.mode, -1);
}

Test(cli, typed_values_that_do_not_convert)
{
	static const struct {
		const char *line, *msg;
	} bad[] = {
		{ "-i soon a", "dmprof: try: bad interval 'soon' (seconds)\n" },
		{ "-i -1 a", "dmprof: try: bad interval '-1' (seconds)\n" },
		{ "-s 4x a", "dmprof: try: bad size '4x'\n" },
		{ "-s 99999999999999999G a", "dmprof: try: bad size " },
		{ "-n 0 a", "dmprof: try: bad count '0' (1 to 9)\n" },
		{ "-n 10 a", "dmprof: try: bad count '10' (1 to 9)\n" },
		{ "-m quick a", "dmprof: try: bad mode 'quick'\n" },
		{ "-r x( a", "dmprof: try: --re 'x(': missing closing "
			    "parenthesis at offset 2\n" },
		{ "--re= a", "dmprof: try: --re wants a pattern\n" },
	};

	char path[600];

	snprintf(path, sizeof(path), "%s/err", tmpdir());
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char buf[1024] = "";
		FILE *f;

		fflush(stderr);
		cr_assert_not_null(freopen(path, "w", stderr));
		capture_stderr();
		cr_assert_eq(parse(bad[i].line), EXIT_USAGE, "%s", bad[i].line);
		cr_assert_eq(seen.argc, -1, "ran on %s", bad[i].line);
		fflush(stderr);
		cr_assert_not_null(f = fopen(path, "r"));
		cr_assert_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
		fclose(f);
		cr_assert(strstr(stderr_text(), bad[i].msg), "%s: %s",
			  bad[i].line, stderr_text());
		cr_assert(strstr(buf, "usage: dmprof try "), "%s", buf);
	}
	/* -h first: help, whatever the values. */
	cr_assert_not_null(freopen("/dev/null", "w", stdout));
	cr_assert_eq(parse("-n 0 -h"), 0);
	cr_assert_eq(seen.argc, -1);
}

Test(cli, help_from_the_declaration)
{
	char path[600], buf[4096] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/help", tmpdir());
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cmd_help(f, &cmd, "try");
	fclose(f);
	f = fopen(path, "r");
	cr_assert_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
	fclose(f);
	cr_assert(starts_with(buf, "usage: dmprof try [-p POLICY] [-l] [OPTIONS] "
				   "DUMP [DEPTH]\n"), "%s", buf);
	cr_assert(strstr(buf, "\nTry the parser.\n"), "%s", buf);
	/* One left column for every section. */
	cr_assert(strstr(buf, "  -p, --policy POLICY           a policy\n"),
		  "%s", buf);
	cr_assert(strstr(buf, "      --level[=N]               a level\n"),
		  "%s", buf);
	cr_assert(strstr(buf, "\nsymbol options:\n"), "%s", buf);
	cr_assert(strstr(buf, "\n  -v, --verbose                 say where"),
		  "%s", buf);
	/* -h prints it, and runs nothing. */
	fflush(stdout);
	cr_assert_not_null(freopen(path, "w", stdout));
	cr_assert_eq(parse("x -h"), 0);
	cr_assert_eq(seen.argc, -1);
}

Test(cli, suggestions)
{
	const char *names[] = { "tc-catch-all", "tc-v8", "mmap-catch-all",
				"stacktrace", "csv" };
	const char *out[3];

	cr_assert_eq(suggest("tc-catchall", names, 5, out, 3), 1);
	cr_assert_str_eq(out[0], "tc-catch-all");
	/* A prefix of three or more characters is close. */
	cr_assert_eq(suggest("stack", names, 5, out, 1), 1);
	cr_assert_str_eq(out[0], "stacktrace");
	/* Transpositions cost one. */
	cr_assert_eq(suggest("cvs", names, 5, out, 3), 1);
	cr_assert_str_eq(out[0], "csv");
	cr_assert_eq(suggest("nothing-like-it", names, 5, out, 3), 0);
	/* The word itself is no suggestion. */
	cr_assert_eq(suggest("csv", names, 5, out, 3), 0);
}
