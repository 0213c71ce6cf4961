/*
 * Policies: ordered first-match rules that name the component every byte
 * belongs to, plus the columns a report shows.  The text format is
 * documented in dmprof-policy(5); the original's JSON policies load too.
 */
#ifndef DMPROF_POLICY_H
#define DMPROF_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

enum rule_alloc {
	RULE_MALLOC,
	RULE_MMAP,
	RULE_UNHOOKED,
	RULE_NALLOC
};

/* What a condition's pattern is matched against. */
enum cond_field {
	COND_STACK,  /* function names of the stack, joined by spaces */
	COND_SOURCE, /* source files of the stack, joined by spaces */
	COND_TYPE,   /* the allocated object's type */
	COND_PATH,   /* the mapped path of the region's VMA */
	COND_PERM,   /* the VMA's permissions, "rwxp" */
	COND_NFIELDS
};

/* Page sharing categories (bits). */
enum {
	SHARE_PRIVATE = 1,
	SHARE_GROUP = 2,
	SHARE_OTHERS = 4,
};

/*
 * A pattern ".*P1.*P2 ... .*Pk.*" none of whose pieces can match a space,
 * the separator of a joined stack (see policy_seq.c): each piece's match
 * lies in one frame, so it holds iff the frames, in order, hold P1 to Pk.
 */
struct seq {
	uint32_t k;           /* pieces, at least 1 */
	uint32_t id;          /* 0 .. the policy's nseq - 1 */
	pcre2_code **run;     /* "Pj+1.*...Pm" at [j * k + m - 1], j < m */
	/*
	 * By piece, the literals of the field's automaton its match holds
	 * (one of each group; none: not known), and whether holding one is
	 * matching: a frame's literals then say what it holds without the
	 * frame's text (see pattern_seq_literals).
	 */
	struct seq_piece {
		uint32_t *lits;
		uint8_t *group;
		uint32_t nlits, ngroups;
		bool exact;
	} *piece;
};

struct pattern {
	char *text;
	size_t len;           /* text may hold NULs (from JSON) */
	pcre2_code *code;
	/*
	 * A pattern that does not begin with ".*" is decided by the field's
	 * first frames, most often: HEAD, partial matching on the start,
	 * says when it needs more.  It is "(?:RE)\z", or X for "X.*" (the
	 * ".*" outside any group or alternation), which matches a field iff
	 * X matches its start.  NULL for patterns that begin with ".*".
	 */
	pcre2_code *head;
	/*
	 * The bytes a match of HEAD can begin with (PCRE2's own start
	 * bits), where PCRE2 knows them: a field's first byte outside them
	 * fails it without a match to run (most of the linux policy's
	 * rules on most first frames).
	 */
	bool has_first;
	uint64_t first[4];
	struct seq *seq;      /* or NULL: matched on the joined field */
	bool match_all;       /* ".*" and friends: no need to run it */
	uint32_t *lits;       /* ids in the field's automaton: a match holds, */
	uint8_t *lit_group;   /* for each group of them, one */
	size_t nlits;         /* (0: no prefilter) */
	uint32_t ngroups;     /* at most 64 */
	/* With one group of several: their bits, by word of a scan from
	 * word MASK_LO on (has_literal's test, a few words). */
	uint64_t *mask;
	uint32_t mask_lo, mask_n;
	bool exact;           /* and holding one is matching */
	/* The minimum length its literals were taken at (3, or 1 for a
	 * head pattern without longer ones). */
	uint8_t lit_min;
	/*
	 * HEAD stays undecided over a start of any number of frames that
	 * say nothing ("x x x ..."): the linux policy's first-Python-frame
	 * rules, a loop over the frames.  On a field without its literals
	 * only the scan of all of it says it fails; KEY_GROUP is the group
	 * whose absence a classifier looks for (see struct classifier).
	 */
	bool loops;
	uint8_t key_group;
	unsigned long line;   /* where it is written, for diagnostics */
	unsigned long col;
};

