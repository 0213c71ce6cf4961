/*
 * dmprof map [-p POLICY] DUMP, or the original's map DUMP POLICY: the
 * address space over time.  Every range
 * where some dump has a region, split at every region boundary any dump
 * has, with one line per dump saying what the range was then: its
 * component and bucket (hooked), its component, size and mapping
 * (unhooked), or None.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "setup.h"

struct map_region {
	uint64_t start, end;
	const char *text; /* interned description */
};

struct map_dump {
	unsigned long counter;
	struct map_region *v;
	size_t n;
};

static const char *const usage[] = { "DUMP", "DUMP POLICY", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICY,
	OPT_END,
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The region of D covering [lo, hi), or NULL. */
static const struct map_region *covering(const struct map_dump *d,
					 uint64_t lo)
{
	size_t k = PARTITION_POINT(d->n, i, d->v[i].start <= lo);

	if (k && lo < d->v[k - 1].end)
		return &d->v[k - 1];
	return NULL;
}

static int describe(struct setup *o, const struct snapshot *snap,
		    struct map_dump *d)
{
	struct strbuf sb = STRBUF_INIT;

	d->v = xcalloc(snap->nregions, sizeof(*d->v));
	for (size_t i = 0; i < snap->nregions; i++) {
		const struct region *r = &snap->regions[i];
		const struct vma *v = &snap->vmas[r->vma];
		int col;

		sb_reset(&sb);
		if (r->kind == REGION_HOOKED) {
			col = r->bucket ? classify_hooked(&o->cls, r->bucket,
							  v, 0)
					: -3;
			if (col < -2)
				sb_addf(&sb, "no-bucket @ %" PRIu64,
					r->bucket_id);
			else if (col >= 0)
				sb_addf(&sb, "%s @ %" PRIu64,
					o->policy->cols[col].name,
					r->bucket_id);
		} else {
			col = classify_unhooked(&o->cls, v, 0);
			if (col >= 0)
				sb_addf(&sb, "%s [%" PRId64 " bytes] %s %s",
					o->policy->cols[col].name,
					r->has_committed ? r->committed : 0,
					v->perms, v->name);
		}
		if (col == -2 || col == -1) {
			sb_release(&sb);
			return -1;
		}
		d->v[d->n].start = r->start;
		d->v[d->n].end = r->end;
		d->v[d->n].text = strtab_intern(&o->run.model.strings, sb.buf,
						sb.len);
		d->n++;
	}
	sb_release(&sb);
	return 0;
}

static int cmd_map_run(struct cmd_args *a)
{
	struct map_dump *dumps;
	uint64_t *bounds = NULL;
	size_t nd = 0, nb = 0, alloc = 0;
	unsigned long maxc = 0;
	const char *policy;
	struct setup o;
	int status, width;

	if ((status = setup_policy_operand(a, &policy)))
		return status;
	if (setup_open(&o, a, a->argv[0], policy, true) < 0) {
		setup_close(&o);
		return 1;
	}
	dumps = xcalloc(o.run.series.ndumps, sizeof(*dumps));
	for (size_t i = 0; i < o.run.series.ndumps; i++) {
		struct snapshot snap;

		if (run_load_dump(&o.run, i, &snap) < 0) {
			if (i == 0) {
				status = 1;
				goto out;
			}
			warning("%s: skipped", o.run.series.dumps[i].path);
			status = 1;
			continue;
		}
		snapshot_warn_unknown_buckets(&snap, "shown as no-bucket");
		run_symbolize_snapshot(&o.run, &snap);
		dumps[nd].counter = snap.counter;
		if (describe(&o, &snap, &dumps[nd]) < 0) {
			snapshot_release(&snap);
			status = 1;
			nd++;
			goto out;
		}
		for (size_t k = 0; k < dumps[nd].n; k++) {
			GROW(bounds, nb + 2, alloc);
			bounds[nb++] = dumps[nd].v[k].start;
			bounds[nb++] = dumps[nd].v[k].end;
		}
		if (snap.counter > maxc)
			maxc = snap.counter;
		nd++;
		snapshot_release(&snap);
	}
	if (!nb) {
		warning("no MMAP_LIST regions in these dumps: nothing to map");
		goto out;
	}
	qsort(bounds, nb, sizeof(*bounds), cmp_u64);
	width = snprintf(NULL, 0, "%lu", maxc);
	for (size_t k = 0; k + 1 < nb; k++) {
		uint64_t lo = bounds[k], hi = bounds[k + 1];
		bool any = false;

		if (lo == hi)
			continue;
		for (size_t i = 0; i < nd && !any; i++)
			any = covering(&dumps[i], lo) != NULL;
		if (!any)
			continue;
		printf("%" PRIx64 "-%" PRIx64 "\n", lo, hi);
		for (size_t i = 0; i < nd; i++) {
			const struct map_region *r = covering(&dumps[i], lo);

			printf("  #%0*lu: %s\n", width, dumps[i].counter,
			       r ? r->text : "None");
		}
	}
out:
	for (size_t i = 0; i < nd; i++)
		free(dumps[i].v);
	free(dumps);
	free(bounds);
	setup_close(&o);
	return status;
}

const struct cmd_entry cmd_map = { .name = "map", .run = cmd_map_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print what each address range was in each snapshot" };
