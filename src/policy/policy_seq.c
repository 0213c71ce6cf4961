/*
 * Patterns matched frame by frame: ".*P1.*P2 ... .*Pk.*" where no piece
 * can match a space, the separator of a joined stack.  Each match of a
 * piece then lies inside one frame's text, so the whole pattern holds iff
 * the frames, in order, hold P1 to Pk; a caller keeps each frame's answer
 * and never joins the stack (l2's ".*(WTF::|WebCore::).*v8::.*").
 */
#include "policy_load.h"

#include <ctype.h>
#include <string.h>

#include "literals.h"
#include "util.h"

/* More pieces than this: matched as a whole, as before. */
#define SEQ_MAX 8

/*
 * Can the piece RE[0..LEN) match no string with a space in it, and see
 * nothing outside its match?  Conservative: any construct not known to
 * keep both (".", "\s", a negated class without a space, lookarounds,
 * anchors, options, backreferences, possessive repeats) says no.
 */
static bool piece_ok(const char *re, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = re[i];

		switch (c) {
		case ' ':
		case '.':
		case '^':
		case '$':
			return false;
		case '\\':
			if (++i == len)
				return false;
			c = re[i];
			/* \d \w \S, or an escaped punctuation mark. */
			if (isalnum((unsigned char)c))
				return c == 'd' || c == 'w' || c == 'S';
			if (c == ' ')
				return false;
			break;
		case '(':
			if (i + 1 < len && re[i + 1] == '?') {
				if (i + 2 >= len || re[i + 2] != ':')
					return false;
				i += 2;
			}
			break;
		case '*':
		case '+':
		case '?':
		case '}':
			if (i + 1 < len && re[i + 1] == '+')
				return false; /* possessive */
			break;
		case '[': {
			bool negated = false, space = false;
			int prev = -1;
			size_t start;

			if (i + 1 < len && re[i + 1] == '^') {
				negated = true;
				i++;
			}
			start = i + 1;
			for (i++; i < len && (re[i] != ']' || i == start);
			     i++) {
				int ch = (unsigned char)re[i], end;

				if (ch == '[')
					return false; /* [:posix:] */
				if (ch == '\\') {
					if (++i == len)
						return false;
					ch = (unsigned char)re[i];
					if (isalnum(ch)) {
						if (ch != 'd' && ch != 'w')
							return false;
						prev = -1;
						continue;
					}
				} else if (ch == '-' && prev >= 0 &&
					   i + 1 < len && re[i + 1] != ']') {
					/* A range: over the space? */
					end = (unsigned char)re[++i];
					if (end == '\\') {
						if (++i == len ||
						    isalnum((unsigned char)re[i]))
							return false;
						end = (unsigned char)re[i];
					}
					if (prev <= ' ' && end >= ' ')
						space = true;
					prev = -1;
					continue;
				}
				if (ch == ' ')
					space = true;
				prev = ch;
			}
			if (i == len)
				return false;
			/* (A negated class must name the space.) */
			if (negated != space)
				return false;
			break;
		}
		default:
			if ((unsigned char)c < '!' || (unsigned char)c > '~')
				return false; /* (a space by another name) */
		}
	}
	return true;
}

/*
 * Split RE into its pieces between top-level ".*": at most SEQ_MAX, each
 * a piece_ok one, RE beginning and ending with ".*".  Returns how many,
 * 0 if RE is not of that form.
 */
static size_t split_pieces(const char *re, size_t len, size_t at[SEQ_MAX],
			   size_t plen[SEQ_MAX])
{
	size_t n = 0, from = 0;
	int depth = 0;
	bool in_class = false;

	if (len < 4 || memchr(re, '\0', len) || memmem(re, len, "\\Q", 2) ||
	    memmem(re, len, "(*", 2) || memcmp(re, ".*", 2))
		return 0;
	for (size_t i = 0; i <= len; i++) {
		bool dotstar = i + 1 < len && re[i] == '.' && re[i + 1] == '*';

		if (i < len && re[i] == '\\') {
			i++;
			continue;
		}
		if (in_class) {
			if (i < len && re[i] == ']')
				in_class = false;
			continue;
		}
		if (i < len && re[i] == '[') {
			in_class = true;
			if (i + 1 < len && re[i + 1] == '^')
				i++;
			if (i + 1 < len && re[i + 1] == ']')
				i++;
			continue;
		}
		if (i < len && re[i] == '(')
			depth++;
		if (i < len && re[i] == ')')
			depth--;
		if (i < len && re[i] == '|' && depth == 0)
			return 0;
		if (i < len && (!dotstar || depth))
			continue;
		/* A top-level ".*" (or the end): a piece ends here. */
		if (i == len && i > from)
			return 0; /* not ending in ".*" */
		if (i > from) {
			if (n == SEQ_MAX || !piece_ok(re + from, i - from))
				return 0;
			at[n] = from;
			plen[n++] = i - from;
		}
		if (i == len)
			break;
		i += 2; /* past ".*" and a lazy "?" */
		if (i < len && re[i] == '+')
			return 0;
		if (i < len && re[i] == '?')
			i++;
		from = i--;
	}
	return depth || in_class ? 0 : n;
}

static void seq_free(struct seq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < (size_t)q->k * q->k; i++)
		pcre2_code_free(q->run[i]);
	for (size_t i = 0; q->piece && i < q->k; i++)
		FREE_ALL(q->piece[i].lits, q->piece[i].group);
	FREE_ALL(q->run, q->piece, q);
}

