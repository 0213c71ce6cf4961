/*
 * Explaining classification: each rule replayed on a subject built whole
 * (policy_rule_test), where the rule that took it matched, where the
 * others failed; and, over many subjects, which rules take anything.
 */
#include "explain.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- where a pattern matched ---- */

/* Is RE[I] escaped (an odd number of backslashes before it, from A)? */
static bool escaped(const char *re, size_t a, size_t i)
{
	size_t n = 0;

	while (i > a && re[i - 1] == '\\') {
		n++;
		i--;
	}
	return n % 2;
}

/*
 * RE, each top-level alternative's text but a leading "^", ".*" and a
 * trailing ".*", "$" in a named group of its own ("dmprofpartK"), the
 * leading ".*" lazy so that the part found is the leftmost:
 * "(?:.*?(?<dmprofpart1>X).*|...)".  False for what cannot be taken
 * apart safely (comments, \Q, verbs, branch resets, NULs); a pattern
 * that refers to its groups by number is caught by the caller, as the
 * rewritten pattern then fails to match.
 */
static bool part_pattern(const char *re, size_t len, struct strbuf *out,
			 size_t *nalt)
{
	struct re_cursor cur;
	size_t a = 0, i;
	bool more;

	if (memchr(re, '\0', len) || memmem(re, len, "\\Q", 2) ||
	    memmem(re, len, "(*", 2) || memmem(re, len, "(?|", 3) ||
	    memmem(re, len, "(?x", 3) || memmem(re, len, "(?-", 3))
		return false;
	*nalt = 0;
	sb_addstr(out, "(?:");
	re_cursor_init(&cur, re, len);
	do {
		size_t s = a, e;
		bool lead = false, trail = false;

		more = re_cursor_next(&cur, &i);
		if (more && (re[i] != '|' || cur.depth))
			continue;
		/* An alternative, RE[a, e). */
		e = more ? i : len;
		if (s < e && re[s] == '^')
			s++;
		if (e - s >= 2 && re[s] == '.' && re[s + 1] == '*') {
			s += 2;
			if (s < e && (re[s] == '?' || re[s] == '+'))
				s++;
			lead = true;
		}
		if (e > s && re[e - 1] == '$' && !escaped(re, s, e - 1))
			e--;
		if (e - s >= 3 && re[e - 1] == '?' && re[e - 2] == '*' &&
		    re[e - 3] == '.' && !escaped(re, s, e - 3)) {
			e -= 3;
			trail = true;
		} else if (e - s >= 2 && re[e - 1] == '*' && re[e - 2] == '.' &&
			   !escaped(re, s, e - 2)) {
			e -= 2;
			trail = true;
		}
		sb_addf(out, "%s%s(?<dmprofpart%zu>%.*s)%s", *nalt ? "|" : "",
			lead ? ".*?" : "", *nalt + 1, (int)(e - s), re + s,
			trail ? ".*" : "");
		++*nalt;
		a = i + 1;
	} while (more);
	sb_addch(out, ')');
	return !cur.in_class && !cur.depth;
}

int explain_span(const struct policy *p, const struct pattern *pat,
		 const char *s, size_t len, size_t *start, size_t *end)
{
	struct strbuf re = STRBUF_INIT, name = STRBUF_INIT;
	pcre2_code *code = NULL;
	pcre2_match_data *md = NULL;
	int kind = SPAN_WHOLE, err;
	PCRE2_SIZE off;
	size_t nalt;

	*start = 0;
	*end = len;
	if (pat->match_all)
		return SPAN_ANY;
	if (!part_pattern(pat->text, pat->len, &re, &nalt))
		goto out;
	code = pcre2_compile((PCRE2_SPTR)re.buf, re.len,
			     PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL,
			     &err, &off, NULL);
	if (!code)
		goto out;
	md = pcre2_match_data_create_from_pattern(code, NULL);
	if (!md)
		die("out of memory");
	/* (A failure here only costs the part: the whole field is shown.) */
	if (pcre2_match(code, (PCRE2_SPTR)s, len, 0, 0, md, p->mctx) < 0)
		goto out;
	for (size_t k = 1; k <= nalt; k++) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		int n;

		sb_reset(&name);
		sb_addf(&name, "dmprofpart%zu", k);
		n = pcre2_substring_number_from_name(code,
						     (PCRE2_SPTR)name.buf);
		if (n <= 0 || ov[2 * n] == PCRE2_UNSET)
			continue;
		*start = ov[2 * n];
		*end = ov[2 * n + 1];
		kind = *end > *start ? SPAN_PART : SPAN_ANY;
		break;
	}
