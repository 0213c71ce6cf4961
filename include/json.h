/*
 * A small JSON reader (RFC 8259) for the few JSON inputs dmprof takes:
 * symbol-map files.json and the original's policy files.  Values form a
 * tree owned by the document; object members keep their file order.
 */
#ifndef DMPROF_JSON_H
#define DMPROF_JSON_H

#include <stdbool.h>
#include <stddef.h>

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

/* Object member KEY, or NULL (also when V is not an object). */
const struct json_value *json_get(const struct json_value *v, const char *key);
/* Member KEY's string, or NULL if absent or not a string. */
const char *json_get_string(const struct json_value *v, const char *key);

#endif
