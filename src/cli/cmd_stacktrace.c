/*
 * dmprof stacktrace DUMP: each stack line of one dump whose bucket is
 * known, with the bucket's symbolized stack.  Lines naming unknown buckets
 * are left out (the reader has warned about them).
 */
#include <stdint.h>
#include <stdio.h>

#include "setup.h"

/*
 * N in decimal, as "%" PRId64 writes it: the four numbers of each line
 * went through vsnprintf, which cost more than the line's frames.
 */
static void add_int(struct strbuf *sb, int64_t n)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t v = n < 0 ? -(uint64_t)n : (uint64_t)n;

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (n < 0)
		*--p = '-';
	sb_add(sb, p, (size_t)(buf + sizeof(buf) - p));
}

static int cmd_stacktrace_run(struct cmd_args *a)
{
	struct strbuf sb = STRBUF_INIT;
	struct snapshot snap;
	struct run r;

	if (a->argc != 1)
		return cmd_usage_error(a, a->argc ? "too many arguments"
						  : "which dump?");
	if (run_open(&r, a->argv[0], 0, &a->sym, &a->read) < 0 ||
	    run_load_dump(&r, 0, &snap) < 0) {
		run_close(&r);
		return 1;
	}
	snapshot_warn_unknown_buckets(&snap, "left out");
	r.light_end = true; /* (the lines are printed, no more) */
	run_symbolize_snapshot(&r, &snap);
	for (size_t i = 0; i < snap.nlines; i++) {
		const struct stack_line *l = &snap.lines[i];
		const struct stack *st;

		if (!l->bucket)
			continue;
		st = l->bucket->stack;
		add_int(&sb, l->virt);
		sb_addch(&sb, ' ');
		add_int(&sb, l->committed);
		sb_addch(&sb, ' ');
		if (snap.counts_unknown) {
			sb_addstr(&sb, "? ? "); /* (the profile does not count) */
		} else {
			add_int(&sb, l->alloc);
			sb_addch(&sb, ' ');
			add_int(&sb, l->free);
			sb_addch(&sb, ' ');
		}
		stack_functions(&sb, &r.model, st);
		if (st->depth)
			sb_addch(&sb, ' ');
		sb_addch(&sb, '\n');
		/* (Written a block at a time, not a line.) */
		if (sb.len >= 65536) {
			fwrite(sb.buf, 1, sb.len, stdout);
			sb_reset(&sb);
		}
	}
	if (sb.len)
		fwrite(sb.buf, 1, sb.len, stdout);
	snapshot_release(&snap);
	sb_release(&sb);
	run_close(&r);
	return 0;
}

static const char *const usage[] = { "DUMP", NULL };

const struct cmd_entry cmd_stacktrace = { .name = "stacktrace",
	.run = cmd_stacktrace_run, .flags = CMD_READS_DUMPS, .usage = usage,
	.summary = "print each stack line of a dump with its stack" };
