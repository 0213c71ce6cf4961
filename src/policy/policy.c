/*
 * Policies: the text format's reader and writer, the original's JSON
 * format as a second front end, checks that make a loaded policy safe to
 * apply (every allocator has a catch-all, every column has a meaning), and
 * PCRE2 matching with JIT and match limits.
 *
 * The reader does not stop at the first problem: `dmprof policy check`
 * reports them all, each as FILE:LINE:COL.
 */
#include "policy.h"

#include <ctype.h>
#include <string.h>

#include "snapshot.h"
#include "json.h"
#include "literals.h"
#include "text.h"
#include "util.h"

/* Enough for any sane pattern; a catastrophic one fails in milliseconds. */
#define MATCH_LIMIT 5000000
#define DEPTH_LIMIT 100000

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

/* Which conditions make sense for which allocator. */
static bool field_allowed(enum rule_alloc a, enum cond_field f)
{
	switch (f) {
	case COND_STACK:
	case COND_SOURCE:
		return a != RULE_UNHOOKED;
	case COND_TYPE:
		return a == RULE_MALLOC;
	case COND_PATH:
	case COND_PERM:
		return a != RULE_MALLOC;
	default:
		return false;
	}
}

/* ---- builtin columns ---- */

static const struct {
	const char *name;
	enum builtin b;
	int row;
	bool virt;
} builtins[] = {
	{ "second", B_SECOND, 0, false },
	{ "minute", B_MINUTE, 0, false },
	{ "hour", B_HOUR, 0, false },
	{ "FROM_HERE_FOR_TOTAL", B_FROM_HERE, 0, false },
	{ "UNTIL_HERE_FOR_TOTAL", B_UNTIL_HERE, 0, false },
	{ "no-bucket", B_NO_BUCKET, 0, false },
	{ "total", B_STAT, GS_TOTAL, false },
	{ "absent", B_STAT, GS_ABSENT, false },
	{ "file-exec", B_STAT, GS_FILE_EXEC, false },
	{ "file-nonexec", B_STAT, GS_FILE_NONEXEC, false },
	{ "anonymous", B_STAT, GS_ANONYMOUS, false },
	{ "stack", B_STAT, GS_STACK, false },
	{ "other", B_STAT, GS_OTHER, false },
	{ "unhooked-absent", B_STAT, GS_NP_ABSENT, false },
	{ "total-vm", B_STAT, GS_TOTAL, true },
	{ "absent-vm", B_STAT, GS_ABSENT, true },
	{ "file-exec-vm", B_STAT, GS_FILE_EXEC, true },
	{ "file-nonexec-vm", B_STAT, GS_FILE_NONEXEC, true },
	{ "anonymous-vm", B_STAT, GS_ANONYMOUS, true },
	{ "stack-vm", B_STAT, GS_STACK, true },
	{ "other-vm", B_STAT, GS_OTHER, true },
	{ "filemapped", B_FILEMAPPED, 0, false },
	{ "filemapped-vm", B_FILEMAPPED_VM, 0, false },
	{ "mustbezero", B_MUSTBEZERO, 0, false },
	{ "total-exclude-profiler", B_TOTAL_EXCLUDE_PROFILER, 0, false },
	{ "mmap-total-log", B_MMAP_TOTAL_LOG, 0, false },
	{ "other-total-log", B_OTHER_TOTAL_LOG, 0, false },
	{ "tc-total-log", B_TC_TOTAL_LOG, 0, false },
	{ "mmap-no-log", B_MMAP_NO_LOG, 0, false },
	{ "mmap-total-record", B_MMAP_TOTAL_RECORD, 0, false },
	{ "mmap-total-record-vm", B_MMAP_TOTAL_RECORD_VM, 0, false },
	{ "tc-no-log", B_TC_NO_LOG, 0, false },
	{ "tc-total-record", B_TC_TOTAL_RECORD, 0, false },
	{ "tc-unused", B_TC_UNUSED, 0, false },
	{ "tc-total", B_TC_TOTAL, 0, false },
	{ "malloc-unused", B_MALLOC_UNUSED, 0, false },
	{ "malloc-total", B_MALLOC_TOTAL, 0, false },
	{ "mmap-total", B_MMAP_TOTAL, 0, false },
	{ "rss", B_RSS, 0, false },
	{ "pss", B_PSS, 0, false },
	{ "swap", B_SWAP, 0, false },
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

/* ---- the policy object ---- */

static struct policy *policy_new(const char *path, const char *label)
{
	struct policy *p = xcalloc(1, sizeof(*p));

	p->path = xstrdup(path);
	if (label) {
		p->label = xstrdup(label);
	} else {
		/* "dir/my.policy" -> "my"; "policy.l0.json" -> "policy.l0" */
		const char *base = strrchr(path, '/');
		const char *dot;

		base = base ? base + 1 : path;
		dot = strrchr(base, '.');
		p->label = dot && dot != base &&
					   (!strcmp(dot, ".policy") ||
					    !strcmp(dot, ".json"))
				   ? xstrndup(base, (size_t)(dot - base))
				   : xstrdup(base);
	}
	p->from_marker = p->until_marker = -1;
	return p;
}

static void pattern_free(struct pattern *pat)
{
	if (!pat)
		return;
	free(pat->text);
	pcre2_code_free(pat->code);
	free(pat->lits);
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
	for (int f = 0; f < COND_NFIELDS; f++) {
		acm_free(p->acm[f]);
		free(p->found[f]);
	}
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

/* ---- shared loading machinery ---- */

struct loader {
	struct policy *p;
	const char *name; /* file name for diagnostics */
	int errors;
};

static void lerr(struct loader *ld, unsigned long line, unsigned long col,
		 const char *fmt, ...) PRINTF(4, 5);
static void lerr(struct loader *ld, unsigned long line, unsigned long col,
		 const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (col)
		error("%s:%lu:%lu: %s", ld->name, line, col, sb.buf);
	else
		error("%s:%lu: %s", ld->name, line, sb.buf);
	sb_release(&sb);
	ld->errors++;
}

static void add_column(struct loader *ld, const char *name,
		       unsigned long line, unsigned long col)
{
	struct policy *p = ld->p;
	struct column *c;
	enum builtin b;

	if (!*name) {
		lerr(ld, line, col, "empty column name");
		return;
	}
	if (policy_column(p, name) >= 0) {
		b = builtin_lookup(name, NULL, NULL);
		if (b == B_FROM_HERE || b == B_UNTIL_HERE)
			lerr(ld, line, col, "duplicate marker '%s'", name);
		else
			lerr(ld, line, col, "duplicate column '%s'", name);
		return;
	}
	GROW(p->cols, p->ncols + 1, p->cols_alloc);
	c = &p->cols[p->ncols];
	memset(c, 0, sizeof(*c));
	c->name = xstrdup(name);
	c->line = line;
	c->col = col;
	c->builtin = builtin_lookup(name, &c->stat_row, &c->stat_virtual);
	if (c->builtin == B_FROM_HERE)
		p->from_marker = (int)p->ncols;
	if (c->builtin == B_UNTIL_HERE)
		p->until_marker = (int)p->ncols;
	p->ncols++;
}

static void build_prefilter(struct policy *p);

static bool trivially_all(const char *re)
{
	static const char *const all[] = { ".*", ".*?", "^.*", ".*$", "^.*$",
					   "(.*)", "^(.*)$", "(?s).*" };

	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (!strcmp(re, all[i]))
			return true;
	return false;
}

/*
 * Compile TEXT as a whole-string pattern.  COLS gives the source column of
 * each byte of TEXT (and one past it), so PCRE2's error offset becomes a
 * column; without it, COL is the column of the first byte.
 */
static struct pattern *compile_pattern(struct loader *ld, const char *text,
				       size_t len, unsigned long line,
				       unsigned long col,
				       const unsigned long *cols)
{
	struct pattern *pat = xcalloc(1, sizeof(*pat));
	PCRE2_SIZE off;
	int err;

	pat->text = xmemdup(text, len);
	pat->len = len;
	pat->line = line;
	pat->col = cols ? cols[0] : col;
	pat->match_all = strlen(pat->text) == len && trivially_all(pat->text);
	/*
	 * Anchored at both ends: a pattern must match the whole field, as
	 * the original's "pattern + \Z" from position 0 meant.  DOTALL so
	 * that ".*" really matches anything.
	 */
	pat->code = pcre2_compile((PCRE2_SPTR)text, len,
				  PCRE2_ANCHORED | PCRE2_ENDANCHORED |
					  PCRE2_DOTALL,
				  &err, &off, NULL);
	if (!pat->code) {
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(err, msg, sizeof(msg));
		lerr(ld, line, cols ? cols[off < len ? off : len] : col + off,
		     "invalid regex '%s': %s", pat->text, (char *)msg);
		pattern_free(pat);
		return NULL;
	}
	/* JIT where available; the interpreter (with limits) otherwise. */
	pcre2_jit_compile(pat->code, PCRE2_JIT_COMPLETE);
	return pat;
}

static struct rule *add_rule(struct loader *ld, const char *name,
			     enum rule_alloc alloc, unsigned long line)
{
	struct policy *p = ld->p;
	struct rule *r;

	GROW(p->rules, p->nrules + 1, p->rules_alloc);
	r = &p->rules[p->nrules++];
	memset(r, 0, sizeof(*r));
	r->alloc = alloc;
	r->line = line;
	/* The column is resolved in finish(): columns may come later. */
	r->column = UINT32_MAX;
	(void)name;
	return r;
}

static bool rule_is_catch_all(const struct rule *r)
{
	if (r->sharing || r->broken)
		return false;
	for (int f = 0; f < COND_NFIELDS; f++)
		if (r->cond[f] && !r->cond[f]->match_all)
			return false;
	return true;
}

/*
 * Checks that need the whole file: rule names are columns, columns have a
 * meaning, markers are paired, every allocator has a catch-all.
 */
static void finish(struct loader *ld, char **rule_names,
		   unsigned long *rule_cols)
{
	struct policy *p = ld->p;
	long catch_all[RULE_NALLOC] = { -1, -1, -1 };

	for (size_t i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];
		int c = policy_column(p, rule_names[i]);

		if (c < 0) {
			lerr(ld, r->line, rule_cols[i],
			     "rule assigns '%s', which is not in columns",
			     rule_names[i]);
			r->broken = true;
		} else if (p->cols[c].builtin != B_NONE) {
			lerr(ld, r->line, rule_cols[i],
			     "'%s' is computed by dmprof; a rule cannot "
			     "assign it", rule_names[i]);
			r->broken = true;
		} else {
			r->column = (uint32_t)c;
			p->cols[c].assigned = true;
		}
		if (catch_all[r->alloc] >= 0)
			warning("%s:%lu: rule '%s' never matches: the catch-all "
				"rule at line %ld comes first",
				ld->name, r->line, rule_names[i],
				catch_all[r->alloc]);
		else if (rule_is_catch_all(r))
			catch_all[r->alloc] = (long)r->line;
		for (int f = 0; f < COND_NFIELDS; f++)
			if (r->cond[f])
				p->uses[f] = true;
		if (r->sharing)
			p->uses_sharing = true;
	}
	for (size_t i = 0; i < p->ncols; i++) {
		struct column *c = &p->cols[i];

		if (c->builtin == B_NONE && !c->assigned)
			lerr(ld, c->line, c->col,
			     "column '%s' is neither assigned by a rule nor "
			     "computed by dmprof (see dmprof-policy(5))",
			     c->name);
	}
	if ((p->from_marker < 0) != (p->until_marker < 0)) {
		const struct column *m =
			&p->cols[p->from_marker >= 0 ? p->from_marker
						     : p->until_marker];

		lerr(ld, m->line, m->col, "FROM_HERE_FOR_TOTAL and "
					  "UNTIL_HERE_FOR_TOTAL go together");
	} else if (p->from_marker > p->until_marker) {
		const struct column *m = &p->cols[p->until_marker];

		lerr(ld, m->line, m->col,
		     "UNTIL_HERE_FOR_TOTAL comes before FROM_HERE_FOR_TOTAL");
	}
	for (int a = 0; a < RULE_NALLOC; a++)
		if (catch_all[a] < 0)
			lerr(ld, 1, 0,
			     "no catch-all rule for %s %s: every byte must "
			     "land in a component, so end them with a rule "
			     "without conditions (\"rule NAME %s\")",
			     alloc_names[a],
			     a == RULE_MALLOC ? "buckets" : "regions",
			     alloc_names[a]);
	/*
	 * The profiler's and the allocator's own memory, by the original's
	 * names or by the generic ones of policies for other programs.
	 */
	p->col_mmap_profiler = policy_column(p, "mmap-profiler");
	if (p->col_mmap_profiler < 0)
		p->col_mmap_profiler = policy_column(p, "profiler");
	p->col_mmap_type_profiler = policy_column(p, "mmap-type-profiler");
	p->col_mmap_tcmalloc = policy_column(p, "mmap-tcmalloc");
	if (p->col_mmap_tcmalloc < 0)
		p->col_mmap_tcmalloc = policy_column(p, "allocator-arena");
	for (size_t i = 0; i < p->ncols; i++)
		p->cols[i].tc = starts_with(p->cols[i].name, "tc-");
	p->col_no_bucket = policy_column(p, "no-bucket");
	p->mctx = pcre2_match_context_create(NULL);
	pcre2_set_match_limit(p->mctx, MATCH_LIMIT);
	pcre2_set_depth_limit(p->mctx, DEPTH_LIMIT);
	/*
	 * JIT's default 32 KiB stack fails honest patterns that repeat a
	 * group across a deep stack; let it grow, bounded.
	 */
	p->jit_stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024,
					      NULL);
	if (p->jit_stack)
		pcre2_jit_stack_assign(p->mctx, NULL, p->jit_stack);
	p->md = pcre2_match_data_create(1, NULL);
	build_prefilter(p);
}

