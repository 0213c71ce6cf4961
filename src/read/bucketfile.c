/*
 * The .buckets reader.  A bucket line is
 * "ID mmap|malloc [tTYPEINFO] [nNAME] 0xFRAME...", innermost frame first.
 */
#include "bucketfile.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
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

struct batch {
	struct brec *v;
	size_t n, alloc;
	uint64_t *frames;
	size_t nframes, frames_alloc;
	uint32_t *ids;
	size_t ids_alloc;
	struct strbuf names;
	/* What went wrong where the batch ends, said by whoever defines it
	 * (so that messages come out in file order). */
	struct strbuf msg;
	bool msg_is_error;
};

static void batch_free(struct batch *bt)
{
	free(bt->v);
	free(bt->frames);
	free(bt->ids);
	sb_release(&bt->names);
	sb_release(&bt->msg);
}

static int PRINTF(3, 4) batch_msg(struct batch *bt, bool is_error,
				  const char *fmt, ...)
{
	va_list ap;

	sb_reset(&bt->msg);
	va_start(ap, fmt);
	sb_vaddf(&bt->msg, fmt, ap);
	va_end(ap);
	bt->msg_is_error = is_error;
	return -1;
}

enum { BATCH_LINES = 16384, AHEAD = 64 };

/* Returns 0, or -1 after an error (an id table is full). */
static int batch_define(struct model *m, struct batch *bt,
			const char *source)
{
	const char *empty = strtab_intern_str(&m->strings, "");

	GROW(bt->ids, bt->nframes, bt->ids_alloc);
	for (size_t i = 0; i < bt->nframes; i++) {
		if (i + AHEAD < bt->nframes)
			frames_prefetch(&m->frames, bt->frames[i + AHEAD]);
		bt->ids[i] = frames_intern(&m->frames, bt->frames[i]);
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
	bt->n = bt->nframes = 0;
	sb_reset(&bt->names);
	return 0;
}

static int parse_bucket_line(struct batch *bt, const char *path,
			     const struct line *l)
{
	struct cursor c = cursor_of(l);
	struct strbuf q = STRBUF_INIT;
	const char *w, *name = NULL;
	size_t len, name_len = 0, depth = 0, first = bt->nframes;
	uint64_t id, typeinfo = 0;
	bool has_typeinfo = false, in_frames = false;
	enum alloc_kind kind;
	enum num_status st;
	int rc = -1;

	if (!cursor_word(&c, &w, &len))
		return 0; /* blank line */
	st = word_u64(w, len, &id);
	if (st != NUM_OK) {
		batch_msg(bt, true, "%s:%lu: %s bucket id '%s'", path, l->no,
			  st == NUM_RANGE ? "out-of-range" : "invalid",
			  quote_for_msg(w, len, &q));
		goto out;
	}
	if (!cursor_word(&c, &w, &len)) {
		batch_msg(bt, true,
			  "%s:%lu: bucket %" PRIu64 " has no allocator", path,
			  l->no, id);
		goto out;
	}
	if (len == 6 && !memcmp(w, "malloc", 6)) {
		kind = ALLOC_MALLOC;
	} else if (len == 4 && !memcmp(w, "mmap", 4)) {
		kind = ALLOC_MMAP;
	} else {
		batch_msg(bt, true,
			  "%s:%lu: unknown allocator '%s' (expected malloc or "
			  "mmap)",
			  path, l->no, quote_for_msg(w, len, &q));
		goto out;
	}
	while (true) {
		uint64_t addr;

		/*
		 * The common case first, in one pass: " 0x" and up to 16 hex
		 * digits.  Anything else goes the general way below.
		 */
		if (in_frames) {
			const char *p = c.p, *end = c.end;
			uint64_t v = 0;
			int d, n = 0;

			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			if (end - p > 2 && p[0] == '0' && p[1] == 'x') {
				for (p += 2; p < end && n <= 16 &&
					     (d = hex_value(*p)) >= 0;
				     p++, n++)
					v = v << 4 | (unsigned)d;
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
		if (!in_frames && w[0] == 't') {
			st = word_hex(w + 1, len - 1, &typeinfo, true);
			if (st != NUM_OK) {
				batch_msg(bt, true,
					  "%s:%lu: invalid typeinfo '%s'", path,
					  l->no, quote_for_msg(w, len, &q));
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
			batch_msg(bt, true, "%s:%lu: %s frame address '%s'",
				  path, l->no,
				  st == NUM_RANGE ? "out-of-range" : "invalid",
				  quote_for_msg(w, len, &q));
			goto out;
		}
		if (depth >= UINT32_MAX) {
			batch_msg(bt, true, "%s:%lu: stack too deep", path,
				  l->no);
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
	sb_release(&q);
	return rc;
}

/*
 * Loading many .buckets files: a thread reads and parses them into
 * batches while this one defines the batches it has (interning frames
 * and stacks, which is the part that must be done in order).
 */
struct chunk {
	struct batch bt;
	size_t file;        /* which path */
	bool stop;          /* nothing follows (an error, or the end) */
	struct chunk *next;
};

struct loader {
	const char *const *paths;
	size_t n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct chunk *head, *tail;
	size_t queued;
	bool quit;          /* the definer gave up: stop */
	bool unbounded;     /* no thread: everything is queued first */
};

enum { MAX_QUEUED = 4 };

static void push(struct loader *ld, struct chunk *c)
{
	pthread_mutex_lock(&ld->lock);
	while (ld->queued >= MAX_QUEUED && !ld->quit && !ld->unbounded)
		pthread_cond_wait(&ld->cond, &ld->lock);
	c->next = NULL;
	if (ld->tail)
		ld->tail->next = c;
	else
		ld->head = c;
	ld->tail = c;
	ld->queued++;
	pthread_cond_broadcast(&ld->cond);
	pthread_mutex_unlock(&ld->lock);
}

static struct chunk *pop(struct loader *ld)
{
	struct chunk *c;

	pthread_mutex_lock(&ld->lock);
	while (!ld->head)
		pthread_cond_wait(&ld->cond, &ld->lock);
	c = ld->head;
	ld->head = c->next;
	if (!ld->head)
		ld->tail = NULL;
	ld->queued--;
	pthread_cond_broadcast(&ld->cond);
	pthread_mutex_unlock(&ld->lock);
	return c;
}

static bool quitting(struct loader *ld)
{
	bool q;

	pthread_mutex_lock(&ld->lock);
	q = ld->quit;
	pthread_mutex_unlock(&ld->lock);
	return q;
}

/* Parse one file into chunks; false to stop everything. */
static bool parse_file(struct loader *ld, size_t file)
{
	const char *path = ld->paths[file];
	struct chunk *c = xcalloc(1, sizeof(*c));
	struct filebuf fb;
	struct line_reader r;
	struct line l;
	struct strbuf err = STRBUF_INIT;
	bool go_on = true;

	c->file = file;
	if (file_load_msg(&fb, path, &err) < 0) {
		sb_addstr(&c->bt.msg, sb_str(&err));
		c->bt.msg_is_error = true;
		c->stop = true;
		sb_release(&err);
		push(ld, c);
		return false;
	}
	lines_init(&r, fb.data, fb.size);
	while (lines_next(&r, &l)) {
		if (!l.newline) {
			/*
			 * A writer killed mid-line: the bucket may have lost
			 * frames, so it is not defined from this line.
			 */
			batch_msg(&c->bt, false,
				  "%s:%lu: last line has no newline (file "
				  "truncated?); skipped",
				  path, l.no);
			break;
		}
		if (memchr(l.p, '\0', l.len)) {
			batch_msg(&c->bt, true,
				  "%s:%lu: NUL byte in bucket line", path,
				  l.no);
			break;
		}
		if (parse_bucket_line(&c->bt, path, &l) < 0)
			break;
		if (c->bt.n == BATCH_LINES) {
			push(ld, c);
			if (quitting(ld)) {
				go_on = false;
				c = NULL;
				break;
			}
			c = xcalloc(1, sizeof(*c));
			c->file = file;
		}
	}
	if (c) {
		if (c->bt.msg.len && c->bt.msg_is_error) {
			c->stop = true;
			go_on = false;
		}
		push(ld, c);
	}
	file_release(&fb);
	sb_release(&err);
	return go_on;
}

static void *parse_files(void *arg)
{
	struct loader *ld = arg;
	struct chunk *end;

	for (size_t i = 0; i < ld->n && !quitting(ld); i++) {
		/* The producer leaves empty files when nothing was new. */
		if (file_empty(ld->paths[i]))
			continue;
		if (!parse_file(ld, i))
			return NULL;
	}
	end = xcalloc(1, sizeof(*end));
	end->stop = true;
	end->file = SIZE_MAX;
	push(ld, end);
	return NULL;
}

int bucketfile_load_many(struct model *m, const char *const *paths, size_t n,
		      size_t *loaded)
{
	struct loader ld;
	pthread_t worker;
	bool threaded = true;
	size_t last = SIZE_MAX;
	const char *source = NULL;
	int rc = 0;

	memset(&ld, 0, sizeof(ld));
	ld.paths = paths;
	ld.n = n;
	pthread_mutex_init(&ld.lock, NULL);
	pthread_cond_init(&ld.cond, NULL);
	if (loaded)
		*loaded = 0;
	if (pthread_create(&worker, NULL, parse_files, &ld) != 0) {
		/* Slower, with more memory, but the same result. */
		threaded = false;
		ld.unbounded = true;
		parse_files(&ld);
	}
	for (;;) {
		struct chunk *c = pop(&ld);
		bool stop = c->stop;

		if (c->file != SIZE_MAX && c->file != last) {
			last = c->file;
			source = strtab_intern_str(&m->strings, paths[last]);
			if (loaded)
				(*loaded)++;
		}
		if (c->file != SIZE_MAX && batch_define(m, &c->bt, source) < 0) {
			rc = -1;
			stop = true;
		} else if (c->bt.msg.len) {
			if (c->bt.msg_is_error)
				rc = error("%s", c->bt.msg.buf);
			else
				warning("%s", c->bt.msg.buf);
		}
		batch_free(&c->bt);
		free(c);
		if (stop)
			break;
	}
	/* (Tell the reader to stop, and let it drain.) */
	pthread_mutex_lock(&ld.lock);
	ld.quit = true;
	pthread_cond_broadcast(&ld.cond);
	pthread_mutex_unlock(&ld.lock);
	if (threaded)
		pthread_join(worker, NULL);
	while (ld.head) {
		struct chunk *c = ld.head;

		ld.head = c->next;
		batch_free(&c->bt);
		free(c);
	}
	pthread_mutex_destroy(&ld.lock);
	pthread_cond_destroy(&ld.cond);
	return rc;
}

int bucketfile_load(struct model *m, const char *path)
{
	return bucketfile_load_many(m, &path, 1, NULL);
}
