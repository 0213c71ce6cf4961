/* Classification and aggregation of a snapshot, and page sharing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "aggregate.h"
#include "bucketfile.h"
#include "helpers.h"
#include "profile.h"
#include "symbol.h"
#include "util.h"

static struct model m;
static struct snapshot snap;
static struct policy *pol;

static void setup(void)
{
	model_init(&m);
}

static void teardown(void)
{
	snapshot_release(&snap);
	policy_free(pol);
	model_free(&m);
}

TestSuite(aggregate, .init = setup, .fini = teardown);

/* Buckets: 1 malloc "Cache::Insert", 2 malloc "Logger", 3 mmap "Pool". */
static void load_run(const char *heap)
{
	const char *b = write_file("a.00001.0001.buckets",
				   "1 malloc 0x10\n2 malloc 0x20\n3 mmap 0x30\n",
				   -1);
	const char *h = write_file("a.00001.0001.heap", heap, -1);

	cr_assert_eq(bucketfile_load(&m, b), 0);
	symbolize_model(&m, NULL, NULL);
	/* Fake symbols, as a symbolizer would have set them. */
	m.frames.v[0]->func = "Cache::Insert";
	m.frames.v[1]->func = "Logger::Append";
	m.frames.v[2]->func = "Pool::Grow";
	cr_assert_eq(profile_load(&snap, h, &m, NULL), 0);
}

static const char heap[] =
	"heap profile: DUMP_DEEP_6\n"
	"MMAP_LIST:\n"
	"1000-5000 rw-p 00000000 00:00 0\n"
	"  1000 - 3000  hooked 8192 / 8192 @ 3\n"
	"  3000 - 5000  unhooked 4096 / 8192\n"
	"6000-7000 r-xp 00000000 00:00 5 /bin/x\n"
	"  6000 - 7000  unhooked 4096 / 4096\n"
	"8000-9000 rw-p 00000000 00:00 0\n"
	"  8000 - 9000  hooked 4096 / 4096 @ 77\n"
	"GLOBAL_STATS:\n"
	"total 0 20480\nabsent 0 0\nfile-exec 0 4096\nfile-nonexec 0 0\n"
	"anonymous 0 16384\nstack 0 0\nother 0 0\nnonprofiled-total 0 8192\n"
	"nonprofiled-absent 0 0\nnonprofiled-anonymous 0 4096\n"
	"nonprofiled-file-exec 0 4096\nnonprofiled-file-nonexec 0 0\n"
	"nonprofiled-stack 0 0\nnonprofiled-other 0 0\n"
	"profiled-mmap 0 12288\nprofiled-malloc 300 310\n"
	"STACKTRACES:\n"
	"      8192       8192      1      0 @ 3\n"
	"       200        200      2      0 @ 1\n"
	"       100        100      1      0 @ 2\n"
	"        10         10      1      0 @ 99\n";

#define POLICY                                                               \
	"dmprof-policy 1\n"                                                  \
	"columns mmap-profiler mmap-tcmalloc FROM_HERE_FOR_TOTAL mustbezero " \
	"        unhooked-anon unhooked-file no-bucket mmap-pool tc-cache " \
	"        logger tc-unused UNTIL_HERE_FOR_TOTAL total-exclude-profiler" \
	"        total tc-total-log other-total-log mmap-total-log tc-no-log " \
	"        mmap-no-log filemapped\n"                                   \
	"rule mmap-profiler mmap stack='.*Profiler.*'\n"                     \
	"rule mmap-tcmalloc mmap stack='.*Pool.*'\n"                         \
	"rule mmap-pool mmap\n"                                              \
	"rule unhooked-anon unhooked path=''\n"                              \
	"rule unhooked-file unhooked\n"                                      \
	"rule tc-cache malloc stack='.*Cache.*'\n"                           \
	"rule logger malloc\n"

static int64_t col(const int64_t *v, const char *name)
{
	int c = policy_column(pol, name);

	cr_assert_geq(c, 0, "%s", name);
	return v[c];
}

