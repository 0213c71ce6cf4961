/* Opening what commands print, and where they write (see setup.h). */
#include "setup.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aggregate.h"
#include "suggest.h"
#include "scan.h"
#include "tally.h"

int setup_open(struct setup *o, struct cmd_args *a, const char *dump,
		 const char *policy, bool all)
{
	memset(o, 0, sizeof(*o));
	/* (The policy first: a misspelt one is said before a large run is
	 * read.) */
	o->policy = policy_set_load_one(policy);
	if (!o->policy)
		return -1;
	if (run_open(&o->run, dump, all ? RUN_ALL_DUMPS : 0, &a->sym,
		     &a->read) < 0)
		return -1;
	/* source= needs DWARF lines, which are costly: only on demand. */
	if (o->policy->uses[COND_SOURCE])
		a->sym.want_source = true;
	run_symbolize(&o->run);
	classifier_init(&o->cls, o->policy, &o->run.model);
	o->has_cls = true;
	return 0;
}

int setup_dump(struct setup *o, struct snapshot *snap, struct cmd_args *a,
	       const char *dump, const char *policy)
{
	if (setup_open(o, a, dump, policy, false) < 0 ||
	    run_load_dump(&o->run, 0, snap) < 0) {
		setup_close(o);
		return -1;
	}
	run_symbolize_snapshot(&o->run, snap);
	return 0;
}

void setup_close(struct setup *o)
{
	if (o->has_cls)
		classifier_free(&o->cls);
	policy_free(o->policy);
	run_close(&o->run);
	memset(o, 0, sizeof(*o));
}

char *setup_policies(const struct cmd_args *a)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < a->nv; i++)
		if (a->v[i].key == OPT_POLICY)
			sb_addf(&sb, "%s%s", sb.len ? "," : "", a->v[i].value);
	return sb.len ? sb_detach(&sb) : NULL;
}

int setup_one_policy(struct cmd_args *a, const char **policy)
{
	const char *first = NULL;

	*policy = NULL;
	for (size_t i = 0; i < a->nv; i++) {
		if (a->v[i].key != OPT_POLICY)
			continue;
		if (first)
			return cmd_usage_error(a, "one policy, not -p %s and "
						  "-p %s", first,
					       a->v[i].value);
		first = *policy = a->v[i].value;
	}
	return 0;
}

int setup_policy_operand(struct cmd_args *a, const char **policy)
{
	int rc = setup_one_policy(a, policy);

	if (rc)
		return rc;
	if (a->argc < 1)
		return cmd_usage_error(a, "which dump?");
	if (a->argc > 2)
		return cmd_usage_error(a, "too many operands");
	if (a->argc == 2 && *policy)
		return cmd_usage_error(a, "the policy is given twice (-p %s "
					  "and '%s')",
				       *policy, a->argv[1]);
	if (a->argc == 2)
		*policy = a->argv[1];
	return 0;
}

/* For the totals: where their parts are. */
static const char *parts_hint(const struct policy *p, const struct column *c)
{
	if (p->from_marker < 0 || !((c->builtin == B_STAT &&
				     c->stat_row == GS_TOTAL) ||
				    c->builtin == B_TOTAL_EXCLUDE_PROFILER))
		return "";
	return "; its parts are the components between FROM_HERE_FOR_TOTAL "
	       "and UNTIL_HERE_FOR_TOTAL";
}

/* How the user can name P again: by its label if the index has it. */
static const char *policy_name(const struct policy *p)
{
	return p->indexed ? p->label : p->path;
}

