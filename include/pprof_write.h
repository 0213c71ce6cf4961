/*
 * Writing a gzipped profile.proto (google/pprof's proto/profile.proto):
 * the format go tool pprof, speedscope and Pyroscope read.
 */
#ifndef DMPROF_PPROF_WRITE_H
#define DMPROF_PPROF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "maps.h"
#include "model.h"
#include "policy.h"
#include "util.h"

/* One sample: a stack (or a name for what has none), objects, bytes. */
struct pprof_sample {
	int64_t objs;
	int64_t bytes;
	const struct stack *stack; /* NULL: none; NAME says what it is */
	const char *name;
	int col;                   /* its component; -1 with --original */
};

/* What the profile says of itself. */
struct pprof_profile {
	const struct model *m;     /* the frames the stacks name */
	const struct policy *p;    /* the components' names, its label */
	const struct maps *maps;   /* where the frames are, or NULL */
	double time;               /* of the dump, 0: unknown */
	const char *dump;          /* its path, in a comment */
	const char *what;          /* what was exported, in a comment */
};

/*
 * The profile of samples V[0..N) (each with a component: COL >= 0),
 * gzipped, appended to GZ.
 */
void pprof_write(const struct pprof_profile *pp,
		 const struct pprof_sample *v, size_t n, struct strbuf *gz);

#endif