out:
	if (kind == SPAN_WHOLE) {
		*start = 0;
		*end = len;
	}
	pcre2_match_data_free(md);
	pcre2_code_free(code);
	sb_release(&re);
	sb_release(&name);
	return kind;
}

long explain_fail_frame(const struct policy *p, const struct pattern *pat,
			const char *s, size_t len,
			const struct frame_starts *starts)
{
	pcre2_match_data *md;
	long at = -1;

	if (!pat->head || !starts || !starts->n)
		return -1;
	md = pcre2_match_data_create(1, NULL);
	if (!md)
		die("out of memory");
	for (size_t k = 0; k < starts->n; k++) {
		/* (Frame K ends before the blank that starts K + 1.) */
		size_t cut = k + 1 < starts->n ? starts->v[k + 1] - 1 : len;
		int rc = pcre2_match(pat->head, (PCRE2_SPTR)s, cut, 0,
				     PCRE2_PARTIAL_HARD, md, p->mctx);

		if (rc == PCRE2_ERROR_NOMATCH) {
			at = (long)k;
			break;
		}
		if (rc < 0 && rc != PCRE2_ERROR_PARTIAL) {
			at = -2;
			break;
		}
		if (k + 1 == starts->n)
			at = (long)starts->n;
	}
	pcre2_match_data_free(md);
	if (at == -2)
		at = -1; /* (a limit: nothing to tell, the match said why) */
	return at;
}

/* ---- subjects ---- */

void explain_set_init(struct explain_set *set)
{
	memset(set, 0, sizeof(*set));
	hashmap_init(&set->index, 64);
}

void explain_set_free(struct explain_set *set)
{
	free(set->v);
	hashmap_free(&set->index);
	memset(set, 0, sizeof(*set));
}

/* What tells subjects apart, packed for hashing. */
struct subject_key {
	const struct bucket *bucket;
	const char *path;
	uint64_t bucket_id;
	uint32_t kind;
	uint32_t sharing;
	char perms[8];
};

static void key_of(const struct explain_subject *s, struct subject_key *k)
{
	memset(k, 0, sizeof(*k));
	k->bucket = s->bucket;
	k->path = s->path;
	k->bucket_id = s->bucket_id;
	k->kind = s->kind;
	k->sharing = s->sharing;
	memcpy(k->perms, s->perms, sizeof(s->perms));
}

struct set_lookup {
	const struct explain_set *set;
	const struct subject_key *key;
};

static bool subject_eq(const void *item, const void *key)
{
	const struct set_lookup *l = key;
	struct subject_key k;

	key_of(&l->set->v[(uintptr_t)item - 1], &k);
	return !memcmp(&k, l->key, sizeof(k));
}

struct explain_subject *explain_set_find(const struct explain_set *set,
					 const struct explain_subject *key)
{
	struct subject_key k;
	struct set_lookup l = { set, &k };
	void *item;

	key_of(key, &k);
	item = hashmap_get(&set->index, hash_bytes(&k, sizeof(k)), subject_eq,
			   &l);
	return item ? &set->v[(uintptr_t)item - 1] : NULL;
}

struct explain_subject *explain_set_get(struct explain_set *set,
					const struct explain_subject *key)
{
	struct subject_key k;
	struct explain_subject *s = explain_set_find(set, key);

	if (s)
		return s;
	key_of(key, &k);
	GROW(set->v, set->n + 1, set->alloc);
	s = &set->v[set->n++];
	*s = *key;
	s->rule = -1;
	s->bytes = 0;
	s->items = 0;
	hashmap_put(&set->index, hash_bytes(&k, sizeof(k)),
		    (void *)(uintptr_t)set->n);
	return s;
}

static int cmp_subject(const void *x, const void *y)
{
	const struct explain_subject *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->bucket_id != b->bucket_id)
		return a->bucket_id < b->bucket_id ? -1 : 1;
	if (a->path != b->path) {
		int c = strcmp(a->path ? a->path : "", b->path ? b->path : "");

		if (c)
			return c;
	}
	if (a->sharing != b->sharing)
		return a->sharing < b->sharing ? -1 : 1;
	return strcmp(a->perms, b->perms);
}

