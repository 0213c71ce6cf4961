/*
 * dmprof pprof [-c COMPONENT] [-p POLICY] DUMP, or the original's pprof
 * DUMP POLICY: one dump as a legacy pprof heap
 * profile ("heap profile: ... @ heapprofile", stack lines,
 * MAPPED_LIBRARIES:), optionally only one component.  Committed bytes
 * stand in for in-use bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "aggregate.h"
#include "setup.h"
#include "text.h"

struct entry {
	int64_t objs;
	int64_t bytes;
	const struct stack *stack;
};

/* The profile's lines: hooked regions first (one object each), then
 * stack lines, as the original wrote them. */
struct profile {
	const struct policy *p;
	int col;               /* -c, or -1 */
	struct entry *v[2];    /* regions, lines */
	size_t n[2], alloc[2];
	bool overflow;
};

static int add_item(void *ctx, const struct item *it)
{
	struct profile *pr = ctx;
	int which = it->line ? 1 : 0;

	if (!it->bucket || it->kind == ITEM_UNHOOKED)
		return 0; /* no stack to show (said for unknown buckets) */
	if (!it->line && it->bytes == 0)
		return 0;
	if (pr->col >= 0 && !column_counts(pr->p, pr->col, it->kind, it->col))
		return 0;
	GROW(pr->v[which], pr->n[which] + 1, pr->alloc[which]);
	pr->v[which][pr->n[which]++] = (struct entry){
		it->line ? sub64(it->line->alloc, it->line->free, &pr->overflow)
			 : 1,
		it->bytes, it->bucket->stack
	};
	return 0;
}

static void print_item(const struct model *m, const struct entry *it)
{
	printf("%6" PRId64 ": %8" PRId64 " [%6" PRId64 ": %8" PRId64 "] @",
	       it->objs, it->bytes, it->objs, it->bytes);
	for (uint32_t i = 0; i < it->stack->depth; i++)
		printf(" 0x%016" PRIx64,
		       frame_get(&m->frames, it->stack->frames[i])->addr);
	putchar('\n');
}

/*
 * Can column C hold what a profile shows, stacks of malloc lines or of
 * hooked regions?  Not unhooked regions, nor unknown buckets.
 */
static bool has_stacks(const struct policy *p, int c)
{
	if (p->cols[c].builtin == B_NO_BUCKET)
		return false;
	if (p->cols[c].builtin != B_NONE)
		return true;
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].column == (uint32_t)c &&
		    p->rules[i].alloc != RULE_UNHOOKED)
			return true;
	return false;
}

static int run(struct cmd_args *a)
{
	const char *component = args_get(a, 'c'), *policy;
	struct profile pr;
	int64_t objs = 0, bytes = 0;
	struct setup o;
	struct snapshot snap;
	int col = -1, status;

	memset(&pr, 0, sizeof(pr));
	if ((status = setup_policy_operand(a, &policy)))
		return status;
	if (setup_dump(&o, &snap, a, a->argv[0], policy) < 0)
		return 1;
	if (component && (col = setup_component(o.policy, component)) < 0) {
		status = 1;
		goto out;
	}
	if (component && !has_stacks(o.policy, col)) {
		error("'%s' of policy '%s' holds only %s, which have no stacks "
		      "for a pprof profile; 'dmprof expand' lists them",
		      component, o.policy->label,
		      col == o.policy->col_no_bucket
			      ? "the bytes of unknown buckets"
			      : "unhooked regions");
		status = 1;
		goto out;
	}
	snapshot_warn_unknown_buckets(&snap, "left out");
	pr.p = o.policy;
	pr.col = component ? col : -1;
	if (aggregate_items(&o.cls, &snap, NULL, false, add_item, &pr) < 0) {
		status = 1;
		goto out;
	}
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < pr.n[w]; i++) {
			objs = add64(objs, pr.v[w][i].objs, &pr.overflow);
			bytes = add64(bytes, pr.v[w][i].bytes, &pr.overflow);
		}
	if (pr.overflow || snap.overflow) {
		status = sizes_overflow(&snap);
		goto out;
	}
	printf("heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64
	       ": %8" PRId64 "] @ heapprofile\n",
	       objs, bytes, objs, bytes);
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < pr.n[w]; i++)
			print_item(&o.run.model, &pr.v[w][i]);
	printf("MAPPED_LIBRARIES:\n");
	if (o.run.has_maps) {
		struct filebuf fb;

		if (file_load(&fb, o.run.maps.path) == 0) {
			fwrite(fb.data, 1, fb.size, stdout);
			file_release(&fb);
		}
	} else if (snap.has_own_maps) {
		/* A gperftools profile: its own maps trailer. */
		for (size_t i = 0; i < snap.own_maps.n; i++) {
			const struct vma *v = &snap.own_maps.v[i];

			printf("%08" PRIx64 "-%08" PRIx64 " %s %08" PRIx64
			       " %02x:%02x %-11" PRIu64 " %s\n",
			       v->start, v->end, v->perms, v->offset, v->major,
			       v->minor, v->inode, v->name);
		}
	}
out:
	free(pr.v[0]);
	free(pr.v[1]);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

static const struct cmd_option options[] = {
	OPTION_COMPONENT("only this component"),
	OPTION_POLICY,
	OPT_END,
};

static const char *const usage[] = { "DUMP", "DUMP POLICY", NULL };

const struct cmd_entry cmd_pprof = {
	"pprof", "convert a dump to a legacy pprof heap profile", usage,
	options, CMD_READS_DUMPS, NULL, run,
};
