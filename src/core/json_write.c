/*
 * The JSON writer (json_write.h).  A stack of open containers knows
 * whether each has a member yet and how it is laid out; every value
 * first writes the separator its container needs there.
 */
#include "json_write.h"

#include <string.h>

#include "escape.h"
#include "numfmt.h"

/* Past this much, a writer with a sink empties its buffer. */
#define FLUSH_AT (64 * 1024)

/*
 * S as a JSON string literal; invalid UTF-8 bytes become \u00XX, or,
 * with SURROGATES, \udcXX (see json_bytes).
 */
static void string_literal(struct strbuf *sb, const char *s, bool surrogates)
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
		} else if ((n = utf8_char_len(p)) == 0) {
			sb_addf(sb, "\\u%04x", (surrogates ? 0xdc00u : 0) | *p++);
		} else {
			sb_add(sb, p, n);
			p += n;
		}
	}
	sb_addch(sb, '"');
}

void json_write_init(struct json_writer *w, struct strbuf *out, FILE *sink,
		     bool compact)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->sink = sink;
	w->compact = compact;
}

static void flush(struct json_writer *w)
{
	if (!w->sink || !w->out->len)
		return;
	fwrite(w->out->buf, 1, w->out->len, w->sink);
	sb_reset(w->out);
}

static void indent(struct json_writer *w, unsigned depth)
{
	static const char spaces[] = "                                ";

	sb_addch(w->out, '\n');
	for (depth *= 2; depth > 0;) {
		unsigned n = depth < sizeof(spaces) - 1 ? depth
							: sizeof(spaces) - 1;

		sb_add(w->out, spaces, n);
		depth -= n;
	}
}

/* What goes before a value: nothing after a key, else a separator. */
static void before_value(struct json_writer *w)
{
	if (w->sink && w->out->len >= FLUSH_AT)
		flush(w);
	if (w->keyed) {
		w->keyed = false;
		return;
	}
	if (!w->depth)
		return;

	bool first = w->level[w->depth - 1].empty;

	w->level[w->depth - 1].empty = false;
	if (!first)
		sb_addch(w->out, ',');
	if (w->compact)
		return;
	if (w->level[w->depth - 1].one_line)
		sb_addch(w->out, ' ');
	else
		indent(w, w->depth);
}

static void open(struct json_writer *w, char bracket, bool one_line)
{
	before_value(w);
	if (w->depth == JSON_WRITE_DEPTH)
		BUG("JSON nested deeper than %d", JSON_WRITE_DEPTH);
	sb_addch(w->out, bracket);
	w->level[w->depth].close = bracket == '{' ? '}' : ']';
	w->level[w->depth].empty = true;
	w->level[w->depth].one_line = one_line;
	w->depth++;
}

void json_object(struct json_writer *w)
{
	open(w, '{', false);
}

void json_array(struct json_writer *w)
{
	open(w, '[', false);
}

void json_object_line(struct json_writer *w)
{
	open(w, '{', true);
}

void json_array_line(struct json_writer *w)
{
	open(w, '[', true);
}

void json_end(struct json_writer *w)
{
	if (!w->depth)
		BUG("JSON writer: an end with nothing open");
	w->depth--;
	if (!w->compact && !w->level[w->depth].empty) {
		if (w->level[w->depth].one_line)
			sb_addch(w->out, ' ');
		else
			indent(w, w->depth);
	}
	sb_addch(w->out, w->level[w->depth].close);
}

void json_key(struct json_writer *w, const char *key)
{
	before_value(w);
	string_literal(w->out, key, false);
	sb_addstr(w->out, w->compact ? ":" : ": ");
	w->keyed = true;
}

void json_string(struct json_writer *w, const char *s)
{
	before_value(w);
	string_literal(w->out, s, false);
}

void json_bytes(struct json_writer *w, const char *s)
{
	before_value(w);
	string_literal(w->out, s, true);
}

/* The digits of V, backwards from END; returns where they start. */
static char *digits(char *end, uint64_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

void json_uint(struct json_writer *w, uint64_t v)
{
	char buf[24], *end = buf + sizeof(buf), *p = digits(end, v);

	before_value(w);
	sb_add(w->out, p, (size_t)(end - p));
}

void json_int(struct json_writer *w, int64_t v)
{
	char buf[24], *end = buf + sizeof(buf), *p;

	before_value(w);
	/* (-v would overflow on INT64_MIN; the unsigned negation does not.) */
	p = digits(end, v < 0 ? -(uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--p = '-';
	sb_add(w->out, p, (size_t)(end - p));
}

void json_bool(struct json_writer *w, bool v)
{
	before_value(w);
	sb_addstr(w->out, v ? "true" : "false");
}

void json_null(struct json_writer *w)
{
	before_value(w);
	sb_addstr(w->out, "null");
}

void json_double(struct json_writer *w, double v)
{
	before_value(w);
	format_float_repr(w->out, v);
}

void json_raw(struct json_writer *w, const char *json, size_t len)
{
	before_value(w);
	sb_add(w->out, json, len);
}

/* json_member_TYPE(W, KEY, V): json_key, then json_TYPE. */
#define MEMBER(type, ctype)                                              \
	void json_member_##type(struct json_writer *w, const char *key,  \
				ctype v)                                 \
	{                                                                \
		json_key(w, key);                                        \
		json_##type(w, v);                                       \
	}

MEMBER(string, const char *)
MEMBER(int, int64_t)
MEMBER(uint, uint64_t)
MEMBER(bool, bool)
MEMBER(double, double)

void json_write_finish(struct json_writer *w)
{
	if (w->depth)
		BUG("JSON writer: %u containers left open", w->depth);
	if (!w->compact)
		sb_addch(w->out, '\n');
	flush(w);
}
