/*
 * Option parsing, usage lines and help, all from a command's struct
 * cmd_entry.  The parser permutes as GNU getopt does (options anywhere,
 * "--" ends them), but keeps every option it saw, in order, for the
 * command to ask for by key (tmux's args_has/args_get).
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "scan.h"
#include "suggest.h"

enum {
	KEY_HELP = 'h',
	KEY_VERBOSE = 'v',
	KEY_SYMFS = OPT_LONG_ONLY + 1000,
	KEY_ALT_DIRS,
	KEY_FULL_NAMES,
	KEY_NO_INLINE,
	KEY_NO_CACHE,
	KEY_SAMPLE_TYPE,
};

/* Every command that reads dumps takes these: how to symbolize (and
 * read) them. */
static const struct cmd_option symbol_options[] = {
	{ .key = KEY_SYMFS, .name = "symfs", .arg = "DIR", .type = OPT_STRING,
	  .help = "read binaries under DIR" },
	{ .key = KEY_ALT_DIRS, .name = "alternative-dirs", .arg = "T@H[:..]",
	  .type = OPT_STRING,
	  .help = "look for the binaries of directory T in H" },
	{ .key = KEY_FULL_NAMES, .name = "full-names",
	  .help = "demangled names in full" },
	{ .key = KEY_NO_INLINE, .name = "no-inline",
	  .help = "no inlined frames" },
	{ .key = KEY_NO_CACHE, .name = "no-symbol-cache",
	  .help = "do not read or write the symbol cache" },
	{ .key = KEY_SAMPLE_TYPE, .name = "sample-type", .arg = "TYPE",
	  .type = OPT_STRING,
	  .help = "the values of a pprof protobuf profile to read (default "
		  "inuse_space)" },
	{ .key = KEY_VERBOSE, .name = "verbose",
	  .help = "say where each binary's symbols come from (-vv: also why "
		  "a frame stays unresolved)" },
	OPT_END,
};

/* Every command takes -h. */
static const struct cmd_option help_option[] = {
	{ .key = KEY_HELP, .name = "help", .help = "this help" },
	OPT_END,
};

const struct cmd_entry *cmd_find(const struct cmd_entry *const *table,
				 const char *name)
{
	for (; *table; table++)
		if (!strcmp((*table)->name, name))
			return *table;
	return NULL;
}

/* ---- usage and help ---- */

static bool has_hidden_options(const struct cmd_entry *c)
{
	for (const struct cmd_option *o = c->options; o && o->key; o++)
		if (!(o->flags & OPT_SYNOPSIS))
			return true;
	return false;
}

/* Does the operand form FORM hold WORD as a word of its own? */
static bool form_has(const char *form, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = form; p && (p = strstr(p, word)); p += n)
		if ((p == form || p[-1] == ' ' || p[-1] == '[') &&
		    (!p[n] || p[n] == ' ' || p[n] == ']'))
			return true;
	return false;
}

/*
 * "[-p POLICY] [-b]": the options that the usage line of FORM shows; an
 * option whose value FORM takes as an operand ("DUMP POLICY") is not one
 * of them.
 */
static void add_synopsis_options(struct strbuf *sb, const struct cmd_entry *c,
				 const char *form)
{
	for (const struct cmd_option *o = c->options; o && o->key; o++) {
		if (!(o->flags & OPT_SYNOPSIS) ||
		    (o->arg && form && form_has(form, o->arg)))
			continue;
		if (o->key < OPT_LONG_ONLY)
			sb_addf(sb, " [-%c", o->key);
		else
			sb_addf(sb, " [--%s", o->name);
		if (o->arg)
			sb_addf(sb, " %s", o->arg);
		sb_addch(sb, ']');
	}
	if (has_hidden_options(c))
		sb_addstr(sb, " [OPTIONS]");
}

static void usage_lines(struct strbuf *sb, const struct cmd_entry *c,
			const char *name, bool *first)
{
	if (c->subcommands) {
		for (const struct cmd_entry *const *s = c->subcommands; *s;
		     s++) {
			struct strbuf sub = STRBUF_INIT;

			sb_addf(&sub, "%s %s", name, (*s)->name);
			usage_lines(sb, *s, sub.buf, first);
			sb_release(&sub);
		}
		return;
	}
	size_t n = 0;

	while (c->usage && c->usage[n])
		n++;
	/* (No operand forms: one line, of the options alone.) */
	for (size_t i = 0; i < n || (!n && !i); i++) {
		const char *form = n ? c->usage[i] : NULL;

		sb_addstr(sb, *first ? "usage: dmprof " : "       dmprof ");
		sb_addstr(sb, name);
		add_synopsis_options(sb, c, form);
		if (form && *form)
			sb_addf(sb, " %s", form);
		sb_addch(sb, '\n');
		*first = false;
	}
}

