/*
 * Text input.  Files are read with read(2) into one buffer: dumps are
 * parsed in a single pass, and a buffer (unlike mmap) cannot fault if the
 * file shrinks under us.
 */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan.h"
#include "threads.h"
#include "util.h"

/*
 * The buffer of the last big file released, kept for the next one: a run
 * reads hundreds of dumps one after the other, and fresh memory costs the
 * kernel a page-zeroing fault per page, as much again as the reading.
 */
#define SPARE_MIN (1u << 20)
static char *spare;
static size_t spare_cap;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

static char *buffer(size_t *cap)
{
	char *b = NULL;

	pthread_mutex_lock(&spare_lock);
	if (spare && spare_cap >= *cap) {
		b = spare;
		*cap = spare_cap;
		spare = NULL;
	}
	pthread_mutex_unlock(&spare_lock);
	if (b)
		return b;
	/* Big ones with room to spare, so that the next file, a little
	 * bigger, fits as well. */
	if (*cap >= SPARE_MIN) {
		size_t c = SPARE_MIN;

		while (c < *cap && c < SIZE_MAX / 2)
			c *= 2;
		*cap = c;
	}
	return xmalloc(st_add(*cap, STREAM_PAD));
}

/*
 * PATH opened for reading, with its stat; -1 after saying why not.  A
 * file or a pipe (process substitution); a device like /dev/zero would be
 * read forever.
 */
static int open_input(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *why = NULL;

	if (fd < 0)
		return error("%s: %s", path, strerror(errno));
	if (fstat(fd, st) < 0)
		why = strerror(errno);
	else if (S_ISDIR(st->st_mode))
		why = "is a directory";
	else if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode))
		why = "not a regular file";
	if (!why)
		return fd;
	close(fd);
	return error("%s: %s", path, why);
}

/*
 * Read FD into BUF (*CAP bytes, a NUL's room past them) after its first
 * *LEN bytes, growing it, until the end or MAX bytes: 0, or the errno of
 * a failed read.
 */
