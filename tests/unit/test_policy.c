/* The policy format: reading, checks, writing, matching. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "literals.h"
#include "policy.h"
#include "util.h"

#define HEAD "dmprof-policy 1\n"
#define CATCH "rule m mmap\nrule u unhooked\n"

static struct policy *parse(const char *text)
{
	return policy_parse(text, strlen(text), "t.policy", NULL);
}

static void parse_fails(const char *text, const char *msg)
{
	capture_stderr();
	cr_assert_null(parse(text), "accepted:\n%s", text);
	cr_assert(strstr(stderr_text(), msg), "stderr: %s", stderr_text());
}

/* A policy whose first malloc rule is RE on the stack. */
static struct policy *one_rule(const char *re)
{
	char text[256];
	struct policy *p;

	snprintf(text, sizeof(text),
		 HEAD "columns a b m u\nrule a malloc stack='%s'\n"
		      "rule b malloc\n" CATCH,
		 re);
	p = parse(text);
	cr_assert_not_null(p, "%s", re);
	return p;
}

static int match(struct policy *p, enum rule_alloc a, const char *stack,
		 const char *type, const char *path, const char *perm,
		 unsigned sharing)
{
	struct subject s;

	memset(&s, 0, sizeof(s));
	s.s[COND_STACK] = stack;
	s.len[COND_STACK] = stack ? strlen(stack) : 0;
	s.s[COND_TYPE] = type;
	s.len[COND_TYPE] = type ? strlen(type) : 0;
	s.s[COND_PATH] = path;
	s.len[COND_PATH] = path ? strlen(path) : 0;
	s.s[COND_PERM] = perm;
	s.len[COND_PERM] = perm ? 4 : 0;
	s.sharing = sharing;
	return policy_match(p, a, &s, "test");
}

Test(policy, columns_rules_and_builtins)
{
	struct policy *p = parse(
		"# a comment\n" HEAD
		"columns second FROM_HERE_FOR_TOTAL v8 'my leak' rest u\n"
		"        UNTIL_HERE_FOR_TOTAL m total tc-unused anonymous-vm\n"
		"rule v8 malloc stack='.*v8::.*'  # trailing comment\n"
		"rule 'my leak' malloc\n"
		"    stack=\".*Leak it.*\" type='no typeinfo'\n"
		"rule rest malloc\n" CATCH);

	cr_assert_not_null(p);
	cr_assert_str_eq(p->label, "t");
	cr_assert_eq(p->ncols, 11);
	cr_assert_eq(p->nrules, 5);
	cr_assert_str_eq(p->cols[3].name, "my leak");
	cr_assert_eq(p->cols[0].builtin, B_SECOND);
	cr_assert_eq(p->cols[8].builtin, B_STAT);
	cr_assert_eq(p->cols[9].builtin, B_TC_UNUSED);
	cr_assert_eq(p->cols[10].builtin, B_STAT);
	cr_assert(p->cols[10].stat_virtual);
	cr_assert_eq(p->from_marker, 1);
	cr_assert_eq(p->until_marker, 6);
	cr_assert_str_eq(p->rules[1].cond[COND_STACK]->text, ".*Leak it.*");
	cr_assert(p->uses[COND_STACK]);
	cr_assert(p->uses[COND_TYPE]);
	cr_assert_not(p->uses[COND_SOURCE]);
	cr_assert_eq(match(p, RULE_MALLOC, "a v8::Heap b", "", NULL, NULL, 0),
		     2);
	cr_assert_eq(match(p, RULE_MALLOC, "x Leak it y", "no typeinfo", NULL,
			   NULL, 0), 3);
	cr_assert_eq(match(p, RULE_MALLOC, "x Leak it y", "Foo", NULL, NULL,
			   0), 4);
	cr_assert_eq(match(p, RULE_MMAP, "anything", NULL, "", "rw-p", 0), 7);
	policy_free(p);
}

Test(policy, whole_string_match)
{
	struct policy *p = parse(HEAD "columns a b m u\n"
				      "rule a malloc stack='v8::.*|foo'\n"
				      "rule b malloc\n" CATCH);

	cr_assert_not_null(p);
	/* Anchored at both ends, alternatives included. */
	cr_assert_eq(match(p, RULE_MALLOC, "v8::x", NULL, NULL, NULL, 0), 0);
	cr_assert_eq(match(p, RULE_MALLOC, "foo", NULL, NULL, NULL, 0), 0);
	cr_assert_eq(match(p, RULE_MALLOC, "foobar", NULL, NULL, NULL, 0), 1);
	cr_assert_eq(match(p, RULE_MALLOC, "x v8::x", NULL, NULL, NULL, 0), 1);
	policy_free(p);
}

Test(policy, unhooked_path_perm_and_sharing)
{
	struct policy *p = parse(
		HEAD "columns anon exec shared-others file rest m\n"
		"rule anon unhooked path=''\n"
		"rule exec unhooked path='/.*' perm='..x.'\n"
		"rule shared-others unhooked path='/.*' shared=others,group\n"
		"rule file unhooked path='/.*'\n"
		"rule rest unhooked\n"
		"rule m mmap\nrule m malloc\n");

	cr_assert_not_null(p, "%s", stderr_text());
	cr_assert_eq(match(p, RULE_UNHOOKED, NULL, NULL, "", "rw-p", 0), 0);
	cr_assert_eq(match(p, RULE_UNHOOKED, NULL, NULL, "/lib/x.so", "r-xp",
			   0), 1);
	/* Sharing unknown: the shared= rule is skipped. */
	cr_assert_eq(match(p, RULE_UNHOOKED, NULL, NULL, "/f", "r--s", 0), 3);
	cr_assert_eq(match(p, RULE_UNHOOKED, NULL, NULL, "/f", "r--s",
			   SHARE_PRIVATE), 3);
	cr_assert_eq(match(p, RULE_UNHOOKED, NULL, NULL, "/f", "r--s",
			   SHARE_GROUP), 2);
	cr_assert_eq(match(p, RULE_UNHOOKED, NULL, NULL, "[stack]", "rw-p",
			   0), 4);
	policy_free(p);
}

