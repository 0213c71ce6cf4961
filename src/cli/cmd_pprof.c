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

struct item {
	int64_t objs;
	int64_t bytes;
	const struct stack *stack;
};

static void print_item(const struct model *m, const struct item *it)
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
	struct item *items = NULL;
	size_t n = 0, alloc = 0;
	int64_t objs = 0, bytes = 0;
	bool overflow = false;
	struct setup o;
	struct snapshot snap;
	int col = -1, status;

	if ((status = setup_policy_operand(a, &policy)))
		return status;
	if (setup_open(&o, a, a->argv[0], policy, false) < 0 ||
	    run_load_dump(&o.run, 0, &snap) < 0) {
		setup_close(&o);
		return 1;
	}
	run_symbolize_snapshot(&o.run, &snap);
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
	/* Hooked regions first, one object each, then malloc lines. */
	for (size_t i = 0; i < snap.nregions; i++) {
		const struct region *r = &snap.regions[i];
		int rc;

		if (r->kind != REGION_HOOKED || !r->bucket || !r->has_committed ||
		    r->committed == 0)
			continue;
		rc = classify_hooked(&o.cls, r->bucket, &snap.vmas[r->vma], 0);
		if (rc < -1) {
			status = 1;
			goto out;
		}
		if (component &&
		    !column_counts(o.policy, col, ITEM_HOOKED, rc))
			continue;
		GROW(items, n + 1, alloc);
		items[n++] = (struct item){ 1, r->committed, r->bucket->stack };
	}
	for (size_t i = 0; i < snap.nlines; i++) {
		const struct stack_line *l = &snap.lines[i];
		int rc;

		if (!l->bucket)
			continue;
		if (l->bucket->kind == ALLOC_MMAP) {
			/* A profile without MMAP_LIST has its mmap here. */
			if (snap.format != FORMAT_GPERFTOOLS)
				continue;
			rc = classify_hooked(&o.cls, l->bucket, &vma_unknown, 0);
		} else {
			rc = classify_malloc(&o.cls, l->bucket);
		}
		if (rc < -1) {
			status = 1;
			goto out;
		}
		if (component &&
		    !column_counts(o.policy, col,
				   l->bucket->kind == ALLOC_MMAP ? ITEM_HOOKED
								 : ITEM_MALLOC,
				   rc))
			continue;
		GROW(items, n + 1, alloc);
		items[n++] = (struct item){ sub64(l->alloc, l->free, &overflow),
					    l->committed, l->bucket->stack };
	}
	for (size_t i = 0; i < n; i++) {
		objs = add64(objs, items[i].objs, &overflow);
		bytes = add64(bytes, items[i].bytes, &overflow);
	}
	if (overflow || snap.overflow) {
		status = -error("%s: sizes add up to more than 64 bits hold (a "
			       "corrupt dump?)", snap.path);
		goto out;
	}
	printf("heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64
	       ": %8" PRId64 "] @ heapprofile\n",
	       objs, bytes, objs, bytes);
	for (size_t i = 0; i < n; i++)
		print_item(&o.run.model, &items[i]);
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
	free(items);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

static const struct cmd_option options[] = {
	{ 'c', "component", "COMPONENT", OPT_VALUE | OPT_SYNOPSIS,
	  "only this component" },
	OPTION_POLICY,
	OPT_END,
};

static const char *const usage[] = { "DUMP", "DUMP POLICY", NULL };

const struct cmd_entry cmd_pprof = {
	"pprof", "convert a dump to a legacy pprof heap profile", usage,
	options, CMD_READS_DUMPS, NULL, run,
};
