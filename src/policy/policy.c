/*
 * Policies: the columns dmprof computes, the policy object, and matching
 * (PCRE2 with JIT and match limits, behind a literal prefilter).  Loading
 * is policy_load.c with a reader per format (policy_text.c,
 * policy_json.c) and the checks (policy_check.c); writing is
 * policy_write.c.
 */
#include "policy_load.h"

#include <string.h>

#include "literals.h"
#include "snapshot.h"
#include "util.h"

static const char *const alloc_names[RULE_NALLOC] = { "malloc", "mmap",
						      "unhooked" };
static const char *const field_names[COND_NFIELDS] = { "stack", "source",
						       "type", "path", "perm" };

const char *rule_alloc_name(enum rule_alloc a)
{
	return alloc_names[a];
}

const char *cond_field_name(enum cond_field f)
{
	return field_names[f];
}

/* ---- builtin columns ---- */

/* Each with what it is, as `policy show` and the error of a command that
 * cannot expand it say (dmprof-policy(5) has the formulas). */
static const struct {
	const char *name;
	enum builtin b;
	int row;
	bool virt;
	const char *doc;
} builtins[] = {
	{ "second", B_SECOND, 0, false,
	  "the snapshot's time since the first one, in seconds" },
	{ "minute", B_MINUTE, 0, false,
	  "the snapshot's time since the first one, in minutes" },
	{ "hour", B_HOUR, 0, false,
	  "the snapshot's time since the first one, in hours" },
	{ "FROM_HERE_FOR_TOTAL", B_FROM_HERE, 0, false,
	  "the components from here to UNTIL_HERE_FOR_TOTAL partition the "
	  "process's memory" },
	{ "UNTIL_HERE_FOR_TOTAL", B_UNTIL_HERE, 0, false,
	  "ends the components that partition the process's memory" },
	{ "no-bucket", B_NO_BUCKET, 0, false,
	  "the bytes of stack lines and hooked regions whose bucket no .buckets "
	  "file defines" },
	{ "total", B_STAT, GS_TOTAL, false,
	  "GLOBAL_STATS total, every committed byte of the process" },
	{ "absent", B_STAT, GS_ABSENT, false, "GLOBAL_STATS absent" },
	{ "file-exec", B_STAT, GS_FILE_EXEC, false,
	  "GLOBAL_STATS file-exec, the executable file mappings" },
	{ "file-nonexec", B_STAT, GS_FILE_NONEXEC, false,
	  "GLOBAL_STATS file-nonexec, the other file mappings" },
	{ "anonymous", B_STAT, GS_ANONYMOUS, false,
	  "GLOBAL_STATS anonymous, the anonymous mappings" },
	{ "stack", B_STAT, GS_STACK, false,
	  "GLOBAL_STATS stack, the main thread's stack" },
	{ "other", B_STAT, GS_OTHER, false,
	  "GLOBAL_STATS other, the other mappings" },
	{ "unhooked-absent", B_STAT, GS_NP_ABSENT, false,
	  "GLOBAL_STATS nonprofiled-absent, what the unhooked regions miss" },
	{ "total-vm", B_STAT, GS_TOTAL, true, "GLOBAL_STATS total, virtual" },
	{ "absent-vm", B_STAT, GS_ABSENT, true,
	  "GLOBAL_STATS absent, virtual" },
	{ "file-exec-vm", B_STAT, GS_FILE_EXEC, true,
	  "GLOBAL_STATS file-exec, virtual" },
	{ "file-nonexec-vm", B_STAT, GS_FILE_NONEXEC, true,
	  "GLOBAL_STATS file-nonexec, virtual" },
	{ "anonymous-vm", B_STAT, GS_ANONYMOUS, true,
	  "GLOBAL_STATS anonymous, virtual" },
	{ "stack-vm", B_STAT, GS_STACK, true, "GLOBAL_STATS stack, virtual" },
	{ "other-vm", B_STAT, GS_OTHER, true, "GLOBAL_STATS other, virtual" },
	{ "filemapped", B_FILEMAPPED, 0, false,
	  "GLOBAL_STATS file-exec + file-nonexec" },
	{ "filemapped-vm", B_FILEMAPPED_VM, 0, false,
	  "GLOBAL_STATS file-exec + file-nonexec, virtual" },
	{ "mustbezero", B_MUSTBEZERO, 0, false,
	  "total - (profiled-mmap + nonprofiled-*), 0 when the dump is "
	  "consistent" },
	{ "total-exclude-profiler", B_TOTAL_EXCLUDE_PROFILER, 0, false,
	  "total - the profiler's own memory (mmap-profiler or profiler, "
	  "and mmap-type-profiler)" },
	{ "mmap-total-log", B_MMAP_TOTAL_LOG, 0, false,
	  "the hooked regions of the components named mmap-*" },
	{ "other-total-log", B_OTHER_TOTAL_LOG, 0, false,
	  "the malloc lines and hooked regions of the other components, and "
	  "no-bucket" },
	{ "tc-total-log", B_TC_TOTAL_LOG, 0, false,
	  "the malloc lines of the components named tc-*" },
	{ "mmap-no-log", B_MMAP_NO_LOG, 0, false,
	  "GLOBAL_STATS profiled-mmap - mmap-total-log" },
	{ "mmap-total-record", B_MMAP_TOTAL_RECORD, 0, false,
	  "GLOBAL_STATS profiled-mmap, every hooked region" },
	{ "mmap-total-record-vm", B_MMAP_TOTAL_RECORD_VM, 0, false,
	  "GLOBAL_STATS profiled-mmap, virtual" },
	{ "tc-no-log", B_TC_NO_LOG, 0, false,
	  "GLOBAL_STATS profiled-malloc - tc-total-log" },
	{ "tc-total-record", B_TC_TOTAL_RECORD, 0, false,
	  "GLOBAL_STATS profiled-malloc, every live malloc'd byte" },
	{ "tc-unused", B_TC_UNUSED, 0, false,
	  "mmap-tcmalloc - profiled-malloc, what the allocator's arenas hold "
	  "that no live block uses" },
	{ "tc-total", B_TC_TOTAL, 0, false,
	  "mmap-tcmalloc, the allocator's arenas" },
	{ "malloc-unused", B_MALLOC_UNUSED, 0, false,
	  "allocator-arena (or mmap-tcmalloc) - malloc-total, what the "
	  "allocator's arenas hold that no live block uses" },
	{ "malloc-total", B_MALLOC_TOTAL, 0, false,
	  "GLOBAL_STATS profiled-malloc, every live malloc'd byte" },
	{ "mmap-total", B_MMAP_TOTAL, 0, false,
	  "GLOBAL_STATS profiled-mmap, every hooked region" },
	{ "rss", B_RSS, 0, false,
	  "the kernel's Rss at the dump, as dmprof record writes it" },
	{ "pss", B_PSS, 0, false,
	  "the kernel's Pss at the dump, as dmprof record writes it" },
	{ "swap", B_SWAP, 0, false,
	  "the kernel's Swap at the dump, as dmprof record writes it" },
};

