/*
 * dmprof stacktrace DUMP: each stack line of one dump whose bucket is
 * known, with the bucket's symbolized stack.  Lines naming unknown buckets
 * are left out (the reader has warned about them).
 */
#include <inttypes.h>
#include <stdio.h>

#include "setup.h"

static int run(struct cmd_args *a)
{
	struct strbuf sb = STRBUF_INIT;
	struct snapshot snap;
	struct run r;

	if (a->argc != 1)
		return cmd_usage_error(a, a->argc ? "too many arguments"
						  : "which dump?");
	if (run_open(&r, a->argv[0], 0, &a->sym) < 0 ||
	    run_load_dump(&r, 0, &snap) < 0) {
		run_close(&r);
		return 1;
	}
	snapshot_warn_unknown_buckets(&snap, "left out");
	run_symbolize_snapshot(&r, &snap);
	for (size_t i = 0; i < snap.nlines; i++) {
		const struct stack_line *l = &snap.lines[i];
		const struct stack *st;

		if (!l->bucket)
			continue;
		st = l->bucket->stack;
		sb_reset(&sb);
		sb_addf(&sb, "%" PRId64 " %" PRId64 " ", l->virt,
			l->committed);
		if (snap.counts_unknown)
			sb_addstr(&sb, "? ? "); /* (the profile does not count) */
		else
			sb_addf(&sb, "%" PRId64 " %" PRId64 " ", l->alloc,
				l->free);
		stack_functions(&sb, &r.model, st);
		if (st->depth)
			sb_addch(&sb, ' ');
		sb_addch(&sb, '\n');
		fwrite(sb.buf, 1, sb.len, stdout);
	}
	snapshot_release(&snap);
	sb_release(&sb);
	run_close(&r);
	return 0;
}

static const char *const usage[] = { "DUMP", NULL };

const struct cmd_entry cmd_stacktrace = {
	"stacktrace", "print each stack line of a dump with its stack", usage,
	NULL, CMD_READS_DUMPS, NULL, run,
};
