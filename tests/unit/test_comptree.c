/* The components' tree: splitting names, sums, order, <self>, catch-alls. */
#include <criterion/criterion.h>
#include <string.h>

#include "comptree.h"
#include "helpers.h"
#include "policy.h"
#include "util.h"

#define HEAD "dmprof-policy 1\n"
/* Where malloc components are parts, the arenas must be a column outside
 * (policy check's rule): ARENA ends the columns, ARENA_RULE comes first. */
#define ARENA "  UNTIL_HERE_FOR_TOTAL allocator-arena\n"
#define ARENA_RULE "rule allocator-arena mmap stack='.*arena.*'\n"

static struct policy *parse(const char *text)
{
	struct policy *p = policy_parse(text, strlen(text), "t.policy", NULL);

	cr_assert_not_null(p, "policy rejected:\n%s", text);
	return p;
}

/* VALUES by column name, "name=bytes" pairs ended by NULL. */
static int64_t *row(const struct policy *p, const char *const *set)
{
	int64_t *v = xcalloc(p->ncols, sizeof(*v));

	for (; *set; set += 2) {
		int c = policy_column(p, set[0]);

		cr_assert(c >= 0, "no column '%s'", set[0]);
		v[c] = strtoll(set[1], NULL, 10);
	}
	return v;
}

static const struct comptree_node *node(const struct comptree *t,
					const char *path)
{
	const struct comptree_node *n = comptree_find(t, path);

	cr_assert_not_null(n, "no node '%s'", path);
	return n;
}

/* Every inner node is the sum of its children; children largest first. */
static void check_sums(const struct comptree_node *n)
{
	int64_t sum = 0;

	for (size_t i = 0; i < n->nchildren; i++) {
		cr_assert_eq(n->children[i]->parent, n);
		cr_assert_eq(n->children[i]->depth, n->depth + 1);
		if (i)
			cr_assert_geq(n->children[i - 1]->bytes,
				      n->children[i]->bytes);
		check_sums(n->children[i]);
		sum += n->children[i]->bytes;
	}
	if (n->nchildren) {
		cr_assert_eq(n->col, -1, "inner node '%s' is a column",
			     n->path);
		cr_assert_eq(n->bytes, sum, "'%s': %lld, children %lld",
			     n->path, (long long)n->bytes, (long long)sum);
	} else if (n->depth) {
		cr_assert_geq(n->col, 0, "leaf '%s' is no column", n->path);
	}
}

/* The linux policy's shape: the markers' columns only, split at '-'. */
#define LINUX                                                              \
	HEAD "columns second FROM_HERE_FOR_TOTAL mustbezero\n"             \
	     "  malloc-cxx-string malloc-cxx-containers malloc-app\n"      \
	     "  malloc-unused mmap-thread-stacks mmap-app\n"               \
	     "  unhooked-file-exec unhooked-file-data unhooked-other\n"    \
	     "  no-bucket UNTIL_HERE_FOR_TOTAL total profiler\n"           \
	     "  allocator-arena\n"                                         \
	     "rule profiler mmap stack='.*dmprof_recorder.*'\n"            \
	     "rule allocator-arena mmap stack='.*arena.*'\n"               \
	     "rule mmap-thread-stacks mmap stack='.*pthread_create.*'\n"   \
	     "rule mmap-app mmap\n"                                        \
	     "rule malloc-cxx-string malloc stack='.*basic_string.*'\n"    \
	     "rule malloc-cxx-containers malloc stack='.*vector.*'\n"      \
	     "rule malloc-app malloc stack='.*'\n"                         \
	     "rule unhooked-file-exec unhooked path='/.*' perm='..x.'\n"   \
	     "rule unhooked-file-data unhooked path='/.*'\n"               \
	     "rule unhooked-other unhooked\n"

