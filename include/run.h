/*
 * A run: the dumps of one profiled process and everything that goes with
 * them (bucket files, maps, symbols), loaded into one model.  Commands
 * start here.
 */
#ifndef DMPROF_RUN_H
#define DMPROF_RUN_H

#include <stdbool.h>

#include "profile.h"
#include "maps.h"
#include "model.h"
#include "series.h"
#include "symbol.h"

enum run_flags {
	RUN_ALL_DUMPS = 1 << 0, /* the named dump and every later one */
};

struct run {
	struct series series;
	struct model model;
	struct maps maps;        /* PREFIX.maps or PREFIX.symmap/maps */
	bool has_maps;
	struct symbolizer *sym;  /* NULL: nothing to symbolize with */
	const struct sym_options *opts; /* the caller's */
	bool symbolized;
	enum dump_format format; /* of the first dump */
	bool self_contained;     /* heap profiles: their own stacks, maps */
};

/*
 * Find the run of FIRST_DUMP, load its bucket files and maps and pick a
 * symbolizer, which reads OPTS (the caller's, kept) at each lookup.
 * Returns 0, or -1 after printing why.
 */
int run_open(struct run *r, const char *first_dump, unsigned flags,
	     const struct sym_options *opts);
/*
 * The same for the dumps of one run a user named (N > 1: exactly those,
 * in counter order; one: it and every later dump).
 */
int run_open_dumps(struct run *r, const char *const *dumps, size_t n,
		   const struct sym_options *opts);
/* Symbolize every frame and type not symbolized yet. */
void run_symbolize(struct run *r);
/*
 * The same, for frames first seen in SNAP: with its own maps when it has
 * them (gperftools profiles carry their own).
 */
void run_symbolize_snapshot(struct run *r, const struct snapshot *snap);
/* Read dump I of the series (0 = the one the user named). */
int run_load_dump(struct run *r, size_t i, struct snapshot *snap);
void run_close(struct run *r);

#endif