Test(aggregate, the_original_accounting)
{
	struct classifier c;
	struct agg_stats stats = { 0 };
	struct agg_builtins b;
	int64_t v[64];

	load_run(heap);
	pol = policy_parse(POLICY, strlen(POLICY), "p.policy", NULL);
	cr_assert_not_null(pol);
	classifier_init(&c, pol, &m);
	cr_assert_eq(aggregate_snapshot(&c, &snap, NULL, v, &b, &stats), 0);
	cr_assert_eq(col(v, "mmap-tcmalloc"), 8192);
	cr_assert_eq(col(v, "unhooked-anon"), 4096);
	cr_assert_eq(col(v, "unhooked-file"), 4096);
	/* Region @77 and stack line @99 name undefined buckets. */
	cr_assert_eq(col(v, "no-bucket"), 4096 + 10);
	cr_assert_eq(col(v, "tc-cache"), 200);
	cr_assert_eq(col(v, "logger"), 100);
	cr_assert_eq(col(v, "tc-total-log"), 200);
	/* Not tc-: logger, and no-bucket lines and regions. */
	cr_assert_eq(col(v, "other-total-log"), 100 + 10 + 4096);
	cr_assert_eq(col(v, "mmap-total-log"), 8192);
	cr_assert_eq(col(v, "tc-no-log"), 310 - 200);
	cr_assert_eq(col(v, "mmap-no-log"), 12288 - 8192);
	cr_assert_eq(col(v, "tc-unused"), 8192 - 310);
	cr_assert_eq(col(v, "mustbezero"), 20480 - (12288 + 4096 + 4096));
	cr_assert_eq(col(v, "total-exclude-profiler"), 20480);
	cr_assert_eq(col(v, "filemapped"), 4096);
	cr_assert_eq(col(v, "FROM_HERE_FOR_TOTAL"), 0);
	cr_assert_eq(b.v[B_TC_TOTAL], 8192);
	cr_assert_eq(b.v[B_MMAP_TOTAL_RECORD], 12288);
	cr_assert_eq(stats.tc_unused_clamped, 0);
	/* Classification is cached by bucket. */
	cr_assert_eq(c.bucket_col[bucket_set_find(&m.buckets, 1)->index] - 1,
		     policy_column(pol, "tc-cache"));
	classifier_free(&c);
}

Test(aggregate, no_bucket_without_column_is_reported)
{
	static const char p2[] = "dmprof-policy 1\ncolumns a m u\n"
				 "rule a malloc\nrule m mmap\nrule u unhooked\n";
	struct classifier c;
	struct agg_stats stats = { 0 };
	int64_t v[8];

	load_run(heap);
	pol = policy_parse(p2, strlen(p2), "p.policy", NULL);
	classifier_init(&c, pol, &m);
	cr_assert_eq(aggregate_snapshot(&c, &snap, NULL, v, NULL, &stats), 0);
	cr_assert_eq(stats.hidden_no_bucket, 4096 + 10);
	cr_assert_eq(v[0], 300);
	classifier_free(&c);
}

Test(aggregate, tc_unused_clamped)
{
	static const char p3[] = "dmprof-policy 1\ncolumns a tc-unused m u\n"
				 "rule a malloc\nrule m mmap\nrule u unhooked\n";
	struct classifier c;
	struct agg_stats stats = { 0 };
	int64_t v[8];

	load_run(heap);
	pol = policy_parse(p3, strlen(p3), "p.policy", NULL);
	classifier_init(&c, pol, &m);
	cr_assert_eq(aggregate_snapshot(&c, &snap, NULL, v, NULL, &stats), 0);
	/* No mmap-tcmalloc column: 0 - 310 is clamped. */
	cr_assert_eq(v[1], 0);
	cr_assert_eq(stats.tc_unused_clamped, 1);
	classifier_free(&c);
}

/*
 * Free space a heap walk found comes as malloc lines (in profiled-malloc):
 * a rule gives them to malloc-unused, which stays the arenas less the
 * blocks in use, and counts them as its items.
 */
