/*
 * dmprof pprof [-c COMPONENT] [-p POLICY] [--proto | --original] DUMP, or
 * the original's pprof DUMP POLICY: one dump as a pprof heap profile, the
 * legacy text one ("heap profile: ... @ heapprofile", stack lines,
 * MAPPED_LIBRARIES:) or a gzipped profile.proto whose samples carry their
 * component and policy as labels.  Committed bytes stand in for in-use
 * bytes.
 *
 * What is exported is what csv counts: the components between the
 * policy's markers, or COMPONENT, each byte once (the allocator's arenas
 * hold the malloc'd blocks a second time, and are outside the markers).
 * Malloc'd blocks and hooked regions come with their stacks; what has
 * none, a mapping no hook saw, an unknown bucket, a computed component
 * such as malloc-unused, comes as a line without frames (text) or with
 * one frame that names it (protobuf), so the totals are csv's.
 * --original writes the original's text instead: every hooked region,
 * then every malloc line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aggregate.h"
#include "pprof_write.h"
#include "setup.h"
#include "stacktext.h"
#include "strtab.h"
#include "input.h"

enum { OPT_ORIGINAL = OPT_LONG_ONLY, OPT_PROTO };

struct export {
	const struct model *m;
	const struct policy *p;
	int col;               /* -c, or -1 */
	bool original;
	/*
	 * The text profile (not --original's): a line with bytes counts
	 * one object at least, as the original counted a hooked region.
	 * pprof's readers refuse bytes without objects (go tool pprof:
	 * "inuse count was 0 but inuse bytes was ..."), and a component
	 * computed whole (malloc-unused) or a mapping has no count.
	 */
	bool counted;
	/* --original: hooked regions (one object each), then stack lines,
	 * as the original wrote them; else all in v[1], in item order. */
	struct pprof_sample *v[2];
	size_t n[2], alloc[2];
	int64_t *sums;         /* the entries' bytes by component */
	struct strtab names;   /* of entries without stacks */
	struct arena arena;
	struct strbuf sb;
	bool overflow;
};

static const char *const usage[] = { "DUMP", "DUMP POLICY", NULL };
static const struct cmd_option options[] = {
	OPTION_COMPONENT("only this component"),
	OPTION_POLICY,
	{ .key = OPT_PROTO, .name = "proto", .flags = OPT_SYNOPSIS,
	  .help = "a gzipped profile.proto, component and policy as "
		  "sample labels (go tool pprof, speedscope, "
		  "Pyroscope open it)" },
	{ .key = OPT_ORIGINAL, .name = "original",
	  .flags = OPT_SYNOPSIS,
	  .help = "the original's text: every hooked region and "
		  "malloc line, the allocator's arenas beside the "
		  "blocks they hold" },
	OPT_END,
};

static void add_entry(struct export *x, int which, struct pprof_sample e)
{
	if (x->counted && e.bytes > 0 && e.objs < 1)
		e.objs = 1;
	GROW(x->v[which], x->n[which] + 1, x->alloc[which]);
	x->v[which][x->n[which]++] = e;
	if (e.col >= 0)
		x->sums[e.col] = add64(x->sums[e.col], e.bytes, &x->overflow);
}

static int64_t item_objects(struct export *x, const struct item *it)
{
	return it->line ? sub64(it->line->alloc, it->line->free, &x->overflow)
			: 1;
}

/* The original's lines: every hooked region and malloc line in scope. */
static int add_original(void *ctx, const struct item *it)
{
	struct export *x = ctx;

	if (!it->bucket || it->kind == ITEM_UNHOOKED)
		return 0; /* no stack to show (said for unknown buckets) */
	if (!it->line && it->bytes == 0)
		return 0;
	if (x->col >= 0 && !column_counts(x->p, x->col, it->kind, it->col))
		return 0;
	add_entry(x, it->line ? 1 : 0,
		  (struct pprof_sample){ item_objects(x, it), it->bytes,
				  it->bucket->stack, NULL, -1 });
	return 0;
}

