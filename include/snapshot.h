/*
 * Snapshots: one heap dump in memory, as every reader fills it (see
 * profile.h for the readers).  A snapshot holds what varies per dump;
 * buckets, stacks and frames live in the run-wide model.
 */
#ifndef DMPROF_SNAPSHOT_H
#define DMPROF_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap_summary.h"
#include "maps.h"
#include "model.h"

/* GLOBAL_STATS rows, in the producer's order. */
enum gstat_row {
	GS_TOTAL,
	GS_ABSENT,
	GS_FILE_EXEC,
	GS_FILE_NONEXEC,
	GS_ANONYMOUS,
	GS_STACK,
	GS_OTHER,
	GS_NP_TOTAL,
	GS_NP_ABSENT,
	GS_NP_ANONYMOUS,
	GS_NP_FILE_EXEC,
	GS_NP_FILE_NONEXEC,
	GS_NP_STACK,
	GS_NP_OTHER,
	GS_PROFILED_MMAP,
	GS_PROFILED_MALLOC,
	GS_NROWS
};

extern const char *const gstat_names[GS_NROWS];
/* The rows the original required (all but nonprofiled-total). */
bool gstat_required(enum gstat_row row);

struct gstat {
	int64_t virt;
	int64_t committed;
};

struct gstat_extra {
	const char *name; /* interned */
	struct gstat v;
};

struct global_stats {
	struct gstat row[GS_NROWS];
	uint32_t present;          /* bit per enum gstat_row */
	struct gstat_extra *extra; /* rows dmprof does not know, kept */
	size_t nextra;
};

struct meta_entry {
	char *key;
	char *value;
};

struct pageframe {
	uint64_t pfn;
	int64_t size;       /* bytes of the region in this page */
	uint8_t mapcount;   /* from "#C", if has_count */
	bool has_count;
	bool start_inside;  /* '<': the region starts inside this page */
	bool end_inside;    /* '>': the region ends inside this page */
};

enum region_kind {
	REGION_HOOKED,
	REGION_UNHOOKED,
};

struct region {
	uint64_t start, end;   /* clipped to the VMA by '(' / ')' marks */
	enum region_kind kind;
	uint32_t vma;          /* index into snapshot.vmas */
	bool has_committed;    /* legacy lines may lack the numbers */
	bool has_reserved;
	bool has_bucket;
	int64_t committed;
	int64_t reserved;
	uint64_t bucket_id;
	struct bucket *bucket; /* NULL if has_bucket and not defined */
	const char *type;      /* optional TYPE text, interned, or NULL */
	uint32_t pf_first, pf_count; /* into snapshot.pfs */
	unsigned long line;
};

/* (48 bytes: a profile of a million stacks has a million of them.) */
struct stack_line {
	int64_t virt;
	int64_t committed;
	int64_t alloc;        /* blocks allocated so far (cumulative) */
	int64_t free;         /* blocks freed so far */
	int64_t alloc_bytes;  /* bytes allocated so far, where has_alloc_bytes */
	struct bucket *bucket; /* NULL: unknown bucket ("no-bucket"; see
				  snapshot.unknown) */
};

/* A stack line naming a bucket no .buckets file defines. */
struct unknown_line {
	size_t index;         /* in snapshot.lines */
	uint64_t id;          /* the bucket it names */
};

enum dump_format {
	FORMAT_DEEP,       /* Chromium DUMP_DEEP_5/6, and the recorder's */
	FORMAT_GPERFTOOLS, /* "heap profile: N: B [...] @ ...": gperftools,
			      tcmalloc, Go (debug=1), jemalloc 3.x, pprof */
	FORMAT_JEMALLOC,   /* jemalloc >= 4 "heap_v2/RATE" with t*: lines */
	FORMAT_PROTO,      /* pprof profile.proto, gzipped or not */
	FORMAT_DHAT,       /* Valgrind DHAT's JSON (heap mode) */
	FORMAT_SNAP,       /* dmprof snapshot's, of a running process */
	FORMAT_CORE,       /* an ELF core file, read as a snapshot */
	FORMAT_ANY = -1,   /* (to profile_load_part_as: whatever it is) */
};

/*
 * A block listed one by one (a leaked block of a heap walked from
 * outside): where, how big (its chunk), its bucket, its first bytes.
 */
#define LISTED_HEAD 64
struct listed_block {
	uint64_t addr, size;
	const struct bucket *bucket;
	bool unreferenced;
	uint8_t nhead;
	uint8_t head[LISTED_HEAD];
};