Test(aggregate, malloc_unused_takes_the_free_lines_rules_give_it)
{
	static const char p4[] =
		"dmprof-policy 1\n"
		"columns FROM_HERE_FOR_TOTAL a malloc-unused u "
		"UNTIL_HERE_FOR_TOTAL malloc-total mmap-tcmalloc\n"
		"rule mmap-tcmalloc mmap\nrule malloc-unused malloc "
		"stack='.*Logger.*'\nrule a malloc\nrule u unhooked\n";
	struct classifier c;
	struct agg_stats stats = { 0 };
	int64_t v[8];
	int unused;

	load_run(heap);
	pol = policy_parse(p4, strlen(p4), "p.policy", NULL);
	cr_assert_not_null(pol);
	unused = policy_column(pol, "malloc-unused");
	classifier_init(&c, pol, &m);
	cr_assert_eq(aggregate_snapshot(&c, &snap, NULL, v, NULL, &stats), 0);
	/* The arena (8192 + 4096 of the undefined bucket: no-bucket, not
	 * the arena's) less profiled-malloc 310, plus Logger's 100. */
	cr_assert_eq(col(v, "malloc-unused"), 8192 - 310 + 100);
	cr_assert_eq(col(v, "a"), 200);
	cr_assert_eq(col(v, "malloc-total"), 310);
	cr_assert(column_counts(pol, unused, ITEM_MALLOC, unused));
	cr_assert_not(column_counts(pol, unused, ITEM_HOOKED, unused));
	cr_assert_not(column_sums_items(pol, unused));
	classifier_free(&c);
}

Test(aggregate, verify_warns_on_mismatch)
{
	char *bad = xstrdup(heap);

	*strstr(bad, "anonymous 0 16384") = '\0';
	{
		struct strbuf sb = STRBUF_INIT;

		sb_addstr(&sb, bad);
		sb_addstr(&sb, "anonymous 0 16000");
		sb_addstr(&sb, strstr(heap, "anonymous 0 16384") + 17);
		load_run(sb.buf);
		sb_release(&sb);
	}
	free(bad);
	capture_stderr();
	aggregate_verify(&snap);
	cr_assert(strstr(stderr_text(), "GLOBAL_STATS says anonymous is 16000 "
					"committed bytes, MMAP_LIST adds up "
					"to 16384 (-384)"),
		  "%s", stderr_text());
}

static void write_proc(const char *prefix, int n, double t, const char *reason,
		       const char *pfs)
{
	char name[256], text[1024];

	snprintf(name, sizeof(name), "%s.%04d.heap", prefix, n);
	snprintf(text, sizeof(text),
		 "heap profile: DUMP_DEEP_6\nMETA:\nTime: %.0f\n%s%s%s"
		 "PageFrame: 24,Base64,PageCount\nMMAP_LIST:\n"
		 "1000-4000 r--p 00000000 00:00 0 /f\n  PF: %s\n"
		 "  1000 - 4000  unhooked 12288 / 12288\n"
		 "GLOBAL_STATS:\ntotal 0 0\nSTACKTRACES:\n",
		 t, reason ? "Reason: " : "", reason ? reason : "",
		 reason ? "\n" : "", pfs);
	write_file(name, text, -1);
}

Test(aggregate, sharing_closest_snapshot_and_exit)
{
	struct sharing sh;
	struct pfn_table group = { NULL, 0 };
	char first[2][600];

	write_proc("b.00002", 1, 100, NULL, "AAAB#B AAAC#B");
	write_proc("b.00002", 2, 110, NULL, "AAAD#B");
	write_proc("c.00003", 1, 100, NULL, "AAAB#B");
	write_proc("c.00003", 2, 105, "Exiting, 1 MB in use", "AAAB#B");
	snprintf(first[0], sizeof(first[0]), "%s/b.00002.0001.heap", tmpdir());
	snprintf(first[1], sizeof(first[1]), "%s/c.00003.0001.heap", tmpdir());
	{
		const char *argv[] = { first[0], first[1] };

		cr_assert_eq(sharing_load(&sh, argv, 2), 0);
	}
	/* t=101: b's first (before), c's first: B twice, C once. */
	sharing_at(&sh, 101, &group);
	cr_assert_eq(pfn_table_count(&group, 1), 2);
	cr_assert_eq(pfn_table_count(&group, 2), 1);
	cr_assert_eq(pfn_table_count(&group, 3), 0);
	/* t=99: within 3 s before the first snapshots: they count. */
	sharing_at(&sh, 99, &group);
	cr_assert_eq(pfn_table_count(&group, 1), 2);
	/* t=120: b's second; c exited at 105, so none of c. */
	sharing_at(&sh, 120, &group);
	cr_assert_eq(pfn_table_count(&group, 1), 0);
	cr_assert_eq(pfn_table_count(&group, 3), 1);
	/* t=90: nothing within 3 s after. */
	sharing_at(&sh, 90, &group);
	cr_assert_eq(group.n, 0);
	pfn_table_free(&group);
	sharing_free(&sh);
}

