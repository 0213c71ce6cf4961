/*
 * The files of dmprof snapshot: a
 * running process (or a core) as it was found, its heap walked, with no
 * allocation stacks.
 *
 *   dmprof-snapshot 1
 *   META:   "Key: value": Time, Pid, CommandLine, Reason, HeldSeconds,
 *           Threads, PageSize, Rss, Pss, Swap, Heap (a core's: Core and
 *           Committed, no HeldSeconds, Rss, Pss or Swap)
 *   HEAP:   (when a glibc heap was walked)
 *           arena K ADDRESS heaps N system B overhead B unknown B [locked]
 *             [corrupt]
 *           tcaches N
 *           STATE [LO..HI] WHERE BLOCKS BYTES COMMITTED [KIND]
 *           reach anchored N B leaked N B unreferenced N B listed N
 *           block ADDRESS SIZE WHERE leaked|unreferenced HEX|- [KIND]
 *           problem ADDRESS ARENA MESSAGE
 *           pymalloc arenas N unused-pools N alignment B free B
 *             committed B
 *           pyclass K size B pools N blocks N avail N
 *   MAPS:   COMMITTED RSS SWAP START-END PERMS OFFSET DEV INODE [PATH]
 *           and, indented, the parts of a mapping the heap or a thread's
 *           stack lies in:
 *             START-END COMMITTED WHERE
 *
 * WHERE is arena-K, mmapped (a chunk glibc mapped alone), thread-stack,
 * allocator (a mapping of the other malloc META's Allocator names: a heap
 * dmprof does not walk), pymalloc (CPython's object allocator: its arenas
 * and the blocks in them) or - (none of those).  KIND, of blocks in use, is what the scan of the
 * heap (reach.h, typing.h) found: "leaked" (on a line of blocks:
 * the block line says it before), then "class TYPEINFO NAME" (a C++
 * class, by its vtable), "python TYPE NAME" (a Python object, by its
 * type object) or "layout NAME" (string body, dict keys, ...).  The
 * pymalloc line sums CPython's object allocator up, its free bytes
 * those of its arenas no block in use holds; a pyclass line is a row of
 * sys._debugmallocstats().  The
 * reach line sums the scan up; a block line lists one leaked block (the
 * largest ones, up to a limit) with its first bytes.
 *
 * The reader checks each line's shape and hands it, as a record, to the
 * snapshot builder (snapbuild.c), which fills the model; the writer
 * prints the records a capture gives (memory/capture.c), in the same
 * words.
 */
#include "snapfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapbuild.h"
#include "scan.h"
#include "util.h"

/* Size classes: glibc's bins one by one up to this usable size. */
#define SMALL_MAX 1016
#define SMALL_CLASSES 63

unsigned snap_size_class(uint64_t usable)
{
	unsigned k = 10;

	if (usable <= SMALL_MAX)
		return usable <= 24 ? 0 : (unsigned)((usable - 9) / 16);
	if (usable <= 1024)
		return SMALL_CLASSES;
	while (k < 63 && (usable - 1) >> (k + 1))
		k++;
	return SMALL_CLASSES + (k - 10) * 4 +
	       (unsigned)((usable - (1ULL << k) + (1ULL << (k - 2)) - 1) >>
			  (k - 2));
}

void snap_size_bounds(unsigned cls, uint64_t *lo, uint64_t *hi)
{
	unsigned k, j;

	if (cls < SMALL_CLASSES) {
		*hi = 24 + 16 * (uint64_t)cls;
		*lo = cls ? *hi - 15 : 0;
		return;
	}
	if (cls == SMALL_CLASSES) {
		*lo = SMALL_MAX + 1;
		*hi = 1024;
		return;
	}
	k = 10 + (cls - SMALL_CLASSES - 1) / 4;
	j = (cls - SMALL_CLASSES - 1) % 4 + 1;
	*hi = (1ULL << k) + j * (1ULL << (k - 2));
	*lo = *hi - (1ULL << (k - 2)) + 1;
}

enum section { S_BEFORE, S_HEAD, S_META, S_HEAP, S_MAPS };

struct sparser {
	struct snap_builder b;
	struct reader_pos pos;
	const struct line *l;
	struct cursor c;        /* in l, after what is read */
	enum section sec;
};

