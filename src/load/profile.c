/*
 * The snapshot-loading front.  A new input format is a reader (a claims()
 * that recognizes its first line, a parse() that fills the snapshot) and a
 * row in the table below, which also says how its producer names a run's
 * dumps (series.c) and names its fuzz target (tests/fuzz).
 */
#include "profile.h"

#include <string.h>
#include <sys/stat.h>

#include "deep.h"
#include "dhat.h"
#include "gperf.h"
#include "jemalloc.h"
#include "pbread.h"
#include "scan.h"
#include "corefile.h"
#include "snapfile.h"
#include "util.h"

/* What follows the counter in the names of a run's dumps. */
static const char *const heap_suffixes[] = { "heap", NULL };
static const char *const pprof_suffixes[] = { "pb.gz", "pb", "pprof",
					      "pprof.gz", "prof", NULL };
static const char *const snap_suffixes[] = { "snap", NULL };

static const struct reader {
	const char *what;   /* for "dmprof reads ..." */
	bool (*claims)(const char *line, size_t len);
	bool (*claims_file)(const struct filebuf *fb); /* binary formats */
	/* The whole file in memory, or (a reader of big files) a line at
	 * a time: one of the two. */
	int (*parse)(struct snapshot *snap, struct filebuf *fb,
		     struct model *m, struct read_run *run);
	int (*parse_stream)(struct snapshot *snap, struct line_stream *s,
			    struct model *m, struct read_run *run);
	/* Or (a reader that reads a file its own way): its path. */
	int (*parse_path)(struct snapshot *snap, const char *path,
			  struct model *m, struct read_run *run);
	struct profile_traits traits;
} readers[] = {
	{ .what = "deep heap dumps (DUMP_DEEP_5, DUMP_DEEP_6)",
	  .claims = deep_claims, .parse = deep_parse,
	  .traits = { .format = FORMAT_DEEP, .name = "deep",
		      .suffixes = heap_suffixes, .parts = 1,
		      .read_ahead = true, .moment = deep_moment } },
	{ .what = "text heap profiles (gperftools, tcmalloc, Go debug=1, "
		  "pprof)",
	  .claims = gperf_is_header, .parse_stream = gperf_parse,
	  .traits = { .format = FORMAT_GPERFTOOLS, .name = "gperf",
		      .suffixes = heap_suffixes, .self_contained = true,
		      .parts = 1, .last_at_exit = gperf_last_at_exit,
		      .binaries = gperf_binaries } },
	{ .what = "jemalloc heap profiles (heap_v2/RATE)",
	  .claims = jemalloc_claims, .parse = jemalloc_parse,
	  .traits = { .format = FORMAT_JEMALLOC, .name = "jemalloc",
		      .suffixes = heap_suffixes,
		      .infix = jemalloc_dump_kind, .self_contained = true,
		      .parts = 1 } },
	{ .what = "pprof protobuf profiles (profile.proto, gzipped)",
	  .claims_file = pb_claims, .parse = pb_parse,
	  .traits = { .format = FORMAT_PROTO, .name = "proto",
		      .suffixes = pprof_suffixes, .self_contained = true,
		      .parts = 1 } },
	{ .what = "Valgrind DHAT profiles (dhat.out.PID)",
	  .claims_file = dhat_claims, .parse = dhat_parse,
	  .traits = { .format = FORMAT_DHAT, .name = "dhat",
		      .self_contained = true, .parts = 2 } },
	{ .what = "snapshots of running processes (dmprof snapshot)",
	  .claims = snapfile_claims, .parse = snapfile_parse,
	  .traits = { .format = FORMAT_SNAP, .name = "snap",
		      .suffixes = snap_suffixes, .self_contained = true,
		      .parts = 1 } },
	{ .what = "ELF core files (x86-64: the kernel's, gcore's)",
	  .claims_file = corefile_claims, .parse_path = corefile_parse,
	  .traits = { .format = FORMAT_CORE, .name = "core",
		      .self_contained = true, .parts = 1 } },
};

const struct profile_traits *profile_traits(enum dump_format format)
{
	for (size_t i = 0; i < ARRAY_SIZE(readers); i++)
		if (readers[i].traits.format == format)
			return &readers[i].traits;
	BUG("format %d has no reader", (int)format);
}

const struct profile_traits *profile_reader(size_t i)
{
	return i < ARRAY_SIZE(readers) ? &readers[i].traits : NULL;
}

static bool has_prefix(const struct filebuf *fb, size_t at, const char *lit)
{
	size_t n = strlen(lit);

	return fb->size >= at + n && !memcmp(fb->data + at, lit, n);
}