struct rule {
	uint32_t column;      /* the component it assigns */
	enum rule_alloc alloc;
	struct pattern *cond[COND_NFIELDS]; /* NULL: anything */
	unsigned sharing;     /* SHARE_* bits; 0: any */
	unsigned long line;
	bool broken;          /* had an error: never a catch-all */
	/*
	 * The field of its one condition (-1: none, or several) when that
	 * pattern has literals: once the field is scanned, their absence
	 * fails the rule at once (see policy_match_with).  With one literal
	 * (most rules), its bit: word LIT_WORD of the scan, LIT_MASK.
	 */
	int8_t only;
	uint32_t lit_word;
	uint64_t lit_mask;
	/* Its run (see struct rule_run; NO_RUN: none), and the next rule
	 * of the run with its bit (the run's end: none). */
	uint32_t run;
	uint32_t next_same;
};

#define NO_RUN UINT32_MAX

/*
 * Rules of one kind in a row (those of other kinds between them passed
 * over) that each fail on a field already scanned without their one
 * bit: once it is scanned, matching goes at once to the first of them
 * whose bit is set, by the bits that are (a few), not rule by rule (l2's
 * forty-five for each of a million stacks).
 */
struct rule_run {
	uint32_t end;        /* past its last rule */
	size_t words;        /* of a scan of the field */
	uint32_t nlits;      /* the field's literals */
	uint32_t *first;     /* by literal: its first rule with that bit */
};

/*
 * Columns a policy may list without a rule assigning them: dmprof
 * computes them (see dmprof-policy(5) for each formula).
 */
enum builtin {
	B_NONE,           /* a component that rules assign */
	B_SECOND,
	B_MINUTE,
	B_HOUR,
	B_FROM_HERE,      /* FROM_HERE_FOR_TOTAL */
	B_UNTIL_HERE,     /* UNTIL_HERE_FOR_TOTAL */
	B_NO_BUCKET,
	B_STAT,           /* a GLOBAL_STATS row (committed or virtual) */
	B_FILEMAPPED,
	B_FILEMAPPED_VM,
	B_MUSTBEZERO,
	B_TOTAL_EXCLUDE_PROFILER,
	B_MMAP_TOTAL_LOG,
	B_OTHER_TOTAL_LOG,
	B_TC_TOTAL_LOG,
	B_MMAP_NO_LOG,
	B_MMAP_TOTAL_RECORD,
	B_MMAP_TOTAL_RECORD_VM,
	B_TC_NO_LOG,
	B_TC_TOTAL_RECORD,
	B_TC_UNUSED,
	B_TC_TOTAL,
	B_MALLOC_UNUSED,  /* allocator-arena - malloc in use, >= 0 */
	B_MALLOC_TOTAL,   /* G(profiled-malloc) */
	B_MMAP_TOTAL,     /* G(profiled-mmap) */
	B_RSS,            /* the kernel's view (META, from dmprof record) */
	B_PSS,
	B_SWAP,
	B_LAST = B_SWAP,
};

struct column {
	char *name;
	enum builtin builtin;
	int stat_row;         /* B_STAT: enum gstat_row */
	bool stat_virtual;    /* B_STAT: the virtual column */
	bool assigned;        /* some rule assigns it */
	bool tc;              /* named "tc-...": counts in tc-total-log */
	unsigned long line;
	unsigned long col;
};

struct acm;

struct policy {
	char *label;          /* "l2", or a file's base name */
	char *path;
	bool indexed;         /* loaded by its label from a policy index */
	struct column *cols;
	size_t ncols, cols_alloc;
	struct rule *rules;
	size_t nrules, rules_alloc;
	bool uses[COND_NFIELDS]; /* which subjects some rule looks at */
	bool uses_sharing;
	int from_marker;      /* column index or -1 */
	int until_marker;
	/* Columns the aggregation needs by name, or -1. */
	int col_mmap_profiler, col_mmap_type_profiler, col_mmap_tcmalloc;
	int col_no_bucket;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jit_stack;
	/* The prefilter: per field, the literals its patterns require. */
	struct acm *acm[COND_NFIELDS];
	uint64_t *found[COND_NFIELDS];
	uint32_t nseq;        /* patterns with a seq */
	struct rule_run *runs;
	size_t nruns;
	size_t first_of[RULE_NALLOC]; /* each kind's first rule (or nrules) */
	/* alloc-fn: the allocator wrappers the policy names (owner.h),
	 * patterns on a function's name, in order. */
	struct pattern **alloc_fns;
	size_t nalloc_fns;
};

