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
#include "bucketfile.h"
#include "model.h"
#include "series.h"
#include "symbol.h"
#include "threads.h"

enum run_flags {
	RUN_ALL_DUMPS = 1 << 0, /* the named dump and every later one */
};

struct run {
	struct series series;
	struct model model;
	struct read_run reading; /* the readers' options and memory */
	struct maps maps;        /* PREFIX.maps or PREFIX.symmap/maps, or
				  * the dumps' own (dump_maps) */
	bool has_maps;
	/* The dumps hold their buckets and maps (no bucket files): the
	 * maps' text, as the last dump that has them holds it. */
	struct dump_maps dump_maps;
	struct symbolizer *sym;  /* NULL: nothing to symbolize with */
	const struct sym_options *opts; /* the caller's */
	bool symbolized;
	/* Nobody looks at the frames' names (a timeline whose policies
	 * decide without them): run_symbolize* leave them. */
	bool names_unused;
	size_t snaps_symbolized; /* by run_symbolize_snapshot */
	bool reading_ahead;      /* a thread interns into the model */
	enum dump_format format; /* of the first dump */
	bool self_contained;     /* heap profiles: their own stacks, maps */
	struct task trim;        /* the symbolizer trimmed, after the last */
	bool trimming;           /* snapshot's symbolization (run.c) */
	/* The caller does nothing big after the last snapshot's names (it
	 * prints them): the symbolizer is not trimmed for it. */
	bool light_end;
	/* Told how far run_symbolize_snapshot has got (see
	 * symbolize_model_telling), when the caller reads names meanwhile. */
	struct progress *names_told;
	uint64_t bytes_read;     /* the dumps' sizes, so far (run.c) */
};

/*
 * Find the run of FIRST_DUMP, load its bucket files and maps and pick a
 * symbolizer, which reads OPTS (the caller's, kept) at each lookup; its
 * dumps are read as READ says (the caller's, kept; NULL: the defaults).
 * Returns 0, or -1 after printing why.
 */
int run_open(struct run *r, const char *first_dump, unsigned flags,
	     const struct sym_options *opts, const struct read_options *read);
/*
 * The same for the dumps of one run a user named (N > 1: exactly those,
 * in counter order; one: it and every later dump).
 */
int run_open_dumps(struct run *r, const char *const *dumps, size_t n,
		   const struct sym_options *opts,
		   const struct read_options *read);
/*
 * Its companion files (src/load/companion.c: bucket files, maps, the
 * symbolizer), once its series is found.  Returns 0, or -1 after
 * printing why.
 */
int run_open_companions(struct run *r);
/* Symbolize every frame and type not symbolized yet. */
void run_symbolize(struct run *r);
/*
 * The same, for frames first seen in SNAP: with its own maps when it has
 * them (gperftools profiles carry their own).
 */
void run_symbolize_snapshot(struct run *r, const struct snapshot *snap);
/*
 * Where a run's teardown begins: after the last dump taken when main
 * returned or exit was called, before atexit handlers and static
 * destructors freed what the program kept (the recorder's META says
 * "Reason: main returned" or "exit called"), or, where the dumps say
 * nothing, by the format's rule: gperftools' heap profiler, and the
 * recorder without such a dump, write their last dump at exit, after
 * teardown.
 */
struct run_teardown {
	size_t last;     /* the last dump with something in it */
	size_t before;   /* the last dump before teardown; SIZE_MAX: not
			    known (the last may be before it or not) */
	bool said;       /* the dumps say where (else the format's rule) */
	bool at_exit;    /* the last dump was written at exit, after
			    teardown (said, or by the format's rule) */
	bool last_said;  /* that is said by the last dump itself */
};
/* Of the dumps of series S, in FORMAT (that of its first dump). */
void series_teardown(const struct series *s, enum dump_format format,
		     struct run_teardown *t);

/* Read dump I of the series (0 = the one the user named). */
int run_load_dump(struct run *r, size_t i, struct snapshot *snap);

/*
 * A run's dumps read in order, each next one read ahead on another core
 * while the caller works on the one it has; a caller that reads them
 * one after the other and sums each (run_reader.two) has the two next
 * ones read, each on a core of its own (reading a deep dump costs more
 * than summing it: csv of make bench's deep run waited a sixth of its
 * time for the one reader).  Only deep dumps
 * are: their reader leaves the model alone but for interned strings
 * (which lock meanwhile) and the bucket table it looks up.  What reading
 * a dump says is said when the caller takes it, as if it were read then.
 */
struct run_ahead {
	struct task task;     /* a dump being read ahead, and what reading
				 it said */
	size_t i;             /* which */
	struct snapshot snap; /* its snapshot, */
	int rc;               /* its run_load_dump result */
	bool other;           /* not of the run's format: not read */
	struct read_run reading; /* the run's, as it was when it started */
	unsigned warned;      /* (reading.warned then) */
	struct run *r;
};
struct run_reader {
	struct run *r;
	struct run_ahead ahead[2];
	/* The caller's: it asks for the dumps one after the other and
	 * does little with each (csv sums them), so the one after the
	 * next is read too.  (diff's walk of each dump costs more than
	 * reading it: a second reader only held more memory.) */
	bool two;
};

void run_reader_init(struct run_reader *rr, struct run *r);
/* malloc's pad for two dumps read at once (once a process). */
void run_pad_readers(void);
/*
 * run_load_dump(R, I, SNAP); then dump NEXT (SIZE_MAX: none) is read
 * ahead, for the next call.  The caller must not change the model but
 * for interning strings until that call or run_reader_end.
 */
int run_reader_load(struct run_reader *rr, size_t i, size_t next,
		    struct snapshot *snap);
void run_reader_end(struct run_reader *rr);
void run_close(struct run *r);

#endif
