/*
 * Where a run's teardown begins: the dump before it, as the dumps say or
 * as their producer's rule has it (see struct run_teardown).
 */
#include "run.h"

#include <stdint.h>
#include <string.h>

#include "input.h"

void series_teardown(const struct series *s, enum dump_format format,
		     struct run_teardown *t)
{
	const struct profile_traits *tr = profile_traits(format);
	enum dump_moment last = MOMENT_UNSAID;

	memset(t, 0, sizeof(*t));
	t->last = s->ndumps ? s->ndumps - 1 : 0;
	t->before = SIZE_MAX;
	/* (A producer killed before it wrote leaves an empty dump.) */
	while (t->last > 0 && file_empty(s->dumps[t->last].path))
		t->last--;
	for (size_t i = 0; tr->moment && i <= t->last && s->ndumps; i++) {
		enum dump_moment mo = tr->moment(s->dumps[i].path);

		if (mo == MOMENT_BEFORE_TEARDOWN) {
			t->before = i;
			t->said = true;
		}
		if (i == t->last)
			last = mo;
	}
	t->last_said = last == MOMENT_AT_EXIT;
	t->at_exit = last == MOMENT_AT_EXIT ||
		     (tr->last_at_exit && t->last > 0 &&
		      tr->last_at_exit(s->dumps[0].path));
	if (!t->said && t->at_exit && t->last > 0)
		t->before = t->last - 1;
}

