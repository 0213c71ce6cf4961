/*
 * The steps every reader takes the same way, written once: saying what is
 * wrong where (FILE:LINE, as STYLE.md wants every diagnostic about input).
 */
#include "reader.h"

#include <stdarg.h>

int read_error(const struct reader_pos *pos, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (pos->quiet)
		return -1;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (pos->line && pos->col)
		error("%s:%lu:%lu: %s", pos->path, pos->line, pos->col, sb.buf);
	else if (pos->line)
		error("%s:%lu: %s", pos->path, pos->line, sb.buf);
	else
		error("%s: %s", pos->path, sb.buf);
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
