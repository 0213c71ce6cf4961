/*
 * The regex prefilter: which literals a regex requires, the automaton
 * that finds them, and (the property that matters) that it never turns
 * away a subject the regex matches, checked against PCRE2 itself on the
 * patterns of every shipped policy.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <criterion/criterion.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "literals.h"
#include "policy.h"
#include "util.h"

static struct literals l;

/* The literals of RE, none shorter than MIN_LEN, as "a|b&c" (| within a
 * group, & between groups). */
static const char *lits_min(const char *re, size_t min_len)
{
	static char buf[1024];
	size_t n = 0;

	literals_free(&l);
	if (!regex_literals(re, strlen(re), min_len, &l))
		return "-";
	for (uint32_t g = 0; g < l.ngroups; g++) {
		bool first = true;

		if (g)
			buf[n++] = '&';
		for (size_t i = 0; i < l.n; i++) {
			if (l.group[i] != g)
				continue;
			if (!first)
				buf[n++] = '|';
			first = false;
			memcpy(buf + n, l.v[i], l.len[i]);
			n += l.len[i];
		}
	}
	buf[n] = 0;
	return buf;
}

static const char *lits(const char *re)
{
	return lits_min(re, 3);
}

#define LITS(re, want) cr_assert_str_eq(lits(re), want, "%s", re)

Test(literals, extraction)
{
	LITS(".*WebCore::FontCache::getCachedFontData.*",
	     "WebCore::FontCache::getCachedFontData");
	cr_assert(l.exact);
	LITS(".*(WTF::|WebCore::|WebKit::).*", "WTF::|WebCore::|WebKit::");
	cr_assert(l.exact);
	LITS(".*(?:abcd|efgh).*", "abcd|efgh");
	cr_assert(l.exact);
	/* Both required, in order: not exact. */
	LITS(".*(WTF::|WebCore::|WebKit::).*v8::.*",
	     "WTF::|WebCore::|WebKit::&v8::");
	cr_assert_not(l.exact);
	LITS(".* Sk[A-Za-z_]+::.*", " Sk"); /* ("::" is too short) */
	cr_assert_not(l.exact);
	LITS(".*WebCore::HTML[a-zA-Z0-9_]*Element::create .*",
	     "WebCore::HTML&Element::create ");
	LITS("std::basic_string::_Rep::_S_create",
	     "std::basic_string::_Rep::_S_create");
	cr_assert_not(l.exact);
	/* Escapes: punctuation is literal, classes break runs. */
	LITS(".*foo\\.bar\\(\\).*", "foo.bar()");
	cr_assert(l.exact);
	LITS(".*abc\\wdef.*", "abc&def");
	/* Optional items break runs and drop out. */
	LITS(".*abcd?efg.*", "abc&efg");
	LITS(".*abc(def)?ghi.*", "abc&ghi");
	LITS(".*abc+def.*", "abc&def");
	LITS(".*xyz(def)+ghi.*", "xyz&def&ghi");
	/* An alternative with nothing required: nothing. */
	LITS(".*(abc|.*).*", "-");
	LITS("abc|def", "abc|def");
	LITS("ab", "-"); /* shorter than 3 */
	/* What it does not understand, it gives up on. */
	LITS("(?i).*abc.*", "-");
	LITS(".*(?=abc).*", "-");
	LITS(".*(abc)\\1.*", "-");
	LITS(".*a{2,3}bcd.*", "-");
	LITS(".*\\Qabc\\E.*", "-");
	LITS(".*[abc.*", "-");
	LITS(".*(abc.*", "-");
	LITS(".*abc).*", "-");
	/* Not exact: an escaped dot before the last star. */
	LITS(".*abc\\.*", "abc");
	cr_assert_not(l.exact);
	/* Classes are skipped whole, brackets and all. */
	LITS(".*[]|(]abc.*", "abc");
	LITS(".*[[:alpha:]]xyz.*", "xyz");
	literals_free(&l);
}

