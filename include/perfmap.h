/*
 * Perf maps: the "START SIZE NAME" lines a JIT writes for profilers to
 * name the code it makes (/tmp/perf-PID.map: node --perf-basic-prof, the
 * JVM, .NET, CPython 3.12+), as dmprof record copies them beside a run's
 * dumps (PREFIX.PID.perf.map), read to name the frames of the run that
 * are in code of no binary.
 */
#ifndef DMPROF_PERFMAP_H
#define DMPROF_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "maps.h"
#include "model.h"

/* A range of code and the name its latest line gives it (in the text). */
struct perfmap_range {
	uint64_t start, end; /* end exclusive */
	const char *name;
	size_t len;
};

struct perfmap {
	struct filebuf fb;         /* the text the names are in */
	struct perfmap_range *v;   /* sorted, disjoint */
	size_t n;
	size_t lines;              /* the lines that named a range */
};

/*
 * Read the perf map at PATH: each line's range named by it, the later
 * line winning where ranges overlap (a JIT reuses the memory of code it
 * freed).  A last line without its newline (the map copied while it was
 * written) is left out; so are lines that are not "START SIZE NAME",
 * which a warning says ("PATH:LINE: ...", the first, and how many).
 * Returns 0, or -1 after saying why the file cannot be read.
 */
int perfmap_read(struct perfmap *pm, const char *path);
/* The same of text in memory (PATH for the messages). */
int perfmap_parse(struct perfmap *pm, const char *data, size_t size,
		  const char *path);
/* The range holding ADDR, or NULL. */
const struct perfmap_range *perfmap_find(const struct perfmap *pm,
					 uint64_t addr);
void perfmap_release(struct perfmap *pm);

/*
 * NAME as a frame names code: V8's "JS:~fillBuffers /app/prog.js:2:21"
 * (and node 18's "LazyCompile:*fillBuffers ...") as the function
 * "fillBuffers" of file /app/prog.js, line 2 (where the function starts;
 * an anonymous one is "(anonymous)"); any other name (V8's
 * "Builtin:ArrayMap", a JVM's method) whole, with no file.  OUT points
 * into NAME.
 */
void perfmap_split(const char *name, size_t len, struct frame_name *out);

/* How a frame in code of no binary that no perf map names is named:
 * "JIT code 0x7f3a5c0269e1". */
#define PERFMAP_UNNAMED "JIT code "

/*
 * Is the frame of FUNC and FILE, named from a perf map, the runtime's
 * own code rather than the program's: code no map named, V8's builtins,
 * stubs, handlers and regular expressions, node's own JavaScript
 * ("node:internal/..."), a package's (in node_modules)?
 */
bool perfmap_runtime_frame(const char *func, const char *file);

/*
 * Name the frames of M not yet symbolized that are in code of no binary
 * (as MAPS, the run's, say: anonymous memory, or none), from the perf map
 * PREFIX.perf.map, dmprof record's copy, if there is one (PREFIX: the
 * run's, "DIR/NAME.PID"); those it does not name are PERFMAP_UNNAMED,
 * which a warning says once.  Only in a run that has the copy, or whose
 * dumps (FIRST_DUMP's META) say node runs it: other runs' frames there
 * stay as they are.  Returns 0, or -1 after saying why (the map is
 * there, and cannot be read).
 */
int perfmap_name_run(struct model *m, const char *prefix,
		     const char *first_dump, const struct maps *maps);

#endif