enum builtin builtin_lookup(const char *name, int *stat_row, bool *stat_virtual)
{
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++) {
		if (strcmp(builtins[i].name, name))
			continue;
		if (stat_row)
			*stat_row = builtins[i].row;
		if (stat_virtual)
			*stat_virtual = builtins[i].virt;
		return builtins[i].b;
	}
	return B_NONE;
}

bool builtin_is_time(enum builtin b)
{
	return b == B_SECOND || b == B_MINUTE || b == B_HOUR;
}

const char *column_doc(const struct column *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		if (builtins[i].b == c->builtin && !strcmp(builtins[i].name,
							   c->name))
			return builtins[i].doc;
	return NULL;
}

bool policy_in_partition(const struct policy *p, int c)
{
	const struct column *col;
	enum column_kind kind;

	if (c < 0 || (size_t)c >= p->ncols)
		return false; /* (no column: "no-bucket" in a policy without) */
	col = &p->cols[c];
	kind = column_kind(col);
	if (kind == COLUMN_MARKER || kind == COLUMN_TIME)
		return false;
	if (p->from_marker >= 0 && p->until_marker > p->from_marker)
		return c > p->from_marker && c < p->until_marker;
	return kind == COLUMN_RULE || col->builtin == B_NO_BUCKET ||
	       col->builtin == B_MALLOC_UNUSED || col->builtin == B_TC_UNUSED;
}

