/*
 * Valgrind DHAT's heap profiles (dhat.out.PID, JSON, dhatFileVersion 2;
 * dhat-rs writes the same), the profile behind Firefox Profiler's DHAT
 * import (reference other-profiles.md §4).  A run is two snapshots of
 * one file: at the global peak, t-gmax (each program point's "gb" bytes
 * in "gbk" blocks), and at the end, t-end ("eb", "ebk").  What the point
 * allocated over the whole run ("tb" in "tbk" blocks) is its allocated
 * column in both.
 *
 * Program points are buckets; their frames ("fs", indexes into "ftbl",
 * innermost first) come symbolized by Valgrind: "0xADDR: fn (file:line)",
 * "0xADDR: fn (in /obj)" or "0xADDR: ???", one entry per inlined level
 * at the same address, innermost first.
 */
#include "dhat.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gperf.h"
#include "json.h"
#include "util.h"

bool dhat_claims(const struct filebuf *fb)
{
	size_t i = 0;

	while (i < fb->size && is_space(fb->data[i]))
		i++;
	if (i >= fb->size || fb->data[i++] != '{')
		return false;
	while (i < fb->size && is_space(fb->data[i]))
		i++;
	return fb->size - i >= 17 &&
	       !memcmp(fb->data + i, "\"dhatFileVersion\"", 17);
}

struct dparser {
	const char *path;
	struct model *m;
	const struct json_value *ftbl;
};

static int derr(struct dparser *d, const struct json_value *v,
		const char *fmt, ...) PRINTF(3, 4);