void explain_set_sort(struct explain_set *set)
{
	struct explain_subject *v = set->v;
	size_t n = set->n;

	qsort(v, n, sizeof(*v), cmp_subject);
	/* (The index, by position, again.) */
	hashmap_free(&set->index);
	hashmap_init(&set->index, n);
	set->v = NULL;
	set->n = set->alloc = 0;
	for (size_t i = 0; i < n; i++) {
		struct explain_subject *s = explain_set_get(set, &v[i]);

		*s = v[i];
	}
	free(v);
}

/* A subject of item IT, without its sums. */
static void subject_of_item(const struct item *it, struct explain_subject *s)
{
	memset(s, 0, sizeof(*s));
	s->kind = it->kind;
	s->bucket = it->bucket;
	s->bucket_id = it->bucket ? it->bucket->id : it->bucket_id;
	if (it->kind != ITEM_MALLOC && it->kind != ITEM_LINE_NO_BUCKET &&
	    it->vma) {
		s->path = it->vma->name;
		memcpy(s->perms, it->vma->perms, sizeof(s->perms));
	}
	s->col = it->col;
	s->rule = -1;
}

/* The subjects of a snapshot's items, and the regions' subjects as
 * they were classified (with their pages' sharing). */
struct collect {
	const struct policy *p;
	struct explain_set *set;
	struct explain_set seen;
};

static void add_region(void *ctx, const struct bucket *b, const struct vma *v,
		       unsigned sharing, int col)
{
	struct explain_subject key;

	memset(&key, 0, sizeof(key));
	key.kind = b ? ITEM_HOOKED : ITEM_UNHOOKED;
	key.bucket = b;
	key.bucket_id = b ? b->id : 0;
	key.path = v->name;
	memcpy(key.perms, v->perms, sizeof(key.perms));
	key.sharing = sharing;
	key.col = col;
	explain_set_get(ctx, &key)->items++;
}

static int add_item(void *ctx, const struct item *it)
{
	static const unsigned sharings[] = { 0, SHARE_PRIVATE, SHARE_GROUP,
					     SHARE_OTHERS };
	struct collect *co = ctx;
	struct explain_subject key, *s;

	subject_of_item(it, &key);
	/*
	 * A run of a region's pages of one column: the pages' sharing is
	 * the one the region was classified with into that column (the
	 * first, should several categories have given that column).  A
	 * policy without shared= rules does not care.
	 */
	if ((it->kind == ITEM_HOOKED || it->kind == ITEM_UNHOOKED) &&
	    co->p->uses_sharing)
		for (size_t i = 0; i < ARRAY_SIZE(sharings); i++) {
			key.sharing = sharings[i];
			s = explain_set_find(&co->seen, &key);
			if (s && s->col == it->col)
				break;
			key.sharing = 0;
		}
	s = explain_set_get(co->set, &key);
	s->bytes = add64(s->bytes, it->bytes, &(bool){ false });
	s->items++;
	return 0;
}

int explain_collect(struct classifier *c, const struct snapshot *snap,
		    struct explain_set *set)
{
	struct collect co = { c->p, set, { NULL, 0, 0, HASHMAP_INIT } };
	int rc;

	explain_set_init(&co.seen);
	c->on_region = add_region;
	c->on_region_ctx = &co.seen;
	rc = aggregate_items(c, snap, NULL, true, add_item, &co);
	c->on_region = NULL;
	c->on_region_ctx = NULL;
	explain_set_free(&co.seen);
	return rc;
}

int explain_collect_subjects(struct classifier *c,
			     const struct snapshot *snap,
			     struct explain_set *set)
{
	int64_t *values = xcalloc(c->p->ncols ? c->p->ncols : 1,
				  sizeof(*values));
	int rc;

	c->on_region = add_region;
	c->on_region_ctx = set;
	rc = aggregate_snapshot(c, snap, NULL, values, NULL, NULL);
	c->on_region = NULL;
	c->on_region_ctx = NULL;
	free(values);
	if (rc < 0)
		return -1;
	for (size_t i = 0; i < snap->nlines; i++) {
		const struct bucket *b = snap->lines[i].bucket;
		struct explain_subject key;
		int col;

		if (!b || b->kind != ALLOC_MALLOC)
			continue;
		col = classify_malloc(c, b);
		if (col < 0)
			return -1;
		memset(&key, 0, sizeof(key));
		key.kind = ITEM_MALLOC;
		key.bucket = b;
		key.bucket_id = b->id;
		key.col = col;
		explain_set_get(set, &key)->items++;
	}
	return 0;
}

