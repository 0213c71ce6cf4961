/*
 * dmprof stacktrace DUMP: each stack line of one dump whose bucket is
 * known, with the bucket's symbolized stack.  Lines naming unknown buckets
 * are left out (the reader has warned about them).
 */
#include <stdint.h>
#include <stdio.h>

#include "setup.h"
#include "threads.h"

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

/* Line I of SNAP, as printed, in SB. */
static void line_text(struct strbuf *sb, const struct model *m,
		      const struct snapshot *snap, size_t i)
{
	const struct stack_line *l = &snap->lines[i];
	const struct stack *st = l->bucket->stack;

	add_int(sb, l->virt);
	sb_addch(sb, ' ');
	add_int(sb, l->committed);
	sb_addch(sb, ' ');
	if (snap->counts_unknown) {
		sb_addstr(sb, "? ? "); /* (the profile does not count) */
	} else {
		add_int(sb, l->alloc);
		sb_addch(sb, ' ');
		add_int(sb, l->free);
		sb_addch(sb, ' ');
	}
	stack_functions(sb, m, st);
	if (st->depth)
		sb_addch(sb, ' ');
	sb_addch(sb, '\n');
}

/*
 * The lines are printed while their frames are being named, on another
 * core: a frame's id is the order it was first met in, so a line can be
 * printed once the frames below its highest id are named (TOLD says how
 * far that is; NULL: all are).  A warm run's printing had been an eighth
 * of its time, after the names (symbolize-dwarf of make bench, 10,000
 * lines, 1.7 MB of text: 2 ms).
 */
struct printing {
	const struct model *m;
	const struct snapshot *snap;
	struct progress *told;
};

static void print_main(void *arg)
{
	const struct printing *p = arg;
	struct strbuf sb = STRBUF_INIT;
	uint32_t high = 0;

	for (size_t i = 0; i < p->snap->nlines; i++) {
		const struct bucket *b = p->snap->lines[i].bucket;

		if (!b)
			continue;
		if (p->told) {
			for (uint32_t k = 0; k < b->stack->depth; k++)
				if (b->stack->frames[k] > high)
					high = b->stack->frames[k];
			progress_wait(p->told, (size_t)high + 2);
		}
		line_text(&sb, p->m, p->snap, i);
		/* (Written a block at a time, not a line.) */
		if (sb.len >= 65536) {
			fwrite(sb.buf, 1, sb.len, stdout);
			sb_reset(&sb);
		}
	}
	if (sb.len)
		fwrite(sb.buf, 1, sb.len, stdout);
	sb_release(&sb);
}

static int cmd_stacktrace_run(struct cmd_args *a)
{
	struct snapshot snap;
	struct progress told;
	struct printing p;
	struct task printer = { 0 };
	struct run r;
	bool printing;

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
	progress_init(&told);
	p = (struct printing){ &r.model, &snap, &told };
	/* (It reads the lines and their stacks, which run_symbolize_
	 * snapshot's model_trim leaves, and a frame once it is told.) */
	printing = task_start(&printer, print_main, &p, false);
	if (printing)
		r.names_told = &told;
	run_symbolize_snapshot(&r, &snap);
	if (printing) {
		/* (All named, whether the symbolizer said so or not.) */
		progress_set(&told, SIZE_MAX);
		task_release(&printer);
	} else {
		p.told = NULL;
		print_main(&p);
	}
	progress_free(&told);
	snapshot_release(&snap);
	run_close(&r);
	return 0;
}

static const char *const usage[] = { "DUMP", NULL };

const struct cmd_entry cmd_stacktrace = { .name = "stacktrace",
	.run = cmd_stacktrace_run, .flags = CMD_READS_DUMPS, .usage = usage,
	.summary = "print each stack line of a dump with its stack" };
