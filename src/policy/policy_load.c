/*
 * Loading a policy: the front that tells the text format from the
 * original's JSON by content, and the machinery both readers share
 * (columns, rules, patterns compiled with PCRE2's JIT).
 *
 * A reader does not stop at the first problem: `dmprof policy check`
 * reports them all, each as FILE:LINE:COL.
 */
#include "policy_load.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#include "scan.h"
#include "util.h"

/* Which conditions make sense for which allocator. */
bool field_allowed(enum rule_alloc a, enum cond_field f)
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

static bool trivially_all(const char *re)
{
	static const char *const all[] = { ".*", ".*?", "^.*", ".*$", "^.*$",
					   "(.*)", "^(.*)$", "(?s).*" };

	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (!strcmp(re, all[i]))
			return true;
	return false;
}

/* Can "." or the text's shape change under an option or a quote that
 * the head's search below does not follow? */
static bool head_unsafe(const char *re, size_t len)
{
	if (len < 3 || memchr(re, '\0', len) || memmem(re, len, "\\Q", 2) ||
	    memmem(re, len, "(?-", 3) || memmem(re, len, "(*", 2))
		return true;
	/* (?x): "#" may start a comment that hides the ".*". */
	for (const char *q = re; (q = memmem(q, len - (size_t)(q - re), "(?",
					     2)) != NULL; q += 2)
		for (const char *f = q + 2; f < re + len && *f != ')' &&
					    *f != ':'; f++)
			if (*f == 'x')
				return true;
	return false;
}

/*
 * Where RE's top-level alternatives end (not escaped, in a class or a
 * group): at most MAX of them into ENDS; their number, or 0 when RE
 * does not parse so (or has more).
 */
static size_t top_branches(const char *re, size_t len, size_t *ends,
			   size_t max)
{
	int depth = 0;
	bool in_class = false;
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		char c = re[i];

		if (c == '\\') {
			i++;
			continue;
		}
		if (in_class) {
			if (c == ']')
				in_class = false;
			continue;
		}
		if (c == '[') {
			in_class = true;
			/* "[]...]" and "[^]...]": that ']' is a member. */
			if (i + 1 < len && re[i + 1] == '^')
				i++;
			if (i + 1 < len && re[i + 1] == ']')
				i++;
		} else if (c == '(') {
			depth++;
		} else if (c == ')') {
			depth--;
		} else if (c == '|' && depth == 0) {
			if (n + 1 >= max)
				return 0;
			ends[n++] = i;
		}
	}
	if (in_class || depth != 0)
		return 0;
	ends[n++] = len;
	return n;
}

/* Does the branch RE[0..LEN) end in a ".*" of its own (not escaped)? */
static bool ends_in_any(const char *re, size_t len)
{
	size_t bs = 0;

	if (len < 3 || re[len - 2] != '.' || re[len - 1] != '*')
		return false;
	for (size_t i = len - 2; i > 0 && re[i - 1] == '\\'; i--)
		bs++;
	return bs % 2 == 0;
}

/*
 * The head of RE into OUT, if RE is "X.*" with the ".*" at the top
 * level (X), or alternatives that all are ("X.*|Y.*": "(?:X|Y)", which
 * matches a field's start iff one of them matches the field whole).
 * False when it is not, or when an option could change what "."
 * matches.
 */
static bool head_of(const char *re, size_t len, struct strbuf *out)
{
	size_t ends[64], n, start = 0;

	if (head_unsafe(re, len) ||
	    !(n = top_branches(re, len, ends, ARRAY_SIZE(ends))))
		return false;
	for (size_t k = 0; k < n; start = ends[k++] + 1)
		if (!ends_in_any(re + start, ends[k] - start))
			return false;
	if (n == 1) {
		sb_add(out, re, len - 2);
		return true;
	}
	sb_addstr(out, "(?:");
	start = 0;
	for (size_t k = 0; k < n; start = ends[k++] + 1) {
		if (k)
			sb_addch(out, '|');
		sb_add(out, re + start, ends[k] - start - 2);
	}
	sb_addch(out, ')');
	return true;
}

/*
 * Does RE begin by skipping any text (".*", "(.*", "^.+", ...)?  Then
 * its match depends on the whole field, and the literal prefilter serves
 * it better than matching the field's start.
 */
static bool starts_anywhere(const char *re, size_t len)
{
	size_t i = 0;

	if (i < len && re[i] == '^')
		i++;
	while (i < len && re[i] == '(') {
		i++;
		if (i + 1 < len && re[i] == '?' && re[i + 1] == ':')
			i += 2;
	}
	return i + 1 < len && re[i] == '.' &&
	       (re[i + 1] == '*' || re[i + 1] == '+');
}

/*
 * The bytes a match of PAT's head can begin with, if PCRE2 knows them
 * (its start bits, or its first code unit); none where a match may be
 * empty.
 */
