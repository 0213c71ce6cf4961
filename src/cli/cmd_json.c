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

#include "json_write.h"
#include "setup.h"

/* The original always added these to each snapshot. */
static const char *const always[] = {
	"mmap-no-log", "mmap-total-record", "mmap-total-record-vm",
	"tc-no-log",   "tc-total-record",   "tc-total", "tc-unused",
};

/* A snapshot's member, kept until they are sorted by key. */
struct member {
	const char *key;
	enum { MEMBER_INT, MEMBER_FLOAT, MEMBER_STRING } kind;
	int64_t i;
	double f;
	const char *s;
};

static const char *const usage[] = { "DUMP [DUMP...]", NULL };
static const struct cmd_option options[] = {
	OPTION_POLICIES,
	OPT_END,
};

static int cmp_member(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->key,
		      ((const struct member *)b)->key);
}

static void snapshot_object(struct json_writer *w, const struct timeline *tl,
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
		if (builtin_is_time(col->builtin)) {
			m[n].kind = MEMBER_FLOAT;
			m[n].f = timeline_time_value(tl, i, col->builtin);
		} else {
			m[n].kind = MEMBER_INT;
			m[n].i = row[c];
		}
		n++;
	}
	for (size_t k = 0; k < ARRAY_SIZE(always); k++) {
		enum builtin b = builtin_lookup(always[k], NULL, NULL);

		if (policy_column(pol, always[k]) >= 0)
			continue;
		m[n].key = always[k];
		m[n].kind = MEMBER_INT;
		m[n++].i = tl->builtins[p][i].v[b];
	}
	m[n].key = "dump_path";
	m[n].kind = MEMBER_STRING;
	m[n++].s = tl->snaps[i].path;
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	m[n].key = "dump_time";
	m[n].kind = MEMBER_STRING;
	m[n++].s = when;
	qsort(m, n, sizeof(*m), cmp_member);
	json_object(w);
	for (size_t k = 0; k < n; k++) {
		json_key(w, m[k].key);
		if (m[k].kind == MEMBER_FLOAT)
			json_double(w, m[k].f);
		else if (m[k].kind == MEMBER_INT)
			json_int(w, m[k].i);
		else
			json_string(w, m[k].s);
	}
	json_end(w);
	free(m);
}

static int json_out(const struct timeline *tl, bool bytes UNUSED)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;
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
	json_write_init(&w, &out, stdout, false);
	json_object(&w);
	json_key(&w, "policies");
	json_object(&w);
	for (size_t k = 0; k < tl->set.n; k++) {
		const struct policy *pol = tl->set.v[order[k]];

		json_key(&w, pol->label);
		json_object(&w);
		json_key(&w, "legends");
		json_array(&w);
		for (size_t c = 0; c < pol->ncols; c++)
			json_string(&w, pol->cols[c].name);
		json_end(&w);
		json_key(&w, "snapshots");
		json_array(&w);
		for (size_t i = 0; i < tl->n; i++)
			snapshot_object(&w, tl, order[k], i);
		json_end(&w);
		json_end(&w);
	}
	json_end(&w);
	json_member_string(&w, "version", "JSON_DEEP_2");
	json_end(&w);
	json_write_finish(&w);
	sb_release(&out);
	free(order);
	return 0;
}

static int cmd_json_run(struct cmd_args *a)
{
	return setup_timeline(a, false, json_out);
}

const struct cmd_entry cmd_json = { .name = "json", .run = cmd_json_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "print the timeline as JSON (JSON_DEEP_2)" };
