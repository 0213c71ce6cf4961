/*
 * The .buckets reader.  A bucket line is
 * "ID mmap|malloc [tTYPEINFO] [nNAME] 0xFRAME... [=N]", innermost frame
 * first; "=N" (dmprof record's dumps) stands for the last N frames of the
 * bucket line before it in its file or BUCKETS section.
 * dmprof record also names frames of interpreted code there (Python's),
 * before the buckets that use them:
 * "frame 0xADDR<TAB>FUNCTION<TAB>FILE<TAB>LINE", with tab, newline and
 * backslash in the names written \t, \n and \\.
 */
#include "bucketfile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "threads.h"
#include "reader.h"
#include "scan.h"
#include "util.h"

/*
 * A .buckets file is read in batches of lines: parsed first, then all
 * their frames interned, then their stacks, then the buckets defined.
 * Frames and stacks are looked up in big tables in no order; done in
 * batches, the next ones can be fetched while the current one is looked
 * up.
 */
struct brec {
	uint64_t id, typeinfo;
	size_t name_off;     /* in the batch's names; SIZE_MAX: none */
	size_t name_len;
	size_t first;        /* in the batch's frames */
	uint32_t depth;
	unsigned long line;
	uint8_t kind;
	bool has_typeinfo;
	uint64_t hash;       /* of its stack, once its frames are ids */
};

/* A frame the file names (its text in the batch's names). */
struct bname {
	uint64_t addr;
	size_t func_off, func_len, file_off, file_len;
	uint32_t line;
	unsigned long no;    /* the line's */
};

struct batch {
	struct brec *v;
	size_t n, alloc;
	struct bname *named;
	size_t nnamed, named_alloc;
	uint64_t *frames;
	size_t nframes, frames_alloc;
	uint32_t *ids;
	size_t ids_alloc;
	struct strbuf names;
};

/* BT empty, for lines again. */
static void batch_reset(struct batch *bt)
{
	bt->n = bt->nframes = bt->nnamed = 0;
	sb_reset(&bt->names);
}

static void batch_free(struct batch *bt)
{
	FREE_ALL(bt->v, bt->named, bt->frames, bt->ids);
	sb_release(&bt->names);
}

enum { BATCH_LINES = 16384, AHEAD = 64, SAMPLE_LINES = 1024 };

/* Returns 0, or -1 after an error (an id table is full). */
static int batch_define(struct model *m, struct batch *bt,
			const char *source)
{
	const char *empty = strtab_intern_str(&m->strings, "");
	uint64_t hashes[AHEAD];

	/* The frames named first: the buckets after them use them. */
	for (size_t i = 0; i < bt->nnamed; i++) {
		const struct bname *b = &bt->named[i];
		struct frame_name fn = { bt->names.buf + b->func_off,
					 b->func_len,
					 bt->names.buf + b->file_off,
					 b->file_len, b->line };

		if (model_named_frame(m, b->addr, &fn, 1) != b->addr)
			warning("%s:%lu: frame 0x%" PRIx64 " named again "
				"otherwise; the first name stays",
				source, b->no, b->addr);
	}
	GROW(bt->ids, bt->nframes, bt->ids_alloc);
	/* (Each frame's hash made once: for its prefetch, kept in a ring
	 * until it is interned.) */
	for (size_t i = 0; i < AHEAD && i < bt->nframes; i++)
		hashes[i] = frames_prefetch_hashed(&m->frames,
						   hash_u64(bt->frames[i]));
	for (size_t i = 0; i < bt->nframes; i++) {
		uint64_t h = hashes[i % AHEAD];

		if (i + AHEAD < bt->nframes)
			hashes[i % AHEAD] = frames_prefetch_hashed(
				&m->frames, hash_u64(bt->frames[i + AHEAD]));
		bt->ids[i] = frames_intern_hashed(&m->frames, bt->frames[i], h);
		if (bt->ids[i] == FRAME_NONE)
			return error("%s: more than %" PRIu32 " distinct frames",
				     source, FRAME_NONE - 1);
	}
	for (size_t i = 0; i < bt->n; i++)
		bt->v[i].hash = stacks_hash(bt->v[i].depth ? bt->ids +
								     bt->v[i].first
							   : NULL,
					    bt->v[i].depth);
	for (size_t i = 0; i < bt->n; i++) {
		const struct brec *r = &bt->v[i];
		const struct stack *st;

		if (i + AHEAD < bt->n)
			stacks_prefetch(&m->stacks, bt->v[i + AHEAD].hash);
		st = stacks_intern_hashed(&m->stacks,
					  r->depth ? bt->ids + r->first : NULL,
					  r->depth, r->hash);
		if (!st)
			return error("%s:%lu: more than %" PRIu32 " distinct "
				     "stacks", source, r->line, UINT32_MAX);
		if (!model_define_stack_bucket(
			m, r->id, (enum alloc_kind)r->kind, r->has_typeinfo,
			r->typeinfo,
			r->name_off != SIZE_MAX
				? strtab_intern(&m->strings,
						bt->names.buf + r->name_off,
						r->name_len)
				: empty,
			st, source, r->line))
			return -1;
	}
	batch_reset(bt);
	return 0;
}