static void first_bytes(struct pattern *pat)
{
	const uint8_t *bits = NULL;
	uint32_t type = 0, unit = 0, empty = 1;

	if (pcre2_pattern_info(pat->head, PCRE2_INFO_MATCHEMPTY, &empty) != 0 ||
	    empty ||
	    pcre2_pattern_info(pat->head, PCRE2_INFO_FIRSTCODETYPE, &type) != 0)
		return;
	memset(pat->first, 0, sizeof(pat->first));
	if (type == 1 &&
	    pcre2_pattern_info(pat->head, PCRE2_INFO_FIRSTCODEUNIT, &unit) ==
		    0 &&
	    unit < 256) {
		/* (Caseless or not, PCRE2 does not say: both cases.) */
		pat->first[unit / 64] |= 1ULL << (unit % 64);
		pat->first[tolower((int)unit) / 64] |= 1ULL << (tolower((int)unit) % 64);
		pat->first[toupper((int)unit) / 64] |= 1ULL << (toupper((int)unit) % 64);
		pat->has_first = true;
	} else if (type == 0 &&
		   pcre2_pattern_info(pat->head, PCRE2_INFO_FIRSTBITMAP,
				      &bits) == 0 &&
		   bits) {
		for (unsigned c = 0; c < 256; c++)
			if (bits[c / 8] >> (c % 8) & 1)
				pat->first[c / 64] |= 1ULL << (c % 64);
		pat->has_first = true;
	}
}

/*
 * The pattern for partial matching on a field's start (which cannot be
 * end-anchored by option): X of "X.*" (see head_of), else "(?:RE)\z".
 */
static void compile_head(struct pattern *pat, const char *re, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	PCRE2_SIZE off;
	int err;

	if (!head_of(re, len, &sb))
		sb_addf(&sb, "(?:%.*s)\\z", (int)len, re);
	pat->head = pcre2_compile((PCRE2_SPTR)sb.buf, sb.len,
				  PCRE2_ANCHORED | PCRE2_DOTALL, &err, &off,
				  NULL);
	if (pat->head) {
		pcre2_jit_compile(pat->head, PCRE2_JIT_PARTIAL_HARD);
		first_bytes(pat);
	}
	sb_release(&sb);
}

void lerr(struct loader *ld, unsigned long line, unsigned long col,
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

void add_column(struct loader *ld, const char *name, unsigned long line,
		unsigned long col)
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

struct pattern *compile_pattern(struct loader *ld, const char *text,
				size_t len, unsigned long line,
				unsigned long col, const unsigned long *cols)
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
	if (!pat->match_all && !starts_anywhere(text, len) &&
	    !memchr(text, '\0', len) && !memmem(text, len, "\\Q", 2))
		compile_head(pat, text, len);
	return pat;
}

struct rule *add_rule(struct loader *ld, const char *name,
		      unsigned long name_col, enum rule_alloc alloc,
		      unsigned long line)
{
	struct policy *p = ld->p;
	struct rule *r;

	r = PUSH_ZEROED(p->rules, p->nrules, p->rules_alloc);
	r->alloc = alloc;
	r->line = line;
	r->only = -1; /* (see rule_only) */
	r->run = NO_RUN; /* (see build_runs) */
	/* The column is resolved by policy_check(): it may come later. */
	r->column = UINT32_MAX;
	GROW(ld->names, p->nrules, ld->names_alloc);
	ld->name_cols = xreallocarray(ld->name_cols, ld->names_alloc,
				      sizeof(*ld->name_cols));
	ld->names[p->nrules - 1] = xstrdup(name);
	ld->name_cols[p->nrules - 1] = name_col;
	return r;
}

int field_lookup(const char *key, size_t len)
{
	for (int f = 0; f < COND_NFIELDS; f++)
		if (strlen(cond_field_name(f)) == len &&
		    !memcmp(cond_field_name(f), key, len))
			return f;
	return -1;
}

/* The columns aggregation (and the checks) need by name. */
static void name_columns(struct policy *p)
{
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
}

/* Ready P for matching: the match context with its limits, the prefilter. */
static void ready(struct policy *p)
{

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
	policy_build_prefilter(p);
	policy_build_seqs(p);
}

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

struct policy *policy_parse(const char *text, size_t len, const char *name,
			    const char *label)
{
	struct loader ld;
	size_t i = 0;

	memset(&ld, 0, sizeof(ld));
	ld.p = policy_new(name, label);
	ld.name = name;
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && text[i] == '{')
		policy_parse_json(&ld, text, len);
	else
		policy_parse_text(&ld, text, len);
	name_columns(ld.p);
	policy_check(&ld);
	ready(ld.p);
	for (size_t k = 0; k < ld.p->nrules; k++)
		free(ld.names[k]);
	free(ld.names);
	free(ld.name_cols);
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
