/*
 * A run's dumps read in order, each next one read ahead on another core
 * (a task of the thread module) while the caller works on the one it
 * has (see struct run_reader).
 */
#include "run.h"

#include <stdint.h>
#include <string.h>

#include "input.h"
#include "threads.h"

void run_reader_init(struct run_reader *rr, struct run *r)
{
	memset(rr, 0, sizeof(*rr));
	rr->r = r;
}

static void read_ahead(void *arg)
{
	struct run_reader *rr = arg;
	const struct series_file *d = &rr->r->series.dumps[rr->ahead];

	rr->rc = profile_load_part_as(&rr->snap, d->path, d->part,
				      &rr->r->model, &rr->r->reading,
				      rr->r->format, &rr->other);
	if (rr->rc == 0)
		rr->snap.counter = d->counter;
}

/* Wait for the dump read ahead; true if it is I, then in SNAP. */
static bool take(struct run_reader *rr, size_t i, struct snapshot *snap,
		 int *rc)
{
	if (!rr->task.running)
		return false;
	task_join(&rr->task);
	rr->r->reading_ahead = false;
	strtab_share(&rr->r->model.strings, false);
	/* (Not of the run's format after all: read as any other.) */
	if (rr->ahead == i && !rr->other) {
		report_replay(&rr->task.said);
		*snap = rr->snap;
		*rc = rr->rc;
		if (!*rc)
			model_note_runtime(&rr->r->model, snap);
		return true;
	}
	/* Not asked for: as if never read. */
	if (rr->rc == 0)
		snapshot_release(&rr->snap);
	return false;
}

int run_reader_load(struct run_reader *rr, size_t i, size_t next,
		    struct snapshot *snap)
{
	struct run *r = rr->r;
	int rc;

	if (!take(rr, i, snap, &rc))
		rc = run_load_dump(r, i, snap);
	if (next < r->series.ndumps && profile_traits(r->format)->read_ahead &&
	    !file_empty(r->series.dumps[next].path)) {
		rr->ahead = next;
		strtab_share(&r->model.strings, true);
		if (task_start(&rr->task, read_ahead, rr, true))
			rr->r->reading_ahead = true;
		else
			strtab_share(&r->model.strings, false);
	}
	return rc;
}

void run_reader_end(struct run_reader *rr)
{
	struct snapshot unused;
	int rc;

	take(rr, SIZE_MAX, &unused, &rc);
	task_release(&rr->task);
}

