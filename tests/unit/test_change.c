/* Changes between snapshots: growth at every step, counts, two runs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "change.h"
#include "helpers.h"
#include "policy.h"
#include "symbol.h"

static const char policy_text[] =
	"dmprof-policy 1\n"
	"columns FROM_HERE_FOR_TOTAL app mmap unhooked UNTIL_HERE_FOR_TOTAL "
	"mmap-tcmalloc\n"
	"rule mmap-tcmalloc mmap stack='.*Sbrk.*'\n"
	"rule app malloc\nrule mmap mmap\nrule unhooked unhooked\n";

struct open_run {
	struct run r;
	struct policy *p;
	struct classifier cls;
	struct sym_options opts;
};

static void open_run_with(struct open_run *o, const char *first,
			  unsigned flags, const char *policy)
{
	memset(o, 0, sizeof(*o));
	cr_assert_eq(run_open(&o->r, first, flags, &o->opts, NULL), 0);
	o->p = policy_parse(policy, strlen(policy), "t.policy", NULL);
	cr_assert_not_null(o->p);
	classifier_init(&o->cls, o->p, &o->r.model);
}

static void open_run(struct open_run *o, const char *first, unsigned flags)
{
	open_run_with(o, first, flags, policy_text);
}

static void close_run(struct open_run *o)
{
	classifier_free(&o->cls);
	policy_free(o->p);
	run_close(&o->r);
}

/*
 * gperftools dumps, frames innermost first: 0x10 grows 100, 200, 300
 * (leaks), 0x20 shrinks 500, 400, 300, 0x30 keeps 0 but allocated 1000
 * then 3000 bytes (churn), 0x40 is 50, 70, 70 (grew, then not).
 */
static const char *const dumps[] = {
	"heap profile: 6: 650 [ 8: 1650] @ heapprofile\n"
	"1: 100 [ 1: 100] @ 0x10 0x99\n"
	"5: 500 [ 5: 500] @ 0x20 0x99\n"
	"0: 0 [ 1: 1000] @ 0x30 0x99\n"
	"1: 50 [ 1: 50] @ 0x40 0x99\n",
	"heap profile: 6: 670 [ 8: 1650] @ heapprofile\n"
	"2: 200 [ 2: 200] @ 0x10 0x99\n"
	"4: 400 [ 5: 500] @ 0x20 0x99\n"
	"0: 0 [ 2: 2000] @ 0x30 0x99\n"
	"1: 70 [ 1: 70] @ 0x40 0x99\n",
	"heap profile: 6: 670 [ 8: 1650] @ heapprofile\n"
	"3: 300 [ 3: 300] @ 0x10 0x99\n"
	"3: 300 [ 5: 500] @ 0x20 0x99\n"
	"0: 0 [ 3: 3000] @ 0x30 0x99\n"
	"1: 70 [ 1: 70] @ 0x40 0x99\n",
};

static const struct change *of(const struct changes *c, uint64_t frame)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct stack *st = c->v[i].st;
		const struct frame *f = frame_get(&c->v[i].m->frames,
						  st->frames[0]);

		if (f->addr == frame)
			return &c->v[i];
	}
	cr_assert_fail("no change of the stack at %#lx", (unsigned long)frame);
	return NULL;
}

static void write_run(const char *prefix)
{
	char name[64];

	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s.%04d.heap", prefix, i + 1);
		write_file(name, dumps[i], -1);
	}
}

Test(change, over_a_run)
{
	struct open_run o;
	struct changes c;
	char first[4096];

	write_run("p");
	snprintf(first, sizeof(first), "%s/p.0001.heap", tmpdir());
	open_run(&o, first, RUN_ALL_DUMPS);
	cr_assert_eq(changes_in_run(&c, &o.r, &o.cls, 0, 2), 0);
	cr_assert_eq(c.has, CHANGES_RUN | CHANGES_COUNTS |
				    CHANGES_ALLOC_BYTES | CHANGES_SERIES);
	cr_assert_eq(c.snapshots, 3);
	cr_assert_eq(of(&c, 0x10)->a, 100);
	cr_assert_eq(of(&c, 0x10)->b, 300);
	cr_assert(of(&c, 0x10)->suspect);
	cr_assert_eq(of(&c, 0x10)->allocs, 2);
	cr_assert_eq(of(&c, 0x10)->allocated, 200);
	cr_assert_not(of(&c, 0x20)->suspect);
	cr_assert_eq(of(&c, 0x20)->frees, 2);
	cr_assert_eq(of(&c, 0x30)->a, 0);
	cr_assert_eq(of(&c, 0x30)->allocated, 2000);
	cr_assert_eq(of(&c, 0x30)->col, policy_column(o.p, "app"));
	cr_assert_not(of(&c, 0x40)->suspect);
	cr_assert_eq(c.shared, 3);
	cr_assert_eq(c.a.values[policy_column(o.p, "app")], 650);
	cr_assert_eq(c.b.values[policy_column(o.p, "app")], 670);
	changes_free(&c);
	/* Backwards: changes, but no counts nor growth. */
	cr_assert_eq(changes_in_run(&c, &o.r, &o.cls, 2, 0), 0);
	cr_assert_eq(c.has, CHANGES_RUN);
	cr_assert_eq(of(&c, 0x10)->b, 100);
	cr_assert_eq(of(&c, 0x10)->allocs, 0);
	cr_assert_not(of(&c, 0x20)->suspect);
	changes_free(&c);
	close_run(&o);
}