static int add_item(void *ctx, const struct item *it)
{
	struct export *x = ctx;
	/* (An unknown bucket's bytes are no-bucket's, if the policy has it.) */
	int col = it->col >= 0 ? it->col : x->p->col_no_bucket;
	struct pprof_sample e;

	if (x->col >= 0 ? !column_counts(x->p, x->col, it->kind, it->col)
			: !policy_in_partition(x->p, col))
		return 0;
	e = (struct pprof_sample){ item_objects(x, it), it->bytes, NULL, NULL,
			    x->col >= 0 ? x->col : col };
	if (!e.objs && !e.bytes)
		return 0;
	if (it->bucket) {
		e.stack = it->bucket->stack;
	} else {
		sb_reset(&x->sb);
		item_text(&x->sb, x->m, it, UINT64_MAX, STACK_FOLDED);
		e.name = strtab_intern(&x->names, x->sb.buf, x->sb.len);
	}
	add_entry(x, 1, e);
	return 0;
}

/*
 * What the items did not give of each component exported: a computed
 * component's bytes (malloc-unused, tc-unused, a GLOBAL_STATS row...),
 * as one entry named for it.
 */
static void add_rest(struct export *x, const int64_t *values)
{
	for (size_t c = 0; c < x->p->ncols; c++) {
		int64_t rest;

		if (x->col >= 0 ? (int)c != x->col
				: !policy_in_partition(x->p, (int)c))
			continue;
		rest = sub64(values[c], x->sums[c], &x->overflow);
		if (rest < 0)
			warning("'%s' holds %" PRId64 " B, less than the %" PRId64
				" B of its parts: the export says %" PRId64
				" B", x->p->cols[c].name, values[c],
				x->sums[c], x->sums[c]);
		if (rest <= 0)
			continue;
		sb_reset(&x->sb);
		sb_addf(&x->sb, "<%s>", x->p->cols[c].name);
		add_entry(x, 1, (struct pprof_sample){
			0, rest, NULL,
			strtab_intern(&x->names, x->sb.buf, x->sb.len),
			(int)c });
	}
}

/* ---- the legacy text profile ---- */

static void print_entry(const struct model *m, const struct pprof_sample *e)
{
	printf("%6" PRId64 ": %8" PRId64 " [%6" PRId64 ": %8" PRId64 "] @",
	       e->objs, e->bytes, e->objs, e->bytes);
	for (uint32_t i = 0; e->stack && i < e->stack->depth; i++)
		printf(" 0x%016" PRIx64,
		       frame_get(&m->frames, e->stack->frames[i])->addr);
	putchar('\n');
}

static void print_text(struct export *x, const struct setup *o,
		       const struct snapshot *snap, int64_t objs, int64_t bytes)
{
	printf("heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64
	       ": %8" PRId64 "] @ heapprofile\n",
	       objs, bytes, objs, bytes);
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < x->n[w]; i++)
			print_entry(x->m, &x->v[w][i]);
	printf("MAPPED_LIBRARIES:\n");
	if (o->run.has_maps && !o->run.maps.path) {
		/* (The dumps' own: a MAPS section's text.) */
		fwrite(o->run.dump_maps.text.buf, 1, o->run.dump_maps.text.len,
		       stdout);
	} else if (o->run.has_maps) {
		struct filebuf fb;

		if (file_load(&fb, o->run.maps.path) == 0) {
			fwrite(fb.data, 1, fb.size, stdout);
			file_release(&fb);
		}
	} else if (snap->has_own_maps) {
		/* A gperftools profile: its own maps trailer. */
		for (size_t i = 0; i < snap->own_maps.n; i++) {
			const struct vma *v = &snap->own_maps.v[i];

			printf("%08" PRIx64 "-%08" PRIx64 " %s %08" PRIx64
			       " %02x:%02x %-11" PRIu64 " %s\n",
			       v->start, v->end, v->perms, v->offset, v->major,
			       v->minor, v->inode, v->name);
		}
	}
}

/* ---- profile.proto ---- */

