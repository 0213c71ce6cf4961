/* Explaining classification: where patterns matched and failed, rules
 * replayed on a subject, and which rules take anything. */
#include <criterion/criterion.h>
#include <string.h>

#include "explain.h"
#include "helpers.h"
#include "model.h"
#include "util.h"

#define HEAD "dmprof-policy 1\n"
#define CATCH "rule m mmap\nrule u unhooked\n"

static struct policy *pol;

static void teardown(void)
{
	policy_free(pol);
	pol = NULL;
}

TestSuite(explain, .fini = teardown);

/* A policy whose first rule's stack pattern is PATTERN. */
static const struct pattern *pattern(const char *re)
{
	struct strbuf sb = STRBUF_INIT;

	policy_free(pol);
	sb_addf(&sb, HEAD "columns a b m u\nrule a malloc stack='%s'\n"
		     "rule b malloc\n" CATCH, re);
	pol = policy_parse(sb.buf, sb.len, "t.policy", NULL);
	sb_release(&sb);
	cr_assert_not_null(pol, "%s", re);
	return pol->rules[0].cond[COND_STACK];
}

/* The part PATTERN matched of S, as text; its kind in *KIND. */
static char *part(const char *re, const char *s, int *kind)
{
	const struct pattern *pat = pattern(re);
	size_t a, b;

	*kind = explain_span(pol, pat, s, strlen(s), &a, &b);
	cr_assert_leq(a, b);
	cr_assert_leq(b, strlen(s));
	return xmemdup(s + a, b - a);
}

#define ASSERT_PART(re, s, want_kind, want)                                  \
	do {                                                                 \
		int k_;                                                      \
		char *p_ = part(re, s, &k_);                                 \
		cr_assert_eq(k_, want_kind, "%s on '%s': kind %d", re, s,   \
			     k_);                                            \
		cr_assert_str_eq(p_, want, "%s on '%s'", re, s);            \
		free(p_);                                                    \
	} while (0)

Test(explain, the_part_a_pattern_matched)
{
	/* Across frames: what lies between the leading and trailing .*. */
	ASSERT_PART(".*Cache::Insert Server::.*",
		    "std::string Cache::Insert Server::Run main", SPAN_PART,
		    "Cache::Insert Server::");
	/* The leftmost part: the innermost frame. */
	ASSERT_PART(".*(Foo|Bar).*", "x Bar y Foo z", SPAN_PART, "Bar");
	/* Anchored at the allocation site, by top-level alternative. */
	ASSERT_PART("(?:operator new )?std::basic_string.*|string body .*",
		    "operator new std::basic_string::_M_create main",
		    SPAN_PART, "operator new std::basic_string");
	ASSERT_PART("(?:operator new )?std::basic_string.*|string body .*",
		    "string body arena-0", SPAN_PART, "string body ");
	/* Anchors go too; an escaped dot and a dot in a class stay. */
	ASSERT_PART("^.*x$", "a x", SPAN_PART, "x");
	ASSERT_PART("foo\\.*", "foo..", SPAN_PART, "foo..");
	ASSERT_PART("[.]*", "..", SPAN_PART, "..");
	ASSERT_PART("(a|b).*", "b c", SPAN_PART, "b");
	/* Nothing of its own: any stack. */
	ASSERT_PART(".*", "a b", SPAN_ANY, "a b");
	ASSERT_PART("(?:x )?.*", "a b", SPAN_ANY, "");
	/* What cannot be taken apart shows as a whole. */
	ASSERT_PART("\\Qa.*\\E.*", "a.* b", SPAN_WHOLE, "a.* b");
	ASSERT_PART("(a)\\1.*", "aa b", SPAN_WHOLE, "aa b");
}

Test(explain, a_regex_read_for_its_structure)
{
	/* Escapes and classes pass over; the top-level '|' is at 14. */
	static const char re[] = "a\\(b[)|]c(d|e)|[]|]f";
	struct re_cursor c;
	size_t at, top = 0, n = 0;

	re_cursor_init(&c, re, strlen(re));
	while (re_cursor_next(&c, &at)) {
		n++;
		if (re[at] == '|' && !c.depth)
			top = at;
		if (re[at] == '(' || re[at] == ')')
			cr_assert_eq(c.depth, 0, "at %zu", at);
		if (re[at] == 'd')
			cr_assert_eq(c.depth, 1);
	}
	cr_assert_eq(top, 14);
	cr_assert_not(c.in_class);
	cr_assert_eq(c.depth, 0);
	/* a b c ( d | e ) | f */
	cr_assert_eq(n, 10);
}

