/*
 * dmprof policy check FILE...: load policies, report every problem;
 * dmprof policy check -p POLICY DUMP...: and which rules the dumps never
 * use.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_policy.h"
#include "explain.h"
#include "input.h"
#include "setup.h"

/* Where a rule is, and what: "FILE:LINE: rule 'NAME' (malloc)". */
static const char *const usage[] = { "FILE...", "-p POLICY DUMP...", NULL };
static const struct cmd_option options[] = {
	{ .key = OPT_POLICY, .name = "policy", .arg = "POLICY",
	  .type = OPT_STRING,
	  .help = "check this policy (a label or a path) against the "
		  "dumps: the rules they never use" },
	OPT_END,
};

static void rule_where(struct strbuf *sb, const struct policy *p, size_t i)
{
	const struct rule *r = &p->rules[i];

	sb_addf(sb, "%s:%lu: rule '%s' (%s)", p->path, r->line,
		p->cols[r->column].name, rule_alloc_name(r->alloc));
}

/* What a rule of ALLOC is tried on. */
static const char *subject_noun(enum rule_alloc alloc)
{
	static const char *const nouns[RULE_NALLOC] = {
		"malloc stack", "mmap region", "unhooked region"
	};

	return nouns[alloc];
}

/* The rules of P an earlier rule shadows, whatever the memory (the
 * catch-all's were said when P was loaded). */
static void say_shadowed(const struct policy *p, const char *name)
{
	bool after_catch_all[RULE_NALLOC] = { false };

	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i], *t;
		long j = policy_rule_shadowed_by(p, i);

		if (after_catch_all[r->alloc] || j < 0) {
			after_catch_all[r->alloc] |= rule_is_catch_all(r);
			continue;
		}
		t = &p->rules[j];
		printf("%s:%lu: rule '%s' (%s) never matches: the rule at "
		       "line %lu ('%s') comes first and takes everything it "
		       "would\n", name, p->rules[i].line,
		       p->cols[p->rules[i].column].name,
		       rule_alloc_name(p->rules[i].alloc), t->line,
		       p->cols[t->column].name);
	}
}

/* " is shadowed: the ... it matches is taken first by the rule at line
 * N ('X')": what took the subjects rule I matches (U). */
static void add_takers(struct strbuf *sb, const struct policy *p, size_t i,
		       const struct rule_use *u)
{
	const struct rule *r = &p->rules[i];
	size_t shown = u->nby < ARRAY_SIZE(u->by) ? u->nby : ARRAY_SIZE(u->by);
	int by[ARRAY_SIZE(u->by)];

	sb_addstr(sb, " is shadowed: ");
	if (u->matched == 1) {
		sb_addf(sb, "the %s it matches", subject_noun(r->alloc));
	} else {
		sb_addstr(sb, "each of the ");
		cmd_policy_add_count(sb, u->matched, subject_noun(r->alloc));
		sb_addstr(sb, " it matches");
	}
	sb_addstr(sb, " is taken first by ");
	if (u->nby == 1) {
		const struct rule *t = &p->rules[u->by[0]];

		sb_addf(sb, "the rule at line %lu ('%s')", t->line,
			p->cols[t->column].name);
		return;
	}
	memcpy(by, u->by, sizeof(by));
	/* (In file order; a few.) */
	for (size_t k = 1; k < shown; k++)
		for (size_t m = k; m > 0 && by[m - 1] > by[m]; m--) {
			int t = by[m];

			by[m] = by[m - 1];
			by[m - 1] = t;
		}
	sb_addstr(sb, "the rules at lines ");
	for (size_t k = 0; k < shown; k++)
		sb_addf(sb, "%s%lu",
			!k ? "" : k + 1 < shown || u->nby > shown ? ", "
								    : " and ",
			p->rules[by[k]].line);
	if (u->nby > shown)
		sb_addf(sb, " and %zu more", u->nby - shown);
}

