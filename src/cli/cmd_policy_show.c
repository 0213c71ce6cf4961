/*
 * dmprof policy show POLICY: its columns in order, with their rules.
 */
#include <stdio.h>
#include <string.h>

#include "cmd_policy.h"

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

static const char *const usage[] = { "POLICY", NULL };

const struct cmd_entry cmd_policy_show = { .name = "show", .run = show,
	.usage = usage,
	.summary = "print a policy's columns in order, with their rules" };