static void print_usage(FILE *fp, const struct cmd_entry *c,
			const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	bool first = true;

	usage_lines(&sb, c, name, &first);
	fputs(sb.buf, fp);
	sb_release(&sb);
}

static void option_left(struct strbuf *sb, const struct cmd_option *o)
{
	sb_reset(sb);
	if (o->key < OPT_LONG_ONLY)
		sb_addf(sb, "-%c%s", o->key, o->name ? ", " : "");
	else
		sb_addstr(sb, "    ");
	if (o->name)
		sb_addf(sb, "--%s", o->name);
	if (o->arg && (o->flags & OPT_OPTIONAL))
		sb_addf(sb, "[=%s]", o->arg);
	else if (o->arg)
		sb_addf(sb, " %s", o->arg);
}

/* TEXT from column INDENT, words wrapped before column 80. */
static void print_wrapped(FILE *fp, const char *text, size_t indent)
{
	size_t col = indent;
	bool first = true; /* word of its line */

	fputs("  ", fp);
	while (*text) {
		size_t n = strcspn(text, " ");

		if (!first && col + 1 + n > 79) {
			fprintf(fp, "\n%*s", (int)indent, "");
			col = indent;
			first = true;
		}
		if (!first) {
			fputc(' ', fp);
			col++;
		}
		fprintf(fp, "%.*s", (int)n, text);
		col += n;
		first = false;
		text += n;
		text += strspn(text, " ");
	}
	fputc('\n', fp);
}

/* The width of the left column for every table of TABLES (at most 28). */
static size_t options_width(const struct cmd_option *const *tables, size_t n)
{
	struct strbuf left = STRBUF_INIT;
	size_t width = 0;

	for (size_t t = 0; t < n; t++)
		for (const struct cmd_option *o = tables[t]; o && o->key; o++) {
			option_left(&left, o);
			if (left.len > width)
				width = left.len;
		}
	sb_release(&left);
	return width > 28 ? 28 : width;
}

static void print_options(FILE *fp, const char *title,
			  const struct cmd_option *opts, size_t width)
{
	struct strbuf left = STRBUF_INIT;

	if (!opts || !opts->key)
		return;
	fprintf(fp, "\n%s:\n", title);
	for (const struct cmd_option *o = opts; o->key; o++) {
		option_left(&left, o);
		if (left.len > width)
			fprintf(fp, "  %s\n  %*s", left.buf, (int)width, "");
		else
			fprintf(fp, "  %-*s", (int)width, left.buf);
		print_wrapped(fp, o->help, 2 + width + 2);
	}
	sb_release(&left);
}

void cmd_help(FILE *fp, const struct cmd_entry *c, const char *name)
{
	print_usage(fp, c, name);
	fprintf(fp, "\n%c%s.\n", c->summary[0] >= 'a' && c->summary[0] <= 'z'
					? c->summary[0] - 'a' + 'A'
					: c->summary[0],
		c->summary + 1);
	if (c->subcommands) {
		fprintf(fp, "\nsubcommands:\n");
		for (const struct cmd_entry *const *s = c->subcommands; *s;
		     s++)
			fprintf(fp, "  %-10s %s\n", (*s)->name, (*s)->summary);
	}
	{
		const struct cmd_option *tables[] = {
			c->options,
			c->flags & CMD_READS_DUMPS ? symbol_options : NULL,
		};
		size_t width = options_width(tables, ARRAY_SIZE(tables));

		print_options(fp, "options", c->options, width);
		if (c->flags & CMD_READS_DUMPS)
			print_options(fp, "symbol options", symbol_options,
				      width);
	}
	fprintf(fp, "\nSee dmprof(1) for details.\n");
}

void cli_usage(FILE *fp)
{
	fprintf(fp, "usage: dmprof COMMAND [OPTIONS] ARGS\n"
		    "       dmprof help [COMMAND]\n"
		    "       dmprof --version\n");
}

