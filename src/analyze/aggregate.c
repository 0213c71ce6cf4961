/*
 * Aggregation of a snapshot into a policy's columns.  The accounting is
 * the original's (reference section d.4), with its crashes turned into
 * defined behaviour: an unknown bucket is "no-bucket" whether or not the
 * policy lists that column, a legacy region without sizes counts 0, and a
 * negative tc-unused is clamped and reported once per run.
 */
#include "aggregate.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"
#include "util.h"

/*
 * The original's categories: with a page count, 1 is private, up to the
 * group's own mappings (+1 for us) is group, more is others; without one,
 * a page the group maps too is group.
 */
static unsigned categorize(const struct pageframe *pf,
			   const struct pfn_table *group)
{
	uint64_t in_group = pfn_table_count(group, pf->pfn);

	if (pf->has_count) {
		if (pf->mapcount <= 1)
			return SHARE_PRIVATE;
		if (pf->mapcount <= in_group + 1)
			return SHARE_GROUP;
		return SHARE_OTHERS;
	}
	return in_group ? SHARE_GROUP : SHARE_PRIVATE;
}

/* ---- accounting ---- */

struct sums {
	int64_t malloc_unused; /* lines the rules call unused (free space) */
	int64_t tc_total_log;
	int64_t other_total_log;
	int64_t mmap_total_log;
	int64_t no_bucket;
	bool overflow;   /* a sum did not fit in 64 bits */
};

static void add(int64_t *values, int col, int64_t bytes, struct sums *sums)
{
	values[col] = add64(values[col], bytes, &sums->overflow);
}

static int add_region_bytes(struct classifier *c, const struct region *r,
			    const struct vma *v, unsigned sharing,
			    int64_t bytes, int64_t *values, struct sums *sums);

static int add_malloc(struct classifier *c, const struct snapshot *snap,
		      int64_t *values, struct sums *sums)
{
	const struct policy *p = c->p;

	const uint32_t *index = snap->line_index;

	for (size_t i = 0; i < snap->nlines; i++) {
		const struct stack_line *l = &snap->lines[i];
		int col;

		/*
		 * Buckets come in no order: fetch the memo entries of the
		 * lines ahead (by the index the reader noted, else from the
		 * buckets, fetched first).
		 */
		if (index) {
			if (i + 16 < snap->nlines)
				classify_prefetch_index(c, index[i + 16]);
		} else {
			if (i + 16 < snap->nlines && snap->lines[i + 16].bucket)
				prefetch(snap->lines[i + 16].bucket);
			if (i + 8 < snap->nlines && snap->lines[i + 8].bucket)
				classify_prefetch(c, snap->lines[i + 8].bucket);
		}
		if (index && index[i] < BUCKET_KEY_MMAP) {
			col = classify_malloc_index(c, index[i], l->bucket);
			goto counted;
		}
		if (l->bucket && l->bucket->kind == ALLOC_MMAP) {
			struct region r;

			/* Deep dumps account mmap through MMAP_LIST. */
			if (snap->mmap_by_regions)
				continue;
			memset(&r, 0, sizeof(r));
			r.kind = REGION_HOOKED;
			r.bucket = l->bucket;
			if (add_region_bytes(c, &r, &vma_unknown, 0,
					     l->committed, values, sums) < 0)
				return -1;
			continue;
		}
		if (!l->bucket) {
			sums->no_bucket = add64(sums->no_bucket, l->committed, &sums->overflow);
			sums->other_total_log = add64(sums->other_total_log, l->committed, &sums->overflow);
			continue;
		}
		col = classify_malloc(c, l->bucket);
counted:
		if (col < 0)
			return -1;
		/* (malloc-unused is computed: its lines join it there.) */
		if (p->cols[col].builtin == B_MALLOC_UNUSED)
			sums->malloc_unused = add64(sums->malloc_unused,
						    l->committed,
						    &sums->overflow);
		else
			add(values, col, l->committed, sums);
		if (p->cols[col].tc)
			sums->tc_total_log = add64(sums->tc_total_log, l->committed, &sums->overflow);
		else
			sums->other_total_log = add64(sums->other_total_log, l->committed, &sums->overflow);
	}
	return 0;
}

