/*
 * Classification: which column of a policy each bucket and region belongs
 * to.  Malloc buckets are classified once per policy and cached by bucket;
 * regions are memoized by (bucket, mapped path, permissions, sharing).
 */
#ifndef DMPROF_CLASSIFY_H
#define DMPROF_CLASSIFY_H

#include "snapshot.h"
#include "hashmap.h"
#include "model.h"
#include "policy.h"

/*
 * A field joined from per-frame strings (function names, source files),
 * run through the policy's prefilter automaton a frame at a time: how
 * the automaton goes through a frame's string from one state is
 * remembered by frame, so a stack costs a lookup per frame instead of a
 * pass over its bytes.  (8 bytes a frame, so that a few hundred thousand
 * frames stay in cache: what a frame found is an index in a table of the
 * few distinct sets.)
 */
struct frame_scan {
	const struct acm *a;
	size_t words;          /* of a found set */
	size_t nframes;        /* frames with an entry */
	struct scan_memo {
		uint16_t from;     /* the state it is known from (or none) */
		uint16_t to;       /* the state after it */
		uint32_t set;      /* what it found: an index in sets */
	} *e;                  /* by frame id */
	uint64_t *sets;        /* distinct found sets; 0 is the empty one */
	size_t nsets, sets_alloc;
	struct hashmap set_ids; /* a set's index + 1 */
	uint32_t sep_from, sep_to, sep_set; /* the last ' ' between frames */
	uint64_t *found;       /* the stack's */
	uint64_t *tmp;         /* a frame's, as it is scanned */
	/* The last stack scanned, each of its frames' found set (a seq
	 * pattern's pieces read there: see seq_field). */
	const struct stack *pos_of;
	uint32_t *pos_set;
	size_t pos_alloc;
};

struct classifier {
	struct policy *p;
	const struct model *m;
	/* The column of every malloc bucket when the policy's first malloc
	 * rule takes anything (-1: a bucket's own). */
	int malloc_all;
	struct frame_scan scan[2]; /* COND_STACK, COND_SOURCE */
	const struct bucket *cur;  /* the bucket being classified */
	int32_t *bucket_col;  /* by bucket index: column + 1; 0 = not yet */
	size_t nbucket_col;
	struct hashmap regions;
	struct arena arena;   /* memo entries */
	struct strbuf stack, source, what;
	/* How far the current bucket's joined fields are built (COND_STACK,
	 * COND_SOURCE): the next frame, and logical frame in it. */
	struct join_state {
		uint32_t frame, k;
		bool done;
	} join[2];
	/*
	 * Patterns matched frame by frame (their seq), by id: per frame
	 * id, the state after that frame from state j at [frame * k + j],
	 * SEQ_UNKNOWN until asked.
	 */
	struct seq_memo {
		uint8_t *st;
		size_t nframes;
	} *seq;
	/*
	 * Columns decided on a stack's first frames, remembered by those
	 * frames' texts: a trie, (node << 32 | the frame's canonical id
	 * (see CANON), or PREFIX_END for the stack's end) -> child node,
	 * or the column (PREFIX_COL set).
	 * Rules anchored at the allocation site decide on a frame or
	 * two, so a million stacks over a hundred thousand allocation
	 * sites are matched a hundred thousand times.  Off where a rule
	 * looks at the type, which the frames do not tell.
	 */
	struct prefix_trie {
		struct hashmap map;
		uint32_t *root; /* (the root's entries, by frame id) */
		size_t nroot;
		uint32_t nodes;
	} trie[4];            /* by clean | head_clean << 1 (see below) */
	bool prefix_off;
	/*
	 * The literals of the malloc rules' patterns that look at a whole
	 * field (neither HEAD nor SEQ) and have some (the others read all of
	 * it, which USED says), by field (COND_STACK, COND_SOURCE):
	 * a stack that holds none of them is "clean", and its column
	 * depends on its first frames alone (those rules cannot match it),
	 * so trie[1] serves it even where such rules come first.  Their
	 * automaton, and per frame id what it does from its first state
	 * and from the one after a separator (see clean_frame).  SYNTH: the
	 * prefilter's scan of a clean stack (every other literal maybe
	 * there), so that no rule is decided on frames past its start.
	 */
	struct clean_scan {
		struct acm *a;     /* NULL: no such pattern */
		uint32_t sep0;     /* the state after a separator from 0 */
		uint16_t *e;       /* 2 a frame: state << 1 | found; or
				      CLEAN_UNKNOWN */
		uint64_t *plain[2]; /* bits: its entry says 0, not found */
		size_t nframes;
		uint64_t *tmp;
		uint64_t *synth;
		/* A, E, PLAIN and SYNTH are another classifier's, filled
		 * for every frame (see clean_ready): read, never written
		 * or freed here; TMP is this one's. */
		bool borrowed;
	} clean_scan[2];
	/*
	 * The same for the malloc rules' head patterns that loop (see
	 * struct pattern): the literals of each one's key group.  On a
	 * stack without them ("head-clean": a C stack, for the linux
	 * policy's first-Python-frame rules) such a pattern fails once it
	 * is undecided over the start, without a scan of the whole stack,
	 * so the column still depends on the first frames alone (trie[2]
	 * and trie[3]).  SYNTH: what a head-clean stack cannot hold, for
	 * the subject's scan_head (those literals' bits clear).
	 */
	struct clean_scan head_scan[2];
	/*
	 * Frames plain in every one of those scans, from the first state
	 * (ALL_PLAIN[0]) and after a separator (ALL_PLAIN[1]), for frame ids
	 * below NALL_PLAIN (see clean_ready): a stack of such frames is
	 * clean and head-clean at one look, where each scan was a walk of
	 * its own (four of every stack of gperf-1m of make bench, all of
	 * them clean).  Another classifier's where ALL_BORROWED.
	 */
	uint64_t *all_plain[2];
	size_t nall_plain;
	bool all_borrowed;
	/*
	 * By frame id below NCANON: the first frame of the same text in
	 * every field a rule reads (one function, the same name and file),
	 * which the tries are keyed by (see canon_more): a function's call
	 * sites are one key, not one each (gperf-pool of make bench: 353,442
	 * first frames of new stacks, 43,106 texts).  A frame's own id
	 * stands for it where it has none.  Another classifier's where
	 * CANON_BORROWED; TEXTS finds a text's first frame.
	 */
	uint32_t *canon;
	size_t ncanon;
	bool canon_borrowed;
	struct canon_slot {
		const char *func, *file;
		uint32_t id;   /* + 1; 0: an empty slot */
	} *texts;
	size_t texts_mask, ntexts;
	bool clean_done;
	bool clean;           /* the current bucket's stack is clean */
	bool head_clean;      /* it is head-clean (false without such rules) */
	bool head_any;        /* the policy has such rules */
	/* What the current bucket's matching looked at: its first USED
	 * frames, and the stack's end too if USED_END. */
	uint32_t used;
	bool used_end;
	/* Buckets below this index were all handed to classify_buckets. */
	size_t all_upto;
	struct matcher *mt;   /* NULL: the policy's own */
	/* Helpers that classify a snapshot's new buckets beside this
	 * thread (see classify_snapshot): classifiers of their own. */
	struct classifier *helpers;
	size_t nhelpers;
	/*
	 * Optional: told of each region the first time its subject (B:
	 * NULL for an unhooked one, V's path and permissions, SHARING) is
	 * classified, and its column: every distinct subject once (policy
	 * check with dumps).  V is the snapshot's: copy what is kept.
	 */
	void (*on_region)(void *ctx, const struct bucket *b,
			  const struct vma *v, unsigned sharing, int col);
	void *on_region_ctx;
};