static struct frame_starts starts_of(const char *s)
{
	struct frame_starts st = { NULL, 0, 0 };

	/* (One-word frames.) */
	for (size_t i = 0; s[i]; i++)
		if (!i || s[i - 1] == ' ') {
			GROW(st.v, st.n + 1, st.alloc);
			st.v[st.n++] = i;
		}
	return st;
}

static long fails_at(const char *re, const char *s)
{
	const struct pattern *pat = pattern(re);
	struct frame_starts st = starts_of(s);
	long k = explain_fail_frame(pol, pat, s, strlen(s), &st);

	free(st.v);
	return k;
}

Test(explain, where_a_pattern_fails)
{
	/* "new" is what the pattern allows first; "Foo" is not. */
	cr_assert_eq(fails_at("(?:new )?std::string.*", "new Foo main"), 1);
	cr_assert_eq(fails_at("(?:new )?std::string.*", "Foo main"), 0);
	cr_assert_eq(fails_at("malloc Py.*", "malloc Foo"), 1);
	/* It could match a longer stack. */
	cr_assert_eq(fails_at("a b c", "a b"), 2);
	/* Anywhere: no frame tells. */
	cr_assert_eq(fails_at(".*Foo.*", "a b"), -1);
}

static struct policy *parse(const char *text)
{
	struct policy *p = policy_parse(text, strlen(text), "t.policy", NULL);

	cr_assert_not_null(p);
	return p;
}

Test(explain, a_rule_tested_alone_says_what_failed)
{
	struct matcher mt;
	struct subject s;
	int failed = 99;

	pol = parse(HEAD "columns a b m u\n"
			 "rule a malloc stack='.*X.*' type='T'\n"
			 "rule b malloc\n"
			 "rule m mmap path='/x' shared=private\n" CATCH);
	matcher_of_policy(&mt, pol, false);
	memset(&s, 0, sizeof(s));
	s.s[COND_STACK] = "a X b";
	s.len[COND_STACK] = 5;
	s.s[COND_TYPE] = "U";
	s.len[COND_TYPE] = 1;
	cr_assert_eq(policy_rule_test(pol, &mt, &pol->rules[0], &s, "t",
				      &failed), 0);
	cr_assert_eq(failed, COND_TYPE);
	s.s[COND_TYPE] = "T";
	cr_assert_eq(policy_rule_test(pol, &mt, &pol->rules[0], &s, "t",
				      &failed), 1);
	/* A missing field is the empty string. */
	s.s[COND_STACK] = NULL;
	cr_assert_eq(policy_rule_test(pol, &mt, &pol->rules[0], &s, "t",
				      &failed), 0);
	cr_assert_eq(failed, COND_STACK);
	/* shared= first, whatever the patterns. */
	s.s[COND_PATH] = "/y";
	s.len[COND_PATH] = 2;
	cr_assert_eq(policy_rule_test(pol, &mt, &pol->rules[2], &s, "t",
				      &failed), 0);
	cr_assert_eq(failed, -1);
	s.sharing = SHARE_PRIVATE;
	cr_assert_eq(policy_rule_test(pol, &mt, &pol->rules[2], &s, "t",
				      &failed), 0);
	cr_assert_eq(failed, COND_PATH);
	/* The catch-all's, and the rules an earlier one covers. */
	cr_assert(rule_is_catch_all(&pol->rules[1]));
	cr_assert_not(rule_is_catch_all(&pol->rules[0]));
	cr_assert_eq(policy_rule_shadowed_by(pol, 1), -1);
}

