/*
 * Text input.  Files are read with read(2) into one buffer: dumps are
 * parsed in a single pass, and a buffer (unlike mmap) cannot fault if the
 * file shrinks under us.
 */
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define H(c) ((c) >= '0' && (c) <= '9'   ? (c) - '0'                         \
	      : (c) >= 'a' && (c) <= 'f' ? (c) - 'a' + 10                    \
	      : (c) >= 'A' && (c) <= 'F' ? (c) - 'A' + 10                    \
					 : -1)
#define H4(c) H(c), H((c) + 1), H((c) + 2), H((c) + 3)
#define H16(c) H4(c), H4((c) + 4), H4((c) + 8), H4((c) + 12)
const signed char hex_digit_value[256] = {
	H16(0),	  H16(16),  H16(32),  H16(48),	H16(64),  H16(80),
	H16(96),  H16(112), H16(128), H16(144), H16(160), H16(176),
	H16(192), H16(208), H16(224), H16(240),
};
#undef H16
#undef H4
#undef H

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
	return xmalloc(st_add(*cap, 1));
}

/* "PATH: WHY", to ERR or (without it) as an error. */
static int say(struct strbuf *err, const char *path, const char *why)
{
	if (!err)
		return error("%s: %s", path, why);
	sb_addf(err, "%s: %s", path, why);
	return -1;
}

/* PATH, or its first MAX bytes, into FB; see file_load_msg(). */
static int load(struct filebuf *fb, const char *path, struct strbuf *err,
		size_t max)
{
	struct stat st;
	size_t cap, len = 0;
	char *buf;
	int fd;

	memset(fb, 0, sizeof(*fb));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return say(err, path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		close(fd);
		return say(err, path, strerror(errno));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return say(err, path, "is a directory");
	}
	/*
	 * A file or a pipe (process substitution); a device like /dev/zero
	 * would be read forever.
	 */
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
		close(fd);
		return say(err, path, "not a regular file");
	}
	cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1
						    : 65536;
	if (cap > max)
		cap = max;
	buf = max == SIZE_MAX ? buffer(&cap) : xmalloc(st_add(cap, 1));
	while (len < max) {
		ssize_t n;

		if (len == cap) {
			cap = st_mult(cap, 2);
			buf = xrealloc(buf, cap + 1);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;

			free(buf);
			close(fd);
			return say(err, path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	fb->data = buf;
	fb->size = len;
	fb->cap = cap;
	fb->path = xstrdup(path);
	fb->mtime = st.st_mtim;
	return 0;
}

int file_load_msg(struct filebuf *fb, const char *path, struct strbuf *err)
{
	return load(fb, path, err, SIZE_MAX);
}

int file_load(struct filebuf *fb, const char *path)
{
	return load(fb, path, NULL, SIZE_MAX);
}

int file_load_head(struct filebuf *fb, const char *path, size_t max)
{
	return load(fb, path, NULL, max);
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

void file_release(struct filebuf *fb)
{
	char *old = fb->data;

	pthread_mutex_lock(&spare_lock);
	if (fb->data && fb->cap >= SPARE_MIN && fb->cap > spare_cap) {
		old = spare;
		spare = fb->data;
		spare_cap = fb->cap;
	}
	pthread_mutex_unlock(&spare_lock);
	free(old);
	free(fb->path);
	memset(fb, 0, sizeof(*fb));
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

void cursor_skip_space(struct cursor *c)
{
	while (c->p < c->end && is_space(*c->p))
		c->p++;
}

bool cursor_at_end(const struct cursor *c)
{
	return c->p >= c->end;
}

bool cursor_word(struct cursor *c, const char **w, size_t *len)
{
	const char *s;

	cursor_skip_space(c);
	if (c->p >= c->end)
		return false;
	s = c->p;
	while (c->p < c->end && !is_space(*c->p))
		c->p++;
	*w = s;
	*len = (size_t)(c->p - s);
	return true;
}

bool cursor_eat(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return false;
	c->p += n;
	return true;
}

enum num_status parse_u64(struct cursor *c, uint64_t *out)
{
	const char *p = c->p;
	uint64_t v = 0;
	bool range = false;

	if (p >= c->end || !is_digit(*p))
		return NUM_NONE;
	for (; p < c->end && is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			range = true;
		else
			v = v * 10 + d;
	}
	c->p = p;
	if (range)
		return NUM_RANGE;
	*out = v;
	return NUM_OK;
}

enum num_status parse_i64(struct cursor *c, int64_t *out)
{
	struct cursor save = *c;
	bool neg = false;
	uint64_t v;
	enum num_status st;

	if (c->p < c->end && *c->p == '-') {
		neg = true;
		c->p++;
	}
	st = parse_u64(c, &v);
	if (st == NUM_NONE) {
		*c = save;
		return st;
	}
	if (st == NUM_RANGE)
		return st;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return NUM_RANGE;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > (uint64_t)INT64_MAX)
			return NUM_RANGE;
		*out = (int64_t)v;
	}
	return NUM_OK;
}

enum num_status parse_hex(struct cursor *c, uint64_t *out, bool allow_0x)
{
	const char *p = c->p;
	uint64_t v = 0;
	bool range = false;
	int d;

	if (allow_0x && c->end - p > 2 && p[0] == '0' &&
	    (p[1] == 'x' || p[1] == 'X') && hex_value(p[2]) >= 0)
		p += 2;
	if (p >= c->end || hex_value(*p) < 0)
		return NUM_NONE;
	for (; p < c->end && (d = hex_value(*p)) >= 0; p++) {
		if (v >> 60)
			range = true;
		v = v << 4 | (unsigned)d;
	}
	c->p = p;
	if (range)
		return NUM_RANGE;
	*out = v;
	return NUM_OK;
}

#define WORD_PARSER(name, type, parse, ...)                                   \
	enum num_status name(const char *w, size_t len, type *out)           \
	{                                                                      \
		struct cursor c = { w, w + len };                              \
		enum num_status st = parse(&c, out __VA_ARGS__);               \
									       \
		if (st == NUM_OK && c.p != c.end)                              \
			return NUM_NONE;                                       \
		return st;                                                     \
	}

WORD_PARSER(word_u64, uint64_t, parse_u64)
WORD_PARSER(word_i64, int64_t, parse_i64)

enum num_status word_hex(const char *w, size_t len, uint64_t *out,
			 bool allow_0x)
{
	struct cursor c = { w, w + len };
	enum num_status st = parse_hex(&c, out, allow_0x);

	if (st == NUM_OK && c.p != c.end)
		return NUM_NONE;
	return st;
}
