/*
 * Recursive-descent JSON reader with positions for diagnostics and a depth
 * limit, so hostile input gives an error instead of a crash.
 */
#include "json.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define JSON_MAX_DEPTH 512

static void jerr(struct json_cursor *j, const char *msg)
{
	json_error(j, "%s", msg);
}

void json_error(struct json_cursor *j, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (j->failed)
		return;
	j->failed = true;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	error("%s:%lu:%lu: %s", j->name, j->line,
	      (unsigned long)(j->p - j->line_start) + 1, sb.buf);
	sb_release(&sb);
}

static void skip_ws(struct json_cursor *j)
{
	while (j->p < j->end) {
		char c = *j->p;

		if (c == '\n') {
			j->line++;
			j->line_start = j->p + 1;
		} else if (c != ' ' && c != '\t' && c != '\r') {
			break;
		}
		j->p++;
	}
}

static struct json_value *new_value(struct json_cursor *j, enum json_type t)
{
	struct json_value *v = xcalloc(1, sizeof(*v));

	v->type = t;
	v->line = j->line;
	v->col = (unsigned long)(j->p - j->line_start) + 1;
	return v;
}

static int hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		int d;
		char c = p[i];

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static void add_utf8(struct strbuf *sb, unsigned cp)
{
	if (cp < 0x80) {
		sb_addch(sb, (int)cp);
	} else if (cp < 0x800) {
		sb_addch(sb, (int)(0xc0 | cp >> 6));
		sb_addch(sb, (int)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		sb_addch(sb, (int)(0xe0 | cp >> 12));
		sb_addch(sb, (int)(0x80 | ((cp >> 6) & 0x3f)));
		sb_addch(sb, (int)(0x80 | (cp & 0x3f)));
	} else {
		sb_addch(sb, (int)(0xf0 | cp >> 18));
		sb_addch(sb, (int)(0x80 | ((cp >> 12) & 0x3f)));
		sb_addch(sb, (int)(0x80 | ((cp >> 6) & 0x3f)));
		sb_addch(sb, (int)(0x80 | (cp & 0x3f)));
	}
}

/* At the opening quote: the string's text appended to SB. */
static bool read_string(struct json_cursor *j, struct strbuf *out)
{
	j->p++;
	for (;;) {
		unsigned char c;

		if (j->p >= j->end) {
			jerr(j, "unterminated string");
			return false;
		}
		c = (unsigned char)*j->p;
		if (c == '"') {
			j->p++;
			break;
		}
		if (c < 0x20) {
			jerr(j, "control character in string");
			return false;
		}
		if (c != '\\') {
			sb_addch(out, c);
			j->p++;
			continue;
		}
		if (j->end - j->p < 2) {
			jerr(j, "unterminated string");
			return false;
		}
		j->p++;
		switch (*j->p) {
		case '"': sb_addch(out, '"'); break;
		case '\\': sb_addch(out, '\\'); break;
		case '/': sb_addch(out, '/'); break;
		case 'b': sb_addch(out, '\b'); break;
		case 'f': sb_addch(out, '\f'); break;
		case 'n': sb_addch(out, '\n'); break;
		case 'r': sb_addch(out, '\r'); break;
		case 't': sb_addch(out, '\t'); break;
		case 'u': {
			int cp;

			if (j->end - j->p < 5 || (cp = hex4(j->p + 1)) < 0) {
				jerr(j, "invalid \\u escape");
				return false;
			}
			j->p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && j->end - j->p >= 7 &&
			    j->p[1] == '\\' && j->p[2] == 'u') {
				int lo = hex4(j->p + 3);

				if (lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					     (lo - 0xdc00);
					j->p += 6;
				}
			}
			add_utf8(out, (unsigned)cp);
			break;
		}
		default:
			jerr(j, "invalid escape in string");
			return false;
		}
		j->p++;
	}
	return true;
}

/* At the opening quote; returns a malloc'd string. */
static char *parse_string(struct json_cursor *j, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	if (!read_string(j, &sb)) {
		sb_release(&sb);
		return NULL;
	}
	*len = sb.len;
	if (!sb.buf)
		return xstrndup("", 0);
	return sb_detach(&sb);
}

static struct json_value *parse_value(struct json_cursor *j);

static struct json_value *parse_container(struct json_cursor *j, bool object)
{
	struct json_value *v = new_value(j, object ? JSON_OBJECT : JSON_ARRAY);
	size_t alloc = 0;
	char close = object ? '}' : ']';

	if (++j->depth > JSON_MAX_DEPTH) {
		jerr(j, "nesting too deep");
		goto fail;
	}
	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return v;
	}
	for (;;) {
		char *key = NULL;
		size_t klen;
		struct json_value *item;

		skip_ws(j);
		if (object) {
			if (j->p >= j->end || *j->p != '"') {
				jerr(j, "expected a string key");
				goto fail;
			}
			key = parse_string(j, &klen);
			if (!key)
				goto fail;
			skip_ws(j);
			if (j->p >= j->end || *j->p != ':') {
				free(key);
				jerr(j, "expected ':'");
				goto fail;
			}
			j->p++;
		}
		item = parse_value(j);
		if (!item) {
			free(key);
			goto fail;
		}
		if (v->n == alloc) {
			alloc = alloc ? st_mult(alloc, 2) : 4;
			v->items = xreallocarray(v->items, alloc,
						 sizeof(*v->items));
			if (object)
				v->keys = xreallocarray(v->keys, alloc,
							sizeof(*v->keys));
		}
		v->items[v->n] = item;
		if (object)
			v->keys[v->n] = key;
		v->n++;
		skip_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			break;
		}
		jerr(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
		goto fail;
	}
	j->depth--;
	return v;