/*
 * The hex digits at P, before END: how many (17: too many for 64 bits),
 * their value in *V.
 */
static inline unsigned hex_run(const char *p, const char *end, uint64_t *v)
{
	unsigned n = 0;
	int d;

	if (end - p >= 16) {
		n = xdigits16(p, v);
		if (n == 16 && p + 16 < end && hex_value(p[16]) >= 0)
			return 17;
		return n;
	}
	/* Near the end of the line: a digit at a time. */
	*v = 0;
	for (; p < end && n <= 16 && (d = hex_value(*p)) >= 0; p++, n++)
		*v = *v << 4 | (unsigned)d;
	return n;
}

/* Frames from P, the blank before one, in the common form: to BT (see
 * hex_words_run); where they stop. */
static const char *frames_run(struct batch *bt, const char *p,
			      const char *end, size_t *depth)
{
	size_t n;

	GROW(bt->frames, bt->nframes + (size_t)(end - p) / 4 + 1,
	     bt->frames_alloc);
	/* (16 bytes read after a frame's "0x": within the line.) */
	p = hex_words_run(p, end, end, true, bt->frames + bt->nframes, &n);
	bt->nframes += n;
	*depth += n;
	return p;
}

/* Text up to a tab or the end, unescaped into the batch's names; false
 * after a backslash that escapes nothing. */
static bool name_field(struct batch *bt, struct cursor *c, size_t *off,
		       size_t *len)
{
	*off = bt->names.len;
	while (c->p < c->end && *c->p != '\t') {
		char ch = *c->p++;

		if (ch == '\\') {
			if (c->p == c->end)
				return false;
			ch = *c->p++;
			if (ch != 't' && ch != 'n' && ch != '\\')
				return false;
			ch = ch == 't' ? '\t' : ch == 'n' ? '\n' : ch;
		}
		sb_add(&bt->names, &ch, 1);
	}
	*len = bt->names.len - *off;
	if (c->p < c->end)
		c->p++; /* (the tab) */
	return true;
}

/* "frame 0xADDR<TAB>FUNCTION<TAB>FILE<TAB>LINE", past "frame". */
static int parse_frame_line(struct batch *bt, struct reader_pos *pos,
			    const struct line *l, struct cursor *c)
{
	struct bname b = { .no = l->no };
	const char *w;
	size_t len;
	uint64_t line;

	while (c->p < c->end && *c->p == ' ')
		c->p++;
	for (w = c->p; c->p < c->end && *c->p != '\t'; c->p++)
		;
	len = (size_t)(c->p - w);
	if (!len || word_hex(w, len, &b.addr, true) != NUM_OK || !b.addr ||
	    c->p == c->end)
		return read_error(pos, "expected 'frame 0xADDRESS<TAB>FUNCTION"
				  "<TAB>FILE<TAB>LINE', found '%s'",
				  read_quote(pos, l->p, l->len));
	c->p++;
	if (!name_field(bt, c, &b.func_off, &b.func_len) || !b.func_len ||
	    !name_field(bt, c, &b.file_off, &b.file_len) ||
	    word_u64(c->p, (size_t)(c->end - c->p), &line) != NUM_OK ||
	    line > UINT32_MAX)
		return read_error(pos, "invalid frame name '%s' (expected "
				  "FUNCTION<TAB>FILE<TAB>LINE, FUNCTION not "
				  "empty)",
				  read_quote(pos, l->p, l->len));
	b.line = (uint32_t)line;
	GROW(bt->named, bt->nnamed + 1, bt->named_alloc);
	bt->named[bt->nnamed++] = b;
	return 0;
}

