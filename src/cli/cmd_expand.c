/*
 * dmprof expand [-l] [-p POLICY] DUMP COMPONENT [DEPTH], or the original's
 * expand DUMP POLICY COMPONENT DEPTH: the stacks behind one component of
 * one dump, cut to DEPTH+1 frames (all by default) and summed, largest
 * first.
 * Malloc lines show their counts and type; mmap regions their stack;
 * unhooked regions (the original printed nothing) their mapping; no-bucket
 * the ids of the unknown buckets.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "setup.h"
#include "symbol.h"
#include "text.h"

struct entry {
	char *key;
	int64_t bytes;
};

struct sums {
	struct hashmap map;
	struct entry **v;
	size_t n, alloc;
	bool overflow;
};

/* What to expand, and how. */
struct expand {
	struct setup *o;
	const struct snapshot *snap;
	int col;
	uint64_t depth;  /* frames after the first; UINT64_MAX: all */
	bool lines;      /* -l: file:line */
	struct sums sums;
};

static bool entry_eq(const void *item, const void *key)
{
	return !strcmp(((const struct entry *)item)->key, key);
}

static void sum_add(struct sums *s, const char *key, int64_t bytes)
{
	uint64_t h = hash_bytes(key, strlen(key));
	struct entry *e = hashmap_get(&s->map, h, entry_eq, key);

	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->key = xstrdup(key);
		hashmap_put(&s->map, h, e);
		GROW(s->v, s->n + 1, s->alloc);
		s->v[s->n++] = e;
	}
	e->bytes = add64(e->bytes, bytes, &s->overflow);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->key, y->key); /* ties: stable, readable order */
}

/* The first DEPTH + 1 logical frames, "func(@file) " each. */
static void add_frames(struct strbuf *sb, const struct expand *x,
		       const struct stack *st)
{
	const struct model *m = &x->o->run.model;
	uint64_t n = 0, depth = x->depth;

	for (uint32_t i = 0; i < st->depth && n <= depth; i++) {
		const struct frame *f = frame_get(&m->frames, st->frames[i]);

		for (uint32_t k = 0; k < frame_nlogical(f) && n <= depth;
		     k++, n++) {
			frame_add_func(sb, f, k);
			sb_addstr(sb, "(@");
			frame_add_file(sb, f, k);
			if (x->lines && frame_line(f, k))
				sb_addf(sb, ":%" PRIu32, frame_line(f, k));
			sb_addstr(sb, ") ");
		}
	}
}

/* Does the column expanded count this item (classified into C)? */
static bool wanted(const struct expand *x, enum item_kind kind, int c)
{
	return column_counts(x->o->policy, x->col, kind, c);
}

/*
 * Sum the items the column counts by their text.  A classification that
 * fails (a pattern hit its match limit) has said why; then -1.
 */