static int add_region_bytes(struct classifier *c, const struct region *r,
			    const struct vma *v, unsigned sharing,
			    int64_t bytes, int64_t *values, struct sums *sums)
{
	int col;

	if (r->kind == REGION_UNHOOKED) {
		col = classify_unhooked(c, v, sharing);
		if (col < 0)
			return -1;
		add(values, col, bytes, sums);
		return 0;
	}
	if (!r->bucket) {
		/* "@ 0" without a bucket 0, or a bucket never defined. */
		sums->no_bucket = add64(sums->no_bucket, bytes, &sums->overflow);
		sums->other_total_log = add64(sums->other_total_log, bytes, &sums->overflow);
		return 0;
	}
	col = classify_hooked(c, r->bucket, v, sharing);
	if (col < 0)
		return -1;
	add(values, col, bytes, sums);
	if (starts_with(c->p->cols[col].name, "mmap-"))
		sums->mmap_total_log = add64(sums->mmap_total_log, bytes, &sums->overflow);
	else
		sums->other_total_log = add64(sums->other_total_log, bytes, &sums->overflow);
	return 0;
}

/* Do the region's page frames account for exactly its committed bytes? */
static bool pages_complete(const struct snapshot *snap, const struct region *r)
{
	int64_t sum = 0;

	for (uint32_t k = 0; k < r->pf_count; k++)
		sum += snap->pfs[r->pf_first + k].size;
	return r->has_committed && sum == r->committed;
}

static int add_regions(struct classifier *c, const struct snapshot *snap,
		       const struct pfn_table *group, int64_t *values,
		       struct sums *sums)
{
	static const struct pfn_table none = { NULL, 0 };
	/*
	 * Sharing is known page by page when the dump lists page frames and
	 * either their map counts or other processes' page frames.
	 */
	bool per_page = snap->pageframe_length &&
			(snap->has_pagecount || group);

	if (!group)
		group = &none;
	for (size_t i = 0; i < snap->nregions; i++) {
		const struct region *r = &snap->regions[i];
		const struct vma *v = &snap->vmas[r->vma];

		/*
		 * Pages that do not add up to the committed bytes (a pagemap
		 * read failed in the producer) cannot be classified one by
		 * one without losing bytes: the region goes whole.
		 */
		if (!per_page || !pages_complete(snap, r)) {
			if (add_region_bytes(c, r, v, 0,
					     r->has_committed ? r->committed : 0,
					     values, sums) < 0)
				return -1;
			continue;
		}
		/* Sharing known: each resident page on its own. */
		for (uint32_t k = 0; k < r->pf_count; k++) {
			const struct pageframe *pf = &snap->pfs[r->pf_first + k];

			if (add_region_bytes(c, r, v, categorize(pf, group),
					     pf->size, values, sums) < 0)
				return -1;
		}
	}
	return 0;
}

static int64_t g(const struct snapshot *snap, int row)
{
	return snap->gs.row[row].committed;
}

static int64_t column_value(const int64_t *values, int col)
{
	return col >= 0 ? values[col] : 0;
}

/* What the kernel said at the dump (dmprof record writes it in META). */
static bool kernel_value(const struct snapshot *snap, enum builtin b,
			 int64_t *v)
{
	static const char *const keys[] = { "Rss", "Pss", "Swap" };
	const char *s = snapshot_meta(snap, keys[b - B_RSS]);

	return s && word_i64(s, strlen(s), v) == NUM_OK && *v >= 0;
}

