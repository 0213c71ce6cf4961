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

#include "json.h"
#include "reader.h"
#include "scan.h"
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

/* A program point's figures, in the order of point_keys. */
enum { PP_TB, PP_TBK, PP_GB, PP_GBK, PP_EB, PP_EBK, PP_NKEYS };
static const char *const point_keys[PP_NKEYS] = {
	"tb", "tbk", "gb", "gbk", "eb", "ebk",
};

struct point {
	int64_t v[PP_NKEYS];
	unsigned has;           /* bit K: v[K] was there */
	unsigned long line;     /* of its '{' */
	unsigned long fs_line;  /* of its "fs", 0: none */
	size_t fs_at, fs_n;     /* in dparser.fs */
};

/*
 * The file read as it goes (no tree: a big program's DHAT file has tens
 * of millions of frame indexes): the top-level figures, the points with
 * their frame indexes in one array, the frame table's strings in one
 * buffer.
 */
struct dparser {
	struct reader_pos pos; /* (the JSON cursor says where it fails) */
	struct model *m;
	struct read_run *run;
	struct json_cursor j;
	int64_t version, te, tg;
	unsigned long version_line, mode_line, te_line, tg_line;
	bool has_version, has_te, has_tg, bklt, has_pps, has_ftbl;
	struct strbuf mode, tu;
	struct point *pps;
	size_t npps, alloc_pps;
	uint32_t *fs;
	size_t nfs, alloc_fs;
	struct strbuf strs;      /* ftbl's entries, one after another */
	size_t *ftbl;            /* where entry K starts (K + 1: its end) */
	size_t nftbl, alloc_ftbl;
	uint64_t *addrs;         /* each entry parsed, once */
	struct frame_name *names;
	int part;                /* the snapshot's: 1 the peak, 2 the end */
	uint64_t *frames;        /* a point's stack (see sample) */
	size_t frames_cap;
};

/* The next value as a whole number >= 0, or the error KEY's. */
static bool count(struct dparser *d, const char *key, int64_t *out)
{
	double x;

	if (json_peek(&d->j) != '-' &&
	    (json_peek(&d->j) < '0' || json_peek(&d->j) > '9')) {
		json_error(&d->j, "\"%s\" is not a count", key);
		return false;
	}
	if (!json_read_number(&d->j, &x))
		return false;
	if (x < 0 || x >= 9.2e18 || x != floor(x)) {
		json_error(&d->j, "\"%s\" is not a count", key);
		return false;
	}
	*out = (int64_t)x;
	return true;
}

/* "fs": frame indexes, checked against the table once it is read. */
static bool read_frames(struct dparser *d, struct point *pp)
{
	bool first = true;

	pp->fs_line = d->j.line;
	pp->fs_at = d->nfs;
	if (!json_expect(&d->j, '[', "an array of frame indexes"))
		return false;
	while (json_next(&d->j, ']', &first)) {
		int64_t k;

		if (!count(d, "fs", &k))
			return false;
		GROW(d->fs, d->nfs + 1, d->alloc_fs);
		/* (0 and too big are said with the table's size.) */
		d->fs[d->nfs++] = k > UINT32_MAX ? 0 : (uint32_t)k;
	}
	pp->fs_n = d->nfs - pp->fs_at;
	return !d->j.failed;
}

static bool read_point(struct dparser *d, struct strbuf *key)
{
	struct point *pp;
	bool first = true;

	pp = PUSH_ZEROED(d->pps, d->npps, d->alloc_pps);
	pp->line = d->j.line;
	if (json_peek(&d->j) != '{') {
		json_error(&d->j, "a program point that is not an object");
		return false;
	}
	json_expect(&d->j, '{', "'{'");
	while (json_next(&d->j, '}', &first)) {
		size_t k;

		sb_reset(key);
		if (!json_read_string(&d->j, key) ||
		    !json_expect(&d->j, ':', "':'"))
			return false;
		for (k = 0; k < PP_NKEYS; k++)
			if (!strcmp(key->buf, point_keys[k]))
				break;
		if (k < PP_NKEYS) {
			if (!count(d, point_keys[k], &pp->v[k]))
				return false;
			pp->has |= 1u << k;
		} else if (!strcmp(key->buf, "fs")) {
			if (!read_frames(d, pp))
				return false;
		} else if (!json_skip(&d->j)) {
			return false;
		}
	}
	return !d->j.failed;
}

static bool read_table(struct dparser *d)
{
	bool first = true;

	if (!json_expect(&d->j, '[', "an array of frames"))
		return false;
	while (json_next(&d->j, ']', &first)) {
		GROW(d->ftbl, d->nftbl + 2, d->alloc_ftbl);
		d->ftbl[d->nftbl++] = d->strs.len;
		if (json_peek(&d->j) != '"') {
			json_error(&d->j, "an ftbl entry that is not a string");
			return false;
		}
		if (!json_read_string(&d->j, &d->strs))
			return false;
	}
	GROW(d->ftbl, d->nftbl + 1, d->alloc_ftbl);
	d->ftbl[d->nftbl] = d->strs.len;
	return !d->j.failed;
}

