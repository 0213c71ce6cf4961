/* Shared set-up of expand, map and pprof (see onedump.h). */
#include "onedump.h"

#include <string.h>

int onedump_open(struct onedump *o, const char *dump, const char *policy,
		 bool all)
{
	memset(o, 0, sizeof(*o));
	if (run_open(&o->run, dump, all ? RUN_ALL_DUMPS : 0) < 0)
		return -1;
	o->policy = policy_set_load_one(policy);
	if (!o->policy)
		return -1;
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
