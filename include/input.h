/*
 * Reading input files: whole files in one block, or a block at a time,
 * and their lines with their numbers.  Inputs may hold NUL bytes, CRLF
 * endings or a last line without a newline; nothing here assumes C
 * strings.  (Words and numbers in a line: scan.h.)
 */
#ifndef DMPROF_INPUT_H
#define DMPROF_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

struct filebuf {
	char *data;  /* size bytes plus a terminating NUL */
	size_t size;
	size_t cap;  /* data holds cap + 1 bytes */
	char *path;  /* as given, for diagnostics */
	struct timespec mtime;
	struct stream_behind *behind; /* blocks read on another thread */
};

/* Read PATH whole.  On failure prints "PATH: reason" and returns -1. */
int file_load(struct filebuf *fb, const char *path);
/* Only its first MAX bytes (or fewer), to tell what the file is. */
int file_load_head(struct filebuf *fb, const char *path, size_t max);
/*
 * Free FB's text now, not kept for the next file as file_release keeps
 * it: for a reader done with a big file before it builds the rest (its
 * path stays; file_release still ends FB).
 */
void file_drop(struct filebuf *fb);
void file_release(struct filebuf *fb);
/* Is PATH a regular file of 0 bytes (a producer killed before writing)? */
bool file_empty(const char *path);

struct line {
	const char *p;
	size_t len;          /* without the newline and a CR before it */
	unsigned long no;    /* 1-based */
	bool newline;        /* false for a last line cut short */
};

struct line_reader {
	const char *p;
	const char *end;
	unsigned long no;
};

void lines_init(struct line_reader *r, const char *data, size_t size);
bool lines_next(struct line_reader *r, struct line *l);
/* Is the line empty or white space only? */
bool line_is_blank(const struct line *l);
/* Is the line exactly LIT (a section header, say)? */
bool line_is(const struct line *l, const char *lit);

/*
 * A file read a block at a time and taken a line at a time, for readers of
 * files that may be hundreds of MB: memory stays at a block (or the
 * longest line) whatever the file's size, and each block is parsed while
 * it is still in the cache.  The first block is read at once, so that the
 * file's head tells what it is before any line is taken.
 */
#define STREAM_BLOCK (1u << 20)
/* Readable bytes past the data, zeros: hex_word() may look 18 ahead. */
#define STREAM_PAD 32

struct stream_behind;

struct line_stream {
	int fd;
	char *path;          /* as given, for diagnostics */
	char *buf;           /* cap bytes, then STREAM_PAD */
	size_t cap;
	size_t pos, fill;    /* the bytes not taken: buf[pos, fill) */
	size_t scanned;      /* buf[pos, scanned) holds no newline */
	unsigned long no;    /* lines taken */
	bool eof;
	bool regular;        /* a regular file, of size bytes when opened */
	size_t size;
	size_t got;          /* bytes read so far */
	struct timespec mtime;
	struct stream_behind *behind; /* blocks read on another thread */
};

/* Open PATH and read its first block.  On failure prints "PATH: reason"
 * and returns -1. */
int stream_open(struct line_stream *s, const char *path);
/* What has been read and not taken, for telling the file's kind: before
 * any line is taken, the file's first block (or all of it). */
void stream_head(const struct line_stream *s, struct filebuf *view);
/* The next line, valid until the next call: 1, 0 at the end of the file,
 * -1 after a read error (said). */
int stream_line(struct line_stream *s, struct line *l);
/* How far past a line's end the stream's memory may be read. */
static inline const char *stream_limit(const struct line_stream *s)
{
	return s->buf + s->fill + STREAM_PAD;
}
/*
 * The rest of S read on a thread of its own, a few blocks ahead of the
 * lines taken, where another thread can be had (the copies out of the
 * kernel off the caller's thread): for a big file whose lines are taken
 * on a core that is the busier one.
 */
void stream_read_behind(struct line_stream *s);
/* All that is not taken yet, read whole (a profile's small tail, or a
 * file whose reader wants it all): 0 with *P and *LEN, or -1 (said). */
int stream_rest(struct line_stream *s, const char **p, size_t *len);
/* The whole file as one block for the readers that parse from memory,
 * when no line has been taken: 0, or -1 (said).  The stream is closed. */
int stream_to_file(struct line_stream *s, struct filebuf *fb);
void stream_close(struct line_stream *s);

#endif