Test(policy, errors_have_positions)
{
	parse_fails(HEAD "columns a\nrule a calloc\n" CATCH,
		    "t.policy:3:8: unknown allocator 'calloc'");
	parse_fails(HEAD "colums a\n", "t.policy:2:1: unknown keyword 'colums'");
	parse_fails(HEAD "columns a b m u\nrule a malloc stack='x(('\n"
			 "rule b malloc\n" CATCH,
		    "t.policy:3:25: invalid regex 'x((': missing closing");
	parse_fails(HEAD "columns a FROM_HERE_FOR_TOTAL FROM_HERE_FOR_TOTAL\n",
		    "t.policy:2:31: duplicate marker 'FROM_HERE_FOR_TOTAL'");
	parse_fails(HEAD "columns a a\n", "t.policy:2:11: duplicate column 'a'");
	parse_fails(HEAD "columns a\nrule a malloc stack='.*\n",
		    "t.policy:3:21: unterminated quote '");
	parse_fails(HEAD "columns a\nrule a malloc path='x'\n",
		    "t.policy:3:15: 'path' does not apply to malloc rules");
	parse_fails(HEAD "columns a\nrule a unhooked type='x'\n",
		    "'type' does not apply to unhooked rules");
	parse_fails(HEAD "columns a\nrule a malloc shared=group\n",
		    "'shared' does not apply to malloc rules");
	parse_fails(HEAD "columns a\nrule a mmap shared=all\n",
		    "unknown sharing 'all'");
	parse_fails(HEAD "columns a\nrule a malloc stack='x' stack='y'\n",
		    "t.policy:3:25: duplicate 'stack'");
	parse_fails(HEAD "columns a\nrule a malloc bogus\n",
		    "t.policy:3:15: expected KEY=PATTERN, found 'bogus'");
	parse_fails(HEAD "columns a\nrule a\n", "t.policy:3:1: expected 'rule "
						 "NAME ALLOCATOR");
	parse_fails(HEAD "columns a\nrule b malloc\n" CATCH,
		    "t.policy:3:6: rule assigns 'b', which is not in columns");
	parse_fails(HEAD "columns total m u\nrule total malloc\n" CATCH,
		    "'total' is computed by dmprof; a rule cannot assign it");
	parse_fails(HEAD "columns a lost m u\nrule a malloc\n" CATCH,
		    "t.policy:2:11: column 'lost' is neither assigned");
	parse_fails(HEAD "columns a m u UNTIL_HERE_FOR_TOTAL\nrule a malloc\n"
			 CATCH,
		    "FROM_HERE_FOR_TOTAL and UNTIL_HERE_FOR_TOTAL go together");
	parse_fails(HEAD "columns a m u\nrule a malloc stack='x'\n" CATCH,
		    "no catch-all rule for malloc buckets");
	parse_fails(HEAD "columns a u\nrule a malloc\nrule u unhooked\n",
		    "no catch-all rule for mmap regions");
	parse_fails("columns a\n", "t.policy:1:1: expected 'dmprof-policy 1'");
	parse_fails("dmprof-policy 2\n", "unsupported format version");
	parse_fails("", "empty policy");
	parse_fails("  x\n", "t.policy:1:3: indented line continues no "
			     "statement");
	parse_fails(HEAD "columns a'b\n", "unterminated quote '");
	parse_fails(HEAD "columns x=y\n", "'=' in column name 'x=y'");
}

Test(policy, catch_all_detection_and_unreachable_warning)
{
	struct policy *p;

	capture_stderr();
	p = parse(HEAD "columns a b m u\n"
		       "rule a malloc stack='.*' type='.*?'\n"
		       "rule b malloc stack='x'\n" CATCH);
	cr_assert_not_null(p);
	cr_assert(strstr(stderr_text(), "warning: t.policy:4: rule 'b' never "
					"matches: the catch-all rule at line 3"));
	policy_free(p);
	/* A rule with a broken pattern is no catch-all. */
	parse_fails(HEAD "columns a m u\nrule a malloc stack='('\n" CATCH,
		    "no catch-all rule for malloc buckets");
}