Test(literals, automaton)
{
	struct acm *a = acm_new();
	uint64_t found[2] = { 0, 0 };
	const char *text = "xx hers and his shell she";

	cr_assert_eq(acm_add(a, "he", 2), 0);
	cr_assert_eq(acm_add(a, "she", 3), 1);
	cr_assert_eq(acm_add(a, "his", 3), 2);
	cr_assert_eq(acm_add(a, "hers", 4), 3);
	cr_assert_eq(acm_add(a, "nope", 4), 4);
	cr_assert_eq(acm_add(a, "she", 3), 1, "the same string, the same id");
	for (int i = 5; i < 70; i++) {
		char s[16];

		snprintf(s, sizeof(s), "zz%02dzz", i);
		cr_assert_eq(acm_add(a, s, strlen(s)), (uint32_t)i);
	}
	acm_build(a);
	cr_assert_eq(acm_count(a), 70);
	cr_assert_eq(acm_words(a), 2);
	acm_scan(a, text, strlen(text), found);
	cr_assert_eq(found[0], 0xfULL); /* he she his hers, not nope */
	cr_assert_eq(found[1], 0);
	/* Piece by piece, the same. */
	memset(found, 0, sizeof(found));
	{
		uint32_t st = acm_feed(a, 0, "xx h", 4, found);

		st = acm_feed(a, st, "ers and his sh", 14, found);
		acm_feed(a, st, "ell zz69zz she", 14, found);
	}
	cr_assert_eq(found[0], 0xfULL);
	cr_assert_eq(found[1], 1ULL << (69 - 64));
	acm_free(a);
}

/*
 * Soundness: for each pattern of each shipped policy, subjects made of
 * its literals, their pieces and other words: whenever PCRE2 matches,
 * the prefilter lets it through; for exact patterns, the prefilter alone
 * gives PCRE2's answer.
 */
/* A lookaround matches no text: what is in it is not required, what is
 * around it is not adjacent. */
Test(literals, lookarounds)
{
	LITS("abc(?=def)ghi", "abc&ghi");
	LITS("abc(?!def)ghi.*", "abc&ghi");
	LITS(".*abc(?<=bc)ghi", "abc&ghi");
	LITS(".*abc(?<!x|y)ghi", "abc&ghi");
	LITS("(?!abc)def.*", "def");
	LITS(".*(?=abc).*", "-");
	/* A quantifier after one: given up. */
	LITS(".*abc(?=d)*efg.*", "-");
	/* What it does not understand inside: given up. */
	LITS(".*abc(?=\\x41)efg.*", "-");
	/* The linux policy's Python rules. */
	LITS("(?:(?![^ ]*\\.py |<)[^ ]+ )*+[^ ]*/(?:site|dist)-packages/"
	     "[^ ]*\\.py .*",
	     "site|dist&-packages/&.py ");
	LITS("(?:(?![^ ]*\\.py |<)[^ ]+ )*+(?:[^ ]*/lib/python\\d[.\\d]*/"
	     "[^ ]*\\.py|<frozen) .*",
	     "/lib/python|<frozen");
	LITS("(?:(?![^ ]*\\.py |<)[^ ]+ )*+(?:[^ ]*\\.py|<[^ >]*>) .*", "-");
	/* (Shorter ones, which a head pattern's prefilter takes.) */
	cr_assert_str_eq(lits_min("(?:(?![^ ]*\\.py |<)[^ ]+ )*+"
				  "(?:[^ ]*\\.py|<[^ >]*>) .*",
				  1),
			 ".py|<& ");
	literals_free(&l);
}

static uint64_t rnd = 88172645463325252ULL;