/* ---- the text format ---- */

struct token {
	char *s;              /* unquoted text */
	size_t len;
	long eq;              /* index of the first unquoted '=', or -1 */
	unsigned long line;
	unsigned long col;
	unsigned long *cols;  /* source column of each byte of s */
};

struct statement {
	struct token *t;
	size_t n, alloc;
	bool broken; /* a token could not be read: skip the statement */
};

static void stmt_clear(struct statement *st)
{
	for (size_t i = 0; i < st->n; i++) {
		free(st->t[i].s);
		free(st->t[i].cols);
	}
	st->n = 0;
	st->broken = false;
}

/*
 * Split one physical line into tokens, appending to ST.  Shell-like:
 * quoted parts ('...' or "...", literal, no escapes) may hold spaces and
 * concatenate with bare parts; an unquoted '#' starting a token begins a
 * comment.
 */
static void tokenize(struct loader *ld, const struct line *l,
		     struct statement *st)
{
	size_t i = 0;

	while (i < l->len) {
		struct strbuf sb = STRBUF_INIT;
		unsigned long *cols = NULL;
		size_t cols_alloc = 0;
		struct token t;

		while (i < l->len && is_space(l->p[i]))
			i++;
		if (i >= l->len || l->p[i] == '#')
			return;
		memset(&t, 0, sizeof(t));
		t.line = l->no;
		t.col = i + 1;
		t.eq = -1;
		while (i < l->len && !is_space(l->p[i])) {
			char c = l->p[i];
			size_t from = i, to = i + 1;

			if (c == '\'' || c == '"') {
				const char *close =
					memchr(l->p + i + 1, c, l->len - i - 1);

				if (!close) {
					lerr(ld, l->no, i + 1,
					     "unterminated quote %c", c);
					sb_release(&sb);
					free(cols);
					st->broken = true;
					return;
				}
				from = i + 1;
				to = (size_t)(close - l->p);
				i = to + 1;
			} else {
				if (c == '=' && t.eq < 0)
					t.eq = (long)sb.len;
				i++;
			}
			for (size_t k = from; k < to; k++) {
				GROW(cols, sb.len + 1, cols_alloc);
				cols[sb.len] = k + 1;
				sb_addch(&sb, l->p[k]);
			}
		}
		/* The column just past the text, for errors at its end. */
		GROW(cols, sb.len + 1, cols_alloc);
		cols[sb.len] = sb.len ? cols[sb.len - 1] + 1 : i + 1;
		t.len = sb.len;
		t.s = sb_detach(&sb);
		t.cols = cols;
		GROW(st->t, st->n + 1, st->alloc);
		st->t[st->n++] = t;
	}
}