static bool read_array_of_points(struct dparser *d, struct strbuf *key)
{
	bool first = true;

	if (!json_expect(&d->j, '[', "an array of program points"))
		return false;
	while (json_next(&d->j, ']', &first))
		if (!read_point(d, key))
			return false;
	return !d->j.failed;
}

/* Is the mode heap blocks (said now: other modes have other fields)? */
static int check_mode(struct dparser *d, unsigned long line)
{
	const char *mode = d->mode.buf ? d->mode.buf : "";

	if (!strcmp(mode, "heap") || !strcmp(mode, "rust-heap"))
		return 0;
	d->pos.line = line;
	return read_error(&d->pos, "a DHAT profile in %s mode counts %s, "
			  "not heap blocks; dmprof reads heap mode",
			  *mode ? mode : "no",
			  !strcmp(mode, "copy") ? "copies" : "events");
}

/* The top-level object, member by member. */
static int read_file(struct dparser *d)
{
	struct strbuf key = STRBUF_INIT;
	bool first = true;
	double x;

	if (json_peek(&d->j) != '{') {
		sb_release(&key);
		d->pos.line = d->j.line;
		return read_error(&d->pos,
				  "not a DHAT profile (not a JSON object)");
	}
	json_expect(&d->j, '{', "'{'");
	while (json_next(&d->j, '}', &first)) {
		unsigned long line;
		const char *k;

		sb_reset(&key);
		if (!json_read_string(&d->j, &key) ||
		    !json_expect(&d->j, ':', "':'"))
			break;
		line = d->j.line;
		k = key.buf;
		if (!strcmp(k, "dhatFileVersion")) {
			d->has_version = json_read_number(&d->j, &x);
			d->version = x == floor(x) && x > -1e9 && x < 1e9
					     ? (int64_t)x : -1;
			d->version_line = line;
			if (d->has_version && d->version != 2) {
				d->pos.line = line;
				read_error(&d->pos, "DHAT file version %g; "
					   "dmprof reads version 2", x);
				d->j.failed = true;
			}
		} else if (!strcmp(k, "te") || !strcmp(k, "tg")) {
			bool end = k[1] == 'e';

			if (!count(d, k, end ? &d->te : &d->tg))
				break;
			*(end ? &d->has_te : &d->has_tg) = true;
			*(end ? &d->te_line : &d->tg_line) = line;
		} else if (!strcmp(k, "mode") || !strcmp(k, "tu")) {
			struct strbuf *sb = k[0] == 'm' ? &d->mode : &d->tu;

			sb_reset(sb);
			if (json_peek(&d->j) == '"')
				json_read_string(&d->j, sb);
			else
				json_skip(&d->j);
			if (k[0] == 'm') {
				d->mode_line = line;
				if (check_mode(d, line) < 0)
					d->j.failed = true;
			}
		} else if (!strcmp(k, "bklt")) {
			d->bklt = json_peek(&d->j) == 't';
			json_skip(&d->j);
		} else if (!strcmp(k, "pps")) {
			d->has_pps = read_array_of_points(d, &key);
		} else if (!strcmp(k, "ftbl")) {
			d->has_ftbl = read_table(d);
		} else {
			json_skip(&d->j);
		}
		if (d->j.failed)
			break;
	}
	if (!d->j.failed && json_peek(&d->j))
		json_error(&d->j, "unexpected text after the JSON value");
	sb_release(&key);
	return d->j.failed ? -1 : 0;
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
static int stack_of(struct dparser *d, const struct point *pp,
		    uint64_t **frames, size_t *cap, uint32_t *depth)
{
	struct frame_name names[64];
	uint64_t group_addr = 0;
	uint32_t n = 0;

	*depth = 0;
	if (!pp->fs_line) {
		d->pos.line = pp->line;
		return read_error(&d->pos, "a program point without \"fs\"");
	}
	GROW(*frames, pp->fs_n + 1, *cap);
	for (size_t i = 0; i <= pp->fs_n; i++) {
		uint64_t addr = 0;
		struct frame_name name;

		memset(&name, 0, sizeof(name));
		if (i < pp->fs_n) {
			uint32_t k = d->fs[pp->fs_at + i];

			if (k < 1 || k >= d->nftbl) {
				d->pos.line = pp->fs_line;
				return read_error(&d->pos, "frame index out of "
						  "range (ftbl has %zu "
						  "entries)", d->nftbl);
			}
			addr = d->addrs[k];
			name = d->names[k];
		}
		/* Entries of one address are one frame, inlined first. */
		if (n && (i == pp->fs_n || addr != group_addr || !addr ||
			  n == ARRAY_SIZE(names))) {
			(*frames)[(*depth)++] =
				model_named_frame(d->m, group_addr, names, n);
			n = 0;
		}
		if (i == pp->fs_n)
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

/* Program point I as a sample (see read_samples), at the peak or the
 * end as d->part says. */
static int sample(void *ctx, size_t i, struct read_sample *out)
{
	struct dparser *d = ctx;
	const struct point *pp = &d->pps[i];
	int bytes_key = d->part == 1 ? PP_GB : PP_EB;
	int blocks_key = d->part == 1 ? PP_GBK : PP_EBK;
	const int need[] = { bytes_key, blocks_key, PP_TB, PP_TBK };

	for (size_t k = 0; k < ARRAY_SIZE(need); k++) {
		if (!(pp->has & 1u << need[k])) {
			d->pos.line = pp->line;
			return read_error(&d->pos, "no \"%s\"",
					  point_keys[need[k]]);
		}
	}
	if (stack_of(d, pp, &d->frames, &d->frames_cap, &out->depth) < 0)
		return -1;
	out->frames = d->frames;
	out->line = pp->line;
	out->c = (struct sample_counts){ pp->v[blocks_key], pp->v[bytes_key],
					 true, pp->v[PP_TBK], pp->v[PP_TB] };
	return 0;
}

static int build(struct dparser *d, struct snapshot *snap)
{
	int64_t total;

	/* The table's entries, parsed once. */
	d->addrs = xcalloc(d->nftbl + 1, sizeof(*d->addrs));
	d->names = xcalloc(d->nftbl + 1, sizeof(*d->names));
	for (size_t k = 0; k < d->nftbl; k++)
		parse_frame(d->strs.buf + d->ftbl[k],
			    d->ftbl[k + 1] - d->ftbl[k], &d->addrs[k],
			    &d->names[k]);
	if (read_samples(snap, d->m, d->pos.path, d->npps, sample, d,
			 &total) < 0)
		return -1;
	/*
	 * What a point allocated is known for the whole run only: at the
	 * end it is a count like any other, at the peak it is not yet.
	 */
	read_finish_profile(snap, total, 0, snap->part == 2, snap->part == 2);
	return 0;
}

static int parse(struct dparser *d, struct snapshot *snap)
{
	const char *tu;
	bool micro;

	if (read_file(d) < 0)
		return -1;
	/* (What is missing is said of the object's first line.) */
	d->pos.line = 1;
	if (!d->has_version)
		return read_error(&d->pos, "no \"dhatFileVersion\"");
	if (!d->mode_line)
		return read_error(&d->pos, "no \"mode\"");
	if (!d->bklt)
		return read_error(&d->pos, "a DHAT heap profile without block "
				  "lifetimes (\"bklt\": true)");
	if (!d->has_pps)
		return read_error(&d->pos, "no \"pps\" array");
	if (!d->has_ftbl)
		return read_error(&d->pos, "no \"ftbl\" array");
	if (!(snap->part == 1 ? d->has_tg : d->has_te))
		return read_error(&d->pos, "no \"%s\"",
				  snap->part == 1 ? "tg" : "te");
	/* Time: microseconds (dhat-rs), or instructions (Valgrind), which
	 * stand for seconds as they are, said once. */
	tu = d->tu.buf ? d->tu.buf : "";
	micro = !strcmp(tu, "\xc2\xb5s") || !strcmp(tu, "us");
	snap->time = (double)(snap->part == 1 ? d->tg : d->te);
	if (micro)
		snap->time /= 1e6;
	snap->time_instructions = !micro;
	snap->time_from_meta = true;
	if (read_warn_first(d->run, READ_WARNED_PROFILE))
		warning("%s: a DHAT profile, read as two snapshots: at its "
			"global peak (t-gmax) and at its end (t-end); "
			"allocated is over the whole run%s", d->pos.path,
			micro ? "" : "; times are in instructions, not seconds");
	return build(d, snap);
}

int dhat_parse(struct snapshot *snap, struct filebuf *fb,
	       struct model *m, struct read_run *run)
{
	struct dparser d;
	int rc;

	memset(&d, 0, sizeof(d));
	d.pos.path = fb->path;
	d.m = m;
	d.run = run;
	if (snap->part != 1 && snap->part != 2)
		snap->part = 2; /* (one snapshot asked for: the end) */
	d.part = snap->part;
	json_cursor_init(&d.j, fb->data, fb->size, fb->path);
	rc = parse(&d, snap);
	sb_release(&d.mode);
	sb_release(&d.tu);
	sb_release(&d.strs);
	FREE_ALL(d.pps, d.fs, d.ftbl, d.addrs, d.names, d.frames);
	read_pos_release(&d.pos);
	return rc;
}
