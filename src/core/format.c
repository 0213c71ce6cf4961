/* Formatting helpers for the writers. */
#include "format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void format_float_repr(struct strbuf *sb, double v)
{
	char buf[64];

	if (isnan(v)) {
		sb_addstr(sb, "NaN");
		return;
	}
	if (isinf(v)) {
		sb_addstr(sb, v < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (v == floor(v) && fabs(v) < 1e16) {
		snprintf(buf, sizeof(buf), "%.1f", v);
		sb_addstr(sb, buf);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	sb_addstr(sb, buf);
	if (!strpbrk(buf, ".e"))
		sb_addstr(sb, ".0");
}

/* Length of the valid UTF-8 sequence at S (0 if invalid). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned min;

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
	{
		unsigned cp = s[0] & (0x3f >> (n - 1));

		for (size_t i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
			return 0;
	}
	return n;
}

void format_json_string(struct strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	sb_addch(sb, '"');
	while (*p) {
		size_t n;

		if (*p == '"' || *p == '\\') {
			sb_addch(sb, '\\');
			sb_addch(sb, *p++);
		} else if (*p == '\n') {
			sb_addstr(sb, "\\n"), p++;
		} else if (*p == '\t') {
			sb_addstr(sb, "\\t"), p++;
		} else if (*p < 0x20) {
			sb_addf(sb, "\\u%04x", *p++);
		} else if ((n = utf8_len(p)) == 0) {
			sb_addf(sb, "\\u%04x", *p++);
		} else {
			sb_add(sb, p, n);
			p += n;
		}
	}
	sb_addch(sb, '"');
}

void format_bytes(struct strbuf *sb, int64_t v, bool sign)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
					     "PiB", "EiB" };
	/* (The magnitude of INT64_MIN does not fit an int64_t.) */
	double d = v < 0 ? -(double)v : (double)v;
	const char *s = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	size_t u = 0;

	if (d < 1024) {
		sb_addf(sb, "%s%.0f B", s, d);
		return;
	}
	d /= 1024;
	while (d >= 1023.95 && u + 1 < ARRAY_SIZE(units)) {
		d /= 1024;
		u++;
	}
	sb_addf(sb, "%s%.1f %s", s, d, units[u]);
}

void format_percent(struct strbuf *sb, int64_t part, int64_t whole, bool sign)
{
	double p;

	if (!whole) {
		sb_addstr(sb, "-");
		return;
	}
	p = 100.0 * (double)part / (double)whole;
	sb_addf(sb, sign ? "%+.1f%%" : "%.1f%%", p);
}