Test(comptree, linux_shape_and_sums)
{
	struct policy *p = parse(LINUX);
	static const char *const set[] = {
		"malloc-cxx-string", "4000", "malloc-cxx-containers", "700",
		"malloc-app", "600", "malloc-unused", "800",
		"mmap-thread-stacks", "50", "mmap-app", "2000",
		"unhooked-file-exec", "1200", "unhooked-file-data", "260",
		"unhooked-other", "8", "total", "99999", "profiler", "256",
		"allocator-arena", "6000", NULL,
	};
	int64_t *v = row(p, set);
	struct comptree t;
	const struct comptree_node *n;

	cr_assert_eq(comptree_build(&t, p, v), 0);
	check_sums(t.root);
	/* Only the partition: no total, profiler, arenas, markers, time. */
	cr_assert_eq(t.root->bytes, 4000 + 700 + 600 + 800 + 50 + 2000 +
					    1200 + 260 + 8);
	cr_assert_null(comptree_find(&t, "total"));
	cr_assert_null(comptree_find(&t, "allocator-arena"));
	cr_assert_str_eq(t.root->name, "");
	cr_assert_str_eq(t.root->path, "");
	/* Top level: malloc 6100, mmap 2050, unhooked 1468, then zeros. */
	cr_assert_str_eq(t.root->children[0]->name, "malloc");
	cr_assert_str_eq(t.root->children[1]->name, "mmap");
	cr_assert_str_eq(t.root->children[2]->name, "unhooked");
	n = node(&t, "malloc-cxx");
	cr_assert_str_eq(n->name, "cxx");
	cr_assert_eq(n->bytes, 4700);
	cr_assert_eq(n->nchildren, 2);
	cr_assert_str_eq(n->children[0]->name, "string");
	cr_assert_str_eq(n->children[0]->path, "malloc-cxx-string");
	cr_assert_eq(node(&t, "malloc")->bytes, 4000 + 700 + 600 + 800);
	cr_assert_eq(node(&t, "unhooked-file")->bytes, 1460);
	cr_assert_eq(node(&t, "unhooked-file")->parent,
		     node(&t, "unhooked"));
	/* A chain of one child is one node: mmap-thread-stacks. */
	n = node(&t, "mmap-thread-stacks");
	cr_assert_str_eq(n->name, "thread-stacks");
	cr_assert_eq(n->parent, node(&t, "mmap"));
	cr_assert_null(comptree_find(&t, "mmap-thread"));
	/* As is no-bucket, at the top. */
	cr_assert_str_eq(node(&t, "no-bucket")->name, "no-bucket");
	cr_assert_eq(node(&t, "no-bucket")->depth, 1);
	cr_assert(comptree_empty(node(&t, "no-bucket")));
	cr_assert_not(comptree_empty(node(&t, "mmap")));
	comptree_free(&t);
	free(v);
	policy_free(p);
}

Test(comptree, unclassified_is_the_catch_all)
{
	struct policy *p = parse(LINUX);
	struct comptree t;

	cr_assert_eq(comptree_build(&t, p, NULL), 0);
	/* malloc-app's rule has stack='.*': it matches anything. */
	cr_assert(node(&t, "malloc-app")->unclassified);
	cr_assert(node(&t, "mmap-app")->unclassified);
	cr_assert(node(&t, "unhooked-other")->unclassified);
	cr_assert_not(node(&t, "malloc-cxx-string")->unclassified);
	cr_assert_not(node(&t, "unhooked-file-data")->unclassified);
	/* Computed parts have no rule. */
	cr_assert_not(node(&t, "malloc-unused")->unclassified);
	cr_assert_not(node(&t, "malloc")->unclassified);
	cr_assert_eq(t.root->bytes, 0);
	cr_assert(comptree_empty(t.root));
	comptree_free(&t);
	policy_free(p);
}

Test(comptree, leaf_and_parent_gets_a_self)
{
	struct policy *p = parse(
		HEAD "columns FROM_HERE_FOR_TOTAL malloc malloc-app-big\n"
		"  malloc-app mmap unhooked " ARENA ARENA_RULE
		"rule malloc-app malloc stack='.*App.*'\n"
		"rule malloc-app-big malloc stack='.*Big.*'\n"
		"rule malloc malloc\nrule mmap mmap\nrule unhooked unhooked\n");
	static const char *const set[] = {
		"malloc", "5", "malloc-app", "30", "malloc-app-big", "20",
		"mmap", "1", NULL,
	};
	int64_t *v = row(p, set);
	struct comptree t;
	const struct comptree_node *m, *a, *self;

	cr_assert_eq(comptree_build(&t, p, v), 0);
	check_sums(t.root);
	m = node(&t, "malloc");
	cr_assert(m->leaf_and_parent);
	cr_assert_not(m->unclassified);
	cr_assert_eq(m->bytes, 55);
	cr_assert_eq(m->nchildren, 2);
	/* malloc-app is both too, one level down. */
	a = m->children[0];
	cr_assert_str_eq(a->path, "malloc-app");
	cr_assert(a->leaf_and_parent);
	cr_assert_eq(a->bytes, 50);
	cr_assert_str_eq(a->children[0]->name, "<self>");
	cr_assert_str_eq(a->children[0]->path, "malloc-app");
	cr_assert_eq(a->children[0]->bytes, 30);
	cr_assert_str_eq(a->children[1]->name, "big");
	self = m->children[1];
	cr_assert(self->self);
	cr_assert_str_eq(self->name, "<self>");
	cr_assert_str_eq(self->path, "malloc");
	cr_assert_eq(self->col, policy_column(p, "malloc"));
	cr_assert_eq(self->bytes, 5);
	cr_assert(self->unclassified);
	/* comptree_find gives the node, not its <self>. */
	cr_assert_eq(comptree_find(&t, "malloc"), m);
	/* A lone component stays a leaf. */
	cr_assert_eq(node(&t, "mmap")->nchildren, 0);
	cr_assert(node(&t, "mmap")->unclassified);
	comptree_free(&t);
	free(v);
	policy_free(p);
}

