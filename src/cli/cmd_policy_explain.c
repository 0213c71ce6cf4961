/*
 * dmprof policy explain [-p POLICY] [-n N] DUMP WHAT: why a dump's stacks
 * (or regions) went to the components they did, rule by rule.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_policy.h"
#include "explain.h"
#include "numfmt.h"
#include "scan.h"
#include "setup.h"
#include "suggest.h"
#include "tally.h"

struct explain_cmd {
	struct setup *o;
	const char *dump;
	struct explainer x;
	size_t rows;           /* -n */
	struct strbuf sb;
};

/* Patterns and names longer than this are cut in the middle. */
#define SHOWN_MAX 72

/* S[0..LEN) quoted, its middle cut if long. */
static const char *const usage[] = { "DUMP WHAT", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICY,
	OPTION_ROWS("the stacks shown, largest first (default 5)"),
	OPT_END,
};

static void add_quoted(struct strbuf *sb, const char *s, size_t len)
{
	if (len <= SHOWN_MAX)
		sb_addf(sb, "'%.*s'", (int)len, s);
	else
		sb_addf(sb, "'%.*s...%.*s'", SHOWN_MAX / 2 - 2, s,
			SHOWN_MAX / 2 - 1, s + len - (SHOWN_MAX / 2 - 1));
}

static void add_bytes(struct strbuf *sb, int64_t v)
{
	format_bytes(sb, v, false);
}

/* The text of logical frame K of field F of the subject in X. */
static void frame_text_of(const struct explainer *x, int f, size_t k,
			  const char **s, size_t *len)
{
	const struct frame_starts *st = &x->text.starts[f == COND_SOURCE];
	const struct strbuf *field = &x->text.field[f == COND_SOURCE];
	size_t a = st->v[k], e = k + 1 < st->n ? st->v[k + 1] - 1 : field->len;

	*s = field->buf + a;
	*len = e - a;
}

/* "#K NAME". */
static void add_frame(struct strbuf *sb, const struct explainer *x, int f,
		      size_t k)
{
	const char *s;
	size_t len;

	frame_text_of(x, f, k, &s, &len);
	sb_addf(sb, "#%zu %.*s", k, (int)len, s);
}

/* The logical frame of field F that holds byte OFF. */
static size_t frame_at(const struct explainer *x, int f, size_t off)
{
	const struct frame_starts *st = &x->text.starts[f == COND_SOURCE];
	size_t k = 0;

	while (k + 1 < st->n && st->v[k + 1] <= off)
		k++;
	return k;
}

/* "the stack", "the region": what a subject of KIND is. */
static const char *kind_noun(enum item_kind kind)
{
	return kind == ITEM_MALLOC || kind == ITEM_LINE_NO_BUCKET ? "stack"
								  : "region";
}

/* Where and what rule I is: "FILE:LINE: rule NAME malloc stack='...'". */
static void add_rule(struct strbuf *sb, const struct policy *p, int i)
{
	const struct rule *r = &p->rules[i];
	size_t at;

	sb_addf(sb, "%s:%lu: rule %s ", p->path, r->line,
		p->cols[r->column].name);
	at = sb->len + strlen(rule_alloc_name(r->alloc));
	policy_write_rule(sb, r);
	/* (Without the blanks that align a policy file's columns.) */
	if (at < sb->len) {
		size_t n = strspn(sb->buf + at + 1, " ");

		memmove(sb->buf + at + 1, sb->buf + at + 1 + n,
			sb->len - at - n);
		sb->len -= n;
	}
}

/* How condition F of the rule that took the subject in X matched. */
static void say_match(struct explain_cmd *e, const struct rule *r, int f)
{
	const struct policy *p = e->o->policy;
	const struct explainer *x = &e->x;
	const char *s = x->subj.s[f] ? x->subj.s[f] : "";
	size_t len = x->subj.s[f] ? x->subj.len[f] : 0, a, b;
	struct strbuf *sb = &e->sb;
	int kind = explain_span(p, r->cond[f], s, len, &a, &b);

	sb_reset(sb);
	if (f != COND_STACK && f != COND_SOURCE) {
		sb_addf(sb, "%s ", cond_field_name(f));
		add_quoted(sb, s, len);
		sb_addstr(sb, kind == SPAN_ANY ? " (anything matches)"
					       : " matches");
	} else if (kind == SPAN_ANY) {
		sb_addf(sb, "%s: anything matches", cond_field_name(f));
	} else if (!x->text.starts[f == COND_SOURCE].n) {
		sb_addf(sb, "%s: the empty stack matches", cond_field_name(f));
	} else {
		size_t k0 = frame_at(x, f, a), k1 = frame_at(x, f, b - 1);

		sb_addf(sb, "%s matched ", cond_field_name(f));
		if (kind == SPAN_WHOLE)
			sb_addstr(sb, "as a whole, ");
		add_quoted(sb, s + a, b - a);
		sb_addstr(sb, " in ");
		add_frame(sb, x, f, k0);
		if (k1 != k0) {
			sb_addstr(sb, " .. ");
			add_frame(sb, x, f, k1);
		}
	}
	printf("    %s\n", sb->buf);
}