struct snapshot {
	char *path;
	unsigned long counter;
	/* Which snapshot of a file that holds several (DHAT: 1 at the peak,
	 * 2 at the end); 0 for the rest. */
	int part;
	enum dump_format format;
	/* What analysis needs to know of the format, set by its reader: */
	bool kernel_view;      /* it can carry the kernel's view (GLOBAL_STATS'
				  process total, Rss/Pss/Swap): lacking it
				  is worth a word */
	bool mmap_by_regions;  /* its mmap stack lines are counted through
				  its regions (MMAP_LIST), not as lines */
	int version;           /* 5 or 6 for deep dumps */
	double time;           /* seconds since the epoch */
	bool time_from_meta;   /* else the file's mtime */
	bool time_instructions; /* time counts instructions (DHAT's) */

	/* META */
	bool has_meta;
	uint64_t page_size;
	int pageframe_length;  /* 24 when PFNs are dumped, else 0 */
	bool pageframe_base64;
	bool has_pagecount;
	char *run_id;
	char *command_line;
	char *reason;
	struct meta_entry *meta_extra;
	size_t nmeta_extra, meta_extra_alloc;

	/* MMAP_LIST */
	bool has_mmap_list;
	struct vma *vmas;
	size_t nvmas, vmas_alloc;
	struct region *regions;  /* sorted by (start, end), unique */
	size_t nregions, regions_alloc;
	struct pageframe *pfs;
	size_t npfs, pfs_alloc;

	struct global_stats gs;
	bool has_global_stats;

	struct stack_line *lines;
	size_t nlines, lines_alloc;
	/* Each line's bucket_key (NULL: not made; see
	 * snapshot_index_lines), and its bucket's stack's id (NULL: not
	 * made; made by readers that have it from the bucket table). */
	uint32_t *line_index, *line_stack;
	bool has_alloc_bytes;  /* the lines count allocated bytes too */
	/* The profile does not count allocations and frees: a line's alloc
	 * is its blocks in use and free 0, and nobody prints them as
	 * counts. */
	bool counts_unknown;
	/* What such a profile may count instead: a line's alloc is the
	 * number of blocks in use at the instant (dmprof snapshot's, whose
	 * free chunks' lines count chunks), free 0; two snapshots' counts
	 * compare as bytes do. */
	bool counts_live;
	/* The lines of unknown buckets, in order. */
	struct unknown_line *unknown;
	size_t nunknown, unknown_alloc;
	unsigned long first_unknown_line; /* where the first one is */
	int64_t unknown_bucket_bytes;     /* committed bytes of those lines */
	/* Some sum of its sizes did not fit in 64 bits (a corrupt dump?):
	 * the sums are saturated, and whoever prints them says so. */
	bool overflow;

	/* A maps table of the snapshot's own (MAPPED_LIBRARIES:), if any. */
	struct maps own_maps;
	bool has_own_maps;

	/* The malloc heap of a process walked from outside, summed up
	 * (its blocks are the stack lines): what top says first. */
	bool has_heap;
	struct heap_summary heap;
	/* Its leaked blocks (the largest, when too many to list all). */
	struct listed_block *listed;
	size_t nlisted, listed_alloc;
};

/* An empty snapshot of PATH (page size 4096, no maps of its own). */
void snapshot_init(struct snapshot *snap, const char *path);
void snapshot_release(struct snapshot *snap);

/*
 * SNAP's line_index, once its lines have their buckets, if its reader
 * did not make it.  Buckets are fetched from all over the model: the
 * thread that read the dump does so (a reader that looks buckets up by
 * id has the keys from the table: bucket_set_find_note), and whoever sums
 * it (another thread, once per policy) reads a key beside each line.
 * Not made where a line's bucket has no key.
 */
void snapshot_index_lines(struct snapshot *snap);

/*
 * Warn about stack lines naming buckets no .buckets file defines, saying
 * what the command does with them (CONSEQUENCE, e.g. "left out").
 */
void snapshot_warn_unknown_buckets(const struct snapshot *snap,
				   const char *consequence);

/*
 * The bucket id that line I names, when its bucket is unknown; *AT is a
 * cursor into the unknown lines, 0 at first, for lines asked in order.
 */
uint64_t snapshot_unknown_id(const struct snapshot *snap, size_t i,
			     size_t *at);

/* The value of a META key dmprof does not interpret, or NULL. */
const char *snapshot_meta(const struct snapshot *snap, const char *key);

#endif