enum column_kind column_kind(const struct column *c)
{
	if (c->builtin == B_NONE)
		return COLUMN_RULE;
	if (builtin_is_time(c->builtin))
		return COLUMN_TIME;
	if (c->builtin == B_FROM_HERE || c->builtin == B_UNTIL_HERE)
		return COLUMN_MARKER;
	return COLUMN_COMPUTED;
}

void pattern_free(struct pattern *pat)
{
	if (!pat)
		return;
	free(pat->text);
	pcre2_code_free(pat->code);
	pcre2_code_free(pat->head);
	pattern_seq_free(pat);
	free(pat->lits);
	free(pat->mask);
	free(pat->lit_group);
	free(pat);
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncols; i++)
		free(p->cols[i].name);
	free(p->cols);
	for (size_t i = 0; i < p->nrules; i++)
		for (int f = 0; f < COND_NFIELDS; f++)
			pattern_free(p->rules[i].cond[f]);
	free(p->rules);
	for (size_t i = 0; i < p->nalloc_fns; i++)
		pattern_free(p->alloc_fns[i]);
	free(p->alloc_fns);
	for (int f = 0; f < COND_NFIELDS; f++) {
		acm_free(p->acm[f]);
		free(p->found[f]);
	}
	for (size_t i = 0; i < p->nruns; i++)
		free(p->runs[i].first);
	free(p->runs);
	pcre2_match_data_free(p->md);
	pcre2_match_context_free(p->mctx);
	pcre2_jit_stack_free(p->jit_stack);
	free(p->label);
	free(p->path);
	free(p);
}

int policy_column(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->ncols; i++)
		if (!strcmp(p->cols[i].name, name))
			return (int)i;
	return -1;
}

/* ---- matching ---- */

/*
 * The prefilter: for each field, one automaton over the literals that its
 * patterns require (a literal shared by several patterns is there once).
 * A pattern whose literals the subject lacks cannot match, and is not
 * run.  Literals shorter than 3 bytes are not worth it, but for a head
 * pattern's that has no longer ones: those are looked for only once the
 * pattern is undecided over the field's start (see run_head), where the
 * alternative is to build all of it.
 */
/* R's one condition with literals, for policy_match_with (see struct
 * rule). */
static void rule_only(struct rule *r)
{
	const struct pattern *pat = NULL;

	r->only = -1;
	for (int f = 0; f < COND_NFIELDS; f++) {
		if (!r->cond[f])
			continue;
		if (pat)
			return; /* (several: their order of side effects) */
		pat = r->cond[f];
		r->only = (int8_t)f;
	}
	if (!pat || !pat->nlits) {
		r->only = -1;
		return;
	}
	if (pat->nlits == 1 && pat->ngroups == 1) {
		r->lit_word = pat->lits[0] / 64;
		r->lit_mask = 1ULL << (pat->lits[0] % 64);
	}
}

/* Can R be passed over by its one bit (see struct rule_run)? */
static bool bit_rule(const struct rule *r)
{
	return r->only >= 0 && r->lit_mask && !r->sharing;
}

/* Fewer rules in a row than this: tried one by one. */
#define RUN_MIN 4