/* Why rule I did not take the subject in X: its first failed condition. */
static void say_failure(struct explain_cmd *e, int i)
{
	const struct policy *p = e->o->policy;
	const struct rule *r = &p->rules[i];
	const struct explainer *x = &e->x;
	struct strbuf *sb = &e->sb;
	int f = x->verdict[i];

	sb_reset(sb);
	sb_addf(sb, "%s:%lu %s: ", p->path, r->line, p->cols[r->column].name);
	if (f == VERDICT_SHARING) {
		sb_addstr(sb, "shared=");
		cmd_policy_add_sharing(sb, r->sharing);
		if (x->subj.sharing) {
			sb_addstr(sb, ", not ");
			cmd_policy_add_sharing(sb, x->subj.sharing);
		} else {
			sb_addstr(sb, ", and the pages' sharing is unknown");
		}
	} else if (f == COND_STACK || f == COND_SOURCE) {
		const struct frame_starts *st = &x->text.starts[f == COND_SOURCE];
		const char *s = x->subj.s[f] ? x->subj.s[f] : "";
		size_t len = x->subj.s[f] ? x->subj.len[f] : 0;
		long k = explain_fail_frame(p, r->cond[f], s, len, st);

		sb_addf(sb, "%s ", cond_field_name(f));
		if (k >= 0 && (size_t)k < st->n) {
			sb_addstr(sb, "fails at ");
			add_frame(sb, x, f, (size_t)k);
		} else if (k >= 0) {
			sb_addstr(sb, "ends before a match could");
		} else {
			sb_addstr(sb, "does not match ");
			add_quoted(sb, r->cond[f]->text, r->cond[f]->len);
		}
	} else {
		sb_addf(sb, "%s ", cond_field_name(f));
		add_quoted(sb, x->subj.s[f] ? x->subj.s[f] : "",
			   x->subj.s[f] ? x->subj.len[f] : 0);
		sb_addstr(sb, " does not match ");
		add_quoted(sb, r->cond[f]->text, r->cond[f]->len);
	}
	printf("    %s\n", sb->buf);
}

/* The first line of a subject: what it is, its bytes, its component. */
static void say_subject(struct explain_cmd *e, const struct explain_subject *s)
{
	const struct policy *p = e->o->policy;
	struct strbuf *sb = &e->sb;

	sb_reset(sb);
	switch (s->kind) {
	case ITEM_MALLOC:
		sb_addf(sb, "bucket %" PRIu64 ", malloc", s->bucket_id);
		break;
	case ITEM_HOOKED:
		sb_addf(sb, "bucket %" PRIu64 ", mmap of %s %s", s->bucket_id,
			s->perms, *s->path ? s->path : "[anonymous]");
		break;
	case ITEM_UNHOOKED:
		sb_addf(sb, "unhooked %s %s", s->perms,
			*s->path ? s->path : "[anonymous]");
		break;
	case ITEM_LINE_NO_BUCKET:
	case ITEM_REGION_NO_BUCKET:
		sb_addf(sb, "bucket %" PRIu64 " (in no .buckets file), %s",
			s->bucket_id,
			s->kind == ITEM_LINE_NO_BUCKET ? "malloc" : "mmap");
		break;
	}
	if (s->items > 1 && s->kind != ITEM_MALLOC &&
	    s->kind != ITEM_LINE_NO_BUCKET) {
		sb_addstr(sb, ", ");
		cmd_policy_add_count(sb, s->items, "region");
	}
	sb_addstr(sb, ", ");
	add_bytes(sb, s->bytes);
	sb_addf(sb, ": %s",
		s->col >= 0 ? p->cols[s->col].name
			    : p->col_no_bucket >= 0 ? "no-bucket"
						    : "in no column");
	printf("%s\n", sb->buf);
}

/* "  stack: A <- B <- ...": the logical frames of field F, as rules see
 * them. */
