/*
 * Writing a policy in the text format (`dmprof policy convert`), so that
 * reading it back gives the same policy.
 */
#include "policy.h"

#include <string.h>

#include "scan.h"
#include "util.h"

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

void policy_write_rule(struct strbuf *out, const struct rule *r)
{
	sb_addf(out, "%-8s", rule_alloc_name(r->alloc));
	for (int f = 0; f < COND_NFIELDS; f++) {
		if (!r->cond[f])
			continue;
		sb_addf(out, " %s=", cond_field_name(f));
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
		out->buf[--out->len] = '\0';
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
	if (p->nalloc_fns)
		sb_addch(out, '\n');
	for (size_t i = 0; i < p->nalloc_fns; i++) {
		sb_addstr(out, "alloc-fn ");
		add_pattern(out, p->alloc_fns[i]);
		sb_addch(out, '\n');
	}
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
		sb_addf(out, "rule %-*s ", (int)width, name.buf);
		sb_release(&name);
		policy_write_rule(out, r);
		sb_addch(out, '\n');
	}
	return 0;
}