static int read_all(int fd, char **buf, size_t *len, size_t *cap, size_t max)
{
	while (*len < max) {
		ssize_t n;

		if (*len == *cap) {
			*cap = st_mult(*cap, 2);
			*buf = xrealloc(*buf, st_add(*cap, STREAM_PAD));
		}
		n = read(fd, *buf + *len, *cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return 0;
}

/* PATH, or its first MAX bytes, into FB; see file_load(). */
static int load(struct filebuf *fb, const char *path, size_t max)
{
	struct stat st;
	size_t cap, len = 0;
	char *buf;
	int fd, e;

	memset(fb, 0, sizeof(*fb));
	if ((fd = open_input(path, &st)) < 0)
		return -1;
	cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1
						    : 65536;
	if (cap > max)
		cap = max;
	buf = max == SIZE_MAX ? buffer(&cap) : xmalloc(st_add(cap, STREAM_PAD));
	e = read_all(fd, &buf, &len, &cap, max);
	close(fd);
	if (e) {
		free(buf);
		return error("%s: %s", path, strerror(e));
	}
	buf[len] = '\0';
	fb->data = buf;
	fb->size = len;
	fb->cap = cap;
	fb->path = xstrdup(path);
	fb->mtime = st.st_mtim;
	return 0;
}

int file_load(struct filebuf *fb, const char *path)
{
	return load(fb, path, SIZE_MAX);
}

int file_load_head(struct filebuf *fb, const char *path, size_t max)
{
	return load(fb, path, max);
}

bool file_empty(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

void file_drop(struct filebuf *fb)
{
	free(fb->data);
	fb->data = NULL;
	fb->size = fb->cap = 0;
}

/* Free BUF (of CAP bytes), or keep it as the spare if it is the biggest. */
static void release_buffer(char *buf, size_t cap)
{
	char *old = buf;

	pthread_mutex_lock(&spare_lock);
	if (buf && cap >= SPARE_MIN && cap > spare_cap) {
		old = spare;
		spare = buf;
		spare_cap = cap;
	}
	pthread_mutex_unlock(&spare_lock);
	free(old);
}

void file_release(struct filebuf *fb)
{
	release_buffer(fb->data, fb->cap);
	free(fb->path);
	memset(fb, 0, sizeof(*fb));
}

/* ---- a file a block at a time ---- */

/* Zeros past the data: a reader looking ahead reads no stale bytes. */
static void pad(struct line_stream *s)
{
	memset(s->buf + s->fill, 0, STREAM_PAD);
}

/* Read what the buffer has room for (once, or to the end for the first
 * block): 0, or -1 after saying why. */
static int fill(struct line_stream *s, bool whole)
{
	size_t want = whole ? s->cap : s->fill + 1;
	int e = 0;

	while (!s->eof && s->fill < want && s->fill < s->cap) {
		ssize_t n = read(s->fd, s->buf + s->fill, s->cap - s->fill);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			break;
		}
		if (n == 0)
			s->eof = true;
		s->fill += (size_t)n;
		s->got += (size_t)n;
	}
	pad(s);
	return e ? error("%s: %s", s->path, strerror(e)) : 0;
}

int stream_open(struct line_stream *s, const char *path)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if ((s->fd = open_input(path, &st)) < 0)
		return -1;
	s->path = xstrdup(path);
	s->mtime = st.st_mtim;
	s->regular = S_ISREG(st.st_mode);
	s->size = s->regular && st.st_size > 0 ? (size_t)st.st_size : 0;
	/* (A small file whole, with a byte to see its end; the spare
	 * buffer, if bigger, is read full.) */
	s->cap = s->regular && s->size < STREAM_BLOCK ? s->size + 1
						      : STREAM_BLOCK;
	s->buf = buffer(&s->cap);
	if (fill(s, true) < 0) {
		stream_close(s);
		return -1;
	}
	return 0;
}

void stream_head(const struct line_stream *s, struct filebuf *view)
{
	memset(view, 0, sizeof(*view));
	view->data = s->buf + s->pos;
	view->size = s->fill - s->pos;
	view->cap = view->size;
	view->path = s->path;
	view->mtime = s->mtime;
}

/*
 * Room for more: the bytes not taken move to the front, and a line longer
 * than the buffer doubles it.
 */
static void make_room(struct line_stream *s)
{
	if (s->pos) {
		memmove(s->buf, s->buf + s->pos, s->fill - s->pos);
		s->fill -= s->pos;
		s->scanned -= s->pos;
		s->pos = 0;
	}
	if (s->fill == s->cap) {
		s->cap = st_mult(s->cap, 2);
		s->buf = xrealloc(s->buf, st_add(s->cap, STREAM_PAD));
	}
}

/* ---- the blocks read on another thread ---- */

/*
 * A big file's blocks are read into a ring of slots by a thread of its
 * own, and the stream takes the slots in turn: the line a block ends in
 * the middle of is copied in front of the next block, into the slot's
 * head, and a line longer than that goes to the stream's own buffer
 * (which then grows to hold it, as make_room grows it).  read(2)'s copy
 * out of the page cache had been 34 ms of the 300 ms a 293 MB profile's
 * lines took on the thread that parses them (gperf-1m of make bench),
 * with the other core waiting on that thread.
 */
#define BEHIND_SLOTS 3
#define BEHIND_HEAD (64u << 10)

struct stream_behind {
	struct task task;
	int fd;
	char *slot[BEHIND_SLOTS]; /* BEHIND_HEAD, STREAM_BLOCK, STREAM_PAD */
	size_t len[BEHIND_SLOTS]; /* the bytes read into each after its head */
	int err[BEHIND_SLOTS];    /* its read's errno, 0 */
	struct progress filled;   /* the slots filled, in turn (the thread's) */
	struct progress freed;    /* the slots given back (the stream's) */
	size_t taken, nfreed;
	int cur;                  /* the slot the stream's buffer is, -1: its own */
	char *own;                /* the stream's own buffer, while a slot is */
	size_t own_cap;
	_Atomic bool stop;
};

static void behind_main(void *arg)
{
	struct stream_behind *b = arg;

	for (size_t k = 0;; k++) {
		size_t i = k % BEHIND_SLOTS, n = 0;
		int e = 0;

		/* (Slot I once the stream gave back what it held before.) */
		if (k >= BEHIND_SLOTS)
			progress_wait(&b->freed, k - BEHIND_SLOTS + 1);
		if (atomic_load(&b->stop))
			return;
		if (!b->slot[i])
			b->slot[i] = xmalloc(BEHIND_HEAD + STREAM_BLOCK +
					     STREAM_PAD);
		while (n < STREAM_BLOCK) {
			ssize_t got = read(b->fd, b->slot[i] + BEHIND_HEAD + n,
					   STREAM_BLOCK - n);

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				e = got < 0 ? errno : 0;
				break;
			}
			n += (size_t)got;
		}
		b->len[i] = n;
		b->err[i] = e;
		progress_set(&b->filled, k + 1);
		if (e || !n)
			return;
	}
}

