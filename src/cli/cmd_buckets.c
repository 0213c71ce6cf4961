/*
 * dmprof buckets [-p POLICY] DUMP: every bucket of the run, by id,
 * in the original's text form; with -p, the component each bucket lands
 * in under each policy comes first ("ID: l2=tc-skia malloc ...").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "setup.h"

/*
 * Mmap buckets are classified as if their region were an anonymous
 * mapping without permissions: the bucket alone does not say where it was
 * mapped.
 */
static const struct vma unmapped = { 0, 0, 0, 0, 0, 0, "----", "" };

/*
 * The original's one-line text form of a bucket:
 * "malloc tTYPE nNAME func(@file) func(@file) ...".
 */
static const char *const usage[] = { "DUMP", NULL };
static const struct cmd_option options[] = {
	{ .key = OPT_POLICY, .name = "policy", .arg = "POLICY",
	  .type = OPT_STRING, .flags = OPT_SYNOPSIS,
	  .help = "also print the component each bucket lands in" },
	OPT_END,
};

static void describe(struct strbuf *sb, const struct model *m,
		     const struct bucket *b)
{
	const char *type = bucket_type_sym(b) ? bucket_type_sym(b)
					      : "no typeinfo";

	sb_addstr(sb, alloc_kind_name(b->kind));
	sb_addstr(sb, " t");
	sb_addstr(sb, strcmp(type, "no typeinfo") ? type : "no_typeinfo");
	sb_addstr(sb, " n");
	sb_addstr(sb, bucket_type_name(b));
	for (uint32_t i = 0; i < b->stack->depth; i++) {
		const struct frame *f = frame_get(&m->frames,
						  b->stack->frames[i]);

		for (uint32_t k = 0; k < frame_nlogical(f); k++) {
			sb_addch(sb, ' ');
			frame_add_func(sb, f, k);
			sb_addstr(sb, "(@");
			frame_add_file(sb, f, k);
			sb_addch(sb, ')');
		}
	}
}

static int cmd_buckets_run(struct cmd_args *a)
{
	struct strbuf sb = STRBUF_INIT;
	struct policy_set set = { NULL, 0, 0 };
	struct classifier *cls = NULL;
	char *policy = setup_policies(a);
	struct bucket **sorted;
	struct run r;
	int status = 0;

	if (a->argc != 1) {
		free(policy);
		return cmd_usage_error(a, a->argc ? "too many arguments"
						  : "which dump?");
	}
	if (run_open(&r, a->argv[0], RUN_ALL_DUMPS, &a->sym, &a->read) < 0 ||
	    (policy && policy_set_load(&set, policy) < 0)) {
		free(policy);
		run_close(&r);
		return 1;
	}
	free(policy);
	if (policy_set_uses(&set, COND_SOURCE))
		a->sym.want_source = true;
	run_symbolize(&r);
	/* gperftools profiles define their buckets themselves. */
	for (size_t i = 0; r.self_contained && i < r.series.ndumps; i++) {
		struct snapshot snap;

		if (run_load_dump(&r, i, &snap) < 0) {
			policy_set_free(&set);
			run_close(&r);
			return 1;
		}
		run_symbolize_snapshot(&r, &snap);
		snapshot_release(&snap);
	}
	cls = xcalloc(set.n + 1, sizeof(*cls));
	for (size_t p = 0; p < set.n; p++)
		classifier_init(&cls[p], set.v[p], &r.model);
	sorted = bucket_set_sorted(&r.model.buckets);
	for (size_t i = 0; i < r.model.buckets.n && !status; i++) {
		const struct bucket *b = sorted[i];

		sb_reset(&sb);
		sb_addf(&sb, "%" PRIu64 ": ", b->id);
		for (size_t p = 0; p < set.n; p++) {
			int col = b->kind == ALLOC_MALLOC
					  ? classify_malloc(&cls[p], b)
					  : classify_hooked(&cls[p], b,
							    &unmapped, 0);

			if (col < 0) {
				status = 1;
				break;
			}
			sb_addf(&sb, "%s=%s ", set.v[p]->label,
				set.v[p]->cols[col].name);
		}
		describe(&sb, &r.model, b);
		sb_addch(&sb, '\n');
		fwrite(sb.buf, 1, sb.len, stdout);
	}
	for (size_t p = 0; p < set.n; p++)
		classifier_free(&cls[p]);
	free(cls);
	free(sorted);
	sb_release(&sb);
	policy_set_free(&set);
	run_close(&r);
	return status;
}

const struct cmd_entry cmd_buckets = { .name = "buckets",
	.run = cmd_buckets_run, .flags = CMD_READS_DUMPS, .usage = usage,
	.options = options,
	.summary = "print every bucket of the run with its symbolized stack" };