/*
 * Piece PC's literals (RE[0..LEN)) in automaton A, as struct seq says:
 * those of its groups whose every literal A has (requiring fewer groups
 * is always safe); exact only if all are.
 */
static void piece_literals(struct seq_piece *pc, const struct acm *a,
			   const char *re, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	struct literals l;
	uint64_t whole = 0;

	memset(pc, 0, sizeof(*pc));
	sb_addf(&sb, ".*%.*s.*", (int)len, re);
	if (!a || !regex_literals(sb.buf, sb.len, 3, &l)) {
		sb_release(&sb);
		return;
	}
	sb_release(&sb);
	pc->lits = xcalloc(l.n ? l.n : 1, sizeof(*pc->lits));
	pc->group = xcalloc(l.n ? l.n : 1, sizeof(*pc->group));
	/* (Groups past 64: left out.) */
	for (uint32_t g = 0; g < l.ngroups && g < 64; g++) {
		uint32_t from = pc->nlits;
		bool all = true;

		for (size_t k = 0; k < l.n && all; k++) {
			uint32_t id;

			if (l.group[k] != g)
				continue;
			id = acm_find(a, l.v[k], l.len[k]);
			all = id != UINT32_MAX;
			pc->lits[pc->nlits] = id;
			pc->group[pc->nlits++] = (uint8_t)pc->ngroups;
		}
		if (!all || pc->nlits == from) {
			pc->nlits = from;
			continue;
		}
		pc->ngroups++;
		whole |= 1ULL << g;
	}
	pc->exact = l.exact && l.ngroups == 1 && whole == 1;
	literals_free(&l);
}

/* Does FOUND hold one literal of each of PC's groups?  -1: PC has
 * none to say. */
static int piece_there(const struct seq_piece *pc, const uint64_t *found)
{
	if (!pc->ngroups)
		return -1;
	return lits_held(pc->lits, pc->group, pc->nlits, pc->ngroups, found);
}

int pattern_seq_literals(const struct pattern *pat, uint32_t j,
			 const uint64_t *found)
{
	const struct seq *q = pat->seq;
	int there = piece_there(&q->piece[j], found);

	if (there <= 0)
		return there < 0 ? -1 : (int)j;
	/* Piece J is there: if holding one is matching, and the next one
	 * is not there (or there is none), one more. */
	if (!q->piece[j].exact)
		return -1;
	if (j + 1 == q->k)
		return (int)q->k;
	return piece_there(&q->piece[j + 1], found) == 0 ? (int)j + 1 : -1;
}

/* "Pj+1.*...Pm" for every j < m: what a frame holds from state j. */
static struct seq *seq_compile(const char *re, size_t len,
				const struct acm *a)
{
	size_t at[SEQ_MAX], plen[SEQ_MAX];
	size_t k = split_pieces(re, len, at, plen);
	struct seq *q;

	if (!k)
		return NULL;
	q = xcalloc(1, sizeof(*q));
	q->k = (uint32_t)k;
	q->run = xcalloc(k * k, sizeof(*q->run));
	q->piece = xcalloc(k, sizeof(*q->piece));
	for (size_t j = 0; j < k; j++)
		piece_literals(&q->piece[j], a, re + at[j], plen[j]);
	for (size_t j = 0; j < k; j++)
		for (size_t m = j + 1; m <= k; m++) {
			struct strbuf sb = STRBUF_INIT;
			pcre2_code *code;
			PCRE2_SIZE off;
			int err;

			for (size_t i = j; i < m; i++)
				sb_addf(&sb, "%s(?:%.*s)", i > j ? ".*" : "",
					(int)plen[i], re + at[i]);
			code = pcre2_compile((PCRE2_SPTR)sb.buf, sb.len,
					     PCRE2_DOTALL, &err, &off, NULL);
			sb_release(&sb);
			if (!code) {
				/* (A piece that only compiles in context.) */
				seq_free(q);
				return NULL;
			}
			pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
			q->run[j * k + m - 1] = code;
		}
	return q;
}

void policy_build_seqs(struct policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		for (int f = 0; f < COND_NFIELDS; f++) {
			struct pattern *pat = p->rules[i].cond[f];

			/* (Where the prefilter decides, it is enough.) */
			if (!pat || pat->match_all || pat->head ||
			    (pat->nlits && pat->exact) ||
			    (f != COND_STACK && f != COND_SOURCE))
				continue;
			pat->seq = seq_compile(pat->text, pat->len,
					       p->acm[f]);
			if (pat->seq)
				pat->seq->id = p->nseq++;
		}
}

void pattern_seq_free(struct pattern *pat)
{
	seq_free(pat->seq);
}

int pattern_seq_step(const struct policy *p, struct matcher *mt,
		     const struct pattern *pat, uint32_t j, const char *s,
		     size_t len, const char *what, const struct subject *subj)
{
	const struct seq *q = pat->seq;
	uint32_t m;

	for (m = j; m < q->k; m++) {
		int rc = pcre2_match(q->run[j * q->k + m], (PCRE2_SPTR)s, len,
				     0, 0, mt->md, mt->mctx);

		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return pattern_failed(p, mt, pat, rc, len, what, subj);
	}
	return (int)m;
}