bool snapfile_claims(const char *line, size_t len)
{
	return len >= 16 && !memcmp(line, "dmprof-snapshot", 15) &&
	       is_space(line[15]);
}

/* The line's record to the builder. */
static int put(struct sparser *p, const struct snap_record *r)
{
	return snapbuild_put(&p->b, r, p->l->no);
}

/* ---- words ---- */

static bool word(struct sparser *p, const char **w, size_t *len)
{
	if (!cursor_word(&p->c, w, len))
		return false;
	p->pos.col = (unsigned long)(*w - p->l->p) + 1;
	return true;
}

/* The next word, a number, into *V: 0, or -1 after saying what. */
static int number(struct sparser *p, const char *what, uint64_t *v)
{
	const char *w;
	size_t len;

	if (!word(p, &w, &len))
		return read_error(&p->pos, "%s missing", what);
	if (word_u64(w, len, v) != NUM_OK || *v > INT64_MAX)
		return read_error(&p->pos, "bad %s '%s'", what,
				  read_quote(&p->pos, w, len));
	return 0;
}

/* The next word must be KEY, then a number. */
static int keyed(struct sparser *p, const char *key, uint64_t *v)
{
	const char *w;
	size_t len;

	if (!word(p, &w, &len) || len != strlen(key) || memcmp(w, key, len))
		return read_error(&p->pos, "expected '%s N'", key);
	return number(p, key, v);
}

static int hex_number(struct sparser *p, const char *what, uint64_t *v)
{
	const char *w;
	size_t len;

	if (!word(p, &w, &len) || word_hex(w, len, v, true) != NUM_OK)
		return read_error(&p->pos, "bad %s", what);
	return 0;
}

/* "START-END" into *START, *END (END above START). */
static int range(struct sparser *p, uint64_t *start, uint64_t *end)
{
	const char *w, *dash;
	size_t len;

	if (!word(p, &w, &len) || !(dash = memchr(w, '-', len)) ||
	    word_hex(w, (size_t)(dash - w), start, false) != NUM_OK ||
	    word_hex(dash + 1, len - (size_t)(dash - w) - 1, end, false) !=
		    NUM_OK ||
	    *end <= *start)
		return read_error(&p->pos, "bad range (START-END in hex)");
	return 0;
}

/* "arena-K", "mmapped", or of a PART "-", "thread-stack" and
 * "allocator": into *WHERE. */
static int where(struct sparser *p, bool part, int *out)
{
	const char *w;
	size_t len;
	uint64_t k;

	if (!word(p, &w, &len))
		return read_error(&p->pos, "where? (arena-K, mmapped, "
					   "pymalloc%s)",
				  part ? ", thread-stack, allocator or -"
				       : "");
	if (part && len == 1 && w[0] == '-') {
		*out = SNAP_WHERE_NONE;
		return 0;
	}
	if (part && len == 12 && !memcmp(w, "thread-stack", 12)) {
		*out = SNAP_WHERE_THREAD_STACK;
		return 0;
	}
	if (part && len == 9 && !memcmp(w, "allocator", 9)) {
		*out = SNAP_WHERE_ALLOCATOR;
		return 0;
	}
	if (len == 7 && !memcmp(w, "mmapped", 7)) {
		*out = SNAP_WHERE_MMAPPED;
		return 0;
	}
	if (len == 8 && !memcmp(w, "pymalloc", 8)) {
		*out = SNAP_WHERE_PYMALLOC;
		return 0;
	}
	if (len > 6 && !memcmp(w, "arena-", 6) &&
	    word_u64(w + 6, len - 6, &k) == NUM_OK &&
	    k < snapbuild_arenas(&p->b)) {
		*out = (int)k;
		return 0;
	}
	return read_error(&p->pos, "'%s' is no arena of the HEAP section",
			  read_quote(&p->pos, w, len));
}

static int line_end(struct sparser *p)
{
	const char *w;
	size_t len;

	if (word(p, &w, &len))
		return read_error(&p->pos, "unexpected '%s'",
				  read_quote(&p->pos, w, len));
	p->pos.col = 0;
	return 0;
}

/* ---- HEAP ---- */

