/*
 * The state of one read of a text heap profile, shared by the files that
 * make it (gperf.c: the parser; gperf_pipe.c: its lines read on two
 * cores), and the steps of the parser the pipeline takes too.
 */
#ifndef DMPROF_GPERF_PARSE_H
#define DMPROF_GPERF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "reader.h"
#include "scan.h"
#include "snapshot.h"
#include "util.h"

/* What a profile's TYPE says its numbers are. */
enum htype {
	H_GPERF,    /* heapprofile: every allocation, exact */
	H_SAMPLED,  /* heap_v2/R, heapz_v2/R: a sample every R bytes */
	H_GO,       /* heap/2R: Go's, a sample every R bytes */
	H_GROWTH,   /* growth, growthz */
	H_FRAG,     /* fragmentation, fragmentationz */
};

/* One "#" comment line of Go's: a frame of the stack line above it (its
 * names are offsets into gparser.symtext until the line is interned). */
struct gsym {
	uint64_t pc;
	size_t func, func_len; /* offsets into gparser.symtext */
	size_t file, file_len; /* file_len 0: no file */
	uint32_t line;
};

/* A stack line read and not yet interned: its Go comments may follow. */
struct gline {
	int64_t objs, bytes, alloc_objs, alloc_bytes;
	uint32_t depth;     /* its frames are gparser.frames */
	unsigned long no;
	bool cut;           /* gperftools may have stopped writing it short */
};

/*
 * The file is read a line at a time and each stack line interned as soon
 * as its comments are in: a profile of a million stacks is never held as
 * text, nor as addresses.  What needs the whole file (the maps at its
 * end decide which lines are mmap's) is decided on the interned stacks.
 */
struct gparser {
	struct snapshot *snap;
	struct model *m;
	struct read_run *run;
	struct line_stream *s;
	/* Where it is, for what it says (quiet: a first try, errors not
	 * said). */
	struct reader_pos pos;
	enum htype type;
	uint64_t rate;      /* the sampling rate; <= 1: every allocation */
	bool has_alloc;     /* the lines' [N: B] count allocations */
	int64_t header_objs, header_bytes;
	struct gline held;  /* the last stack line, until interned */
	bool holding;
	/* Its frames are frames[cur]; the next line is read into the
	 * other, so that it is interned only once the next one parses. */
	uint64_t *frames[2];
	size_t frames_alloc[2];
	int cur;
	/* Or, parsed on the other thread (see struct pipe), its frames'
	 * ids and their hash (HELD_BY_ID). */
	bool held_by_id;
	uint32_t *held_ids;
	size_t held_ids_alloc;
	uint64_t held_hash;
	uint64_t held_first; /* its first frame's address */
	struct gsym *syms;  /* its Go comment lines */
	size_t nsyms, syms_alloc;
	struct strbuf symtext;
	/* A stack line that did not parse whole: an error, unless the
	 * maps follow at once (gperftools' buffer ran out inside it). */
	struct strbuf broken;
	unsigned long broken_no;
	bool has_broken;
	bool cut;           /* the last stack line may be incomplete */
	size_t cut_line;    /* which (an index into snap->lines) */
	/* Each line's stack id, line number and first address in the file
	 * (which the maps judge, see line_kind; Go's comments may rename or
	 * drop the frame), until its bucket is made (see build). */
	uint32_t *stack_ids;
	unsigned long *nos;
	uint64_t *firsts;
	size_t ids_alloc, nos_alloc, firsts_alloc;
	/*
	 * Or made as each line is interned, where the maps cannot make a
	 * line mmap's (EARLY: no libtcmalloc at the file's end): the first
	 * EARLY_N lines' buckets, the model's from EARLY_FROM on.
	 */
	bool early;
	size_t early_n, early_from;
	/* The lines' bucket keys as their buckets are made, the snapshot's
	 * line_index at the end (reading each line's bucket again after
	 * build was 11 ms of gperf-1m's 10^6 lines). */
	uint32_t *keys;
	size_t keys_alloc;
};

enum cut {
	NOT_CUT,
	CUT_AT_CAP, /* the last line before the maps, no blank line between */
	CUT_AT_EOF, /* the file ends inside it */
};

/*
 * One stack line into *OUT, its frames into *FRAMES (*ALLOC of them):
 * 0, or -1 after saying why (see parse_stack_line in gperf.c).
 */
int gperf_parse_stack_line_into(struct gparser *g, const struct line *l,
				enum cut cut, const char *limit,
				struct gline *out, uint64_t **frames,
				size_t *alloc);
/* Which maps' header the line is (1, 2), or 0. */
int gperf_maps_header(const struct line *l);
/* Does L begin as a stack line does ("  N: ...")?  (Inline: both
 * threads ask it of every line.) */
static inline bool gperf_stack_start(const struct line *l)
{
	const char *p = skip_blanks(l->p, l->p + l->len);

	return p < l->p + l->len && (is_digit(*p) || *p == '-');
}
/*
 * Any line after the header, the general way: 0 to go on, 1 at the last
 * line, 2 at a maps' header (*WHICH), -1 after an error.
 */
int gperf_slow_line(struct gparser *g, const struct line *l,
		    bool *after_stack, const char *limit, int *which);
/* A stack line parsed the fast way, its frames' ids IDS (hashed HASH),
 * its first frame's address FIRST: held. */
int gperf_fast_ids_line(struct gparser *g, const struct gline *gl,
			const uint32_t *ids, uint64_t hash, uint64_t first,
			bool *after_stack);
/* The lines have ended (no maps). */
int gperf_end_of_lines(struct gparser *g);
/* The maps, from the header WHICH at line NO on. */
int gperf_read_maps(struct gparser *g, int which, unsigned long no,
		    bool after_stack);

/* Room for N stack lines (of a big file, told by its first block): the
 * snapshot's and the arrays kept beside them, in huge pages. */
void gperf_expect_lines(struct gparser *g, size_t n);
/* The lines after the header, on two threads (gperf_pipe.c): 0, or -1
 * after saying why; *IN_MAPS if the maps were read. */
int gperf_parse_on_two(struct gparser *g, bool *in_maps);

#endif
