/* The symbolizer for real binaries and shared libraries (libbfd). */
#ifndef DMPROF_SYMBFD_H
#define DMPROF_SYMBFD_H

#include "symbol.h"

/* Binaries are opened as the maps name them, on first need. */
struct symbolizer *symbfd_open(struct strtab *strings,
			       const struct sym_options *opts);

#endif
