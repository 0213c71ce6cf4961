/*
 * The files of dmprof snapshot (written by src/memory/procsnap.c): a
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
 *   MAPS:   COMMITTED RSS SWAP START-END PERMS OFFSET DEV INODE [PATH]
 *           and, indented, the parts of a mapping the heap or a thread's
 *           stack lies in:
 *             START-END COMMITTED WHERE
 *
 * WHERE is arena-K, mmapped (a chunk glibc mapped alone), thread-stack or
 * - (none of those).  KIND, of blocks in use, is what the scan of the
 * heap (heapscan.h, heaptype.h) found: "leaked" (on a line of blocks:
 * the block line says it before), then "class TYPEINFO NAME" (a C++
 * class, by its vtable) or "layout NAME" (string body, ...).  The
 * reach line sums the scan up; a block line lists one leaked block (the
 * largest ones, up to a limit) with its first bytes.
 *
 * In the model a mapping is an unhooked region, but the heap's parts,
 * which are hooked regions of the stack dmprof record gives glibc's
 * arenas (the frame dmprof_glibc_malloc_arena, then arena-K or mmapped),
 * and the threads' stacks (dmprof_thread_stack).  A line of blocks is a
 * malloc stack line whose frames say what is known of them: the type
 * (where known: what a block is, standing where an owner does), then
 * size-LO..HI, dmprof_leaked when leaked, and where they are (in use);
 * or free-STATE and the arena (free chunks, which policies may count
 * apart).  The type is the bucket's type too, for rules on types.
 */
#include "snapfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
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

/* Where blocks or a part are, besides an arena's index. */
enum { WHERE_NONE = -1, WHERE_MMAPPED = -2, WHERE_THREAD_STACK = -3 };

struct sparser {
	struct snapshot *snap;
	struct model *m;
	struct reader_pos pos;
	const struct line *l;
	struct cursor c;        /* in l, after what is read */
	enum section sec;
	/* The mapping whose parts may follow: its index (-1: none), where
	 * its parts have got to (0: none yet), and their committed bytes. */
	int64_t vma;
	uint64_t part_end;
	int64_t part_sum, vma_committed;
	unsigned long vma_line;
	int64_t malloc_bytes;   /* the lines' committed, for GLOBAL_STATS */
};

