/*
 * dmprof folded [-p POLICY] [-c COMPONENT] DUMP: the bytes of one dump as
 * folded stacks, "root;...;leaf BYTES" a line, for flamegraph.pl,
 * speedscope and inferno.  Without -c the component is the root frame of
 * each line, so a flame graph's first level is the policy's components;
 * mappings no hook saw are a frame "PERMS PATH", unknown buckets a frame
 * of their own.  The lines of a component add up to its bytes in csv.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "setup.h"
#include "stacktext.h"
#include "tally.h"

struct folded {
	struct setup *o;
	int col;            /* -c, or -1 */
	struct tally stacks;
	struct strbuf key;
};

static const char *const usage[] = { "DUMP", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICY,
	OPTION_COMPONENT("only this component's stacks (and no "
			 "component frame)"),
	OPT_END,
};

static int add_item(void *ctx, const struct item *it)
{
	struct folded *f = ctx;
	struct strbuf *key = &f->key;
	const struct policy *p = f->o->policy;
	struct tally_entry *e;
	size_t at;

	/*
	 * Without -c, the components that partition the process (as top
	 * and html show them): the other columns count bytes a second time
	 * (the allocator's arenas hold the malloc'd blocks).
	 */
	if (f->col >= 0 ? !column_counts(p, f->col, it->kind, it->col)
			: !policy_in_partition(p, it->col >= 0 ? it->col
							       : p->col_no_bucket))
		return 0;
	if (!it->bytes)
		return 0;
	sb_reset(key);
	if (f->col < 0)
		sb_addf(key, "%s;", it->col >= 0 ? p->cols[it->col].name
						 : "no-bucket");
	at = key->len;
	item_text(key, &f->o->run.model, it, UINT64_MAX, STACK_FOLDED);
	/* A ';' or a line end in a mapping's name would cut the frame. */
	for (size_t i = at; it->kind == ITEM_UNHOOKED && i < key->len; i++)
		if (key->buf[i] == ';' || key->buf[i] == '\n')
			key->buf[i] = ':';
	e = tally_get(&f->stacks, key->buf, key->len);
	e->bytes = add64(e->bytes, it->bytes, &f->stacks.overflow);
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp((*(struct tally_entry *const *)a)->key,
		      (*(struct tally_entry *const *)b)->key);
}

static int cmd_folded_run(struct cmd_args *a)
{
	const char *component = args_get(a, 'c'), *policy;
	struct folded f;
	struct setup o;
	struct snapshot snap;
	int status;

	memset(&f, 0, sizeof(f));
	if ((status = setup_one_policy(a, &policy)))
		return status;
	if (a->argc != 1)
		return cmd_usage_error(a, a->argc ? "too many operands"
						  : "which dump?");
	if (setup_dump(&o, &snap, a, a->argv[0], policy) < 0)
		return 1;
	f.o = &o;
	f.col = -1;
	tally_init(&f.stacks);
	if (component && (f.col = setup_component(o.policy, component)) < 0)
		status = 1;
	if (!status) {
		snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
		if (aggregate_items(&o.cls, &snap, NULL, true, add_item, &f) < 0)
			status = 1;
	}
	if (!status && (f.stacks.overflow || snap.overflow))
		status = sizes_overflow(&snap);
	if (!status) {
		tally_sort(&f.stacks, cmp_key);
		for (size_t i = 0; i < f.stacks.n; i++)
			printf("%s %" PRId64 "\n", f.stacks.v[i]->key,
			       f.stacks.v[i]->bytes);
	}
	tally_free(&f.stacks);
	sb_release(&f.key);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

const struct cmd_entry cmd_folded = { .name = "folded", .run = cmd_folded_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print a dump's stacks folded, for flame graphs" };
