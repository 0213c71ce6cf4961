/*
 * Text input.  Files are read with read(2) into one buffer: dumps are
 * parsed in a single pass, and a buffer (unlike mmap) cannot fault if the
 * file shrinks under us.
 */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan.h"
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

int stream_line(struct line_stream *s, struct line *l)
{
	char *nl;

	while (!(nl = memchr(s->buf + s->scanned, '\n',
			     s->fill - s->scanned))) {
		s->scanned = s->fill;
		if (s->eof)
			break;
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