/* The stacks behind each column, as expand and pprof -c take them. */
Test(aggregate, column_counts_the_items_its_sum_takes)
{
	static const char text[] =
		"dmprof-policy 1\n"
		"columns FROM_HERE_FOR_TOTAL tc-a tc-unused mmap-x other-m "
		"u no-bucket UNTIL_HERE_FOR_TOTAL mmap-tcmalloc total "
		"malloc-total mmap-total tc-total-log mmap-total-log "
		"other-total-log tc-total rss\n"
		"rule mmap-tcmalloc mmap stack='.*Sbrk.*'\n"
		"rule mmap-x mmap stack='.*x.*'\nrule other-m mmap\n"
		"rule tc-a malloc\nrule u unhooked\n";
	struct policy *p = policy_parse(text, strlen(text), "c.policy", NULL);
	int a, x, om, u, arena;

	cr_assert_not_null(p);
	a = policy_column(p, "tc-a");
	x = policy_column(p, "mmap-x");
	om = policy_column(p, "other-m");
	u = policy_column(p, "u");
	arena = policy_column(p, "mmap-tcmalloc");
#define COUNTS(name, kind, col) \
	column_counts(p, policy_column(p, name), kind, col)
	/* A rule column: its own items, whatever their kind. */
	cr_assert(COUNTS("tc-a", ITEM_MALLOC, a));
	cr_assert_not(COUNTS("tc-a", ITEM_MALLOC, x));
	cr_assert(COUNTS("u", ITEM_UNHOOKED, u));
	cr_assert_not(COUNTS("u", ITEM_REGION_NO_BUCKET, -1));
	/* no-bucket: the items of unknown buckets, lines and regions. */
	cr_assert(COUNTS("no-bucket", ITEM_LINE_NO_BUCKET, -1));
	cr_assert(COUNTS("no-bucket", ITEM_REGION_NO_BUCKET, -1));
	cr_assert_not(COUNTS("no-bucket", ITEM_MALLOC, a));
	/* The totals of GLOBAL_STATS' profiled rows: every line, region. */
	cr_assert(COUNTS("malloc-total", ITEM_MALLOC, a));
	cr_assert(COUNTS("malloc-total", ITEM_LINE_NO_BUCKET, -1));
	cr_assert_not(COUNTS("malloc-total", ITEM_HOOKED, x));
	cr_assert(COUNTS("mmap-total", ITEM_HOOKED, om));
	cr_assert(COUNTS("mmap-total", ITEM_REGION_NO_BUCKET, -1));
	cr_assert_not(COUNTS("mmap-total", ITEM_UNHOOKED, u));
	/* The *-log sums, by column name. */
	cr_assert(COUNTS("tc-total-log", ITEM_MALLOC, a));
	cr_assert(COUNTS("mmap-total-log", ITEM_HOOKED, x));
	cr_assert(COUNTS("mmap-total-log", ITEM_HOOKED, arena));
	cr_assert_not(COUNTS("mmap-total-log", ITEM_HOOKED, om));
	cr_assert(COUNTS("other-total-log", ITEM_HOOKED, om));
	cr_assert(COUNTS("other-total-log", ITEM_LINE_NO_BUCKET, -1));
	cr_assert_not(COUNTS("other-total-log", ITEM_MALLOC, a));
	/* tc-total is the arenas' column. */
	cr_assert(COUNTS("tc-total", ITEM_HOOKED, arena));
	cr_assert_not(COUNTS("tc-total", ITEM_HOOKED, x));
#undef COUNTS
	/* Differences, GLOBAL_STATS rows and the kernel's view sum none. */
	cr_assert(column_sums_items(p, policy_column(p, "tc-total")));
	cr_assert(column_sums_items(p, policy_column(p, "no-bucket")));
	cr_assert_not(column_sums_items(p, policy_column(p, "total")));
	cr_assert_not(column_sums_items(p, policy_column(p, "tc-unused")));
	cr_assert_not(column_sums_items(p, policy_column(p, "rss")));
	policy_free(p);
}