static int derr(struct dparser *d, const struct json_value *v,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror_at(d->path, v ? v->line : 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* Member KEY of V as a whole number >= 0; -1 (said) if absent or not. */
static int number(struct dparser *d, const struct json_value *v,
		  const char *key, int64_t *out)
{
	const struct json_value *n = json_get(v, key);

	if (!n)
		return derr(d, v, "no \"%s\"", key);
	if (n->type != JSON_NUMBER || n->number < 0 ||
	    n->number >= 9.2e18 || n->number != floor(n->number))
		return derr(d, n, "\"%s\" is not a count", key);
	*out = (int64_t)n->number;
	return 0;
}

/*
 * One ftbl entry, "0xADDR: fn (file:line)", into ADDR and NAME (NAME's
 * func_len 0: unnamed, "???").
 */
static void parse_frame(const char *s, size_t len, uint64_t *addr,
			struct frame_name *name)
{
	const char *colon = memchr(s, ':', len), *end = s + len, *open;
	struct cursor c = { s, colon ? colon : s };

	memset(name, 0, sizeof(*name));
	*addr = 0;
	if (!colon || parse_hex(&c, addr, true) != NUM_OK || c.p != colon) {
		*addr = 0;
		colon = NULL;
	}
	s = colon ? colon + 1 : s;
	while (s < end && is_space(*s))
		s++;
	if (end - s == 3 && !memcmp(s, "???", 3))
		return;
	/* The function runs to the last " (" of a trailing "(...)". */
	open = NULL;
	if (end > s && end[-1] == ')')
		for (const char *p = end - 1; p > s; p--)
			if (p[-1] == ' ' && *p == '(') {
				open = p;
				break;
			}
	name->func = s;
	name->func_len = (size_t)((open ? open - 1 : end) - s);
	if (!open || (end - open > 4 && !memcmp(open + 1, "in ", 3)))
		return; /* "(in /obj)": no source */
	{
		const char *f = open + 1, *fe = end - 1, *k;
		uint64_t line = 0;

		/* file:line[:col]: the last one or two numbers after a ':'. */
		for (int i = 0; i < 2; i++) {
			uint64_t v;

			for (k = fe; k > f && k[-1] != ':'; k--)
				;
			if (k == f || word_u64(k, (size_t)(fe - k), &v) != NUM_OK)
				break;
			line = v; /* (the second pass finds the line) */
			fe = k - 1;
		}
		if (fe < end - 1)
			name->line = line <= UINT32_MAX ? (uint32_t)line : 0;
		name->file = f;
		name->file_len = (size_t)(fe - f);
	}
}

/* The stack of program point PP, as model addresses, into FRAMES. */
static int stack_of(struct dparser *d, const struct json_value *pp,
		    uint64_t **frames, size_t *cap, uint32_t *depth)
{
	const struct json_value *fs = json_get(pp, "fs");
	struct frame_name names[64];
	uint64_t group_addr = 0;
	uint32_t n = 0;

	*depth = 0;
	if (!fs || fs->type != JSON_ARRAY)
		return derr(d, pp, "a program point without \"fs\"");
	GROW(*frames, fs->n + 1, *cap);
	for (size_t i = 0; i <= fs->n; i++) {
		uint64_t addr = 0;
		struct frame_name name;
		const struct json_value *e;
		double k;

		memset(&name, 0, sizeof(name));
		if (i < fs->n) {
			e = fs->items[i];
			k = e->type == JSON_NUMBER ? e->number : -1;
			if (k < 1 || k >= (double)d->ftbl->n || k != floor(k))
				return derr(d, e, "frame index out of range "
						  "(ftbl has %zu entries)",
					    d->ftbl->n);
			e = d->ftbl->items[(size_t)k];
			if (e->type != JSON_STRING)
				return derr(d, e, "an ftbl entry that is not "
						  "a string");
			parse_frame(e->string, e->string_len, &addr, &name);
		}
		/* Entries of one address are one frame, inlined first. */
		if (n && (i == fs->n || addr != group_addr || !addr ||
			  n == ARRAY_SIZE(names))) {
			(*frames)[(*depth)++] =
				model_named_frame(d->m, group_addr, names, n);
			n = 0;
		}
		if (i == fs->n)
			break;
		if (!name.func_len) {
			/* "???": an address only (none left: DHAT's own). */
			(*frames)[(*depth)++] = addr;
			continue;
		}
		group_addr = addr;
		names[n++] = name;
	}
	return 0;
}

static int build(struct dparser *d, struct snapshot *snap,
		 const struct json_value *pps)
{
	const char *bytes_key = snap->part == 1 ? "gb" : "eb";
	const char *blocks_key = snap->part == 1 ? "gbk" : "ebk";
	uint64_t *frames = NULL;
	size_t cap = 0;
	int64_t total = 0;

	snap->lines = xcalloc(pps->n ? pps->n : 1, sizeof(*snap->lines));
	snap->lines_alloc = pps->n ? pps->n : 1;
	for (size_t i = 0; i < pps->n; i++) {
		const struct json_value *pp = pps->items[i];
		struct stack_line *sl;
		int64_t b, bk, tb, tbk;
		uint32_t depth;

		if (pp->type != JSON_OBJECT) {
			free(frames);
			return derr(d, pp, "a program point that is not an "
					   "object");
		}
		if (number(d, pp, bytes_key, &b) < 0 ||
		    number(d, pp, blocks_key, &bk) < 0 ||
		    number(d, pp, "tb", &tb) < 0 ||
		    number(d, pp, "tbk", &tbk) < 0 ||
		    stack_of(d, pp, &frames, &cap, &depth) < 0) {
			free(frames);
			return -1;
		}
		sl = &snap->lines[snap->nlines++];
		sl->bucket = model_intern_bucket(d->m, ALLOC_MALLOC, frames,
						 depth, d->path, pp->line);
		if (!sl->bucket) {
			free(frames);
			return -1;
		}
		sl->bucket_id = sl->bucket->id;
		sl->line = pp->line;
		sl->virt = sl->committed = b;
		sl->alloc = tbk;
		sl->alloc_bytes = tb;
		sl->free = sub64(tbk, bk, &snap->overflow);
		total = add64(total, b, &snap->overflow);
	}
	free(frames);
	/*
	 * What a point allocated is known for the whole run only: at the
	 * end it is a count like any other, at the peak it is not yet.
	 */
	snap->has_alloc_bytes = snap->part == 2;
	snap->counts_unknown = snap->part != 2;
	heap_profile_stats(snap, total, 0);
	return 0;
}

static int parse(struct dparser *d, struct snapshot *snap,
		 const struct json_value *root)
{
	const struct json_value *v, *pps;
	const char *mode, *tu;
	int64_t version, when;

	if (root->type != JSON_OBJECT)
		return derr(d, root, "not a DHAT profile (not a JSON object)");
	if (number(d, root, "dhatFileVersion", &version) < 0)
		return -1;
	if (version != 2)
		return derr(d, json_get(root, "dhatFileVersion"),
			    "DHAT file version %" PRId64 "; dmprof reads "
			    "version 2", version);
	mode = json_get_string(root, "mode");
	if (!mode)
		return derr(d, root, "no \"mode\"");
	if (strcmp(mode, "heap") && strcmp(mode, "rust-heap"))
		return derr(d, json_get(root, "mode"),
			    "a DHAT profile in %s mode counts %s, not heap "
			    "blocks; dmprof reads heap mode", mode,
			    !strcmp(mode, "copy") ? "copies" : "events");
	v = json_get(root, "bklt");
	if (!v || v->type != JSON_TRUE)
		return derr(d, root, "a DHAT heap profile without block "
				     "lifetimes (\"bklt\": true)");
	pps = json_get(root, "pps");
	d->ftbl = json_get(root, "ftbl");
	if (!pps || pps->type != JSON_ARRAY)
		return derr(d, root, "no \"pps\" array");
	if (!d->ftbl || d->ftbl->type != JSON_ARRAY)
		return derr(d, root, "no \"ftbl\" array");
	if (number(d, root, snap->part == 1 ? "tg" : "te", &when) < 0)
		return -1;
	tu = json_get_string(root, "tu");
	/* Time: microseconds (dhat-rs), or instructions (Valgrind), which
	 * stand for seconds as they are, said once. */
	if (tu && (!strcmp(tu, "\xc2\xb5s") || !strcmp(tu, "us")))
		snap->time = (double)when / 1e6;
	else
		snap->time = (double)when;
	snap->time_from_meta = true;
	if (!(d->m->warned & MODEL_WARNED_PROFILE)) {
		d->m->warned |= MODEL_WARNED_PROFILE;
		warning("%s: a DHAT profile, read as two snapshots: at its "
			"global peak (t-gmax) and at its end (t-end); "
			"allocated is over the whole run%s", d->path,
			tu && strcmp(tu, "\xc2\xb5s") && strcmp(tu, "us")
				? "; times are in instructions, not seconds"
				: "");
	}
	return build(d, snap, pps);
}

int dhat_parse(struct snapshot *snap, const struct filebuf *fb,
	       struct model *m)
{
	struct dparser d;
	struct json_value *root;
	int rc;

	memset(&d, 0, sizeof(d));
	d.path = fb->path;
	d.m = m;
	if (snap->part != 1 && snap->part != 2)
		snap->part = 2; /* (one snapshot asked for: the end) */
	root = json_parse(fb->data, fb->size, fb->path);
	if (!root)
		return -1;
	rc = parse(&d, snap, root);
	json_free(root);
	snap->page_size = 4096;
	return rc;
}