static void say_frames(struct explain_cmd *e, int f)
{
	const struct frame_starts *st = &e->x.text.starts[f == COND_SOURCE];
	struct strbuf *sb = &e->sb;

	sb_reset(sb);
	for (size_t k = 0; k < st->n; k++) {
		const char *t;
		size_t len;

		frame_text_of(&e->x, f, k, &t, &len);
		sb_addf(sb, "%s%.*s", k ? " <- " : "", (int)len, t);
	}
	printf("  %s: %s\n", cond_field_name(f), st->n ? sb->buf : "(empty)");
}

/* Everything about subject S: how it was classified, and why. */
static int explain_one(struct explain_cmd *e, struct explain_subject *s)
{
	const struct policy *p = e->o->policy;
	struct explainer *x = &e->x;
	struct strbuf *sb = &e->sb;
	enum rule_alloc alloc = explain_alloc(s->kind);
	const struct rule *r;
	size_t before = 0;
	bool any = false;
	int taker;

	say_subject(e, s);
	taker = explain_rules(x, s, false);
	if (taker == -2)
		return -1;
	if (taker < 0) {
		printf("  no rule is tried: no .buckets file says what its "
		       "stack is\n");
		return 0;
	}
	if (s->bucket)
		say_frames(e, COND_STACK);
	if (s->bucket && p->uses[COND_SOURCE])
		say_frames(e, COND_SOURCE);
	if (p->uses_sharing && s->kind != ITEM_MALLOC) {
		sb_reset(sb);
		if (s->sharing)
			cmd_policy_add_sharing(sb, s->sharing);
		else
			sb_addstr(sb, "sharing unknown");
		printf("  pages: %s\n", sb->buf);
	}
	r = &p->rules[taker];
	sb_reset(sb);
	add_rule(sb, p, taker);
	printf("  taken by %s\n", sb->buf);
	for (int f = 0; f < COND_NFIELDS; f++) {
		if (!r->cond[f])
			continue;
		say_match(e, r, f);
		any = true;
	}
	if (r->sharing) {
		sb_reset(sb);
		sb_addstr(sb, "shared=");
		cmd_policy_add_sharing(sb, r->sharing);
		sb_addstr(sb, " holds");
		printf("    %s\n", sb->buf);
		any = true;
	}
	if (!any)
		printf("    no condition: it takes every %s %s the rules "
		       "before it leave\n", rule_alloc_name(alloc),
		       kind_noun(s->kind));
	for (int i = 0; i < taker; i++)
		before += p->rules[i].alloc == alloc;
	if (!before) {
		printf("  no %s rule comes before it\n", rule_alloc_name(alloc));
		return 0;
	}
	if (before == 1)
		printf("  not taken by the %s rule before it:\n",
		       rule_alloc_name(alloc));
	else
		printf("  not taken by the %zu %s rules before it:\n", before,
		       rule_alloc_name(alloc));
	for (int i = 0; i < taker; i++)
		if (p->rules[i].alloc == alloc)
			say_failure(e, i);
	return 0;
}

/* Does a frame of S's stack go by NAME? */
static bool stack_has(struct explain_cmd *e, const struct explain_subject *s,
		      const char *name, struct frame_starts *st)
{
	size_t n = strlen(name);

	if (!s->bucket)
		return false;
	sb_reset(&e->sb);
	stack_field(&e->sb, &e->o->run.model, s->bucket->stack, COND_STACK,
		    st);
	for (size_t k = 0; k < st->n; k++) {
		size_t a = st->v[k];
		size_t b = k + 1 < st->n ? st->v[k + 1] - 1 : e->sb.len;

		if (b - a == n && !memcmp(e->sb.buf + a, name, n))
			return true;
	}
	return false;
}

/* The names a mistyped WHAT may have meant: components, functions. */
static void say_unknown(struct explain_cmd *e, struct explain_set *set,
			const char *what)
{
	const struct policy *p = e->o->policy;
	struct tally names;
	struct frame_starts st = { NULL, 0, 0 };
	const char **cands, *near[3];
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0, k;

	tally_init(&names);
	for (size_t c = 0; c < p->ncols; c++)
		if (column_sums_items(p, (int)c))
			tally_get(&names, p->cols[c].name,
				  strlen(p->cols[c].name));
	for (size_t i = 0; i < set->n; i++) {
		const struct explain_subject *s = &set->v[i];

		if (!s->bucket)
			continue;
		sb_reset(&e->sb);
		stack_field(&e->sb, &e->o->run.model, s->bucket->stack,
			    COND_STACK, &st);
		for (size_t f = 0; f < st.n; f++) {
			size_t a = st.v[f];
			size_t b = f + 1 < st.n ? st.v[f + 1] - 1 : e->sb.len;

			tally_get(&names, e->sb.buf + a, b - a);
		}
	}
	cands = xcalloc(names.n + 1, sizeof(*cands));
	for (size_t i = 0; i < names.n; i++)
		cands[n++] = names.v[i]->key;
	k = suggest(what, cands, n, near, ARRAY_SIZE(near));
	for (size_t i = 0; i < k; i++)
		sb_addf(&sb, "%s'%s'", !i ? "; did you mean "
				       : i + 1 < k ? ", " : " or ",
			near[i]);
	error("no component, function or bucket '%s' in %s under policy "
	      "'%s'%s%s", what, e->dump, p->label, sb_str(&sb), k ? "?" : "");
	sb_release(&sb);
	free(cands);
	free(st.v);
	tally_free(&names);
}