/*
 * The bucket line before, whose last frames "=N" stands for: in the batch
 * (its record AT), or copied out of a batch handed over (OUT).
 */
struct line_before {
	size_t at;           /* SIZE_MAX: not in the batch */
	uint64_t *out;
	size_t nout, out_alloc;
	bool have;           /* false: none in its file or section yet */
};

/* "=N" (the word W of LEN bytes): the last N frames of the line before,
 * to BT; *DEPTH counts them.  0, or -1 after saying what is wrong. */
static int frames_before(struct batch *bt, struct reader_pos *pos,
			 const struct line_before *lb, const char *w,
			 size_t len, size_t *depth)
{
	bool here = lb->at != SIZE_MAX;
	size_t had = here ? bt->v[lb->at].depth : lb->nout;
	uint64_t n;

	if (word_u64(w + 1, len - 1, &n) != NUM_OK || !n)
		return read_error(pos, "invalid '%s' (expected =N, the last N "
				  "frames of the line before)",
				  read_quote(pos, w, len));
	if (!lb->have)
		return read_error(pos, "'%s' with no bucket line before it",
				  read_quote(pos, w, len));
	if (n > had)
		return read_error(pos, "'%s' asks for more frames than the "
				  "line before has (%zu)",
				  read_quote(pos, w, len), had);
	if (*depth + n >= UINT32_MAX)
		return read_error(pos, "stack too deep");
	/* (After the growth: the line before may be in the frames moved.) */
	GROW(bt->frames, bt->nframes + n, bt->frames_alloc);
	memcpy(bt->frames + bt->nframes,
	       (here ? bt->frames + bt->v[lb->at].first : lb->out) + had - n,
	       n * sizeof(*bt->frames));
	bt->nframes += n;
	*depth += n;
	return 0;
}

/* Line L into BT: 0, or -1 after saying what is wrong at POS.  LB is the
 * bucket line before it. */
