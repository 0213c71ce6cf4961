/*
 * dmprof policy check FILE...   load policies, report every problem
 * dmprof policy convert FILE    print a policy (JSON or text) as text
 * dmprof policy list            the policies -p can name, and defaults
 * dmprof policy show POLICY     its columns in order, with their rules
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "policyset.h"
#include "input.h"

static int check(struct cmd_args *a)
{
	int argc = a->argc, status = 0;
	char **argv = a->argv;

	if (argc < 1)
		return cmd_usage_error(a, "check which file?");
	for (int i = 0; i < argc; i++) {
		struct policy *p = policy_load(argv[i], NULL);

		if (!p) {
			status = 1;
			continue;
		}
		printf("%s: ok (%zu columns, %zu rules)\n", argv[i], p->ncols,
		       p->nrules);
		policy_free(p);
	}
	return status;
}

static int convert(struct cmd_args *a)
{
	struct strbuf out = STRBUF_INIT, comment = STRBUF_INIT;
	char **argv = a->argv;
	struct policy *p;
	struct filebuf fb;

	if (a->argc != 1)
		return cmd_usage_error(a, "convert takes one file");
	if (file_load(&fb, argv[0]) < 0)
		return 1;
	p = policy_parse(fb.data, fb.size, argv[0], NULL);
	if (!p) {
		file_release(&fb);
		return 1;
	}
	if (fb.size && fb.data[strspn(fb.data, " \t\r\n")] == '{') {
		/* Say where a converted policy came from. */
		struct json_value *doc = json_parse(fb.data, fb.size, argv[0]);
		const char *base = strrchr(argv[0], '/');
		const char *version = json_get_string(doc, "version");

		sb_addf(&comment, "Converted from %s%s%s%s by dmprof policy "
				  "convert.",
			base ? base + 1 : argv[0], version ? " (" : "",
			version ? version : "", version ? ")" : "");
		json_free(doc);
	}
	if (policy_write(p, &out, comment.buf) < 0) {
		sb_release(&out);
		sb_release(&comment);
		policy_free(p);
		file_release(&fb);
		return 1;
	}
	fwrite(out.buf, 1, out.len, stdout);
	sb_release(&out);
	sb_release(&comment);
	policy_free(p);
	file_release(&fb);
	return 0;
}

static int list(struct cmd_args *a)
{
	struct index_entry *idx;
	size_t n;

	if (a->argc)
		return cmd_usage_error(a, "list takes no arguments");
	if (policy_index(&idx, &n) < 0)
		return 1;
	printf("search path: %s\n", policy_search_path());
	for (size_t i = 0; i < n; i++)
		printf("%-18s %s%s\n", idx[i].label, idx[i].path,
		       idx[i].is_default ? "  (default)" : "");
	policy_index_free(idx, n);
	return 0;
}

static const char *const kind_names[] = {
	[COLUMN_RULE] = "rule",
	[COLUMN_COMPUTED] = "computed",
	[COLUMN_MARKER] = "marker",
	[COLUMN_TIME] = "time",
};

/*
 * The columns of a policy in order, each with its kind and either its
 * rules (in the order they are tried) or what dmprof computes it from.
 */
static int show(struct cmd_args *a)
{
	struct strbuf sb = STRBUF_INIT;
	struct policy *p;
	int width = 0;

	if (a->argc != 1)
		return cmd_usage_error(a, a->argc ? "show takes one policy"
						  : "show which policy?");
	p = policy_set_load_one(a->argv[0]);
	if (!p)
		return 1;
	printf("policy %s (%s): %zu columns, %zu rules\n\n", p->label,
	       p->path, p->ncols, p->nrules);
	for (size_t c = 0; c < p->ncols; c++)
		if ((int)strlen(p->cols[c].name) > width)
			width = (int)strlen(p->cols[c].name);
	if (width > 28)
		width = 28;
	for (size_t c = 0; c < p->ncols; c++) {
		const struct column *col = &p->cols[c];
		enum column_kind kind = column_kind(col);
		bool first = true;

		if (kind != COLUMN_RULE) {
			printf("%-*s  %-8s  %s\n", width, col->name,
			       kind_names[kind], column_doc(col));
			continue;
		}
		for (size_t r = 0; r < p->nrules; r++) {
			if (p->rules[r].column != c)
				continue;
			sb_reset(&sb);
			policy_write_rule(&sb, &p->rules[r]);
			printf("%-*s  %-8s  line %lu: %s\n", width,
			       first ? col->name : "", first ? "rule" : "",
			       p->rules[r].line, sb.buf);
			first = false;
		}
	}
	sb_release(&sb);
	policy_free(p);
	return 0;
}

static const char *const check_usage[] = { "FILE...", NULL };
static const struct cmd_entry check_entry = {
	"check", "load policies and report every problem", check_usage, NULL,
	0, NULL, check,
};

static const char *const convert_usage[] = { "FILE", NULL };
static const struct cmd_entry convert_entry = {
	"convert", "print a policy (from JSON or text) as text", convert_usage,
	NULL, 0, NULL, convert,
};

static const struct cmd_entry list_entry = {
	"list", "list the policies -p can name", NULL, NULL, 0, NULL, list,
};

static const char *const show_usage[] = { "POLICY", NULL };
static const struct cmd_entry show_entry = {
	"show", "print a policy's columns in order, with their rules", show_usage,
	NULL, 0, NULL, show,
};

static const struct cmd_entry *const subcommands[] = {
	&check_entry, &convert_entry, &list_entry, &show_entry, NULL,
};

const struct cmd_entry cmd_policy = {
	"policy", "check, convert, list or show policies", NULL, NULL, 0,
	subcommands, NULL,
};