bool snapfile_claims(const char *line, size_t len)
{
	return len >= 16 && !memcmp(line, "dmprof-snapshot", 15) &&
	       is_space(line[15]);
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

/* "arena-K", "mmapped", or of a PART "-" and "thread-stack": into
 * *WHERE. */
static int where(struct sparser *p, bool part, int *out)
{
	const char *w;
	size_t len;
	uint64_t k;

	if (!word(p, &w, &len))
		return read_error(&p->pos, "where? (arena-K, mmapped%s)",
				  part ? ", thread-stack or -" : "");
	if (part && len == 1 && w[0] == '-') {
		*out = WHERE_NONE;
		return 0;
	}
	if (part && len == 12 && !memcmp(w, "thread-stack", 12)) {
		*out = WHERE_THREAD_STACK;
		return 0;
	}
	if (len == 7 && !memcmp(w, "mmapped", 7)) {
		*out = WHERE_MMAPPED;
		return 0;
	}
	if (len > 6 && !memcmp(w, "arena-", 6) &&
	    word_u64(w + 6, len - 6, &k) == NUM_OK &&
	    k < p->snap->heap.narenas) {
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

/* ---- frames ---- */

static uint64_t named(struct sparser *p, const char *name)
{
	struct frame_name fn = { name, strlen(name), NULL, 0, 0 };

	return model_named_frame(p->m, 0, &fn, 1);
}

static uint64_t where_frame(struct sparser *p, int where)
{
	char name[32];

	if (where == WHERE_MMAPPED)
		return named(p, "mmapped");
	snprintf(name, sizeof(name), "arena-%d", where);
	return named(p, name);
}

/* What a line says of blocks in use besides their size: leaked or
 * not, and their type (a class by its typeinfo, or a layout). */
struct block_kind {
	bool leaked;
	const char *type;     /* interned, or NULL: unknown */
	uint64_t typeinfo;
};

/*
 * The bucket of stack TYPE (if known), FIRST, dmprof_leaked (if so), then
 * WHERE's frame (none for WHERE_NONE): the type is what a block is known
 * by, so it stands where an allocation's owner does.
 */
static struct bucket *kind_bucket(struct sparser *p, enum alloc_kind kind,
				  const char *first, int where,
				  const struct block_kind *k)
{
	uint64_t frames[4];
	uint32_t n = 0;
	struct bucket *b;

	if (k && k->type)
		frames[n++] = named(p, k->type);
	frames[n++] = named(p, first);
	if (k && k->leaked)
		frames[n++] = named(p, "dmprof_leaked");
	if (where != WHERE_NONE)
		frames[n++] = where_frame(p, where);
	b = model_intern_bucket(p->m, kind, frames, n, p->pos.path, p->l->no);
	if (!b)
		read_error(&p->pos, "too many stacks");
	else if (k && k->type)
		model_bucket_type(p->m, b, k->typeinfo, k->type);
	return b;
}

static struct bucket *bucket(struct sparser *p, enum alloc_kind kind,
			     const char *first, int where)
{
	return kind_bucket(p, kind, first, where, NULL);
}

/* ---- META ---- */

static int meta_number(struct sparser *p, const char *val, size_t len,
		       uint64_t *v)
{
	if (word_u64(val, len, v) != NUM_OK || *v > INT64_MAX)
		return read_error(&p->pos, "bad number '%s'",
				  read_quote(&p->pos, val, len));
	return 0;
}

/* "SECONDS[.FRACTION]" since the epoch. */
static int meta_time(struct sparser *p, const char *val, size_t len)
{
	const char *dot = memchr(val, '.', len);
	size_t ilen = dot ? (size_t)(dot - val) : len;
	double frac = 0, scale = 0.1;
	uint64_t secs;

	if (meta_number(p, val, ilen, &secs) < 0)
		return -1;
	for (size_t i = ilen + 1; dot && i < len; i++, scale /= 10) {
		if (!is_digit(val[i]))
			return read_error(&p->pos, "bad time '%s'",
					  read_quote(&p->pos, val, len));
		frac += (val[i] - '0') * scale;
	}
	p->snap->time = (double)secs + frac;
	p->snap->time_from_meta = true;
	return 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
	return klen == strlen(name) && !memcmp(k, name, klen);
}

static int parse_meta(struct sparser *p)
{
	struct snapshot *snap = p->snap;
	const struct line *l = p->l;
	const char *colon = memchr(l->p, ':', l->len), *val;
	size_t klen, vlen;
	uint64_t v;

	if (!colon || colon == l->p)
		return read_error(&p->pos, "expected 'Key: value' in META, "
					   "found '%s'",
				  read_quote(&p->pos, l->p, l->len));
	klen = (size_t)(colon - l->p);
	val = colon + 1;
	vlen = l->len - klen - 1;
	while (vlen && is_space(*val))
		val++, vlen--;
	while (vlen && is_space(val[vlen - 1]))
		vlen--;
	if (key_is(l->p, klen, "Time"))
		return meta_time(p, val, vlen);
	if (key_is(l->p, klen, "CommandLine")) {
		free(snap->command_line);
		snap->command_line = xstrndup(val, vlen);
	} else if (key_is(l->p, klen, "Reason")) {
		free(snap->reason);
		snap->reason = xstrndup(val, vlen);
	} else if (key_is(l->p, klen, "PageSize")) {
		if (meta_number(p, val, vlen, &v) < 0)
			return -1;
		if (!v || v & (v - 1) || v > (1u << 30))
			return read_error(&p->pos, "bad page size %" PRIu64, v);
		snap->page_size = v;
	} else {
		/* (Rss, Pss, Swap: the kernel's view, as aggregation reads
		 * it from META.) */
		if ((key_is(l->p, klen, "Rss") || key_is(l->p, klen, "Pss") ||
		     key_is(l->p, klen, "Swap")) &&
		    meta_number(p, val, vlen, &v) < 0)
			return -1;
		GROW(snap->meta_extra, snap->nmeta_extra + 1,
		     snap->meta_extra_alloc);
		snap->meta_extra[snap->nmeta_extra].key = xstrndup(l->p, klen);
		snap->meta_extra[snap->nmeta_extra++].value =
			xstrndup(val, vlen);
	}
	return 0;
}

/* ---- HEAP ---- */

/* "arena K ADDRESS heaps N system B overhead B unknown B [flags]" */
static int parse_arena(struct sparser *p)
{
	struct heap_summary *h = &p->snap->heap;
	uint64_t k, addr, heaps, system, overhead, unknown;
	const char *w;
	size_t len;

	if (number(p, "arena", &k) < 0)
		return -1;
	if (k != h->narenas)
		return read_error(&p->pos, "arena %" PRIu64 " where arena %zu "
					   "comes", k, h->narenas);
	if (hex_number(p, "arena address", &addr) < 0 ||
	    keyed(p, "heaps", &heaps) < 0 || keyed(p, "system", &system) < 0 ||
	    keyed(p, "overhead", &overhead) < 0 ||
	    keyed(p, "unknown", &unknown) < 0)
		return -1;
	while (word(p, &w, &len))
		if (!(len == 6 && !memcmp(w, "locked", 6)) &&
		    !(len == 7 && !memcmp(w, "corrupt", 7)))
			return read_error(&p->pos, "unknown arena flag '%s' "
						   "(locked, corrupt)",
					  read_quote(&p->pos, w, len));
	h->narenas++;
	h->system_mem += system;
	h->t.overhead += overhead;
	h->t.unknown += unknown;
	return 0;
}

/* "LO..HI": the size class of blocks in use, as a frame's name. */
static int size_class(struct sparser *p, char *name, size_t size)
{
	const char *w, *dots;
	size_t len;
	uint64_t lo, hi;

	if (!word(p, &w, &len) || !(dots = memmem(w, len, "..", 2)) ||
	    word_u64(w, (size_t)(dots - w), &lo) != NUM_OK ||
	    word_u64(dots + 2, len - (size_t)(dots - w) - 2, &hi) != NUM_OK ||
	    hi < lo)
		return read_error(&p->pos, "bad size class (LO..HI)");
	snprintf(name, size, "size-%" PRIu64 "..%" PRIu64, lo, hi);
	return 0;
}

/*
 * The rest of a line of blocks in use: "[leaked] [class 0xTYPEINFO NAME
 * | layout NAME]" (LEAKED_WORD false: the state was said before), into K.
 */
static int parse_kind(struct sparser *p, bool leaked_word,
		      struct block_kind *k)
{
	const char *w;
	size_t len;
	bool class;

	memset(k, 0, sizeof(*k));
	if (!word(p, &w, &len))
		return 0;
	if (leaked_word && len == 6 && !memcmp(w, "leaked", 6)) {
		k->leaked = true;
		if (!word(p, &w, &len))
			return 0;
	}
	class = len == 5 && !memcmp(w, "class", 5);
	if (!class && !(len == 6 && !memcmp(w, "layout", 6)))
		return read_error(&p->pos, "unexpected '%s' (leaked, class "
					   "TYPEINFO NAME or layout NAME)",
				  read_quote(&p->pos, w, len));
	if (class && hex_number(p, "typeinfo address", &k->typeinfo) < 0)
		return -1;
	cursor_skip_space(&p->c);
	len = (size_t)(p->c.end - p->c.p);
	while (len && is_space(p->c.p[len - 1]))
		len--;
	if (!len)
		return read_error(&p->pos, "%s without a name",
				  class ? "class" : "layout");
	k->type = strtab_intern(&p->m->strings, p->c.p, len);
	p->c.p = p->c.end;
	return 0;
}

/* "STATE [LO..HI] WHERE BLOCKS BYTES COMMITTED [KIND]" */
static int parse_blocks(struct sparser *p, int state)
{
	struct block_kind k = { 0 };
	struct heap_summary *h = &p->snap->heap;
	struct sample_counts c = { 0 };
	struct stack_line *sl;
	struct bucket *b;
	char first[64];
	uint64_t count, bytes, committed;
	int at;

	if (state == HEAP_IN_USE) {
		if (size_class(p, first, sizeof(first)) < 0)
			return -1;
	} else {
		snprintf(first, sizeof(first), "free-%s",
			 heap_state_name(state));
	}
	if (where(p, false, &at) < 0 || number(p, "block count", &count) < 0 ||
	    number(p, "bytes", &bytes) < 0 ||
	    number(p, "committed bytes", &committed) < 0 ||
	    (state == HEAP_IN_USE ? parse_kind(p, true, &k) : line_end(p)) < 0)
		return -1;
	if (committed > bytes)
		return read_error(&p->pos, "%" PRIu64 " bytes committed of %"
					   PRIu64, committed, bytes);
	if (at == WHERE_MMAPPED && state != HEAP_IN_USE)
		return read_error(&p->pos, "mmapped chunks are in use");
	if (!(b = kind_bucket(p, ALLOC_MALLOC, first, at, &k)))
		return -1;
	c.objs = (int64_t)count;
	c.bytes = (int64_t)bytes;
	sl = read_add_sample(p->snap, b, &c);
	sl->committed = (int64_t)committed;
	p->malloc_bytes = add64(p->malloc_bytes, (int64_t)committed,
				&p->snap->overflow);
	if (at == WHERE_MMAPPED) {
		h->mmapped_count += count;
		h->mmapped_bytes += bytes;
		return 0;
	}
	heap_tally_add(&h->t, state, count, bytes);
	if (state == HEAP_TOP && at == 0)
		h->main_top += bytes;
	return 0;
}

/* "reach anchored N B leaked N B unreferenced N B listed N" */
static int parse_reach(struct sparser *p)
{
	struct heap_summary *h = &p->snap->heap;
	uint64_t listed;

	if (keyed(p, "anchored", &h->anchored_count) < 0 ||
	    number(p, "bytes", &h->anchored_bytes) < 0 ||
	    keyed(p, "leaked", &h->leaked_count) < 0 ||
	    number(p, "bytes", &h->leaked_bytes) < 0 ||
	    keyed(p, "unreferenced", &h->unreferenced_count) < 0 ||
	    number(p, "bytes", &h->unreferenced_bytes) < 0 ||
	    keyed(p, "listed", &listed) < 0 || line_end(p) < 0)
		return -1;
	if (h->unreferenced_count > h->leaked_count ||
	    h->unreferenced_bytes > h->leaked_bytes || listed > h->leaked_count)
		return read_error(&p->pos, "more unreferenced or listed blocks "
					   "than leaked ones");
	h->scanned = true;
	return 0;
}

/* Hex digits of the first bytes, or "-", into B. */
static int head_bytes(struct sparser *p, struct listed_block *b)
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
		b->head[i / 2] = (uint8_t)v;
	}
	b->nhead = (uint8_t)(len / 2);
	return 0;
}

/* "block 0xADDRESS SIZE WHERE leaked|unreferenced HEX [KIND]" */
static int parse_listed(struct sparser *p)
{
	struct snapshot *snap = p->snap;
	struct listed_block b = { 0 };
	struct block_kind k;
	char first[64];
	uint64_t usable, lo, hi;
	const char *w;
	size_t len;
	int at;

	if (hex_number(p, "block address", &b.addr) < 0 ||
	    number(p, "block size", &b.size) < 0)
		return -1;
	if (b.size < 32 || b.size % 16)
		return read_error(&p->pos, "bad block size %" PRIu64 " (a "
					   "chunk's: 32 or more, a multiple "
					   "of 16)", b.size);
	if (where(p, false, &at) < 0)
		return -1;
	if (!word(p, &w, &len) ||
	    !((len == 6 && !memcmp(w, "leaked", 6)) ||
	      (len == 12 && !memcmp(w, "unreferenced", 12))))
		return read_error(&p->pos, "expected leaked or unreferenced");
	b.unreferenced = len == 12;
	if (head_bytes(p, &b) < 0)
		return -1;
	usable = b.size - (at == WHERE_MMAPPED ? 16 : 8);
	if (b.nhead > usable)
		return read_error(&p->pos, "%u first bytes of a block of %"
					   PRIu64 " usable", b.nhead, usable);
	if (parse_kind(p, false, &k) < 0)
		return -1;
	k.leaked = true;
	snap_size_bounds(snap_size_class(usable), &lo, &hi);
	snprintf(first, sizeof(first), "size-%" PRIu64 "..%" PRIu64, lo, hi);
	if (!(b.bucket = kind_bucket(p, ALLOC_MALLOC, first, at, &k)))
		return -1;
	GROW(snap->listed, snap->nlisted + 1, snap->listed_alloc);
	snap->listed[snap->nlisted++] = b;
	return 0;
}

static int parse_heap(struct sparser *p)
{
	struct heap_summary *h = &p->snap->heap;
	const char *w;
	size_t len;
	uint64_t v;
	int state;

	if (!word(p, &w, &len))
		return 0;
	if (len == 5 && !memcmp(w, "arena", 5))
		return parse_arena(p);
	if (len == 7 && !memcmp(w, "tcaches", 7)) {
		if (number(p, "tcaches", &v) < 0 || line_end(p) < 0)
			return -1;
		h->ntcaches = (size_t)v;
		return 0;
	}
	if (len == 5 && !memcmp(w, "reach", 5))
		return parse_reach(p);
	if (len == 5 && !memcmp(w, "block", 5))
		return parse_listed(p);
	if (len == 7 && !memcmp(w, "problem", 7)) {
		/* (Its arena and message: for people to read.) */
		if (hex_number(p, "problem address", &v) < 0)
			return -1;
		h->nproblems++;
		return 0;
	}
	state = heap_state_lookup(w, len);
	if (state < 0)
		return read_error(&p->pos, "expected an arena, tcaches, "
					   "blocks (in-use, tcache, fastbin, "
					   "unsorted, bin, top, unlisted), "
					   "reach, a block or a problem, found "
					   "'%s'",
				  read_quote(&p->pos, w, len));
	return parse_blocks(p, state);
}

/* ---- MAPS ---- */

static void add_region(struct sparser *p, uint64_t start, uint64_t end,
		       int64_t committed, struct bucket *b, unsigned long line)
{
	struct snapshot *snap = p->snap;
	struct region *r;

	GROW(snap->regions, snap->nregions + 1, snap->regions_alloc);
	r = &snap->regions[snap->nregions++];
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->end = end;
	r->kind = b ? REGION_HOOKED : REGION_UNHOOKED;
	r->vma = (uint32_t)p->vma;
	r->has_committed = true;
	r->committed = committed;
	r->has_bucket = b != NULL;
	r->bucket_id = b ? b->id : 0;
	r->bucket = b;
	r->line = line;
}

/* The mapping before: whole, or its parts complete. */
static int finish_vma(struct sparser *p)
{
	const struct vma *v;

	if (p->vma < 0)
		return 0;
	v = &p->snap->vmas[p->vma];
	if (!p->part_end) {
		add_region(p, v->start, v->end, p->vma_committed, NULL,
			   p->vma_line);
		return 0;
	}
	p->pos.line = p->vma_line;
	if (p->part_end != v->end)
		return read_error(&p->pos, "its parts end at %" PRIx64 ", the "
					   "mapping at %" PRIx64,
				  p->part_end, v->end);
	if (p->part_sum != p->vma_committed)
		return read_error(&p->pos, "its parts hold %" PRId64
					   " committed bytes, the mapping %"
					   PRId64,
				  p->part_sum, p->vma_committed);
	return 0;
}

/* "  START-END COMMITTED WHERE" */
static int parse_part(struct sparser *p)
{
	const struct vma *v;
	uint64_t start, end, committed;
	struct bucket *b = NULL;
	int at;

	if (p->vma < 0)
		return read_error(&p->pos, "a part before any mapping");
	v = &p->snap->vmas[p->vma];
	if (range(p, &start, &end) < 0 ||
	    number(p, "committed bytes", &committed) < 0 ||
	    where(p, true, &at) < 0 || line_end(p) < 0)
		return -1;
	if (start != (p->part_end ? p->part_end : v->start) || end > v->end)
		return read_error(&p->pos, "part %" PRIx64 "-%" PRIx64 " does "
					   "not go on from %" PRIx64 " in its "
					   "mapping",
				  start, end,
				  p->part_end ? p->part_end : v->start);
	if (at == WHERE_THREAD_STACK)
		b = bucket(p, ALLOC_MMAP, "dmprof_thread_stack", WHERE_NONE);
	else if (at != WHERE_NONE)
		b = bucket(p, ALLOC_MMAP, "dmprof_glibc_malloc_arena", at);
	if (at != WHERE_NONE && !b)
		return -1;
	add_region(p, start, end, (int64_t)committed, b, p->l->no);
	p->part_end = end;
	p->part_sum = add64(p->part_sum, (int64_t)committed,
			    &p->snap->overflow);
	return 0;
}

/* "COMMITTED RSS SWAP START-END PERMS OFFSET DEV INODE [PATH]" */
static int parse_vma(struct sparser *p)
{
	struct snapshot *snap = p->snap;
	uint64_t committed, rss, swap;
	struct vma v;
	int rc;

	if (finish_vma(p) < 0)
		return -1;
	p->pos.line = p->l->no;
	if (number(p, "committed bytes", &committed) < 0 ||
	    number(p, "Rss", &rss) < 0 || number(p, "Swap", &swap) < 0)
		return -1;
	cursor_skip_space(&p->c);
	rc = maps_parse_line(p->c.p, (size_t)(p->c.end - p->c.p), &v,
			     &p->m->strings);
	p->pos.col = (unsigned long)(p->c.p - p->l->p) + 1;
	if (rc < 0)
		return read_error(&p->pos, "expected a mapping (as in "
					   "/proc/PID/maps), found '%s'",
				  read_quote(&p->pos, p->c.p,
					     (size_t)(p->c.end - p->c.p)));
	if (snap->nvmas && v.start < snap->vmas[snap->nvmas - 1].end)
		return read_error(&p->pos, "mapping %" PRIx64 "-%" PRIx64
					   " overlaps or comes before the one "
					   "before it",
				  v.start, v.end);
	if (snap->nvmas >= UINT32_MAX)
		return read_error(&p->pos, "too many mappings");
	GROW(snap->vmas, snap->nvmas + 1, snap->vmas_alloc);
	snap->vmas[snap->nvmas] = v;
	p->vma = (int64_t)snap->nvmas++;
	p->vma_line = p->l->no;
	p->vma_committed = (int64_t)committed;
	p->part_end = 0;
	p->part_sum = 0;
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
} sections[] = {
	{ "META:", S_META },
	{ "HEAP:", S_HEAP },
	{ "MAPS:", S_MAPS },
};

/* 1 if the line opens a section, 0 if not, -1 after an error. */
static int section(struct sparser *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++) {
		if (p->l->len != strlen(sections[i].header) ||
		    memcmp(p->l->p, sections[i].header, p->l->len))
			continue;
		if (sections[i].sec <= p->sec)
			return read_error(&p->pos, "%s out of place (META, "
						   "HEAP and MAPS come once, "
						   "in that order)",
					  sections[i].header);
		p->sec = sections[i].sec;
		if (p->sec == S_HEAP)
			p->snap->has_heap = true;
		return 1;
	}
	return 0;
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

/* GLOBAL_STATS as a deep dump has them, from the regions and lines. */
static void global_stats(struct sparser *p)
{
	static const int rows[][2] = {
		[VMA_FILE_EXEC] = { GS_FILE_EXEC, GS_NP_FILE_EXEC },
		[VMA_FILE_NONEXEC] = { GS_FILE_NONEXEC, GS_NP_FILE_NONEXEC },
		[VMA_ANONYMOUS] = { GS_ANONYMOUS, GS_NP_ANONYMOUS },
		[VMA_STACK] = { GS_STACK, GS_NP_STACK },
		[VMA_OTHER] = { GS_OTHER, GS_NP_OTHER },
	};
	struct snapshot *snap = p->snap;
	struct gstat *gs = snap->gs.row;
	bool *over = &snap->overflow;

	for (size_t i = 0; i < snap->nregions; i++) {
		const struct region *r = &snap->regions[i];
		const int *row = rows[vma_classify(&snap->vmas[r->vma])];
		int total = r->kind == REGION_HOOKED ? GS_PROFILED_MMAP
						     : GS_NP_TOTAL;
		int64_t c = r->committed;

		gs[GS_TOTAL].committed = add64(gs[GS_TOTAL].committed, c, over);
		gs[row[0]].committed = add64(gs[row[0]].committed, c, over);
		gs[total].committed = add64(gs[total].committed, c, over);
		if (r->kind == REGION_UNHOOKED)
			gs[row[1]].committed = add64(gs[row[1]].committed, c,
						     over);
	}
	gs[GS_PROFILED_MALLOC].committed = p->malloc_bytes;
	snap->gs.present = (1u << GS_NROWS) - 1;
	snap->has_global_stats = true;
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
	return finish_vma(p);
}

int snapfile_parse(struct snapshot *snap, struct filebuf *fb,
		   struct model *m, struct read_run *run)
{
	struct sparser p;
	int rc;

	(void)run;
	memset(&p, 0, sizeof(p));
	p.snap = snap;
	p.m = m;
	p.pos.path = fb->path;
	p.vma = -1;
	snap->kernel_view = true;
	snap->mmap_by_regions = true;
	snap->counts_unknown = true;
	snap->counts_live = true;
	snap->has_meta = snap->has_mmap_list = true;
	rc = parse_lines(&p, fb);
	if (rc == 0) {
		if (!snap->lines)
			snap->lines = xcalloc(1, sizeof(*snap->lines));
		global_stats(&p);
	}
	read_pos_release(&p.pos);
	return rc;
}