Test(change, across_runs_by_names)
{
	struct open_run a, b;
	struct changes c;
	char pa[4096], pb[4096];

	/* Unnamed frames match by their file and offset there: libx.so is
	 * mapped elsewhere in the second run. */
	write_file("x.0001.heap",
		   "heap profile: 2: 250 [ 2: 250] @ heapprofile\n"
		   "1: 200 [ 1: 200] @ 0x1010 0x1090\n"
		   "1: 50 [ 1: 50] @ 0x1020 0x1090\n"
		   "\nMAPPED_LIBRARIES:\n"
		   "00001000-00002000 r-xp 00000000 00:00 1 /lib/libx.so\n",
		   -1);
	write_file("y.0001.heap",
		   "heap profile: 2: 5010 [ 2: 5010] @ heapprofile\n"
		   "1: 10 [ 1: 10] @ 0x7f0000000010 0x7f0000000090\n"
		   "1: 5000 [ 1: 5000] @ 0x7f0000000030 0x7f0000000090\n"
		   "\nMAPPED_LIBRARIES:\n"
		   "7f0000000000-7f0000001000 r-xp 00000000 00:00 1 /lib/libx.so\n",
		   -1);
	snprintf(pa, sizeof(pa), "%s/x.0001.heap", tmpdir());
	snprintf(pb, sizeof(pb), "%s/y.0001.heap", tmpdir());
	open_run(&a, pa, 0);
	open_run(&b, pb, 0);
	cr_assert_eq(changes_across(&c, &a.r, &a.cls, &b.r, &b.cls), 0);
	cr_assert_eq(c.has, 0);
	/* libx.so+0x10 in both; +0x20 only in A, +0x30 only in B. */
	cr_assert_eq(c.n, 3);
	cr_assert_eq(c.shared, 1);
	cr_assert_eq(of(&c, 0x7f0000000010)->a, 200);
	cr_assert_eq(of(&c, 0x7f0000000010)->b, 10);
	cr_assert_eq(of(&c, 0x1020)->a, 50);
	cr_assert_eq(of(&c, 0x1020)->b, 0);
	cr_assert_eq(of(&c, 0x7f0000000030)->a, 0);
	cr_assert_eq(of(&c, 0x7f0000000030)->b, 5000);
	changes_free(&c);
	close_run(&b);
	close_run(&a);
}

/*
 * What a stack that leaves a snapshot did: it shrank (to nothing), when
 * it comes back as when it never does; a stack that comes late did not.
 */
Test(change, stacks_that_go_shrank)
{
	/* Bytes of 0x50 .. 0xb0 in five dumps; -1: not in the dump. */
	static const int bytes[8][5] = {
		{ 100, -1, 300, 400, 500 },  /* 0x50: went, came back */
		{ 100, 200, 300, 400, -1 },  /* 0x60: went at the end */
		{ 100, 200, 300, 400, 500 }, /* 0x70: a leak */
		{ 100, 0, 100, 200, 300 },   /* 0x80: down to 0, in it */
		{ -1, -1, 100, 200, 300 },   /* 0x90: came late */
		{ -1, -1, -1, 100, 200 },    /* 0xa0: came later, grew on */
		{ -1, -1, -1, -1, 100 },     /* 0xb0: came at the end */
		{ 100, -1, -1, -1, -1 },     /* 0xc0: in the first only */
	};
	struct open_run o;
	struct changes c;
	char first[4096], name[64];

	for (int d = 0; d < 5; d++) {
		struct strbuf sb = STRBUF_INIT;

		sb_addstr(&sb, "heap profile: 1: 1 [ 1: 1] @ heapprofile\n");
		for (int s = 0; s < 8; s++)
			if (bytes[s][d] >= 0)
				sb_addf(&sb, "1: %d [ 1: %d] @ 0x%x 0x99\n",
					bytes[s][d], bytes[s][d], 0x50 + 16 * s);
		snprintf(name, sizeof(name), "q.%04d.heap", d + 1);
		write_file(name, sb.buf, -1);
		sb_release(&sb);
	}
	snprintf(first, sizeof(first), "%s/q.0001.heap", tmpdir());
	capture_stderr();
	open_run(&o, first, RUN_ALL_DUMPS);
	cr_assert_eq(changes_in_run(&c, &o.r, &o.cls, 0, 4), 0);
	cr_assert(c.has & CHANGES_SERIES);
	cr_assert_not(of(&c, 0x50)->suspect);
	cr_assert_not(of(&c, 0x60)->suspect);
	cr_assert_eq(of(&c, 0x60)->b, 0);
	cr_assert(of(&c, 0x70)->suspect);
	cr_assert_not(of(&c, 0x80)->suspect);
	cr_assert(of(&c, 0x90)->suspect);
	cr_assert_eq(of(&c, 0x90)->a, 0);
	/* (Two steps of growth since it came: a leak that started late;
	 * one step is not yet one.) */
	cr_assert(of(&c, 0xa0)->suspect);
	cr_assert_not(of(&c, 0xb0)->suspect);
	cr_assert_eq(of(&c, 0xc0)->a, 100);
	cr_assert_eq(of(&c, 0xc0)->b, 0);
	cr_assert_not(of(&c, 0xc0)->suspect);
	changes_free(&c);
	close_run(&o);
}

