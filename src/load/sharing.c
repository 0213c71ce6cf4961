/*
 * Other processes' page frames ("shared first dumps"), read from every
 * dump of their runs, to tell a process's private pages from those it
 * shares with its group and with others.  Only page frames are kept: the
 * dumps are read into a throwaway model.
 */
#include "search.h"
#include "sharing.h"

#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "series.h"
#include "input.h"
#include "util.h"

void pfn_table_free(struct pfn_table *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

uint64_t pfn_table_count(const struct pfn_table *t, uint64_t pfn)
{
	size_t k = PARTITION_POINT(t->n, i, t->v[i].pfn < pfn);

	return k < t->n && t->v[k].pfn == pfn ? t->v[k].count : 0;
}

static int cmp_pfn(const void *a, const void *b)
{
	const struct pfn_count *x = a, *y = b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

/* Sort and merge equal pfns, summing their counts. */
static void pfn_table_finish(struct pfn_table *t)
{
	size_t out = 0;

	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), cmp_pfn);
	for (size_t i = 0; i < t->n; i++) {
		if (out && t->v[out - 1].pfn == t->v[i].pfn)
			t->v[out - 1].count += t->v[i].count;
		else
			t->v[out++] = t->v[i];
	}
	t->n = out;
}

/* The page frames of every dump of FIRST_DUMP's run; *ANY_PFNS says
 * whether there were any. */
static int load_process(struct pfn_process *proc, const char *first_dump,
			bool *any_pfns)
{
	struct series s;

	if (series_discover(&s, first_dump, true) < 0)
		return -1;
	proc->prefix = xstrdup(s.prefix);
	proc->snaps = xcalloc(s.ndumps, sizeof(*proc->snaps));
	for (size_t k = 0; k < s.ndumps; k++) {
		struct pfn_snapshot *ps = &proc->snaps[proc->n];
		struct snapshot snap;
		struct model m;
		uint64_t prev_end = UINT64_MAX;
		size_t n = 0;

		/* Buckets do not matter here: an empty model. */
		if (k > 0 && file_empty(s.dumps[k].path)) {
			warning("%s: empty dump; skipped", s.dumps[k].path);
			continue;
		}
		model_init(&m);
		if (profile_load(&snap, s.dumps[k].path, &m, NULL) < 0) {
			model_free(&m);
			if (k > 0) {
				/* As in the main series: only the first is
				 * needed. */
				warning("%s: skipped", s.dumps[k].path);
				continue;
			}
			series_free(&s);
			return -1;
		}
		ps->time = snap.time;
		ps->exiting = snap.reason && starts_with(snap.reason, "Exiting");
		ps->pfns.v = xcalloc(snap.npfs, sizeof(*ps->pfns.v));
		for (size_t p = 0; p < snap.npfs; p++) {
			const struct pageframe *pf = &snap.pfs[p];

			/*
			 * A page split between two regions is listed twice
			 * ('>' then '<'); it is one mapping of the page.
			 */
			if (!(pf->start_inside && prev_end == pf->pfn)) {
				ps->pfns.v[n].pfn = pf->pfn;
				ps->pfns.v[n++].count = 1;
			}
			prev_end = pf->end_inside ? pf->pfn : UINT64_MAX;
		}
		ps->pfns.n = n;
		pfn_table_finish(&ps->pfns);
		proc->n++;
		*any_pfns |= n > 0;
		snapshot_release(&snap);
		model_free(&m);
	}
	series_free(&s);
	return 0;
}

int sharing_load(struct sharing *sh, const char *const *first_dumps,
		 size_t n)
{
	const char *none[2] = { NULL, NULL };
	size_t nnone = 0;

	memset(sh, 0, sizeof(*sh));
	if (n > 0)
		sh->procs = xcalloc(n, sizeof(*sh->procs));
	for (size_t i = 0; i < n; i++) {
		bool any = false;

		if (load_process(&sh->procs[sh->nprocs++], first_dumps[i],
				 &any) < 0)
			return -1;
		if (!any && nnone++ < 2)
			none[nnone - 1] = first_dumps[i];
	}
	/*
	 * A run without page frames shares nothing: say so (once), or a
	 * user who gave several runs (a glob of a recording with children)
	 * sees them vanish.
	 */
	if (nnone == 1)
		warning("%s: no page frames in this run, so it shares no pages "
			"with the first (record with --pageframe); ignored",
			none[0]);
	else if (nnone)
		warning("%zu other runs have no page frames (%s, %s%s), so they "
			"share no pages with the first (record with "
			"--pageframe); ignored",
			nnone, none[0], none[1], nnone > 2 ? ", ..." : "");
	return 0;
}

void sharing_free(struct sharing *sh)
{
	for (size_t i = 0; i < sh->nprocs; i++) {
		for (size_t k = 0; k < sh->procs[i].n; k++)
			pfn_table_free(&sh->procs[i].snaps[k].pfns);
		free(sh->procs[i].snaps);
		free(sh->procs[i].prefix);
	}
	free(sh->procs);
	memset(sh, 0, sizeof(*sh));
}

void sharing_at(const struct sharing *sh, double t, struct pfn_table *out)
{
	size_t total = 0;

	pfn_table_free(out);
	for (size_t i = 0; i < sh->nprocs; i++) {
		const struct pfn_process *proc = &sh->procs[i];
		long closest = -1;

		for (size_t k = 0; k < proc->n; k++) {
			double diff = proc->snaps[k].time - t;

			if (diff >= 3.0)
				break;
			if (diff < 0 && proc->snaps[k].exiting) {
				closest = -1; /* it had exited by then */
				break;
			}
			/*
			 * The original tested "if index:", so a match at the
			 * first snapshot was ignored; any match counts here.
			 */
			closest = (long)k;
		}
		if (closest < 0)
			continue;
		{
			const struct pfn_table *pt = &proc->snaps[closest].pfns;

			out->v = xreallocarray(out->v, total + pt->n,
					       sizeof(*out->v));
			if (pt->n)
				memcpy(out->v + total, pt->v,
				       pt->n * sizeof(*pt->v));
			total += pt->n;
			out->n = total;
		}
	}
	pfn_table_finish(out);
}
