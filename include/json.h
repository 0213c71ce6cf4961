/*
 * A small JSON reader (RFC 8259) for the few JSON inputs dmprof takes:
 * symbol-map files.json and the original's policy files.  Values form a
 * tree owned by the document; object members keep their file order.
 */
#ifndef DMPROF_JSON_H
#define DMPROF_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_value {
	enum json_type type;
	unsigned long line;       /* where the value starts */
	unsigned long col;
	double number;
	char *string;             /* JSON_STRING, NUL-terminated */
	size_t string_len;        /* may contain NULs (\u0000) */
	struct json_value **items; /* JSON_ARRAY elements, JSON_OBJECT values */
	char **keys;              /* JSON_OBJECT keys, parallel to items */
	size_t n;
};

/*
 * Parse TEXT[0..LEN).  On error prints "NAME:LINE:COL: message" and returns
 * NULL.  Nesting deeper than 512 is an error, not a stack overflow.
 */
struct json_value *json_parse(const char *text, size_t len, const char *name);
void json_free(struct json_value *v);

/*
 * Reading piece by piece, for files too big for a tree (DHAT's): a
 * cursor over the text, and calls that read or skip the next value.
 * Each call does nothing and returns false once one failed; the first
 * failure prints "NAME:LINE:COL: message".
 */
struct json_cursor {
	const char *p, *start, *end;
	const char *name;
	unsigned long line;       /* of p */
	const char *line_start;
	int depth;
	bool failed;
};

void json_cursor_init(struct json_cursor *j, const char *text, size_t len,
		      const char *name);
/* After white space: the next character (not consumed), 0 at the end. */
int json_peek(struct json_cursor *j);
/* Consume CH, or fail saying "expected WHAT". */
bool json_expect(struct json_cursor *j, char ch, const char *what);
/*
 * In an array or object whose bracket was consumed, with *FIRST true
 * before the first call: true before each element (the ',' before it
 * consumed), false after the closing CLOSE or on failure.
 */
bool json_next(struct json_cursor *j, char close, bool *first);
/* The next value, a string, appended to OUT. */
bool json_read_string(struct json_cursor *j, struct strbuf *out);
bool json_read_number(struct json_cursor *j, double *out);
/* Past the next value, whatever it is (nesting limited as for trees). */
bool json_skip(struct json_cursor *j);
void json_error(struct json_cursor *j, const char *fmt, ...) PRINTF(2, 3);

/* Object member KEY, or NULL (also when V is not an object). */
const struct json_value *json_get(const struct json_value *v, const char *key);
/* Member KEY's string, or NULL if absent or not a string. */
const char *json_get_string(const struct json_value *v, const char *key);

#endif
