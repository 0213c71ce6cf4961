/*
 * dmprof expand DUMP POLICY COMPONENT DEPTH: the stacks behind one
 * component of one dump, cut to DEPTH+1 frames and summed, largest first.
 * Malloc lines show their counts and type; mmap regions their stack;
 * unhooked regions (the original printed nothing) their mapping; no-bucket
 * the ids of the unknown buckets.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "onedump.h"
#include "symbol.h"
#include "text.h"

static bool show_lines; /* -l: file:line */

struct entry {
	char *key;
	int64_t bytes;
};

struct sums {
	struct hashmap map;
	struct entry **v;
	size_t n, alloc;
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
	e->bytes = add64(e->bytes, bytes);
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
static void add_frames(struct strbuf *sb, const struct model *m,
		       const struct stack *st, uint64_t depth)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < st->depth && n <= depth; i++) {
		const struct frame *f = frame_get(&m->frames, st->frames[i]);

		for (uint32_t k = 0; k < frame_nlogical(f) && n <= depth;
		     k++, n++) {
			frame_add_func(sb, f, k);
			sb_addstr(sb, "(@");
			frame_add_file(sb, f, k);
			if (show_lines && frame_line(f, k))
				sb_addf(sb, ":%" PRIu32, frame_line(f, k));
			sb_addstr(sb, ") ");
		}
	}
}

static int expand(struct onedump *o, const struct snapshot *snap, int col,
		  uint64_t depth, struct sums *sums)
{
	const struct model *m = &o->run.model;
	bool no_bucket = o->policy->cols[col].builtin == B_NO_BUCKET;
	struct strbuf key = STRBUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < snap->nlines && rc == 0; i++) {
		const struct stack_line *l = &snap->lines[i];
		const struct bucket *b = l->bucket;

		sb_reset(&key);
		if (b && b->kind == ALLOC_MMAP) {
			int c;

			/* Deep dumps show mmap through MMAP_LIST. */
			if (snap->format != FORMAT_GPERFTOOLS)
				continue;
			c = classify_hooked(&o->cls, b, &vma_unknown, 0);
			if (c < -1)
				rc = -1;
			if (c != col)
				continue;
			add_frames(&key, m, b->stack, depth);
		} else if (!b) {
			if (!no_bucket)
				continue;
			sb_addf(&key, "(alloc=%" PRId64 ") (free=%" PRId64
				      ") (bucket=%" PRIu64 ") ",
				l->alloc, l->free, l->bucket_id);
		} else {
			int c = classify_malloc(&o->cls, b);

			if (c < 0)
				rc = -1;
			if (c != col)
				continue;
			sb_addf(&key, "(alloc=%" PRId64 ") (free=%" PRId64 ") ",
				l->alloc, l->free);
			if (b->typeinfo)
				sb_addf(&key, "(type=%s) (type.name=%s) ",
					b->typeinfo_sym, b->type_name);
			add_frames(&key, m, b->stack, depth);
		}
		sum_add(sums, sb_str(&key), l->committed);
	}
	for (size_t i = 0; i < snap->nregions && rc == 0; i++) {
		const struct region *r = &snap->regions[i];
		const struct vma *v = &snap->vmas[r->vma];
		int64_t bytes = r->has_committed ? r->committed : 0;
		int c;

		sb_reset(&key);
		if (r->kind == REGION_UNHOOKED) {
			c = classify_unhooked(&o->cls, v, 0);
			if (c != col)
				goto next;
			sb_addf(&key, "%s %s", v->perms,
				*v->name ? v->name : "[anonymous]");
		} else if (!r->bucket) {
			if (!no_bucket)
				continue;
			sb_addf(&key, "(mmap) (bucket=%" PRIu64 ") ",
				r->bucket_id);
			c = col;
		} else {
			c = classify_hooked(&o->cls, r->bucket, v, 0);
			if (c != col)
				goto next;
			add_frames(&key, m, r->bucket->stack, depth);
		}
		sum_add(sums, sb_str(&key), bytes);
next:
		if (c < -1)
			rc = -1;
	}
	sb_release(&key);
	return rc;
}

int cmd_expand(int argc, char **argv)
{
	struct sums sums = { HASHMAP_INIT, NULL, 0, 0 };
	struct onedump o;
	struct snapshot snap;
	uint64_t depth;
	int c, col, status = 0;

	static const struct option longopts[] = {
		{ "lines", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};

	while ((c = cmd_getopt("expand", argc, argv, "l", longopts,
			       &status)) != -1) {
		if (c == -2)
			return status;
		if (c == 'l')
			show_lines = sym_opts.want_source = true;
	}
	if (argc - optind != 4)
		return cmd_usage_error("expand", "expected DUMP POLICY "
						 "COMPONENT DEPTH");
	if (word_u64(argv[optind + 3], strlen(argv[optind + 3]), &depth) !=
	    NUM_OK)
		return cmd_usage_error("expand", "DEPTH must be a number of "
						 "frames, not '%s'",
				       argv[optind + 3]);
	if (onedump_open(&o, argv[optind], argv[optind + 1], false) < 0 ||
	    run_load_dump(&o.run, 0, &snap) < 0) {
		onedump_close(&o);
		return 1;
	}
	run_symbolize_snapshot(&o.run, &snap);
	col = policy_column(o.policy, argv[optind + 2]);
	if (col < 0) {
		error("policy '%s' has no component '%s'", o.policy->label,
		      argv[optind + 2]);
		status = 1;
	} else {
		snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
		hashmap_init(&sums.map, 256);
		if (expand(&o, &snap, col, depth, &sums) < 0)
			status = 1;
		if (sums.n)
			qsort(sums.v, sums.n, sizeof(*sums.v), cmp_entry);
		if (size_overflow)
			status = -error("%s: sizes add up to more than 64 bits "
				       "hold (a corrupt dump?)", snap.path);
		for (size_t i = 0; i < sums.n && !status; i++)
			printf("%10" PRId64 " %s\n", sums.v[i]->bytes,
			       sums.v[i]->key);
	}
	for (size_t i = 0; i < sums.n; i++) {
		free(sums.v[i]->key);
		free(sums.v[i]);
	}
	free(sums.v);
	hashmap_free(&sums.map);
	snapshot_release(&snap);
	onedump_close(&o);
	return status;
}
