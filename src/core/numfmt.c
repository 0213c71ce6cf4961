/* Numbers as text (numfmt.h). */
#include "numfmt.h"

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

void format_hexdump(struct strbuf *sb, const uint8_t *p, size_t n,
		    const char *indent)
{
	for (size_t off = 0; off < n; off += 16) {
		sb_addf(sb, "%s%08zx ", indent, off);
		for (size_t i = off; i < off + 16; i++) {
			if (i == off + 8)
				sb_addch(sb, ' ');
			if (i < n)
				sb_addf(sb, " %02x", p[i]);
			else
				sb_addstr(sb, "   ");
		}
		sb_addstr(sb, "  |");
		for (size_t i = off; i < off + 16 && i < n; i++)
			sb_addch(sb, p[i] >= 32 && p[i] < 127 ? p[i] : '.');
		sb_addstr(sb, "|\n");
	}
}
