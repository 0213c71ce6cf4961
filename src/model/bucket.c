/*
 * The bucket set and the .buckets reader.  A bucket line is
 * "ID mmap|malloc [tTYPEINFO] [nNAME] 0xFRAME...", innermost frame first.
 */
#include "bucket.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "text.h"
#include "util.h"

const char *alloc_kind_name(enum alloc_kind k)
{
	return k == ALLOC_MMAP ? "mmap" : "malloc";
}

void bucket_set_init(struct bucket_set *s)
{
	memset(s, 0, sizeof(*s));
	hashmap_init(&s->by_id, 1024);
}

void bucket_set_free(struct bucket_set *s)
{
	hashmap_free(&s->by_id);
	free(s->dense);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/*
 * Producers count ids from 0, so they go in an array; but the array only
 * grows to a few times the number of buckets, so that one stray large id
 * costs a map entry, not megabytes.  Others go in the map.
 */
#define DENSE_SLACK 4
#define DENSE_FREE ((size_t)1 << 16)

struct bucket *bucket_set_find(const struct bucket_set *s, uint64_t id)
{
	if (id < s->ndense && s->dense[id])
		return s->dense[id];
	if (!s->nsparse)
		return NULL;
	return hashmap_get(&s->by_id, hash_u64(id), NULL, NULL);
}

static void bucket_set_add(struct bucket_set *s, struct bucket *b)
{
	size_t room = s->n < (SIZE_MAX - DENSE_FREE) / DENSE_SLACK
			      ? s->n * DENSE_SLACK + DENSE_FREE
			      : SIZE_MAX;

	if (b->id >= s->ndense && b->id < room) {
		size_t n = s->ndense ? s->ndense : 1024;

		while (n <= b->id)
			n *= 2;
		s->dense = xreallocarray(s->dense, n, sizeof(*s->dense));
		memset(s->dense + s->ndense, 0,
		       (n - s->ndense) * sizeof(*s->dense));
		s->ndense = n;
	}
	if (b->id < s->ndense) {
		s->dense[b->id] = b;
	} else {
		hashmap_put(&s->by_id, hash_u64(b->id), b);
		s->nsparse++;
	}
}

static int cmp_bucket_id(const void *a, const void *b)
{
	const struct bucket *x = *(const struct bucket *const *)a;
	const struct bucket *y = *(const struct bucket *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

struct bucket **bucket_set_sorted(const struct bucket_set *s)
{
	struct bucket **v = xcalloc(s->n, sizeof(*v));

	if (s->n)
		memcpy(v, s->v, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), cmp_bucket_id);
	return v;
}

void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	strtab_init(&m->strings, &m->arena);
	frames_init(&m->frames, &m->arena);
	stacks_init(&m->stacks, &m->arena);
	bucket_set_init(&m->buckets);
	hashmap_init(&m->anon_buckets, 1024);
}

void model_free(struct model *m)
{
	bucket_set_free(&m->buckets);
	hashmap_free(&m->anon_buckets);
	stacks_free(&m->stacks);
	frames_free(&m->frames);
	strtab_free(&m->strings);
	arena_free(&m->arena);
}

struct bucket *model_define_bucket(struct model *m, uint64_t id,
				   enum alloc_kind kind, bool has_typeinfo,
				   uint64_t typeinfo, const char *type_name,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line)
{
	uint32_t stackbuf[64], *ids = stackbuf;
	const struct stack *stack;
	struct bucket *b;

	if (depth > ARRAY_SIZE(stackbuf))
		ids = xcalloc(depth, sizeof(*ids));
	for (uint32_t i = 0; i < depth; i++)
		ids[i] = frames_intern(&m->frames, frames[i]);
	stack = stacks_intern(&m->stacks, depth ? ids : NULL, depth);
	if (ids != stackbuf)
		free(ids);
	b = model_define_stack_bucket(
		m, id, kind, has_typeinfo, typeinfo,
		strtab_intern_str(&m->strings, type_name ? type_name : ""),
		stack, strtab_intern_str(&m->strings, source), line);
	return b;
}

struct bucket *model_define_stack_bucket(struct model *m, uint64_t id,
					 enum alloc_kind kind,
					 bool has_typeinfo, uint64_t typeinfo,
					 const char *type_name,
					 const struct stack *stack,
					 const char *source, unsigned long line)
{
	struct bucket *b = bucket_set_find(&m->buckets, id);

	if (!b) {
		b = arena_alloc(&m->arena, sizeof(*b));
		memset(b, 0, sizeof(*b));
		b->id = id;
		if (m->buckets.n >= UINT32_MAX)
			die("too many buckets");
		b->index = (uint32_t)m->buckets.n;
		GROW(m->buckets.v, m->buckets.n + 1, m->buckets.alloc);
		m->buckets.v[m->buckets.n++] = b;
		bucket_set_add(&m->buckets, b);
	} else if (b->stack != stack || b->kind != kind) {
		/*
		 * The producer writes each bucket once per process; a
		 * different redefinition means files of two runs are mixed.
		 */
		warning("%s:%lu: bucket %" PRIu64 " redefined (previously "
			"at %s:%lu); using the later definition",
			source, line, id, b->source, b->source_line);
	}
	b->kind = kind;
	b->has_typeinfo = has_typeinfo;
	b->typeinfo = typeinfo;
	b->type_name = type_name;
	b->stack = stack;
	b->source = source;
	b->source_line = line;
	return b;
}

struct anon_key {
	const struct stack *stack;
	enum alloc_kind kind;
};

static bool anon_eq(const void *item, const void *key)
{
	const struct bucket *b = item;
	const struct anon_key *k = key;

	return b->stack == k->stack && b->kind == k->kind;
}

struct bucket *model_intern_bucket(struct model *m, enum alloc_kind kind,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line)
{
	uint32_t stackbuf[64], *ids = stackbuf;
	struct anon_key key;
	struct bucket *b;
	uint64_t h;

	if (depth > ARRAY_SIZE(stackbuf))
		ids = xcalloc(depth, sizeof(*ids));
	for (uint32_t i = 0; i < depth; i++)
		ids[i] = frames_intern(&m->frames, frames[i]);
	key.stack = stacks_intern(&m->stacks, depth ? ids : NULL, depth);
	key.kind = kind;
	if (ids != stackbuf)
		free(ids);
	h = hash_u64((uint64_t)key.stack->id << 1 | (kind == ALLOC_MMAP));
	b = hashmap_get(&m->anon_buckets, h, anon_eq, &key);
	if (b)
		return b;
	b = model_define_bucket(m, m->buckets.n + 1, kind, false, 0, "", NULL,
				0, source, line);
	b->stack = key.stack;
	hashmap_put(&m->anon_buckets, h, b);
	return b;
}

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

static void batch_define(struct model *m, struct batch *bt,
			 const char *source)
{
	const char *empty = strtab_intern_str(&m->strings, "");

	GROW(bt->ids, bt->nframes, bt->ids_alloc);
	for (size_t i = 0; i < bt->nframes; i++) {
		if (i + AHEAD < bt->nframes)
			frames_prefetch(&m->frames, bt->frames[i + AHEAD]);
		bt->ids[i] = frames_intern(&m->frames, bt->frames[i]);
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
		model_define_stack_bucket(
			m, r->id, (enum alloc_kind)r->kind, r->has_typeinfo,
			r->typeinfo,
			r->name_off != SIZE_MAX
				? strtab_intern(&m->strings,
						bt->names.buf + r->name_off,
						r->name_len)
				: empty,
			st, source, r->line);
	}
	bt->n = bt->nframes = 0;
	sb_reset(&bt->names);
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
};

enum { MAX_QUEUED = 4 };

static void push(struct loader *ld, struct chunk *c)
{
	pthread_mutex_lock(&ld->lock);
	while (ld->queued >= MAX_QUEUED && !ld->quit)
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
		struct stat st;

		/* The producer leaves empty files when nothing was new. */
		if (stat(ld->paths[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size == 0)
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

int buckets_load_many(struct model *m, const char *const *paths, size_t n,
		      size_t *loaded)
{
	struct loader ld;
	pthread_t worker;
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
	if (pthread_create(&worker, NULL, parse_files, &ld) != 0)
		die("cannot start a thread");
	for (;;) {
		struct chunk *c = pop(&ld);
		bool stop = c->stop;

		if (c->file != SIZE_MAX && c->file != last) {
			last = c->file;
			source = strtab_intern_str(&m->strings, paths[last]);
			if (loaded)
				(*loaded)++;
		}
		if (c->file != SIZE_MAX)
			batch_define(m, &c->bt, source);
		if (c->bt.msg.len) {
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

int buckets_load(struct model *m, const char *path)
{
	return buckets_load_many(m, &path, 1, NULL);
}

void bucket_describe(struct strbuf *sb, const struct model *m,
		     const struct bucket *b)
{
	const char *type = b->typeinfo_sym ? b->typeinfo_sym : "no typeinfo";

	sb_addstr(sb, alloc_kind_name(b->kind));
	sb_addstr(sb, " t");
	sb_addstr(sb, strcmp(type, "no typeinfo") ? type : "no_typeinfo");
	sb_addstr(sb, " n");
	sb_addstr(sb, b->type_name);
	for (uint32_t i = 0; i < b->stack->depth; i++) {
		const struct frame *f = frame_get(&m->frames,
						  b->stack->frames[i]);

		for (uint32_t k = 0; k < frame_nlogical(f); k++) {
			sb_addch(sb, ' ');
			frame_add_func(sb, f, k);
			sb_addstr(sb, "(@");
			frame_add_file(sb, f, k);
			sb_addch(sb, ')');
		}
	}
}
