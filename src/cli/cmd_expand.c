/*
 * dmprof expand [-l] [-p POLICY] DUMP COMPONENT [DEPTH], or the original's
 * expand DUMP POLICY COMPONENT [DEPTH]: the stacks behind one component
 * of one dump, cut to DEPTH+1 frames (all by default), summed, largest
 * first.
 *
 * By default a line is its frames ("func (file:line) <- caller ...") and
 * its counts are the sums of every stack cut to them.  --original prints
 * the original's lines, keyed by frames and counts together: malloc
 * stacks with their counts and type, mmap regions with their stack,
 * unhooked regions (the original printed nothing) by mapping, no-bucket
 * by the ids of the unknown buckets.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "blocktypes.h"
#include "capture.h"
#include "inspect.h"
#include "numfmt.h"
#include "pymalloc.h"
#include "setup.h"
#include "stacktext.h"
#include "tally.h"
#include "scan.h"
#include "suggest.h"

/* What to expand, and how. */
struct expand {
	struct setup *o;
	int col;
	uint64_t depth;   /* frames after the first; UINT64_MAX: all */
	bool original;    /* --original: the original's lines */
	bool counts;      /* the dump counts allocations and frees */
	bool lines;       /* -l: file:line (in the original's lines) */
	struct tally sums;
	struct strbuf key;
};

enum {
	OPT_ORIGINAL = OPT_LONG_ONLY,
};

/* "(alloc=N) (free=N) ", or "?" where the profile does not count. */
static const char *const usage[] = { "DUMP COMPONENT [DEPTH]",
				     "DUMP POLICY COMPONENT [DEPTH]",
				     "-t TYPE DUMP", "-t TYPE CORE",
				     "-t TYPE PID", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICY,
	{ .key = 'l', .name = "lines", .flags = OPT_SYNOPSIS,
	  .help = "with --original: the line of each source file" },
	{ .key = OPT_ORIGINAL, .name = "original",
	  .flags = OPT_SYNOPSIS,
	  .help = "the original's lines, keyed by frames and counts, "
		  "\"func(@file)\" frames" },
	{ .key = 't', .name = "type", .arg = "TYPE", .type = OPT_STRING,
	  .empty = "which type? (a name of top's types table)",
	  .help = "the blocks of TYPE (of a snapshot, a core, a process): "
		  "address, size, first bytes" },
	OPT_END,
};

static void counts_text(struct expand *x, const struct item *it)
{
	if (x->counts)
		sb_addf(&x->key, "(alloc=%" PRId64 ") (free=%" PRId64 ") ",
			it->line->alloc, it->line->free);
	else
		sb_addstr(&x->key, "(alloc=?) (free=?) ");
}

/* The original's line text for an item. */
static void original_key(struct expand *x, const struct item *it)
{
	const struct model *m = &x->o->run.model;
	struct strbuf *key = &x->key;

	switch (it->kind) {
	case ITEM_LINE_NO_BUCKET:
		counts_text(x, it);
		sb_addf(key, "(bucket=%" PRIu64 ") ", it->bucket_id);
		break;
	case ITEM_MALLOC:
		counts_text(x, it);
		if (bucket_typeinfo(it->bucket))
			sb_addf(key, "(type=%s) (type.name=%s) ",
				bucket_type_sym(it->bucket),
				bucket_type_name(it->bucket));
		stack_text(key, m, it->bucket->stack, x->depth,
			   x->lines ? STACK_ORIGINAL_LINES : STACK_ORIGINAL);
		break;
	case ITEM_HOOKED:
		stack_text(key, m, it->bucket->stack, x->depth,
			   x->lines ? STACK_ORIGINAL_LINES : STACK_ORIGINAL);
		break;
	case ITEM_UNHOOKED:
		sb_addf(key, "%s %s", it->vma->perms,
			*it->vma->name ? it->vma->name : "[anonymous]");
		break;
	case ITEM_REGION_NO_BUCKET:
		sb_addf(key, "(mmap) (bucket=%" PRIu64 ") ", it->bucket_id);
		break;
	}
}

/*
 * The summing line's key: a kind (so that malloc counts never mix with
 * a region's) and what is printed.
 */
static void summing_key(struct expand *x, const struct item *it)
{
	struct strbuf *key = &x->key;

	sb_addch(key, "mhuLR"[it->kind]);
	item_text(key, &x->o->run.model, it, x->depth, STACK_CALLERS);
}

