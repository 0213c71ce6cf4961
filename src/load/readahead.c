/*
 * A run's dumps read in order, the next ones read ahead on other cores
 * (tasks of the thread module) while the caller works on the one it has
 * (see struct run_reader).
 *
 * Each dump read ahead has the run's reader state as it was when its
 * reading started, and the caller's order is kept in what is said: a
 * dump taken says what reading it said, and what it marked said once a
 * run (READ_WARNED_*) is marked then.  A dump read alongside another
 * that says such a thing first (the two read at once, neither knowing of
 * the other) is read again when taken, as if it were read only then: the
 * words and their order are a reading one after the other's.
 */
#include "run.h"

#include <stdint.h>
#include <string.h>

#include "input.h"
#include "threads.h"
#include "util.h"

void run_reader_init(struct run_reader *rr, struct run *r)
{
	memset(rr, 0, sizeof(*rr));
	rr->r = r;
	for (size_t k = 0; k < ARRAY_SIZE(rr->ahead); k++)
		rr->ahead[k].r = r;
}

static void read_ahead(void *arg)
{
	struct run_ahead *a = arg;
	const struct series_file *d = &a->r->series.dumps[a->i];

	a->rc = profile_load_part_as(&a->snap, d->path, d->part, &a->r->model,
				     &a->reading, a->r->format, &a->other);
	if (a->rc == 0)
		a->snap.counter = d->counter;
}

static bool any_running(const struct run_reader *rr)
{
	for (size_t k = 0; k < ARRAY_SIZE(rr->ahead); k++)
		if (rr->ahead[k].task.running)
			return true;
	return false;
}

/* A's dump read, its thread joined; the model's strings locked no more
 * when no other is read. */
static void join(struct run_reader *rr, struct run_ahead *a)
{
	task_join(&a->task);
	if (!any_running(rr)) {
		rr->r->reading_ahead = false;
		strtab_share(&rr->r->model.strings, false);
	}
}

/* A's dump, read and not asked for: as if never read. */
static void drop(struct run_reader *rr, struct run_ahead *a)
{
	join(rr, a);
	if (a->rc == 0)
		snapshot_release(&a->snap);
}

/*
 * Take dump I if it was read ahead: true, then in SNAP (its result in
 * *RC).  Dumps read ahead of another number than I that the caller
 * has gone past are dropped.
 */
static bool take(struct run_reader *rr, size_t i, struct snapshot *snap,
		 int *rc)
{
	struct read_run *run = &rr->r->reading;
	struct run_ahead *a = NULL;

	for (size_t k = 0; k < ARRAY_SIZE(rr->ahead); k++) {
		struct run_ahead *b = &rr->ahead[k];

		if (!b->task.running)
			continue;
		if (b->i == i)
			a = b;
		else if (b->i < i || i == SIZE_MAX)
			drop(rr, b);
	}
	if (!a)
		return false;
	join(rr, a);
	/* (Not of the run's format after all: read as any other.  Or it
	 * said a thing once a run that a dump taken since said first.) */
	if (a->other || (a->reading.warned & ~a->warned & run->warned)) {
		if (a->rc == 0)
			snapshot_release(&a->snap);
		return false;
	}
	run->warned |= a->reading.warned;
	if (a->reading.profile_kind && !run->profile_kind)
		run->profile_kind = a->reading.profile_kind;
	report_replay(&a->task.said);
	*snap = a->snap;
	*rc = a->rc;
	if (!*rc)
		model_note_runtime(&rr->r->model, snap);
	return true;
}

static bool reading(const struct run_reader *rr, size_t i)
{
	for (size_t k = 0; k < ARRAY_SIZE(rr->ahead); k++)
		if (rr->ahead[k].task.running && rr->ahead[k].i == i)
			return true;
	return false;
}

/* Dump I read ahead, on a free slot, where it can be. */
static void start(struct run_reader *rr, size_t i)
{
	struct run *r = rr->r;
	struct run_ahead *a = NULL;

	if (i >= r->series.ndumps || !profile_traits(r->format)->read_ahead ||
	    reading(rr, i) || file_empty(r->series.dumps[i].path))
		return;
	for (size_t k = 0; k < ARRAY_SIZE(rr->ahead) && !a; k++)
		if (!rr->ahead[k].task.running)
			a = &rr->ahead[k];
	if (!a)
		return;
	a->i = i;
	a->reading = r->reading;
	a->reading.last = i + 1 == r->series.ndumps;
	a->warned = r->reading.warned;
	a->other = false;
	/* (Shared already while another reads: that one reads the flag.) */
	if (any_running(rr)) {
		task_start(&a->task, read_ahead, a, true);
		return;
	}
	strtab_share(&r->model.strings, true);
	if (task_start(&a->task, read_ahead, a, true))
		r->reading_ahead = true;
	else
		strtab_share(&r->model.strings, false);
}

int run_reader_load(struct run_reader *rr, size_t i, size_t next,
		    struct snapshot *snap)
{
	struct run *r = rr->r;
	int rc;

	if (!take(rr, i, snap, &rc))
		rc = run_load_dump(r, i, snap);
	/* (One after the other: the one after NEXT too, while a core
	 * reads NEXT.) */
	start(rr, next);
	if (rr->two && next != SIZE_MAX && next == i + 1 &&
	    threads_wanted() > 1 && next + 1 < r->series.ndumps) {
		run_pad_readers();
		start(rr, next + 1);
	}
	return rc;
}

void run_reader_end(struct run_reader *rr)
{
	struct snapshot unused;
	int rc;

	take(rr, SIZE_MAX, &unused, &rc);
	for (size_t k = 0; k < ARRAY_SIZE(rr->ahead); k++)
		task_release(&rr->ahead[k].task);
}