/* Frame names of the memo tests below: names and files the shipped
 * policies' rules look for, and names they do not. */
static const char *const names[] = {
	"malloc", "calloc", "realloc", "operator new",
	"operator new[]", "__libc_malloc",
	"std::__cxx11::basic_string::_M_create",
	"std::vector<int>::_M_realloc_insert", "std::_Rb_tree::_M_insert",
	"std::allocator_traits::allocate", "_PyObject_Malloc",
	"PyList_New", "Perl_newSV", "rb_ary_new", "luaM_realloc_",
	"v8::internal::Heap::Allocate", "_IO_file_doallocate",
	"_dl_map_object", "WTF::fastMalloc", "WebCore::Node::create",
	"WebKit::WebView::load", "v8::internal::Factory::New",
	"tc_malloc", "main", "foo", "bar::baz", "?? after foo+0x10",
	"__strdup", "fopen", "skia::Canvas",
};
static const char *const files[] = {
	"third_party/WebKit/Source/core/dom/Node.cpp", "v8/src/heap.cc",
	"base/memory.cc", "?", "skia/ext/canvas.cc",
	"/usr/include/c++/12/bits/basic_string.tcc",
	/* (The linux policy's Python rules: their files.) */
	"/usr/lib/python3.11/json/encoder.py", "app.py",
	"<frozen importlib._bootstrap>", "/x/site-packages/m.py",
};
/* Each way of matching first (as later rules would hide what it
 * looked at): frame by frame, by the prefilter's scan, by source. */
#define TAIL "rule head malloc stack='(?:malloc |operator new )*[fb]\\w+.*'\n" \
	     "rule any malloc\nrule m mmap\nrule u unhooked\n"
static const char *const mine[] = {
	"dmprof-policy 1\ncolumns seq head any m u\n"
	"rule seq malloc stack='.*WebCore::.*v8::.*'\n" TAIL,
	"dmprof-policy 1\ncolumns scan head any m u\n"
	"rule scan malloc stack='.*Canvas\\b.*'\n" TAIL,
	"dmprof-policy 1\ncolumns src head any m u\n"
	"rule src malloc source='(?:\\S+ ){2}v8/.*'\n" TAIL,
	/* A whole-field rule first, its literal across frames, and
	 * alternatives that each end in ".*": clean stacks. */
	"dmprof-policy 1\ncolumns scan alt head any m u\n"
	"rule scan malloc stack='.* bar::baz\\b.*'\n"
	"rule alt malloc stack='malloc (?:fopen|__strdup).*|foo .*'\n"
	TAIL,
	/* One without literals: no stack is clean. */
	"dmprof-policy 1\ncolumns scan head any m u\n"
	"rule scan malloc stack='.*[fb]oo\\b.*'\n" TAIL,
};
#undef TAIL
static const char *const pols[] = { "linux", "l0", "l1", "l2", "t0",
				    "sourcefile", "0", "1", "2", "3", "4" };

/* Policy K of pols: a shipped one, or one of mine. */
static struct policy *memo_policy(size_t k)
{
	char path[128];
	struct policy *p;

	snprintf(path, sizeof(path), "policies/%s.policy", pols[k]);
	p = k < 6 ? policy_load(path, pols[k])
		  : policy_parse(mine[k - 6], strlen(mine[k - 6]), pols[k],
				 NULL);
	cr_assert_not_null(p, "%s", path);
	return p;
}