/* The value of builtin B (not B_STAT: that needs a row). */
static int64_t builtin_value(enum builtin b, const struct snapshot *snap,
			     struct sums *sums, const int64_t *values,
			     const struct policy *p, struct agg_stats *stats)
{
	int64_t tcmalloc = column_value(values, p->col_mmap_tcmalloc);
	int64_t v;

	switch (b) {
	case B_NO_BUCKET:
		return sums->no_bucket;
	case B_FILEMAPPED:
		return add64(g(snap, GS_FILE_EXEC), g(snap, GS_FILE_NONEXEC), &sums->overflow);
	case B_FILEMAPPED_VM:
		return add64(snap->gs.row[GS_FILE_EXEC].virt,
			     snap->gs.row[GS_FILE_NONEXEC].virt, &sums->overflow);
	case B_MUSTBEZERO: {
		/* Without process totals (gperftools) there is nothing to
		 * check. */
		if (!(snap->gs.present & (1u << GS_TOTAL)))
			return 0;
		static const int parts[] = {
			GS_PROFILED_MMAP, GS_NP_ABSENT,	   GS_NP_ANONYMOUS,
			GS_NP_FILE_EXEC,  GS_NP_FILE_NONEXEC, GS_NP_STACK,
			GS_NP_OTHER,
		};

		v = g(snap, GS_TOTAL);
		for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
			v = sub64(v, g(snap, parts[i]), &sums->overflow);
		return v;
	}
	case B_TOTAL_EXCLUDE_PROFILER:
		/* (A heap profile's total is its own sum, see gperf.c.) */
		if (!(snap->gs.present & (1u << GS_TOTAL)) &&
		    snap->kernel_view)
			return 0; /* no process total to take it from */
		return sub64(sub64(g(snap, GS_TOTAL),
				   column_value(values, p->col_mmap_profiler), &sums->overflow),
			     column_value(values, p->col_mmap_type_profiler), &sums->overflow);
	case B_MMAP_TOTAL_LOG:
		return sums->mmap_total_log;
	case B_OTHER_TOTAL_LOG:
		return sums->other_total_log;
	case B_TC_TOTAL_LOG:
		return sums->tc_total_log;
	case B_MMAP_NO_LOG:
		return sub64(g(snap, GS_PROFILED_MMAP), sums->mmap_total_log, &sums->overflow);
	case B_MMAP_TOTAL_RECORD:
		return g(snap, GS_PROFILED_MMAP);
	case B_MMAP_TOTAL_RECORD_VM:
		return snap->gs.row[GS_PROFILED_MMAP].virt;
	case B_TC_NO_LOG:
		return sub64(g(snap, GS_PROFILED_MALLOC), sums->tc_total_log, &sums->overflow);
	case B_TC_TOTAL_RECORD:
		return g(snap, GS_PROFILED_MALLOC);
	case B_TC_UNUSED:
		v = sub64(tcmalloc, g(snap, GS_PROFILED_MALLOC), &sums->overflow);
		if (v < 0) {
			if (stats)
				stats->tc_unused_clamped++;
			v = 0;
		}
		return v;
	case B_TC_TOTAL:
		return tcmalloc;
	case B_MALLOC_UNUSED:
		v = sub64(tcmalloc, g(snap, GS_PROFILED_MALLOC), &sums->overflow);
		/* No arena seen (no mmap profiling): nothing to say. */
		if (v < 0) {
			if (stats && tcmalloc)
				stats->malloc_unused_clamped++;
			v = 0;
		}
		/* Free chunks a heap walk found are malloc lines, in
		 * profiled-malloc: rules bring them back here. */
		return add64(v, sums->malloc_unused, &sums->overflow);
	case B_MALLOC_TOTAL:
		return g(snap, GS_PROFILED_MALLOC);
	case B_MMAP_TOTAL:
		return g(snap, GS_PROFILED_MMAP);
	case B_RSS:
	case B_PSS:
	case B_SWAP:
		return kernel_value(snap, b, &v) ? v : 0;
	default:
		/* Time columns and markers: no bytes. */
		return 0;
	}
}

int aggregate_snapshot(struct classifier *c, const struct snapshot *snap,
		       const struct pfn_table *group, int64_t *values,
		       struct agg_builtins *builtins, struct agg_stats *stats)
{
	const struct policy *p = c->p;
	struct sums sums;
	bool kernel_missing = false, pss_missing = false;