Test(policy, json_original_format)
{
	const char *json =
		"{\"components\": [\"second\", \"v8\", \"rest\", \"m\", \"u\"],\n"
		" \"rules\": [\n"
		"  {\"name\": \"second\", \"stacktrace\": \"optional\","
		"   \"allocator\": \"optional\"},\n"
		"  {\"name\": \"v8\", \"stackfunction\": \".*v8::.*\","
		"   \"stacktrace\": \"ignored\", \"allocator\": \"malloc\"},\n"
		"  {\"name\": \"rest\", \"stacktrace\": \"\", \"allocator\": "
		"\"malloc\", \"mappedpathname\": \"x\"},\n"
		"  {\"name\": \"m\", \"stacktrace\": \".*\", \"allocator\": "
		"\"mmap\"},\n"
		"  {\"name\": \"u\", \"mappedpathname\": \".*\", \"allocator\": "
		"\"unhooked\", \"sharedwith\": [\"group\"]},\n"
		"  {\"name\": \"u\", \"allocator\": \"unhooked\"}],\n"
		" \"version\": \"POLICY_DEEP_3\"}";
	struct policy *p;

	capture_stderr();
	p = policy_parse(json, strlen(json), "policy.x.json", NULL);
	cr_assert_not_null(p, "%s", stderr_text());
	cr_assert_str_eq(p->label, "policy.x");
	cr_assert_eq(p->nrules, 5); /* the optional rule is gone */
	cr_assert_str_eq(p->rules[0].cond[COND_STACK]->text, ".*v8::.*");
	cr_assert_null(p->rules[1].cond[COND_STACK]); /* "" was anything */
	cr_assert_null(p->rules[1].cond[COND_PATH]);
	cr_assert(strstr(stderr_text(), "\"mappedpathname\" does not apply to "
					"malloc rules; ignored"));
	cr_assert_eq(p->rules[3].sharing, SHARE_GROUP);
	policy_free(p);
}

Test(policy, write_round_trip)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	struct policy *p, *q;

	capture_stderr();
	p = parse(
		HEAD "columns a 'b c' \"it's\" m u\n"
		"rule a malloc stack='.*\"quoted\".*'\n"
		"rule 'b c' malloc source=\".*it's.*\"\n"
		"rule \"it's\" malloc stack=\"'\"'\"'\"'\" type='a\"b'\n"
		"rule m malloc\n" CATCH);
	cr_assert_not_null(p, "%s", stderr_text());
	cr_assert_str_eq(p->rules[2].cond[COND_STACK]->text, "'\"'");
	policy_write(p, &a, "a comment\nof two lines");
	cr_assert(starts_with(a.buf, "# a comment\n# of two lines\n\n"
				     "dmprof-policy 1\n"));
	q = parse(a.buf);
	cr_assert_not_null(q, "%s", a.buf);
	policy_write(q, &b, "a comment\nof two lines");
	cr_assert_str_eq(a.buf, b.buf);
	/* Both quote characters survive the round trip as they were. */
	cr_assert_str_eq(q->rules[2].cond[COND_STACK]->text, "'\"'");
	cr_assert_str_eq(q->cols[2].name, "it's");
	cr_assert_eq(match(q, RULE_MALLOC, "'\"'", "a\"b", NULL, NULL, 0), 2);
	sb_release(&a);
	sb_release(&b);
	policy_free(p);
	policy_free(q);
}

Test(policy, alloc_fn_declarations)
{
	struct strbuf a = STRBUF_INIT;
	struct policy *p, *q;

	capture_stderr();
	p = parse(HEAD "columns m u\n"
		       "alloc-fn 'pool_(get|put)' my_alloc\n"
		       "alloc-fn \"arena_[a-z]+\"\n"
		       "rule m malloc\n" CATCH);
	cr_assert_not_null(p, "%s", stderr_text());
	cr_assert_eq(p->nalloc_fns, 3);
	cr_assert_str_eq(p->alloc_fns[0]->text, "pool_(get|put)");
	cr_assert_str_eq(p->alloc_fns[2]->text, "arena_[a-z]+");
	cr_assert_eq(p->alloc_fns[2]->line, 4);
	/* Written and read back the same. */
	policy_write(p, &a, NULL);
	cr_assert(strstr(a.buf, "\nalloc-fn 'pool_(get|put)'\n"), "%s", a.buf);
	q = parse(a.buf);
	cr_assert_not_null(q, "%s", a.buf);
	cr_assert_eq(q->nalloc_fns, 3);
	cr_assert_str_eq(q->alloc_fns[1]->text, "my_alloc");
	sb_release(&a);
	policy_free(p);
	policy_free(q);
	parse_fails(HEAD "columns m u\nalloc-fn 'x('\nrule m malloc\n" CATCH,
		    "t.policy:3:13: invalid regex 'x(': missing closing");
	parse_fails(HEAD "columns m u\nalloc-fn\nrule m malloc\n" CATCH,
		    "t.policy:3:1: 'alloc-fn' wants one or more patterns");
}

Test(policy, match_limit_is_an_error)
{
	struct policy *p = parse(HEAD "columns a b m u\n"
				      "rule a malloc stack='(.*)*x'\n"
				      "rule b malloc\n" CATCH);
	static char big[200001];

	memset(big, 'f', sizeof(big) - 1);
	big[0] = 'x'; /* else PCRE2 sees no 'x' and gives up at once */
	capture_stderr();
	cr_assert_eq(match(p, RULE_MALLOC, big, NULL, NULL, NULL, 0), -2);
	cr_assert(strstr(stderr_text(), "t.policy:3:22: pattern '(.*)*x' "
					"failed on test"));
	policy_free(p);
}

Test(policy, shipped_policies_load)
{
	static const char *const names[] = { "l0", "l1", "l2", "t0",
					     "sourcefile", "android.browser",
					     "android.renderer",
					     "android.webview" };
	static const size_t cols[] = { 34, 41, 70, 40, 38, 57, 85, 95 };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char path[128];
		struct policy *p;

		snprintf(path, sizeof(path), "policies/%s.policy", names[i]);
		p = policy_load(path, names[i]);
		cr_assert_not_null(p, "%s", path);
		cr_assert_eq(p->ncols, cols[i], "%s: %zu columns", names[i],
			     p->ncols);
		policy_free(p);
	}
}