/* "arena K ADDRESS heaps N system B overhead B unknown B [flags]" */
static int parse_arena(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_ARENA };
	const char *w;
	size_t len;

	if (number(p, "arena", &r.u.arena.index) < 0)
		return -1;
	if (r.u.arena.index != snapbuild_arenas(&p->b))
		return read_error(&p->pos, "arena %" PRIu64 " where arena %zu "
					   "comes", r.u.arena.index,
				  snapbuild_arenas(&p->b));
	if (hex_number(p, "arena address", &r.u.arena.addr) < 0 ||
	    keyed(p, "heaps", &r.u.arena.heaps) < 0 ||
	    keyed(p, "system", &r.u.arena.system) < 0 ||
	    keyed(p, "overhead", &r.u.arena.overhead) < 0 ||
	    keyed(p, "unknown", &r.u.arena.unknown) < 0)
		return -1;
	while (word(p, &w, &len)) {
		if (len == 6 && !memcmp(w, "locked", 6))
			r.u.arena.locked = true;
		else if (len == 7 && !memcmp(w, "corrupt", 7))
			r.u.arena.corrupt = true;
		else
			return read_error(&p->pos, "unknown arena flag '%s' "
						   "(locked, corrupt)",
					  read_quote(&p->pos, w, len));
	}
	return put(p, &r);
}

/* "LO..HI": the size class of blocks in use. */
static int size_class(struct sparser *p, uint64_t *lo, uint64_t *hi)
{
	const char *w, *dots;
	size_t len;

	if (!word(p, &w, &len) || !(dots = memmem(w, len, "..", 2)) ||
	    word_u64(w, (size_t)(dots - w), lo) != NUM_OK ||
	    word_u64(dots + 2, len - (size_t)(dots - w) - 2, hi) != NUM_OK ||
	    *hi < *lo)
		return read_error(&p->pos, "bad size class (LO..HI)");
	return 0;
}

/*
 * The rest of a line of blocks in use: "[leaked] [class 0xTYPEINFO NAME
 * | layout NAME]" (LEAKED NULL: the state was said before), into *LEAKED
 * and *T.
 */
static int parse_kind(struct sparser *p, bool *leaked, struct snap_type *t)
{
	const char *w;
	size_t len;
	bool class, python;

	memset(t, 0, sizeof(*t));
	if (!word(p, &w, &len))
		return 0;
	if (leaked && len == 6 && !memcmp(w, "leaked", 6)) {
		*leaked = true;
		if (!word(p, &w, &len))
			return 0;
	}
	class = len == 5 && !memcmp(w, "class", 5);
	python = len == 6 && !memcmp(w, "python", 6);
	if (!class && !python && !(len == 6 && !memcmp(w, "layout", 6)))
		return read_error(&p->pos, "unexpected '%s' (leaked, class "
					   "TYPEINFO NAME, python TYPE NAME or "
					   "layout NAME)",
				  read_quote(&p->pos, w, len));
	if ((class || python) &&
	    hex_number(p, class ? "typeinfo address" : "type address",
		       &t->typeinfo) < 0)
		return -1;
	cursor_skip_space(&p->c);
	len = (size_t)(p->c.end - p->c.p);
	while (len && is_space(p->c.p[len - 1]))
		len--;
	if (!len)
		return read_error(&p->pos, "%s without a name",
				  class ? "class" : python ? "python" : "layout");
	t->kind = class ? SNAP_TYPE_CLASS
		: python ? SNAP_TYPE_PYTHON : SNAP_TYPE_LAYOUT;
	t->name = p->c.p;
	t->name_len = len;
	p->c.p = p->c.end;
	return 0;
}

/* "pymalloc arenas N unused-pools N alignment B free B committed B" */
static int parse_pymalloc(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_PYMALLOC };

	if (keyed(p, "arenas", &r.u.pymalloc.arenas) < 0 ||
	    keyed(p, "unused-pools", &r.u.pymalloc.unused_pools) < 0 ||
	    keyed(p, "alignment", &r.u.pymalloc.alignment) < 0 ||
	    keyed(p, "free", &r.u.pymalloc.free) < 0 ||
	    keyed(p, "committed", &r.u.pymalloc.free_committed) < 0 ||
	    line_end(p) < 0)
		return -1;
	if (r.u.pymalloc.free_committed > r.u.pymalloc.free)
		return read_error(&p->pos, "%" PRIu64 " free bytes committed "
					   "of %" PRIu64,
				  r.u.pymalloc.free_committed,
				  r.u.pymalloc.free);
	return put(p, &r);
}

