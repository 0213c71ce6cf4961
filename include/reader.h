/*
 * What every reader shares (src/read/reader.c): where it is in its file,
 * for what it says.  profile.h is the front that picks the reader.
 */
#ifndef DMPROF_READER_H
#define DMPROF_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* Where a reader is in its file, for what it says about it. */
struct reader_pos {
	const char *path;
	unsigned long line; /* 1-based; 0: the file as a whole */
	unsigned long col;  /* and the column, where it helps; 0: none */
	bool quiet;         /* say nothing (a first try, that may fail) */
	struct strbuf q;    /* read_quote's */
};

/*
 * Say "PATH:LINE[:COL]: MSG" (LINE 0: "PATH: MSG") as an error, unless
 * POS is quiet; returns -1.
 */
int read_error(const struct reader_pos *pos, const char *fmt, ...)
	PRINTF(2, 3);
/* LEN bytes of the input at S, quoted for a message: valid until the
 * next call. */
const char *read_quote(struct reader_pos *pos, const char *s, size_t len);
void read_pos_release(struct reader_pos *pos);

#endif
