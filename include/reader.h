/*
 * What every reader shares (src/read/reader.c): what it is handed (the
 * user's options, what a run keeps from one dump to the next), where it
 * is in its file, for what it says; a stack line added to the snapshot;
 * a heap profile's samples as stack lines, and the snapshot such a
 * profile leaves.  profile.h (src/load/) is the front that picks the
 * reader.
 */
#ifndef DMPROF_READER_H
#define DMPROF_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "snapshot.h"
#include "util.h"

/* When a dump was taken, as its format says (see profile_traits). */
enum dump_moment {
	MOMENT_UNSAID,
	MOMENT_BEFORE_TEARDOWN, /* main returned, or exit was called */
	MOMENT_AT_EXIT,         /* after atexit handlers, destructors */
	MOMENT_OTHER,
};

/* What the user asked of the readers (the command line's). */
struct read_options {
	const char *sample_type; /* --sample-type: the values of pprof
				    protobuf profiles to read (NULL: in-use
				    bytes) */
	/* Where a file that a core names is on this machine (--symfs,
	 * --alternative-dirs), in new memory; NULL: as named. */
	char *(*host_path)(const void *ctx, const char *path);
	const void *host_ctx;
};

/*
 * The readers' side of a run, handed to each reader: the caller's
 * options, so that every dump is read alike, and what the readers keep
 * from one dump to the next.  Zeroed, it is the start of a run read
 * with the default options.
 */
struct read_run {
	const struct read_options *opts; /* the caller's; NULL: defaults */
	unsigned warned;  /* READ_WARNED_* bits (reader.h): said once */
	/* What the run's text heap profiles count, as the first said
	 * (gperf.c's own code; 0 before the first). */
	int profile_kind;
	/* The dump read is the run's last: no frame or stack comes after
	 * its own (a reader may let the tables that find them go once its
	 * stacks are in: model_trim). */
	bool last;
};

/* Where a reader is in its file, for what it says about it. */
struct reader_pos {
	const char *path;
	unsigned long line; /* 1-based; 0: the file as a whole */
	unsigned long col;  /* and the column, where it helps; 0: none */
	bool quiet;         /* say nothing (a first try, that may fail) */
	struct strbuf q;    /* read_quote's */
};

/*
 * Say "PATH:LINE[:COL]: MSG" (LINE 0: "PATH: MSG") as an error, unless
 * POS is quiet; returns -1.
 */
int read_error(const struct reader_pos *pos, const char *fmt, ...)
	PRINTF(2, 3);
/* LEN bytes of the input at S, quoted for a message: valid until the
 * next call. */
const char *read_quote(struct reader_pos *pos, const char *s, size_t len);
void read_pos_release(struct reader_pos *pos);

/* What a reader says once a run (see read_warn_first). */
enum {
	READ_WARNED_GSTATS = 1 << 0,  /* GLOBAL_STATS rows missing */
	READ_WARNED_PROFILE = 1 << 1, /* a heap profile: what its sizes are */
};

/*
 * Is warning BIT (a READ_WARNED_* bit) asked for the first time in RUN?
 * Then true, and it is marked said: readers say each once a run.
 */
static inline bool read_warn_first(struct read_run *run, unsigned bit)
{
	bool first = !(run->warned & bit);

	run->warned |= bit;
	return first;
}

/* A copy of SL as SNAP's next stack line; the copy. */
static inline struct stack_line *read_add_line(struct snapshot *snap,
					       const struct stack_line *sl)
{
	GROW(snap->lines, snap->nlines + 1, snap->lines_alloc);
	snap->lines[snap->nlines] = *sl;
	return &snap->lines[snap->nlines++];
}

/* What a heap profile counts of one stack. */
struct sample_counts {
	int64_t objs, bytes;             /* in use */
	bool has_alloc;                  /* and, if it counts them, */
	int64_t alloc_objs, alloc_bytes; /* what was allocated so far */
};

/*
 * Counts C as SNAP's next stack line, of bucket B (NULL: given later):
 * the bytes in use stand for committed and virtual (a heap profile has
 * no split); without allocation counts, the blocks in use stand for
 * them (and the snapshot says counts_unknown).  The line.
 */
struct stack_line *read_add_sample(struct snapshot *snap, struct bucket *b,
				   const struct sample_counts *c);

/* One sample of a heap profile: a stack and its counts. */
struct read_sample {
	const uint64_t *frames; /* innermost first */
	uint32_t depth;
	unsigned long line;     /* where the file has it (0: nowhere) */
	struct sample_counts c;
};

/*
 * A heap profile's N samples as SNAP's stack lines, in order, each of the
 * malloc bucket of its stack (interned in M, its source PATH): SAMPLE
 * gives sample I into *OUT (valid until the next call), 0, or -1 after
 * saying why.  *TOTAL: the bytes they hold.  Returns 0, or -1.
 */
int read_samples(struct snapshot *snap, struct model *m, const char *path,
		 size_t n,
		 int (*sample)(void *ctx, size_t i, struct read_sample *out),
		 void *ctx, int64_t *total);

/*
 * SNAP, a heap profile, once its lines are in: whether it counts
 * allocations (COUNTS_ALLOC) and their bytes (ALLOC_BYTES), and what
 * GLOBAL_STATS would say of it, as far as it tells: MALLOC_BYTES and
 * MMAP_BYTES in use, and their sum standing for the process total it
 * does not know.
 */
void read_finish_profile(struct snapshot *snap, int64_t malloc_bytes,
			 int64_t mmap_bytes, bool counts_alloc,
			 bool alloc_bytes);

#endif
