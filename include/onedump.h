/*
 * Setting up the commands that look at one dump under one policy (expand,
 * pprof) or a series under one policy (map): the run, the policy, its
 * classifier, symbolized.
 */
#ifndef DMPROF_ONEDUMP_H
#define DMPROF_ONEDUMP_H

#include "classify.h"
#include "policyset.h"
#include "run.h"

struct onedump {
	struct run run;
	struct policy *policy;
	struct classifier cls;
	bool has_cls;
};

/* Open the run of DUMP (ALL: and every later dump) and load POLICY. */
int onedump_open(struct onedump *o, const char *dump, const char *policy,
		 bool all);
void onedump_close(struct onedump *o);

#endif