/* N frames more in M, named from names and files, some with a function
 * inlined at the call. */
static void named_frames(struct model *mm, size_t n)
{
	static struct inline_frame inl[ARRAY_SIZE(names)];
	size_t from = mm->frames.n;

	for (size_t i = from; i < from + n; i++)
		frames_intern(&mm->frames, 0x1000 + i);
	for (size_t i = from; i < mm->frames.n; i++) {
		struct frame *f = mm->frames.v[i];

		f->func = names[i % ARRAY_SIZE(names)];
		f->func_len = (uint32_t)strlen(f->func);
		f->file = files[i % ARRAY_SIZE(files)];
		f->symbolized = true;
		if (i % 7 == 1) {
			struct inline_frame *in = &inl[i % ARRAY_SIZE(inl)];

			in->func = names[(i + 7) % ARRAY_SIZE(names)];
			in->func_len = (uint32_t)strlen(in->func);
			in->file = files[(i + 1) % ARRAY_SIZE(files)];
			f->ninline = 1;
			f->inl = in;
		}
	}
}

/* N buckets more in M, of 0 to 8 frames drawn by *X from M's frames
 * (as many as the model has, from the one at FROM on for the first). */
static void drawn_buckets(struct model *mm, size_t n, size_t from,
			  uint64_t *x)
{
	uint64_t frames[8];
	size_t have = mm->frames.n;

	for (size_t i = 0; i < n; i++) {
		uint32_t depth;

		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		depth = (uint32_t)(*x % 9);
		for (uint32_t k = 0; k < depth; k++)
			frames[k] = 0x1000 + (k ? 0 : from) +
				    (*x >> (8 + 5 * k)) % (k ? have : have - from);
		cr_assert_not_null(model_intern_bucket(mm, ALLOC_MALLOC, frames,
						       depth, "x",
						       mm->buckets.n + 1));
	}
}

/*
 * What a stack's first frames decided, remembered by those frames, is
 * what matching the whole stack decides: every shipped policy, on stacks
 * of names its rules look for, with and without the memo.
 */
Test(aggregate, first_frames_memo_decides_as_matching_does)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	named_frames(&m, ARRAY_SIZE(names) * 2);
	drawn_buckets(&m, 4000, 0, &x);
	for (size_t k = 0; k < ARRAY_SIZE(pols); k++) {
		struct classifier with, without;
		size_t remembered;

		pol = memo_policy(k);
		classifier_init(&with, pol, &m);
		classifier_init(&without, pol, &m);
		without.prefix_off = true;
		/* Twice: the second time from what the first remembered. */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < m.buckets.n; i++) {
				const struct bucket *b = m.buckets.v[i];

				if (pass)
					with.bucket_col[b->index] = 0;
				cr_assert_eq(classify_malloc(&with, b),
					     classify_malloc(&without, b),
					     "%s: bucket %zu", pols[k], i);
			}
		/* And as the whole fields, built, say (the prefilter's
		 * literals, looked for frame by frame, stand for them). */
		for (size_t i = 0; i < m.buckets.n; i++) {
			const struct bucket *b = m.buckets.v[i];
			struct subject_text t = { 0 };
			struct subject subj;

			classify_subject(&without, b, NULL, 0, &subj, &t);
			cr_assert_eq(policy_match(pol, RULE_MALLOC, &subj,
						  NULL),
				     classify_malloc(&without, b),
				     "%s: bucket %zu: '%s'", pols[k], i,
				     subj.s[COND_SOURCE] ? subj.s[COND_SOURCE]
							 : "");
			subject_text_release(&t);
		}
		remembered = 0;
		for (size_t t = 0; t < ARRAY_SIZE(with.trie); t++) {
			remembered += with.trie[t].map.count;
			for (size_t i = 0; i < with.trie[t].nroot; i++)
				remembered += with.trie[t].root[i] != 0;
		}
		/* (Policies with anchored rules remember starts.) */
		if (!strcmp(pols[k], "linux") || k >= 6)
			cr_assert_gt(remembered, 0, "%s", pols[k]);
		classifier_free(&with);
		classifier_free(&without);
		policy_free(pol);
		pol = NULL;
	}
}

