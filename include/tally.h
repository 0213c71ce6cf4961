/*
 * Sums by text: what expand, folded, top and diff add up, keyed by a
 * stack's or a function's text.  Keys are copied into the tally's arena.
 */
#ifndef DMPROF_TALLY_H
#define DMPROF_TALLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "hashmap.h"

struct lframe;
struct owners;

/* The bytes of an entry by the line they were allocated at (see
 * tally.lines). */
struct tally_line {
	const char *file;     /* the model's (compared by address) */
	uint32_t line;
	int64_t bytes;
	struct tally_line *next;
};

struct tally_entry {
	const char *key;      /* NUL-terminated, in the tally's arena */
	size_t len;
	int64_t bytes;
	int64_t allocs, frees; /* summed block counts */
	int64_t v[8];         /* more sums, as the user says (flat, cum...) */
	const char *file;     /* a place it was allocated at, if known */
	uint32_t line;
	int64_t file_bytes;   /* (the bytes that place was chosen for) */
	unsigned flags;       /* the user's */
	/* stacktext_tally_functions' with tally.lines */
	struct tally_line *lines;
	size_t ref;           /* the user's: an index + 1, say */
	uint64_t stamp;       /* the user's: the last pass that met it */
};

struct tally {
	struct hashmap map;
	struct tally_entry **v; /* in order of first appearance, until sorted */
	size_t n, alloc;
	struct arena arena;
	bool overflow;          /* a sum saturated (see add64) */
	uint64_t stamp;         /* the user's pass counter (see entries') */
	/* The user's: entries by the id of a frame of BY_ID_OF's (a model),
	 * so that a name met before is not hashed again. */
	struct tally_entry **by_id;
	uint8_t *flag_by_id;    /* and what it is (FRAME_*: 0, not yet) */
	size_t nby_id;
	const void *by_id_of;
	/* The same for the logical frames of frames with inlined functions:
	 * frame id -> 1 + where its first one is, in mentry and mflag. */
	uint32_t *multi_at;
	struct tally_entry **mentry;
	uint8_t *mflag;
	size_t nmulti, multi_alloc;
	/* stacktext_tally_functions': whose frame owns a stack's bytes
	 * (NULL: pprof's rule); the user's. */
	const struct owners *owners;
	/* stacktext_tally_functions': where it counts the allocator
	 * wrappers it passed over to find an owner, by function (bytes;
	 * allocs: stacks), or NULL; the user's. */
	struct tally *passed;
	/* stacktext_tally_functions': keep each owner's flat bytes by the
	 * line of its frame too (a function allocating at several lines: a
	 * Python program's sites, as tracemalloc counts them); the user's. */
	bool lines;
	/* stacktext_tally_functions' scratch: a stack's logical frames. */
	struct lframe *lframes;
	size_t lframes_alloc;
};

void tally_init(struct tally *t);
void tally_free(struct tally *t);
/* The entry of KEY, new (zero) if there was none. */
struct tally_entry *tally_get(struct tally *t, const char *key, size_t len);
/* The entry of KEY, or NULL. */
struct tally_entry *tally_find(const struct tally *t, const char *key,
			       size_t len);
/* Sort v[] by CMP (on struct tally_entry *const *); the map stays valid. */
void tally_sort(struct tally *t, int (*cmp)(const void *, const void *));
/* BYTES more at FILE:LINE in E's lines. */
void tally_line_add(struct tally *t, struct tally_entry *e, const char *file,
		    uint32_t line, int64_t bytes);
/* E's lines, largest first (then by file and line): a new array of *N. */
struct tally_line **tally_lines_sorted(const struct tally_entry *e, size_t *n);

/* By bytes, largest first, then by key: the order every report uses. */
int tally_cmp_bytes(const void *a, const void *b);
/* The order of two entries' keys, the whole of them (a key may hold a
 * NUL: a function's, its file after its name). */
int tally_key_cmp(const struct tally_entry *x, const struct tally_entry *y);

#endif