static int field_lookup(const char *key, size_t len)
{
	for (int f = 0; f < COND_NFIELDS; f++)
		if (strlen(field_names[f]) == len &&
		    !memcmp(field_names[f], key, len))
			return f;
	return -1;
}

static unsigned parse_sharing(struct loader *ld, const struct token *t,
			      const char *v, bool *bad)
{
	unsigned bits = 0;
	char *copy = xstrdup(v), *save = NULL, *w;

	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "private"))
			bits |= SHARE_PRIVATE;
		else if (!strcmp(w, "group"))
			bits |= SHARE_GROUP;
		else if (!strcmp(w, "others"))
			bits |= SHARE_OTHERS;
		else {
			lerr(ld, t->line, t->cols[t->eq + 1],
			     "unknown sharing '%s' (expected private, group "
			     "or others)", w);
			*bad = true;
		}
	}
	free(copy);
	if (!bits && !*bad) {
		lerr(ld, t->line, t->cols[t->eq + 1], "empty sharing list");
		*bad = true;
	}
	return bits;
}

static void parse_rule(struct loader *ld, struct statement *st,
		       char ***names, unsigned long **name_cols,
		       size_t *names_alloc)
{
	struct token *t = st->t;
	enum rule_alloc alloc = RULE_NALLOC;
	struct rule *r;
	int errors;
	size_t i;

	if (st->n < 3 || t[1].eq >= 0 || t[2].eq >= 0) {
		lerr(ld, t[0].line, t[0].col,
		     "expected 'rule NAME ALLOCATOR [KEY=PATTERN]...'");
		return;
	}
	for (int a = 0; a < RULE_NALLOC; a++)
		if (!strcmp(t[2].s, alloc_names[a]))
			alloc = (enum rule_alloc)a;
	if (alloc == RULE_NALLOC) {
		lerr(ld, t[2].line, t[2].col,
		     "unknown allocator '%s' (expected malloc, mmap or "
		     "unhooked)", t[2].s);
		return;
	}
	errors = ld->errors;
	r = add_rule(ld, t[1].s, alloc, t[0].line);
	GROW(*names, ld->p->nrules, *names_alloc);
	*name_cols = xreallocarray(*name_cols, *names_alloc,
				   sizeof(**name_cols));
	(*names)[ld->p->nrules - 1] = xstrdup(t[1].s);
	(*name_cols)[ld->p->nrules - 1] = t[1].col;
	for (i = 3; i < st->n; i++) {
		struct token *c = &t[i];
		const char *val;
		int f;

		if (c->eq < 0) {
			lerr(ld, c->line, c->col,
			     "expected KEY=PATTERN, found '%s'", c->s);
			r->broken = true;
			continue;
		}
		val = c->s + c->eq + 1;
		if (c->eq == 6 && !memcmp(c->s, "shared", 6)) {
			if (alloc == RULE_MALLOC)
				lerr(ld, c->line, c->col,
				     "'shared' does not apply to malloc rules");
			else if (r->sharing)
				lerr(ld, c->line, c->col, "duplicate 'shared'");
			else
				r->sharing = parse_sharing(ld, c, val,
							   &r->broken);
			continue;
		}
		f = field_lookup(c->s, (size_t)c->eq);
		if (f < 0) {
			lerr(ld, c->line, c->col,
			     "unknown condition '%.*s' (expected stack, "
			     "source, type, path, perm or shared)",
			     (int)c->eq, c->s);
			r->broken = true;
			continue;
		}
		if (!field_allowed(alloc, f)) {
			lerr(ld, c->line, c->col,
			     "'%s' does not apply to %s rules", field_names[f],
			     alloc_names[alloc]);
			r->broken = true;
			continue;
		}
		if (r->cond[f]) {
			lerr(ld, c->line, c->col, "duplicate '%s'",
			     field_names[f]);
			continue;
		}
		r->cond[f] = compile_pattern(ld, val, c->len - (size_t)c->eq - 1,
					     c->line, 0, c->cols + c->eq + 1);
	}
	/* A rule with any error must not pass for a catch-all. */
	if (ld->errors != errors)
		r->broken = true;
}