/* Builtin semantics of a column name (B_NONE if it is an ordinary one). */
enum builtin builtin_lookup(const char *name, int *stat_row, bool *stat_virtual);
bool builtin_is_time(enum builtin b);

/* What a column is: assigned by rules, computed, a marker, a time. */
enum column_kind {
	COLUMN_RULE,
	COLUMN_COMPUTED,
	COLUMN_MARKER,
	COLUMN_TIME,
};
enum column_kind column_kind(const struct column *c);
/* How dmprof computes column C, in a line; NULL for a rule column. */
const char *column_doc(const struct column *c);
/*
 * Is column C one of the components that partition the process: between
 * the markers (not a marker nor a time), or, in a policy without markers,
 * one that rules assign or one of the parts dmprof computes (no-bucket,
 * the arenas' unused bytes)?
 */
bool policy_in_partition(const struct policy *p, int c);

/*
 * Load a policy file: dmprof's text format, or the original's JSON (by
 * content, not by name).  Every problem is reported as FILE:LINE:COL;
 * returns NULL if there was any.  LABEL may be NULL (derived from PATH).
 */
struct policy *policy_load(const char *path, const char *label);
/* Parse text already in memory (NAME is used in diagnostics). */
struct policy *policy_parse(const char *text, size_t len, const char *name,
			    const char *label);
void policy_free(struct policy *p);

/* Column index of NAME, or -1. */
int policy_column(const struct policy *p, const char *name);

/*
 * Write P in the text format (what `dmprof policy convert` prints).
 * Returns -1 after an error if P holds a name the format cannot spell
 * (a newline or NUL in a column name).
 */
int policy_write(const struct policy *p, struct strbuf *out,
		 const char *comment);
/* One rule as the text format writes it, after "rule NAME":
 * "malloc   stack='...'". */
void policy_write_rule(struct strbuf *out, const struct rule *r);

/*
 * The subject a rule looks at, one string per enum cond_field (NULL where
 * the caller has none), and the page category (0: unknown).
 *
 * A caller that can tell more cheaply than by a scan which of a field's
 * prefilter literals its string holds (see policy_prefilter) may give
 * them in FOUND and leave the string NULL: FILL then builds it only if a
 * pattern needs the text itself.
 */
struct matcher;

struct subject {
	const char *s[COND_NFIELDS];
	size_t len[COND_NFIELDS];
	unsigned sharing;
	const uint64_t *found[COND_NFIELDS];
	void (*fill)(void *ctx, int field, const char **s, size_t *len);
	/*
	 * Optional: the field's start, at least MIN bytes of it or all
	 * (*WHOLE set), extended from the last call's (S may move); and
	 * the prefilter's scan of it, done only when a rule needs it.
	 */
	void (*fill_start)(void *ctx, int field, size_t min, const char **s,
			   size_t *len, bool *whole);
	const uint64_t *(*scan)(void *ctx, int field);
	/* Optional: SCAN's, where SCAN may stand in for it (a classifier's
	 * clean stack: see struct classifier), the field's own; NULL when
	 * not worth it yet (see run_head). */
	const uint64_t *(*scan_own)(void *ctx, int field);
	/*
	 * Optional: what the field cannot hold, where the caller knows it
	 * without a scan (a classifier's head-clean stack): the bits of
	 * literals known absent clear, every other set; or NULL.  Asked
	 * of a head pattern before its field is looked at, and not kept
	 * as a scan (a set bit is no literal found).
	 */
	const uint64_t *(*scan_head)(void *ctx, int field);
	/*
	 * Optional: does the field hold PAT's pieces (PAT->seq), frame by
	 * frame, each frame's state from pattern_seq_step?  1 or 0, or -1
	 * after pattern_seq_step failed.
	 */
	int (*seq)(void *ctx, int field, const struct pattern *pat,
		   struct matcher *mt, const char *what,
		   const struct subject *subj);
	/* What the subject is, for an error message (when WHAT is NULL). */
	const char *(*describe)(void *ctx);
	void *ctx;
};

/* The automaton of a field's prefilter literals, or NULL if it has none. */
const struct acm *policy_prefilter(const struct policy *p, enum cond_field f);