/* "pyclass K size B pools N blocks N avail N" */
static int parse_pyclass(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_PYCLASS };

	if (number(p, "size class", &r.u.pyclass.index) < 0 ||
	    keyed(p, "size", &r.u.pyclass.size) < 0 ||
	    keyed(p, "pools", &r.u.pyclass.pools) < 0 ||
	    keyed(p, "blocks", &r.u.pyclass.used) < 0 ||
	    keyed(p, "avail", &r.u.pyclass.avail) < 0 || line_end(p) < 0)
		return -1;
	if (r.u.pyclass.index >= 64)
		return read_error(&p->pos, "size class %" PRIu64 " (63 at "
					   "most)", r.u.pyclass.index);
	return put(p, &r);
}

/* "STATE [LO..HI] WHERE BLOCKS BYTES COMMITTED [KIND]" */
static int parse_blocks(struct sparser *p, int state)
{
	struct snap_record r = { .kind = SNAP_BLOCKS };

	r.u.blocks.state = (enum heap_state)state;
	if (state == HEAP_IN_USE &&
	    size_class(p, &r.u.blocks.lo, &r.u.blocks.hi) < 0)
		return -1;
	if (where(p, false, &r.u.blocks.where) < 0 ||
	    number(p, "block count", &r.u.blocks.count) < 0 ||
	    number(p, "bytes", &r.u.blocks.bytes) < 0 ||
	    number(p, "committed bytes", &r.u.blocks.committed) < 0 ||
	    (state == HEAP_IN_USE ? parse_kind(p, &r.u.blocks.leaked,
					       &r.u.blocks.type)
				  : line_end(p)) < 0)
		return -1;
	if (r.u.blocks.committed > r.u.blocks.bytes)
		return read_error(&p->pos, "%" PRIu64 " bytes committed of %"
					   PRIu64, r.u.blocks.committed,
				  r.u.blocks.bytes);
	if ((r.u.blocks.where == SNAP_WHERE_MMAPPED ||
	     r.u.blocks.where == SNAP_WHERE_PYMALLOC) && state != HEAP_IN_USE)
		return read_error(&p->pos, "%s",
				  r.u.blocks.where == SNAP_WHERE_MMAPPED
					  ? "mmapped chunks are in use"
					  : "pymalloc's blocks are in use (its "
					    "free bytes are the pymalloc "
					    "line's)");
	return put(p, &r);
}

/* "reach anchored N B leaked N B unreferenced N B listed N" */
static int parse_reach(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_REACH };

	if (keyed(p, "anchored", &r.u.reach.anchored_count) < 0 ||
	    number(p, "bytes", &r.u.reach.anchored_bytes) < 0 ||
	    keyed(p, "leaked", &r.u.reach.leaked_count) < 0 ||
	    number(p, "bytes", &r.u.reach.leaked_bytes) < 0 ||
	    keyed(p, "unreferenced", &r.u.reach.unreferenced_count) < 0 ||
	    number(p, "bytes", &r.u.reach.unreferenced_bytes) < 0 ||
	    keyed(p, "listed", &r.u.reach.listed) < 0 || line_end(p) < 0)
		return -1;
	if (r.u.reach.unreferenced_count > r.u.reach.leaked_count ||
	    r.u.reach.unreferenced_bytes > r.u.reach.leaked_bytes ||
	    r.u.reach.listed > r.u.reach.leaked_count)
		return read_error(&p->pos, "more unreferenced or listed blocks "
					   "than leaked ones");
	return put(p, &r);
}

/* Hex digits of the first bytes, or "-", into HEAD, *N of them. */
static int head_bytes(struct sparser *p, uint8_t *head, uint8_t *n)
{
	const char *w;
	size_t len;

	if (!word(p, &w, &len))
		return read_error(&p->pos, "first bytes missing");
	if (len == 1 && w[0] == '-')
		return 0;
	if (len % 2 || len / 2 > LISTED_HEAD)
		return read_error(&p->pos, "bad first bytes (up to %d, in "
					   "hex, or -)", LISTED_HEAD);
	for (size_t i = 0; i < len; i += 2) {
		uint64_t v;

		if (word_hex(w + i, 2, &v, false) != NUM_OK)
			return read_error(&p->pos, "bad first bytes (up to "
						   "%d, in hex, or -)",
					  LISTED_HEAD);
		head[i / 2] = (uint8_t)v;
	}
	*n = (uint8_t)(len / 2);
	return 0;
}