static int parse_bucket_line(struct batch *bt, struct reader_pos *pos,
			     const struct line *l,
			     const struct line_before *lb)
{
	struct cursor c = cursor_of(l);
	const char *w, *name = NULL;
	size_t len, name_len = 0, depth = 0, first = bt->nframes;
	uint64_t id, typeinfo = 0;
	bool has_typeinfo = false, in_frames = false;
	enum alloc_kind kind;
	enum num_status st;
	int rc = -1;

	if (!cursor_word(&c, &w, &len))
		return 0; /* blank line */
	if (len == 5 && !memcmp(w, "frame", 5))
		return parse_frame_line(bt, pos, l, &c);
	st = word_u64(w, len, &id);
	if (st != NUM_OK) {
		read_error(pos, "%s bucket id '%s'",
			   st == NUM_RANGE ? "out-of-range" : "invalid",
			   read_quote(pos, w, len));
		goto out;
	}
	if (!cursor_word(&c, &w, &len)) {
		read_error(pos, "bucket %" PRIu64 " has no allocator", id);
		goto out;
	}
	if (len == 6 && !memcmp(w, "malloc", 6)) {
		kind = ALLOC_MALLOC;
	} else if (len == 4 && !memcmp(w, "mmap", 4)) {
		kind = ALLOC_MMAP;
	} else {
		read_error(pos, "unknown allocator '%s' (expected malloc or "
			   "mmap)", read_quote(pos, w, len));
		goto out;
	}
	while (true) {
		uint64_t addr;

		/*
		 * The common case first, in one pass: " 0x" and up to 16 hex
		 * digits.  Anything else goes the general way below.
		 */
		if (in_frames) {
			const char *p, *end = c.end;
			uint64_t v = 0;
			unsigned n;

			p = c.p = frames_run(bt, c.p, end, &depth);
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			if (end - p > 2 && p[0] == '0' && p[1] == 'x') {
				n = hex_run(p + 2, end, &v);
				p += 2 + n;
				if (n && n <= 16 &&
				    (p == end || *p == ' ' || *p == '\t')) {
					c.p = p;
					GROW(bt->frames, bt->nframes + 1,
					     bt->frames_alloc);
					bt->frames[bt->nframes++] = v;
					depth++;
					continue;
				}
			}
		}
		if (!cursor_word(&c, &w, &len))
			break;
		if (w[0] == '=') {
			if (frames_before(bt, pos, lb, w, len, &depth) < 0)
				goto out;
			if (cursor_word(&c, &w, &len)) {
				read_error(pos, "'%s' after =N, which ends "
					   "the line", read_quote(pos, w, len));
				goto out;
			}
			break;
		}
		if (!in_frames && w[0] == 't') {
			st = word_hex(w + 1, len - 1, &typeinfo, true);
			if (st != NUM_OK) {
				read_error(pos, "invalid typeinfo '%s'",
					   read_quote(pos, w, len));
				goto out;
			}
			has_typeinfo = true;
			continue;
		}
		if (!in_frames && w[0] == 'n') {
			name = w + 1;
			name_len = len - 1;
			continue;
		}
		in_frames = true;
		st = word_hex(w, len, &addr, true);
		if (st != NUM_OK) {
			read_error(pos, "%s frame address '%s'",
				   st == NUM_RANGE ? "out-of-range" : "invalid",
				   read_quote(pos, w, len));
			goto out;
		}
		if (depth >= UINT32_MAX) {
			read_error(pos, "stack too deep");
			goto out;
		}
		GROW(bt->frames, bt->nframes + 1, bt->frames_alloc);
		bt->frames[bt->nframes++] = addr;
		depth++;
	}
	GROW(bt->v, bt->n + 1, bt->alloc);
	bt->v[bt->n++] = (struct brec){ id,
					typeinfo,
					name ? bt->names.len : SIZE_MAX,
					name_len,
					first,
					(uint32_t)depth,
					l->no,
					(uint8_t)kind,
					has_typeinfo,
					0 };
	if (name)
		sb_add(&bt->names, name, name_len);
	rc = 0;
out:
	if (rc < 0)
		bt->nframes = first;
	return rc;
}

/*
 * Loading many .buckets files: a thread reads and parses them into
 * batches, handed over (threads.h) to this one, which defines them
 * (interning frames and stacks, which is the part that must be done in
 * order).  What the thread says about a batch's lines is said once the
 * batch is defined.
 */
struct chunk {
	struct batch bt;
	size_t file;        /* which path */
	const char *from;   /* where its lines start in the file's bytes */
	size_t bytes;       /* how many they take */
};

enum { NCHUNKS = 4 };

struct loader {
	struct model *m;
	const char *const *paths;
	size_t n;
	/* Dumps holding their buckets themselves: the BUCKETS sections,
	 * and the last MAPS section, of each. */
	struct dump_maps *maps;
	size_t sections;    /* BUCKETS sections met (the thread's) */
	struct chunk chunks[NCHUNKS]; /* the hand-off's slots */
	struct chunk *cur;  /* the thread's */
	struct line_before before; /* the thread's bucket line before */
	/* this one's */
	uint64_t total;     /* the files' bytes (0: not known) */
	bool expected;      /* the model told how many buckets come */
	size_t last;        /* the file of the chunk defined last */
	const char *source; /* its path, interned */
	size_t loaded;      /* files defined */
};

/* The thread's next chunk, of file FILE from FROM: false when this one
 * takes no more. */
static bool next_chunk(struct handoff *h, struct loader *ld, size_t file,
		       const char *from)
{
	size_t slot = handoff_slot(h);

	if (slot == SIZE_MAX)
		return false;
	ld->cur = &ld->chunks[slot];
	ld->cur->file = file;
	ld->cur->from = from;
	ld->cur->bytes = 0;
	batch_reset(&ld->cur->bt);
	return true;
}

/* The thread's chunk handed over, its lines ending at TO: false when
 * this one takes no more.  (Its last bucket line copied out first: the
 * next line may end with its frames.) */
