/*
 * dmprof html [-p POLICY[,POLICY]] [-o FILE] [-n N] FIRST_DUMP: the run as
 * one self-contained HTML page (src/cli/page.html, with the data of
 * pagedata.h where its @@DATA@@ line is): the stacked chart of the
 * components over time, a tab per policy, the stacks and flame graph
 * behind a band, the diff of two snapshots, the data table.  Written to
 * FILE.tmp and renamed, so a page is whole or absent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "change.h"
#include "pagedata.h"
#include "series.h"
#include "setup.h"
#include "tally.h"
#include "util.h"

extern const char page_html[];

static const char marker[] = "@@DATA@@\n";

/*
 * JSON inside <script>: no '<' at all, lest "</script" end the element or
 * "<!--<script" change how the rest is read.  (Every '<' is in a string,
 * where \u003c means the same.)
 */
static const char *const usage[] = { "FIRST_DUMP", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICIES,
	{ .key = 'o', .name = "output", .arg = "FILE",
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS,
	  .help = "write the page to FILE ('-': standard output; "
		  "default: the run's name.html, here)" },
	OPTION_ROWS("stacks kept per component at each snapshot that "
		    "keeps stacks (default 40)"),
	OPTION_OWNERS,
	OPT_END,
};

static void write_data(FILE *f, const struct strbuf *data)
{
	const char *p = data->buf, *end = data->buf + data->len;

	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));

		if (!lt) {
			fwrite(p, 1, (size_t)(end - p), f);
			break;
		}
		fwrite(p, 1, (size_t)(lt - p), f);
		fputs("\\u003c", f);
		p = lt + 1;
	}
	fputc('\n', f);
}

static int write_page(const char *path, const struct strbuf *data)
{
	const char *at = strstr(page_html, marker);
	struct strbuf tmp = STRBUF_INIT;
	bool out = !strcmp(path, "-");
	FILE *f;
	int rc = 0;

	if (out) {
		f = stdout;
	} else {
		sb_addf(&tmp, "%s.tmp", path);
		f = fopen(tmp.buf, "w");
		if (!f) {
			rc = error_errno("%s", tmp.buf);
			sb_release(&tmp);
			return rc;
		}
	}
	fwrite(page_html, 1, (size_t)(at - page_html), f);
	write_data(f, data);
	fputs(at + strlen(marker), f);
	if (out) {
		if (fflush(f) != 0 || ferror(f))
			rc = error_errno("standard output");
	} else {
		if (ferror(f) | (fclose(f) != 0))
			rc = error_errno("%s", tmp.buf);
		else if (rename(tmp.buf, path) < 0)
			rc = error_errno("%s", path);
		if (rc)
			remove(tmp.buf);
	}
	sb_release(&tmp);
	return rc;
}

/* FILE by default: the run's name, in the current directory. */
static char *default_output(const char *dump)
{
	char *prefix = NULL, *slash, *out;
	unsigned long counter;

	if (!series_split(dump, &prefix, &counter))
		prefix = xstrdup(dump);
	slash = strrchr(prefix, '/');
	out = xmalloc(strlen(prefix) + 6);
	sprintf(out, "%s.html", slash ? slash + 1 : prefix);
	free(prefix);
	return out;
}

/*
 * What grew from the first dump to the last before teardown (else the
 * last), under the policy named first, walked while the timeline reads
 * the dumps: every dump is read once.  The dumps after it are summed
 * too, for the run's shape: its peak is the one top and diff name.
 */
struct growth {
	struct run_teardown td;
	size_t b;               /* the run's dump B */
	struct change_walk w;
	bool walking;
	struct changes c;
	bool done;              /* c holds them */
	struct change_end *past; /* the dumps after B, up to the last */
	size_t npast, past_alloc;
	bool has_shape;
	struct run_shape shape;
};