/* "block 0xADDRESS SIZE WHERE leaked|unreferenced HEX [KIND]" */
static int parse_listed(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_LISTED };
	uint8_t head[LISTED_HEAD];
	uint64_t usable;
	const char *w;
	size_t len;

	if (hex_number(p, "block address", &r.u.listed.addr) < 0 ||
	    number(p, "block size", &r.u.listed.size) < 0)
		return -1;
	if (r.u.listed.size < 32 || r.u.listed.size % 16)
		return read_error(&p->pos, "bad block size %" PRIu64 " (a "
					   "chunk's: 32 or more, a multiple "
					   "of 16)", r.u.listed.size);
	if (where(p, false, &r.u.listed.where) < 0)
		return -1;
	if (!word(p, &w, &len) ||
	    !((len == 6 && !memcmp(w, "leaked", 6)) ||
	      (len == 12 && !memcmp(w, "unreferenced", 12))))
		return read_error(&p->pos, "expected leaked or unreferenced");
	r.u.listed.unreferenced = len == 12;
	if (head_bytes(p, head, &r.u.listed.nhead) < 0)
		return -1;
	r.u.listed.head = head;
	usable = r.u.listed.size -
		 (r.u.listed.where == SNAP_WHERE_MMAPPED ? 16 : 8);
	if (r.u.listed.nhead > usable)
		return read_error(&p->pos, "%u first bytes of a block of %"
					   PRIu64 " usable", r.u.listed.nhead,
				  usable);
	if (parse_kind(p, NULL, &r.u.listed.type) < 0)
		return -1;
	return put(p, &r);
}

static int parse_heap(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_TCACHES };
	const char *w;
	size_t len;
	int state;

	if (!word(p, &w, &len))
		return 0;
	if (len == 5 && !memcmp(w, "arena", 5))
		return parse_arena(p);
	if (len == 7 && !memcmp(w, "tcaches", 7)) {
		if (number(p, "tcaches", &r.u.tcaches) < 0 || line_end(p) < 0)
			return -1;
		return put(p, &r);
	}
	if (len == 5 && !memcmp(w, "reach", 5))
		return parse_reach(p);
	if (len == 8 && !memcmp(w, "pymalloc", 8))
		return parse_pymalloc(p);
	if (len == 7 && !memcmp(w, "pyclass", 7))
		return parse_pyclass(p);
	if (len == 5 && !memcmp(w, "block", 5))
		return parse_listed(p);
	if (len == 7 && !memcmp(w, "problem", 7)) {
		/* (Its arena and message: for people to read.) */
		r.kind = SNAP_PROBLEM;
		if (hex_number(p, "problem address", &r.u.problem.addr) < 0)
			return -1;
		r.u.problem.arena = -1;
		r.u.problem.msg = "";
		return put(p, &r);
	}
	state = heap_state_lookup(w, len);
	if (state < 0)
		return read_error(&p->pos, "expected an arena, tcaches, "
					   "blocks (in-use, tcache, fastbin, "
					   "unsorted, bin, top, unlisted), "
					   "reach, a block, a problem, pymalloc "
					   "or a pyclass, found "
					   "'%s'",
				  read_quote(&p->pos, w, len));
	return parse_blocks(p, state);
}

/* ---- MAPS ---- */

/* "  START-END COMMITTED WHERE" */
static int parse_part(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_PART };

	if (p->b.vma < 0)
		return read_error(&p->pos, "a part before any mapping");
	if (range(p, &r.u.part.start, &r.u.part.end) < 0 ||
	    number(p, "committed bytes", &r.u.part.committed) < 0 ||
	    where(p, true, &r.u.part.where) < 0 || line_end(p) < 0)
		return -1;
	return put(p, &r);
}