static void parse_statement(struct loader *ld, struct statement *st,
			    bool *seen_header, char ***names,
			    unsigned long **name_cols, size_t *names_alloc)
{
	struct token *t = st->t;

	if (!st->n || st->broken)
		return;
	if (!strcmp(t[0].s, "dmprof-policy")) {
		if (*seen_header)
			lerr(ld, t[0].line, t[0].col,
			     "second 'dmprof-policy' line");
		else if (st->n != 2 || strcmp(t[1].s, "1"))
			lerr(ld, t[0].line, t[0].col,
			     "unsupported format version (this dmprof reads "
			     "'dmprof-policy 1')");
		*seen_header = true;
		return;
	}
	if (!*seen_header) {
		lerr(ld, t[0].line, t[0].col,
		     "expected 'dmprof-policy 1' before anything else");
		*seen_header = true; /* say it once */
	}
	if (!strcmp(t[0].s, "columns")) {
		for (size_t i = 1; i < st->n; i++) {
			if (t[i].eq >= 0)
				lerr(ld, t[i].line, t[i].col,
				     "'=' in column name '%s'", t[i].s);
			else
				add_column(ld, t[i].s, t[i].line, t[i].col);
		}
		return;
	}
	if (!strcmp(t[0].s, "rule")) {
		parse_rule(ld, st, names, name_cols, names_alloc);
		return;
	}
	lerr(ld, t[0].line, t[0].col,
	     "unknown keyword '%s' (expected dmprof-policy, columns or rule)",
	     t[0].s);
}

