/*
 * Building the timeline.  Symbolization happens once, before the first
 * snapshot; each snapshot is parsed, classified under every policy (the
 * classifiers cache per bucket across snapshots) and released.
 */
#include "timeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "util.h"

int timeline_build(struct timeline *tl, const struct timeline_options *opt)
{
	struct classifier *cls;
	struct agg_stats *stats = NULL;
	struct pfn_table group = { NULL, 0 };
	struct run_reader rr;
	size_t np, nd;
	int rc = -1;

	memset(tl, 0, sizeof(*tl));
	/* (The policies first: a misspelt one is said before a large run
	 * is read.) */
	if (policy_set_load(&tl->set, opt->policy) < 0)
		return -1;
	if (run_open_dumps(&tl->run, opt->dumps, opt->ndumps, opt->sym,
			   opt->read) < 0)
		return -1;
	if (sharing_load(&tl->sharing, opt->shared, opt->nshared) < 0)
		return -1;
	/* source= needs DWARF lines, which are costly: only on demand. */
	if (policy_set_uses(&tl->set, COND_SOURCE))
		opt->sym->want_source = true;
	/* (A caller with its own pass may show names; csv shows none.) */
	tl->run.names_unused = !opt->each && !policy_set_needs_names(&tl->set);
	run_symbolize(&tl->run);
	np = tl->set.n;
	nd = tl->run.series.ndumps;
	tl->snaps = xcalloc(nd, sizeof(*tl->snaps));
	tl->rows = xcalloc(np, sizeof(*tl->rows));
	tl->builtins = xcalloc(np, sizeof(*tl->builtins));
	cls = tl->cls = xcalloc(np, sizeof(*cls));
	stats = xcalloc(np, sizeof(*stats));
	for (size_t p = 0; p < np; p++) {
		tl->rows[p] = xcalloc(st_mult(nd, tl->set.v[p]->ncols),
				      sizeof(**tl->rows));
		tl->builtins[p] = xcalloc(nd, sizeof(**tl->builtins));
		classifier_init(&cls[p], tl->set.v[p], &tl->run.model);
		/* (Every dump is read: a deep run's buckets at once.) */
		classify_buckets(&cls[p]);
	}
	/* (The next two dumps are read while this one is summed.) */
	run_reader_init(&rr, &tl->run);
	rr.two = true;
	for (size_t i = 0; i < nd; i++) {
		const char *path = tl->run.series.dumps[i].path;
		struct snapshot snap;

		if (opt->progress)
			opt->progress(i, nd, path);
		if (i > 0 && file_empty(path)) {
			/* A producer killed before it wrote anything. */
			warning("%s: empty dump; skipped", path);
			continue;
		}
		if (run_reader_load(&rr, i, i + 1, &snap) < 0) {
			if (i == 0)
				goto out;
			warning("%s: skipped; the other snapshots are shown",
				path);
			tl->skipped_errors = true;
			continue;
		}
		snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
		run_symbolize_snapshot(&tl->run, &snap);
		aggregate_verify(&snap);
		if (tl->sharing.nprocs)
			sharing_at(&tl->sharing, snap.time, &group);
		for (size_t p = 0; p < np; p++) {
			int64_t *row = tl->rows[p] +
				       tl->n * tl->set.v[p]->ncols;

			if (aggregate_snapshot(&cls[p], &snap,
					       tl->sharing.nprocs ? &group : NULL,
					       row,
					       &tl->builtins[p][tl->n],
					       &stats[p]) < 0) {
				snapshot_release(&snap);
				goto out;
			}
		}
		if (opt->each && opt->each(opt->ctx, tl, i, &snap) < 0) {
			snapshot_release(&snap);
			goto out;
		}
		tl->snaps[tl->n].path = xstrdup(path);
		tl->snaps[tl->n].counter = snap.counter;
		tl->snaps[tl->n].time = snap.time;
		tl->n++;
		snapshot_release(&snap);
	}
	for (size_t p = 0; p < np; p++) {
		const struct policy *pol = tl->set.v[p];

		if (stats[p].tc_unused_clamped && policy_column(pol, "tc-unused") >= 0)
			warning("%s: tc-unused would be negative in %lu "
				"snapshot%s (mmap-tcmalloc smaller than "
				"profiled-malloc); shown as 0",
				pol->label, stats[p].tc_unused_clamped,
				stats[p].tc_unused_clamped > 1 ? "s" : "");
		if (stats[p].malloc_unused_clamped &&
		    policy_column(pol, "malloc-unused") >= 0)
			warning("%s: malloc-unused would be negative in %lu "
				"snapshot%s (allocator-arena smaller than "
				"the bytes in use); shown as 0",
				pol->label, stats[p].malloc_unused_clamped,
				stats[p].malloc_unused_clamped > 1 ? "s" : "");
		if (stats[p].no_kernel_view)
			warning("%s: %lu snapshot%s say nothing of the "
				"kernel's Rss, Pss or Swap (dumps not written "
				"by dmprof record); shown as 0",
				pol->label, stats[p].no_kernel_view,
				stats[p].no_kernel_view > 1 ? "s" : "");
		if (stats[p].no_pss)
			warning("%s: %lu snapshot%s no Pss (dmprof record "
				"writes it with --pss); pss shown as 0",
				pol->label, stats[p].no_pss,
				stats[p].no_pss > 1 ? "s have" : " has");
		if (stats[p].hidden_no_bucket)
			warning("%s: %" PRId64 " bytes of unknown buckets are "
				"in no column (the policy lists no "
				"'no-bucket')",
				pol->label, stats[p].hidden_no_bucket);
	}
	rc = 0;
out:
	run_reader_end(&rr);
	if (opt->progress)
		opt->progress(nd, nd, "");
	free(stats);
	pfn_table_free(&group);
	return rc;
}

void timeline_free(struct timeline *tl)
{
	for (size_t p = 0; tl->cls && p < tl->set.n; p++)
		classifier_free(&tl->cls[p]);
	free(tl->cls);
	for (size_t i = 0; i < tl->n; i++)
		free(tl->snaps[i].path);
	free(tl->snaps);
	for (size_t p = 0; tl->rows && p < tl->set.n; p++) {
		free(tl->rows[p]);
		free(tl->builtins[p]);
	}
	free(tl->rows);
	free(tl->builtins);
	policy_set_free(&tl->set);
	sharing_free(&tl->sharing);
	run_close(&tl->run);
	memset(tl, 0, sizeof(*tl));
}

/* Seconds of snapshot I since the first one. */
static double timeline_seconds(const struct timeline *tl, size_t i)
{
	return tl->n ? tl->snaps[i].time - tl->snaps[0].time : 0;
}

double timeline_time_value(const struct timeline *tl, size_t i,
			   enum builtin b)
{
	double s = timeline_seconds(tl, i);

	return b == B_HOUR ? s / 3600.0 : b == B_MINUTE ? s / 60.0 : s;
}