Test(explain, rules_shadowed_whatever_the_memory)
{
	pol = parse(HEAD "columns a b c d e m u\n"
			 "rule a malloc stack='.*X.*'\n"
			 "rule b malloc stack='.*X.*' type='T'\n"
			 "rule c malloc stack='.*Y.*'\n"
			 "rule d malloc type='T'\n"
			 "rule e malloc\n" CATCH);
	/* b's conditions hold a's; c's and d's do not. */
	cr_assert_eq(policy_rule_shadowed_by(pol, 1), 0);
	cr_assert_eq(policy_rule_shadowed_by(pol, 2), -1);
	cr_assert_eq(policy_rule_shadowed_by(pol, 3), -1);
	cr_assert_eq(policy_rule_shadowed_by(pol, 5), -1);
}

/*
 * Buckets of one frame each, named: 0 "Cache::Insert", 1 "Py_Alloc",
 * 2 "Cache::Lookup".  Rules: a .*Cache::.*, b Cache::Insert (shadowed),
 * c Perl_ (dead), d the rest.
 */
Test(explain, rules_replayed_and_counted)
{
	static const char *const names[] = { "Cache::Insert", "Py_Alloc",
					     "Cache::Lookup" };
	struct model m;
	struct classifier c;
	struct explain_set set;
	struct explainer x;
	struct coverage cv;

	pol = parse(HEAD "columns a b c d m u\n"
			 "rule a malloc stack='.*Cache::.*'\n"
			 "rule b malloc stack='Cache::Insert'\n"
			 "rule c malloc stack='Perl_.*'\n"
			 "rule d malloc\n" CATCH);
	model_init(&m);
	classifier_init(&c, pol, &m);
	explain_set_init(&set);
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t addr = 0x1000 + i;
		struct bucket *b = model_intern_bucket(&m, ALLOC_MALLOC, &addr,
						       1, "t", 1);
		struct explain_subject key;

		cr_assert_not_null(b);
		m.frames.v[b->stack->frames[0]]->func = names[i];
		memset(&key, 0, sizeof(key));
		key.kind = ITEM_MALLOC;
		key.bucket = b;
		key.bucket_id = b->id;
		key.col = classify_malloc(&c, b);
		explain_set_get(&set, &key)->bytes = 10 * (int64_t)(i + 1);
	}
	cr_assert_eq(set.n, 3);
	/* The same subject is found, not added. */
	cr_assert_eq(explain_set_get(&set, &set.v[1]), &set.v[1]);
	explain_set_sort(&set);
	cr_assert_eq(set.v[0].bytes, 30);

	explainer_init(&x, &c);
	/* Py_Alloc: a fails on the stack, b and c too, d takes it. */
	cr_assert_eq(explain_rules(&x, &set.v[1], false), 3);
	cr_assert_eq(x.verdict[0], COND_STACK);
	cr_assert_eq(x.verdict[2], COND_STACK);
	cr_assert_eq(x.verdict[3], VERDICT_TAKES);
	cr_assert_eq(x.verdict[4], VERDICT_NOT_TRIED); /* an mmap rule */
	cr_assert_str_eq(x.subj.s[COND_STACK], "Py_Alloc");
	/* Cache::Insert: a takes it; with ALL, b matches too. */
	cr_assert_eq(explain_rules(&x, &set.v[2], false), 0);
	cr_assert_eq(x.verdict[1], VERDICT_NOT_TRIED);
	cr_assert_eq(explain_rules(&x, &set.v[2], true), 0);
	cr_assert_eq(x.verdict[1], VERDICT_TAKES);
	explainer_free(&x);

	coverage_init(&cv, pol);
	cr_assert_eq(coverage_add(&cv, &c, &set), 0);
	cr_assert_eq(cv.subjects[RULE_MALLOC], 3);
	cr_assert_eq(cv.rules[0].taken, 2);
	cr_assert_eq(cv.rules[1].matched, 1);
	cr_assert_eq(cv.rules[1].taken, 0);
	cr_assert_eq(cv.rules[1].nby, 1);
	cr_assert_eq(cv.rules[1].by[0], 0);
	cr_assert_eq(cv.rules[2].matched, 0);
	cr_assert_eq(cv.rules[3].taken, 1);
	coverage_free(&cv);

	explain_set_free(&set);
	classifier_free(&c);
	model_free(&m);
}
