/*
 * One-line text, escaped and back (see escape.h).  Reading is lenient:
 * a value written before escaping was (an old dump's command line with
 * a backslash in it) reads as it was but for the sequences escaping
 * writes, and nothing is an error.
 */
#include "escape.h"

#include <string.h>

size_t utf8_char_len(const unsigned char *s)
{
	unsigned min, cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0 && s[0] <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	cp = s[0] & (0x3f >> (n - 1));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
		return 0;
	return n;
}

void escape_line(struct strbuf *sb, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	/* (A sequence near the end is looked at in a copy ended by a
	 * NUL: S need not be NUL-terminated.) */
	unsigned char tail[5];

	if (!len)
		return;
	sb_grow(sb, len);
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		size_t n = 1;

		if (c == '\\') {
			sb_addstr(sb, "\\\\");
		} else if (c == '\n') {
			sb_addstr(sb, "\\n");
		} else if (c == '\t') {
			sb_addstr(sb, "\\t");
		} else if (c == '\r') {
			sb_addstr(sb, "\\r");
		} else if (c < 0x20 || c == 0x7f ||
			   (c == ' ' && (i == 0 || i + 1 == len))) {
			sb_addf(sb, "\\x%02x", c);
		} else if (c < 0x80) {
			sb_addch(sb, c);
		} else {
			size_t k = len - i < 4 ? len - i : 4;

			memcpy(tail, p + i, k);
			tail[k] = '\0';
			n = utf8_char_len(tail);
			if (n)
				sb_add(sb, p + i, n);
			else
				sb_addf(sb, "\\x%02x", c);
			n = n ? n : 1;
		}
		i += n;
	}
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t unescape_line(char *out, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		int hi, lo;

		if (s[i] != '\\' || i + 1 == len) {
			out[o++] = s[i];
			continue;
		}
		switch (s[i + 1]) {
		case '\\':
			out[o++] = '\\';
			i++;
			continue;
		case 'n':
			out[o++] = '\n';
			i++;
			continue;
		case 't':
			out[o++] = '\t';
			i++;
			continue;
		case 'r':
			out[o++] = '\r';
			i++;
			continue;
		case 'x':
			if (i + 3 < len && (hi = hex_digit(s[i + 2])) >= 0 &&
			    (lo = hex_digit(s[i + 3])) >= 0 && (hi || lo)) {
				out[o++] = (char)(hi << 4 | lo);
				i += 3;
				continue;
			}
			break;
		default:
			break;
		}
		out[o++] = s[i];
	}
	return o;
}