static int add_item(void *ctx, const struct item *it)
{
	struct expand *x = ctx;
	struct tally_entry *e;

	if (!column_counts(x->o->policy, x->col, it->kind, it->col))
		return 0;
	sb_reset(&x->key);
	if (x->original)
		original_key(x, it);
	else
		summing_key(x, it);
	e = tally_get(&x->sums, x->key.buf, x->key.len);
	e->bytes = add64(e->bytes, it->bytes, &x->sums.overflow);
	if (it->line && x->counts) {
		e->allocs = add64(e->allocs, it->line->alloc,
				  &x->sums.overflow);
		e->frees = add64(e->frees, it->line->free, &x->sums.overflow);
		e->flags = 1; /* has counts */
	}
	return 0;
}

static void print(const struct expand *x)
{
	for (size_t i = 0; i < x->sums.n; i++) {
		const struct tally_entry *e = x->sums.v[i];

		if (x->original)
			printf("%10" PRId64 " %s\n", e->bytes, e->key);
		else if (e->flags)
			printf("%10" PRId64 "  alloc=%" PRId64 " free=%" PRId64
			       "  %s\n", e->bytes, e->allocs, e->frees,
			       e->key + 1);
		else
			printf("%10" PRId64 "  %s\n", e->bytes, e->key + 1);
	}
}

/* Up to LISTED_HEAD bytes as hexdump -C shows them, indented. */
static void hexdump(const uint8_t *p, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	format_hexdump(&sb, p, n, "    ");
	fputs(sb.buf ? sb.buf : "", stdout);
	sb_release(&sb);
}

/* Largest first, then by address. */
static int cmp_listed(const void *x, const void *y)
{
	const struct listed_block *a = *(const struct listed_block *const *)x;
	const struct listed_block *b = *(const struct listed_block *const *)y;

	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/*
 * The blocks of the component the snapshot lists one by one (the leaked
 * blocks of a heap scanned from outside): address, size, what it is,
 * and its first bytes, largest first.  0, or -1 when a rule failed.
 */
static int print_listed(struct expand *x, const struct snapshot *snap)
{
	const struct listed_block **v;
	size_t n = 0;
	uint64_t bytes = 0;

	if (!snap->nlisted)
		return 0;
	v = xcalloc(snap->nlisted, sizeof(*v));
	for (size_t i = 0; i < snap->nlisted; i++) {
		const struct listed_block *b = &snap->listed[i];
		int col = classify_malloc(&x->o->cls, b->bucket);

		if (col == -2) {
			free(v);
			return -1;
		}
		if (column_counts(x->o->policy, x->col, ITEM_MALLOC, col)) {
			v[n++] = b;
			bytes += b->size;
		}
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_listed);
		printf("\n%zu leaked block%s, %" PRIu64 " bytes%s:\n", n,
		       n == 1 ? "" : "s", bytes,
		       snap->heap.leaked_count > snap->nlisted
			       ? " (the largest leaked blocks are listed)"
			       : "");
	}
	for (size_t i = 0; i < n; i++) {
		const struct listed_block *b = v[i];
		const char *type = bucket_type_sym(b->bucket);

		printf("  0x%" PRIx64 "  %" PRIu64 " bytes  %s%s\n", b->addr,
		       b->size, type ? type : "unknown",
		       b->unreferenced ? "  (unreferenced)" : "");
		hexdump(b->head, b->nhead);
	}
	free(v);
	return 0;
}

/* ---- expand -t TYPE: the blocks of a type ---- */

/* "TYPE: N blocks in use, B bytes (their chunks), L leaked". */
static void type_heading(const char *type, int64_t blocks, int64_t bytes,
			 int64_t leaked, bool scanned)
{
	printf("%s: %" PRId64 " block%s in use, %" PRId64 " bytes (their "
	       "chunks)", type, blocks, blocks == 1 ? "" : "s", bytes);
	if (scanned)
		printf(", %" PRId64 " leaked", leaked);
	printf("\n");
}

/* No block of TYPE: say so, with the names nearest it among NAMES. */
static int no_such_type(const char *what, const char *type,
			const char *const *names, size_t n)
{
	const char *near[3];
	size_t k = suggest(type, names, n, near, 3);

	if (!k)
		return error("%s: no block in use of type '%s' (top's types "
			     "table names them)", what, type);
	return error("%s: no block in use of type '%s'; did you mean '%s'%s%s"
		     "%s%s?", what, type, near[0], k > 1 ? ", '" : "",
		     k > 1 ? near[1] : "", k > 1 ? "'" : "",
		     k > 2 ? " or another" : "");
}