	memset(&sums, 0, sizeof(sums));
	memset(values, 0, p->ncols * sizeof(*values));
	classify_snapshot(c, snap);
	if (add_malloc(c, snap, values, &sums) < 0 ||
	    add_regions(c, snap, group, values, &sums) < 0)
		return -1;
	for (size_t i = 0; i < p->ncols; i++) {
		const struct column *col = &p->cols[i];

		if (col->builtin == B_NONE)
			continue;
		/* (gperftools profiles say so once, when read.) */
		if (col->builtin >= B_RSS && col->builtin <= B_SWAP &&
		    snap->kernel_view &&
		    !kernel_value(snap, col->builtin, &(int64_t){ 0 }) &&
		    stats) {
			/* (A recorder's dump has Pss when asked for.) */
			if (col->builtin == B_PSS &&
			    kernel_value(snap, B_RSS, &(int64_t){ 0 }))
				pss_missing = true;
			else
				kernel_missing = true;
		}
		if (col->builtin == B_STAT)
			values[i] = col->stat_virtual
					    ? snap->gs.row[col->stat_row].virt
					    : g(snap, col->stat_row);
		else
			values[i] = builtin_value(col->builtin, snap, &sums,
						  values, p, stats);
	}
	if (builtins) {
		for (int b = B_NO_BUCKET; b <= B_LAST; b++)
			if (b != B_STAT)
				builtins->v[b] = builtin_value(
					(enum builtin)b, snap, &sums, values,
					p, NULL);
	}
	if (kernel_missing)
		stats->no_kernel_view++;
	else if (pss_missing)
		stats->no_pss++;
	if (p->col_no_bucket < 0 && stats)
		stats->hidden_no_bucket =
			add64(stats->hidden_no_bucket, sums.no_bucket,
			      &sums.overflow);
	if (sums.overflow || snap->overflow)
		return -sizes_overflow(snap);
	return 0;
}

int sizes_overflow(const struct snapshot *snap)
{
	error("%s: sizes add up to more than 64 bits hold (a corrupt dump?)",
	      snap->path);
	return 1;
}

/* ---- the items behind a column ---- */

/* A region: whole, or its pages in runs of one column. */
static int region_items(struct classifier *c, const struct snapshot *snap,
			const struct region *r, bool per_page,
			const struct pfn_table *group,
			int (*fn)(void *ctx, const struct item *it), void *ctx)
{
	const struct vma *v = &snap->vmas[r->vma];
	struct item it;
	bool whole = !per_page || !pages_complete(snap, r);
	uint32_t n = whole ? 1 : r->pf_count;

	if (!n)
		return 0; /* no page resident: no bytes, and no column */
	memset(&it, 0, sizeof(it));
	it.stack_id = BUCKET_KEY_NONE;
	it.vma = v;
	it.bucket = r->bucket;
	it.bucket_id = r->bucket_id;
	it.col = -1;
	it.kind = r->kind == REGION_UNHOOKED ? ITEM_UNHOOKED
		  : r->bucket		     ? ITEM_HOOKED
					     : ITEM_REGION_NO_BUCKET;
	for (uint32_t k = 0; k < n; k++) {
		const struct pageframe *pf = whole ? NULL
						   : &snap->pfs[r->pf_first + k];
		unsigned sharing = pf ? categorize(pf, group) : 0;
		int64_t bytes = pf ? pf->size
			       : r->has_committed ? r->committed : 0;
		int col = -1;

		if (it.kind == ITEM_UNHOOKED)
			col = classify_unhooked(c, v, sharing);
		else if (it.kind == ITEM_HOOKED)
			col = classify_hooked(c, r->bucket, v, sharing);
		if (col < -1 || (col < 0 && it.kind != ITEM_REGION_NO_BUCKET))
			return -1;
		/* Runs of pages of one column make one item. */
		if (k && col != it.col) {
			if (fn(ctx, &it))
				return -1;
			it.bytes = 0;
		}
		it.col = col;
		it.bytes += bytes;
	}
	return fn(ctx, &it) ? -1 : 0;
}

/* aggregate_items, where IDS_ONLY says that FN looks at stacks by
 * their ids only (item.stack_id). */