void cli_overview(FILE *fp)
{
	cli_usage(fp);
	fprintf(fp, "\ncommands:\n");
	for (const struct cmd_entry *const *c = commands; *c; c++)
		fprintf(fp, "   %-12s %s\n", (*c)->name, (*c)->summary);
	{
		const struct cmd_option *tables[] = { symbol_options };

		print_options(fp, "symbol options, for every command that "
				  "reads dumps", symbol_options,
			      options_width(tables, 1));
	}
	fprintf(fp, "\n'dmprof COMMAND -h' shows a command's options; "
		    "dmprof(1) has the details.\n");
}

int cmd_usage_error(const struct cmd_args *a, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	error("%s: %s", a->path, sb.buf);
	print_usage(stderr, a->cmd, a->path);
	sb_release(&sb);
	return EXIT_USAGE;
}

/* ---- parsing ---- */

bool args_has(const struct cmd_args *a, int key)
{
	for (size_t i = 0; i < a->nv; i++)
		if (a->v[i].key == key)
			return true;
	return false;
}

const char *args_get(const struct cmd_args *a, int key)
{
	for (size_t i = a->nv; i-- > 0;)
		if (a->v[i].key == key)
			return a->v[i].value;
	return NULL;
}

/* The last value of KEY, or NULL. */
static const struct cmd_value *last(const struct cmd_args *a, int key)
{
	for (size_t i = a->nv; i-- > 0;)
		if (a->v[i].key == key && a->v[i].value)
			return &a->v[i];
	return NULL;
}

double args_seconds(const struct cmd_args *a, int key, double dflt)
{
	const struct cmd_value *v = last(a, key);

	return v ? v->as.seconds : dflt;
}

uint64_t args_count(const struct cmd_args *a, int key, uint64_t dflt)
{
	const struct cmd_value *v = last(a, key);

	return v ? v->as.n : dflt;
}

uint64_t args_size(const struct cmd_args *a, int key, uint64_t dflt)
{
	return args_count(a, key, dflt);
}

int args_choice(const struct cmd_args *a, int key, int dflt)
{
	const struct cmd_value *v = last(a, key);

	return v ? v->as.choice : dflt;
}

static const struct cmd_option *lookup(const struct cmd_entry *c, int key,
				       const char *name, size_t len)
{
	const struct cmd_option *tables[] = {
		c->options, help_option,
		c->flags & CMD_READS_DUMPS ? symbol_options : NULL,
	};

	for (size_t t = 0; t < ARRAY_SIZE(tables); t++)
		for (const struct cmd_option *o = tables[t]; o && o->key; o++)
			if (name ? o->name && strlen(o->name) == len &&
					   !memcmp(o->name, name, len)
				 : o->key == key && key < OPT_LONG_ONLY)
				return o;
	return NULL;
}

/* The option of KEY (a short letter or a long one's number). */
static const struct cmd_option *lookup_key(const struct cmd_entry *c, int key)
{
	const struct cmd_option *tables[] = {
		c->options, help_option,
		c->flags & CMD_READS_DUMPS ? symbol_options : NULL,
	};

	for (size_t t = 0; t < ARRAY_SIZE(tables); t++)
		for (const struct cmd_option *o = tables[t]; o && o->key; o++)
			if (o->key == key)
				return o;
	return NULL;
}

static void add_value(struct cmd_args *a, int key, const char *value)
{
	a->v = xreallocarray(a->v, a->nv + 1, sizeof(*a->v));
	memset(&a->v[a->nv], 0, sizeof(a->v[a->nv]));
	a->v[a->nv].key = key;
	a->v[a->nv++].value = value;
}

/*
 * ARG is "--name[=value]"; *I is its index, advanced past a value taken
 * from the next argument.  Returns 0, or EXIT_USAGE after saying why.
 */
static int long_option(struct cmd_args *a, int argc, char **argv, int *i)
{
	const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct cmd_option *o = lookup(a->cmd, 0, arg, len);

	if (!o)
		return cmd_usage_error(a, "unknown option '--%.*s'", (int)len,
				       arg);
	if (o->type == OPT_FLAG && eq)
		return cmd_usage_error(a, "option '--%s' takes no value",
				       o->name);
	if (eq) {
		add_value(a, o->key, eq + 1);
	} else if (o->type != OPT_FLAG && !(o->flags & OPT_OPTIONAL)) {
		if (*i + 1 >= argc)
			return cmd_usage_error(a, "option '--%s' needs a value",
					       o->name);
		add_value(a, o->key, argv[++*i]);
	} else {
		add_value(a, o->key, NULL);
	}
	return 0;
}