int setup_component(const struct policy *p, const char *component)
{
	const char **names = xcalloc(p->ncols + 1, sizeof(*names));
	const char *near[3];
	struct strbuf sb = STRBUF_INIT;
	int c = policy_column(p, component);
	size_t n;

	if (c >= 0) {
		const struct column *col = &p->cols[c];

		if (column_kind(col) == COLUMN_MARKER)
			error("'%s' is a marker of policy '%s', not a "
			      "component", component, p->label);
		else if (column_kind(col) == COLUMN_TIME)
			error("'%s' is a time column of policy '%s', not a "
			      "component", component, p->label);
		else if (!column_sums_items(p, c))
			error("'%s' in policy '%s' is computed and has no "
			      "stacks: it is %s%s", component, p->label,
			      column_doc(col), parts_hint(p, col));
		else
			goto out;
		c = -1;
		goto out;
	}
	/* The names a user could have meant: the components. */
	for (size_t i = n = 0; i < p->ncols; i++)
		if (column_sums_items(p, (int)i))
			names[n++] = p->cols[i].name;
	n = suggest(component, names, n, near, ARRAY_SIZE(near));
	for (size_t i = 0; i < n; i++)
		sb_addf(&sb, "%s'%s'", !i ? "; did you mean " : i + 1 < n
								? ", "
								: " or ",
			near[i]);
	error("policy '%s' has no component '%s'%s%s ('dmprof policy show "
	      "%s' lists them)", p->label, component, sb_str(&sb),
	      n ? "?" : "", policy_name(p));
out:
	free(names);
	sb_release(&sb);
	return c;
}