/* What WHAT names. */
enum what_kind {
	WHAT_COMPONENT,
	WHAT_BUCKET,
	WHAT_FUNCTION,
};

/*
 * The subjects WHAT names, marked in KEEP (which has room for one more
 * than SET: a malloc bucket without bytes in the dump is added); returns
 * how many, or -1 after an error.  *KIND says what WHAT is, and *COL
 * the component it names.
 */
static long select_subjects(struct explain_cmd *e, struct explain_set *set,
			    const char *what, bool *keep,
			    enum what_kind *kind, int *col)
{
	const struct policy *p = e->o->policy;
	struct frame_starts st = { NULL, 0, 0 };
	uint64_t id;
	long n = 0;

	*col = -1;
	*kind = WHAT_COMPONENT;
	if (policy_column(p, what) >= 0) {
		*col = setup_component(p, what);
		if (*col < 0)
			return -1;
		for (size_t i = 0; i < set->n; i++) {
			const struct explain_subject *s = &set->v[i];

			keep[i] = column_counts(p, *col, s->kind, s->col);
			n += keep[i];
		}
		return n;
	}
	*kind = WHAT_BUCKET;
	if (word_u64(what, strlen(what), &id) == NUM_OK) {
		const struct bucket *b =
			bucket_set_find(&e->o->run.model.buckets, id);

		for (size_t i = 0; i < set->n; i++) {
			const struct explain_subject *s = &set->v[i];

			keep[i] = s->kind != ITEM_UNHOOKED &&
				  s->bucket_id == id;
			n += keep[i];
		}
		if (!n && b && b->kind == ALLOC_MALLOC) {
			/* (Its stack decides, whether it holds bytes now or
			 * not.) */
			struct explain_subject key;
			int c = classify_malloc(&e->o->cls, b);

			if (c < 0)
				return -1;
			memset(&key, 0, sizeof(key));
			key.kind = ITEM_MALLOC;
			key.bucket = b;
			key.bucket_id = id;
			key.col = c;
			explain_set_get(set, &key);
			keep[set->n - 1] = true;
			return 1;
		}
		if (!n && b)
			return error("bucket %s, an mmap bucket, has no region "
				     "in %s", what, e->dump);
		if (!n)
			return error("no bucket %s in %s", what, e->dump);
		return n;
	}
	*kind = WHAT_FUNCTION;
	for (size_t i = 0; i < set->n; i++) {
		keep[i] = stack_has(e, &set->v[i], what, &st);
		n += keep[i];
	}
	free(st.v);
	if (!n) {
		say_unknown(e, set, what);
		return -1;
	}
	return n;
}

/* For component COL: the rules that fed it, in the order they are
 * tried (those that assign it, whether they fed it or not). */
static int say_feeders(struct explain_cmd *e, struct explain_set *set,
		       const bool *keep, int col)
{
	const struct policy *p = e->o->policy;
	int64_t *bytes = xcalloc(p->nrules + 1, sizeof(*bytes));
	size_t *count = xcalloc(p->nrules + 1, sizeof(*count));
	struct strbuf *sb = &e->sb;
	int rc = 0;

	for (size_t i = 0; i < set->n; i++) {
		struct explain_subject *s = &set->v[i];
		int r;

		if (!keep[i])
			continue;
		r = explain_rules(&e->x, s, false);
		if (r == -2) {
			rc = -1;
			goto out;
		}
		/* (No rule: a bucket in no .buckets file, at nrules.) */
		r = r < 0 ? (int)p->nrules : r;
		bytes[r] = add64(bytes[r], s->bytes, &(bool){ false });
		count[r]++;
	}
	printf("  fed by:\n");
	for (size_t r = 0; r <= p->nrules; r++) {
		const struct rule *rule = r < p->nrules ? &p->rules[r] : NULL;

		if (!count[r] && !(rule && (int)rule->column == col))
			continue;
		sb_reset(sb);
		if (rule)
			sb_addf(sb, "%s:%lu: rule %s %s", p->path, rule->line,
				p->cols[rule->column].name,
				rule_alloc_name(rule->alloc));
		else
			sb_addstr(sb, "no rule (buckets in no .buckets file)");
		sb_addstr(sb, ": ");
		if (!count[r]) {
			sb_addstr(sb, "nothing");
		} else {
			add_bytes(sb, bytes[r]);
			sb_addstr(sb, " in ");
			cmd_policy_add_count(sb, count[r],
				  rule && rule->alloc == RULE_UNHOOKED
					  ? "region"
					  : "stack");
		}
		printf("    %s\n", sb->buf);
	}
out:
	free(bytes);
	free(count);
	return rc;
}