Test(comptree, slash_names_split_at_slash)
{
	struct policy *p = parse(
		HEAD "columns FROM_HERE_FOR_TOTAL malloc/cxx/string\n"
		"  malloc/cxx/containers malloc/app-x malloc-leaked\n"
		"  mmap unhooked/file-exec unhooked/other " ARENA ARENA_RULE
		"rule malloc/cxx/string malloc stack='.*string.*'\n"
		"rule malloc/cxx/containers malloc stack='.*vector.*'\n"
		"rule malloc-leaked malloc stack='.*leak.*'\n"
		"rule malloc/app-x malloc\nrule mmap mmap\n"
		"rule unhooked/file-exec unhooked path='/.*'\n"
		"rule unhooked/other unhooked\n");
	static const char *const set[] = {
		"malloc/cxx/string", "10", "malloc/cxx/containers", "20",
		"malloc/app-x", "3", "malloc-leaked", "4",
		"unhooked/file-exec", "7", NULL,
	};
	int64_t *v = row(p, set);
	struct comptree t;
	const struct comptree_node *m;

	cr_assert_eq(comptree_build(&t, p, v), 0);
	check_sums(t.root);
	m = node(&t, "malloc");
	cr_assert_eq(m->bytes, 37);
	cr_assert_eq(m->nchildren, 3); /* cxx, leaked (at '-'), app-x */
	cr_assert_str_eq(m->children[0]->path, "malloc/cxx");
	cr_assert_str_eq(m->children[0]->children[0]->name, "containers");
	cr_assert_str_eq(m->children[1]->path, "malloc-leaked");
	cr_assert_str_eq(m->children[2]->name, "app-x");
	cr_assert(m->children[2]->unclassified);
	cr_assert_str_eq(node(&t, "unhooked/file-exec")->name, "file-exec");
	cr_assert_null(comptree_find(&t, "unhooked/file"));
	comptree_free(&t);
	free(v);
	policy_free(p);
}

Test(comptree, refill_resorts)
{
	struct policy *p = parse(LINUX);
	static const char *const a[] = {
		"malloc-cxx-string", "10", "malloc-cxx-containers", "5", NULL,
	};
	static const char *const b[] = {
		"malloc-cxx-string", "1", "malloc-cxx-containers", "5",
		"mmap-app", "100", NULL,
	};
	int64_t *va = row(p, a), *vb = row(p, b);
	struct comptree t;
	const struct comptree_node *cxx;

	cr_assert_eq(comptree_build(&t, p, va), 0);
	cxx = node(&t, "malloc-cxx");
	cr_assert_str_eq(cxx->children[0]->name, "string");
	cr_assert_str_eq(t.root->children[0]->name, "malloc");
	cr_assert_eq(comptree_fill(&t, vb), 0);
	check_sums(t.root);
	cr_assert_str_eq(cxx->children[0]->name, "containers");
	cr_assert_str_eq(t.root->children[0]->name, "mmap");
	cr_assert_eq(t.root->bytes, 106);
	comptree_free(&t);
	free(va);
	free(vb);
	policy_free(p);
}

