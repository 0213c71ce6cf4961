/*
 * The steps every reader takes the same way, written once: saying what is
 * wrong where (FILE:LINE, as STYLE.md wants every diagnostic about input),
 * a heap profile's samples as stack lines, and the snapshot it leaves.
 */
#include "reader.h"

#include <stdarg.h>
#include <string.h>

int read_error(const struct reader_pos *pos, const char *fmt, ...)
{
	struct where w = { pos->path, pos->line, pos->col, false, 0 };
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (pos->quiet)
		return -1;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	error_at(&w, "%s", sb.buf);
	sb_release(&sb);
	return -1;
}

const char *read_quote(struct reader_pos *pos, const char *s, size_t len)
{
	return quote_for_msg(s, len, &pos->q);
}

void read_pos_release(struct reader_pos *pos)
{
	sb_release(&pos->q);
}

struct stack_line *read_add_sample(struct snapshot *snap, struct bucket *b,
				   const struct sample_counts *c)
{
	struct stack_line sl;

	memset(&sl, 0, sizeof(sl));
	sl.bucket = b;
	sl.virt = sl.committed = c->bytes;
	if (c->has_alloc) {
		sl.alloc = c->alloc_objs;
		sl.alloc_bytes = c->alloc_bytes;
		sl.free = sub64(c->alloc_objs, c->objs, &snap->overflow);
	} else {
		sl.alloc = c->objs;
	}
	return read_add_line(snap, &sl);
}

int read_samples(struct snapshot *snap, struct model *m, const char *path,
		 size_t n,
		 int (*sample)(void *ctx, size_t i, struct read_sample *out),
		 void *ctx, int64_t *total)
{
	/* (As many lines as samples, not the doubling of GROW's.) */
	snap->lines = xcalloc(n ? n : 1, sizeof(*snap->lines));
	snap->lines_alloc = n ? n : 1;
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		struct read_sample s;
		struct bucket *b;

		memset(&s, 0, sizeof(s));
		if (sample(ctx, i, &s) < 0)
			return -1;
		b = model_intern_bucket(m, ALLOC_MALLOC, s.frames, s.depth,
					path, s.line);
		if (!b)
			return -1;
		read_add_sample(snap, b, &s.c);
		*total = add64(*total, s.c.bytes, &snap->overflow);
	}
	return 0;
}

void read_finish_profile(struct snapshot *snap, int64_t malloc_bytes,
			 int64_t mmap_bytes, bool counts_alloc,
			 bool alloc_bytes)
{
	struct gstat *gs = snap->gs.row;
	int64_t total = add64(malloc_bytes, mmap_bytes, &snap->overflow);

	if (!snap->lines) {
		snap->lines = xcalloc(1, sizeof(*snap->lines));
		snap->lines_alloc = 1;
	}
	snap->counts_unknown = !counts_alloc;
	snap->has_alloc_bytes = alloc_bytes;
	gs[GS_PROFILED_MALLOC].virt = gs[GS_PROFILED_MALLOC].committed =
		malloc_bytes;
	gs[GS_PROFILED_MMAP].virt = gs[GS_PROFILED_MMAP].committed =
		mmap_bytes;
	/*
	 * A profile knows no process total: its own sum stands for it (not
	 * marked present, so that mustbezero has nothing to check).
	 */
	gs[GS_TOTAL].virt = gs[GS_TOTAL].committed = total;
	snap->gs.present = 1u << GS_PROFILED_MALLOC | 1u << GS_PROFILED_MMAP;
}