void stream_read_behind(struct line_stream *s)
{
	struct stream_behind *b;

	/* (Not for a few blocks: a thread costs more than their reads.) */
	if (s->behind || s->eof || !s->regular ||
	    s->size < s->got + 4 * (size_t)STREAM_BLOCK || threads_wanted() < 2)
		return;
	b = xcalloc(1, sizeof(*b));
	b->fd = s->fd;
	b->cur = -1;
	progress_init(&b->filled);
	progress_init(&b->freed);
	atomic_init(&b->stop, false);
	if (!task_start(&b->task, behind_main, b, false)) {
		progress_free(&b->filled);
		progress_free(&b->freed);
		free(b);
		return;
	}
	s->behind = b;
}

/* The slot taken before the one now taken goes back to the thread. */
static void behind_give_back(struct stream_behind *b)
{
	progress_set(&b->freed, ++b->nfreed);
}

/* The bytes not taken, [pos, fill), at the front of the stream's own
 * buffer (from a slot, given back). */
static void behind_to_own(struct line_stream *s)
{
	struct stream_behind *b = s->behind;
	size_t tail = s->fill - s->pos;

	if (b->cur < 0) {
		make_room(s);
		return;
	}
	if (b->own_cap < tail) {
		free(b->own);
		b->own_cap = tail;
		b->own = xmalloc(st_add(tail, STREAM_PAD));
	}
	memcpy(b->own, s->buf + s->pos, tail);
	s->buf = b->own;
	s->cap = b->own_cap;
	s->fill = tail;
	s->scanned -= s->pos;
	s->pos = 0;
	b->own = NULL;
	b->cur = -1;
	behind_give_back(b);
}

/*
 * The next slot after the bytes not taken: 0, or -1 after saying why.
 * OWN: into the stream's own buffer, whatever the line's length.
 */
static int behind_more(struct line_stream *s, bool own)
{
	struct stream_behind *b = s->behind;
	size_t k = b->taken++, i = k % BEHIND_SLOTS, tail = s->fill - s->pos;
	const char *data;
	size_t n;

	progress_wait(&b->filled, k + 1);
	n = b->len[i];
	data = b->slot[i] + BEHIND_HEAD;
	if (b->err[i] || !n) {
		/* (The thread has returned: nothing more is read.) */
		s->eof = true;
		pad(s);
		return b->err[i] ? error("%s: %s", s->path,
					 strerror(b->err[i]))
				 : 0;
	}
	s->got += n;
	if (!own && tail <= BEHIND_HEAD) {
		char *at = b->slot[i] + BEHIND_HEAD - tail;

		memcpy(at, s->buf + s->pos, tail);
		if (b->cur >= 0) {
			behind_give_back(b);
		} else {
			b->own = s->buf;
			b->own_cap = s->cap;
		}
		s->buf = b->slot[i];
		s->cap = BEHIND_HEAD + STREAM_BLOCK;
		s->scanned = BEHIND_HEAD - tail + (s->scanned - s->pos);
		s->pos = BEHIND_HEAD - tail;
		s->fill = BEHIND_HEAD + n;
		b->cur = (int)i;
		pad(s);
		return 0;
	}
	/* A line longer than a slot's head: the stream's own buffer. */
	behind_to_own(s);
	while (s->cap - s->fill < n) {
		s->cap = st_mult(s->cap, 2);
		s->buf = xrealloc(s->buf, st_add(s->cap, STREAM_PAD));
	}
	memcpy(s->buf + s->fill, data, n);
	s->fill += n;
	behind_give_back(b);
	pad(s);
	return 0;
}

/* The thread stopped and joined, its slots freed; the stream's buffer
 * its own. */