/* ARG is "-abc" or "-pVALUE"; the same contract as long_option(). */
static int short_options(struct cmd_args *a, int argc, char **argv, int *i)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		const struct cmd_option *o = lookup(a->cmd, *p, NULL, 0);

		if (!o)
			return cmd_usage_error(a, "unknown option '-%c'", *p);
		if (o->type == OPT_FLAG || (o->flags & OPT_OPTIONAL)) {
			add_value(a, o->key, NULL);
			continue;
		}
		if (p[1]) {
			add_value(a, o->key, p + 1);
		} else if (*i + 1 < argc) {
			add_value(a, o->key, argv[++*i]);
		} else {
			return cmd_usage_error(a, "option '-%c' needs a value",
					       *p);
		}
		break;
	}
	return 0;
}

static int parse(struct cmd_args *a, int argc, char **argv)
{
	bool options = true;

	a->argv = xcalloc((size_t)argc + 1, sizeof(*a->argv));
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		int rc = 0;

		if (!options || arg[0] != '-' || !arg[1]) {
			a->argv[a->argc++] = argv[i];
			/* record: the rest is the program's command line. */
			if (a->cmd->flags & CMD_STOP)
				options = false;
			continue;
		}
		if (!strcmp(arg, "--")) {
			options = false;
			continue;
		}
		rc = arg[1] == '-' ? long_option(a, argc, argv, &i)
				   : short_options(a, argc, argv, &i);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- converting ---- */

/* "1.5": seconds, 0 to 10^9. */
static bool seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e9)
		return false;
	*out = v;
	return true;
}

/* "4096", "4k", "10M", "1G": bytes. */
static bool size(const char *s, uint64_t *out)
{
	uint64_t v, mul = 1;
	size_t n = strlen(s);

	if (n && strchr("kKmMgG", s[n - 1])) {
		mul = strchr("kK", s[n - 1])   ? 1ULL << 10
		      : strchr("mM", s[n - 1]) ? 1ULL << 20
					       : 1ULL << 30;
		n--;
	}
	return word_u64(s, n, &v) == NUM_OK &&
	       !__builtin_mul_overflow(v, mul, out);
}

/*
 * Value V of option O as O's type says, into V->as: 0, or EXIT_USAGE
 * after saying what is wrong, in O's words.
 */
static int convert(const struct cmd_args *a, const struct cmd_option *o,
		   struct cmd_value *v)
{
	struct strbuf err = STRBUF_INIT;
	pcre2_code *re;
	bool ok = true;
	int rc;

	if (!v->value)
		return 0;
	if (o->empty && !*v->value)
		return cmd_usage_error(a, "%s", o->empty);
	switch (o->type) {
	case OPT_FLAG:
	case OPT_STRING:
		return 0;
	case OPT_SECONDS:
		ok = seconds(v->value, &v->as.seconds);
		break;
	case OPT_SIZE:
		ok = size(v->value, &v->as.n);
		break;
	case OPT_COUNT:
		ok = word_u64(v->value, strlen(v->value), &v->as.n) ==
			     NUM_OK &&
		     v->as.n >= o->min && (!o->max || v->as.n <= o->max);
		break;
	case OPT_CHOICE:
		ok = false;
		for (int i = 0; !ok && o->choices[i]; i++)
			if (!strcmp(v->value, o->choices[i])) {
				v->as.choice = i;
				ok = true;
			}
		break;
	case OPT_REGEX:
		if (!(re = pattern_compile(v->value, &err))) {
			rc = cmd_usage_error(a, o->bad, v->value, err.buf);
			sb_release(&err);
			return rc;
		}
		pcre2_code_free(re);
		return 0;
	}
	if (!o->bad)
		BUG("option %s of a type but no words for a bad value",
		    o->name ? o->name : "(short)");
	return ok ? 0 : cmd_usage_error(a, o->bad, v->value);
}

/* Every value given, converted; 0, or EXIT_USAGE for the first that is
 * not (in the command line's order). */
static int convert_all(struct cmd_args *a)
{
	for (size_t i = 0; i < a->nv; i++) {
		struct cmd_value *v = &a->v[i];
		const struct cmd_option *o = lookup_key(a->cmd, v->key);
		int rc;

		if (!o)
			BUG("option %d not declared", v->key);
		if ((rc = convert(a, o, v)))
			return rc;
	}
	return 0;
}