static bool put_chunk(struct handoff *h, struct loader *ld, const char *to)
{
	struct line_before *lb = &ld->before;

	if (lb->at != SIZE_MAX) {
		const struct batch *bt = &ld->cur->bt;
		const struct brec *r = &bt->v[lb->at];

		GROW(lb->out, r->depth, lb->out_alloc);
		if (r->depth)
			memcpy(lb->out, bt->frames + r->first,
			       r->depth * sizeof(*lb->out));
		lb->nout = r->depth;
		lb->at = SIZE_MAX;
	}
	ld->cur->bytes = (size_t)(to - ld->cur->from);
	return handoff_put(h);
}

/* No bucket line before the next: a file or section begins. */
static void no_line_before(struct line_before *lb)
{
	lb->at = SIZE_MAX;
	lb->have = false;
}

/* ---- a dump's own BUCKETS and MAPS sections (dmprof record's) ---- */

/* What a dump's line is to its own sections: which one it opens, or
 * the end of them (its data's first section). */
enum { NOT_A_HEADER, OPENS_BUCKETS, OPENS_MAPS, ENDS_THEM };

static int dump_header(const struct line *l)
{
	if (!l->len || l->p[l->len - 1] != ':')
		return NOT_A_HEADER;
	if (line_is(l, "BUCKETS:"))
		return OPENS_BUCKETS;
	if (line_is(l, "MAPS:"))
		return OPENS_MAPS;
	if (line_is(l, "MMAP_LIST:") || line_is(l, "GLOBAL_STATS:") ||
	    line_is(l, "STACKTRACES:"))
		return ENDS_THEM;
	return NOT_A_HEADER;
}

/*
 * A dump, up to its data: the first 64 KiB, or all of it where its
 * sections go on past them.  (Its stack lines, most of a big dump, are
 * the reader's, later.)
 */
static int load_dump_head(struct filebuf *fb, const char *path)
{
	const size_t head = 64 << 10;

	if (file_load_head(fb, path, head) < 0)
		return -1;
	if (fb->size < head || memmem(fb->data, fb->size, "\nMMAP_LIST:\n", 12) ||
	    memmem(fb->data, fb->size, "\nSTACKTRACES:\n", 14))
		return 0;
	file_release(fb);
	return file_load(fb, path);
}

/* Parse file FILE into chunks: 0, -1 after an error (said), 1 when this
 * thread takes no more.  A dump's lines are those of its BUCKETS
 * section; its MAPS section's are kept in LD->maps (the last one's). */
static int parse_file(struct handoff *h, struct loader *ld, size_t file)
{
	struct reader_pos pos = { .path = ld->paths[file] };
	struct filebuf fb;
	struct line_reader r;
	struct line l;
	size_t n;
	int rc = 0, in = ld->maps ? NOT_A_HEADER : OPENS_BUCKETS;

	if ((ld->maps ? load_dump_head(&fb, pos.path)
		      : file_load(&fb, pos.path)) < 0)
		return -1;
	if (!next_chunk(h, ld, file, fb.data))
		rc = 1;
	no_line_before(&ld->before);
	lines_init(&r, fb.data, fb.size);
	while (!rc && lines_next(&r, &l)) {
		pos.line = l.no;
		if (ld->maps) {
			int hd = dump_header(&l);

			if (hd == ENDS_THEM)
				break;
			if (hd == OPENS_MAPS) {
				sb_reset(&ld->maps->text);
				free(ld->maps->path);
				ld->maps->path = xstrdup(pos.path);
				ld->maps->line = l.no + 1;
			}
			if (hd == OPENS_BUCKETS) {
				ld->sections++;
				no_line_before(&ld->before);
			}
			if (hd != NOT_A_HEADER) {
				in = hd;
				continue;
			}
			if (in == OPENS_MAPS) {
				sb_add(&ld->maps->text, l.p, l.len);
				sb_addch(&ld->maps->text, '\n');
				continue;
			}
			if (in != OPENS_BUCKETS)
				continue;
		}
		if (!l.newline) {
			/*
			 * A writer killed mid-line: the bucket may have lost
			 * frames, so it is not defined from this line.
			 */
			warning("%s:%lu: last line has no newline (file "
				"truncated?); skipped", pos.path, l.no);
			break;
		}
		if (memchr(l.p, '\0', l.len)) {
			rc = read_error(&pos, "NUL byte in bucket line");
			break;
		}
		n = ld->cur->bt.n;
		if (parse_bucket_line(&ld->cur->bt, &pos, &l, &ld->before) < 0) {
			rc = -1;
			break;
		}
		if (ld->cur->bt.n == n)
			continue; /* (blank, or a frame's name) */
		ld->before.at = n;
		ld->before.have = true;
		if (ld->cur->bt.n == BATCH_LINES &&
		    (!put_chunk(h, ld, r.p) || !next_chunk(h, ld, file, r.p)))
			rc = 1;
	}
	/* (After an error too: the lines before it are defined first.) */
	if (rc != 1 && !put_chunk(h, ld, r.p))
		rc = 1;
	file_release(&fb);
	read_pos_release(&pos);
	return rc;
}