/* The blocks of TYPE in a process or a core: each, by address. */
static int type_in_memory(struct cmd_args *a, pid_t pid, const char *core,
			  const char *type)
{
	struct inspect in;
	struct capture s;
	int64_t bytes = 0, leaked = 0;
	int rc = 0;

	inspect_init(&in, NULL, 0, type);
	if ((core ? capture_core(&s, core, &a->read, &in.hook)
		  : capture_process(&s, pid, true,
				    capture_default_max_copy(),
				    &in.hook)) < 0) {
		inspect_release(&in);
		return 1;
	}
	if (!s.walked) {
		fault_error(&s.h.why, NULL);
		rc = 1;
	} else if (!in.nblocks) {
		struct strbuf sb = STRBUF_INIT;
		struct tally names;

		tally_init(&names);
		for (size_t i = 0; i < s.h.nblocks; i++) {
			const char *name = inspect_type_name(&s, i, &sb);

			if (s.h.blocks[i].state == HEAP_IN_USE)
				tally_get(&names, name, strlen(name));
		}
		for (size_t i = 0; s.h.py && s.h.py->walked &&
				   i < s.h.py->ntypes; i++)
			if (s.h.py->types[i].count)
				tally_get(&names, s.h.py->types[i].name,
					  strlen(s.h.py->types[i].name));
		{
			const char **v = xcalloc(names.n + 1, sizeof(*v));

			for (size_t i = 0; i < names.n; i++)
				v[i] = names.v[i]->key;
			no_such_type(core ? core : s.img->name, type, v,
				     names.n);
			free(v);
		}
		tally_free(&names);
		sb_release(&sb);
		rc = 1;
	}
	for (size_t k = 0; k < in.nblocks; k++) {
		const struct inspect_block *ib = &in.blocks[k];

		bytes += (int64_t)ib->size;
		leaked += !ib->py && s.scanned &&
			  s.scan.state[ib->block] >= REACH_LEAKED;
	}
	if (in.nblocks)
		type_heading(type, (int64_t)in.nblocks, bytes, leaked,
			     s.scanned);
	for (size_t k = 0; k < in.nblocks; k++) {
		static const char *const reach[] = {
			"", "  anchored", "  leaked", "  leaked, unreferenced"
		};
		const struct inspect_block *ib = &in.blocks[k];

		printf("  0x%" PRIx64 "  %" PRIu64 " bytes%s%s%s\n", ib->addr,
		       ib->size,
		       s.scanned && !ib->py ? reach[s.scan.state[ib->block] & 3]
					    : "",
		       ib->value ? "  " : "", ib->value ? ib->value : "");
		hexdump(ib->head, ib->nhead);
	}
	capture_free(&s);
	inspect_release(&in);
	return rc;
}

/* The blocks of TYPE a dump lists (its largest leaked ones). */
static int type_in_dump(struct cmd_args *a, const char *what,
			const char *type)
{
	struct setup o;
	struct snapshot snap;
	struct tally types;
	const struct tally_entry *e;
	size_t n = 0;
	int rc = 0;

	if (setup_dump(&o, &snap, a, what, NULL) < 0)
		return 1;
	tally_init(&types);
	blocktypes_add_snapshot(&types, &o.run.model, &snap);
	e = tally_find(&types, type, strlen(type));
	if (!snap.has_heap) {
		rc = error("%s holds no walked heap: its blocks are known by "
			   "their stacks (expand DUMP COMPONENT)", what);
	} else if (!e) {
		const char **v = xcalloc(types.n + 1, sizeof(*v));

		for (size_t i = 0; i < types.n; i++)
			v[i] = types.v[i]->key;
		rc = no_such_type(what, type, v, types.n);
		free(v);
	} else {
		type_heading(type, e->allocs, e->bytes,
			     e->v[BLOCKTYPES_LEAKED], snap.heap.scanned);
		for (size_t i = 0; i < snap.nlisted; i++) {
			const struct listed_block *b = &snap.listed[i];
			const char *name =
				blocktypes_name(&o.run.model, b->bucket);

			if (!name || strcmp(name, type))
				continue;
			printf("  0x%" PRIx64 "  %" PRIu64 " bytes  %s\n",
			       b->addr, b->size,
			       b->unreferenced ? "leaked, unreferenced"
					       : "leaked");
			hexdump(b->head, b->nhead);
			n++;
		}
		if ((int64_t)n < e->allocs)
			printf("(%s keeps only its largest leaked blocks: %zu "
			       "of these %" PRId64 " listed; the process or a "
			       "core lists them all)\n", what, n, e->allocs);
	}
	tally_free(&types);
	snapshot_release(&snap);
	setup_close(&o);
	return rc ? 1 : 0;
}

