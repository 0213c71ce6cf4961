/*
 * A capture of a process nobody prepared (what dmprof snapshot takes):
 * held still from outside (procstop.h), its mappings with what the
 * kernel counts of each (resident.h), its glibc heap walked
 * (glibc_heap.h), then let go; or of a core.  It is said as the records
 * of a dmprof-snapshot file (snapfile.h): written to one, or (a core)
 * handed to the snapshot builder with no file in between.  Blocks have
 * no allocation stacks here: they are counted by what is known of them,
 * their size class and the arena that holds them, free chunks by kind.
 * ("Snapshot" is the model's: one dump in memory, snapshot.h.)
 */
#ifndef DMPROF_CAPTURE_H
#define DMPROF_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "copyimage.h"
#include "coreimage.h"
#include "glibc_heap.h"
#include "reach.h"
#include "typing.h"
#include "procimage.h"
#include "reader.h"
#include "resident.h"
#include "snapfile.h"

/*
 * What a VMA the heap or a thread's stack lies in is made of: its
 * stretches, in order.
 */
enum {
	PART_NONE = -1,
	PART_THREAD_STACK = -2,
	PART_ALLOCATOR = -3,   /* another malloc's (not walked) */
	PART_PYMALLOC = -4,    /* CPython's object allocator's arenas */
};
struct capture_part {
	uint64_t start, end;
	uint64_t committed;
	int where;            /* an arena, HEAP_MMAPPED_ARENA, or PART_* */
};

struct capture_vma {
	uint64_t committed;   /* Rss + Swap, or (split) pagemap's count */
	struct resident r;
	size_t first_part, nparts; /* nparts 0: whole */
	struct page_counts pages;  /* of a split VMA */
};

/* The blocks of one kind: state, size class, type and reach (in use),
 * and arena. */
struct capture_bucket {
	enum heap_state state;
	unsigned cls;         /* snap_size_class() of blocks in use */
	unsigned arena;       /* or HEAP_MMAPPED_ARENA */
	uint32_t type;        /* in the snapshot's types; 0: unknown */
	bool leaked;
	uint64_t count, bytes, committed;
};

/* A leaked block, listed one by one: its first bytes read. */
#define CAPTURE_HEAD 64
struct capture_leak {
	size_t block;         /* in h.blocks */
	uint8_t head[CAPTURE_HEAD];
	uint8_t nhead;        /* bytes of head read */
};

/*
 * What a question about single blocks asks of the memory while it is at
 * hand (a live process still held), beside what a capture reads itself:
 * WALKED, once the heap is walked (or found not to be: S->walked says),
 * before the scan; VISITOR, offered the bytes the scan reads, beside the
 * typing; AT_HAND, once the scan and the typing are done (or not done:
 * S->scanned says), to read what else it needs through S->img.  Any may
 * be NULL; each is called with CTX.
 */
struct capture;
struct capture_hook {
	void (*walked)(struct capture *s, void *ctx);
	struct reach_visitor visitor;
	void (*at_hand)(struct capture *s, void *ctx);
	void *ctx;
};

struct capture {
	pid_t pid;
	char *command_line;
	char *name;           /* /proc/PID/comm, read while held */
	double time;          /* the instant, seconds since the epoch */
	size_t threads;
	double held;          /* how long the process stood still, s */
	double took;          /* how long the snapshot took, s */
	unsigned tries;       /* stops it took (an arena was locked) */
	/* Its memory, maps and threads: a copy of LIVE's (COPIED), LIVE's
	 * (held all along), or a core's. */
	struct procimage *img;
	struct procimage live;
	struct copyimage copy;
	bool copied;
	uint64_t max_copy;    /* the most a copy may take, bytes */
	bool copy_too_big;    /* so it was held all along */
	const char *other_malloc; /* not copied: malloc is this one's
				     (heap_allocator), nothing to walk */
	uint64_t copy_wanted; /* what the copy would have taken */
	struct coreimage *core;
	struct capture_vma *vmas; /* as img->maps */
	struct capture_part *parts;
	size_t nparts, parts_alloc;
	struct resident total;
	bool walked;          /* else h.why says why not */
	struct heap h;
	/* The heap's extents and pymalloc's arenas (HEAP_PYMALLOC_ARENA),
	 * sorted: what the mappings are cut by. */
	struct heap_extent *ext;
	size_t next;
	/* pymalloc's arenas' committed bytes, and its blocks' in use. */
	uint64_t py_committed, py_used_committed;
	/* Who points at the blocks, and what they are (when walked). */
	struct reach_roots roots;
	struct reach_scan scan;
	struct typing types;
	bool scanned;
	bool no_scan;         /* asked not to scan (walk only) */
	const struct capture_hook *hook; /* or NULL */
	struct capture_leak *leaks;  /* the largest leaked blocks */
	size_t nleaks;
	struct capture_bucket *buckets;
	size_t nbuckets;
};

/* How many leaked blocks a snapshot lists one by one, the largest. */
#define CAPTURE_MAX_LEAKS 10000

/*
 * Take a snapshot of process PID into S: -1 after saying why not (it
 * may not be stopped, it exited while held).  The process is held only
 * while what the analysis reads of it is copied (its private mappings
 * but code, the committed pages: see copyimage.h), its maps, threads,
 * name and residency read; the heap walk, the scan of the blocks in use
 * for pointers (SCAN) and their typing run on the copy once it goes on.
 * A copy that would take more than MAX_COPY bytes is not made: the
 * process is then held while all of it runs (S->copy_too_big).  What
 * happens to the process after the copy (it exits) changes nothing.  A
 * heap that cannot be walked (not glibc's) is no error: S says so.
 * HOOK (may be NULL): a question's, called on the copy (or, with no
 * copy, while the process is held); with SCAN, the typing is then
 * finished before it is asked.  It outlives S.
 */
int capture_process(struct capture *s, pid_t pid, bool scan,
		    uint64_t max_copy, const struct capture_hook *hook);
/* The default most a copy may take: half the memory available now. */
uint64_t capture_default_max_copy(void);

/*
 * The same of the ELF core file at PATH: what the core holds of each
 * mapping stands for its committed bytes (a core has no residency); the
 * files it names found as RO says (may be NULL).
 * -1 after saying why not (not a core, unreadable).
 */
int capture_core(struct capture *s, const char *path,
		 const struct read_options *ro,
		 const struct capture_hook *hook);
void capture_free(struct capture *s);
/* Warn that S's heap was not walked: why (then WHY_MORE), and how its
 * memory is classed instead. */
void capture_say_unwalked(const struct capture *s, const char *why_more);
/* Say what of CPython's object allocator was not walked, or found
 * wrong. */
void capture_say_python(const struct capture *s);

/*
 * What S says, as the records of a snapshot file (snapfile.h), in the
 * file's order, each handed to PUT with CTX until one fails: to the
 * snapshot builder (a core read as a snapshot), or to the file's writer.
 * 0, or what PUT returned.
 */
int capture_emit(const struct capture *s,
		  int (*put)(void *ctx, const struct snap_record *r),
		  void *ctx);

/*
 * Write S to PATH (whole, or not at all: a reader of the run never sees
 * half a file).  -1 after saying why not.
 */
int capture_write(const struct capture *s, const char *path);

#endif
