/*
 * The state of one read of a deep dump, shared by the files that make it
 * (deep.c: the parser; deep_tail.c: the second part of a big STACKTRACES
 * section, read on another core meanwhile).
 */
#ifndef DMPROF_DEEP_PARSE_H
#define DMPROF_DEEP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "input.h"
#include "reader.h"
#include "snapshot.h"
#include "scan.h"
#include "threads.h"

enum section {
	SEC_BEFORE, /* before the version line */
	SEC_HEADER, /* after it, before any section */
	SEC_META,
	SEC_MMAP_LIST,
	SEC_GLOBAL_STATS,
	SEC_STACKTRACES,
	SEC_MAPPED_LIBRARIES,
	/* dmprof record's, after META: read by the run's companions
	 * (bucketfile.c), skipped here */
	SEC_BUCKETS,
	SEC_MAPS,
};

/*
 * The second part of a big STACKTRACES section, read by a thread of its
 * own while the parser reads the first: the producer's lines only (the
 * fast path), up to the first line that is not one, which the parser
 * then reads the general way.  Its lines' buckets are found there too.
 */
struct tail {
	struct task task;
	const struct model *m;
	const char *p, *end;   /* its text: from a line's start */
	const char *stop;      /* where it stopped: END, or a line not read */
	/* Its room in the parser's arrays (at BASE), written in place: */
	struct stack_line *lines;
	uint64_t *ids;
	unsigned long *nos;
	size_t base, room, n;
	unsigned long no;      /* the number of the line before its first */
};

struct parser {
	struct snapshot *snap;
	struct model *m;
	struct read_run *run;
	struct reader_pos pos; /* (its line: l's, once past the fast path) */
	const struct line *l;
	enum section sec;
	unsigned seen;          /* bit per section header seen */
	bool stack_header_seen;
	int64_t current_vma;    /* index into snap->vmas, -1 before any */
	uint32_t pending_pf;    /* first PF of the pending list */
	uint64_t dup_regions;
	unsigned long legacy_region_line;
	/* Each stack line's bucket id and line number, until its bucket
	 * is found (see find_buckets). */
	uint64_t *ids;
	unsigned long *nos;
	size_t ids_alloc, nos_alloc;
	/* Lines [found_from, found_to) have their buckets already (the
	 * tail's). */
	size_t found_from, found_to;
	struct tail *tail;      /* running, until the first part is read */
};

/*
 * The producer's "%10lld %10lld %6d %6d @ %d" in one pass: true and SL
 * filled when the line is just that (numbers of up to 18 digits);
 * anything else is left to the general parser and its messages.
 * (Inline: the hot loops of both files, the parser's and the tail's,
 * call it for every line.)
 */
static inline bool deep_fast_stack_line(const struct line *l,
					struct stack_line *sl, uint64_t *id)
{
	const char *p = l->p, *end = l->p + l->len;
	int64_t v[5];

	for (int i = 0; i < 5; i++) {
		bool neg = false;
		int64_t x;

		p = skip_blanks(p, end);
		if (i == 4) {
			if (p + 1 >= end || p[0] != '@' || p[1] != ' ')
				return false;
			p = skip_blanks(p + 2, end);
		} else if (p < end && *p == '-' && i < 4) {
			neg = true;
			p++;
		}
		if (!(p = digits_at(p, end, &x)) || (p < end && *p != ' '))
			return false;
		v[i] = neg ? -x : x;
	}
	if (p != end)
		return false;
	memset(sl, 0, sizeof(*sl));
	sl->virt = v[0];
	sl->committed = v[1];
	sl->alloc = v[2];
	sl->free = v[3];
	*id = (uint64_t)v[4];
	return true;
}

/*
 * From P, a line's start, before END: the lines that are exactly the
 * producer's "%10lld %10lld %6d %6d @ %d\n" (each number in its width,
 * the id of 1 to 7 digits), at most ROOM of them, into LINES (counts
 * only) and IDS (their bucket ids): how many.  *STOP: where the first
 * line not read starts, for deep_fast_stack_line and the general parser.
 * (Each of those lines is one deep_fast_stack_line reads the same way.)
 */
size_t deep_fixed_lines(const char *p, const char *end,
			struct stack_line *lines, uint64_t *ids, size_t room,
			const char **stop);

/*
 * The section STACKTRACES, the rest of R: room for its lines, and its
 * second part to a thread when it is big.  The reader R then stops where
 * that starts (see deep_tail_take).
 */
void deep_tail_start(struct parser *p, struct line_reader *r);
/*
 * Wait for the tail; its lines are the snapshot's if KEEP.  Where it
 * stopped (NULL: no tail).
 */
const char *deep_tail_join(struct parser *p, bool keep);
/*
 * The reader R stopped where the tail starts: the tail's lines are the
 * section's if it goes on there, and R goes on after them (up to END).
 * True if R has more.
 */
bool deep_tail_take(struct parser *p, struct line_reader *r,
		    const char *end);

/* A bucket's note where its id was (the tail's lines: see tail_main). */
static inline uint64_t deep_note_pack(struct bucket_note n)
{
	return (uint64_t)n.stack << 32 | n.key;
}

static inline struct bucket_note deep_note_unpack(uint64_t v)
{
	struct bucket_note n = { (uint32_t)v, (uint32_t)(v >> 32) };

	return n;
}

#endif