fail:
	json_free(v);
	return NULL;
}

/* Consume a run of digits; false if there is none. */
static bool eat_digits(struct json_cursor *j)
{
	const char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

/* A number's text, checked, then its value (strtod needs a NUL after it). */
static bool scan_number(struct json_cursor *j, double *out)
{
	const char *s = j->p;
	char small[64], *copy;
	size_t n;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!eat_digits(j))
		goto bad;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!eat_digits(j))
			goto bad;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!eat_digits(j))
			goto bad;
	}
	n = (size_t)(j->p - s);
	copy = n < sizeof(small) ? small : xmalloc(n + 1);
	memcpy(copy, s, n);
	copy[n] = '\0';
	*out = strtod(copy, NULL);
	if (copy != small)
		free(copy);
	return true;
bad:
	jerr(j, "invalid number");
	return false;
}

static struct json_value *parse_number(struct json_cursor *j)
{
	struct json_value *v = new_value(j, JSON_NUMBER);

	if (!scan_number(j, &v->number)) {
		free(v);
		return NULL;
	}
	return v;
}

static bool literal(struct json_cursor *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, lit, n)) {
		j->p += n;
		return true;
	}
	return false;
}

static struct json_value *parse_value(struct json_cursor *j)
{
	struct json_value *v;

	skip_ws(j);
	if (j->p >= j->end) {
		jerr(j, "unexpected end of input");
		return NULL;
	}
	switch (*j->p) {
	case '{':
		return parse_container(j, true);
	case '[':
		return parse_container(j, false);
	case '"':
		v = new_value(j, JSON_STRING);
		v->string = parse_string(j, &v->string_len);
		if (!v->string) {
			free(v);
			return NULL;
		}
		return v;
	case 't':
	case 'f':
	case 'n':
		v = new_value(j, JSON_NULL);
		if (literal(j, "true"))
			v->type = JSON_TRUE;
		else if (literal(j, "false"))
			v->type = JSON_FALSE;
		else if (!literal(j, "null")) {
			free(v);
			jerr(j, "invalid literal");
			return NULL;
		}
		return v;
	case '-':
	case '0' ... '9':
		return parse_number(j);
	default:
		jerr(j, "expected a value");
		return NULL;
	}
}

void json_cursor_init(struct json_cursor *j, const char *text, size_t len,
		      const char *name)
{
	*j = (struct json_cursor){ text, text, text + len, name, 1, text, 0,
				   false };
	/* A UTF-8 byte order mark is not JSON, but editors write one. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		j->p += 3;
}

int json_peek(struct json_cursor *j)
{
	skip_ws(j);
	return j->p < j->end ? (unsigned char)*j->p : 0;
}

bool json_expect(struct json_cursor *j, char ch, const char *what)
{
	if (j->failed)
		return false;
	if (json_peek(j) == (unsigned char)ch) {
		j->p++;
		return true;
	}
	json_error(j, "expected %s", what);
	return false;
}

bool json_next(struct json_cursor *j, char close, bool *first)
{
	int c = j->failed ? 0 : json_peek(j);

	if (j->failed)
		return false;
	if (c == (unsigned char)close) {
		j->p++;
		return false;
	}
	if (!*first) {
		if (c != ',') {
			json_error(j, "expected ',' or '%c'", close);
			return false;
		}
		j->p++;
	}
	*first = false;
	if (json_peek(j) == (unsigned char)close) {
		json_error(j, "expected a value");
		return false;
	}
	return true;
}

bool json_read_string(struct json_cursor *j, struct strbuf *out)
{
	if (j->failed)
		return false;
	if (json_peek(j) != '"') {
		json_error(j, "expected a string");
		return false;
	}
	return read_string(j, out);
}

bool json_read_number(struct json_cursor *j, double *out)
{
	int c;

	if (j->failed)
		return false;
	c = json_peek(j);
	if (c != '-' && (c < '0' || c > '9')) {
		json_error(j, "expected a number");
		return false;
	}
	return scan_number(j, out);
}

bool json_skip(struct json_cursor *j)
{
	struct json_value *v = j->failed ? NULL : parse_value(j);

	json_free(v);
	return v != NULL;
}

struct json_value *json_parse(const char *text, size_t len, const char *name)
{
	struct json_cursor j;
	struct json_value *v;

	json_cursor_init(&j, text, len, name);
	v = parse_value(&j);
	if (!v)
		return NULL;
	skip_ws(&j);
	if (j.p != j.end) {
		jerr(&j, "unexpected text after the JSON value");
		json_free(v);
		return NULL;
	}
	return v;
}

void json_free(struct json_value *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		json_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	FREE_ALL(v->items, v->keys, v->string, v);
}

const struct json_value *json_get(const struct json_value *v, const char *key)
{
	if (!v || v->type != JSON_OBJECT)
		return NULL;
	/* Later duplicates win, as in most JSON readers. */
	for (size_t i = v->n; i-- > 0;)
		if (!strcmp(v->keys[i], key))
			return v->items[i];
	return NULL;
}

const char *json_get_string(const struct json_value *v, const char *key)
{
	const struct json_value *s = json_get(v, key);

	return s && s->type == JSON_STRING ? s->string : NULL;
}