static void parse_text(struct loader *ld, const char *text, size_t len)
{
	struct line_reader r;
	struct line l;
	struct statement st = { NULL, 0, 0, false };
	bool seen_header = false;
	char **names = NULL;
	unsigned long *name_cols = NULL;
	size_t names_alloc = 0;

	lines_init(&r, text, len);
	while (lines_next(&r, &l)) {
		size_t k = 0;

		if (memchr(l.p, '\0', l.len)) {
			lerr(ld, l.no, 0, "NUL byte in policy");
			break;
		}
		while (k < l.len && is_space(l.p[k]))
			k++;
		if (k == l.len || l.p[k] == '#')
			continue; /* blank or comment */
		if (k == 0) {
			/* A statement starts; the previous one is complete. */
			parse_statement(ld, &st, &seen_header, &names,
					&name_cols, &names_alloc);
			stmt_clear(&st);
		} else if (!st.n) {
			lerr(ld, l.no, k + 1,
			     "indented line continues no statement");
			continue;
		}
		tokenize(ld, &l, &st);
	}
	parse_statement(ld, &st, &seen_header, &names, &name_cols,
			&names_alloc);
	stmt_clear(&st);
	free(st.t);
	if (!seen_header)
		lerr(ld, 1, 0, "empty policy (expected 'dmprof-policy 1')");
	finish(ld, names, name_cols);
	for (size_t i = 0; i < ld->p->nrules; i++)
		free(names[i]);
	free(names);
	free(name_cols);
}

/* ---- the original's JSON format ---- */