Test(comptree, ties_keep_policy_order)
{
	struct policy *p = parse(
		HEAD "columns FROM_HERE_FOR_TOTAL zz-b zz-a aa mmap unhooked\n"
		ARENA ARENA_RULE
		"rule aa malloc stack='.*x.*'\nrule zz-a malloc stack='.*y.*'\n"
		"rule zz-b malloc\nrule mmap mmap\nrule unhooked unhooked\n");
	struct comptree t;

	cr_assert_eq(comptree_build(&t, p, NULL), 0);
	cr_assert_str_eq(t.root->children[0]->name, "zz");
	cr_assert_str_eq(t.root->children[0]->children[0]->name, "b");
	cr_assert_str_eq(t.root->children[1]->name, "aa");
	comptree_free(&t);
	policy_free(p);
}

Test(comptree, odd_separators)
{
	struct policy *p = parse(
		HEAD "columns FROM_HERE_FOR_TOTAL -lead trail- a--b a--c\n"
		"  mmap unhooked\n"
		ARENA ARENA_RULE
		"rule -lead malloc stack='1'\nrule a--b malloc stack='2'\n"
		"rule a--c malloc stack='3'\n"
		"rule trail- malloc\nrule mmap mmap\nrule unhooked unhooked\n");
	struct comptree t;

	cr_assert_eq(comptree_build(&t, p, NULL), 0);
	/* A separator at either end, or doubled, splits nothing. */
	cr_assert_str_eq(node(&t, "-lead")->name, "-lead");
	cr_assert_eq(node(&t, "-lead")->depth, 1);
	cr_assert_str_eq(node(&t, "trail-")->name, "trail-");
	/* "a--b" is "a-", "b". */
	cr_assert_str_eq(node(&t, "a-")->name, "a-");
	cr_assert_str_eq(node(&t, "a--b")->name, "b");
	comptree_free(&t);
	policy_free(p);
}

Test(comptree, deep_names_stop_at_max_depth)
{
	struct policy *p = parse(
		HEAD "columns FROM_HERE_FOR_TOTAL\n"
		"  a-b-c-d-e-f-g-h-i-j-k-l-m-n-x a-b-c-d-e-f-g-h-i-j-k-l-m-n-y\n"
		"  mmap unhooked " ARENA ARENA_RULE
		"rule a-b-c-d-e-f-g-h-i-j-k-l-m-n-x malloc stack='x'\n"
		"rule a-b-c-d-e-f-g-h-i-j-k-l-m-n-y malloc\n"
		"rule mmap mmap\nrule unhooked unhooked\n");
	struct comptree t;
	const struct comptree_node *x, *y;

	cr_assert_eq(comptree_build(&t, p, NULL), 0);
	x = node(&t, "a-b-c-d-e-f-g-h-i-j-k-l-m-n-x");
	y = node(&t, "a-b-c-d-e-f-g-h-i-j-k-l-m-n-y");
	/* Past COMPTREE_MAX_DEPTH segments the last holds the rest: both
	 * end at depth 12, as "l-m-n-x" and "l-m-n-y", under the chain
	 * "a-b-...-k", made one node. */
	cr_assert_eq(x->parent, y->parent);
	cr_assert_str_eq(x->name, "l-m-n-x");
	cr_assert_str_eq(x->parent->name, "a-b-c-d-e-f-g-h-i-j-k");
	cr_assert_eq(x->depth, 2);
	comptree_free(&t);
	policy_free(p);
}

Test(comptree, one_node_for_two_names_is_an_error)
{
	struct policy *p = parse(
		HEAD "columns FROM_HERE_FOR_TOTAL u-file u/file mmap\n"
		ARENA ARENA_RULE
		"rule u/file unhooked path='/.*'\nrule u-file unhooked\n"
		"rule mmap mmap\nrule mmap malloc\n");
	struct comptree t;

	capture_stderr();
	cr_assert_eq(comptree_build(&t, p, NULL), -1);
	cr_assert(strstr(stderr_text(), "t.policy:2:"), "%s", stderr_text());
	cr_assert(strstr(stderr_text(), "components 'u-file' and 'u/file' "
					"make one node of the tree"),
		  "%s", stderr_text());
	cr_assert_eq(t.nall, 0);
	comptree_free(&t);
	policy_free(p);
}

Test(comptree, overflow_is_an_error)
{
	struct policy *p = parse(LINUX);
	static const char *const set[] = {
		"malloc-cxx-string", "9223372036854775807",
		"malloc-cxx-containers", "1", NULL,
	};
	int64_t *v = row(p, set);
	struct comptree t;

	capture_stderr();
	cr_assert_eq(comptree_build(&t, p, v), -1);
	cr_assert(strstr(stderr_text(), "do not fit"), "%s", stderr_text());
	free(v);
	policy_free(p);
}
