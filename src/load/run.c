/*
 * A run, the loading stage's front (above the readers, process memory
 * and symbolization, which it puts together): its dumps found as a
 * series, their companion files (companion.c), its dumps loaded and
 * symbolized, and closed.  Where its teardown begins is teardown.c's;
 * the next dump read on another core, readahead.c's.
 */
#include "run.h"

#include <errno.h>
#include <stdatomic.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "input.h"
#include "threads.h"
#include "util.h"

/* Is the first dump one?  Nothing else is looked for until it is known. */
static int probe(struct run *r, const char *first_dump)
{
	struct stat st;

	if (stat(first_dump, &st) < 0)
		return error_errno("%s", first_dump);
	if (S_ISDIR(st.st_mode))
		return error("%s: is a directory, not a dump", first_dump);
	if (profile_probe(first_dump, &r->format) < 0)
		return -1;
	/* Heap profiles bring their own stacks and maps. */
	r->self_contained = profile_traits(r->format)->self_contained;
	return 0;
}

/*
 * A file that holds N snapshots (DHAT's: at the peak and at the end) is
 * a run of them; a command that reads one dump reads the last.
 */
static void parts_series(struct run *r, int n, bool all)
{
	struct series *s = &r->series;

	s->dumps[0].counter = s->first = 1;
	s->dumps[0].part = all ? 1 : n;
	if (!all)
		return;
	s->dumps = xreallocarray(s->dumps, (size_t)n, sizeof(*s->dumps));
	for (int k = 1; k < n; k++) {
		s->dumps[k].path = xstrdup(s->dumps[0].path);
		s->dumps[k].counter = (unsigned long)k + 1;
		s->dumps[k].part = k + 1;
	}
	s->ndumps = (size_t)n;
}

static void init(struct run *r, const struct sym_options *opts,
		 const struct read_options *read)
{
	memset(r, 0, sizeof(*r));
	r->opts = opts;
	r->reading.opts = read;
	model_init(&r->model);
	maps_init(&r->maps);
}

int run_open(struct run *r, const char *first_dump, unsigned flags,
	     const struct sym_options *opts, const struct read_options *read)
{
	init(r, opts, read);
	if (probe(r, first_dump) < 0 ||
	    series_discover(&r->series, first_dump,
			    (flags & RUN_ALL_DUMPS) != 0) < 0)
		return -1;
	if (profile_traits(r->format)->parts > 1)
		parts_series(r, profile_traits(r->format)->parts,
			     (flags & RUN_ALL_DUMPS) != 0);
	return run_open_companions(r);
}

int run_open_dumps(struct run *r, const char *const *dumps, size_t n,
		   const struct sym_options *opts,
		   const struct read_options *read)
{
	if (n == 1)
		return run_open(r, dumps[0], RUN_ALL_DUMPS, opts, read);
	init(r, opts, read);
	if (series_of(&r->series, dumps, n) < 0 ||
	    probe(r, r->series.dumps[0].path) < 0)
		return -1;
	return run_open_companions(r);
}

/*
 * What malloc holds free, given back after a phase that freed much: the
 * heap grows 64 MiB at a time and keeps it (malloc_setup), and a parse
 * on two cores leaves the other thread's arena's blocks free.  A
 * million-stack profile's csv held 29 MB free at the end of its parse;
 * its peak RSS fell from 326 to 314 MB.  The pad goes then too: what
 * comes after a parse frees as much as it makes (symbolization's
 * tables, DWARF's buffers), and a pad of 64 MiB above the top kept what
 * it freed there (gperf-pool of make bench: 314 -> 305 MB; a warm
 * symbolization, that the pad made faster, is done by then).
 *
 * Not after a small run's parse: what it frees is a few MB, and giving
 * them back split the heap's huge pages, which what came next faulted in
 * again 4 KiB at a time (symbolize-dwarf of make bench, a 1.9 MB
 * profile: warm stacktrace 24.2 -> 23.0 ms, cold 61.2 -> 58.6, for 4 MB
 * more RSS; a 29 MB profile's csv 86 -> 92 MB).
 */
#define GIVE_BACK_FROM (64u << 20)

static void give_back(const struct run *r)
{
	if (r->bytes_read < GIVE_BACK_FROM)
		return;
	mallopt(M_TOP_PAD, 0);
	malloc_trim(0);
}

/*
 * Dumps read two at once, each on a thread of its own: every reader's
 * malloc arena keeps up to the pad free above its top, a dump's worth
 * that the next reader there takes again (no fault per dump), and a
 * pad of 64 MiB let them keep more: deep of make bench 296-315 MB with
 * it, 286-291 with 32 MiB (in 1.16-1.22 s; 255 MB and 1.33-1.61 s with
 * 4 MiB: each dump faulted in afresh), against 262-266 MB and 1.25-1.35
 * s with one reader.
 */
void run_pad_readers(void)
{
	static bool done;

	if (!done)
		mallopt(M_TOP_PAD, 32 << 20);
	done = true;
}

/*
 * After the run's last symbolization, what served its lookups goes (a
 * debug file's DWARF, tens of MB, and what the heap then has free): on
 * another core, while the caller goes on with the names (3 of the 65 ms
 * of symbolize-dwarf's cold stacktrace).  The symbolizer is the task's
 * until it is joined: before it is used again, and when the run closes.
 */
static void trim_main(void *arg)
{
	struct run *r = arg;

	symbolizer_trim(r->sym);
	give_back(r);
}

static void trim_join(struct run *r)
{
	if (r->trimming)
		task_release(&r->trim);
	r->trimming = false;
}

