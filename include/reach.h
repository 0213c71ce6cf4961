/*
 * Who points at a heap's blocks: every aligned word of every block in
 * use, and of the roots (threads' registers and stacks, the binaries'
 * writable data, TLS, other writable memory the heap does not own), that
 * holds an address inside a block in use is a reference to it.  From the
 * roots, transitively, blocks are reachable; the rest are leaked; a
 * leaked block no other leaked block refers to is unreferenced (chap's
 * words: anchored, leaked, unreferenced).
 *
 * The rule is chap's: a reference is any aligned word whose value lies
 * in [user pointer, user pointer + usable size) of a block in use, so an
 * interior pointer keeps a block as a pointer to its start does.  Free
 * chunks (tcache, fastbin, bins, top) are never scanned: what they hold
 * is stale.
 *
 * The memory is read once, in address order, in large windows (a live
 * process: few process_vm_readv calls; a core: its segments), and each
 * block's bytes are offered to a visitor on the way (the typing of
 * typing.h reads them there), so nothing is read twice.
 */
#ifndef DMPROF_REACH_H
#define DMPROF_REACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "glibc_heap.h"
#include "procimage.h"

enum heap_root_kind {
	ROOT_REGISTERS,  /* a thread's general registers */
	ROOT_STACK,      /* a thread's stack, from its stack pointer up */
	ROOT_DATA,       /* a binary's writable data (and .bss after it) */
	ROOT_OTHER,      /* other writable memory the heap does not own:
			    anonymous mappings (the main thread's TLS, the
			    program's own mmaps) */
	ROOT_NKINDS
};

/* Memory to scan for references from outside the heap. */
struct heap_root_range {
	uint64_t start, end;
	enum heap_root_kind kind;
};

struct reach_roots {
	struct heap_root_range *ranges;  /* sorted by start, no overlaps */
	size_t nranges, alloc;
	uint64_t *values;                /* register values */
	size_t nvalues, values_alloc;
};

/*
 * The roots of IMG whose heap H was walked: each thread's registers
 * (REGS[i], NREGS words each of NTHREADS threads) and its stack from
 * SPS[i] less the 128-byte red zone to the end of the mapping it is in;
 * every readable and writable mapping that is no thread's stack, less
 * the heap's extents (arenas' heaps, mmapped chunks), as ROOT_DATA when
 * file-backed or the anonymous mapping right after a binary's (.bss),
 * else ROOT_OTHER.  Mappings that cannot be read (guard pages, [vvar])
 * are left out; so are a stack's bytes below its red zone (a mapping
 * several threads' stack pointers are in: from the lowest), and a
 * thread's stack outside any readable and writable mapping.  R is
 * filled anew (the caller's REGS copied), sorted, with no overlaps.
 */
void reach_roots_build(struct reach_roots *r, const struct procimage *img,
		      const struct heap *h, const uint64_t *sps,
		      const uint64_t *regs, size_t nregs, size_t nthreads);
void reach_roots_release(struct reach_roots *r);

/* What is known of one block after the scan (heap_scan.state[i]). */
enum heap_reach {
	REACH_NONE = 0,      /* not in use (free), or not scanned */
	REACH_ANCHORED,      /* reachable from a root */
	REACH_LEAKED,        /* in use, reachable from no root */
	REACH_UNREFERENCED,  /* leaked, and no leaked block refers to it */
};

/*
 * Offered the bytes of every block in use, in address order, each byte
 * once (a block larger than a window in several pieces, in order:
 * OFFSET is where the piece starts in the block's user bytes), and of
 * every root range (ADDR: where the piece starts), while the scan reads
 * them.  WORDS are the aligned words of the piece, valid during the call
 * only; bytes that could not be read are not offered (a block's pieces
 * then stop short, or skip).  Either callback may be NULL.
 */
struct reach_visitor {
	void (*block)(void *ctx, size_t i, uint64_t offset,
		      const uint64_t *words, size_t nwords);
	void (*root)(void *ctx, const struct heap_root_range *range,
		     uint64_t addr, const uint64_t *words, size_t nwords);
	void *ctx;
};

struct reach_scan {
	size_t nblocks;          /* as the heap's */
	uint8_t *state;          /* enum heap_reach, per block */
	/* References between blocks, as a graph: block I refers to
	 * to[first[i] .. first[i + 1]) (block indexes, each once, in
	 * increasing order; never I itself). */
	uint64_t *first;
	uint32_t *to;
	uint64_t nedges;
	/* Per root kind: references found, and the blocks directly
	 * referred to from it (anchor points; a block referred to from
	 * several kinds counts in each). */
	uint64_t root_refs[ROOT_NKINDS];
	uint64_t root_blocks[ROOT_NKINDS];
	/* Totals by enum heap_reach: blocks and bytes (chunk sizes)
	 * anchored, leaked (unreferenced ones included), and of those
	 * unreferenced; [REACH_NONE]: the blocks not in use. */
	uint64_t count[4], bytes[4];
	/* What could not be read: blocks in use (then counted anchored, so
	 * that nothing is called leaked for want of bytes; so are blocks
	 * with no bytes to scan: a size too small, or lying inside the
	 * block before, as only hostile memory makes them) and root bytes. */
	uint64_t unread_blocks, unread_root_bytes;
};

/*
 * The in-use block of H whose user bytes hold ADDR: its index, or -1.
 * (A sorted search; reach_scan_run builds a faster index of its own.  On
 * blocks that overlap, as only hostile memory makes them, the last one
 * starting before ADDR.)
 */
ptrdiff_t heap_find_block(const struct heap *h, uint64_t addr);

/*
 * Scan H's blocks in use and the roots R through IMG into S, offering
 * the bytes to V (may be NULL).  0, or -1 after saying why (more than
 * 2^32 - 2 blocks: the graph's block indexes are 32 bits).  Either way S
 * is released with reach_scan_release.
 */
int reach_scan_run(struct reach_scan *s, const struct heap *h,
		  struct procimage *img, const struct reach_roots *r,
		  const struct reach_visitor *v);
void reach_scan_release(struct reach_scan *s);

#endif