/* "COMMITTED RSS SWAP START-END PERMS OFFSET DEV INODE [PATH]" */
static int parse_vma(struct sparser *p)
{
	struct snap_record r = { .kind = SNAP_VMA };
	int rc;

	/* (The mapping before is complete: said before this line is.) */
	if (snapbuild_end_vma(&p->b) < 0)
		return -1;
	p->pos.line = p->l->no;
	if (number(p, "committed bytes", &r.u.vma.committed) < 0 ||
	    number(p, "Rss", &r.u.vma.rss) < 0 ||
	    number(p, "Swap", &r.u.vma.swap) < 0)
		return -1;
	cursor_skip_space(&p->c);
	rc = maps_parse_line(p->c.p, (size_t)(p->c.end - p->c.p), &r.u.vma.v,
			     &p->b.m->strings);
	p->pos.col = (unsigned long)(p->c.p - p->l->p) + 1;
	if (rc < 0)
		return read_error(&p->pos, "expected a mapping (as in "
					   "/proc/PID/maps), found '%s'",
				  read_quote(&p->pos, p->c.p,
					     (size_t)(p->c.end - p->c.p)));
	if (put(p, &r) < 0)
		return -1;
	p->pos.col = 0;
	return 0;
}

/* ---- the file ---- */

static int parse_version(struct sparser *p)
{
	const char *w;
	size_t len;

	word(p, &w, &len);
	if (!word(p, &w, &len) || len != 1 || w[0] != '1')
		return read_error(&p->pos, "unknown snapshot version '%s' "
					   "(dmprof reads dmprof-snapshot 1)",
				  read_quote(&p->pos, p->l->p, p->l->len));
	return line_end(p);
}

static const struct {
	const char *header;
	enum section sec;
	enum snap_record_kind kind;
} sections[] = {
	{ "META:", S_META, SNAP_META },
	{ "HEAP:", S_HEAP, SNAP_HEAP },
	{ "MAPS:", S_MAPS, SNAP_MAPS },
};

/* 1 if the line opens a section, 0 if not, -1 after an error. */
static int section(struct sparser *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++) {
		struct snap_record r = { .kind = sections[i].kind };

		if (p->l->len != strlen(sections[i].header) ||
		    memcmp(p->l->p, sections[i].header, p->l->len))
			continue;
		if (sections[i].sec <= p->sec)
			return read_error(&p->pos, "%s out of place (META, "
						   "HEAP and MAPS come once, "
						   "in that order)",
					  sections[i].header);
		p->sec = sections[i].sec;
		/* (META's opening is no record: its lines are.) */
		if (p->sec != S_META && put(p, &r) < 0)
			return -1;
		return 1;
	}
	return 0;
}

/* "Key: value" */
static int parse_meta(struct sparser *p)
{
	const struct line *l = p->l;
	const char *colon = memchr(l->p, ':', l->len);
	struct snap_record r = { .kind = SNAP_META };

	if (!colon || colon == l->p)
		return read_error(&p->pos, "expected 'Key: value' in META, "
					   "found '%s'",
				  read_quote(&p->pos, l->p, l->len));
	r.u.meta.key = l->p;
	r.u.meta.key_len = (size_t)(colon - l->p);
	r.u.meta.value = colon + 1;
	r.u.meta.value_len = l->len - r.u.meta.key_len - 1;
	return put(p, &r);
}

static int parse_line(struct sparser *p)
{
	int rc;

	if (p->sec == S_BEFORE) {
		p->sec = S_HEAD;
		return parse_version(p);
	}
	if ((rc = section(p)) != 0)
		return rc < 0 ? -1 : 0;
	switch (p->sec) {
	case S_META:
		return parse_meta(p);
	case S_HEAP:
		return parse_heap(p);
	case S_MAPS:
		return is_space(p->l->p[0]) ? parse_part(p) : parse_vma(p);
	default:
		return read_error(&p->pos, "'%s' outside any section",
				  read_quote(&p->pos, p->l->p, p->l->len));
	}
}

