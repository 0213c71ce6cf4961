/*
 * Recursive-descent JSON reader with positions for diagnostics and a depth
 * limit, so hostile input gives an error instead of a crash.
 */
#include "json.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define JSON_MAX_DEPTH 512

struct jp {
	const char *p, *start, *end;
	const char *name;
	unsigned long line;
	const char *line_start;
	int depth;
	bool failed;
};

static void jerr(struct jp *j, const char *msg)
{
	if (j->failed)
		return;
	j->failed = true;
	error("%s:%lu:%lu: %s", j->name, j->line,
	      (unsigned long)(j->p - j->line_start) + 1, msg);
}

static void skip_ws(struct jp *j)
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

static struct json_value *new_value(struct jp *j, enum json_type t)
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

/* At the opening quote; returns a malloc'd string. */
static char *parse_string(struct jp *j, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	j->p++;
	for (;;) {
		unsigned char c;

		if (j->p >= j->end) {
			jerr(j, "unterminated string");
			goto fail;
		}
		c = (unsigned char)*j->p;
		if (c == '"') {
			j->p++;
			break;
		}
		if (c < 0x20) {
			jerr(j, "control character in string");
			goto fail;
		}
		if (c != '\\') {
			sb_addch(&sb, c);
			j->p++;
			continue;
		}
		if (j->end - j->p < 2) {
			jerr(j, "unterminated string");
			goto fail;
		}
		j->p++;
		switch (*j->p) {
		case '"': sb_addch(&sb, '"'); break;
		case '\\': sb_addch(&sb, '\\'); break;
		case '/': sb_addch(&sb, '/'); break;
		case 'b': sb_addch(&sb, '\b'); break;
		case 'f': sb_addch(&sb, '\f'); break;
		case 'n': sb_addch(&sb, '\n'); break;
		case 'r': sb_addch(&sb, '\r'); break;
		case 't': sb_addch(&sb, '\t'); break;
		case 'u': {
			int cp;

			if (j->end - j->p < 5 || (cp = hex4(j->p + 1)) < 0) {
				jerr(j, "invalid \\u escape");
				goto fail;
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
			add_utf8(&sb, (unsigned)cp);
			break;
		}
		default:
			jerr(j, "invalid escape in string");
			goto fail;
		}
		j->p++;
	}
	*len = sb.len;
	return sb_detach(&sb);
fail:
	sb_release(&sb);
	return NULL;
}

static struct json_value *parse_value(struct jp *j);

static struct json_value *parse_container(struct jp *j, bool object)
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
static bool eat_digits(struct jp *j)
{
	const char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static struct json_value *parse_number(struct jp *j)
{
	const char *s = j->p;
	struct json_value *v;
	char *copy, *endp;

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
	{
		const char *save = j->p;

		j->p = s;
		v = new_value(j, JSON_NUMBER);
		j->p = save;
	}
	copy = xstrndup(s, (size_t)(j->p - s));
	v->number = strtod(copy, &endp);
	free(copy);
	return v;
bad:
	jerr(j, "invalid number");
	return NULL;
}

static bool literal(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, lit, n)) {
		j->p += n;
		return true;
	}
	return false;
}

static struct json_value *parse_value(struct jp *j)
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

struct json_value *json_parse(const char *text, size_t len, const char *name)
{
	struct jp j = { text, text, text + len, name, 1, text, 0, false };
	struct json_value *v;

	/* A UTF-8 byte order mark is not JSON, but editors write one. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		j.p += 3;
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
	free(v->items);
	free(v->keys);
	free(v->string);
	free(v);
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