/*
 * The linux policy's first-Python-frame rules loop over the frames (a
 * classifier looks for their key literals to skip them on a C stack);
 * rules decided on the first frames do not.  The key group is never the
 * separator.
 */
Test(policy, looping_head_patterns)
{
	static const struct {
		const char *col;
		int field;
		bool loops;
	} want[] = {
		{ "malloc-python-packages", COND_SOURCE, true },
		{ "malloc-python-stdlib", COND_SOURCE, true },
		{ "malloc-python-app", COND_SOURCE, true },
		{ "malloc-loader", COND_STACK, false },
		{ "malloc-python", COND_STACK, false },
	};
	struct policy *p = policy_load("policies/linux.policy", "linux");

	cr_assert_not_null(p);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		int col = policy_column(p, want[i].col);
		const struct pattern *pat = NULL;
		struct literals l;

		for (size_t r = 0; r < p->nrules && !pat; r++)
			if ((int)p->rules[r].column == col &&
			    p->rules[r].alloc == RULE_MALLOC)
				pat = p->rules[r].cond[want[i].field];
		cr_assert_not_null(pat, "%s", want[i].col);
		cr_assert_eq(pat->loops, want[i].loops, "%s", want[i].col);
		if (!pat->loops)
			continue;
		cr_assert_gt(pat->nlits, 0, "%s", want[i].col);
		cr_assert(regex_literals(pat->text, pat->len, pat->lit_min,
					 &l));
		for (size_t k = 0; k < l.n; k++)
			if (l.group[k] == pat->key_group)
				cr_assert_neq(strspn(l.v[k], " "), l.len[k],
					      "%s: key '%s'", want[i].col,
					      l.v[k]);
		literals_free(&l);
	}
	policy_free(p);
}

/*
 * The first rule that holds, tried in order one condition after another
 * (policy_rule_test), is what policy_match says: its shortcuts (a rule
 * failed by its literals' absence from a field scanned for an earlier
 * one, a pattern run only on the start of a field) decide as the rules
 * do.  Every shipped policy, on random subjects of words its rules look
 * for, several conditions and sharing among them.
 */
/* The column of SUBJ's first rule of kind A that holds, each tried in
 * turn as it is written (-1: none). */
static int each_rule_says(const struct policy *p, struct matcher *mt,
			  enum rule_alloc a, const struct subject *subj)
{
	int failed;

	for (size_t r = 0; r < p->nrules; r++)
		if (p->rules[r].alloc == a &&
		    policy_rule_test(p, mt, &p->rules[r], subj, "test",
				     &failed) == 1)
			return (int)p->rules[r].column;
	return -1;
}

Test(policy, shortcuts_decide_as_each_rule_does)
{
	static const char *const names[] = {
		"l0", "l1", "l2", "t0", "sourcefile", "linux",
		"android.browser", "android.renderer", "android.webview",
	};
	static const char *const words[] = {
		"WebCore::FontCache::getCachedFontData", "WTF::fastMalloc",
		"WebCore::RenderArena::allocate", "v8::internal::Heap::Setup",
		"v8::internal::NewSpace::SetUp", "SkCanvas::draw", " Sk",
		"std::vector<int>::_M_realloc_insert", "std::_Rb_tree::insert",
		"WTF::StringImpl::create", "WebCore::Node::create", "malloc",
		"operator new", "__libc_malloc", "_PyObject_Malloc", "main",
		"ProfilerMalloc", "DoAllocWithArena", "tc_malloc", "?",
		"../../v8/src/heap.cc", "/usr/lib/python3.11/os.py",
		"../../third_party/WebKit/Source/WebCore/dom/Node.cpp",
	};
	static const char *const paths[] = { "", "/lib/libc.so.6",
					     "[stack]", "[heap]", "/dev/x" };
	static const char *const perms[] = { "r-xp", "rw-p", "r--s" };
	uint64_t x = 0x2545f4914f6cdd1dULL;
	unsigned checked = 0;

	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		char path[128];
		struct policy *p;
		struct matcher mt;

		snprintf(path, sizeof(path), "policies/%s.policy", names[k]);
		p = policy_load(path, names[k]);
		cr_assert_not_null(p, "%s", path);
		matcher_of_policy(&mt, p, false);
		for (int t = 0; t < 600; t++) {
			struct strbuf f[2] = { STRBUF_INIT, STRBUF_INIT };
			enum rule_alloc a = (enum rule_alloc)(t % 3);
			struct subject subj;
			int want, got;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			for (int i = 0; i < 2; i++)
				for (uint64_t n = (x >> (4 * i)) % 7, r = x;
				     n > 0; n--, r = r * 6364136223846793005ULL +
							1442695040888963407ULL) {
					if (f[i].len)
						sb_addch(&f[i], ' ');
					sb_addstr(&f[i], words[(r >> 33) %
							       ARRAY_SIZE(words)]);
				}
			memset(&subj, 0, sizeof(subj));
			for (int i = 0; i < 2; i++) {
				int field = i ? COND_SOURCE : COND_STACK;

				subj.s[field] = f[i].buf ? f[i].buf : "";
				subj.len[field] = f[i].len;
			}
			subj.s[COND_TYPE] = x & 1 ? "std::string" : "";
			subj.len[COND_TYPE] = strlen(subj.s[COND_TYPE]);
			subj.s[COND_PATH] = paths[(x >> 20) % ARRAY_SIZE(paths)];
			subj.len[COND_PATH] = strlen(subj.s[COND_PATH]);
			subj.s[COND_PERM] = perms[(x >> 24) % ARRAY_SIZE(perms)];
			subj.len[COND_PERM] = 4;
			subj.sharing = 1u << ((x >> 28) % 3);
			want = each_rule_says(p, &mt, a, &subj);
			got = policy_match(p, a, &subj, "test");
			cr_assert_eq(got, want, "%s: '%s' / '%s'", names[k],
				     subj.s[COND_STACK], subj.s[COND_SOURCE]);
			checked++;
			sb_release(&f[0]);
			sb_release(&f[1]);
		}
		policy_free(p);
	}
	cr_assert_eq(checked, 600 * ARRAY_SIZE(names));
}

