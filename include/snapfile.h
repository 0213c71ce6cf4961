/*
 * dmprof snapshot's files (dmprof-snapshot 1), see src/read/snapfile.c:
 * what they say, as records (a line each, or a few); their reader, which
 * hands each record to the snapshot builder (snapbuild.h); their writer,
 * which prints the records a capture of a process or a core gives
 * (capture.h).  A core is read as a snapshot through the same records
 * and the same builder, with no file in between.
 */
#ifndef DMPROF_SNAPFILE_H
#define DMPROF_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heap_summary.h"
#include "input.h"
#include "maps.h"
#include "reader.h"
#include "snapshot.h"

/* Where blocks or a part of a mapping are, besides an arena's index. */
enum {
	SNAP_WHERE_NONE = -1,         /* a part: none of those below */
	SNAP_WHERE_MMAPPED = -2,      /* a chunk glibc mapped alone */
	SNAP_WHERE_THREAD_STACK = -3, /* a part: a thread's stack */
	SNAP_WHERE_ALLOCATOR = -4,    /* a part: the arenas of the other
					 malloc META's Allocator names */
	SNAP_WHERE_PYMALLOC = -5,     /* CPython's object allocator's
					 arenas (pymalloc.h) */
};

/* What blocks in use are, when the scan of the heap found it. */
enum snap_type_kind {
	SNAP_TYPE_NONE,
	SNAP_TYPE_CLASS,   /* a C++ class, by its vtable's typeinfo */
	SNAP_TYPE_LAYOUT,  /* a library layout (string body, ...) */
	SNAP_TYPE_PYTHON,  /* a Python object, by its type object */
};

struct snap_type {
	enum snap_type_kind kind;
	uint64_t typeinfo;   /* a class's; a Python type's object */
	const char *name;    /* NAME_LEN bytes */
	size_t name_len;
};

enum snap_record_kind {
	SNAP_META,       /* Key: value */
	SNAP_HEAP,       /* the HEAP section begins */
	SNAP_ARENA,
	SNAP_TCACHES,
	SNAP_BLOCKS,     /* blocks of one kind, and their bytes */
	SNAP_REACH,      /* what the scan found, summed */
	SNAP_LISTED,     /* a leaked block, listed */
	SNAP_PROBLEM,
	SNAP_MAPS,       /* the MAPS section begins */
	SNAP_VMA,        /* a mapping */
	SNAP_PART,       /* a part of the mapping before */
	SNAP_PYMALLOC,   /* CPython's object allocator, summed up */
	SNAP_PYCLASS,    /* one of its size classes */
};

/* One record.  Strings are KEY_LEN, VALUE_LEN, ... bytes, not NUL-ended. */
struct snap_record {
	enum snap_record_kind kind;
	union {
		struct {
			const char *key, *value;
			size_t key_len, value_len;
		} meta;
		struct {
			uint64_t index, addr, heaps, system, overhead, unknown;
			bool locked, corrupt;
		} arena;
		uint64_t tcaches;
		struct {
			enum heap_state state;
			uint64_t lo, hi;      /* the size class (in use) */
			int where;            /* an arena, or MMAPPED */
			uint64_t count, bytes, committed;
			bool leaked;
			struct snap_type type;
		} blocks;
		struct {
			uint64_t anchored_count, anchored_bytes;
			uint64_t leaked_count, leaked_bytes;
			uint64_t unreferenced_count, unreferenced_bytes;
			uint64_t listed;
		} reach;
		struct {
			uint64_t addr, size;  /* the user's address; the chunk */
			int where;            /* an arena, or MMAPPED */
			bool unreferenced;
			const uint8_t *head;  /* its first NHEAD bytes */
			uint8_t nhead;
			struct snap_type type;
		} listed;
		struct {
			uint64_t addr;
			int arena;            /* -1: not an arena's */
			const char *msg;
		} problem;
		struct {
			uint64_t committed, rss, swap;
			struct vma v;         /* its name in any string table */
		} vma;
		struct {
			uint64_t start, end, committed;
			int where;            /* an arena, MMAPPED, NONE,
						 THREAD_STACK, ALLOCATOR or
						 PYMALLOC */
		} part;
		struct {
			/* Its arenas, their free pools and the bytes lost
			 * to their alignment; the bytes of the arenas no
			 * block in use holds, and of those committed. */
			uint64_t arenas, unused_pools, alignment;
			uint64_t free, free_committed;
		} pymalloc;
		struct {
			/* sys._debugmallocstats()'s row */
			uint64_t index, size, pools, used, avail;
		} pyclass;
	} u;
};

/* True if the line is a snapshot file's first ("dmprof-snapshot ..."). */
bool snapfile_claims(const char *line, size_t len);

/* Parse FB, a snapshot file, into SNAP.  Returns 0 or -1. */
int snapfile_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run);

/*
 * Writing a snapshot file: a record at a time, in the order of the file
 * (META, then HEAP if the heap was walked, then MAPS), the sections'
 * headers and comments put in by the writer.
 */
struct snap_writer {
	FILE *f;
	bool started;
};
void snapfile_writer_init(struct snap_writer *w, FILE *f);
/* A record handed as a capture hands them (CTX: the writer).  0. */
int snapfile_put(void *ctx, const struct snap_record *r);

/*
 * Size classes of blocks in use, by usable bytes: one per chunk size up
 * to 1016 (glibc's bins: 0..24, 25..40, ...), then four per power of
 * two (1017..1024, 1025..1280, ...).  The class of USABLE, and the
 * bounds of class CLS.
 */
unsigned snap_size_class(uint64_t usable);
void snap_size_bounds(unsigned cls, uint64_t *lo, uint64_t *hi);

#endif