static void parse_json(struct loader *ld, const char *text, size_t len)
{
	struct json_value *doc = json_parse(text, len, ld->name);
	const struct json_value *comps, *rules;
	char **names = NULL;
	unsigned long *name_cols = NULL;
	size_t names_alloc = 0;
	static const struct {
		const char *key;
		int field;
	} keys[] = {
		{ "stackfunction", COND_STACK },
		{ "stacktrace", COND_STACK },
		{ "stacksourcefile", COND_SOURCE },
		{ "typeinfo", COND_TYPE },
		{ "mappedpathname", COND_PATH },
		{ "mappedpermission", COND_PERM },
	};

	if (!doc) {
		ld->errors++;
		return;
	}
	comps = json_get(doc, "components");
	rules = json_get(doc, "rules");
	if (!comps || comps->type != JSON_ARRAY || !rules ||
	    rules->type != JSON_ARRAY) {
		lerr(ld, doc->line, doc->col,
		     "expected an object with \"components\" and \"rules\" "
		     "arrays");
		json_free(doc);
		return;
	}
	for (size_t i = 0; i < comps->n; i++) {
		const struct json_value *c = comps->items[i];

		if (c->type != JSON_STRING)
			lerr(ld, c->line, c->col, "component is not a string");
		else
			add_column(ld, c->string, c->line, c->col);
	}
	for (size_t i = 0; i < rules->n; i++) {
		const struct json_value *o = rules->items[i];
		const char *name = json_get_string(o, "name");
		const char *alloc = json_get_string(o, "allocator");
		const struct json_value *shared = json_get(o, "sharedwith");
		enum rule_alloc a = RULE_NALLOC;
		bool have[COND_NFIELDS] = { false };
		struct rule *r;

		if (!name || !alloc) {
			lerr(ld, o->line, o->col,
			     "rule needs \"name\" and \"allocator\" strings");
			continue;
		}
		for (int k = 0; k < RULE_NALLOC; k++)
			if (!strcmp(alloc, alloc_names[k]))
				a = (enum rule_alloc)k;
		/* Other allocators ("optional") never matched anything. */
		if (a == RULE_NALLOC) {
			if (strcmp(alloc, "optional"))
				warning("%s:%lu:%lu: unknown allocator '%s': "
					"the rule never matches, as in the "
					"original", ld->name, o->line, o->col,
					alloc);
			continue;
		}
		for (size_t k = 0; k < o->n; k++) {
			static const char *const known[] = {
				"name", "allocator", "stackfunction",
				"stacktrace", "stacksourcefile", "typeinfo",
				"mappedpathname", "mappedpermission",
				"sharedwith",
			};
			size_t j;

			for (j = 0; j < ARRAY_SIZE(known); j++)
				if (!strcmp(o->keys[k], known[j]))
					break;
			if (j == ARRAY_SIZE(known))
				warning("%s:%lu:%lu: unknown key \"%s\" "
					"ignored", ld->name,
					o->items[k]->line, o->items[k]->col,
					o->keys[k]);
		}
		r = add_rule(ld, name, a, o->line);
		GROW(names, ld->p->nrules, names_alloc);
		name_cols = xreallocarray(name_cols, names_alloc,
					  sizeof(*name_cols));
		names[ld->p->nrules - 1] = xstrdup(name);
		name_cols[ld->p->nrules - 1] = o->col;
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			const struct json_value *v = json_get(o, keys[k].key);
			int f = keys[k].field;

			/* An empty pattern was a wildcard; "stackfunction"
			 * wins over "stacktrace". */
			if (!v || v->type != JSON_STRING || !v->string_len ||
			    have[f])
				continue;
			have[f] = true;
			if (!field_allowed(a, f)) {
				warning("%s:%lu:%lu: \"%s\" does not apply to "
					"%s rules; ignored, as the original "
					"did", ld->name, v->line, v->col,
					keys[k].key, alloc_names[a]);
				continue;
			}
			r->cond[f] = compile_pattern(ld, v->string,
						     v->string_len, v->line,
						     v->col + 1, NULL);
			if (!r->cond[f])
				r->broken = true;
		}
		if (shared && shared->type == JSON_ARRAY && shared->n &&
		    a == RULE_MALLOC) {
			warning("%s:%lu:%lu: \"sharedwith\" does not apply to "
				"malloc rules; ignored, as the original did",
				ld->name, shared->line, shared->col);
		} else if (shared && shared->type == JSON_ARRAY && shared->n) {
			for (size_t k = 0; k < shared->n; k++) {
				const struct json_value *s = shared->items[k];

				if (s->type == JSON_STRING &&
				    !strcmp(s->string, "private"))
					r->sharing |= SHARE_PRIVATE;
				else if (s->type == JSON_STRING &&
					 !strcmp(s->string, "group"))
					r->sharing |= SHARE_GROUP;
				else if (s->type == JSON_STRING &&
					 !strcmp(s->string, "others"))
					r->sharing |= SHARE_OTHERS;
				else
					lerr(ld, s->line, s->col,
					     "unknown sharing (expected "
					     "private, group or others)");
			}
		}
	}
	json_free(doc);
	finish(ld, names, name_cols);
	for (size_t i = 0; i < ld->p->nrules; i++)
		free(names[i]);
	free(names);
	free(name_cols);
}