static int items(struct classifier *c, const struct snapshot *snap,
		 const struct pfn_table *group, bool by_page, bool ids_only,
		 int (*fn)(void *ctx, const struct item *it), void *ctx)
{
	static const struct pfn_table none = { NULL, 0 };
	bool per_page = by_page && snap->pageframe_length &&
			(snap->has_pagecount || group);

	size_t unknown = 0; /* (a cursor in snap->unknown) */
	const uint32_t *index = snap->line_index;
	const uint32_t *stacks = ids_only ? snap->line_stack : NULL;

	classify_snapshot(c, snap);
	for (size_t i = 0; i < snap->nlines; i++) {
		const struct stack_line *l = &snap->lines[i];
		struct item it;

		/* As add_malloc: the memo entries ahead (from the lines'
		 * keys, else from their buckets, fetched first), and but for
		 * a sink that wants stack ids only, which the lines note,
		 * their stacks (whose ids item sinks index by). */
		if (index && i + 16 < snap->nlines)
			classify_prefetch_index(c, index[i + 16]);
		if (!stacks && i + 16 < snap->nlines &&
		    snap->lines[i + 16].bucket)
			prefetch(snap->lines[i + 16].bucket);
		if (!stacks && i + 8 < snap->nlines &&
		    snap->lines[i + 8].bucket) {
			if (!index)
				classify_prefetch(c, snap->lines[i + 8].bucket);
			prefetch(snap->lines[i + 8].bucket->stack);
		}
		memset(&it, 0, sizeof(it));
		it.line = l;
		it.bucket = l->bucket;
		it.bytes = l->committed;
		it.col = -1;
		it.stack_id = stacks ? stacks[i] : BUCKET_KEY_NONE;
		if (!l->bucket) {
			it.kind = ITEM_LINE_NO_BUCKET;
			it.bucket_id = snapshot_unknown_id(snap, i, &unknown);
		} else if (index ? index[i] == BUCKET_KEY_MMAP
				 : l->bucket->kind == ALLOC_MMAP) {
			/* Deep dumps account mmap through MMAP_LIST. */
			if (snap->mmap_by_regions)
				continue;
			it.kind = ITEM_HOOKED;
			it.vma = &vma_unknown;
			it.col = classify_hooked(c, l->bucket, &vma_unknown, 0);
		} else {
			it.kind = ITEM_MALLOC;
			it.col = index ? classify_malloc_index(c, index[i],
								l->bucket)
				       : classify_malloc(c, l->bucket);
		}
		if (it.bucket && it.col < 0)
			return -1;
		if (fn(ctx, &it))
			return -1;
	}
	for (size_t i = 0; i < snap->nregions; i++)
		if (region_items(c, snap, &snap->regions[i], per_page,
				 group ? group : &none, fn, ctx) < 0)
			return -1;
	return 0;
}

int aggregate_items(struct classifier *c, const struct snapshot *snap,
		    const struct pfn_table *group, bool by_page,
		    int (*fn)(void *ctx, const struct item *it), void *ctx)
{
	return items(c, snap, group, by_page, false, fn, ctx);
}

int aggregate_items_by_stack_id(struct classifier *c,
				const struct snapshot *snap,
				const struct pfn_table *group, bool by_page,
				int (*fn)(void *ctx, const struct item *it),
				void *ctx)
{
	return items(c, snap, group, by_page, true, fn, ctx);
}