/* "snapshot 3/40 PATH" on a terminal, rewritten in place. */
static void progress(size_t i, size_t n, const char *path)
{
	if (n < 2)
		return;
	if (i < n)
		fprintf(stderr, "\rdmprof: snapshot %zu/%zu %s\033[K", i + 1,
			n, path);
	else
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* The dump of G with the lowest number: where its run starts. */
static const char *first_of(const struct series_group *g)
{
	const char *best = g->dumps[0];
	unsigned long best_counter = ULONG_MAX;

	for (size_t i = 0; i < g->n; i++) {
		unsigned long counter;
		char *prefix;

		if (!series_split(g->dumps[i], &prefix, &counter))
			continue;
		free(prefix);
		if (counter < best_counter) {
			best_counter = counter;
			best = g->dumps[i];
		}
	}
	return best;
}

int setup_timeline(struct cmd_args *a, bool each,
		   int (*out)(const struct timeline *tl, bool bytes))
{
	struct timeline_options opt;
	struct series_group *runs;
	char *policies;
	const char **others;
	size_t nruns;
	int status = 0;

	if (a->argc < 1)
		return cmd_usage_error(a, "which dump?");
	/*
	 * The dumps of the first dump's run are that run (a glob or a list
	 * of it); the first dump of each other run is another process, for
	 * page sharing.  Or, with EACH, every run is a timeline of its own.
	 */
	series_group((const char *const *)a->argv, (size_t)a->argc, &runs,
		     &nruns);
	others = xcalloc(nruns, sizeof(*others));
	for (size_t i = 1; i < nruns; i++)
		others[i - 1] = first_of(&runs[i]);
	policies = setup_policies(a);
	/* (With EACH, a run that fails does not stop the others.) */
	for (size_t r = 0; r < (each ? nruns : 1); r++) {
		struct timeline tl;
		int st = 1;

		memset(&opt, 0, sizeof(opt));
		opt.policy = policies;
		opt.dumps = runs[r].dumps;
		opt.ndumps = runs[r].n;
		opt.shared = others;
		opt.nshared = each ? 0 : nruns - 1;
		opt.sym = &a->sym;
		opt.read = &a->read;
		opt.progress = a->progress ? progress : NULL;
		if (timeline_build(&tl, &opt) == 0) {
			st = out(&tl, args_has(a, 'b'));
			if (!st && tl.skipped_errors)
				st = 1;
		}
		timeline_free(&tl);
		if (st)
			status = st;
	}
	free(others);
	series_groups_free(runs, nruns);
	free(policies);
	return status;
}

const char *const setup_owner_rules[] = { "program", "pprof", NULL };

void setup_owners(const struct cmd_args *a, struct owners *o)
{
	memset(o, 0, sizeof(*o));
	o->rule = (enum owner_rule)args_choice(a, OPT_OWNER, OWNER_PROGRAM);
	for (size_t i = 0; i < a->nv; i++) {
		if (a->v[i].key != OPT_OWN)
			continue;
		o->own = xreallocarray(o->own, o->nown + 1, sizeof(*o->own));
		o->own[o->nown++] = a->v[i].value;
	}
	owners_builtin_wrappers(o);
	/* (Each compiles: the option is a regex, checked when given.) */
	for (size_t i = 0; i < a->nv; i++)
		if (a->v[i].key == OPT_ALLOC_FN &&
		    owners_add_wrapper(o, a->v[i].value, "--alloc-fn", NULL) <
			    0)
			BUG("--alloc-fn '%s' compiled once, not twice",
			    a->v[i].value);
}

void setup_owners_policy(struct owners *o, const struct policy *p)
{
	struct strbuf origin = STRBUF_INIT;

	for (size_t i = 0; i < p->nalloc_fns; i++) {
		sb_reset(&origin);
		sb_addf(&origin, "%s:%lu", p->path ? p->path : p->label,
			p->alloc_fns[i]->line);
		/* (The policy's loader checked it.) */
		if (owners_add_wrapper(o, p->alloc_fns[i]->text, origin.buf,
				       NULL) < 0)
			BUG("%s: alloc-fn pattern not checked", origin.buf);
	}
	sb_release(&origin);
}

void setup_say_passed(const struct cmd_args *a, const struct owners *o,
		      const struct tally *passed, const char *bytes)
{
	struct tally_entry **v;

	if (!a->verbose || o->rule != OWNER_PROGRAM)
		return;
	if (!passed->n) {
		note("owners: no frame passed over as an allocator wrapper");
		return;
	}
	v = xmemdup(passed->v, passed->n * sizeof(*v));
	qsort(v, passed->n, sizeof(*v), tally_cmp_bytes);
	note("owners: %zu functions passed over as allocator wrappers "
	     "(their callers own the bytes):", passed->n);
	for (size_t i = 0; i < passed->n; i++) {
		long w = owner_wrapper(o, v[i]->key, v[i]->len);

		note("  %s: %" PRId64 " %s in %" PRId64 " stack%s, by %s '%s'",
		     v[i]->key, v[i]->bytes, bytes, v[i]->allocs,
		     v[i]->allocs == 1 ? "" : "s",
		     w >= 0 ? o->fns[w].origin : "?",
		     w >= 0 ? o->fns[w].pattern : "?");
	}
	free(v);
}

size_t setup_rows(const struct cmd_args *a, size_t dflt)
{
	return (size_t)args_count(a, 'n', dflt);
}

/* mkdir -p for the directory part of PREFIX. */
static int make_dirs(const char *prefix)
{
	char *dir = xstrdup(prefix), *slash = strrchr(dir, '/');
	int rc = 0;

	if (!slash || slash == dir) {
		free(dir);
		return 0;
	}
	*slash = 0;
	for (char *p = dir + 1;; p++) {
		char c = *p;

		if (c != '/' && c)
			continue;
		*p = 0;
		if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
			rc = error("cannot create directory %s: %s", dir,
				   strerror(errno));
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	free(dir);
	return rc;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *setup_output_prefix(const char *output, const char *name)
{
	char *prefix;

	if (!output)
		prefix = xstrdup(name);
	else if (ends_with(output, "/") || is_dir(output))
		prefix = xasprintf("%s%s%s", output,
				   ends_with(output, "/") ? "" : "/", name);
	else
		prefix = xstrdup(output);
	if (make_dirs(prefix) < 0) {
		free(prefix);
		return NULL;
	}
	return prefix;
}

const char *setup_core_operand(const struct cmd_args *a)
{
	const char *arg = a->argc == 1 ? a->argv[0] : NULL;

	if (!arg || !arg[strspn(arg, "0123456789")] || access(arg, F_OK) < 0)
		return NULL;
	return arg;
}

int setup_pid(struct cmd_args *a, pid_t *pid)
{
	uint64_t v;

	if (a->argc != 1)
		return cmd_usage_error(a, a->argc ? "too many arguments"
						  : "which process?");
	if (word_u64(a->argv[0], strlen(a->argv[0]), &v) != NUM_OK || !v ||
	    v > INT32_MAX)
		return cmd_usage_error(a, "'%s' is not a process id",
				       a->argv[0]);
	*pid = (pid_t)v;
	return 0;
}

int setup_memory_operand(struct cmd_args *a, const char *what, pid_t *pid,
			 enum dump_format *format)
{
	struct cmd_args one = *a;

	*pid = 0;
	*format = FORMAT_ANY;
	if (!what[strspn(what, "0123456789")] && access(what, F_OK) < 0) {
		one.argc = 1;
		one.argv = (char **)&what;
		return setup_pid(&one, pid);
	}
	return profile_probe(what, format) < 0 ? 1 : 0;
}
