/*
 * What a heap's blocks are, with no allocation stacks: a C++ object
 * whose first word points into a vtable is of the class the vtable's
 * typeinfo names (found by structure: vtable[-1] is the typeinfo, whose
 * second word points at the mangled name; demangled here, so no symbols
 * are needed), a block make_shared made by the class its control block
 * holds; a few library layouts are recognised by who points at them (a
 * long std::string's body, a std::vector's body, a hash table's buckets
 * and nodes, a tree's nodes), as chap does; the rest is unknown.
 *
 * In a CPython process (the heap's pymalloc walked), a block holding a
 * Python object is typed by its ob_type, and storage such an object keeps
 * in a block of its own (a dict's keys, a list's items) after its owner;
 * pymalloc's own types are counted here too.
 *
 * The typing reads block bytes as reach.h's scan offers them (one
 * read of the heap serves both), and memory outside the heap (vtables,
 * typeinfos, names: the binaries' mappings) through the image.
 */
#ifndef DMPROF_TYPING_H
#define DMPROF_TYPING_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "glibc_heap.h"
#include "hashmap.h"
#include "reach.h"
#include "procimage.h"
#include "strtab.h"

enum block_type_kind {
	TYPE_UNKNOWN,   /* types[0], the only one */
	TYPE_CLASS,     /* by its vtable */
	TYPE_LAYOUT,    /* by who points at it */
	TYPE_PYTHON,    /* a Python object, by its ob_type (pymalloc.h) */
};

struct block_type {
	enum block_type_kind kind;
	/* The class ("Session", "ns::Conn<int>"; a block make_shared
	 * made, whose control block's vtable comes first, by the class it
	 * holds: "Record (make_shared)") or the layout's name
	 * ("string body", "vector body", "unordered_map/set buckets",
	 * "unordered_map/set node", "map/set node": no "std::", which
	 * owners pass over as the C++ runtime's). */
	const char *name;
	uint64_t typeinfo;  /* a class's std::type_info, a Python type's
			       object, else 0 */
	uint64_t count, bytes;  /* blocks of it, chunk sizes summed */
};

struct typing {
	uint32_t *of;            /* per block of the heap: index in types */
	size_t nblocks;
	struct block_type *types; /* [0]: unknown */
	size_t ntypes, alloc;
	/* Per type of the heap's pymalloc (h->py), its index here (after
	 * typing_finish). */
	uint32_t *py_of;
	size_t npy;
	/* Private to typing.c (candidates, caches). */
	struct arena arena;
	struct strtab strings;
	struct hashmap vtables;  /* vtable address -> its entry (arena) */
	void *priv;
};

/*
 * Start typing the blocks of H (read through IMG, which must outlive
 * T until typing_finish).  The visitor to give reach_scan_run.
 */
void typing_init(struct typing *t, const struct heap *h,
		     struct procimage *img);
struct reach_visitor typing_visitor(struct typing *t);

/*
 * After the scan: the layouts that need every block's first words (the
 * nodes of tables and trees), the counts, and the types sorted by name
 * (the same heap, the same indexes).  Blocks not in use stay unknown and
 * are counted nowhere; types[0] counts the blocks in use left unknown.
 * S may be NULL (nothing of it is needed yet).  OF and TYPES are
 * meaningful only after this.
 */
void typing_finish(struct typing *t, const struct reach_scan *s);

void typing_release(struct typing *t);

#endif