static void behind_end(struct line_stream *s)
{
	struct stream_behind *b = s->behind;

	if (!b)
		return;
	if (b->cur >= 0) {
		/* (What is not taken is dropped: the stream is closing.) */
		s->buf = b->own;
		s->cap = b->own_cap;
		s->pos = s->fill = s->scanned = 0;
		b->own = NULL;
	}
	atomic_store(&b->stop, true);
	progress_set(&b->freed, SIZE_MAX);
	task_release(&b->task);
	for (size_t i = 0; i < BEHIND_SLOTS; i++)
		free(b->slot[i]);
	free(b->own);
	progress_free(&b->filled);
	progress_free(&b->freed);
	free(b);
	s->behind = NULL;
}

int stream_line(struct line_stream *s, struct line *l)
{
	char *nl;

	while (!(nl = memchr(s->buf + s->scanned, '\n',
			     s->fill - s->scanned))) {
		s->scanned = s->fill;
		if (s->eof)
			break;
		if (s->behind) {
			if (behind_more(s, false) < 0)
				return -1;
			continue;
		}
		make_room(s);
		if (fill(s, false) < 0)
			return -1;
	}
	if (!nl && s->pos == s->fill)
		return 0;
	l->p = s->buf + s->pos;
	l->no = ++s->no;
	l->newline = nl != NULL;
	if (!nl)
		nl = s->buf + s->fill;
	l->len = (size_t)(nl - l->p);
	s->pos = s->scanned = (size_t)(nl - s->buf) + l->newline;
	/* CRLF files (a dump copied through Windows) read like LF ones. */
	if (l->len && l->p[l->len - 1] == '\r')
		l->len--;
	return 1;
}

int stream_rest(struct line_stream *s, const char **p, size_t *len)
{
	int e;

	/* (The slots' blocks in the stream's own buffer, to the end.) */
	if (s->behind) {
		behind_to_own(s);
		while (!s->eof)
			if (behind_more(s, true) < 0)
				return -1;
	}
	make_room(s);
	/* (The rest of a regular file in one go, if its size still holds,
	 * with a byte to see the end.) */
	if (!s->eof && s->regular && s->size > s->got &&
	    s->size - s->got + s->fill >= s->cap) {
		s->cap = st_add(s->size - s->got + s->fill, 1);
		s->buf = xrealloc(s->buf, st_add(s->cap, STREAM_PAD));
	}
	if (!s->eof) {
		size_t before = s->fill;

		e = read_all(s->fd, &s->buf, &s->fill, &s->cap, SIZE_MAX);
		s->got += s->fill - before;
		s->eof = true;
		pad(s);
		if (e)
			return error("%s: %s", s->path, strerror(e));
	}
	s->scanned = s->fill;
	*p = s->buf + s->pos;
	*len = s->fill - s->pos;
	return 0;
}

int stream_to_file(struct line_stream *s, struct filebuf *fb)
{
	const char *rest;
	size_t len;
	int rc;

	memset(fb, 0, sizeof(*fb));
	rc = stream_rest(s, &rest, &len);
	if (rc == 0) {
		/* (Nothing taken: the rest is the file, at the front.) */
		s->buf[len] = '\0';
		fb->data = s->buf;
		fb->size = len;
		fb->cap = s->cap;
		fb->path = xstrdup(s->path);
		fb->mtime = s->mtime;
		s->buf = NULL;
	}
	stream_close(s);
	return rc;
}

void stream_close(struct line_stream *s)
{
	behind_end(s);
	if (s->fd >= 0)
		close(s->fd);
	release_buffer(s->buf, s->cap);
	free(s->path);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

void lines_init(struct line_reader *r, const char *data, size_t size)
{
	r->p = data;
	r->end = data + size;
	r->no = 0;
}

bool line_is_blank(const struct line *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (!is_space(l->p[i]))
			return false;
	return true;
}

bool line_is(const struct line *l, const char *lit)
{
	size_t n = strlen(lit);

	return l->len == n && !memcmp(l->p, lit, n);
}

bool lines_next(struct line_reader *r, struct line *l)
{
	const char *nl;

	if (r->p >= r->end)
		return false;
	nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
	l->p = r->p;
	l->no = ++r->no;
	if (nl) {
		l->len = (size_t)(nl - r->p);
		l->newline = true;
		r->p = nl + 1;
	} else {
		l->len = (size_t)(r->end - r->p);
		l->newline = false;
		r->p = r->end;
	}
	/* CRLF files (a dump copied through Windows) read like LF ones. */
	if (l->len && l->p[l->len - 1] == '\r')
		l->len--;
	return true;
}