/* "4 stacks", "2 regions", "3 stacks and 1 region": the kept ones. */
static void add_kept(struct strbuf *sb, const struct explain_set *set,
		     const bool *keep)
{
	size_t stacks = 0, regions = 0;

	for (size_t i = 0; i < set->n; i++) {
		if (!keep[i])
			continue;
		if (set->v[i].kind == ITEM_UNHOOKED)
			regions++;
		else
			stacks++;
	}
	if (stacks || !regions)
		cmd_policy_add_count(sb, stacks, "stack");
	if (stacks && regions)
		sb_addstr(sb, " and ");
	if (regions)
		cmd_policy_add_count(sb, regions, "region");
}

static int explain(struct cmd_args *a)
{
	struct explain_cmd e;
	struct setup o;
	struct snapshot snap;
	struct explain_set set;
	const char *policy, *what;
	bool *keep = NULL;
	int64_t total = 0, rest = 0;
	size_t shown = 0, more = 0;
	enum what_kind kind;
	int status, col;
	long n;

	memset(&e, 0, sizeof(e));
	if ((status = setup_one_policy(a, &policy)))
		return status;
	e.rows = setup_rows(a, 5);
	if (a->argc != 2)
		return cmd_usage_error(a, a->argc < 2 ? "expected DUMP WHAT"
						      : "too many operands");
	e.dump = a->argv[0];
	what = a->argv[1];
	if (setup_dump(&o, &snap, a, e.dump, policy) < 0)
		return 1;
	e.o = &o;
	explainer_init(&e.x, &o.cls);
	explain_set_init(&set);
	snapshot_warn_unknown_buckets(&snap, "counted as no-bucket");
	if (explain_collect(&o.cls, &snap, &set) < 0) {
		status = 1;
		goto out;
	}
	explain_set_sort(&set);
	/* (One more: a bucket with no bytes in the dump may be added.) */
	keep = xcalloc(set.n + 1, sizeof(*keep));
	if ((n = select_subjects(&e, &set, what, keep, &kind, &col)) < 0) {
		status = 1;
		goto out;
	}
	for (size_t i = 0; i < set.n; i++)
		if (keep[i])
			total = add64(total, set.v[i].bytes, &(bool){ false });
	if (kind != WHAT_BUCKET) {
		sb_reset(&e.sb);
		sb_addf(&e.sb, "%s %s: ",
			kind == WHAT_COMPONENT ? "component" : "function",
			what);
		add_bytes(&e.sb, total);
		sb_addstr(&e.sb, " in ");
		add_kept(&e.sb, &set, keep);
		printf("%s of %s, policy %s\n", e.sb.buf, e.dump,
		       o.policy->label);
		if (kind == WHAT_COMPONENT && !n)
			printf("  nothing of this dump is in it\n");
		else if (kind == WHAT_COMPONENT &&
			 say_feeders(&e, &set, keep, col) < 0) {
			status = 1;
			goto out;
		}
	}
	for (size_t i = 0; i < set.n; i++) {
		if (!keep[i])
			continue;
		if (shown == e.rows) {
			more++;
			rest = add64(rest, set.v[i].bytes, &(bool){ false });
			continue;
		}
		if (kind != WHAT_BUCKET || shown)
			printf("\n");
		if (explain_one(&e, &set.v[i]) < 0) {
			status = 1;
			goto out;
		}
		shown++;
	}
	if (more) {
		sb_reset(&e.sb);
		add_bytes(&e.sb, rest);
		printf("\n... %zu more, %s (-n shows more)\n", more, e.sb.buf);
	}
out:
	free(keep);
	sb_release(&e.sb);
	explainer_free(&e.x);
	explain_set_free(&set);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

const struct cmd_entry cmd_policy_explain = { .name = "explain",
	.run = explain, .flags = CMD_READS_DUMPS, .usage = usage,
	.options = options,
	.summary = "say why a dump's stacks went where they did" };
