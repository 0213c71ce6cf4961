/*
 * A run's companion files: what a dump needs beside it to be read and
 * symbolized, each a row of the table below, loaded in its order once
 * the series is known.  They follow the rule "missing: warn and degrade;
 * present but broken: error", so a user with only the dumps still gets
 * unsymbolized output, while a corrupt file is never half-used.  A new
 * kind of companion file is a loader here and a row.
 */
#include "run.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "bucketfile.h"
#include "perfmap.h"
#include "symbfd.h"
#include "symmap.h"
#include "util.h"

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/*
 * With no bucket files, a run's dumps may hold their buckets themselves
 * (dmprof record's one file a dump): every dump of the run is looked at,
 * not only those read, as a bucket is defined in the dump that first
 * had it.
 */
static int load_buckets_in_dumps(struct run *r, size_t *loaded)
{
	struct series_file *heaps = NULL;
	const char **paths;
	size_t nheaps = 0, n;
	int rc;

	if (series_heaps(&r->series, &heaps, &nheaps) < 0)
		return -1;
	/* (A dump of no series, its counter renamed away: itself.) */
	n = nheaps ? nheaps : r->series.ndumps;
	paths = xcalloc(n + 1, sizeof(*paths));
	for (size_t i = 0; i < n; i++)
		paths[i] = nheaps ? heaps[i].path : r->series.dumps[i].path;
	rc = bucketfile_load_dumps(&r->model, paths, n, loaded, &r->dump_maps);
	free(paths);
	series_files_free(heaps, nheaps);
	return rc;
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
	if (rc == 0 && !n && !r->self_contained)
		rc = load_buckets_in_dumps(r, &loaded);
	if (rc < 0)
		return -1;
	if (!loaded && !r->self_contained)
		warning("no bucket definitions found (%s.NNNN.buckets, or "
			"BUCKETS sections in the dumps); every bucket is "
			"unknown", r->series.prefix);
	return 0;
}

/* The maps the dumps hold, the last written (as PREFIX.maps would be). */
static int load_dump_maps(struct run *r)
{
	struct dump_maps *dm = &r->dump_maps;
	int rc = maps_parse(&r->maps, dm->text.buf, dm->text.len, dm->path,
			    dm->line, &r->model.strings, false);

	r->has_maps = rc == 0;
	return rc;
}

static int load_maps(struct run *r)
{
	struct strbuf path = STRBUF_INIT;
	int rc = 0;

	sb_addf(&path, "%s.maps", r->series.prefix);
	if (!file_exists(path.buf) && r->dump_maps.text.len) {
		/* (Its text stays, as a .maps file does: pprof copies it.) */
		rc = load_dump_maps(r);
		sb_release(&path);
		return rc;
	}
	if (!file_exists(path.buf)) {
		sb_reset(&path);
		sb_addf(&path, "%s.symmap/maps", r->series.prefix);
	}
	if (file_exists(path.buf)) {
		rc = maps_load(&r->maps, path.buf, &r->model.strings);
		r->has_maps = rc == 0;
	} else if (!r->self_contained) {
		warning("no maps (%s.maps, a MAPS section in the dumps, or "
			"%s.symmap/maps); addresses stay unsymbolized",
			r->series.prefix, r->series.prefix);
	}
	sb_release(&path);
	return rc;
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

static const struct companion {
	const char *what;  /* for the reader of this table */
	int (*load)(struct run *r);
} companions[] = {
	{ "bucket definitions: PREFIX.NNNN.buckets, else the dumps' own",
	  load_buckets },
	{ "maps: PREFIX.maps, else the dumps' own, else PREFIX.symmap/maps",
	  load_maps },
	{ "JIT code's names: PREFIX.PID.perfmap copies", load_perfmap },
	{ "a symbolizer: PREFIX.symmap/, else the binaries", open_symbolizer },
};

int run_open_companions(struct run *r)
{
	for (size_t i = 0; i < ARRAY_SIZE(companions); i++)
		if (companions[i].load(r) < 0)
			return -1;
	return 0;
}