/* The run of bit rules of kind A on field F that starts at rule I, if
 * it is long enough; returns where it ends. */
static size_t add_run(struct policy *p, enum rule_alloc a, size_t i)
{
	int f = p->rules[i].only;
	size_t end = i, n = 0;
	struct rule_run *ru;

	for (size_t j = i; j < p->nrules; j++) {
		const struct rule *r = &p->rules[j];

		if (r->alloc != a)
			continue;
		if (!bit_rule(r) || r->only != f)
			break;
		end = j + 1;
		n++;
	}
	if (n < RUN_MIN)
		return end;
	p->runs = xreallocarray(p->runs, p->nruns + 1, sizeof(*p->runs));
	ru = &p->runs[p->nruns];
	ru->end = (uint32_t)end;
	ru->words = acm_words(p->acm[f]);
	ru->nlits = acm_count(p->acm[f]);
	ru->first = xmalloc(st_mult(ru->nlits, sizeof(*ru->first)));
	for (uint32_t k = 0; k < ru->nlits; k++)
		ru->first[k] = ru->end;
	/* (From the last: each rule's next one with its bit is known.) */
	for (size_t j = end; j-- > i;) {
		struct rule *r = &p->rules[j];
		uint32_t lit;

		if (r->alloc != a)
			continue;
		lit = r->cond[f]->lits[0];
		r->run = (uint32_t)p->nruns;
		r->next_same = ru->first[lit];
		ru->first[lit] = (uint32_t)j;
	}
	p->nruns++;
	return end;
}

static void build_runs(struct policy *p)
{
	for (int a = 0; a < RULE_NALLOC; a++)
		p->first_of[a] = p->nrules;
	for (size_t i = p->nrules; i-- > 0;) {
		p->rules[i].run = NO_RUN;
		p->first_of[p->rules[i].alloc] = i;
	}
	for (int a = 0; a < RULE_NALLOC; a++)
		for (size_t i = 0; i < p->nrules;) {
			if (p->rules[i].alloc == (enum rule_alloc)a &&
			    bit_rule(&p->rules[i]))
				i = add_run(p, (enum rule_alloc)a, i);
			else
				i++;
		}
}

/*
 * The first rule of run RU from rule I on whose bit FOUND holds, or the
 * run's end: by the bits set, each literal's first rule, passed on to
 * its next ones while before I (matching may have scanned the field in
 * the middle of the run).
 */
static uint32_t run_next(const struct policy *p, const struct rule_run *ru,
			 const uint64_t *found, uint32_t i)
{
	uint32_t next = ru->end;

	for (size_t w = 0; w < ru->words; w++)
		for (uint64_t bits = found[w]; bits; bits &= bits - 1) {
			uint32_t lit = (uint32_t)(w * 64) +
				       (uint32_t)__builtin_ctzll(bits);
			uint32_t q;

			if (lit >= ru->nlits)
				break;
			for (q = ru->first[lit]; q < i;
			     q = p->rules[q].next_same)
				;
			if (q < next)
				next = q;
		}
	return next;
}

/*
 * Is PAT's head undecided over a start of frames that say nothing, as
 * many as a classifier remembers a decision by and more (see struct
 * pattern)?  (What a frame says is unknown here: "x" stands for one
 * that names nothing a rule looks for.)
 */
static bool pattern_loops(const struct pattern *pat)
{
	static const char junk[] = "x x x x x x x x x x x x x x x x";
	pcre2_match_data *md;
	int rc;

	if (!pat->head)
		return false;
	md = pcre2_match_data_create(1, NULL);
	if (!md)
		die("out of memory");
	rc = pcre2_match(pat->head, (PCRE2_SPTR)junk, sizeof(junk) - 1, 0,
			 PCRE2_PARTIAL_HARD, md, NULL);
	pcre2_match_data_free(md);
	return rc == PCRE2_ERROR_PARTIAL;
}