/* ---- the partition between the markers ---- */

#define ARENA "rule allocator-arena mmap stack='.*arena.*'\n"

Test(policy, partition_counts_no_byte_twice)
{
	struct policy *p;

	/* The shape of the shipped policies: fine. */
	p = parse(HEAD "columns FROM_HERE_FOR_TOTAL a malloc-unused m u "
		       "no-bucket mustbezero unhooked-absent\n"
		       "  UNTIL_HERE_FOR_TOTAL total allocator-arena\n" ARENA
		       "rule a malloc\n" CATCH);
	cr_assert_not_null(p);
	policy_free(p);
	/* Without markers there is no partition to check. */
	p = parse(HEAD "columns total a m u\nrule a malloc\n" CATCH);
	cr_assert_not_null(p);
	policy_free(p);
	/* Malloc components with nothing mapped between the markers. */
	p = parse(HEAD "columns FROM_HERE_FOR_TOTAL a UNTIL_HERE_FOR_TOTAL m u\n"
		       "rule a malloc\n" CATCH);
	cr_assert_not_null(p);
	policy_free(p);

	parse_fails(HEAD "columns FROM_HERE_FOR_TOTAL a total m u "
			 "UNTIL_HERE_FOR_TOTAL\nrule a malloc\n" CATCH,
		    "t.policy:2:31: 'total' between FROM_HERE_FOR_TOTAL and "
		    "UNTIL_HERE_FOR_TOTAL counts bytes the components there "
		    "count already");
	parse_fails(HEAD "columns FROM_HERE_FOR_TOTAL hour a UNTIL_HERE_FOR_TOTAL "
			 "m u\nrule a malloc\n" CATCH,
		    "'hour' between FROM_HERE_FOR_TOTAL and "
		    "UNTIL_HERE_FOR_TOTAL is a time");
	parse_fails(HEAD "columns FROM_HERE_FOR_TOTAL a profiler "
			 "UNTIL_HERE_FOR_TOTAL m u\nrule a malloc\n"
			 "rule profiler mmap stack='.*dmprof_recorder.*'\n" CATCH,
		    "'profiler' between FROM_HERE_FOR_TOTAL and "
		    "UNTIL_HERE_FOR_TOTAL: the profiler's own memory");
	parse_fails(HEAD "columns FROM_HERE_FOR_TOTAL a allocator-arena "
			 "UNTIL_HERE_FOR_TOTAL m u\n" ARENA "rule a malloc\n"
			 CATCH,
		    "'allocator-arena' between FROM_HERE_FOR_TOTAL and "
		    "UNTIL_HERE_FOR_TOTAL holds the malloc'd bytes that 'a' "
		    "counts there too");
	parse_fails(HEAD "columns FROM_HERE_FOR_TOTAL malloc-unused mmap-tcmalloc "
			 "UNTIL_HERE_FOR_TOTAL a m u\n"
			 "rule mmap-tcmalloc mmap stack='.*Sbrk.*'\n"
			 "rule a malloc\n" CATCH,
		    "holds the malloc'd bytes that 'malloc-unused' counts");
	parse_fails(HEAD "columns FROM_HERE_FOR_TOTAL a m UNTIL_HERE_FOR_TOTAL u\n"
			 "rule a malloc\n" CATCH,
		    "t.policy:4:6: malloc components ('a') and the mmap "
		    "catch-all ('m') between FROM_HERE_FOR_TOTAL and "
		    "UNTIL_HERE_FOR_TOTAL, but no allocator-arena column");
	/* Mmap components that take some stacks only, and the catch-all
	 * outside: the arenas go there, nothing counts twice. */
	p = parse(HEAD "columns FROM_HERE_FOR_TOTAL a v8 u UNTIL_HERE_FOR_TOTAL "
		       "m\nrule v8 mmap stack='.*v8::.*'\nrule a malloc\n" CATCH);
	cr_assert_not_null(p);
	policy_free(p);
}

Test(policy, malloc_unused_takes_malloc_rules_only)
{
	struct policy *p = parse(HEAD "columns FROM_HERE_FOR_TOTAL a "
				      "malloc-unused u UNTIL_HERE_FOR_TOTAL "
				      "allocator-arena\n"
				      "rule malloc-unused malloc "
				      "stack='free-.*'\nrule a malloc\n"
				      "rule allocator-arena mmap\n"
				      "rule u unhooked\n");

	cr_assert_not_null(p);
	cr_assert_eq(p->rules[0].column, policy_column(p, "malloc-unused"));
	policy_free(p);
	parse_fails(HEAD "columns a malloc-unused m u\n"
			 "rule malloc-unused mmap\n" CATCH,
		    "t.policy:3:6: 'malloc-unused' takes malloc lines only "
		    "(free space a heap walk found), not mmap memory");
	parse_fails(HEAD "columns a total m u\nrule total malloc\n" CATCH,
		    "'total' is computed by dmprof; a rule cannot assign it");
}