/* What the rules of CV's policy did with the dumps' subjects. */
static void report_coverage(const struct coverage *cv, size_t nsnaps)
{
	const struct policy *p = cv->p;
	struct strbuf sb = STRBUF_INIT;
	size_t dead = 0, shadowed = 0;

	sb_addf(&sb, "%s: over ", p->path);
	cmd_policy_add_count(&sb, nsnaps, "snapshot");
	for (int a = 0; a < RULE_NALLOC; a++) {
		sb_addstr(&sb, a ? (a + 1 < RULE_NALLOC ? ", " : " and ")
				 : ": ");
		cmd_policy_add_count(&sb, cv->subjects[a], subject_noun(a));
	}
	printf("%s\n", sb.buf);
	for (int a = 0; a < RULE_NALLOC; a++) {
		size_t n = 0;

		if (cv->subjects[a])
			continue;
		for (size_t i = 0; i < p->nrules; i++)
			n += p->rules[i].alloc == (enum rule_alloc)a;
		if (n)
			printf("%s: no %ss in these dumps: its %zu %s rule%s "
			       "not judged\n", p->path, subject_noun(a), n,
			       rule_alloc_name(a), n == 1 ? " is" : "s are");
	}
	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule_use *u = &cv->rules[i];
		const struct rule *r = &p->rules[i];

		long always = policy_rule_shadowed_by(p, i);

		if (!cv->subjects[r->alloc] || u->taken)
			continue;
		sb_reset(&sb);
		rule_where(&sb, p, i);
		if (!u->matched) {
			sb_addf(&sb, " never matches %s %s of these dumps",
				r->alloc == RULE_MALLOC ? "a" : "an",
				subject_noun(r->alloc));
			dead++;
		} else {
			shadowed++;
			add_takers(&sb, p, i, u);
		}
		if (always >= 0 && u->matched && u->nby == 1 &&
		    u->by[0] == always)
			sb_addstr(&sb, ", as it always will: that rule takes "
				       "everything this one would");
		else if (always >= 0)
			sb_addf(&sb, "; nor can it ever match: the rule at "
				     "line %lu takes everything it would",
				p->rules[always].line);
		printf("%s\n", sb.buf);
	}
	if (!dead && !shadowed)
		printf("%s: every rule judged takes something from these "
		       "dumps\n", p->path);
	else
		printf("%s: of %zu rules, %zu never match%s these dumps and "
		       "%zu %s shadowed\n", p->path, p->nrules, dead,
		       dead == 1 ? "es" : "", shadowed,
		       shadowed == 1 ? "is" : "are");
	sb_release(&sb);
}

/*
 * policy check -p POLICY DUMP...: every subject of every dump, each
 * run's dumps read as csv reads them, every rule tried on each; the
 * rules that take none are dead (no subject matches them) or shadowed
 * (an earlier rule takes each one they match).  Judged on the dumps: a
 * rule's patterns cannot be compared with another's in general.
 */
static int check_dumps(struct cmd_args *a, const char *spec)
{
	struct series_group *runs;
	struct coverage cv;
	struct policy *p;
	size_t nruns, nsnaps = 0;
	int status = 0;

	if (a->argc < 1)
		return cmd_usage_error(a, "check the policy against which "
					  "dumps?");
	p = policy_set_load_one(spec);
	if (!p)
		return 1;
	printf("%s: ok (%zu columns, %zu rules)\n", p->path, p->ncols,
	       p->nrules);
	if (p->uses[COND_SOURCE])
		a->sym.want_source = true;
	coverage_init(&cv, p);
	series_group((const char *const *)a->argv, (size_t)a->argc, &runs,
		     &nruns);
	for (size_t r = 0; r < nruns && !status; r++) {
		struct run run;
		struct classifier cls;
		struct explain_set set;

		if (run_open_dumps(&run, runs[r].dumps, runs[r].n, &a->sym,
				   &a->read) < 0) {
			run_close(&run);
			status = 1;
			break;
		}
		run_symbolize(&run);
		classifier_init(&cls, p, &run.model);
		explain_set_init(&set);
		for (size_t i = 0; i < run.series.ndumps && !status; i++) {
			const char *path = run.series.dumps[i].path;
			struct snapshot snap;

			if (i > 0 && file_empty(path)) {
				warning("%s: empty dump; skipped", path);
				continue;
			}
			if (run_load_dump(&run, i, &snap) < 0) {
				status = 1;
				break;
			}
			run_symbolize_snapshot(&run, &snap);
			if (explain_collect_subjects(&cls, &snap, &set) < 0)
				status = 1;
			nsnaps++;
			snapshot_release(&snap);
		}
		if (!status && coverage_add(&cv, &cls, &set) < 0)
			status = 1;
		explain_set_free(&set);
		classifier_free(&cls);
		run_close(&run);
	}
	if (!status)
		report_coverage(&cv, nsnaps);
	series_groups_free(runs, nruns);
	coverage_free(&cv);
	policy_free(p);
	return status;
}

static int check(struct cmd_args *a)
{
	int argc = a->argc, status = 0;
	char **argv = a->argv;
	const char *spec;

	if ((status = setup_one_policy(a, &spec)))
		return status;
	if (spec)
		return check_dumps(a, spec);
	if (argc < 1)
		return cmd_usage_error(a, "check which file?");
	for (int i = 0; i < argc; i++) {
		struct policy *p = policy_load(argv[i], NULL);

		if (!p) {
			status = 1;
			continue;
		}
		printf("%s: ok (%zu columns, %zu rules)\n", argv[i], p->ncols,
		       p->nrules);
		say_shadowed(p, argv[i]);
		policy_free(p);
	}
	return status;
}

const struct cmd_entry cmd_policy_check = { .name = "check", .run = check,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "load policies and report every problem or unused rule" };