/*
 * The tries are keyed by a frame's text, not its address: a frame of the
 * same name and file as one before stands for it; one of another file,
 * with a function inlined, or without a name (its address its text) is
 * its own; frames interned after a bucket was classified get theirs at
 * the next.  Both decide as matching their whole stacks does.
 */
Test(aggregate, frames_of_one_text_share_their_decisions)
{
	static const struct inline_frame in = { "foo", "a.c", 3, 3 };
	uint64_t addr[] = { 0x100, 0x200, 0x300, 0x400, 0x500, 0x600, 0x700 };
	/* name, file; -1 inlined, 0 unnamed */
	struct { const char *func, *file; int kind; } f[] = {
		{ "foo", "a.c", 1 }, { "foo", "a.c", 1 }, { "foo", "b.c", 1 },
		{ "foo", "a.c", -1 }, { NULL, NULL, 0 }, { NULL, NULL, 0 },
		{ "foo", "b.c", 1 },
	};
	uint32_t want[] = { 0, 0, 2, 3, 4, 5, 2 };
	struct classifier c, without;

	pol = memo_policy(0);
	classifier_init(&c, pol, &m);
	classifier_init(&without, pol, &m);
	without.prefix_off = true;
	for (size_t i = 0; i < ARRAY_SIZE(addr); i++) {
		struct frame *fr = frame_get(&m.frames,
					     frames_intern(&m.frames, addr[i]));

		fr->func = f[i].func;
		fr->func_len = f[i].func ? (uint32_t)strlen(f[i].func) : 0;
		fr->file = f[i].file;
		if (f[i].kind < 0) {
			fr->ninline = 1;
			fr->inl = &in;
		}
		cr_assert_not_null(model_intern_bucket(&m, ALLOC_MALLOC,
						       &addr[i], 1, "x",
						       i + 1));
		/* (Each new frame's id at the next bucket's.) */
		cr_assert_eq(classify_malloc(&c, m.buckets.v[i]),
			     classify_malloc(&without, m.buckets.v[i]));
		cr_assert_eq(c.ncanon, i + 1);
	}
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		cr_assert_eq(c.canon[i], want[i], "frame %zu", i);
	/* (Two texts with a name, foo a.c and foo b.c; the rest their own.) */
	cr_assert_eq(c.ntexts, 2);
	classifier_free(&c);
	classifier_free(&without);
}

/*
 * Classified on every core (the clean scans' entries filled ahead, and
 * the frames plain in all of them), each bucket gets the column
 * matching its whole stack gives: over frames interned in two rounds,
 * the second after the first round's buckets were classified (the
 * frames' bits then made past the first's), then over frames interned
 * after that, whose buckets are too few for the other cores.
 */
Test(aggregate, every_core_decides_as_matching_does)
{
	setenv("DMPROF_THREADS", "2", 1);
	for (size_t k = 0; k < ARRAY_SIZE(pols); k++) {
		struct model mm;
		struct classifier all, without;
		uint64_t x = 0x9e3779b97f4a7c15ULL + k;

		model_init(&mm);
		pol = memo_policy(k);
		classifier_init(&all, pol, &mm);
		named_frames(&mm, 100);
		drawn_buckets(&mm, 9000, 0, &x);
		classify_buckets(&all);
		named_frames(&mm, 150);
		drawn_buckets(&mm, 9000, 100, &x);
		classify_buckets(&all);
		/* (Where the policy has such scans.) */
		if (all.clean_scan[0].a || all.clean_scan[1].a ||
		    all.head_scan[0].a || all.head_scan[1].a)
			cr_assert_eq(all.nall_plain, 250, "%s", pols[k]);
		named_frames(&mm, 40);
		drawn_buckets(&mm, 300, 250, &x);
		classify_buckets(&all);
		classifier_init(&without, pol, &mm);
		without.prefix_off = true;
		for (size_t i = 0; i < mm.buckets.n; i++) {
			const struct bucket *b = mm.buckets.v[i];

			cr_assert_eq(classify_malloc(&all, b),
				     classify_malloc(&without, b),
				     "%s: bucket %zu", pols[k], i);
		}
		classifier_free(&all);
		classifier_free(&without);
		policy_free(pol);
		pol = NULL;
		model_free(&mm);
	}
	unsetenv("DMPROF_THREADS");
}