/* What a file no reader claims seems to be, or NULL. */
static const char *looks_like(const struct filebuf *fb)
{
	static const struct {
		const char *start, *what;
	} starts[] = {
		{ "--- heapz 1 ---", "a Java heap profile (heapz)" },
		{ "--- contentionz 1 ---", "a Java contention profile" },
		{ "--- contention", "a contention profile" },
		{ "--- mutex", "a Go mutex profile" },
		{ "goroutine profile:", "a Go goroutine profile" },
		{ "threadcreate profile:", "a Go threadcreate profile" },
		{ "desc:", "a Valgrind massif profile" },
		{ "# callgrind format", "a Valgrind callgrind profile" },
		{ "PERFILE2", "a perf.data file" },
		{ "PK\003\004", "a zip archive" },
	};
	static const unsigned char cpu64[24] = { 0, 0, 0, 0, 0, 0, 0, 0,
						 3, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char cpu32[12] = { 0, 0, 0, 0, 3, 0, 0, 0 };
	size_t at = 0;

	for (size_t i = 0; i < ARRAY_SIZE(starts); i++)
		if (has_prefix(fb, 0, starts[i].start))
			return starts[i].what;
	/* pprof's binary CPU profile: header words 0, 3, 0 (64 or 32 bit). */
	if ((fb->size >= 24 && !memcmp(fb->data, cpu64, 24)) ||
	    (fb->size >= 12 && !memcmp(fb->data, cpu32, 12)))
		return "a pprof CPU profile (the legacy binary form)";
	while (at < fb->size && is_space(fb->data[at]))
		at++;
	if (has_prefix(fb, at, "{"))
		return "a JSON file, not DHAT's";
	return NULL;
}

/*
 * The reader of FB, or NULL after saying why not.  Blank lines, pprof's
 * '%' commands and '#' comments do not decide.
 */
static const struct reader *sniff_saying(const struct filebuf *fb, bool say)
{
	struct strbuf what = STRBUF_INIT, q = STRBUF_INIT;
	const char *kind;
	struct line_reader r;
	struct line l;
	bool deciding = false; /* a line that decides, and no reader's */

	for (size_t i = 0; i < ARRAY_SIZE(readers); i++)
		if (readers[i].claims_file && readers[i].claims_file(fb))
			return &readers[i];
	lines_init(&r, fb->data, fb->size);
	while (!deciding && lines_next(&r, &l)) {
		if (line_is_blank(&l) || l.p[0] == '%' || l.p[0] == '#')
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(readers); i++)
			if (readers[i].claims && readers[i].claims(l.p, l.len))
				return &readers[i];
		deciding = true;
	}
	if (!say)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(readers); i++)
		sb_addf(&what, "%s%s",
			!i ? "" : i + 1 < ARRAY_SIZE(readers) ? ", " : " and ",
			readers[i].what);
	if ((kind = looks_like(fb)))
		error("%s: %s, not a heap profile; dmprof reads %s", fb->path,
		      kind, what.buf);
	else if (deciding)
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

static const struct reader *sniff(const struct filebuf *fb)
{
	return sniff_saying(fb, true);
}

/* (Its first line decides: read first, and the rest of a block only
 * for a file whose blank lines or comments fill that.  A MiB read for
 * every dump was 0.3 ms of a small profile's run.) */
#define PROBE_FIRST (16u << 10)

int profile_probe(const char *path, enum dump_format *format)
{
	struct filebuf fb;
	const struct reader *rd;
	struct stat st;

	/*
	 * A dump is opened twice, its head first: a pipe's head would be
	 * gone when it is read (a process substitution's dump read from
	 * its second MiB, or waited on for ever for a FIFO's next writer).
	 */
	if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
		return error("%s: a pipe: dmprof reads a dump's head before "
			     "the dump; save it to a file first", path);
	/*
	 * The head is enough (a profile may be hundreds of MB): the first
	 * line that decides, unless blank lines and comments fill a MiB, and
	 * then it is no profile anyway.
	 */
	if (file_load_head(&fb, path, PROBE_FIRST) < 0)
		return -1;
	rd = sniff_saying(&fb, fb.size < PROBE_FIRST);
	if (!rd && fb.size == PROBE_FIRST) {
		file_release(&fb);
		if (file_load_head(&fb, path, STREAM_BLOCK) < 0)
			return -1;
		rd = sniff(&fb);
	}
	file_release(&fb);
	if (!rd)
		return -1;
	*format = rd->traits.format;
	return 0;
}

int profile_load(struct snapshot *snap, const char *path, struct model *m,
		 struct read_run *run)
{
	return profile_load_part(snap, path, 0, m, run);
}

int profile_load_part(struct snapshot *snap, const char *path, int part,
		      struct model *m, struct read_run *run)
{
	bool other;

	return profile_load_part_as(snap, path, part, m, run, FORMAT_ANY,
				    &other);
}

int profile_load_part_as(struct snapshot *snap, const char *path, int part,
			 struct model *m, struct read_run *run,
			 enum dump_format only, bool *other)
{
	const struct reader *rd;
	struct line_stream s;
	struct filebuf head, fb;
	struct read_run alone;
	int rc = -1;

	*other = false;
	if (!run) {
		memset(&alone, 0, sizeof(alone));
		run = &alone;
	}

	snapshot_init(snap, path);
	snap->part = part;
	if (stream_open(&s, path) < 0) {
		snapshot_release(snap);
		return -1;
	}
	snap->time = (double)s.mtime.tv_sec + s.mtime.tv_nsec / 1e9;
	/* (The first block decides, as in profile_probe.) */
	stream_head(&s, &head);
	rd = sniff(&head);
	if (only != FORMAT_ANY && (!rd || rd->traits.format != only)) {
		stream_close(&s);
		snapshot_release(snap);
		*other = true;
		return -1;
	}
	if (rd && rd->parse_path) {
		stream_close(&s);
		snap->format = rd->traits.format;
		rc = rd->parse_path(snap, path, m, run);
	} else if (rd && rd->parse_stream) {
		snap->format = rd->traits.format;
		rc = rd->parse_stream(snap, &s, m, run);
		stream_close(&s);
	} else if (rd) {
		snap->format = rd->traits.format;
		if (stream_to_file(&s, &fb) == 0)
			rc = rd->parse(snap, &fb, m, run);
		file_release(&fb);
	} else {
		stream_close(&s);
	}
	if (rc < 0)
		snapshot_release(snap);
	else
		snapshot_index_lines(snap);
	return rc;
}