/*
 * A walk on two cores (two dumps read ahead, the buckets classified on
 * both) as on one: a deep run of 9,000 buckets (enough to be classified
 * ahead, as for a whole run), two buckets to a stack, the stacks in two
 * columns, lines that come, go and come back: the same changes.
 */
Test(change, a_walk_on_two_cores_as_on_one)
{
	static const char policy[] =
		"dmprof-policy 1\n"
		"columns FROM_HERE_FOR_TOTAL leak app mmap unhooked "
		"UNTIL_HERE_FOR_TOTAL mmap-tcmalloc\n"
		"rule mmap-tcmalloc mmap stack='.*Sbrk.*'\n"
		"rule leak malloc stack='0x00000000000b1.*'\n"
		"rule app malloc\nrule mmap mmap\nrule unhooked unhooked\n";
	enum { NB = 9000, ND = 4 };
	struct strbuf sb = STRBUF_INIT;
	struct changes c[2];
	struct open_run o[2];
	char first[4096], name[64];

	for (int i = 0; i < NB; i++)
		sb_addf(&sb, "%d malloc 0x%x 0x99\n", i, 0xa000 + i / 2);
	write_file("w.00001.0001.buckets", sb.buf, (long)sb.len);
	for (int d = 0; d < ND; d++) {
		sb_reset(&sb);
		sb_addstr(&sb, "heap profile: DUMP_DEEP_6\nGLOBAL_STATS:\n"
			       "total 1 2\nSTACKTRACES:\n"
			       "   virtual  committed\n");
		for (int i = 0; i < NB; i++) {
			long long bytes = (i * 13LL + d * 101LL) % 1000;

			if ((i * 7 + d) % 5 == 0)
				continue; /* (not in this dump) */
			sb_addf(&sb, "%10lld %10lld %6d %6d @ %d\n", bytes,
				bytes, 1 + d + i % 3, d, i);
		}
		snprintf(name, sizeof(name), "w.00001.%04d.heap", d + 1);
		write_file(name, sb.buf, (long)sb.len);
	}
	sb_release(&sb);
	snprintf(first, sizeof(first), "%s/w.00001.0001.heap", tmpdir());
	capture_stderr();
	/* (Each run's model kept open: the changes point into it.) */
	for (int k = 0; k < 2; k++) {
		setenv("DMPROF_THREADS", k ? "2" : "1", 1);
		open_run_with(&o[k], first, RUN_ALL_DUMPS, policy);
		cr_assert_eq(changes_in_run(&c[k], &o[k].r, &o[k].cls, 0,
					    ND - 1),
			     0, "%s", stderr_text());
	}
	unsetenv("DMPROF_THREADS");
	cr_assert_eq(c[0].n, c[1].n);
	cr_assert_gt(c[0].n, 4000);
	cr_assert_eq(c[0].a.heap, c[1].a.heap);
	cr_assert_eq(c[0].b.heap, c[1].b.heap);
	cr_assert_eq(c[0].a.allocs, c[1].a.allocs);
	cr_assert_eq(c[0].b.frees, c[1].b.frees);
	for (size_t i = 0; i < c[0].n; i++) {
		const struct change *x = &c[0].v[i], *y = &c[1].v[i];

		cr_assert_eq(x->st->id, y->st->id, "change %zu", i);
		cr_assert_eq(x->a, y->a, "change %zu", i);
		cr_assert_eq(x->b, y->b, "change %zu", i);
		cr_assert_eq(x->col, y->col, "change %zu", i);
		cr_assert_eq(x->allocs, y->allocs, "change %zu", i);
		cr_assert_eq(x->frees, y->frees, "change %zu", i);
		cr_assert_eq(x->suspect, y->suspect, "change %zu", i);
	}
	changes_free(&c[0]);
	changes_free(&c[1]);
	close_run(&o[0]);
	close_run(&o[1]);
}
