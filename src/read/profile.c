/*
 * The snapshot-loading front.  A new input format is a reader (a claims()
 * that recognizes its first line, a parse() that fills the snapshot) and a
 * row in the table below.
 */
#include "profile.h"

#include <string.h>

#include "deep.h"
#include "gperf.h"
#include "text.h"
#include "util.h"

static const struct reader {
	enum dump_format format;
	const char *what;   /* for "dmprof reads ..." */
	bool (*claims)(const char *line, size_t len);
	int (*parse)(struct snapshot *snap, const struct filebuf *fb,
		     struct model *m);
} readers[] = {
	{ FORMAT_DEEP, "deep heap dumps (DUMP_DEEP_5, DUMP_DEEP_6)",
	  deep_claims, deep_parse },
	{ FORMAT_GPERFTOOLS, "gperftools heap profiles (heapprofile, heap_v2)",
	  gperf_is_header, gperf_parse },
};

static bool blank(const struct line *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (!is_space(l->p[i]))
			return false;
	return true;
}

/*
 * The reader of FB, or NULL after saying why not.  Blank lines, pprof's
 * '%' commands and '#' comments do not decide.
 */
static const struct reader *sniff(const struct filebuf *fb)
{
	struct strbuf what = STRBUF_INIT, q = STRBUF_INIT;
	struct line_reader r;
	struct line l;
	bool deciding = false; /* a line that decides, and no reader's */

	lines_init(&r, fb->data, fb->size);
	while (!deciding && lines_next(&r, &l)) {
		if (blank(&l) || l.p[0] == '%' || l.p[0] == '#')
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(readers); i++)
			if (readers[i].claims(l.p, l.len))
				return &readers[i];
		deciding = true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(readers); i++)
		sb_addf(&what, "%s%s",
			!i ? "" : i + 1 < ARRAY_SIZE(readers) ? ", " : " and ",
			readers[i].what);
	if (deciding)
		error("%s:%lu: not a heap profile dmprof reads: '%s'; it reads "
		      "%s", fb->path, l.no, quote_for_msg(l.p, l.len, &q),
		      what.buf);
	else
		error("%s:%lu: empty dump (no 'heap profile:' line); dmprof "
		      "reads %s", fb->path, r.no ? r.no : 1, what.buf);
	sb_release(&what);
	sb_release(&q);
	return NULL;
}

int profile_probe(const char *path, enum dump_format *format)
{
	struct filebuf fb;
	const struct reader *rd;

	/*
	 * The head is enough (a profile may be hundreds of MB): the first
	 * line that decides, unless blank lines and comments fill a MiB, and
	 * then it is no profile anyway.
	 */
	if (file_load_head(&fb, path, 1u << 20) < 0)
		return -1;
	rd = sniff(&fb);
	file_release(&fb);
	if (!rd)
		return -1;
	*format = rd->format;
	return 0;
}

int profile_load(struct snapshot *snap, const char *path, struct model *m)
{
	const struct reader *rd;
	struct filebuf fb;
	int rc = -1;

	snapshot_init(snap, path);
	if (file_load(&fb, path) < 0) {
		snapshot_release(snap);
		return -1;
	}
	snap->time = (double)fb.mtime.tv_sec + fb.mtime.tv_nsec / 1e9;
	rd = sniff(&fb);
	if (rd) {
		snap->format = rd->format;
		rc = rd->parse(snap, &fb, m);
	}
	file_release(&fb);
	if (rc < 0)
		snapshot_release(snap);
	return rc;
}