/* A file a core names, where --symfs and --alternative-dirs say it is
 * (the readers' host_path). */
static char *host_path(const void *ctx, const char *path)
{
	return sym_host_path(ctx, path);
}

/* The symbol options into a->sym (and --sample-type, the readers', into
 * a->read); 0 or EXIT_USAGE. */
static int symbol_args(struct cmd_args *a)
{
	for (size_t i = 0; i < a->nv; i++) {
		const struct cmd_value *v = &a->v[i];

		switch (v->key) {
		case KEY_SYMFS:
			a->sym.symfs = v->value;
			break;
		case KEY_ALT_DIRS:
			/* (It says what is wrong; the usage follows.) */
			if (sym_options_alternative_dirs(&a->sym, v->value) < 0) {
				print_usage(stderr, a->cmd, a->path);
				return EXIT_USAGE;
			}
			break;
		case KEY_FULL_NAMES:
			a->sym.full_names = true;
			break;
		case KEY_NO_INLINE:
			a->sym.no_inline = true;
			break;
		case KEY_NO_CACHE:
			a->sym.no_cache = true;
			break;
		case KEY_SAMPLE_TYPE:
			a->read.sample_type = v->value;
			break;
		}
	}
	a->read.host_path = host_path;
	a->read.host_ctx = &a->sym;
	return 0;
}

static int subcommand(const struct cmd_entry *c, const char *name, int argc,
		      char **argv)
{
	const char *names[16];
	const struct cmd_entry *sub;
	struct cmd_args a;
	size_t n = 0;
	int i = 1;

	memset(&a, 0, sizeof(a));
	a.cmd = c;
	a.path = name;
	/* Before the subcommand: -h, or "--" (the subcommand's own options
	 * come after it). */
	if (i < argc && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
		cmd_help(stdout, c, name);
		return 0;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	else if (i < argc && argv[i][0] == '-' && argv[i][1])
		return cmd_usage_error(&a, "unknown option '%s'", argv[i]);
	if (i >= argc) {
		struct strbuf sb = STRBUF_INIT;
		int rc;

		for (const struct cmd_entry *const *s = c->subcommands; *s;
		     s++)
			sb_addf(&sb, "%s%s", sb.len ? ", " : "", (*s)->name);
		rc = cmd_usage_error(&a, "which subcommand (%s)?", sb.buf);
		sb_release(&sb);
		return rc;
	}
	sub = cmd_find(c->subcommands, argv[i]);
	if (!sub) {
		const char *best;

		for (const struct cmd_entry *const *s = c->subcommands;
		     *s && n < ARRAY_SIZE(names); s++)
			names[n++] = (*s)->name;
		if (suggest(argv[i], names, n, &best, 1))
			return cmd_usage_error(&a, "unknown subcommand '%s'; "
						   "did you mean '%s'?",
					       argv[i], best);
		return cmd_usage_error(&a, "unknown subcommand '%s'",
				       argv[i]);
	}
	{
		struct strbuf full = STRBUF_INIT;
		int rc;

		sb_addf(&full, "%s %s", name, sub->name);
		rc = cmd_main(sub, full.buf, argc - i, argv + i);
		sb_release(&full);
		return rc;
	}
}

int cmd_main(const struct cmd_entry *c, const char *name, int argc,
	     char **argv)
{
	struct cmd_args a;
	int rc;

	if (c->subcommands)
		return subcommand(c, name, argc, argv);
	memset(&a, 0, sizeof(a));
	a.cmd = c;
	a.path = name;
	a.progress = isatty(STDERR_FILENO);
	rc = parse(&a, argc, argv);
	for (size_t i = 0; i < a.nv; i++)
		a.verbose += a.v[i].key == KEY_VERBOSE;
	a.sym.verbose = a.verbose;
	if (!rc && args_has(&a, KEY_HELP)) {
		cmd_help(stdout, c, name);
	} else if (!rc && !(rc = convert_all(&a)) &&
		   (!(c->flags & CMD_READS_DUMPS) ||
		    !(rc = symbol_args(&a)))) {
		rc = c->run(&a);
	}
	sym_options_release(&a.sym);
	free(a.argv);
	free(a.v);
	return rc;
}
