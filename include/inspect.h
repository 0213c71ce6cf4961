/*
 * Single blocks of a process or a core, read while its memory is at hand
 * (a capture's hook, capture.h: a live process is held meanwhile): what
 * an address is (a block in use, a free chunk, an arena's own headers, a
 * thread's stack, another mapping, nothing), what points at it and what
 * it points at, its bytes (dmprof describe); every block of one type
 * with its first bytes (dmprof expand --type).  Who points at a block is
 * found as the scan reads the memory (chap's rule: any aligned word that
 * holds an address inside it), so nothing is read twice.
 */
#ifndef DMPROF_INSPECT_H
#define DMPROF_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"

enum inspect_place {
	PLACE_BLOCK,    /* in the user bytes of a block in use */
	PLACE_HEADER,   /* in a chunk's header (of a block in use) */
	PLACE_FREE,     /* in a free chunk (tcache, bins, top...) */
	PLACE_HEAP,     /* in an arena's heap, in no chunk: its headers */
	PLACE_PYBLOCK,  /* in a block in use of pymalloc's (h.py) */
	PLACE_PYFREE,   /* in pymalloc's arenas, in no block in use */
	PLACE_STACK,    /* in a mapping a thread's stack pointer is in */
	PLACE_MAPPING,  /* in another mapping */
	PLACE_NONE,     /* in no mapping */
};

/* A word that points at an address's block, or that its block holds. */
struct inspect_ref {
	uint64_t at;          /* the word's address (0: a register) */
	uint64_t value;       /* what it holds */
	/* Incoming: the block in use it lies in, or -1 (a root); outgoing:
	 * the block in use it points into (of pymalloc's, PY). */
	ptrdiff_t block;
	bool py;
	enum heap_root_kind root;  /* incoming from a root */
	size_t thread;        /* a register's thread (in img->threads) */
	int reg;              /* its index in user_regs_struct */
};

/* What is kept of references (all are counted). */
#define INSPECT_MAX_REFS 1000
/* The bytes of a block read, at most. */
#define INSPECT_MAX_BYTES (1u << 20)

struct inspect_target {
	uint64_t addr;
	enum inspect_place place;
	ptrdiff_t block;      /* its chunk (BLOCK, HEADER, FREE), its
				 block of pymalloc's (PYBLOCK), or -1 */
	unsigned arena;       /* PLACE_HEAP's */
	ptrdiff_t vma;        /* its mapping (in img->maps), or -1 */
	ptrdiff_t thread;     /* PLACE_STACK: the lowest stack pointer's
				 thread in that mapping (img->threads) */
	/* What a reference points into: the block's user bytes, a free
	 * chunk whole (glibc's lists point at its header); LO == HI: no
	 * reference is looked for. */
	uint64_t lo, hi;
	uint8_t *bytes;       /* the block's (or free chunk's) user bytes */
	char *value;          /* a Python object's, for people, or NULL */
	size_t nbytes;
	bool unread;          /* they could not all be read */
	struct inspect_ref *in, *out;
	size_t nin, nout, in_alloc, out_alloc;
	uint64_t in_count, out_count; /* all of them, kept or not */
};

/* A block of the type asked for, and its first bytes. */
#define INSPECT_HEAD 64
struct inspect_block {
	size_t block;         /* in h.blocks, or in h.py->blocks (PY) */
	bool py;
	uint64_t addr, size;  /* its user bytes; its chunk's size */
	char *value;          /* a Python object's, for people, or NULL */
	uint8_t head[INSPECT_HEAD];
	uint8_t nhead;
};

struct inspect {
	struct inspect_target *targets;
	size_t ntargets;
	const char *type;     /* expand --type's, or NULL */
	struct inspect_block *blocks;
	size_t nblocks, blocks_alloc;
	bool type_known;      /* TYPE names a type of the capture's */
	struct capture_hook hook;
	const struct heap *h; /* the capture's, while it is read */
	/* The targets whose references are looked for, by where those
	 * point into, and the span of it all. */
	size_t *order, norder;
	uint64_t span_lo, span_hi;
};

/*
 * Ask IN about ADDRS (N of them, may be 0) and, if TYPE is not NULL, for
 * the blocks of TYPE (a name a type table gives: a class, a layout, a
 * size class "size-LO..HI" of blocks of no known type).  Its hook is
 * for capture_process or capture_core.
 */
void inspect_init(struct inspect *in, const uint64_t *addrs, size_t n,
		  const char *type);
void inspect_release(struct inspect *in);

/* The type of block I of capture S, as a type table names it. */
const char *inspect_type_name(const struct capture *s, size_t i,
			      struct strbuf *sb);

/* The name of x86-64's register REG (user_regs_struct's), "r15"... */
const char *inspect_reg_name(int reg);

#endif