bool column_counts(const struct policy *p, int c, enum item_kind kind,
		   int col)
{
	bool line = kind == ITEM_MALLOC || kind == ITEM_LINE_NO_BUCKET;
	bool region = kind == ITEM_HOOKED || kind == ITEM_REGION_NO_BUCKET;
	bool no_bucket = kind == ITEM_LINE_NO_BUCKET ||
			 kind == ITEM_REGION_NO_BUCKET;

	switch (p->cols[c].builtin) {
	case B_NONE:
		return !no_bucket && col == c;
	case B_NO_BUCKET:
		return no_bucket;
	case B_MALLOC_TOTAL:
	case B_TC_TOTAL_RECORD:
		return line;
	case B_MMAP_TOTAL:
	case B_MMAP_TOTAL_RECORD:
		return region;
	case B_TC_TOTAL_LOG:
		/* (The sums of add_malloc() and add_region_bytes().) */
		return kind == ITEM_MALLOC && p->cols[col].tc;
	case B_MMAP_TOTAL_LOG:
		return kind == ITEM_HOOKED &&
		       starts_with(p->cols[col].name, "mmap-");
	case B_OTHER_TOTAL_LOG:
		return no_bucket ||
		       (kind == ITEM_MALLOC && !p->cols[col].tc) ||
		       (kind == ITEM_HOOKED &&
			!starts_with(p->cols[col].name, "mmap-"));
	case B_TC_TOTAL:
		return !no_bucket && col >= 0 && col == p->col_mmap_tcmalloc;
	case B_MALLOC_UNUSED:
		return kind == ITEM_MALLOC && col == c;
	default:
		return false;
	}
}

bool column_sums_items(const struct policy *p, int c)
{
	switch (p->cols[c].builtin) {
	case B_NONE:
	case B_NO_BUCKET:
	case B_MALLOC_TOTAL:
	case B_TC_TOTAL_RECORD:
	case B_MMAP_TOTAL:
	case B_MMAP_TOTAL_RECORD:
	case B_TC_TOTAL_LOG:
	case B_MMAP_TOTAL_LOG:
	case B_OTHER_TOTAL_LOG:
		return true;
	case B_TC_TOTAL:
		return p->col_mmap_tcmalloc >= 0;
	default:
		return false;
	}
}

/* ---- the GLOBAL_STATS cross-check ---- */

void aggregate_verify(const struct snapshot *snap)
{
	static const int rows[] = {
		GS_TOTAL,	 GS_FILE_EXEC,	       GS_FILE_NONEXEC,
		GS_ANONYMOUS,	 GS_STACK,	       GS_OTHER,
		GS_NP_FILE_EXEC, GS_NP_FILE_NONEXEC,   GS_NP_ANONYMOUS,
		GS_NP_STACK,	 GS_NP_OTHER,	       GS_PROFILED_MMAP,
	};
	int64_t sum[GS_NROWS] = { 0 };
	bool overflow = false; /* (then the rows differ, and it says so) */

	if (!snap->has_mmap_list)
		return;
	for (size_t i = 0; i < snap->nregions; i++) {
		const struct region *r = &snap->regions[i];
		int64_t c = r->has_committed ? r->committed : 0;
		int cls, np;

		switch (vma_classify(&snap->vmas[r->vma])) {
		case VMA_FILE_EXEC:
			cls = GS_FILE_EXEC, np = GS_NP_FILE_EXEC;
			break;
		case VMA_FILE_NONEXEC:
			cls = GS_FILE_NONEXEC, np = GS_NP_FILE_NONEXEC;
			break;
		case VMA_ANONYMOUS:
			cls = GS_ANONYMOUS, np = GS_NP_ANONYMOUS;
			break;
		case VMA_STACK:
			cls = GS_STACK, np = GS_NP_STACK;
			break;
		default:
			cls = GS_OTHER, np = GS_NP_OTHER;
			break;
		}
		sum[GS_TOTAL] = add64(sum[GS_TOTAL], c, &overflow);
		sum[cls] = add64(sum[cls], c, &overflow);
		if (r->kind == REGION_UNHOOKED)
			sum[np] = add64(sum[np], c, &overflow);
		else
			sum[GS_PROFILED_MMAP] = add64(sum[GS_PROFILED_MMAP], c, &overflow);
	}
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		int row = rows[i];

		if (!(snap->gs.present & (1u << row)) ||
		    sum[row] == g(snap, row))
			continue;
		warning("%s: GLOBAL_STATS says %s is %" PRId64 " committed "
			"bytes, MMAP_LIST adds up to %" PRId64 " (%+" PRId64 ")",
			snap->path, gstat_names[row], g(snap, row), sum[row],
			g(snap, row) - sum[row]);
	}
}
