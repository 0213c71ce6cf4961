/*
 * The policy text format (dmprof-policy(5)): statements of shell-like
 * tokens, a statement going on over indented lines.
 */
#include "policy_load.h"

#include <string.h>

#include "scan.h"
#include "util.h"

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

static void parse_rule(struct loader *ld, struct statement *st)
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
		if (!strcmp(t[2].s, rule_alloc_name(a)))
			alloc = (enum rule_alloc)a;
	if (alloc == RULE_NALLOC) {
		lerr(ld, t[2].line, t[2].col,
		     "unknown allocator '%s' (expected malloc, mmap or "
		     "unhooked)", t[2].s);
		return;
	}
	errors = ld->errors;
	r = add_rule(ld, t[1].s, t[1].col, alloc, t[0].line);
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
			     "'%s' does not apply to %s rules", cond_field_name(f),
			     rule_alloc_name(alloc));
			r->broken = true;
			continue;
		}
		if (r->cond[f]) {
			lerr(ld, c->line, c->col, "duplicate '%s'",
			     cond_field_name(f));
			continue;
		}
		r->cond[f] = compile_pattern(ld, val, c->len - (size_t)c->eq - 1,
					     c->line, 0, c->cols + c->eq + 1);
	}
	/* A rule with any error must not pass for a catch-all. */
	if (ld->errors != errors)
		r->broken = true;
}

/*
 * "alloc-fn PATTERN...": functions that wrap the allocator, whose callers
 * own what they allocate (owner.h).  Each a whole-name pattern.
 */
static void parse_alloc_fn(struct loader *ld, struct statement *st)
{
	struct policy *p = ld->p;

	if (st->n < 2) {
		lerr(ld, st->t[0].line, st->t[0].col,
		     "'alloc-fn' wants one or more patterns of function names");
		return;
	}
	for (size_t i = 1; i < st->n; i++) {
		const struct token *t = &st->t[i];
		struct pattern *pat = compile_pattern(ld, t->s, t->len, t->line,
						      0, t->cols);

		if (!pat)
			continue;
		p->alloc_fns = xreallocarray(p->alloc_fns, p->nalloc_fns + 1,
					     sizeof(*p->alloc_fns));
		p->alloc_fns[p->nalloc_fns++] = pat;
	}
}

static void parse_statement(struct loader *ld, struct statement *st,
			    bool *seen_header)
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
		parse_rule(ld, st);
		return;
	}
	if (!strcmp(t[0].s, "alloc-fn")) {
		parse_alloc_fn(ld, st);
		return;
	}
	lerr(ld, t[0].line, t[0].col,
	     "unknown keyword '%s' (expected dmprof-policy, columns, rule or "
	     "alloc-fn)",
	     t[0].s);
}

void policy_parse_text(struct loader *ld, const char *text, size_t len)
{
	struct line_reader r;
	struct line l;
	struct statement st = { NULL, 0, 0, false };
	bool seen_header = false;

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
			parse_statement(ld, &st, &seen_header);
			stmt_clear(&st);
		} else if (!st.n) {
			lerr(ld, l.no, k + 1,
			     "indented line continues no statement");
			continue;
		}
		tokenize(ld, &l, &st);
	}
	parse_statement(ld, &st, &seen_header);
	stmt_clear(&st);
	free(st.t);
	if (!seen_header)
		lerr(ld, 1, 0, "empty policy (expected 'dmprof-policy 1')");
}