void run_symbolize(struct run *r)
{
	trim_join(r);
	if (!r->names_unused)
		symbolize_model(&r->model, r->sym,
				r->has_maps ? &r->maps : NULL);
	r->symbolized = true;
}

void run_symbolize_snapshot(struct run *r, const struct snapshot *snap)
{
	/*
	 * The run's last snapshot (a command that reads them all): no more
	 * frames or stacks come, and nothing more will be looked up after
	 * its frames, so what serves those (the model's tables by content,
	 * a debug file's DWARF: tens of MB) goes, rather than swell the
	 * peak with what symbolization and classification add.
	 */
	bool last = ++r->snaps_symbolized == r->series.ndumps;

	trim_join(r);

	/* (Not while a dump is read ahead: that thread interns.) */
	if (last && !r->reading_ahead) {
		model_trim(&r->model);
		give_back(r);
	}
	if (!r->names_unused)
		symbolize_model_telling(&r->model, r->sym,
					snap->has_own_maps ? &snap->own_maps
					: r->has_maps	   ? &r->maps
							   : NULL,
					r->names_told);
	r->symbolized = true;
	/*
	 * (Not when the caller only prints after: nothing would stand on
	 * the memory given back, and the trim beside the printing slowed
	 * it down, 3 -> 6 ms of symbolize-dwarf's cold stacktrace, more
	 * than freeing it all at run_close costs.)
	 */
	if (last && !r->light_end &&
	    !(r->trimming = task_start(&r->trim, trim_main, r, false)))
		trim_main(r);
}

/*
 * The symbolizer made ready for the binaries a dump maps while the dump
 * is read: a heap profile names them only at its end, after its stacks,
 * and opening them (symbol tables sorted, a debug file's DWARF inflated
 * and its abbreviations read) came after reading all of it, on one core.
 */
struct readying {
	struct task task;
	struct symbolizer *sym;
	char **(*binaries)(const char *path, size_t *n);
	const char *path;
	char **paths;
	size_t n;
	_Atomic bool stop;
};

/*
 * A dump this big is read first, its binaries opened after: their symbol
 * tables, debug files and DWARF held through its parse raised the peak
 * (gperf-pool of make bench, a 279 MB file: 276 -> 299 MB RSS, and 282
 * MB with DWARF left for later), and its parse is long enough that what
 * readying saves is a few per cent of it; a small dump's parse is short
 * and holds little.
 */
#define READY_BELOW (64u << 20)

static void free_paths(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* (The binaries found here too: a profile's tail read on the parse's
 * way was 0.3-0.5 ms of a small one's before its first line.) */
static void readying_main(void *arg)
{
	struct readying *rd = arg;

	rd->paths = rd->binaries(rd->path, &rd->n);
	if (rd->n)
		rd->sym->ops->ready(rd->sym, rd->paths, rd->n, &rd->stop);
}

/* Begun for the run's first dump, when its format names them early
 * (SIZE: the dump's, a regular file's; else UINT64_MAX). */
static bool readying_begin(struct run *r, size_t i, struct readying *rd,
			   uint64_t size)
{
	const struct profile_traits *t = profile_traits(r->format);

	memset(rd, 0, sizeof(*rd));
	atomic_init(&rd->stop, false);
	if (i || r->snaps_symbolized || r->names_unused || !r->sym ||
	    !r->sym->ops->ready || !t->binaries || threads_wanted() < 2 ||
	    size >= READY_BELOW)
		return false;
	rd->sym = r->sym;
	rd->binaries = t->binaries;
	rd->path = r->series.dumps[i].path;
	/* (What it says is dropped: the first lookup says it again.) */
	return task_start(&rd->task, readying_main, rd, true);
}

/*
 * Once the dump is read: the binary being opened is waited for, those
 * not begun yet are left to their first lookup (a profile may map many
 * libraries with debug files that none of its frames are in).
 */
static void readying_end(struct readying *rd)
{
	atomic_store(&rd->stop, true);
	task_release(&rd->task);
	free_paths(rd->paths, rd->n);
}

int run_load_dump(struct run *r, size_t i, struct snapshot *snap)
{
	struct readying rd;
	struct stat st;
	uint64_t size = UINT64_MAX;
	bool readying;
	int rc;

	if (stat(r->series.dumps[i].path, &st) == 0 && S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
		r->bytes_read += size;
	}
	/*
	 * A dump this big is read without the heap's pad: what its parse
	 * frees, before give_back, stayed resident above the top, and what
	 * came next was made elsewhere (gperf-pool of make bench, a 279 MiB
	 * profile: its peak 275-280 MiB with the pad, 270.1-270.5 without,
	 * as fast; 6 runs each).  A small dump's run keeps it (its tables
	 * grown without a fault each time).
	 */
	if (size != UINT64_MAX && size >= GIVE_BACK_FROM)
		mallopt(M_TOP_PAD, 0);
	readying = readying_begin(r, i, &rd, size);

	r->reading.last = i + 1 == r->series.ndumps;
	rc = profile_load_part(snap, r->series.dumps[i].path,
			       r->series.dumps[i].part, &r->model,
			       &r->reading);
	if (readying)
		readying_end(&rd);
	if (rc < 0)
		return -1;
	snap->counter = r->series.dumps[i].counter;
	model_note_runtime(&r->model, snap);
	if (i + 1 == r->series.ndumps)
		give_back(r);
	return 0;
}

void run_close(struct run *r)
{
	trim_join(r);
	symbolizer_destroy(r->sym);
	maps_free(&r->maps);
	dump_maps_release(&r->dump_maps);
	series_free(&r->series);
	model_free(&r->model);
	memset(r, 0, sizeof(*r));
}