/*
 * The group of L (of the first NGROUPS) whose absence from a field is
 * likeliest: the one whose shortest literal is the longest; a literal of
 * spaces alone (the separator: in every field of two frames) counts as
 * none.  -1 if every group has one.
 */
static int key_group(const struct literals *l, uint32_t ngroups)
{
	size_t best = 0;
	int key = -1;

	for (uint32_t g = 0; g < ngroups; g++) {
		size_t shortest = SIZE_MAX;

		for (size_t k = 0; k < l->n; k++) {
			size_t len = l->len[k];

			if (l->group[k] != g)
				continue;
			if (strspn(l->v[k], " ") >= len)
				len = 0;
			if (len < shortest)
				shortest = len;
		}
		if (shortest != SIZE_MAX && shortest > best) {
			best = shortest;
			key = (int)g;
		}
	}
	return key;
}

/* PAT's literal bits by word, where it has one group of several (see
 * struct pattern). */
static void lit_mask(struct pattern *pat)
{
	uint32_t lo = UINT32_MAX, hi = 0;

	if (pat->ngroups != 1 || pat->nlits < 2)
		return;
	for (size_t k = 0; k < pat->nlits; k++) {
		lo = pat->lits[k] / 64 < lo ? pat->lits[k] / 64 : lo;
		hi = pat->lits[k] / 64 > hi ? pat->lits[k] / 64 : hi;
	}
	pat->mask_lo = lo;
	pat->mask_n = hi - lo + 1;
	pat->mask = xcalloc(pat->mask_n, sizeof(*pat->mask));
	for (size_t k = 0; k < pat->nlits; k++)
		pat->mask[pat->lits[k] / 64 - lo] |= 1ULL << (pat->lits[k] % 64);
}

void policy_build_prefilter(struct policy *p)
{
	for (int f = 0; f < COND_NFIELDS; f++) {
		struct acm *a = NULL;

		for (size_t i = 0; i < p->nrules; i++) {
			struct pattern *pat = p->rules[i].cond[f];
			struct literals l;

			if (!pat || pat->match_all)
				continue;
			pat->lit_min = 3;
			if (!regex_literals(pat->text, pat->len, 3, &l)) {
				pat->lit_min = 1;
				if (!pat->head ||
				    !regex_literals(pat->text, pat->len, 1, &l))
					continue;
			}
			if (!a)
				a = acm_new();
			pat->lits = xcalloc(l.n, sizeof(*pat->lits));
			pat->lit_group = xcalloc(l.n, sizeof(*pat->lit_group));
			pat->exact = l.exact;
			/* (Requiring fewer groups is always safe.) */
			pat->ngroups = l.ngroups > 64 ? 64 : l.ngroups;
			for (size_t k = 0; k < l.n; k++) {
				if (l.group[k] >= pat->ngroups)
					continue;
				pat->lit_group[pat->nlits] = (uint8_t)l.group[k];
				pat->lits[pat->nlits++] =
					acm_add(a, l.v[k], l.len[k]);
			}
			lit_mask(pat);
			if (pat->nlits && pattern_loops(pat)) {
				int g = key_group(&l, pat->ngroups);

				pat->loops = g >= 0;
				pat->key_group = g < 0 ? 0 : (uint8_t)g;
			}
			literals_free(&l);
		}
		if (a) {
			acm_build(a);
			p->acm[f] = a;
			p->found[f] = xcalloc(acm_words(a), sizeof(uint64_t));
		}
	}
	for (size_t i = 0; i < p->nrules; i++)
		rule_only(&p->rules[i]);
	build_runs(p);
}

const struct acm *policy_prefilter(const struct policy *p, enum cond_field f)
{
	return p->acm[f];
}

/* Does the subject (scanned into FOUND) hold one of PAT's literals of
 * each group? */
