/* Opening what commands print (see setup.h). */
#include "setup.h"

#include <stdio.h>
#include <string.h>

int onedump_open(struct onedump *o, struct cmd_args *a, const char *dump,
		 const char *policy, bool all)
{
	memset(o, 0, sizeof(*o));
	if (run_open(&o->run, dump, all ? RUN_ALL_DUMPS : 0, &a->sym) < 0)
		return -1;
	o->policy = policy_set_load_one(policy);
	if (!o->policy)
		return -1;
	/* source= needs DWARF lines, which are costly: only on demand. */
	if (o->policy->uses[COND_SOURCE])
		a->sym.want_source = true;
	run_symbolize(&o->run);
	classifier_init(&o->cls, o->policy, &o->run.model);
	o->has_cls = true;
	return 0;
}

void onedump_close(struct onedump *o)
{
	if (o->has_cls)
		classifier_free(&o->cls);
	policy_free(o->policy);
	run_close(&o->run);
	memset(o, 0, sizeof(*o));
}

int policy_operand(struct cmd_args *a, const char **policy)
{
	*policy = args_get(a, OPT_POLICY);
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

int timeline_command(struct cmd_args *a,
		     int (*out)(const struct timeline *tl, bool bytes))
{
	struct timeline_options opt;
	struct timeline tl;
	int status;

	if (a->argc < 1)
		return cmd_usage_error(a, "which dump?");
	memset(&opt, 0, sizeof(opt));
	opt.policy = args_get(a, OPT_POLICY);
	opt.shared = a->argv + 1;
	opt.nshared = a->argc - 1;
	opt.sym = &a->sym;
	opt.progress = a->progress ? progress : NULL;
	if (timeline_build(&tl, a->argv[0], &opt) < 0) {
		timeline_free(&tl);
		return 1;
	}
	status = out(&tl, args_has(a, 'b'));
	if (!status && tl.skipped_errors)
		status = 1;
	timeline_free(&tl);
	return status;
}