struct policy *policy_parse(const char *text, size_t len, const char *name,
			    const char *label)
{
	struct loader ld = { policy_new(name, label), name, 0 };
	size_t i = 0;

	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && text[i] == '{')
		parse_json(&ld, text, len);
	else
		parse_text(&ld, text, len);
	if (ld.errors) {
		policy_free(ld.p);
		return NULL;
	}
	return ld.p;
}

struct policy *policy_load(const char *path, const char *label)
{
	struct filebuf fb;
	struct policy *p;

	if (file_load(&fb, path) < 0)
		return NULL;
	p = policy_parse(fb.data, fb.size, path, label);
	file_release(&fb);
	return p;
}

/* ---- writing ---- */

static bool needs_quotes(const char *s)
{
	if (!*s || *s == '#')
		return true;
	for (; *s; s++)
		if (is_space(*s) || *s == '\'' || *s == '"' || *s == '=')
			return true;
	return false;
}

/*
 * Quote S so that the reader gives back exactly S: single-quoted runs,
 * with each single quote itself written as "'" (the parts concatenate, as
 * in a shell).
 */
static void add_quoted(struct strbuf *out, const char *s)
{
	bool open = false;

	if (!*s) {
		sb_addstr(out, "''");
		return;
	}
	for (; *s; s++) {
		if (*s == '\'') {
			if (open)
				sb_addch(out, '\'');
			sb_addstr(out, "\"'\"");
			open = false;
			continue;
		}
		if (!open)
			sb_addch(out, '\'');
		open = true;
		sb_addch(out, *s);
	}
	if (open)
		sb_addch(out, '\'');
}

/*
 * A pattern's text for a one-line quoted value: control characters (a
 * newline or NUL from a JSON pattern) become the regex escape \x{HH},
 * which matches the same; an escaped one (\ before it) loses the
 * backslash it no longer needs.
 */
static void add_pattern(struct strbuf *out, const struct pattern *pat)
{
	struct strbuf tmp = STRBUF_INIT;

	for (size_t i = 0; i < pat->len; i++) {
		unsigned char c = (unsigned char)pat->text[i];

		if (c >= 0x20 && c != 0x7f) {
			sb_addch(&tmp, c);
			continue;
		}
		{
			size_t bs = 0;

			while (bs < tmp.len && tmp.buf[tmp.len - 1 - bs] == '\\')
				bs++;
			if (bs % 2)
				tmp.len--;
		}
		sb_addf(&tmp, "\\x{%02x}", c);
	}
	add_quoted(out, sb_str(&tmp));
	sb_release(&tmp);
}

static void add_word(struct strbuf *out, const char *s)
{
	if (needs_quotes(s))
		add_quoted(out, s);
	else
		sb_addstr(out, s);
}

int policy_write(const struct policy *p, struct strbuf *out,
		 const char *comment)
{
	size_t col = 0, width = 0;

	for (size_t i = 0; i < p->ncols; i++)
		for (const char *c = p->cols[i].name; *c; c++)
			if (*c == '\n' || *c == '\r')
				return error("%s:%lu: column name with a line "
					     "break cannot be written as text",
					     p->path, p->cols[i].line);

	if (comment && *comment) {
		const char *s = comment;

		while (*s) {
			const char *nl = strchr(s, '\n');
			size_t n = nl ? (size_t)(nl - s) : strlen(s);

			sb_addf(out, "# %.*s\n", (int)n, s);
			s += n + (nl ? 1 : 0);
		}
		sb_addch(out, '\n');
	}
	sb_addstr(out, "dmprof-policy 1\n\n");
	for (size_t i = 0; i < p->ncols; i++) {
		struct strbuf w = STRBUF_INIT;

		add_word(&w, p->cols[i].name);
		if (col == 0) {
			sb_addstr(out, "columns");
			col = 7;
		}
		if (col + 1 + w.len > 78 && col > 8) {
			sb_addstr(out, "\n       ");
			col = 7;
		}
		sb_addch(out, ' ');
		sb_add(out, w.buf, w.len);
		col += 1 + w.len;
		sb_release(&w);
	}
	if (col)
		sb_addch(out, '\n');
	/* Align the allocators for reading down the rules. */
	for (size_t i = 0; i < p->nrules; i++) {
		struct strbuf w = STRBUF_INIT;

		add_word(&w, p->cols[p->rules[i].column].name);
		if (w.len > width)
			width = w.len;
		sb_release(&w);
	}
	if (p->nrules)
		sb_addch(out, '\n');
	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		struct strbuf name = STRBUF_INIT;

		add_word(&name, p->cols[r->column].name);
		sb_addf(out, "rule %-*s %-8s", (int)width, name.buf,
			alloc_names[r->alloc]);
		sb_release(&name);
		for (int f = 0; f < COND_NFIELDS; f++) {
			if (!r->cond[f])
				continue;
			sb_addf(out, " %s=", field_names[f]);
			add_pattern(out, r->cond[f]);
		}
		if (r->sharing) {
			const char *sep = "";

			sb_addstr(out, " shared=");
			if (r->sharing & SHARE_PRIVATE)
				sb_addstr(out, "private"), sep = ",";
			if (r->sharing & SHARE_GROUP)
				sb_addf(out, "%sgroup", sep), sep = ",";
			if (r->sharing & SHARE_OTHERS)
				sb_addf(out, "%sothers", sep);
		}
		/* No trailing blanks for short rules. */
		while (out->len && out->buf[out->len - 1] == ' ')
			out->len--;
		sb_addch(out, '\n');
	}
	return 0;
}