static int grow_each(void *ctx, struct timeline *tl, size_t i,
		     const struct snapshot *snap)
{
	struct growth *g = ctx;

	if (i == 0) {
		series_teardown(&tl->run.series, tl->run.format, &g->td);
		g->b = g->td.before != SIZE_MAX && g->td.before > 0
			       ? g->td.before
			       : g->td.last;
		if (!g->b)
			return 0;
		change_walk_begin(&g->w, &g->c, &tl->run.model,
				  &tl->cls[tl->set.first], g->b, true);
		g->walking = true;
	}
	if (!g->walking || i > g->td.last)
		return 0;
	if (i > g->b) {
		GROW(g->past, g->npast + 1, g->past_alloc);
		if (changes_end_of(&g->past[g->npast], &tl->cls[tl->set.first],
				   &tl->run.model, snap) < 0)
			return -1;
		g->npast++;
		return 0;
	}
	return change_walk_add(&g->w, i, snap);
}

/* The run's shape, as diff FIRST has it (and top: the same peak). */
static void grow_shape(struct growth *g)
{
	changes_to_shape(&g->shape, &g->c,
			 g->npast ? &g->past[g->npast - 1] : NULL, &g->td);
	for (size_t k = 0; k + 1 < g->npast; k++)
		run_shape_note(&g->shape, &g->past[k]);
	g->has_shape = true;
}

static int cmd_html_run(struct cmd_args *a)
{
	struct timeline_options opt;
	struct pagedata_options po;
	struct strbuf data = STRBUF_INIT;
	struct timeline tl;
	struct owners owners;
	struct tally passed;
	struct growth grow;
	char *policies, *output = NULL, *title = NULL;
	size_t stacks;
	int status = 0;

	if (a->argc != 1)
		return cmd_usage_error(a, a->argc ? "too many operands"
						  : "which dump?");
	stacks = setup_rows(a, 40);
	setup_owners(a, &owners);
	output = args_get(a, 'o') ? xstrdup(args_get(a, 'o'))
				  : default_output(a->argv[0]);
	tally_init(&passed);
	memset(&opt, 0, sizeof(opt));
	opt.policy = policies = setup_policies(a);
	opt.dumps = (const char *const *)a->argv;
	opt.ndumps = 1;
	opt.sym = &a->sym;
	opt.read = &a->read;
	memset(&grow, 0, sizeof(grow));
	opt.each = grow_each;
	opt.ctx = &grow;
	/* file:line in the stacks, where the binaries say. */
	a->sym.want_source = true;
	if (timeline_build(&tl, &opt) < 0) {
		status = 1;
		goto out;
	}
	for (size_t i = 0; i < tl.set.n; i++)
		setup_owners_policy(&owners, tl.set.v[i]);
	title = xstrdup(tl.run.series.prefix);
	memset(&po, 0, sizeof(po));
	po.stacks = stacks;
	po.snapshots = 12;
	po.title = title;
	po.owners = &owners;
	po.passed = a->verbose ? &passed : NULL;
	if (grow.walking) {
		grow.walking = false;
		/* (A or B unread: no growth on the page, the rest is.) */
		grow.done = change_walk_end(&grow.w, 0) == 0;
		po.td = &grow.td;
		po.grew = grow.done ? &grow.c : NULL;
		if (grow.done)
			grow_shape(&grow);
		po.shape = grow.has_shape ? &grow.shape : NULL;
	}
	if (pagedata_write(&data, &tl, &po) < 0 ||
	    write_page(output, &data) < 0) {
		status = 1;
	} else {
		setup_say_passed(a, &owners, &passed, "bytes at the peak");
		if (strcmp(output, "-"))
			note("wrote %s (%zu KiB, %zu snapshots): open it in "
			     "a browser",
			     output,
			     (strlen(page_html) + data.len + 1023) / 1024,
			     tl.n);
	}
	if (!status && tl.skipped_errors)
		status = 1;
out:
	if (grow.walking)
		change_walk_end(&grow.w, -1);
	if (grow.done)
		changes_free(&grow.c);
	for (size_t k = 0; k < grow.npast; k++)
		change_end_free(&grow.past[k]);
	free(grow.past);
	run_shape_free(&grow.shape);
	timeline_free(&tl);
	sb_release(&data);
	free(policies);
	free(output);
	free(title);
	owners_release(&owners);
	tally_free(&passed);
	return status;
}

const struct cmd_entry cmd_html = { .name = "html", .run = cmd_html_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "write the run as one HTML page: chart, stacks, flame "
		   "graphs" };
