/*
 * Opening a run: its dumps, their companion files and a symbolizer (the
 * last step of reading, so of the symbol stage).  Companion files follow
 * the rule "missing: warn and degrade; present but broken: error", so a
 * user with only the dumps still gets unsymbolized output, while a
 * corrupt file is never half-used.
 */
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bucketfile.h"
#include "perfmap.h"
#include "symbfd.h"
#include "symmap.h"
#include "input.h"
#include "util.h"

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static int load_buckets(struct run *r)
{
	size_t loaded = 0, n = r->series.nbuckets;
	const char **paths = xcalloc(n ? n : 1, sizeof(*paths));
	int rc;

	for (size_t i = 0; i < n; i++)
		paths[i] = r->series.buckets[i].path;
	rc = bucketfile_load_many(&r->model, paths, n, &loaded);
	free(paths);
	if (rc < 0)
		return -1;
	if (!loaded && !r->self_contained)
		warning("no bucket definitions found (%s.NNNN.buckets); "
			"every bucket is unknown", r->series.prefix);
	return 0;
}

static int load_maps(struct run *r)
{
	struct strbuf path = STRBUF_INIT;
	int rc = 0;

	sb_addf(&path, "%s.maps", r->series.prefix);
	if (!file_exists(path.buf)) {
		sb_reset(&path);
		sb_addf(&path, "%s.symmap/maps", r->series.prefix);
	}
	if (file_exists(path.buf)) {
		rc = maps_load(&r->maps, path.buf, &r->model.strings);
		r->has_maps = rc == 0;
	} else if (!r->self_contained) {
		warning("no maps (%s.maps or %s.symmap/maps); addresses stay "
			"unsymbolized",
			r->series.prefix, r->series.prefix);
	}
	sb_release(&path);
	return rc;
}

static int open_symbolizer(struct run *r)
{
	struct strbuf dir = STRBUF_INIT;
	int rc = 0;

	sb_addf(&dir, "%s.symmap", r->series.prefix);
	/*
	 * A symbol map prepared for the run wins (the binaries may be long
	 * gone); otherwise the binaries the maps name are read.
	 */
	if (symmap_present(dir.buf)) {
		r->sym = symmap_open(dir.buf, &r->model.strings, r->opts);
		if (!r->sym)
			rc = -1;
	} else {
		r->sym = symbfd_open(&r->model.strings, r->opts);
	}
	sb_release(&dir);
	return rc;
}

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

/* A JIT's code: named from the run's copy of its perf map (perfmap.c),
 * before the symbolizer, which knows binaries only. */
static int load_perfmap(struct run *r)
{
	if (r->self_contained || !r->has_maps || !r->series.ndumps)
		return 0;
	return perfmap_name_run(&r->model, r->series.prefix,
				r->series.dumps[0].path, &r->maps);
}

static int open_companions(struct run *r)
{
	if (load_buckets(r) < 0 || load_maps(r) < 0 || load_perfmap(r) < 0 ||
	    open_symbolizer(r) < 0)
		return -1;
	return 0;
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
	return open_companions(r);
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
	return open_companions(r);
}

void run_symbolize(struct run *r)
{
	symbolize_model(&r->model, r->sym, r->has_maps ? &r->maps : NULL);
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

	/* (Not while a dump is read ahead: that thread interns.) */
	if (last && !r->reading_ahead)
		model_trim(&r->model);
	symbolize_model(&r->model, r->sym,
			snap->has_own_maps ? &snap->own_maps
					   : r->has_maps ? &r->maps : NULL);
	r->symbolized = true;
	if (last)
		symbolizer_trim(r->sym);
}

int run_load_dump(struct run *r, size_t i, struct snapshot *snap)
{
	if (profile_load_part(snap, r->series.dumps[i].path,
			      r->series.dumps[i].part, &r->model,
			      &r->reading) < 0)
		return -1;
	snap->counter = r->series.dumps[i].counter;
	model_note_runtime(&r->model, snap);
	return 0;
}

/* ---- teardown ---- */

void series_teardown(const struct series *s, enum dump_format format,
		     struct run_teardown *t)
{
	const struct profile_traits *tr = profile_traits(format);
	enum dump_moment last = MOMENT_UNSAID;

	memset(t, 0, sizeof(*t));
	t->last = s->ndumps ? s->ndumps - 1 : 0;
	t->before = SIZE_MAX;
	/* (A producer killed before it wrote leaves an empty dump.) */
	while (t->last > 0 && file_empty(s->dumps[t->last].path))
		t->last--;
	for (size_t i = 0; tr->moment && i <= t->last && s->ndumps; i++) {
		enum dump_moment mo = tr->moment(s->dumps[i].path);

		if (mo == MOMENT_BEFORE_TEARDOWN) {
			t->before = i;
			t->said = true;
		}
		if (i == t->last)
			last = mo;
	}
	t->last_said = last == MOMENT_AT_EXIT;
	t->at_exit = last == MOMENT_AT_EXIT ||
		     (tr->last_at_exit && t->last > 0 &&
		      tr->last_at_exit(s->dumps[0].path));
	if (!t->said && t->at_exit && t->last > 0)
		t->before = t->last - 1;
}

/* ---- reading ahead ---- */

void run_reader_init(struct run_reader *rr, struct run *r)
{
	memset(rr, 0, sizeof(*rr));
	rr->r = r;
}

static void *read_ahead(void *arg)
{
	struct run_reader *rr = arg;
	const struct series_file *d = &rr->r->series.dumps[rr->ahead];

	report_capture(&rr->said);
	rr->rc = profile_load_part_as(&rr->snap, d->path, d->part,
				      &rr->r->model, &rr->r->reading,
				      rr->r->format);
	if (rr->rc == 0)
		rr->snap.counter = d->counter;
	report_capture(NULL);
	return NULL;
}

/* Wait for the dump read ahead; true if it is I, then in SNAP. */
static bool take(struct run_reader *rr, size_t i, struct snapshot *snap,
		 int *rc)
{
	if (!rr->busy)
		return false;
	pthread_join(rr->tid, NULL);
	rr->busy = false;
	rr->r->reading_ahead = false;
	strtab_share(&rr->r->model.strings, false);
	/* (-2: not of the run's format after all; read as any other.) */
	if (rr->ahead == i && rr->rc != -2) {
		report_replay(&rr->said);
		sb_reset(&rr->said);
		*snap = rr->snap;
		*rc = rr->rc;
		if (!*rc)
			model_note_runtime(&rr->r->model, snap);
		return true;
	}
	/* Not asked for: as if never read. */
	if (rr->rc == 0)
		snapshot_release(&rr->snap);
	sb_reset(&rr->said);
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
	    threads_wanted() > 1 && !file_empty(r->series.dumps[next].path)) {
		rr->ahead = next;
		strtab_share(&r->model.strings, true);
		if (pthread_create(&rr->tid, NULL, read_ahead, rr) == 0)
			rr->busy = rr->r->reading_ahead = true;
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
	sb_release(&rr->said);
}

void run_close(struct run *r)
{
	symbolizer_destroy(r->sym);
	maps_free(&r->maps);
	series_free(&r->series);
	model_free(&r->model);
	memset(r, 0, sizeof(*r));
}