/*
 * The first rule for ALLOC that matches, as a column index.  Returns -1
 * if none matches (impossible for a loaded policy: each allocator has a
 * catch-all) and -2 after printing an error when a pattern exceeded its
 * match limit; WHAT (or else SUBJ's describe) says what the subject is
 * for that message.
 */
int policy_match(struct policy *p, enum rule_alloc alloc,
		 const struct subject *subj, const char *what);

/*
 * What matching needs that changes as it runs (PCRE2's match data and
 * JIT stack, the prefilter's bits): policy_match uses the policy's own;
 * another thread matches the same policy with one of these.
 */
struct matcher {
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jit_stack;
	uint64_t *found[COND_NFIELDS];
	bool quiet;           /* a pattern's failure is not printed */
};

void matcher_init(struct matcher *mt, const struct policy *p);
/* MT as a view of P's own scratch (nothing to free); QUIET as asked. */
void matcher_of_policy(struct matcher *mt, struct policy *p, bool quiet);
void matcher_free(struct matcher *mt);
/* policy_match with MT's scratch (and its QUIET). */
int policy_match_with(const struct policy *p, struct matcher *mt,
		      enum rule_alloc alloc, const struct subject *subj,
		      const char *what);

/*
 * A regular expression read for its structure, a character at a time:
 * re_cursor_next gives the next character that stands for itself there
 * (its offset in *AT): not escaped ("\x" is passed over whole), not in
 * a character class ("[...]", "[]...]", "[^]...]").  DEPTH is how deep
 * in groups that character is: a '(' is at the depth outside it, a ')'
 * at the depth it closes to.  False at the end; IN_CLASS then says the
 * class was never closed.
 */
struct re_cursor {
	const char *re;
	size_t len, i;
	int depth, opened;
	bool in_class;
};

void re_cursor_init(struct re_cursor *c, const char *re, size_t len);
bool re_cursor_next(struct re_cursor *c, size_t *at);

/*
 * Does R match everything of its allocator: no shared= list, and only
 * conditions of the ".*" kind (see dmprof-policy(5))?
 */
bool rule_is_catch_all(const struct rule *r);

/*
 * The earlier rule that takes everything rule I would, whatever the
 * memory, or -1: a rule of the same allocator whose conditions are all
 * among I's, word for word (a catch-all has none), and whose shared=
 * list, if any, holds I's.  Patterns are compared as text, not as
 * languages: a rule shadowed otherwise is found on dumps (policy check
 * -p POLICY DUMP...).
 */
long policy_rule_shadowed_by(const struct policy *p, size_t i);

/*
 * Does rule R take SUBJ, every field of which is given whole (a NULL
 * string reads as "")?  No prefilter, nothing built on demand: what
 * `policy explain` and `policy check` with dumps replay, rule by rule.
 * 1 when every condition holds; 0 when one does not, with *FAILED the
 * first that failed in the order policy_match tries them (a field, or
 * -1 for the sharing condition); -2 after a pattern failed (said unless
 * MT is quiet, WHAT or SUBJ's describe naming the subject).  R's
 * allocator is not compared.
 */
int policy_rule_test(const struct policy *p, struct matcher *mt,
		     const struct rule *r, const struct subject *subj,
		     const char *what, int *failed);

/*
 * How many of PAT's pieces (PAT->seq) a field holds after a frame whose
 * text is S[0..LEN), if it held J before them: J to PAT->seq->k.  -1
 * after an error (a match limit), printed unless MT is quiet, with WHAT
 * (or SUBJ's describe) saying what the subject is.  A field without
 * frames is one empty frame.
 */
int pattern_seq_step(const struct policy *p, struct matcher *mt,
		     const struct pattern *pat, uint32_t j, const char *s,
		     size_t len, const char *what,
		     const struct subject *subj);

/*
 * The same from a frame's literals alone, where they decide it: J to
 * PAT->seq->k, or -1 where only its text can say.  FOUND: the literals
 * of the field's automaton in the frame's text, or those a scan of the
 * joined field found ending there (a piece's literals hold no space:
 * those are the same).
 */
int pattern_seq_literals(const struct pattern *pat, uint32_t j,
			 const uint64_t *found);

const char *rule_alloc_name(enum rule_alloc a);
const char *cond_field_name(enum cond_field f);

#endif