static inline bool has_literal(const struct pattern *pat,
			       const uint64_t *found)
{
	/*
	 * The common pattern, ".*LITERAL.*": one bit to test.  (Asked of
	 * every rule in turn for each of a million stacks, the call and
	 * the loop cost more than the test.)
	 */
	if (pat->nlits == 1 && pat->ngroups == 1)
		return found[pat->lits[0] / 64] >> (pat->lits[0] % 64) & 1;
	/* (One group of several, most others: a word or two.) */
	if (pat->mask) {
		for (uint32_t w = 0; w < pat->mask_n; w++)
			if (found[pat->mask_lo + w] & pat->mask[w])
				return true;
		return false;
	}
	return lits_held(pat->lits, pat->lit_group, pat->nlits, pat->ngroups,
			 found);
}

int pattern_failed(const struct policy *p, const struct matcher *mt,
			const struct pattern *pat, int rc, size_t len,
			const char *what, const struct subject *subj)
{
	PCRE2_UCHAR msg[256];

	if (mt->quiet)
		return -1;
	pcre2_get_error_message(rc, msg, sizeof(msg));
	if (!what)
		what = subj->describe ? subj->describe(subj->ctx) : "a subject";
	error("%s:%lu:%lu: pattern '%s' failed on %s (%zu bytes): %s; "
	      "simplify the pattern (nested repeats like '(.*)*' backtrack "
	      "without end)",
	      p->path, pat->line, pat->col, pat->text, what, len, (char *)msg);
	return -1;
}

static int run_pattern(const struct policy *p, struct matcher *mt,
		       const struct pattern *pat, const char *s, size_t len,
		       const char *what, const struct subject *subj)
{
	int rc;

	if (pat->match_all)
		return 1;
	rc = pcre2_match(pat->code, (PCRE2_SPTR)s, len, 0, 0, mt->md,
			 mt->mctx);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	return pattern_failed(p, mt, pat, rc, len, what, subj);
}

/*
 * A pattern on a field built as it is asked for: partial matching on
 * the field's start (of X alone for "X.*"), twice as much of it until it
 * decides (a classifier remembers what its first frames decided); the
 * whole pattern on the whole field.
 */
static int run_head(const struct policy *p, struct matcher *mt,
		    const struct pattern *pat, struct subject *subj, int f,
		    const char *what, const uint64_t **found)
{
	size_t min = 1;

	for (;;) {
		const char *s;
		size_t len;
		bool whole;
		int rc;

		subj->fill_start(subj->ctx, f, min, &s, &len, &whole);
		/* (Its first byte is the field's, however much is built.) */
		if (min == 1 && pat->has_first && len &&
		    !(pat->first[(uint8_t)s[0] / 64] >> ((uint8_t)s[0] % 64) &
		      1))
			return 0;
		if (whole) {
			subj->s[f] = s;
			subj->len[f] = len;
			return run_pattern(p, mt, pat, s, len, what, subj);
		}
		rc = pcre2_match(pat->head, (PCRE2_SPTR)s, len, 0,
				 PCRE2_PARTIAL_HARD, mt->md, mt->mctx);
		if (rc >= 0)
			return 1;
		if (rc == PCRE2_ERROR_NOMATCH)
			return 0;
		if (rc != PCRE2_ERROR_PARTIAL)
			return pattern_failed(p, mt, pat, rc, len, what, subj);
		/*
		 * Undecided over the start: the field's literals, from its
		 * frames' (remembered by the caller), may say it cannot
		 * match without it built (the linux policy's Python rules
		 * on a stack with no Python frame: a loop over every frame,
		 * for each of a million stacks).  (SCAN_OWN may say not
		 * yet: asked again on more of the field.)
		 */
		if (pat->nlits && !*found && subj->scan && p->acm[f]) {
			*found = subj->scan_own ? subj->scan_own(subj->ctx, f)
						: subj->scan(subj->ctx, f);
			if (*found && !has_literal(pat, *found))
				return 0;
		}
		/*
		 * Twice as long, not a frame longer: a pattern that stays
		 * undecided over the start of a long field (a loop over the
		 * frames: the linux policy's first-Python-frame rules) is
		 * matched over it a few times, not once per frame (a million
		 * frames, a million matches of a million).
		 */
		min = 2 * len + 1;
	}
}