Test(policy, column_kinds_and_what_they_are)
{
	struct policy *p = parse(HEAD "columns second FROM_HERE_FOR_TOTAL a "
				      "malloc-unused UNTIL_HERE_FOR_TOTAL rss "
				      "m u\nrule a malloc\n" CATCH);

	cr_assert_not_null(p);
	cr_assert_eq(column_kind(&p->cols[0]), COLUMN_TIME);
	cr_assert_eq(column_kind(&p->cols[1]), COLUMN_MARKER);
	cr_assert_eq(column_kind(&p->cols[2]), COLUMN_RULE);
	cr_assert_null(column_doc(&p->cols[2]));
	cr_assert_eq(column_kind(&p->cols[3]), COLUMN_COMPUTED);
	cr_assert(strstr(column_doc(&p->cols[3]), "allocator-arena"));
	cr_assert(strstr(column_doc(&p->cols[5]), "Rss"));
	/* Every computed column says what it is. */
	for (size_t i = 0; i < p->ncols; i++)
		if (column_kind(&p->cols[i]) != COLUMN_RULE)
			cr_assert_not_null(column_doc(&p->cols[i]), "%s",
					   p->cols[i].name);
	policy_free(p);
}

Test(policy, write_rule_has_no_trailing_blanks)
{
	struct policy *p = parse(HEAD "columns a m u\nrule a malloc\n" CATCH);
	struct strbuf sb = STRBUF_INIT;

	cr_assert_not_null(p);
	policy_write_rule(&sb, &p->rules[0]);
	cr_assert_str_eq(sb.buf, "malloc");
	sb_release(&sb);
	policy_free(p);
}

/* A subject handed out a few bytes at a time, as classify.c builds one. */
struct pieces {
	const char *text;
	size_t len, given, calls;
};

static void give_start(void *ctx, int field, size_t min, const char **s,
		       size_t *len, bool *whole)
{
	struct pieces *pc = ctx;

	(void)field;
	pc->calls++;
	/* (Whole frames in real life; any cut must give the same answer.) */
	while (pc->given < pc->len && pc->given < min)
		pc->given += 7;
	if (pc->given > pc->len)
		pc->given = pc->len;
	*s = pc->text;
	*len = pc->given;
	*whole = pc->given == pc->len;
}

static void give_all(void *ctx, int field, const char **s, size_t *len)
{
	bool whole;

	give_start(ctx, field, SIZE_MAX, s, len, &whole);
}

/*
 * Matching the start of a field, longer until the pattern decides, gives
 * what matching the whole field gives, for every kind of pattern: "X.*",
 * end-anchored ones, lookarounds, alternations, classes, escapes.
 */
Test(policy, matching_the_start_agrees_with_the_whole)
{
	static const char *const patterns[] = {
		"malloc .*", "(?:(?:malloc|calloc) )*(?:_dl_|foo).*",
		"foo", "foo bar", "foo|bar.*", "(foo|bar).*", "[.*]*",
		"foo\\.*", "a(?=b).*", "(?:x )*y$", "\\Qfoo.*\\E",
		"f[^ ]* bar .*", "(?i)FOO .*", ".*bar.*", "(?:foo )+baz",
		"foo (?!bar).*", "\\w+ \\w+",
		/* (The bytes a match begins with: fixed, caseless, a set,
		 * a negated class, none.) */
		"(?i:f)oo .*", "(?:|x)foo.*", "[^a]oo .*", "\\bfoo.*",
		"(?=f)\\w+ .*", "F?foo .*", "(?<=x)foo.*", "(?:x )*+y .*",
	};
	static const char *const subjects[] = {
		"", "foo", "foo bar", "foo bar baz", "malloc calloc _dl_x y",
		"calloc foo", "bar", "ab", "x x x y", "foo.*", "f bar z",
		"FOO zz", "foo baz", "foo barn", "y", "foo foo foo baz",
		"a b c d e f g h i j k l m n o p q r s t u v w x y z bar",
		"Foo bar", "xfoo", "goo bar", "oo", "Ffoo x", "x y z",
	};

	for (size_t i = 0; i < ARRAY_SIZE(patterns); i++) {
		struct policy *p;

		p = one_rule(patterns[i]);
		for (size_t k = 0; k < ARRAY_SIZE(subjects); k++) {
			struct pieces pc = { subjects[k], strlen(subjects[k]),
					     0, 0 };
			struct subject s;
			int whole = match(p, RULE_MALLOC, subjects[k], NULL,
					  NULL, NULL, 0);
			int start;

			memset(&s, 0, sizeof(s));
			s.fill = give_all;
			s.fill_start = give_start;
			s.ctx = &pc;
			start = policy_match(p, RULE_MALLOC, &s, "test");
			cr_assert_eq(start, whole, "'%s' on '%s': %d, whole %d",
				     patterns[i], subjects[k], start, whole);
		}
		policy_free(p);
	}
	/* (Where PCRE2 knows a match's first bytes, they are kept.) */
	{
		struct policy *p = one_rule("malloc .*");

		cr_assert(p->rules[0].cond[COND_STACK]->has_first);
		policy_free(p);
		p = one_rule("(?:|x)foo.*");
		cr_assert(p->rules[0].cond[COND_STACK]->has_first);
		policy_free(p);
	}
	/* And it decides early: a long field is not built to its end. */
	{
		static const char long_field[] =
			"free a b c d e f g h i j k l m n o p q r s t u v w x "
			"y z a b c d e f g h i j k l m n o p q r s t u v w x "
			"y z a b c d e f g h i j k l m n o p q r s t u v w x";
		struct pieces pc = { long_field, strlen(long_field), 0, 0 };
		struct subject s;
		struct policy *p = parse(HEAD "columns a b m u\nrule a malloc "
					      "stack='malloc .*'\nrule b "
					      "malloc\n" CATCH);

		memset(&s, 0, sizeof(s));
		s.fill = give_all;
		s.fill_start = give_start;
		s.ctx = &pc;
		cr_assert_eq(policy_match(p, RULE_MALLOC, &s, "test"), 1);
		cr_assert(pc.given < pc.len, "built %zu of %zu bytes", pc.given,
			  pc.len);
		policy_free(p);
	}
}