static uint64_t next(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

static void check_pattern(const char *re, size_t len, size_t min_len,
			  const char *where)
{
	static const char *const words[] = {
		"WebCore::Node::create", "v8::internal::Heap", "WTF::fastMalloc",
		"std::vector::push_back", "SkCanvas::draw", "main", "operator new",
		"RendererMain", " ", "::", "create ", "(", ")", "x",
		"/usr/lib/python3.11/json/encoder.py", "app.py", "<frozen os>",
		"/x/site-packages/m.py", "?", "<", ">",
	};
	struct literals lt;
	pcre2_code *code;
	pcre2_match_data *md;
	struct acm *a;
	uint32_t *ids;
	int err;
	PCRE2_SIZE off;

	if (!regex_literals(re, len, min_len, &lt))
		return;
	code = pcre2_compile((PCRE2_SPTR)re, len,
			     PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL,
			     &err, &off, NULL);
	cr_assert_not_null(code, "%s: %.*s", where, (int)len, re);
	md = pcre2_match_data_create(1, NULL);
	a = acm_new();
	ids = calloc(lt.n, sizeof(*ids));
	for (size_t i = 0; i < lt.n; i++)
		ids[i] = acm_add(a, lt.v[i], lt.len[i]);
	acm_build(a);
	for (int t = 0; t < 400; t++) {
		struct strbuf s = STRBUF_INIT;
		uint64_t found[8] = { 0 };
		uint64_t groups = 0;
		bool pass, match;
		int n = (int)(next() % 8);

		for (int k = 0; k < n; k++) {
			uint64_t r = next();

			if (k)
				sb_addch(&s, ' ');
			if (r % 3 == 0 && lt.n) {
				size_t i = (r >> 8) % lt.n;
				size_t cut = (r >> 16) % 4; /* sometimes a piece */

				sb_add(&s, lt.v[i],
				       cut == 0 && lt.len[i] > 1 ? lt.len[i] - 1
								  : lt.len[i]);
			} else {
				sb_addstr(&s, words[(r >> 8) %
						    ARRAY_SIZE(words)]);
			}
		}
		if (t == 0) { /* the regex's own text, and the literals */
			sb_reset(&s);
			for (size_t i = 0; i < lt.n; i++) {
				sb_add(&s, lt.v[i], lt.len[i]);
				sb_addch(&s, ' ');
			}
		}
		acm_scan(a, s.buf ? s.buf : "", s.len, found);
		for (size_t i = 0; i < lt.n; i++)
			if (found[ids[i] / 64] & (1ULL << (ids[i] % 64)))
				groups |= 1ULL << lt.group[i];
		pass = groups == (lt.ngroups >= 64 ? UINT64_MAX
						   : (1ULL << lt.ngroups) - 1);
		match = pcre2_match(code, (PCRE2_SPTR)(s.buf ? s.buf : ""),
				    s.len, 0, 0, md, NULL) >= 0;
		if (match)
			cr_assert(pass, "%s: %.*s matches '%s' but the "
				  "prefilter turned it away",
				  where, (int)len, re, s.buf);
		if (lt.exact)
			cr_assert_eq(pass, match, "%s: exact %.*s on '%s'",
				     where, (int)len, re, s.buf);
		sb_release(&s);
	}
	free(ids);
	acm_free(a);
	pcre2_match_data_free(md);
	pcre2_code_free(code);
	literals_free(&lt);
}

Test(literals, shipped_policies_are_safe)
{
	static const char *const names[] = {
		"l0", "l1", "l2", "t0", "sourcefile", "linux",
		"android.browser", "android.renderer", "android.webview",
	};
	unsigned checked = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[256];
		struct policy *p;

		snprintf(path, sizeof(path), "policies/%s.policy", names[i]);
		if (access(path, R_OK) != 0)
			cr_skip_test("run from the top of the tree");
		p = policy_load(path, names[i]);
		cr_assert_not_null(p, "%s", path);
		for (size_t r = 0; r < p->nrules; r++)
			for (int f = 0; f < COND_NFIELDS; f++) {
				const struct pattern *pat = p->rules[r].cond[f];

				if (!pat)
					continue;
				check_pattern(pat->text, pat->len, 3, path);
				/* (A head pattern's shorter ones.) */
				if (pat->head)
					check_pattern(pat->text, pat->len, 1,
						      path);
				checked++;
			}
		policy_free(p);
	}
	cr_assert_gt(checked, 200);
}