int policy_match(struct policy *p, enum rule_alloc alloc,
		 const struct subject *in, const char *what)
{
	struct matcher own;

	matcher_of_policy(&own, p, false);
	return policy_match_with(p, &own, alloc, in, what);
}

void matcher_of_policy(struct matcher *mt, struct policy *p, bool quiet)
{
	*mt = (struct matcher){ p->md, p->mctx, p->jit_stack, { NULL }, quiet };
	memcpy(mt->found, p->found, sizeof(mt->found));
}

void matcher_init(struct matcher *mt, const struct policy *p)
{
	memset(mt, 0, sizeof(*mt));
	mt->mctx = pcre2_match_context_copy(p->mctx);
	/* (The copy would share the policy's JIT stack: one of its own.) */
	mt->jit_stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024,
					       NULL);
	pcre2_jit_stack_assign(mt->mctx, NULL, mt->jit_stack);
	mt->md = pcre2_match_data_create(1, NULL);
	if (!mt->mctx || !mt->md)
		die("out of memory");
	for (int f = 0; f < COND_NFIELDS; f++)
		if (p->acm[f])
			mt->found[f] = xcalloc(acm_words(p->acm[f]),
					       sizeof(uint64_t));
}

void matcher_free(struct matcher *mt)
{
	for (int f = 0; f < COND_NFIELDS; f++)
		free(mt->found[f]);
	pcre2_match_data_free(mt->md);
	pcre2_match_context_free(mt->mctx);
	pcre2_jit_stack_free(mt->jit_stack);
	memset(mt, 0, sizeof(*mt));
}