/* A stack as its frames (a frame's text may hold spaces). */
struct frames {
	const char *const *f;
	size_t n;
	size_t asked;         /* frames given to pattern_seq_step */
};

static int walk_frames(void *ctx, int field, const struct pattern *pat,
		       struct matcher *mt, const char *what,
		       const struct subject *subj)
{
	struct frames *fr = ctx;
	uint32_t j = 0;
	int r;

	(void)field;
	if (!fr->n) {
		r = pattern_seq_step(NULL, mt, pat, 0, "", 0, what, subj);
		return r < 0 ? -1 : (uint32_t)r == pat->seq->k;
	}
	for (size_t i = 0; i < fr->n && j < pat->seq->k; i++) {
		r = pattern_seq_step(NULL, mt, pat, j, fr->f[i],
				     strlen(fr->f[i]), what, subj);
		fr->asked++;
		if (r < 0)
			return -1;
		j = (uint32_t)r;
	}
	return j == pat->seq->k;
}

/*
 * A pattern ".*P1.*...Pk.*" whose pieces cannot match a space is matched
 * frame by frame, never joined; it agrees with matching the joined
 * stack.  A pattern that could match across frames, or look beyond its
 * match, is not split.
 */
Test(policy, matching_frame_by_frame_agrees_with_the_whole)
{
	static const struct {
		const char *re;
		bool split;
	} patterns[] = {
		{ ".*(WTF::|WebCore::).*v8::.*", true },
		{ ".*a[0-9]+b.*", true },
		{ ".*(x|y)z.*(x|y)z.*", true },
		{ ".*[^ ]x.*", true },
		{ ".*\\w+::\\d.*?b.*", true },
		{ ".*(?:ab|b)*c.*a.*", true },
		{ ".*a?.*", true },
		{ ".*a b.*", false },          /* spans frames */
		{ ".*a.b.*", false },
		{ ".*a\\sb.*", false },
		{ ".*[^x]b.*", false },
		{ ".*[ -~]b.*", false },
		{ ".*[!-~]b.*", true },
		{ ".*\\bab.*", false },        /* looks around */
		{ ".*(?=a)ab.*", false },
		{ ".*a.*b", false },           /* not ".*" at the end */
		{ ".*ab\\.*", false },
		{ ".*a|b.*", false },
		{ ".*a++b.*", false },
		{ ".*(?i)ab.*", false },
		{ ".*\\x20a.*", false },
		{ ".*[[:alpha:]]b.*", false },
	};
	static const char *const f1[] = { "WTF::x", "f", "v8::y" };
	static const char *const f2[] = { "v8::y", "WebCore::a" };
	static const char *const f3[] = { "WebCore::a v8::b" };
	static const char *const f4[] = { "a1", "2b", "a12b" };
	static const char *const f5[] = { "xz yz" };
	static const char *const f6[] = { "xzyz", "q" };
	static const char *const f7[] = { "Foo::9", "b", "a" };
	static const char *const f8[] = { "bc", "ab" };
	static const char *const f9[] = { "x", "a", "b", "operator new(a b)" };
	static const char *const f10[] = { "" };
	static const struct {
		const char *const *f;
		size_t n;
	} stacks[] = {
		{ f1, 3 }, { f2, 2 }, { f3, 1 }, { f4, 3 }, { f5, 1 },
		{ f6, 2 }, { f7, 3 }, { f8, 2 }, { f9, 4 }, { f10, 1 },
		{ NULL, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(patterns); i++) {
		struct policy *p;
		const struct pattern *pat;

		p = one_rule(patterns[i].re);
		pat = p->rules[0].cond[COND_STACK];
		cr_assert_eq(pat->seq != NULL, patterns[i].split,
			     "'%s' is %ssplit", patterns[i].re,
			     pat->seq ? "" : "not ");
		for (size_t k = 0; pat->seq && k < ARRAY_SIZE(stacks); k++) {
			struct strbuf joined = STRBUF_INIT;
			struct frames fr = { stacks[k].f, stacks[k].n, 0 };
			struct subject s;
			int whole, by_frame;

			for (size_t n = 0; n < stacks[k].n; n++) {
				if (n)
					sb_addch(&joined, ' ');
				sb_addstr(&joined, stacks[k].f[n]);
			}
			whole = match(p, RULE_MALLOC, sb_str(&joined), NULL,
				      NULL, NULL, 0);
			memset(&s, 0, sizeof(s));
			s.seq = walk_frames;
			s.ctx = &fr;
			by_frame = policy_match(p, RULE_MALLOC, &s, "test");
			cr_assert_eq(by_frame, whole,
				     "'%s' on '%s': %d, whole %d",
				     patterns[i].re, sb_str(&joined), by_frame,
				     whole);
			cr_assert(fr.asked || !stacks[k].n);
			sb_release(&joined);
		}
		policy_free(p);
	}
}

/*
 * What a frame's literals say of a split pattern's pieces is what its
 * text says (pattern_seq_step), wherever they decide; and they decide
 * for the frames that hold none of the next piece's literals, which is
 * what spares a classifier the frames' texts.
 */
Test(policy, frames_literals_decide_as_their_text_does)
{
	static const char *const patterns[] = {
		".*(WTF::|WebCore::|WebKit::).*v8::.*",
		".*Alpha::[a-z]+.*Beta.*",         /* a piece not exact */
		".*Gamma.*Delta.*Gamma.*",         /* a piece twice */
		".*ab.*Epsilon.*",                 /* one without literals */
		".*(?:Zeta|Eta)[0-9]*::run.*",
	};
	static const char *const frames[] = {
		"WTF::fastMalloc", "WebCore::Node::create", "v8::internal::Heap",
		"WebCore::a v8::b", "v8::b WebCore::a", "main", "",
		"Alpha::x", "Alpha::", "Alpha::9 Beta", "Beta Alpha::q",
		"GammaDelta", "Gamma Delta Gamma", "DeltaGamma", "Gamma",
		"ab", "abEpsilon", "Epsilon", "Zeta::run", "Eta12::run",
		"Zeta::ru", "x Eta::run y", "operator new(WTF:: v8::)",
	};
	unsigned decided = 0, asked = 0;

	for (size_t i = 0; i < ARRAY_SIZE(patterns); i++) {
		struct policy *p;
		const struct pattern *pat;
		struct matcher mt;

		p = one_rule(patterns[i]);
		pat = p->rules[0].cond[COND_STACK];
		cr_assert_not_null(pat->seq, "'%s' is not split", patterns[i]);
		cr_assert_not_null(p->acm[COND_STACK]);
		matcher_of_policy(&mt, p, false);
		for (size_t f = 0; f < ARRAY_SIZE(frames); f++) {
			size_t words = acm_words(p->acm[COND_STACK]);
			uint64_t found[8] = { 0 };

			cr_assert_leq(words, ARRAY_SIZE(found));
			acm_scan(p->acm[COND_STACK], frames[f],
				 strlen(frames[f]), found);
			for (uint32_t j = 0; j < pat->seq->k; j++) {
				int want = pattern_seq_step(
					p, &mt, pat, j, frames[f],
					strlen(frames[f]), "test", NULL);
				int got = pattern_seq_literals(pat, j, found);

				asked++;
				if (got < 0)
					continue;
				decided++;
				cr_assert_eq(got, want,
					     "'%s' from piece %u on '%s': %d, "
					     "its text says %d",
					     patterns[i], j, frames[f], got,
					     want);
			}
		}
		policy_free(p);
	}
	/* (Most frames hold none of a piece: those are decided.) */
	cr_assert_gt(decided, asked / 2, "%u of %u decided", decided, asked);
}

/*
 * Matching passes over a run of one-literal rules by the literals the
 * field holds: it decides as trying each rule in turn does, where the
 * field is scanned before the run or in its middle, where a rule of the
 * run holds its literal but not its pattern, where rules share a
 * literal, and across rules of another kind between them.
 */
Test(policy, runs_of_rules_decide_as_each_rule_does)
{
	static const char *const text =
		HEAD "columns a b c d e f g h m u\n"
		"rule a malloc stack='.*One.*'\n"
		"rule b malloc stack='.*Two::[0-9]+.*'\n"
		"rule m mmap stack='.*Two.*'\n"
		"rule c malloc stack='.*Three.*'\n"
		"rule d malloc stack='.*Two.*'\n"
		"rule e malloc stack='.*Four.*Five.*'\n"
		"rule f malloc stack='.*Six.*'\n"
		"rule g malloc stack='.*Seven.*'\n"
		"rule a malloc stack='.*Eight.*'\n"
		"rule b malloc stack='.*Six.*'\n"
		"rule c malloc stack='.*Nine.*'\n"
		"rule h malloc\n" CATCH;
	static const char *const words[] = {
		"One", "Two::x", "Two::12", "Three", "Four", "Five", "Six",
		"Seven", "Eight", "Nine", "main", "Tw", "Fiv",
	};
	struct policy *p = parse(text);
	struct matcher mt;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	cr_assert_not_null(p);
	/* (Rules a to d, and f to c after the two-literal one.) */
	cr_assert_eq(p->nruns, 2);
	matcher_of_policy(&mt, p, false);
	for (int t = 0; t < 3000; t++) {
		struct strbuf sb = STRBUF_INIT;
		enum rule_alloc a = t % 4 ? RULE_MALLOC : RULE_MMAP;
		int want, got;
		struct subject subj;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		for (uint64_t n = x % 5, r = x >> 3; n > 0; n--, r /= 13) {
			if (sb.len)
				sb_addch(&sb, ' ');
			sb_addstr(&sb, words[r % ARRAY_SIZE(words)]);
		}
		memset(&subj, 0, sizeof(subj));
		subj.s[COND_STACK] = sb_str(&sb);
		subj.len[COND_STACK] = sb.len;
		want = each_rule_says(p, &mt, a, &subj);
		got = policy_match(p, a, &subj, "test");
		cr_assert_eq(got, want, "'%s': %d, each rule says %d",
			     sb_str(&sb), got, want);
		sb_release(&sb);
	}
	policy_free(p);
}