/* The thread: 0, or -1 after an error (said). */
static int parse_files(struct handoff *h, void *arg)
{
	struct loader *ld = arg;
	int rc = 0;

	for (size_t i = 0; i < ld->n && !rc; i++)
		/* The producer leaves empty files when nothing was new. */
		if (!file_empty(ld->paths[i]))
			rc = parse_file(h, ld, i);
	return rc < 0 ? -1 : 0;
}

/* Define chunk SLOT's buckets: 0, or 1 after an error (said). */
static int define_chunk(void *arg, size_t slot)
{
	struct loader *ld = arg;
	struct chunk *c = &ld->chunks[slot];

	if (c->file != ld->last) {
		ld->last = c->file;
		ld->source = strtab_intern_str(&ld->m->strings,
					       ld->paths[c->file]);
		ld->loaded++;
	}
	/*
	 * A chunk of many lines tells how many bytes a bucket takes, so about how
	 * many buckets all the files hold: the model makes room for them
	 * once, where its tables would have doubled twenty times (a
	 * million stacks: 32 MB of tables made and let go).
	 */
	if (!ld->expected && c->bt.n >= SAMPLE_LINES && c->bytes) {
		double per = (double)c->bytes / (double)c->bt.n;

		ld->expected = true;
		if (ld->total > c->bytes)
			model_expect_buckets(ld->m,
					     (size_t)((double)ld->total / per),
					     false);
	}
	return batch_define(ld->m, &c->bt, ld->source) < 0;
}

/* The bytes of the N files PATHS (0 if one cannot be asked). */
static uint64_t files_bytes(const char *const *paths, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(paths[i], &st) < 0 || st.st_size < 0)
			return 0;
		total += (uint64_t)st.st_size;
	}
	return total;
}

static int load_many(struct model *m, const char *const *paths, size_t n,
		     size_t *loaded, struct dump_maps *maps)
{
	/* (A dump's size says nothing of its buckets': no guess.) */
	struct loader ld = { .m = m, .paths = paths, .n = n, .maps = maps,
			     .total = maps ? 0 : files_bytes(paths, n),
			     .last = SIZE_MAX };
	int rc;

	/* (No files, as a heap profile has: no thread started and waited
	 * for, 0.1 to 1.2 ms of a warm stacktrace.) */
	if (!n) {
		if (loaded)
			*loaded = 0;
		return 0;
	}
	rc = handoff_run(NCHUNKS, parse_files, define_chunk, &ld);

	for (size_t i = 0; i < NCHUNKS; i++)
		batch_free(&ld.chunks[i].bt);
	free(ld.before.out);
	if (loaded)
		*loaded = maps ? ld.sections : ld.loaded;
	return rc ? -1 : 0;
}

int bucketfile_load_many(struct model *m, const char *const *paths, size_t n,
			 size_t *loaded)
{
	return load_many(m, paths, n, loaded, NULL);
}

int bucketfile_load_dumps(struct model *m, const char *const *dumps, size_t n,
			  size_t *loaded, struct dump_maps *maps)
{
	return load_many(m, dumps, n, loaded, maps);
}

void dump_maps_release(struct dump_maps *maps)
{
	sb_release(&maps->text);
	free(maps->path);
	memset(maps, 0, sizeof(*maps));
}

int bucketfile_load(struct model *m, const char *path)
{
	return bucketfile_load_many(m, &path, 1, NULL);
}
