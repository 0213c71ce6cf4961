/*
 * /proc/PID/maps tables: the VMAs of one process at one moment, sorted by
 * start address for binary search.
 */
#ifndef DMPROF_MAPS_H
#define DMPROF_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strtab.h"

struct vma {
	uint64_t start;
	uint64_t end;     /* exclusive */
	uint64_t offset;  /* file offset of start */
	uint64_t inode;
	uint32_t major, minor;
	char perms[5];    /* "rwxp" form, NUL-terminated */
	const char *name; /* interned; "" for anonymous */
};

static inline bool vma_writable(const struct vma *v) { return v->perms[1] == 'w'; }
static inline bool vma_executable(const struct vma *v) { return v->perms[2] == 'x'; }

struct maps {
	struct vma *v;
	size_t n;
	size_t alloc;
	char *path;  /* where it was read from, for diagnostics; may be NULL */
};

/*
 * Parse one maps line (the kernel's and gperftools' layouts both):
 * "START-END PERMS OFFSET MAJ:MIN INODE [NAME]".  Returns 0 and fills OUT,
 * or -1 when the line is not a VMA line (nothing printed).  A number too
 * big for 64 bits is -2 (also silent: the caller knows the line).
 */
int maps_parse_line(const char *p, size_t len, struct vma *out,
		    struct strtab *strings);

void maps_init(struct maps *m);
/* Add V; then maps_sort() once all are in, before any lookup. */
void maps_add(struct maps *m, const struct vma *v);
/* Sort by start, dropping (with a warning naming SOURCE) overlaps. */
void maps_sort(struct maps *m, const char *source);
void maps_free(struct maps *m);
/*
 * Load a maps file.  Lines that are not VMA lines are an error naming
 * FILE:LINE, except blank lines.  Returns 0 or -1.
 */
int maps_load(struct maps *m, const char *path, struct strtab *strings);
/*
 * Parse maps text already in memory.  LENIENT (a MAPPED_LIBRARIES: trailer
 * inside a dump) skips lines that are not VMA lines, with one warning,
 * instead of failing.
 */
int maps_parse(struct maps *m, const char *data, size_t size,
	       const char *path, unsigned long first_line,
	       struct strtab *strings, bool lenient);

/*
 * Parse the map section of a pprof text profile ("--- Memory map: ---"),
 * as pprof reads it: /proc maps lines, brief "START-END: PATH [(@OFF)]"
 * lines, "NAME=VALUE" lines whose $NAME later lines use, a glog prefix
 * ("I0102 ... file.cc:12] ") dropped; other lines are ignored.
 */
int maps_parse_pprof(struct maps *m, const char *data, size_t size,
		     const char *path, struct strtab *strings);

/* The VMA containing ADDR, or NULL. */
const struct vma *maps_find(const struct maps *m, uint64_t addr);

/* The /proc classification of a VMA used by GLOBAL_STATS. */
enum vma_class {
	VMA_FILE_EXEC,
	VMA_FILE_NONEXEC,
	VMA_ANONYMOUS,
	VMA_STACK,
	VMA_OTHER,
};
enum vma_class vma_classify(const struct vma *v);

#endif
