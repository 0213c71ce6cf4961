/*
 * Required literals of a regex, and an Aho-Corasick automaton to look for
 * many of them at once (see literals.h).
 *
 * The extraction reads the pattern as a sequence of items (literal bytes,
 * escapes, classes, groups with alternatives, quantifiers) and keeps the
 * most selective requirement: a run of literal bytes that every match
 * must contain in one piece, or, for a group of alternatives, one literal
 * of each.  A lookaround requires nothing (what it looks for is not
 * part of the match) and separates what is around it.  Anything it does
 * not know (backreferences, inline options, \Q...\E, {n,m}) makes it
 * give up, which only costs speed: the regex then always runs.
 */
#include "literals.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- extraction ---- */

struct parser {
	const char *p, *end;
	size_t min_len;
	int depth;
	bool bail;
};

static void lits_clear(struct literals *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	free(l->len);
	free(l->group);
	memset(l, 0, sizeof(*l));
}

void literals_free(struct literals *l)
{
	lits_clear(l);
}

static void lits_push(struct literals *l, const char *s, size_t len,
		      uint32_t group)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->len = xreallocarray(l->len, l->n + 1, sizeof(*l->len));
	l->group = xreallocarray(l->group, l->n + 1, sizeof(*l->group));
	l->v[l->n] = xmemdup(s, len);
	l->len[l->n] = len;
	l->group[l->n] = group;
	if (group >= l->ngroups)
		l->ngroups = group + 1;
	l->n++;
}

/* How selective group G is: its shortest literal's length (0: none). */
static size_t score(const struct literals *l, uint32_t g)
{
	size_t min = 0;
	bool any = false;

	for (size_t i = 0; i < l->n; i++) {
		if (l->group[i] != g)
			continue;
		if (!any || l->len[i] < min)
			min = l->len[i];
		any = true;
	}
	return min;
}

/* The most selective group of L, or UINT32_MAX if it has none. */
static uint32_t best_group(const struct literals *l)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t g = 0; g < l->ngroups; g++)
		if (best == UINT32_MAX || score(l, g) > score(l, best))
			best = g;
	return best;
}

/* Add CAND's groups that are selective enough to ALL (both required);
 * CAND is consumed. */
static void consider(const struct parser *ps, struct literals *all,
		     struct literals *cand)
{
	for (uint32_t g = 0; g < cand->ngroups; g++) {
		uint32_t to = all->ngroups;

		if (score(cand, g) < ps->min_len)
			continue;
		for (size_t i = 0; i < cand->n; i++)
			if (cand->group[i] == g)
				lits_push(all, cand->v[i], cand->len[i], to);
	}
	lits_clear(cand);
}

enum pending { P_NONE, P_CHAR, P_GROUP, P_OTHER };

struct seq {
	struct strbuf run;        /* literal bytes, adjacent in any match */
	struct literals best;
	enum pending pending;     /* the last item, until its quantifier */
	char ch;
	struct literals group;
};

static void flush(const struct parser *ps, struct seq *q)
{
	if (q->run.len) {
		struct literals l = { 0 };

		lits_push(&l, q->run.buf, q->run.len, 0);
		consider(ps, &q->best, &l);
		sb_reset(&q->run);
	}
}

/* The last item is there (exactly once, as far as we know). */
static void commit(const struct parser *ps, struct seq *q)
{
	switch (q->pending) {
	case P_CHAR:
		sb_addch(&q->run, q->ch);
		break;
	case P_GROUP:
		flush(ps, q);
		consider(ps, &q->best, &q->group);
		break;
	case P_OTHER:
		flush(ps, q);
		break;
	case P_NONE:
		break;
	}
	q->pending = P_NONE;
}

static void parse_alt(struct parser *ps, struct literals *out);

/* Skip a character class, the cursor on its '['. */
static void skip_class(struct parser *ps)
{
	const char *p = ps->p + 1;

	if (p < ps->end && *p == '^')
		p++;
	if (p < ps->end && *p == ']')
		p++; /* a ']' first is literal */
	while (p < ps->end && *p != ']') {
		if (*p == '\\') {
			p += 2;
			continue;
		}
		if (*p == '[' && p + 1 < ps->end && p[1] == ':') {
			const char *e = p + 2;

			while (e + 1 < ps->end && !(e[0] == ':' && e[1] == ']'))
				e++;
			if (e + 1 >= ps->end) {
				ps->bail = true;
				return;
			}
			p = e + 2;
			continue;
		}
		p++;
	}
	if (p >= ps->end) {
		ps->bail = true;
		return;
	}
	ps->p = p + 1;
}

/* The length of the opening of a lookaround at P ("(?=", "(?!", "(?<=",
 * "(?<!"), else 0. */