static int parse_lines(struct sparser *p, const struct filebuf *fb)
{
	struct line_reader r;
	struct line l;

	lines_init(&r, fb->data, fb->size);
	p->l = &l;
	while (lines_next(&r, &l)) {
		p->pos.line = l.no;
		p->pos.col = 0;
		p->c = cursor_of(&l);
		if (memchr(l.p, '\0', l.len))
			return read_error(&p->pos, "NUL byte in line (not a "
						   "snapshot?)");
		if (line_is_blank(&l) || l.p[0] == '#')
			continue;
		if (!l.newline)
			return read_error(&p->pos, "last line has no newline "
						   "(file cut short?)");
		if (parse_line(p) < 0)
			return -1;
	}
	p->pos.line = r.no ? r.no : 1;
	if (p->sec != S_MAPS)
		return read_error(&p->pos, "no MAPS section (file cut short?)");
	return snapbuild_finish(&p->b);
}

int snapfile_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run)
{
	struct sparser p;
	int rc;

	(void)run;
	memset(&p, 0, sizeof(p));
	p.pos.path = fb->path;
	snapbuild_init(&p.b, snap, m, &p.pos);
	rc = parse_lines(&p, fb);
	read_pos_release(&p.pos);
	return rc;
}

/* ---- writing ---- */

void snapfile_writer_init(struct snap_writer *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

/* "arena-K" or "mmapped": where blocks or a part are. */
static void put_where(FILE *f, int where)
{
	if (where == SNAP_WHERE_MMAPPED)
		fputs("mmapped", f);
	else if (where == SNAP_WHERE_THREAD_STACK)
		fputs("thread-stack", f);
	else if (where == SNAP_WHERE_ALLOCATOR)
		fputs("allocator", f);
	else if (where == SNAP_WHERE_PYMALLOC)
		fputs("pymalloc", f);
	else if (where == SNAP_WHERE_NONE)
		fputc('-', f);
	else
		fprintf(f, "arena-%d", where);
}

/* " class 0xTYPEINFO NAME" or " layout NAME": what T is. */
static void put_type(FILE *f, const struct snap_type *t)
{
	if (t->kind == SNAP_TYPE_CLASS)
		fprintf(f, " class 0x%" PRIx64 " %.*s", t->typeinfo,
			(int)t->name_len, t->name);
	else if (t->kind == SNAP_TYPE_PYTHON)
		fprintf(f, " python 0x%" PRIx64 " %.*s", t->typeinfo,
			(int)t->name_len, t->name);
	else if (t->kind == SNAP_TYPE_LAYOUT)
		fprintf(f, " layout %.*s", (int)t->name_len, t->name);
}

static void write_blocks(FILE *f, const struct snap_record *r)
{
	fputs(heap_state_name(r->u.blocks.state), f);
	if (r->u.blocks.state == HEAP_IN_USE)
		fprintf(f, " %" PRIu64 "..%" PRIu64, r->u.blocks.lo,
			r->u.blocks.hi);
	fputc(' ', f);
	put_where(f, r->u.blocks.where);
	fprintf(f, " %" PRIu64 " %" PRIu64 " %" PRIu64, r->u.blocks.count,
		r->u.blocks.bytes, r->u.blocks.committed);
	if (r->u.blocks.leaked)
		fputs(" leaked", f);
	if (r->u.blocks.state == HEAP_IN_USE)
		put_type(f, &r->u.blocks.type);
	fputc('\n', f);
}

static void write_reach(FILE *f, const struct snap_record *r)
{
	fprintf(f, "reach anchored %" PRIu64 " %" PRIu64 " leaked %" PRIu64
		   " %" PRIu64 " unreferenced %" PRIu64 " %" PRIu64
		   " listed %" PRIu64 "\n",
		r->u.reach.anchored_count, r->u.reach.anchored_bytes,
		r->u.reach.leaked_count, r->u.reach.leaked_bytes,
		r->u.reach.unreferenced_count, r->u.reach.unreferenced_bytes,
		r->u.reach.listed);
	fprintf(f, "# block ADDRESS SIZE WHERE leaked|unreferenced "
		   "FIRST-BYTES [class TYPEINFO NAME | layout NAME]\n");
}

static void write_listed(FILE *f, const struct snap_record *r)
{
	fprintf(f, "block 0x%" PRIx64 " %" PRIu64 " ", r->u.listed.addr,
		r->u.listed.size);
	put_where(f, r->u.listed.where);
	fputs(r->u.listed.unreferenced ? " unreferenced " : " leaked ", f);
	for (unsigned k = 0; k < r->u.listed.nhead; k++)
		fprintf(f, "%02x", r->u.listed.head[k]);
	if (!r->u.listed.nhead)
		fputc('-', f);
	put_type(f, &r->u.listed.type);
	fputc('\n', f);
}

static void write_vma(FILE *f, const struct snap_record *r)
{
	const struct vma *v = &r->u.vma.v;

	fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " ", r->u.vma.committed,
		r->u.vma.rss, r->u.vma.swap);
	fprintf(f, "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64 " %02x:%02x %" PRIu64,
		v->start, v->end, v->perms, v->offset, v->major, v->minor,
		v->inode);
	if (v->name[0])
		fprintf(f, " %s", v->name);
	fputc('\n', f);
}