/* ---- rules replayed ---- */

void explainer_init(struct explainer *x, struct classifier *c)
{
	memset(x, 0, sizeof(*x));
	x->c = c;
	matcher_of_policy(&x->mt, c->p, false);
	x->verdict = xcalloc(c->p->nrules ? c->p->nrules : 1,
			     sizeof(*x->verdict));
}

void explainer_free(struct explainer *x)
{
	subject_text_release(&x->text);
	sb_release(&x->what);
	free(x->verdict);
	memset(x, 0, sizeof(*x));
}

enum rule_alloc explain_alloc(enum item_kind kind)
{
	switch (kind) {
	case ITEM_MALLOC:
	case ITEM_LINE_NO_BUCKET:
		return RULE_MALLOC;
	case ITEM_HOOKED:
	case ITEM_REGION_NO_BUCKET:
		return RULE_MMAP;
	default:
		return RULE_UNHOOKED;
	}
}

int explain_rules(struct explainer *x, struct explain_subject *s, bool all)
{
	const struct policy *p = x->c->p;
	enum rule_alloc alloc = explain_alloc(s->kind);
	bool region = s->kind != ITEM_MALLOC;

	for (size_t i = 0; i < p->nrules; i++)
		x->verdict[i] = VERDICT_NOT_TRIED;
	s->rule = -1;
	if (s->kind == ITEM_LINE_NO_BUCKET || s->kind == ITEM_REGION_NO_BUCKET)
		return -1;
	memset(&x->vma, 0, sizeof(x->vma));
	x->vma.name = s->path ? s->path : "";
	memcpy(x->vma.perms, s->perms, sizeof(x->vma.perms));
	classify_subject(x->c, s->bucket, region ? &x->vma : NULL, s->sharing,
			 &x->subj, &x->text);
	sb_reset(&x->what);
	if (s->bucket)
		sb_addf(&x->what, "the stack of bucket %" PRIu64, s->bucket_id);
	else
		sb_addf(&x->what, "the mapping of '%s'", x->vma.name);
	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		int failed = 0, rc;

		if (r->alloc != alloc || (s->rule >= 0 && !all))
			continue;
		rc = policy_rule_test(p, &x->mt, r, &x->subj, x->what.buf,
				      &failed);
		if (rc < 0)
			return -2;
		x->verdict[i] = rc ? VERDICT_TAKES : failed;
		if (rc && s->rule < 0)
			s->rule = (int)i;
	}
	if (s->rule < 0 || (int)p->rules[s->rule].column != s->col)
		BUG("rules replayed on %s give rule %d, not column %d",
		    x->what.buf, s->rule, s->col);
	return s->rule;
}

/* ---- which rules take anything ---- */

void coverage_init(struct coverage *cv, const struct policy *p)
{
	memset(cv, 0, sizeof(*cv));
	cv->p = p;
	cv->rules = xcalloc(p->nrules ? p->nrules : 1, sizeof(*cv->rules));
	cv->pairs = xcalloc(st_mult(p->nrules, p->nrules) + 1, 1);
}

void coverage_free(struct coverage *cv)
{
	free(cv->rules);
	free(cv->pairs);
	memset(cv, 0, sizeof(*cv));
}

int coverage_add(struct coverage *cv, struct classifier *c,
		 struct explain_set *set)
{
	size_t n = cv->p->nrules;
	struct explainer x;
	int rc = 0;

	explainer_init(&x, c);
	for (size_t i = 0; i < set->n; i++) {
		struct explain_subject *s = &set->v[i];
		int took;

		if (s->kind == ITEM_LINE_NO_BUCKET ||
		    s->kind == ITEM_REGION_NO_BUCKET)
			continue;
		took = explain_rules(&x, s, true);
		if (took < 0) {
			rc = -1;
			break;
		}
		cv->subjects[explain_alloc(s->kind)]++;
		for (size_t r = 0; r < n; r++) {
			struct rule_use *u = &cv->rules[r];

			if (x.verdict[r] != VERDICT_TAKES)
				continue;
			u->matched++;
			if ((int)r == took) {
				u->taken++;
				continue;
			}
			if (cv->pairs[r * n + (size_t)took])
				continue;
			cv->pairs[r * n + (size_t)took] = 1;
			if (u->nby < ARRAY_SIZE(u->by))
				u->by[u->nby] = took;
			u->nby++;
		}
	}
	explainer_free(&x);
	return rc;
}