int policy_match_with(const struct policy *p, struct matcher *mt,
		      enum rule_alloc alloc, const struct subject *in,
		      const char *what)
{
	const uint64_t *found[COND_NFIELDS];
	struct subject copy = *in, *subj = &copy;

	memcpy(found, in->found, sizeof(found));

	for (size_t i = p->first_of[alloc]; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		bool ok = true;

		if (r->alloc != alloc)
			continue;
		if (r->run != NO_RUN && found[r->only]) {
			i = run_next(p, &p->runs[r->run], found[r->only],
				     (uint32_t)i);
			if (i == p->runs[r->run].end) {
				i--; /* (none: on after the run) */
				continue;
			}
			r = &p->rules[i];
		}
		/*
		 * A sharing condition applies only where the sharing is known;
		 * the original matched such a rule blindly instead, which put
		 * every file mapping under l2's "-others" column.
		 */
		if (r->sharing && !(r->sharing & subj->sharing))
			continue;
		/*
		 * The common rule, one pattern on a field already scanned
		 * without its literals, fails here as it would below (where
		 * each path starts so), without the walk through its fields:
		 * a hundred rules for each of a million stacks.
		 */
		if (r->only >= 0 && found[r->only] &&
		    (r->lit_mask ? !(found[r->only][r->lit_word] & r->lit_mask)
				 : !has_literal(r->cond[r->only],
						found[r->only])))
			continue;
		for (int f = 0; f < COND_NFIELDS && ok; f++) {
			const struct pattern *pat = r->cond[f];
			const uint64_t *absent;
			int m;

			if (!pat)
				continue;
			/*
			 * Most patterns decide on the field's first frames
			 * (HEAD), others frame by frame (SEQ; a pattern has
			 * one or neither): no need to build the field, nor to
			 * scan it for literals (the prefilter is used if it
			 * was scanned anyway).
			 */
			if (!subj->s[f] && ((pat->seq && subj->seq) ||
					    (pat->head && subj->fill_start))) {
				if (found[f] && pat->nlits &&
				    !has_literal(pat, found[f])) {
					ok = false;
					continue;
				}
				/*
				 * Literals the caller knows absent without a
				 * scan (a C stack, for the linux policy's
				 * first-Python-frame rules, which would be
				 * undecided over any start of it): no need
				 * to look at the field at all.
				 */
				if (!found[f] && pat->nlits && subj->scan_head &&
				    (absent = subj->scan_head(subj->ctx, f)) &&
				    !has_literal(pat, absent)) {
					ok = false;
					continue;
				}
				m = pat->seq && subj->seq
					    ? subj->seq(subj->ctx, f, pat, mt,
							what, subj)
					    : run_head(p, mt, pat, subj, f,
						       what, &found[f]);
				if (m < 0)
					return -2;
				ok = m == 1;
				continue;
			}
			if (!found[f] && subj->scan && p->acm[f])
				found[f] = subj->scan(subj->ctx, f);
			if (!subj->s[f] && !found[f] && subj->fill)
				subj->fill(subj->ctx, f, &subj->s[f],
					   &subj->len[f]);
			if (pat->nlits) {
				if (!found[f]) {
					memset(mt->found[f], 0,
					       acm_words(p->acm[f]) *
						       sizeof(uint64_t));
					if (subj->s[f])
						acm_scan(p->acm[f], subj->s[f],
							 subj->len[f],
							 mt->found[f]);
					found[f] = mt->found[f];
				}
				if (!has_literal(pat, found[f])) {
					ok = false;
					continue;
				}
				if (pat->exact)
					continue; /* a match, without PCRE2 */
			}
			if (!subj->s[f] && subj->fill)
				subj->fill(subj->ctx, f, &subj->s[f],
					   &subj->len[f]);
			m = run_pattern(p, mt, pat,
					subj->s[f] ? subj->s[f] : "",
					subj->s[f] ? subj->len[f] : 0, what,
					subj);
			if (m < 0)
				return -2;
			ok = m == 1;
		}
		if (ok)
			return (int)r->column;
	}
	return -1;
}

int policy_rule_test(const struct policy *p, struct matcher *mt,
		     const struct rule *r, const struct subject *subj,
		     const char *what, int *failed)
{
	/* (The order policy_match_with tries them in.) */
	if (r->sharing && !(r->sharing & subj->sharing)) {
		*failed = -1;
		return 0;
	}
	for (int f = 0; f < COND_NFIELDS; f++) {
		const struct pattern *pat = r->cond[f];
		int m;

		if (!pat)
			continue;
		m = run_pattern(p, mt, pat, subj->s[f] ? subj->s[f] : "",
				subj->s[f] ? subj->len[f] : 0, what, subj);
		if (m < 0)
			return -2;
		if (!m) {
			*failed = f;
			return 0;
		}
	}
	return 1;
}

void re_cursor_init(struct re_cursor *c, const char *re, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->re = re;
	c->len = len;
}

bool re_cursor_next(struct re_cursor *c, size_t *at)
{
	const char *re = c->re;

	c->depth += c->opened;
	c->opened = 0;
	while (c->i < c->len) {
		size_t i = c->i++;

		if (re[i] == '\\') {
			c->i++; /* (and what it escapes) */
			continue;
		}
		if (c->in_class) {
			if (re[i] == ']')
				c->in_class = false;
			continue;
		}
		if (re[i] == '[') {
			c->in_class = true;
			/* "[]...]" and "[^]...]": that ']' is a member. */
			if (c->i < c->len && re[c->i] == '^')
				c->i++;
			if (c->i < c->len && re[c->i] == ']')
				c->i++;
			continue;
		}
		if (re[i] == '(')
			c->opened = 1;
		else if (re[i] == ')' && c->depth > 0)
			c->depth--;
		*at = i;
		return true;
	}
	return false;
}