/*
 * A policy whose first malloc rule takes anything decides every malloc
 * bucket by it, without a look at its stack (no joined names built);
 * one whose first malloc rule looks at names decides each by its own.
 */
Test(aggregate, first_malloc_rule_taking_all_decides_every_bucket)
{
	static const char all_first[] =
		"dmprof-policy 1\ncolumns all cache m u\n"
		"rule all malloc stack='.*'\n"
		"rule cache malloc stack='.*Cache.*'\n"
		"rule m mmap\nrule u unhooked\n";
	static const char named_first[] =
		"dmprof-policy 1\ncolumns cache all m u\n"
		"rule cache malloc stack='.*Cache.*'\n"
		"rule all malloc\n"
		"rule m mmap\nrule u unhooked\n";
	struct classifier c;

	load_run(heap);
	pol = policy_parse(all_first, strlen(all_first), "a.policy", NULL);
	cr_assert_not_null(pol);
	classifier_init(&c, pol, &m);
	cr_assert_eq(c.malloc_all, policy_column(pol, "all"));
	for (uint64_t id = 1; id <= 2; id++)
		cr_assert_eq(classify_malloc(&c, bucket_set_find(&m.buckets,
								 id)),
			     policy_column(pol, "all"));
	cr_assert_eq(c.stack.len, 0, "names joined: '%s'", sb_str(&c.stack));
	classifier_free(&c);
	policy_free(pol);

	pol = policy_parse(named_first, strlen(named_first), "n.policy",
			   NULL);
	cr_assert_not_null(pol);
	classifier_init(&c, pol, &m);
	cr_assert_eq(c.malloc_all, -1);
	cr_assert_eq(classify_malloc(&c, bucket_set_find(&m.buckets, 1)),
		     policy_column(pol, "cache"));
	cr_assert_eq(classify_malloc(&c, bucket_set_find(&m.buckets, 2)),
		     policy_column(pol, "all"));
	classifier_free(&c);
}

struct seen {
	size_t lines, regions, noted;
};

static int see_item(void *ctx, const struct item *it)
{
	struct seen *s = ctx;

	if (!it->line) {
		s->regions++;
		cr_assert_eq(it->stack_id, BUCKET_KEY_NONE);
		return 0;
	}
	s->lines++;
	if (it->stack_id != BUCKET_KEY_NONE) {
		s->noted++;
		cr_assert_not_null(it->bucket);
		cr_assert_eq(it->stack_id, it->bucket->stack->id);
	}
	return 0;
}

/* Items of a deep dump's lines carry their stacks' ids (as the reader
 * noted them) for a sink that asked; regions, and other sinks, none. */
Test(aggregate, items_by_stack_id)
{
	struct classifier c;
	struct seen by_id = { 0 }, plain = { 0 };

	load_run(heap);
	cr_assert_not_null(snap.line_stack);
	pol = policy_parse(POLICY, strlen(POLICY), "p.policy", NULL);
	cr_assert_not_null(pol);
	classifier_init(&c, pol, &m);
	capture_stderr();
	cr_assert_eq(aggregate_items_by_stack_id(&c, &snap, NULL, true,
						 see_item, &by_id),
		     0);
	cr_assert_eq(aggregate_items(&c, &snap, NULL, true, see_item, &plain),
		     0);
	/* (Two malloc lines noted; the unknown bucket's line none; the
	 * mmap line goes as its region.) */
	cr_assert_eq(by_id.lines, 3);
	cr_assert_eq(by_id.noted, 2);
	cr_assert_gt(by_id.regions, 0);
	cr_assert_eq(plain.noted, 0);
	classifier_free(&c);
}