static size_t lookaround(const char *p, const char *end)
{
	if (end - p >= 3 && p[1] == '?' && (p[2] == '=' || p[2] == '!'))
		return 3;
	if (end - p >= 4 && p[1] == '?' && p[2] == '<' &&
	    (p[3] == '=' || p[3] == '!'))
		return 4;
	return 0;
}

/* One alternative: items up to '|', ')' or the end. */
static void parse_seq(struct parser *ps, struct literals *out)
{
	struct seq q;

	memset(&q, 0, sizeof(q));
	while (!ps->bail && ps->p < ps->end && *ps->p != '|' &&
	       *ps->p != ')') {
		char c = *ps->p;

		switch (c) {
		case '\\': {
			char e;

			if (ps->p + 1 >= ps->end) {
				ps->bail = true;
				break;
			}
			e = ps->p[1];
			ps->p += 2;
			if (!isalnum((unsigned char)e)) {
				commit(ps, &q);
				q.pending = P_CHAR;
				q.ch = e;
			} else if (strchr("wWsSdDhHvVRX", e)) {
				commit(ps, &q);
				q.pending = P_OTHER;
			} else if (strchr("bBAzZG", e)) {
				commit(ps, &q); /* zero-width */
				flush(ps, &q);
			} else {
				ps->bail = true; /* \x, \p, \1, \Q, \k, ... */
			}
			break;
		}
		case '.':
			commit(ps, &q);
			q.pending = P_OTHER;
			ps->p++;
			break;
		case '[':
			commit(ps, &q);
			skip_class(ps);
			q.pending = P_OTHER;
			break;
		case '(': {
			struct literals g = { 0 };
			size_t look = lookaround(ps->p, ps->end);

			commit(ps, &q);
			if (look) {
				ps->p += look;
			} else if (ps->p + 1 < ps->end && ps->p[1] == '?') {
				if (ps->p + 2 < ps->end && ps->p[2] == ':') {
					ps->p += 3;
				} else {
					ps->bail = true; /* options, names, ... */
					break;
				}
			} else {
				ps->p++;
			}
			if (++ps->depth > 64) {
				ps->bail = true;
				break;
			}
			parse_alt(ps, &g);
			ps->depth--;
			if (ps->bail || ps->p >= ps->end || *ps->p != ')') {
				lits_clear(&g);
				ps->bail = true;
				break;
			}
			ps->p++;
			if (look) {
				/*
				 * A lookaround matches no text: what it
				 * asks of the subject is not required of
				 * it (a negative one's least of all), and
				 * what is around it is not adjacent as far
				 * as we say.  A quantifier after it gives
				 * up (pending none).
				 */
				lits_clear(&g);
				flush(ps, &q);
				break;
			}
			q.pending = P_GROUP;
			q.group = g;
			break;
		}
		case '^':
		case '$':
			commit(ps, &q);
			flush(ps, &q);
			ps->p++;
			break;
		case '*':
		case '?':
		case '+':
			if (q.pending == P_NONE) {
				ps->bail = true;
				break;
			}
			if (c == '+') {
				commit(ps, &q); /* there, maybe repeated */
			} else {
				if (q.pending == P_GROUP)
					lits_clear(&q.group);
				q.pending = P_NONE; /* maybe not there */
			}
			flush(ps, &q); /* what follows is not adjacent */
			ps->p++;
			if (ps->p < ps->end && (*ps->p == '?' || *ps->p == '+'))
				ps->p++; /* lazy, possessive */
			break;
		case '{':
			ps->bail = true; /* a quantifier, or not: not worth it */
			break;
		default:
			commit(ps, &q);
			q.pending = P_CHAR;
			q.ch = c;
			ps->p++;
			break;
		}
	}
	if (!ps->bail) {
		commit(ps, &q);
		flush(ps, &q);
	}
	if (q.pending == P_GROUP)
		lits_clear(&q.group);
	sb_release(&q.run);
	*out = q.best;
}

/*
 * Alternatives up to ')' or the end.  One alternative: what it requires.
 * Several: one group of each one's most selective literals.
 */
static void parse_alt(struct parser *ps, struct literals *out)
{
	struct literals all = { 0 }, first = { 0 };
	bool some_none = false;
	int nalt = 0;

	for (;;) {
		struct literals one;
		uint32_t g;

		parse_seq(ps, &one);
		if (ps->bail) {
			lits_clear(&one);
			break;
		}
		if (nalt++ == 0) {
			first = one; /* (kept whole if it is the only one) */
			memset(&one, 0, sizeof(one));
		}
		g = best_group(nalt == 1 ? &first : &one);
		if (g == UINT32_MAX)
			some_none = true;
		else if (nalt == 1) {
			for (size_t i = 0; i < first.n; i++)
				if (first.group[i] == g)
					lits_push(&all, first.v[i],
						  first.len[i], 0);
		} else {
			for (size_t i = 0; i < one.n; i++)
				if (one.group[i] == g)
					lits_push(&all, one.v[i], one.len[i],
						  0);
		}
		lits_clear(&one);
		if (ps->p < ps->end && *ps->p == '|') {
			ps->p++;
			continue;
		}
		break;
	}
	if (ps->bail || (nalt > 1 && some_none)) {
		lits_clear(&all);
		lits_clear(&first);
	} else if (nalt == 1) {
		lits_clear(&all);
		all = first;
	} else {
		lits_clear(&first);
	}
	*out = all;
}