static int expand(struct expand *x)
{
	struct setup *o = x->o;
	const struct snapshot *snap = x->snap;
	struct strbuf key = STRBUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < snap->nlines && rc == 0; i++) {
		const struct stack_line *l = &snap->lines[i];
		const struct bucket *b = l->bucket;
		int c;

		sb_reset(&key);
		if (b && b->kind == ALLOC_MMAP) {
			/* Deep dumps show mmap through MMAP_LIST. */
			if (snap->format != FORMAT_GPERFTOOLS)
				continue;
			c = classify_hooked(&o->cls, b, &vma_unknown, 0);
			if (c < 0)
				rc = -1;
			if (c < 0 || !wanted(x, ITEM_HOOKED, c))
				continue;
			add_frames(&key, x, b->stack);
		} else if (!b) {
			if (!wanted(x, ITEM_LINE_NO_BUCKET, -1))
				continue;
			sb_addf(&key, "(alloc=%" PRId64 ") (free=%" PRId64
				      ") (bucket=%" PRIu64 ") ",
				l->alloc, l->free, l->bucket_id);
		} else {
			c = classify_malloc(&o->cls, b);
			if (c < 0)
				rc = -1;
			if (c < 0 || !wanted(x, ITEM_MALLOC, c))
				continue;
			sb_addf(&key, "(alloc=%" PRId64 ") (free=%" PRId64 ") ",
				l->alloc, l->free);
			if (b->typeinfo)
				sb_addf(&key, "(type=%s) (type.name=%s) ",
					b->typeinfo_sym, b->type_name);
			add_frames(&key, x, b->stack);
		}
		sum_add(&x->sums, sb_str(&key), l->committed);
	}
	for (size_t i = 0; i < snap->nregions && rc == 0; i++) {
		const struct region *r = &snap->regions[i];
		const struct vma *v = &snap->vmas[r->vma];
		int64_t bytes = r->has_committed ? r->committed : 0;
		int c;

		sb_reset(&key);
		if (r->kind == REGION_UNHOOKED) {
			c = classify_unhooked(&o->cls, v, 0);
			if (c < 0)
				rc = -1;
			if (c < 0 || !wanted(x, ITEM_UNHOOKED, c))
				continue;
			sb_addf(&key, "%s %s", v->perms,
				*v->name ? v->name : "[anonymous]");
		} else if (!r->bucket) {
			if (!wanted(x, ITEM_REGION_NO_BUCKET, -1))
				continue;
			sb_addf(&key, "(mmap) (bucket=%" PRIu64 ") ",
				r->bucket_id);
		} else {
			c = classify_hooked(&o->cls, r->bucket, v, 0);
			if (c < 0)
				rc = -1;
			if (c < 0 || !wanted(x, ITEM_HOOKED, c))
				continue;
			add_frames(&key, x, r->bucket->stack);
		}
		sum_add(&x->sums, sb_str(&key), bytes);
	}
	sb_release(&key);
	return rc;
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

static int run(struct cmd_args *a)
{
	struct setup o;
	struct snapshot snap;
	struct expand x;
	const char *dump = NULL, *policy, *component = NULL, *depth;
	int status;

	memset(&x, 0, sizeof(x));
	if ((status = operands(a, &dump, &policy, &component, &depth)))
		return status;
	x.depth = UINT64_MAX;
	if (depth && word_u64(depth, strlen(depth), &x.depth) != NUM_OK)
		return cmd_usage_error(a, "DEPTH must be a number of frames, "
					  "not '%s'", depth);
	x.lines = args_has(a, 'l');
	if (x.lines)
		a->sym.want_source = true;
	if (setup_open(&o, a, dump, policy, false) < 0 ||
	    run_load_dump(&o.run, 0, &snap) < 0) {
		setup_close(&o);
		return 1;
	}
	run_symbolize_snapshot(&o.run, &snap);
	x.o = &o;
	x.snap = &snap;
	x.col = setup_component(o.policy, component);
	if (x.col < 0) {
		status = 1;
	} else {
		snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
		hashmap_init(&x.sums.map, 256);
		if (expand(&x) < 0)
			status = 1;
		if (x.sums.n)
			qsort(x.sums.v, x.sums.n, sizeof(*x.sums.v), cmp_entry);
		if (!status && (x.sums.overflow || snap.overflow))
			status = -error("%s: sizes add up to more than 64 bits "
				       "hold (a corrupt dump?)", snap.path);
		for (size_t i = 0; i < x.sums.n && !status; i++)
			printf("%10" PRId64 " %s\n", x.sums.v[i]->bytes,
			       x.sums.v[i]->key);
	}
	for (size_t i = 0; i < x.sums.n; i++) {
		free(x.sums.v[i]->key);
		free(x.sums.v[i]);
	}
	free(x.sums.v);
	hashmap_free(&x.sums.map);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

static const struct cmd_option options[] = {
	OPTION_POLICY,
	{ 'l', "lines", NULL, OPT_SYNOPSIS,
	  "source file and line of each frame" },
	OPT_END,
};

static const char *const usage[] = {
	"DUMP COMPONENT [DEPTH]",
	"DUMP POLICY COMPONENT [DEPTH]",
	NULL,
};

const struct cmd_entry cmd_expand = {
	"expand", "print the stacks behind one component of a dump", usage,
	options, CMD_READS_DUMPS, NULL, run,
};