/* ---- matching ---- */

/*
 * The prefilter: for each field, one automaton over the literals that its
 * patterns require (a literal shared by several patterns is there once).
 * A pattern whose literals the subject lacks cannot match, and is not
 * run.  Literals shorter than 3 bytes are not worth it.
 */
static void build_prefilter(struct policy *p)
{
	for (int f = 0; f < COND_NFIELDS; f++) {
		struct acm *a = NULL;

		for (size_t i = 0; i < p->nrules; i++) {
			struct pattern *pat = p->rules[i].cond[f];
			struct literals l;

			if (!pat || pat->match_all ||
			    !regex_literals(pat->text, pat->len, 3, &l))
				continue;
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
			literals_free(&l);
		}
		if (a) {
			acm_build(a);
			p->acm[f] = a;
			p->found[f] = xcalloc(acm_words(a), sizeof(uint64_t));
		}
	}
}

const struct acm *policy_prefilter(const struct policy *p, enum cond_field f)
{
	return p->acm[f];
}

/* Does the subject (scanned into FOUND) hold one of PAT's literals of
 * each group? */
static bool has_literal(const struct pattern *pat, const uint64_t *found)
{
	uint64_t groups = 0, want = pat->ngroups == 64
					    ? UINT64_MAX
					    : (1ULL << pat->ngroups) - 1;

	for (size_t k = 0; k < pat->nlits; k++)
		if (found[pat->lits[k] / 64] & (1ULL << (pat->lits[k] % 64)))
			groups |= 1ULL << pat->lit_group[k];
	return groups == want;
}

static int run_pattern(struct policy *p, const struct pattern *pat,
		       const char *s, size_t len, const char *what,
		       const struct subject *subj)
{
	int rc;

	if (pat->match_all)
		return 1;
	rc = pcre2_match(pat->code, (PCRE2_SPTR)s, len, 0, 0, p->md, p->mctx);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	{
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(rc, msg, sizeof(msg));
		if (!what)
			what = subj->describe ? subj->describe(subj->ctx)
					      : "a subject";
		error("%s:%lu:%lu: pattern '%s' failed on %s (%zu bytes): %s; "
		      "simplify the pattern (nested repeats like '(.*)*' "
		      "backtrack without end)",
		      p->path, pat->line, pat->col, pat->text, what, len,
		      (char *)msg);
	}
	return -1;
}

int policy_match(struct policy *p, enum rule_alloc alloc,
		 const struct subject *in, const char *what)
{
	const uint64_t *found[COND_NFIELDS];
	struct subject copy = *in, *subj = &copy;

	memcpy(found, in->found, sizeof(found));

	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		bool ok = true;

		if (r->alloc != alloc)
			continue;
		/*
		 * A sharing condition applies only where the sharing is known;
		 * the original matched such a rule blindly instead, which put
		 * every file mapping under l2's "-others" column.
		 */
		if (r->sharing && !(r->sharing & subj->sharing))
			continue;
		for (int f = 0; f < COND_NFIELDS && ok; f++) {
			int m;

			if (!r->cond[f])
				continue;
			if (!subj->s[f] && !found[f] && subj->fill)
				subj->fill(subj->ctx, f, &subj->s[f],
					   &subj->len[f]);
			if (r->cond[f]->nlits) {
				if (!found[f]) {
					memset(p->found[f], 0,
					       acm_words(p->acm[f]) *
						       sizeof(uint64_t));
					if (subj->s[f])
						acm_scan(p->acm[f], subj->s[f],
							 subj->len[f],
							 p->found[f]);
					found[f] = p->found[f];
				}
				if (!has_literal(r->cond[f], found[f])) {
					ok = false;
					continue;
				}
				if (r->cond[f]->exact)
					continue; /* a match, without PCRE2 */
			}
			if (!subj->s[f] && subj->fill)
				subj->fill(subj->ctx, f, &subj->s[f],
					   &subj->len[f]);
			m = run_pattern(p, r->cond[f],
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