/* Bytes that mean something in a pattern (']' and '}' too, to be safe). */
static bool meta(char c)
{
	return c && strchr("\\^$.[]|()?*+{}", c);
}

/*
 * A run of plain or escaped-punctuation bytes, from P to END, into OUT;
 * false if anything else is there.
 */
static bool pure_literal(const char *p, const char *end, struct strbuf *out)
{
	sb_reset(out);
	while (p < end) {
		if (*p == '\\') {
			if (p + 1 >= end || isalnum((unsigned char)p[1]))
				return false;
			sb_addch(out, p[1]);
			p += 2;
		} else if (meta(*p)) {
			return false;
		} else {
			sb_addch(out, *p++);
		}
	}
	return out->len > 0;
}

/* Is RE ".*LIT.*" or ".*(LIT|...).*", with these literals? */
static bool exact_form(const char *re, size_t len, const struct literals *l)
{
	const char *p = re + 2, *end = re + len - 2;
	struct strbuf lit = STRBUF_INIT;
	size_t n = 0, bs = 0;
	bool ok = true;

	if (len < 5 || memcmp(re, ".*", 2) || memcmp(end, ".*", 2) ||
	    l->ngroups != 1)
		return false;
	/* The closing ".*" must not be an escaped "\." then "*". */
	for (const char *q = end; q > p && q[-1] == '\\'; q--)
		bs++;
	if (bs % 2)
		return false;
	if (*p == '(') {
		p += p + 2 < end && p[1] == '?' && p[2] == ':' ? 3 : 1;
		if (end[-1] != ')' || p >= end - 1)
			return false;
		end--;
		while (ok && p <= end) {
			const char *bar = p;

			while (bar < end && *bar != '|') {
				if (*bar == '\\')
					bar++;
				bar++;
			}
			if (bar > end)
				bar = end;
			ok = pure_literal(p, bar, &lit) && n < l->n &&
			     lit.len == l->len[n] &&
			     !memcmp(lit.buf, l->v[n], lit.len);
			n++;
			p = bar + 1;
		}
	} else {
		ok = pure_literal(p, end, &lit) && l->n == 1 &&
		     lit.len == l->len[0] && !memcmp(lit.buf, l->v[0], lit.len);
		n = 1;
	}
	sb_release(&lit);
	return ok && n == l->n;
}

bool regex_literals(const char *re, size_t len, size_t min_len,
		    struct literals *out)
{
	struct parser ps = { re, re + len, min_len ? min_len : 1, 0, false };

	memset(out, 0, sizeof(*out));
	parse_alt(&ps, out);
	if (ps.bail || ps.p != ps.end || !out->n) {
		lits_clear(out);
		return false;
	}
	out->exact = exact_form(re, len, out);
	return true;
}

/* ---- Aho-Corasick ---- */

struct acm {
	/* Building: the strings. */
	char **s;
	size_t *slen;
	uint32_t n;
	/* Built: the automaton over byte classes. */
	uint8_t cls[256];
	uint32_t ncls;
	uint32_t nstates;
	uint32_t *delta;    /* nstates * ncls */
	uint32_t *dict;     /* next state down the fail chain with output */
	int32_t *out_head;  /* first own output of a state, or -1 */
	uint32_t *out_id;   /* the outputs: string id ... */
	int32_t *out_next;  /* ... and the next one of the same state */
	uint8_t *has_out;   /* own or through dict */
	bool built;
};

struct acm *acm_new(void)
{
	return xcalloc(1, sizeof(struct acm));
}

uint32_t acm_add(struct acm *a, const char *s, size_t len)
{
	uint32_t id = acm_find(a, s, len);

	/* (A string added before keeps its id.) */
	if (id != UINT32_MAX)
		return id;
	a->s = xreallocarray(a->s, a->n + 1, sizeof(*a->s));
	a->slen = xreallocarray(a->slen, a->n + 1, sizeof(*a->slen));
	a->s[a->n] = xmemdup(s, len);
	a->slen[a->n] = len;
	return a->n++;
}

uint32_t acm_count(const struct acm *a)
{
	return a->n;
}

