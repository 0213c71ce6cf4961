/*
 * dmprof buckets [-p POLICY] FIRST_DUMP: every bucket of the run, by id,
 * in the original's text form; with -p, the component each bucket lands
 * in under each policy comes first ("ID: l2=tc-skia malloc ...").
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "classify.h"
#include "cmd.h"
#include "policyset.h"
#include "run.h"

/*
 * Mmap buckets are classified as if their region were an anonymous
 * mapping without permissions: the bucket alone does not say where it was
 * mapped.
 */
static const struct vma unmapped = { 0, 0, 0, 0, 0, 0, "----", "" };

int cmd_buckets(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct strbuf sb = STRBUF_INIT;
	struct policy_set set = { NULL, 0 };
	struct classifier *cls = NULL;
	const char *policy = NULL;
	struct bucket **sorted;
	struct run r;
	int c, status = 0;

	while ((c = cmd_getopt("buckets", argc, argv, "p:", longopts,
			       &status)) != -1) {
		if (c == -2)
			return status;
		if (c == 'p')
			policy = optarg;
	}
	if (argc - optind != 1)
		return cmd_usage_error("buckets", argc - optind
						  ? "too many arguments"
						  : "which dump?");
	if (run_open(&r, argv[optind], RUN_ALL_DUMPS) < 0 ||
	    (policy && policy_set_load(&set, policy) < 0)) {
		run_close(&r);
		return 1;
	}
	run_symbolize(&r);
	/* gperftools profiles define their buckets themselves. */
	for (size_t i = 0; r.gperftools && i < r.series.ndumps; i++) {
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
		bucket_describe(&sb, &r.model, b);
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