static int expand_type(struct cmd_args *a, const char *type)
{
	enum dump_format format;
	pid_t pid;
	int status;

	if (a->argc != 1 || args_has(a, OPT_POLICY) ||
	    args_has(a, OPT_ORIGINAL) || args_has(a, 'l'))
		return cmd_usage_error(a, "-t TYPE lists the blocks of a type: "
					  "one operand (DUMP, CORE or PID), "
					  "no component, policy, --original "
					  "or -l");
	if ((status = setup_memory_operand(a, a->argv[0], &pid, &format)))
		return status;
	if (pid || format == FORMAT_CORE)
		return type_in_memory(a, pid, pid ? NULL : a->argv[0], type);
	return type_in_dump(a, a->argv[0], type);
}

/*
 * The operands: DUMP COMPONENT [DEPTH] with -p or the default policy, or
 * the original's DUMP POLICY COMPONENT [DEPTH].  Three operands without
 * -p are the original's when the second names a policy.
 */
static int operands(struct cmd_args *a, const char **dump,
		    const char **policy, const char **component,
		    const char **depth)
{
	char **v = a->argv;
	int n = a->argc, rc;

	*depth = NULL;
	if ((rc = setup_one_policy(a, policy)))
		return rc;
	if (n < 2)
		return cmd_usage_error(a, "expected DUMP COMPONENT [DEPTH]");
	*dump = v[0];
	if (*policy) {
		if (n == 4)
			return cmd_usage_error(a, "the policy is given twice "
						  "(-p %s and '%s')",
					       *policy, v[1]);
		if (n > 3)
			return cmd_usage_error(a, "too many operands");
		*component = v[1];
		*depth = n == 3 ? v[2] : NULL;
		return 0;
	}
	if (n > 4)
		return cmd_usage_error(a, "too many operands");
	if (n == 4 || (n == 3 && policy_known(v[1]))) {
		*policy = v[1];
		*component = v[2];
		*depth = n == 4 ? v[3] : NULL;
	} else {
		*component = v[1];
		*depth = n == 3 ? v[2] : NULL;
	}
	return 0;
}

static int cmd_expand_run(struct cmd_args *a)
{
	struct setup o;
	struct snapshot snap;
	struct expand x;
	const char *dump = NULL, *policy, *component = NULL, *depth;
	int status;

	memset(&x, 0, sizeof(x));
	if (args_has(a, 't'))
		return expand_type(a, args_get(a, 't'));
	if ((status = operands(a, &dump, &policy, &component, &depth)))
		return status;
	x.depth = UINT64_MAX;
	if (depth && word_u64(depth, strlen(depth), &x.depth) != NUM_OK)
		return cmd_usage_error(a, "DEPTH must be a number of frames, "
					  "not '%s'", depth);
	x.original = args_has(a, OPT_ORIGINAL);
	x.lines = args_has(a, 'l');
	/* Lines are shown where known, unless the original's form is asked
	 * for without -l. */
	if (!x.original || x.lines)
		a->sym.want_source = true;
	if (setup_dump(&o, &snap, a, dump, policy) < 0)
		return 1;
	x.o = &o;
	x.counts = !snap.counts_unknown;
	x.col = setup_component(o.policy, component);
	tally_init(&x.sums);
	if (x.col < 0) {
		status = 1;
	} else {
		snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
		/* (The original saw regions whole.) */
		if (aggregate_items(&o.cls, &snap, NULL, !x.original, add_item,
				    &x) < 0)
			status = 1;
		tally_sort(&x.sums, tally_cmp_bytes);
		if (!status && (x.sums.overflow || snap.overflow))
			status = sizes_overflow(&snap);
		if (!status) {
			print(&x);
			if (!x.original && print_listed(&x, &snap) < 0)
				status = 1;
		}
	}
	tally_free(&x.sums);
	sb_release(&x.key);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

const struct cmd_entry cmd_expand = { .name = "expand", .run = cmd_expand_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print the stacks behind one component of a dump" };