static void write_proto(struct export *x, const struct snapshot *snap,
			const struct maps *maps)
{
	struct pprof_profile pp = {
		.m = x->m, .p = x->p, .maps = maps, .time = snap->time,
		.dump = snap->path,
		.what = x->col >= 0 ? x->p->cols[x->col].name
				    : "the components between the markers",
	};
	struct strbuf gz = STRBUF_INIT;

	pprof_write(&pp, x->v[1], x->n[1], &gz);
	fwrite(gz.buf, 1, gz.len, stdout);
	sb_release(&gz);
}

/* ---- the command ---- */

/*
 * Can column C hold what the original's profile shows, stacks of malloc
 * lines or of hooked regions?  Not unhooked regions, nor unknown buckets.
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

static int collect(struct export *x, struct setup *o, struct snapshot *snap)
{
	int64_t *values;
	int rc = 0;

	if (x->original) {
		if (x->col >= 0 && !has_stacks(x->p, x->col))
			return error("'%s' of policy '%s' holds only %s, which "
				     "have no stacks for the original's "
				     "profile; 'dmprof expand' lists them",
				     x->p->cols[x->col].name, x->p->label,
				     x->col == x->p->col_no_bucket
					     ? "the bytes of unknown buckets"
					     : "unhooked regions");
		snapshot_warn_unknown_buckets(snap, "left out");
		/* (The original saw regions whole.) */
		return aggregate_items(&o->cls, snap, NULL, false,
				       add_original, x);
	}
	snapshot_warn_unknown_buckets(snap, "counted as no-bucket");
	values = xcalloc(x->p->ncols, sizeof(*values));
	if (aggregate_snapshot(&o->cls, snap, NULL, values, NULL, NULL) < 0 ||
	    aggregate_items(&o->cls, snap, NULL, true, add_item, x) < 0)
		rc = -1;
	else
		add_rest(x, values);
	free(values);
	return rc;
}

static int cmd_pprof_run(struct cmd_args *a)
{
	const char *component = args_get(a, 'c'), *policy;
	bool proto = args_has(a, OPT_PROTO);
	struct export x;
	int64_t objs = 0, bytes = 0;
	struct setup o;
	struct snapshot snap;
	int status;

	memset(&x, 0, sizeof(x));
	x.col = -1;
	x.original = args_has(a, OPT_ORIGINAL);
	x.counted = !x.original && !proto;
	if (proto && x.original)
		return cmd_usage_error(a, "--original is the original's text "
					  "profile, not --proto");
	if (proto && isatty(STDOUT_FILENO))
		return cmd_usage_error(a, "--proto writes a gzipped profile: "
					  "redirect it to a file");
	if ((status = setup_policy_operand(a, &policy)))
		return status;
	/* file:line in the protobuf's functions. */
	if (proto)
		a->sym.want_source = true;
	if (setup_dump(&o, &snap, a, a->argv[0], policy) < 0)
		return 1;
	x.m = &o.run.model;
	x.p = o.policy;
	strtab_init(&x.names, &x.arena);
	x.sums = xcalloc(x.p->ncols, sizeof(*x.sums));
	if (component && (x.col = setup_component(o.policy, component)) < 0) {
		status = 1;
		goto out;
	}
	if (collect(&x, &o, &snap) < 0) {
		status = 1;
		goto out;
	}
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < x.n[w]; i++) {
			objs = add64(objs, x.v[w][i].objs, &x.overflow);
			bytes = add64(bytes, x.v[w][i].bytes, &x.overflow);
		}
	if (x.overflow || snap.overflow) {
		status = sizes_overflow(&snap);
		goto out;
	}
	if (proto)
		write_proto(&x, &snap,
			    snap.has_own_maps ? &snap.own_maps
			    : o.run.has_maps  ? &o.run.maps
					       : NULL);
	else
		print_text(&x, &o, &snap, objs, bytes);
out:
	free(x.v[0]);
	free(x.v[1]);
	free(x.sums);
	sb_release(&x.sb);
	strtab_free(&x.names);
	arena_free(&x.arena);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

const struct cmd_entry cmd_pprof = { .name = "pprof", .run = cmd_pprof_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "convert a dump to a pprof heap profile (text or protobuf)" };