void classifier_init(struct classifier *c, struct policy *p,
		     const struct model *m);
void classifier_free(struct classifier *c);

/*
 * Column index, or -2 after an error (a pattern hit its match limit).
 * B may not be NULL: unknown buckets are "no-bucket" without any rule.
 */
int classify_malloc(struct classifier *c, const struct bucket *b);

/* The same, of B whose index is INDEX (a snapshot's line_index): B is
 * not fetched when its column is known. */
static inline int classify_malloc_index(struct classifier *c, uint32_t index,
					const struct bucket *b)
{
	if (index < c->nbucket_col && c->bucket_col[index] > 0)
		return c->bucket_col[index] - 1;
	return classify_malloc(c, b);
}

/*
 * Classify the buckets of SNAP's malloc lines that C has not seen yet,
 * on every core: helper threads take shares of them while this one
 * takes its own, each with its own scratch over the same (read-only)
 * model and policy.  What a helper cannot do (a pattern's failure) is
 * left for classify_malloc, which says why.  DMPROF_THREADS=N caps the
 * threads (1: this one alone).
 */
void classify_snapshot(struct classifier *c, const struct snapshot *snap);
/*
 * The same for every malloc bucket of the model: for a command that will
 * read every snapshot of a run whose buckets are known before its dumps
 * (deep dumps: the .buckets files), so that each snapshot need not be
 * searched for new ones.
 */
void classify_buckets(struct classifier *c);
/* Ask for the memo entry of the bucket of index I (a snapshot's
 * line_index) early, to classify it soon. */
static inline void classify_prefetch_index(const struct classifier *c,
					   uint32_t i)
{
	if (i < c->nbucket_col)
		prefetch(&c->bucket_col[i]);
}

/* The same, of bucket B. */
static inline void classify_prefetch(const struct classifier *c,
				     const struct bucket *b)
{
	classify_prefetch_index(c, b->index);
}
/*
 * Where a profile has no MMAP_LIST (gperftools), its mmap stack lines are
 * the mmap accounting: regions of this unknown mapping.
 */
extern const struct vma vma_unknown;

int classify_hooked(struct classifier *c, const struct bucket *b,
		    const struct vma *v, unsigned sharing);
int classify_unhooked(struct classifier *c, const struct vma *v,
		      unsigned sharing);

/* The joined function names of a stack, as policies see them. */
void stack_functions(struct strbuf *sb, const struct model *m,
		     const struct stack *s);

/* Where each logical frame starts in a joined field. */
struct frame_starts {
	size_t *v;
	size_t n, alloc;
};

/*
 * The joined FIELD (COND_STACK or COND_SOURCE) of S, as rules see it,
 * appended to SB; with STARTS, where each of its logical frames starts
 * (an offset from where SB was).
 */
void stack_field(struct strbuf *sb, const struct model *m,
		 const struct stack *s, enum cond_field field,
		 struct frame_starts *starts);

/* The string type= patterns see for bucket B: its symbolized type, the
 * mangled name when that failed, "no typeinfo" without one. */
const char *bucket_type_subject(const struct bucket *b);

/* The joined fields of a subject, and where their frames start. */
struct subject_text {
	struct strbuf field[2];         /* COND_STACK, COND_SOURCE */
	struct frame_starts starts[2];
};

/*
 * The whole subject C's rules see, as classify_malloc (B, V NULL),
 * classify_hooked (B and V) and classify_unhooked (V, B NULL) match it,
 * but every field built in full, in T (the function names always, the
 * source files if a rule looks at them): for policy_rule_test.  SUBJ
 * points into T and B's and V's strings.
 */
void classify_subject(const struct classifier *c, const struct bucket *b,
		      const struct vma *v, unsigned sharing,
		      struct subject *subj, struct subject_text *t);
void subject_text_release(struct subject_text *t);

#endif
