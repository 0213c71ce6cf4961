/*
 * Text that must stay on one line and come back byte for byte (a command
 * line, a path, in a dump's META or a snapshot file): C's escapes for
 * the bytes that would break the line or the text, and back.  And the
 * length of a UTF-8 character, which the escaping and the JSON writer
 * share.
 */
#ifndef DMPROF_ESCAPE_H
#define DMPROF_ESCAPE_H

#include <stddef.h>

#include "util.h"

/*
 * The length of the valid UTF-8 sequence at S (a NUL ends it: 0), or 0
 * if it is none (a stray byte, an overlong form, a surrogate).
 */
size_t utf8_char_len(const unsigned char *s);

/*
 * Append LEN bytes at S to SB, escaped: a backslash as "\\", a newline,
 * a tab and a carriage return as "\n", "\t", "\r", any other control
 * byte, DEL, and a byte of no valid UTF-8 character as "\xHH"; a space
 * that begins or ends it as "\x20" (readers trim values).  Valid UTF-8
 * stays as it is.
 */
void escape_line(struct strbuf *sb, const char *s, size_t len);

/*
 * The LEN bytes at S unescaped into OUT (room for LEN bytes: the text
 * only shrinks): "\\", "\n", "\t", "\r" and "\xHH" (two hex digits, not
 * "\x00") as escape_line writes them; anything else, a lone backslash
 * among it (text no escaping wrote), is kept as it is.  Returns the
 * length written.  OUT may be S.
 */
size_t unescape_line(char *out, const char *s, size_t len);

#endif
