/*
 * CPython's object allocator (pymalloc) walked from outside, beside
 * glibc's heap (src/memory/pymalloc.c), and the Python objects of a
 * process typed by their ob_type: a live process or a core, without
 * symbols beyond the interpreter's exported ones.
 *
 * The interpreter is found by the symbols its executable or libpython
 * exports (_PyRuntime, PyType_Type, Py_Version: the version picks a row
 * of python_offsets.h); pymalloc's arenas by their table, a malloc'd
 * block a file-static pointer of the interpreter's data points at (found
 * as the one block whose arena_objects agree with the pools they hold:
 * 3.11 has no symbol for it); then every pool of every arena, its
 * blocks in use those its free list does not hold.  Counts per size
 * class are sys._debugmallocstats()'s.
 *
 * An object is typed by a type pointer at one of the places its layout
 * puts it: the block's start (no collector header), 16 bytes in (a
 * PyGC_Head first), 32 (a managed dict's pointers before that), the
 * type's flags agreeing; a type is an object whose type is type (or a
 * metaclass of it).  The storage of a dict, list, bytearray or set that
 * lies in a block of its own is typed after its owner ("dict keys",
 * "list items", "Plain values").
 */
#ifndef DMPROF_PYMALLOC_H
#define DMPROF_PYMALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "hashmap.h"
#include "python_offsets.h"
#include "util.h"

struct heap;
struct procimage;

#define PYMALLOC_MAX_CLASSES 64

/* sys._debugmallocstats()'s row of a size class. */
struct py_class {
	uint64_t pools, used, avail;
};

/* A Python type: its type object, name, and the blocks of it. */
struct py_type {
	uint64_t addr;          /* 0: a storage layout ("dict keys") */
	const char *name;       /* tp_name, or the layout's */
	uint64_t flags;         /* tp_flags */
	uint64_t count, bytes;  /* blocks of it (pymalloc's and glibc's) */
};

/* Storage an object keeps apart (a dict's keys): where, and the type
 * index of its layout. */
struct py_link {
	uint64_t target;
	uint32_t layout;
};

/* What a walk of the arenas found wrong (a pool whose count is not its
 * free list's, a header that is no pool's). */
struct type_memo;

struct py_problem {
	struct fault f;
};

struct pymalloc {
	/* The interpreter: its file, version, and the exported objects
	 * read. */
	char *module;
	unsigned major, minor, micro;
	const struct python_offsets *off;
	const struct pymalloc_layout *lay;
	uint64_t runtime, type_type;
	/* pymalloc's arenas: their table (where it is, where the pointer
	 * to it is), each arena's address, first pool not yet carved, and
	 * free pools. */
	uint64_t table, table_ptr;
	size_t maxarenas, narenas;
	/* Per size class, as sys._debugmallocstats() counts them. */
	struct py_class classes[PYMALLOC_MAX_CLASSES];
	uint64_t unused_pools, arena_alignment;
	uint64_t arena_bytes;   /* narenas * ARENA_SIZE */
	/* Every block in use, sorted by address: its address in the low
	 * 56 bits, its size class above; and its type (index in types, 0:
	 * unknown). */
	uint64_t *blocks;
	uint32_t *type_of;
	size_t nblocks, blocks_alloc;
	/* The arenas' spans, sorted: [start, end) of each. */
	uint64_t (*spans)[2];
	/* Storage of pymalloc's objects outside its arenas (in glibc's
	 * blocks), for their typing. */
	struct py_link *far;
	size_t nfar, far_alloc;
	/* The types found: [0] is unknown; by type object address. */
	struct py_type *types;
	size_t ntypes, types_alloc;
	struct hashmap by_addr;   /* type address -> index + 1 (boxed) */
	struct hashmap by_name;   /* layout name -> index + 1 */
	struct arena arena;
	struct py_problem *problems;
	size_t nproblems, problems_alloc;
	/* Types ready and named whose own type is not type (pymalloc.c's
	 * memos): said after the walk, those its blocks name. */
	struct type_memo **bad_meta;
	size_t nbad_meta, bad_meta_alloc;
	/* Why pymalloc was not walked (an interpreter without a row, run
	 * with PYTHONMALLOC=malloc, or no table found), when not. */
	struct fault why;
	bool walked;
};

static inline uint64_t py_block_addr(uint64_t b)
{
	return b & ((1ull << 56) - 1);
}

static inline unsigned py_block_class(uint64_t b)
{
	return (unsigned)(b >> 56);
}

/* The bytes of blocks of size class K. */
static inline uint64_t py_class_size(const struct pymalloc *p, unsigned k)
{
	return (uint64_t)(k + 1) * p->lay->alignment;
}

/*
 * Find CPython in IMG, whose glibc heap H was walked: NULL when no
 * interpreter is mapped; else a walk (P->walked), or P->why saying why
 * not.  The pymalloc's blocks are typed, and H's blocks in use may then
 * be with pymalloc_type_block.
 */
struct pymalloc *pymalloc_walk(struct procimage *img, const struct heap *h);

/*
 * The same in two steps, for what knows the interpreter already (a
 * test's image): P for an interpreter of MAJOR.MINOR.MICRO in MODULE,
 * whose type object is at TYPE_TYPE; then the walk of its arenas, whose
 * table a word of MODULE's writable mappings points at (a block of H).
 */
struct pymalloc *pymalloc_new(const char *module, unsigned major,
			      unsigned minor, unsigned micro,
			      uint64_t type_type);
void pymalloc_run(struct pymalloc *p, struct procimage *img,
		  const struct heap *h);

/*
 * The type of the object at the start of the LEN bytes HEAD of a block
 * at ADDR (its user bytes): its index in P's types (a new one added), or
 * 0 when none is there.
 */
uint32_t pymalloc_type_head(struct pymalloc *p, struct procimage *img,
			    uint64_t addr, const uint8_t *head, size_t len);

/* The type of LAYOUT's name (a storage's: "dict keys"): its index. */
uint32_t pymalloc_layout_type(struct pymalloc *p, const char *name);

/*
 * Where an object of type T at ADDR (the object, past its headers; its
 * bytes HEAD, LEN of them) keeps storage apart: up to 2 addresses into
 * TARGETS, the layout's type index of each into LAYOUTS; how many.
 */
size_t pymalloc_storage(struct pymalloc *p, uint32_t t, uint64_t block,
			const uint8_t *head, size_t len, uint64_t *targets,
			uint32_t *layouts);

/*
 * The object of the Python type NAME, whose type object is at TYPE (0:
 * a storage layout), in a block whose first LEN bytes are BYTES, for
 * people, into SB: its type's name and a short
 * value, as chap's describe gives it ("str 'key-1'", "int 42", "float
 * 1.5", "dict len=3", "list len=5"; a str of 40 characters at most, an
 * int of two digits; the name alone for other types, or where the bytes
 * are not the type's).
 */
struct strbuf;
void pymalloc_value(const struct pymalloc *p, const char *name,
		    uint64_t type, const uint8_t *bytes, size_t len,
		    struct strbuf *sb);

/* Whether ADDR lies in one of the arenas of P (walked; NULL: no). */
bool pymalloc_in_arenas(const struct pymalloc *p, uint64_t addr);

/* The in-use block of P holding ADDR: its index, or -1. */
ptrdiff_t pymalloc_find(const struct pymalloc *p, uint64_t addr);

void pymalloc_free(struct pymalloc *p);

#endif
