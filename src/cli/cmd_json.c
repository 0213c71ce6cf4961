/*
 * dmprof json [-p POLICY] DUMP...: the timeline
 * as JSON in the original's JSON_DEEP_2 shape, keys sorted, two-space
 * indent, every size in bytes, time columns as floats.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "setup.h"

/* The original always added these to each snapshot. */
static const char *const always[] = {
	"mmap-no-log", "mmap-total-record", "mmap-total-record-vm",
	"tc-no-log",   "tc-total-record",   "tc-total", "tc-unused",
};

struct member {
	const char *key;
	struct strbuf value;
};

static int cmp_member(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->key,
		      ((const struct member *)b)->key);
}

static void snapshot_object(struct strbuf *out, const struct timeline *tl,
			    size_t p, size_t i)
{
	const struct policy *pol = tl->set.v[p];
	const int64_t *row = tl->rows[p] + i * pol->ncols;
	size_t n = 0, cap = pol->ncols + ARRAY_SIZE(always) + 2;
	struct member *m = xcalloc(cap, sizeof(*m));
	char when[64];
	time_t t = (time_t)floor(tl->snaps[i].time);
	struct tm tm;

	for (size_t c = 0; c < pol->ncols; c++) {
		const struct column *col = &pol->cols[c];

		m[n].key = col->name;
		if (builtin_is_time(col->builtin))
			format_float_repr(&m[n].value,
					  timeline_time_value(tl, i,
							      col->builtin));
		else
			sb_addf(&m[n].value, "%" PRId64, row[c]);
		n++;
	}
	for (size_t k = 0; k < ARRAY_SIZE(always); k++) {
		enum builtin b = builtin_lookup(always[k], NULL, NULL);

		if (policy_column(pol, always[k]) >= 0)
			continue;
		m[n].key = always[k];
		sb_addf(&m[n].value, "%" PRId64, tl->builtins[p][i].v[b]);
		n++;
	}
	m[n].key = "dump_path";
	format_json_string(&m[n++].value, tl->snaps[i].path);
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	m[n].key = "dump_time";
	format_json_string(&m[n++].value, when);
	qsort(m, n, sizeof(*m), cmp_member);
	sb_addstr(out, "        {\n");
	for (size_t k = 0; k < n; k++) {
		sb_addstr(out, "          ");
		format_json_string(out, m[k].key);
		sb_addstr(out, ": ");
		sb_add(out, m[k].value.buf, m[k].value.len);
		sb_addstr(out, k + 1 < n ? ",\n" : "\n");
		sb_release(&m[k].value);
	}
	sb_addstr(out, "        }");
	free(m);
}

static int json_out(const struct timeline *tl, bool bytes UNUSED)
{
	struct strbuf out = STRBUF_INIT;
	size_t *order = xcalloc(tl->set.n + 1, sizeof(*order));

	/* Policies are keys too: sorted by label. */
	for (size_t p = 0; p < tl->set.n; p++) {
		size_t k = p;

		while (k > 0 && strcmp(tl->set.v[order[k - 1]]->label,
				       tl->set.v[p]->label) > 0) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = p;
	}
	sb_addstr(&out, "{\n  \"policies\": {");
	for (size_t k = 0; k < tl->set.n; k++) {
		size_t p = order[k];
		const struct policy *pol = tl->set.v[p];

		sb_addstr(&out, k ? ",\n    " : "\n    ");
		format_json_string(&out, pol->label);
		sb_addstr(&out, ": {\n      \"legends\": [");
		for (size_t c = 0; c < pol->ncols; c++) {
			sb_addstr(&out, c ? ",\n        " : "\n        ");
			format_json_string(&out, pol->cols[c].name);
		}
		sb_addstr(&out, pol->ncols ? "\n      ],\n" : "],\n");
		sb_addstr(&out, "      \"snapshots\": [");
		for (size_t i = 0; i < tl->n; i++) {
			sb_addstr(&out, i ? ",\n" : "\n");
			snapshot_object(&out, tl, p, i);
		}
		sb_addstr(&out, tl->n ? "\n      ]\n    }" : "]\n    }");
		fwrite(out.buf, 1, out.len, stdout);
		sb_reset(&out);
	}
	sb_addstr(&out, tl->set.n ? "\n  },\n" : "},\n");
	sb_addstr(&out, "  \"version\": \"JSON_DEEP_2\"\n}\n");
	fwrite(out.buf, 1, out.len, stdout);
	sb_release(&out);
	free(order);
	return 0;
}

static int cmd_json_run(struct cmd_args *a)
{
	return setup_timeline(a, false, json_out);
}

static const struct cmd_option options[] = {
	OPTION_POLICIES,
	OPT_END,
};

static const char *const usage[] = { "DUMP [DUMP...]", NULL };

const struct cmd_entry cmd_json = {
	"json", "print the timeline as JSON (JSON_DEEP_2)", usage, options,
	CMD_READS_DUMPS, NULL, cmd_json_run,
};