uint32_t acm_find(const struct acm *a, const char *s, size_t len)
{
	for (uint32_t i = 0; i < a->n; i++)
		if (a->slen[i] == len && !memcmp(a->s[i], s, len))
			return i;
	return UINT32_MAX;
}

size_t acm_words(const struct acm *a)
{
	return (a->n + 63) / 64;
}

void acm_build(struct acm *a)
{
	size_t total = 1;
	uint32_t *fail, *queue, head = 0, tail = 0, nout = 0;

	/* Byte classes: each byte some string has, and the rest. */
	memset(a->cls, 0, sizeof(a->cls));
	a->ncls = 1;
	for (uint32_t i = 0; i < a->n; i++) {
		total += a->slen[i];
		for (size_t k = 0; k < a->slen[i]; k++) {
			unsigned char c = (unsigned char)a->s[i][k];

			if (!a->cls[c])
				a->cls[c] = (uint8_t)a->ncls++;
		}
	}
	/* (A string with all 256 bytes would need 257 classes: then the
	 * last byte shares class 0 with nothing, which cannot happen, as
	 * ncls counts only bytes seen plus one.) */
	a->delta = xmalloc(st_mult(st_mult(total, a->ncls), sizeof(*a->delta)));
	memset(a->delta, 0xff, total * a->ncls * sizeof(*a->delta));
	a->out_head = xmalloc(total * sizeof(*a->out_head));
	memset(a->out_head, 0xff, total * sizeof(*a->out_head));
	a->out_id = xmalloc((a->n ? a->n : 1) * sizeof(*a->out_id));
	a->out_next = xmalloc((a->n ? a->n : 1) * sizeof(*a->out_next));
	a->nstates = 1;

	/* The trie. */
	for (uint32_t i = 0; i < a->n; i++) {
		uint32_t st = 0;

		for (size_t k = 0; k < a->slen[i]; k++) {
			uint32_t *t = &a->delta[st * a->ncls +
						a->cls[(unsigned char)a->s[i][k]]];

			if (*t == UINT32_MAX)
				*t = a->nstates++;
			st = *t;
		}
		a->out_id[nout] = i;
		a->out_next[nout] = a->out_head[st];
		a->out_head[st] = (int32_t)nout++;
	}

	/* Failure links, breadth first, completing the transitions. */
	fail = xcalloc(a->nstates, sizeof(*fail));
	queue = xmalloc(a->nstates * sizeof(*queue));
	a->dict = xcalloc(a->nstates, sizeof(*a->dict));
	a->has_out = xcalloc(a->nstates, 1);
	for (uint32_t c = 0; c < a->ncls; c++) {
		uint32_t *t = &a->delta[c];

		if (*t == UINT32_MAX) {
			*t = 0;
		} else {
			fail[*t] = 0;
			queue[tail++] = *t;
		}
	}
	while (head < tail) {
		uint32_t u = queue[head++];

		for (uint32_t c = 0; c < a->ncls; c++) {
			uint32_t *t = &a->delta[u * a->ncls + c];
			uint32_t via = a->delta[fail[u] * a->ncls + c];

			if (*t == UINT32_MAX) {
				*t = via;
			} else {
				uint32_t v = *t;

				fail[v] = via;
				a->dict[v] = a->out_head[via] >= 0 ? via
								   : a->dict[via];
				queue[tail++] = v;
			}
		}
	}
	for (uint32_t s = 1; s < a->nstates; s++)
		a->has_out[s] = a->out_head[s] >= 0 || a->dict[s] != 0;
	free(fail);
	free(queue);
	a->built = true;
}

uint32_t acm_feed(const struct acm *a, uint32_t st, const char *s,
		  size_t len, uint64_t *found)
{
	const uint32_t *delta = a->delta;
	const uint8_t *cls = a->cls;
	uint32_t ncls = a->ncls;

	for (size_t i = 0; i < len; i++) {
		st = delta[st * ncls + cls[(unsigned char)s[i]]];
		if (a->has_out[st]) {
			for (uint32_t t = st; t; t = a->dict[t])
				for (int32_t o = a->out_head[t]; o >= 0;
				     o = a->out_next[o])
					found[a->out_id[o] / 64] |=
						1ULL << (a->out_id[o] % 64);
		}
	}
	return st;
}

void acm_scan(const struct acm *a, const char *s, size_t len,
	      uint64_t *found)
{
	acm_feed(a, 0, s, len, found);
}

void acm_free(struct acm *a)
{
	if (!a)
		return;
	for (uint32_t i = 0; i < a->n; i++)
		free(a->s[i]);
	FREE_ALL(a->s, a->slen, a->delta, a->dict, a->out_head, a->out_id,
		 a->out_next, a->has_out, a);
}