int snapfile_put(void *ctx, const struct snap_record *r)
{
	struct snap_writer *w = ctx;
	FILE *f = w->f;

	if (!w->started)
		fprintf(f, "dmprof-snapshot 1\nMETA:\n");
	w->started = true;
	switch (r->kind) {
	case SNAP_META:
		fprintf(f, "%.*s: %.*s\n", (int)r->u.meta.key_len,
			r->u.meta.key, (int)r->u.meta.value_len,
			r->u.meta.value);
		break;
	case SNAP_HEAP:
		fprintf(f, "HEAP:\n# arena K ADDRESS heaps N system BYTES "
			   "overhead BYTES unknown BYTES [locked] [corrupt]\n");
		break;
	case SNAP_ARENA:
		fprintf(f, "arena %" PRIu64 " 0x%" PRIx64 " heaps %" PRIu64
			   " system %" PRIu64 " overhead %" PRIu64
			   " unknown %" PRIu64 "%s%s\n",
			r->u.arena.index, r->u.arena.addr, r->u.arena.heaps,
			r->u.arena.system, r->u.arena.overhead,
			r->u.arena.unknown, r->u.arena.locked ? " locked" : "",
			r->u.arena.corrupt ? " corrupt" : "");
		break;
	case SNAP_TCACHES:
		fprintf(f, "tcaches %" PRIu64 "\n", r->u.tcaches);
		fprintf(f, "# STATE [SIZES] WHERE BLOCKS BYTES COMMITTED "
			   "[leaked] [class TYPEINFO NAME | python TYPE NAME "
			   "| layout NAME]\n");
		break;
	case SNAP_BLOCKS:
		write_blocks(f, r);
		break;
	case SNAP_REACH:
		write_reach(f, r);
		break;
	case SNAP_LISTED:
		write_listed(f, r);
		break;
	case SNAP_PROBLEM:
		fprintf(f, "problem 0x%" PRIx64 " %d %s\n", r->u.problem.addr,
			r->u.problem.arena, r->u.problem.msg);
		break;
	case SNAP_PYMALLOC:
		fprintf(f, "pymalloc arenas %" PRIu64 " unused-pools %" PRIu64
			   " alignment %" PRIu64 " free %" PRIu64
			   " committed %" PRIu64 "\n",
			r->u.pymalloc.arenas, r->u.pymalloc.unused_pools,
			r->u.pymalloc.alignment, r->u.pymalloc.free,
			r->u.pymalloc.free_committed);
		break;
	case SNAP_PYCLASS:
		fprintf(f, "pyclass %" PRIu64 " size %" PRIu64 " pools %" PRIu64
			   " blocks %" PRIu64 " avail %" PRIu64 "\n",
			r->u.pyclass.index, r->u.pyclass.size,
			r->u.pyclass.pools, r->u.pyclass.used,
			r->u.pyclass.avail);
		break;
	case SNAP_MAPS:
		fprintf(f, "MAPS:\n# COMMITTED RSS SWAP MAPPING, then the "
			   "parts of those the heap or a thread's stack lies "
			   "in:\n#   START-END COMMITTED WHERE\n");
		break;
	case SNAP_VMA:
		write_vma(f, r);
		break;
	case SNAP_PART:
		fprintf(f, "  %" PRIx64 "-%" PRIx64 " %" PRIu64 " ",
			r->u.part.start, r->u.part.end, r->u.part.committed);
		put_where(f, r->u.part.where);
		fputc('\n', f);
		break;
	}
	return 0;
}
